#include "repair/ec_plan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace keeper {
namespace {

// Why column `r` must be rebuilt ("" if it need not), and whether it can
// be read.
std::string WhyRebuild(const std::map<std::string, NodeView>& nodes,
                       const v1::Replica& r, bool parity, bool* readable) {
  auto it = nodes.find(r.node_id());
  *readable = false;
  if (it == nodes.end()) return "no record";
  const NodeView& v = it->second;
  switch (v.condition) {
    case NodeCondition::kDead:
      return "dead";
    case NodeCondition::kMissing:
      return "";  // Nothing moves while it may come back.
    case NodeCondition::kDraining:
      break;
    default:
      break;
  }
  const bool corrupt =
      v.corrupt.count(r.object()) > 0 ||
      (parity && v.corrupt.count(ns::EcCellsObject(r.object())) > 0);
  if (corrupt) return "corrupt";
  *readable = true;
  if (v.condition == NodeCondition::kDraining) return "draining";
  return "";
}

}  // namespace

EcRepairListing ListEcRepair(const EcFileRepair& f, const EcColumnRepair& c) {
  if (c.why == "draining") return {"ec copy", c.from_node};
  return {"rebuild", absl::StrCat(c.why, ": ", f.k, " of ", f.good_columns,
                                  " columns, by ", c.target_node)};
}

std::map<std::string, NodeView> ByRack(
    const std::map<std::string, NodeView>& nodes) {
  std::map<std::string, NodeView> out = nodes;
  for (auto& [id, v] : out) v.zone = absl::StrCat(v.zone, "/", v.rack);
  return out;
}

EcPlan PlanEcRepairs(const std::vector<ns::FileEntry>& files,
                     const std::map<std::string, NodeView>& zoned,
                     absl::BitGenRef bitgen) {
  // The row's cells spread over zone/rack keys, as ingest places them
  // (ingest_writer.cc, PlaceCoded).
  const std::map<std::string, NodeView> nodes = ByRack(zoned);
  EcPlan plan;
  std::map<std::string, uint64_t> planned;  // node -> bytes planned onto it
  for (const ns::FileEntry& f : files) {
    if (!f.invalid.empty() || !ns::IsErasureCoded(f.layout) ||
        f.layout.state() != v1::READY_EC) {
      continue;
    }
    const v1::FileLayout& l = f.layout;
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    EcFileRepair fr;
    fr.path = f.path;
    fr.k = g.k;
    fr.mod_revision = f.mod_revision;
    std::set<std::string> used, used_zones;
    for (int t = 0; t < g.k + g.m; ++t) {
      const v1::Replica& r = l.striped().targets(t).replicas(0);
      used.insert(r.node_id());
      bool readable = false;
      const std::string why = WhyRebuild(nodes, r, t >= g.k, &readable);
      if (readable) ++fr.good_columns;
      if (!readable) fr.unusable.insert(t);
      if (why.empty()) {
        auto it = nodes.find(r.node_id());
        if (it != nodes.end()) used_zones.insert(it->second.zone);
        continue;
      }
      EcColumnRepair c;
      c.column = t;
      c.from_node = r.node_id();
      c.object = r.object();
      c.bytes = ns::EcColumnBytes(g, t);
      c.why = why;
      fr.columns.push_back(std::move(c));
    }
    if (fr.columns.empty()) continue;
    // A draining column is read, and rebuilt, yet it stays readable: it is
    // no survivor of its own rebuild.
    for (const EcColumnRepair& c : fr.columns) fr.unusable.insert(c.column);
    const int readable_left = g.k + g.m - static_cast<int>(fr.unusable.size());
    if (readable_left < g.k) {
      for (const EcColumnRepair& c : fr.columns) {
        plan.stuck.push_back(
            {f.path, c.column,
             absl::StrCat("erasure-coded ", g.k, "+", g.m, ": only ",
                          readable_left, " readable column(s), ", g.k,
                          " needed to rebuild column ", c.column, " (", c.why,
                          ")"),
             c.bytes});
      }
      continue;
    }
    std::vector<EcColumnRepair> placed;
    for (EcColumnRepair& c : fr.columns) {
      c.target_node =
          PickTarget(nodes, planned, used, used_zones, c.bytes, bitgen);
      if (c.target_node.empty()) {
        plan.stuck.push_back(
            {f.path, c.column,
             absl::StrCat("erasure-coded column ", c.column, " (", c.why,
                          "): no up node with room holds no column of the "
                          "file"),
             c.bytes});
        continue;
      }
      used.insert(c.target_node);
      auto z = nodes.find(c.target_node);
      if (z != nodes.end()) used_zones.insert(z->second.zone);
      planned[c.target_node] += c.bytes;
      plan.bytes += c.bytes;
      placed.push_back(std::move(c));
    }
    if (placed.empty()) continue;
    fr.columns = std::move(placed);
    plan.files.push_back(std::move(fr));
  }
  std::stable_sort(plan.files.begin(), plan.files.end(),
                   [](const EcFileRepair& a, const EcFileRepair& b) {
                     return a.good_columns < b.good_columns;
                   });
  return plan;
}

}  // namespace keeper
}  // namespace rangefs
