#include "base/version.h"

#include <string>

#include "base/flags_usage.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::Optional;
using ::testing::StartsWith;

TEST(VersionTest, LineNamesProgramVersionAndCommit) {
  EXPECT_THAT(VersionLine("rangefs-x"),
              MatchesRegex("rangefs-x " RANGEFS_VERSION
                           " \\(commit ([0-9a-f]{12}|unknown)\\)"));
}

TEST(VersionTest, WantsVersionStopsAtDoubleDash) {
  const char* with[] = {"prog", "--x=1", "--version"};
  const char* after[] = {"prog", "--", "--version"};
  const char* none[] = {"prog", "--versions"};
  EXPECT_TRUE(WantsVersion(3, with));
  EXPECT_FALSE(WantsVersion(3, after));
  EXPECT_FALSE(WantsVersion(2, none));
}

TEST(FlagsUsageTest, HelpPrintsUsageWithoutBuildModeLine) {
  const char* argv[] = {"prog", "--help"};
  auto text = HelpOrVersion(2, argv, "prog", "usage: prog [flags]");
  ASSERT_TRUE(text.has_value());
  EXPECT_THAT(*text, StartsWith("usage: prog [flags]\n"));
  EXPECT_THAT(*text, HasSubstr("--version"));
  EXPECT_THAT(*text, Not(HasSubstr("flagfile")));  // Abseil's own flags
}

TEST(FlagsUsageTest, VersionIsTheVersionLine) {
  const char* argv[] = {"prog", "--version"};
  EXPECT_THAT(HelpOrVersion(2, argv, "prog", "usage"),
              Optional(VersionLine("prog") + "\n"));
  const char* plain[] = {"prog", "--port=1"};
  EXPECT_EQ(HelpOrVersion(2, plain, "prog", "usage"), std::nullopt);
}

}  // namespace
}  // namespace rangefs
