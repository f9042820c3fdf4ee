// File: mount_fs.h
//
// What rangefs-mount answers, in plain types (no libfuse): inodes over the
// NamespaceIndex, open files over the client library, xattrs, statfs, and
// which kernel caches to invalidate when the namespace changes.
// mount/fuse_bridge.h maps libfuse's low-level calls onto it.
//
//   MountFs fs(client, index, cache, &counters, {.dir = "/crawl"}, notify);
//   RANGEFS_ASSIGN_OR_RETURN(MountEntry e, fs.Lookup(kRootInode, "seg-1"));
//   RANGEFS_ASSIGN_OR_RETURN(OpenResult f, fs.Open(e.ino, O_RDONLY));
//   fs.Read(f.handle, 0, 1 << 20,
//           [](const absl::Status& s, absl::Span<const char> bytes) {...});
//
// Data: each open file holds a client File (the layout at open) and, for
// sequential streams read one small request at a time, a Reader (file.h)
// that prefetches the next window; large requests and concurrent requests
// (kernel readahead) go to File::Read directly, and concurrent small ones
// (random 4 KiB) are grouped into Client::ReadV batches (read_batcher.h);
// ReadSpliced answers reads whose bytes lie in local object files with the
// files themselves (File::LocalSpans; the bridge splices them). A
// read never returns bytes of a different content than the open saw: the
// library's ABORTED and the index's content tags (namespace_index.h) both give
// ESTALE. Thread-safe. `client`, `index` and `cache` are not owned and must
// outlive the MountFs; every handle must be released (or the MountFs destroyed)
// before the Client.
#ifndef RANGEFS_MOUNT_MOUNT_FS_H_
#define RANGEFS_MOUNT_MOUNT_FS_H_

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "mount/direct_io_mode.h"
#include "mount/inode_table.h"
#include "mount/metrics.h"
#include "mount/namespace_index.h"
#include "mount/read_batcher.h"
#include "namespace/layout_cache.h"
#include "namespace/storage_policy.h"

namespace rangefs {
namespace mount {

struct MountFsOptions {
  std::string dir = "/";  // namespace directory at the root (as the index)
  int64_t revision = 0;   // > 0: pinned snapshot (files opened at it)
  uid_t uid = 0;
  gid_t gid = 0;
  bool prefetch = true;
  // A sequential request of at least this many bytes is read straight into
  // the reply (File::Read) rather than through the prefetching Reader: the
  // library splits and parallelizes it, and bytes already in a node
  // mount's page cache are copied once by the calling thread, where the
  // Reader's window adds a copy and hand-offs to its prefetch threads
  // (tests/bench part M: 1 MiB reads through -o direct_io went from 0.67
  // to about 1.0 of rangefs-bench), until two in a row made the calling
  // thread wait (bytes from a disk or the network: the stream then goes
  // through the Reader, whose read-ahead keeps the device busy; part M run
  // M6). Smaller sequential requests (a stream read a few KiB at a time)
  // keep the Reader's read-ahead.
  size_t prefetch_max_request = 512 << 10;
  ReaderOptions reader;
  // Which opens are answered FOPEN_DIRECT_IO (OpenResult::direct_io).
  DirectIoMode direct_io = DirectIoMode::kAuto;
  ReadOptions read;
  // How long an open waits for the index to catch up with the layout the
  // library opened (both follow the layout cache's watch; a cold lookup
  // can be a little ahead of it).
  absl::Duration index_catch_up = absl::Seconds(1);
  // Reads of at most this many bytes that are not part of a sequential
  // stream go through the ReadBatcher (0 = never).
  size_t batch_max_bytes = 64 << 10;
  ReadBatcherOptions batch;
  // ReadSpliced serves reads of at least splice_min_bytes whose bytes lie
  // in object files the library has open on a local file system.
  bool splice = true;
  size_t splice_min_bytes = 64 << 10;
  // Reads the storage policies (namespace/storage_policy.h) as of an etcd
  // revision (0: the latest) for the user.rangefs.policy and
  // .policy_state xattrs (xattrs.h); called on each such getxattr. Empty:
  // those xattrs say "none".
  std::function<absl::StatusOr<ns::PolicyTable>(int64_t revision)>
      load_policies;
};

struct MountEntry {
  uint64_t ino = 0;
  struct stat attr {};
};

struct OpenResult {
  uint64_t handle = 0;  // opaque; pass to Read/Release
  bool keep_cache = false;
  bool direct_io = false;  // answer the open FOPEN_DIRECT_IO
};

struct DirItem {
  std::string name;
  uint64_t ino = 0;  // readdirplus: acquired (one kernel reference)
  struct stat attr {};
};

// A kernel cache invalidation: kEntry drops `name` in directory `ino`;
// kInode drops the attributes (and, with `pages`, the cached pages) of
// `ino`.
struct Notice {
  enum class Kind { kEntry, kInode };
  Kind kind = Kind::kInode;
  uint64_t ino = 0;
  std::string name;   // kEntry
  bool pages = true;  // kInode: also drop cached pages (else attributes)
};
using NoticeSink = std::function<void(std::vector<Notice>)>;

class MountFs {
 public:
  MountFs(Client* client, NamespaceIndex* index, ns::LayoutCache* cache,
          MountCounters* counters, MountFsOptions options, NoticeSink notify);
  ~MountFs();
  MountFs(const MountFs&) = delete;
  MountFs& operator=(const MountFs&) = delete;

  // NOT_FOUND if `name` is not in directory `parent` now.
  absl::StatusOr<MountEntry> Lookup(uint64_t parent, absl::string_view name);
  void Forget(uint64_t ino, uint64_t n);
  // NOT_FOUND for an inode whose path is gone (or changed kind).
  absl::StatusOr<struct stat> GetAttr(uint64_t ino);

  // A snapshot of the directory's entries; read it with ReadDir.
  absl::StatusOr<uint64_t> OpenDir(uint64_t ino);
  // Calls `add(item, next_offset)` for the entries from `offset` on ("."
  // and ".." first) until it returns false (buffer full). With `plus`,
  // every item added carries an inode reference (not the dots).
  void ReadDir(uint64_t dir_handle, int64_t offset, bool plus,
               const std::function<bool(const DirItem&, int64_t)>& add);
  void ReleaseDir(uint64_t dir_handle);

  // Read-only: EROFS-worthy flags give PERMISSION_DENIED with a message
  // (the bridge answers EROFS). NOT_FOUND, DATA_LOSS (invalid record),
  // UNAVAILABLE. `mmap_ok`: the kernel lets direct_io files be mmap()ed
  // (OpenDirect in direct_io_mode.h decides direct_io from it, the
  // options' mode and the file's size).
  absl::StatusOr<OpenResult> Open(uint64_t ino, int flags,
                                  bool mmap_ok = false);
  // The outcome of a read: OK with up to the bytes asked for (fewer only at
  // end of file), or File::Read's codes (ABORTED when the file changed
  // since open). `bytes` is valid only during the call.
  using ReadDone =
      std::function<void(const absl::Status&, absl::Span<const char> bytes)>;
  // Reads up to `size` bytes at `offset` and calls `done` exactly once,
  // before returning or later on another thread (a small read joining a
  // batch). The handle must not be released before `done` ran.
  void Read(uint64_t handle, uint64_t offset, size_t size, ReadDone done);
  // Answers a read with no copy here (options.splice): the pieces of
  // [offset, offset + size) (clipped at the end of file) as ranges of
  // object files (File::LocalSpans), handed to `reply`, which sends them
  // (the bridge splices them into the FUSE reply) and returns its
  // outcome. False, with `reply` not called, when the read should go
  // through Read: splice off, a small read, a stream the Reader serves
  // (cold bytes: see Read), bytes the library would check, rebuild or
  // fetch from elsewhere (File::LocalSpans' FAILED_PRECONDITION), a file
  // changed since open (Read answers ESTALE). True once `reply` ran.
  using SpliceReply =
      std::function<absl::Status(absl::Span<const ObjectSpan> spans)>;
  bool ReadSpliced(uint64_t handle, uint64_t offset, size_t size,
                   const SpliceReply& reply);
  void Release(uint64_t handle);

  // NOT_FOUND (no such attribute: ENODATA) or the errors of a lookup.
  absl::StatusOr<std::string> GetXattr(uint64_t ino, absl::string_view name);
  // NUL-separated names ("" for directories).
  absl::StatusOr<std::string> ListXattr(uint64_t ino);
  // df: blocks and free blocks are the sums of the live nodes' total and
  // free bytes (ClientStats::live_total_bytes), files the namespace's count.
  struct statvfs StatFs();

  // Turns index changes into kernel invalidations (sent to `notify`).
  void OnIndexChanges(absl::Span<const IndexChange> changes);

  size_t open_handles();
  InodeTable& inodes() { return inodes_; }

 private:
  struct Handle;
  struct DirHandle;

  // "/" + name under `parent_path`.
  static std::string Join(absl::string_view parent, absl::string_view name);
  struct stat FileAttr(uint64_t ino, const FileMeta& meta) const;
  struct stat DirAttr(uint64_t ino) const;
  // Opens the library File for `path`: one lookup in the layout cache; the
  // handle's tag is the bytes it found.
  absl::Status OpenFile(Handle& h);
  // Pinned mounts: the subtree at options_.revision as a Dataset
  // (Client::OpenDataset), read at the first open, so that opens need no
  // etcd and survive its compaction and outages. Null while it could not
  // be read (then tried again at most every 10 s; opens read etcd).
  const Dataset* PinnedDataset();
  // OK if `h`'s bytes are still what the namespace holds (ns::SameBytes;
  // else ABORTED).
  absl::Status CheckCurrent(Handle& h);
  // Serves the read on this thread (Reader or File::Read) and calls done.
  void ReadNow(Handle& h, uint64_t offset, size_t size, bool sequential,
               const ReadDone& done);
  // Through h's Reader; the caller holds h.reader_mu.
  absl::Status ReadSequential(Handle& h, uint64_t offset, size_t size,
                              const ReadDone& done);
  // Checks, counts and answers one read's outcome; `h` is not used after
  // `done` (which may release it).
  void Finish(Handle& h, uint64_t offset, absl::StatusOr<size_t> n,
              const char* data, const ReadDone& done);

  Client* const client_;
  NamespaceIndex* const index_;
  ns::LayoutCache* const cache_;
  MountCounters* const counters_;
  const MountFsOptions options_;
  const NoticeSink notify_;
  const bool pinned_;
  const int64_t mount_time_s_;
  InodeTable inodes_;
  std::unique_ptr<ReadBatcher> batcher_;  // null: batching off

  absl::Mutex dataset_mu_;
  // Set once, then kept until destruction (pointers to it stay valid).
  std::unique_ptr<Dataset> dataset_ ABSL_GUARDED_BY(dataset_mu_);
  absl::Time dataset_retry_ ABSL_GUARDED_BY(dataset_mu_) = absl::InfinitePast();

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Handle>> handles_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::unique_ptr<DirHandle>> dirs_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_dir_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_MOUNT_FS_H_
