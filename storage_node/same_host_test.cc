#include "storage_node/same_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace rangefs {
namespace node {
namespace {

sockaddr_storage V4(const std::string& ip) {
  sockaddr_storage s{};
  auto& in = reinterpret_cast<sockaddr_in&>(s);
  in.sin_family = AF_INET;
  EXPECT_EQ(inet_pton(AF_INET, ip.c_str(), &in.sin_addr), 1) << ip;
  return s;
}

sockaddr_storage V6(const std::string& ip) {
  sockaddr_storage s{};
  auto& in6 = reinterpret_cast<sockaddr_in6&>(s);
  in6.sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, ip.c_str(), &in6.sin6_addr), 1) << ip;
  return s;
}

TEST(SameHostTest, LoopbackPeersAreThisHost) {
  EXPECT_TRUE(SameHostAddresses(V4("127.0.0.1"), V4("127.0.0.1")));
  EXPECT_TRUE(SameHostAddresses(V4("10.0.0.1"), V4("127.3.2.1")));
  EXPECT_TRUE(SameHostAddresses(V6("::1"), V6("::1")));
  EXPECT_TRUE(SameHostAddresses(V6("::ffff:10.0.0.1"), V6("::ffff:127.0.0.9")));
}

TEST(SameHostTest, OwnAddressIsThisHostOthersAreNot) {
  EXPECT_TRUE(SameHostAddresses(V4("10.1.2.3"), V4("10.1.2.3")));
  EXPECT_FALSE(SameHostAddresses(V4("10.1.2.3"), V4("10.1.2.4")));
  EXPECT_FALSE(SameHostAddresses(V4("127.0.0.1"), V4("128.0.0.1")));
  EXPECT_TRUE(SameHostAddresses(V6("fd00::1"), V6("fd00::1")));
  EXPECT_FALSE(SameHostAddresses(V6("fd00::1"), V6("fd00::2")));
  EXPECT_FALSE(SameHostAddresses(V6("::ffff:10.0.0.1"), V6("::ffff:10.0.0.2")));
  // Mixed families, and a family that is not IP.
  EXPECT_FALSE(SameHostAddresses(V4("10.1.2.3"), V6("::ffff:10.1.2.3")));
  sockaddr_storage unix_peer{};
  unix_peer.ss_family = AF_UNIX;
  EXPECT_FALSE(SameHostAddresses(unix_peer, unix_peer));
}

TEST(SameHostTest, ConnectedSockets) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_FALSE(PeerOnSameHost(pair[0]));  // not IP: unknown
  close(pair[0]);
  close(pair[1]);
  EXPECT_FALSE(PeerOnSameHost(-1));

  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(l, 1), 0);
  ASSERT_EQ(getsockname(l, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  int s = accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0);
  EXPECT_TRUE(PeerOnSameHost(s));
  EXPECT_TRUE(PeerOnSameHost(c));
  close(s);
  close(c);
  close(l);
}

}  // namespace
}  // namespace node
}  // namespace rangefs
