// File: internal/client_impl.h
//
// ClientImpl: the Client. Its namespace view (node records and live records
// from etcd watches, layouts through ns::LayoutCache) and stats are in
// client_impl.cc; the read call (plan, dispatch, retry, hedge, stall and
// deadline timers) in read_call.cc; the per-node engine in node_runtime.*.
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
// another thread ends an attempt). The claim-and-copy rule is the same,
// except for in-place reads (ClientOptions::in_place_reads): a piece's only
// attempt whose read is exactly the piece's bytes lands in the caller's
// buffer itself, no copy; its piece is claimed for it from the start (no
// timer moves or hedges it), and the call waits for it to be reaped before
// it returns (CloseCall).
// Those reads are RWF_NOWAIT: one that would block (a hung NFS server, a
// FUSE mount) ends with -EAGAIN and moves to the node's ring thread, since
// io_uring would park it in an io-wq worker of the calling thread, whose
// exit then waits for it.
// Reads a call abandoned stay in its ring's slots; the next borrower, or
// Stats(), settles them.
//
// Bytes already in memory skip the ring too (ClientOptions::
// page_cache_reads, cached_read.cc): before anything else, Flush offers a
// piece whose node's mount is a local disk or memory file system (the
// file open, the mount known good, whole sidecar blocks when verifying)
// to the calling thread, which claims the piece and preadv2(RWF_NOWAIT)s
// it straight into the caller's buffer: one copy, as a plain pread has. A
// read not wholly cached is left to the ring, which overwrites the buffer.
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
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_IMPL_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_IMPL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/client.h"
#include "client_lib/internal/batch.h"
#include "client_lib/internal/call.h"
#include "client_lib/internal/client_core.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/ec_read.h"
#include "client_lib/internal/file_impl.h"
#include "client_lib/internal/node_runtime.h"
#include "client_lib/internal/read_ring.h"
#include "client_lib/internal/single_flight.h"
#include "client_lib/mountd/mount_status.h"
#include "loadbalancer/hedge.h"
#include "loadbalancer/registry.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/keys.h"
#include "namespace/kv.h"
#include "namespace/layout_cache.h"
#include "namespace/store.h"

namespace rangefs {
namespace client_internal {

class ClientImpl : public Client, public FileHost {
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
  // Logs a warning naming the clusters that exist when this one has no
  // node and no file record (a wrong or missing cluster name).
  void WarnIfEmptyCluster();

  absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path) override;
  absl::StatusOr<std::unique_ptr<File>> OpenFile(absl::string_view path,
                                                 int64_t at_revision) override;
  absl::StatusOr<FileInfo> Stat(absl::string_view path) override;
  absl::StatusOr<std::vector<FileInfo>> List(absl::string_view dir) override;
  absl::StatusOr<std::unique_ptr<Dataset>> OpenDataset(
      absl::string_view dir, int64_t at_revision) override;
  std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const FileReadRange> ranges,
      const ReadOptions& options) override;
  absl::StatusOr<std::vector<RangeLocation>> Locate(absl::string_view path,
                                                    uint64_t offset,
                                                    uint64_t length) override;
  ClientStats Stats() override;
  std::string PrometheusText() override { return FormatPrometheus(Stats()); }

  // FileHost (used by FileImpl).
  std::vector<absl::StatusOr<size_t>> Execute(
      absl::Span<const Request> reqs, const ReadOptions& options,
      CallReport* report = nullptr) override;
  ns::LayoutCache* cache() override { return cache_; }
  void HintAhead(const ns::CachedLayout& layout, HintRange r) override;
  Clock* clock() override { return clock_; }
  void CountRefresh() override { layout_refreshes_.fetch_add(1); }
  void CountAbort() override { layout_aborts_.fetch_add(1); }
  absl::StatusOr<std::vector<ObjectSpan>> LocalSpans(FileImpl* file,
                                                     uint64_t offset,
                                                     uint64_t length) override;
  // The health table's verdict, and with kMount also a mount that
  // rangefs-mountd reports down.
  bool Admissible(NodeRuntime* n) {
    if (options_.data_path == DataPath::kMount && n->mount_down()) {
      return false;
    }
    return health_.Admissible(n->id());
  }
  // Whether n is not admissible for a cause other than slowness: its mount
  // reported down, its lease gone, disabled or draining, or dead for
  // errors (not only timeouts: lb::NodeState::only_timeouts).
  bool DownForCause(NodeRuntime* n) {
    if (options_.data_path == DataPath::kMount && n->mount_down()) return true;
    const lb::NodeState s = health_.State(n->id());
    return !s.live || s.draining || s.admin != lb::AdminState::kActive ||
           (s.dead && !s.only_timeouts);
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
  // Apply one node / live record read from etcd (after the record gate;
  // a record that fails it takes its node out of service).
  void ApplyNode(const ns::KvEntry& kv);
  void ApplyLive(const ns::KvEntry& kv);
  // Starts one attempt for piece `i` (a hedge if `hedge`). Returns false if
  // no replica is left to try.
  // How long a started attempt on `n` may go unanswered before it counts
  // as stalled (see ClientOptions::stall_factor); `cache` holds the values
  // computed in this pass of the call's loop.
  absl::Duration StallDelay(
      NodeRuntime* n,
      std::vector<std::pair<NodeRuntime*, absl::Duration>>& cache);
  // Whether a replica of `p` not tried yet in this call could answer: one
  // on a node known dead, without a live record or disabled does not count
  // (a stalled attempt is then the piece's last hope, waited for).
  bool HasUntriedReplica(const PieceState& p);
  // Hands the attempts Dispatch queued in b.outbox to their nodes, or
  // starts them on the caller's ring (NodeRuntime::StartOnCaller), or
  // copies them out of the page cache here (ReadCachedOnCaller).
  void Flush(Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Flush's last step: hands b.outbox to the nodes (NodeRuntime::Submit).
  void SubmitToNodes(Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Serves the tasks of b.outbox whose nodes allow it on the calling
  // thread from the page cache (NodeRuntime::CopyCached), under the claim
  // rule, and removes them from it: every such piece claimed at once, one
  // release of b.mu while they are copied, one clock read and one count a
  // node (NodeRuntime::CountCached) for them all (cached_read.cc).
  void ReadCachedOnCaller(Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // A ring for the calling thread's small mount reads, while its call
  // runs; null when io_uring is off or refused, or kMaxCallerRings are out.
  ReadRing* BorrowRing();
  void ReturnRing(ReadRing* ring);
  // Ends the reads a borrowed ring reports (any thread that holds it).
  static void ReapCallerRing(ReadRing& ring, size_t max = SIZE_MAX);
  struct CallLoop;
  // Admissible(n) per node, asked once while the memo lasts (its owner
  // clears it).
  using AdmissibleMemo = absl::InlinedVector<std::pair<NodeRuntime*, bool>, 8>;
  bool AdmissibleIn(AdmissibleMemo& memo, NodeRuntime* n);
  // What Dispatch looked up for a call's loop (CallLoop::memo).
  struct DispatchMemo {
    absl::InlinedVector<std::pair<const std::string*, NodeRuntime*>, 16> nodes;
    AdmissibleMemo admissible;
  };
  // A node never leaves nodes_: the pointer stays valid.
  NodeRuntime* NodeOf(DispatchMemo& memo, const std::string& id);
  // Piece i of `b` to a replica; `memo`: the calling loop's.
  bool Dispatch(const std::shared_ptr<Batch>& b, int i, bool hedge,
                lb::Picker& picker, DispatchMemo& memo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu);
  void FailPiece(Batch& b, PieceState& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);

  // One call (Execute), in steps; all but PlanCall with b->mu held (the
  // CallLoop steps assert it: CallLoop is defined in read_call.cc, out of
  // the analysis' reach here).
  // Maps the requests onto pieces (ns::MapRange) in `b`; a request that
  // cannot be read gets its error in `results`.
  void PlanCall(absl::Span<const Request> reqs, Batch& b,
                std::vector<absl::StatusOr<size_t>>& results);
  // The call's event loop: dispatch, retry, timers, wait.
  void RunLoop(CallLoop& c);
  // Dispatches the pieces the global in-flight cap held back.
  void DispatchWaiting(CallLoop& c);
  // Of c.waiting (not empty), the index of the piece to dispatch next.
  size_t NextWaiting(CallLoop& c);
  // The fewest reads in flight on any of the piece's replicas' nodes.
  int64_t LeastNodeLoad(CallLoop& c, const PieceState& p);
  // The call's loop lent to the completing threads while it waits until
  // `parked_until` (WindowRefill): a piece's end dispatches the pieces the
  // call's cap held back and hands them to their nodes (never to the
  // caller's ring or page cache: the calling thread's own).
  struct LoopRefill;
  bool RefillWindow(CallLoop& c, absl::Time parked_until);
  // ReadOptions::max_in_flight pieces of the call are in flight (with b.mu).
  bool OwnCapFull(const CallLoop& c) const;
  // Failed attempts: their pieces go to another replica.
  void RetryFailed(CallLoop& c);
  // Attempt timeouts, stalls, sick nodes and hedge timers of every piece.
  void RunTimers(CallLoop& c);
  // RunTimers when one of its timers is due or TimersGap passed since its
  // last pass; otherwise only brings the loop's wake-up forward for the
  // attempts dispatched since.
  void MaybeRunTimers(CallLoop& c);
  absl::Duration TimersGap(const CallLoop& c) const;
  // Whether a hedge of piece `p` could go anywhere (see read_call.cc).
  static bool Hedgeable(const PieceState& p);
  // Judges piece i's attempt in flight (started at `started_ns`, 0: still
  // queued): false if it was abandoned (timed out, stalled, or its node
  // went bad) and the piece moved.
  bool JudgeAttempt(CallLoop& c, int i, int64_t started_ns);
  void AbandonAttempt(CallLoop& c, int i, bool timed_out, bool stalled,
                      absl::Duration silent, bool started);
  // Sends piece i to a second replica once its hedge delay has passed (an
  // erasure-coded piece: a rebuild from its row, EcReads::Hedge).
  void MaybeHedge(CallLoop& c, int i, int64_t started_ns);
  // Erasure-coded reads (ec_read.h): EcReads::Step with the call's engine.
  struct EcEngine;
  void StepEc(CallLoop& c);
  // Whether piece i's stalled or sick attempt may be moved: an untried
  // replica, or (erasure-coded) a rebuild or another cell of its row.
  bool HasAlternative(CallLoop& c, int i);
  // An erasure-coded data piece whose only replica's node is not
  // admissible: rebuilt from its row at once (no probe, no last resort).
  bool EcDataNodeDown(CallLoop& c, const PieceState& p);
  void AddEcCounters(const EcCounters& e);
  absl::Duration HedgeDelayOf(
      NodeRuntime* n,
      std::vector<std::pair<NodeRuntime*, absl::Duration>>& cache);
  // How long the loop may sleep now.
  // The stall check (issue 35): a call with pieces left but nothing that
  // can end them (no attempt unfinished, no copy, nothing held back or to
  // retry, no single-flight leader awaited) would sleep to its deadline.
  // Its stuck pieces are read again (a data cell: rebuilt from its row),
  // or failed naming their bytes when found stuck a second time. True if
  // it found any.
  bool RescueStuck(CallLoop& c);
  absl::Duration WaitFor(const CallLoop& c) const;
  // Sleeps up to `wait` on the caller's ring or the batch's condvar.
  void Wait(Batch& b, absl::Duration wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  // Closes the batch: no copy starts after this; waits for started ones.
  void CloseCall(Batch& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);
  void CollectResults(Batch& b, std::vector<absl::StatusOr<size_t>>& results)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu);

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
  // Each live node's {total_bytes, free_bytes}, from its live record
  // (ClientStats::live_total_bytes: df on a mount).
  absl::Mutex capacity_mu_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> capacity_
      ABSL_GUARDED_BY(capacity_mu_);
  absl::Mutex status_mu_;  // held while reloading; before nodes_mu_
  bool status_valid_ ABSL_GUARDED_BY(status_mu_) = false;
  mountd::MountStatusFile status_ ABSL_GUARDED_BY(status_mu_);

  std::unique_ptr<ns::KvWatch> node_watch_, live_watch_;

  // Rings that calling threads borrow (BorrowRing).
  absl::Mutex rings_mu_;
  std::vector<std::unique_ptr<ReadRing>> rings_ ABSL_GUARDED_BY(rings_mu_);
  std::vector<ReadRing*> idle_rings_ ABSL_GUARDED_BY(rings_mu_);
  bool rings_refused_ ABSL_GUARDED_BY(rings_mu_) = false;

  // This host's interface addresses (local_node detection), set by Init.
  std::vector<std::string> local_hosts_;
  // Reads in flight that other pieces may join (single_flight.h); shared
  // with the flights, which an I/O thread may end after the client is gone.
  const std::shared_ptr<FlightTable> flights_ = std::make_shared<FlightTable>();

  // Erasure-coded reads: the codecs, and what the calls' EcReads did.
  EcCodecs ec_codecs_;
  EcCellCrcs ec_cell_crcs_;
  std::atomic<uint64_t> ec_degraded_reads_{0}, ec_reconstructed_bytes_{0},
      ec_parity_hedges_{0}, ec_parity_hedge_wins_{0}, ec_helper_reads_{0},
      ec_crc_mismatches_{0}, ec_unchecked_cells_{0}, ec_helper_bytes_copied_{0},
      ec_helper_bytes_in_place_{0}, ec_decodes_cut_off_{0};

  std::atomic<uint64_t> seed_counter_{0};
  std::atomic<uint64_t> reads_{0}, pieces_{0}, bytes_{0}, retries_{0},
      hedges_{0}, deadline_exceeded_{0}, unavailable_{0}, layout_aborts_{0},
      layout_refreshes_{0}, verify_counter_{0}, window_refills_{0};
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_IMPL_H_
