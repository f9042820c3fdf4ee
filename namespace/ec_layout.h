// File: ec_layout.h
//
// Addressing inside an erasure-coded striped layout (proto/layout.proto,
// StripedLayout.erasure): which row, data column and cell offset a file
// byte lives at, which bytes each cell holds, and where the parity cells
// and the cell checksums ("<parity object>.cells") of a row are. Pure
// functions over a layout that passed ValidateLayout; no I/O; thread-safe.
//
//   EcGeometry g = EcGeometryOf(layout);           // k, m, cell, rows
//   CellAddress a = LocateCell(g, file_offset);    // row, column, in-cell
//   const v1::Replica& p = ParityReplica(layout, 0);
//   uint64_t at = CellObjectOffset(p, g, a.row);   // parity cell of row
//   std::string crcs = EcCellsObject(p.object());  // k + m CRCs per row
#ifndef RANGEFS_NAMESPACE_EC_LAYOUT_H_
#define RANGEFS_NAMESPACE_EC_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

namespace v1 = ::rangefs::v1;

// Cap on k + m in a layout: the codec's (ec::kMaxCellsPerRow, ec/codec.h;
// ingest checks at compile time that they agree).
inline constexpr int kMaxEcCellsPerRow = 32;
// Bytes of cell checksums per row and column in a ".cells" object.
inline constexpr uint64_t kEcCellCrcBytes = 4;
// Suffix of a parity column's cell-checksum object.
inline constexpr absl::string_view kEcCellsSuffix = ".cells";

// The shape of an erasure-coded file.
struct EcGeometry {
  int k = 0;          // data columns
  int m = 0;          // parity columns
  uint64_t cell = 0;  // bytes per cell (the stripe unit)
  uint64_t size = 0;  // logical file bytes
  uint64_t rows = 0;  // ceil(size / (k * cell))
};

// Where file byte `offset` lives.
struct CellAddress {
  uint64_t row = 0;
  int column = 0;               // data column, in [0, k)
  uint64_t offset_in_cell = 0;  // in [0, cell)
};

// True if the layout is striped with an erasure code.
bool IsErasureCoded(const v1::FileLayout& layout);

// The state a readable layout is in: READY, or READY_EC when erasure-coded.
bool IsReady(const v1::FileLayout& layout);

// Columns that hold file bytes: k when erasure-coded, else every target.
int DataColumnCount(const v1::StripedLayout& striped);

// The geometry of an erasure-coded layout (k = m = 0 when not).
EcGeometry EcGeometryOf(const v1::FileLayout& layout);

// The row, data column and offset in the cell of file byte `offset`.
CellAddress LocateCell(const EcGeometry& g, uint64_t offset);

// Bytes data cell (row, column) holds: cell for a full cell, fewer for the
// last unit of the file, 0 for a cell past the end (the partial last row).
uint64_t DataCellBytes(const EcGeometry& g, uint64_t row, int column);

// Bytes stored in column t's object (data columns: their file bytes;
// parity columns: rows * cell).
uint64_t EcColumnBytes(const EcGeometry& g, int t);

// Replica of parity column j (in [0, m)), i.e. targets[k + j].
const v1::Replica& ParityReplica(const v1::FileLayout& layout, int j);
// Replica of data column c (in [0, k)), i.e. targets[c].
const v1::Replica& DataReplica(const v1::FileLayout& layout, int c);

// Offset in replica r's object of row `row`'s cell (data or parity).
uint64_t CellObjectOffset(const v1::Replica& r, const EcGeometry& g,
                          uint64_t row);

// The cell-checksum object of parity object `parity_object`.
std::string EcCellsObject(absl::string_view parity_object);

// The bytes of a ".cells" object: each CRC32C of `crcs` (row-major, k + m
// per row) as kEcCellCrcBytes little-endian bytes.
std::string EncodeEcCellCrcs(absl::Span<const uint32_t> crcs);
// Offset of row `row`'s k + m CRCs in a ".cells" object; its total size.
uint64_t EcCellsOffset(const EcGeometry& g, uint64_t row);
uint64_t EcCellsBytes(const EcGeometry& g);

// The erasure-code rules of ValidateLayout (which calls this):
// a known codec, k >= 1, m >= 1, k + m <= kMaxEcCellsPerRow, k + m targets of
// exactly one replica on k + m distinct nodes, stripe_unit ==
// checksum_block_size with CRC32C sidecars, state READY_EC, valid ".cells"
// object names. INVALID_ARGUMENT naming the rule. OK for a layout without an
// erasure code unless its state is READY_EC.
absl::Status ValidateErasureCode(const v1::FileLayout& layout);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_EC_LAYOUT_H_
