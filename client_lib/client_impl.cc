// The rangefs client: namespace view, read planner and parallel engine.
//
// Engine, in short. A call (Read / ReadV) maps its ranges onto pieces
// (ns::MapRange: cut at extent / stripe-unit boundaries and max_io_size)
// and owns a Batch shared with the workers. The calling thread runs a small
// event loop: it dispatches one attempt per piece to the chosen replica's
// node queue, then waits for failures (retry on another replica), hedge
// timers (second attempt on another replica after the node's p95), attempt
// timeouts and the deadline. Workers (max_inflight_per_node threads per
// node) do the blocking I/O into a buffer they own, verify it, and copy into
// the caller's span only after claiming the piece under the Batch mutex
// while the Batch is open. Closing the Batch (on return) waits for copies
// already started (memcpy only, never I/O), so no caller buffer is written
// after the call returns, whatever the workers are stuck in.
//
// io_uring mount path (ClientOptions::io_uring). Instead of worker threads,
// a node's mount pieces go to one ring thread per node: it takes the queued
// pieces in batches, submits up to io_uring_depth IORING_OP_READs at once
// into buffers it owns, reaps the completions, verifies and hands each
// result to its Batch exactly like a worker (claim under Batch::mu, copy,
// done), so the rule above holds unchanged: the ring thread writes caller
// memory only through that claim. The ring thread sleeps in the kernel on
// its ring; Submit wakes it through an eventfd read kept armed in the ring.
// A hung read occupies one slot (and one io-wq kernel worker) of its node.
//
// Small reads skip that hand-off (a thread wake-up each way): a call
// borrows a ReadRing of its own (BorrowRing), Flush starts its small pieces
// there when nothing can block the caller (file already open by the node's
// ring thread, mount known good, no sidecar to load), and the call's loop
// waits on that ring instead of its condition variable, reaping its own
// completions (Batch::Notify wakes it through the ring's eventfd when
// another thread ends an attempt). The claim-and-copy rule is the same.
// Those reads are RWF_NOWAIT: one that would block (a hung NFS server, a
// FUSE mount) ends with -EAGAIN and moves to the node's ring thread, since
// io_uring would park it in an io-wq worker of the calling thread, whose
// exit then waits for it.
// Reads a call abandoned stay in its ring's slots; the next borrower, or
// Stats(), settles them.
//
// Teardown (client.h). A node's I/O threads (IoThreads) bracket every call
// that may block forever (file system calls, agent reads, the ring thread's
// wait for completions) and hold the node (NodeRuntime) and what those
// calls use (ClientCore: options, file system, tables) through shared_ptrs.
// ~ClientImpl stops the nodes and waits for their threads up to
// teardown_timeout, not at all for a node marked dead or silent for its
// stall delay; threads still inside a bracketed call are then detached and,
// when the call returns, leave without touching the client again (a ring
// thread first waits for its ring's reads to end: until then the kernel
// writes into the ring's buffers). Calls can be cut short with a
// ReadCanceller (Batch::cancelled); Reader uses one for its prefetch.
//
// Cold start. Stall and hedge delays of a node without 10 latency samples
// use the process-wide window, else ClientOptions::cold_latency as a prior
// (StallDelay, lb::HedgeDelay). Attempts still queued are judged from
// their dispatch (a node whose threads are all stuck never starts them).
#include <fcntl.h>
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
#include "base/status_macros.h"
#include "client_lib/client.h"
#include "client_lib/fs.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/read_ring.h"
#include "client_lib/io_threads.h"
#include "client_lib/mountd/mount_status.h"
#include "loadbalancer/hedge.h"
#include "loadbalancer/latency_tracker.h"
#include "loadbalancer/node_health.h"
#include "loadbalancer/registry.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/keys.h"
#include "namespace/layout.h"
#include "namespace/layout_cache.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace client_internal {
namespace {

// How often a call with attempts running re-reads its nodes' health (a
// node another call marked dead).
constexpr absl::Duration kHealthRecheck = absl::Milliseconds(20);

namespace v1 = ::rangefs::v1;

node::NodeClientTlsOptions ToNodeTls(const ClientTlsOptions& t) {
  return {.ca_file = t.ca_file,
          .cert_file = t.cert_file,
          .key_file = t.key_file,
          .server_name_override = t.server_name_override};
}

LatencyHistogram ToLatencyHistogram(const lb::HistogramSnapshot& h) {
  LatencyHistogram out;
  out.upper_bounds_seconds = h.upper_bounds_seconds;
  out.counts = h.counts;
  out.sum_seconds = h.sum_seconds;
  out.count = h.count;
  out.min_seconds = h.min_seconds;
  out.max_seconds = h.max_seconds;
  return out;
}

// A buffer owned by one worker thread, aligned for O_DIRECT; grows only.
class WorkerBuffer {
 public:
  ~WorkerBuffer() { free(data_); }
  char* Get(size_t n) {
    if (n > size_) {
      free(data_);
      size_ = std::max(n, size_t{1} << 20);
      data_ = static_cast<char*>(aligned_alloc(
          kDirectIoAlignment, RoundUp(size_, kDirectIoAlignment)));
    }
    return data_;
  }
  static size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

struct Batch;
class NodeRuntime;

// One physical read of one piece on one replica.
struct Attempt {
  int piece = 0;
  NodeRuntime* node = nullptr;
  const std::string* object = nullptr;  // in a layout the Batch keeps alive
  uint64_t object_offset = 0;
  uint64_t length = 0;
  bool hedge = false;
  bool verify = false;
  // Sent to a node that was not admissible (a probe, or the last replica
  // left): its node's verdict does not cut it short.
  bool forced = false;
  absl::Time dispatched;
  // Guarded by Batch::mu.
  // Set by the worker when the I/O begins (MonotonicNow in ns; 0 = queued).
  std::atomic<int64_t> started_ns{0};
  bool finished = false;
  // Timed out or its node went bad: result ignored unless it still wins the
  // piece. Written under Batch::mu; atomic so that Finish may peek without it.
  std::atomic<bool> abandoned{false};
  absl::Status status;
  node::CallCanceller canceller;
};

struct PieceState {
  ns::Piece piece;
  int range = 0;
  char* dst = nullptr;
  uint64_t stream_key = 0;
  const std::string* path = nullptr;
  // Guarded by Batch::mu.
  bool done = false;
  bool claimed = false;
  bool hedged = false;
  int active = 0;
  std::vector<NodeRuntime*> excluded;  // failed or in flight
  std::vector<std::string> reasons;
  int data_loss = 0;
  Attempt* last = nullptr;  // the primary/retry in flight
  absl::Status status;
};

struct Task {
  std::shared_ptr<Batch> batch;
  Attempt* attempt;
  // A retry, a hedge or a piece moved off a bad node: its call is already
  // late, so it goes to the front of its node's queue.
  bool urgent = false;
};

// One mount read: the aligned span to read and how to check it.
struct MountPlan {
  std::string path;
  bool direct = false;
  uint64_t start = 0;
  uint64_t end = 0;
  size_t span = 0;   // end - start
  size_t alloc = 0;  // span rounded up to kDirectIoAlignment
  size_t lead = 0;   // object_offset - start
  std::shared_ptr<const node::Checksums> sums;  // set when verifying
};

// What the engine attaches to a read on a ReadRing (which knows nothing of
// it): the attempt's task, how to check the bytes, when it started.
struct MountRead : ReadRing::Context {
  MountRead(Task t, MountPlan p, absl::Time start)
      : task(std::move(t)), plan(std::move(p)), t0(start) {}
  Task task;
  MountPlan plan;
  absl::Time t0;
};

MountRead& MountReadOf(ReadRing::Slot& s) {
  return static_cast<MountRead&>(*s.context);
}

// Starts the read of `plan` for `t` on `ring` (precondition: a free slot).
void StartMountRead(ReadRing& ring, Task t, MountPlan plan,
                    std::shared_ptr<RingFile> file, absl::Time t0) {
  const uint64_t start = plan.start;
  const size_t want = plan.direct ? plan.alloc : plan.span;
  const size_t alloc = plan.alloc;
  const bool direct = plan.direct;
  ring.Start(std::move(file), start, want, alloc, direct,
             std::make_unique<MountRead>(std::move(t), std::move(plan), t0));
}

struct Batch {
  absl::Mutex mu;
  absl::CondVar cv;
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::atomic<bool> closed_hint{false};  // lock-free early-out for workers
  int copiers ABSL_GUARDED_BY(mu) = 0;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  std::vector<Attempt*> failed ABSL_GUARDED_BY(mu);
  std::vector<PieceState> pieces;  // fixed after planning; fields: see above
  std::vector<std::unique_ptr<Attempt>> attempts ABSL_GUARDED_BY(mu);
  std::vector<std::shared_ptr<const ns::CachedLayout>> layouts;
  absl::Time deadline;
  // Attempts dispatched and not yet handed to their nodes (Flush).
  std::vector<Task> outbox ABSL_GUARDED_BY(mu);
  // The ring the calling thread borrowed for this call (null: none). Its
  // small mount reads are submitted and reaped by the caller itself.
  ReadRing* ring = nullptr;
  // The caller waits on `ring` rather than on `cv`.
  bool ring_waiting ABSL_GUARDED_BY(mu) = false;
  // ReadOptions::canceller fired: the call returns now.
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  // Wakes the caller, wherever it waits.
  void Notify() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    cv.Signal();
    if (ring_waiting) {
      ring_waiting = false;
      ring->Wake();
    }
  }
};

// A node's queue of tasks: urgent ones (retries, hedges, moved pieces)
// first, each kind first in, first out.
class TaskQueue {
 public:
  void Push(Task t) { (t.urgent ? urgent_ : normal_).push_back(std::move(t)); }
  bool empty() const { return urgent_.empty() && normal_.empty(); }
  // Precondition: !empty().
  Task Pop() {
    std::deque<Task>& q = urgent_.empty() ? normal_ : urgent_;
    Task t = std::move(q.front());
    q.pop_front();
    return t;
  }

 private:
  std::deque<Task> urgent_;
  std::deque<Task> normal_;
};

struct NodeCounters {
  std::atomic<uint64_t> bytes{0}, requests{0}, errors{0}, timeouts{0},
      stalls{0}, moved{0}, checksum_failures{0}, mount_reads{0}, agent_reads{0},
      uring_reads{0}, caller_reads{0};
  std::atomic<int64_t> inflight{0}, outstanding_bytes{0};
};

// What the nodes' I/O threads use of their client: its options, clock,
// file system, health and latency tables and counters. Shared by the
// ClientImpl and its NodeRuntimes, so that it outlives the ClientImpl while
// a thread that the teardown left blocked in a call still refers to it (a
// pread on a hung mount returns into the file system object). Thread-safe.
class ClientCore {
 public:
  ClientCore(const ClientOptions& o, const ClientHooks& hooks)
      : options_(o),
        clock_(hooks.clock ? hooks.clock : Clock::Real()),
        own_fs_(hooks.fs == nullptr ? NewPosixFs() : nullptr),
        fs_(hooks.fs != nullptr ? hooks.fs : own_fs_.get()),
        health_(clock_),
        latency_(clock_) {}

  const ClientOptions& options() const { return options_; }
  Clock* clock() { return clock_; }
  ReadOnlyFs* fs() { return fs_; }
  lb::NodeHealthTable& health() { return health_; }
  lb::LatencyTracker& latency() { return latency_; }
  std::atomic<int>& global_inflight() { return global_inflight_; }
  void CountChecksumFailure() { checksum_failures_.fetch_add(1); }
  void CountHedgeWin() { hedge_wins_.fetch_add(1); }
  uint64_t checksum_failures() const { return checksum_failures_.load(); }
  uint64_t hedge_wins() const { return hedge_wins_.load(); }
  // Whether nodes' mount reads go through io_uring (see options.h).
  bool RingWanted() const {
    return options_.io_uring && own_fs_ != nullptr &&
           options_.data_path != DataPath::kAgent;
  }

 private:
  const ClientOptions options_;
  Clock* const clock_;
  const std::unique_ptr<ReadOnlyFs> own_fs_;
  ReadOnlyFs* const fs_;
  lb::NodeHealthTable health_;
  lb::LatencyTracker latency_;
  std::atomic<int> global_inflight_{0};
  std::atomic<uint64_t> checksum_failures_{0}, hedge_wins_{0};
};

// Everything the client keeps per storage node. Thread-safe. Owned through
// shared_ptrs by the client and by each of the node's I/O threads: a thread
// that the client's teardown left blocked in a call (a hung mount) keeps
// the node (its buffers, ring and files) and the ClientCore alive until
// that call returns, then drops them (see IoThreads).
class NodeRuntime : public std::enable_shared_from_this<NodeRuntime> {
 public:
  NodeRuntime(std::shared_ptr<ClientCore> client, std::string id)
      : client_(std::move(client)), id_(std::move(id)) {}
  ~NodeRuntime();

  const std::string& id() const { return id_; }
  NodeCounters& counters() { return counters_; }
  // MonotonicNow (ns) when an attempt on this node last finished, with any
  // outcome: the node still answers. 0 = never.
  int64_t last_answer_ns() const {
    return last_answer_ns_.load(std::memory_order_relaxed);
  }
  // An attempt was dispatched here at `now_ns` (MonotonicNow), `before` in
  // flight until then.
  void Dispatched(int64_t now_ns, int64_t before) {
    if (before == 0) busy_since_ns_.store(now_ns, std::memory_order_relaxed);
  }
  // When (MonotonicNow) the node will have answered none of its attempts
  // in flight (queued or reading) for `d`, if it stays silent: from then on
  // it looks hung, even if no call waits for those attempts any more
  // (hedges answered their pieces). InfiniteFuture with none in flight.
  absl::Time SilentFor(absl::Duration d) const {
    if (counters_.inflight.load() <= 0) return absl::InfiniteFuture();
    const int64_t since = std::max(busy_since_ns_.load(), last_answer_ns());
    return absl::FromUnixNanos(since) + d;
  }

  void SetRecord(const v1::NodeRecord& r, const std::string& mount_root) {
    absl::MutexLock l(&mu_);
    address_ = r.addresses_size() > 0 ? r.addresses(0) : "";
    mount_dir_ = r.mount_path().empty() ? absl::StrCat(mount_root, "/", id_)
                                        : r.mount_path();
    agent_.reset();  // reconnect to the new address on next use
  }
  void SetDefaultMount(const std::string& mount_root) {
    absl::MutexLock l(&mu_);
    if (mount_dir_.empty()) mount_dir_ = absl::StrCat(mount_root, "/", id_);
  }
  std::string mount_dir() {
    absl::MutexLock l(&mu_);
    return mount_dir_;
  }
  // rangefs-mountd reports this node's mount as not usable.
  bool mount_down() const {
    return mount_down_.load(std::memory_order_relaxed);
  }
  void set_mount_down(bool down) { mount_down_.store(down); }

  // Queues `tasks` (moved from) with one lock and at most one wake-up.
  void Submit(absl::Span<Task> tasks);
  // Starts `t`'s read on the calling thread's ring when that needs no
  // blocking call here (a mount known good, its file already open, no
  // sidecar to load, at most kCallerReadMax bytes); false, with `t` left
  // as it was, otherwise.
  bool StartOnCaller(Task& t, ReadRing& ring);
  // A read started by StartOnCaller ended (ReadRing::Reap).
  void CallerDone(ReadRing::Slot& s, int res);
  // Tells the threads to stop: queued attempts (of calls that returned) end
  // as not needed; the ring thread leaves once its reads have ended. No new
  // thread starts.
  void BeginStop();
  // After BeginStop: waits until the threads have returned, up to
  // `deadline`, then leaves those blocked in a call (IoThreads::Shutdown).
  // Returns how many were left.
  int Shutdown(absl::Time deadline);

 private:
  // Runs `call`, which may block forever (a file system call on a hung
  // mount, an agent read), as a bracketed call of this node's threads
  // (IoThreads): it may use only what outlives the client (this node, the
  // ClientCore, the attempt's batch, the thread's own buffers), never the
  // caller's clock. nullopt if the client was torn down meanwhile: the
  // thread must then return at once, dropping what it holds. From a thread
  // outside the node (a caller's), just the call.
  template <typename F>
  auto Blocking(F&& call) -> std::optional<decltype(call())>;
  void WorkerLoop();
  // Runs one attempt; false if the client was torn down meanwhile.
  bool Execute(Attempt* a, Batch* b, WorkerBuffer& buf);
  // Ends an attempt whose batch closed before it started.
  void CancelQueued(Attempt* a, Batch* b);
  // Accounts an attempt's outcome and hands its bytes (`out`, valid until
  // this returns) to the batch.
  void Finish(Attempt* a, Batch* b, const absl::StatusOr<size_t>& r,
              const char* out, bool checksum_failure, absl::Time t0);
  absl::Status PlanMount(Attempt* a, const std::string& dir, MountPlan* plan);
  absl::StatusOr<size_t> CheckMount(Attempt* a, const MountPlan& plan,
                                    const char* p, size_t n,
                                    bool* checksum_failure);
  // nullopt: the client was torn down meanwhile (see Blocking), here and
  // below.
  std::optional<absl::StatusOr<size_t>> ReadMount(Attempt* a, WorkerBuffer& buf,
                                                  const char** data,
                                                  bool* checksum_failure);
  void SubmitPoolLocked(Task t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(qmu_);
  bool StartRingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(qmu_);
  void Wake();
  void RingLoop();
  // After the client's teardown left the ring thread: waits for the ring's
  // reads to end (they write into its buffers until then) and drops them.
  void RingDrain();
  // Starts `t` on the ring. False: the client was torn down meanwhile.
  bool RingStart(Task t);
  // A read of the node's ring ended. False: as RingStart.
  bool RingDone(ReadRing::Slot& s, int res);
  // A mount read failed: falls back to the agent (kAuto, mount gone) or
  // finishes the attempt with `error`. False: as RingStart.
  bool RingFailed(Task t, const absl::Status& error, absl::Time t0,
                  bool checksum_failure);
  // The ring reads' file of `path`, opened (which blocks on a hung mount:
  // ring thread only) and kept when not yet open.
  absl::StatusOr<std::shared_ptr<RingFile>> RingFd(const std::string& path,
                                                   bool direct);
  // The same if already open, else null. Never blocks on the mount.
  std::shared_ptr<RingFile> OpenRingFd(const std::string& path, bool direct);
  void RingDropFd(const std::string& path, bool direct);
  std::optional<absl::StatusOr<size_t>> ReadAgent(Attempt* a, Batch* b,
                                                  char* out);
  absl::StatusOr<std::shared_ptr<const node::Checksums>> Sidecar(
      const std::string& dir, const std::string& object);
  std::shared_ptr<node::NodeClient> Agent(absl::Status* error);
  // Whether to read `dir` (the mount) rather than the agent.
  std::optional<bool> UseMount(const std::string& dir);

  const std::shared_ptr<ClientCore> client_;
  const std::string id_;
  NodeCounters counters_;

  absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  std::string mount_dir_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<node::NodeClient> agent_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const node::Checksums>>
      sidecars_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> last_answer_ns_{0};
  // When the attempts in flight went from none to some.
  std::atomic<int64_t> busy_since_ns_{0};
  std::atomic<int> mount_state_{0};  // 0 unknown, 1 ok, -1 bad
  std::atomic<int64_t> mount_checked_ns_{0};
  std::atomic<bool> mount_down_{false};
  // Callers may read this node on their rings (no RWF_NOWAIT refusal yet).
  std::atomic<bool> caller_ok_{true};

  // The worker threads and the ring thread.
  IoThreads threads_;
  absl::Mutex qmu_;
  TaskQueue queue_ ABSL_GUARDED_BY(qmu_);  // worker threads' queue
  bool stop_ ABSL_GUARDED_BY(qmu_) = false;
  bool workers_started_ ABSL_GUARDED_BY(qmu_) = false;
  bool started_ ABSL_GUARDED_BY(qmu_) = false;
  bool use_ring_ ABSL_GUARDED_BY(qmu_) = false;
  TaskQueue ring_queue_ ABSL_GUARDED_BY(qmu_);
  bool ring_sleeping_ ABSL_GUARDED_BY(qmu_) = false;
  // Set before the ring thread starts, then used by it only (Wake aside).
  std::unique_ptr<ReadRing> ring_;
  // The ring thread's: a bracketed call reported the client torn down.
  bool ring_abandoned_ = false;
  // Files the ring thread opened, shared with callers' rings.
  absl::Mutex fd_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<RingFile>> ring_fds_
      ABSL_GUARDED_BY(fd_mu_);
};

class FileImpl;

struct Request {
  FileImpl* file = nullptr;
  uint64_t offset = 0;
  absl::Span<char> dst;
};

class ClientImpl : public Client {
 public:
  ClientImpl(const ClientOptions& o, const ClientHooks& hooks)
      : core_(std::make_shared<ClientCore>(o, hooks)),
        hooks_(hooks),
        options_(core_->options()),
        clock_(core_->clock()),
        real_clock_(hooks.clock == nullptr || hooks.clock == Clock::Real()),
        keys_(o.cluster),
        health_(core_->health()),
        latency_(core_->latency()),
        budget_(clock_, o.hedge_max_ratio, o.hedge_burst),
        global_inflight_(core_->global_inflight()) {}
  ~ClientImpl() override;

  absl::Status Init();

  absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<File>> OpenFile(absl::string_view path,
                                                 int64_t at_revision) override;
  absl::StatusOr<FileInfo> Stat(absl::string_view path) override;
  absl::StatusOr<std::vector<FileInfo>> List(absl::string_view dir) override;
  std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const FileReadRange> ranges,
      const ReadOptions& options) override;
  ClientStats Stats() override;
  std::string PrometheusText() override { return FormatPrometheus(Stats()); }

  std::vector<absl::StatusOr<size_t>> Execute(absl::Span<const Request> reqs,
                                              const ReadOptions& options);

  // Used by FileImpl.
  ns::LayoutCache* cache() { return cache_; }
  void CountRefresh() { layout_refreshes_.fetch_add(1); }
  void CountAbort() { layout_aborts_.fetch_add(1); }
  // The health table's verdict, and with kMount also a mount that
  // rangefs-mountd reports down.
  bool Admissible(NodeRuntime* n) {
    if (options_.data_path == DataPath::kMount && n->mount_down()) {
      return false;
    }
    return health_.Admissible(n->id());
  }

 private:
  // Re-reads rangefs-mountd's status file when mount_recheck_interval has
  // passed since the last read (one caller reads; the others go on with the
  // previous view). A plain read of a local file, never inside a mount.
  void MaybeReloadMountStatus();
  // Whether the current status view says node `id`'s mount is unusable.
  bool MountDownLocked(const std::string& id)
      ABSL_SHARED_LOCKS_REQUIRED(status_mu_);
  NodeRuntime* Node(const std::string& id);
  void OnNodeEvent(const ns::KvWatchUpdate& u);
  void OnLiveEvent(const ns::KvWatchUpdate& u);
  void ApplyNode(const std::string& value);
  void ApplyLive(const std::string& value);
  // Starts one attempt for piece `i` (a hedge if `hedge`). Returns false if
  // no replica is left to try.
  // How long a started attempt on `n` may go unanswered before it counts
  // as stalled (see ClientOptions::stall_factor); `cache` holds the values
  // computed in this pass of the call's loop.
  absl::Duration StallDelay(
      NodeRuntime* n,
      std::vector<std::pair<NodeRuntime*, absl::Duration>>& cache);
  // Whether a replica of `p` has not been tried yet in this call.
  bool HasUntriedReplica(const PieceState& p);
  // Hands the attempts Dispatch queued in b.outbox to their nodes, or
  // starts them on the caller's ring (NodeRuntime::StartOnCaller).
  void Flush(Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // A ring for the calling thread's small mount reads, while its call
  // runs; null when io_uring is off or refused, or kMaxCallerRings are out.
  ReadRing* BorrowRing();
  void ReturnRing(ReadRing* ring);
  // Ends the reads a borrowed ring reports (any thread that holds it).
  static void ReapCallerRing(ReadRing& ring);
  bool Dispatch(const std::shared_ptr<Batch>& b, int i, bool hedge,
                lb::Picker& picker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu);
  void FailPiece(Batch& b, PieceState& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);

  // What the nodes' threads use; the members below up to global_inflight_
  // refer into it.
  const std::shared_ptr<ClientCore> core_;
  const ClientHooks hooks_;
  const ClientOptions& options_;
  Clock* const clock_;
  const bool real_clock_;
  const ns::Keys keys_;
  lb::NodeHealthTable& health_;
  lb::LatencyTracker& latency_;
  lb::HedgeBudget budget_;
  std::atomic<int>& global_inflight_;
  std::unique_ptr<lb::Policy> policy_;
  std::unique_ptr<etcd::EtcdClient> etcd_;
  std::unique_ptr<ns::KvBackend> own_kv_;
  ns::KvBackend* kv_ = nullptr;
  std::unique_ptr<ns::LayoutCache> own_cache_;
  ns::LayoutCache* cache_ = nullptr;
  std::unique_ptr<ns::NamespaceStore> store_;

  absl::Mutex nodes_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<NodeRuntime>> nodes_
      ABSL_GUARDED_BY(nodes_mu_);

  // rangefs-mountd's report (mount_status_file).
  std::string status_path_;                 // empty: not read
  std::atomic<int64_t> status_next_ns_{0};  // monotonic; next reload due
  absl::Mutex status_mu_;  // held while reloading; before nodes_mu_
  bool status_valid_ ABSL_GUARDED_BY(status_mu_) = false;
  mountd::MountStatusFile status_ ABSL_GUARDED_BY(status_mu_);

  std::unique_ptr<ns::KvWatch> node_watch_, live_watch_;

  // Rings that calling threads borrow (BorrowRing).
  absl::Mutex rings_mu_;
  std::vector<std::unique_ptr<ReadRing>> rings_ ABSL_GUARDED_BY(rings_mu_);
  std::vector<ReadRing*> idle_rings_ ABSL_GUARDED_BY(rings_mu_);
  bool rings_refused_ ABSL_GUARDED_BY(rings_mu_) = false;

  std::atomic<uint64_t> seed_counter_{0};
  std::atomic<uint64_t> reads_{0}, pieces_{0}, bytes_{0}, retries_{0},
      hedges_{0}, deadline_exceeded_{0}, unavailable_{0}, layout_aborts_{0},
      layout_refreshes_{0}, verify_counter_{0};
};

// ---------------------------------------------------------------- File

class FileImpl : public File {
 public:
  FileImpl(ClientImpl* client, std::shared_ptr<const ns::CachedLayout> l,
           bool pinned)
      : client_(client),
        path_(l->path),
        pinned_(pinned),
        layout_(std::move(l)) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override {
    absl::MutexLock l(&mu_);
    return layout_->layout.size();
  }
  uint64_t generation() const override {
    absl::MutexLock l(&mu_);
    return layout_->layout.generation();
  }
  ClientImpl* client() const { return client_; }

  absl::StatusOr<size_t> Read(uint64_t offset, absl::Span<char> dst,
                              const ReadOptions& options) override {
    Request r{this, offset, dst};
    return std::move(client_->Execute({&r, 1}, options)[0]);
  }
  std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const ReadRange> ranges, const ReadOptions& options) override {
    std::vector<Request> reqs;
    reqs.reserve(ranges.size());
    for (const ReadRange& r : ranges) reqs.push_back({this, r.offset, r.dst});
    return client_->Execute(reqs, options);
  }

  // The layout to read with now (see file.h for the ABORTED rule).
  absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> Current() {
    std::shared_ptr<const ns::CachedLayout> cur;
    {
      absl::MutexLock l(&mu_);
      cur = layout_;
    }
    if (pinned_) return cur;
    absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> now =
        client_->cache()->Lookup(path_);
    if (!now.ok()) {
      if (absl::IsNotFound(now.status())) {
        client_->CountAbort();
        return absl::AbortedError(
            absl::StrCat(path_, " was deleted since it was opened; reopen"));
      }
      return cur;  // etcd unreachable: the snapshot stays valid
    }
    const v1::FileLayout& a = cur->layout;
    const v1::FileLayout& b = (*now)->layout;
    if (a.generation() == b.generation() && a.file_id() == b.file_id()) {
      return cur;
    }
    if (!SameBytes(a, b)) {
      client_->CountAbort();
      return absl::AbortedError(absl::StrCat(
          path_, " changed since it was opened (file_id ", a.file_id(), "->",
          b.file_id(), ", size ", a.size(), "->", b.size(), ", generation ",
          a.generation(), "->", b.generation(), "); reopen"));
    }
    client_->CountRefresh();
    absl::MutexLock l(&mu_);
    layout_ = *now;
    return *now;
  }

 private:
  static bool SameBytes(const v1::FileLayout& a, const v1::FileLayout& b) {
    if (a.file_id() != b.file_id() || a.size() != b.size()) return false;
    if (b.state() != v1::READY) return false;
    if (a.extents_size() == b.extents_size()) {
      for (int i = 0; i < a.extents_size(); ++i) {
        const v1::Extent& x = a.extents(i);
        const v1::Extent& y = b.extents(i);
        if (x.offset() == y.offset() && x.length() == y.length() &&
            x.has_crc32c() && y.has_crc32c() && x.crc32c() != y.crc32c()) {
          return false;
        }
      }
    }
    return true;
  }

  ClientImpl* const client_;
  const std::string path_;
  const bool pinned_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ns::CachedLayout> layout_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------- nodes

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

template <typename F>
auto NodeRuntime::Blocking(F&& call) -> std::optional<decltype(call())> {
  if (!threads_.BeginBlocking()) return std::nullopt;
  auto r = call();
  if (!threads_.EndBlocking()) return std::nullopt;
  return r;
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
    if (!Execute(t.attempt, t.batch.get(), buf)) return;  // torn down
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
  std::string path = absl::StrCat(dir, "/", node::SidecarPathFor(object));
  RANGEFS_ASSIGN_OR_RETURN(std::string data, client_->fs()->ReadFile(path));
  absl::StatusOr<node::Checksums> c = node::DecodeSidecar(data);
  if (!c.ok()) {
    return absl::DataLossError(
        absl::StrCat("sidecar ", path, ": ", c.status().message()));
  }
  auto sp = std::make_shared<const node::Checksums>(std::move(*c));
  absl::MutexLock l(&mu_);
  sidecars_[object] = sp;
  return sp;
}

absl::Status NodeRuntime::PlanMount(Attempt* a, const std::string& dir,
                                    MountPlan* plan) {
  plan->path = absl::StrCat(dir, "/", *a->object);
  plan->direct = client_->options().o_direct;
  uint64_t align = plan->direct ? kDirectIoAlignment : 1;
  if (a->verify) {
    RANGEFS_ASSIGN_OR_RETURN(plan->sums, Sidecar(dir, *a->object));
    const uint64_t bs = plan->sums->block_size;
    if (bs == 0 || (plan->direct && bs % align != 0)) {
      return absl::DataLossError(
          absl::StrCat("sidecar of ", plan->path, ": bad block size ", bs));
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
        plan->path, " is ", plan->end, " bytes by its sidecar; need up to ",
        a->object_offset + a->length));
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
        "short read of ", plan.path, " at ", a->object_offset, ": ",
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
            absl::StrCat("checksum mismatch in ", plan.path, " block ", blk,
                         " (bytes ", off, "..", off + len, ")"));
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
                                                             Batch* b,
                                                             char* out) {
  absl::Status err;
  std::shared_ptr<node::NodeClient> agent = Agent(&err);
  if (agent == nullptr) return absl::StatusOr<size_t>(err);
  node::ReadCallOptions o;
  // The batch deadline is on the client's monotonic clock; gRPC needs
  // wall time.
  o.deadline = absl::Now() + (b->deadline - client_->clock()->MonotonicNow());
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

void NodeRuntime::CancelQueued(Attempt* a, Batch* b) {
  absl::MutexLock l(&b->mu);
  a->finished = true;
  a->status = absl::CancelledError("not needed");
  if (!a->abandoned) b->pieces[a->piece].active--;
  counters_.inflight.fetch_sub(1);
  counters_.outstanding_bytes.fetch_sub(static_cast<int64_t>(a->length));
  client_->global_inflight().fetch_sub(1);
}

bool NodeRuntime::Execute(Attempt* a, Batch* b, WorkerBuffer& buf) {
  if (b->closed_hint.load(std::memory_order_acquire)) {
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

void NodeRuntime::Finish(Attempt* a, Batch* b, const absl::StatusOr<size_t>& r,
                         const char* out, bool checksum_failure,
                         absl::Time t0) {
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

  absl::MutexLock l(&b->mu);
  PieceState& p = b->pieces[a->piece];
  a->finished = true;
  if (!a->abandoned) p.active--;
  if (r.ok()) {
    if (!b->closed && !p.done && !p.claimed) {
      p.claimed = true;
      b->copiers++;
      b->mu.Unlock();
      memcpy(p.dst, out, a->length);
      b->mu.Lock();
      b->copiers--;
      p.done = true;
      a->status = absl::OkStatus();
      if (a->hedge) client_->CountHedgeWin();
      if (--b->remaining == 0 || b->closed) b->Notify();
    }
    return;
  }
  a->status = r.status();
  if (!a->abandoned && !b->closed && !p.done) {
    b->failed.push_back(a);
    b->Notify();
  }
}

// ---------------------------------------------------------------- io_uring

constexpr size_t kMaxRingFds = 1024;
// The largest read a calling thread submits itself: lookups and other small
// reads skip two thread hand-offs. Larger pieces go to their node's ring
// thread, which overlaps their copies with the next reads, and a borrowed
// ring's buffers stay small (depth x 64 KiB).
constexpr size_t kCallerReadMax = size_t{64} << 10;
// At most this many borrowed rings per client; calls beyond it use the
// nodes' ring threads.
constexpr size_t kMaxCallerRings = 64;

bool NodeRuntime::StartRingLocked() {
  std::string error;
  ring_ = ReadRing::Create(client_->options().io_uring_depth, false, &error);
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
      ring.SubmitAndWait(absl::ZeroDuration());
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
  Batch* b = t.batch.get();
  if (b->closed_hint.load(std::memory_order_acquire)) {
    CancelQueued(a, b);
    return true;
  }
  const std::string dir = mount_dir();
  // Started before the mount check: a check that hangs (a hung mount) is
  // this attempt's stall.
  const absl::Time t0 = client_->clock()->MonotonicNow();
  a->started_ns.store(std::max<int64_t>(1, absl::ToUnixNanos(t0)),
                      std::memory_order_release);
  std::optional<bool> mount = UseMount(dir);
  if (!mount.has_value()) return false;
  if (!*mount) {  // kAuto without a usable mount: the agent
    a->started_ns.store(0, std::memory_order_release);
    absl::MutexLock l(&qmu_);
    SubmitPoolLocked(std::move(t));
    return true;
  }
  counters_.mount_reads.fetch_add(1);
  counters_.uring_reads.fetch_add(1);
  MountPlan plan;
  std::optional<absl::Status> s =
      Blocking([&] { return PlanMount(a, dir, &plan); });  // may read sidecar
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
  StartMountRead(*ring_, std::move(t), std::move(plan), std::move(*file), t0);
  return true;
}

bool NodeRuntime::RingDone(ReadRing::Slot& s, int res) {
  MountRead& m = MountReadOf(s);
  if (res < 0) {
    RingDropFd(m.plan.path, m.plan.direct);  // a stale handle must not stay
    return RingFailed(
        std::move(m.task),
        ErrnoStatus(-res, absl::StrCat("io_uring read ", m.plan.path, " at ",
                                       m.plan.start + s.done)),
        m.t0, false);
  }
  Attempt* a = m.task.attempt;
  bool checksum_failure = false;
  absl::StatusOr<size_t> r =
      CheckMount(a, m.plan, s.buf, s.done, &checksum_failure);
  if (r.ok()) {
    Finish(a, m.task.batch.get(), r, s.buf + m.plan.lead, false, m.t0);
    return true;
  }
  return RingFailed(std::move(m.task), r.status(), m.t0, checksum_failure);
}

bool NodeRuntime::StartOnCaller(Task& t, ReadRing& ring) {
  if (ring.free_slots() == 0) return false;
  const DataPath mode = client_->options().data_path;
  if (mode == DataPath::kAgent || mount_down() ||
      !caller_ok_.load(std::memory_order_relaxed) ||
      (mode == DataPath::kAuto &&
       mount_state_.load(std::memory_order_relaxed) != 1)) {
    return false;
  }
  Attempt* a = t.attempt;
  if (a->length > kCallerReadMax) return false;
  if (a->verify) {
    absl::MutexLock l(&mu_);
    if (!sidecars_.contains(*a->object)) return false;  // would read it
  }
  MountPlan plan;
  if (!PlanMount(a, mount_dir(), &plan).ok() || plan.alloc > kCallerReadMax) {
    return false;  // the ring thread reports the error
  }
  std::shared_ptr<RingFile> file = OpenRingFd(plan.path, plan.direct);
  if (file == nullptr) return false;  // the ring thread opens it
  const absl::Time t0 = client_->clock()->MonotonicNow();
  a->started_ns.store(std::max<int64_t>(1, absl::ToUnixNanos(t0)),
                      std::memory_order_release);
  counters_.mount_reads.fetch_add(1);
  counters_.uring_reads.fetch_add(1);
  counters_.caller_reads.fetch_add(1);
  StartMountRead(ring, std::move(t), std::move(plan), std::move(file), t0);
  return true;
}

void NodeRuntime::CallerDone(ReadRing::Slot& s, int res) {
  MountRead& m = MountReadOf(s);
  if (res >= 0) {
    Attempt* a = m.task.attempt;
    bool checksum_failure = false;
    absl::StatusOr<size_t> r =
        CheckMount(a, m.plan, s.buf, s.done, &checksum_failure);
    if (r.ok() || absl::IsDataLoss(r.status())) {
      Finish(a, m.task.batch.get(), r, s.buf + m.plan.lead, checksum_failure,
             m.t0);
      return;
    }
  }
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
      SubmitPoolLocked(std::move(t));
      return true;
    }
  }
  Finish(t.attempt, t.batch.get(), error, nullptr, checksum_failure, t0);
  return true;
}

absl::StatusOr<std::shared_ptr<RingFile>> NodeRuntime::RingFd(
    const std::string& path, bool direct) {
  if (std::shared_ptr<RingFile> f = OpenRingFd(path, direct)) return f;
  // Blocks on a hung mount: only this node's ring waits.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  auto file = std::make_shared<RingFile>(fd);
  absl::MutexLock l(&fd_mu_);
  if (ring_fds_.size() >= kMaxRingFds) ring_fds_.clear();
  ring_fds_.emplace(absl::StrCat(direct ? "D" : "B", path), file);
  return file;
}

std::shared_ptr<RingFile> NodeRuntime::OpenRingFd(const std::string& path,
                                                  bool direct) {
  std::string key = absl::StrCat(direct ? "D" : "B", path);
  absl::MutexLock l(&fd_mu_);
  auto it = ring_fds_.find(key);
  return it == ring_fds_.end() ? nullptr : it->second;
}

void NodeRuntime::RingDropFd(const std::string& path, bool direct) {
  absl::MutexLock l(&fd_mu_);
  ring_fds_.erase(absl::StrCat(direct ? "D" : "B", path));
}

// ---------------------------------------------------------------- client

ClientImpl::~ClientImpl() {
  // Real time: the caller's clock may be a fake that does not move.
  const absl::Time give_up = absl::Now() + options_.teardown_timeout;
  node_watch_.reset();
  live_watch_.reset();
  {
    // No call runs any more; end the reads the borrowed rings still have
    // in flight (abandoned ones: a hung mount). A ring whose reads do not
    // end is leaked, as the kernel may still write into its buffers.
    absl::MutexLock l(&rings_mu_);
    for (std::unique_ptr<ReadRing>& r : rings_) {
      for (absl::Time now = absl::Now(); r->inflight() > 0 && now < give_up;
           now = absl::Now()) {
        r->SubmitAndWait(std::min(give_up - now, absl::Milliseconds(100)));
        ReapCallerRing(*r);
      }
      if (r->inflight() > 0) {
        RANGEFS_LOG(WARNING) << "client: " << r->inflight()
                             << " mount read(s) still in flight at close; "
                                "their ring is left open";
        r.release();  // NOLINT: deliberately leaked
      }
    }
  }
  std::vector<std::shared_ptr<NodeRuntime>> nodes;
  {
    absl::MutexLock l(&nodes_mu_);
    for (auto& [id, n] : nodes_) nodes.push_back(n);
  }
  // A node marked dead (its reads stalled or timed out) is hung, not slow:
  // its threads blocked in reads are not waited for at all; nor are those
  // of a node once it has answered none of its attempts for its stall
  // delay.
  const absl::Time now = clock_->MonotonicNow();
  const absl::Time real_now = absl::Now();
  std::vector<std::pair<NodeRuntime*, absl::Duration>> delays;
  std::vector<absl::Time> deadlines;
  for (const auto& n : nodes) {
    absl::Time d = give_up;
    if (health_.State(n->id()).dead) {
      d = absl::InfinitePast();
    } else {
      const absl::Time silent = n->SilentFor(StallDelay(n.get(), delays));
      if (silent != absl::InfiniteFuture()) {
        d = std::min(d, real_now + (silent - now));
      }
    }
    deadlines.push_back(d);
    n->BeginStop();
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::shared_ptr<NodeRuntime>& n = nodes[i];
    const int left = n->Shutdown(deadlines[i]);
    if (left > 0) {
      RANGEFS_LOG(WARNING) << "client: node " << n->id() << ": " << left
                           << " I/O thread(s) still blocked in a read at "
                              "close (hung mount?) are left to end with it";
    }
  }
}

absl::Status ClientImpl::Init() {
  const ClientOptions& o = options_;
  if (o.max_io_size < 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_io_size ", o.max_io_size, " is below 4096"));
  }
  if (o.max_inflight_per_node < 1 || o.max_inflight_global < 1) {
    return absl::InvalidArgumentError("in-flight caps must be >= 1");
  }
  if (o.io_uring_depth < 1) {
    return absl::InvalidArgumentError("io_uring_depth must be >= 1");
  }
  if (o.verify == VerifyMode::kSampled && o.verify_sample_every < 1) {
    return absl::InvalidArgumentError("verify_sample_every must be >= 1");
  }
  RANGEFS_ASSIGN_OR_RETURN(policy_, lb::NewPolicy(o.lb_policy));
  if (o.mount_status_file != "-" && o.data_path != DataPath::kAgent) {
    status_path_ = o.mount_status_file.empty()
                       ? absl::StrCat(o.mount_root, "/.rangefs-mounts")
                       : o.mount_status_file;
  }
  kv_ = hooks_.kv;
  if (kv_ == nullptr) {
    if (o.etcd_endpoints.empty()) {
      return absl::InvalidArgumentError(
          "ClientOptions: etcd_endpoints is required");
    }
    etcd::EtcdClientOptions eo;
    eo.endpoints = o.etcd_endpoints;
    eo.ca_file = o.etcd_ca_file;
    eo.cert_file = o.etcd_cert_file;
    eo.key_file = o.etcd_key_file;
    eo.username = o.etcd_username;
    eo.password = o.etcd_password;
    RANGEFS_ASSIGN_OR_RETURN(etcd_, etcd::EtcdClient::Open(eo));
    own_kv_ = ns::NewEtcdKv(etcd_.get());
    kv_ = own_kv_.get();
  }
  cache_ = hooks_.layout_cache;
  if (cache_ == nullptr) {
    ns::LayoutCacheOptions co;
    co.cluster = o.cluster;
    co.max_staleness = o.max_layout_staleness;
    co.clock = hooks_.clock;
    RANGEFS_ASSIGN_OR_RETURN(own_cache_, ns::LayoutCache::Open(kv_, co));
    cache_ = own_cache_.get();
  }
  store_ = ns::NewKvStore(kv_, {.cluster = o.cluster, .clock = hooks_.clock});

  // Node records and live records: load, then watch from that revision.
  const std::string np = keys_.NodePrefix();
  const std::string lp = keys_.LivePrefix();
  RANGEFS_ASSIGN_OR_RETURN(ns::KvRange nodes,
                           kv_->Range(np, ns::PrefixRangeEnd(np), 0, 0));
  for (const ns::KvEntry& e : nodes.kvs) ApplyNode(e.value);
  RANGEFS_ASSIGN_OR_RETURN(
      ns::KvRange lives,
      kv_->Range(lp, ns::PrefixRangeEnd(lp), 0, nodes.revision));
  for (const ns::KvEntry& e : lives.kvs) ApplyLive(e.value);
  RANGEFS_ASSIGN_OR_RETURN(
      node_watch_,
      kv_->Watch(np, ns::PrefixRangeEnd(np), nodes.revision + 1,
                 [this](const ns::KvWatchUpdate& u) { OnNodeEvent(u); }));
  RANGEFS_ASSIGN_OR_RETURN(
      live_watch_,
      kv_->Watch(lp, ns::PrefixRangeEnd(lp), nodes.revision + 1,
                 [this](const ns::KvWatchUpdate& u) { OnLiveEvent(u); }));
  return absl::OkStatus();
}

NodeRuntime* ClientImpl::Node(const std::string& id) {
  {
    absl::ReaderMutexLock l(&nodes_mu_);
    auto it = nodes_.find(id);
    if (it != nodes_.end()) return it->second.get();
  }
  NodeRuntime* n;
  bool created = false;
  {
    absl::MutexLock l(&nodes_mu_);
    auto& slot = nodes_[id];
    if (slot == nullptr) {
      slot = std::make_shared<NodeRuntime>(core_, id);
      slot->SetDefaultMount(options_.mount_root);
      created = true;
    }
    n = slot.get();
  }
  if (created && !status_path_.empty()) {
    // status_mu_ comes before nodes_mu_. A reload in between sets the same.
    absl::ReaderMutexLock sl(&status_mu_);
    n->set_mount_down(MountDownLocked(id));
  }
  return n;
}

bool ClientImpl::MountDownLocked(const std::string& id) {
  if (!status_valid_) return false;
  const mountd::MountStatusEntry* e = status_.Find(id);
  return e == nullptr || e->health != mountd::MountHealth::kHealthy;
}

void ClientImpl::MaybeReloadMountStatus() {
  if (status_path_.empty()) return;
  const int64_t now = absl::ToUnixNanos(clock_->MonotonicNow());
  if (now < status_next_ns_.load(std::memory_order_relaxed)) return;
  if (!status_mu_.TryLock()) return;  // another caller is reloading
  status_next_ns_.store(
      now + absl::ToInt64Nanoseconds(options_.mount_recheck_interval));
  absl::StatusOr<mountd::MountStatusFile> f =
      mountd::ReadMountStatus(status_path_);
  const bool was_valid = status_valid_;
  status_valid_ = false;
  if (f.ok()) {
    const absl::Time updated = absl::FromUnixMillis(f->updated_unix_ms);
    if (clock_->Now() - updated <= options_.mount_status_max_age) {
      status_valid_ = true;
      status_ = std::move(*f);
    } else if (was_valid) {
      RANGEFS_LOG(WARNING) << status_path_ << " is stale (updated "
                           << absl::FormatTime(updated)
                           << "): rangefs-mountd down? ignoring it";
    }
  } else if (!absl::IsNotFound(f.status())) {
    RANGEFS_LOG(WARNING) << "mount status: " << f.status();
  }
  {
    absl::ReaderMutexLock l(&nodes_mu_);
    for (auto& [id, n] : nodes_) {
      const bool down = MountDownLocked(id);
      if (down != n->mount_down()) {
        RANGEFS_LOG(INFO) << "node " << id << ": rangefs-mountd reports its "
                          << "mount " << (down ? "unusable" : "healthy");
      }
      n->set_mount_down(down);
    }
  }
  status_mu_.Unlock();
}

void ClientImpl::ApplyNode(const std::string& value) {
  v1::NodeRecord r;
  if (!r.ParseFromString(value) || r.id().empty()) return;
  Node(r.id())->SetRecord(r, options_.mount_root);
  lb::AdminState s = lb::AdminState::kActive;
  if (r.admin_state() == v1::DRAINING) s = lb::AdminState::kDraining;
  if (r.admin_state() == v1::DISABLED) s = lb::AdminState::kDisabled;
  health_.SetAdminState(r.id(), s);
}

void ClientImpl::ApplyLive(const std::string& value) {
  v1::LiveRecord r;
  if (!r.ParseFromString(value) || r.node_id().empty()) return;
  health_.SetLive(r.node_id(), true, r.health() == v1::LiveRecord::DRAINING);
}

void ClientImpl::OnNodeEvent(const ns::KvWatchUpdate& u) {
  for (const ns::KvEvent& e : u.events) {
    std::string id;
    if (!keys_.ParseNode(e.kv.key, &id)) continue;
    if (e.deleted) {
      health_.SetAdminState(id, lb::AdminState::kDisabled);
    } else {
      ApplyNode(e.kv.value);
    }
  }
}

void ClientImpl::OnLiveEvent(const ns::KvWatchUpdate& u) {
  for (const ns::KvEvent& e : u.events) {
    std::string id;
    if (!keys_.ParseLive(e.kv.key, &id)) continue;
    if (e.deleted) {
      health_.SetLive(id, false, false);  // lease gone: no new reads
    } else {
      ApplyLive(e.kv.value);
    }
  }
}

absl::StatusOr<std::unique_ptr<File>> ClientImpl::OpenFile(
    absl::string_view path) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->Lookup(path));
  if (l->layout.state() != v1::READY) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not ready (state ",
                     ns::FileStateName(l->layout.state()), ")"));
  }
  return std::unique_ptr<File>(new FileImpl(this, std::move(l), false));
}

absl::StatusOr<std::unique_ptr<File>> ClientImpl::OpenFile(
    absl::string_view path, int64_t at_revision) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->LookupAt(path, at_revision));
  if (l->layout.state() != v1::READY) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " was not ready at revision ", at_revision));
  }
  return std::unique_ptr<File>(new FileImpl(this, std::move(l), true));
}

FileInfo ToInfo(const std::string& path, const v1::FileLayout& l,
                int64_t mod_revision) {
  return FileInfo{.path = path,
                  .size = l.size(),
                  .file_id = l.file_id(),
                  .generation = l.generation(),
                  .ready = l.state() == v1::READY,
                  .mod_revision = mod_revision};
}

absl::StatusOr<FileInfo> ClientImpl::Stat(absl::string_view path) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->Lookup(path));
  return ToInfo(l->path, l->layout, l->mod_revision);
}

absl::StatusOr<std::vector<FileInfo>> ClientImpl::List(absl::string_view dir) {
  std::vector<FileInfo> out;
  ns::ListFilesOptions o;
  o.dir = std::string(dir);
  for (int page = 0; page < 100000; ++page) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, store_->ListFiles(o));
    for (const ns::FileEntry& f : r.files) {
      out.push_back(ToInfo(f.path, f.layout, f.mod_revision));
    }
    if (r.next_page_token.empty()) break;
    o.page_token = r.next_page_token;
    o.revision = r.revision;
  }
  return out;
}

std::vector<absl::StatusOr<size_t>> ClientImpl::ReadV(
    absl::Span<const FileReadRange> ranges, const ReadOptions& options) {
  std::vector<Request> reqs;
  reqs.reserve(ranges.size());
  for (const FileReadRange& r : ranges) {
    auto* f = dynamic_cast<FileImpl*>(r.file);
    if (f != nullptr && f->client() != this) f = nullptr;
    reqs.push_back({f, r.offset, r.dst});
  }
  return Execute(reqs, options);
}

ReadRing* ClientImpl::BorrowRing() {
  if (!core_->RingWanted() || !real_clock_) return nullptr;
  absl::MutexLock l(&rings_mu_);
  if (!idle_rings_.empty()) {
    // A ring with reads still in flight (abandoned by an earlier call)
    // first: this call reaps them.
    auto it = std::find_if(idle_rings_.begin(), idle_rings_.end(),
                           [](ReadRing* r) { return r->inflight() > 0; });
    if (it == idle_rings_.end()) it = idle_rings_.end() - 1;
    ReadRing* r = *it;
    idle_rings_.erase(it);
    return r;
  }
  if (rings_refused_ || rings_.size() >= kMaxCallerRings) return nullptr;
  std::string error;
  std::unique_ptr<ReadRing> r =
      ReadRing::Create(options_.io_uring_depth, true, &error);
  if (r == nullptr) {
    RANGEFS_LOG(WARNING) << "client: " << error
                         << "; calls hand every read to the nodes";
    rings_refused_ = true;
    return nullptr;
  }
  rings_.push_back(std::move(r));
  return rings_.back().get();
}

void ClientImpl::ReturnRing(ReadRing* ring) {
  if (ring == nullptr) return;
  // The armed wake-up read belongs to this thread (its completion runs as
  // task work here): end it, so that each borrower arms its own.
  for (int i = 0; i < 1000 && ring->wake_armed(); ++i) {
    if (i == 0) ring->Wake();
    ring->SubmitAndWait(absl::Milliseconds(10));
    ReapCallerRing(*ring);
  }
  ReapCallerRing(*ring);  // frees the slots of reads that already ended
  ring->SubmitAndWait(absl::ZeroDuration());  // reads Reap issued again
  absl::MutexLock l(&rings_mu_);
  idle_rings_.push_back(ring);
}

void ClientImpl::ReapCallerRing(ReadRing& ring) {
  ring.Reap([](ReadRing::Slot& s, int res) {
    MountReadOf(s).task.attempt->node->CallerDone(s, res);
  });
}

void ClientImpl::Flush(Batch& b) {
  std::vector<Task>& out = b.outbox;
  if (out.empty()) return;
  // Small mount reads: started here, on the caller's ring.
  if (b.ring != nullptr && !b.closed) {
    size_t kept = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].attempt->node->StartOnCaller(out[i], *b.ring)) continue;
      if (kept != i) out[kept] = std::move(out[i]);
      ++kept;
    }
    const bool started = kept < out.size();
    out.resize(kept);
    if (started) b.ring->SubmitAndWait(absl::ZeroDuration());
    if (out.empty()) return;
  }
  // The rest: one Submit per node, nodes in order of first appearance, each
  // node's tasks in dispatch order.
  absl::InlinedVector<NodeRuntime*, 8> nodes;
  for (const Task& t : out) {
    if (std::find(nodes.begin(), nodes.end(), t.attempt->node) == nodes.end()) {
      nodes.push_back(t.attempt->node);
    }
  }
  std::vector<Task> mine;
  for (NodeRuntime* n : nodes) {
    mine.clear();
    for (Task& t : out) {
      if (t.attempt->node == n) mine.push_back(std::move(t));
    }
    n->Submit(absl::MakeSpan(mine));
  }
  out.clear();
}

bool ClientImpl::Dispatch(const std::shared_ptr<Batch>& b, int i, bool hedge,
                          lb::Picker& picker) {
  PieceState& p = b->pieces[i];
  const auto& replicas = *p.piece.replicas;
  // Candidates: admissible, not excluded. Probes and last resorts aside.
  absl::InlinedVector<lb::Candidate, 4> cands;
  absl::InlinedVector<int, 4> index;
  int probe = -1, last_resort = -1;
  for (int r = 0; r < replicas.size(); ++r) {
    NodeRuntime* n = Node(replicas[r].node_id());
    if (std::find(p.excluded.begin(), p.excluded.end(), n) !=
        p.excluded.end()) {
      continue;
    }
    if (Admissible(n)) {
      NodeCounters& c = n->counters();
      cands.push_back({.node = n->id(),
                       .inflight = static_cast<int>(c.inflight.load()),
                       .outstanding_bytes = c.outstanding_bytes.load(),
                       .ewma_latency = latency_.Ewma(n->id())});
      index.push_back(r);
    } else if (probe < 0 &&
               !(options_.data_path == DataPath::kMount && n->mount_down()) &&
               health_.ShouldProbe(n->id())) {
      probe = r;
    } else if (last_resort < 0 && !hedge) {
      last_resort = r;
    }
  }
  int chosen;
  bool forced = true;
  if (probe >= 0) {
    chosen = probe;
  } else if (!cands.empty()) {
    chosen = index[picker.Pick(cands, p.stream_key)];
    forced = false;
  } else if (last_resort >= 0) {
    chosen = last_resort;  // every healthy replica failed: try a sick one
  } else {
    return false;
  }
  NodeRuntime* n = Node(replicas[chosen].node_id());
  const bool urgent = !p.excluded.empty();  // not the piece's first attempt
  b->attempts.push_back(std::make_unique<Attempt>());
  Attempt* a = b->attempts.back().get();
  a->piece = i;
  a->node = n;
  a->object = &replicas[chosen].object();
  a->object_offset = p.piece.ObjectOffset(replicas[chosen]);
  a->length = p.piece.length;
  a->hedge = hedge;
  a->forced = forced;
  a->verify = options_.verify == VerifyMode::kFull ||
              (options_.verify == VerifyMode::kSampled &&
               verify_counter_.fetch_add(1) %
                       static_cast<uint64_t>(options_.verify_sample_every) ==
                   0);
  a->dispatched = clock_->MonotonicNow();
  p.excluded.push_back(n);
  p.active++;
  if (!hedge) p.last = a;
  NodeCounters& c = n->counters();
  c.requests.fetch_add(1);
  n->Dispatched(absl::ToUnixNanos(a->dispatched), c.inflight.fetch_add(1));
  c.outstanding_bytes.fetch_add(static_cast<int64_t>(a->length));
  global_inflight_.fetch_add(1);
  b->outbox.push_back(Task{b, a, urgent});
  return true;
}

absl::Duration ClientImpl::StallDelay(
    NodeRuntime* n,
    std::vector<std::pair<NodeRuntime*, absl::Duration>>& cache) {
  for (const auto& [node, d] : cache) {
    if (node == n) return d;
  }
  constexpr uint64_t kMinSamples = 10;
  lb::HistogramSnapshot s = latency_.NodeSnapshot(n->id());
  if (s.count < kMinSamples) s = latency_.GlobalWindowSnapshot();
  // The node's p99, else the process's (the other nodes'), else (a new
  // process) the cold prior, or the slowest answer seen if larger.
  const absl::Duration p99 =
      s.count >= kMinSamples
          ? s.Quantile(0.99)
          : std::max(options_.cold_latency, absl::Seconds(s.max_seconds));
  const absl::Duration d =
      std::clamp(options_.stall_factor * p99, options_.stall_min_delay,
                 options_.attempt_timeout);
  cache.emplace_back(n, d);
  return d;
}

bool ClientImpl::HasUntriedReplica(const PieceState& p) {
  for (const v1::Replica& r : *p.piece.replicas) {
    NodeRuntime* n = Node(r.node_id());
    if (std::find(p.excluded.begin(), p.excluded.end(), n) ==
        p.excluded.end()) {
      return true;
    }
  }
  return false;
}

void ClientImpl::FailPiece(Batch& b, PieceState& p) {
  p.done = true;
  b.remaining--;
  const int tried = static_cast<int>(p.reasons.size());
  std::string msg = absl::StrCat("all ", tried, " replica attempts failed for ",
                                 *p.path, " bytes [", p.piece.offset, ", ",
                                 p.piece.offset + p.piece.length,
                                 "): ", absl::StrJoin(p.reasons, "; "));
  if (p.data_loss == tried && tried > 0) {
    p.status = absl::DataLossError(msg);
  } else {
    unavailable_.fetch_add(1);
    p.status = absl::UnavailableError(msg);
  }
}

std::vector<absl::StatusOr<size_t>> ClientImpl::Execute(
    absl::Span<const Request> reqs, const ReadOptions& options) {
  std::vector<absl::StatusOr<size_t>> results(reqs.size(), size_t{0});
  const absl::Time start = clock_->MonotonicNow();
  auto b = std::make_shared<Batch>();
  b->deadline = start + (options.deadline > absl::ZeroDuration()
                             ? options.deadline
                             : options_.default_deadline);
  reads_.fetch_add(reqs.size());
  MaybeReloadMountStatus();
  // Plan.
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    if (r.file == nullptr) {
      results[i] = absl::InvalidArgumentError(
          "ReadV: range's File is null or from another Client");
      continue;
    }
    absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> l =
        r.file->Current();
    if (!l.ok()) {
      results[i] = l.status();
      continue;
    }
    const v1::FileLayout& layout = (*l)->layout;
    if (r.offset > layout.size()) {
      results[i] = absl::OutOfRangeError(
          absl::StrCat("read at ", r.offset, " past the end of ",
                       r.file->path(), " (size ", layout.size(), ")"));
      continue;
    }
    if (b->layouts.empty() || b->layouts.back() != *l) b->layouts.push_back(*l);
    std::vector<ns::Piece> ps =
        ns::MapRange(layout, r.offset, r.dst.size(), options_.max_io_size);
    size_t total = 0;
    for (const ns::Piece& p : ps) {
      PieceState s;
      s.piece = p;
      s.range = static_cast<int>(i);
      s.dst = r.dst.data() + (p.offset - r.offset);
      s.stream_key = absl::HashOf(layout.file_id(), p.unit) | 1;
      s.path = &(*l)->path;
      total += p.length;
      b->pieces.push_back(std::move(s));
    }
    results[i] = total;
  }
  pieces_.fetch_add(b->pieces.size());
  if (b->pieces.empty()) return results;
  b->ring = BorrowRing();
  // Declared before the lock below: runs after it is released, since
  // reaping may end attempts of this very batch (Finish locks b->mu).
  absl::Cleanup give_back = [this, &b] { ReturnRing(b->ring); };
  // Also before the lock below: the hook locks b->mu, and its destructor
  // (waiting for a Cancel in progress) must run without b->mu.
  client_internal::CancelHook cancel_hook(options.canceller, [&b] {
    absl::MutexLock l(&b->mu);
    b->cancelled = true;
    b->Notify();
  });

  absl::InsecureBitGen bitgen(std::seed_seq{
      options_.seed == 0 ? absl::Uniform<uint64_t>(absl::InsecureBitGen())
                         : options_.seed + seed_counter_.fetch_add(1)});
  std::unique_ptr<lb::Picker> picker = policy_->NewPicker(bitgen);
  std::vector<int> waiting;  // pieces held back by the global cap
  const absl::Duration slice =
      real_clock_ ? absl::InfiniteDuration() : absl::Milliseconds(2);
  absl::MutexLock l(&b->mu);
  b->remaining = static_cast<int>(b->pieces.size());
  for (int i = static_cast<int>(b->pieces.size()) - 1; i >= 0; --i) {
    waiting.push_back(i);
  }
  std::vector<lb::NodeId> ids;
  std::vector<std::pair<NodeRuntime*, absl::Duration>> stall_delays;
  // Per pass and node: HedgeDelay takes two histogram snapshots.
  std::vector<std::pair<NodeRuntime*, absl::Duration>> hedge_delays;
  auto hedge_delay = [&](NodeRuntime* n) {
    for (const auto& [node, d] : hedge_delays) {
      if (node == n) return d;
    }
    const absl::Duration d =
        lb::HedgeDelay(latency_, n->id(), options_.hedge_quantile,
                       options_.hedge_min_delay, 10, options_.cold_latency);
    hedge_delays.emplace_back(n, d);
    return d;
  };
  while (b->remaining > 0 && !b->cancelled) {
    // Dispatch what the global cap allows.
    while (!waiting.empty() &&
           global_inflight_.load() < options_.max_inflight_global) {
      int i = waiting.back();
      waiting.pop_back();
      PieceState& p = b->pieces[i];
      if (p.done) continue;
      budget_.OnRead();
      if (!Dispatch(b, i, false, *picker)) {
        p.reasons.push_back("no replica");
        FailPiece(*b, p);
      }
    }
    Flush(*b);
    // Failed attempts: retry elsewhere.
    std::vector<Attempt*> failed;
    failed.swap(b->failed);
    for (Attempt* a : failed) {
      PieceState& p = b->pieces[a->piece];
      if (p.done) continue;
      p.reasons.push_back(
          absl::StrCat("node ", a->node->id(), ": ", a->status.ToString()));
      if (absl::IsDataLoss(a->status)) p.data_loss++;
      if (p.active > 0) continue;  // a hedge is still running
      retries_.fetch_add(1);
      if (!Dispatch(b, a->piece, false, *picker)) FailPiece(*b, p);
    }
    Flush(*b);
    if (b->remaining == 0) break;
    // Timers: attempt timeouts, stalls, sick nodes, hedges.
    const absl::Time now = clock_->MonotonicNow();
    if (now >= b->deadline) break;
    absl::Time wake = b->deadline;
    bool unstarted = false, running = false;
    stall_delays.clear();
    hedge_delays.clear();
    for (int i = 0; i < static_cast<int>(b->pieces.size()); ++i) {
      PieceState& p = b->pieces[i];
      if (p.done || p.last == nullptr || p.last->finished ||
          p.last->abandoned) {
        continue;
      }
      Attempt* a = p.last;
      const absl::Time timeout_at = a->dispatched + options_.attempt_timeout;
      const int64_t started_ns = a->started_ns.load(std::memory_order_acquire);
      // A started attempt is judged from its start. One still queued is
      // judged from its dispatch, one health recheck later than a started
      // one would be (those decide first): every thread of its node may be
      // stuck, and the attempts they hold may be out of any call's sight
      // (their pieces done by hedges, or their calls returned).
      const absl::Time since = started_ns != 0 ? absl::FromUnixNanos(started_ns)
                                               : a->dispatched + kHealthRecheck;
      absl::Time stall_at = absl::InfiniteFuture();
      if (options_.stall_factor > 0) {
        const absl::Duration delay = StallDelay(a->node, stall_delays);
        stall_at = since + delay;
        // A node that answered other attempts meanwhile is slow, not
        // hung: this attempt is a straggler (or queued behind some), left
        // to hedging.
        const absl::Time answered =
            absl::FromUnixNanos(a->node->last_answer_ns());
        if (answered > since) stall_at = std::max(stall_at, answered + delay);
      }
      const bool timed_out = now >= timeout_at;
      bool stalled = !timed_out && now >= stall_at;
      // Its node went bad (here or in another call): move the piece now.
      bool sick = !timed_out && !stalled && !a->forced &&
                  (started_ns == 0 || options_.stall_factor > 0) &&
                  !Admissible(a->node);
      // Stalls and sickness only move a piece that has somewhere to go: an
      // untried replica, or its hedge in flight (then the stall still
      // marks the node, whose other attempts move). The last hope of a
      // piece is waited for up to attempt_timeout.
      if ((stalled || sick) && p.active <= 1 && !HasUntriedReplica(p)) {
        stalled = sick = false;
        stall_at = absl::InfiniteFuture();
      }
      if (timed_out || stalled || sick) {
        a->abandoned = true;
        p.active--;
        a->canceller.Cancel();
        NodeCounters& c = a->node->counters();
        if (timed_out || stalled) {
          (timed_out ? c.timeouts : c.stalls).fetch_add(1);
          c.errors.fetch_add(1);
          health_.RecordFailure(
              a->node->id(),
              absl::DeadlineExceededError(timed_out ? "attempt timeout"
                                                    : "attempt stalled"));
        } else {
          c.moved.fetch_add(1);
        }
        p.reasons.push_back(absl::StrCat(
            "node ", a->node->id(), ": ",
            timed_out
                ? absl::StrCat("attempt timed out after ",
                               absl::FormatDuration(options_.attempt_timeout))
            : stalled
                ? absl::StrCat(
                      "no answer ", absl::FormatDuration(now - since),
                      started_ns != 0 ? " after it started" : " while queued",
                      " (stall)")
            : started_ns == 0 ? std::string("marked unhealthy while queued")
                              : std::string("marked unhealthy while reading")));
        if (p.active == 0) {
          retries_.fetch_add(1);
          if (!Dispatch(b, i, false, *picker)) FailPiece(*b, p);
        }
        continue;
      }
      wake = std::min({wake, timeout_at, stall_at});
      if (started_ns == 0) unstarted = true;
      running = true;
      if (options_.hedging && !p.hedged && started_ns != 0) {
        const absl::Time hedge_at =
            absl::FromUnixNanos(started_ns) + hedge_delay(a->node);
        if (now >= hedge_at) {
          p.hedged = true;
          ids.clear();
          for (const v1::Replica& r : *p.piece.replicas) {
            ids.push_back(r.node_id());
          }
          if (lb::HedgingAllowed(latency_, ids) && budget_.TryAcquire()) {
            if (Dispatch(b, i, true, *picker)) hedges_.fetch_add(1);
          }
        } else {
          wake = std::min(wake, hedge_at);
        }
      }
    }
    Flush(*b);  // moved pieces and hedges
    if (b->remaining == 0) break;
    if (!b->failed.empty()) continue;
    absl::Duration wait = std::min(wake - now, slice);
    // Attempts still queued start without telling us: poll for their hedge
    // timers.
    if (options_.hedging && unstarted) {
      wait = std::min(
          wait, std::max(options_.hedge_min_delay, absl::Milliseconds(1)));
    }
    if (!waiting.empty()) wait = std::min(wait, absl::Milliseconds(1));
    // Another call may mark one of our nodes dead: look again now and then.
    if (running && options_.stall_factor > 0) {
      wait = std::min(wait, kHealthRecheck);
    }
    if (wait <= absl::ZeroDuration()) continue;
    if (b->ring != nullptr && b->ring->inflight() > 0) {
      // Reads of ours are on the caller's ring: wait there; other threads
      // end the wait with Batch::Notify.
      b->ring_waiting = true;
      b->mu.Unlock();
      b->ring->SubmitAndWait(wait);
      b->mu.Lock();
      b->ring_waiting = false;  // our own completions need not wake us
      b->mu.Unlock();
      ReapCallerRing(*b->ring);
      b->mu.Lock();
    } else {
      b->cv.WaitWithTimeout(&b->mu, wait);
    }
  }
  // Close: no worker may start a copy from now on; wait for started ones.
  // Anything still in the outbox (a deadline broke the loop) is handed over
  // all the same: its node ends it as not needed and settles its counters.
  b->closed = true;
  b->closed_hint.store(true, std::memory_order_release);
  Flush(*b);
  for (auto& a : b->attempts) {
    if (!a->finished) a->canceller.Cancel();
  }
  while (b->copiers > 0) b->cv.Wait(&b->mu);
  // Results.
  for (PieceState& p : b->pieces) {
    absl::StatusOr<size_t>& res = results[p.range];
    if (!res.ok()) continue;
    if (!p.done && b->cancelled) {
      res = absl::CancelledError(
          absl::StrCat("read of ", *p.path, " bytes [", p.piece.offset, ", ",
                       p.piece.offset + p.piece.length, ") cancelled"));
    } else if (!p.done) {
      deadline_exceeded_.fetch_add(1);
      res = absl::DeadlineExceededError(absl::StrCat(
          "read of ", *p.path, " bytes [", p.piece.offset, ", ",
          p.piece.offset + p.piece.length, ") not done by its deadline",
          p.reasons.empty() ? "" : ": ", absl::StrJoin(p.reasons, "; ")));
    } else if (!p.status.ok()) {
      res = p.status;
    }
  }
  for (const auto& r : results) {
    if (r.ok()) bytes_.fetch_add(*r);
  }
  return results;
}

ClientStats ClientImpl::Stats() {
  {
    // Reads that ended on idle borrowed rings: settle them first.
    absl::MutexLock l(&rings_mu_);
    for (ReadRing* r : idle_rings_) {
      if (r->inflight() > 0) {
        ReapCallerRing(*r);
        r->SubmitAndWait(absl::ZeroDuration());
      }
    }
  }
  ClientStats s;
  s.reads = reads_.load();
  s.pieces = pieces_.load();
  s.bytes = bytes_.load();
  s.retries = retries_.load();
  s.hedges = hedges_.load();
  s.hedge_wins = core_->hedge_wins();
  s.checksum_failures = core_->checksum_failures();
  s.deadline_exceeded = deadline_exceeded_.load();
  s.unavailable = unavailable_.load();
  s.layout_aborts = layout_aborts_.load();
  s.layout_refreshes = layout_refreshes_.load();
  s.stale_layout_serves = cache_->stats().stale_serves;
  s.latency = ToLatencyHistogram(latency_.GlobalCumulativeSnapshot());
  absl::ReaderMutexLock l(&nodes_mu_);
  for (auto& [id, n] : nodes_) {
    NodeCounters& c = n->counters();
    NodeStats ns;
    ns.node = id;
    ns.bytes = c.bytes.load();
    ns.requests = c.requests.load();
    ns.errors = c.errors.load();
    ns.timeouts = c.timeouts.load();
    ns.stalls = c.stalls.load();
    ns.moved = c.moved.load();
    ns.checksum_failures = c.checksum_failures.load();
    ns.mount_reads = c.mount_reads.load();
    ns.agent_reads = c.agent_reads.load();
    ns.uring_reads = c.uring_reads.load();
    ns.caller_reads = c.caller_reads.load();
    ns.mount_reported_down = n->mount_down();
    ns.inflight = c.inflight.load();
    ns.outstanding_bytes = c.outstanding_bytes.load();
    ns.admissible = Admissible(n.get());
    ns.latency = ToLatencyHistogram(latency_.NodeSnapshot(id));
    s.nodes.push_back(std::move(ns));
  }
  std::sort(
      s.nodes.begin(), s.nodes.end(),
      [](const NodeStats& a, const NodeStats& b) { return a.node < b.node; });
  return s;
}

}  // namespace
}  // namespace client_internal

namespace client_internal {

absl::StatusOr<std::unique_ptr<Client>> OpenClient(const ClientOptions& options,
                                                   const ClientHooks& hooks) {
  auto c = std::make_unique<ClientImpl>(options, hooks);
  RANGEFS_RETURN_IF_ERROR(c->Init());
  return std::unique_ptr<Client>(std::move(c));
}

}  // namespace client_internal

absl::StatusOr<std::unique_ptr<Client>> Client::Open(
    const ClientOptions& options) {
  return client_internal::OpenClient(options, {});
}

}  // namespace rangefs
