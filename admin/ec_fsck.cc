#include "admin/ec_fsck.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ec/codec.h"
#include "namespace/ec_layout.h"
#include "repair/ec_cells.h"

namespace rangefs {
namespace admin {
namespace {

// At most this many rows are named in one finding.
constexpr size_t kRowsNamed = 8;

std::string RowList(const std::vector<uint64_t>& rows) {
  std::vector<uint64_t> shown(rows.begin(),
                              rows.begin() + std::min(rows.size(), kRowsNamed));
  std::string s = absl::StrJoin(shown, ",");
  if (rows.size() > kRowsNamed) {
    absl::StrAppend(&s, " and ", rows.size() - kRowsNamed, " more");
  }
  return s;
}

// What is wrong with one column's cells: rows per reason.
using ColumnProblems = std::map<std::string, std::vector<uint64_t>>;

}  // namespace

EcFileCheck CheckCodedFile(ingest::Agents& agents, const ns::FileEntry& f,
                           absl::Duration call_timeout) {
  const v1::FileLayout& l = f.layout;
  const ns::EcGeometry g = ns::EcGeometryOf(l);
  const int n = g.k + g.m;
  EcFileCheck out;
  const std::string code = absl::StrCat("erasure-coded ", g.k, "+", g.m);
  absl::StatusOr<std::unique_ptr<ec::Codec>> codec =
      ec::NewCodec({.k = g.k, .m = g.m});
  if (!codec.ok()) {
    out.findings.push_back(
        {f.path, "-", "-",
         absl::StrCat(code, ": no codec: ", codec.status().message())});
    return out;
  }
  keeper::ObjectReader read =
      [&](const std::string& node, const std::string& object, uint64_t offset,
          absl::Span<char> dst) -> absl::StatusOr<size_t> {
    absl::StatusOr<size_t> r = absl::UnavailableError("not asked");
    absl::Status s = agents.Call(node, [&](node::NodeClient& c) {
      r = c.ReadRange(object, offset, dst,
                      {.deadline = absl::Now() + call_timeout});
      return r.status();
    });
    if (!s.ok()) return s;
    return r;
  };
  const keeper::CellCrcTable crcs = keeper::ReadCellCrcs(read, l);
  for (int j = 0; j < g.m; ++j) {
    if (crcs.problems[j].empty()) continue;
    const v1::Replica& p = ns::ParityReplica(l, j);
    out.findings.push_back(
        {f.path, p.node_id(), ns::EcCellsObject(p.object()), crcs.problems[j]});
  }
  if (crcs.empty()) {
    out.findings.push_back(
        {f.path, "-", "-",
         absl::StrCat(code,
                      ": no readable .cells object: cells checked "
                      "against the codec only")});
  }
  std::vector<ColumnProblems> columns(static_cast<size_t>(n));
  std::vector<std::pair<int, uint64_t>> damaged;  // (good cells, row)
  for (uint64_t row = 0; row < g.rows; ++row) {
    const keeper::RowHealth h =
        keeper::CheckRow(**codec, g, row, keeper::ReadRow(read, l, row), crcs);
    if (h.survivors == n) continue;
    damaged.emplace_back(h.survivors, row);
    if (h.survivors < g.k) out.data_loss_rows.push_back(row);
    for (int t : h.corrupt) columns[t][h.why[t]].push_back(row);
    for (int t : h.lost) {
      // A missing object or an unreachable node is already a finding of
      // its own (StatObject); name other read failures here.
      if (absl::StartsWith(h.why[t], "missing: ")) continue;
      columns[t][h.why[t]].push_back(row);
    }
  }
  for (int t = 0; t < n; ++t) {
    const v1::Replica& r = l.striped().targets(t).replicas(0);
    for (const auto& [why, rows] : columns[t]) {
      // "checksum mismatch ..." first, so that fsck reports the object to
      // rangefs-keeper (ReportSuspects), which rebuilds the column.
      out.findings.push_back(
          {f.path, r.node_id(), r.object(),
           absl::StrCat(why, " (", code, " ", t < g.k ? "data" : "parity",
                        " column ", t, ", row(s) ", RowList(rows), ")")});
    }
  }
  if (damaged.empty()) return out;
  std::stable_sort(
      damaged.begin(), damaged.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> rows;
  for (size_t i = 0; i < damaged.size() && i < kRowsNamed; ++i) {
    const auto& [good, row] = damaged[i];
    rows.push_back(good < g.k ? absl::StrCat("row ", row, ": ", good, " of ", n,
                                             " cells good (unrecoverable)")
                              : absl::StrCat("row ", row, ": ", good, " of ", n,
                                             " cells good (can lose ",
                                             good - g.k, " more)"));
  }
  if (damaged.size() > kRowsNamed) {
    rows.push_back(absl::StrCat(damaged.size() - kRowsNamed, " more"));
  }
  std::string summary =
      absl::StrCat(code, ": ", damaged.size(), " of ", g.rows,
                   " row(s) with lost or corrupt cells, fewest good first: ",
                   absl::StrJoin(rows, "; "));
  if (!out.data_loss_rows.empty()) {
    summary =
        absl::StrCat("DATA_LOSS: row(s) ", RowList(out.data_loss_rows),
                     " have fewer than k=", g.k, " good cells; ", summary);
  }
  out.findings.push_back({f.path, "-", "-", summary});
  return out;
}

}  // namespace admin
}  // namespace rangefs
