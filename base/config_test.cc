#include "base/config.h"

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ConfigTest, ParsesKeysCommentsAndBlankLines) {
  auto c = Config::Parse(
      "# comment\n"
      "\n"
      "etcd_endpoints = a:1, b:2 ,,c:3   # trailing comment\n"
      "  cluster=prod\n"
      "etcd_user =\n"
      "etcd_timeout = 250ms\n"
      "readahead_kb = 8192\n",
      "test.conf");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_THAT(c->GetList("etcd_endpoints"), ElementsAre("a:1", "b:2", "c:3"));
  EXPECT_EQ(c->GetString("cluster"), "prod");
  EXPECT_TRUE(c->Has("etcd_user"));
  EXPECT_EQ(c->GetString("etcd_user"), "");
  EXPECT_EQ(*c->GetDuration("etcd_timeout"), absl::Milliseconds(250));
  EXPECT_EQ(*c->GetInt("readahead_kb"), 8192);
  EXPECT_EQ(c->Origin("cluster"), "test.conf:4");
}

TEST(ConfigTest, DefaultsApplyToUnsetKeys) {
  auto c = Config::Parse("");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_FALSE(c->Has("mount_root"));
  EXPECT_EQ(c->GetString("mount_root"), "/mnt/rangefs");
  EXPECT_EQ(*c->GetDuration("mount_stat_timeout"), absl::Seconds(5));
  EXPECT_THAT(c->GetString("nfs_options"), HasSubstr("proto=rdma"));
  EXPECT_THAT(c->GetString("nfs_options"), HasSubstr("rsize=1048576"));
}

TEST(ConfigTest, ErrorsNameTheLine) {
  EXPECT_THAT(Config::Parse("cluster = a\nbogus_key = 1\n", "f.conf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.conf:2: unknown key \"bogus_key\"")));
  EXPECT_THAT(Config::Parse("\n\njust words\n", "f.conf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.conf:3: expected `key = value`")));
  EXPECT_THAT(Config::Parse("= 3\n", "f.conf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.conf:1: empty key")));
  EXPECT_THAT(Config::Parse("cluster = a\ncluster = b\n", "f.conf").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("f.conf:2: key \"cluster\" already set at "
                                 "f.conf:1")));
}

TEST(ConfigTest, TypedGettersRejectBadValues) {
  auto c = Config::Parse("readahead_kb = lots\netcd_timeout = 5\n", "x");
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_THAT(c->GetInt("readahead_kb").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x:1: readahead_kb = \"lots\"")));
  EXPECT_THAT(c->GetDuration("etcd_timeout").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a duration")));
  EXPECT_THAT(c->GetBool("cluster").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ConfigTest, SetOverridesAndRejectsUnknownKeys) {
  auto c = Config::Parse("cluster = a\n");
  ASSERT_THAT(c.status(), IsOk());
  ASSERT_THAT(c->Set("cluster", "b"), IsOk());
  EXPECT_EQ(c->GetString("cluster"), "b");
  EXPECT_EQ(c->Origin("cluster"), "flag");
  EXPECT_THAT(c->Set("nope", "1"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ConfigTest, LoadConfigReadsFilesAndReportsMissingOnes) {
  std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  std::string path = absl::StrCat(dir, "/rangefs.conf");
  std::ofstream(path) << "mount_root = /mnt/x\nnode_id = n1\n";
  auto c = LoadConfig(path);
  ASSERT_THAT(c.status(), IsOk());
  EXPECT_EQ(c->GetString("mount_root"), "/mnt/x");
  EXPECT_EQ(c->Origin("node_id"), absl::StrCat(path, ":2"));
  EXPECT_THAT(LoadConfig(dir + "/missing.conf").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.conf")));
}

// The shipped example parses, and documents every known key.
TEST(ConfigTest, ExampleFileIsValidAndComplete) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  ASSERT_NE(srcdir, nullptr);
  std::string path =
      absl::StrCat(srcdir, "/", ws, "/deploy/config/rangefs.conf.example");
  auto c = LoadConfig(path);
  ASSERT_THAT(c.status(), IsOk());
  for (const ConfigKey& k : KnownConfigKeys()) {
    EXPECT_TRUE(c->Has(k.name)) << k.name << " missing from " << path;
    EXPECT_NE(std::string(k.help), "") << k.name;
  }
  EXPECT_THAT(c->GetDuration("etcd_timeout").status(), IsOk());
  EXPECT_THAT(c->GetInt("readahead_kb").status(), IsOk());
}

}  // namespace
}  // namespace rangefs
