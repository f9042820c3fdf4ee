#include "tests/integration/pipe_max_size.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rangefs::testing {
namespace {

constexpr char kSysctl[] = "/proc/sys/fs/pipe-max-size";
// Holds "<original> <raised to>" ("" while nobody raised it).
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

std::string ReadSysctl() {
  std::ifstream in(kSysctl);
  std::string value;
  in >> value;
  return value;
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
  // No other holder: a record left is a killed run's (the value it raised
  // stays, which is what deploy/README.md asks of a machine anyway).
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) Forget();
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
  const std::string old = ReadSysctl();
  uint64_t v = 0;
  if (!absl::SimpleAtoi(old, &v)) {
    return absl::InternalError(
        absl::StrCat(kSysctl, ": unreadable value \"", old, "\""));
  }
  // The first raiser keeps the original and what it raised to; a later
  // one finds them kept.
  const bool first = ReadAll(lock_fd_).empty();
  const std::string record = absl::StrCat(old, " ", bytes);
  if (first && pwrite(lock_fd_, record.data(), record.size(), 0) !=
                   static_cast<ssize_t>(record.size())) {
    return absl::InternalError(
        absl::StrCat("write ", kLockFile, ": ", strerror(errno)));
  }
  if (!WriteSysctl(absl::StrCat(bytes))) {
    if (first) Forget();
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot raise ", kSysctl, " from ", old, " to ", bytes, " (root?)"));
  }
  return absl::OkStatus();
}

void ScopedPipeMaxSize::Forget() {
  if (ftruncate(lock_fd_, 0) != 0) {
    // Left as is: the next holder finds a record and keeps the value.
  }
}

ScopedPipeMaxSize::~ScopedPipeMaxSize() {
  if (lock_fd_ < 0) return;
  // Exclusive at once: no other holder is left. The original goes back
  // only over the value raised to (one set since by someone else stays).
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) {
    const std::vector<std::string> record =
        absl::StrSplit(ReadAll(lock_fd_), ' ');
    if (record.size() == 2 && ReadSysctl() == record[1]) {
      WriteSysctl(record[0]);
    }
    Forget();
  }
  close(lock_fd_);
}

}  // namespace rangefs::testing
