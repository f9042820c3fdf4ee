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

// Returns a TCP port on 127.0.0.1 that was free a moment ago (bind to port
// 0). Another process may still take it; callers retry a failed start.
absl::StatusOr<int> PickUnusedPort();

// Returns true if 127.0.0.1:`port` accepts a TCP connection.
bool TcpPortOpen(int port);

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_BASE_TESTING_PORTS_H_
