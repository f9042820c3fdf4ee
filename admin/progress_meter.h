// File: progress_meter.h
//
// The progress line of a bulk transfer (`file put` of a directory, `file
// get` of a directory): files done of total, logical bytes done of total,
// the rate since the start and an estimate of the time left.
//
//   put 1200/10000 files, 75.0 MiB/625.0 MiB, 31.2 MiB/s, 480 files/s, ETA 18s
//
// ProgressMeter counts what workers report and hands the line to a sink
// at most every `interval` (and once more, final, from Finish). main's
// terminal sink redraws one line on stderr; with no sink nothing is printed.
#ifndef RANGEFS_ADMIN_PROGRESS_METER_H_
#define RANGEFS_ADMIN_PROGRESS_METER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rangefs {
namespace admin {

struct TransferProgress {
  size_t files_done = 0;
  size_t files_total = 0;
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  absl::Duration elapsed;
};

// "put 3/10 files, 1.0 MiB/4.0 MiB, 2.0 MiB/s, 6 files/s, ETA 2s". The rate
// and ETA are left out until some time has passed and something is done;
// the ETA follows the bytes when there are any, else the files.
std::string FormatProgress(absl::string_view verb, const TransferProgress& p);

// 45 s -> "45s", 192 s -> "3m12s", 3725 s -> "1h02m".
std::string FormatEta(absl::Duration d);

// Receives a progress line; `final` for the last one (Finish).
using ProgressSink = std::function<void(const std::string& line, bool final)>;

// A redrawing line on stderr ("\r" + line, cleared to the end of the line;
// a newline after the final one). For a terminal.
ProgressSink TerminalProgressSink();

// Thread-safe. The sink is called under the meter's lock (lines in order);
// it may be empty (nothing is reported).
class ProgressMeter {
 public:
  ProgressMeter(std::string verb, size_t files_total, uint64_t bytes_total,
                ProgressSink sink,
                absl::Duration interval = absl::Milliseconds(200));

  // Adds finished files and bytes (bytes may be negative: a failed file's
  // partial count taken back).
  void Add(size_t files, int64_t bytes);
  // Reports the final line.
  void Finish();
  TransferProgress Get();

 private:
  void ReportLocked(bool final) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string verb_;
  const ProgressSink sink_;
  const absl::Duration interval_;
  const absl::Time start_;
  absl::Mutex mu_;
  TransferProgress p_ ABSL_GUARDED_BY(mu_);
  absl::Time last_report_ ABSL_GUARDED_BY(mu_);
};

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_PROGRESS_METER_H_
