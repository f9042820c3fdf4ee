#include "admin/progress_meter.h"

#include <stdio.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "admin/args.h"

namespace rangefs {
namespace admin {

std::string FormatEta(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(d + absl::Milliseconds(500));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
}

std::string FormatProgress(absl::string_view verb, const TransferProgress& p) {
  std::string line =
      absl::StrCat(verb, " ", p.files_done, "/", p.files_total, " files, ",
                   HumanBytes(p.bytes_done), "/", HumanBytes(p.bytes_total));
  const double secs = absl::ToDoubleSeconds(p.elapsed);
  if (secs < 0.1 || (p.files_done == 0 && p.bytes_done == 0)) return line;
  const double bps = static_cast<double>(p.bytes_done) / secs;
  const double fps = static_cast<double>(p.files_done) / secs;
  absl::StrAppend(&line, ", ", HumanBytes(static_cast<uint64_t>(bps)), "/s, ",
                  absl::StrFormat("%.0f", fps), " files/s");
  double left = -1;
  if (p.bytes_total > 0 && bps > 0) {
    left = static_cast<double>(p.bytes_total -
                               std::min(p.bytes_done, p.bytes_total)) /
           bps;
  } else if (fps > 0) {
    left = static_cast<double>(p.files_total -
                               std::min(p.files_done, p.files_total)) /
           fps;
  }
  if (left >= 0)
    absl::StrAppend(&line, ", ETA ", FormatEta(absl::Seconds(left)));
  return line;
}

ProgressSink TerminalProgressSink() {
  return [](const std::string& line, bool final) {
    fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
    fflush(stderr);
  };
}

ProgressMeter::ProgressMeter(std::string verb, size_t files_total,
                             uint64_t bytes_total, ProgressSink sink,
                             absl::Duration interval)
    : verb_(std::move(verb)),
      sink_(std::move(sink)),
      interval_(interval),
      start_(absl::Now()) {
  p_.files_total = files_total;
  p_.bytes_total = bytes_total;
  last_report_ = start_;
}

void ProgressMeter::Add(size_t files, int64_t bytes) {
  absl::MutexLock l(&mu_);
  p_.files_done += files;
  if (bytes < 0 && static_cast<uint64_t>(-bytes) > p_.bytes_done) {
    p_.bytes_done = 0;
  } else {
    p_.bytes_done += static_cast<uint64_t>(bytes);
  }
  const absl::Time now = absl::Now();
  if (sink_ && now - last_report_ >= interval_) {
    last_report_ = now;
    ReportLocked(false);
  }
}

void ProgressMeter::Finish() {
  absl::MutexLock l(&mu_);
  if (sink_) ReportLocked(true);
}

TransferProgress ProgressMeter::Get() {
  absl::MutexLock l(&mu_);
  TransferProgress p = p_;
  p.elapsed = absl::Now() - start_;
  return p;
}

void ProgressMeter::ReportLocked(bool final) {
  p_.elapsed = absl::Now() - start_;
  sink_(FormatProgress(verb_, p_), final);
}

}  // namespace admin
}  // namespace rangefs
