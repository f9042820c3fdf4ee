// NodeRuntime's page-cache path: a mount read whose bytes are already in
// the page cache of a local file system is copied by the calling thread
// straight into the caller's buffer (ClientOptions::page_cache_reads). One
// copy, as a plain pread has, and no hand-off to the node's threads, no
// wake-ups, no ring slot. RWF_NOWAIT keeps the calling thread off the
// device: a read not wholly cached is left to the node's threads.
#include <sys/uio.h>

#include <cerrno>
#include <memory>
#include <string>

#include "client_lib/internal/node_runtime.h"

namespace rangefs {
namespace client_internal {

bool NodeRuntime::MayReadCached(const Attempt* a) {
  const ClientOptions& o = client_->options();
  if (!o.page_cache_reads || o.o_direct || o.data_path == DataPath::kAgent ||
      o.data_path == DataPath::kNfs || mount_down() ||
      !caller_ok_.load(std::memory_order_relaxed)) {
    return false;
  }
  if (o.data_path == DataPath::kAuto &&
      mount_state_.load(std::memory_order_relaxed) != 1) {
    return false;  // not known good yet: the node's threads check it
  }
  return !a->verify || mount_reader_.HasSidecar(*a->object);
}

bool NodeRuntime::ReadCached(Attempt* a, char* dst) {
  const MountPiece piece = PieceOf(a);
  MountPlan plan;
  // The sidecar is cached (MayReadCached): planning does no I/O. Verifying
  // needs whole sidecar blocks; a piece that is not is left to the ring.
  if (!mount_reader_.Plan(piece, mount_dir(), &plan).ok() ||
      plan.start != piece.offset || plan.span != piece.length) {
    return false;
  }
  // Only files the ring thread opened already (an open may block), and
  // only on local disk or memory file systems (CallerSafe).
  std::shared_ptr<RingFile> file = OpenRingFd(plan.path, /*direct=*/false);
  if (file == nullptr || !file->caller_safe()) return false;
  const absl::Time t0 = client_->clock()->MonotonicNow();
  struct iovec iov = {dst, static_cast<size_t>(piece.length)};
  const ssize_t n = preadv2(file->fd(), &iov, 1,
                            static_cast<off_t>(piece.offset), RWF_NOWAIT);
  if (n < 0 && errno == EOPNOTSUPP) {
    caller_ok_.store(false, std::memory_order_relaxed);
  }
  if (n < 0 || static_cast<uint64_t>(n) != piece.length) return false;
  bool checksum_failure = false;  // the ring's read will report it
  if (!MountReader::Check(piece, plan, dst, static_cast<size_t>(n),
                          &checksum_failure)
           .ok()) {
    return false;
  }
  // Finish's accounting of a success. Not the latency: a copy out of
  // memory says nothing of how fast the node's storage answers, and would
  // shrink its stall and hedge delays.
  const absl::Time now = client_->clock()->MonotonicNow();
  const int64_t length = static_cast<int64_t>(piece.length);
  CountEnded(1, length, absl::ToUnixNanos(now));
  CountSucceeded(1, length, now - t0);
  counters_.mount_reads.fetch_add(1);
  counters_.cached_reads.fetch_add(1);
  return true;
}

}  // namespace client_internal
}  // namespace rangefs
