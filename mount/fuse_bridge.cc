#define FUSE_USE_VERSION 312

#include "mount/fuse_bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "client_lib/mountd/mountinfo.h"
#include "mount/errno_map.h"
#include "mount/init_flags.h"
#include "mount/metrics.h"

namespace rangefs {
namespace mount {

// What the callbacks need; owned by the FuseMount, fixed before the loop.
struct BridgeContext {
  MountFs* fs;
  MountCounters* counters;
  double attr_timeout;
  double entry_timeout;
  int max_background;
  int readahead_kb;
  DirectIoMode direct_io;
  bool splice;
  const InitFlagHook* init_hook;
  // INIT granted FUSE_CAP_SPLICE_WRITE: replies of file descriptors are
  // spliced (else libfuse copies them, at a cost above the copy path's).
  std::atomic<bool> splice_granted{false};
  std::atomic<bool> warned_mmap{false};
};

namespace {

using Ctx = BridgeContext;

constexpr unsigned kMaxRead = 1 << 20;

Ctx* C(fuse_req_t req) { return static_cast<Ctx*>(fuse_req_userdata(req)); }

// At most 20 log lines a second across all threads.
bool LogAllowed() {
  static std::atomic<int64_t> second{0};
  static std::atomic<int> lines{0};
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  if (second.exchange(now) != now) lines.store(0);
  return lines.fetch_add(1) < 20;
}

void ReplyError(fuse_req_t req, const char* op, const absl::Status& s,
                CallKind kind) {
  const int e = StatusToErrno(s, kind);
  C(req)->counters->errors.fetch_add(1, std::memory_order_relaxed);
  if (e != ENOENT && LogAllowed()) {
    RANGEFS_LOG(WARNING) << op << ": " << strerror(e) << ": " << s;
  }
  fuse_reply_err(req, e);
}

void ReplyErofs(fuse_req_t req) {
  C(req)->counters->erofs.fetch_add(1, std::memory_order_relaxed);
  fuse_reply_err(req, EROFS);
}

// Worker threads of libfuse block the stop signals already; a thread the
// client library starts from one (node workers, prefetch) inherits that.

// Whether this process may size a pipe for a whole kMaxRead reply: libfuse
// splices a reply through a per-thread pipe of the reply's size plus a
// page per buffer (2 MiB for 1 MiB requests), and copies any reply its
// pipe cannot hold (a read into a fresh mmap'd buffer, dearer than our
// copy path). Above /proc/sys/fs/pipe-max-size (1 MiB by default) that
// takes CAP_SYS_RESOURCE.
bool PipeHoldsAReply(std::string* why) {
  int p[2];
  if (pipe(p) != 0) {
    *why = absl::StrCat("pipe: ", strerror(errno));
    return false;
  }
  const int want = 2 * static_cast<int>(kMaxRead);
  const bool ok = fcntl(p[0], F_SETPIPE_SZ, want) >= want;
  if (!ok) {
    *why =
        absl::StrCat("a pipe of ", want, " bytes is refused (", strerror(errno),
                     "): raise fs.pipe-max-size to at least ", want,
                     " (sysctl) or run with CAP_SYS_RESOURCE");
  }
  close(p[0]);
  close(p[1]);
  return ok;
}

void OpInit(void* userdata, struct fuse_conn_info* conn) {
  Ctx* c = static_cast<Ctx*>(userdata);
  conn->max_read = kMaxRead;  // must match the max_read mount option
  conn->max_readahead = static_cast<unsigned>(c->readahead_kb) * 1024u;
  conn->max_background = static_cast<unsigned>(c->max_background);
  conn->congestion_threshold =
      static_cast<unsigned>(c->max_background) * 3u / 4u;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  if (conn->capable & FUSE_CAP_READDIRPLUS) {
    conn->want |= FUSE_CAP_READDIRPLUS;
  }
  // Replies from a pipe (fuse_reply_data of file descriptors): libfuse
  // offers it whenever it was built with splice, any kernel takes it.
  std::string why;
  if (c->splice && !(conn->capable & FUSE_CAP_SPLICE_WRITE)) {
    RANGEFS_LOG(WARNING) << "splice: libfuse cannot splice replies on this "
                            "session; every read is copied";
  } else if (c->splice && !PipeHoldsAReply(&why)) {
    RANGEFS_LOG(WARNING) << "splice: off, every read is copied: " << why;
  } else if (c->splice) {
    conn->want |= FUSE_CAP_SPLICE_WRITE;
    c->splice_granted.store(true, std::memory_order_release);
  }
  // No writes ever: no writeback cache.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Ctx* c = C(req);
  // The kernel passes FUSE names up to 1024 bytes; namespace names end at
  // 255 (NAME_MAX).
  if (strlen(name) > 255) {
    fuse_reply_err(req, ENAMETOOLONG);
    return;
  }
  absl::StatusOr<MountEntry> e = c->fs->Lookup(parent, name);
  if (!e.ok())
    return ReplyError(req, "lookup", e.status(), CallKind::kMetadata);
  fuse_entry_param p{};
  p.ino = e->ino;
  p.generation = 1;
  p.attr = e->attr;
  p.attr_timeout = c->attr_timeout;
  p.entry_timeout = c->entry_timeout;
  if (fuse_reply_entry(req, &p) != 0) c->fs->Forget(e->ino, 1);
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t n) {
  C(req)->fs->Forget(ino, n);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count,
                   struct fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) {
    C(req)->fs->Forget(forgets[i].ino, forgets[i].nlookup);
  }
  fuse_reply_none(req);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  Ctx* c = C(req);
  absl::StatusOr<struct stat> st = c->fs->GetAttr(ino);
  if (!st.ok()) {
    return ReplyError(req, "getattr", st.status(), CallKind::kMetadata);
  }
  fuse_reply_attr(req, &*st, c->attr_timeout);
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  absl::StatusOr<uint64_t> h = C(req)->fs->OpenDir(ino);
  if (!h.ok())
    return ReplyError(req, "opendir", h.status(), CallKind::kMetadata);
  fi->fh = *h;
  fuse_reply_open(req, fi);
}

void DoReaddir(fuse_req_t req, size_t size, off_t off,
               struct fuse_file_info* fi, bool plus) {
  Ctx* c = C(req);
  std::string buf(size, '\0');
  size_t used = 0;
  c->fs->ReadDir(fi->fh, off, plus, [&](const DirItem& item, int64_t next) {
    size_t need;
    if (plus) {
      fuse_entry_param p{};
      p.ino = item.ino;
      p.generation = item.ino == 0 ? 0 : 1;
      p.attr = item.attr;
      p.attr_timeout = c->attr_timeout;
      p.entry_timeout = c->entry_timeout;
      need = fuse_add_direntry_plus(req, &buf[used], size - used,
                                    item.name.c_str(), &p, next);
    } else {
      need = fuse_add_direntry(req, &buf[used], size - used, item.name.c_str(),
                               &item.attr, next);
    }
    if (need > size - used) return false;
    used += need;
    return true;
  });
  fuse_reply_buf(req, buf.data(), used);
}

void OpReaddir(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
               struct fuse_file_info* fi) {
  DoReaddir(req, size, off, fi, false);
}

void OpReaddirplus(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
                   struct fuse_file_info* fi) {
  DoReaddir(req, size, off, fi, true);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  C(req)->fs->ReleaseDir(fi->fh);
  fuse_reply_err(req, 0);
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  Ctx* c = C(req);
  absl::StatusOr<OpenResult> r =
      c->fs->Open(ino, fi->flags, c->init_hook->allow_mmap_granted());
  // (allow_mmap_granted is settled: INIT was answered before any open.)
  if (!r.ok()) {
    if (absl::IsPermissionDenied(r.status())) return ReplyErofs(req);
    return ReplyError(req, "open", r.status(), CallKind::kMetadata);
  }
  fi->fh = r->handle;
  fi->keep_cache = r->keep_cache ? 1 : 0;
  fi->noflush = 1;
  const bool mmap_ok = c->init_hook->allow_mmap_granted();
  if (r->direct_io) fi->direct_io = 1;
  if (!mmap_ok && c->direct_io != DirectIoMode::kNever &&
      !c->warned_mmap.exchange(true)) {
    RANGEFS_LOG(WARNING)
        << "direct_io: this kernel did not offer FUSE_DIRECT_IO_ALLOW_MMAP "
           "(Linux < 6.6): "
        << (c->direct_io == DirectIoMode::kAuto
                ? "direct_io=auto reads every file through the page cache"
                : "mmap of files on this mount fails with ENODEV");
  }
  if (fuse_reply_open(req, fi) != 0) c->fs->Release(r->handle);
}

// Answers `req` with the bytes of `spans`, spliced by libfuse from the
// files into /dev/fuse through its per-thread pipe (no copy in our memory;
// the kernel copies them once, pipe to the reader's buffer or the mount's
// page). libfuse itself falls back to reading them into a buffer when the
// pipe cannot hold the reply (F_SETPIPE_SZ refused). Pages are copied, not
// moved (no FUSE_BUF_SPLICE_MOVE): moving would take them out of the
// object file's page cache.
absl::Status ReplySpans(fuse_req_t req, absl::Span<const ObjectSpan> spans) {
  const size_t n = spans.empty() ? 1 : spans.size();
  std::vector<char> mem(sizeof(fuse_bufvec) + (n - 1) * sizeof(fuse_buf));
  fuse_bufvec* v = reinterpret_cast<fuse_bufvec*>(mem.data());
  v->count = spans.size();
  v->idx = 0;
  v->off = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    fuse_buf& b = v->buf[i];
    b.size = spans[i].length;
    b.flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    b.mem = nullptr;
    b.fd = spans[i].fd;
    b.pos = static_cast<off_t>(spans[i].object_offset);
  }
  // 0: sent (the bytes, or an error reply if reading a file failed);
  // < 0: the kernel took no reply (an interrupted request).
  const int rc = fuse_reply_data(req, v, static_cast<fuse_buf_copy_flags>(0));
  if (rc == 0) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("splice reply: ", strerror(rc < 0 ? -rc : rc)));
}

void OpRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
            struct fuse_file_info* fi) {
  Ctx* c = C(req);
  if (off < 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  if (c->splice_granted.load(std::memory_order_acquire) &&
      c->fs->ReadSpliced(fi->fh, static_cast<uint64_t>(off), size,
                         [req](absl::Span<const ObjectSpan> spans) {
                           return ReplySpans(req, spans);
                         })) {
    return;
  }
  // Answered here or, for a small read joining a batch, on the thread that
  // runs the batch.
  c->fs->Read(fi->fh, static_cast<uint64_t>(off), size,
              [req](const absl::Status& s, absl::Span<const char> bytes) {
                if (s.ok()) {
                  fuse_reply_buf(req, bytes.data(), bytes.size());
                  return;
                }
                C(req)->counters->read_errors.fetch_add(
                    1, std::memory_order_relaxed);
                ReplyError(req, "read", s, CallKind::kData);
              });
}

void OpRelease(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  C(req)->fs->Release(fi->fh);
  fuse_reply_err(req, 0);
}

void OpFlush(fuse_req_t req, fuse_ino_t, struct fuse_file_info*) {
  fuse_reply_err(req, 0);
}

void OpFsync(fuse_req_t req, fuse_ino_t, int, struct fuse_file_info*) {
  fuse_reply_err(req, 0);
}

void OpStatfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs v = C(req)->fs->StatFs();
  fuse_reply_statfs(req, &v);
}

void ReplyXattr(fuse_req_t req, size_t size, const std::string& value) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (size < value.size()) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  absl::StatusOr<std::string> v = C(req)->fs->GetXattr(ino, name);
  if (!v.ok()) {
    if (absl::IsNotFound(v.status())) {
      fuse_reply_err(req, ENODATA);
      return;
    }
    return ReplyError(req, "getxattr", v.status(), CallKind::kMetadata);
  }
  ReplyXattr(req, size, *v);
}

void OpListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  absl::StatusOr<std::string> v = C(req)->fs->ListXattr(ino);
  if (!v.ok()) {
    return ReplyError(req, "listxattr", v.status(), CallKind::kMetadata);
  }
  ReplyXattr(req, size, *v);
}

void OpAccess(fuse_req_t req, fuse_ino_t, int mask) {
  if (mask & W_OK) return ReplyErofs(req);
  fuse_reply_err(req, 0);
}

void OpReadlink(fuse_req_t req, fuse_ino_t) { fuse_reply_err(req, EINVAL); }

// Everything that would change the file system.
void OpSetattr(fuse_req_t req, fuse_ino_t, struct stat*, int,
               struct fuse_file_info*) {
  ReplyErofs(req);
}
void OpMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) {
  ReplyErofs(req);
}
void OpMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) {
  ReplyErofs(req);
}
void OpUnlink(fuse_req_t req, fuse_ino_t, const char*) { ReplyErofs(req); }
void OpSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) {
  ReplyErofs(req);
}
void OpRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*,
              unsigned int) {
  ReplyErofs(req);
}
void OpLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
  ReplyErofs(req);
}
void OpWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t,
             struct fuse_file_info*) {
  ReplyErofs(req);
}
void OpCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t,
              struct fuse_file_info*) {
  ReplyErofs(req);
}
void OpSetxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t,
                int) {
  ReplyErofs(req);
}
void OpRemovexattr(fuse_req_t req, fuse_ino_t, const char*) { ReplyErofs(req); }
void OpFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t,
                 struct fuse_file_info*) {
  ReplyErofs(req);
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OpInit;
  ops.lookup = OpLookup;
  ops.forget = OpForget;
  ops.forget_multi = OpForgetMulti;
  ops.getattr = OpGetattr;
  ops.opendir = OpOpendir;
  ops.readdir = OpReaddir;
  ops.readdirplus = OpReaddirplus;
  ops.releasedir = OpReleasedir;
  ops.open = OpOpen;
  ops.read = OpRead;
  ops.release = OpRelease;
  ops.flush = OpFlush;
  ops.fsync = OpFsync;
  ops.statfs = OpStatfs;
  ops.getxattr = OpGetxattr;
  ops.listxattr = OpListxattr;
  ops.access = OpAccess;
  ops.readlink = OpReadlink;
  ops.setattr = OpSetattr;
  ops.mknod = OpMknod;
  ops.mkdir = OpMkdir;
  ops.unlink = OpUnlink;
  ops.rmdir = OpUnlink;
  ops.symlink = OpSymlink;
  ops.rename = OpRename;
  ops.link = OpLink;
  ops.write = OpWrite;
  ops.create = OpCreate;
  ops.setxattr = OpSetxattr;
  ops.removexattr = OpRemovexattr;
  ops.fallocate = OpFallocate;
  return ops;
}

// fsname may not contain ',' (the -o separator): escape it for libfuse.
std::string EscapeOpt(absl::string_view v) {
  return absl::StrReplaceAll(v, {{"\\", "\\\\"}, {",", "\\,"}});
}

}  // namespace

FuseMount::FuseMount(MountCounters* counters, std::string mountpoint,
                     FuseMountOptions options)
    : counters_(counters),
      mountpoint_(std::move(mountpoint)),
      options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<FuseMount>> FuseMount::Mount(
    MountFs* fs, MountCounters* counters, const std::string& mountpoint,
    const FuseMountOptions& options) {
  std::unique_ptr<FuseMount> m(new FuseMount(counters, mountpoint, options));
  std::vector<std::string> opts = {
      "ro", "default_permissions", "subtype=rangefs",
      absl::StrCat("fsname=", EscapeOpt(options.fsname)),
      absl::StrCat("max_read=", kMaxRead)};
  bool debug = false;
  for (const std::string& o : options.fuse_options) {
    if (o == "debug") {
      debug = true;
    } else {
      opts.push_back(o);
    }
  }
  const std::string joined = absl::StrJoin(opts, ",");
  std::vector<std::string> argv = {"rangefs-mount", "-o", joined};
  if (debug) argv.push_back("-d");
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  for (const std::string& a : argv) fuse_opt_add_arg(&args, a.c_str());
  static fuse_lowlevel_ops ops = MakeOps();
  m->ctx_.reset(new BridgeContext{fs, counters, options.attr_timeout,
                                  options.entry_timeout, options.max_background,
                                  options.readahead_kb, options.direct_io,
                                  options.splice, &m->init_hook_});
  m->se_ = fuse_session_new(&args, &ops, sizeof(ops), m->ctx_.get());
  fuse_opt_free_args(&args);
  if (m->se_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("fuse_session_new refused the options -o ", joined,
                     " (see the libfuse message above)"));
  }
  if (fuse_session_mount(m->se_, mountpoint.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot mount rangefs at ", mountpoint,
                     " (see the libfuse message above)"));
  }
  m->mounted_ = true;
  if (options.direct_io != DirectIoMode::kNever) {
    // Before the loop reads INIT: see init_flags.h.
    absl::Status hooked = m->init_hook_.Install(m->se_);
    if (!hooked.ok()) {
      RANGEFS_LOG(WARNING)
          << "direct_io: " << hooked
          << (options.direct_io == DirectIoMode::kAuto
                  ? "; every file is read through the page cache"
                  : "; mmap of files on this mount fails (ENODEV)");
    }
  }
  m->SetReadahead();
  m->notifier_ = std::thread([p = m.get()] { p->NotifierLoop(); });
  return m;
}

FuseMount::~FuseMount() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (notifier_.joinable()) notifier_.join();
  if (se_ != nullptr) {
    if (mounted_) fuse_session_unmount(se_);
    fuse_remove_signal_handlers(se_);
    fuse_session_destroy(se_);
  }
}

void FuseMount::SetReadahead() {
  auto mounts = mountd::ReadMountInfo();
  if (!mounts.ok()) {
    RANGEFS_LOG(WARNING) << "readahead: " << mounts.status();
    return;
  }
  const mountd::MountInfo* mi = mountd::FindMount(*mounts, mountpoint_);
  if (mi == nullptr) {
    RANGEFS_LOG(WARNING) << "readahead: " << mountpoint_
                         << " not in /proc/self/mountinfo";
    return;
  }
  bdi_ = mi->dev();
  if (options_.readahead_kb <= 0) return;
  const std::string path =
      absl::StrCat("/sys/class/bdi/", bdi_, "/read_ahead_kb");
  FILE* f = fopen(path.c_str(), "w");
  bool ok = f != nullptr && fprintf(f, "%d\n", options_.readahead_kb) > 0;
  if (f != nullptr && fclose(f) != 0) ok = false;
  if (!ok) {
    RANGEFS_LOG(WARNING) << "readahead: cannot write " << path << ": "
                         << strerror(errno);
  }
}

absl::Status FuseMount::Run() {
  if (fuse_set_signal_handlers(se_) != 0) {
    return absl::InternalError("fuse_set_signal_handlers failed");
  }
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, s);
  sigset_t old;
  pthread_sigmask(SIG_UNBLOCK, &stop, &old);
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg,
                                static_cast<unsigned>(options_.max_threads));
  // A few idle workers are kept (a new one costs a 1 MiB buffer, its page
  // faults and a splice pipe), not all: the kernel wakes the worker that
  // has waited longest, so every idle one takes its turn (mount_options.h).
  fuse_loop_cfg_set_idle_threads(
      cfg, static_cast<unsigned>(
               std::min(options_.max_idle_threads, options_.max_threads)));
  fuse_loop_cfg_set_clone_fd(cfg, 0);
  const int rc = fuse_session_loop_mt(se_, cfg);
  fuse_loop_cfg_destroy(cfg);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // > 0: the signal that ended the loop (a requested stop).
  if (rc > 0) {
    RANGEFS_LOG(INFO) << "signal " << rc << ": stopping";
  } else if (rc < 0 && rc != -ENODEV) {
    return absl::InternalError(
        absl::StrCat("FUSE loop ended with ", strerror(-rc), " (", rc, ")"));
  }
  return absl::OkStatus();
}

void FuseMount::Notify(std::vector<Notice> notices) {
  absl::MutexLock l(&mu_);
  for (Notice& n : notices) queue_.push_back(std::move(n));
}

void FuseMount::NotifierLoop() {
  while (true) {
    std::deque<Notice> batch;
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stop_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      batch.swap(queue_);
    }
    for (const Notice& n : batch) {
      int rc;
      if (n.kind == Notice::Kind::kEntry) {
        rc = fuse_lowlevel_notify_inval_entry(se_, n.ino, n.name.data(),
                                              n.name.size());
      } else {
        rc = fuse_lowlevel_notify_inval_inode(se_, n.ino, n.pages ? 0 : -1, 0);
      }
      counters_->invalidations.fetch_add(1, std::memory_order_relaxed);
      if (rc != 0 && rc != -ENOENT && LogAllowed()) {
        RANGEFS_LOG(DEBUG) << "invalidate " << n.ino << "/" << n.name << ": "
                           << strerror(-rc);
      }
    }
  }
}

}  // namespace mount
}  // namespace rangefs
