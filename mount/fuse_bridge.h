// File: fuse_bridge.h
//
// libfuse3's low-level API over a MountFs: the session, the mount, the
// multi-threaded request loop and a notifier thread that sends the kernel
// cache invalidations MountFs asks for (fuse_lowlevel_notify_inval_entry /
// _inode must not run on a request thread).
//
//   RANGEFS_ASSIGN_OR_RETURN(auto fm, FuseMount::Mount(&fs, &counters,
//                                                      "/mnt/x", {}));
//   fs_notices_go_to = [&](std::vector<Notice> n) { fm->Notify(n); };
//   RANGEFS_RETURN_IF_ERROR(fm->Run());  // until unmounted or signalled
//
// Every write-ish call (write, create, mkdir, unlink, rmdir, rename, link,
// symlink, mknod, setattr, setxattr, removexattr, fallocate) is answered
// EROFS; the mount itself is `ro`. Errors from MountFs are mapped by
// errno_map.h and logged with their message (at most 20 lines a second).
//
// Signals: Run() installs libfuse's handlers (SIGTERM, SIGINT, SIGHUP end
// the loop). libfuse's worker threads block those signals, so the thread
// calling Run() must have them unblocked and every other thread blocked
// (block them in main before starting any thread; Run unblocks them on its
// own thread for its duration).
// Thread-safe: Notify may be called from any thread.
#ifndef RANGEFS_MOUNT_FUSE_BRIDGE_H_
#define RANGEFS_MOUNT_FUSE_BRIDGE_H_

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "mount/direct_io_mode.h"
#include "mount/init_flags.h"
#include "mount/metrics.h"
#include "mount/mount_fs.h"

struct fuse_session;

namespace rangefs {
namespace mount {

struct BridgeContext;

struct FuseMountOptions {
  double attr_timeout = 1.0;
  double entry_timeout = 1.0;
  int max_threads = 64;
  int max_idle_threads = 4;  // MountOptions::max_idle_threads
  int max_background = 256;
  int readahead_kb = 16384;  // also written to the mount's bdi (sysfs)
  // Which files are opened FOPEN_DIRECT_IO (direct_io_mode.h; MountFs::Open
  // decides per open); mmap is kept working through InitFlagHook
  // (init_flags.h).
  DirectIoMode direct_io = DirectIoMode::kAuto;
  // Ask libfuse for splice replies (FUSE_CAP_SPLICE_WRITE): reads that
  // MountFs::ReadSpliced takes go from the object files to /dev/fuse
  // through a pipe, never through our memory.
  bool splice = true;
  std::string fsname = "rangefs";
  std::vector<std::string> fuse_options;  // extra -o options for libfuse
};

class FuseMount {
 public:
  // Creates the session and mounts it at `mountpoint` (absolute, an
  // existing directory). `fs` and `counters` are not owned and must
  // outlive the FuseMount. INVALID_ARGUMENT for options libfuse refuses;
  // UNAVAILABLE if the mount fails.
  static absl::StatusOr<std::unique_ptr<FuseMount>> Mount(
      MountFs* fs, MountCounters* counters, const std::string& mountpoint,
      const FuseMountOptions& options);
  // Stops the notifier, unmounts (if still mounted) and ends the session.
  ~FuseMount();
  FuseMount(const FuseMount&) = delete;
  FuseMount& operator=(const FuseMount&) = delete;

  // Serves requests on a multi-threaded loop until the file system is
  // unmounted or a stop signal arrives. The error of the loop, if any.
  absl::Status Run();
  // Queues kernel invalidations (sent by the notifier thread, in order).
  void Notify(std::vector<Notice> notices);
  // The mount's "major:minor" (its /sys/class/bdi entry), "" if unknown.
  const std::string& bdi() const { return bdi_; }

 private:
  FuseMount(MountCounters* counters, std::string mountpoint,
            FuseMountOptions options);
  void NotifierLoop();
  void SetReadahead();

  MountCounters* const counters_;
  const std::string mountpoint_;
  const FuseMountOptions options_;
  std::unique_ptr<BridgeContext> ctx_;
  struct fuse_session* se_ = nullptr;
  bool mounted_ = false;
  std::string bdi_;
  InitFlagHook init_hook_;  // outlives se_ (destroyed in ~FuseMount's body)

  absl::Mutex mu_;
  std::deque<Notice> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread notifier_;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_FUSE_BRIDGE_H_
