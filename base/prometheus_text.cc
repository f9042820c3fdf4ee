#include "base/prometheus_text.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace rangefs {
namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Escapes backslash and newline, and the double quote too in label values.
void AppendEscaped(std::string* out, absl::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && quote) {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

MetricValue::MetricValue(double v) : text_(absl::StrFormat("%.17g", v)) {}

std::string PrometheusText::Take() {
  std::string text = std::move(out_);
  out_.clear();
  return text;
}

void PrometheusText::AppendName(absl::string_view name,
                                absl::string_view suffix) {
  absl::StrAppend(&out_, prefix_, name, suffix);
}

void PrometheusText::AppendLabels(MetricLabels labels, absl::string_view le) {
  if (labels.empty() && le.empty()) return;
  out_.push_back('{');
  const char* sep = "";
  for (const MetricLabel& l : labels) {
    absl::StrAppend(&out_, sep, l.name, "=\"");
    AppendEscaped(&out_, l.value, /*quote=*/true);
    out_.push_back('"');
    sep = ",";
  }
  if (!le.empty()) absl::StrAppend(&out_, sep, "le=\"", le, "\"");
  out_.push_back('}');
}

void PrometheusText::Family(absl::string_view name, MetricType type,
                            absl::string_view help) {
  if (!help.empty()) {
    out_.append("# HELP ");
    AppendName(name, " ");
    AppendEscaped(&out_, help, /*quote=*/false);
    out_.push_back('\n');
  }
  out_.append("# TYPE ");
  AppendName(name, " ");
  absl::StrAppend(&out_, TypeName(type), "\n");
}

void PrometheusText::Sample(absl::string_view name, MetricLabels labels,
                            const MetricValue& value) {
  AppendName(name, "");
  AppendLabels(labels, "");
  absl::StrAppend(&out_, " ", value.text(), "\n");
}

void PrometheusText::Counter(absl::string_view name, absl::string_view help,
                             const MetricValue& value) {
  Family(name, MetricType::kCounter, help);
  Sample(name, {}, value);
}

void PrometheusText::Gauge(absl::string_view name, absl::string_view help,
                           const MetricValue& value) {
  Family(name, MetricType::kGauge, help);
  Sample(name, {}, value);
}

void PrometheusText::Histogram(absl::string_view name, MetricLabels labels,
                               absl::Span<const double> upper_bounds,
                               absl::Span<const uint64_t> counts, double sum,
                               uint64_t count) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (i < counts.size()) cumulative += counts[i];
    AppendName(name, "_bucket");
    AppendLabels(labels, absl::StrFormat("%g", upper_bounds[i]));
    absl::StrAppend(&out_, " ", cumulative, "\n");
  }
  if (counts.size() > upper_bounds.size()) {
    cumulative += counts[upper_bounds.size()];
  }
  AppendName(name, "_bucket");
  AppendLabels(labels, "+Inf");
  absl::StrAppend(&out_, " ", cumulative, "\n");
  AppendName(name, "_sum");
  AppendLabels(labels, "");
  absl::StrAppend(&out_, " ", MetricValue(sum).text(), "\n");
  AppendName(name, "_count");
  AppendLabels(labels, "");
  absl::StrAppend(&out_, " ", count, "\n");
}

}  // namespace rangefs
