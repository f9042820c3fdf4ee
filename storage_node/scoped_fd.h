// File: scoped_fd.h
//
// Owns a file descriptor and closes it on destruction. Move-only.
// Thread-compatible.
#ifndef RANGEFS_STORAGE_NODE_SCOPED_FD_H_
#define RANGEFS_STORAGE_NODE_SCOPED_FD_H_

#include <unistd.h>

#include <utility>

namespace rangefs {
namespace node {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Returns the fd and gives up ownership.
  int release() { return std::exchange(fd_, -1); }
  // Closes the owned fd (if any) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_SCOPED_FD_H_
