// File: doctor.h
//
// `rangefs-admin doctor`: checks a client or storage node's view of the
// cluster and prints every finding with its fix. Read-only; safe to run at
// any time. Checks, in order:
//
//   etcd    each endpoint answers Maintenance.Status (over TLS when etcd_ca is
//           set; plaintext is a warning); a failure names the likely cause
//           (wrong CA, missing client cert, etcd down).
//   clock   skew between this host and etcd, from the HTTP Date header of
//           etcd's /version (1 s resolution; the request's round trip is
//           allowed for). Measured on plaintext endpoints only: over TLS
//           the finding says how to measure it by hand.
//   node    node records vs live records: an active or draining node with no
//           live record has its agent down: WARN while the keeper counts it
//           missing (unreachable; the files at risk and when healing
//           starts, from the keeper's status record), FAIL once the keeper
//           counts it dead or when no keeper reports; a disabled node with a
//           live record still runs an agent; a live record without a node
//           record; the agent's own health.
//   security each agent's transport security from its live record: running
//           --insecure (no mTLS on a network address), or not reporting it,
//           is a warning with the fix.
//   mount   for every active or draining node, <mount_root>/<id> from
//           /proc/self/mountinfo (never a stat, so a hung mount cannot hang
//           doctor): present, read-only, NFS, proto=rdma, rsize=1 MiB,
//           readahead (/sys/class/bdi/<dev>/read_ahead_kb), and what
//           rangefs-mountd's status file says; stale mounts of other nodes.
//   hung    one FAIL row per mount the status file reports hung, with how
//           long it has been hung and since when.
//   fuse    every rangefs-mount file system (fuse.rangefs in mountinfo)
//           against its status file in --fuse-status (default
//           /run/rangefs-mount): daemon gone (ENOTCONN), stuck, namespace
//           watch disconnected, other cluster, readahead; status files
//           whose mount is gone (mount/mount_check.h). Never a stat.
//   policy  every storage policy (namespace/storage_policy.h) the cluster
//           cannot place now (fewer live ACTIVE nodes than its replicas or
//           K+M, or fewer racks than K+M where node records carry racks:
//           namespace/storage_policy_placement.h) is a warning naming what
//           it needs and has; so is a policy record the gate refuses.
//   rdma    RDMA devices and port states (libibverbs); none is a warning.
//
//           A node whose <mount_root>/<id> is a symlink (lstat, readlink) to
//           its export directory is OK: a one-machine cluster
//           (deploy/local/cluster.sh); a symlink elsewhere is a WARN.
//
// Each row: check, status (OK, WARN, FAIL), finding, fix. The table's
// message counts them and its exit_code is rangefs-admin's exit status:
// kDoctorExitFailures with any FAIL, else kDoctorExitWarnings with any
// WARN, else 0. The call itself fails only on bad arguments.
#ifndef RANGEFS_ADMIN_DOCTOR_H_
#define RANGEFS_ADMIN_DOCTOR_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"
#include "mount/mount_status.h"
#include "namespace/etcd/etcd_client.h"
#include "storage_node/rdma/rdma_devices.h"

namespace rangefs {
namespace admin {

// rangefs-admin doctor's exit status: 0 all OK; 1 at least one FAIL;
// 6 warnings but no FAIL (2 is a usage error, as for every command).
inline constexpr int kDoctorExitFailures = 1;
inline constexpr int kDoctorExitWarnings = 6;

struct DoctorOptions {
  // Endpoints and TLS files, as rangefs-admin was given them.
  etcd::EtcdClientOptions etcd;
  std::string mount_root = "/mnt/rangefs";
  bool check_mounts = true;  // false on storage nodes
  std::string mountinfo_path = "/proc/self/mountinfo";
  std::string sysfs_root = "/sys";
  // "" = <mount_root>/.rangefs-mounts
  std::string mount_status_file;
  // rangefs-mount's status files (mount/mount_status.h).
  std::string fuse_status_dir = mount::kDefaultStatusDir;
  absl::Duration max_clock_skew = absl::Seconds(2);
  int64_t want_rsize = 1048576;
  int64_t min_readahead_kb = 1024;
  // nullptr = node::ListRdmaDevices.
  std::function<absl::StatusOr<std::vector<node::RdmaDevice>>()> list_rdma;
};

// Runs every check. `ctx.store` reads the node and live records.
absl::StatusOr<Table> RunDoctorWith(Context& ctx, const DoctorOptions& options);

// `doctor` with rangefs-admin's flags: --etcd (else $RANGEFS_ETCD), --ca,
// --cert, --key, --user, --password, --timeout (the global connection
// flags: pass them through to doctor), --mount-root=DIR, --mounts=no (skip the
// mount checks), --mount-status=FILE (rangefs-mountd's status file, default
// <mount-root>/.rangefs-mounts), --fuse-status=DIR (rangefs-mount's status
// files), --mountinfo=FILE, --sysfs-root=DIR.
// INVALID_ARGUMENT for other flags.
absl::StatusOr<Table> RunDoctor(Context& ctx, Args& args);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_DOCTOR_H_
