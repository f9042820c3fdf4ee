#include "client_lib/internal/node_runtime.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "client_lib/fs.h"
#include "storage_node/node_client.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace client_internal {
namespace {

node::NodeClientTlsOptions ToNodeTls(const ClientTlsOptions& t) {
  return {.ca_file = t.ca_file,
          .cert_file = t.cert_file,
          .key_file = t.key_file,
          .server_name_override = t.server_name_override};
}

}  // namespace

void NodeRuntime::Submit(absl::Span<Task> tasks) {
  bool wake = false;
  {
    absl::MutexLock l(&qmu_);
    if (!started_ && !stop_) {
      started_ = true;
      use_ring_ = client_->RingWanted() && StartRingLocked();
    }
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

void NodeRuntime::Wake() { ring_->Wake(); }

NodeRuntime::~NodeRuntime() {
  // Only the ring thread frees a ring with reads in flight (RingDrain);
  // should one be left, the kernel may still write into its buffers.
  if (ring_ != nullptr && ring_->inflight() > 0) (void)ring_.release();
}

void NodeRuntime::BeginStop() {
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
    }
    if (!Execute(t.attempt, t.call.get(), buf)) return;  // torn down
  }
}

std::optional<bool> NodeRuntime::UseMount(const std::string& dir) {
  DataPath mode = client_->options().data_path;
  if (mode == DataPath::kMount) return true;
  if (mode == DataPath::kAgent) return false;
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

std::shared_ptr<node::NodeClient> NodeRuntime::Agent(absl::Status* error) {
  absl::MutexLock l(&mu_);
  if (agent_ == nullptr) {
    if (address_.empty()) {
      *error = absl::FailedPreconditionError(
          absl::StrCat("node ", id_, " has no agent address"));
      return nullptr;
    }
    absl::StatusOr<std::unique_ptr<node::NodeClient>> c =
        node::NodeClient::Connect(address_,
                                  ToNodeTls(client_->options().agent_tls));
    if (!c.ok()) {
      *error = c.status();
      return nullptr;
    }
    agent_ = std::move(*c);
  }
  return agent_;
}

absl::StatusOr<std::shared_ptr<const node::Checksums>> NodeRuntime::Sidecar(
    const std::string& dir, const std::string& object) {
  {
    absl::MutexLock l(&mu_);
    auto it = sidecars_.find(object);
    if (it != sidecars_.end()) return it->second;
  }
  const MountPath path{dir, node::SidecarPathFor(object)};
  RANGEFS_ASSIGN_OR_RETURN(std::string data, client_->fs()->ReadFile(path));
  absl::StatusOr<node::Checksums> c = node::DecodeSidecar(data);
  if (!c.ok()) {
    return absl::DataLossError(
        absl::StrCat("sidecar ", path.full(), ": ", c.status().message()));
  }
  auto sp = std::make_shared<const node::Checksums>(std::move(*c));
  absl::MutexLock l(&mu_);
  sidecars_[object] = sp;
  return sp;
}

absl::Status NodeRuntime::PlanMount(Attempt* a, const std::string& dir,
                                    MountPlan* plan) {
  plan->path = MountPath{dir, *a->object};
  plan->direct = client_->options().o_direct;
  uint64_t align = plan->direct ? kDirectIoAlignment : 1;
  if (a->verify) {
    RANGEFS_ASSIGN_OR_RETURN(plan->sums, Sidecar(dir, *a->object));
    const uint64_t bs = plan->sums->block_size;
    if (bs == 0 || (plan->direct && bs % align != 0)) {
      return absl::DataLossError(absl::StrCat("sidecar of ", plan->path.full(),
                                              ": bad block size ", bs));
    }
    align = bs;
  }
  plan->start = a->object_offset / align * align;
  plan->end = (a->object_offset + a->length + align - 1) / align * align;
  if (plan->sums != nullptr) {
    plan->end = std::min(plan->end, plan->sums->object_size);
  }
  if (plan->end < a->object_offset + a->length) {
    return absl::DataLossError(absl::StrCat(
        plan->path.full(), " is ", plan->end,
        " bytes by its sidecar; need up to ", a->object_offset + a->length));
  }
  plan->span = static_cast<size_t>(plan->end - plan->start);
  plan->alloc = WorkerBuffer::RoundUp(plan->span, kDirectIoAlignment);
  plan->lead = static_cast<size_t>(a->object_offset - plan->start);
  return absl::OkStatus();
}

absl::StatusOr<size_t> NodeRuntime::CheckMount(Attempt* a,
                                               const MountPlan& plan,
                                               const char* p, size_t n,
                                               bool* checksum_failure) {
  if (n < plan.lead + a->length) {
    return absl::DataLossError(absl::StrCat(
        "short read of ", plan.path.full(), " at ", a->object_offset, ": ",
        n - std::min(n, plan.lead), " of ", a->length, " bytes"));
  }
  if (plan.sums != nullptr) {
    const node::Checksums& sums = *plan.sums;
    const uint64_t bs = sums.block_size;
    for (uint64_t off = plan.start; off < plan.end; off += bs) {
      uint64_t blk = off / bs;
      size_t len = static_cast<size_t>(std::min(bs, plan.end - off));
      if (blk >= sums.block_crc32c.size() ||
          Crc32cExtend(0, p + (off - plan.start), len) !=
              sums.block_crc32c[blk]) {
        *checksum_failure = true;
        return absl::DataLossError(
            absl::StrCat("checksum mismatch in ", plan.path.full(), " block ",
                         blk, " (bytes ", off, "..", off + len, ")"));
      }
    }
  }
  return a->length;
}

std::optional<absl::StatusOr<size_t>> NodeRuntime::ReadMount(
    Attempt* a, WorkerBuffer& buf, const char** data, bool* checksum_failure) {
  const std::string dir = mount_dir();
  MountPlan plan;
  std::optional<absl::Status> planned =
      Blocking([&] { return PlanMount(a, dir, &plan); });  // may read sidecar
  if (!planned.has_value()) return std::nullopt;
  if (!planned->ok()) return absl::StatusOr<size_t>(*planned);
  char* p = buf.Get(plan.alloc);
  std::optional<absl::StatusOr<size_t>> n = Blocking([&] {
    return client_->fs()->PRead(
        plan.path, plan.start,
        absl::MakeSpan(p, plan.direct ? plan.alloc : plan.span),
        {.direct = plan.direct});
  });
  if (!n.has_value() || !n->ok()) return n;
  absl::StatusOr<size_t> len = CheckMount(a, plan, p, **n, checksum_failure);
  if (len.ok()) *data = p + plan.lead;
  return len;
}

std::optional<absl::StatusOr<size_t>> NodeRuntime::ReadAgent(Attempt* a,
                                                             AttemptSink* b,
                                                             char* out) {
  absl::Status err;
  std::shared_ptr<node::NodeClient> agent = Agent(&err);
  if (agent == nullptr) return absl::StatusOr<size_t>(err);
  node::ReadCallOptions o;
  // The batch deadline is on the client's monotonic clock; gRPC needs
  // wall time.
  o.deadline = absl::Now() + (b->Deadline() - client_->clock()->MonotonicNow());
  o.verify_on_server = a->verify;
  o.check_chunk_crc = true;
  o.canceller = &a->canceller;
  std::optional<absl::StatusOr<size_t>> n = Blocking([&] {
    return agent->ReadRange(*a->object, a->object_offset,
                            absl::MakeSpan(out, a->length), o);
  });
  if (!n.has_value() || !n->ok()) return n;
  if (**n < a->length) {
    return absl::StatusOr<size_t>(absl::DataLossError(
        absl::StrCat("short read of ", *a->object, " from ", agent->address(),
                     ": ", **n, " of ", a->length, " bytes")));
  }
  return n;
}

void NodeRuntime::CancelQueued(Attempt* a, AttemptSink* b) {
  b->Dropped(a);
  counters_.inflight.fetch_sub(1);
  counters_.outstanding_bytes.fetch_sub(static_cast<int64_t>(a->length));
  client_->global_inflight().fetch_sub(1);
}

bool NodeRuntime::Execute(Attempt* a, AttemptSink* b, WorkerBuffer& buf) {
  if (b->Ended()) {
    CancelQueued(a, b);
    return true;
  }
  const absl::Time t0 = client_->clock()->MonotonicNow();
  a->started_ns.store(std::max<int64_t>(1, absl::ToUnixNanos(t0)),
                      std::memory_order_release);
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
    counters_.agent_reads.fetch_add(1);
    char* dst = buf.Get(a->length);
    std::optional<absl::StatusOr<size_t>> g = ReadAgent(a, b, dst);
    if (!g.has_value()) return false;
    r = std::move(*g);
    out = dst;
    if (absl::IsDataLoss(r.status())) checksum_failure = true;
  }
  Finish(a, b, r, out, checksum_failure, t0);
  return true;
}

void NodeRuntime::Finish(Attempt* a, AttemptSink* b,
                         const absl::StatusOr<size_t>& r, const char* out,
                         bool checksum_failure, absl::Time t0) {
  const absl::Time now = client_->clock()->MonotonicNow();
  const absl::Duration latency = now - t0;
  last_answer_ns_.store(absl::ToUnixNanos(now), std::memory_order_relaxed);
  counters_.inflight.fetch_sub(1);
  counters_.outstanding_bytes.fetch_sub(static_cast<int64_t>(a->length));
  client_->global_inflight().fetch_sub(1);
  const bool abandoned = a->abandoned.load(std::memory_order_relaxed);
  if (r.ok()) {
    // A late answer after a stall or timeout still revives the node, but
    // its latency would inflate the node's p99 (and so its stall and hedge
    // delays) for a whole window: leave it out.
    if (!abandoned) client_->latency().Record(id_, latency);
    client_->health().RecordSuccess(id_, latency);
    counters_.bytes.fetch_add(a->length);
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

  b->Completed(a, r, out);
}

}  // namespace client_internal
}  // namespace rangefs
