// File: ports.h
//
// Loopback TCP ports for tests (agents, etcd members, fake servers).
//
//   RANGEFS_ASSIGN_OR_RETURN(int port, testing::PickUnusedPort());
//   ... start a server on port ...
//   bool up = testing::TcpPortOpen(port);
#ifndef RANGEFS_BASE_TESTING_PORTS_H_
#define RANGEFS_BASE_TESTING_PORTS_H_

#include "absl/status/statusor.h"

namespace rangefs {
namespace testing {

// Returns a TCP port on 127.0.0.1 that was free a moment ago: a random one
// between 10000 and the kernel's ephemeral range, so that no outgoing
// connection (which gets an ephemeral port) can take it while its server
// is down for a restart; port 0's pick if none of 64 tries is free.
// Another test may still pick it; callers retry a failed start.
absl::StatusOr<int> PickUnusedPort();

// Returns a TCP socket listening on 127.0.0.1 at a port the kernel picks
// (in `*port`), for a fake server the test runs; the caller closes it.
absl::StatusOr<int> ListenLoopback(int* port);

// Returns true if 127.0.0.1:`port` accepts a TCP connection.
bool TcpPortOpen(int port);

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_BASE_TESTING_PORTS_H_
