// NodeRuntime's io_uring path: the node's ring thread, and small reads
// on a calling thread's borrowed ring.
#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "base/crc32c.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/open_beneath.h"
#include "base/status_macros.h"
#include "client_lib/client.h"
#include "client_lib/fs.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/node_runtime.h"

namespace rangefs {
namespace client_internal {

// Whether an RWF_NOWAIT io_uring read of `fd` never blocks the thread that
// submits it: true only on local disk and memory file systems. A network
// or FUSE file system may ignore RWF_NOWAIT: a FUSE O_DIRECT read is sent
// to the daemon anyway (it hangs with the mount instead of ending with
// -EAGAIN, and the submitting thread's exit waits for it), and once the
// connection has max_background such reads unanswered, the next one
// blocks inside io_uring_enter, holding the ring's lock.
static bool CallerSafe(int fd) {
  struct statfs st;
  if (fstatfs(fd, &st) != 0) return false;
  switch (static_cast<uint64_t>(st.f_type)) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // xfs
    case 0x9123683E:  // btrfs
    case 0x01021994:  // tmpfs
      return true;
    default:
      return false;
  }
}

bool NodeRuntime::StartRingLocked() {
  std::string error;
  // Created on a short-lived thread, not on this (calling) one: the kernel
  // links a ring to every thread that created or entered it, and such a
  // thread's exit takes the ring's lock, which the ring thread holds while
  // it submits. A submit on a hung mount can block (a FUSE connection with
  // max_background reads unanswered), and the calling thread's exit would
  // wait for the mount.
  std::thread([&] {
    ring_ = ReadRing::Create(client_->options().io_uring_depth, false, &error);
  }).join();
  if (ring_ == nullptr) {
    RANGEFS_LOG(WARNING) << "node " << id_ << ": " << error
                         << "; using worker threads";
    return false;
  }
  if (!threads_.Start([self = shared_from_this()] { self->RingLoop(); })) {
    ring_.reset();  // stopping: no thread will own it
    return false;
  }
  return true;
}

void NodeRuntime::RingLoop() {
  ReadRing& ring = *ring_;
  std::vector<Task> take;
  for (;;) {
    bool block;
    {
      absl::MutexLock l(&qmu_);
      while (!ring_queue_.empty() && take.size() < ring.free_slots()) {
        take.push_back(ring_queue_.Pop());
        counters_.queued.fetch_sub(1);
      }
      if (take.empty() && ring.inflight() == 0 && stop_) break;
      block = take.empty();
      ring_sleeping_ = block;
    }
    for (Task& t : take) {
      if (!ring_abandoned_ && !RingStart(std::move(t))) ring_abandoned_ = true;
    }
    take.clear();
    if (ring_abandoned_) break;
    if (block) {
      // Idle, or (stopping) waiting for reads a hung mount holds.
      std::optional<bool> woke = Blocking([&] {
        ring.SubmitAndWait(absl::InfiniteDuration());
        return true;
      });
      if (!woke.has_value()) ring_abandoned_ = true;
    } else {
      // Submitting may block too: a FUSE or NFS connection with its
      // max_background reads unanswered makes the next read wait for a
      // free request inside io_uring_enter. Bracketed, so teardown does not
      // wait for a thread it would otherwise take to be in owner code.
      std::optional<bool> sent = Blocking([&] {
        ring.SubmitAndWait(absl::ZeroDuration());
        return true;
      });
      if (!sent.has_value()) ring_abandoned_ = true;
    }
    ring.Reap([this](ReadRing::Slot& s, int res) {
      if (!ring_abandoned_ && !RingDone(s, res)) ring_abandoned_ = true;
    });
    if (ring_abandoned_) break;
  }
  if (ring_abandoned_) {
    RingDrain();
    return;
  }
  absl::MutexLock l(&fd_mu_);
  ring_fds_.clear();
}

void NodeRuntime::RingDrain() {
  ReadRing& ring = *ring_;
  while (ring.inflight() > 0) {
    ring.SubmitAndWait(absl::InfiniteDuration());
    ring.Reap([](ReadRing::Slot&, int) {});  // drops the tasks
  }
  absl::MutexLock l(&fd_mu_);
  ring_fds_.clear();
}

bool NodeRuntime::RingStart(Task t) {
  Attempt* a = t.attempt;
  AttemptSink* b = t.call.get();
  if (b->Ended()) {
    CancelQueued(a, b);
    return true;
  }
  const std::string dir = mount_dir();
  // Started before the mount check: a check that hangs (a hung mount) is
  // this attempt's stall.
  const absl::Time t0 = client_->clock()->MonotonicNow();
  MarkStarted(a, t0);
  std::optional<bool> mount = UseMount(dir);
  if (!mount.has_value()) return false;
  if (!*mount) {  // kAuto without a usable mount: NFS, else the agent
    if (std::shared_ptr<NfsNode> nfs = this->nfs()) {
      StartNfs(nfs, std::move(t), t0);
      return true;
    }
    a->started_ns.store(0, std::memory_order_release);
    absl::MutexLock l(&qmu_);
    RequeueForWorkersLocked(std::move(t));
    return true;
  }
  counters_.mount_reads.fetch_add(1);
  counters_.uring_reads.fetch_add(1);
  // Planned into the slot's recycled context (RingLoop took no more tasks
  // than free slots).
  MountRead& m = *ring_->NextContext<MountRead>();
  MountPlan& plan = m.plan;
  std::optional<absl::Status> s =
      Blocking([&] { return mount_reader_.Plan(PieceOf(a), dir, &plan); });
  if (!s.has_value()) return false;
  absl::StatusOr<std::shared_ptr<RingFile>> file = nullptr;
  if (!s->ok()) {
    file = *s;
  } else {
    file = OpenRingFd(plan.path, plan.direct);
    if (*file == nullptr) {
      std::optional<absl::StatusOr<std::shared_ptr<RingFile>>> opened =
          Blocking([&] { return RingFd(plan.path, plan.direct); });
      if (!opened.has_value()) return false;
      file = std::move(*opened);
    }
  }
  if (!file.ok()) return RingFailed(std::move(t), file.status(), t0, false);
  StartMountRead(*ring_, m, std::move(t), std::move(*file), t0);
  return true;
}

bool NodeRuntime::RingDone(ReadRing::Slot& s, int res) {
  MountRead& m = MountReadOf(s);
  if (res < 0) {
    RingDropFd(m.plan.path, m.plan.direct);  // a stale handle must not stay
    return RingFailed(
        std::move(m.task),
        ErrnoStatus(-res, absl::StrCat("io_uring read ", m.plan.path.full(),
                                       " at ", m.plan.start + s.done)),
        m.t0, false);
  }
  Attempt* a = m.task.attempt;
  bool checksum_failure = false;
  absl::StatusOr<size_t> r = MountReader::Check(PieceOf(a), m.plan, s.data(),
                                                s.done, &checksum_failure);
  if (r.ok()) {
    Finish(a, m.task.call.get(), r, s.data() + m.plan.lead, false, m.t0);
    return true;
  }
  return RingFailed(std::move(m.task), r.status(), m.t0, checksum_failure);
}

bool NodeRuntime::StartOnCaller(Task& t, ReadRing& ring, char* into,
                                bool* landed) {
  if (ring.free_slots() == 0) return false;
  const DataPath mode = client_->options().data_path;
  if (mode == DataPath::kAgent || mode == DataPath::kNfs || mount_down() ||
      !caller_ok_.load(std::memory_order_relaxed) ||
      (mode == DataPath::kAuto &&
       mount_state_.load(std::memory_order_relaxed) != 1)) {
    return false;
  }
  Attempt* a = t.attempt;
  if (a->length > kCallerReadMax) return false;
  if (a->verify && !mount_reader_.HasSidecar(*a->object)) {
    return false;  // Plan would read it
  }
  // Planned into the slot's recycled context: no allocation per read.
  MountRead& m = *ring.NextContext<MountRead>();
  MountPlan& plan = m.plan;
  MountDirInto(&plan.path.mount, &m.mount_gen);
  if (!mount_reader_.Plan(PieceOf(a), plan.path.mount, &plan).ok() ||
      plan.alloc > kCallerReadMax) {
    return false;  // the ring thread reports the error
  }
  std::shared_ptr<RingFile> file = OpenRingFd(plan.path, plan.direct);
  if (file == nullptr) return false;       // the ring thread opens it
  if (!file->caller_safe()) return false;  // it could block this thread
  // Dispatched by this very thread's pass, microseconds ago: its start.
  const absl::Time t0 = a->dispatched;
  MarkStarted(a, t0);
  counters_.mount_reads.fetch_add(1);
  counters_.uring_reads.fetch_add(1);
  counters_.caller_reads.fetch_add(1);
  // In place: the read is exactly the piece's bytes, where O_DIRECT can
  // put them.
  *landed = into != nullptr && client_->options().in_place_reads &&
            plan.lead == 0 &&
            (plan.direct ? plan.alloc : plan.span) == a->length &&
            (!plan.direct ||
             reinterpret_cast<uintptr_t>(into) % kDirectIoAlignment == 0);
  if (*landed) counters_.in_place_reads.fetch_add(1);
  StartMountRead(ring, m, std::move(t), std::move(file), t0,
                 *landed ? into : nullptr);
  return true;
}

void NodeRuntime::CallerDone(ReadRing::Slot& s, int res, CallerSuccesses& ok) {
  MountRead& m = MountReadOf(s);
  if (res >= 0) {
    Attempt* a = m.task.attempt;
    bool checksum_failure = false;
    absl::StatusOr<size_t> r = MountReader::Check(PieceOf(a), m.plan, s.data(),
                                                  s.done, &checksum_failure);
    if (r.ok()) {
      ok.push_back(CallerSuccess{
          this, std::move(m.task.call), {a, s.data() + m.plan.lead}, m.t0});
      return;
    }
    if (absl::IsDataLoss(r.status())) {
      Finish(a, m.task.call.get(), r, s.data() + m.plan.lead, checksum_failure,
             m.t0);
      return;
    }
  }
  // In place: the caller's buffer is the piece's again, whatever it got.
  if (s.into != nullptr) m.task.call->LandingFailed(m.task.attempt);
  // It would block (-EAGAIN: not in the page cache, a busy device, a mount
  // that does not answer), the file system cannot tell (-EOPNOTSUPP: this
  // node's reads stay with its ring thread from now on), or an error: the
  // node's ring thread reads the attempt (again), and may fall back to the
  // agent (checking the mount may block: not on this thread).
  if (res == -EOPNOTSUPP) {
    caller_ok_.store(false, std::memory_order_relaxed);
  } else if (res != -EAGAIN) {
    RingDropFd(m.plan.path, m.plan.direct);
  }
  m.task.attempt->started_ns.store(0, std::memory_order_release);
  m.task.urgent = true;
  Submit(absl::MakeSpan(&m.task, 1));
}

void NodeRuntime::FinishAll(absl::Span<const CallerSuccess> ok) {
  if (ok.empty()) return;
  ClientCore& core = *ok.front().node->client_;
  const absl::Time now = core.clock()->MonotonicNow();
  const int64_t now_ns = absl::ToUnixNanos(now);
  // Node by node (a reap holds reads of a few nodes): the samples of each
  // node in a run, for one lock a node.
  absl::InlinedVector<lb::LatencyTracker::Sample, 16> samples;
  absl::InlinedVector<NodeRuntime*, 8> seen;
  for (const CallerSuccess& first : ok) {
    NodeRuntime* n = first.node;
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    int64_t count = 0;
    int64_t bytes = 0;
    absl::Duration last = absl::ZeroDuration();
    for (const CallerSuccess& x : ok) {
      if (x.node != n) continue;
      const Attempt* a = x.done.attempt;
      ++count;
      bytes += static_cast<int64_t>(a->length);
      last = now - x.t0;
      // Late answers after a stall or timeout: left out (see Finish).
      if (!a->abandoned.load(std::memory_order_relaxed)) {
        samples.push_back({n->latency_, last});
      }
    }
    n->CountEnded(count, bytes, now_ns);
    n->CountSucceeded(count, bytes, last);
  }
  core.latency().RecordAll(samples, now);
  // One CompletedAll a run of one call's attempts (a reap's reads are
  // nearly always all of the calling thread's call).
  absl::InlinedVector<AttemptSink::Success, 16> run;
  for (size_t i = 0; i < ok.size();) {
    AttemptSink* call = ok[i].call.get();
    run.clear();
    for (; i < ok.size() && ok[i].call.get() == call; ++i) {
      run.push_back(ok[i].done);
    }
    call->CompletedAll(run);
  }
}

bool NodeRuntime::RingFailed(Task t, const absl::Status& error, absl::Time t0,
                             bool checksum_failure) {
  if (client_->options().data_path == DataPath::kAuto &&
      !absl::IsDataLoss(error)) {
    const std::string dir = mount_dir();
    std::optional<absl::Status> there =
        Blocking([&] { return client_->fs()->CheckDir(dir); });
    if (!there.has_value()) return false;
    if (!there->ok()) {
      // The mount itself is gone: the agent reads this attempt (on a
      // worker).
      mount_state_.store(-1);
      mount_checked_ns_.store(
          absl::ToUnixNanos(client_->clock()->MonotonicNow()));
      absl::MutexLock l(&qmu_);
      RequeueForWorkersLocked(std::move(t));
      return true;
    }
  }
  Finish(t.attempt, t.call.get(), error, nullptr, checksum_failure, t0);
  return true;
}

absl::StatusOr<std::shared_ptr<RingFile>> NodeRuntime::RingFd(
    const MountPath& path, bool direct) {
  if (std::shared_ptr<RingFile> f = OpenRingFd(path, direct)) return f;
  // Blocks on a hung mount: only this node's ring waits.
  RANGEFS_ASSIGN_OR_RETURN(
      int fd,
      OpenBeneath(path.mount, path.object, O_RDONLY | (direct ? O_DIRECT : 0)));
  // fstatfs may block on a hung mount too: here, not on a calling thread.
  auto file = std::make_shared<RingFile>(fd, CallerSafe(fd));
  absl::MutexLock l(&fd_mu_);
  if (ring_fds_.size() >= kMaxRingFds) ring_fds_.clear();
  ring_fds_.emplace(RingFdKey{direct, path.mount, path.object}, file);
  return file;
}

std::shared_ptr<RingFile> NodeRuntime::OpenRingFd(const MountPath& path,
                                                  bool direct) {
  absl::MutexLock l(&fd_mu_);
  auto it = ring_fds_.find(RingFdRef{direct, path.mount, path.object});
  return it == ring_fds_.end() ? nullptr : it->second;
}

void NodeRuntime::RingDropFd(const MountPath& path, bool direct) {
  absl::MutexLock l(&fd_mu_);
  ring_fds_.erase(RingFdRef{direct, path.mount, path.object});
}

}  // namespace client_internal
}  // namespace rangefs
