// File: subprocess.h
//
// A child process for tests: start a binary (an etcd member, a storage-node
// agent) with arguments, wait until it is ready, send it signals, read its
// log, and always reap it.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto agent, Subprocess::Start({
//       .argv = {RunfilePath("storage_node/rangefs-node"), "--port=0"},
//       .log_path = absl::StrCat(tmp, "/agent.log")}));
//   RANGEFS_RETURN_IF_ERROR(agent->WaitForLog("serving on",
//   absl::Seconds(10))); agent->Signal(SIGSTOP);
//
// The child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with the test process
// even when the test is killed on timeout; the destructor SIGKILLs and reaps
// it. It stays in the test's process group, so the signals Bazel sends to
// that group on a timeout (SIGTERM, then SIGKILL) reach it and its own
// children too, even when the test cannot die (a thread stuck in a FUSE
// request that this child, the FUSE server, would answer). stdout and stderr
// go to `log_path`. Thread-compatible; create it from a thread that outlives
// the child (the PDEATHSIG is tied to that thread).
#ifndef RANGEFS_TESTS_TESTING_SUBPROCESS_H_
#define RANGEFS_TESTS_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/testing/ports.h"     // PickUnusedPort, TcpPortOpen
#include "base/testing/temp_dir.h"  // MakeTempDir, RemoveTree

namespace rangefs {
namespace testing {

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the binary's path.
  // "NAME=value" entries added to (or replacing in) the parent's environment.
  std::vector<std::string> env;
  std::string log_path;  // Required: stdout+stderr are appended here.
  std::string cwd;       // Empty: inherit.
};

class Subprocess {
 public:
  // Forks and execs. INVALID_ARGUMENT for an empty argv or log_path; the
  // exec error itself (e.g. no such binary) shows as a child exiting with
  // 127 and a line in the log.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const SubprocessOptions& options);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // SIGKILLs (and SIGCONTs) the child if it still runs, then reaps it.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return options_.log_path; }

  // Sends `sig`. FAILED_PRECONDITION if the child was already reaped.
  absl::Status Signal(int sig);
  // SIGKILL, then reap. OK if it had already exited.
  absl::Status Kill();
  // Waits up to `timeout` for the child to exit and returns its raw wait
  // status (use WIFEXITED etc.). DEADLINE_EXCEEDED if it still runs.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // Reaps the child if it exited; returns true while it runs.
  bool Running();

  // Polls `ready` (bounded backoff, 1-50 ms) until it returns true.
  // DEADLINE_EXCEEDED after `timeout`; FAILED_PRECONDITION at once if the
  // child exits first. Both errors carry the tail of the log.
  absl::Status WaitUntil(const std::function<bool()>& ready,
                         absl::Duration timeout, absl::string_view what);
  // Waits until the log contains `needle`.
  absl::Status WaitForLog(absl::string_view needle, absl::Duration timeout);
  // Waits until 127.0.0.1:`port` accepts a TCP connection.
  absl::Status WaitForTcpPort(int port, absl::Duration timeout);

  // The whole log, or its last `max_bytes`.
  std::string Log() const;
  std::string LogTail(size_t max_bytes = 4096) const;

 private:
  Subprocess(SubprocessOptions options, pid_t pid)
      : options_(std::move(options)), pid_(pid) {}

  SubprocessOptions options_;
  pid_t pid_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// Whether every thread of `pid` is stopped (state T, t) or gone: kill()
// returns before a busy multi-threaded process has stopped.
bool AllThreadsStopped(pid_t pid);

// Path of a file or binary in the test's runfiles, e.g.
// RunfilePath("storage_node/rangefs-node"). Outside Bazel: the path as is.
std::string RunfilePath(const std::string& workspace_relative);

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_SUBPROCESS_H_
