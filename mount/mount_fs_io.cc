// MountFs: opening, reading and releasing files (mount_fs.h).
#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "mount/mount_fs.h"
#include "mount/mount_fs_handle.h"

namespace rangefs {
namespace mount {

namespace {

// Scratch buffer of the calling (FUSE worker) thread.
std::string& Scratch(size_t size) {
  static thread_local std::string buf;
  if (buf.size() < size) buf.resize(size);
  return buf;
}

// Large sequential requests that waited for their bytes, in a row, after
// which a stream goes through the Reader (ReadNow).
constexpr int kWaitsToPrefetch = 2;

// The calling thread's voluntary context switches so far (it slept: waited
// for I/O, a lock, another thread).
int64_t VoluntarySwitches() {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
  return ru.ru_nvcsw;
}

}  // namespace

const Dataset* MountFs::PinnedDataset() {
  absl::MutexLock l(&dataset_mu_);
  if (dataset_ != nullptr) return dataset_.get();
  const absl::Time now = absl::Now();
  if (now < dataset_retry_) return nullptr;
  absl::StatusOr<std::unique_ptr<Dataset>> d =
      client_->OpenDataset(options_.dir, options_.revision);
  if (!d.ok()) {
    dataset_retry_ = now + absl::Seconds(10);
    RANGEFS_LOG(WARNING) << "pinned mount: dataset " << options_.dir
                         << " at revision " << options_.revision
                         << " not read (" << d.status()
                         << "); files are opened one etcd read each";
    return nullptr;
  }
  dataset_ = std::move(*d);
  return dataset_.get();
}

absl::Status MountFs::OpenFile(Handle& h) {
  const std::string nspath = index_->FilePath(h.path);
  if (pinned_) {
    IndexEntry e = index_->Find(h.path);
    if (e.kind != EntryKind::kFile) {
      return absl::NotFoundError(absl::StrCat(nspath, " not found"));
    }
    if (const Dataset* d = PinnedDataset()) {
      RANGEFS_ASSIGN_OR_RETURN(h.file, d->OpenFile(nspath));
    } else {
      RANGEFS_ASSIGN_OR_RETURN(h.file,
                               client_->OpenFile(nspath, options_.revision));
    }
    h.tag = e.meta.content;
    return absl::OkStatus();
  }
  // One source of truth: the layout cache, whose watch also feeds the
  // index. The handle reads through the layout the open found and follows
  // its same-bytes changes (the library's rule, namespace/content_id.h).
  RANGEFS_ASSIGN_OR_RETURN(h.file, client_->OpenFile(nspath));
  const FileInfo info = h.file->info();
  h.tag = ns::ContentId{info.file_id, info.size, info.content_generation,
                        /*crc_digest=*/0, info.ready};
  h.opened_revision = info.mod_revision;
  // Reads compare the tag with the index (CheckCurrent): let it catch up
  // with what the open saw (one stream of events, so this is at most the
  // batch in flight; a cold lookup may be ahead of the watch).
  (void)index_->WaitForRevision(info.mod_revision, options_.index_catch_up);
  IndexEntry e = index_->Find(h.path);
  if (e.kind == EntryKind::kFile && ns::SameBytes(e.meta.content, h.tag)) {
    h.tag = e.meta.content;  // the same, with the extents' CRC digest
  }
  return absl::OkStatus();
}

absl::StatusOr<OpenResult> MountFs::Open(uint64_t ino, int flags,
                                         bool mmap_ok) {
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
    h->reader = h->file->NewReader(ro);
  }
  OpenResult out;
  out.keep_cache = inodes_.SwapCacheTag(ino, h->tag);
  out.direct_io = OpenDirect(options_.direct_io, h->file->size(), mmap_ok);
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
  if ((e.kind == EntryKind::kFile && ns::SameBytes(h.tag, e.meta.content)) ||
      index_->revision() < h.opened_revision) {
    // The same bytes; or the index is still behind the open (the File
    // checks the layout cache itself on each read).
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
  h.reader_mu.AssertHeld();  // ReadNow's TryLock; tells the analysis too
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
  const bool large = size >= options_.prefetch_max_request;
  if (options_.prefetch && sequential &&
      (!large || h.prefetch_large.load(std::memory_order_relaxed)) &&
      h.reader_mu.TryLock()) {
    absl::Status s = ReadSequential(h, offset, size, finish);
    h.reader_mu.Unlock();
    if (!s.ok()) Finish(h, offset, s, nullptr, finish);
    return;
  }
  // A large sequential request is read straight into the reply while its
  // bytes come from memory: the library's calling thread copies them from
  // the page cache (no hand-off, the buffer stays in the CPU's cache), which
  // beats the Reader's window (part M: 1.4x at 4 readers). Bytes from a
  // disk or the network make the thread wait (a voluntary context switch):
  // then nothing is read ahead between two requests (direct_io: one
  // request per reader at a time) and a cold stream reads at about half
  // the disk's rate; two such waits in a row send the stream through the
  // Reader, whose prefetch keeps the next window in flight (part M run M6:
  // 0.42 -> 0.83 of fio on the objects, cold, 1 reader).
  const bool watch = options_.prefetch && sequential && large &&
                     !h.prefetch_large.load(std::memory_order_relaxed);
  const int64_t waits_before = watch ? VoluntarySwitches() : 0;
  std::string& buf = Scratch(size);
  absl::StatusOr<size_t> n =
      h.file->Read(offset, absl::MakeSpan(&buf[0], size), options_.read);
  if (watch && n.ok()) {
    if (VoluntarySwitches() == waits_before) {
      h.blocked_in_a_row.store(0, std::memory_order_relaxed);
    } else if (h.blocked_in_a_row.fetch_add(1, std::memory_order_relaxed) >=
               kWaitsToPrefetch - 1) {
      h.prefetch_large.store(true, std::memory_order_relaxed);
    }
  }
  Finish(h, offset, std::move(n), buf.data(), finish);
}

bool MountFs::ReadSpliced(uint64_t handle, uint64_t offset, size_t size,
                          const SpliceReply& reply) {
  if (!options_.splice || size < options_.splice_min_bytes) return false;
  Handle& h = *reinterpret_cast<Handle*>(handle);
  const uint64_t fsize = h.file->size();
  if (offset >= fsize) return false;
  size = static_cast<size_t>(std::min<uint64_t>(size, fsize - offset));
  absl::StatusOr<std::vector<ObjectSpan>> spans =
      h.file->LocalSpans(offset, size);
  if (!spans.ok()) {
    if (!h.splice_refusal_logged.exchange(true, std::memory_order_relaxed)) {
      RANGEFS_LOG(DEBUG) << "splice: " << index_->NamespacePath(h.path)
                         << " read by copy: " << spans.status();
    }
    return false;
  }
  // Bytes not in the objects' page cache: a request that continues the
  // handle's stream (the only one in flight, starting where the last one
  // ended) is spliced too. The splice reads the object through the
  // library's descriptor, so the kernel reads that object ahead exactly as
  // it does for a read(2) of it (fio's reads): one stream per column
  // object, each with its own readahead window. Sending such a stream to
  // the copy path instead made its Reader and the splices of the bytes it
  // pulled in take turns, reading ahead twice (part D, cold FUSE rows:
  // 0.64x fio at 3.6x its CPU). Other cold reads go the copy path
  // (batching, hedging, the library's hints). Where the kernel cannot tell
  // (no cachestat), a stream whose splices waited twice in a row goes
  // through the Reader (prefetch_large, below).
  bool unknown = false, cold = false;
  for (const ObjectSpan& s : *spans) {
    cold = cold || s.residency == ObjectSpan::Residency::kNotCached;
    unknown = unknown || s.residency == ObjectSpan::Residency::kUnknown;
  }
  const bool continues = offset > 0 &&
                         h.inflight.load(std::memory_order_relaxed) == 0 &&
                         offset == h.last_end.load(std::memory_order_relaxed);
  if (cold && !continues) return false;
  if (unknown && h.prefetch_large.load(std::memory_order_relaxed)) {
    return false;
  }
  if (!CheckCurrent(h).ok()) return false;
  counters_->reads.fetch_add(1, std::memory_order_relaxed);
  counters_->spliced_reads.fetch_add(1, std::memory_order_relaxed);
  const int now = h.inflight.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool sequential = now == 1 && offset > 0 &&
                          offset == h.last_end.load(std::memory_order_relaxed);
  h.last_end.store(offset + size, std::memory_order_relaxed);
  // As ReadNow: a sequential stream whose splices wait (the objects' bytes
  // come from a disk) twice in a row goes through the Reader's read-ahead.
  const bool watch = unknown && options_.prefetch && sequential &&
                     size >= options_.prefetch_max_request;
  absl::ReaderMutexLock l(&h.splice_mu);
  const int64_t waits_before = watch ? VoluntarySwitches() : 0;
  // Out of the count before the reply, as the copy path's (ReadNow): the
  // reader's next request may arrive as soon as the kernel has the reply,
  // before this thread runs again, and must see it continue the stream.
  h.inflight.fetch_sub(1, std::memory_order_relaxed);
  const absl::Status s = reply(*spans);
  if (watch && s.ok()) {
    if (VoluntarySwitches() == waits_before) {
      h.blocked_in_a_row.store(0, std::memory_order_relaxed);
    } else if (h.blocked_in_a_row.fetch_add(1, std::memory_order_relaxed) >=
               kWaitsToPrefetch - 1) {
      h.prefetch_large.store(true, std::memory_order_relaxed);
    }
  }
  if (s.ok()) {
    counters_->read_bytes.fetch_add(size, std::memory_order_relaxed);
  } else {
    counters_->read_errors.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
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
  { absl::MutexLock l(&h->splice_mu); }  // likewise for ReadSpliced
  h.reset();  // outside mu_: joins an in-flight prefetch
}

size_t MountFs::open_handles() {
  absl::MutexLock l(&mu_);
  return handles_.size();
}

}  // namespace mount
}  // namespace rangefs
