// File: layout_cache.h
//
// The client-side view of the namespace: immutable layout snapshots kept
// fresh by one prefix watch per process.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto cache, LayoutCache::Open(kv, {}));
//   RANGEFS_ASSIGN_OR_RETURN(auto layout, cache->Lookup("/crawl/seg-1"));
//   // layout is a shared_ptr<const CachedLayout>: keep it while reading.
//
// - A cold lookup is one Range; concurrent cold lookups of one path share
//   it (single flight). Hits take one mutex and a hash lookup.
// - Watch events (puts/deletes) replace or drop cached entries; a watch
//   that loses its connection resumes from the last revision (no event
//   lost); on compaction the cache re-reads what it holds and re-watches.
// - While etcd is unreachable, cached layouts are still served for up to
//   `max_staleness` (counted in stats().stale_serves); after that, and for
//   any cold lookup, UNAVAILABLE.
// - Subscribe shares this watch with the rest of the process (the mount's
//   tree, datasets): one namespace watch per process, every record read
//   once; Scan gives a subscriber its initial load in the same pages.
// - LookupAt(path, revision) pins the namespace at an etcd revision:
//   the exact layout of that moment, or OUT_OF_RANGE once compacted.
// - List(dir) lists a directory in paged reads at one revision and keeps
//   what it read (encoded), so opening a listed file is a hit: no etcd
//   request. A page is kept only if the watch can bring it up to date: its
//   revision is not behind the watch, or the changes since it are still in
//   the watch's recent-change window (a changed path is left out).
// Memory: entries are kept as their encoded bytes (about 60 B per extent);
// a Lookup decodes on demand into a CachedLayout (cached_layout.h: the
// record validated once, the header parsed, a 12 B/extent index; extents
// are parsed only when a read maps a range onto them), shared while anyone
// holds it, plus a set of recently decoded layouts (`hot_extent_budget`),
// so a path is decoded once while it stays in that set.
// Thread-safe. Owns one maintenance thread (joined in the destructor).
#ifndef RANGEFS_NAMESPACE_LAYOUT_CACHE_H_
#define RANGEFS_NAMESPACE_LAYOUT_CACHE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "namespace/cached_layout.h"
#include "namespace/keys.h"
#include "namespace/kv.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

struct LayoutCacheOptions {
  std::string cluster = std::string(kDefaultCluster);
  // How long cached layouts are served after etcd became unreachable.
  absl::Duration max_staleness = absl::Minutes(5);
  // Period of the maintenance thread (watch health, compaction re-list).
  absl::Duration maintenance_period = absl::Milliseconds(100);
  Clock* clock = nullptr;  // nullptr = Clock::Real(); not owned
  // Decoded layouts kept alive after use, counted in parsed-extent
  // equivalents (~300 B): one per layout, one per striped target, one per
  // 16 indexed extents (so 200k holds ~3M extents of indexed layouts).
  size_t hot_extent_budget = 200000;
  // Entries (encoded layouts) held at most; List and Preload stop keeping
  // pages beyond it (cold lookups still cache). About 150-300 B each.
  size_t max_entries = 2000000;
};

struct LayoutCacheStats {
  uint64_t hits = 0;
  uint64_t cold_lookups = 0;    // Range calls for misses
  uint64_t shared_lookups = 0;  // misses that joined an in-flight Range
  uint64_t pinned_lookups = 0;
  uint64_t watch_events = 0;
  uint64_t updates = 0;           // cached entries replaced by the watch
  uint64_t invalidations = 0;     // cached entries dropped (deletes)
  uint64_t relists = 0;           // compaction recoveries
  uint64_t stale_serves = 0;      // hits served while etcd unreachable
  uint64_t stale_rejections = 0;  // hits refused: too stale
  uint64_t parses = 0;            // encoded entries parsed on lookup
  uint64_t listed = 0;            // entries kept from List / Preload pages
  uint64_t listed_skipped = 0;    // listed entries not kept (see List)
  bool watch_connected = false;
  int64_t watch_revision = 0;
  absl::Duration staleness;  // zero while connected
  size_t entries = 0;
};

class LayoutCache {
 public:
  // `kv` is not owned and must outlive the cache. Starts the watch at the
  // current revision; UNAVAILABLE if etcd cannot be reached now.
  static absl::StatusOr<std::unique_ptr<LayoutCache>> Open(
      KvBackend* kv, const LayoutCacheOptions& options);
  ~LayoutCache();

  // The current layout of `path`. NOT_FOUND, INVALID_ARGUMENT (bad path),
  // UNAVAILABLE (etcd down and not cached, or cached but too stale).
  absl::StatusOr<std::shared_ptr<const CachedLayout>> Lookup(
      absl::string_view path);
  // The layout of `path` as of etcd `revision` (> 0). NOT_FOUND if it did
  // not exist then; OUT_OF_RANGE if `revision` is compacted.
  absl::StatusOr<std::shared_ptr<const CachedLayout>> LookupAt(
      absl::string_view path, int64_t revision);
  // Every file under `dir` ("/" for all), sorted by path, read in pages of
  // 1,000-10,000 (NextPageSize, kv.h) at one revision, each passed through the
  // record gate (a bad record is listed with FileEntry::invalid and hides no
  // other). Keeps the valid layouts read (see the file comment).
  // INVALID_ARGUMENT (bad dir), UNAVAILABLE.
  absl::StatusOr<std::vector<FileEntry>> List(absl::string_view dir);
  // Loads every file under `dir` into the cache (paged, one revision).
  // Returns the number of file records read (Scan with keep).
  absl::StatusOr<size_t> Preload(absl::string_view dir);
  // Pages through every file record under `dir` at one revision (the
  // first page's), passing each page to `on_page` and then, with `keep`,
  // keeping it as Preload does. Returns the revision read at (also when
  // `dir` is empty). The one paged load a subscriber (subscribe first)
  // builds its own view from. INVALID_ARGUMENT (bad dir), UNAVAILABLE.
  absl::StatusOr<int64_t> Scan(
      absl::string_view dir, bool keep,
      const std::function<void(const std::vector<KvEntry>&, int64_t)>& on_page);

  // A subscription to the cache's namespace watch (see Subscribe); the
  // callback is not called once this is destroyed, and destroying it waits
  // for a call in progress.
  class Subscription {
   public:
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

   private:
    friend class LayoutCache;
    Subscription(LayoutCache* cache, uint64_t id) : cache_(cache), id_(id) {}
    LayoutCache* const cache_;
    const uint64_t id_;
  };
  // Shares the process's one namespace watch: `callback` gets every watch
  // batch (every file record of the cluster) that arrives from now on,
  // after the cache applied it, in revision order, on the watch thread; a
  // batch with `compacted` set means events up to `compact_revision` were
  // lost (sent once the cache re-read and watches again from the next
  // revision): a subscriber re-reads what it keeps, and may see events it
  // already has again (skip what is not newer). The callback
  // must not subscribe, unsubscribe or destroy the cache. The subscription
  // must not outlive the cache.
  std::unique_ptr<Subscription> Subscribe(KvWatchCallback callback);
  // Watches of the namespace this cache holds open: 1 (0 while
  // re-watching after a compaction).
  int open_watches();

  // Blocks until the watch has applied every change up to `revision`.
  // DEADLINE_EXCEEDED after `timeout`.
  absl::Status WaitForRevision(int64_t revision, absl::Duration timeout);

  LayoutCacheStats stats();

 private:
  struct Entry {
    std::shared_ptr<const std::string> bytes;  // encoded v1::FileLayout
    int64_t mod_revision = 0;
    std::weak_ptr<const CachedLayout> parsed;
  };
  struct Inflight {
    absl::Notification done;
    absl::StatusOr<std::shared_ptr<const CachedLayout>> result;
  };

  LayoutCache(KvBackend* kv, const LayoutCacheOptions& options);
  absl::Status StartWatch(int64_t start_revision);
  void OnWatch(const KvWatchUpdate& update);
  // Applies a watch batch to the entries held.
  void ApplyWatch(const KvWatchUpdate& update) ABSL_LOCKS_EXCLUDED(mu_);
  void MaintenanceLoop();
  absl::Status Relist();
  absl::StatusOr<std::shared_ptr<const CachedLayout>> Load(
      const std::string& path);
  // Parses a held entry and remembers the snapshot.
  absl::StatusOr<std::shared_ptr<const CachedLayout>> ParseEntry(
      const std::string& path, Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What keeping `c` hot costs against hot_extent_budget.
  static size_t HotCost(const CachedLayout& c);
  // Keeps `c` parsed for a while (within hot_extent_budget).
  void AddHot(std::shared_ptr<const CachedLayout> c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts or refreshes an entry unless the cache already holds a newer one.
  void Upsert(const std::string& path, std::shared_ptr<const std::string> bytes,
              int64_t mod_revision) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Listed {
    std::string path;
    std::shared_ptr<const std::string> bytes;
    int64_t mod_revision = 0;
  };
  // Keeps the entries of one page read at `revision` that the watch can
  // keep current (see List).
  void KeepPage(std::vector<Listed>& page, int64_t revision)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Pages through `dir` at one revision; `on_page` sees each page's entries.
  // Returns the revision read at.
  absl::StatusOr<int64_t> ForEachPage(
      absl::string_view dir,
      const std::function<void(std::vector<KvEntry>&, int64_t)>& on_page);
  // Calls the subscribers with `update`.
  void Publish(const KvWatchUpdate& update) ABSL_LOCKS_EXCLUDED(subs_mu_);

  KvBackend* const kv_;
  const LayoutCacheOptions options_;
  const Keys keys_;
  Clock* const clock_;
  const std::string prefix_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Recently parsed layouts, oldest first, and their extent count.
  std::deque<std::shared_ptr<const CachedLayout>> hot_ ABSL_GUARDED_BY(mu_);
  size_t hot_extents_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<Inflight>> inflight_
      ABSL_GUARDED_BY(mu_);
  int64_t applied_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool compacted_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = true;
  absl::Time disconnected_since_ ABSL_GUARDED_BY(mu_);
  LayoutCacheStats stats_ ABSL_GUARDED_BY(mu_);
  // The watch's recent changes (revision, path), oldest first: every change
  // after recent_from_ is here (bounded; see KeepPage).
  std::deque<std::pair<int64_t, std::string>> recent_ ABSL_GUARDED_BY(mu_);
  int64_t recent_from_ ABSL_GUARDED_BY(mu_) = 0;
  // Pinned lookups: immutable history, cached by (revision, path).
  absl::flat_hash_map<std::string, std::shared_ptr<const CachedLayout>> pinned_
      ABSL_GUARDED_BY(mu_);

  // Subscribers of the watch (Subscribe), called under subs_mu_.
  absl::Mutex subs_mu_;
  absl::flat_hash_map<uint64_t, KvWatchCallback> subs_
      ABSL_GUARDED_BY(subs_mu_);
  uint64_t next_sub_ ABSL_GUARDED_BY(subs_mu_) = 1;

  // Owned by the maintenance thread after Open (and by Open before it).
  std::unique_ptr<KvWatch> watch_;
  absl::Mutex watch_mu_;  // guards watch_ replacement vs. stats readers
  std::thread maintenance_;
};

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_LAYOUT_CACHE_H_
