#include "storage_node/same_host.h"

#include <netinet/in.h>
#include <string.h>

namespace rangefs {
namespace node {
namespace {

bool IsLoopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return IsLoopbackAddress(reinterpret_cast<const sockaddr_in&>(a).sin_addr);
  }
  if (a.ss_family == AF_INET6) {
    return IsLoopbackAddress(
        reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
  }
  return false;
}

}  // namespace

bool IsLoopbackAddress(const in_addr& a) {
  return (ntohl(a.s_addr) >> 24) == 127;
}

bool IsLoopbackAddress(const in6_addr& a) {
  if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
  return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
}

bool SameHostAddresses(const sockaddr_storage& local,
                       const sockaddr_storage& peer) {
  if (IsLoopback(peer)) return true;
  if (local.ss_family != peer.ss_family) return false;
  if (peer.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(local).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr;
  }
  if (peer.ss_family == AF_INET6) {
    return memcmp(&reinterpret_cast<const sockaddr_in6&>(local).sin6_addr,
                  &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr,
                  sizeof(in6_addr)) == 0;
  }
  return false;
}

bool PeerOnSameHost(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof(local), pl = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) {
    return false;
  }
  return SameHostAddresses(local, peer);
}

}  // namespace node
}  // namespace rangefs
