#include "mount/namespace_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"

namespace rangefs {
namespace mount {

namespace {

// "/a/b/c" -> "/a/b"; "/a" -> "/".
absl::string_view Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? absl::string_view("/") : path.substr(0, slash);
}

absl::string_view Base(absl::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

std::string ChildPrefix(absl::string_view dir) {
  return dir == "/" ? std::string("/") : absl::StrCat(dir, "/");
}

}  // namespace

NamespaceIndex::NamespaceIndex(ns::KvBackend* kv, ns::LayoutCache* cache,
                               const NamespaceIndexOptions& options,
                               IndexListener listener)
    : kv_(kv),
      cache_(cache),
      options_(options),
      listener_(std::move(listener)),
      keys_(options.cluster),
      prefix_(keys_.FileDirPrefix(options.dir)) {}

absl::StatusOr<std::unique_ptr<NamespaceIndex>> NamespaceIndex::Open(
    ns::KvBackend* kv, ns::LayoutCache* cache,
    const NamespaceIndexOptions& options, IndexListener listener,
    bool keep_listed) {
  RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(options.dir));
  if (options.revision < 0 || options.page_size <= 0 ||
      options.page_size > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "namespace index: revision ", options.revision, " must be >= 0 and ",
        "page_size ", options.page_size, " in 1..10000"));
  }
  if (options.revision == 0 && cache == nullptr) {
    return absl::InvalidArgumentError(
        "namespace index: a live index needs the layout cache's watch");
  }
  std::unique_ptr<NamespaceIndex> index(
      new NamespaceIndex(kv, cache, options, std::move(listener)));
  if (options.revision > 0) {
    FileMap files;
    RANGEFS_RETURN_IF_ERROR(index->ListPinned(&files));
    absl::MutexLock l(&index->mu_);
    for (const auto& [path, meta] : files) index->total_bytes_ += meta.size;
    index->files_ = std::move(files);
    index->revision_ = options.revision;
    index->loading_ = false;
    return index;
  }
  // Subscribe first: every event after the list's revision arrives.
  index->subscription_ = cache->Subscribe(
      [i = index.get()](const ns::KvWatchUpdate& u) { i->OnWatch(u); });
  RANGEFS_RETURN_IF_ERROR(index->Relist(keep_listed, /*notify=*/false));
  index->maintenance_ =
      std::thread([i = index.get()] { i->MaintenanceLoop(); });
  return index;
}

NamespaceIndex::~NamespaceIndex() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (maintenance_.joinable()) maintenance_.join();
  subscription_.reset();  // waits for a callback in progress
}

std::string NamespaceIndex::NamespacePath(absl::string_view path) const {
  if (options_.dir == "/") return std::string(path);
  if (path == "/") return options_.dir;
  return absl::StrCat(options_.dir, path);
}

bool NamespaceIndex::Decode(const ns::KvEntry& kv, std::string* path,
                            FileMeta* meta, bool* hidden) {
  *hidden = false;
  if (!absl::StartsWith(kv.key, prefix_) || kv.key.size() == prefix_.size()) {
    return false;
  }
  *path = absl::StrCat("/", absl::string_view(kv.key).substr(prefix_.size()));
  absl::Status valid = ns::ValidatePath(NamespacePath(*path));
  if (!valid.ok()) {
    RANGEFS_LOG(WARNING) << "namespace index: skipping etcd key " << kv.key
                         << ": " << valid.message();
    return false;
  }
  *meta = FileMeta();
  meta->mod_revision = kv.mod_revision;
  absl::StatusOr<v1::FileLayout> l = ns::DecodeFileLayout(kv.key, kv.value);
  if (!l.ok()) {
    meta->invalid = std::string(l.status().message());
    return true;
  }
  if (!ns::IsReady(*l)) {
    *hidden = true;
    return false;
  }
  meta->size = l->size();
  meta->file_id = l->file_id();
  meta->generation = l->generation();
  meta->content = ns::ContentIdOf(*l);
  meta->created_unix_ms = l->created_unix_ms();
  meta->modified_unix_ms = l->modified_unix_ms();
  return true;
}

void NamespaceIndex::AddPage(const std::vector<ns::KvEntry>& page,
                             FileMap* out) {
  uint64_t skipped = 0;
  for (const ns::KvEntry& kv : page) {
    std::string path;
    FileMeta meta;
    bool hidden;
    if (Decode(kv, &path, &meta, &hidden)) {
      (*out)[path] = std::move(meta);
    } else if (!hidden) {
      ++skipped;
    }
  }
  absl::MutexLock l(&mu_);
  skipped_keys_ += skipped;
}

absl::Status NamespaceIndex::ListPinned(FileMap* out) {
  return ns::ForEachRangePage(*kv_, prefix_, ns::PrefixRangeEnd(prefix_),
                              options_.revision, options_.page_size,
                              [&](std::vector<ns::KvEntry>& page, int64_t) {
                                AddPage(page, out);
                                return absl::OkStatus();
                              })
      .status();
}

bool NamespaceIndex::HasChildrenLocked(absl::string_view path) const {
  const std::string p = ChildPrefix(path);
  auto it = files_.lower_bound(p);
  return it != files_.end() && absl::StartsWith(it->first, p);
}

void NamespaceIndex::ApplyLocked(const std::string& path, const FileMeta* meta,
                                 std::vector<IndexChange>* changes) {
  auto old = files_.find(path);
  if (meta == nullptr) {
    if (old == files_.end()) return;
    total_bytes_ -= old->second.size;
    files_.erase(old);
    changes->push_back({path, IndexChange::Kind::kFileRemoved});
    for (absl::string_view a = Parent(path); a != "/"; a = Parent(a)) {
      if (HasChildrenLocked(a)) break;
      changes->push_back({std::string(a), IndexChange::Kind::kDirRemoved});
    }
    return;
  }
  if (old != files_.end()) {
    if (old->second.mod_revision >= meta->mod_revision) return;
    FileMeta next = *meta;
    const bool same = old->second.invalid.empty() && next.invalid.empty() &&
                      ns::SameBytes(old->second.content, next.content);
    total_bytes_ = total_bytes_ - old->second.size + next.size;
    old->second = std::move(next);
    changes->push_back({path, same ? IndexChange::Kind::kFileChanged
                                   : IndexChange::Kind::kFileReplaced});
    return;
  }
  for (absl::string_view a = Parent(path); a != "/"; a = Parent(a)) {
    if (HasChildrenLocked(a)) break;
    changes->push_back({std::string(a), IndexChange::Kind::kDirAdded});
  }
  total_bytes_ += meta->size;
  files_[path] = *meta;
  changes->push_back({path, IndexChange::Kind::kFileAdded});
}

void NamespaceIndex::OnWatch(const ns::KvWatchUpdate& update) {
  std::vector<IndexChange> changes;
  {
    absl::MutexLock l(&mu_);
    if (update.compacted) {
      // Events were lost: re-list (the maintenance thread); until then
      // batches wait in pending_.
      compacted_ = true;
      loading_ = true;
      return;
    }
    if (loading_) {
      pending_.push_back(update);
      return;
    }
    ApplyUpdateLocked(update, &changes);
  }
  Notify(changes);
}

void NamespaceIndex::ApplyUpdateLocked(const ns::KvWatchUpdate& update,
                                       std::vector<IndexChange>* changes) {
  for (const ns::KvEvent& e : update.events) {
    if (e.kv.mod_revision <= listed_revision_ ||
        !absl::StartsWith(e.kv.key, prefix_)) {
      continue;  // in the list already, or outside the mount's dir
    }
    ++watch_events_;
    std::string path;
    FileMeta meta;
    bool hidden = false;
    if (e.deleted) {
      path =
          absl::StrCat("/", absl::string_view(e.kv.key).substr(prefix_.size()));
      ApplyLocked(path, nullptr, changes);
    } else if (Decode(e.kv, &path, &meta, &hidden)) {
      ApplyLocked(path, &meta, changes);
    } else if (hidden) {
      ApplyLocked(path, nullptr, changes);  // e.g. back to IMPORTING
    } else {
      ++skipped_keys_;
    }
  }
  if (update.revision > revision_) revision_ = update.revision;
  epoch_.fetch_add(1, std::memory_order_release);
}

void NamespaceIndex::Notify(const std::vector<IndexChange>& changes) {
  if (listener_ && !changes.empty()) listener_(changes);
}

void NamespaceIndex::MaintenanceLoop() {
  while (true) {
    {
      absl::MutexLock l(&mu_);
      auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stop_ || compacted_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Seconds(1));
      if (stop_) return;
      if (!compacted_) continue;
    }
    absl::Status s = Relist(/*keep=*/false, /*notify=*/true);
    if (!s.ok()) {
      RANGEFS_LOG(WARNING) << "namespace index: re-list after compaction "
                              "failed (retrying in 1 s): "
                           << s;
      absl::MutexLock l(&mu_);
      auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopped), absl::Seconds(1));
    }
  }
}

absl::Status NamespaceIndex::Relist(bool keep, bool notify) {
  {
    // Batches that came before the list's read are in the list.
    absl::MutexLock l(&mu_);
    pending_.clear();
  }
  FileMap fresh;
  RANGEFS_ASSIGN_OR_RETURN(
      int64_t revision, cache_->Scan(options_.dir, keep,
                                     [&](const std::vector<ns::KvEntry>& page,
                                         int64_t) { AddPage(page, &fresh); }));
  std::vector<IndexChange> changes;
  {
    absl::MutexLock l(&mu_);
    std::vector<std::string> gone;
    for (const auto& [path, meta] : files_) {
      if (fresh.find(path) == fresh.end()) gone.push_back(path);
    }
    for (const std::string& path : gone) ApplyLocked(path, nullptr, &changes);
    for (const auto& [path, meta] : fresh) ApplyLocked(path, &meta, &changes);
    revision_ = std::max(revision_, revision);
    listed_revision_ = revision;
    std::vector<ns::KvWatchUpdate> pending;
    pending.swap(pending_);
    for (const ns::KvWatchUpdate& u : pending) ApplyUpdateLocked(u, &changes);
    loading_ = false;
    if (relisted_once_) ++relists_;
    relisted_once_ = true;
    compacted_ = false;
    epoch_.fetch_add(1, std::memory_order_release);
  }
  if (notify) Notify(changes);
  return absl::OkStatus();
}

IndexEntry NamespaceIndex::Find(absl::string_view path) {
  IndexEntry out;
  if (path == "/") {
    out.kind = EntryKind::kDir;
    return out;
  }
  absl::ReaderMutexLock l(&mu_);
  if (HasChildrenLocked(path)) {
    out.kind = EntryKind::kDir;
    return out;
  }
  FileMap::const_iterator it = files_.find(path);
  if (it == files_.end()) it = ShadowedLocked(path);
  if (it != files_.end()) {
    out.kind = EntryKind::kFile;
    out.meta = it->second;
  }
  return out;
}

NamespaceIndex::FileMap::const_iterator NamespaceIndex::ShadowedLocked(
    absl::string_view path) const {
  if (Base(path) != kShadowedFileName) return files_.end();
  const absl::string_view dir = Parent(path);
  if (dir == "/" || !HasChildrenLocked(dir)) return files_.end();
  return files_.find(dir);
}

std::string NamespaceIndex::FilePath(absl::string_view path) {
  {
    absl::ReaderMutexLock l(&mu_);
    if (files_.find(path) == files_.end() &&
        ShadowedLocked(path) != files_.end()) {
      return NamespacePath(Parent(path));
    }
  }
  return NamespacePath(path);
}

absl::StatusOr<std::vector<DirEntry>> NamespaceIndex::List(
    absl::string_view path) {
  std::vector<DirEntry> out;
  const std::string p = ChildPrefix(path);
  absl::ReaderMutexLock l(&mu_);
  if (path != "/" && !HasChildrenLocked(path)) {
    return absl::NotFoundError(
        absl::StrCat(NamespacePath(path), " is not a directory"));
  }
  auto it = files_.lower_bound(p);
  while (it != files_.end() && absl::StartsWith(it->first, p)) {
    absl::string_view rest = absl::string_view(it->first).substr(p.size());
    const size_t slash = rest.find('/');
    if (slash == absl::string_view::npos) {
      // A file, unless a directory of the same name follows.
      auto next = std::next(it);
      const bool shadowed =
          next != files_.end() &&
          absl::StartsWith(next->first, absl::StrCat(it->first, "/"));
      if (!shadowed) {
        out.push_back({std::string(rest), EntryKind::kFile, it->second});
      }
      ++it;
      continue;
    }
    std::string name(rest.substr(0, slash));
    // Skip the subtree: every key with prefix p + name + "/" ('0' follows
    // '/').
    it = files_.lower_bound(absl::StrCat(p, name, "0"));
    out.push_back({std::move(name), EntryKind::kDir, FileMeta()});
  }
  // A file at this directory's own path (a clash): listed inside it.
  const std::string shadow = absl::StrCat(p, kShadowedFileName);
  auto self = path == "/" ? files_.end() : files_.find(path);
  if (self != files_.end() && files_.find(shadow) == files_.end() &&
      !HasChildrenLocked(shadow)) {
    DirEntry e{std::string(kShadowedFileName), EntryKind::kFile, self->second};
    auto at = std::lower_bound(
        out.begin(), out.end(), e,
        [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    out.insert(at, std::move(e));
  }
  return out;
}

int64_t NamespaceIndex::revision() const {
  absl::ReaderMutexLock l(&mu_);
  return revision_;
}

absl::Status NamespaceIndex::WaitForRevision(int64_t revision,
                                             absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  auto reached = [this, revision]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return revision_ >= revision;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&reached), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("namespace index at revision ", revision_, ", waited ",
                     absl::FormatDuration(timeout), " for ", revision));
  }
  return absl::OkStatus();
}

NamespaceIndexStats NamespaceIndex::stats() {
  NamespaceIndexStats s;
  {
    absl::ReaderMutexLock l(&mu_);
    s.files = files_.size();
    s.total_bytes = total_bytes_;
    s.revision = revision_;
    s.watch_events = watch_events_;
    s.relists = relists_;
    s.skipped_keys = skipped_keys_;
  }
  s.pinned = options_.revision > 0;
  s.watch_connected = cache_ != nullptr && cache_->stats().watch_connected;
  return s;
}

}  // namespace mount
}  // namespace rangefs
