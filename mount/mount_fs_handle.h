// File: mount_fs_handle.h
//
// MountFs's open-file handle (private to mount_fs*.cc): the client File of
// the open, its content tag, and the sequential Reader.
#ifndef RANGEFS_MOUNT_MOUNT_FS_HANDLE_H_
#define RANGEFS_MOUNT_MOUNT_FS_HANDLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client_lib/file.h"
#include "mount/inode_table.h"
#include "mount/mount_fs.h"

namespace rangefs {
namespace mount {

// Thread-safe: reads may run concurrently; `reader` is used by one at a
// time.
struct MountFs::Handle {
  std::string path;  // relative
  uint64_t ino = 0;
  std::unique_ptr<File> file;
  CacheTag tag;                 // the bytes it reads
  int64_t opened_revision = 0;  // etcd mod revision of the layout opened
  std::atomic<uint64_t> checked_epoch{0};
  std::atomic<int> inflight{0};
  std::atomic<uint64_t> last_end{0};
  // Large sequential requests that waited for their bytes (read from a
  // disk or the network, not the page cache) in a row; at 2 the stream
  // goes through the Reader (prefetch_large), whose read-ahead keeps the
  // device busy between requests.
  std::atomic<int> blocked_in_a_row{0};
  std::atomic<bool> prefetch_large{false};
  // Held shared while ReadSpliced answers the kernel (and counts after):
  // Release waits for it before the handle goes away.
  absl::Mutex splice_mu;
  std::atomic<bool> splice_refusal_logged{false};  // once per handle
  absl::Mutex reader_mu;
  std::unique_ptr<Reader> reader ABSL_GUARDED_BY(reader_mu);
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_MOUNT_FS_HANDLE_H_
