#include "storage_node/scrubber.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ScrubberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("scrubber_test");
    ASSERT_THAT(dir, IsOk());
    tmp_ = *std::move(dir);
    dir_ = tmp_.path();
    auto r = ExportRoot::Open(dir_);
    ASSERT_THAT(r, IsOk());
    root_ = std::move(*r);
  }

  // Writes an object with its sidecar through the ExportRoot.
  void Put(const std::string& path, const std::string& data) {
    auto obj = root_->CreateTemp();
    ASSERT_THAT(obj, IsOk());
    ASSERT_EQ(write(obj->fd.get(), data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    BlockChecksummer sum(kMinBlockSize);
    sum.Update(data.data(), data.size());
    std::string enc = EncodeSidecar(sum.Finish());
    auto side = root_->CreateTemp();
    ASSERT_THAT(side, IsOk());
    ASSERT_EQ(write(side->fd.get(), enc.data(), enc.size()),
              static_cast<ssize_t>(enc.size()));
    ASSERT_THAT(root_->CommitObject(obj->name, side->name, path, false),
                IsOk());
  }

  testing::ScopedTempDir tmp_;  // First: removed after root_ closes.
  std::string dir_;
  std::unique_ptr<ExportRoot> root_;
};

TEST_F(ScrubberTest, VerifyObjectFindsDamageAndSizeChange) {
  Put("a", std::string(3 * kMinBlockSize, 'a'));
  EXPECT_THAT(VerifyObject(*root_, "a", nullptr), IsOk());
  int fd = open((dir_ + "/a").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "b", 1, 2 * kMinBlockSize), 1);
  EXPECT_THAT(VerifyObject(*root_, "a", nullptr),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("block 2")));
  ASSERT_EQ(ftruncate(fd, 10), 0);
  close(fd);
  EXPECT_THAT(VerifyObject(*root_, "a", nullptr),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("sidecar says")));
}

TEST_F(ScrubberTest, RateLimitUsesClock) {
  Put("d/x", std::string(1 << 20, 'x'));
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  ScrubReport r =
      ScrubExport(*root_, {.max_bytes_per_sec = 100 << 10, .clock = &clock});
  EXPECT_EQ(r.objects_checked, 1u);
  EXPECT_EQ(r.bytes_checked, 1u << 20);
  // 1 MiB at 100 KiB/s: the scrubber slept ~10.24 s of fake time.
  EXPECT_GE(clock.Now() - t0, absl::Seconds(10));
  EXPECT_LE(clock.Now() - t0, absl::Seconds(11));
}

TEST_F(ScrubberTest, CancelStops) {
  Put("c1", std::string(kMinBlockSize, 'c'));
  Put("c2", std::string(kMinBlockSize, 'c'));
  ScrubReport r = ScrubExport(*root_, {.cancelled = [] { return true; }});
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.objects_checked, 0u);
}

TEST_F(ScrubberTest, BackgroundScrubberReportsAndStops) {
  Put("bad", std::string(2 * kMinBlockSize, 'q'));
  int fd = open((dir_ + "/bad").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "z", 1, 0), 1);
  close(fd);
  BackgroundScrubber s(root_.get(), {.interval = absl::Milliseconds(10),
                                     .max_bytes_per_sec = 0});
  // Polled (a pass takes milliseconds idle); 30 s only ends a scrubber
  // that never repeats, on however loaded a machine.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (s.passes() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_GE(s.passes(), 2) << "passes after 30 s";
  auto r = s.LastReport();
  ASSERT_TRUE(r.has_value());
  EXPECT_THAT(r->corrupt_paths, ElementsAre("bad"));
  // The destructor stops and joins even with a long interval pending.
}

}  // namespace
}  // namespace node
}  // namespace rangefs
