#include "base/testing/ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace testing {

namespace {

// A socket bound to 127.0.0.1:`port` (0: the kernel picks), and the port
// it got in `*bound`; or an error.
absl::StatusOr<int> BoundLoopback(int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(fd);
    return ErrnoStatus(e, absl::StrCat("bind 127.0.0.1:", port));
  }
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int e = errno;
    close(fd);
    return ErrnoStatus(e, "getsockname");
  }
  *bound = ntohs(addr.sin_port);
  return fd;
}

// The port a socket bound to 127.0.0.1:`port` got (the socket is closed
// again), or an error.
absl::StatusOr<int> BindLoopback(int port) {
  int bound = 0;
  absl::StatusOr<int> fd = BoundLoopback(port, &bound);
  if (!fd.ok()) return fd.status();
  close(*fd);
  return bound;
}

// The first port of the kernel's ephemeral range (the ports it gives
// outgoing connections and bind to port 0), 32768 if unreadable.
int EphemeralLow() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (!(f >> low) || low <= 0) return 32768;
  return low;
}

}  // namespace

absl::StatusOr<int> PickUnusedPort() {
  // Below the ephemeral range: a server restarted on its port (an agent, an
  // etcd member) must not find it taken by some client's outgoing
  // connection, which the kernel may give any free ephemeral port.
  constexpr int kFirst = 10000;
  const int last = EphemeralLow() - 1;
  if (last > kFirst) {
    static std::mutex mu;
    static std::mt19937 gen(std::random_device{}());
    for (int i = 0; i < 64; ++i) {
      int port;
      {
        std::lock_guard<std::mutex> l(mu);
        port = std::uniform_int_distribution<int>(kFirst, last)(gen);
      }
      absl::StatusOr<int> got = BindLoopback(port);
      if (got.ok()) return got;
    }
  }
  return BindLoopback(0);
}

absl::StatusOr<int> ListenLoopback(int* port) {
  absl::StatusOr<int> fd = BoundLoopback(0, port);
  if (!fd.ok()) return fd.status();
  if (listen(*fd, 16) != 0) {
    int e = errno;
    close(*fd);
    return ErrnoStatus(e, "listen on 127.0.0.1");
  }
  return fd;
}

bool TcpPortOpen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace testing
}  // namespace rangefs
