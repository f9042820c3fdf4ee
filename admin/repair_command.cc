#include "admin/repair_command.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "namespace/etcd/key_range.h"
#include "namespace/kv.h"
#include "namespace/storage_policy.h"
#include "repair/convert_plan.h"
#include "repair/ec_plan.h"
#include "repair/planner.h"
#include "repair/rebalance.h"

namespace rangefs {
namespace admin {
namespace {

// Every file record at one revision (pages of ListFiles).
absl::StatusOr<std::vector<ns::FileEntry>> AllFiles(ns::NamespaceStore& s) {
  std::vector<ns::FileEntry> files;
  ns::ListFilesOptions lo;
  do {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult page, s.ListFiles(lo));
    lo.revision = page.revision;
    lo.page_token = page.next_page_token;
    for (ns::FileEntry& f : page.files) files.push_back(std::move(f));
  } while (!lo.page_token.empty());
  return files;
}

// Node views as the keeper builds them; a node without a live record is
// dead. Counts dead and draining nodes.
absl::StatusOr<std::map<std::string, keeper::NodeView>> Views(
    ns::NamespaceStore& s, int* dead, int* draining) {
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes, s.ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live, s.ListLive());
  std::map<std::string, const v1::LiveRecord*> live_by_id;
  for (const ns::LiveEntry& e : live) {
    if (e.invalid.empty()) live_by_id[e.record.node_id()] = &e.record;
  }
  const absl::Time now = absl::Now();
  std::map<std::string, keeper::NodeView> views;
  for (const ns::NodeEntry& n : nodes) {
    if (!n.invalid.empty()) continue;
    auto it = live_by_id.find(n.record.id());
    keeper::NodeView v = keeper::MakeNodeView(
        n.record, it == live_by_id.end() ? nullptr : it->second,
        absl::InfinitePast(), now, absl::ZeroDuration());
    *dead += v.condition == keeper::NodeCondition::kDead;
    *draining += v.condition == keeper::NodeCondition::kDraining;
    views[v.id] = std::move(v);
  }
  return views;
}

// The storage-policy conversions the keeper would make now (files with a
// move planned convert in a later round, as in the keeper), as rows.
absl::StatusOr<keeper::ConvertPlan> Conversions(
    ns::NamespaceStore& s, const std::vector<ns::FileEntry>& files,
    const std::map<std::string, keeper::NodeView>& views,
    const keeper::Plan& plan, absl::BitGenRef bitgen) {
  RANGEFS_ASSIGN_OR_RETURN(ns::PolicyTable policies,
                           ns::LoadPolicies(*s.kv(), s.keys()));
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes, s.ListNodes());
  std::map<std::string, std::string> racks;
  for (const ns::NodeEntry& n : nodes) {
    if (n.invalid.empty()) racks[n.record.id()] = n.record.rack();
  }
  std::set<std::string> busy;
  for (const keeper::Move& m : plan.moves) busy.insert(m.path);
  const absl::Time now = absl::Now();
  keeper::GoalOf goal_of =
      [&](const ns::FileEntry& f) -> std::optional<keeper::FileGoal> {
    if (busy.count(f.path) > 0) return std::nullopt;
    const ns::PolicyResolution r = ns::ResolvePolicy(
        policies, f.path, f.layout.size(),
        absl::FromUnixMillis(f.layout.created_unix_ms()), now);
    if (r.policy == nullptr || !r.goal) return std::nullopt;
    return keeper::FileGoal{*r.goal, r.policy->dir};
  };
  return keeper::PlanConversions(files, views, racks, goal_of, bitgen);
}

// Replicas fsck found corrupt, short or missing (suspect records) count
// as corrupt, as the keeper counts them.
absl::Status AddSuspects(ns::NamespaceStore& s,
                         std::map<std::string, keeper::NodeView>* views) {
  const ns::Keys& keys = s.keys();
  const std::string prefix = keys.KeeperSuspectPrefix();
  return ns::ForEachRangePage(
             *s.kv(), prefix, ns::PrefixRangeEnd(prefix), /*revision=*/0,
             /*page_size=*/0,
             [&](std::vector<ns::KvEntry>& page, int64_t) {
               for (const ns::KvEntry& kv : page) {
                 std::string node, object;
                 if (!keys.ParseKeeperSuspect(kv.key, &node, &object)) {
                   continue;
                 }
                 auto v = views->find(node);
                 if (v != views->end()) v->second.corrupt.insert(object);
               }
               return absl::OkStatus();
             })
      .status();
}

// The rows of the erasure-coded columns the keeper would rebuild (or copy,
// off a draining node). "copy from" says what is read (keeper::ListEcRepair,
// which rangefs-keeper --dry_run prints too).
void AddEcRows(const keeper::EcPlan& ec, Table* t) {
  for (const keeper::EcFileRepair& f : ec.files) {
    for (const keeper::EcColumnRepair& c : f.columns) {
      const keeper::EcRepairListing l = keeper::ListEcRepair(f, c);
      t->AddRow({l.action, f.path, absl::StrCat(c.column), c.object,
                 c.from_node, c.target_node, l.reads, absl::StrCat(c.bytes)});
    }
  }
}

}  // namespace

absl::StatusOr<Table> RunRepair(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"dry-run", "rebalance-tolerance"}));
  if (!a.positional().empty()) {
    return absl::InvalidArgumentError(
        "usage: repair --dry-run [--rebalance-tolerance=0.10]");
  }
  if (!a.GetBool("dry-run")) {
    return absl::InvalidArgumentError(
        "repair: rangefs-admin moves no data; the active rangefs-keeper "
        "carries out the plan that `repair --dry-run` prints");
  }
  keeper::RebalanceOptions ro;
  const std::string tol = a.Get("rebalance-tolerance", "0.10");
  if (!absl::SimpleAtod(tol, &ro.tolerance) || !(ro.tolerance < 1e9)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rebalance-tolerance: not a number: ", tol));
  }
  int dead = 0, draining = 0;
  RANGEFS_ASSIGN_OR_RETURN(auto views, Views(*ctx.store, &dead, &draining));
  RANGEFS_RETURN_IF_ERROR(AddSuspects(*ctx.store, &views));
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::FileEntry> files,
                           AllFiles(*ctx.store));
  absl::BitGen bitgen;
  keeper::Plan plan = keeper::PlanMoves(files, views, bitgen);
  const keeper::EcPlan ec = keeper::PlanEcRepairs(files, views, bitgen);
  size_t ec_columns = 0;
  for (const keeper::EcFileRepair& f : ec.files) ec_columns += f.columns.size();
  bool rebalance = false;
  if (plan.moves.empty() && ec.files.empty()) {
    plan.moves = keeper::PlanRebalance(files, views, ro);
    rebalance = !plan.moves.empty();
    for (const keeper::Move& m : plan.moves) plan.bytes += m.bytes;
  }
  Table t;
  t.columns = {"action", "path", "slot",      "object",
               "from",   "to",   "copy from", "bytes"};
  for (const keeper::Move& m : plan.moves) {
    t.AddRow({m.in_place  ? "repair"
              : m.drop    ? "drop"
              : rebalance ? "rebalance"
                          : "move",
              m.path, absl::StrCat(m.slot), m.object, m.from_node,
              m.drop ? "-" : m.target_node, m.drop ? "-" : m.source_node,
              absl::StrCat(m.bytes)});
  }
  AddEcRows(ec, &t);
  plan.stuck.insert(plan.stuck.end(), ec.stuck.begin(), ec.stuck.end());
  for (const keeper::StuckSlot& s : plan.stuck) {
    t.AddRow(
        {"stuck", s.path, absl::StrCat(s.slot), "-", "-", "-", "-", s.reason});
  }
  // Storage-policy conversions: action "convert", "slot" the kind,
  // "object" the goal, "copy from" the policy, "bytes" those written.
  RANGEFS_ASSIGN_OR_RETURN(keeper::ConvertPlan conversions,
                           Conversions(*ctx.store, files, views, plan, bitgen));
  for (const keeper::Conversion& c : conversions.conversions) {
    t.AddRow({"convert", c.path, keeper::ConversionKindName(c.kind),
              c.goal.ToString(), "-", "-", absl::StrCat("policy ", c.policy),
              absl::StrCat(c.bytes_to_write)});
  }
  for (const keeper::StuckSlot& s : conversions.stuck) {
    t.AddRow({"stuck", s.path, "-", "-", "-", "-", "-", s.reason});
  }
  t.message = absl::StrCat(
      "dry run: ", plan.moves.size(), " move(s), ", ec_columns,
      " erasure-coded column rebuild(s), ", HumanBytes(plan.bytes + ec.bytes),
      "; ", conversions.conversions.size(),
      " conversion(s) to storage policies, ", HumanBytes(conversions.bytes),
      " to write; ", plan.stuck.size(), " stuck; ", files.size(), " file(s); ",
      dead, " dead (no live record), ", draining, " draining node(s)",
      rebalance ? "; rebalancing (nothing to repair)" : "",
      "; nothing changed");
  return t;
}

}  // namespace admin
}  // namespace rangefs
