#include "keeper/keeper.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "ec/codec.h"
#include "ingest/agents.h"
#include "keeper/at_risk.h"
#include "keeper/convert.h"
#include "keeper/ec_rebuild.h"
#include "namespace/ec_layout.h"
#include "namespace/kv.h"
#include "namespace/layout.h"
#include "proto/layout.pb.h"
#include "repair/ec_cells.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace keeper {

// What one round sees of the namespace.
struct Keeper::Listing {
  std::vector<ns::NodeEntry> nodes;
  std::map<std::string, NodeView> views;
  std::vector<ns::FileEntry> files;
  int64_t revision = 0;
  // (node, object) of every replica in `files`.
  std::set<std::pair<std::string, std::string>> referenced;
  // (node, object) -> key of every suspect record (`fsck` findings).
  std::map<std::pair<std::string, std::string>, std::string> suspects;
};

namespace {

// At most N holders at once (copies running).
class Slots {
 public:
  explicit Slots(int n) : free_(n) {}
  void Acquire() {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(this, &Slots::Available));
    --free_;
  }
  void Release() {
    absl::MutexLock l(&mu_);
    ++free_;
  }

 private:
  bool Available() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return free_ > 0;
  }
  absl::Mutex mu_;
  int free_ ABSL_GUARDED_BY(mu_);
};

// "<what>: file gone; abandoned", or the reason the layout no longer
// takes the move.
void LogAbandoned(const std::string& what, const absl::Status& s) {
  RANGEFS_LOG(INFO) << "keeper: " << what << ": "
                    << (absl::IsNotFound(s) ? std::string("file gone")
                                            : std::string(s.message()))
                    << "; abandoned";
}

// Every key under `prefix`, read page by page at one revision.
absl::StatusOr<std::vector<ns::KvEntry>> ListPrefix(ns::KvBackend& kv,
                                                    absl::string_view prefix) {
  std::vector<ns::KvEntry> all;
  auto keep = [&all](std::vector<ns::KvEntry>& page, int64_t) {
    for (ns::KvEntry& e : page) all.push_back(std::move(e));
    return absl::OkStatus();
  };
  RANGEFS_RETURN_IF_ERROR(ns::ForEachRangePage(kv, prefix,
                                               ns::PrefixRangeEnd(prefix),
                                               /*revision=*/0,
                                               /*page_size=*/0, keep)
                              .status());
  return all;
}

}  // namespace

// One round's actions over one Listing.
class Keeper::Round : public ConvertContext {
 public:
  Round(Keeper* k, Listing listing, std::function<bool()> may_act)
      : k_(k),
        l_(std::move(listing)),
        may_act_(std::move(may_act)),
        agents_(l_.nodes, k->options_.agent_tls),
        copy_slots_(std::max(1, k->options_.parallel_copies)) {}

  bool MayAct() override {
    if (stopped_.load()) return false;
    if (!may_act_()) {
      stopped_.store(true);
      return false;
    }
    return true;
  }
  bool stopped() const { return stopped_.load(); }
  // Stops the round (logged once) if `s` says the leader key is not under
  // this keeper's lease (leader_guard.h).
  void StopIfNotLeader(const absl::Status& s) {
    if (IsNotLeader(s) && !stopped_.exchange(true)) {
      RANGEFS_LOG(WARNING) << "keeper " << k_->options_.id << ": "
                           << s.message() << "; stopped acting";
    }
  }
  // Deletes a trash record, guarded.
  void DeleteKey(const std::string& key) {
    StopIfNotLeader(k_->guard_.Delete(key));
  }

  void CollectTrash(RoundReport* report);
  void ScanOrphans(RoundReport* report);
  // Returns, for each move, whether it was done.
  std::vector<bool> RunMoves(const std::vector<Move>& moves,
                             RoundReport* report);
  // Rebuilds erasure-coded columns (plan order: fewest good columns
  // first), parallel_copies files at once; adds to the report's moves
  // done and failed and bytes copied (the bytes rebuilt).
  void RunEcRepairs(const EcPlan& plan, RoundReport* report);
  // Carries out storage-policy conversions (convert.h), plan order,
  // parallel_conversions files at once; fills the report's conversion
  // outcomes and takes the done ones off its backlog.
  void RunConversions(const ConvertPlan& plan, RoundReport* report);

  // ConvertContext (convert.h), with the calls replica moves use.
  ingest::Agents& agents() override { return agents_; }
  absl::StatusOr<ns::FileEntry> CasLayout(
      const std::string& what, const std::string& path,
      const std::function<absl::StatusOr<v1::FileLayout>(const ns::FileEntry&)>&
          change) override;
  absl::Status TrashBeforeSwap(const std::string& path, const std::string& node,
                               const std::string& object) override;
  void TrashDropped(const std::string& what, const std::string& path,
                    const std::string& node, const std::string& object,
                    int64_t revision) override;
  bool Copy(const std::string& what, const std::string& object,
            const std::string& source_node, const std::string& target_node,
            uint64_t rate) override;
  void TrashUnused(const std::string& what, const std::string& path,
                   const std::string& node, const std::string& object) override;
  void DeleteUnused(const std::string& path, const std::string& node,
                    const std::string& object) override;

 private:
  enum class Outcome { kDone, kFailed, kAbandoned };
  // One file's column rebuilds (ec_rebuild.h; a column on a draining node
  // is copied instead, CopyObject), then one compare-and-swap
  // that puts every rebuilt column in place of the old one (whose object,
  // and .cells object for a parity column, go to the trash first).
  // `*rebuilt`: the columns swapped in and their bytes.
  Outcome DoEcRepair(const EcFileRepair& f, uint64_t rate, int* rebuilt,
                     uint64_t* bytes);
  // Rebuilds column c of `f` onto c.target_node (ec_rebuild.h); false
  // (logged) if it failed.
  bool Rebuild(const std::string& what, const v1::FileLayout& layout,
               const CellCrcTable& crcs, const EcFileRepair& f,
               const EcColumnRepair& c, uint64_t rate);
  static std::string Describe(const Move& m);  // For the log.
  Outcome DoMove(const Move& m, uint64_t rate);
  // Moves and drops of one file's slots off one node that has no node
  // record: a layout still naming that node cannot be written, so every
  // such slot is copied, then all are swapped (SwapReplica) or dropped
  // (DropReplica, a leaving replica) in one compare-and-swap, trash
  // records first. One outcome for all.
  Outcome DoSwapGroup(const std::vector<const Move*>& ms, uint64_t rate);
  // Trashes the copy of a move that is in no layout (deleted after the
  // grace period unless a later round puts it in a layout after all).
  void TrashCopy(const Move& m, const std::string& what);
  // CopyObject of the move's object onto its target; false (logged) if it
  // failed (a target out of space is backed off: full_backoff).
  bool Copy(const Move& m, const std::string& what, uint64_t rate);
  // CasLayout (above): re-reads `path` and replaces its layout with
  // change(entry) by a compare-and-swap on its mod revision, again on
  // ABORTED (never clobbers), up to max_cas_attempts. change's errors pass
  // through; NOT_FOUND: the file is gone; CANCELLED: may_act turned false.
  // Why move `m` must be one swap (SwapReplica) instead of add then drop,
  // given the slot's `layout` and whether from_node has a node record
  // (without one, a layout still naming it is refused); empty: it need not.
  static std::string SwapReason(const v1::FileLayout& layout, const Move& m,
                                bool from_has_record);
  // Listed layout of `path`; nullptr if not listed.
  const v1::FileLayout* Listed(const std::string& path) const;
  // First step of a move: the new replica joins the slot, the old one is
  // marked leaving (AddReplica); or, when `*swapped` is set on entry or
  // SwapReason says so for the current layout, the whole move in one
  // compare-and-swap (SwapReplica; the replaced replica's trash record
  // first) and `*swapped` set. kAbandoned: the layout no longer fits (the
  // copy is deleted); kFailed: the copy is in no layout.
  Outcome AddStep(const Move& m, const std::string& what, bool* swapped);
  // Second step of a move, and a drop: trash record for the leaving
  // replica, then it leaves the layout (DropReplica). kFailed: it stays
  // marked leaving (a later round's drop). A move whose new replica is
  // gone clears the leaving mark instead (UnmarkLeaving; kAbandoned).
  Outcome DropStep(const Move& m, const std::string& what);
  // Deletes `object` from `node` unless a current layout of `path`
  // references it.
  void DeleteUnreferencedCopy(const Move& m);
  // Rewrites the trash record of a swapped-out replica with the revision
  // that dropped it; a failure leaves the pending record to CollectTrash.
  void RecordDropRevision(const std::string& what, const Move& m,
                          const v1::TrashRecord& t);
  absl::Status PutTrash(const std::string& node, const std::string& object,
                        const v1::TrashRecord& t);
  // Inside a layout compare-and-swap that drops the replica of `m` on
  // from_node: its trash record (dropped now), written first so that a
  // crash right after the swap cannot leak the object. UNAVAILABLE (the
  // swap is retried) if etcd did not take it.
  absl::Status TrashBeforeSwap(const Move& m, v1::TrashRecord* t);
  bool NodeBackUp(const std::string& node);

  Keeper* const k_;
  const Listing l_;
  const std::function<bool()> may_act_;
  ingest::Agents agents_;
  // parallel_copies copies at once; a move's layout steps run outside
  // them, so the next copy starts while the last one's CASes run.
  Slots copy_slots_;
  std::atomic<bool> stopped_{false};
  // (node, object) of every trash record (CollectTrash).
  std::set<std::pair<std::string, std::string>> trash_;
};

Keeper::Keeper(ns::NamespaceStore* store, etcd::EtcdClient* etcd,
               KeeperOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      store_(store),
      guard_(etcd, store->keys().KeeperLeader(), options_.leader_lease) {}

absl::StatusOr<Keeper::Listing> Keeper::List(bool absent_is_dead,
                                             RoundReport* report_out) {
  RoundReport& report = *report_out;
  const absl::Time now = clock_->Now();
  Listing l;
  RANGEFS_ASSIGN_OR_RETURN(l.nodes, store_->ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live, store_->ListLive());
  std::map<std::string, const v1::LiveRecord*> live_by_id;
  for (const ns::LiveEntry& e : live) {
    if (e.invalid.empty()) live_by_id[e.record.node_id()] = &e.record;
  }
  for (const ns::NodeEntry& n : l.nodes) {
    if (!n.invalid.empty()) continue;
    const std::string& id = n.record.id();
    auto lv = live_by_id.find(id);
    const v1::LiveRecord* lr = lv == live_by_id.end() ? nullptr : lv->second;
    absl::Time missing_since = now;
    if (lr != nullptr) {
      missing_since_.erase(id);
    } else {
      missing_since = absent_is_dead
                          ? absl::InfinitePast()
                          : missing_since_.emplace(id, now).first->second;
    }
    NodeView v =
        MakeNodeView(n.record, lr, missing_since, now, options_.dead_after);
    {
      std::lock_guard<std::mutex> lock(full_mu_);
      auto full = full_since_.find(id);
      if (full != full_since_.end()) {
        if (now - full->second < options_.full_backoff) {
          v.free_bytes = 0;  // No copy target for now.
        } else {
          full_since_.erase(full);
        }
      }
    }
    switch (v.condition) {
      case NodeCondition::kDead:
        ++report.dead_nodes;
        report.dead_node_ids.push_back(id);
        break;
      case NodeCondition::kDraining:
        ++report.draining_nodes;
        break;
      case NodeCondition::kMissing:
        ++report.missing_nodes;
        break;
      default:
        break;
    }
    l.views[id] = std::move(v);
  }
  ns::ListFilesOptions lo;
  do {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult page, store_->ListFiles(lo));
    lo.revision = page.revision;
    lo.page_token = page.next_page_token;
    for (ns::FileEntry& f : page.files) l.files.push_back(std::move(f));
  } while (!lo.page_token.empty());
  l.revision = lo.revision;
  for (const ns::FileEntry& f : l.files) {
    auto add = [&](const v1::Replica& r) {
      l.referenced.emplace(r.node_id(), r.object());
    };
    for (const v1::Extent& e : f.layout.extents()) {
      for (const v1::Replica& r : e.replicas()) add(r);
    }
    for (const auto& t : f.layout.striped().targets()) {
      for (const v1::Replica& r : t.replicas()) add(r);
    }
    if (ns::IsErasureCoded(f.layout)) {
      // A parity column's cell checksums are referenced with it. Coded
      // columns are rebuilt (PlanEcRepairs), never moved as replicas.
      const ns::EcGeometry g = ns::EcGeometryOf(f.layout);
      for (int j = 0; j < g.m; ++j) {
        const v1::Replica& p = ns::ParityReplica(f.layout, j);
        l.referenced.emplace(p.node_id(), ns::EcCellsObject(p.object()));
      }
    }
  }
  AddSuspects(&l);
  report.revision = l.revision;
  report.files = static_cast<int>(l.files.size());
  const AtRisk at_risk = CountAtRisk(l.files, l.views);
  report.at_risk_files = at_risk.files;
  report.at_risk_bytes = at_risk.bytes;
  report.heal_starts =
      HealStarts(missing_since_, l.views, options_.dead_after, now);
  report.dead_after = options_.dead_after;
  return l;
}

// Replicas `fsck` found corrupt, short or missing (suspect records) count
// as corrupt, like the agents' scrub reports: repaired in place.
void Keeper::AddSuspects(Listing* l) {
  const ns::Keys& keys = store_->keys();
  absl::StatusOr<std::vector<ns::KvEntry>> all =
      ListPrefix(*store_->kv(), keys.KeeperSuspectPrefix());
  if (!all.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: listing fsck's suspect replicas: "
                         << all.status();
    return;
  }
  for (const ns::KvEntry& kv : *all) {
    std::string node, object;
    if (!keys.ParseKeeperSuspect(kv.key, &node, &object)) continue;
    l->suspects[{node, object}] = kv.key;
    auto v = l->views.find(node);
    if (v != l->views.end()) v->second.corrupt.insert(object);
  }
}

Keeper::Suspects Keeper::TakeSuspects(const Listing& l) {
  Suspects s;
  for (const auto& [replica, key] : l.suspects) {
    s.keys[replica] = key;
    if (l.referenced.count(replica) == 0) s.unreferenced.insert(replica);
  }
  return s;
}

// Drops the suspect records of replicas repaired this round, and of
// replicas no layout references any more (moved, removed).
void Keeper::DropSuspects(const Suspects& s, const std::vector<Move>& moves,
                          const std::vector<bool>& done,
                          const std::function<bool()>& may_act) {
  std::set<std::pair<std::string, std::string>> repaired;
  for (size_t i = 0; i < moves.size(); ++i) {
    if (done[i] && moves[i].in_place) {
      repaired.emplace(moves[i].from_node, moves[i].object);
    }
  }
  for (const auto& [replica, key] : s.keys) {
    const bool fixed = repaired.count(replica) > 0;
    if (!fixed && s.unreferenced.count(replica) == 0) continue;
    if (!may_act()) return;
    absl::Status deleted = guard_.Delete(key);
    if (IsNotLeader(deleted)) {
      RANGEFS_LOG(WARNING) << "keeper: " << deleted.message();
      return;
    }
    if (!deleted.ok()) {
      // The record stays; a later round drops it.
      RANGEFS_LOG(WARNING) << "keeper: dropping fsck's report on "
                           << replica.second << " on " << replica.first << ": "
                           << deleted;
      continue;
    }
    RANGEFS_LOG(INFO) << "keeper: fsck's report on " << replica.second << " on "
                      << replica.first << " resolved ("
                      << (fixed ? "repaired" : "in no layout") << ")";
  }
}

// Files with a slot to re-replicate, and those slots' bytes, from the
// repair plan (before rebalancing).
void Keeper::CountUnderReplicated(const Plan& plan, RoundReport* report) {
  std::set<std::string> files;
  for (const Move& m : plan.moves) {
    if (m.drop) continue;  // Over-replicated, not under.
    files.insert(m.path);
    report->under_replicated_bytes += m.bytes;
  }
  for (const StuckSlot& s : plan.stuck) {
    files.insert(s.path);
    report->under_replicated_bytes += s.bytes;
  }
  report->under_replicated_files = static_cast<int>(files.size());
}

Plan Keeper::MakePlan(const Listing& l, RoundReport* report_out,
                      EcPlan* ec_out) {
  RoundReport& report = *report_out;
  const absl::Time now = clock_->Now();
  Plan plan = PlanMoves(l.files, l.views, bitgen_);
  EcPlan ec = PlanEcRepairs(l.files, l.views, bitgen_);
  // Replicas repaired lately stay listed until their node scrubs again.
  plan.moves.erase(
      std::remove_if(plan.moves.begin(), plan.moves.end(),
                     [&](const Move& m) {
                       if (!m.in_place) return false;
                       auto it = repaired_.find({m.from_node, m.object});
                       return it != repaired_.end() &&
                              now - it->second < options_.repair_backoff;
                     }),
      plan.moves.end());
  // Coded columns to rebuild count as under-replicated slots.
  Plan counted = plan;
  int ec_columns = 0;
  for (const EcFileRepair& f : ec.files) {
    for (const EcColumnRepair& c : f.columns) {
      Move m;
      m.path = f.path;
      m.slot = c.column;
      m.bytes = c.bytes;
      counted.moves.push_back(std::move(m));
      ++ec_columns;
    }
  }
  counted.stuck.insert(counted.stuck.end(), ec.stuck.begin(), ec.stuck.end());
  CountUnderReplicated(counted, &report);
  if (plan.moves.empty() && ec.files.empty() && report.missing_nodes == 0) {
    plan.moves = PlanRebalance(l.files, l.views, options_.rebalance);
    report.rebalance_moves = static_cast<int>(plan.moves.size());
    for (const Move& m : plan.moves) plan.bytes += m.bytes;
  }
  report.moves_planned = static_cast<int>(plan.moves.size()) + ec_columns;
  report.bytes_planned = plan.bytes + ec.bytes;
  report.stuck = static_cast<int>(plan.stuck.size() + ec.stuck.size());
  plan.stuck.insert(plan.stuck.end(), ec.stuck.begin(), ec.stuck.end());
  if (ec_out != nullptr) *ec_out = std::move(ec);
  return plan;
}

absl::StatusOr<RoundPlan> Keeper::DryRun(RoundReport* report) {
  RANGEFS_ASSIGN_OR_RETURN(Listing l, List(/*absent_is_dead=*/true, report));
  RoundPlan p;
  p.moves = MakePlan(l, report, &p.ec);
  p.conversions = PlanConvert(l, p.moves, p.ec, report);
  return p;
}

ConvertPlan Keeper::PlanConvert(const Listing& l, const Plan& plan,
                                const EcPlan& ec, RoundReport* report) {
  if (!options_.goals) return {};
  absl::StatusOr<GoalOf> goal_of = options_.goals();
  if (!goal_of.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: reading the storage policies: "
                         << goal_of.status() << "; no conversions this round";
    return {};
  }
  // A file with a move or a rebuild this round converts in a later one.
  std::set<std::string> busy;
  for (const Move& m : plan.moves) busy.insert(m.path);
  for (const EcFileRepair& f : ec.files) busy.insert(f.path);
  std::map<std::string, std::string> racks;
  for (const ns::NodeEntry& n : l.nodes) {
    if (n.invalid.empty()) racks[n.record.id()] = n.record.rack();
  }
  GoalOf goal = [&](const ns::FileEntry& f) -> std::optional<FileGoal> {
    if (busy.count(f.path) > 0) return std::nullopt;
    return (*goal_of)(f);
  };
  ConvertPlan c = PlanConversions(l.files, l.views, racks, goal, bitgen_);
  report->conversions_planned = static_cast<int>(c.conversions.size());
  report->conversions_stuck = static_cast<int>(c.stuck.size());
  report->convert_bytes_planned = c.bytes;
  report->convert_backlog = c.by_policy;
  return c;
}

absl::StatusOr<RoundReport> Keeper::RunRound(
    const std::function<bool()>& may_act) {
  RoundReport report;
  if (!may_act()) {
    report.stopped = true;
    return report;
  }
  const absl::Time now = clock_->Now();
  RANGEFS_ASSIGN_OR_RETURN(Listing l, List(/*absent_is_dead=*/false, &report));
  EcPlan ec;
  Plan plan = MakePlan(l, &report, &ec);
  for (const StuckSlot& s : plan.stuck) {
    RANGEFS_LOG(WARNING) << "keeper " << options_.id << ": " << s.path
                         << " slot " << s.slot
                         << " cannot be repaired now: " << s.reason;
  }
  const Suspects suspects = TakeSuspects(l);
  const ConvertPlan conversions = PlanConvert(l, plan, ec, &report);
  report.convert_eta_s = PacedConvertEta(conversions);
  Round round(this, std::move(l), may_act);
  round.CollectTrash(&report);
  // A plan with work is published (status record, metrics) before any
  // move or conversion: a long first one would hide the backlog otherwise.
  if (options_.on_progress &&
      (report.moves_planned > 0 || report.conversions_planned > 0)) {
    options_.on_progress(report);
  }
  if (options_.orphan_scan_interval > absl::ZeroDuration() &&
      now - last_orphan_scan_ >= options_.orphan_scan_interval) {
    last_orphan_scan_ = now;
    round.ScanOrphans(&report);
  }
  const std::vector<bool> done = round.RunMoves(plan.moves, &report);
  round.RunEcRepairs(ec, &report);
  for (const StuckSlot& s : conversions.stuck) {
    RANGEFS_LOG(INFO) << "keeper " << options_.id << ": " << s.path << ": "
                      << s.reason;
  }
  round.RunConversions(conversions, &report);
  DropSuspects(suspects, plan.moves, done, may_act);
  for (size_t i = 0; i < plan.moves.size(); ++i) {
    if (done[i] && plan.moves[i].in_place) {
      repaired_[{plan.moves[i].from_node, plan.moves[i].object}] = now;
      ++report.repairs_done;
    }
  }
  report.stopped = round.stopped();
  return report;
}

// ------------------------------------------------------------------ moves

std::vector<bool> Keeper::Round::RunMoves(const std::vector<Move>& moves,
                                          RoundReport* report) {
  std::vector<char> ok(moves.size(), 0);
  if (moves.empty()) return {};
  // Moves off a node without a node record go in groups, one per file
  // (DoSwapGroup); every other move alone.
  std::vector<std::vector<size_t>> units;
  std::map<std::pair<std::string, std::string>, size_t> groups;
  for (size_t i = 0; i < moves.size(); ++i) {
    const Move& m = moves[i];
    if (!m.in_place && l_.views.count(m.from_node) == 0) {
      auto [g, added] =
          groups.emplace(std::make_pair(m.path, m.from_node), units.size());
      if (added) units.emplace_back();
      units[g->second].push_back(i);
      continue;
    }
    units.push_back({i});
  }
  const int threads = std::max(1, k_->options_.parallel_copies);
  const uint64_t rate =
      k_->options_.copy_bytes_per_sec /
      static_cast<uint64_t>(std::min<size_t>(threads, units.size()));
  // Twice the workers of copies: while a worker's move does its layout
  // steps (two etcd transactions), another worker's copy runs (Copy holds
  // one of copy_slots_).
  std::atomic<int> done{0}, failed{0}, abandoned{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex progress_mu;
  ingest::ParallelFor(units.size(), 2 * threads, [&](size_t u) {
    if (!MayAct()) return;
    const std::vector<size_t>& unit = units[u];
    Outcome o;
    if (l_.views.count(moves[unit[0]].from_node) == 0 &&
        !moves[unit[0]].in_place) {
      std::vector<const Move*> ms;
      for (size_t i : unit) ms.push_back(&moves[i]);
      o = DoSwapGroup(ms, rate);
    } else {
      o = DoMove(moves[unit[0]], rate);
    }
    for (size_t i : unit) {
      switch (o) {
        case Outcome::kDone:
          ok[i] = 1;
          done.fetch_add(1);
          bytes.fetch_add(moves[i].bytes);
          break;
        case Outcome::kFailed:
          failed.fetch_add(1);
          break;
        case Outcome::kAbandoned:
          abandoned.fetch_add(1);
          break;
      }
    }
    if (k_->options_.on_progress) {
      std::lock_guard<std::mutex> l(progress_mu);
      RoundReport so_far = *report;
      so_far.moves_done = done.load();
      so_far.moves_failed = failed.load();
      so_far.moves_abandoned = abandoned.load();
      so_far.bytes_copied = bytes.load();
      k_->options_.on_progress(so_far);
    }
  });
  report->moves_done = done.load();
  report->moves_failed = failed.load();
  report->moves_abandoned = abandoned.load();
  report->bytes_copied = bytes.load();
  return std::vector<bool>(ok.begin(), ok.end());
}

std::string Keeper::Round::Describe(const Move& m) {
  if (m.in_place) {
    return absl::StrCat("repair of corrupt ", m.object, " (", m.path, " slot ",
                        m.slot, ") on ", m.target_node);
  }
  if (m.drop) {
    return absl::StrCat("drop of leaving ", m.object, " (", m.path, " slot ",
                        m.slot, ") on ", m.from_node);
  }
  return absl::StrCat("move of ", m.path, " slot ", m.slot, " (", m.object,
                      ") ", m.from_node, " -> ", m.target_node);
}

Keeper::Round::Outcome Keeper::Round::DoMove(const Move& m, uint64_t rate) {
  const std::string what = Describe(m);
  if (m.drop) return DropStep(m, what);  // Nothing to copy.
  // Decided before copying, on the listed layout: a slot that cannot take
  // the add step (8 replicas, a layout at its size limit), or a replaced
  // replica whose node record is gone, is moved in one swap. AddStep
  // checks again on the layout it changes.
  bool swapped = false;
  if (!m.in_place) {
    const v1::FileLayout* listed = Listed(m.path);
    const std::string why =
        listed == nullptr
            ? ""
            : SwapReason(*listed, m, l_.views.count(m.from_node) > 0);
    if (!why.empty()) {
      swapped = true;
      RANGEFS_LOG(INFO) << "keeper: " << what << ": one swap, not add then "
                        << "remove: " << why;
    }
  }
  if (!Copy(m, what, rate)) return Outcome::kFailed;
  if (m.in_place) return Outcome::kDone;  // Same object, same node.
  const Outcome added = AddStep(m, what, &swapped);
  if (added == Outcome::kFailed) TrashCopy(m, what);
  if (added != Outcome::kDone || swapped) return added;
  if (k_->options_.after_add) k_->options_.after_add(m);
  return DropStep(m, what);
}

void Keeper::Round::TrashCopy(const Move& m, const std::string& what) {
  if (!MayAct()) return;  // The orphan scan collects it.
  v1::TrashRecord t;
  t.set_path(m.path);
  t.set_dropped_unix_ms(absl::ToUnixMillis(k_->clock_->Now()));
  absl::Status ts = PutTrash(m.target_node, m.object, t);
  if (!ts.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": the unused copy stays on "
                         << m.target_node << ": " << ts;
  }
}

Keeper::Round::Outcome Keeper::Round::DoSwapGroup(
    const std::vector<const Move*>& ms, uint64_t rate) {
  const Move& first = *ms[0];
  const std::string what =
      ms.size() == 1 ? Describe(first)
                     : absl::StrCat("moves of ", first.path, " (", ms.size(),
                                    " slots) off ", first.from_node);
  // Not worth a copy if some slot on the node has no move this round (no
  // target: reported as stuck): the layout would still name the node.
  if (const v1::FileLayout* listed = Listed(first.path)) {
    v1::FileLayout after = *listed;
    for (const Move* m : ms) {
      absl::StatusOr<v1::FileLayout> next =
          m->drop ? DropReplica(after, *m) : SwapReplica(after, *m);
      if (next.ok()) after = *std::move(next);
    }
    const std::vector<std::string> left = ns::ReferencedNodes(after);
    if (std::binary_search(left.begin(), left.end(), first.from_node)) {
      RANGEFS_LOG(WARNING) << "keeper: " << what << ": " << first.from_node
                           << " has no node record and a slot of the file on "
                              "it has no move this round; waiting";
      return Outcome::kFailed;
    }
  }
  RANGEFS_LOG(INFO) << "keeper: " << what << ": " << first.from_node
                    << " has no node record: one swap of every slot on it";
  std::vector<const Move*> copied;
  bool copies_ok = true;
  for (const Move* m : ms) {
    if (m->drop) continue;  // Nothing to copy.
    if (!Copy(*m, Describe(*m), rate)) {
      copies_ok = false;
      break;
    }
    copied.push_back(m);
  }
  if (!copies_ok) {
    for (const Move* m : copied) TrashCopy(*m, Describe(*m));
    return Outcome::kFailed;
  }
  // The replaced replicas go to the trash first, so that a crash right
  // after the swap cannot leak them.
  v1::TrashRecord t;
  t.set_path(first.path);
  absl::StatusOr<ns::FileEntry> r = CasLayout(
      what, first.path,
      [&](const ns::FileEntry& f) -> absl::StatusOr<v1::FileLayout> {
        v1::FileLayout next = f.layout;
        for (const Move* m : ms) {
          RANGEFS_ASSIGN_OR_RETURN(
              next, m->drop ? DropReplica(next, *m) : SwapReplica(next, *m));
        }
        for (const Move* m : ms) {
          RANGEFS_RETURN_IF_ERROR(TrashBeforeSwap(*m, &t));
        }
        return next;
      });
  if (absl::IsNotFound(r.status()) || absl::IsFailedPrecondition(r.status())) {
    LogAbandoned(what, r.status());
    for (const Move* m : ms) {
      if (!m->drop) DeleteUnreferencedCopy(*m);
    }
    return Outcome::kAbandoned;
  }
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": swapping in the new "
                         << "replicas: " << r.status()
                         << "; the copies are left unreferenced";
    for (const Move* m : ms) {
      if (!m->drop) TrashCopy(*m, Describe(*m));
    }
    return Outcome::kFailed;
  }
  t.set_dropped_revision(r->mod_revision);
  for (const Move* m : ms) RecordDropRevision(what, *m, t);
  RANGEFS_LOG(INFO) << "keeper: " << what
                    << ": replica(s) swapped in one step (revision "
                    << r->mod_revision << ")";
  return Outcome::kDone;
}

bool Keeper::Round::Copy(const Move& m, const std::string& what,
                         uint64_t rate) {
  auto src = l_.views.find(m.source_node);
  if (src == l_.views.end() || src->second.address.empty()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": source node "
                         << m.source_node << " has no address";
    return false;
  }
  node::CopyObjectRequest req;
  req.set_path(m.object);
  req.set_source_address(src->second.address);
  // The target holds no replica of this slot; an object of that name there
  // is a leftover (an earlier attempt, or trash awaiting deletion) of the
  // same bytes.
  req.set_overwrite(true);
  req.set_max_bytes_per_sec(rate);
  if (!MayAct()) return false;
  copy_slots_.Acquire();
  if (!MayAct()) {
    copy_slots_.Release();
    return false;
  }
  RANGEFS_LOG(INFO) << "keeper: " << what << ": copying from " << m.source_node;
  const absl::Time start = absl::Now();
  absl::Status s = agents_.Call(m.target_node, [&](node::NodeClient& c) {
    return c.CopyObject(req, absl::Now() + k_->options_.copy_timeout).status();
  });
  copy_slots_.Release();
  if (!s.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": copy from "
                         << m.source_node << " failed: " << s;
    if (absl::IsResourceExhausted(s) && !m.in_place) {
      std::lock_guard<std::mutex> lock(k_->full_mu_);
      k_->full_since_[m.target_node] = k_->clock_->Now();
      RANGEFS_LOG(WARNING) << "keeper: " << m.target_node
                           << " is out of space: no copy target for "
                           << k_->options_.full_backoff
                           << "; the next round picks another node";
    }
    return false;
  }
  RANGEFS_LOG(INFO) << "keeper: " << what << ": copied from " << m.source_node
                    << " in " << (absl::Now() - start);
  return true;
}

bool Keeper::Round::NodeBackUp(const std::string& node) {
  absl::StatusOr<std::vector<ns::LiveEntry>> live = k_->store_->ListLive();
  if (!live.ok()) return false;
  for (const ns::LiveEntry& e : *live) {
    if (e.invalid.empty() && e.record.node_id() == node) return true;
  }
  return false;
}

absl::StatusOr<ns::FileEntry> Keeper::Round::CasLayout(
    const std::string& what, const std::string& path,
    const std::function<absl::StatusOr<v1::FileLayout>(const ns::FileEntry&)>&
        change) {
  for (int attempt = 0; attempt < k_->options_.max_cas_attempts; ++attempt) {
    if (!MayAct()) return absl::CancelledError("no longer the active keeper");
    RANGEFS_ASSIGN_OR_RETURN(ns::FileEntry f, k_->store_->GetFile(path));
    RANGEFS_ASSIGN_OR_RETURN(v1::FileLayout next, change(f));
    if (!MayAct()) return absl::CancelledError("no longer the active keeper");
    absl::StatusOr<ns::FileEntry> r =
        k_->guard_.ReplaceLayout(k_->store_, f, std::move(next));
    StopIfNotLeader(r.status());
    if (!absl::IsAborted(r.status())) return r;
    RANGEFS_LOG(INFO) << "keeper: " << what
                      << ": the layout changed meanwhile; retrying";
  }
  return absl::AbortedError(absl::StrCat("lost ", k_->options_.max_cas_attempts,
                                         " compare-and-swaps in a row"));
}

std::string Keeper::Round::SwapReason(const v1::FileLayout& layout,
                                      const Move& m, bool from_has_record) {
  if (!from_has_record) {
    return absl::StrCat(m.from_node, " has no node record");
  }
  absl::Status fits = CheckAddFits(layout, m);
  if (absl::IsInvalidArgument(fits)) return std::string(fits.message());
  return "";
}

const v1::FileLayout* Keeper::Round::Listed(const std::string& path) const {
  // Listed in key order, that is by path.
  auto it = std::lower_bound(
      l_.files.begin(), l_.files.end(), path,
      [](const ns::FileEntry& f, const std::string& p) { return f.path < p; });
  if (it == l_.files.end() || it->path != path || !it->invalid.empty()) {
    return nullptr;
  }
  return &it->layout;
}

Keeper::Round::Outcome Keeper::Round::AddStep(const Move& m,
                                              const std::string& what,
                                              bool* swapped) {
  auto from = l_.views.find(m.from_node);
  const bool from_dead =
      from != l_.views.end() && from->second.condition == NodeCondition::kDead;
  // The replaced replica's trash record, written before a swap.
  v1::TrashRecord t;
  t.set_path(m.path);
  bool swap = *swapped;
  absl::StatusOr<ns::FileEntry> r = CasLayout(
      what, m.path,
      [&](const ns::FileEntry& f) -> absl::StatusOr<v1::FileLayout> {
        if (!swap) {
          absl::StatusOr<ns::NodeEntry> node = k_->store_->GetNode(m.from_node);
          const std::string why =
              SwapReason(f.layout, m, !absl::IsNotFound(node.status()));
          if (!why.empty()) {
            swap = true;
            RANGEFS_LOG(INFO) << "keeper: " << what
                              << ": one swap, not add then remove: " << why;
          }
        }
        absl::StatusOr<v1::FileLayout> next =
            swap ? SwapReplica(f.layout, m) : AddReplica(f.layout, m);
        if (next.ok() && from_dead && NodeBackUp(m.from_node)) {
          return absl::FailedPreconditionError(
              absl::StrCat(m.from_node, " is back"));
        }
        if (next.ok() && swap) {
          // The replaced replica goes to the trash first, so that a crash
          // right after the swap cannot leak it.
          RANGEFS_RETURN_IF_ERROR(TrashBeforeSwap(m, &t));
        }
        return next;
      });
  *swapped = swap;
  if (absl::IsNotFound(r.status()) || absl::IsFailedPrecondition(r.status())) {
    LogAbandoned(what, r.status());
    DeleteUnreferencedCopy(m);
    return Outcome::kAbandoned;
  }
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what
                         << (swap ? ": swapping in the new replica: "
                                  : ": adding the new replica: ")
                         << r.status() << "; the copy is left unreferenced";
    return Outcome::kFailed;
  }
  if (!swap) {
    RANGEFS_LOG(INFO) << "keeper: " << what << ": new replica added (revision "
                      << r->mod_revision << "); removing the old one";
    return Outcome::kDone;
  }
  t.set_dropped_revision(r->mod_revision);
  RecordDropRevision(what, m, t);
  RANGEFS_LOG(INFO) << "keeper: " << what
                    << ": replica swapped in one step (revision "
                    << r->mod_revision << ")";
  return Outcome::kDone;
}

void Keeper::Round::RecordDropRevision(const std::string& what, const Move& m,
                                       const v1::TrashRecord& t) {
  absl::Status ts = PutTrash(m.from_node, m.object, t);
  if (!ts.ok()) {
    // The record stays pending; CollectTrash resolves it.
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": " << ts;
  }
}

Keeper::Round::Outcome Keeper::Round::DropStep(const Move& m,
                                               const std::string& what) {
  // The leaving replica goes to the trash before it leaves the layout, so
  // that a crash right after the swap cannot leak it.
  v1::TrashRecord t;
  t.set_path(m.path);
  bool unmarked = false;
  absl::StatusOr<ns::FileEntry> r = CasLayout(
      what, m.path,
      [&](const ns::FileEntry& f) -> absl::StatusOr<v1::FileLayout> {
        unmarked = false;
        absl::StatusOr<v1::FileLayout> dropped = DropReplica(f.layout, m);
        if (!dropped.ok() && !m.target_node.empty()) {
          // The new replica is gone (an admin change since the add): the
          // leaving one counts again, or the drop would leave the slot a
          // replica short. A drop knows the new replica's node from the
          // mark's replaced_by (not from marks written before it).
          absl::StatusOr<v1::FileLayout> kept = UnmarkLeaving(f.layout, m);
          if (kept.ok()) {
            unmarked = true;
            return kept;
          }
        }
        RANGEFS_ASSIGN_OR_RETURN(v1::FileLayout next, std::move(dropped));
        RANGEFS_RETURN_IF_ERROR(TrashBeforeSwap(m, &t));
        return next;
      });
  if (absl::IsNotFound(r.status()) || absl::IsFailedPrecondition(r.status())) {
    // Removed, renamed or rewritten since: nothing of ours to remove (the
    // orphan scan collects an object no layout references).
    LogAbandoned(what, r.status());
    return Outcome::kAbandoned;
  }
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": removing the replica on "
                         << m.from_node << ": " << r.status()
                         << "; it stays marked leaving, a later round drops it";
    return Outcome::kFailed;
  }
  if (unmarked) {
    RANGEFS_LOG(INFO) << "keeper: " << what << ": the new replica on "
                      << m.target_node << " is gone; " << m.from_node
                      << " no longer marked leaving (revision "
                      << r->mod_revision << "); abandoned";
    DeleteUnreferencedCopy(m);
    return Outcome::kAbandoned;
  }
  t.set_dropped_revision(r->mod_revision);
  RecordDropRevision(what, m, t);
  RANGEFS_LOG(INFO) << "keeper: " << what
                    << (m.drop ? ": leaving replica removed (revision "
                               : ": layout updated (revision ")
                    << r->mod_revision << ")";
  return Outcome::kDone;
}

void Keeper::Round::DeleteUnreferencedCopy(const Move& m) {
  if (!MayAct()) return;
  absl::StatusOr<ns::FileEntry> f = k_->store_->GetFile(m.path);
  if (f.ok() && References(f->layout, m.target_node, m.object)) return;
  if (!f.ok() && !absl::IsNotFound(f.status())) return;  // Unsure: keep.
  absl::Status s = agents_.Call(m.target_node, [&](node::NodeClient& c) {
    return c.DeleteObject(m.object, absl::Now() + k_->options_.call_timeout);
  });
  if (!s.ok() && !absl::IsNotFound(s)) {
    RANGEFS_LOG(WARNING) << "keeper: deleting the unused copy of " << m.object
                         << " on " << m.target_node << ": " << s;
  }
}

// ------------------------------------------------------ erasure-coded columns

void Keeper::Round::RunEcRepairs(const EcPlan& plan, RoundReport* report) {
  if (plan.files.empty()) return;
  const int threads = std::max(1, k_->options_.parallel_copies);
  uint64_t rate = k_->options_.ec_rebuild_bytes_per_sec;
  if (k_->options_.copy_bytes_per_sec > 0) {
    const uint64_t share =
        k_->options_.copy_bytes_per_sec /
        static_cast<uint64_t>(std::min<size_t>(threads, plan.files.size()));
    rate = rate == 0 ? share : std::min(rate, share);
  }
  std::atomic<int> done{0}, failed{0}, abandoned{0};
  std::atomic<uint64_t> bytes{0};
  ingest::ParallelFor(plan.files.size(), threads, [&](size_t i) {
    if (!MayAct()) return;
    const EcFileRepair& f = plan.files[i];
    int rebuilt = 0;
    uint64_t b = 0;
    const Outcome o = DoEcRepair(f, rate, &rebuilt, &b);
    const int n = static_cast<int>(f.columns.size());
    done.fetch_add(rebuilt);
    bytes.fetch_add(b);
    if (o == Outcome::kAbandoned) {
      abandoned.fetch_add(n - rebuilt);
    } else {
      failed.fetch_add(n - rebuilt);
    }
  });
  report->moves_done += done.load();
  report->moves_failed += failed.load();
  report->moves_abandoned += abandoned.load();
  report->bytes_copied += bytes.load();
}

bool Keeper::Round::Rebuild(const std::string& what,
                            const v1::FileLayout& layout,
                            const CellCrcTable& crcs, const EcFileRepair& f,
                            const EcColumnRepair& c, uint64_t rate) {
  const absl::Time start = absl::Now();
  RANGEFS_LOG(INFO) << "keeper: " << what << ": rebuilding column " << c.column
                    << " (" << c.why << " on " << c.from_node << ", " << c.bytes
                    << " bytes) onto " << c.target_node
                    << " (RebuildEcColumn: its agent reads the survivors)";
  absl::StatusOr<RebuildResult> r =
      RebuildColumn(agents_, layout, crcs, c, f.unusable,
                    {.bytes_per_sec = rate,
                     .call_timeout = k_->options_.call_timeout,
                     .write_timeout = k_->options_.copy_timeout});
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": column " << c.column
                         << " (" << c.why << " on " << c.from_node << ") onto "
                         << c.target_node << ": " << r.status()
                         << "; retried next round";
    return false;
  }
  RANGEFS_LOG(INFO) << "keeper: " << what << ": column " << c.column << " ("
                    << c.why << " on " << c.from_node << ") rebuilt onto "
                    << c.target_node << " in " << (absl::Now() - start) << " ("
                    << r->bytes_written << " bytes written, " << r->bytes_read
                    << " read by the agent)";
  return true;
}

Keeper::Round::Outcome Keeper::Round::DoEcRepair(const EcFileRepair& f,
                                                 uint64_t rate, int* rebuilt,
                                                 uint64_t* bytes) {
  *rebuilt = 0;
  *bytes = 0;
  const v1::FileLayout* listed = Listed(f.path);
  if (listed == nullptr) return Outcome::kAbandoned;
  const ns::EcGeometry g = ns::EcGeometryOf(*listed);
  const std::string what = absl::StrCat(
      "rebuild of ", f.path, " (erasure-coded ", g.k, "+", g.m, ", ",
      f.good_columns, " of ", g.k + g.m, " columns readable)");
  absl::StatusOr<std::unique_ptr<ec::Codec>> codec =
      ec::NewCodec({.k = g.k, .m = g.m});
  if (!codec.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": " << codec.status();
    return Outcome::kFailed;
  }
  const ObjectReader read = AgentReader(agents_, k_->options_.call_timeout);
  CellCrcTable crcs = ReadCellCrcs(read, *listed, f.unusable);
  if (crcs.empty()) {
    // Every .cells object is lost (M = 1 and its parity column, say):
    // recomputed from the data columns, verified by their sidecars.
    absl::StatusOr<CellCrcTable> fresh =
        ComputeCellCrcs(read, **codec, *listed, f.unusable);
    if (!fresh.ok()) {
      RANGEFS_LOG(WARNING) << "keeper: " << what << ": " << fresh.status();
      return Outcome::kFailed;
    }
    RANGEFS_LOG(INFO) << "keeper: " << what
                      << ": no .cells object left; cell CRCs recomputed from "
                         "the data columns";
    crcs = *std::move(fresh);
  }
  // Moves naming each rebuilt column (from = old, target = new), for the
  // trash and copy bookkeeping shared with replica moves.
  std::vector<Move> swapped;
  for (const EcColumnRepair& c : f.columns) {
    if (!MayAct()) break;
    Move m;
    m.path = f.path;
    m.striped = true;
    m.slot = c.column;
    m.object = c.object;
    m.from_node = c.from_node;
    m.target_node = c.target_node;
    m.bytes = c.bytes;
    if (c.why == "draining") {
      // Still readable where it is: a copy (1 x its bytes, verified
      // against its sidecar) instead of a rebuild (k x).
      Move cells = m;
      cells.object = ns::EcCellsObject(c.object);
      m.source_node = cells.source_node = c.from_node;
      if (!Copy(m, what, rate) ||
          (c.column >= g.k && !Copy(cells, what, rate))) {
        continue;
      }
    } else if (!Rebuild(what, *listed, crcs, f, c, rate)) {
      continue;
    }
    m.source_node.clear();
    swapped.push_back(m);
    if (c.column >= g.k) {
      m.object = ns::EcCellsObject(c.object);
      swapped.push_back(m);
    }
  }
  if (swapped.empty()) return Outcome::kFailed;
  v1::TrashRecord t;
  t.set_path(f.path);
  absl::StatusOr<ns::FileEntry> r = CasLayout(
      what, f.path,
      [&](const ns::FileEntry& e) -> absl::StatusOr<v1::FileLayout> {
        v1::FileLayout next = e.layout;
        if (!ns::IsErasureCoded(next) ||
            ns::EcGeometryOf(next).size != g.size) {
          return absl::FailedPreconditionError("the file was rewritten");
        }
        for (const Move& m : swapped) {
          if (m.object != next.striped().targets(m.slot).replicas(0).object() &&
              m.object !=
                  ns::EcCellsObject(
                      next.striped().targets(m.slot).replicas(0).object())) {
            return absl::FailedPreconditionError(
                absl::StrCat("column ", m.slot, " changed"));
          }
          v1::Replica* rep =
              next.mutable_striped()->mutable_targets(m.slot)->mutable_replicas(
                  0);
          if (rep->node_id() != m.from_node || rep->object() != m.object) {
            continue;  // The .cells entry, or already swapped.
          }
          v1::Replica fresh;
          fresh.set_node_id(m.target_node);
          fresh.set_object(m.object);
          *rep = fresh;
        }
        for (const Move& m : swapped) {
          RANGEFS_RETURN_IF_ERROR(TrashBeforeSwap(m, &t));
        }
        return next;
      });
  if (absl::IsNotFound(r.status()) || absl::IsFailedPrecondition(r.status())) {
    LogAbandoned(what, r.status());
    for (const Move& m : swapped) DeleteUnreferencedCopy(m);
    return Outcome::kAbandoned;
  }
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: " << what << ": swapping in the rebuilt "
                         << "column(s): " << r.status()
                         << "; the new objects are left unreferenced";
    for (const Move& m : swapped) TrashCopy(m, what);
    return Outcome::kFailed;
  }
  t.set_dropped_revision(r->mod_revision);
  for (const Move& m : swapped) {
    RecordDropRevision(what, m, t);
    if (m.object == listed->striped().targets(m.slot).replicas(0).object()) {
      ++*rebuilt;
      *bytes += m.bytes;
    }
  }
  RANGEFS_LOG(INFO) << "keeper: " << what << ": " << *rebuilt
                    << " rebuilt column(s) swapped in (revision "
                    << r->mod_revision << ")";
  return *rebuilt == static_cast<int>(f.columns.size()) ? Outcome::kDone
                                                        : Outcome::kFailed;
}

// -------------------------------------------------- storage-policy conversions

size_t Keeper::ConversionsAtOnce(size_t conversions) const {
  return std::min<size_t>(std::max(1, options_.parallel_conversions),
                          std::max<size_t>(1, conversions));
}

uint64_t Keeper::ConvertRate(size_t conversions) const {
  uint64_t rate = options_.convert_bytes_per_sec;
  if (options_.copy_bytes_per_sec > 0) {
    const uint64_t share = std::max<uint64_t>(
        1, options_.copy_bytes_per_sec /
               static_cast<uint64_t>(ConversionsAtOnce(conversions)));
    rate = rate == 0 ? share : std::min(rate, share);
  }
  return rate;
}

double Keeper::PacedConvertEta(const ConvertPlan& plan) const {
  if (plan.conversions.empty()) return plan.stuck.empty() ? 0 : -1;
  const uint64_t rate = ConvertRate(plan.conversions.size());
  if (rate == 0) return -1;  // unpaced: no estimate before one is done
  return static_cast<double>(plan.bytes) /
         (static_cast<double>(rate) *
          static_cast<double>(ConversionsAtOnce(plan.conversions.size())));
}

void Keeper::Round::RunConversions(const ConvertPlan& plan,
                                   RoundReport* report) {
  if (plan.conversions.empty()) return;  // convert_eta_s: RunRound's
  const int threads = std::max(1, k_->options_.parallel_conversions);
  const ConvertOptions options{
      .bytes_per_sec = k_->ConvertRate(plan.conversions.size()),
      .call_timeout = k_->options_.call_timeout,
      .write_timeout = k_->options_.copy_timeout,
      .at_step = k_->options_.convert_at_step};
  std::mutex mu;
  uint64_t left = plan.bytes;
  const absl::Time start = absl::Now();
  ingest::ParallelFor(plan.conversions.size(), threads, [&](size_t i) {
    if (!MayAct()) return;
    const Conversion& c = plan.conversions[i];
    const ConvertResult r = RunConversion(*this, c, options);
    std::lock_guard<std::mutex> l(mu);
    report->convert_bytes_written += r.bytes_written;
    switch (r.outcome) {
      case ConvertOutcome::kDone: {
        left -= std::min(left, c.bytes_to_write);
        ++report->conversions_done;
        report->convert_bytes_saved += static_cast<int64_t>(c.raw_before) -
                                       static_cast<int64_t>(c.raw_after);
        PolicyBacklog& b = report->convert_backlog[c.policy];
        b.files -= 1;
        b.bytes -= std::min(b.bytes, c.size);
        b.bytes_saved -= static_cast<int64_t>(c.raw_before) -
                         static_cast<int64_t>(c.raw_after);
        break;
      }
      case ConvertOutcome::kFailed:
        ++report->conversions_failed;
        break;
      case ConvertOutcome::kAbandoned:
        ++report->conversions_abandoned;
        break;
    }
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    if (report->convert_bytes_written > 0 && elapsed > 0) {
      report->convert_eta_s =
          static_cast<double>(left) * elapsed /
          static_cast<double>(report->convert_bytes_written);
    }
    if (k_->options_.on_progress) k_->options_.on_progress(*report);
  });
  if (left == 0 && report->conversions_stuck == 0 &&
      report->conversions_done == report->conversions_planned) {
    report->convert_eta_s = 0;
  }
}

absl::Status Keeper::Round::TrashBeforeSwap(const std::string& path,
                                            const std::string& node,
                                            const std::string& object) {
  Move m;
  m.path = path;
  m.from_node = node;
  m.object = object;
  v1::TrashRecord t;
  t.set_path(path);
  return TrashBeforeSwap(m, &t);
}

void Keeper::Round::TrashDropped(const std::string& what,
                                 const std::string& path,
                                 const std::string& node,
                                 const std::string& object, int64_t revision) {
  Move m;
  m.path = path;
  m.from_node = node;
  m.object = object;
  v1::TrashRecord t;
  t.set_path(path);
  t.set_dropped_unix_ms(absl::ToUnixMillis(k_->clock_->Now()));
  t.set_dropped_revision(revision);
  RecordDropRevision(what, m, t);
}

bool Keeper::Round::Copy(const std::string& what, const std::string& object,
                         const std::string& source_node,
                         const std::string& target_node, uint64_t rate) {
  Move m;
  m.object = object;
  m.source_node = source_node;
  m.target_node = target_node;
  return Copy(m, what, rate);
}

void Keeper::Round::TrashUnused(const std::string& what,
                                const std::string& path,
                                const std::string& node,
                                const std::string& object) {
  Move m;
  m.path = path;
  m.target_node = node;
  m.object = object;
  TrashCopy(m, what);
}

void Keeper::Round::DeleteUnused(const std::string& path,
                                 const std::string& node,
                                 const std::string& object) {
  Move m;
  m.path = path;
  m.target_node = node;
  m.object = object;
  DeleteUnreferencedCopy(m);
}

// ------------------------------------------------------------------ trash

absl::Status Keeper::Round::TrashBeforeSwap(const Move& m, v1::TrashRecord* t) {
  t->set_dropped_unix_ms(absl::ToUnixMillis(k_->clock_->Now()));
  absl::Status ts = PutTrash(m.from_node, m.object, *t);
  if (!ts.ok()) return absl::UnavailableError(ts.message());
  return absl::OkStatus();
}

absl::Status Keeper::Round::PutTrash(const std::string& node,
                                     const std::string& object,
                                     const v1::TrashRecord& t) {
  std::string value;
  t.SerializeToString(&value);
  absl::Status s =
      k_->guard_.Put(k_->store_->keys().KeeperTrash(node, object), value);
  StopIfNotLeader(s);
  return s;
}

void Keeper::Round::CollectTrash(RoundReport* report) {
  const ns::Keys& keys = k_->store_->keys();
  absl::StatusOr<std::vector<ns::KvEntry>> all =
      ListPrefix(*k_->store_->kv(), keys.KeeperTrashPrefix());
  if (!all.ok()) {
    RANGEFS_LOG(WARNING) << "keeper: listing the trash: " << all.status();
    return;
  }
  const absl::Time now = k_->clock_->Now();
  for (const ns::KvEntry& kv : *all) {
    if (!MayAct()) return;
    std::string node, object;
    v1::TrashRecord t;
    if (!keys.ParseKeeperTrash(kv.key, &node, &object) ||
        !t.ParseFromString(kv.value)) {
      RANGEFS_LOG(WARNING) << "keeper: bad trash record " << kv.key
                           << "; removed";
      DeleteKey(kv.key);
      continue;
    }
    trash_.emplace(node, object);
    if (l_.referenced.count({node, object}) > 0) {
      // In a layout (the swap that would have dropped it never happened,
      // or it came back): not trash.
      DeleteKey(kv.key);
      continue;
    }
    auto view = l_.views.find(node);
    if (view == l_.views.end()) {
      DeleteKey(kv.key);  // The node was removed.
      continue;
    }
    ++report->trash_pending;
    const NodeCondition c = view->second.condition;
    const bool reachable = c == NodeCondition::kUp ||
                           c == NodeCondition::kDraining ||
                           c == NodeCondition::kDisabled;
    if (t.dropped_revision() == 0) {
      // Written before a swap whose outcome is unknown: the object left
      // the layouts at or before this listing.
      t.set_dropped_revision(l_.revision);
      t.set_dropped_unix_ms(absl::ToUnixMillis(now));
      (void)PutTrash(node, object, t);
      continue;
    }
    if (now - absl::FromUnixMillis(t.dropped_unix_ms()) <
        k_->options_.delete_grace) {
      continue;
    }
    // No retained revision may reference it: etcd must have compacted
    // past the revision that dropped it.
    absl::StatusOr<ns::KvRange> old = k_->store_->kv()->Range(
        keys.FilesRoot(), "", 1, t.dropped_revision() - 1);
    if (!absl::IsOutOfRange(old.status())) continue;
    if (!reachable) continue;  // Deleted once the node is back.
    absl::Status s = agents_.Call(node, [&](node::NodeClient& c) {
      return c.DeleteObject(object, absl::Now() + k_->options_.call_timeout);
    });
    if (!s.ok() && !absl::IsNotFound(s)) {
      RANGEFS_LOG(WARNING) << "keeper: deleting trash " << object << " on "
                           << node << ": " << s;
      continue;
    }
    DeleteKey(kv.key);
    --report->trash_pending;
    ++report->trash_deleted;
    RANGEFS_LOG(INFO) << "keeper: deleted " << object << " from " << node
                      << " (left the layout of " << t.path() << " at revision "
                      << t.dropped_revision() << ")";
  }
}

void Keeper::Round::ScanOrphans(RoundReport* report) {
  const absl::Time now = k_->clock_->Now();
  for (const auto& [id, v] : l_.views) {
    if (v.condition != NodeCondition::kUp &&
        v.condition != NodeCondition::kDraining) {
      continue;
    }
    absl::StatusOr<std::vector<node::ObjectInfo>> objects =
        absl::UnavailableError("not asked");
    absl::Status s = agents_.Call(id, [&](node::NodeClient& c) {
      objects = c.ListObjects(absl::Now() + k_->options_.call_timeout);
      return objects.status();
    });
    if (!s.ok()) {
      RANGEFS_LOG(WARNING) << "keeper: listing the objects of " << id << ": "
                           << s;
      continue;
    }
    for (const node::ObjectInfo& o : *objects) {
      if (!MayAct()) return;
      if (l_.referenced.count({id, o.path()}) > 0 ||
          trash_.count({id, o.path()}) > 0) {
        continue;
      }
      // Young objects may belong to a put or a move in progress.
      if (now - absl::FromUnixNanos(o.mtime_ns()) < k_->options_.delete_grace) {
        continue;
      }
      v1::TrashRecord t;
      t.set_dropped_revision(l_.revision);
      t.set_dropped_unix_ms(absl::ToUnixMillis(now));
      absl::Status ts = PutTrash(id, o.path(), t);
      if (!ts.ok()) {
        RANGEFS_LOG(WARNING) << "keeper: trashing orphan " << o.path() << " on "
                             << id << ": " << ts;
        continue;
      }
      ++report->orphans_found;
      RANGEFS_LOG(INFO) << "keeper: orphan " << o.path() << " on " << id << " ("
                        << o.size() << " bytes, in no layout) trashed";
    }
  }
}

}  // namespace keeper
}  // namespace rangefs
