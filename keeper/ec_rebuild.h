// File: ec_rebuild.h
//
// Rebuilding one column of an erasure-coded file onto a new node, done by
// the keeper process: row by row, the same cell of k readable columns is
// read through the agents (each checked by its agent against its sidecar
// and here against the ".cells" CRCs; a bad one is replaced by another
// column), decoded (ec::Codec), the rebuilt cell checked against its own
// CRC (the next row is rebuilt while one is written), and streamed into the
// column's object on the target agent (WriteObject: temp file, then rename;
// nothing partial is ever visible). A parity column gets its ".cells" object
// too. Reads k x the column's bytes. The layout is not touched (keeper.cc swaps
// it in).
#ifndef RANGEFS_KEEPER_EC_REBUILD_H_
#define RANGEFS_KEEPER_EC_REBUILD_H_

#include <cstdint>
#include <set>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ec/codec.h"
#include "ingest/agents.h"
#include "proto/layout.pb.h"
#include "repair/ec_cells.h"
#include "repair/ec_plan.h"

namespace rangefs {
namespace keeper {

struct RebuildOptions {
  // Pace of the rebuilt bytes written (the survivors' reads are k times
  // that); 0: unpaced.
  uint64_t bytes_per_sec = 0;
  absl::Duration call_timeout = absl::Seconds(30);   // each survivor read
  absl::Duration write_timeout = absl::Minutes(30);  // the whole column
};

struct RebuildResult {
  uint64_t bytes_written = 0;  // the column (and its .cells object)
  uint64_t bytes_read = 0;     // survivors' cells
};

// An ObjectReader over `agents` that asks each agent to verify its
// sidecar (a corrupt survivor answers DATA_LOSS and is skipped).
ObjectReader AgentReader(ingest::Agents& agents, absl::Duration call_timeout);

// Rebuilds column `c.column` of `layout` from readable columns (never
// those in `unusable`) and writes it as c.object on c.target_node
// (replacing an earlier attempt there). FAILED_PRECONDITION without cell
// CRCs (no readable ".cells" object: rebuilt bytes could not be checked);
// DATA_LOSS when a row cannot be rebuilt; agent errors as is.
absl::StatusOr<RebuildResult> RebuildColumn(ingest::Agents& agents,
                                            const ec::Codec& codec,
                                            const v1::FileLayout& layout,
                                            const CellCrcTable& crcs,
                                            const EcColumnRepair& c,
                                            const std::set<int>& unusable,
                                            const RebuildOptions& options);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_EC_REBUILD_H_
