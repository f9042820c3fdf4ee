#include "keeper/ec_rebuild.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/random/random.h"
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
  const uint64_t table = g.rows * static_cast<uint64_t>(g.k + g.m);
  if (crcs.crcs.size() != table) {
    return absl::FailedPreconditionError(
        absl::StrCat("cell CRC table of ", crcs.crcs.size(), " entries; ",
                     g.rows, " rows of ", g.k + g.m, " cells need ", table));
  }
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
  return req;
}

uint64_t RowsPerCall(const ns::EcGeometry& g, const RebuildOptions& options) {
  if (options.rows_per_call > 0) return options.rows_per_call;
  const uint64_t by_crcs =
      kRebuildCrcsPerCall / static_cast<uint64_t>(g.k + g.m);
  const uint64_t by_bytes =
      kRebuildBytesPerCall / std::max<uint64_t>(g.cell, 1);
  return std::max<uint64_t>(1, std::min(by_crcs, by_bytes));
}

node::RebuildEcColumnRequest RangeRequest(node::RebuildEcColumnRequest base,
                                          const CellCrcTable& crcs,
                                          uint64_t first_row,
                                          uint64_t row_count,
                                          uint64_t rebuild_id) {
  const uint64_t n = static_cast<uint64_t>(base.k() + base.m());
  const uint64_t rows = n == 0 ? 0 : crcs.crcs.size() / n;
  const uint64_t end =
      row_count == 0 ? rows : std::min(rows, first_row + row_count);
  base.set_first_row(first_row);
  if (row_count > 0) base.set_row_count(row_count);
  base.set_rebuild_id(rebuild_id);
  if (first_row < end) {
    base.mutable_cell_crc32c()->Add(crcs.crcs.begin() + first_row * n,
                                    crcs.crcs.begin() + end * n);
  }
  return base;
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
      node::RebuildEcColumnRequest base,
      RebuildRequest(layout, crcs, c, unusable, address_of, options));
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  const uint64_t per_call = RowsPerCall(g, options);
  absl::BitGen bitgen;
  const uint64_t id = absl::Uniform<uint64_t>(
      absl::IntervalClosed, bitgen, 1, std::numeric_limits<uint64_t>::max());
  node::RebuildEcColumnResponse last;
  uint64_t bytes_read = 0;
  uint64_t first = 0;
  do {
    const uint64_t count = std::min(per_call, g.rows - first);
    const node::RebuildEcColumnRequest req =
        RangeRequest(base, crcs, first, count, id);
    absl::StatusOr<node::RebuildEcColumnResponse> r =
        absl::UnavailableError("not asked");
    RANGEFS_RETURN_IF_ERROR(
        agents.Call(c.target_node, [&](node::NodeClient& nc) {
          r = nc.RebuildEcColumn(req, absl::Now() + options.write_timeout);
          return r.status();
        }));
    bytes_read += r->bytes_read();
    last = *std::move(r);
    first += count;
  } while (first < g.rows);
  if (!last.committed() || last.size() != c.bytes) {
    return absl::InternalError(
        absl::StrCat("rebuilt ", c.object, " on ", c.target_node, ": ",
                     last.committed() ? "" : "not committed, ", last.size(),
                     " bytes, not ", c.bytes));
  }
  if (c.column >= g.k && last.cells_size() != ns::EcCellsBytes(g)) {
    return absl::InternalError(absl::StrCat(
        "rebuilt ", ns::EcCellsObject(c.object), " on ", c.target_node, ": ",
        last.cells_size(), " bytes, not ", ns::EcCellsBytes(g)));
  }
  return RebuildResult{.bytes_written = last.size() + last.cells_size(),
                       .bytes_read = bytes_read};
}

}  // namespace keeper
}  // namespace rangefs
