// File: internal/mount_reader.h
//
// MountReader: reads a piece of an object from a storage node's mounted
// export and verifies it against the object's checksum sidecar. It plans
// the aligned span to read (O_DIRECT alignment, whole sidecar blocks when
// verifying), reads it with pread through the client's ReadOnlyFs (or lets
// an io_uring ring read it: the plan says what), and checks the CRC32C of
// every block read. One per node; it caches the node's sidecars. It knows
// nothing of threads, queues or calls: its callers bracket what may block
// (Plan may read a sidecar, Read reads the mount). Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_MOUNT_READER_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_MOUNT_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/fs.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace client_internal {

// One mount read: the aligned span to read and how to check it.
struct MountPlan {
  MountPath path;  // the object, opened beneath its node's mount
  bool direct = false;
  uint64_t start = 0;
  uint64_t end = 0;
  size_t span = 0;   // end - start
  size_t alloc = 0;  // span rounded up to kDirectIoAlignment
  size_t lead = 0;   // object_offset - start
  std::shared_ptr<const node::Checksums> sums;  // set when verifying
};

// The piece a caller wants: `length` bytes of `object` at `offset`.
struct MountPiece {
  const std::string& object;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool verify = false;
};

class MountReader {
 public:
  // `fs` outlives the reader.
  MountReader(ReadOnlyFs* fs, bool o_direct) : fs_(fs), o_direct_(o_direct) {}

  // Plans the read of `piece` beneath the mount `dir` (copied into the
  // plan; it may be plan->path.mount itself). Every field of `*plan` is
  // set: a plan may be reused, its strings' memory too. Loads the object's
  // sidecar when verifying and not cached yet (a blocking read).
  absl::Status Plan(const MountPiece& piece, absl::string_view dir,
                    MountPlan* plan);
  // Reads `plan`'s span into `buf` (at least plan.alloc bytes, aligned for
  // O_DIRECT). Blocks on a hung mount.
  absl::StatusOr<size_t> Read(const MountPlan& plan, char* buf);
  // Checks the `n` bytes read for `plan` at `p`: long enough, and every
  // block's CRC32C when verifying (DATA_LOSS naming the block if not; sets
  // *checksum_failure). Returns piece.length.
  static absl::StatusOr<size_t> Check(const MountPiece& piece,
                                      const MountPlan& plan, const char* p,
                                      size_t n, bool* checksum_failure);
  // Whether `object`'s sidecar is cached (Plan would not read it).
  bool HasSidecar(const std::string& object);

 private:
  absl::StatusOr<std::shared_ptr<const node::Checksums>> Sidecar(
      const std::string& dir, const std::string& object);

  ReadOnlyFs* const fs_;
  const bool o_direct_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const node::Checksums>>
      sidecars_ ABSL_GUARDED_BY(mu_);
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_MOUNT_READER_H_
