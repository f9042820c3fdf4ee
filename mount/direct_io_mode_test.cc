#include "mount/direct_io_mode.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace mount {
namespace {

TEST(DirectIoModeTest, Parses) {
  EXPECT_EQ(*ParseDirectIoMode("direct_io", "auto"), DirectIoMode::kAuto);
  EXPECT_EQ(*ParseDirectIoMode("direct_io", "AUTO"), DirectIoMode::kAuto);
  for (const char* on : {"", "1", "true", "yes", "on"}) {
    EXPECT_EQ(*ParseDirectIoMode("direct_io", on), DirectIoMode::kAlways) << on;
  }
  for (const char* off : {"0", "false", "no", "off"}) {
    EXPECT_EQ(*ParseDirectIoMode("direct_io", off), DirectIoMode::kNever)
        << off;
  }
  absl::StatusOr<DirectIoMode> bad = ParseDirectIoMode("direct_io", "maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              testing::HasSubstr("direct_io=maybe: want auto, true or false"));
}

TEST(DirectIoModeTest, NamesRoundTrip) {
  for (DirectIoMode m :
       {DirectIoMode::kAuto, DirectIoMode::kAlways, DirectIoMode::kNever}) {
    EXPECT_EQ(*ParseDirectIoMode("k", DirectIoModeName(m)), m);
  }
}

TEST(DirectIoModeTest, AutoOpensLargeFilesDirectWhenMmapStillWorks) {
  const uint64_t big = kAutoDirectIoMinBytes;
  EXPECT_TRUE(OpenDirect(DirectIoMode::kAuto, big, /*mmap_ok=*/true));
  EXPECT_TRUE(OpenDirect(DirectIoMode::kAuto, big << 10, true));
  EXPECT_FALSE(OpenDirect(DirectIoMode::kAuto, big - 1, true));
  EXPECT_FALSE(OpenDirect(DirectIoMode::kAuto, 0, true));
  // An older kernel: mmap of a direct file would fail (ENODEV).
  EXPECT_FALSE(OpenDirect(DirectIoMode::kAuto, big, /*mmap_ok=*/false));
}

TEST(DirectIoModeTest, ExplicitModesIgnoreSize) {
  EXPECT_TRUE(OpenDirect(DirectIoMode::kAlways, 1, false));
  EXPECT_FALSE(OpenDirect(DirectIoMode::kNever, 1ull << 40, true));
}

}  // namespace
}  // namespace mount
}  // namespace rangefs
