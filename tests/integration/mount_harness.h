// File: mount_harness.h
//
// Test pieces for rangefs-mount integration tests: run a shell command with
// a deadline, ingest a local file with `file put`, and a rangefs-mount
// process (foreground, a child of the test) that is always unmounted and
// killed, even when the test fails. Testonly; thread-compatible.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto m, MountProcess::Start(
//       cluster->etcd()->endpoints(), dir + "/mnt", {"--data_path=agent"}));
//   ShResult r = Sh("cat " + m->path("/data/f") + " | sha256sum");
#ifndef RANGEFS_TESTS_INTEGRATION_MOUNT_HARNESS_H_
#define RANGEFS_TESTS_INTEGRATION_MOUNT_HARNESS_H_

#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "base/status_macros.h"
#include "client_lib/mountd/mountinfo.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace testing {

// Bound on waits for something that takes a second or two at most idle (a
// daemon starting or exiting, a shell command on a small file): generous
// enough for a loaded 2-core machine; a broken feature still fails, later.
inline constexpr absl::Duration kMountWait = absl::Seconds(60);

struct ShResult {
  int code = -1;       // exit status; 124 = timed out
  std::string output;  // stdout and stderr
};

// Runs `cmd` with bash, killed after `timeout` (a safety net against a
// hang, far above what any command here takes idle).
inline ShResult Sh(const std::string& cmd,
                   absl::Duration timeout = absl::Seconds(120)) {
  const std::string quoted = absl::StrReplaceAll(cmd, {{"'", "'\\''"}});
  const std::string full =
      absl::StrCat("timeout -s KILL ", absl::ToInt64Seconds(timeout),
                   " bash -c '", quoted, "' 2>&1");
  ShResult r;
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Single-quotes `s` for bash.
inline std::string Q(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

// `rangefs-admin file put LOCAL PATH FLAGS...` in process.
inline absl::Status PutFile(admin::Context& ctx, const std::string& local,
                            const std::string& path,
                            std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {"file", "put", local, path};
  for (std::string& f : flags) argv.push_back(std::move(f));
  RANGEFS_ASSIGN_OR_RETURN(admin::Args args, admin::Args::Parse(argv));
  return admin::RunCommand(ctx, args).status();
}

// True if `mountpoint` is a rangefs FUSE mount now (from mountinfo, never a
// stat).
inline bool IsRangefsMounted(const std::string& mountpoint) {
  auto mounts = mountd::ReadMountInfo();
  if (!mounts.ok()) return false;
  const mountd::MountInfo* m = mountd::FindMount(*mounts, mountpoint);
  return m != nullptr && m->fs_type == "fuse.rangefs";
}

class MountProcess {
 public:
  // Starts `rangefs-mount -f` at `mountpoint` (created if missing) and
  // waits until it serves. `flags` are added before the mountpoint.
  static absl::StatusOr<std::unique_ptr<MountProcess>> Start(
      const std::string& etcd, const std::string& mountpoint,
      std::vector<std::string> flags = {}, const std::string& cluster = "it") {
    std::unique_ptr<MountProcess> m(new MountProcess);
    m->mountpoint_ = mountpoint;
    mkdir(mountpoint.c_str(), 0755);
    std::vector<std::string> argv = {RunfilePath("mount/rangefs-mount"), "-f",
                                     "--etcd=" + etcd, "--cluster=" + cluster};
    // The status file next to the mountpoint, not in the host's
    // /run/rangefs-mount: a mount killed with the test leaves nothing there.
    bool status_dir = false;
    for (const std::string& f : flags) {
      status_dir = status_dir || absl::StartsWith(f, "--status_dir=");
    }
    if (!status_dir) argv.push_back("--status_dir=" + mountpoint + ".status");
    for (std::string& f : flags) argv.push_back(std::move(f));
    argv.push_back(mountpoint);
    static int n = 0;
    RANGEFS_ASSIGN_OR_RETURN(
        m->process_, Subprocess::Start({.argv = argv,
                                        .log_path = absl::StrCat(
                                            mountpoint, ".", ++n, ".log")}));
    RANGEFS_RETURN_IF_ERROR(
        m->process_->WaitForLog("rangefs-mount: serving", kMountWait));
    if (!IsRangefsMounted(mountpoint)) {
      return absl::InternalError(
          absl::StrCat(mountpoint, " not in mountinfo after start"));
    }
    return m;
  }

  // Always leaves nothing behind: lazy unmount, then SIGKILL.
  ~MountProcess() {
    if (IsRangefsMounted(mountpoint_)) {
      Sh(absl::StrCat("fusermount3 -u -z ", Q(mountpoint_)), kMountWait);
    }
    process_.reset();
  }

  const std::string& mountpoint() const { return mountpoint_; }
  std::string path(const std::string& rel) const { return mountpoint_ + rel; }
  Subprocess& process() { return *process_; }

  // Sends SIGTERM and waits for a clean exit (status 0) and the unmount.
  absl::Status StopWithSignal(int sig = SIGTERM) {
    RANGEFS_RETURN_IF_ERROR(process_->Signal(sig));
    return WaitExit();
  }
  // Waits for the process to exit 0 with the mount gone.
  absl::Status WaitExit(absl::Duration timeout = kMountWait) {
    RANGEFS_ASSIGN_OR_RETURN(int status, process_->Wait(timeout));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(
          absl::StrCat("rangefs-mount exited with wait status ", status, ": ",
                       process_->LogTail()));
    }
    if (IsRangefsMounted(mountpoint_)) {
      return absl::InternalError(absl::StrCat(mountpoint_, " still mounted"));
    }
    return absl::OkStatus();
  }

 private:
  MountProcess() = default;
  std::string mountpoint_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_INTEGRATION_MOUNT_HARNESS_H_
