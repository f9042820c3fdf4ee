// ClientImpl's read call: plan the pieces (PlanCall), then the calling
// thread's event loop: dispatch, retry failed attempts elsewhere, and the
// timers (attempt timeouts, stalls: JudgeAttempt; hedges: MaybeHedge),
// until every piece is done, the deadline passes or the call is cancelled.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
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
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/single_flight.h"
#include "client_lib/internal/stuck_pieces.h"
#include "client_lib/read_canceller.h"
#include "loadbalancer/hedge.h"
#include "loadbalancer/latency_tracker.h"
#include "namespace/cached_layout.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"

namespace rangefs {
namespace client_internal {
namespace {

// How often a call with attempts running re-reads its nodes' health (a
// node another call marked dead).
constexpr absl::Duration kHealthRecheck = absl::Milliseconds(20);
// How long a call keeps its nodes' stall and hedge delays (each a quantile
// of a latency histogram) before it takes them again: they move with many
// answers, not with one, and a call with many reads in flight passes its
// timers once every few completions.
constexpr absl::Duration kDelayCacheTtl = absl::Milliseconds(1);
// How many of its ring's completions a calling thread handles before it
// dispatches and submits what replaces them. Taking every completion at
// once resubmitted a whole depth in one go, which a (virtio) disk then
// served as one batch, and the call ran in lock step: 4 KiB reads at 32 in
// flight took 0.40 ms at the disk against 0.25 ms for fio's one-by-one
// submissions at the same depth, and read at 0.7 of fio's rate. 1, 2 and 4
// measured alike within this VM's noise; 2 at the least CPU of those
// three that kept up (tests/bench/RESULTS.md, issue 16 by-hand runs).
// Deeper rings take more a pass, a 1/kCallerReapShare of their reads in
// flight: a disk that many reads keep busy gains nothing from one-by-one
// submissions, and each pass costs an io_uring_enter (4 KiB reads at 128
// in flight on one ring: 4.2-4.9 us of CPU a read taking 8 or 32 a pass,
// 5.1-5.6 taking 2).
constexpr size_t kCallerReapBatch = 2;
constexpr int kCallerReapShare = 16;
// The longest a call's loop goes without a pass of its timers while it has
// attempts in flight (fewer if an earlier timer is due): a pass judges
// every attempt in flight, and a loop that wakes at each completion would
// otherwise judge them all every few reads.
constexpr absl::Duration kMaxTimersGap = absl::Milliseconds(1);

}  // namespace

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

// The calling thread's state in one call's loop.
struct ClientImpl::CallLoop {
  std::shared_ptr<Batch> b;
  std::unique_ptr<lb::Picker> picker;
  std::vector<int> waiting;  // pieces held back by the global cap
  // ReadOptions::max_in_flight (0: none), and whether it held back the
  // pieces in `waiting` before this wait (each piece's end wakes the loop:
  // no polling).
  int max_in_flight = 0;
  bool own_cap_full = false;
  // Hedging is on and some piece of the call can be hedged (Hedgeable):
  // else no hedge timer is armed or polled for.
  bool hedgeable = false;
  // Pieces dispatched and not seen done yet, in dispatch order: what the
  // timers look at (RunTimers drops the done ones).
  std::vector<int> dispatched;
  std::vector<lb::NodeId> ids;
  // Per node, for kDelayCacheTtl from delays_at: StallDelay and HedgeDelay
  // take histogram snapshots.
  std::vector<std::pair<NodeRuntime*, absl::Duration>> stall_delays;
  std::vector<std::pair<NodeRuntime*, absl::Duration>> hedge_delays;
  absl::Time delays_at = absl::InfinitePast();
  // Dispatch's and the timers' memo: the node of a replica's node id (by
  // the string's address, in a layout the batch keeps alive), for the
  // call; whether each node is admissible (the health table's lock), for
  // one step of the loop or one pass of the timers (each clears it).
  DispatchMemo memo;
  // This pass of the timers: its time, the earliest timer, whether an
  // attempt is still queued, whether any is in flight.
  absl::Time now;
  absl::Time wake = absl::InfinitePast();
  bool unstarted = false;
  bool running = false;
  // The last pass of the timers, and b.attempts.size() then.
  absl::Time timers_at = absl::InfinitePast();
  size_t attempts_seen = 0;
  // Pieces the stall check read again once (RescueStuck): failed if found
  // stuck again.
  std::vector<int> rescued;
};

// The call's engine as EcReads sees it.
struct ClientImpl::EcEngine final : EcReads::Engine {
  EcEngine(ClientImpl* client, CallLoop& loop) : self(client), c(loop) {}
  bool Start(int i) override {
    c.b->mu.AssertHeld();  // the loop runs under the batch lock (Execute)
    if (!self->Dispatch(c.b, i, false, *c.picker, c.memo)) return false;
    c.dispatched.push_back(i);
    // A helper cell (not a row's ".cells" read: NodeStats::ec_helper_reads).
    const PieceState& p = c.b->pieces[i];
    if (p.ec == EcRole::kHelper) {
      p.last->node->counters().ec_helper_reads.fetch_add(1);
    }
    return true;
  }
  bool StartPatient(int i) override {
    c.b->mu.AssertHeld();  // the loop runs under the batch lock (Execute)
    PieceState& p = c.b->pieces[i];
    p.patient = true;
    p.excluded.clear();  // its one replica, tried before
    if (!self->Dispatch(c.b, i, false, *c.picker, c.memo)) return false;
    // A data piece not done is still on the timers' list.
    if (std::find(c.dispatched.begin(), c.dispatched.end(), i) ==
        c.dispatched.end()) {
      c.dispatched.push_back(i);
    }
    return true;
  }
  bool Usable(const v1::Replica& r) override {
    return self->AdmissibleIn(c.memo.admissible,
                              self->NodeOf(c.memo, r.node_id()));
  }
  int64_t OutstandingBytes(const v1::Replica& r) override {
    return self->NodeOf(c.memo, r.node_id())
        ->counters()
        .outstanding_bytes.load(std::memory_order_relaxed);
  }
  bool TakeHedgeBudget(int reads) override {
    return self->budget_.TryAcquire(reads);
  }
  absl::StatusOr<const ec::Codec*> Codec(int k, int m) override {
    return self->ec_codecs_.Get(k, m);
  }
  EcCellCrcs& cell_crcs() override { return self->ec_cell_crcs_; }
  void BeforeDecode() override {
    if (self->hooks_.before_ec_decode) self->hooks_.before_ec_decode();
  }
  ClientImpl* const self;
  CallLoop& c;
};

namespace {

// A call's files and the layouts it reads them with: each file's layout
// is looked up once a call (two locks and a hash of its path), and all the
// call's ranges of a file read the same layout.
using LayoutMemo = absl::InlinedVector<
    std::pair<FileImpl*, std::shared_ptr<const ns::CachedLayout>>, 4>;
constexpr size_t kLayoutMemoMax = 16;

absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> CurrentIn(
    LayoutMemo& memo, FileImpl* f) {
  for (const auto& [file, layout] : memo) {
    if (file == f) return layout;
  }
  absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> l = f->Current();
  if (l.ok() && memo.size() < kLayoutMemoMax) memo.emplace_back(f, *l);
  return l;
}

}  // namespace

void ClientImpl::PlanCall(absl::Span<const Request> reqs, Batch& b,
                          std::vector<absl::StatusOr<size_t>>& results) {
  LayoutMemo layouts;
  b.pieces.reserve(reqs.size());  // a piece a range, mostly
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    if (r.file == nullptr) {
      results[i] = absl::InvalidArgumentError(
          "ReadV: range's File is null or from another Client");
      continue;
    }
    absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> l =
        CurrentIn(layouts, r.file);
    if (!l.ok()) {
      results[i] = l.status();
      continue;
    }
    const v1::FileLayout& layout = (*l)->header;
    if (r.offset > layout.size()) {
      results[i] = absl::OutOfRangeError(
          absl::StrCat("read at ", r.offset, " past the end of ",
                       r.file->path(), " (size ", layout.size(), ")"));
      continue;
    }
    absl::StatusOr<ns::MappedRange> m =
        ns::MapRange(**l, r.offset, r.dst.size(), options_.max_io_size);
    if (!m.ok()) {
      results[i] = m.status();
      continue;
    }
    if (b.layouts.empty() || b.layouts.back() != *l) b.layouts.push_back(*l);
    if (m->extents != nullptr) b.extents.push_back(std::move(m->extents));
    size_t total = 0;
    for (const ns::Piece& p : m->pieces) {
      PieceState& s = b.pieces.emplace_back();
      s.piece = p;
      s.range = static_cast<int>(i);
      s.dst = r.dst.data() + (p.offset - r.offset);
      s.stream_key = absl::HashOf(layout.file_id(), p.unit) | 1;
      s.path = &(*l)->path;
      s.mod_revision = (*l)->mod_revision;
      s.file_id = layout.file_id();
      s.layout = &layout;
      if (ns::IsErasureCoded(layout)) s.ec = EcRole::kData;
      total += p.length;
    }
    results[i] = total;
  }
  // Erasure-coded pieces: room for their rebuilds' helpers (a helper
  // piece never moves the others).
  const size_t room = EcReads::HelperRoom(b);
  if (room > 0) {
    b.ec = std::make_unique<EcReads>();
    b.pieces.reserve(b.pieces.size() + room);
  }
}

absl::Duration ClientImpl::HedgeDelayOf(
    NodeRuntime* n,
    std::vector<std::pair<NodeRuntime*, absl::Duration>>& cache) {
  for (const auto& [node, d] : cache) {
    if (node == n) return d;
  }
  const absl::Duration d =
      lb::HedgeDelay(latency_, n->id(), options_.hedge_quantile,
                     options_.hedge_min_delay, 10, options_.cold_latency);
  cache.emplace_back(n, d);
  return d;
}

bool ClientImpl::OwnCapFull(const CallLoop& c) const {
  const Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  // Neither done nor waiting here: in flight (or following a flight).
  return c.max_in_flight > 0 &&
         b.remaining - static_cast<int>(c.waiting.size()) >= c.max_in_flight;
}

int64_t ClientImpl::LeastNodeLoad(CallLoop& c, const PieceState& p) {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const v1::Replica& r : *p.piece.replicas) {
    least = std::min(least, NodeOf(c.memo, r.node_id())
                                ->counters()
                                .inflight.load(std::memory_order_relaxed));
  }
  return least;
}

size_t ClientImpl::NextWaiting(CallLoop& c) {
  const size_t last = c.waiting.size() - 1;
  // Without a cap of the call's own, everything goes at once: no choice.
  if (c.max_in_flight == 0 || last == 0) return last;
  // A window refilled with whatever comes next drifts to the slowest
  // node: the reads of the quick ones end and are replaced at random,
  // while those of the slow one stay, until it holds most of the window
  // and the others idle. So the next piece is the one, of the next
  // kWindowLookahead, whose least busy replica has the fewest reads in
  // flight (ties: the earliest), as a reader of each node at a fixed
  // depth would have it.
  constexpr size_t kWindowLookahead = 16;
  const size_t first =
      last >= kWindowLookahead ? last - kWindowLookahead + 1 : 0;
  size_t best = last;
  int64_t best_load = std::numeric_limits<int64_t>::max();
  for (size_t j = last + 1; j-- > first;) {
    const PieceState& p = c.b->pieces[c.waiting[j]];
    if (p.done) return j;  // dropped by the caller at no cost
    const int64_t load = LeastNodeLoad(c, p);
    if (load < best_load) {
      best = j;
      best_load = load;
      if (load == 0) break;
    }
  }
  return best;
}

void ClientImpl::DispatchWaiting(CallLoop& c) {
  Batch& b = *c.b;
  // The loop runs under the batch lock (Execute); Dispatch names it c.b.
  b.mu.AssertHeld();
  c.b->mu.AssertHeld();
  uint64_t reads = 0;  // for the hedge budget, counted once at the end
  while (!c.waiting.empty() &&
         global_inflight_.load() < options_.max_inflight_global &&
         !OwnCapFull(c)) {
    const size_t next = NextWaiting(c);
    std::swap(c.waiting[next], c.waiting.back());
    int i = c.waiting.back();
    c.waiting.pop_back();
    PieceState& p = b.pieces[i];
    if (p.done) continue;
    ++reads;
    if (EcDataNodeDown(c, p)) {
      FailPiece(b, p);  // rebuilt from its row (EcReads::TakeFailed)
    } else if (Dispatch(c.b, i, false, *c.picker, c.memo)) {
      c.dispatched.push_back(i);
    } else {
      p.reasons.push_back("no replica");
      p.hard_failure = true;
      FailPiece(b, p);
    }
  }
  budget_.OnReads(reads);
}

struct ClientImpl::LoopRefill final : WindowRefill {
  LoopRefill(ClientImpl* client, CallLoop& loop, absl::Time until)
      : self(client), c(loop), parked_until(until) {}
  bool Refill() override { return self->RefillWindow(c, parked_until); }
  ClientImpl* const self;
  CallLoop& c;
  const absl::Time parked_until;
};

bool ClientImpl::RefillWindow(CallLoop& c, absl::Time parked_until) {
  Batch& b = *c.b;
  // Lent while the calling thread waits: the completing thread holds the
  // batch lock (Batch::CompletedAndRefill); Dispatch names it c.b.
  b.mu.AssertHeld();
  c.b->mu.AssertHeld();
  // What only the calling thread's loop does: it is woken for these.
  if (b.cancelled || b.closed || b.ec != nullptr || !b.failed.empty() ||
      !b.released.empty()) {
    return false;
  }
  if (c.waiting.empty()) return true;  // nothing to let go: no news
  c.memo.admissible.clear();  // health read afresh, as in each loop step
  DispatchWaiting(c);
  // A piece with no replica left failed: the loop ends it.
  if (b.remaining == 0 || !b.failed.empty()) {
    SubmitToNodes(b);
    return false;
  }
  // The new attempts' first timer: a hedge's (their node's hedge delay
  // after they start), a stall's (stall_min_delay at least), a timeout's.
  // The calling thread must wake by then, on its own or woken now.
  absl::Duration first = options_.attempt_timeout;
  if (options_.stall_factor > 0) {
    first = std::min(first, options_.stall_min_delay);
  }
  for (const Task& t : b.outbox) {
    if (c.hedgeable && Hedgeable(b.pieces[t.attempt->piece])) {
      first = std::min(first, HedgeDelayOf(t.attempt->node, c.hedge_delays));
    }
  }
  window_refills_.fetch_add(b.outbox.size());
  SubmitToNodes(b);
  return parked_until <= clock_->MonotonicNow() + first;
}

void ClientImpl::RetryFailed(CallLoop& c) {
  Batch& b = *c.b;
  // The loop runs under the batch lock (Execute); Dispatch names it c.b.
  b.mu.AssertHeld();
  c.b->mu.AssertHeld();
  std::vector<Attempt*> failed;
  failed.swap(b.failed);
  for (Attempt* a : failed) {
    PieceState& p = b.pieces[a->piece];
    // Claimed: another attempt's bytes are being copied in (Completed,
    // Deliver), without b.mu: the piece is as good as done (not when an
    // agent read lands in it: its retry waits for that read to let go).
    if (p.done || p.takers > 0 || (p.claimed && p.landing == nullptr)) {
      continue;
    }
    p.reasons.push_back(
        absl::StrCat("node ", a->node->id(), ": ", a->status.ToString()));
    if (absl::IsDataLoss(a->status)) p.data_loss++;
    // An answer with an error. A deadline of the read's own (the agent's),
    // a busy agent or a cancellation is slowness, not a fault.
    if (!absl::IsDeadlineExceeded(a->status) &&
        !absl::IsResourceExhausted(a->status) &&
        !absl::IsCancelled(a->status)) {
      p.hard_failure = true;
    }
    if (p.active > 0) continue;  // a hedge is still running
    retries_.fetch_add(1);
    if (!Dispatch(c.b, a->piece, false, *c.picker, c.memo)) FailPiece(b, p);
  }
}

bool ClientImpl::JudgeAttempt(CallLoop& c, int i, int64_t started_ns) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  PieceState& p = b.pieces[i];
  Attempt* a = p.last;
  const absl::Time now = c.now;
  const absl::Time timeout_at = a->dispatched + options_.attempt_timeout;
  // A started attempt is judged from its start. One still queued is
  // judged one health recheck later than a started one would be (those
  // decide first): every thread of its node may be stuck, and the
  // attempts they hold may be out of any call's sight (their pieces done
  // by hedges, or their calls returned). But only time the node's threads
  // spent stuck counts: from the later of its dispatch and the last read
  // one of them started (NodeRuntime::last_start_ns), and not while none
  // reads (all its attempts queued). Time in our own queue, behind
  // busy threads or on a machine too loaded to run them, is no news of the
  // node (issue 35: healthy nodes marked dead "while queued").
  absl::Time since = absl::FromUnixNanos(started_ns);
  bool may_stall = options_.stall_factor > 0 && !p.patient;
  if (started_ns == 0) {
    since =
        std::max(a->dispatched, absl::FromUnixNanos(a->node->last_start_ns())) +
        kHealthRecheck;
    // While none reads, its wait counts from now on: not a stall yet, but
    // a timer stays armed so that a later pass judges it again (its
    // node's threads may pick it up and hang without waking this loop).
    if (!a->node->Reading()) since = std::max(since, now + kHealthRecheck);
  }
  absl::Time stall_at = absl::InfiniteFuture();
  if (may_stall) {
    const absl::Duration delay = StallDelay(a->node, c.stall_delays);
    stall_at = since + delay;
    // A node that answered other attempts meanwhile is slow, not
    // hung: this attempt is a straggler (or queued behind some), left
    // to hedging.
    const absl::Time answered = absl::FromUnixNanos(a->node->last_answer_ns());
    if (answered > since) stall_at = std::max(stall_at, answered + delay);
  }
  const bool timed_out = now >= timeout_at;
  bool stalled = !timed_out && now >= stall_at;
  // Its node went bad (here or in another call): move the piece now. A
  // queued attempt is judged so before its own stall: once its node is
  // marked (by the started ones, which decide first, or by a stall judged
  // earlier in this pass), its wait is no news of the node, however late
  // this pass runs (a loaded machine) -- it moves, it is not a stall.
  bool sick = !timed_out && (!stalled || started_ns == 0) && !a->forced &&
              !p.patient && (started_ns == 0 || options_.stall_factor > 0) &&
              !AdmissibleIn(c.memo.admissible, a->node);
  if (sick) stalled = false;
  // Stalls and sickness only move a piece that has somewhere to go: an
  // untried replica, or its hedge in flight (then the stall still
  // marks the node, whose other attempts move). The last hope of a
  // piece is waited for up to attempt_timeout.
  if ((stalled || sick) && p.active <= 1 && !HasAlternative(c, i)) {
    stalled = sick = false;
    stall_at = absl::InfiniteFuture();
  }
  if (timed_out || stalled || sick) {
    AbandonAttempt(c, i, timed_out, stalled, now - since, started_ns != 0);
    return false;
  }
  c.wake = std::min({c.wake, timeout_at, stall_at});
  return true;
}

void ClientImpl::AbandonAttempt(CallLoop& c, int i, bool timed_out,
                                bool stalled, absl::Duration silent,
                                bool started) {
  Batch& b = *c.b;
  // The loop runs under the batch lock (Execute); Dispatch names it c.b.
  b.mu.AssertHeld();
  c.b->mu.AssertHeld();
  PieceState& p = b.pieces[i];
  Attempt* a = p.last;
  a->abandoned = true;
  p.active--;
  a->canceller.Cancel();
  NodeCounters& nc = a->node->counters();
  if (timed_out || stalled) {
    (timed_out ? nc.timeouts : nc.stalls).fetch_add(1);
    nc.errors.fetch_add(1);
    health_.RecordFailure(
        a->node->id(), absl::DeadlineExceededError(
                           timed_out ? "attempt timeout" : "attempt stalled"));
    // The failure marks the node dead: its other attempts, later in this
    // pass, must see it (the memo may hold it admissible).
    c.memo.admissible.clear();
  } else {
    nc.moved.fetch_add(1);
    if (DownForCause(a->node)) p.hard_failure = true;
  }
  p.reasons.push_back(absl::StrCat(
      "node ", a->node->id(), ": ",
      timed_out  ? absl::StrCat("attempt timed out after ",
                                absl::FormatDuration(options_.attempt_timeout))
      : stalled  ? absl::StrCat("no answer ", absl::FormatDuration(silent),
                               started ? " after it started" : " while queued",
                                " (stall)")
      : !started ? std::string("marked unhealthy while queued")
                 : std::string("marked unhealthy while reading")));
  if (p.active == 0) {
    retries_.fetch_add(1);
    if (!Dispatch(c.b, i, false, *c.picker, c.memo)) FailPiece(b, p);
  }
}

void ClientImpl::MaybeHedge(CallLoop& c, int i, int64_t started_ns) {
  c.b->mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  PieceState& p = c.b->pieces[i];
  if (!c.hedgeable || p.hedged || started_ns == 0 || !Hedgeable(p)) return;
  const absl::Time hedge_at = absl::FromUnixNanos(started_ns) +
                              HedgeDelayOf(p.last->node, c.hedge_delays);
  if (c.now < hedge_at) {
    c.wake = std::min(c.wake, hedge_at);
    return;
  }
  p.hedged = true;
  if (p.ec == EcRole::kData || p.ec == EcRole::kHelper) {
    // One replica a cell: the hedge is a rebuild from the row (a data
    // cell) or one more cell (a helper).
    EcEngine e{this, c};
    if (c.b->ec->Hedge(*c.b, i, e)) hedges_.fetch_add(1);
    return;
  }
  c.ids.clear();
  for (const v1::Replica& r : *p.piece.replicas) c.ids.push_back(r.node_id());
  if (lb::HedgingAllowed(latency_, c.ids) && budget_.TryAcquire()) {
    if (Dispatch(c.b, i, true, *c.picker, c.memo)) hedges_.fetch_add(1);
  }
}

bool ClientImpl::Hedgeable(const PieceState& p) {
  // A rebuild (a data cell) or one more cell (a helper); else another
  // replica: with one, a hedge has nowhere to go.
  return p.ec == EcRole::kData || p.ec == EcRole::kHelper ||
         p.piece.replicas->size() > 1;
}

absl::Duration ClientImpl::TimersGap(const CallLoop& c) const {
  // No timer of an attempt dispatched after a pass can be due before the
  // pass's time plus this.
  absl::Duration gap = std::min(kMaxTimersGap, options_.attempt_timeout);
  if (c.hedgeable) gap = std::min(gap, options_.hedge_min_delay);
  if (options_.stall_factor > 0) gap = std::min(gap, options_.stall_min_delay);
  return gap;
}

void ClientImpl::MaybeRunTimers(CallLoop& c) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  const absl::Duration gap = TimersGap(c);
  if (c.now >= c.wake || c.now >= c.timers_at + gap) {
    RunTimers(c);
    c.timers_at = c.now;
    c.attempts_seen = b.attempts.size();
  } else if (b.attempts.size() != c.attempts_seen) {
    // Attempts dispatched since the last pass: judged by the next one,
    // due `gap` after it at the latest (their first timer cannot be
    // earlier; their node's health is looked at then).
    c.wake = std::min(c.wake, c.timers_at + gap);
    c.running = true;
  }
}

void ClientImpl::RunTimers(CallLoop& c) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  c.wake = b.deadline;
  c.unstarted = c.running = false;
  if (c.now >= c.delays_at + kDelayCacheTtl) {
    c.stall_delays.clear();
    c.hedge_delays.clear();
    c.delays_at = c.now;
  }
  c.memo.admissible.clear();
  size_t keep = 0;
  for (size_t k = 0; k < c.dispatched.size(); ++k) {
    const int i = c.dispatched[k];
    PieceState& p = b.pieces[i];
    if (p.done) continue;  // off the list
    c.dispatched[keep++] = i;
    if ((p.claimed && p.landing == nullptr) || p.last == nullptr ||
        p.last->finished || p.last->abandoned) {
      // (claimed: bytes being copied in, as good as done, or an in-place
      // read on this thread's ring, which nothing can cancel)
      continue;
    }
    // When it started (0: still queued), read once for the whole pass.
    const int64_t started_ns =
        p.last->started_ns.load(std::memory_order_acquire);
    if (!JudgeAttempt(c, i, started_ns)) continue;
    if (started_ns == 0) c.unstarted = true;
    c.running = true;
    MaybeHedge(c, i, started_ns);
  }
  c.dispatched.resize(keep);
}

bool ClientImpl::RescueStuck(CallLoop& c) {
  Batch& b = *c.b;
  // The loop runs under the batch lock (Execute); both names of it, for
  // the thread-safety analysis (Dispatch takes c.b).
  b.mu.AssertHeld();
  c.b->mu.AssertHeld();
  // (Timers armed: an attempt of ours still runs.)
  if (c.running) return false;
  const std::vector<int> stuck = StuckPieces(b, !c.waiting.empty());
  if (stuck.empty()) return false;
  for (int i : stuck) {
    PieceState& p = b.pieces[i];
    if (p.done) continue;  // ended by an earlier one's rebuild step
    // (A rebuild's helper or ".cells" read is handed to its rebuild the
    // first time, which ends it: never found again.)
    const bool again =
        std::find(c.rescued.begin(), c.rescued.end(), i) != c.rescued.end() &&
        p.range >= 0;
    const std::string ec = b.ec != nullptr ? b.ec->Describe(b, i) : "";
    RANGEFS_LOG(WARNING)
        << "read call: " << *p.path << " bytes [" << p.piece.offset << ", "
        << p.piece.offset + p.piece.length << ") (piece " << i << ", role "
        << static_cast<int>(p.ec) << ", active " << p.active
        << ") has nothing in flight, nothing queued and no read it waits for"
        << (again ? " again: failed" : ": read again")
        << (ec.empty() ? "" : "; ") << ec
        << "; reasons: " << absl::StrJoin(p.reasons, "; ");
    if (again) {
      // Its second rescue led nowhere either: a clear error now, not a
      // sleep to the deadline.
      p.done = true;
      b.remaining--;
      unavailable_.fetch_add(1);
      p.status = absl::UnavailableError(absl::StrCat(
          "read of ", *p.path, " bytes [", p.piece.offset, ", ",
          p.piece.offset + p.piece.length,
          ") stalled: nothing in flight for them, nothing queued and no "
          "read they wait for, after being read again once",
          p.reasons.empty() ? "" : ": ", absl::StrJoin(p.reasons, "; ")));
      continue;
    }
    c.rescued.push_back(i);
    p.reasons.push_back("nothing in flight for it (stall check)");
    // A cell of an erasure-coded file (data, helper, ".cells"): handed to
    // its rebuild, as a read with no replica left is; a plain piece: its
    // next replica.
    if (p.ec == EcRole::kNone && Dispatch(c.b, i, false, *c.picker, c.memo)) {
      c.dispatched.push_back(i);
    } else {
      FailPiece(b, p);
    }
  }
  return true;
}

absl::Duration ClientImpl::WaitFor(const CallLoop& c) const {
  const absl::Duration slice =
      real_clock_ ? absl::InfiniteDuration() : absl::Milliseconds(2);
  absl::Duration wait = std::min(c.wake - c.now, slice);
  // Attempts still queued start without telling us: poll for their hedge
  // timers.
  if (c.hedgeable && c.unstarted) {
    wait = std::min(wait,
                    std::max(options_.hedge_min_delay, absl::Milliseconds(1)));
  }
  // Held back by the global cap, which other calls free: poll for it.
  if (!c.waiting.empty() && !c.own_cap_full) {
    wait = std::min(wait, absl::Milliseconds(1));
  }
  // Another call may mark one of our nodes dead: look again now and then.
  if (c.running && options_.stall_factor > 0) {
    wait = std::min(wait, kHealthRecheck);
  }
  return wait;
}

void ClientImpl::Wait(Batch& b, absl::Duration wait) {
  if (b.ring != nullptr && b.ring->inflight() > 0) {
    // Reads of ours are on the caller's ring: wait there; other threads
    // end the wait with Batch::Notify.
    b.ring_waiting = true;
    b.mu.Unlock();
    b.ring->SubmitAndWait(wait);
    b.mu.Lock();
    b.ring_waiting = false;  // our own completions need not wake us
    b.mu.Unlock();
    ReapCallerRing(*b.ring, std::max(kCallerReapBatch,
                                     static_cast<size_t>(b.ring->inflight() /
                                                         kCallerReapShare)));
    b.mu.Lock();
  } else {
    b.cv.WaitWithTimeout(&b.mu, wait);
  }
}

void ClientImpl::RunLoop(CallLoop& c) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  while (b.remaining > 0 && !b.cancelled) {
    // Pieces whose flight's leader gave up: read them ourselves.
    for (int i : b.released) c.waiting.push_back(i);
    b.released.clear();
    c.memo.admissible.clear();  // health read afresh each step
    DispatchWaiting(c);         // what the global cap allows
    Flush(b);
    c.memo.admissible.clear();  // failures just recorded may have marked nodes
    RetryFailed(c);             // failed attempts: retry elsewhere
    StepEc(c);                  // erasure-coded rebuilds
    Flush(b);
    if (b.remaining == 0) break;
    // Timers: attempt timeouts, stalls, sick nodes, hedges.
    c.now = clock_->MonotonicNow();
    if (c.now >= b.deadline) break;
    MaybeRunTimers(c);
    StepEc(c);  // pieces the timers gave up on: rebuilt
    Flush(b);   // moved pieces and hedges
    if (b.remaining == 0) break;
    if (!b.failed.empty()) continue;
    if (b.self_woken) {  // a rebuild may go on now: no one else will say so
      b.self_woken = false;
      continue;
    }
    // Pieces this thread finished itself (from the page cache, in Flush)
    // left room under the call's cap: fill it before waiting, since no
    // other thread will end the wait for them.
    c.own_cap_full = OwnCapFull(c);
    if (!c.waiting.empty() && !c.own_cap_full &&
        global_inflight_.load() < options_.max_inflight_global) {
      continue;
    }
    // Nothing left that could wake it: not a sleep to the deadline.
    if (RescueStuck(c)) {
      StepEc(c);
      Flush(b);
      continue;
    }
    const absl::Duration wait = WaitFor(c);
    if (wait <= absl::ZeroDuration()) continue;
    // While it waits on the condvar, the pieces' ends may dispatch the next
    // ones themselves (Batch::CompletedAndRefill); not with reads on the
    // caller's ring, which only this thread may start.
    LoopRefill refill(this, c, c.now + wait);
    if (b.ring == nullptr) b.refill = &refill;
    Wait(b, wait);
    b.refill = nullptr;
  }
}

void ClientImpl::CloseCall(Batch& b) {
  // Close: no worker may start a copy from now on; wait for started ones.
  // Anything still in the outbox (a deadline broke the loop) is handed over
  // all the same: its node ends it as not needed and settles its counters.
  b.closed = true;
  b.closed_hint.store(true, std::memory_order_release);
  Flush(b);
  b.attempts.ForEach([](Attempt& a) {
    if (!a.finished) a.canceller.Cancel();
  });
  while (b.copiers > 0) b.cv.Wait(&b.mu);
  // In-place reads write into the caller's buffers until reaped, by this
  // thread (they are on its ring). Local disk reads: they end, if late.
  // Landing agent reads: cancelled above, they end promptly.
  while (b.landing_agent > 0) b.landing_cv.Wait(&b.mu);
  for (int waits = 0; b.landing_on_ring > 0; ++waits) {
    if (waits > 0 && waits % 100 == 0) {
      RANGEFS_LOG(WARNING) << "read call: " << b.landing_on_ring
                           << " in-place read(s) still unanswered after "
                           << waits / 10 << " s past the call's end";
    }
    b.mu.Unlock();
    b.ring->SubmitAndWait(absl::Milliseconds(100));
    ReapCallerRing(*b.ring);
    b.mu.Lock();
  }
}

void ClientImpl::CollectResults(Batch& b,
                                std::vector<absl::StatusOr<size_t>>& results) {
  for (PieceState& p : b.pieces) {
    if (p.range < 0) continue;  // an erasure-coded rebuild's helper
    absl::StatusOr<size_t>& res = results[p.range];
    if (!res.ok()) continue;
    if (!p.done && b.cancelled) {
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
}

void ClientImpl::StepEc(CallLoop& c) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  if (b.ec == nullptr) return;
  EcEngine e{this, c};
  b.ec->Step(b, e);
}

bool ClientImpl::HasAlternative(CallLoop& c, int i) {
  Batch& b = *c.b;
  b.mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  const PieceState& p = b.pieces[i];
  if (p.ec == EcRole::kData || p.ec == EcRole::kHelper) {
    return b.ec->HasAlternative(b, i);
  }
  return HasUntriedReplica(p);
}

bool ClientImpl::EcDataNodeDown(CallLoop& c, const PieceState& p) {
  if (p.ec != EcRole::kData) return false;
  NodeRuntime* n = NodeOf(c.memo, (*p.piece.replicas)[0].node_id());
  if (AdmissibleIn(c.memo.admissible, n)) return false;
  c.b->mu.AssertHeld();  // the loop runs under the batch lock (Execute)
  PieceState& mine = c.b->pieces[&p - c.b->pieces.data()];
  const bool cause = DownForCause(n);
  if (cause) mine.hard_failure = true;
  mine.reasons.push_back(absl::StrCat(
      "node ", n->id(),
      cause ? ": not admissible" : ": not admissible (dead for slowness)"));
  return true;
}

void ClientImpl::AddEcCounters(const EcCounters& e) {
  ec_degraded_reads_.fetch_add(e.degraded_reads);
  ec_reconstructed_bytes_.fetch_add(e.reconstructed_bytes);
  ec_parity_hedges_.fetch_add(e.parity_hedges);
  ec_parity_hedge_wins_.fetch_add(e.parity_hedge_wins);
  ec_helper_reads_.fetch_add(e.helper_reads);
  ec_helper_bytes_copied_.fetch_add(e.helper_bytes_copied);
  ec_helper_bytes_in_place_.fetch_add(e.helper_bytes_in_place);
  ec_decodes_cut_off_.fetch_add(e.decodes_cut_off);
  ec_crc_mismatches_.fetch_add(e.crc_mismatches);
  ec_unchecked_cells_.fetch_add(e.unchecked_cells);
}

std::vector<absl::StatusOr<size_t>> ClientImpl::Execute(
    absl::Span<const Request> reqs, const ReadOptions& options,
    CallReport* report) {
  std::vector<absl::StatusOr<size_t>> results(reqs.size(), size_t{0});
  if (options.max_in_flight < 0) {
    for (auto& r : results) {
      r = absl::InvalidArgumentError(
          absl::StrCat("ReadOptions::max_in_flight is ", options.max_in_flight,
                       "; it must be 0 (no limit) or more"));
    }
    return results;
  }
  const absl::Time start = clock_->MonotonicNow();
  CallLoop c;
  c.b = std::make_shared<Batch>();
  Batch& b = *c.b;
  b.hedge_wins = &core_->hedge_wins_counter();
  b.deadline = start + (options.deadline > absl::ZeroDuration()
                            ? options.deadline
                            : options_.default_deadline);
  reads_.fetch_add(reqs.size());
  MaybeReloadMountStatus();
  PlanCall(reqs, b, results);
  pieces_.fetch_add(b.pieces.size());
  if (b.pieces.empty()) return results;
  b.ring = BorrowRing();
  // Declared before the lock below: runs after it is released, since
  // reaping may end attempts of this very batch (Completed locks b.mu).
  absl::Cleanup give_back = [this, &b] { ReturnRing(b.ring); };
  // Also before the lock below: the hook locks b.mu, and its destructor
  // (waiting for a Cancel in progress) must run without b.mu.
  client_internal::CancelHook cancel_hook(options.canceller, [&b] {
    absl::MutexLock l(&b.mu);
    b.cancelled = true;
    b.Notify();
  });

  // The picks' generator. A seed must fix them in every process: absl's
  // generators mix per-process entropy into any seed they are given
  // (absl/random/internal/salted_seed_seq.h), so a seeded call draws from
  // a standard engine, whose sequence the standard fixes.
  std::optional<absl::InsecureBitGen> random_gen;
  std::optional<std::minstd_rand> seeded_gen;
  if (options_.seed == 0) {
    random_gen.emplace();
  } else {
    seeded_gen.emplace(static_cast<std::minstd_rand::result_type>(
        options_.seed + seed_counter_.fetch_add(1)));
  }
  c.picker = seeded_gen.has_value() ? policy_->NewPicker(*seeded_gen)
                                    : policy_->NewPicker(*random_gen);
  std::vector<std::shared_ptr<Flight>> led;
  c.max_in_flight = options.max_in_flight;
  c.hedgeable = options_.hedging &&
                (b.ec != nullptr ||
                 std::any_of(b.pieces.begin(), b.pieces.end(),
                             [](const PieceState& p) { return Hedgeable(p); }));
  c.dispatched.reserve(c.max_in_flight > 0 ? c.max_in_flight : b.pieces.size());
  {
    absl::MutexLock l(&b.mu);
    b.remaining = static_cast<int>(b.pieces.size());
    b.notify_each = c.max_in_flight > 0 &&
                    c.max_in_flight < static_cast<int>(b.pieces.size());
  }
  // Single flight: pieces whose bytes another read is fetching wait for it
  // (single_flight.h); the others are dispatched, last piece first.
  if (options_.single_flight) {
    flights_->JoinOrLead(c.b, options_.single_flight_min_bytes, c.waiting);
  } else {
    for (int i = static_cast<int>(b.pieces.size()) - 1; i >= 0; --i) {
      c.waiting.push_back(i);
    }
  }
  {
    absl::MutexLock l(&b.mu);
    RunLoop(c);
    CloseCall(b);
    CollectResults(b, results);
    if (report != nullptr) {
      report->cached_bytes = b.cached_bytes;
      if (b.ec != nullptr) {
        report->rebuilt_bytes = b.ec->counters().reconstructed_bytes;
        report->rebuild_copied_bytes = b.ec->counters().helper_bytes_copied;
      }
    }
    if (b.ec != nullptr) AddEcCounters(b.ec->counters());
    for (PieceState& p : b.pieces) {
      if (p.flight != nullptr) led.push_back(std::move(p.flight));
    }
  }
  // Flights this call led and did not complete: their followers read for
  // themselves (without b.mu: Abandon locks the followers' batches).
  for (const std::shared_ptr<Flight>& f : led) f->Abandon();
  for (const auto& r : results) {
    if (r.ok()) bytes_.fetch_add(*r);
  }
  return results;
}

}  // namespace client_internal
}  // namespace rangefs
