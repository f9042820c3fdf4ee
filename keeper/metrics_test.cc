#include "keeper/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace keeper {
namespace {

using ::testing::HasSubstr;

TEST(KeeperMetricsTest, TotalsAddUpAndRoundGaugesShowTheLastRound) {
  KeeperMetrics m;
  m.active = true;
  RoundReport a;
  a.moves_planned = 3;
  a.moves_done = 2;
  a.moves_failed = 1;
  a.bytes_planned = 300;
  a.bytes_copied = 200;
  a.dead_nodes = 1;
  m.AddRound(a);
  RoundReport b;
  b.moves_planned = 1;
  b.moves_done = 1;
  b.bytes_planned = 100;
  b.bytes_copied = 100;
  m.AddRound(b);
  const std::string t = KeeperPrometheusText(m);
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_active 1\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_rounds_total 2\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_moves_done_total 3\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_moves_failed_total 1\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_copied_bytes_total 300\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_round_moves_planned 1\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_dead_nodes 0\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_round_eta_seconds 0\n"));
  EXPECT_THAT(t, HasSubstr("# TYPE rangefs_keeper_moves_done_total counter"));
}

TEST(KeeperMetricsTest, AtRiskGauges) {
  KeeperMetrics m;
  RoundReport r;
  r.at_risk_files = 3;
  r.at_risk_bytes = 4096;
  r.heal_starts = absl::FromUnixSeconds(1700000000);
  r.dead_after = absl::Seconds(600);
  m.AddRound(r);
  const std::string t = KeeperPrometheusText(m);
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_at_risk_files 3\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_at_risk_bytes 4096\n"));
  EXPECT_THAT(
      t, HasSubstr("rangefs_keeper_heal_starts_unix_seconds 1700000000\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_dead_after_seconds 600\n"));
  m.AddRound(RoundReport());  // No node missing.
  EXPECT_THAT(KeeperPrometheusText(m),
              HasSubstr("rangefs_keeper_heal_starts_unix_seconds 0\n"));
}

TEST(KeeperMetricsTest, ConversionsPerPolicy) {
  KeeperMetrics m;
  RoundReport r;
  r.conversions_done = 2;
  r.convert_bytes_written = 1000;
  r.convert_bytes_saved = 5000;
  r.convert_eta_s = 12;
  r.convert_backlog["/crawl/sealed"] = {
      .files = 3, .bytes = 300, .bytes_saved = 150, .stuck = 1};
  m.AddRound(r);
  m.AddRound(r);
  const std::string t = KeeperPrometheusText(m);
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_conversions_done_total 4\n"));
  EXPECT_THAT(t,
              HasSubstr("rangefs_keeper_convert_written_bytes_total 2000\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_convert_saved_bytes 10000\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_convert_eta_seconds 12\n"));
  EXPECT_THAT(t,
              HasSubstr("rangefs_keeper_convert_pending_files{policy=\"/crawl/"
                        "sealed\"} 3\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_convert_pending_saved_bytes{policy="
                           "\"/crawl/sealed\"} 150\n"));
  EXPECT_THAT(t, HasSubstr("rangefs_keeper_convert_stuck_files{policy=\"/"
                           "crawl/sealed\"} 1\n"));
}

TEST(KeeperMetricsTest, Eta) {
  EXPECT_EQ(EtaSeconds(0, 0, absl::ZeroDuration()), 0);
  EXPECT_EQ(EtaSeconds(100, 0, absl::Seconds(3)), -1);  // no rate yet
  EXPECT_DOUBLE_EQ(EtaSeconds(300, 100, absl::Seconds(2)), 6);
}

}  // namespace
}  // namespace keeper
}  // namespace rangefs
