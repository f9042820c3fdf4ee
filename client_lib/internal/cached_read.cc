// The page-cache path: a mount read whose bytes are already in the page
// cache of a local file system is copied by the calling thread straight
// into the caller's buffer (ClientOptions::page_cache_reads). One copy, as
// a plain pread has, and no hand-off to the node's threads, no wake-ups,
// no ring slot. RWF_NOWAIT keeps the calling thread off the device: a read
// not wholly cached is left to the node's threads.
//
// A call's cached pieces (a ReadV of many small ranges) are served
// together: claimed under one hold of the batch's lock, copied with it
// released, their objects' files looked up once each, and counted with one
// clock read and one count a node, so that what a range costs beyond its
// preadv2 stays small next to the copy itself.
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "client_lib/internal/batch.h"
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/node_runtime.h"
#include "client_lib/internal/single_flight.h"

namespace rangefs {
namespace client_internal {
namespace {

// preadv2 without libc's cancellation-point wrapper (no thread of ours is
// ever cancelled): -1 with errno set on failure, as preadv2.
ssize_t PreadNoWait(int fd, char* dst, size_t length, uint64_t offset) {
  struct iovec iov = {dst, length};
  // The offset as glibc passes it (LO_HI_LONG): the whole of it, then its
  // high word, which a 64-bit kernel ignores.
  return syscall(SYS_preadv2, fd, &iov, 1, static_cast<long>(offset),  // NOLINT
                 static_cast<long>(offset >> 32), RWF_NOWAIT);         // NOLINT
}

}  // namespace

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

const std::shared_ptr<RingFile>& NodeRuntime::CachedFileOf(
    const Attempt* a, const MountPath& path, CachedFiles& files) {
  for (const CachedFile& f : files) {
    if (f.object == a->object) return f.file;
  }
  // Only files the ring thread opened already (an open may block); the
  // caller checks that one is on a local disk or memory file system
  // (CallerSafe).
  files.push_back({a->object, OpenRingFd(path, /*direct=*/false)});
  return files.back().file;
}

const char* NodeRuntime::MapCached(const Attempt* a, CachedFiles& files,
                                   std::shared_ptr<RingFile>* hold) {
  // A verified piece is checked against whole sidecar blocks as it is
  // copied: not taken in place.
  if (a->verify) return nullptr;
  const MountPiece piece = PieceOf(a);
  const std::shared_ptr<RingFile>& file =
      CachedFileOf(a, MountPath{mount_dir(), *a->object}, files);
  if (file == nullptr) return nullptr;
  const char* at = file->Mapped(piece.offset, piece.length);
  if (at != nullptr) *hold = file;
  return at;
}

bool NodeRuntime::CopyCached(Attempt* a, char* dst, CachedFiles& files) {
  const MountPiece piece = PieceOf(a);
  MountPlan plan;
  if (piece.verify) {
    // The sidecar is cached (MayReadCached): planning does no I/O.
    // Verifying needs whole sidecar blocks; a piece that is not is left to
    // the ring.
    if (!mount_reader_.Plan(piece, mount_dir(), &plan).ok() ||
        plan.start != piece.offset || plan.span != piece.length) {
      return false;
    }
  } else {
    // Unverified and buffered (MayReadCached): the plan is the piece.
    plan.start = piece.offset;
    plan.end = piece.offset + piece.length;
    plan.span = static_cast<size_t>(piece.length);
  }
  const RingFile* file =
      CachedFileOf(
          a, piece.verify ? plan.path : MountPath{mount_dir(), *a->object},
          files)
          .get();
  if (file == nullptr || !file->caller_safe()) return false;
  const ssize_t n = PreadNoWait(
      file->fd(), dst, static_cast<size_t>(piece.length), piece.offset);
  if (n < 0 && errno == EOPNOTSUPP) {
    caller_ok_.store(false, std::memory_order_relaxed);
  }
  if (n < 0 || static_cast<uint64_t>(n) != piece.length) return false;
  if (!piece.verify) return true;
  bool checksum_failure = false;  // the ring's read will report it
  return MountReader::Check(piece, plan, dst, static_cast<size_t>(n),
                            &checksum_failure)
      .ok();
}

void NodeRuntime::CountCached(int64_t count, int64_t bytes, absl::Time now) {
  CountEnded(count, bytes, absl::ToUnixNanos(now));
  CountSucceeded(count, bytes, absl::ZeroDuration());
  counters_.mount_reads.fetch_add(static_cast<uint64_t>(count));
  counters_.cached_reads.fetch_add(static_cast<uint64_t>(count));
}

void ClientImpl::ReadCachedOnCaller(Batch& b) {
  std::vector<Task>& out = b.outbox;
  // The pieces this thread claims: each one's only attempt (a hedge's
  // primary may still answer), not claimed, so that no other attempt
  // copies into the caller's buffer meanwhile; read without the batch's
  // lock.
  // b.outbox itself is read again only under b.mu: while this thread runs
  // the call's loop nobody else dispatches for the call (the window refill
  // is lent only while the caller waits), so the task indices hold.
  struct Claim {
    size_t task;  // in `out`
    Attempt* attempt;
    char* dst;
    // Pieces waiting for these bytes (single flight), of this call or
    // others: served from the piece's `dst` once it holds them, with no
    // Batch::mu held.
    std::shared_ptr<Flight> flight;
    // A helper whose bytes may be taken in place (PieceState::mappable),
    // and where they were taken from, if they were.
    bool mappable = false;
    const char* mapped = nullptr;
    std::shared_ptr<RingFile> mapped_file;
    bool served = false;
  };
  absl::InlinedVector<Claim, 32> claims;
  for (size_t i = 0; i < out.size(); ++i) {
    Attempt* a = out[i].attempt;
    PieceState& p = b.pieces[a->piece];
    if (p.done || p.claimed || p.active != 1 || !a->node->MayReadCached(a)) {
      continue;
    }
    p.claimed = true;
    const bool mappable = p.mappable && p.flight == nullptr;
    claims.push_back(Claim{i, a, p.dst, std::move(p.flight), mappable});
  }
  if (claims.empty()) return;
  b.copiers++;
  b.mu.Unlock();
  // Per node: how many were served, and their bytes.
  struct Served {
    NodeRuntime* node;
    int64_t count = 0;
    int64_t bytes = 0;
  };
  absl::InlinedVector<Served, 8> by_node;
  NodeRuntime::CachedFiles files;
  for (Claim& c : claims) {
    Attempt* a = c.attempt;
    char* dst = c.dst;
    if (c.mappable) c.mapped = a->node->MapCached(a, files, &c.mapped_file);
    c.served = c.mapped != nullptr || a->node->CopyCached(a, dst, files);
    if (!c.served) continue;
    if (c.flight != nullptr) c.flight->Publish(dst);
    Served* s = nullptr;
    for (Served& e : by_node) {
      if (e.node == a->node) s = &e;
    }
    if (s == nullptr) s = &by_node.emplace_back(Served{a->node});
    s->count++;
    s->bytes += static_cast<int64_t>(a->length);
  }
  if (!by_node.empty()) {
    const absl::Time now = clock_->MonotonicNow();
    for (const Served& s : by_node) s.node->CountCached(s.count, s.bytes, now);
  }
  b.mu.Lock();
  b.copiers--;
  size_t next = 0;  // the next claim, in task order
  size_t kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    Claim* c = nullptr;
    if (next < claims.size() && claims[next].task == i) c = &claims[next++];
    if (c == nullptr || !c->served) {
      if (c != nullptr) {
        PieceState& p = b.pieces[out[i].attempt->piece];
        p.flight = std::move(c->flight);
        p.claimed = false;  // the usual way overwrites whatever `dst` got
      }
      if (kept != i) out[kept] = std::move(out[i]);
      ++kept;
      continue;
    }
    Attempt* a = out[i].attempt;
    PieceState& p = b.pieces[a->piece];
    a->finished = true;
    a->status = absl::OkStatus();
    p.active--;
    p.done = true;
    p.mapped = c->mapped;
    p.mapped_file = std::move(c->mapped_file);
    b.remaining--;
    b.cached_bytes += a->length;
    // No other thread wakes the loop for it: the loop looks before it
    // waits.
    if (b.NotifiesEach(p)) b.self_woken = true;
  }
  out.resize(kept);
}

}  // namespace client_internal
}  // namespace rangefs
