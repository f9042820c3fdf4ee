// File: same_host.h
//
// Whether a connected TCP socket's peer is on this host: its traffic then
// goes through the loopback device, where the "wire" is the receiver's copy
// out of the sender's socket buffers. The data port picks how it sends
// with it (data_port.h, DataPortSend::kAuto).
#ifndef RANGEFS_STORAGE_NODE_SAME_HOST_H_
#define RANGEFS_STORAGE_NODE_SAME_HOST_H_

#include <sys/socket.h>

namespace rangefs {
namespace node {

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
