// File: ec_rebuild.h
//
// Rebuilding one column of an erasure-coded file onto a new node, done by
// the new node's agent (RebuildEcColumn, proto/node_agent.proto;
// storage_node/ec_rebuilder.h): the keeper names the survivors (every
// readable column, in column order, with its agent's address), the code,
// the cell size, the file's size and the cell CRCs of its ".cells"
// objects; the target agent reads the same cell of k of them per row
// (each checked by its agent against its sidecar and by the target against
// the CRCs; a failed, slow or wrong one is replaced by the next), decodes,
// checks every rebuilt cell against its CRC, and writes the column (temp
// file, then rename; a parity column gets its ".cells" object too). No
// survivor byte passes through the keeper. The layout is not touched
// (keeper.cc swaps it in).
#ifndef RANGEFS_KEEPER_EC_REBUILD_H_
#define RANGEFS_KEEPER_EC_REBUILD_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ingest/agents.h"
#include "proto/layout.pb.h"
#include "proto/node_agent.pb.h"
#include "repair/ec_cells.h"
#include "repair/ec_plan.h"

namespace rangefs {
namespace keeper {

struct RebuildOptions {
  // Pace of the rebuilt bytes written (the survivors' reads are k times
  // that); 0: only the target agent's own cap (--copy_max_bytes_per_sec).
  uint64_t bytes_per_sec = 0;
  absl::Duration call_timeout = absl::Seconds(30);   // each survivor read
  absl::Duration write_timeout = absl::Minutes(30);  // the whole column
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

// The RebuildEcColumn request for column c.column of `layout`: survivors
// are the columns not in `unusable` (nor c.column) whose node has an
// address, in column order. FAILED_PRECONDITION without cell CRCs (no
// readable ".cells" object: rebuilt cells could not be checked) or with
// fewer than k addressable survivors. Pure.
absl::StatusOr<node::RebuildEcColumnRequest> RebuildRequest(
    const v1::FileLayout& layout, const CellCrcTable& crcs,
    const EcColumnRepair& c, const std::set<int>& unusable,
    const AddressOf& address_of, const RebuildOptions& options);

// Has c.target_node's agent rebuild column c.column of `layout` as
// c.object (replacing an earlier attempt there). Errors: RebuildRequest's,
// then the agent's (DATA_LOSS naming the row when a row cannot be rebuilt
// or fails its CRC; nothing is written then).
absl::StatusOr<RebuildResult> RebuildColumn(ingest::Agents& agents,
                                            const v1::FileLayout& layout,
                                            const CellCrcTable& crcs,
                                            const EcColumnRepair& c,
                                            const std::set<int>& unusable,
                                            const RebuildOptions& options);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_EC_REBUILD_H_
