// File: prometheus_text.h
//
// The one writer of the Prometheus text exposition format (version 0.0.4)
// in the tree: the client library's, rangefs-mount's and rangefs-keeper's
// metrics all go through it.
//
//   PrometheusText w("rangefs_mount_");
//   w.Counter("reads_total", "FUSE reads", 5);   // # HELP, # TYPE, sample
//   w.Family("node_bytes_total", MetricType::kCounter);
//   w.Sample("node_bytes_total", {{"node", "n0"}}, 4096);
//   std::string text = w.Take();
//
// Values: integers as written; doubles with 17 significant digits (%.17g,
// exact). Label values are escaped as the format wants (\\, \", \n), and so
// is help text (\\, \n). Family() writes the HELP and TYPE lines: call it
// once per family, before that family's samples. Thread-compatible.
#ifndef RANGEFS_BASE_PROMETHEUS_TEXT_H_
#define RANGEFS_BASE_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rangefs {

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricLabel {
  absl::string_view name;
  absl::string_view value;
};
using MetricLabels = absl::Span<const MetricLabel>;

// A sample value, formatted: any integer type as is, a double as %.17g.
class MetricValue {
 public:
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  MetricValue(T v) : text_(absl::StrCat(v)) {}  // NOLINT: implicit
  MetricValue(double v);                        // NOLINT: implicit
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class PrometheusText {
 public:
  // Every metric name written is `prefix` + the name given.
  explicit PrometheusText(absl::string_view prefix = "") : prefix_(prefix) {}

  // "# HELP <name> <help>" (left out when help is empty) and
  // "# TYPE <name> <type>".
  void Family(absl::string_view name, MetricType type,
              absl::string_view help = "");
  // "<name>{<labels>} <value>" (no braces without labels).
  void Sample(absl::string_view name, MetricLabels labels,
              const MetricValue& value);
  // A family of one unlabelled sample.
  void Counter(absl::string_view name, absl::string_view help,
               const MetricValue& value);
  void Gauge(absl::string_view name, absl::string_view help,
             const MetricValue& value);
  // The samples of one histogram (its family written before): a cumulative
  // <name>_bucket per upper bound (le="%g") and le="+Inf", then <name>_sum
  // and <name>_count. `counts` are per bucket, not cumulative; the entry
  // after the last bound, if any, is the +Inf bucket's own.
  void Histogram(absl::string_view name, MetricLabels labels,
                 absl::Span<const double> upper_bounds,
                 absl::Span<const uint64_t> counts, double sum, uint64_t count);

  const std::string& text() const { return out_; }
  // Returns the text written so far and starts afresh.
  std::string Take();

 private:
  void AppendName(absl::string_view name, absl::string_view suffix);
  void AppendLabels(MetricLabels labels, absl::string_view le);

  std::string prefix_;
  std::string out_;
};

}  // namespace rangefs

#endif  // RANGEFS_BASE_PROMETHEUS_TEXT_H_
