// Who may change the export: identity matching against --writers and what a
// refusal says. (Real certificates through gRPC: agent_security_test.)
#include "storage_node/write_access.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Ids = std::vector<std::string>;

TEST(WriteAccessTest, WithoutIdentityChecksAnyoneWrites) {
  WriteAccess open({});
  EXPECT_THAT(open.CheckIdentities({}, "WriteObject"), IsOk());
  EXPECT_THAT(open.CheckIdentities(Ids{"reader"}, "WriteObject"), IsOk());
}

TEST(WriteAccessTest, OnlyListedIdentitiesWrite) {
  WriteAccess access(
      {.check_identity = true, .writers = {"rangefs-admin", "ingest.prod"}});
  EXPECT_THAT(access.CheckIdentities(Ids{"rangefs-admin"}, "WriteObject"),
              IsOk());
  // A SAN on the list is enough (CN first, then SANs).
  EXPECT_THAT(access.CheckIdentities(Ids{"host-7", "ingest.prod"}, "x"),
              IsOk());
  EXPECT_THAT(
      access.CheckIdentities(Ids{"rangefs-client"}, "DeleteObject \"a/b\""),
      StatusIs(absl::StatusCode::kPermissionDenied,
               AllOf(HasSubstr("DeleteObject \"a/b\""),
                     HasSubstr("\"rangefs-client\""),
                     HasSubstr("rangefs-admin,ingest.prod"),
                     HasSubstr("--writers"))));
  // Exact match: no case folding, no prefixes.
  EXPECT_THAT(access.CheckIdentities(Ids{"Rangefs-Admin"}, "x"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(access.CheckIdentities(Ids{"rangefs-admin2"}, "x"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(access.CheckIdentities({}, "WriteObject"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("without a client certificate")));
}

TEST(WriteAccessTest, NoWritersMeansNobodyWrites) {
  WriteAccess access({.check_identity = true});
  EXPECT_THAT(access.CheckIdentities(Ids{"rangefs-admin"}, "WriteObject"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("this agent has no writers")));
}

}  // namespace
}  // namespace node
}  // namespace rangefs
