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

// HttpGet, but each socket call may wait `timeout` (HttpGet's 5 s is too
// close to the server's 2 s for a loaded machine when the answer must wait
// for a stuck scraper).
absl::StatusOr<std::string> SlowGet(int port, const std::string& path,
                                    int timeout_s) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket");
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\n\r\n");
  std::string resp;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      send(fd, req.data(), req.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(req.size())) {
    close(fd);
    return absl::UnavailableError("connect/send");
  }
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (n < 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("no answer within ", timeout_s, " s: '", resp, "'"));
  }
  return resp;
}

// A client that connects and sends nothing holds the one serving thread for
// at most its 2 s I/O timeout; the next scrape is answered after it. (One
// held forever would leave the next unanswered past SlowGet's 60 s.)
TEST(MetricsServerTest, AStuckScraperDoesNotBlockTheNext) {
  auto server = MetricsServer::Start(0, [] { return std::string("m 1\n"); });
  ASSERT_THAT(server, IsOk());
  const int stuck = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stuck, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  auto r = SlowGet((*server)->port(), "/metrics", /*timeout_s=*/60);
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
