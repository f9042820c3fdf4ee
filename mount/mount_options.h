// File: mount_options.h
//
// rangefs-mount's command line, also what `mount -t rangefs` and
// /etc/fstab hand to the mount.rangefs helper:
//
//   rangefs-mount --etcd=10.0.0.1:2379 --cluster=prod --dir=/crawl /mnt/crawl
//   rangefs-mount -o cluster=prod,dir=/crawl,allow_other 10.0.0.1:2379 /mnt/c
//   # /etc/fstab
//   10.0.0.1:2379  /mnt/crawl  rangefs  cluster=prod,dir=/crawl,_netdev  0 0
//
// Every `--key=value` flag may also be given as `-o key=value`; the last
// one wins. A positional SPEC before MOUNTPOINT gives the etcd endpoints
// ("rangefs" or "none" = take them from --etcd or the config file). With
// --config=FILE (base/config.h) the shared keys (etcd_*, cluster,
// log_level, mount_root, agent_*) come from the file unless a flag gives
// them. Options mount(8) passes that mean nothing here (defaults, _netdev,
// nofail, noauto, user, x-*, comment=...) are dropped; `rw` is refused
// (the file system is read-only); any other -o option goes to libfuse
// (allow_other, allow_root, nosuid, nodev, noexec, ...).
#ifndef RANGEFS_MOUNT_MOUNT_OPTIONS_H_
#define RANGEFS_MOUNT_MOUNT_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client_lib/options.h"
#include "mount/direct_io_mode.h"

namespace rangefs {
namespace mount {

struct MountOptions {
  std::string mountpoint;  // absolute

  // --- namespace ---
  std::string etcd_endpoints;
  std::string cluster = "default";
  std::string dir = "/";  // namespace directory shown as the root
  int64_t revision = 0;   // > 0: a fixed snapshot, never changes
  std::string etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file;
  // Per etcd call; two attempts per call, so a metadata call that needs
  // etcd while it is down fails within about twice this.
  absl::Duration etcd_timeout = absl::Seconds(2);
  // Layouts stay usable this long while etcd is unreachable.
  absl::Duration max_staleness = absl::Minutes(5);
  // Load every layout under `dir` at start (opens are cache hits, also
  // while etcd is down); costs ~60 B per extent.
  bool preload = true;

  // --- data (client library) ---
  DataPath data_path = DataPath::kAuto;
  std::string mount_root = "/mnt/rangefs";
  std::string agent_ca, agent_cert, agent_key;
  VerifyMode verify = VerifyMode::kOff;
  bool o_direct = false;  // mount path: O_DIRECT reads of the node mounts
  bool io_uring = true;   // mount path: io_uring (ClientOptions::io_uring)
  bool hedging = true;    // hedged reads (ClientOptions::hedging)
  absl::Duration read_deadline = absl::Seconds(30);
  bool prefetch = true;  // per-handle sequential prefetch (file.h Reader)
  // Reads whose bytes lie in objects on a local file system (verify=off,
  // replicated files) are spliced from the object files into the FUSE
  // reply (File::LocalSpans, MountFs::ReadSpliced): no copy in the daemon.
  bool splice = true;

  // --- FUSE ---
  bool foreground = false;
  int max_threads = 64;  // FUSE worker threads at most
  // Idle FUSE workers kept; one more ends. The kernel hands each request
  // to the worker that has waited longest, so every idle worker takes
  // turns: with all 64 kept after a burst, a single reader's requests
  // cycled through cold threads (about 10% more CPU per GB, 1 MiB reads).
  int max_idle_threads = 4;
  int readahead_kb = 16384;  // kernel readahead of the mount (sysfs)
  // Which files' reads bypass the kernel's page cache of the mount
  // (FOPEN_DIRECT_IO): each read(2) goes to the daemon and its bytes are
  // copied straight into the reader's buffer, one copy fewer than the
  // cached mode, and the bytes are not cached twice on this host (the
  // storage mounts' page cache already holds them). mmap still works
  // (init_flags.h). auto: files of 8 MiB or more (direct_io_mode.h).
  DirectIoMode direct_io = DirectIoMode::kAuto;
  // Async kernel requests in flight (readahead, io_uring O_DIRECT reads).
  int max_background = 256;
  double attr_timeout = 1.0;   // seconds; 0 = unset: 1 live, 3600 pinned
  double entry_timeout = 1.0;  // seconds; same defaults
  bool attr_timeout_set = false, entry_timeout_set = false;
  int uid = -1, gid = -1;  // owner shown on every entry; -1 = the daemon's
  std::vector<std::string> fuse_options;  // passed to libfuse as -o

  // --- operations ---
  int metrics_port = 0;      // > 0: Prometheus text on 127.0.0.1:port
  std::string metrics_file;  // non-empty: rewritten every metrics_interval
  absl::Duration metrics_interval = absl::Seconds(10);
  // Where the mount's status file (mount/mount_status.h) goes, for
  // `rangefs-admin doctor`; "" = none.
  std::string status_dir = "/run/rangefs-mount";
  std::string log_file;  // background mode: stderr goes here ("" = none)
  std::string log_level = "info";
};

// Parses argv (argv[0] is skipped). INVALID_ARGUMENT naming the option for
// unknown flags, bad values or a missing mountpoint. "--help" gives
// FAILED_PRECONDITION with the usage text as message.
absl::StatusOr<MountOptions> ParseMountOptions(
    const std::vector<std::string>& argv);

// The usage text.
const char* MountUsage();

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_MOUNT_OPTIONS_H_
