// File: data_commands.h
//
// rangefs-admin commands that talk to storage-node agents (gRPC, see
// storage_node/node_client.h) as well as to etcd:
//
//   file put LOCAL|DIR|- PATH|DIR/ [-r] [--jobs=32] [--stripe-unit=1M]
//            [--width=N] [--replicas=2] [--overwrite] [--parallel=8]
//   file get PATH|DIR LOCAL|LOCALDIR/ [--overwrite] [--jobs=8] (file_get.h)
//   file cat PATH... (file_get.h)
//   file register PATH --replica=NODE:OBJECT[,NODE:OBJECT] [--size=N]
//   fsck [DIR] [--checksums]
//
// Agents are found through NodeRecord.addresses (the next address is tried
// on UNAVAILABLE). Blocking; each command uses its own bounded thread pool
// and joins it before returning.
#ifndef RANGEFS_ADMIN_DATA_COMMANDS_H_
#define RANGEFS_ADMIN_DATA_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"

namespace rangefs {
namespace admin {

// Files put at once by `file put` of a directory (--jobs).
constexpr int kDefaultPutJobs = 32;

// Ingests a local file, every file below a local directory (recursively,
// --jobs files at once, names as bulk_put.h says; -r is accepted and
// changes nothing: a directory is always put whole), or stdin ("-",
// spooled to a temp file first). A PATH ending in "/" puts LOCAL under
// that directory with LOCAL's base name. On a terminal (and without
// --no-progress) stderr shows a progress line: files, logical bytes,
// rate, ETA. For a directory, a file that fails does not stop the others
// (after 100 failures no more are started); the result is then the first
// failure's code with each failed file and why. Each file: places stripe
// columns on live ACTIVE nodes (lb::PlaceStripes), writes every column object
// to every replica in parallel, then commits the layout with one CreateFile
// (or, with
// --overwrite, ReplaceLayout) only after every replica acknowledged. A
// write whose node fails mid-put is re-placed on another eligible node
// (ingest/ingest_writer.h; the output names each re-placement and
// any failed attempt left to rangefs-keeper's orphan collector). On any
// other failure nothing becomes visible and the objects written are deleted
// (objects on unreachable nodes are named in the error). Files smaller
// than the stripe unit get one extent. Without --replicas and --ec, each
// file below a storage policy follows it (namespace/storage_policy.h,
// ingest/follow_policy.h); the result names the policy's directory.
// Codes: INVALID_ARGUMENT (usage),
// NOT_FOUND (local file), ALREADY_EXISTS (PATH exists, no --overwrite),
// FAILED_PRECONDITION (too few eligible nodes), agent/etcd errors as is.
absl::StatusOr<Table> RunFilePut(Context& ctx, Args& args);

// Records objects that already sit on nodes as PATH (one extent), after
// checking with StatObject that every replica exists with the same size
// (and --size when given). DATA_LOSS on a size mismatch: nothing written.
absl::StatusOr<Table> RunFileRegister(Context& ctx, Args& args);

// One problem found by fsck.
struct FsckFinding {
  std::string path;    // Logical file.
  std::string node;    // Node id.
  std::string object;  // Object on that node.
  std::string problem;
};

struct FsckReport {
  size_t files = 0;
  size_t objects_checked = 0;
  std::vector<FsckFinding> findings;  // Sorted by path, node, object.
  // Not problems: what was left unchecked, e.g. "PATH: erasure-coded 6+3:
  // cells and parity not checked (--checksums checks them)".
  std::vector<std::string> notes;
  // Erasure-coded files with a row of fewer than k good cells.
  std::vector<std::string> data_loss;
};

// Checks every file under `dir`: each extent / stripe column object on
// each replica exists and is long enough (StatObject); with `checksums`,
// recomputes its block checksums on the agent and compares them to the
// sidecar (ChecksumObject), and reads every row of each erasure-coded
// file: each cell against the ".cells" CRCs, the parity against the codec
// (ec_fsck.h). Errors only for namespace failures.
absl::StatusOr<FsckReport> CheckFiles(Context& ctx, const std::string& dir,
                                      bool checksums, int parallel);

// `fsck [DIR] [--checksums] [--parallel=N]`: the table of findings. With
// findings the result is FAILED_PRECONDITION (exit code 4) whose message
// holds the table; DATA_LOSS (exit code 1) when an erasure-coded file has
// a row with fewer than k good cells (the finding names the rows). Replicas
// found corrupt, short or missing are recorded for rangefs-keeper (keys.h
// KeeperSuspect), which repairs them in place.
absl::StatusOr<Table> RunFsck(Context& ctx, Args& args);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_DATA_COMMANDS_H_
