#include "base/logging.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(RepeatLimiterTest, AdmitsOncePerPeriodAndCountsTheRest) {
  RepeatLimiter limiter(absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int64_t suppressed = -1;
  EXPECT_TRUE(limiter.Admit("w1", t0, &suppressed));
  EXPECT_EQ(suppressed, 0);
  for (int i = 1; i <= 119; ++i) {  // 2 a second for a minute
    EXPECT_FALSE(
        limiter.Admit("w1", t0 + absl::Milliseconds(500) * i, &suppressed));
  }
  EXPECT_TRUE(limiter.Admit("w2", t0 + absl::Seconds(1), &suppressed))
      << "another key is not limited by the first";
  EXPECT_TRUE(limiter.Admit("w1", t0 + absl::Seconds(60), &suppressed));
  EXPECT_EQ(suppressed, 119);
  EXPECT_FALSE(limiter.Admit("w1", t0 + absl::Seconds(61), &suppressed));
  EXPECT_TRUE(limiter.Admit("w1", t0 + absl::Seconds(200), &suppressed));
  EXPECT_EQ(suppressed, 1);
}

TEST(RepeatLimiterTest, ZeroPeriodAdmitsEverything) {
  RepeatLimiter limiter(absl::ZeroDuration());
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.Admit("k", t0, nullptr));
}

TEST(RepeatLimiterTest, KeysAreBounded) {
  RepeatLimiter limiter(absl::Seconds(60), /*max_keys=*/2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(limiter.Admit("a", t0, nullptr));
  EXPECT_TRUE(limiter.Admit("b", t0, nullptr));
  // Full, none idle: all forgotten, so "a" is admitted again.
  EXPECT_TRUE(limiter.Admit("c", t0, nullptr));
  EXPECT_TRUE(limiter.Admit("a", t0, nullptr));
  // "c" and "a" are known now; "b" was forgotten.
  EXPECT_FALSE(limiter.Admit("c", t0, nullptr));
}

// Collects what the logger sends to its sink.
class SinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogSink([this](const LogRecord& r) {
      absl::MutexLock l(&mu_);
      lines_.push_back(std::string(r.message));
      levels_.push_back(r.level);
      files_.push_back(std::string(r.file));
    });
  }
  void TearDown() override {
    SetLogSink(nullptr);
    SetLogRepeatPeriod(absl::Seconds(60));
  }
  std::vector<std::string> Lines() {
    absl::MutexLock l(&mu_);
    return lines_;
  }

  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  std::vector<LogLevel> levels_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> files_ ABSL_GUARDED_BY(mu_);
};

TEST_F(SinkTest, SinkGetsTheMessageWithoutPrefix) {
  RANGEFS_LOG(ERROR) << "to the sink " << 42;
  EXPECT_THAT(Lines(), ElementsAre("to the sink 42"));
  absl::MutexLock l(&mu_);
  EXPECT_THAT(levels_, ElementsAre(LogLevel::kError));
  EXPECT_THAT(files_, ElementsAre("logging_test.cc"));
}

TEST_F(SinkTest, RepeatedWarningsAreWrittenOncePerPeriod) {
  for (int i = 0; i < 10; ++i) {
    RANGEFS_LOG(WARNING) << "etcd watch /w1 unreachable";
    RANGEFS_LOG(WARNING) << "etcd watch /w2 unreachable";
  }
  EXPECT_THAT(Lines(), ElementsAre("etcd watch /w1 unreachable",
                                   "etcd watch /w2 unreachable"));
}

TEST_F(SinkTest, InfoIsNotLimited) {
  for (int i = 0; i < 3; ++i) RANGEFS_LOG(INFO) << "info line";
  EXPECT_THAT(Lines(), SizeIs(3));
}

TEST_F(SinkTest, ZeroPeriodTurnsTheLimitOff) {
  SetLogRepeatPeriod(absl::ZeroDuration());
  for (int i = 0; i < 3; ++i) RANGEFS_LOG(WARNING) << "unlimited warning";
  EXPECT_THAT(Lines(), SizeIs(3));
}

TEST_F(SinkTest, TheNextAdmittedLineSaysHowManyWereSuppressed) {
  auto flap = [] { RANGEFS_LOG(WARNING) << "flapping"; };  // one call site
  for (int i = 0; i < 3; ++i) flap();
  ASSERT_THAT(Lines(), SizeIs(1));
  // A 1 ns window is over once the clock (microseconds) has moved on.
  SetLogRepeatPeriod(absl::Nanoseconds(1));
  const absl::Time start = absl::Now();
  while (absl::Now() < start + absl::Microseconds(2)) {
  }
  flap();
  const std::vector<std::string> lines = Lines();
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(lines[1], HasSubstr("flapping [2 identical line(s) suppressed"));
}

}  // namespace
}  // namespace rangefs
