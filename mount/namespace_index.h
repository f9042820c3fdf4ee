// File: namespace_index.h
//
// The directory tree rangefs-mount serves: every READY file under one
// namespace directory, with the metadata lookup/getattr/readdir need, kept
// in memory and fresh by the process's one namespace watch, the layout
// cache's (no etcd round trip per call, and the tree and the layouts the
// reads use never disagree for long: they follow one stream of events).
// Directories are implied by paths, as in the namespace.
//
//   NamespaceIndexOptions o;
//   o.cluster = "prod";
//   o.dir = "/crawl";  // the mount's root
//   RANGEFS_ASSIGN_OR_RETURN(auto index, NamespaceIndex::Open(kv, cache, o,
//       [](absl::Span<const IndexChange> changes) { /* invalidate */ }));
//   IndexEntry e = index->Find("/2024/seg-1");  // relative to o.dir
//
// Paths given to and returned by the index are relative to `dir`: "/" is
// the mount's root, "/a/b" is namespace path <dir>/a/b.
//
// - Open subscribes to the layout cache's watch, then lists the subtree
//   through the cache (LayoutCache::Scan: paged, at one revision, the same
//   pages the cache keeps with `preload`) and applies every later event; a
//   watch that loses etcd resumes without losing events, and meanwhile the
//   last known tree is served. On compaction the index re-lists and
//   reports the difference as changes.
// - With `revision` > 0 the index is the subtree as of that etcd revision
//   and never changes (no watch); OUT_OF_RANGE if it is compacted.
// - IMPORTING files are not shown (they appear when they become READY). A
//   record that fails the record gate is shown as a file with `invalid`
//   set (size 0). A key whose path is not a valid namespace path is
//   skipped (logged).
// - A path that is both a file and a directory ("/a" and "/a/b": the store
//   refuses it; an older version or a hand may have written it, and fsck
//   and doctor report it) shows both sides: "/a" is the directory, and the
//   file's bytes are "/a/.rangefs-file" (kShadowedFileName) inside it,
//   unless the namespace has a real "/a/.rangefs-file", which wins.
// - A file's `content` (namespace/content_id.h) says which bytes it
//   holds; a change that keeps them (the keeper moved a copy) is
//   kFileChanged, any other kFileReplaced. Open handles compare it with
//   ns::SameBytes to decide ESTALE.
// Thread-safe. Owns one maintenance thread (re-lists after compaction).
#ifndef RANGEFS_MOUNT_NAMESPACE_INDEX_H_
#define RANGEFS_MOUNT_NAMESPACE_INDEX_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "namespace/content_id.h"
#include "namespace/keys.h"
#include "namespace/kv.h"
#include "namespace/layout_cache.h"

namespace rangefs {
namespace mount {

struct FileMeta {
  uint64_t size = 0;
  uint64_t file_id = 0;
  uint64_t generation = 0;
  ns::ContentId content;  // which bytes (see above)
  int64_t mod_revision = 0;
  int64_t created_unix_ms = 0;
  int64_t modified_unix_ms = 0;
  // Non-empty: the record failed the gate (why, naming the etcd key).
  std::string invalid;
};

// Inside a directory that is also a file (a clash), the name the file's
// bytes show under (see the file comment).
inline constexpr absl::string_view kShadowedFileName = ".rangefs-file";

enum class EntryKind { kNone, kFile, kDir };

struct IndexEntry {
  EntryKind kind = EntryKind::kNone;
  FileMeta meta;  // files only
};

struct DirEntry {
  std::string name;
  EntryKind kind = EntryKind::kNone;
  FileMeta meta;  // files only
};

struct IndexChange {
  enum class Kind {
    kFileAdded,
    kFileChanged,   // new layout, same bytes (ns::SameBytes)
    kFileReplaced,  // new layout, bytes may differ
    kFileRemoved,
    kDirAdded,
    kDirRemoved,
  };
  std::string path;  // relative to the index's dir
  Kind kind = Kind::kFileAdded;
};

// Receives each batch of changes after it was applied (on the watch thread
// or the maintenance thread, never under the index's lock). It must not
// destroy the index.
using IndexListener = std::function<void(absl::Span<const IndexChange>)>;

struct NamespaceIndexOptions {
  std::string cluster = std::string(ns::kDefaultCluster);
  std::string dir = "/";  // namespace directory shown as the root
  int64_t revision = 0;   // > 0: a fixed snapshot
  int64_t page_size = 1000;
};

struct NamespaceIndexStats {
  size_t files = 0;
  uint64_t total_bytes = 0;
  int64_t revision = 0;  // changes up to this etcd revision are applied
  bool pinned = false;
  bool watch_connected = false;
  uint64_t watch_events = 0;
  uint64_t relists = 0;
  uint64_t skipped_keys = 0;  // keys with paths that are not valid
};

class NamespaceIndex {
 public:
  // Lists `options.dir` and (unless pinned) follows `cache`'s watch.
  // `kv` and `cache` are not owned and must outlive the index; `cache` may
  // be null for a pinned index. With `keep_listed`, the listed layouts are
  // kept in `cache` (the mount's `preload`). INVALID_ARGUMENT (bad dir or
  // revision, no cache), UNAVAILABLE (etcd), OUT_OF_RANGE (revision
  // compacted).
  static absl::StatusOr<std::unique_ptr<NamespaceIndex>> Open(
      ns::KvBackend* kv, ns::LayoutCache* cache,
      const NamespaceIndexOptions& options, IndexListener listener = nullptr,
      bool keep_listed = false);
  ~NamespaceIndex();
  NamespaceIndex(const NamespaceIndex&) = delete;
  NamespaceIndex& operator=(const NamespaceIndex&) = delete;

  // What `path` (relative, "/" = root) is now. The root is always a
  // directory.
  IndexEntry Find(absl::string_view path);
  // The entries of directory `path`, sorted by name. NOT_FOUND if it is not
  // a directory now.
  absl::StatusOr<std::vector<DirEntry>> List(absl::string_view path);
  // The namespace path of a relative path ("/x" under dir "/d" -> "/d/x").
  std::string NamespacePath(absl::string_view path) const;
  // The namespace path of the file `path` shows: NamespacePath, or for
  // "<dir>/.rangefs-file" of a clash, the path of <dir> (see above).
  std::string FilePath(absl::string_view path);
  // Incremented after every applied batch of changes: a cheap "did
  // anything change since" check.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Changes up to this etcd revision are applied.
  int64_t revision() const;
  // Blocks until changes up to `revision` are applied. DEADLINE_EXCEEDED
  // after `timeout`.
  absl::Status WaitForRevision(int64_t revision, absl::Duration timeout);

  NamespaceIndexStats stats();

 private:
  NamespaceIndex(ns::KvBackend* kv, ns::LayoutCache* cache,
                 const NamespaceIndexOptions& options, IndexListener listener);
  using FileMap = absl::btree_map<std::string, FileMeta>;

  // Reads the pinned subtree at options_.revision into `out`.
  absl::Status ListPinned(FileMap* out);
  // Adds one page of etcd entries to `out`.
  void AddPage(const std::vector<ns::KvEntry>& page, FileMap* out);
  void OnWatch(const ns::KvWatchUpdate& update);
  // Applies a watch batch: events not newer than revision_ are skipped.
  void ApplyUpdateLocked(const ns::KvWatchUpdate& update,
                         std::vector<IndexChange>* changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaintenanceLoop();
  // (Re)reads the subtree through the cache and applies the difference
  // and the events that arrived meanwhile; `keep` keeps the pages in the
  // cache. `notify`: report the changes to the listener.
  absl::Status Relist(bool keep, bool notify);
  // Decodes one etcd entry into (relative path, meta); false = skip (not
  // a valid path, or not READY: `*hidden` tells which).
  bool Decode(const ns::KvEntry& kv, std::string* path, FileMeta* meta,
              bool* hidden);
  // Applies one put/delete, appending what changed.
  void ApplyLocked(const std::string& path, const FileMeta* meta,
                   std::vector<IndexChange>* changes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasChildrenLocked(absl::string_view path) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // For "<dir>/.rangefs-file" where <dir> is both a file and a directory:
  // <dir>'s file entry; else files_.end().
  FileMap::const_iterator ShadowedLocked(absl::string_view path) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Notify(const std::vector<IndexChange>& changes);

  ns::KvBackend* const kv_;
  ns::LayoutCache* const cache_;
  const NamespaceIndexOptions options_;
  const IndexListener listener_;
  const ns::Keys keys_;
  const std::string prefix_;  // etcd key prefix of the subtree, ends in '/'

  mutable absl::Mutex mu_;
  FileMap files_ ABSL_GUARDED_BY(mu_);
  uint64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The revision of the last list: events at or below it are in it (a
  // batch's own revision may run ahead of its events while etcd catches a
  // watch up, so events are filtered by this, not by revision_).
  int64_t listed_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool compacted_ ABSL_GUARDED_BY(mu_) = false;
  // While (re)listing: watch batches wait here, applied after the list.
  bool loading_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<ns::KvWatchUpdate> pending_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t watch_events_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t relists_ ABSL_GUARDED_BY(mu_) = 0;
  bool relisted_once_ ABSL_GUARDED_BY(mu_) = false;  // the first is Open's
  uint64_t skipped_keys_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> epoch_{0};

  // The cache's watch, shared (null for a pinned index).
  std::unique_ptr<ns::LayoutCache::Subscription> subscription_;
  std::thread maintenance_;
};

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_NAMESPACE_INDEX_H_
