#include "namespace/nfs_export.h"

#include <string>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace ns {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::testing::HasSubstr;

TEST(NfsExportTest, ParsesGoodUrls) {
  absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://10.0.0.7/srv/rangefs/sn-07");
  ASSERT_THAT(u, IsOk());
  EXPECT_EQ(u->host, "10.0.0.7");
  EXPECT_EQ(u->port, kDefaultNfsPort);
  EXPECT_EQ(u->export_path, "/srv/rangefs/sn-07");
  EXPECT_EQ(u->mount_port, 0);

  u = ParseNfsUrl("nfs://node-7.example_x:20490/x?mountport=20491");
  ASSERT_THAT(u, IsOk());
  EXPECT_EQ(u->host, "node-7.example_x");
  EXPECT_EQ(u->port, 20490);
  EXPECT_EQ(u->export_path, "/x");
  EXPECT_EQ(u->mount_port, 20491);

  u = ParseNfsUrl("nfs://[fd00::7]:2050/");
  ASSERT_THAT(u, IsOk());
  EXPECT_EQ(u->host, "[fd00::7]");
  EXPECT_EQ(u->port, 2050);
  EXPECT_EQ(u->export_path, "/");
}

TEST(NfsExportTest, RefusesBadUrlsNamingTheRule) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "scheme"},
      {"http://h/x", "scheme"},
      {"nfs:///x", "empty host"},
      {"nfs://h", "no export path"},
      {"nfs://h:/x", "port"},
      {"nfs://h:0/x", "not 1..65535"},
      {"nfs://h:65536/x", "not 1..65535"},
      {"nfs://h:12a/x", "port"},
      {"nfs://h x/x", "host character"},
      {"nfs://[fd00::7/x", "unclosed"},
      {"nfs://[]/x", "empty host"},
      {"nfs://h/x/", "ends in '/'"},
      {"nfs://h//x", "normalized"},
      {"nfs://h/a/../b", "normalized"},
      {"nfs://h/a/./b", "normalized"},
      {"nfs://h/a b", "control character, space"},
      {std::string("nfs://h/a\nb"), "control character"},
      {"nfs://h/a%20b", "'%'"},
      {"nfs://h/a#b", "'#'"},
      {"nfs://h/x?version=3", "unknown query parameter"},
      {"nfs://h/x?mountport=0", "mountport"},
      {"nfs://h/x?mountport=1&mountport=2", "twice"},
      {"nfs://h/" + std::string(2000, 'a'), "longer than"},
  };
  for (const auto& [url, why] : cases) {
    EXPECT_THAT(ParseNfsUrl(url).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(why)))
        << url;
  }
}

TEST(NfsExportTest, Versions) {
  EXPECT_THAT(ValidateNfsVersion("3"), IsOk());
  EXPECT_THAT(ValidateNfsVersion("4"), IsOk());
  EXPECT_THAT(ValidateNfsVersion("4.1"), IsOk());
  for (const char* v : {"", "4.0", "4.2", "v3", "3 ", "2"}) {
    EXPECT_THAT(ValidateNfsVersion(v),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("not 3, 4 or 4.1")))
        << v;
  }
}

TEST(NfsExportTest, ValidateNamesTheField) {
  v1::NfsExport e;
  e.set_url("nfs://h/x");
  e.set_version("3");
  EXPECT_THAT(ValidateNfsExport(e), IsOk());
  e.set_version("9");
  EXPECT_THAT(ValidateNfsExport(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("nfs_export.version")));
  e.set_version("3");
  e.set_url("nfs:/h/x");
  EXPECT_THAT(ValidateNfsExport(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("nfs_export.url")));
}

}  // namespace
}  // namespace ns
}  // namespace rangefs
