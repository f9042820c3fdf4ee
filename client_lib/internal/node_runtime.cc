#include "client_lib/internal/node_runtime.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "client_lib/fs.h"

namespace rangefs {
namespace client_internal {

void NodeRuntime::Submit(absl::Span<Task> tasks) {
  if (client_->options().data_path == DataPath::kNfs) {
    // Forced NFS: straight to the node's NFS connections, no hand-off to a
    // thread of ours; a node without a usable export reads its agent.
    if (std::shared_ptr<NfsNode> nfs = this->nfs()) {
      for (Task& t : tasks) StartNfs(nfs, std::move(t));
      return;
    }
  }
  bool wake = false;
  {
    absl::MutexLock l(&qmu_);
    if (!started_ && !stop_) {
      started_ = true;
      use_ring_ = client_->RingWanted() && StartRingLocked();
    }
    counters_.queued.fetch_add(static_cast<int64_t>(tasks.size()));
    for (Task& t : tasks) {
      if (!use_ring_) {
        SubmitPoolLocked(std::move(t));
      } else {
        ring_queue_.Push(std::move(t));
      }
    }
    if (use_ring_ && ring_sleeping_) {
      ring_sleeping_ = false;
      wake = true;
    }
  }
  if (wake) Wake();  // once per batch of tasks, not per task
}

void NodeRuntime::SubmitPoolLocked(Task t) {
  if (!workers_started_ && !stop_) {
    workers_started_ = true;
    int n = std::max(1, client_->options().max_inflight_per_node);
    for (int i = 0; i < n; ++i) {
      threads_.Start([self = shared_from_this()] { self->WorkerLoop(); });
    }
  }
  // Without workers (stopping) the task stays queued and ends with the
  // node: its call has returned.
  queue_.Push(std::move(t));
}

void NodeRuntime::RequeueForWorkersLocked(Task t) {
  counters_.queued.fetch_add(1);
  SubmitPoolLocked(std::move(t));
}

void NodeRuntime::Wake() { ring_->Wake(); }

NodeRuntime::~NodeRuntime() {
  // Only the ring thread frees a ring with reads in flight (RingDrain);
  // should one be left, the kernel may still write into its buffers.
  if (ring_ != nullptr && ring_->inflight() > 0) (void)ring_.release();
}

void NodeRuntime::BeginStop() {
  {
    absl::MutexLock l(&nfs_mu_);
    nfs_stopped_ = true;
    if (nfs_ != nullptr) nfs_->Stop();  // its loops fail what they hold
  }
  bool ring;
  {
    absl::MutexLock l(&qmu_);
    stop_ = true;
    ring = use_ring_;
  }
  if (ring) Wake();  // the workers see stop_ through their Await
}

int NodeRuntime::Shutdown(absl::Time deadline) {
  return threads_.Shutdown(deadline);
}

void NodeRuntime::WorkerLoop() {
  WorkerBuffer buf;
  for (;;) {
    Task t;
    {
      absl::MutexLock l(&qmu_);
      qmu_.Await(absl::Condition(
          +[](NodeRuntime* n) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return n->stop_ || !n->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping
      t = queue_.Pop();
      counters_.queued.fetch_sub(1);
    }
    if (!Execute(t, buf)) return;  // torn down
  }
}

std::optional<bool> NodeRuntime::UseMount(const std::string& dir) {
  DataPath mode = client_->options().data_path;
  if (mode == DataPath::kMount) return true;
  if (mode == DataPath::kAgent || mode == DataPath::kNfs) return false;
  if (mount_down()) return false;  // rangefs-mountd says so
  int state = mount_state_.load(std::memory_order_relaxed);
  int64_t now = absl::ToUnixNanos(client_->clock()->MonotonicNow());
  if (state == 0 ||
      (state < 0 && now - mount_checked_ns_.load() >
                        absl::ToInt64Nanoseconds(
                            client_->options().mount_recheck_interval))) {
    mount_checked_ns_.store(now);
    std::optional<absl::Status> ok =
        Blocking([&] { return client_->fs()->CheckDir(dir); });
    if (!ok.has_value()) return std::nullopt;
    state = ok->ok() ? 1 : -1;
    mount_state_.store(state);
  }
  return state > 0;
}

std::optional<absl::StatusOr<size_t>> NodeRuntime::ReadMount(
    Attempt* a, WorkerBuffer& buf, const char** data, bool* checksum_failure) {
  const std::string dir = mount_dir();
  const MountPiece piece = PieceOf(a);
  MountPlan plan;
  // Planning may read the object's sidecar.
  std::optional<absl::Status> planned =
      Blocking([&] { return mount_reader_.Plan(piece, dir, &plan); });
  if (!planned.has_value()) return std::nullopt;
  if (!planned->ok()) return absl::StatusOr<size_t>(*planned);
  char* p = buf.Get(plan.alloc);
  std::optional<absl::StatusOr<size_t>> n =
      Blocking([&] { return mount_reader_.Read(plan, p); });
  if (!n.has_value() || !n->ok()) return n;
  absl::StatusOr<size_t> len =
      MountReader::Check(piece, plan, p, **n, checksum_failure);
  if (len.ok()) *data = p + plan.lead;
  return len;
}

std::optional<absl::StatusOr<size_t>> NodeRuntime::ReadAgent(Attempt* a,
                                                             AttemptSink* b,
                                                             char* out) {
  // The batch deadline is on the client's monotonic clock; the agent's
  // transport needs wall time.
  const AgentRead r = {
      .object = *a->object,
      .offset = a->object_offset,
      .out = absl::MakeSpan(out, a->length),
      .verify = a->verify,
      .deadline =
          absl::Now() + (b->Deadline() - client_->clock()->MonotonicNow()),
      .canceller = &a->canceller};
  return Blocking([&] { return agent_reader_.Read(r); });
}

void NodeRuntime::CancelQueued(Attempt* a, AttemptSink* b) {
  b->Dropped(a);
  counters_.inflight.fetch_sub(1);
  counters_.outstanding_bytes.fetch_sub(static_cast<int64_t>(a->length));
  client_->global_inflight().fetch_sub(1);
}

bool NodeRuntime::Execute(Task& t, WorkerBuffer& buf) {
  Attempt* a = t.attempt;
  AttemptSink* b = t.call.get();
  if (b->Ended()) {
    CancelQueued(a, b);
    return true;
  }
  const absl::Time t0 = client_->clock()->MonotonicNow();
  MarkStarted(a, t0);
  const char* out = nullptr;  // the piece's bytes, inside `buf`
  bool checksum_failure = false;
  absl::StatusOr<size_t> r;
  const std::string dir = mount_dir();
  std::optional<bool> mount = UseMount(dir);
  if (!mount.has_value()) return false;
  if (*mount) {
    counters_.mount_reads.fetch_add(1);
    std::optional<absl::StatusOr<size_t>> m =
        ReadMount(a, buf, &out, &checksum_failure);
    if (!m.has_value()) return false;
    r = std::move(*m);
    if (!r.ok() && client_->options().data_path == DataPath::kAuto &&
        !absl::IsDataLoss(r.status())) {
      std::optional<absl::Status> there =
          Blocking([&] { return client_->fs()->CheckDir(dir); });
      if (!there.has_value()) return false;
      if (!there->ok()) {
        // The mount itself is gone: fall back to the agent for this attempt.
        mount_state_.store(-1);
        mount_checked_ns_.store(
            absl::ToUnixNanos(client_->clock()->MonotonicNow()));
        mount = false;
      }
    }
  }
  if (!*mount) {
    // No usable mount: the node's NFS export if it has one, else its agent.
    if (std::shared_ptr<NfsNode> nfs = this->nfs()) {
      StartNfs(nfs, std::move(t), t0);
      return true;
    }
    counters_.agent_reads.fetch_add(1);
    // In place: the agent's bytes go straight into the caller's buffer.
    char* dst = client_->options().in_place_reads ? b->Land(a) : nullptr;
    if (dst != nullptr) {
      counters_.in_place_reads.fetch_add(1);
    } else {
      dst = buf.Get(a->length);
    }
    std::optional<absl::StatusOr<size_t>> g = ReadAgent(a, b, dst);
    if (!g.has_value()) return false;
    r = std::move(*g);
    out = dst;
    if (absl::IsDataLoss(r.status())) checksum_failure = true;
  }
  Finish(a, b, r, out, checksum_failure, t0);
  return true;
}

void NodeRuntime::CountEnded(int64_t count, int64_t bytes, int64_t now_ns) {
  last_answer_ns_.store(now_ns, std::memory_order_relaxed);
  counters_.inflight.fetch_sub(count);
  counters_.outstanding_bytes.fetch_sub(bytes);
  client_->global_inflight().fetch_sub(static_cast<int>(count));
}

void NodeRuntime::CountSucceeded(int64_t count, int64_t bytes,
                                 absl::Duration last_latency) {
  client_->health().RecordSuccesses(id_, count, last_latency);
  counters_.bytes.fetch_add(static_cast<uint64_t>(bytes));
}

// FinishAll (node_ring.cc) does the same for a reap's successes on a
// caller's ring, through the same counting (CountEnded, CountSucceeded).
void NodeRuntime::Finish(Attempt* a, AttemptSink* b,
                         const absl::StatusOr<size_t>& r, const char* out,
                         bool checksum_failure, absl::Time t0, bool refill) {
  const absl::Time now = client_->clock()->MonotonicNow();
  const absl::Duration latency = now - t0;
  const int64_t length = static_cast<int64_t>(a->length);
  CountEnded(1, length, absl::ToUnixNanos(now));
  if (r.ok()) {
    // A late answer after a stall or timeout still revives the node, but
    // its latency would inflate the node's p99 (and so its stall and hedge
    // delays) for a whole window: leave it out.
    if (!a->abandoned.load(std::memory_order_relaxed)) {
      client_->latency().Record(latency_, latency, now);
    }
    CountSucceeded(1, length, latency);
  } else if (!absl::IsCancelled(r.status())) {
    counters_.errors.fetch_add(1);
    if (checksum_failure) {
      counters_.checksum_failures.fetch_add(1);
      client_->CountChecksumFailure();
    }
    const absl::StatusCode c = r.status().code();
    if (c == absl::StatusCode::kUnavailable ||
        c == absl::StatusCode::kDeadlineExceeded ||
        c == absl::StatusCode::kInternal || c == absl::StatusCode::kUnknown) {
      client_->health().RecordFailure(id_, r.status());
    }
  }

  if (refill) {
    b->CompletedAndRefill(a, r, out);
  } else {
    b->Completed(a, r, out);
  }
}

}  // namespace client_internal
}  // namespace rangefs
