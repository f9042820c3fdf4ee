#include "tests/testing/subprocess.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"

extern char** environ;

namespace rangefs {
namespace testing {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const SubprocessOptions& options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("Subprocess::Start: empty argv");
  }
  if (options.log_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Subprocess::Start ", options.argv[0], ": no log_path"));
  }
  // Everything the child needs is built before fork(): after fork only
  // async-signal-safe calls are allowed in a multi-threaded parent.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    bool overridden = false;
    for (const std::string& o : options.env) {
      size_t eq = o.find('=');
      if (eq != std::string::npos &&
          absl::StartsWith(entry, absl::string_view(o).substr(0, eq + 1))) {
        overridden = true;
        break;
      }
    }
    if (!overridden) env_strings.emplace_back(entry);
  }
  for (const std::string& o : options.env) env_strings.push_back(o);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string exec_error =
      absl::StrCat("subprocess: cannot exec ", options.argv[0], "\n");

  int log_fd = open(options.log_path.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return ErrnoStatus(errno, absl::StrCat("open log ", options.log_path));
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(log_fd);
    return ErrnoStatus(e, absl::StrCat("fork for ", options.argv[0]));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);  // Parent died before prctl.
    // No setpgid: the child stays in the test's process group (see the
    // header), where Bazel's timeout signals reach it.
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    ssize_t ignored =
        write(STDERR_FILENO, exec_error.data(), exec_error.size());
    (void)ignored;
    _exit(127);
  }
  close(log_fd);
  return std::unique_ptr<Subprocess>(new Subprocess(options, pid));
}

Subprocess::~Subprocess() { Kill().IgnoreError(); }

absl::Status Subprocess::Signal(int sig) {
  if (reaped_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "signal ", sig, " to ", options_.argv[0], ": process already exited"));
  }
  if (kill(pid_, sig) != 0) {
    return ErrnoStatus(errno, absl::StrCat("kill(", pid_, ", ", sig, ")"));
  }
  return absl::OkStatus();
}

absl::Status Subprocess::Kill() {
  if (reaped_) return absl::OkStatus();
  kill(pid_, SIGKILL);
  kill(pid_, SIGCONT);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      reaped_ = true;
      return ErrnoStatus(errno, absl::StrCat("waitpid ", pid_));
    }
  }
  reaped_ = true;
  wait_status_ = status;
  return absl::OkStatus();
}

bool Subprocess::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return false;
  }
  return r == 0;
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  absl::Status s =
      WaitUntil([this] { return !Running(); }, timeout, "process exit");
  if (!reaped_) {
    return absl::DeadlineExceededError(
        absl::StrCat(options_.argv[0], " (pid ", pid_, ") still runs after ",
                     absl::FormatDuration(timeout)));
  }
  return wait_status_;
}

absl::Status Subprocess::WaitUntil(const std::function<bool()>& ready,
                                   absl::Duration timeout,
                                   absl::string_view what) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration backoff = absl::Milliseconds(1);
  while (true) {
    if (ready()) return absl::OkStatus();
    if (!Running()) {
      // It may have become ready just before exiting (e.g. "process exit").
      if (ready()) return absl::OkStatus();
      return absl::FailedPreconditionError(absl::StrCat(
          options_.argv[0], " exited (wait status ", wait_status_,
          ") while waiting for ", what, "; log tail:\n", LogTail()));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          options_.argv[0], ": no ", what, " within ",
          absl::FormatDuration(timeout), "; log tail:\n", LogTail()));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(50));
  }
}

absl::Status Subprocess::WaitForLog(absl::string_view needle,
                                    absl::Duration timeout) {
  return WaitUntil([&] { return absl::StrContains(Log(), needle); }, timeout,
                   absl::StrCat("log line \"", needle, "\""));
}

absl::Status Subprocess::WaitForTcpPort(int port, absl::Duration timeout) {
  return WaitUntil([port] { return TcpPortOpen(port); }, timeout,
                   absl::StrCat("listener on 127.0.0.1:", port));
}

std::string Subprocess::Log() const {
  std::ifstream in(options_.log_path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Subprocess::LogTail(size_t max_bytes) const {
  std::string log = Log();
  if (log.size() <= max_bytes) return log;
  return log.substr(log.size() - max_bytes);
}

// Whether every thread of `pid` is stopped (state T, t) or gone: kill()
// returns before a busy multi-threaded process has stopped.
bool AllThreadsStopped(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return true;  // gone
  bool stopped = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat(dir, "/", e->d_name, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
    const char state = stat[paren + 2];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') {
      stopped = false;
      break;
    }
  }
  closedir(d);
  return stopped;
}

std::string RunfilePath(const std::string& workspace_relative) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || ws == nullptr) return workspace_relative;
  return absl::StrCat(srcdir, "/", ws, "/", workspace_relative);
}

}  // namespace testing
}  // namespace rangefs
