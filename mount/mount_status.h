// File: mount_status.h
//
// The status file each rangefs-mount keeps for `rangefs-admin doctor`:
// <status_dir>/<escaped mountpoint>.status, rewritten every few seconds,
// removed on a clean exit. `key = value` lines (base/config.h syntax):
//
//   mountpoint = /mnt/crawl
//   pid = 4242
//   cluster = prod
//   dir = /crawl
//   revision = 0              # > 0: a pinned snapshot
//   index_revision = 1234     # etcd revision the tree reflects
//   watch_connected = true
//   files = 200
//   open_files = 3
//   reads = 10000
//   read_errors = 0
//   estale = 0
//   started_unix_ms = ...
//   updated_unix_ms = ...
//   interval_ms = 2000        # how often the file is rewritten
//
// Doctor never stats the mount (a hung FUSE daemon would hang it): it reads
// /proc/self/mountinfo and these files. Pure functions; thread-safe.
#ifndef RANGEFS_MOUNT_MOUNT_STATUS_H_
#define RANGEFS_MOUNT_MOUNT_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace mount {

inline constexpr char kDefaultStatusDir[] = "/run/rangefs-mount";

struct MountStatus {
  std::string mountpoint;
  int64_t pid = 0;
  std::string cluster;
  std::string dir = "/";
  int64_t revision = 0;
  int64_t index_revision = 0;
  bool watch_connected = false;
  uint64_t files = 0;
  int64_t open_files = 0;
  uint64_t reads = 0;
  uint64_t read_errors = 0;
  uint64_t estale = 0;
  int64_t started_unix_ms = 0;
  int64_t updated_unix_ms = 0;
  int64_t interval_ms = 2000;
};

std::string FormatMountStatus(const MountStatus& s);
// INVALID_ARGUMENT naming the line for malformed text; unknown keys are
// ignored (newer writers), a missing mountpoint or pid is an error.
absl::StatusOr<MountStatus> ParseMountStatus(absl::string_view text);

// <dir>/<mountpoint with every byte outside [A-Za-z0-9._-] as %XX>.status
std::string StatusFilePath(absl::string_view dir, absl::string_view mountpoint);

// Every *.status file in `dir` that parses (others are skipped); `errors`
// (may be null) gets one line per file that did not. A missing dir is
// no files.
std::vector<MountStatus> ReadStatusDir(const std::string& dir,
                                       std::vector<std::string>* errors);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_MOUNT_STATUS_H_
