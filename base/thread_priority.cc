#include "base/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace {

// PRIO_PROCESS with a thread id names that one thread on Linux.
id_t ThisThread() { return static_cast<id_t>(syscall(SYS_gettid)); }

}  // namespace

int ThreadNice() {
  errno = 0;
  const int n = getpriority(PRIO_PROCESS, ThisThread());
  return errno == 0 ? n : 0;
}

absl::Status LowerThreadPriority(int nice) {
  if (nice < 0 || nice > kMaxNice) {
    return absl::InvalidArgumentError(
        absl::StrCat("nice value ", nice, " outside [0, ", kMaxNice, "]"));
  }
  if (ThreadNice() >= nice) return absl::OkStatus();
  if (setpriority(PRIO_PROCESS, ThisThread(), nice) != 0) {
    return ErrnoStatus(errno, absl::StrCat("setpriority(nice ", nice, ")"));
  }
  return absl::OkStatus();
}

}  // namespace rangefs
