#define FUSE_USE_VERSION 312

#include "mount/init_flags.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace mount {
namespace {

// libfuse hands each hook the session's user data: the bridge's context,
// not this hook. One hook per process is all rangefs-mount needs (one
// session); the pointer is set before the loop starts and never changes.
std::atomic<InitFlagHook*> g_hook{nullptr};

ssize_t HookRead(int fd, void* buf, size_t len, void*) {
  const ssize_t n = read(fd, buf, len);
  if (InitFlagHook* h = g_hook.load(std::memory_order_acquire)) {
    h->OnRequest(buf, n);
  }
  return n;
}

ssize_t HookWritev(int fd, struct iovec* iov, int count, void*) {
  if (InitFlagHook* h = g_hook.load(std::memory_order_acquire)) {
    h->OnReply(iov, count);
  }
  return writev(fd, iov, count);
}

// Spliced replies (fuse_reply_data of file descriptors) unchanged: without
// this hook libfuse would not offer FUSE_CAP_SPLICE_WRITE on a session
// with custom I/O, and would copy every such reply.
ssize_t HookSpliceSend(int fdin, off_t* offin, int fdout, off_t* offout,
                       size_t len, unsigned int flags, void*) {
  return splice(fdin, offin, fdout, offout, len, flags);
}

}  // namespace

absl::Status InitFlagHook::Install(struct fuse_session* se) {
  InitFlagHook* expected = nullptr;
  if (!g_hook.compare_exchange_strong(expected, this) && expected != this) {
    return absl::FailedPreconditionError(
        "another FUSE session in this process has an init-flag hook");
  }
  static const fuse_custom_io kIo = {HookWritev, HookRead, nullptr,
                                     HookSpliceSend};
  const int rc = fuse_session_custom_io(se, &kIo, fuse_session_fd(se));
  if (rc != 0) {
    g_hook.store(nullptr);
    return absl::InternalError(
        absl::StrCat("fuse_session_custom_io: ", strerror(-rc)));
  }
  return absl::OkStatus();
}

void InitFlagHook::OnRequest(const void* buf, ssize_t n) {
  if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return;
  fuse_in_header h;
  memcpy(&h, buf, sizeof(h));
  if (h.opcode != FUSE_INIT) return;
  fuse_init_in in{};
  const size_t body = static_cast<size_t>(n) - sizeof(h);
  memcpy(&in, static_cast<const char*>(buf) + sizeof(h),
         body < sizeof(in) ? body : sizeof(in));
  // flags2 exists only in an extended INIT (FUSE_INIT_EXT, full size).
  const bool ext = (in.flags & FUSE_INIT_EXT) != 0 && body >= sizeof(in);
  offered_.store(ext && (in.flags2 & kDirectIoAllowMmapFlags2) != 0,
                 std::memory_order_relaxed);
  init_unique_.store(h.unique, std::memory_order_release);
}

void InitFlagHook::OnReply(struct iovec* iov, int count) {
  const uint64_t unique = init_unique_.load(std::memory_order_acquire);
  if (unique == 0 || count < 2 || iov[0].iov_len < sizeof(fuse_out_header) ||
      iov[1].iov_len < sizeof(fuse_init_out)) {
    return;
  }
  fuse_out_header out;
  memcpy(&out, iov[0].iov_base, sizeof(out));
  if (out.unique != unique || out.error != 0) return;
  init_unique_.store(0, std::memory_order_relaxed);  // one INIT per session
  fuse_init_out init;
  memcpy(&init, iov[1].iov_base, sizeof(init));
  if (!offered_.load(std::memory_order_relaxed) ||
      (init.flags & FUSE_INIT_EXT) == 0) {
    return;
  }
  init.flags2 |= kDirectIoAllowMmapFlags2;
  memcpy(iov[1].iov_base, &init, sizeof(init));
  granted_.store(true, std::memory_order_release);
}

}  // namespace mount
}  // namespace rangefs
