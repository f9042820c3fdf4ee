// File: mounter.h
//
// How rangefs-mountd mounts a node's export: NfsMounter (production,
// `mount -t nfs -o <options>` with the NFS-RDMA options) and BindMounter (a
// read-only bind mount of a local directory: tests, and hosts without NFS).
//
// Mount and Unmount may block for as long as the kernel does (a dead NFS
// server, a hung FUSE daemon): callers run them off their main loop with a
// deadline (see MountManager). Implementations are thread-safe.
#ifndef RANGEFS_CLIENT_LIB_MOUNTD_MOUNTER_H_
#define RANGEFS_CLIENT_LIB_MOUNTD_MOUNTER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace mountd {

class Mounter {
 public:
  virtual ~Mounter() = default;
  virtual std::string name() const = 0;
  // The mount source of a node: "host:/export" (NFS) or the export
  // directory itself (bind). INVALID_ARGUMENT if the record lacks it.
  virtual absl::StatusOr<std::string> SourceFor(
      const v1::NodeRecord& node) const = 0;
  // The exact command an operator would run for Mount (dry-run output).
  virtual std::string MountCommand(const std::string& source,
                                   const std::string& target) const = 0;
  // Mounts `source` read-only at `target` (an existing directory). Blocks.
  virtual absl::Status Mount(const std::string& source,
                             const std::string& target) = 0;
  // Lazily detaches the mount at `target` (umount2 MNT_DETACH, never
  // follows a symlink); OK if nothing is mounted there. Blocks at most
  // for the path lookup of `target`.
  virtual absl::Status Unmount(const std::string& target);
  // "umount -l <target>".
  virtual std::string UnmountCommand(const std::string& target) const;
};

std::unique_ptr<Mounter> NewBindMounter();

// `options` as for mount -o; "ro" is added when missing. `mount_binary`
// is run as `mount_binary -t nfs -o OPTIONS SOURCE TARGET`.
std::unique_ptr<Mounter> NewNfsMounter(std::string options,
                                       std::string mount_binary = "/bin/mount");

// Host part of an agent address: "10.0.0.5:7070" -> "10.0.0.5",
// "[fe80::1]:7070" -> "[fe80::1]", "host" -> "host".
std::string HostOfAddress(const std::string& address);

}  // namespace mountd
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_MOUNTD_MOUNTER_H_
