// File: mountinfo.h
//
// Parses /proc/self/mountinfo (proc(5)) without touching any mount, so a
// hung NFS or FUSE mount cannot block the caller: rangefs-mountd uses it to
// find its mounts, `rangefs-admin doctor` to check their options.
#ifndef RANGEFS_CLIENT_LIB_MOUNTD_MOUNTINFO_H_
#define RANGEFS_CLIENT_LIB_MOUNTD_MOUNTINFO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace mountd {

struct MountInfo {
  int major = 0, minor = 0;   // st_dev of the mounted filesystem
  std::string root;           // path inside the filesystem (bind mounts)
  std::string mount_point;    // unescaped
  std::string mount_options;  // per-mount: "ro,relatime"
  std::string fs_type;        // "nfs4", "fuse.x", "ext4"
  std::string source;         // "host:/export", "/dev/sda1"
  std::string super_options;  // per-superblock: "rw,vers=4.2,rsize=..."

  // "major:minor", the name of the filesystem's /sys/class/bdi entry.
  std::string dev() const;
  // True if the mount (per-mount flags) is read-only.
  bool read_only() const;
  // Value of `name` in mount_options or super_options ("rsize" ->
  // "1048576"); "" if absent; for a flag without value, "1".
  std::string Option(absl::string_view name) const;
};

// Parses mountinfo text. INVALID_ARGUMENT naming the line if malformed.
absl::StatusOr<std::vector<MountInfo>> ParseMountInfo(absl::string_view text);
// Reads and parses `path` (default /proc/self/mountinfo).
absl::StatusOr<std::vector<MountInfo>> ReadMountInfo(
    const std::string& path = "/proc/self/mountinfo");

// The last (topmost) entry whose mount point is exactly `mount_point`, or
// nullptr.
const MountInfo* FindMount(const std::vector<MountInfo>& mounts,
                           absl::string_view mount_point);

}  // namespace mountd
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_MOUNTD_MOUNTINFO_H_
