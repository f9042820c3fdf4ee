#include "keeper/at_risk.h"

#include <algorithm>

#include "namespace/ec_layout.h"

namespace rangefs {
namespace keeper {
namespace {

bool OnMissing(const google::protobuf::RepeatedPtrField<v1::Replica>& replicas,
               const std::map<std::string, NodeView>& nodes) {
  for (const v1::Replica& r : replicas) {
    auto v = nodes.find(r.node_id());
    if (v != nodes.end() && v->second.condition == NodeCondition::kMissing) {
      return true;
    }
  }
  return false;
}

// Bytes of `layout`'s slots with a replica on a missing node.
uint64_t BytesAtRisk(const v1::FileLayout& layout,
                     const std::map<std::string, NodeView>& nodes) {
  uint64_t bytes = 0;
  for (const v1::Extent& e : layout.extents()) {
    if (OnMissing(e.replicas(), nodes)) bytes += e.length();
  }
  const auto& targets = layout.striped().targets();
  const uint64_t width = static_cast<uint64_t>(targets.size());
  const ns::EcGeometry g = ns::EcGeometryOf(layout);  // k = 0: not coded
  for (int t = 0; t < targets.size(); ++t) {
    if (!OnMissing(targets[t].replicas(), nodes)) continue;
    bytes += g.k > 0 ? ns::EcColumnBytes(g, t)
                     : StripeColumnBytes(layout.size(),
                                         layout.striped().stripe_unit(), width,
                                         static_cast<uint64_t>(t));
  }
  return bytes;
}

bool AnyOnMissing(const v1::FileLayout& layout,
                  const std::map<std::string, NodeView>& nodes) {
  for (const v1::Extent& e : layout.extents()) {
    if (OnMissing(e.replicas(), nodes)) return true;
  }
  for (const auto& t : layout.striped().targets()) {
    if (OnMissing(t.replicas(), nodes)) return true;
  }
  return false;
}

}  // namespace

uint64_t StripeColumnBytes(uint64_t size, uint64_t unit, uint64_t width,
                           uint64_t t) {
  if (unit == 0 || width == 0 || t >= width) return 0;
  // Units 0 .. full-1 are whole; unit `full` (if size % unit) is partial.
  const uint64_t full = size / unit;
  const uint64_t rest = size % unit;
  uint64_t bytes = (full / width) * unit;  // Whole rounds of all columns.
  if (t < full % width) bytes += unit;     // A whole unit in the last round.
  if (rest != 0 && full % width == t) bytes += rest;
  return bytes;
}

AtRisk CountAtRisk(const std::vector<ns::FileEntry>& files,
                   const std::map<std::string, NodeView>& nodes) {
  AtRisk r;
  const bool any_missing =
      std::any_of(nodes.begin(), nodes.end(), [](const auto& n) {
        return n.second.condition == NodeCondition::kMissing;
      });
  if (!any_missing) return r;
  for (const ns::FileEntry& f : files) {
    if (!f.invalid.empty() || !AnyOnMissing(f.layout, nodes)) continue;
    ++r.files;
    r.bytes += BytesAtRisk(f.layout, nodes);
  }
  return r;
}

absl::Time HealStarts(const std::map<std::string, absl::Time>& missing_since,
                      const std::map<std::string, NodeView>& nodes,
                      absl::Duration dead_after, absl::Time now) {
  absl::Time first = absl::InfiniteFuture();
  for (const auto& [id, view] : nodes) {
    if (view.condition != NodeCondition::kMissing) continue;
    auto since = missing_since.find(id);
    first =
        std::min(first, (since == missing_since.end() ? now : since->second) +
                            dead_after);
  }
  return first;
}

}  // namespace keeper
}  // namespace rangefs
