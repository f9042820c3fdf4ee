// File: node_client.h
//
// Client side of the NodeAgent gRPC service (proto/node_agent.proto): the
// TCP data path of the client library and the ingest/fsck path of
// rangefs-admin.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto nc, NodeClient::Connect("10.0.0.5:7070"));
//   // Agents with TLS (rangefs-node --tls_cert ...; mTLS adds a client cert):
//   RANGEFS_ASSIGN_OR_RETURN(auto nc, NodeClient::Connect("10.0.0.5:7070",
//       {.ca_file = "ca.crt", .cert_file = "job.crt", .key_file = "job.key"}));
//   RANGEFS_ASSIGN_OR_RETURN(size_t n, nc->ReadRange("seg/0001", 4096, buf,
//                                                     {.deadline = d}));
//
// ReadRange goes over the agent's raw-TCP data port (data_port.h) when the
// agent advertises one (GetStatsResponse.data_port, asked once, lazily,
// cached; asked again data_port_retry after a failure, 12 x that after an
// agent answered it has none) and the client is
// plaintext with use_data_port; otherwise, or when the data port cannot be
// reached, over gRPC. Both honour ReadCallOptions alike.
//
// Every call has a deadline; chunk CRC32Cs are checked as data arrives
// (DATA_LOSS on mismatch). Error codes are the agent's (NOT_FOUND,
// OUT_OF_RANGE, RESOURCE_EXHAUSTED, ...) or UNAVAILABLE / DEADLINE_EXCEEDED
// for transport failures, with the node address in the message.
// Thread-safe; one instance per node address is enough (one channel).
#ifndef RANGEFS_STORAGE_NODE_NODE_CLIENT_H_
#define RANGEFS_STORAGE_NODE_NODE_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/rpc_method.h"
#include "proto/node_agent.grpc.pb.h"
#include "storage_node/call_canceller.h"
#include "storage_node/data_port_client.h"
#include "storage_node/tls_client.h"

namespace rangefs {
namespace node {

struct ReadCallOptions {
  absl::Time deadline = absl::InfiniteFuture();
  bool verify_on_server = false;  // agent checks its sidecar (DATA_LOSS)
  bool check_chunk_crc = true;    // check each chunk's CRC32C here
  // The agent serves the read at background CPU priority (data port only;
  // it lowers the connection for good, so use a NodeClient of its own).
  bool background = false;
  CallCanceller* canceller = nullptr;  // not owned; may be null
};

// Transport choices of a NodeClient (TLS aside).
struct NodeClientOptions {
  // Read over the agent's data port when it has one. Always off with TLS
  // (the data port is plaintext).
  bool use_data_port = true;
  // After a failed discovery or data-port connect, reads use gRPC and the
  // agent is asked again after this.
  absl::Duration data_port_retry = absl::Seconds(5);
  // Idle data-port connections kept open for the next reads.
  size_t max_idle_data_connections = 4;
};

struct WriteCallOptions {
  absl::Time deadline = absl::InfiniteFuture();
  bool overwrite = false;
  uint32_t block_size = 0;       // 0: agent default (1 MiB)
  int64_t expected_size = -1;    // -1: unknown
  size_t chunk_bytes = 4 << 20;  // Data bytes per message (<= 7 MiB).
};

class NodeClient {
 public:
  // Creates the channel; does not connect yet. Plaintext unless `tls` is
  // enabled (see tls.h); the TLS files are read here. INVALID_ARGUMENT for
  // an address that is not host:port, or for unreadable/missing PEM files
  // (naming the file). A TLS handshake failure (wrong CA, agent demanding a
  // client certificate) shows later as UNAVAILABLE from the calls.
  static absl::StatusOr<std::unique_ptr<NodeClient>> Connect(
      const std::string& address, const NodeClientTlsOptions& tls = {},
      const NodeClientOptions& options = {});

  const std::string& address() const { return address_; }
  // The agent's data port in use for reads now; 0 while reads go over gRPC
  // (not discovered yet, disabled, or unreachable).
  int data_port() const;

  // Reads up to dst.size() bytes of object `path` at `offset` into `dst`
  // and returns how many (short only at end of object). Never touches
  // `dst` after returning.
  absl::StatusOr<size_t> ReadRange(const std::string& path, uint64_t offset,
                                   absl::Span<char> dst,
                                   const ReadCallOptions& options = {});

  // Streams an object to the agent. `read` fills its argument and returns
  // the byte count, 0 at the end; an error from `read` aborts the write
  // (the agent discards the temp object).
  absl::StatusOr<WriteObjectResponse> WriteObject(
      const std::string& path,
      const std::function<absl::StatusOr<size_t>(absl::Span<char>)>& read,
      const WriteCallOptions& options = {});

  absl::StatusOr<StatObjectResponse> StatObject(const std::string& path,
                                                absl::Time deadline);
  absl::StatusOr<ChecksumObjectResponse> ChecksumObject(const std::string& path,
                                                        bool recompute,
                                                        absl::Time deadline);
  absl::StatusOr<ScrubResponse> Scrub(uint64_t max_bytes_per_sec,
                                      absl::Time deadline);
  absl::StatusOr<GetStatsResponse> GetStats(absl::Time deadline);
  // Removes object `path` and its sidecar. NOT_FOUND if absent.
  absl::Status DeleteObject(const std::string& path, absl::Time deadline);
  // Asks the agent to copy an object from a peer agent (see CopyObject in
  // proto/node_agent.proto). Waits, bounded, for the channel like writes.
  absl::StatusOr<CopyObjectResponse> CopyObject(
      const CopyObjectRequest& request, absl::Time deadline);
  // Asks the agent to rebuild an erasure-coded column from survivors on
  // peer agents (see RebuildEcColumn in proto/node_agent.proto).
  absl::StatusOr<RebuildEcColumnResponse> RebuildEcColumn(
      const RebuildEcColumnRequest& request, absl::Time deadline);
  // Every object of the agent's export (see ListObjects in the proto).
  absl::StatusOr<std::vector<ObjectInfo>> ListObjects(absl::Time deadline);

 private:
  NodeClient(std::string address, std::shared_ptr<grpc::Channel> channel,
             const NodeClientOptions& options, bool use_data_port);
  // The data port client to read with, discovering it if due (bounded by
  // `deadline` and 1 s); null: use gRPC.
  std::shared_ptr<DataPortClient> DataPort(absl::Time deadline);
  // Drops the data port after a connect failure; rediscovered later.
  void ForgetDataPort(const std::shared_ptr<DataPortClient>& dp);
  absl::StatusOr<size_t> GrpcReadRange(const std::string& path, uint64_t offset,
                                       absl::Span<char> dst,
                                       const ReadCallOptions& options);
  absl::Status Error(const grpc::Status& s, absl::string_view what,
                     absl::string_view path) const;

  const std::string address_;
  // Admin calls (write, stat, checksum, delete) first wait, bounded, for
  // the channel to connect; the read path stays fail-fast so the client
  // library can move to another replica at once.
  void AwaitConnection(absl::Time deadline);

  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<NodeAgent::Stub> stub_;
  // ReadRange with raw (grpc::ByteBuffer) responses, decoded by
  // read_chunk_codec.h straight into the caller's buffer.
  const grpc::internal::RpcMethod raw_read_range_;

  const NodeClientOptions options_;
  const bool use_data_port_;
  mutable absl::Mutex dp_mu_;
  std::shared_ptr<DataPortClient> data_port_ ABSL_GUARDED_BY(dp_mu_);
  bool discovering_ ABSL_GUARDED_BY(dp_mu_) = false;
  absl::Time next_discovery_ ABSL_GUARDED_BY(dp_mu_) = absl::InfinitePast();
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_NODE_CLIENT_H_
