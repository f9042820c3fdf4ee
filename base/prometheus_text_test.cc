#include "base/prometheus_text.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rangefs {
namespace {

TEST(PrometheusTextTest, CounterAndGaugeWriteHelpTypeAndSample) {
  PrometheusText w("rangefs_x_");
  w.Counter("reads_total", "FUSE reads", uint64_t{5});
  w.Gauge("open_files", "open file handles", int64_t{-2});
  EXPECT_EQ(w.text(),
            "# HELP rangefs_x_reads_total FUSE reads\n"
            "# TYPE rangefs_x_reads_total counter\n"
            "rangefs_x_reads_total 5\n"
            "# HELP rangefs_x_open_files open file handles\n"
            "# TYPE rangefs_x_open_files gauge\n"
            "rangefs_x_open_files -2\n");
}

TEST(PrometheusTextTest, FamilyWithoutHelpAndLabelledSamples) {
  PrometheusText w("p_");
  w.Family("node_bytes_total", MetricType::kCounter);
  w.Sample("node_bytes_total", {{"node", "n0"}}, 10);
  w.Sample("node_bytes_total", {{"node", "n1"}, {"path", "/a"}}, 0);
  EXPECT_EQ(w.text(),
            "# TYPE p_node_bytes_total counter\n"
            "p_node_bytes_total{node=\"n0\"} 10\n"
            "p_node_bytes_total{node=\"n1\",path=\"/a\"} 0\n");
}

TEST(PrometheusTextTest, DoublesAreExactIntegersAsWritten) {
  PrometheusText w;
  w.Sample("a", {}, 1.0);
  w.Sample("b", {}, -1.0);
  w.Sample("c", {}, 0.1);
  w.Sample("d", {}, uint64_t{18446744073709551615u});
  w.Sample("e", {}, 12.5);
  EXPECT_EQ(w.text(),
            "a 1\n"
            "b -1\n"
            "c 0.10000000000000001\n"
            "d 18446744073709551615\n"
            "e 12.5\n");
}

TEST(PrometheusTextTest, EscapesLabelValuesAndHelp) {
  PrometheusText w;
  w.Family("m", MetricType::kGauge, "a \\ b\nc \"q\"");
  w.Sample("m", {{"node", "x\"y\\z\nw"}}, 1);
  EXPECT_EQ(w.text(),
            "# HELP m a \\\\ b\\nc \"q\"\n"
            "# TYPE m gauge\n"
            "m{node=\"x\\\"y\\\\z\\nw\"} 1\n");
}

TEST(PrometheusTextTest, HistogramBucketsAreCumulative) {
  PrometheusText w("p_");
  w.Family("lat_seconds", MetricType::kHistogram);
  const std::vector<double> bounds = {0.001, 0.5};
  const std::vector<uint64_t> counts = {1, 2, 3};  // last: +Inf's own
  w.Histogram("lat_seconds", {}, bounds, counts, 4.25, 6);
  w.Histogram("lat_seconds", {{"node", "n0"}}, bounds, counts, 0.5, 6);
  EXPECT_EQ(w.text(),
            "# TYPE p_lat_seconds histogram\n"
            "p_lat_seconds_bucket{le=\"0.001\"} 1\n"
            "p_lat_seconds_bucket{le=\"0.5\"} 3\n"
            "p_lat_seconds_bucket{le=\"+Inf\"} 6\n"
            "p_lat_seconds_sum 4.25\n"
            "p_lat_seconds_count 6\n"
            "p_lat_seconds_bucket{node=\"n0\",le=\"0.001\"} 1\n"
            "p_lat_seconds_bucket{node=\"n0\",le=\"0.5\"} 3\n"
            "p_lat_seconds_bucket{node=\"n0\",le=\"+Inf\"} 6\n"
            "p_lat_seconds_sum{node=\"n0\"} 0.5\n"
            "p_lat_seconds_count{node=\"n0\"} 6\n");
}

TEST(PrometheusTextTest, TakeEmptiesTheWriter) {
  PrometheusText w;
  w.Sample("a", {}, 1);
  EXPECT_EQ(w.Take(), "a 1\n");
  EXPECT_EQ(w.text(), "");
}

}  // namespace
}  // namespace rangefs
