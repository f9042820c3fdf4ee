// File: ec_rebuilder.h
//
// The agent's side of RebuildEcColumn (proto/node_agent.proto): rebuilds
// one column of an erasure-coded file into this export from k survivor
// columns on peer agents, verified end to end, one range of rows per call.
// Row by row, the same cell of k survivors is read (verify=true: each peer
// checks its sidecar; each chunk's CRC-32C is checked on arrival; the cell
// is checked against the request's cell CRC table), a failed, slow or
// wrong survivor is replaced by the next one named, the lost cell is
// decoded (ec/codec.h, ISA-L), checked against its expected CRC-32C and
// written at its offset into the column's staging object (ec_staging.h).
// The call whose range ends the column checks the whole staging object
// and renames it into place with its sidecar; a parity column also gets
// its ".cells" object. Nothing appears unless every row passed.
//
//   EcRebuilder rebuilder(root, {.peer_tls = tls, .limiter = &node_limiter});
//   RANGEFS_ASSIGN_OR_RETURN(EcRebuildResult r, rebuilder.Rebuild(
//       request, deadline, [&] { return context->IsCancelled(); }));
//
// Every field of the request is untrusted (ValidateRebuildRequest). The
// survivors' addresses come from the caller (a writer, see
// write_access.h) and are dialled with the agent's peer credentials.
// Thread-safe; peer clients are cached per address; calls on one path
// run one at a time (another answers ABORTED). Owns one thread, the
// sweep of idle staging objects (EcRebuilderOptions::staging_idle).
#ifndef RANGEFS_STORAGE_NODE_EC_REBUILDER_H_
#define RANGEFS_STORAGE_NODE_EC_REBUILDER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "ec/codec.h"
#include "proto/node_agent.pb.h"
#include "storage_node/ec_staging.h"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "storage_node/periodic_task.h"
#include "storage_node/rate_limiter.h"
#include "storage_node/tls_client.h"

namespace rangefs {
namespace node {

// Caps on a request's sizes (the proto states them too).
inline constexpr int kMaxEcRebuildCrcs = 1 << 20;  // cell_crc32c per call
inline constexpr size_t kMaxEcSurvivorAddress = 255;
inline constexpr uint64_t kMaxEcRebuildFileSize = uint64_t{1} << 56;

// OK if `request` is within the bounds node_agent.proto states for
// RebuildEcColumnRequest; else INVALID_ARGUMENT naming the field (and the
// survivor's index). Pure.
absl::Status ValidateRebuildRequest(const RebuildEcColumnRequest& request);

struct EcRebuilderOptions {
  NodeClientTlsOptions peer_tls;   // How to dial peers; default plaintext.
  RateLimiter* limiter = nullptr;  // Node-wide cap shared with copies; not
                                   // owned; may be null (no cap).
  Clock* clock = nullptr;          // Not owned; nullptr: the real clock.
  // Called with each rebuilt cell's byte count once written (counters).
  std::function<void(uint64_t)> on_bytes;
  // A staging object (ec_staging.h) not written for this long, by
  // `clock`'s wall time, belongs to a rebuild its caller abandoned (the
  // keeper died, picked another target, the file went away): a background
  // sweep removes it, every StagingSweepInterval(staging_idle). Zero: no
  // sweep (the agent's start still empties the temp dir).
  absl::Duration staging_idle = absl::Hours(1);
  // Called with the bytes each sweep freed (counters).
  std::function<void(uint64_t)> on_swept_bytes;
};

// How often the sweep of staging objects idle for `idle` runs: a quarter
// of it, within [1 s, 10 min], so that a staging object goes at most that
// long after it turned idle. Pure.
absl::Duration StagingSweepInterval(absl::Duration idle);

// What one sweep removed.
struct EcStagingSweep {
  uint64_t objects = 0;  // staging objects (each with its record)
  uint64_t bytes = 0;    // on disk, both files
};

struct EcRebuildResult {
  bool committed = false;   // the range ended the column, now in place
  uint64_t size = 0;        // the column's object (committed)
  uint32_t crc32c = 0;      // of the whole object (committed)
  uint64_t cells_size = 0;  // the ".cells" object (committed parity)
  uint64_t bytes_read = 0;  // survivor bytes read by this call
};

class EcRebuilder {
 public:
  // `root` is not owned and must outlive the rebuilder.
  // Starts the sweep when `root` is writable and options.staging_idle > 0.
  EcRebuilder(const ExportRoot* root, EcRebuilderOptions options);
  EcRebuilder(const EcRebuilder&) = delete;
  EcRebuilder& operator=(const EcRebuilder&) = delete;
  // Stops the sweep (waits for a run in progress).
  ~EcRebuilder();

  // Rebuilds the request's rows as the file comment says. `deadline` is
  // wall time; `cancelled` is polled between rows (CANCELLED). Errors: see
  // RebuildEcColumn in node_agent.proto.
  absl::StatusOr<EcRebuildResult> Rebuild(
      const RebuildEcColumnRequest& request, absl::Time deadline,
      const std::function<bool()>& cancelled);

  // Removes the staging objects last written before clock's now minus
  // `idle`, except that of a call running now. A call on the same path
  // that arrives meanwhile waits for the removal, then starts a fresh
  // staging object (its final range then answers FAILED_PRECONDITION
  // naming the first row it lacks, as after a restart). A file that
  // cannot be removed is logged and skipped. Errors: listing the temp dir.
  // Blocking; the background sweep calls it with options.staging_idle.
  absl::StatusOr<EcStagingSweep> SweepIdleStaging(absl::Duration idle);

 private:
  absl::StatusOr<NodeClient*> Peer(const std::string& address);
  // Rebuild without the one-call-per-path guard.
  absl::StatusOr<EcRebuildResult> RebuildRange(
      const RebuildEcColumnRequest& request, absl::Time deadline,
      const std::function<bool()>& cancelled);
  // The request's rows into `staging`, then the commit when they end the
  // column.
  absl::StatusOr<EcRebuildResult> RebuildInto(
      EcStaging& staging, const RebuildEcColumnRequest& request,
      const ec::Codec& codec, absl::Time deadline,
      const std::function<bool()>& cancelled);

  const ExportRoot* const root_;
  const EcRebuilderOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<NodeClient>> peers_
      ABSL_GUARDED_BY(mu_);
  std::set<std::string> busy_ ABSL_GUARDED_BY(mu_);  // staging names
  // Staging names a sweep is removing; calls on them wait.
  std::set<std::string> sweeping_ ABSL_GUARDED_BY(mu_);
  // Last: stopped (joined) first. Null without a sweep.
  std::unique_ptr<PeriodicTask> sweeper_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_EC_REBUILDER_H_
