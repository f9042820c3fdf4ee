#include "client_lib/internal/local_node.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rangefs {
namespace client_internal {

std::string HostOfAddress(absl::string_view address) {
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close != absl::string_view::npos) {
      return std::string(address.substr(1, close - 1));
    }
    return std::string(address);
  }
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || address.find(':') != colon) {
    return std::string(address);  // no port, or a bare IPv6 address
  }
  return std::string(address.substr(0, colon));
}

std::vector<std::string> LocalInterfaceHosts() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_LOOPBACK) ||
        !(a->ifa_flags & IFF_UP)) {
      continue;
    }
    char buf[INET6_ADDRSTRLEN] = {0};
    if (a->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr,
                buf, sizeof(buf));
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6,
                &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf,
                sizeof(buf));
    } else {
      continue;
    }
    out.push_back(buf);
  }
  freeifaddrs(list);
  return out;
}

bool IsLocalNode(const std::string& id,
                 const std::vector<std::string>& addresses,
                 const std::string& configured,
                 const std::vector<std::string>& local_hosts) {
  if (!configured.empty()) return id == configured;
  for (const std::string& a : addresses) {
    if (std::find(local_hosts.begin(), local_hosts.end(), HostOfAddress(a)) !=
        local_hosts.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace client_internal
}  // namespace rangefs
