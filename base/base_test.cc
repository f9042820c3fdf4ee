#include <errno.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  RANGEFS_ASSIGN_OR_RETURN(int h, Half(x));
  RANGEFS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  RANGEFS_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagates) {
  EXPECT_THAT(Quarter(8), IsOk());
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Quarter(7),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd")));
}

TEST(StatusMacrosTest, ReturnIfErrorPropagates) {
  EXPECT_THAT(CheckEven(4), IsOk());
  EXPECT_THAT(CheckEven(5), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ErrnoStatusTest, MapsCodesAndSaysWhat) {
  EXPECT_THAT(ErrnoStatus(0, "x"), IsOk());
  EXPECT_THAT(ErrnoStatus(ENOENT, "open /a/b"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("open /a/b")));
  EXPECT_THAT(ErrnoStatus(EIO, "pread n1"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("errno 5")));
  EXPECT_THAT(ErrnoStatus(EACCES, "x"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ErrnoStatus(ENOSPC, "x"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(ErrnoStatus(ENOSYS, "ibv_get_device_list"),
              StatusIs(absl::StatusCode::kUnimplemented));
}

TEST(FakeClockTest, SleepAdvancesTime) {
  FakeClock clock;
  absl::Time t0 = clock.Now();
  clock.SleepFor(absl::Seconds(5));
  EXPECT_EQ(clock.Now() - t0, absl::Seconds(5));
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(clock.MonotonicNow() - t0, absl::Milliseconds(5001));
}

TEST(RealClockTest, MonotonicDoesNotGoBack) {
  Clock* c = Clock::Real();
  absl::Time a = c->MonotonicNow();
  absl::Time b = c->MonotonicNow();
  EXPECT_LE(a, b);
}

TEST(LoggingTest, ParsesLevelsAndFilters) {
  LogLevel level;
  EXPECT_TRUE(ParseLogLevel("WARNING", &level));
  EXPECT_EQ(level, LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("loud", &level));
  SetMinLogLevel(LogLevel::kError);
  int evaluated = 0;
  RANGEFS_LOG(INFO) << "hidden " << ++evaluated;
  EXPECT_EQ(evaluated, 0);  // Filtered lines do not evaluate their operands.
  RANGEFS_LOG(ERROR) << "shown " << ++evaluated;
  EXPECT_EQ(evaluated, 1);
  SetMinLogLevel(LogLevel::kInfo);
}

}  // namespace
}  // namespace rangefs
