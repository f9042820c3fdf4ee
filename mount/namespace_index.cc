#include "mount/namespace_index.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"

namespace rangefs {
namespace mount {

namespace {

// FNV-1a over the extents' (offset, length, crc32c); 0 = unknown.
uint64_t ContentDigest(const v1::FileLayout& l) {
  if (l.size() == 0) return 1;
  if (l.has_striped() || l.extents_size() == 0) return 0;
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const v1::Extent& e : l.extents()) {
    if (!e.has_crc32c()) return 0;
    mix(e.offset());
    mix(e.length());
    mix(e.crc32c());
  }
  return h == 0 ? 1 : h;
}

bool SameContent(const FileMeta& a, const FileMeta& b) {
  return a.invalid.empty() && b.invalid.empty() && a.file_id == b.file_id &&
         a.size == b.size && a.content_digest != 0 &&
         a.content_digest == b.content_digest;
}

// "/a/b/c" -> "/a/b"; "/a" -> "/".
absl::string_view Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? absl::string_view("/") : path.substr(0, slash);
}

std::string ChildPrefix(absl::string_view dir) {
  return dir == "/" ? std::string("/") : absl::StrCat(dir, "/");
}

}  // namespace

NamespaceIndex::NamespaceIndex(ns::KvBackend* kv,
                               const NamespaceIndexOptions& options,
                               IndexListener listener)
    : kv_(kv),
      options_(options),
      listener_(std::move(listener)),
      keys_(options.cluster),
      prefix_(keys_.FileDirPrefix(options.dir)) {}

absl::StatusOr<std::unique_ptr<NamespaceIndex>> NamespaceIndex::Open(
    ns::KvBackend* kv, const NamespaceIndexOptions& options,
    IndexListener listener) {
  RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(options.dir));
  if (options.revision < 0 || options.page_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("namespace index: revision ", options.revision,
                     " and page_size ", options.page_size, " must be >= 0"));
  }
  std::unique_ptr<NamespaceIndex> index(
      new NamespaceIndex(kv, options, std::move(listener)));
  FileMap files;
  RANGEFS_ASSIGN_OR_RETURN(int64_t revision,
                           index->ListAll(options.revision, &files));
  {
    absl::MutexLock l(&index->mu_);
    for (const auto& [path, meta] : files) index->total_bytes_ += meta.size;
    index->files_ = std::move(files);
    index->revision_ = revision;
  }
  if (options.revision == 0) {
    RANGEFS_RETURN_IF_ERROR(index->StartWatch(revision + 1));
    index->maintenance_ =
        std::thread([i = index.get()] { i->MaintenanceLoop(); });
  }
  return index;
}

NamespaceIndex::~NamespaceIndex() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (maintenance_.joinable()) maintenance_.join();
  absl::MutexLock w(&watch_mu_);
  watch_.reset();
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
  if (l->state() != v1::READY) {
    *hidden = true;
    return false;
  }
  meta->size = l->size();
  meta->file_id = l->file_id();
  meta->generation = l->generation();
  meta->content_generation = l->generation();
  meta->created_unix_ms = l->created_unix_ms();
  meta->modified_unix_ms = l->modified_unix_ms();
  meta->content_digest = ContentDigest(*l);
  return true;
}

absl::StatusOr<int64_t> NamespaceIndex::ListAll(int64_t revision,
                                                FileMap* out) {
  const std::string end = ns::PrefixRangeEnd(prefix_);
  std::string start = prefix_;
  uint64_t skipped = 0;
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(
        ns::KvRange r, kv_->Range(start, end, options_.page_size, revision));
    if (revision == 0) revision = r.revision;
    for (const ns::KvEntry& kv : r.kvs) {
      std::string path;
      FileMeta meta;
      bool hidden;
      if (Decode(kv, &path, &meta, &hidden)) {
        (*out)[path] = std::move(meta);
      } else if (!hidden) {
        ++skipped;
      }
    }
    if (!r.more || r.kvs.empty()) break;
    start = r.kvs.back().key;
    start.push_back('\0');
  }
  absl::MutexLock l(&mu_);
  skipped_keys_ += skipped;
  return revision;
}

absl::Status NamespaceIndex::StartWatch(int64_t start_revision) {
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<ns::KvWatch> w,
      kv_->Watch(prefix_, ns::PrefixRangeEnd(prefix_), start_revision,
                 [this](const ns::KvWatchUpdate& u) { OnWatch(u); }));
  absl::MutexLock l(&watch_mu_);
  watch_ = std::move(w);
  return absl::OkStatus();
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
    const bool same = SameContent(old->second, next);
    if (same) next.content_generation = old->second.content_generation;
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
      compacted_ = true;
      return;
    }
    watch_events_ += update.events.size();
    for (const ns::KvEvent& e : update.events) {
      std::string path;
      FileMeta meta;
      bool hidden = false;
      if (e.deleted) {
        if (!absl::StartsWith(e.kv.key, prefix_)) continue;
        path = absl::StrCat("/",
                            absl::string_view(e.kv.key).substr(prefix_.size()));
        ApplyLocked(path, nullptr, &changes);
      } else if (Decode(e.kv, &path, &meta, &hidden)) {
        ApplyLocked(path, &meta, &changes);
      } else if (hidden) {
        ApplyLocked(path, nullptr, &changes);  // e.g. back to IMPORTING
      } else {
        ++skipped_keys_;
      }
    }
    if (update.revision > revision_) revision_ = update.revision;
    epoch_.fetch_add(1, std::memory_order_release);
  }
  Notify(changes);
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
    absl::Status s = Relist();
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

absl::Status NamespaceIndex::Relist() {
  FileMap fresh;
  RANGEFS_ASSIGN_OR_RETURN(int64_t revision, ListAll(0, &fresh));
  std::vector<IndexChange> changes;
  {
    absl::MutexLock l(&mu_);
    std::vector<std::string> gone;
    for (const auto& [path, meta] : files_) {
      if (fresh.find(path) == fresh.end()) gone.push_back(path);
    }
    for (const std::string& path : gone) ApplyLocked(path, nullptr, &changes);
    for (const auto& [path, meta] : fresh) ApplyLocked(path, &meta, &changes);
    revision_ = revision;
    compacted_ = false;
    ++relists_;
    epoch_.fetch_add(1, std::memory_order_release);
  }
  {
    absl::MutexLock w(&watch_mu_);
    watch_.reset();
  }
  absl::Status s = StartWatch(revision + 1);
  if (!s.ok()) {
    absl::MutexLock l(&mu_);
    compacted_ = true;  // try again
  }
  Notify(changes);
  return s;
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
  auto it = files_.find(path);
  if (it != files_.end()) {
    out.kind = EntryKind::kFile;
    out.meta = it->second;
  }
  return out;
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
  return out;
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
  absl::MutexLock w(&watch_mu_);
  s.watch_connected = watch_ != nullptr && watch_->connected();
  return s;
}

}  // namespace mount
}  // namespace rangefs
