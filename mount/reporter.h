// File: reporter.h
//
// rangefs-mount's periodic outputs: the status file for `rangefs-admin
// doctor` (mount_status.h) every `status_interval`, and the Prometheus text
// file every `metrics_interval`. Both are written atomically; the status
// file is removed by the destructor (a clean exit).
//
//   Reporter r({.status_file = StatusFilePath(dir, mp)},
//              [&] { return CurrentStatus(); }, [&] { return Metrics(); });
//
// Thread-safe; owns one thread (joined by the destructor).
#ifndef RANGEFS_MOUNT_REPORTER_H_
#define RANGEFS_MOUNT_REPORTER_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "mount/mount_status.h"

namespace rangefs {
namespace mount {

struct ReporterOptions {
  std::string status_file;  // "" = none
  absl::Duration status_interval = absl::Seconds(2);
  std::string metrics_file;  // "" = none
  absl::Duration metrics_interval = absl::Seconds(10);
};

class Reporter {
 public:
  // Writes both files once before returning, then starts the thread.
  Reporter(ReporterOptions options, std::function<MountStatus()> status,
           std::function<std::string()> metrics);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

 private:
  void WriteStatus();
  void WriteMetrics();
  void Loop();

  const ReporterOptions options_;
  const std::function<MountStatus()> status_;
  const std::function<std::string()> metrics_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_REPORTER_H_
