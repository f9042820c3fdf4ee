#include "namespace/ec_layout.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "namespace/layout.h"

namespace rangefs {
namespace ns {

bool IsErasureCoded(const v1::FileLayout& layout) {
  return layout.has_striped() && layout.striped().has_erasure();
}

bool IsReady(const v1::FileLayout& layout) {
  return layout.state() == v1::READY || layout.state() == v1::READY_EC;
}

int DataColumnCount(const v1::StripedLayout& striped) {
  if (striped.has_erasure()) {
    return static_cast<int>(striped.erasure().data_columns());
  }
  return striped.targets_size();
}

EcGeometry EcGeometryOf(const v1::FileLayout& layout) {
  EcGeometry g;
  if (!IsErasureCoded(layout)) return g;
  const v1::StripedLayout& s = layout.striped();
  g.k = static_cast<int>(s.erasure().data_columns());
  g.m = static_cast<int>(s.erasure().parity_columns());
  g.cell = s.stripe_unit();
  g.size = layout.size();
  const uint64_t row_bytes = g.cell * static_cast<uint64_t>(g.k);
  g.rows = row_bytes == 0 ? 0 : (g.size + row_bytes - 1) / row_bytes;
  return g;
}

CellAddress LocateCell(const EcGeometry& g, uint64_t offset) {
  const uint64_t unit = offset / g.cell;
  CellAddress a;
  a.row = unit / static_cast<uint64_t>(g.k);
  a.column = static_cast<int>(unit % static_cast<uint64_t>(g.k));
  a.offset_in_cell = offset % g.cell;
  return a;
}

uint64_t DataCellBytes(const EcGeometry& g, uint64_t row, int column) {
  const uint64_t start =
      (row * static_cast<uint64_t>(g.k) + static_cast<uint64_t>(column)) *
      g.cell;
  if (start >= g.size) return 0;
  return std::min(g.cell, g.size - start);
}

uint64_t EcColumnBytes(const EcGeometry& g, int t) {
  if (t >= g.k) return g.rows * g.cell;
  if (g.rows == 0) return 0;
  // Every row but the last holds a full cell of each data column.
  return (g.rows - 1) * g.cell + DataCellBytes(g, g.rows - 1, t);
}

const v1::Replica& ParityReplica(const v1::FileLayout& layout, int j) {
  const int k = static_cast<int>(layout.striped().erasure().data_columns());
  return layout.striped().targets(k + j).replicas(0);
}

const v1::Replica& DataReplica(const v1::FileLayout& layout, int c) {
  return layout.striped().targets(c).replicas(0);
}

uint64_t CellObjectOffset(const v1::Replica& r, const EcGeometry& g,
                          uint64_t row) {
  return r.object_offset() + row * g.cell;
}

std::string EcCellsObject(absl::string_view parity_object) {
  return absl::StrCat(parity_object, kEcCellsSuffix);
}

uint64_t EcCellsOffset(const EcGeometry& g, uint64_t row) {
  return row * static_cast<uint64_t>(g.k + g.m) * kEcCellCrcBytes;
}

uint64_t EcCellsBytes(const EcGeometry& g) { return EcCellsOffset(g, g.rows); }

absl::Status ValidateErasureCode(const v1::FileLayout& layout) {
  const bool coded = IsErasureCoded(layout);
  if (layout.state() == v1::READY_EC && !coded) {
    return absl::InvalidArgumentError(
        "layout state is ready (erasure-coded) but it has no striped layout "
        "with an erasure code");
  }
  if (!coded) return absl::OkStatus();
  const v1::StripedLayout& s = layout.striped();
  const v1::ErasureCode& e = s.erasure();
  const std::string where = absl::StrCat(
      "erasure-coded layout (", e.data_columns(), "+", e.parity_columns(), ")");
  if (layout.state() != v1::READY_EC) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": state is ", FileStateName(layout.state()),
        ", must be ready (erasure-coded) so that older binaries refuse it"));
  }
  if (e.codec() != v1::ErasureCode::RS_CAUCHY_GF8) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": codec ", e.codec(), " is unknown"));
  }
  if (e.data_columns() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": data_columns is 0 (k >= 1)"));
  }
  if (e.parity_columns() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": parity_columns is 0 (m >= 1)"));
  }
  if (uint64_t{e.data_columns()} + e.parity_columns() > kMaxEcCellsPerRow) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": k + m is above the codec's cap of ",
                     kMaxEcCellsPerRow, " cells per row"));
  }
  const int n = static_cast<int>(e.data_columns() + e.parity_columns());
  if (s.targets_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": has ", s.targets_size(), " targets, needs ", n,
                     " (data columns, then parity columns)"));
  }
  if (layout.checksum() != v1::CRC32C_SIDECAR ||
      layout.checksum_block_size() != s.stripe_unit()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": stripe_unit ", s.stripe_unit(),
        " must equal checksum_block_size ", layout.checksum_block_size(),
        " with crc32c sidecars (a cell is one checksum block)"));
  }
  std::set<absl::string_view> nodes;
  for (int t = 0; t < n; ++t) {
    const auto& reps = s.targets(t).replicas();
    if (reps.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": column ", t, " has ", reps.size(),
                       " replicas (an erasure-coded column has exactly one)"));
    }
    if (reps[0].leaving()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": column ", t,
                       " is marked leaving (no moves of coded "
                       "columns)"));
    }
    if (!nodes.insert(reps[0].node_id()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": node \"", reps[0].node_id(),
          "\" holds more than one column (k + m distinct nodes needed)"));
    }
    if (t >= static_cast<int>(e.data_columns())) {
      absl::Status cells = ValidateObjectPath(EcCellsObject(reps[0].object()));
      if (!cells.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": parity column ", t,
                         " cell checksums: ", cells.message()));
      }
    }
  }
  return absl::OkStatus();
}

std::string EncodeEcCellCrcs(absl::Span<const uint32_t> crcs) {
  std::string out;
  out.reserve(crcs.size() * kEcCellCrcBytes);
  for (const uint32_t v : crcs) {
    for (uint64_t b = 0; b < kEcCellCrcBytes; ++b) {
      out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
    }
  }
  return out;
}

}  // namespace ns
}  // namespace rangefs
