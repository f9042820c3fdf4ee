#include "base/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/testing/http_get.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(MetricsServerTest, ServesTheTextOnMetricsAndRootOnly) {
  std::atomic<int> renders{0};
  auto server = MetricsServer::Start(
      0, [&] { return "rangefs_x_total " + std::to_string(++renders) + "\n"; });
  ASSERT_THAT(server, IsOk());
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  auto r = testing::HttpGet(port, "/metrics");
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(*r, StartsWith("HTTP/1.0 200 OK\r\n"));
  EXPECT_THAT(*r, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(*r, HasSubstr("\r\n\r\nrangefs_x_total 1\n"));
  // Rendered anew for each scrape.
  r = testing::HttpGet(port, "/");
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(*r, HasSubstr("rangefs_x_total 2\n"));
  r = testing::HttpGet(port, "/other");
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(*r, StartsWith("HTTP/1.0 404"));
  EXPECT_EQ(renders.load(), 2);
}

// A client that connects and sends nothing holds the one serving thread for
// at most its 2 s I/O timeout; the next scrape is answered after it. (One
// held forever would leave the next unanswered past the GET's 60 s: HttpGet's
// default 5 s is too close to the server's 2 s on a loaded machine.)
TEST(MetricsServerTest, AStuckScraperDoesNotBlockTheNext) {
  auto server = MetricsServer::Start(0, [] { return std::string("m 1\n"); });
  ASSERT_THAT(server, IsOk());
  const int stuck = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stuck, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  auto r = testing::HttpGet((*server)->port(), "/metrics", absl::Seconds(60));
  close(stuck);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(*r, HasSubstr("\r\n\r\nm 1\n"));
}

TEST(MetricsServerTest, APortOutOfRangeIsRefused) {
  for (int bad : {-1, 65536}) {
    EXPECT_THAT(MetricsServer::Start(bad, [] { return std::string(); }),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("outside 0-65535")));
  }
}

TEST(MetricsServerTest, APortInUseIsRefusedNamingTheAddress) {
  auto server = MetricsServer::Start(0, [] { return std::string(); });
  ASSERT_THAT(server, IsOk());
  EXPECT_THAT(
      MetricsServer::Start((*server)->port(), [] { return ""; }),
      StatusIs(absl::StatusCode::kUnknown,
               HasSubstr(absl::StrCat("127.0.0.1:", (*server)->port()))));
}

}  // namespace
}  // namespace rangefs
