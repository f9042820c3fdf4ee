// File: init_flags.h
//
// Kernel FUSE init flags that Debian's libfuse 3.14 cannot ask for, added
// to the INIT reply on its way to the kernel. Today one:
// FUSE_DIRECT_IO_ALLOW_MMAP (kernel 6.6+; libfuse 3.16 names it
// FUSE_CAP_DIRECT_IO_ALLOW_MMAP), which lets a file opened with
// FOPEN_DIRECT_IO be mmap()ed MAP_SHARED (without it the kernel answers
// ENODEV), so `-o direct_io` mounts keep mmap readers working.
//
//   InitFlagHook hook;  // outlives the session
//   fuse_session_mount(se, mountpoint);
//   RANGEFS_RETURN_IF_ERROR(hook.Install(se));  // before the loop starts
//   ... fuse_session_loop_mt(se, ...);
//   hook.allow_mmap_granted()  // after INIT: did the kernel offer it?
//
// It works through libfuse's custom-io hooks (fuse_session_custom_io) on
// the session's own /dev/fuse descriptor: every request and reply passes
// through unchanged (spliced replies too: HookSpliceSend) except the INIT
// reply, whose flags2 gains the bit when
// the kernel offered it in its INIT request (an older kernel never sees
// it). Thread-safe: the hooks run on libfuse's worker threads.
#ifndef RANGEFS_MOUNT_INIT_FLAGS_H_
#define RANGEFS_MOUNT_INIT_FLAGS_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

struct fuse_session;

namespace rangefs {
namespace mount {

// The kernel's FUSE_DIRECT_IO_ALLOW_MMAP (include/uapi/linux/fuse.h, 7.39),
// bit 36 of the 64 init flags, i.e. bit 4 of flags2.
inline constexpr uint32_t kDirectIoAllowMmapFlags2 = 1u << 4;

class InitFlagHook {
 public:
  // Routes the session's reads and writes of /dev/fuse through this hook.
  // Call after fuse_session_mount and before the session loop. The hook
  // must outlive the session.
  absl::Status Install(struct fuse_session* se);

  // Whether the INIT reply asked for FUSE_DIRECT_IO_ALLOW_MMAP (the kernel
  // offered it). False until INIT was answered.
  bool allow_mmap_granted() const {
    return granted_.load(std::memory_order_acquire);
  }

  // The hooks' logic on raw messages, for tests: notes an INIT request in
  // `buf` (n bytes read from /dev/fuse), and patches `iov` if it is the
  // reply to it.
  void OnRequest(const void* buf, ssize_t n);
  void OnReply(struct iovec* iov, int count);

 private:
  std::atomic<uint64_t> init_unique_{0};
  std::atomic<bool> offered_{false};
  std::atomic<bool> granted_{false};
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_INIT_FLAGS_H_
