// File: internal/local_node.h
//
// Which storage node runs on this host (ClientOptions::local_node): the
// configured id, or a node one of whose agent addresses is an address of
// this host's network interfaces (loopback excluded: on a one-machine
// cluster every node would be "local").
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_LOCAL_NODE_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_LOCAL_NODE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace client_internal {

// "host:port" -> "host"; "[v6]:port" -> "v6"; no port: unchanged.
std::string HostOfAddress(absl::string_view address);

// Numeric addresses of this host's interfaces that are up, not loopback.
std::vector<std::string> LocalInterfaceHosts();

// Whether node `id` with agent `addresses` is this host's: `id` equals
// `configured` if that is set, else one address's host is in `local_hosts`.
bool IsLocalNode(const std::string& id,
                 const std::vector<std::string>& addresses,
                 const std::string& configured,
                 const std::vector<std::string>& local_hosts);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_LOCAL_NODE_H_
