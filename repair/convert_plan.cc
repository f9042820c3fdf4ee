#include "repair/convert_plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace keeper {
namespace {

constexpr uint64_t kMinCell = 4096;                // node::kMinBlockSize
constexpr uint64_t kMaxCell = uint64_t{16} << 20;  // node::kMaxBlockSize
constexpr uint64_t kDefaultCell = uint64_t{1} << 20;

// Bytes of stripe column t of a `size`-byte file in `unit` units over
// `width` columns.
uint64_t ColumnBytes(uint64_t size, uint64_t unit, uint64_t width, uint64_t t) {
  if (unit == 0 || width == 0) return 0;
  const uint64_t units = (size + unit - 1) / unit;
  if (t >= units) return 0;
  const uint64_t mine = (units - 1 - t) / width + 1;
  uint64_t bytes = mine * unit;
  if ((units - 1) % width == t) bytes -= units * unit - size;  // last unit
  return bytes;
}

uint64_t EcRawBytes(uint64_t size, int k, int m, uint64_t cell) {
  ns::EcGeometry g;
  g.k = k;
  g.m = m;
  g.cell = cell;
  g.size = size;
  g.rows = (size + static_cast<uint64_t>(k) * cell - 1) /
           (static_cast<uint64_t>(k) * cell);
  return size +
         static_cast<uint64_t>(m) * (g.rows * cell + ns::EcCellsBytes(g));
}

bool Usable(const std::map<std::string, NodeView>& views,
            const v1::Replica& r) {
  auto it = views.find(r.node_id());
  return it != views.end() && it->second.condition == NodeCondition::kUp &&
         it->second.corrupt.count(r.object()) == 0 && !r.leaving();
}

// Every object of `layout` with its slot (parity .cells objects included).
std::vector<OldReplica> AllObjects(const v1::FileLayout& layout) {
  std::vector<OldReplica> out;
  for (int s = 0; s < layout.extents_size(); ++s) {
    for (const v1::Replica& r : layout.extents(s).replicas()) {
      out.push_back({s, r.node_id(), r.object()});
    }
  }
  const int k =
      ns::IsErasureCoded(layout)
          ? static_cast<int>(layout.striped().erasure().data_columns())
          : layout.striped().targets_size();
  for (int t = 0; t < layout.striped().targets_size(); ++t) {
    for (const v1::Replica& r : layout.striped().targets(t).replicas()) {
      out.push_back({t, r.node_id(), r.object()});
      if (t >= k)
        out.push_back({t, r.node_id(), ns::EcCellsObject(r.object())});
    }
  }
  return out;
}

// Why the file cannot convert now ("" if it can): an object on a node
// that is not up, corrupt, or a move in progress.
std::string NotHealthy(const v1::FileLayout& layout,
                       const std::map<std::string, NodeView>& views) {
  for (int s = 0; s < layout.extents_size(); ++s) {
    for (const v1::Replica& r : layout.extents(s).replicas()) {
      if (!Usable(views, r)) {
        return absl::StrCat("extent ", s, " has a replica to repair first");
      }
    }
  }
  for (int t = 0; t < layout.striped().targets_size(); ++t) {
    for (const v1::Replica& r : layout.striped().targets(t).replicas()) {
      if (!Usable(views, r)) {
        return absl::StrCat("column ", t, " has a replica to repair first");
      }
    }
  }
  return "";
}

// Node views with zone := zone/rack when records carry racks, so that
// PickTarget's zone spread spreads over racks.
std::map<std::string, NodeView> WithRacks(
    const std::map<std::string, NodeView>& views,
    const std::map<std::string, std::string>& racks) {
  std::map<std::string, NodeView> out = views;
  for (auto& [id, v] : out) {
    auto r = racks.find(id);
    if (r != racks.end() && !r->second.empty()) {
      v.zone = absl::StrCat(v.zone, "/", r->second);
    }
  }
  return out;
}

// Picks `n` more nodes for columns of `bytes` each, none in `used` (which
// grows), zones spread; empty if there are not enough.
std::vector<std::string> PickNodes(const std::map<std::string, NodeView>& v,
                                   std::map<std::string, uint64_t>* planned,
                                   std::set<std::string>* used, int n,
                                   uint64_t bytes, absl::BitGenRef bitgen) {
  std::set<std::string> zones;
  for (const std::string& id : *used) {
    auto it = v.find(id);
    if (it != v.end()) zones.insert(it->second.zone);
  }
  std::vector<std::string> out;
  std::map<std::string, uint64_t> mine = *planned;
  for (int i = 0; i < n; ++i) {
    const std::string t = PickTarget(v, mine, *used, zones, bytes, bitgen);
    if (t.empty()) return {};
    out.push_back(t);
    used->insert(t);
    zones.insert(v.at(t).zone);
    mine[t] += bytes;
  }
  *planned = std::move(mine);
  return out;
}

bool ParityOnly(const v1::FileLayout& l, const ns::LayoutGoal& goal) {
  if (l.extents_size() > 0 || ns::IsErasureCoded(l)) return false;
  const uint64_t unit = l.striped().stripe_unit();
  return l.striped().targets_size() == goal.ec_k &&
         unit == l.checksum_block_size() && unit >= kMinCell &&
         unit <= kMaxCell && l.checksum() == v1::CRC32C_SIDECAR;
}

// Tries to give column t a node not used by another column, moving other
// columns to another of their replicas (an augmenting path, Kuhn's
// algorithm). `owner` maps node -> column, `pick` column -> replica index.
bool Assign(const v1::FileLayout& l, int t, std::set<std::string>* seen,
            std::map<std::string, int>* owner, std::vector<int>* pick) {
  const auto& reps = l.striped().targets(t).replicas();
  for (int i = 0; i < reps.size(); ++i) {
    const std::string& node = reps.Get(i).node_id();
    if (!seen->insert(node).second) continue;
    auto o = owner->find(node);
    if (o == owner->end() || Assign(l, o->second, seen, owner, pick)) {
      (*owner)[node] = t;
      (*pick)[static_cast<size_t>(t)] = i;
      return true;
    }
  }
  return false;
}

// One replica of each column on k distinct nodes (a bipartite matching of
// columns to nodes); empty if there is none.
std::vector<v1::Replica> KeptReplicas(const v1::FileLayout& l) {
  const int k = l.striped().targets_size();
  std::map<std::string, int> owner;
  std::vector<int> pick(static_cast<size_t>(k), -1);
  for (int t = 0; t < k; ++t) {
    std::set<std::string> seen;
    if (!Assign(l, t, &seen, &owner, &pick)) return {};
  }
  std::vector<v1::Replica> kept;
  for (int t = 0; t < k; ++t) {
    kept.push_back(
        l.striped().targets(t).replicas(pick[static_cast<size_t>(t)]));
  }
  return kept;
}

// Plans `c` (kind and goal set); "" or why it cannot be placed now.
std::string Place(const ns::FileEntry& f,
                  const std::map<std::string, NodeView>& v,
                  std::map<std::string, uint64_t>* planned,
                  absl::BitGenRef bitgen, Conversion* c) {
  const v1::FileLayout& l = f.layout;
  const ns::LayoutGoal& goal = c->goal;
  if (goal.is_ec()) {
    const int k = goal.ec_k, m = goal.ec_m;
    std::vector<v1::Replica> kept;
    if (ParityOnly(l, goal)) kept = KeptReplicas(l);
    if (!kept.empty()) {
      c->kind = ConversionKind::kEcInPlace;
      c->cell = l.striped().stripe_unit();
      std::set<std::string> used;
      for (const v1::Replica& r : kept) used.insert(r.node_id());
      const uint64_t parity =
          (EcRawBytes(c->size, k, m, c->cell) - c->size) / m;
      c->new_nodes = PickNodes(v, planned, &used, m, parity, bitgen);
      if (c->new_nodes.empty()) {
        return absl::StrCat("no ", m, " up nodes besides the ", k,
                            " data columns' have room for a parity column");
      }
      c->data = std::move(kept);
      c->bytes_to_write = parity * m;
      return "";
    }
    c->kind = ConversionKind::kEcRewrite;
    const uint64_t unit = l.striped().stripe_unit();
    c->cell = l.extents_size() == 0 && unit >= kMinCell && unit <= kMaxCell
                  ? unit
                  : kDefaultCell;
    const uint64_t raw = EcRawBytes(c->size, k, m, c->cell);
    const uint64_t column =
        (raw - c->size) / m;  // a parity column; data columns are smaller
    std::set<std::string> used;
    c->new_nodes = PickNodes(v, planned, &used, k + m, column, bitgen);
    if (c->new_nodes.empty()) {
      return absl::StrCat("fewer than ", k + m,
                          " up nodes with room for a column");
    }
    c->bytes_to_write = raw;
    return "";
  }
  const int n = goal.replicas;
  if (ns::IsErasureCoded(l)) {
    c->kind = ConversionKind::kEcToReplicas;
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    for (int t = 0; t < g.k; ++t) {
      const v1::Replica& r = ns::DataReplica(l, t);
      c->data.push_back(r);
      const uint64_t bytes = ns::EcColumnBytes(g, t);
      std::set<std::string> used = {r.node_id()};
      const std::vector<std::string> to =
          PickNodes(v, planned, &used, n - 1, bytes, bitgen);
      if (to.empty() && n > 1) {
        return absl::StrCat("no ", n - 1, " up nodes have room for column ", t,
                            "'s copies");
      }
      for (const std::string& node : to) {
        c->adds.push_back(
            {t, r.object(), r.object_offset(), r.node_id(), node, bytes});
        c->bytes_to_write += bytes;
      }
    }
    return "";
  }
  c->kind = ConversionKind::kReplicas;
  for (int s = 0; s < SlotCount(l); ++s) {
    const auto& reps = SlotReplicas(l, s);
    const uint64_t bytes = SlotBytes(l, s);
    if (reps.size() < n) {
      std::set<std::string> used;
      for (const v1::Replica& r : reps) used.insert(r.node_id());
      const std::vector<std::string> to =
          PickNodes(v, planned, &used, n - reps.size(), bytes, bitgen);
      if (to.empty()) {
        return absl::StrCat("no up node without a replica of slot ", s,
                            " has room for it");
      }
      for (const std::string& node : to) {
        c->adds.push_back({s, reps[0].object(), reps[0].object_offset(),
                           reps[0].node_id(), node, bytes});
        c->bytes_to_write += bytes;
      }
    } else if (reps.size() > n) {
      // Drop from the fullest nodes first.
      std::vector<const v1::Replica*> by_free;
      for (const v1::Replica& r : reps) by_free.push_back(&r);
      std::stable_sort(by_free.begin(), by_free.end(),
                       [&](const v1::Replica* a, const v1::Replica* b) {
                         return v.at(a->node_id()).free_bytes <
                                v.at(b->node_id()).free_bytes;
                       });
      for (int i = 0; i < reps.size() - n; ++i) {
        c->drops.push_back({s, by_free[static_cast<size_t>(i)]->node_id(),
                            by_free[static_cast<size_t>(i)]->object()});
      }
    }
  }
  return "";
}

// The raw bytes `c` leaves, from its plan.
uint64_t RawAfter(const Conversion& c) {
  switch (c.kind) {
    case ConversionKind::kEcInPlace:
    case ConversionKind::kEcRewrite:
      return EcRawBytes(c.size, c.goal.ec_k, c.goal.ec_m, c.cell);
    case ConversionKind::kEcToReplicas:
      return c.size * static_cast<uint64_t>(c.goal.replicas);
    case ConversionKind::kReplicas: {
      uint64_t raw = c.raw_before;
      for (const NewReplica& a : c.adds) raw += a.bytes;
      for (const OldReplica& d : c.drops) {
        raw -= std::min(raw, SlotBytes(c.planned, d.slot));
      }
      return raw;
    }
  }
  return c.raw_before;
}

int Rank(ConversionKind k) {
  switch (k) {
    case ConversionKind::kEcInPlace:
      return 0;
    case ConversionKind::kEcToReplicas:
      return 1;
    case ConversionKind::kReplicas:
      return 2;
    case ConversionKind::kEcRewrite:
      return 3;
  }
  return 4;
}

// The layout without the file's version fields, to compare placements.
std::string Placement(const v1::FileLayout& l) {
  v1::FileLayout p;
  p.set_size(l.size());
  p.set_content_generation(l.content_generation());
  *p.mutable_extents() = l.extents();
  *p.mutable_striped() = l.striped();
  std::string out;
  p.SerializeToString(&out);
  return out;
}

v1::Replica NewObject(const std::string& node, const std::string& object) {
  v1::Replica r;
  r.set_node_id(node);
  r.set_object(object);
  return r;
}

}  // namespace

const char* ConversionKindName(ConversionKind k) {
  switch (k) {
    case ConversionKind::kEcInPlace:
      return "ec-in-place";
    case ConversionKind::kEcToReplicas:
      return "ec-to-replicas";
    case ConversionKind::kReplicas:
      return "replicas";
    case ConversionKind::kEcRewrite:
      return "ec-rewrite";
  }
  return "?";
}

uint64_t RawBytes(const v1::FileLayout& l) {
  if (ns::IsErasureCoded(l)) {
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    return EcRawBytes(g.size, g.k, g.m, g.cell);
  }
  uint64_t raw = 0;
  for (const v1::Extent& e : l.extents()) {
    raw += e.length() * static_cast<uint64_t>(e.replicas_size());
  }
  const int w = l.striped().targets_size();
  for (int t = 0; t < w; ++t) {
    raw += ColumnBytes(l.size(), l.striped().stripe_unit(),
                       static_cast<uint64_t>(w), static_cast<uint64_t>(t)) *
           static_cast<uint64_t>(l.striped().targets(t).replicas_size());
  }
  return raw;
}

ConvertPlan PlanConversions(const std::vector<ns::FileEntry>& files,
                            const std::map<std::string, NodeView>& views,
                            const std::map<std::string, std::string>& racks,
                            const GoalOf& goal_of, absl::BitGenRef bitgen) {
  ConvertPlan plan;
  const std::map<std::string, NodeView> v = WithRacks(views, racks);
  std::map<std::string, uint64_t> planned;
  for (const ns::FileEntry& f : files) {
    if (!f.invalid.empty() || f.layout.size() == 0 || !ns::IsReady(f.layout)) {
      continue;
    }
    const std::optional<FileGoal> goal = goal_of(f);
    if (!goal || ns::LayoutMeetsGoal(f.layout, goal->goal)) continue;
    PolicyBacklog& backlog = plan.by_policy[goal->policy];
    ++backlog.files;
    backlog.bytes += f.layout.size();
    Conversion c;
    c.path = f.path;
    c.policy = goal->policy;
    c.goal = goal->goal;
    c.planned = f.layout;
    c.size = f.layout.size();
    c.raw_before = RawBytes(f.layout);
    std::string why = NotHealthy(f.layout, views);
    if (why.empty()) why = Place(f, v, &planned, bitgen, &c);
    c.raw_after = RawAfter(c);
    backlog.bytes_saved +=
        static_cast<int64_t>(c.raw_before) - static_cast<int64_t>(c.raw_after);
    if (!why.empty()) {
      ++backlog.stuck;
      plan.stuck.push_back(
          {f.path, 0,
           absl::StrCat("cannot convert to ", goal->goal.ToString(), ": ", why),
           c.size});
      continue;
    }
    plan.bytes += c.bytes_to_write;
    plan.conversions.push_back(std::move(c));
  }
  std::stable_sort(plan.conversions.begin(), plan.conversions.end(),
                   [](const Conversion& a, const Conversion& b) {
                     return Rank(a.kind) < Rank(b.kind);
                   });
  return plan;
}

absl::StatusOr<v1::FileLayout> ConvertedLayout(
    const v1::FileLayout& cur, const Conversion& c,
    const std::vector<std::string>& data_objects,
    const std::vector<std::string>& parity_objects,
    std::vector<OldReplica>* leaving) {
  if (Placement(cur) != Placement(c.planned)) {
    return absl::FailedPreconditionError(
        "the file's layout changed since the conversion was planned");
  }
  leaving->clear();
  v1::FileLayout next = cur;
  switch (c.kind) {
    case ConversionKind::kEcInPlace:
    case ConversionKind::kEcRewrite: {
      const int k = c.goal.ec_k, m = c.goal.ec_m;
      const bool in_place = c.kind == ConversionKind::kEcInPlace;
      if (parity_objects.size() != static_cast<size_t>(m) ||
          (!in_place && data_objects.size() != static_cast<size_t>(k)) ||
          c.new_nodes.size() != static_cast<size_t>(in_place ? m : k + m)) {
        return absl::InvalidArgumentError("conversion objects miscounted");
      }
      *leaving = AllObjects(cur);
      next.clear_extents();
      next.clear_striped();
      next.set_state(v1::READY_EC);
      next.set_checksum(v1::CRC32C_SIDECAR);
      next.set_checksum_block_size(static_cast<uint32_t>(c.cell));
      v1::StripedLayout* s = next.mutable_striped();
      s->set_stripe_unit(c.cell);
      v1::ErasureCode* e = s->mutable_erasure();
      e->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
      e->set_data_columns(static_cast<uint32_t>(k));
      e->set_parity_columns(static_cast<uint32_t>(m));
      for (int t = 0; t < k; ++t) {
        v1::Replica r = in_place
                            ? c.data[static_cast<size_t>(t)]
                            : NewObject(c.new_nodes[static_cast<size_t>(t)],
                                        data_objects[static_cast<size_t>(t)]);
        r.clear_leaving();
        r.clear_replaced_by();
        *s->add_targets()->add_replicas() = r;
      }
      const int first = in_place ? 0 : k;
      for (int j = 0; j < m; ++j) {
        *s->add_targets()->add_replicas() =
            NewObject(c.new_nodes[static_cast<size_t>(first + j)],
                      parity_objects[static_cast<size_t>(j)]);
      }
      if (in_place) {
        // The kept replicas stay.
        leaving->erase(std::remove_if(leaving->begin(), leaving->end(),
                                      [&](const OldReplica& o) {
                                        const v1::Replica& r =
                                            c.data[static_cast<size_t>(o.slot)];
                                        return r.node_id() == o.node &&
                                               r.object() == o.object;
                                      }),
                       leaving->end());
      }
      return next;
    }
    case ConversionKind::kEcToReplicas: {
      const ns::EcGeometry g = ns::EcGeometryOf(cur);
      *leaving = AllObjects(cur);
      leaving->erase(
          std::remove_if(leaving->begin(), leaving->end(),
                         [&](const OldReplica& o) { return o.slot < g.k; }),
          leaving->end());
      next.set_state(v1::READY);
      v1::StripedLayout* s = next.mutable_striped();
      s->clear_erasure();
      while (s->targets_size() > g.k) s->mutable_targets()->RemoveLast();
      for (const NewReplica& a : c.adds) {
        v1::Replica* r = s->mutable_targets(a.slot)->add_replicas();
        r->set_node_id(a.target_node);
        r->set_object(a.object);
        r->set_object_offset(a.object_offset);
      }
      return next;
    }
    case ConversionKind::kReplicas: {
      for (const NewReplica& a : c.adds) {
        v1::Replica r;
        r.set_node_id(a.target_node);
        r.set_object(a.object);
        r.set_object_offset(a.object_offset);
        if (next.extents_size() > 0) {
          *next.mutable_extents(a.slot)->add_replicas() = r;
        } else {
          *next.mutable_striped()->mutable_targets(a.slot)->add_replicas() = r;
        }
      }
      for (const OldReplica& d : c.drops) {
        auto* reps = next.extents_size() > 0
                         ? next.mutable_extents(d.slot)->mutable_replicas()
                         : next.mutable_striped()
                               ->mutable_targets(d.slot)
                               ->mutable_replicas();
        for (int i = 0; i < reps->size(); ++i) {
          if (reps->Get(i).node_id() == d.node &&
              reps->Get(i).object() == d.object) {
            reps->DeleteSubrange(i, 1);
            break;
          }
        }
        leaving->push_back(d);
      }
      return next;
    }
  }
  return absl::InternalError("unknown conversion");
}

}  // namespace keeper
}  // namespace rangefs
