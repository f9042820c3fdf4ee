#include "tests/integration/pipe_max_size.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rangefs::testing {
namespace {

constexpr char kSysctl[] = "/proc/sys/fs/pipe-max-size";
// Holds the value to put back ("" while nobody raised it).
constexpr char kLockFile[] = "/tmp/rangefs-test-pipe-max-size";
// Held by one raiser at a time: check, keep the original, raise.
constexpr char kRaiseLockFile[] = "/tmp/rangefs-test-pipe-max-size.raise";

bool PipeFits(uint64_t bytes) {
  int p[2];
  if (pipe(p) != 0) return false;
  const int got = fcntl(p[0], F_SETPIPE_SZ, static_cast<int>(bytes));
  close(p[0]);
  close(p[1]);
  return got >= 0 && static_cast<uint64_t>(got) >= bytes;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[64];
  ssize_t n;
  while ((n = pread(fd, buf, sizeof(buf), static_cast<off_t>(out.size()))) >
         0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

bool WriteSysctl(const std::string& value) {
  std::ofstream f(kSysctl);
  f << value << "\n";
  f.close();
  return !f.fail();
}

}  // namespace

absl::Status ScopedPipeMaxSize::Raise(uint64_t bytes) {
  lock_fd_ = open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("open ", kLockFile, ": ", strerror(errno)));
  }
  // Shared for as long as this holder lives.
  if (flock(lock_fd_, LOCK_SH) != 0) {
    return absl::InternalError(
        absl::StrCat("flock ", kLockFile, ": ", strerror(errno)));
  }
  const int raise_fd = open(kRaiseLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (raise_fd < 0 || flock(raise_fd, LOCK_EX) != 0) {
    const absl::Status s = absl::InternalError(
        absl::StrCat("lock ", kRaiseLockFile, ": ", strerror(errno)));
    if (raise_fd >= 0) close(raise_fd);
    return s;
  }
  const absl::Status s = RaiseLocked(bytes);
  close(raise_fd);
  return s;
}

absl::Status ScopedPipeMaxSize::RaiseLocked(uint64_t bytes) {
  if (PipeFits(bytes)) return absl::OkStatus();
  std::ifstream in(kSysctl);
  std::string old;
  in >> old;
  uint64_t v = 0;
  if (!absl::SimpleAtoi(old, &v)) {
    return absl::InternalError(
        absl::StrCat(kSysctl, ": unreadable value \"", old, "\""));
  }
  // The first raiser keeps the original; a later one finds it kept.
  if (ReadAll(lock_fd_).empty() &&
      pwrite(lock_fd_, old.data(), old.size(), 0) !=
          static_cast<ssize_t>(old.size())) {
    return absl::InternalError(
        absl::StrCat("write ", kLockFile, ": ", strerror(errno)));
  }
  if (!WriteSysctl(absl::StrCat(bytes))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot raise ", kSysctl, " from ", old, " to ", bytes, " (root?)"));
  }
  return absl::OkStatus();
}

ScopedPipeMaxSize::~ScopedPipeMaxSize() {
  if (lock_fd_ < 0) return;
  // Exclusive at once: no other holder is left, so put the value back.
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) {
    const std::string old = ReadAll(lock_fd_);
    if (!old.empty() && WriteSysctl(old)) {
      if (ftruncate(lock_fd_, 0) != 0) {
        // Left as is: the next holder restores the same value.
      }
    }
  }
  close(lock_fd_);
}

}  // namespace rangefs::testing
