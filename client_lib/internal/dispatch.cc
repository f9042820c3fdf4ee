// ClientImpl's dispatch: which replica a piece goes to (Dispatch, through
// the load-balancing policy's picker), handing attempts to their nodes or
// to the calling thread's borrowed ring (Flush), and a piece's failure once
// every replica failed (FailPiece).
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
#include "base/open_beneath.h"
#include "base/status_macros.h"
#include "client_lib/client.h"
#include "client_lib/fs.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/single_flight.h"

namespace rangefs {
namespace client_internal {
namespace {

// At most this many borrowed rings per client; calls beyond it use the
// nodes' ring threads.
constexpr size_t kMaxCallerRings = 64;

}  // namespace

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

void ClientImpl::ReapCallerRing(ReadRing& ring, size_t max) {
  CallerSuccesses ok;
  ring.Reap(
      [&ok](ReadRing::Slot& s, int res) {
        MountReadOf(s).task.attempt->node->CallerDone(s, res, ok);
      },
      max);
  // Before the ring's next Start: their bytes may be in its buffers.
  NodeRuntime::FinishAll(ok);
}

void ClientImpl::Flush(Batch& b) {
  std::vector<Task>& out = b.outbox;
  if (out.empty()) return;
  // Mount reads whose bytes are in the page cache: copied here.
  if (options_.page_cache_reads && !b.closed) {
    ReadCachedOnCaller(b);
    if (out.empty()) return;
  }
  // Small mount reads: started here, on the caller's ring. The kernel sees
  // them at the call's next wait (ClientImpl::Wait: one io_uring_enter
  // submits and waits), or when the ring goes back (ReturnRing).
  if (b.ring != nullptr && !b.closed) {
    size_t kept = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      Attempt* a = out[i].attempt;
      PieceState& p = b.pieces[a->piece];
      // In place only for the piece's only attempt, which nobody waits for.
      const bool solo =
          !a->hedge && p.active == 1 && !p.claimed && p.flight == nullptr;
      bool landed = false;
      if (a->node->StartOnCaller(out[i], *b.ring, solo ? p.dst : nullptr,
                                 &landed)) {
        if (landed) b.StartLanding(a);
        continue;
      }
      if (kept != i) out[kept] = std::move(out[i]);
      ++kept;
    }
    out.resize(kept);
    if (out.empty()) return;
  }
  SubmitToNodes(b);
}

void ClientImpl::SubmitToNodes(Batch& b) {
  std::vector<Task>& out = b.outbox;
  if (out.empty()) return;
  // One Submit per node, nodes in order of first appearance, each node's
  // tasks in dispatch order.
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

NodeRuntime* ClientImpl::NodeOf(DispatchMemo& memo, const std::string& id) {
  for (const auto& [name, n] : memo.nodes) {
    if (name == &id) return n;
  }
  NodeRuntime* n = Node(id);
  if (memo.nodes.size() < 64) memo.nodes.emplace_back(&id, n);
  return n;
}

bool ClientImpl::AdmissibleIn(AdmissibleMemo& memo, NodeRuntime* n) {
  for (const auto& [node, ok] : memo) {
    if (node == n) return ok;
  }
  const bool ok = Admissible(n);
  memo.emplace_back(n, ok);
  return ok;
}

bool ClientImpl::Dispatch(const std::shared_ptr<Batch>& b, int i, bool hedge,
                          lb::Picker& picker, DispatchMemo& memo) {
  PieceState& p = b->pieces[i];
  const auto& replicas = *p.piece.replicas;
  // Candidates: admissible, not excluded. Probes and last resorts aside.
  absl::InlinedVector<lb::Candidate, 4> cands;
  absl::InlinedVector<int, 4> index;
  absl::InlinedVector<NodeRuntime*, 4> node_of;  // by replica
  int probe = -1, last_resort = -1, local = -1;
  for (int r = 0; r < replicas.size(); ++r) {
    NodeRuntime* n = NodeOf(memo, replicas[r].node_id());
    node_of.push_back(n);
    if (std::find(p.excluded.begin(), p.excluded.end(), n) !=
        p.excluded.end()) {
      continue;
    }
    if (AdmissibleIn(memo.admissible, n)) {
      if (local < 0 && n->local()) local = static_cast<int>(cands.size());
      NodeCounters& c = n->counters();
      cands.push_back({.node = n->id(),
                       .inflight = static_cast<int>(c.inflight.load()),
                       .outstanding_bytes = c.outstanding_bytes.load(),
                       .ewma_latency = latency_.Ewma(n->latency_handle())});
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
  } else if (local >= 0) {
    chosen = index[local];  // this host's node, while healthy
    forced = false;
  } else if (!cands.empty()) {
    chosen = index[picker.Pick(cands, p.stream_key)];
    forced = false;
  } else if (last_resort >= 0) {
    chosen = last_resort;  // every healthy replica failed: try a sick one
  } else {
    return false;
  }
  NodeRuntime* n = node_of[chosen];
  const bool urgent = !p.excluded.empty();  // not the piece's first attempt
  Attempt* a = b->attempts.Add();
  a->piece = i;
  a->node = n;
  a->object = &replicas[chosen].object();
  a->object_offset = p.piece.ObjectOffset(replicas[chosen]);
  a->length = p.piece.length;
  a->hedge = hedge;
  a->forced = forced;
  a->verify = !p.unverified &&
              (options_.verify == VerifyMode::kFull ||
               (options_.verify == VerifyMode::kSampled &&
                verify_counter_.fetch_add(1) %
                        static_cast<uint64_t>(options_.verify_sample_every) ==
                    0));
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

bool ClientImpl::HasUntriedReplica(const PieceState& p) {
  for (const v1::Replica& r : *p.piece.replicas) {
    NodeRuntime* n = Node(r.node_id());
    if (std::find(p.excluded.begin(), p.excluded.end(), n) !=
        p.excluded.end()) {
      continue;
    }
    // Moving a slow piece to a node known to be down fails at once and
    // leaves the piece with no replica to try (a read error while the slow
    // node would have answered). A draining node still serves reads.
    const lb::NodeState s = health_.State(n->id());
    if (s.dead || !s.live || s.admin == lb::AdminState::kDisabled) continue;
    return true;
  }
  return false;
}

void ClientImpl::FailPiece(Batch& b, PieceState& p) {
  // An erasure-coded cell: rebuilt from its row instead (ec_read.h).
  if (b.ec != nullptr &&
      b.ec->TakeFailed(b, static_cast<int>(&p - b.pieces.data()))) {
    return;
  }
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

}  // namespace client_internal
}  // namespace rangefs
