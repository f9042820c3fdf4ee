// File: mount_check.h
//
// `rangefs-admin doctor`'s check of rangefs-mount file systems on this
// host, from /proc/self/mountinfo and the mounts' status files
// (mount_status.h) only: a stat of a FUSE mount whose daemon hangs would
// hang doctor.
//
//   std::vector<MountFinding> f = CheckRangefsMounts(mounts, statuses, {
//       .cluster = "prod", .now = absl::Now()});
//
// One finding per fuse.rangefs mount and per status file without a mount:
//   FAIL  the daemon is gone (pid not alive): the mount answers ENOTCONN
//   FAIL  the status file is not refreshed (the daemon is stuck)
//   WARN  no status file; namespace watch disconnected (serving the last
//         tree); another cluster than doctor's; readahead below the minimum;
//         a status file whose mount is gone
//   OK    mountpoint, cluster:dir, files, revision, pid, reads and errors
// Pure function; thread-safe.
#ifndef RANGEFS_MOUNT_MOUNT_CHECK_H_
#define RANGEFS_MOUNT_MOUNT_CHECK_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client_lib/mountd/mountinfo.h"
#include "mount/mount_status.h"

namespace rangefs {
namespace mount {

struct MountFinding {
  std::string check;   // "fuse <mountpoint>"
  std::string status;  // "OK", "WARN", "FAIL"
  std::string finding;
  std::string fix;  // "" = none
};

struct MountCheckOptions {
  std::string cluster;  // doctor's cluster ("" = not compared)
  absl::Time now;
  std::string status_dir = kDefaultStatusDir;  // named in findings
  std::string sysfs_root = "/sys";
  int64_t min_readahead_kb = 1024;
  // nullptr = kill(pid, 0) (true unless ESRCH).
  std::function<bool(pid_t)> pid_alive;
};

std::vector<MountFinding> CheckRangefsMounts(
    const std::vector<mountd::MountInfo>& mounts,
    const std::vector<MountStatus>& statuses, const MountCheckOptions& options);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_MOUNT_CHECK_H_
