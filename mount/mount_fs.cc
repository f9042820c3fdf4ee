#include "mount/mount_fs.h"

#include <fcntl.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "mount/xattrs.h"

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

// Scratch buffer of the calling (FUSE worker) thread.
std::string& Scratch(size_t size) {
  static thread_local std::string buf;
  if (buf.size() < size) buf.resize(size);
  return buf;
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

struct MountFs::Handle {
  std::string path;  // relative
  uint64_t ino = 0;
  std::unique_ptr<File> file;
  CacheTag tag;
  std::atomic<uint64_t> checked_epoch{0};
  std::atomic<int> inflight{0};
  std::atomic<uint64_t> last_end{0};
  absl::Mutex reader_mu;
  std::unique_ptr<Reader> reader ABSL_GUARDED_BY(reader_mu);
};

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

CacheTag MountFs::TagOf(const FileMeta& meta) const {
  return CacheTag{meta.file_id, meta.content_generation};
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

absl::Status MountFs::OpenFile(Handle& h) {
  const std::string nspath = index_->NamespacePath(h.path);
  if (pinned_) {
    IndexEntry e = index_->Find(h.path);
    if (e.kind != EntryKind::kFile) {
      return absl::NotFoundError(absl::StrCat(nspath, " not found"));
    }
    RANGEFS_ASSIGN_OR_RETURN(h.file,
                             client_->OpenFile(nspath, options_.revision));
    h.tag = TagOf(e.meta);
    return absl::OkStatus();
  }
  // The library and the index follow etcd through separate watches: open,
  // then make sure both describe the same bytes.
  for (int attempt = 0; attempt < 3; ++attempt) {
    RANGEFS_ASSIGN_OR_RETURN(FileInfo info, client_->Stat(nspath));
    RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f,
                             client_->OpenFile(nspath));
    if (f->generation() != info.generation) continue;  // raced a change
    (void)index_->WaitForRevision(info.mod_revision, options_.index_catch_up);
    const uint64_t epoch = index_->epoch();
    IndexEntry e = index_->Find(h.path);
    const FileMeta& m = e.meta;
    if (e.kind == EntryKind::kFile && m.file_id == info.file_id &&
        m.content_generation <= info.generation &&
        info.generation <= m.generation) {
      h.file = std::move(f);
      h.tag = TagOf(m);
      h.checked_epoch.store(epoch);
      return absl::OkStatus();
    }
  }
  return absl::UnavailableError(
      absl::StrCat(nspath, " is changing in the namespace; retry the open"));
}

absl::StatusOr<OpenResult> MountFs::Open(uint64_t ino, int flags) {
  counters_->opens.fetch_add(1, std::memory_order_relaxed);
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT))) {
    return absl::PermissionDeniedError("rangefs mounts are read-only");
  }
  InodeRef ref;
  if (!inodes_.Get(ino, &ref) || ref.is_dir) {
    return absl::NotFoundError(absl::StrCat("no file inode ", ino));
  }
  IndexEntry e = index_->Find(ref.path);
  if (e.kind != EntryKind::kFile) {
    return absl::NotFoundError(
        absl::StrCat(index_->NamespacePath(ref.path), " not found"));
  }
  if (!e.meta.invalid.empty()) return absl::DataLossError(e.meta.invalid);
  auto h = std::make_unique<Handle>();
  h->path = ref.path;
  h->ino = ino;
  RANGEFS_RETURN_IF_ERROR(OpenFile(*h));
  if (options_.prefetch) {
    ReaderOptions ro = options_.reader;
    ro.read = options_.read;
    absl::MutexLock l(&h->reader_mu);
    h->reader = std::make_unique<Reader>(h->file.get(), ro);
  }
  OpenResult out;
  out.keep_cache = inodes_.SwapCacheTag(ino, h->tag);
  out.handle = reinterpret_cast<uint64_t>(h.get());
  {
    absl::MutexLock l(&mu_);
    handles_[out.handle] = std::move(h);
  }
  counters_->open_files.fetch_add(1, std::memory_order_relaxed);
  return out;
}

absl::Status MountFs::CheckCurrent(Handle& h) {
  if (pinned_) return absl::OkStatus();
  const uint64_t epoch = index_->epoch();
  if (h.checked_epoch.load(std::memory_order_acquire) == epoch) {
    return absl::OkStatus();
  }
  IndexEntry e = index_->Find(h.path);
  if (e.kind == EntryKind::kFile && TagOf(e.meta) == h.tag) {
    h.checked_epoch.store(epoch, std::memory_order_release);
    return absl::OkStatus();
  }
  return absl::AbortedError(
      absl::StrCat(index_->NamespacePath(h.path),
                   e.kind == EntryKind::kFile ? " changed" : " was removed",
                   " since it was opened; reopen"));
}

absl::Status MountFs::ReadSequential(Handle& h, uint64_t offset, size_t size,
                                     const ReadDone& done) {
  Reader& r = *h.reader;
  if (r.position() != offset) RANGEFS_RETURN_IF_ERROR(r.Seek(offset));
  RANGEFS_ASSIGN_OR_RETURN(absl::Span<const char> v, r.Next(size));
  if (v.size() < size && !v.empty()) {
    // The window ended inside this request: gather into scratch.
    std::string& buf = Scratch(size);
    memcpy(&buf[0], v.data(), v.size());
    size_t got = v.size();
    while (got < size) {
      RANGEFS_ASSIGN_OR_RETURN(absl::Span<const char> w, r.Next(size - got));
      if (w.empty()) break;
      memcpy(&buf[got], w.data(), w.size());
      got += w.size();
    }
    v = absl::Span<const char>(buf.data(), got);
  }
  counters_->reader_reads.fetch_add(1, std::memory_order_relaxed);
  Finish(h, offset, v.size(), v.data(), done);
  return absl::OkStatus();
}

void MountFs::Finish(Handle& h, uint64_t offset, absl::StatusOr<size_t> n,
                     const char* data, const ReadDone& done) {
  absl::Status s = n.ok() ? CheckCurrent(h) : n.status();
  if (s.ok()) {
    h.last_end.store(offset + *n, std::memory_order_relaxed);
    counters_->read_bytes.fetch_add(*n, std::memory_order_relaxed);
    done(s, absl::Span<const char>(data, *n));
    return;
  }
  if (absl::IsAborted(s)) {
    counters_->estale.fetch_add(1, std::memory_order_relaxed);
  }
  done(s, absl::Span<const char>());
}

void MountFs::Read(uint64_t handle, uint64_t offset, size_t size,
                   ReadDone done) {
  counters_->reads.fetch_add(1, std::memory_order_relaxed);
  Handle& h = *reinterpret_cast<Handle*>(handle);
  const uint64_t fsize = h.file->size();
  if (offset >= fsize || size == 0) {
    Finish(h, offset, size_t{0}, nullptr, done);
    return;
  }
  size = static_cast<size_t>(std::min<uint64_t>(size, fsize - offset));
  // One request at a time continuing the last one: a sequential stream the
  // kernel does not read ahead for us (O_DIRECT, small readahead).
  const int now = h.inflight.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool sequential = now == 1 && offset > 0 &&
                          offset == h.last_end.load(std::memory_order_relaxed);
  if (batcher_ != nullptr && size <= options_.batch_max_bytes && !sequential) {
    batcher_->Submit({h.file.get(), offset, size,
                      [this, &h, offset, done = std::move(done)](
                          absl::StatusOr<size_t> n, const char* data) {
                        h.inflight.fetch_sub(1, std::memory_order_relaxed);
                        Finish(h, offset, std::move(n), data, done);
                      }});
    return;
  }
  ReadNow(h, offset, size, sequential, done);
}

void MountFs::ReadNow(Handle& h, uint64_t offset, size_t size, bool sequential,
                      const ReadDone& done) {
  // Called exactly once below; the count drops before `done` runs, which
  // may release the handle.
  const ReadDone finish = [&h, &done](const absl::Status& s,
                                      absl::Span<const char> b) {
    h.inflight.fetch_sub(1, std::memory_order_relaxed);
    done(s, b);
  };
  if (options_.prefetch && sequential && h.reader_mu.TryLock()) {
    absl::Status s = ReadSequential(h, offset, size, finish);
    h.reader_mu.Unlock();
    if (!s.ok()) Finish(h, offset, s, nullptr, finish);
    return;
  }
  std::string& buf = Scratch(size);
  absl::StatusOr<size_t> n =
      h.file->Read(offset, absl::MakeSpan(&buf[0], size), options_.read);
  Finish(h, offset, std::move(n), buf.data(), finish);
}

void MountFs::Release(uint64_t handle) {
  std::unique_ptr<Handle> h;
  {
    absl::MutexLock l(&mu_);
    auto it = handles_.find(handle);
    if (it == handles_.end()) return;
    h = std::move(it->second);
    handles_.erase(it);
  }
  counters_->open_files.fetch_sub(1, std::memory_order_relaxed);
  // A sequential read answers the kernel while it holds reader_mu and
  // unlocks right after: wait for that unlock before the mutex goes away.
  { absl::MutexLock l(&h->reader_mu); }
  h.reset();  // outside mu_: joins an in-flight prefetch
}

size_t MountFs::open_handles() {
  absl::MutexLock l(&mu_);
  return handles_.size();
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
  const std::string nspath = index_->NamespacePath(ref.path);
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
  return XattrValue(name, (*l)->layout);
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
  struct statvfs v {};
  v.f_bsize = kBlockSize;
  v.f_frsize = 4096;
  v.f_blocks = (s.total_bytes + v.f_frsize - 1) / v.f_frsize;
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
