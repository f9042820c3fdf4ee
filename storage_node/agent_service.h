// File: agent_service.h
//
// The NodeAgent gRPC service (proto/node_agent.proto) over one export
// directory: ingest writes (temp file + per-block CRC-32C + fsync + sidecar +
// atomic rename), copies from peer agents (object_copier.h), rebuilds of
// erasure-coded columns from peer agents (ec_rebuilder.h), range reads
// with per-chunk checksums and optional verification against the sidecar
// (the object side shared with the data port: object_reader.h),
// stat/checksum queries, on-demand scrub and counters.
//
//   auto root = ExportRoot::Open(dir);
//   AgentService service(root->get(), {.max_concurrent_reads = 64});
//   builder.RegisterService(&service);
//
// Uses the synchronous gRPC API: each call runs on a gRPC thread and blocks
// on disk I/O. Memory per call is bounded: a write holds one request message
// (cap it with ServerBuilder::SetMaxReceiveMessageSize), a read one chunk,
// a verified read one checksum block (<= kMaxBlockSize). Thread-safe.
#ifndef RANGEFS_STORAGE_NODE_AGENT_SERVICE_H_
#define RANGEFS_STORAGE_NODE_AGENT_SERVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/clock.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"
#include "proto/node_agent.grpc.pb.h"
#include "storage_node/ec_rebuilder.h"
#include "storage_node/export_root.h"
#include "storage_node/object_copier.h"
#include "storage_node/rate_limiter.h"
#include "storage_node/sidecar.h"
#include "storage_node/stats.h"
#include "storage_node/tls_client.h"
#include "storage_node/write_access.h"

namespace rangefs {
namespace node {

struct AgentServiceOptions {
  bool read_only = false;  // Refuse WriteObject (FAILED_PRECONDITION).
  // Who may call WriteObject (overwrites included) and DeleteObject;
  // others get PERMISSION_DENIED (write_access.h). Default: anyone.
  WriteAccessOptions write_access;
  int max_concurrent_reads =
      64;                       // ReadRange calls past it: RESOURCE_EXHAUSTED.
  size_t chunk_size = 1 << 20;  // Max data bytes per ReadRangeChunk.
  uint32_t default_block_size = kDefaultBlockSize;  // When the writer says 0.
  Clock* clock = nullptr;  // Not owned; nullptr: Clock::Real().
  // CopyObject: how this agent dials peer agents, and the cap on the bytes
  // per second all its copies together pull (0: none).
  NodeClientTlsOptions peer_tls;
  uint64_t copy_max_bytes_per_sec = 0;
  // The nice value copies run at (ObjectCopierOptions::nice); 0: normal.
  int copy_nice = 10;
  // RebuildEcColumn staging objects idle this long are swept
  // (EcRebuilderOptions::staging_idle); zero: never.
  absl::Duration ec_staging_idle = absl::Hours(1);
  // Test hook: called in ReadRange once the read slot is held, before any
  // I/O. Lets tests hold a read open deterministically. Empty in production.
  std::function<void(absl::string_view path)> read_started_hook;
  // Test hook: called in ReadRange for each chunk after its CRC32C is
  // computed and before it is sent; may alter the bytes (to inject
  // corruption). Empty in production.
  std::function<void(uint64_t offset, absl::Span<char> data)> chunk_hook;
};

class AgentService final : public NodeAgent::Service {
 public:
  // `root` is not owned, must be non-null and outlive the service.
  AgentService(const ExportRoot* root, AgentServiceOptions options);
  // Stops the rebuilder's staging sweep before the counters it adds to go.
  ~AgentService() override;

  grpc::Status WriteObject(grpc::ServerContext* context,
                           grpc::ServerReader<WriteObjectRequest>* reader,
                           WriteObjectResponse* response) override;
  // ReadRange is served by ReadRangeRaw below (registered in the
  // constructor in place of the generated handler): its chunks are
  // serialized by hand around slices the file is read into, without a
  // protobuf copy. Same wire format and semantics.
  grpc::Status StatObject(grpc::ServerContext* context,
                          const StatObjectRequest* request,
                          StatObjectResponse* response) override;
  grpc::Status ChecksumObject(grpc::ServerContext* context,
                              const ChecksumObjectRequest* request,
                              ChecksumObjectResponse* response) override;
  grpc::Status Scrub(grpc::ServerContext* context, const ScrubRequest* request,
                     ScrubResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context,
                        const GetStatsRequest* request,
                        GetStatsResponse* response) override;
  grpc::Status DeleteObject(grpc::ServerContext* context,
                            const DeleteObjectRequest* request,
                            DeleteObjectResponse* response) override;
  grpc::Status CopyObject(grpc::ServerContext* context,
                          const CopyObjectRequest* request,
                          CopyObjectResponse* response) override;
  grpc::Status RebuildEcColumn(grpc::ServerContext* context,
                               const RebuildEcColumnRequest* request,
                               RebuildEcColumnResponse* response) override;
  grpc::Status ListObjects(grpc::ServerContext* context,
                           const ListObjectsRequest* request,
                           grpc::ServerWriter<ObjectInfo>* writer) override;

  // The same numbers as the GetStats RPC, in-process.
  GetStatsResponse Stats() const;

  // Read accounting of both read transports (ReadRange here and
  // data_port.h), so that GetStats and the live record count every read.
  // BeginRead counts one read in flight; past max_concurrent_reads it
  // counts a rejection, leaves nothing in flight and returns
  // RESOURCE_EXHAUSTED. Each OK BeginRead must be paired with one EndRead.
  absl::Status BeginRead();
  void EndRead(bool ok, absl::Duration latency);
  void AddBytesRead(uint64_t n) { bytes_read_.fetch_add(n); }
  // The port of the agent's data port (0: none), reported by GetStats.
  void set_data_port(int port) { data_port_.store(port); }

  const AgentServiceOptions& options() const { return options_; }
  Clock* clock() const { return clock_; }

 private:
  absl::Status DoWriteObject(grpc::ServerContext* context,
                             grpc::ServerReader<WriteObjectRequest>* reader,
                             WriteObjectResponse* response);
  using RawReadStream =
      grpc::ServerReaderWriter<grpc::ByteBuffer, ReadRangeRequest>;
  grpc::Status ReadRangeRaw(grpc::ServerContext* context,
                            RawReadStream* stream);
  absl::Status DoReadRange(grpc::ServerContext* context,
                           const ReadRangeRequest& request,
                           RawReadStream* stream);
  absl::Status DoStatObject(const StatObjectRequest& request,
                            StatObjectResponse* response);
  absl::Status DoChecksumObject(const ChecksumObjectRequest& request,
                                ChecksumObjectResponse* response);

  const ExportRoot* const root_;
  const AgentServiceOptions options_;
  Clock* const clock_;
  const WriteAccess write_access_;
  RateLimiter copy_limiter_;
  std::unique_ptr<ObjectCopier> copier_;
  std::unique_ptr<EcRebuilder> ec_rebuilder_;

  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<int64_t> inflight_reads_{0};
  std::atomic<int64_t> inflight_writes_{0};
  std::atomic<uint64_t> reads_rejected_{0};
  std::atomic<uint64_t> ec_rebuilt_bytes_{0};
  std::atomic<uint64_t> ec_staging_swept_bytes_{0};
  std::atomic<int> data_port_{0};
  LatencyWindow read_latency_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_AGENT_SERVICE_H_
