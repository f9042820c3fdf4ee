// The agent's start-up policy: which listen / data_listen / TLS / --insecure
// combinations start, what each is published as, and what a refusal says.
#include "storage_node/transport_security.h"

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The decision for `config`, or a message when it was refused.
MATCHER_P(Decides, want,
          "decides " + std::string(TransportSecurityName(want))) {
  if (!arg.ok()) {
    *result_listener << "refused: " << arg.status();
    return false;
  }
  *result_listener << "decided " << TransportSecurityName(*arg);
  return *arg == want;
}

const AgentTlsOptions kMtls = {
    .cert_file = "a.crt", .key_file = "a.key", .client_ca_file = "ca.crt"};
const AgentTlsOptions kServerTls = {.cert_file = "a.crt", .key_file = "a.key"};

TEST(TransportSecurityTest, LoopbackHosts) {
  for (const char* h :
       {"127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LocalHost",
        "::ffff:127.0.0.1", "[::ffff:127.0.0.2]"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h :
       {"0.0.0.0", "::", "[::]", "", "10.1.2.3", "128.0.0.1", "::ffff:10.0.0.1",
        "fe80::1", "sn-017", "localhost.evil.example", "127.0.0.1.example",
        "[::1"}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
}

TEST(TransportSecurityTest, LoopbackNeedsNothing) {
  EXPECT_THAT(DecideTransportSecurity({.listen = "127.0.0.1:0"}),
              Decides(TransportSecurity::kPlaintextLoopback));
  EXPECT_THAT(DecideTransportSecurity(
                  {.listen = "localhost:7070", .data_listen = "auto"}),
              Decides(TransportSecurity::kPlaintextLoopback));
  EXPECT_THAT(DecideTransportSecurity(
                  {.listen = "[::1]:7070", .data_listen = "127.0.0.1:7071"}),
              Decides(TransportSecurity::kPlaintextLoopback));
  EXPECT_THAT(
      DecideTransportSecurity({.listen = "127.0.0.1:0", .tls = kServerTls}),
      Decides(TransportSecurity::kTlsLoopback));
  EXPECT_THAT(DecideTransportSecurity({.listen = "127.0.0.1:0", .tls = kMtls}),
              Decides(TransportSecurity::kMtls));
  // --insecure changes nothing where it is not needed.
  EXPECT_THAT(
      DecideTransportSecurity({.listen = "127.0.0.1:0", .insecure = true}),
      Decides(TransportSecurity::kPlaintextLoopback));
}

TEST(TransportSecurityTest, NonLoopbackNeedsMtlsOrInsecure) {
  for (const char* listen :
       {"0.0.0.0:7070", "[::]:7070", "10.1.3.17:7070", "sn-017:7070"}) {
    SCOPED_TRACE(listen);
    EXPECT_THAT(
        DecideTransportSecurity({.listen = listen, .data_listen = "auto"}),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 AllOf(HasSubstr(listen), HasSubstr("without TLS"),
                       HasSubstr("--tls_client_ca"), HasSubstr("--writers"),
                       HasSubstr("--insecure"))));
    EXPECT_THAT(DecideTransportSecurity({.listen = listen, .tls = kServerTls}),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("with TLS but without --tls_client_ca")));
    EXPECT_THAT(DecideTransportSecurity({.listen = listen, .tls = kMtls}),
                Decides(TransportSecurity::kMtls));
    EXPECT_THAT(
        DecideTransportSecurity(
            {.listen = listen, .data_listen = "auto", .insecure = true}),
        Decides(TransportSecurity::kInsecure));
    EXPECT_THAT(DecideTransportSecurity(
                    {.listen = listen, .tls = kServerTls, .insecure = true}),
                Decides(TransportSecurity::kInsecure));
  }
}

TEST(TransportSecurityTest, DataPortCountsUnlessTlsTurnsItOff) {
  EXPECT_THAT(DecideTransportSecurity(
                  {.listen = "127.0.0.1:7070", .data_listen = "0.0.0.0:7071"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("data port"), HasSubstr("0.0.0.0"),
                             HasSubstr("--data_listen=off"))));
  EXPECT_THAT(DecideTransportSecurity({.listen = "127.0.0.1:7070",
                                       .data_listen = "0.0.0.0:7071",
                                       .insecure = true}),
              Decides(TransportSecurity::kInsecure));
  EXPECT_THAT(DecideTransportSecurity(
                  {.listen = "127.0.0.1:7070", .data_listen = "off"}),
              Decides(TransportSecurity::kPlaintextLoopback));
  // With TLS the agent runs no data port, whatever data_listen says.
  EXPECT_THAT(DecideTransportSecurity({.listen = "127.0.0.1:7070",
                                       .data_listen = "0.0.0.0:7071",
                                       .tls = kServerTls}),
              Decides(TransportSecurity::kTlsLoopback));
}

TEST(TransportSecurityTest, MalformedAddressesAreInvalidArgument) {
  EXPECT_THAT(DecideTransportSecurity({.listen = "nohost"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(DecideTransportSecurity({.listen = "127.0.0.1:99999"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      DecideTransportSecurity({.listen = "127.0.0.1:0", .data_listen = "x"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data_listen")));
}

TEST(TransportSecurityTest, Names) {
  EXPECT_EQ(TransportSecurityName(TransportSecurity::kMtls), "mtls");
  EXPECT_EQ(TransportSecurityName(TransportSecurity::kInsecure), "insecure");
}

}  // namespace
}  // namespace node
}  // namespace rangefs
