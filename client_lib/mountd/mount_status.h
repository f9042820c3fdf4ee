// File: mount_status.h
//
// The mount health file that rangefs-mountd writes (atomically, by rename)
// after every pass, default <mount_root>/.rangefs-mounts, and that the
// client library reads to feed its dead-node table. Text, one record per
// line, fields tab-separated `key=value` (values have no tabs/newlines):
//
//   # rangefs-mountd mount status v1
//   updated_unix_ms=1763855100123	pass=42	mounter=nfs
//   node=sn-01	state=healthy	path=/mnt/rangefs/sn-01	since_unix_ms=...
//   hung_since_unix_ms=0	readahead_kb=4096	error=
//   node=sn-02	state=unhealthy	path=/mnt/rangefs/sn-02	since_unix_ms=...
//   hung_since_unix_ms=1763855094000	readahead_kb=4096
//   error=stat of /mnt/rangefs/sn-02 did not return within 5s (hung for 6.1s)
//
// state: healthy (mounted, answered the last stat in time), unhealthy
// (mounted, the last stat failed or did not answer within
// mount_stat_timeout), mounting (a mount is in flight), failed (the last
// mount attempt failed). Nodes with no line are not mounted: a reader must
// not use <mount_root>/<node> then. `since_unix_ms` is when the state was
// entered. A reader should also treat the whole file as stale when
// updated_unix_ms is older than a few reconcile intervals (mountd down).
// Unknown keys must be ignored (forward compatibility).
//
// hung_since_unix_ms (added later; absent or 0 = not hung): a stat, mount
// or umount of this mount was started then and has not returned within its
// deadline; `error` names the call. A hung mount is never healthy (its
// state is unhealthy or failed), so a reader that knows only `state` treats
// it as down, which is what it should do. ParseMountStatus reads a record
// that says healthy and hung as unhealthy.
#ifndef RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_STATUS_H_
#define RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace mountd {

enum class MountHealth { kHealthy, kUnhealthy, kMounting, kFailed };

absl::string_view MountHealthName(MountHealth h);

struct MountStatusEntry {
  std::string node_id;
  MountHealth health = MountHealth::kMounting;
  std::string path;
  int64_t since_unix_ms = 0;
  std::string readahead_kb;  // "4096", "" if not set by mountd
  std::string error;
  // When the call that hangs on this mount started; 0 = none hangs.
  int64_t hung_since_unix_ms = 0;

  bool hung() const { return hung_since_unix_ms > 0; }
};

struct MountStatusFile {
  int64_t updated_unix_ms = 0;
  int64_t pass = 0;
  std::string mounter;
  std::vector<MountStatusEntry> mounts;  // sorted by node_id

  // The entry for `node_id`, or nullptr.
  const MountStatusEntry* Find(absl::string_view node_id) const;
};

std::string FormatMountStatus(const MountStatusFile& file);
// INVALID_ARGUMENT naming the line for a record without node= or with an
// unknown state.
absl::StatusOr<MountStatusFile> ParseMountStatus(absl::string_view text);
// NOT_FOUND if the file does not exist (mountd never ran).
absl::StatusOr<MountStatusFile> ReadMountStatus(const std::string& path);
// Writes `path`.tmp and renames it over `path`.
absl::Status WriteMountStatus(const std::string& path,
                              const MountStatusFile& file);

}  // namespace mountd
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_MOUNTD_MOUNT_STATUS_H_
