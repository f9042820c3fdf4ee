#include "base/layered_config.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "base/flag_config.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_cluster, "built-in", "for the test");
ABSL_FLAG(int, test_number, 1, "for the test");

namespace rangefs {
namespace {

using ::testing::HasSubstr;

class LayeredConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"RANGEFS_CONFIG", "RANGEFS_ETCD", "RANGEFS_CLUSTER"})
      unsetenv(v);
    auto d = testing::ScopedTempDir::Make("layered");
    ASSERT_THAT(d, IsOk());
    dir_ = *std::move(d);
    file_ = dir_.path() + "/rangefs.conf";
    std::ofstream(file_) << "etcd_endpoints = 10.0.0.1:2379\n"
                            "cluster = from-file\n"
                            "mount_root = /m\n";
  }
  void TearDown() override {
    for (const char* v : {"RANGEFS_CONFIG", "RANGEFS_ETCD", "RANGEFS_CLUSTER"})
      unsetenv(v);
  }
  testing::ScopedTempDir dir_;
  std::string file_;
};

TEST_F(LayeredConfigTest, NothingGivenIsTheBuiltInDefaults) {
  auto c = LoadLayeredConfig("");
  ASSERT_THAT(c, IsOk());
  EXPECT_FALSE(c->Has("cluster"));
  EXPECT_EQ(c->GetString("cluster"), "default");
  EXPECT_EQ(c->GetString("etcd_endpoints"), "127.0.0.1:2379");
}

TEST_F(LayeredConfigTest, EnvironmentBeatsTheFileFromEitherPlace) {
  setenv("RANGEFS_CONFIG", file_.c_str(), 1);
  auto c = LoadLayeredConfig("");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->GetString("cluster"), "from-file");
  EXPECT_EQ(c->GetString("mount_root"), "/m");
  setenv("RANGEFS_CLUSTER", "from-env", 1);
  setenv("RANGEFS_ETCD", "10.9.9.9:2379", 1);
  c = LoadLayeredConfig("");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->GetString("cluster"), "from-env");
  EXPECT_EQ(c->GetString("etcd_endpoints"), "10.9.9.9:2379");
  EXPECT_EQ(c->GetString("mount_root"), "/m");  // the file's still
  unsetenv("RANGEFS_CONFIG");
  c = LoadLayeredConfig(file_);  // --config=FILE
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->GetString("cluster"), "from-env");
  EXPECT_EQ(c->GetString("mount_root"), "/m");
}

TEST_F(LayeredConfigTest, ABadFileIsAnErrorSayingWhereItCameFrom) {
  setenv("RANGEFS_CONFIG", (dir_.path() + "/missing.conf").c_str(), 1);
  EXPECT_THAT(LoadLayeredConfig(""),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.conf")));
  EXPECT_THAT(LoadLayeredConfig("").status().message(),
              HasSubstr("$RANGEFS_CONFIG"));
  std::ofstream(file_) << "clustr = typo\n";
  EXPECT_THAT(
      LoadLayeredConfig(file_),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clustr")));
}

TEST_F(LayeredConfigTest, FlagsTakeTheLayeredValuesAndTheCommandLineWins) {
  constexpr FlagBinding kBindings[] = {{"cluster", "test_cluster"}};
  std::string arg = "--config=" + file_;
  char* argv[] = {const_cast<char*>("prog"), arg.data()};
  ASSERT_THAT(ApplyLayeredConfigToFlags(2, argv, kBindings), IsOk());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_cluster), "from-file");
  setenv("RANGEFS_CLUSTER", "from-env", 1);
  ASSERT_THAT(ApplyLayeredConfigToFlags(2, argv, kBindings), IsOk());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_cluster), "from-env");
  // (absl::ParseCommandLine, run afterwards, sets the flags given.)
  constexpr FlagBinding kBad[] = {{"cluster", "no_such_flag"}};
  EXPECT_THAT(
      ApplyLayeredConfigToFlags(2, argv, kBad),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no_such_flag")));
  constexpr FlagBinding kWrongType[] = {{"cluster", "test_number"}};
  EXPECT_THAT(
      ApplyLayeredConfigToFlags(2, argv, kWrongType),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--test_number")));
}

}  // namespace
}  // namespace rangefs
