// File: object_copier.h
//
// The agent's side of CopyObject (proto/node_agent.proto): pulls one object
// from a peer agent into this export, verified end to end. The source's
// sidecar is fetched first (ChecksumObject); the bytes are read with
// verify=true (the source checks each block against that sidecar) and each
// chunk's CRC-32C is checked on arrival (NodeClient); they go through an
// ObjectWriter (temp file, then rename), and the object is committed only
// when the block CRC-32Cs computed here equal the source's sidecar.
//
//   ObjectCopier copier(root, {.peer_tls = tls, .limiter = &node_limiter});
//   RANGEFS_ASSIGN_OR_RETURN(Checksums c, copier.Copy(request, deadline,
//       [&] { return context->IsCancelled(); }));
//
// The source address comes from the caller (a writer, see write_access.h):
// it is validated as host:port and dialled with the agent's peer
// credentials. Thread-safe; peer clients are cached per address.
#ifndef RANGEFS_STORAGE_NODE_OBJECT_COPIER_H_
#define RANGEFS_STORAGE_NODE_OBJECT_COPIER_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "proto/node_agent.pb.h"
#include "storage_node/export_root.h"
#include "storage_node/node_client.h"
#include "storage_node/rate_limiter.h"
#include "storage_node/sidecar.h"
#include "storage_node/tls_client.h"

namespace rangefs {
namespace node {

struct ObjectCopierOptions {
  NodeClientTlsOptions peer_tls;   // How to dial peers; default plaintext.
  size_t read_bytes = 4 << 20;     // Bytes per ReadRange from the source.
  RateLimiter* limiter = nullptr;  // Shared node-wide cap; not owned; may
                                   // be null (no cap).
  Clock* clock = nullptr;          // Not owned; nullptr: the real clock.
  // Called with each piece's byte count once it is written (counters).
  std::function<void(uint64_t)> on_bytes;
  // Write the copy with O_DIRECT where the file system takes it
  // (ObjectWriter): repair traffic leaves the target's page cache to its
  // readers, and the bytes are not copied into it.
  bool direct_writes = true;
  // The nice value (0-19) copies run at: each copy runs on a thread of its
  // own lowered to it, and asks the source for background priority (data
  // port), so readers of either agent get the CPU first; 0: normal.
  int nice = 0;
};

class ObjectCopier {
 public:
  // `root` is not owned and must outlive the copier.
  ObjectCopier(const ExportRoot* root, ObjectCopierOptions options);

  // Copies as the file comment says; returns the new object's checksums.
  // `deadline` is wall time (absl::Now); `cancelled` is polled between
  // pieces (CANCELLED). Errors: see CopyObject in node_agent.proto.
  absl::StatusOr<Checksums> Copy(const CopyObjectRequest& request,
                                 absl::Time deadline,
                                 const std::function<bool()>& cancelled);

 private:
  // Copy, on the calling thread.
  absl::StatusOr<Checksums> CopyHere(const CopyObjectRequest& request,
                                     absl::Time deadline,
                                     const std::function<bool()>& cancelled);
  absl::StatusOr<NodeClient*> Peer(const std::string& address);

  // Piece buffers (options_.read_bytes, aligned for O_DIRECT), reused
  // across copies: fresh memory for every copy costs page faults and
  // unmaps in every copy's threads.
  struct FreeBuffer {
    void operator()(char* p) const { free(p); }
  };
  using Buffer = std::unique_ptr<char, FreeBuffer>;
  Buffer TakeBuffer();
  void GiveBuffer(Buffer b);

  const ExportRoot* const root_;
  const ObjectCopierOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<NodeClient>> peers_
      ABSL_GUARDED_BY(mu_);
  std::vector<Buffer> free_buffers_ ABSL_GUARDED_BY(mu_);
};

// DATA_LOSS naming the first difference if `got` (computed while copying
// `path`) differs from the source's checksums `want`.
absl::Status CompareChecksums(const std::string& path,
                              const ChecksumObjectResponse& want,
                              const Checksums& got);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_OBJECT_COPIER_H_
