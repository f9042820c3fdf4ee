// TLS and mTLS of the agent's gRPC service, with certificates made by
// deploy/etcd/make-certs.sh: an in-process Agent and the real rangefs-node
// binary serve TLS; NodeClient reads with the right CA (and, for mTLS, a
// client certificate) and is refused in plaintext, with another CA, or
// without / with a foreign client certificate. Bad PEM paths are
// INVALID_ARGUMENT naming the file.
#include "storage_node/tls.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage_node/agent.h"
#include "storage_node/node_client.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::Subprocess;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kObject[] = "data/obj";

// Runs argv to completion (bounded); its exit code, or -1.
int RunToExit(const std::vector<std::string>& argv, const std::string& log) {
  auto p = Subprocess::Start({.argv = argv, .log_path = log});
  if (!p.ok()) return -1;
  auto st = (*p)->Wait(absl::Seconds(60));
  if (!st.ok() || !WIFEXITED(*st)) return -1;
  return WEXITSTATUS(*st);
}

class TlsTest : public ::testing::Test {
 protected:
  // Two independent CAs, each with a server cert "agent" (SANs localhost,
  // 127.0.0.1) and a client cert "job".
  static void SetUpTestSuite() {
    auto dir = MakeTempDir("tls_test");
    ASSERT_THAT(dir, IsOk());
    dir_ = new std::string(*dir);
    const std::string script = RunfilePath("deploy/etcd/make-certs.sh");
    for (const char* ca : {"good", "other"}) {
      ASSERT_EQ(RunToExit({"/bin/bash", script, Certs(ca), "--members=agent",
                           "--clients=job"},
                          *dir_ + "/mk-" + ca + ".log"),
                0);
    }
  }
  static void TearDownTestSuite() {
    testing::RemoveTree(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Certs(const std::string& ca) { return *dir_ + "/" + ca; }
  static std::string File(const std::string& ca, const std::string& name) {
    return Certs(ca) + "/" + name;
  }

  void SetUp() override {
    auto e = testing::ScopedTempDir::Make("export");
    ASSERT_THAT(e, IsOk());
    export_dir_ = *std::move(e);
    export_ = export_dir_.path();
    ASSERT_EQ(mkdir((export_ + "/data").c_str(), 0755), 0);
    for (int i = 0; i < 300000; ++i) data_.push_back(static_cast<char>(i * 13));
    std::ofstream(export_ + "/" + kObject, std::ios::binary)
        .write(data_.data(), static_cast<std::streamsize>(data_.size()));
  }

  absl::StatusOr<std::unique_ptr<Agent>> StartAgent(AgentTlsOptions tls) {
    return Agent::Start(
        {.node_id = "t1", .export_root = export_, .tls = std::move(tls)});
  }

  // Reads the test object through `address` with `tls`.
  absl::Status ReadAll(const std::string& address,
                       const NodeClientTlsOptions& tls) {
    auto nc = NodeClient::Connect(address, tls);
    if (!nc.ok()) return nc.status();
    std::string got(data_.size(), '\0');
    absl::StatusOr<size_t> n =
        (*nc)->ReadRange(kObject, 0, absl::MakeSpan(&got[0], got.size()),
                         {.deadline = absl::Now() + absl::Seconds(30)});
    if (!n.ok()) return n.status();
    if (*n != data_.size() || got != data_) {
      return absl::DataLossError(absl::StrCat("read ", *n, " bytes, differ"));
    }
    return absl::OkStatus();
  }

  static std::string* dir_;
  testing::ScopedTempDir export_dir_;  // removed with the fixture
  std::string export_;
  std::string data_;
};

std::string* TlsTest::dir_ = nullptr;

// A refused TLS handshake shows as UNAVAILABLE (or the deadline).
auto Refused() {
  return AnyOf(StatusIs(absl::StatusCode::kUnavailable),
               StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(TlsTest, TlsServesTheRightCaAndRefusesOthers) {
  auto agent = StartAgent({.cert_file = File("good", "agent.crt"),
                           .key_file = File("good", "agent.key")});
  ASSERT_THAT(agent, IsOk());
  const std::string addr = (*agent)->address();
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt")}), IsOk());
  // The certificate names localhost too.
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .server_name_override = "localhost"}),
              IsOk());
  EXPECT_THAT(ReadAll(addr, {}), Refused());  // Plaintext.
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("other", "ca.crt")}), Refused());
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .server_name_override = "not-the-agent"}),
              Refused());
  // Without mTLS a client certificate is accepted but not needed.
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .cert_file = File("good", "job.crt"),
                             .key_file = File("good", "job.key")}),
              IsOk());
}

TEST_F(TlsTest, PlaintextAgentRefusesTlsClient) {
  auto agent = StartAgent({});
  ASSERT_THAT(agent, IsOk());
  EXPECT_THAT(ReadAll((*agent)->address(), {}), IsOk());
  EXPECT_THAT(ReadAll((*agent)->address(), {.ca_file = File("good", "ca.crt")}),
              Refused());
}

TEST_F(TlsTest, MtlsNeedsAClientCertFromTheClientCa) {
  auto agent = StartAgent({.cert_file = File("good", "agent.crt"),
                           .key_file = File("good", "agent.key"),
                           .client_ca_file = File("good", "ca.crt")});
  ASSERT_THAT(agent, IsOk());
  const std::string addr = (*agent)->address();
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .cert_file = File("good", "job.crt"),
                             .key_file = File("good", "job.key")}),
              IsOk());
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt")}), Refused());
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .cert_file = File("other", "job.crt"),
                             .key_file = File("other", "job.key")}),
              Refused());
  EXPECT_THAT(ReadAll(addr, {}), Refused());
}

TEST_F(TlsTest, BadPemFilesAreInvalidArgumentNamingTheFile) {
  const std::string missing = *dir_ + "/no-such.pem";
  EXPECT_THAT(
      StartAgent({.cert_file = missing, .key_file = File("good", "agent.key")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing)));
  EXPECT_THAT(
      StartAgent({.cert_file = File("good", "agent.crt"), .key_file = missing})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing)));
  EXPECT_THAT(StartAgent({.cert_file = File("good", "agent.crt"),
                          .key_file = File("good", "agent.key"),
                          .client_ca_file = missing})
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing)));
  // A key without a certificate, a client CA without a server cert.
  EXPECT_THAT(StartAgent({.key_file = File("good", "agent.key")}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(StartAgent({.client_ca_file = File("good", "ca.crt")}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string empty = *dir_ + "/empty.pem";
  std::ofstream(empty).close();
  EXPECT_THAT(
      StartAgent({.cert_file = empty, .key_file = File("good", "agent.key")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));

  EXPECT_THAT(NodeClient::Connect("127.0.0.1:1", {.ca_file = missing}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing)));
  EXPECT_THAT(
      NodeClient::Connect("127.0.0.1:1", {.ca_file = File("good", "ca.crt"),
                                          .cert_file = missing,
                                          .key_file = File("good", "job.key")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing)));
  EXPECT_THAT(
      NodeClient::Connect("127.0.0.1:1", {.ca_file = File("good", "ca.crt"),
                                          .cert_file = File("good", "job.crt")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      NodeClient::Connect("127.0.0.1:1", {.cert_file = File("good", "job.crt"),
                                          .key_file = File("good", "job.key")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
  // Plaintext still works with no options.
  EXPECT_THAT(NodeClient::Connect("127.0.0.1:1").status(), IsOk());
}

// The real binary: flags turn on mTLS; a missing file stops it at start.
TEST_F(TlsTest, RangefsNodeBinaryServesMtlsFromFlags) {
  auto p = Subprocess::Start(
      {.argv = {RunfilePath("storage_node/rangefs-node"), "--node_id=tb",
                "--export_root=" + export_, "--listen=127.0.0.1:0",
                "--tls_cert=" + File("good", "agent.crt"),
                "--tls_key=" + File("good", "agent.key"),
                "--tls_client_ca=" + File("good", "ca.crt")},
       .log_path = *dir_ + "/node-mtls.log"});
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT((*p)->WaitForLog("serving on 127.0.0.1:", absl::Seconds(60)),
              IsOk());
  const std::string log = (*p)->Log();
  const std::string marker = "serving on 127.0.0.1:";
  const size_t at = log.find(marker) + marker.size();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(log.substr(at, log.find('\n', at) - at), &port))
      << log;
  EXPECT_THAT(log, HasSubstr("(mTLS)"));
  const std::string addr = absl::StrCat("127.0.0.1:", port);
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt"),
                             .cert_file = File("good", "job.crt"),
                             .key_file = File("good", "job.key")}),
              IsOk());
  EXPECT_THAT(ReadAll(addr, {.ca_file = File("good", "ca.crt")}), Refused());
  EXPECT_THAT(ReadAll(addr, {}), Refused());

  const std::string missing = *dir_ + "/missing.crt";
  const std::string bad_log = *dir_ + "/node-bad.log";
  EXPECT_EQ(RunToExit({RunfilePath("storage_node/rangefs-node"),
                       "--node_id=tb2", "--export_root=" + export_,
                       "--listen=127.0.0.1:0", "--tls_cert=" + missing,
                       "--tls_key=" + File("good", "agent.key")},
                      bad_log),
            1);
  std::ifstream in(bad_log);
  const std::string bad((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  EXPECT_THAT(bad, HasSubstr(missing));
  EXPECT_THAT(bad, HasSubstr("INVALID_ARGUMENT"));
}

}  // namespace
}  // namespace node
}  // namespace rangefs
