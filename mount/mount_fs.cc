#include "mount/mount_fs.h"

#include <fcntl.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "mount/mount_fs_handle.h"
#include "mount/xattrs.h"
#include "namespace/cached_layout.h"

namespace rangefs {
namespace mount {

namespace {

constexpr uint32_t kBlockSize = 1 << 20;  // st_blksize: tools read 1 MiB

absl::string_view Parent(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? absl::string_view("/") : path.substr(0, slash);
}

absl::string_view Base(absl::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

// readdir's d_ino for an entry the kernel holds no inode of: a stable
// number with the top bit set (never one of InodeTable's).
uint64_t PseudoIno(absl::string_view path) {
  uint64_t h = 1469598103934665603ull;
  for (char c : path) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h | (uint64_t{1} << 63);
}

}  // namespace

struct MountFs::DirHandle {
  std::string path;
  uint64_t ino = 0;
  std::vector<DirEntry> entries;
};

MountFs::MountFs(Client* client, NamespaceIndex* index, ns::LayoutCache* cache,
                 MountCounters* counters, MountFsOptions options,
                 NoticeSink notify)
    : client_(client),
      index_(index),
      cache_(cache),
      counters_(counters),
      options_(std::move(options)),
      notify_(std::move(notify)),
      pinned_(options_.revision > 0),
      mount_time_s_(absl::ToUnixSeconds(absl::Now())) {
  if (options_.batch_max_bytes > 0) {
    ReadBatcherOptions b = options_.batch;
    b.read = options_.read;
    batcher_ = std::make_unique<ReadBatcher>(client_, b);
  }
}

MountFs::~MountFs() {
  absl::flat_hash_map<uint64_t, std::unique_ptr<Handle>> handles;
  {
    absl::MutexLock l(&mu_);
    handles.swap(handles_);
    dirs_.clear();
  }
  handles.clear();  // joins Reader prefetches outside the lock
}

std::string MountFs::Join(absl::string_view parent, absl::string_view name) {
  return parent == "/" ? absl::StrCat("/", name)
                       : absl::StrCat(parent, "/", name);
}

struct stat MountFs::FileAttr(uint64_t ino, const FileMeta& meta) const {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = S_IFREG | 0444;
  st.st_nlink = 1;
  st.st_uid = options_.uid;
  st.st_gid = options_.gid;
  st.st_size = static_cast<off_t>(meta.size);
  st.st_blocks = static_cast<blkcnt_t>((meta.size + 511) / 512);
  st.st_blksize = kBlockSize;
  const int64_t ms =
      meta.modified_unix_ms > 0 ? meta.modified_unix_ms : meta.created_unix_ms;
  st.st_mtim.tv_sec = ms / 1000;
  st.st_mtim.tv_nsec = (ms % 1000) * 1000000;
  st.st_ctim = st.st_mtim;
  st.st_atim = st.st_mtim;
  return st;
}

struct stat MountFs::DirAttr(uint64_t ino) const {
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = S_IFDIR | 0555;
  // 1: "subdirectories not counted" (as btrfs), so find(1) looks into all.
  st.st_nlink = 1;
  st.st_uid = options_.uid;
  st.st_gid = options_.gid;
  st.st_blksize = kBlockSize;
  st.st_mtim.tv_sec = mount_time_s_;
  st.st_ctim = st.st_mtim;
  st.st_atim = st.st_mtim;
  return st;
}

absl::StatusOr<MountEntry> MountFs::Lookup(uint64_t parent,
                                           absl::string_view name) {
  counters_->lookups.fetch_add(1, std::memory_order_relaxed);
  InodeRef ref;
  if (!inodes_.Get(parent, &ref) || !ref.is_dir) {
    return absl::NotFoundError(absl::StrCat("no directory inode ", parent));
  }
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != absl::string_view::npos) {
    return absl::NotFoundError(absl::StrCat("lookup of \"", name, "\""));
  }
  const std::string path = Join(ref.path, name);
  IndexEntry e = index_->Find(path);
  MountEntry out;
  switch (e.kind) {
    case EntryKind::kNone:
      return absl::NotFoundError(
          absl::StrCat(index_->NamespacePath(path), " not found"));
    case EntryKind::kFile:
      out.ino = inodes_.Acquire(path, false);
      out.attr = FileAttr(out.ino, e.meta);
      return out;
    case EntryKind::kDir:
      out.ino = inodes_.Acquire(path, true);
      out.attr = DirAttr(out.ino);
      return out;
  }
  return absl::InternalError("unreachable");
}

void MountFs::Forget(uint64_t ino, uint64_t n) { inodes_.Forget(ino, n); }

absl::StatusOr<struct stat> MountFs::GetAttr(uint64_t ino) {
  counters_->getattrs.fetch_add(1, std::memory_order_relaxed);
  InodeRef ref;
  if (!inodes_.Get(ino, &ref)) {
    return absl::NotFoundError(absl::StrCat("no inode ", ino));
  }
  IndexEntry e = index_->Find(ref.path);
  if (e.kind == EntryKind::kDir && ref.is_dir) return DirAttr(ino);
  if (e.kind == EntryKind::kFile && !ref.is_dir) return FileAttr(ino, e.meta);
  return absl::NotFoundError(
      absl::StrCat(index_->NamespacePath(ref.path), " is gone"));
}

absl::StatusOr<uint64_t> MountFs::OpenDir(uint64_t ino) {
  counters_->readdirs.fetch_add(1, std::memory_order_relaxed);
  InodeRef ref;
  if (!inodes_.Get(ino, &ref) || !ref.is_dir) {
    return absl::NotFoundError(absl::StrCat("no directory inode ", ino));
  }
  auto d = std::make_unique<DirHandle>();
  d->path = ref.path;
  d->ino = ino;
  RANGEFS_ASSIGN_OR_RETURN(d->entries, index_->List(ref.path));
  absl::MutexLock l(&mu_);
  const uint64_t id = next_dir_++;
  dirs_[id] = std::move(d);
  return id;
}

void MountFs::ReadDir(uint64_t dir_handle, int64_t offset, bool plus,
                      const std::function<bool(const DirItem&, int64_t)>& add) {
  DirHandle* d;
  {
    absl::MutexLock l(&mu_);
    auto it = dirs_.find(dir_handle);
    if (it == dirs_.end()) return;
    d = it->second.get();  // used by this call only (kernel serializes)
  }
  const int64_t total = static_cast<int64_t>(d->entries.size()) + 2;
  for (int64_t i = std::max<int64_t>(offset, 0); i < total; ++i) {
    DirItem item;
    if (i < 2) {
      item.name = i == 0 ? "." : "..";
      item.attr = DirAttr(i == 0 ? d->ino : kRootInode);
      if (!add(item, i + 1)) return;
      continue;
    }
    const DirEntry& e = d->entries[static_cast<size_t>(i - 2)];
    const std::string path = Join(d->path, e.name);
    const bool is_dir = e.kind == EntryKind::kDir;
    item.name = e.name;
    uint64_t ino;
    if (plus) {
      ino = inodes_.Acquire(path, is_dir);
      item.ino = ino;
    } else {
      ino = inodes_.Find(path);
      if (ino == 0) ino = PseudoIno(path);
    }
    item.attr = is_dir ? DirAttr(ino) : FileAttr(ino, e.meta);
    if (!add(item, i + 1)) {
      if (plus) inodes_.Forget(ino, 1);
      return;
    }
  }
}

void MountFs::ReleaseDir(uint64_t dir_handle) {
  absl::MutexLock l(&mu_);
  dirs_.erase(dir_handle);
}

absl::StatusOr<std::string> MountFs::GetXattr(uint64_t ino,
                                              absl::string_view name) {
  counters_->getxattrs.fetch_add(1, std::memory_order_relaxed);
  InodeRef ref;
  if (!inodes_.Get(ino, &ref)) {
    return absl::NotFoundError(absl::StrCat("no inode ", ino));
  }
  const auto& names = XattrNames();
  if (ref.is_dir ||
      std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::NotFoundError(absl::StrCat("no attribute ", name));
  }
  const std::string nspath = index_->FilePath(ref.path);
  absl::StatusOr<std::shared_ptr<const ns::CachedLayout>> l =
      pinned_ ? cache_->LookupAt(nspath, options_.revision)
              : cache_->Lookup(nspath);
  if (!l.ok()) {
    // NOT_FOUND here would read as "no such attribute": the file is gone.
    if (absl::IsNotFound(l.status())) {
      return absl::AbortedError(l.status().message());
    }
    return l.status();
  }
  const v1::FileLayout layout = ns::FullLayout(**l);
  if (!IsPolicyXattr(name) || !options_.load_policies) {
    return XattrValue(name, layout);
  }
  // A pinned mount shows the policies of its snapshot.
  RANGEFS_ASSIGN_OR_RETURN(
      const ns::PolicyTable policies,
      options_.load_policies(pinned_ ? options_.revision : 0));
  const ns::PolicyResolution r = ns::ResolvePolicy(
      policies, nspath, layout.size(),
      absl::FromUnixMillis(layout.created_unix_ms()), absl::Now());
  return XattrValue(name, layout, &r);
}

absl::StatusOr<std::string> MountFs::ListXattr(uint64_t ino) {
  InodeRef ref;
  if (!inodes_.Get(ino, &ref)) {
    return absl::NotFoundError(absl::StrCat("no inode ", ino));
  }
  return ref.is_dir ? std::string() : XattrList();
}

struct statvfs MountFs::StatFs() {
  NamespaceIndexStats s = index_->stats();
  const ClientStats cs = client_->Stats();
  struct statvfs v {};
  v.f_bsize = kBlockSize;
  v.f_frsize = 4096;
  // The cluster's capacity (the live nodes' export file systems); with no
  // node live, the files' bytes and nothing free.
  const uint64_t total = std::max(cs.live_total_bytes, s.total_bytes);
  v.f_blocks = (total + v.f_frsize - 1) / v.f_frsize;
  v.f_bfree = v.f_bavail =
      std::min<uint64_t>(cs.live_free_bytes / v.f_frsize, v.f_blocks);
  v.f_files = s.files;
  v.f_namemax = 255;
  v.f_flag = ST_RDONLY;
  return v;
}

void MountFs::OnIndexChanges(absl::Span<const IndexChange> changes) {
  std::vector<Notice> out;
  for (const IndexChange& c : changes) {
    const uint64_t parent = inodes_.Find(Parent(c.path));
    const uint64_t ino = inodes_.Find(c.path);
    const std::string name(Base(c.path));
    switch (c.kind) {
      case IndexChange::Kind::kFileAdded:
      case IndexChange::Kind::kDirAdded:
        if (parent != 0) out.push_back({Notice::Kind::kEntry, parent, name});
        break;
      case IndexChange::Kind::kFileRemoved:
      case IndexChange::Kind::kDirRemoved:
        if (parent != 0) out.push_back({Notice::Kind::kEntry, parent, name});
        if (ino != 0) out.push_back({Notice::Kind::kInode, ino, ""});
        break;
      case IndexChange::Kind::kFileReplaced:
        if (ino != 0) out.push_back({Notice::Kind::kInode, ino, ""});
        break;
      case IndexChange::Kind::kFileChanged:
        if (ino != 0) out.push_back({Notice::Kind::kInode, ino, "", false});
        break;
    }
  }
  if (!out.empty() && notify_) notify_(std::move(out));
}

}  // namespace mount
}  // namespace rangefs
