// File: convert.h
//
// Carries out one storage-policy conversion (repair/convert_plan.h) of one
// file, crash-safe like the keeper's replica moves:
//
//   1. write the new objects: kEcInPlace writes the m parity columns (and
//      their ".cells" objects), coded from one replica of each data column
//      (convert_rows.h; each agent verifies its sidecar); kEcRewrite writes
//      k data + m parity columns from the file's bytes; kEcToReplicas and
//      kReplicas copy objects agent to agent (CopyObject, verified). Every
//      new object has a fresh name (or is a new replica of an existing
//      object on a node without one), is written temp-then-rename by its
//      agent and is in no layout yet: a keeper killed here leaves objects
//      that the orphan scan trashes after the grace period;
//   2. trash records for every object that leaves the layout, written
//      before the swap (a record whose object is still referenced is
//      dropped by the next round's trash collection);
//   3. one compare-and-swap of the layout on its mod revision (ABORTED:
//      re-read and re-applied; a layout that no longer places the bytes as
//      planned abandons the conversion and deletes the new objects);
//   4. the trash records get the revision that dropped their objects;
//      the objects are deleted after the grace period (readers pinned to
//      an older revision keep reading them until then).
//
// A reader sees the old layout or the new one, never a mix.
#ifndef RANGEFS_KEEPER_CONVERT_H_
#define RANGEFS_KEEPER_CONVERT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ingest/agents.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"
#include "repair/convert_plan.h"

namespace rangefs {
namespace keeper {

// What a conversion needs from the keeper's round (keeper.cc implements
// it with the same calls replica moves use). Thread-safe.
class ConvertContext {
 public:
  virtual ~ConvertContext() = default;
  // False once this keeper may no longer change anything.
  virtual bool MayAct() = 0;
  virtual ingest::Agents& agents() = 0;
  // Re-reads `path` and replaces its layout with change(entry) by a
  // compare-and-swap, again on ABORTED. NOT_FOUND: the file is gone;
  // change's errors pass through.
  virtual absl::StatusOr<ns::FileEntry> CasLayout(
      const std::string& what, const std::string& path,
      const std::function<absl::StatusOr<v1::FileLayout>(const ns::FileEntry&)>&
          change) = 0;
  // The trash record of `object` on `node` (of `path`), written before the
  // swap that drops it; UNAVAILABLE if etcd did not take it.
  virtual absl::Status TrashBeforeSwap(const std::string& path,
                                       const std::string& node,
                                       const std::string& object) = 0;
  // The same record with the revision that dropped the object.
  virtual void TrashDropped(const std::string& what, const std::string& path,
                            const std::string& node, const std::string& object,
                            int64_t revision) = 0;
  // CopyObject of `object` from source_node onto target_node at `rate`
  // bytes/s (0: the agents' own cap); false (logged) if it failed.
  virtual bool Copy(const std::string& what, const std::string& object,
                    const std::string& source_node,
                    const std::string& target_node, uint64_t rate) = 0;
  // A new object that no layout took: trashed (deleted after the grace
  // period unless a layout takes it after all).
  virtual void TrashUnused(const std::string& what, const std::string& path,
                           const std::string& node,
                           const std::string& object) = 0;
  // A new object of an abandoned conversion: deleted unless `path`'s
  // current layout references it.
  virtual void DeleteUnused(const std::string& path, const std::string& node,
                            const std::string& object) = 0;
};

struct ConvertOptions {
  // Pace of the bytes written or copied; 0: unpaced.
  uint64_t bytes_per_sec = 0;
  absl::Duration call_timeout = absl::Seconds(30);   // each read
  absl::Duration write_timeout = absl::Minutes(30);  // each object
  // Fault injection for tests: called at each step (1: the first new
  // object written, 2: all written, 3: the trash records written, the
  // swap not yet; 4: swapped, the trash records not yet dated); may be
  // empty.
  std::function<void(int step, const Conversion&)> at_step;
};

enum class ConvertOutcome { kDone, kFailed, kAbandoned };

struct ConvertResult {
  ConvertOutcome outcome = ConvertOutcome::kFailed;
  uint64_t bytes_written = 0;  // New objects' bytes (copies included).
  int64_t revision = 0;        // Of the swap, when done.
};

// Converts `c.path` as planned (see above). Logs what it does.
ConvertResult RunConversion(ConvertContext& ctx, const Conversion& c,
                            const ConvertOptions& options);

// "ec-in-place conversion of /d/f (replicas=2 -> ec=6+3)", for the logs.
std::string DescribeConversion(const Conversion& c);

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_CONVERT_H_
