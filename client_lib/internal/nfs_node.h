// File: internal/nfs_node.h
//
// NfsNode: a storage node's NFS export read in userspace (the `nfs` data
// path). It spreads reads over its connections (NfsLink, one libnfs
// context each, on the loops of an NfsLoopPool shared with the client's
// other nodes; the least loaded takes the next read), and
// verifies like the mount path: when verifying, the object's sidecar is
// read over NFS too (once, then cached), the read widened to whole sidecar
// blocks, and each block's CRC32C checked (MountReader::Check: DATA_LOSS
// naming the block). It knows nothing of calls or queues: a read's `done`
// runs on a connection's thread, never Read's (a read refused at once is
// answered there too; once the node is stopped, Read refuses by its return
// value instead: a stopped connection has no thread left). Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_NODE_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_NODE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client_lib/internal/nfs_export.h"
#include "client_lib/internal/nfs_loop.h"
#include "client_lib/internal/nfs_loop_pool.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace client_internal {

// `length` bytes of `object` (relative to the export) at `offset`.
struct NfsPiece {
  std::string object;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool verify = false;
  absl::Time deadline;  // wall time
};

// The outcome: r = piece length with the bytes at `out` (valid during the
// call only), or an error (`checksum_failure`: a CRC mismatch).
using NfsDone = std::function<void(const absl::StatusOr<size_t>& r,
                                   const char* out, bool checksum_failure)>;

class NfsNode {
 public:
  // `connections` >= 1, attached to `pool`'s loops.
  static absl::StatusOr<std::shared_ptr<NfsNode>> Create(
      const std::string& node, NfsExport e, int connections, NfsLoopPool& pool);

  const NfsExport& nfs_export() const { return export_; }
  // Starts reading `p`; `done` then runs once, on a connection's thread.
  // False once the node is stopped (its export replaced, the client
  // closing): `done` was not called and never will be; the caller reads
  // the piece another way (its Read may hold locks that `done` takes).
  [[nodiscard]] bool Read(NfsPiece p, NfsDone done);
  // Ends the connections: reads they hold fail UNAVAILABLE on their
  // threads; later Reads return false.
  void Stop();
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  // Contexts mounted so far, all connections together.
  int mounts() const;
  // For tests: `hook` runs first in every Read, on the reading thread
  // (nullptr: none). Process-wide.
  static void SetBeforeReadForTest(void (*hook)(NfsNode&));

 private:
  NfsNode(NfsExport e, std::vector<std::shared_ptr<NfsLink>> links)
      : export_(std::move(e)),
        describe_(export_.Describe()),
        links_(std::move(links)) {}
  NfsLink& Pick() const;
  // Answers `done` with `why` from a connection's thread, never from the
  // caller's: Read's caller may hold locks that `done` takes (a read
  // call's, handing it its pieces). False (`done` dropped): stopped.
  bool Refuse(absl::Status why, bool checksum_failure, NfsDone done);
  // As Read, once the sidecar (if verifying) is known.
  bool ReadPlanned(const NfsPiece& p,
                   std::shared_ptr<const node::Checksums> sums, NfsDone done);
  std::shared_ptr<const node::Checksums> CachedSidecar(const std::string& o);

  const NfsExport export_;
  const std::string describe_;  // export_.Describe(), for every read's plan
  const std::vector<std::shared_ptr<NfsLink>> links_;
  std::atomic<bool> stopped_{false};
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const node::Checksums>>
      sidecars_ ABSL_GUARDED_BY(mu_);
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_NODE_H_
