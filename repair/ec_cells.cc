#include "repair/ec_cells.h"

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crc32c.h"
#include "base/status_macros.h"

namespace rangefs {
namespace keeper {
namespace {

// Reads exactly dst.size() bytes of `object` at `offset`; DATA_LOSS if the
// object ends first.
absl::Status ReadExactly(const ObjectReader& read, const std::string& node,
                         const std::string& object, uint64_t offset,
                         absl::Span<char> dst) {
  size_t got = 0;
  while (got < dst.size()) {
    RANGEFS_ASSIGN_OR_RETURN(
        size_t n, read(node, object, offset + got, dst.subspan(got)));
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(
          "short: ", object, " on ", node, " ends at byte ", offset + got,
          ", the layout needs ", offset + dst.size()));
    }
    got += n;
  }
  return absl::OkStatus();
}

uint32_t LoadLe32(const char* p) {
  uint32_t v = 0;
  for (int b = 3; b >= 0; --b) {
    v = (v << 8) | static_cast<uint8_t>(p[b]);
  }
  return v;
}

const v1::Replica& ColumnReplica(const v1::FileLayout& layout, int t) {
  return layout.striped().targets(t).replicas(0);
}

absl::StatusOr<std::string> ReadCell(const ObjectReader& read,
                                     const v1::FileLayout& layout,
                                     const ns::EcGeometry& g, uint64_t row,
                                     int t) {
  const v1::Replica& r = ColumnReplica(layout, t);
  std::string cell(g.cell, '\0');
  const uint64_t stored = CellStoredBytes(g, row, t);
  RANGEFS_RETURN_IF_ERROR(ReadExactly(read, r.node_id(), r.object(),
                                      ns::CellObjectOffset(r, g, row),
                                      absl::MakeSpan(cell.data(), stored)));
  return cell;
}

// True if cell t's bytes as read match its recorded CRC (or none is known).
bool CrcMatches(const ns::EcGeometry& g, const CellCrcTable& crcs, uint64_t row,
                int t, const std::string& cell) {
  if (crcs.empty()) return true;
  const uint64_t stored = CellStoredBytes(g, row, t);
  return Crc32c(absl::string_view(cell.data(), stored)) == crcs.At(row, t);
}

}  // namespace

uint64_t CellStoredBytes(const ns::EcGeometry& g, uint64_t row, int t) {
  return t < g.k ? ns::DataCellBytes(g, row, t) : g.cell;
}

std::string CellsObjectBytes(const CellCrcTable& table) {
  std::string out;
  out.reserve(table.crcs.size() * ns::kEcCellCrcBytes);
  for (uint32_t v : table.crcs) {
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>(v >> (8 * b)));
  }
  return out;
}

CellCrcTable ReadCellCrcs(const ObjectReader& read,
                          const v1::FileLayout& layout,
                          const std::set<int>& skip) {
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  CellCrcTable table;
  table.k = g.k;
  table.m = g.m;
  table.problems.assign(static_cast<size_t>(g.m), "");
  std::vector<absl::optional<std::string>> objects(static_cast<size_t>(g.m));
  std::map<std::string, int> votes;  // content -> copies
  for (int j = 0; j < g.m; ++j) {
    const v1::Replica& p = ns::ParityReplica(layout, j);
    const std::string name = ns::EcCellsObject(p.object());
    if (skip.count(g.k + j) > 0) {
      table.problems[j] = "not read";
      continue;
    }
    std::string bytes(ns::EcCellsBytes(g), '\0');
    absl::Status s = ReadExactly(read, p.node_id(), name, 0,
                                 absl::MakeSpan(bytes.data(), bytes.size()));
    if (!s.ok()) {
      table.problems[j] = absl::IsNotFound(s)
                              ? absl::StrCat("missing: ", s.message())
                              : std::string(s.message());
      continue;
    }
    ++votes[bytes];
    objects[j] = std::move(bytes);
  }
  const std::string* best = nullptr;
  int best_votes = 0;
  for (int j = 0; j < g.m; ++j) {
    if (!objects[j]) continue;
    const int v = votes[*objects[j]];
    if (v > best_votes) {
      best_votes = v;
      best = &*objects[j];
    }
  }
  if (best == nullptr) return table;
  for (int j = 0; j < g.m; ++j) {
    if (objects[j] && *objects[j] != *best) {
      table.problems[j] =
          absl::StrCat("checksum mismatch: cell CRCs differ from those of ",
                       best_votes, " other parity column(s)");
    }
  }
  table.crcs.resize(best->size() / ns::kEcCellCrcBytes);
  for (size_t i = 0; i < table.crcs.size(); ++i) {
    table.crcs[i] = LoadLe32(best->data() + i * ns::kEcCellCrcBytes);
  }
  return table;
}

absl::StatusOr<CellCrcTable> ComputeCellCrcs(const ObjectReader& read,
                                             const ec::Codec& codec,
                                             const v1::FileLayout& layout,
                                             const std::set<int>& unusable) {
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  for (int c = 0; c < g.k; ++c) {
    if (unusable.count(c) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("no .cells object left and data column ", c,
                       " is unreadable: the cell CRCs cannot be recomputed"));
    }
  }
  CellCrcTable table;
  table.k = g.k;
  table.m = g.m;
  table.problems.assign(static_cast<size_t>(g.m), "recomputed");
  std::set<int> parity;
  for (int j = 0; j < g.m; ++j) parity.insert(g.k + j);
  for (uint64_t row = 0; row < g.rows; ++row) {
    RowCells cells = ReadRow(read, layout, row, parity);
    std::vector<absl::Span<const char>> data;
    for (int c = 0; c < g.k; ++c) {
      if (!cells.cells[c]) return cells.errors[c];
      const std::string& cell = *cells.cells[c];
      table.crcs.push_back(
          Crc32c(absl::string_view(cell.data(), CellStoredBytes(g, row, c))));
      data.emplace_back(cell.data(), g.cell);
    }
    std::vector<std::string> out(static_cast<size_t>(g.m),
                                 std::string(g.cell, '\0'));
    std::vector<absl::Span<char>> spans;
    for (std::string& p : out) spans.emplace_back(p.data(), p.size());
    RANGEFS_RETURN_IF_ERROR(codec.Encode(data, spans));
    for (const std::string& p : out) table.crcs.push_back(Crc32c(p));
  }
  return table;
}

RowCells ReadRow(const ObjectReader& read, const v1::FileLayout& layout,
                 uint64_t row, const std::set<int>& skip) {
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  const size_t n = static_cast<size_t>(g.k + g.m);
  RowCells out;
  out.cells.resize(n);
  out.errors.assign(n, absl::OkStatus());
  for (int t = 0; t < g.k + g.m; ++t) {
    if (skip.count(t) > 0) {
      out.errors[t] = absl::UnavailableError("not read");
      continue;
    }
    absl::StatusOr<std::string> cell = ReadCell(read, layout, g, row, t);
    if (cell.ok()) {
      out.cells[t] = *std::move(cell);
    } else {
      out.errors[t] = cell.status();
    }
  }
  return out;
}

RowHealth CheckRow(const ec::Codec& codec, const ns::EcGeometry& g,
                   uint64_t row, const RowCells& cells,
                   const CellCrcTable& crcs) {
  const int n = g.k + g.m;
  RowHealth h;
  h.why.assign(static_cast<size_t>(n), "");
  std::vector<bool> good(static_cast<size_t>(n), false);
  for (int t = 0; t < n; ++t) {
    if (!cells.cells[t]) {
      h.lost.push_back(t);
      const absl::Status& e = cells.errors[t];
      h.why[t] = absl::IsNotFound(e) ? absl::StrCat("missing: ", e.message())
                                     : std::string(e.message());
      continue;
    }
    if (!CrcMatches(g, crcs, row, t, *cells.cells[t])) {
      h.corrupt.push_back(t);
      h.why[t] =
          "checksum mismatch: the cell differs from its CRC in the .cells "
          "objects";
      continue;
    }
    good[t] = true;
  }
  bool data_good = true;
  for (int c = 0; c < g.k; ++c) data_good = data_good && good[c];
  if (data_good) {
    std::vector<absl::Span<const char>> data;
    for (int c = 0; c < g.k; ++c) {
      data.emplace_back(cells.cells[c]->data(), g.cell);
    }
    std::vector<std::string> parity(static_cast<size_t>(g.m),
                                    std::string(g.cell, '\0'));
    std::vector<absl::Span<char>> out;
    for (std::string& p : parity) out.emplace_back(p.data(), p.size());
    absl::Status s = codec.Encode(data, out);
    for (int j = 0; s.ok() && j < g.m; ++j) {
      const int t = g.k + j;
      if (good[t] && *cells.cells[t] != parity[j]) {
        good[t] = false;
        h.corrupt.push_back(t);
        h.why[t] =
            "checksum mismatch: parity differs from the parity recomputed "
            "from the row's data cells";
      }
    }
  }
  std::sort(h.corrupt.begin(), h.corrupt.end());
  h.survivors = n - static_cast<int>(h.lost.size() + h.corrupt.size());
  return h;
}

absl::StatusOr<std::string> RebuildCell(const ObjectReader& read,
                                        const ec::Codec& codec,
                                        const v1::FileLayout& layout,
                                        const CellCrcTable& crcs, uint64_t row,
                                        int t, const std::set<int>& unusable,
                                        uint64_t* bytes_read) {
  const ns::EcGeometry g = ns::EcGeometryOf(layout);
  const int n = g.k + g.m;
  std::vector<std::string> held(static_cast<size_t>(n));
  std::vector<const char*> present(static_cast<size_t>(n), nullptr);
  std::vector<std::string> skipped;
  std::vector<int> candidates;
  for (int s = 0; s < n; ++s) {
    if (s != t && unusable.count(s) == 0) candidates.push_back(s);
  }
  int have = 0;
  size_t next = 0;
  // Reads the missing number of survivors at once, then again for each
  // one that failed, until k are good or no column is left.
  while (have < g.k && next < candidates.size()) {
    const size_t batch =
        std::min(candidates.size() - next, static_cast<size_t>(g.k - have));
    std::vector<absl::StatusOr<std::string>> got(
        batch, absl::UnavailableError("not read"));
    std::vector<std::thread> threads;
    for (size_t i = 1; i < batch; ++i) {
      threads.emplace_back([&, i] {
        got[i] = ReadCell(read, layout, g, row, candidates[next + i]);
      });
    }
    got[0] = ReadCell(read, layout, g, row, candidates[next]);
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < batch; ++i) {
      const int s = candidates[next + i];
      if (bytes_read != nullptr) *bytes_read += CellStoredBytes(g, row, s);
      if (!got[i].ok()) {
        skipped.push_back(
            absl::StrCat("cell ", s, ": ", got[i].status().message()));
        continue;
      }
      if (!CrcMatches(g, crcs, row, s, *got[i])) {
        skipped.push_back(absl::StrCat("cell ", s, ": checksum mismatch"));
        continue;
      }
      held[s] = *std::move(got[i]);
      present[s] = held[s].data();
      ++have;
    }
    next += batch;
  }
  if (have < g.k) {
    return absl::DataLossError(absl::StrCat("row ", row, ": only ", have,
                                            " good cell(s) of the ", g.k,
                                            " needed to rebuild cell ", t, " (",
                                            absl::StrJoin(skipped, "; "), ")"));
  }
  std::string out(g.cell, '\0');
  char* dst = out.data();
  const int wanted[] = {t};
  RANGEFS_RETURN_IF_ERROR(
      codec.Decode(present, wanted, absl::MakeConstSpan(&dst, 1), g.cell));
  const uint64_t stored = CellStoredBytes(g, row, t);
  const bool padding_zero =
      std::all_of(out.begin() + static_cast<std::ptrdiff_t>(stored), out.end(),
                  [](char c) { return c == 0; });
  out.resize(stored);
  if (!padding_zero || (!crcs.empty() && Crc32c(out) != crcs.At(row, t))) {
    return absl::DataLossError(absl::StrCat(
        "row ", row, ": rebuilt cell ", t,
        " fails its CRC in the .cells objects (a survivor is corrupt in a way "
        "its CRC does not show)"));
  }
  return out;
}

}  // namespace keeper
}  // namespace rangefs
