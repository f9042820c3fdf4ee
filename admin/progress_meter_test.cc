#include "admin/progress_meter.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace admin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProgressMeterTest, FormatsFilesLogicalBytesRateAndEta) {
  TransferProgress p;
  p.files_done = 250;
  p.files_total = 1000;
  p.bytes_done = 250 << 16;
  p.bytes_total = 1000 << 16;
  p.elapsed = absl::Seconds(5);
  EXPECT_EQ(FormatProgress("put", p),
            "put 250/1000 files, 15.6 MiB/62.5 MiB, 3.1 MiB/s, 50 files/s, "
            "ETA 15s");
  // Nothing done yet (or no time passed): no rate, no ETA.
  p.files_done = 0;
  p.bytes_done = 0;
  EXPECT_THAT(FormatProgress("get", p), Not(HasSubstr("ETA")));
  // Only empty files: the ETA follows the files.
  p = TransferProgress{
      .files_done = 10, .files_total = 30, .elapsed = absl::Seconds(2)};
  EXPECT_THAT(FormatProgress("put", p), HasSubstr("ETA 4s"));
}

TEST(ProgressMeterTest, FormatsEta) {
  EXPECT_EQ(FormatEta(absl::Seconds(45)), "45s");
  EXPECT_EQ(FormatEta(absl::Seconds(192)), "3m12s");
  EXPECT_EQ(FormatEta(absl::Seconds(3725)), "1h02m");
}

TEST(ProgressMeterTest, ReportsAtMostEveryIntervalThenAFinalLine) {
  std::vector<std::pair<std::string, bool>> lines;
  ProgressMeter m(
      "put", 3, 300,
      [&](const std::string& line, bool final) {
        lines.emplace_back(line, final);
      },
      absl::Hours(1));
  m.Add(1, 100);
  m.Add(1, 50);
  m.Add(0, -50);  // a failed file's partial bytes taken back
  m.Add(1, 100);
  EXPECT_TRUE(lines.empty());
  m.Finish();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].second);
  EXPECT_THAT(lines[0].first, HasSubstr("put 3/3 files, 200 B/300 B"));
  const TransferProgress p = m.Get();
  EXPECT_EQ(p.files_done, 3u);
  EXPECT_EQ(p.bytes_done, 200u);
}

TEST(ProgressMeterTest, NoSinkPrintsNothing) {
  ProgressMeter m("put", 1, 1, nullptr, absl::ZeroDuration());
  m.Add(1, 1);
  m.Finish();
  EXPECT_EQ(m.Get().files_done, 1u);
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
