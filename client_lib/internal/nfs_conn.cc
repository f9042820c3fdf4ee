#include "client_lib/internal/nfs_conn.h"

#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace client_internal {
namespace {

// After a failed mount, requests fail at once for this long (no reconnect
// storm against a server that refuses); then the next one mounts again.
constexpr absl::Duration kMountRetryGap = absl::Milliseconds(100);

// The file's own errors: the context is fine.
bool FileError(int err) {
  return err == -ENOENT || err == -EACCES || err == -EPERM || err == -EISDIR ||
         err == -ENOTDIR || err == -ELOOP || err == -ENAMETOOLONG;
}

// A stale file handle (the file was replaced while the server was down):
// libnfs 4.0 fails a v3 READ with -EFAULT whatever the server said, and
// names the status only in the context's error text ("NFS: Read failed
// with NFS3ERR_STALE(-116)"); other requests pass -ESTALE.
bool Stale(int err, nfs_context* ctx) {
  if (err == -ESTALE) return true;
  const char* text = ctx == nullptr ? nullptr : nfs_get_error(ctx);
  return err == -EFAULT && text != nullptr &&
         strstr(text, "NFS3ERR_STALE(") != nullptr;
}

}  // namespace

struct NfsConn::Op {
  NfsConn* conn;
  std::unique_ptr<NfsRequest> req;
  nfsfh* fh = nullptr;
  bool in_libnfs = false;  // libnfs holds `this` as a callback's data
  bool answered = false;   // done was called (an orphan while in_libnfs)
  bool waiting = false;    // in waiting_
  bool queued = false;     // in open_queue_
  bool cached_fh = false;  // fh came from handles_
  bool retried = false;    // looked up again after ESTALE/ENOENT
  uint64_t got = 0;
  std::string buf;  // the bytes, when they came in several replies
};

NfsConn::NfsConn(NfsExport e, std::string id)
    : export_(std::move(e)), url_(export_.LibnfsUrl()), id_(std::move(id)) {}

NfsConn::~NfsConn() {
  Close(absl::UnavailableError(
      absl::StrCat("NFS connection to ", export_.Describe(), " closed")));
}

void NfsConn::Start(std::unique_ptr<NfsRequest> r, absl::Time now) {
  auto owned = std::make_unique<Op>();
  Op* op = owned.get();
  op->conn = this;
  op->req = std::move(r);
  ops_.emplace(op, std::move(owned));
  earliest_ = std::min(earliest_, op->req->deadline);
  if (op->req->deadline <= now) {
    Finish(op,
           absl::DeadlineExceededError(absl::StrCat(
               "NFS read of ", export_.Describe(), " ", op->req->path,
               ": deadline passed before it started")),
           nullptr, 0);
    return;
  }
  if (!broken_.ok()) {
    Finish(op, broken_, nullptr, 0);
    return;
  }
  switch (state_) {
    case State::kReady:
      Begin(op);
      return;
    case State::kMounting:
      op->waiting = true;
      waiting_.push_back(op);
      return;
    case State::kDown:
      if (now < retry_after_) {
        Finish(op, mount_error_, nullptr, 0);
        return;
      }
      op->waiting = true;
      waiting_.push_back(op);
      Mount(now);
      return;
  }
}

void NfsConn::Mount(absl::Time now) {
  ctx_ = nfs_init_context();
  if (ctx_ == nullptr) {
    mount_error_ = absl::ResourceExhaustedError(absl::StrCat(
        "NFS mount of ", export_.Describe(), ": nfs_init_context failed"));
    retry_after_ = now + kMountRetryGap;
    Teardown(mount_error_);
    return;
  }
  ++mounts_;
  // A new NFSv4 client each time: the server must not take a rebuilt
  // context (or another connection) for the old one. (libnfs 4.0 loses
  // the default name this replaces: ~30 bytes a v4 mount, nfs_leak.supp.)
  if (export_.version == 4) {
    nfs4_set_client_name(ctx_, absl::StrCat(id_, "-", mounts_).c_str());
  }
  state_ = State::kMounting;
  nfs_url* url = nfs_parse_url_dir(ctx_, url_.c_str());
  int rc = -1;
  if (url != nullptr) {
    rc = nfs_mount_async(ctx_, url->server, url->path, MountCb, this);
    nfs_destroy_url(url);
  }
  if (rc < 0) {
    mount_error_ = absl::UnavailableError(absl::StrCat(
        "NFS mount of ", export_.Describe(), ": ", nfs_get_error(ctx_)));
    retry_after_ = now + kMountRetryGap;
    Teardown(mount_error_);
  }
}

void NfsConn::MountCb(int err, nfs_context* nfs, void* data, void* priv) {
  NfsConn* c = static_cast<NfsConn*>(priv);
  if (c->closing_) return;
  if (err != 0) {
    c->mount_error_ = absl::UnavailableError(absl::StrCat(
        "NFS mount of ", c->export_.Describe(), ": ",
        data != nullptr ? static_cast<const char*>(data) : strerror(-err)));
    c->retry_after_ = absl::Now() + kMountRetryGap;
    c->Break(c->mount_error_);
    return;
  }
  c->state_ = State::kReady;
  const uint64_t readmax = nfs_get_readmax(nfs);
  if (readmax > 0) c->readmax_ = readmax;
  std::vector<Op*> waiting;
  waiting.swap(c->waiting_);
  for (Op* op : waiting) {
    op->waiting = false;
    c->Begin(op);
  }
}

void NfsConn::Begin(Op* op) {
  auto it = handles_.find(op->req->path);
  if (it == handles_.end()) {
    Open(op);
    return;
  }
  op->cached_fh = true;
  Read(op, it->second);
}

void NfsConn::Open(Op* op) {
  if (opening_) {
    op->queued = true;
    open_queue_.push_back(op);
    return;
  }
  opening_ = true;
  op->in_libnfs = true;
  if (nfs_open_async(ctx_, op->req->path.c_str(), O_RDONLY, OpenCb, op) < 0) {
    op->in_libnfs = false;
    opening_ = false;
    absl::Status s = Error("open", *op, -EIO);
    Break(s);
    Finish(op, s, nullptr, 0);
  }
}

void NfsConn::NextOpen() {
  while (!opening_ && !open_queue_.empty() && broken_.ok()) {
    Op* op = open_queue_.front();
    open_queue_.erase(open_queue_.begin());
    op->queued = false;
    Begin(op);  // its path may be open by now
  }
}

void NfsConn::OpenCb(int err, nfs_context* nfs, void* data, void* priv) {
  Op* op = static_cast<Op*>(priv);
  NfsConn* c = op->conn;
  if (c->closing_) return;
  op->in_libnfs = false;
  c->opening_ = false;
  if (err == 0) c->Cache(op->req->path, static_cast<nfsfh*>(data));
  if (op->answered) {  // timed out meanwhile
    c->orphans_--;
    c->ops_.erase(op);
  } else if (err != 0) {
    absl::Status s = c->Error("open", *op, err);
    if (!FileError(err)) c->Break(s);
    c->Finish(op, s, nullptr, 0);
  } else {
    c->Read(op, static_cast<nfsfh*>(data));
  }
  c->NextOpen();
  (void)nfs;
}

void NfsConn::Read(Op* op, nfsfh* fh) {
  op->fh = fh;
  const uint64_t count = std::min(op->req->length - op->got, readmax_);
  if (count == 0) {
    Finish(op, absl::OkStatus(), op->buf.data(), op->buf.size());
    return;
  }
  op->in_libnfs = true;
  if (nfs_pread_async(ctx_, fh, op->req->offset + op->got, count, ReadCb, op) <
      0) {
    op->in_libnfs = false;
    absl::Status s = Error("read", *op, -EIO);
    Break(s);
    Finish(op, s, nullptr, 0);
  }
}

void NfsConn::ReadCb(int err, nfs_context*, void* data, void* priv) {
  Op* op = static_cast<Op*>(priv);
  NfsConn* c = op->conn;
  if (c->closing_) return;
  op->in_libnfs = false;
  if (op->answered) {
    c->orphans_--;
    c->ops_.erase(op);
    return;
  }
  c->OnRead(op, err, static_cast<const char*>(data));
}

void NfsConn::OnRead(Op* op, int err, const char* data) {
  NfsRequest& r = *op->req;
  if (err < 0) {
    const bool stale = Stale(err, ctx_);
    if ((stale || err == -ENOENT) && op->cached_fh && !op->retried &&
        op->got == 0) {
      // The server restarted or re-exported: look the path up again.
      auto it = handles_.find(r.path);
      if (it != handles_.end() && it->second == op->fh) {
        handles_.erase(it);
        Retire(op->fh);
      }
      op->retried = true;
      op->cached_fh = false;
      Open(op);
      return;
    }
    absl::Status s = Error("read", *op, err);
    if (!FileError(err) && !stale) Break(s);
    Finish(op, s, nullptr, 0);
    return;
  }
  const uint64_t n = static_cast<uint64_t>(err);
  if (op->got == 0 && (n == r.length || (n == 0 && r.to_eof))) {
    Finish(op, absl::OkStatus(), data, n);  // one reply: no copy here
    return;
  }
  if (n > 0) {
    if (op->buf.empty()) op->buf.reserve(r.to_eof ? n : r.length);
    op->buf.append(data, n);
    op->got += n;
  }
  // Done: every byte, the end of the file (a reply of none; for a whole-
  // file read, any short one).
  if (op->got >= r.length || n == 0 ||
      (r.to_eof && n < std::min(r.length - (op->got - n), readmax_))) {
    Finish(op, absl::OkStatus(), op->buf.data(), op->buf.size());
    return;
  }
  Read(op, op->fh);
}

void NfsConn::Finish(Op* op, const absl::Status& s, const char* data,
                     size_t n) {
  if (op->waiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), op));
    op->waiting = false;
  }
  if (op->queued) {
    open_queue_.erase(std::find(open_queue_.begin(), open_queue_.end(), op));
    op->queued = false;
  }
  std::unique_ptr<Op> owned;
  if (op->in_libnfs) {
    op->answered = true;  // libnfs still holds it: freed by its callback
    ++orphans_;
  } else {
    auto it = ops_.find(op);
    owned = std::move(it->second);
    ops_.erase(it);
  }
  op->req->Answer(s, data, n);
}

void NfsConn::Cache(const std::string& path, nfsfh* fh) {
  nfsfh*& slot = handles_[path];
  // Opened again after a stale read while another read reopened it too.
  if (slot != nullptr && slot != fh) Retire(slot);
  slot = fh;
}

void NfsConn::Retire(nfsfh* fh) {
  // A clean v3 handle's close is a free() (no request): now, unless a read
  // libnfs still holds uses it (its reply would touch the handle).
  if (export_.version == 3 && !InUse(fh)) {
    Release(fh);
    return;
  }
  // v4: a CLOSE now would race the open-owner's next OPEN (its seqid).
  retired_.push_back(fh);
}

bool NfsConn::InUse(const nfsfh* fh) const {
  for (const auto& [op, owned] : ops_) {
    if (op->in_libnfs && op->fh == fh) return true;
  }
  return false;
}

void NfsConn::Release(nfsfh* fh) {
  // v3: frees it at once. v4: queues a CLOSE whose cancel (the context's
  // destruction, next) frees it. Fails only when out of memory.
  nfs_close_async(
      ctx_, fh, [](int, nfs_context*, void*, void*) {}, nullptr);
}

void NfsConn::ReleaseHandles() {
  for (const auto& [path, fh] : handles_) Release(fh);
  handles_.clear();
  for (nfsfh* fh : retired_) Release(fh);
  retired_.clear();
}

void NfsConn::Break(absl::Status why) {
  if (broken_.ok()) broken_ = std::move(why);
}

int NfsConn::fd() const { return ctx_ == nullptr ? -1 : nfs_get_fd(ctx_); }

short NfsConn::events() const {
  return ctx_ == nullptr ? 0 : static_cast<short>(nfs_which_events(ctx_));
}

void NfsConn::Service(short revents) {
  if (ctx_ != nullptr && broken_.ok()) {
    in_service_ = true;
    if (nfs_service(ctx_, revents) < 0 && broken_.ok()) {
      broken_ = absl::UnavailableError(absl::StrCat(
          "NFS connection to ", export_.Describe(), ": ", nfs_get_error(ctx_)));
    }
    in_service_ = false;
  }
  if (!broken_.ok()) {
    absl::Status why = std::move(broken_);
    broken_ = absl::OkStatus();
    Teardown(why);
  }
}

void NfsConn::Expire(absl::Time now) {
  if (now < earliest_) return;  // nothing can be late yet
  std::vector<Op*> late;
  earliest_ = absl::InfiniteFuture();
  for (const auto& [op, owned] : ops_) {
    if (op->answered) continue;
    if (op->req->deadline <= now) {
      late.push_back(op);
    } else {
      earliest_ = std::min(earliest_, op->req->deadline);
    }
  }
  bool hung = false;
  for (Op* op : late) {
    hung = hung || op->in_libnfs || state_ == State::kMounting;
    Finish(op,
           absl::DeadlineExceededError(absl::StrCat(
               "NFS server ", export_.Describe(), " did not answer ",
               state_ == State::kMounting ? "the mount" : "a read", " of ",
               op->req->path, " in time")),
           nullptr, 0);
  }
  if (hung) {
    Teardown(absl::UnavailableError(
        absl::StrCat("NFS connection to ", export_.Describe(),
                     " torn down: its server stopped answering")));
  }
}

void NfsConn::Close(const absl::Status& why) { Teardown(why); }

void NfsConn::Teardown(const absl::Status& why) {
  if (ctx_ != nullptr) {
    closing_ = true;
    // libnfs 4.0's nfs_destroy_context frees no file handle: each must be
    // closed first (Release). The reads it then cancels do not touch
    // their handles (a cancelled reply only calls back: nfs3_pread_mcb,
    // nfs4_pread_cb).
    ReleaseHandles();
    // Cancels every call in flight: their callbacks return at once.
    nfs_destroy_context(ctx_);
    closing_ = false;
    ctx_ = nullptr;
  }
  state_ = State::kDown;
  broken_ = absl::OkStatus();
  waiting_.clear();
  opening_ = false;
  open_queue_.clear();
  orphans_ = 0;
  earliest_ = absl::InfiniteFuture();
  auto ops = std::move(ops_);
  ops_.clear();
  for (auto& [op, owned] : ops) {
    op->waiting = false;
    op->queued = false;
    if (op->answered) continue;
    op->req->Answer(why, nullptr, 0);
  }
}

absl::Status NfsConn::Error(absl::string_view what, const Op& op,
                            int err) const {
  std::string msg = absl::StrCat("NFS ", what, " of ", export_.Describe(), " ",
                                 op.req->path, ": ", strerror(-err));
  if (ctx_ != nullptr && nfs_get_error(ctx_) != nullptr) {
    absl::StrAppend(&msg, " (", nfs_get_error(ctx_), ")");
  }
  switch (-err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

}  // namespace client_internal
}  // namespace rangefs
