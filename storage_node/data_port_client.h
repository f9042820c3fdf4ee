// File: data_port_client.h
//
// Client of one agent's raw-TCP data port (protocol: data_port.h). Used by
// NodeClient::ReadRange once the agent advertised its data port; usable on
// its own in tests.
//
//   DataPortClient dp("10.0.0.5:7070", "10.0.0.5", 7071);
//   RANGEFS_ASSIGN_OR_RETURN(size_t n,
//       dp.ReadRange("seg/0001", 0, buf, {.deadline = d}, nullptr));
//
// Keeps up to max_idle connections open between reads (a connection that
// failed or was abandoned mid-reply is closed, never pooled), each with the
// socket timeouts its last read set, set again only where they would wait
// past the next read's deadline. A reply is received through a 16 KiB
// buffer: a small read's reply (header, frame, end frame) takes one
// recv(2); a large frame's bytes go straight into the caller's buffer. Thread-safe;
// each read uses its own connection, and at most max_active reads run at
// once (later ones wait their turn, first come first served, within their
// deadline and canceller):
// many TCP flows into one link share its queue unfairly (some starve in
// loss recovery and their reads take many times longer), where gRPC
// multiplexes one connection.
#ifndef RANGEFS_STORAGE_NODE_DATA_PORT_CLIENT_H_
#define RANGEFS_STORAGE_NODE_DATA_PORT_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage_node/call_canceller.h"
#include "storage_node/scoped_fd.h"

namespace rangefs {
namespace node {

struct DataPortReadOptions {
  absl::Time deadline = absl::InfiniteFuture();
  bool verify_on_server = false;  // Request flag; forces the CRC check.
  bool check_crc = true;          // Check each frame's CRC32C here.
  // Request flag: the server serves this connection at background priority
  // from now on (data_port.h); use only a client kept for background reads.
  bool background = false;
  CallCanceller* canceller = nullptr;  // Not owned; may be null.
};

class DataPortClient {
 public:
  // `node_address` ("host:port" of the gRPC service) names the node in
  // errors; reads go to `host`:`port`. Does not connect yet.
  DataPortClient(std::string node_address, std::string host, int port,
                 size_t max_idle = 4, int max_active = 2);
  DataPortClient(const DataPortClient&) = delete;
  DataPortClient& operator=(const DataPortClient&) = delete;

  // Reads up to dst.size() bytes of `path` at `offset` into `dst`; returns
  // the count (short only at the end of the object). Blocking, bounded by
  // options.deadline (DEADLINE_EXCEEDED); options.canceller->Cancel() from
  // another thread aborts it promptly (CANCELLED). DATA_LOSS when a frame's
  // CRC32C does not match (naming node, object and offset); the agent's
  // codes (NOT_FOUND, OUT_OF_RANGE, RESOURCE_EXHAUSTED, ...) as they are;
  // UNAVAILABLE for connection failures. Never touches `dst` after
  // returning. `*not_sent` (may be null) is set true when no request
  // reached the agent (the connection could not be opened), so the caller
  // may use another transport.
  absl::StatusOr<size_t> ReadRange(const std::string& path, uint64_t offset,
                                   absl::Span<char> dst,
                                   const DataPortReadOptions& options,
                                   bool* not_sent = nullptr);

  int port() const { return port_; }
  // Reads waiting for their turn now (tests).
  size_t waiting() const;
  // Connections opened so far, and now idle in the pool (tests).
  uint64_t connections_opened() const { return opened_.load(); }
  size_t idle_connections() const;

 private:
  // A connection, and the socket timeouts it has set (data_port_client.cc,
  // ArmTimeouts: InfiniteDuration for none, zero for not known).
  struct Conn {
    ScopedFd fd;
    absl::Duration armed = absl::InfiniteDuration();
  };
  absl::StatusOr<ScopedFd> Open(const DataPortReadOptions& options);
  // One request on `c`. *reusable: the reply ended cleanly;
  // *no_reply: failed before any reply byte arrived.
  absl::StatusOr<size_t> ReadOnce(Conn& c, const std::string& path,
                                  uint64_t offset, absl::Span<char> dst,
                                  const DataPortReadOptions& options,
                                  bool* reusable, bool* no_reply);

  const std::string node_address_;
  const std::string host_;
  const int port_;
  const size_t max_idle_;
  const int max_active_;
  std::atomic<uint64_t> opened_{0};
  mutable absl::Mutex mu_;
  std::vector<Conn> idle_ ABSL_GUARDED_BY(mu_);
  // Reads running, and those waiting for their turn (in arrival order;
  // an ending read hands its turn to the first one).
  struct Waiter {
    bool granted = false;
  };
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Waiter*> waiting_ ABSL_GUARDED_BY(mu_);
  absl::CondVar turn_;  // a turn was handed over
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_DATA_PORT_CLIENT_H_
