// File: data_port.h
//
// The storage node's raw-TCP "data port" for ReadRange (in the spirit of
// HDFS's DataTransferProtocol): the same reads as the gRPC ReadRange, without
// HTTP/2 framing, so that whole checksum blocks go from the page cache to
// the socket with sendfile(2) and the client checks the CRC-32C stored at
// ingest time end to end. Plaintext only: Agent::Start does not start it
// when the agent runs TLS. NodeClient (node_client.h) finds it through
// GetStatsResponse.data_port and uses it transparently.
//
// On by default (rangefs-node --data_listen=auto; off: reads use gRPC).
// On the 2-core test VM (storage_node/node_bench.sh, tests/bench/run.sh
// part B; numbers in tests/bench/RESULTS.md) it reads about 3x as fast as
// gRPC ReadRange at a third of the CPU on loopback, and through capped
// links it matched gRPC's throughput with a lower p99, once the client
// limited each node to 2 reads at a time, served in arrival order
// (data_port_client.h).
//
// The object side of a read (confined open, range bounds, sidecar, block
// checks) is object_reader.h, as for gRPC ReadRange; this file only frames
// and sends.
//
// Protocol, version 1. All integers little-endian (data_port_wire.h).
//
//   Request (client -> server):
//     u32 magic "RFDP" (0x50444652)   u8 version (1)   u8 flags
//     u16 path_len (<= 4096)          u64 offset       u64 length
//     path_len bytes of object path (export-relative, as for gRPC)
//   flags bit 0 = verify: partial blocks are checked against the sidecar on
//   the server; whole blocks carry their stored CRC and the client MUST
//   check every frame CRC (so every byte is checked against the ingest-time
//   checksum end to end). flags bit 1 = background (copies between agents):
//   from this request on, the connection's thread runs at the server's
//   DataPortOptions::background_nice CPU priority, for good (a client keeps
//   such connections for background reads only). Other bits must be 0.
//
//   Reply (server -> client):
//     u32 magic "RFDR" (0x52444652)   u32 code (absl::StatusCode)
//     u32 message_len (<= 4096)       message bytes
//   then, only when code is OK, frames:
//     u32 len   u32 crc32c (of the frame's bytes)   len bytes
//   covering [offset, offset + min(length, size - offset)) in order, ended
//   by a frame with len 0 (crc 0). A frame with len 0xFFFFFFFF is an error
//   trailer instead: its crc field is the code, then u32 message_len and the
//   message follow; the request ends there (e.g. DATA_LOSS for a verify
//   read, or an I/O error).
//
//   Frames follow the object's sidecar blocks (sidecar.h): a whole block is
//   one frame whose crc is the STORED block CRC and whose bytes are sent with
//   sendfile (no user-space copy); a partial head/tail block, or an object
//   without a (matching) sidecar, is pread into a buffer and gets a CRC
//   computed now (frames of at most kDataPortMaxFrameBytes). A client that
//   checks frame CRCs therefore detects on-disk corruption of whole blocks
//   even without verify (DATA_LOSS).
//
//   After the end frame or a non-OK reply header the connection takes the
//   next request (clients pool connections). A malformed request (bad
//   magic, version, oversized path_len) gets an INVALID_ARGUMENT reply and
//   the connection is closed. Errors are those of gRPC ReadRange: NOT_FOUND,
//   OUT_OF_RANGE (offset > size), INVALID_ARGUMENT / PERMISSION_DENIED (bad
//   or escaping paths, resolved only through ExportRoot), FAILED_PRECONDITION
//   (verify without sidecar), RESOURCE_EXHAUSTED (the service's
//   max_concurrent_reads, shared with gRPC, or max_connections).
//
// Threads: one listener plus one per connection (<= max_connections), all
// joined by Shutdown / the destructor. Thread-safe.
#ifndef RANGEFS_STORAGE_NODE_DATA_PORT_H_
#define RANGEFS_STORAGE_NODE_DATA_PORT_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage_node/agent_service.h"
#include "storage_node/export_root.h"
#include "storage_node/scoped_fd.h"

namespace rangefs {
namespace node {

// How the data port sends a whole checksum block (the bytes whose CRC the
// sidecar holds; partial blocks and objects without a sidecar are always
// read into a buffer, since their CRC is computed from the bytes).
enum class DataPortSend {
  // sendfile(2): no copy on the agent. Across a NIC the card reads the
  // page-cache pages itself.
  kSendfile,
  // pread into the connection's buffer, then writev: one copy on the agent.
  // On loopback the receiver copies out of the sender's pages either way,
  // and sendfile's skbs of single page-cache pages cost it more than
  // write's (measured: a plain sendfile stream read 2.8 GB/s at 0.22 CPU
  // s/GB on its receiver, a pread + write stream 3.4 GB/s at 0.13;
  // tests/bench/RESULTS.md).
  kCopy,
  // kCopy for a client on this host (loopback or one of our own
  // addresses: same_host.h), kSendfile for any other.
  kAuto,
};

struct DataPortOptions {
  std::string host = "127.0.0.1";  // Address to bind; "" or "0.0.0.0": any.
  int port = 0;                    // 0 picks a free port.
  // Connections past this get RESOURCE_EXHAUSTED and are closed.
  int max_connections = 256;
  // A connection idle (between requests) this long is closed.
  absl::Duration idle_timeout = absl::Minutes(5);
  // The nice value (0-19) of a connection's thread once it carried a
  // request flagged background; 0: such requests run at normal priority.
  int background_nice = 10;
  // How whole checksum blocks go out (data_port.cc).
  DataPortSend send = DataPortSend::kAuto;
};

// Parses --data_port_send: "auto", "sendfile" or "copy"; INVALID_ARGUMENT
// naming the value otherwise.
absl::StatusOr<DataPortSend> ParseDataPortSend(absl::string_view s);

class DataPortServer {
 public:
  // Binds, listens and starts the listener thread. `root` and `service` are
  // not owned, must be non-null and outlive the server; reads are counted in
  // `service` (BeginRead/EndRead) and honour its options (cap, test hooks).
  // UNAVAILABLE if it cannot bind/listen, INVALID_ARGUMENT for a bad host.
  static absl::StatusOr<std::unique_ptr<DataPortServer>> Start(
      const ExportRoot* root, AgentService* service,
      const DataPortOptions& options);

  DataPortServer(const DataPortServer&) = delete;
  DataPortServer& operator=(const DataPortServer&) = delete;
  ~DataPortServer();  // Shutdown(now) if not done.

  // Stops accepting, closes idle connections at once, lets requests in
  // progress finish until `deadline`, then shuts their sockets down; joins
  // every thread. Blocking; idempotent.
  void Shutdown(absl::Time deadline);

  int port() const { return port_; }
  // Connections accepted so far (tests check pooling with it).
  uint64_t accepted_connections() const { return accepted_.load(); }
  // Connections whose thread was lowered to background_nice so far.
  uint64_t background_connections() const { return background_.load(); }
  // Connections accepted so far that send whole blocks with sendfile(2).
  uint64_t sendfile_connections() const { return sendfile_.load(); }

 private:
  struct Conn {
    ScopedFd fd;
    std::thread thread;
    bool busy = false;  // Serving a request (vs waiting for one).
    bool done = false;  // The thread is about to exit; join it.
    // Lowered to background_nice; only the connection's thread uses it.
    bool background = false;
    // Whole blocks go out with sendfile (DataPortSend); set at accept.
    bool use_sendfile = true;
  };

  DataPortServer(const ExportRoot* root, AgentService* service,
                 const DataPortOptions& options, ScopedFd listen_fd, int port);
  void AcceptLoop();
  void ServeConnection(Conn* conn);
  // Serves one request from `fd`. Returns false when the connection must be
  // closed (EOF, socket error, malformed request).
  bool ServeRequest(Conn* conn, std::string* buf);
  void SetBusy(Conn* conn, bool busy);
  // Lowers the connection's thread (the caller) for a background request.
  void EnterBackground(Conn* conn);
  bool AllDoneLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins and drops connections whose threads finished.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ExportRoot* const root_;
  AgentService* const service_;
  const DataPortOptions options_;
  const ScopedFd listen_fd_;
  const int port_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> background_{0};
  std::atomic<uint64_t> sendfile_{0};
  std::thread listener_;

  mutable absl::Mutex mu_;
  std::list<Conn> conns_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_DATA_PORT_H_
