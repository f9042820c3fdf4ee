#include "admin/cli.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace admin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CliTest, GlobalOptionsBeforeAndAfterTheCommand) {
  auto cl = ParseCommandLine({"--etcd=h:1", "node", "add", "n1", "--json",
                              "--address", "a:1", "--address=b:2", "--cluster",
                              "c", "--export=/e"});
  ASSERT_THAT(cl, IsOk());
  EXPECT_FALSE(cl->help);
  EXPECT_EQ(cl->global.Get("etcd"), "h:1");
  EXPECT_EQ(cl->global.Get("cluster"), "c");
  EXPECT_TRUE(cl->global.GetBool("json"));
  EXPECT_THAT(cl->command.positional(), ElementsAre("node", "add", "n1"));
  EXPECT_THAT(cl->command.GetAll("address"), ElementsAre("a:1", "b:2"));
  EXPECT_EQ(cl->command.Get("export"), "/e");
  EXPECT_FALSE(cl->command.Has("etcd"));
}

TEST(CliTest, AliasesFlagsAndLastValueWins) {
  auto cl = ParseCommandLine(
      {"file", "ls", "/d", "--limit=3", "--limit=4", "--revision", "7"});
  ASSERT_THAT(cl, IsOk());
  EXPECT_THAT(cl->command.positional(), ElementsAre("file", "ls", "/d"));
  EXPECT_EQ(cl->command.Get("limit"), "4");
  EXPECT_EQ(cl->command.Get("revision"), "7");
  auto put = ParseCommandLine({"file", "put", "a", "/b", "--overwrite"});
  ASSERT_THAT(put, IsOk());
  EXPECT_TRUE(put->command.GetBool("overwrite"));
  auto rm = ParseCommandLine({"node", "rm", "n1"});
  ASSERT_THAT(rm, IsOk());
  EXPECT_THAT(rm->command.positional(), ElementsAre("node", "remove", "n1"));
}

TEST(CliTest, UsageErrorsAreInvalidArgument) {
  EXPECT_THAT(ParseCommandLine({"bogus"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      ParseCommandLine({"file", "ls", "--bogus=1"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--bogus")));
  EXPECT_THAT(ParseCommandLine({"file", "ls", "--limit=x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("x is not an integer")));
  EXPECT_THAT(ParseCommandLine({"file", "put", "a", "b", "--width"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseCommandLine({"node"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node commands:")));
}

TEST(CliTest, UnknownCommandsNameTheClosestValidWords) {
  EXPECT_THAT(ParseCommandLine({"file", "lss", "/data"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown file command \"lss\"; did you "
                                 "mean \"ls\"?")));
  EXPECT_THAT(ParseCommandLine({"--etcd", "h:1", "staus"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown command \"staus\"; did you mean "
                                 "\"status\"?")));
  EXPECT_THAT(ParseCommandLine({"node", "lst"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean \"list\" or \"ls\"?")));
  EXPECT_THAT(ParseCommandLine({"zzzz"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown command \"zzzz\" (one of: ")));
}

TEST(CliTest, VersionFlag) {
  auto cl = ParseCommandLine({"--version"});
  ASSERT_THAT(cl, IsOk());
  EXPECT_TRUE(cl->version);
  auto after = ParseCommandLine({"file", "ls", "--version"});
  ASSERT_THAT(after, IsOk());
  EXPECT_TRUE(after->version);
}

TEST(CliTest, HelpPerCommand) {
  auto none = ParseCommandLine({});
  ASSERT_THAT(none, IsOk());
  EXPECT_TRUE(none->help);
  EXPECT_TRUE(none->no_command);
  EXPECT_THAT(none->help_text, HasSubstr("usage: rangefs-admin"));
  auto put = ParseCommandLine({"file", "put", "--help"});
  ASSERT_THAT(put, IsOk());
  EXPECT_TRUE(put->help);
  EXPECT_FALSE(put->no_command);
  EXPECT_THAT(put->help_text, HasSubstr("--replicas INT"));
  EXPECT_THAT(put->help_text, HasSubstr("--overwrite"));
  auto group = ParseCommandLine({"help", "file"});
  ASSERT_THAT(group, IsOk());
  EXPECT_THAT(group->help_text, HasSubstr("file put LOCAL|DIR|- PATH|DIR/"));
  auto status = ParseCommandLine({"status", "--help"});
  ASSERT_THAT(status, IsOk());
  EXPECT_THAT(status->help_text, HasSubstr("keeper row"));
}

TEST(CliTest, BulkPutAndCopyOutFlags) {
  auto put = ParseCommandLine({"file", "put", "-r", "d", "/x/", "--jobs=4"});
  ASSERT_THAT(put, IsOk());
  EXPECT_THAT(put->command.positional(),
              ElementsAre("file", "put", "d", "/x/"));
  EXPECT_TRUE(put->command.GetBool("recursive"));
  EXPECT_EQ(put->command.Get("jobs"), "4");
  auto get = ParseCommandLine({"file", "get", "/x", "out", "--overwrite"});
  ASSERT_THAT(get, IsOk());
  EXPECT_TRUE(get->command.GetBool("overwrite"));
  auto cat = ParseCommandLine({"file", "cat", "/a", "/b"});
  ASSERT_THAT(cat, IsOk());
  EXPECT_THAT(cat->command.positional(),
              ElementsAre("file", "cat", "/a", "/b"));
}

TEST(CliTest, DoctorGetsTheGlobalOptions) {
  auto cl = ParseCommandLine({"--etcd=h:1", "doctor", "--mounts=no"});
  ASSERT_THAT(cl, IsOk());
  EXPECT_TRUE(cl->doctor);
  EXPECT_TRUE(cl->command.positional().empty());
  EXPECT_EQ(cl->command.Get("etcd"), "h:1");
  EXPECT_EQ(cl->command.Get("mounts"), "no");
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
