#include "mount/reporter.h"

#include <unistd.h>

#include <utility>

#include "absl/time/clock.h"
#include "base/atomic_file.h"
#include "base/logging.h"

namespace rangefs {
namespace mount {

Reporter::Reporter(ReporterOptions options, std::function<MountStatus()> status,
                   std::function<std::string()> metrics)
    : options_(std::move(options)),
      status_(std::move(status)),
      metrics_(std::move(metrics)) {
  WriteStatus();
  WriteMetrics();
  thread_ = std::thread([this] { Loop(); });
}

Reporter::~Reporter() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (!options_.status_file.empty()) unlink(options_.status_file.c_str());
}

void Reporter::WriteStatus() {
  if (options_.status_file.empty()) return;
  MountStatus s = status_();
  s.interval_ms = absl::ToInt64Milliseconds(options_.status_interval);
  s.updated_unix_ms = absl::ToUnixMillis(absl::Now());
  absl::Status w =
      WriteFileAtomically(options_.status_file, FormatMountStatus(s));
  if (!w.ok()) RANGEFS_LOG(WARNING) << "status file: " << w;
}

void Reporter::WriteMetrics() {
  if (options_.metrics_file.empty()) return;
  absl::Status w = WriteFileAtomically(options_.metrics_file, metrics_());
  if (!w.ok()) RANGEFS_LOG(WARNING) << "metrics file: " << w;
}

void Reporter::Loop() {
  absl::Time next_status = absl::Now() + options_.status_interval;
  absl::Time next_metrics = absl::Now() + options_.metrics_interval;
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      const absl::Time wake = std::min(next_status, next_metrics);
      if (mu_.AwaitWithDeadline(absl::Condition(&stopped), wake)) return;
    }
    const absl::Time now = absl::Now();
    if (now >= next_status) {
      WriteStatus();
      next_status = now + options_.status_interval;
    }
    if (now >= next_metrics) {
      WriteMetrics();
      next_metrics = now + options_.metrics_interval;
    }
  }
}

}  // namespace mount
}  // namespace rangefs
