// A real 3-member etcd with TLS for clients and peers and client-cert-auth,
// using certificates made by deploy/etcd/make-certs.sh: the rangefs etcd
// client and rangefs-admin work with a client cert, and are refused without
// one, without TLS, or with another CA.
#include <sys/wait.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::rangefs::testing::EtcdCluster;
using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

// Runs argv to completion (bounded) and returns its exit code; -1 on a
// start failure or timeout. The output is appended to `log`.
int RunToExit(const std::vector<std::string>& argv, const std::string& log) {
  auto p = Subprocess::Start({.argv = argv, .log_path = log});
  if (!p.ok()) return -1;
  auto st = (*p)->Wait(absl::Seconds(120));
  if (!st.ok() || !WIFEXITED(*st)) return -1;
  return WEXITSTATUS(*st);
}

class EtcdTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = MakeTempDir("tls-");
    ASSERT_THAT(dir.status(), IsOk());
    dir_ = new std::string(*dir);
    std::string script = RunfilePath("deploy/etcd/make-certs.sh");
    ASSERT_EQ(
        RunToExit({"/bin/bash", script, *dir_ + "/certs"}, *dir_ + "/mk.log"),
        0);
    // Idempotent: a second run changes nothing.
    ASSERT_EQ(
        RunToExit({"/bin/bash", script, *dir_ + "/certs"}, *dir_ + "/mk2.log"),
        0);
    // Another CA, for the wrong-CA case.
    ASSERT_EQ(RunToExit({"/bin/bash", script, *dir_ + "/other", "--members=m0"},
                        *dir_ + "/mk3.log"),
              0);
    auto etcd = EtcdCluster::Start({.members = 3, .tls_dir = *dir_ + "/certs"});
    ASSERT_THAT(etcd.status(), IsOk());
    etcd_ = etcd->release();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
    if (dir_ != nullptr) testing::RemoveTree(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  static std::string Certs(const std::string& f) {
    return absl::StrCat(*dir_, "/certs/", f);
  }

  static std::string* dir_;
  static EtcdCluster* etcd_;
};

std::string* EtcdTlsTest::dir_ = nullptr;
EtcdCluster* EtcdTlsTest::etcd_ = nullptr;

TEST_F(EtcdTlsTest, MakeCertsIsIdempotent) {
  std::string first, second;
  {
    std::ifstream a(*dir_ + "/mk.log"), b(*dir_ + "/mk2.log");
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    first = sa.str();
    second = sb.str();
  }
  EXPECT_THAT(first, HasSubstr("created"));
  EXPECT_THAT(first, HasSubstr("rangefs-client.crt"));
  EXPECT_EQ(second, "");
}

TEST_F(EtcdTlsTest, ClientWithCertTalksToEveryMember) {
  auto client =
      etcd::EtcdClient::Open({.endpoints = etcd_->endpoints(),
                              .ca_file = Certs("ca.crt"),
                              .cert_file = Certs("rangefs-admin.crt"),
                              .key_file = Certs("rangefs-admin.key")});
  ASSERT_THAT(client.status(), IsOk());
  ASSERT_THAT((*client)->Put("/rangefs/v1/tls/k", "v").status(), IsOk());
  for (int i = 0; i < etcd_->size(); ++i) {
    auto st = (*client)->Status(etcd_->endpoint(i));
    ASSERT_THAT(st.status(), IsOk()) << etcd_->LogTail(i);
  }
  auto r = (*client)->Range("/rangefs/v1/tls/k");
  ASSERT_THAT(r.status(), IsOk());
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].value, "v");
}

TEST_F(EtcdTlsTest, RangefsAdminBinaryWorksOverTls) {
  std::string admin = RunfilePath("admin/rangefs-admin");
  std::vector<std::string> base = {admin,
                                   "--etcd=" + etcd_->endpoints(),
                                   "--cluster=tls",
                                   "--ca=" + Certs("ca.crt"),
                                   "--cert=" + Certs("rangefs-admin.crt"),
                                   "--key=" + Certs("rangefs-admin.key")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = base;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  std::string log = *dir_ + "/admin.log";
  EXPECT_EQ(RunToExit(with({"node", "add", "n1", "--address=127.0.0.1:7001",
                            "--export=/srv/n1"}),
                      log),
            0);
  EXPECT_EQ(RunToExit(with({"node", "list"}), log), 0);
  // Without a client certificate the same command is refused (exit 5 =
  // unavailable).
  EXPECT_EQ(
      RunToExit({admin, "--etcd=" + etcd_->endpoints(), "--cluster=tls",
                 "--timeout=1", "--ca=" + Certs("ca.crt"), "node", "list"},
                log),
      5);
}

TEST_F(EtcdTlsTest, ClientWithoutCertIsRefused) {
  auto client = etcd::EtcdClient::Open({.endpoints = etcd_->endpoint(0),
                                        .call_timeout = absl::Seconds(1),
                                        .max_attempts = 1,
                                        .ca_file = Certs("ca.crt")});
  ASSERT_THAT(client.status(), IsOk());
  auto r = (*client)->Range("/rangefs/v1/tls/k");
  EXPECT_THAT(r.status(), Not(IsOk()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(etcd_->endpoint(0)));
}

TEST_F(EtcdTlsTest, PlaintextClientIsRefused) {
  auto client = etcd::EtcdClient::Open({.endpoints = etcd_->endpoint(0),
                                        .call_timeout = absl::Seconds(1),
                                        .max_attempts = 1});
  ASSERT_THAT(client.status(), IsOk());
  EXPECT_THAT((*client)->Range("/rangefs/v1/tls/k").status(), Not(IsOk()));
}

TEST_F(EtcdTlsTest, WrongCaIsRefused) {
  auto client = etcd::EtcdClient::Open(
      {.endpoints = etcd_->endpoint(0),
       .call_timeout = absl::Seconds(1),
       .max_attempts = 1,
       .ca_file = absl::StrCat(*dir_, "/other/ca.crt"),
       .cert_file = absl::StrCat(*dir_, "/other/rangefs-admin.crt"),
       .key_file = absl::StrCat(*dir_, "/other/rangefs-admin.key")});
  ASSERT_THAT(client.status(), IsOk());
  EXPECT_THAT((*client)->Range("/rangefs/v1/tls/k").status(), Not(IsOk()));
}

TEST_F(EtcdTlsTest, MissingPemFileIsInvalidArgument) {
  EXPECT_THAT(etcd::EtcdClient::Open({.endpoints = etcd_->endpoint(0),
                                      .ca_file = *dir_ + "/nope/ca.crt"})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace rangefs
