// File: scrubber.h
//
// Scrubbing: re-reading every object of an export and checking it against
// its checksum sidecar, to find bit rot before a client does.
//
//   ScrubReport r = ScrubExport(*root, {.max_bytes_per_sec = 200 << 20});
//   for (const auto& p : r.corrupt_paths) ...
//
// BackgroundScrubber runs ScrubExport periodically on its own thread; its
// latest findings (LastReport) are meant for the node's live record.
#ifndef RANGEFS_STORAGE_NODE_SCRUBBER_H_
#define RANGEFS_STORAGE_NODE_SCRUBBER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "storage_node/export_root.h"

namespace rangefs {
namespace node {

struct ScrubReport {
  absl::Time started;
  absl::Time finished;
  uint64_t objects_checked = 0;  // Objects with a sidecar that were read.
  uint64_t bytes_checked = 0;
  uint64_t objects_without_checksums = 0;
  // Objects whose data, size or sidecar does not match, sorted.
  std::vector<std::string> corrupt_paths;
  bool cancelled = false;  // Stopped before the end; counts are partial.
};

struct ScrubOptions {
  uint64_t max_bytes_per_sec = 0;  // 0: unlimited.
  Clock* clock = nullptr;          // Not owned; nullptr: Clock::Real().
  // Polled between blocks; returning true stops the scrub. May be empty.
  std::function<bool()> cancelled;
};

// Checks one object against its sidecar, reading it block by block.
// OK: matches. DATA_LOSS: mismatch (message names the path and block).
// NOT_FOUND: the object or its sidecar is missing. Adds the bytes read to
// *bytes_read (may be null). Blocking.
absl::Status VerifyObject(const ExportRoot& root, const std::string& path,
                          uint64_t* bytes_read);

// Verifies every object of `root`, at most options.max_bytes_per_sec.
// Blocking; thread-safe with respect to `root`.
ScrubReport ScrubExport(const ExportRoot& root, const ScrubOptions& options);

// Runs ScrubExport every `interval` on one thread. Thread-safe.
class BackgroundScrubber {
 public:
  struct Options {
    absl::Duration interval = absl::Hours(24);  // Between pass starts.
    uint64_t max_bytes_per_sec = 50 << 20;
    Clock* clock = nullptr;  // For rate limiting only; not owned.
  };
  // Starts the thread; the first pass starts at once. `root` is not owned
  // and must outlive the scrubber.
  BackgroundScrubber(const ExportRoot* root, Options options);
  BackgroundScrubber(const BackgroundScrubber&) = delete;
  BackgroundScrubber& operator=(const BackgroundScrubber&) = delete;
  // Stops the current pass at the next block and joins the thread.
  ~BackgroundScrubber();

  // The report of the last finished pass; nullopt before the first one.
  std::optional<ScrubReport> LastReport() const;
  // Number of finished passes.
  int passes() const;

 private:
  void Run();

  const ExportRoot* const root_;
  const Options options_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<ScrubReport> last_ ABSL_GUARDED_BY(mu_);
  int passes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_SCRUBBER_H_
