// File: same_host.h
//
// Whether a connected TCP socket's peer is on this host: its traffic then
// goes through the loopback device, where the "wire" is the receiver's copy
// out of the sender's socket buffers. The data port picks how it sends
// with it (data_port.h, DataPortSend::kAuto).
#ifndef RANGEFS_STORAGE_NODE_SAME_HOST_H_
#define RANGEFS_STORAGE_NODE_SAME_HOST_H_

#include <netinet/in.h>
#include <sys/socket.h>

namespace rangefs {
namespace node {

// Loopback addresses: 127.0.0.0/8; ::1 and ::ffff:127.0.0.0/104. The one
// definition both here and in transport_security.h (IsLoopbackHost).
bool IsLoopbackAddress(const in_addr& a);
bool IsLoopbackAddress(const in6_addr& a);

// True if `peer` is a loopback address (127.0.0.0/8, ::1, or
// ::ffff:127.0.0.0/104) or the same address as `local` (a connection to
// one of this host's own addresses). False for anything else, unknown
// families included.
bool SameHostAddresses(const sockaddr_storage& local,
                       const sockaddr_storage& peer);

// SameHostAddresses of a connected socket's two ends; false if either
// cannot be read.
bool PeerOnSameHost(int fd);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_SAME_HOST_H_
