// File: ec_rebuild.h
//
// Rebuilding one column of an erasure-coded file onto a new node, done by
// the new node's agent (RebuildEcColumn, proto/node_agent.proto;
// storage_node/ec_rebuilder.h): the keeper names the survivors (every
// readable column, in column order, with its agent's address), the code,
// the cell size, the file's size and, one range of rows per call, those
// rows' cell CRCs from its ".cells" objects; the target agent reads the
// same cell of k of them per row (each checked by its agent against its
// sidecar and by the target against the CRCs; a failed, slow or wrong one
// is replaced by the next), decodes, checks every rebuilt cell against its
// CRC and stages it; the call of the last range checks the whole column
// and makes it appear (rename; a parity column gets its ".cells" object
// too). Ranges keep each message small whatever the file's size. No
// survivor byte passes through the keeper. The layout is not touched
// (keeper.cc swaps it in once RebuildColumn returned OK).
#ifndef RANGEFS_KEEPER_EC_REBUILD_H_
#define RANGEFS_KEEPER_EC_REBUILD_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ingest/agents.h"
#include "namespace/ec_layout.h"
#include "proto/layout.pb.h"
#include "proto/node_agent.pb.h"
#include "repair/ec_cells.h"
#include "repair/ec_plan.h"

namespace rangefs {
namespace keeper {

// Bounds of one RebuildEcColumn call when RebuildOptions::rows_per_call
// is 0: its CRCs (1 MiB, well under the agent's 8 MiB receive limit) and
// the column bytes it rebuilds (so one call lasts minutes, not hours).
inline constexpr uint64_t kRebuildCrcsPerCall = uint64_t{1} << 18;
inline constexpr uint64_t kRebuildBytesPerCall = uint64_t{4} << 30;

struct RebuildOptions {
  // Pace of the rebuilt bytes written (the survivors' reads are k times
  // that); 0: only the target agent's own cap (--copy_max_bytes_per_sec).
  uint64_t bytes_per_sec = 0;
  absl::Duration call_timeout = absl::Seconds(30);   // each survivor read
  absl::Duration write_timeout = absl::Minutes(30);  // each range's call
  // Rows per call; 0: as many as the bounds above allow.
  uint64_t rows_per_call = 0;
};

struct RebuildResult {
  uint64_t bytes_written = 0;  // the column (and its .cells object)
  uint64_t bytes_read = 0;     // survivors' cells, read by the target agent
};

// An ObjectReader over `agents` that asks each agent to verify its
// sidecar (a corrupt survivor answers DATA_LOSS and is skipped).
ObjectReader AgentReader(ingest::Agents& agents, absl::Duration call_timeout);

// The agent address of a node id ("" if unknown).
using AddressOf = std::function<std::string(const std::string& node)>;

// The RebuildEcColumn request for column c.column of `layout`, without
// rows, CRCs or rebuild_id (RangeRequest adds them): survivors are the
// columns not in `unusable` (nor c.column) whose node has an address, in
// column order. FAILED_PRECONDITION without cell CRCs (no readable
// ".cells" object: rebuilt cells could not be checked) or with fewer than
// k addressable survivors. Pure.
absl::StatusOr<node::RebuildEcColumnRequest> RebuildRequest(
    const v1::FileLayout& layout, const CellCrcTable& crcs,
    const EcColumnRepair& c, const std::set<int>& unusable,
    const AddressOf& address_of, const RebuildOptions& options);

// Rows per call for geometry `g` (at least 1). Pure.
uint64_t RowsPerCall(const ns::EcGeometry& g, const RebuildOptions& options);

// `base` (RebuildRequest's) for rows [first_row, first_row + row_count) of
// attempt `rebuild_id`, with those rows' CRCs of `crcs`. row_count 0:
// every row from first_row on. Pure.
node::RebuildEcColumnRequest RangeRequest(node::RebuildEcColumnRequest base,
                                          const CellCrcTable& crcs,
                                          uint64_t first_row,
                                          uint64_t row_count,
                                          uint64_t rebuild_id);

// Has c.target_node's agent rebuild column c.column of `layout` as
// c.object (replacing an earlier attempt there), in ranges of
// RowsPerCall rows of one attempt (a random rebuild_id), in order; the
// last one makes the column appear. Blocks for all of them. Errors:
// RebuildRequest's, then the first failed call's (DATA_LOSS naming the row
// when a row cannot be rebuilt or fails its CRC; nothing appears then; a
// later call starts a new attempt).
absl::StatusOr<RebuildResult> RebuildColumn(ingest::Agents& agents,
                                            const v1::FileLayout& layout,
                                            const CellCrcTable& crcs,
                                            const EcColumnRepair& c,
                                            const std::set<int>& unusable,
                                            const RebuildOptions& options);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_EC_REBUILD_H_
