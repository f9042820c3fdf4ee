#include "namespace/layout_cache.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "namespace/cached_layout.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"
#include "namespace/store.h"

namespace rangefs {
namespace ns {

namespace {
constexpr int64_t kPageSize = 1000;
constexpr size_t kMaxPinned = 1024;
// Changes the watch remembers for List pages read behind it.
constexpr size_t kMaxRecent = 65536;
}  // namespace

LayoutCache::LayoutCache(KvBackend* kv, const LayoutCacheOptions& options)
    : kv_(kv),
      options_(options),
      keys_(options.cluster),
      clock_(options.clock ? options.clock : Clock::Real()),
      prefix_(keys_.FileDirPrefix("/")) {}

absl::StatusOr<std::unique_ptr<LayoutCache>> LayoutCache::Open(
    KvBackend* kv, const LayoutCacheOptions& options) {
  if (options.max_staleness < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_staleness must be >= 0");
  }
  std::unique_ptr<LayoutCache> cache(new LayoutCache(kv, options));
  // The current revision: a one-key read anywhere.
  RANGEFS_ASSIGN_OR_RETURN(KvRange r,
                           kv->Range(cache->keys_.NextFileId(), "", 1, 0));
  {
    absl::MutexLock l(&cache->mu_);
    cache->applied_revision_ = r.revision;
    cache->recent_from_ = r.revision;
  }
  RANGEFS_RETURN_IF_ERROR(cache->StartWatch(r.revision + 1));
  cache->maintenance_ =
      std::thread([c = cache.get()] { c->MaintenanceLoop(); });
  return cache;
}

LayoutCache::~LayoutCache() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (maintenance_.joinable()) maintenance_.join();
  absl::MutexLock w(&watch_mu_);
  watch_.reset();
}

absl::Status LayoutCache::StartWatch(int64_t start_revision) {
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<KvWatch> w,
      kv_->Watch(prefix_, PrefixRangeEnd(prefix_), start_revision,
                 [this](const KvWatchUpdate& u) { OnWatch(u); }));
  absl::MutexLock l(&watch_mu_);
  watch_ = std::move(w);
  return absl::OkStatus();
}

void LayoutCache::OnWatch(const KvWatchUpdate& update) {
  ApplyWatch(update);
  // A compaction reaches subscribers once the cache watches again
  // (Relist), so that their own re-read is not behind the new watch.
  if (!update.compacted) Publish(update);
}

void LayoutCache::Publish(const KvWatchUpdate& update) {
  absl::MutexLock l(&subs_mu_);
  for (const auto& [id, callback] : subs_) callback(update);
}

std::unique_ptr<LayoutCache::Subscription> LayoutCache::Subscribe(
    KvWatchCallback callback) {
  absl::MutexLock l(&subs_mu_);
  const uint64_t id = next_sub_++;
  subs_[id] = std::move(callback);
  return std::unique_ptr<Subscription>(new Subscription(this, id));
}

LayoutCache::Subscription::~Subscription() {
  absl::MutexLock l(&cache_->subs_mu_);
  cache_->subs_.erase(id_);
}

int LayoutCache::open_watches() {
  absl::MutexLock w(&watch_mu_);
  return watch_ != nullptr ? 1 : 0;
}

void LayoutCache::ApplyWatch(const KvWatchUpdate& update) {
  if (update.compacted) {
    absl::MutexLock l(&mu_);
    compacted_ = true;
    return;
  }
  // Only entries the cache holds are refreshed; their bytes are kept as
  // they come and parsed by the next Lookup.
  absl::MutexLock l(&mu_);
  stats_.watch_events += update.events.size();
  for (const KvEvent& e : update.events) {
    std::string path;
    if (!keys_.ParseFile(e.kv.key, &path)) continue;
    recent_.emplace_back(e.kv.mod_revision, path);
    if (recent_.size() > kMaxRecent) {
      recent_from_ = std::max(recent_from_, recent_.front().first);
      recent_.pop_front();
    }
    auto it = entries_.find(path);
    if (it == entries_.end() || it->second.mod_revision >= e.kv.mod_revision) {
      continue;
    }
    if (e.deleted) {
      entries_.erase(it);
      ++stats_.invalidations;
    } else {
      it->second.bytes = std::make_shared<const std::string>(e.kv.value);
      it->second.mod_revision = e.kv.mod_revision;
      it->second.parsed.reset();
      ++stats_.updates;
    }
  }
  if (update.revision > applied_revision_) applied_revision_ = update.revision;
}

size_t LayoutCache::HotCost(const CachedLayout& c) {
  // In parsed-extent equivalents (~300 B): a striped target is about one;
  // an indexed extent is 12 B.
  return static_cast<size_t>(c.header.striped().targets_size()) +
         c.index.size() / 16 + 1;
}

void LayoutCache::AddHot(std::shared_ptr<const CachedLayout> c) {
  const size_t n = HotCost(*c);
  if (n > options_.hot_extent_budget) return;
  hot_extents_ += n;
  hot_.push_back(std::move(c));
  while (hot_extents_ > options_.hot_extent_budget && !hot_.empty()) {
    hot_extents_ -= HotCost(*hot_.front());
    hot_.pop_front();
  }
}

absl::StatusOr<std::shared_ptr<const CachedLayout>> LayoutCache::ParseEntry(
    const std::string& path, Entry& entry) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const CachedLayout> out,
                           DecodeCachedLayout(path, keys_.File(path),
                                              entry.bytes, entry.mod_revision));
  ++stats_.parses;
  entry.parsed = out;
  AddHot(out);
  return out;
}

void LayoutCache::Upsert(const std::string& path,
                         std::shared_ptr<const std::string> bytes,
                         int64_t mod_revision) {
  Entry& e = entries_[path];
  if (e.bytes != nullptr && e.mod_revision >= mod_revision) return;
  e.bytes = std::move(bytes);
  e.mod_revision = mod_revision;
  e.parsed.reset();
}

void LayoutCache::MaintenanceLoop() {
  while (true) {
    bool relist = false;
    {
      absl::MutexLock l(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), options_.maintenance_period);
      if (stop_) return;
      relist = compacted_;
    }
    bool connected;
    {
      absl::MutexLock w(&watch_mu_);
      connected = watch_ != nullptr && watch_->connected();
    }
    {
      absl::MutexLock l(&mu_);
      if (connected && !relist) {
        connected_ = true;
      } else if (connected_) {
        connected_ = false;
        disconnected_since_ = clock_->MonotonicNow();
      }
    }
    if (relist) {
      absl::Status s = Relist();
      if (!s.ok()) {
        RANGEFS_LOG(WARNING) << "layout cache: re-list after compaction "
                                "failed (will retry): "
                             << s;
      }
    }
  }
}

absl::Status LayoutCache::Relist() {
  {
    absl::MutexLock w(&watch_mu_);
    watch_.reset();  // Stopped by the compaction anyway.
  }
  // Re-read every file at one revision, refresh what we hold.
  struct Fresh {
    std::shared_ptr<const std::string> bytes;
    int64_t mod_revision;
  };
  absl::flat_hash_map<std::string, Fresh> fresh;
  RANGEFS_ASSIGN_OR_RETURN(
      int64_t revision,
      ForEachRangePage(*kv_, prefix_, PrefixRangeEnd(prefix_), 0, kPageSize,
                       [&](std::vector<KvEntry>& page, int64_t) {
                         for (KvEntry& kv : page) {
                           std::string path;
                           if (!keys_.ParseFile(kv.key, &path)) continue;
                           fresh[path] =
                               Fresh{std::make_shared<const std::string>(
                                         std::move(kv.value)),
                                     kv.mod_revision};
                         }
                         return absl::OkStatus();
                       }));
  {
    absl::MutexLock l(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto f = fresh.find(it->first);
      if (f == fresh.end()) {
        entries_.erase(it++);
        ++stats_.invalidations;
      } else {
        if (f->second.mod_revision != it->second.mod_revision) {
          it->second.bytes = f->second.bytes;
          it->second.mod_revision = f->second.mod_revision;
          it->second.parsed.reset();
        }
        ++it;
      }
    }
    applied_revision_ = std::max(applied_revision_, revision);
    recent_.clear();  // changes before `revision` were not all seen
    recent_from_ = applied_revision_;
    compacted_ = false;
    ++stats_.relists;
  }
  RANGEFS_RETURN_IF_ERROR(StartWatch(revision + 1));
  // Subscribers: events up to `revision` may be lost; every later one
  // comes through the new watch.
  KvWatchUpdate lost;
  lost.compacted = true;
  lost.compact_revision = revision;
  Publish(lost);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const CachedLayout>> LayoutCache::Lookup(
    absl::string_view path) {
  std::shared_ptr<Inflight> flight;
  bool leader = false;
  {
    absl::MutexLock l(&mu_);
    auto it = entries_.find(path);
    if (it != entries_.end()) {
      if (!connected_) {
        absl::Duration stale = clock_->MonotonicNow() - disconnected_since_;
        if (stale > options_.max_staleness) {
          ++stats_.stale_rejections;
          return absl::UnavailableError(absl::StrCat(
              "layout of ", path, " is ", absl::FormatDuration(stale),
              " stale (etcd unreachable); max staleness is ",
              absl::FormatDuration(options_.max_staleness)));
        }
        ++stats_.stale_serves;
      }
      ++stats_.hits;
      if (auto parsed = it->second.parsed.lock()) return parsed;
      return ParseEntry(std::string(path), it->second);
    }
    auto f = inflight_.find(path);
    if (f != inflight_.end()) {
      flight = f->second;
      ++stats_.shared_lookups;
    } else {
      flight = std::make_shared<Inflight>();
      inflight_.emplace(std::string(path), flight);
      leader = true;
      ++stats_.cold_lookups;
    }
  }
  if (!leader) {
    flight->done.WaitForNotification();
    return flight->result;
  }
  std::string p(path);
  flight->result = Load(p);
  {
    absl::MutexLock l(&mu_);
    inflight_.erase(p);
  }
  flight->done.Notify();
  return flight->result;
}

absl::StatusOr<std::shared_ptr<const CachedLayout>> LayoutCache::Load(
    const std::string& path) {
  RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
  RANGEFS_ASSIGN_OR_RETURN(KvRange r, kv_->Range(keys_.File(path), "", 0, 0));
  if (r.kvs.empty()) {
    return absl::NotFoundError(absl::StrCat("file ", path, " not found"));
  }
  RANGEFS_ASSIGN_OR_RETURN(
      std::shared_ptr<const CachedLayout> out,
      DecodeCachedLayout(
          path, r.kvs[0].key,
          std::make_shared<const std::string>(std::move(r.kvs[0].value)),
          r.kvs[0].mod_revision));
  absl::MutexLock l(&mu_);
  // Cache only if no watch event newer than this read has been applied
  // yet: later events then reach this entry in order.
  if (r.revision >= applied_revision_) {
    Upsert(path, out->bytes, out->mod_revision);
    Entry& e = entries_[path];
    if (e.mod_revision == out->mod_revision) {
      e.parsed = out;
      AddHot(out);
    }
    stats_.entries = entries_.size();
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const CachedLayout>> LayoutCache::LookupAt(
    absl::string_view path, int64_t revision) {
  if (revision <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinned revision must be > 0, got ", revision));
  }
  RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
  const std::string pin_key = absl::StrCat(revision, ":", path);
  {
    absl::MutexLock l(&mu_);
    ++stats_.pinned_lookups;
    auto it = pinned_.find(pin_key);
    if (it != pinned_.end()) return it->second;
  }
  auto r = kv_->Range(keys_.File(path), "", 0, revision);
  if (!r.ok()) {
    if (absl::IsOutOfRange(r.status())) {
      return absl::OutOfRangeError(absl::StrCat(
          "namespace as of revision ", revision,
          " is no longer available (compacted) or not yet written: ",
          r.status().message()));
    }
    return r.status();
  }
  if (r->kvs.empty()) {
    return absl::NotFoundError(
        absl::StrCat("file ", path, " not found at revision ", revision));
  }
  RANGEFS_ASSIGN_OR_RETURN(
      std::shared_ptr<const CachedLayout> c,
      DecodeCachedLayout(
          std::string(path), r->kvs[0].key,
          std::make_shared<const std::string>(std::move(r->kvs[0].value)),
          r->kvs[0].mod_revision));
  absl::MutexLock l(&mu_);
  if (pinned_.size() >= kMaxPinned) pinned_.clear();
  pinned_[pin_key] = c;
  return c;
}

absl::StatusOr<int64_t> LayoutCache::ForEachPage(
    absl::string_view dir,
    const std::function<void(std::vector<KvEntry>&, int64_t)>& on_page) {
  RANGEFS_RETURN_IF_ERROR(ValidateDir(dir));
  const std::string prefix = keys_.FileDirPrefix(dir);
  return ForEachRangePage(*kv_, prefix, PrefixRangeEnd(prefix), 0, 0,
                          [&](std::vector<KvEntry>& page, int64_t revision) {
                            on_page(page, revision);
                            return absl::OkStatus();
                          });
}

absl::StatusOr<int64_t> LayoutCache::Scan(
    absl::string_view dir, bool keep,
    const std::function<void(const std::vector<KvEntry>&, int64_t)>& on_page) {
  std::vector<Listed> page;
  return ForEachPage(dir, [&](std::vector<KvEntry>& kvs, int64_t revision) {
    on_page(kvs, revision);
    if (keep) {
      page.clear();
      for (KvEntry& kv : kvs) {
        Listed e;
        if (!keys_.ParseFile(kv.key, &e.path)) continue;
        e.bytes = std::make_shared<const std::string>(std::move(kv.value));
        e.mod_revision = kv.mod_revision;
        page.push_back(std::move(e));
      }
      KeepPage(page, revision);
    }
  });
}

void LayoutCache::KeepPage(std::vector<Listed>& page, int64_t revision) {
  absl::MutexLock l(&mu_);
  // A page read behind the watch: a change the watch applied since then
  // may be missing from it (a put or delete of a path not held then).
  const bool behind = revision < applied_revision_;
  if (behind && revision < recent_from_) {
    stats_.listed_skipped += page.size();
    return;
  }
  absl::flat_hash_set<absl::string_view> changed;
  if (behind) {
    for (auto it = recent_.rbegin();
         it != recent_.rend() && it->first > revision; ++it) {
      changed.insert(it->second);
    }
  }
  for (Listed& e : page) {
    if (changed.contains(e.path) || (entries_.size() >= options_.max_entries &&
                                     !entries_.contains(e.path))) {
      ++stats_.listed_skipped;
      continue;
    }
    Upsert(e.path, std::move(e.bytes), e.mod_revision);
    ++stats_.listed;
  }
  stats_.entries = entries_.size();
}

absl::StatusOr<std::vector<FileEntry>> LayoutCache::List(
    absl::string_view dir) {
  std::vector<FileEntry> out;
  std::vector<Listed> keep;
  RANGEFS_RETURN_IF_ERROR(
      ForEachPage(dir, [&](std::vector<KvEntry>& kvs, int64_t revision) {
        keep.clear();
        for (KvEntry& kv : kvs) {
          FileEntry e;
          if (!keys_.ParseFile(kv.key, &e.path)) continue;
          e.mod_revision = kv.mod_revision;
          e.create_revision = kv.create_revision;
          absl::StatusOr<v1::FileLayout> layout =
              ValidatePath(e.path).ok()
                  ? ParseLayout(kv)
                  : absl::DataLossError(absl::StrCat(
                        "invalid record at etcd key ", absl::CEscape(kv.key),
                        ": not a valid path"));
          if (layout.ok()) {
            e.layout = std::move(*layout);
            keep.push_back(
                {e.path,
                 std::make_shared<const std::string>(std::move(kv.value)),
                 kv.mod_revision});
          } else {
            e.invalid = std::string(layout.status().message());
          }
          out.push_back(std::move(e));
        }
        KeepPage(keep, revision);
      }).status());
  return out;
}

absl::StatusOr<size_t> LayoutCache::Preload(absl::string_view dir) {
  size_t read = 0;
  RANGEFS_RETURN_IF_ERROR(
      Scan(dir, /*keep=*/true, [&](const std::vector<KvEntry>& page, int64_t) {
        read += page.size();
      }).status());
  return read;
}

absl::Status LayoutCache::WaitForRevision(int64_t revision,
                                          absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  auto reached = [this, revision]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return applied_revision_ >= revision;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&reached), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "layout cache: revision ", revision, " not applied within ",
        absl::FormatDuration(timeout), " (at ", applied_revision_, ")"));
  }
  return absl::OkStatus();
}

LayoutCacheStats LayoutCache::stats() {
  absl::MutexLock l(&mu_);
  LayoutCacheStats s = stats_;
  s.entries = entries_.size();
  s.watch_connected = connected_;
  s.watch_revision = applied_revision_;
  s.staleness = connected_ ? absl::ZeroDuration()
                           : clock_->MonotonicNow() - disconnected_since_;
  return s;
}

}  // namespace ns
}  // namespace rangefs
