// File: ec_cells.h
//
// The cells of an erasure-coded file (proto/layout.proto, StripedLayout
// .erasure) as fsck and the keeper see them: read a row's cells through an
// ObjectReader (the caller's agents), check each against the cell CRCs of
// the parity columns' ".cells" objects and the parity against the codec,
// and rebuild a lost cell from k survivors, verified against its CRC
// before anyone uses it. No I/O of its own (the reader does it), so the
// checks are unit-tested over objects in memory.
//
//   ObjectReader read = [&](node, object, offset, dst) { ... ReadRange ... };
//   CellCrcTable crcs = ReadCellCrcs(read, layout);
//   RowHealth h = CheckRow(*codec, g, row, ReadRow(read, layout, row), crcs);
//   absl::StatusOr<std::string> cell =
//       RebuildCell(read, *codec, layout, crcs, row, /*t=*/2, {/*lost*/ 2});
//
// Cells are numbered t = 0..k-1 (data columns) then k..k+m-1 (parity), as
// targets are. Thread-safe if the reader is.
#ifndef RANGEFS_REPAIR_EC_CELLS_H_
#define RANGEFS_REPAIR_EC_CELLS_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "ec/codec.h"
#include "namespace/ec_layout.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace keeper {

// Reads up to dst.size() bytes of `object` on `node` at `offset` into dst;
// returns how many (short only at the object's end). NOT_FOUND for a
// missing object; other errors as the agent or transport says.
using ObjectReader = std::function<absl::StatusOr<size_t>(
    const std::string& node, const std::string& object, uint64_t offset,
    absl::Span<char> dst)>;

// Bytes cell (row, t) holds on disk: a data cell's file bytes (0..cell),
// a parity cell's full cell.
uint64_t CellStoredBytes(const ns::EcGeometry& g, uint64_t row, int t);

// The cell CRCs of a coded file, from its m ".cells" objects: the content
// most of them agree on (ties: the lowest parity column).
struct CellCrcTable {
  std::vector<uint32_t> crcs;  // rows * (k + m); empty: none readable
  // For each parity column j: "" when its ".cells" object agrees, else why
  // not (unreadable, wrong size, differs from the others).
  std::vector<std::string> problems;
  int k = 0, m = 0;
  bool empty() const { return crcs.empty(); }
  uint32_t At(uint64_t row, int t) const {
    return crcs[row * static_cast<uint64_t>(k + m) + static_cast<uint64_t>(t)];
  }
};
// Parity columns t in `skip` (k <= t < k + m) are not read (a dead node).
CellCrcTable ReadCellCrcs(const ObjectReader& read,
                          const v1::FileLayout& layout,
                          const std::set<int>& skip = {});

// The cell CRC table computed afresh, for a file whose ".cells" objects
// are all lost (e.g. M = 1 and its parity column gone): every row's k data
// cells are read (none of them may be in `unusable`: FAILED_PRECONDITION),
// their CRCs taken as read (the reader should have the agents verify their
// sidecars) and the parity re-encoded for its CRCs. Reads k x the file's
// data; the reader's errors pass through.
absl::StatusOr<CellCrcTable> ComputeCellCrcs(const ObjectReader& read,
                                             const ec::Codec& codec,
                                             const v1::FileLayout& layout,
                                             const std::set<int>& unusable);

// The ".cells" object bytes of `table` (its inverse; table not empty).
std::string CellsObjectBytes(const CellCrcTable& table);

// One row's cells as read: cells[t] holds cell bytes (CellStoredBytes of
// them stored, zero-padded to a full cell for coding), or nullopt with
// errors[t] saying why it could not be read.
struct RowCells {
  std::vector<absl::optional<std::string>> cells;
  std::vector<absl::Status> errors;
};
// Reads the k + m cells of `row` (those in `skip` are not read: absent).
RowCells ReadRow(const ObjectReader& read, const v1::FileLayout& layout,
                 uint64_t row, const std::set<int>& skip = {});

// The health of one row.
struct RowHealth {
  std::vector<int> lost;         // unreadable (missing object, short, error)
  std::vector<int> corrupt;      // read, but not the bytes the row needs
  std::vector<std::string> why;  // per cell t: "" or what is wrong
  int survivors = 0;             // k + m - lost - corrupt
};
// Checks each read cell against `crcs` (when not empty) and, when every
// data cell is good, the parity cells against the codec's re-encoding.
RowHealth CheckRow(const ec::Codec& codec, const ns::EcGeometry& g,
                   uint64_t row, const RowCells& cells,
                   const CellCrcTable& crcs);

// Rebuilds the stored bytes of cell (row, t) from k other cells of the
// row, never those in `unusable` (t itself is never read). k survivors
// are read at once (one thread each; the reader must be thread-safe),
// checked against `crcs` (a corrupt or unreadable one is replaced by the
// next column), decoded, and the result is checked against the
// CRC of cell t. DATA_LOSS when fewer than k good survivors remain or the
// rebuilt bytes fail their CRC. `bytes_read` (may be null) counts the
// survivor bytes read.
absl::StatusOr<std::string> RebuildCell(const ObjectReader& read,
                                        const ec::Codec& codec,
                                        const v1::FileLayout& layout,
                                        const CellCrcTable& crcs, uint64_t row,
                                        int t, const std::set<int>& unusable,
                                        uint64_t* bytes_read = nullptr);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_REPAIR_EC_CELLS_H_
