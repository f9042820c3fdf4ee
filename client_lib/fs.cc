#include "client_lib/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/errno_status.h"
#include "base/open_beneath.h"

namespace rangefs {
namespace {

// An open descriptor shared by the readers using it; closed by the last.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { close(fd_); }
  int get() const { return fd_; }

 private:
  const int fd_;
};

class PosixFs : public ReadOnlyFs {
 public:
  explicit PosixFs(size_t max_open) : max_open_(max_open < 1 ? 1 : max_open) {}

  absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                               absl::Span<char> dst,
                               const FsReadOptions& options) override {
    absl::StatusOr<std::shared_ptr<Fd>> fd = Get(path, options.direct);
    if (!fd.ok()) return fd.status();
    size_t done = 0;
    while (done < dst.size()) {
      ssize_t n = pread((*fd)->get(), dst.data() + done, dst.size() - done,
                        static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        Drop(path, options.direct);  // a stale handle must not stay cached
        return ErrnoStatus(
            e, absl::StrCat("pread ", path.full(), " at ", offset + done));
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
      // O_DIRECT: a short read can only be EOF.
      if (options.direct && static_cast<size_t>(n) % kDirectIoAlignment != 0) {
        break;
      }
    }
    return done;
  }

  absl::StatusOr<std::string> ReadFile(const MountPath& path) override {
    absl::StatusOr<int> opened = OpenBeneath(path.mount, path.object, O_RDONLY);
    if (!opened.ok()) return opened.status();
    const int fd = *opened;
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        close(fd);
        return ErrnoStatus(e, absl::StrCat("read ", path.full()));
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
  }

  absl::Status CheckDir(const std::string& path) override {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return ErrnoStatus(errno, absl::StrCat("stat mount ", path));
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("mount ", path, " is not a directory"));
    }
    if (access(path.c_str(), R_OK | X_OK) != 0) {
      return ErrnoStatus(errno, absl::StrCat("access mount ", path));
    }
    return absl::OkStatus();
  }

 private:
  static std::string Key(const MountPath& path, bool direct) {
    return absl::StrCat(direct ? "D" : "B", path.full());
  }

  absl::StatusOr<std::shared_ptr<Fd>> Get(const MountPath& path, bool direct) {
    std::string key = Key(path, direct);
    {
      absl::MutexLock l(&mu_);
      auto it = open_.find(key);
      if (it != open_.end()) return it->second;
    }
    // Open outside the lock: a hung mount must not block other nodes.
    absl::StatusOr<int> fd = OpenBeneath(path.mount, path.object,
                                         O_RDONLY | (direct ? O_DIRECT : 0));
    if (!fd.ok()) return fd.status();
    auto sp = std::make_shared<Fd>(*fd);
    absl::MutexLock l(&mu_);
    auto [it, inserted] = open_.try_emplace(key, sp);
    if (!inserted) return it->second;  // another thread won; ours closes
    order_.push_back(key);
    while (open_.size() > max_open_ && !order_.empty()) {
      open_.erase(order_.front());
      order_.pop_front();
    }
    return sp;
  }

  void Drop(const MountPath& path, bool direct) {
    absl::MutexLock l(&mu_);
    open_.erase(Key(path, direct));  // order_ entry goes stale; harmless
  }

  const size_t max_open_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Fd>> open_
      ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<ReadOnlyFs> NewPosixFs(size_t max_open_files) {
  return std::make_unique<PosixFs>(max_open_files);
}

}  // namespace rangefs
