#include "keeper/ec_rebuild.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace keeper {

ObjectReader AgentReader(ingest::Agents& agents, absl::Duration call_timeout) {
  return [&agents, call_timeout](
             const std::string& node, const std::string& object,
             uint64_t offset, absl::Span<char> dst) -> absl::StatusOr<size_t> {
    absl::StatusOr<size_t> r = absl::UnavailableError("not asked");
    absl::Status s = agents.Call(node, [&](node::NodeClient& c) {
      r = c.ReadRange(
          object, offset, dst,
          {.deadline = absl::Now() + call_timeout, .verify_on_server = true});
      return r.status();
    });
    if (!s.ok()) return s;
    return r;
  };
}

absl::StatusOr<node::RebuildEcColumnRequest> RebuildRequest(
    const v1::FileLayout& layout, const CellCrcTable& crcs,
    const EcColumnRepair& c, const std::set<int>& unusable,
    const AddressOf& address_of, const RebuildOptions& options) {
  if (crcs.empty()) {
    return absl::FailedPreconditionError(
        "no readable .cells object: rebuilt cells could not be checked");
  }
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  node::RebuildEcColumnRequest req;
  req.set_path(c.object);
  req.set_k(g.k);
  req.set_m(g.m);
  req.set_column(c.column);
  req.set_cell_size(g.cell);
  req.set_file_size(g.size);
  // The target holds no column of this file; an object of that name there
  // is a leftover (an earlier attempt) of the same bytes.
  req.set_overwrite(true);
  req.set_max_bytes_per_sec(options.bytes_per_sec);
  req.set_survivor_timeout_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(options.call_timeout)));
  for (int t = 0; t < g.k + g.m; ++t) {
    if (t == c.column || unusable.count(t) > 0) continue;
    const v1::Replica& r = layout.striped().targets(t).replicas(0);
    const std::string address = address_of(r.node_id());
    if (address.empty()) continue;
    node::EcSurvivor* s = req.add_survivors();
    s->set_column(t);
    s->set_address(address);
    s->set_path(r.object());
    s->set_object_offset(r.object_offset());
  }
  if (req.survivors_size() < g.k) {
    return absl::FailedPreconditionError(
        absl::StrCat("only ", req.survivors_size(),
                     " readable column(s) with an agent "
                     "address, ",
                     g.k, " needed"));
  }
  req.mutable_cell_crc32c()->Add(crcs.crcs.begin(), crcs.crcs.end());
  return req;
}

absl::StatusOr<RebuildResult> RebuildColumn(ingest::Agents& agents,
                                            const v1::FileLayout& layout,
                                            const CellCrcTable& crcs,
                                            const EcColumnRepair& c,
                                            const std::set<int>& unusable,
                                            const RebuildOptions& options) {
  auto address_of = [&agents](const std::string& node) -> std::string {
    const v1::NodeRecord* r = agents.Find(node);
    return r == nullptr || r->addresses().empty() ? "" : r->addresses(0);
  };
  RANGEFS_ASSIGN_OR_RETURN(
      node::RebuildEcColumnRequest req,
      RebuildRequest(layout, crcs, c, unusable, address_of, options));
  absl::StatusOr<node::RebuildEcColumnResponse> r =
      absl::UnavailableError("not asked");
  RANGEFS_RETURN_IF_ERROR(agents.Call(c.target_node, [&](node::NodeClient& nc) {
    r = nc.RebuildEcColumn(req, absl::Now() + options.write_timeout);
    return r.status();
  }));
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  if (r->size() != c.bytes) {
    return absl::InternalError(absl::StrCat("rebuilt ", c.object, " on ",
                                            c.target_node, ": ", r->size(),
                                            " bytes, not ", c.bytes));
  }
  if (c.column >= g.k && r->cells_size() != ns::EcCellsBytes(g)) {
    return absl::InternalError(absl::StrCat(
        "rebuilt ", ns::EcCellsObject(c.object), " on ", c.target_node, ": ",
        r->cells_size(), " bytes, not ", ns::EcCellsBytes(g)));
  }
  return RebuildResult{.bytes_written = r->size() + r->cells_size(),
                       .bytes_read = r->bytes_read()};
}

}  // namespace keeper
}  // namespace rangefs
