#include "storage_node/data_port.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/crc32c.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/thread_priority.h"
#include "storage_node/data_port_wire.h"
#include "storage_node/object_reader.h"
#include "storage_node/same_host.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

timeval AtLeastOneMs(absl::Duration d) {
  return absl::ToTimeval(std::max(d, absl::Milliseconds(1)));
}

// Receives exactly `n` bytes. Returns the number received before EOF or an
// error (n when complete).
size_t RecvFull(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

// Sends all of `iov` (modified). False on any socket error.
bool SendAll(int fd, iovec* iov, int iovcnt, int flags) {
  while (iovcnt > 0) {
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t w = sendmsg(fd, &m, flags | MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    size_t left = static_cast<size_t>(w);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

bool SendBytes(int fd, absl::string_view data, int flags) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  return SendAll(fd, &iov, 1, flags);
}

std::string ReplyHeader(const absl::Status& s) {
  std::string out(4, '\0');
  PutLe32(&out[0], kDataPortReplyMagic);
  out += EncodeDataPortStatusBody(s);
  return out;
}

// Why a request ended: `status` for the stats; `keep` false when the
// connection cannot carry another request.
struct ReadOutcome {
  absl::Status status;
  bool keep = true;
};

}  // namespace

absl::StatusOr<DataPortSend> ParseDataPortSend(absl::string_view s) {
  if (s == "auto") return DataPortSend::kAuto;
  if (s == "sendfile") return DataPortSend::kSendfile;
  if (s == "copy") return DataPortSend::kCopy;
  return absl::InvalidArgumentError(absl::StrCat(
      "data port send mode \"", s, "\" is none of auto, sendfile, copy"));
}

absl::StatusOr<std::unique_ptr<DataPortServer>> DataPortServer::Start(
    const ExportRoot* root, AgentService* service,
    const DataPortOptions& options) {
  std::string host = options.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_str = std::to_string(options.port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_str.c_str(),
                       &hints, &res);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data port: cannot resolve \"", options.host,
                     "\": ", gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError("no address");
  ScopedFd fd;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    ScopedFd s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (!s.valid()) {
      last = ErrnoStatus(errno, "data port socket");
      continue;
    }
    int one = 1;
    setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s.get(), a->ai_addr, a->ai_addrlen) != 0 ||
        listen(s.get(), 128) != 0) {
      last = ErrnoStatus(errno, absl::StrCat("data port bind/listen on ",
                                             options.host, ":", options.port));
      continue;
    }
    fd = std::move(s);
    break;
  }
  freeaddrinfo(res);
  if (!fd.valid()) {
    return absl::UnavailableError(last.message());
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return ErrnoStatus(errno, "data port getsockname");
  }
  const int port = ss.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  std::unique_ptr<DataPortServer> server(
      new DataPortServer(root, service, options, std::move(fd), port));
  server->listener_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

DataPortServer::DataPortServer(const ExportRoot* root, AgentService* service,
                               const DataPortOptions& options,
                               ScopedFd listen_fd, int port)
    : root_(root),
      service_(service),
      options_(options),
      listen_fd_(std::move(listen_fd)),
      port_(port) {}

DataPortServer::~DataPortServer() { Shutdown(absl::Now()); }

void DataPortServer::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock l(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    stopping_ = true;
  }
  // Unblocks accept(2).
  shutdown(listen_fd_.get(), SHUT_RDWR);
  if (listener_.joinable()) listener_.join();
  std::list<Conn> conns;
  {
    absl::MutexLock l(&mu_);
    for (Conn& c : conns_) {
      if (!c.busy && !c.done) shutdown(c.fd.get(), SHUT_RDWR);
    }
    mu_.AwaitWithDeadline(absl::Condition(this, &DataPortServer::AllDoneLocked),
                          deadline);
    for (Conn& c : conns_) {
      if (!c.done) shutdown(c.fd.get(), SHUT_RDWR);
    }
    conns.splice(conns.end(), conns_);
  }
  for (Conn& c : conns) {
    if (c.thread.joinable()) c.thread.join();
  }
}

bool DataPortServer::AllDoneLocked() const {
  for (const Conn& c : conns_) {
    if (!c.done) return false;
  }
  return true;
}

void DataPortServer::ReapLocked() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (it->done) {
      it->thread.join();  // It only returns after setting done.
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

void DataPortServer::AcceptLoop() {
  for (;;) {
    int raw = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (raw < 0) {
      const int err = errno;
      {
        absl::MutexLock l(&mu_);
        if (stopping_) return;
      }
      if (err == EINTR || err == ECONNABORTED) continue;
      RANGEFS_LOG(WARNING) << ErrnoStatus(
          err, absl::StrCat("data port accept on port ", port_));
      // Out of fds or memory: back off briefly rather than spin.
      absl::SleepFor(absl::Milliseconds(50));
      continue;
    }
    ScopedFd fd(raw);
    accepted_.fetch_add(1);
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const timeval tv = AtLeastOneMs(options_.idle_timeout);
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    // Outside the lock: two system calls.
    const bool use_sendfile =
        options_.send == DataPortSend::kSendfile ||
        (options_.send == DataPortSend::kAuto && !PeerOnSameHost(fd.get()));
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    ReapLocked();
    if (conns_.size() >= static_cast<size_t>(options_.max_connections)) {
      SendBytes(fd.get(),
                ReplyHeader(absl::ResourceExhaustedError(absl::StrCat(
                    "data port busy: ", conns_.size(), " connections (max ",
                    options_.max_connections, "); retry later"))),
                MSG_DONTWAIT);
      shutdown(fd.get(), SHUT_WR);
      continue;
    }
    conns_.emplace_back();
    Conn* c = &conns_.back();
    c->use_sendfile = use_sendfile;
    if (use_sendfile) sendfile_.fetch_add(1);
    c->fd = std::move(fd);
    c->thread = std::thread([this, c] { ServeConnection(c); });
  }
}

void DataPortServer::SetBusy(Conn* conn, bool busy) {
  absl::MutexLock l(&mu_);
  conn->busy = busy;
}

void DataPortServer::EnterBackground(Conn* conn) {
  if (conn->background || options_.background_nice == 0) return;
  conn->background = true;
  if (absl::Status s = LowerThreadPriority(options_.background_nice); !s.ok()) {
    RANGEFS_LOG(WARNING) << "data port: background connection keeps its "
                            "priority: "
                         << s;
    return;
  }
  background_.fetch_add(1);
}

void DataPortServer::ServeConnection(Conn* conn) {
  // sendfile(2) raises SIGPIPE when the client went away; the signal is
  // thread-directed, so blocking it here turns it into EPIPE.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::string buf;
  for (;;) {
    const bool keep = ServeRequest(conn, &buf);
    absl::MutexLock l(&mu_);
    conn->busy = false;
    if (!keep || stopping_) break;
  }
  absl::MutexLock l(&mu_);
  shutdown(conn->fd.get(), SHUT_RDWR);
  conn->done = true;
}

bool DataPortServer::ServeRequest(Conn* conn, std::string* buf) {
  const int fd = conn->fd.get();
  char hdr[kDataPortRequestHeaderBytes];
  if (RecvFull(fd, hdr, sizeof(hdr)) != sizeof(hdr)) return false;  // EOF.
  auto refuse = [&](absl::Status s) {
    RANGEFS_LOG(WARNING) << "data port: " << s;
    SendBytes(fd, ReplyHeader(s), 0);
    return false;
  };
  absl::StatusOr<DataPortRequestHeader> req =
      DecodeDataPortRequestHeader(absl::string_view(hdr, sizeof(hdr)));
  if (!req.ok()) return refuse(req.status());
  const uint8_t flags = req->flags;
  const size_t path_len = req->path_len;
  const uint64_t offset = req->offset;
  const uint64_t length = req->length;
  std::string path(path_len, '\0');
  if (RecvFull(fd, &path[0], path_len) != path_len) return false;
  SetBusy(conn, true);
  if (absl::Status s = CheckDataPortRequestFlags(flags); !s.ok()) {
    return SendBytes(fd, ReplyHeader(s), 0);
  }
  if ((flags & kDataPortFlagBackground) != 0) EnterBackground(conn);
  absl::Status slot = service_->BeginRead();
  if (!slot.ok()) return SendBytes(fd, ReplyHeader(slot), 0);
  const AgentServiceOptions& so = service_->options();
  if (so.read_started_hook) so.read_started_hook(path);
  Clock* clock = service_->clock();
  const absl::Time start = clock->MonotonicNow();
  const bool verify = (flags & kDataPortFlagVerify) != 0;

  ReadOutcome out;
  bool replied = false;  // The OK reply header went out.
  // Sends the reply header for an error before any data, or an error
  // trailer after it.
  auto fail = [&](absl::Status s) {
    out.status = s;
    if (!replied) {
      out.keep = SendBytes(fd, ReplyHeader(s), 0);
    } else {
      std::string t(4, '\0');
      PutLe32(&t[0], kDataPortErrorFrame);
      t += EncodeDataPortStatusBody(s);
      out.keep = SendBytes(fd, t, 0);
    }
  };
  // Sends one frame of `n` bytes at object offset `off` with `crc`; the
  // bytes come from `data`, or with sendfile from `file_fd` when null.
  auto frame = [&](int file_fd, uint64_t off, const char* data, size_t n,
                   uint32_t crc) -> bool {
    char fh[kDataPortFrameHeaderBytes];
    PutLe32(fh, static_cast<uint32_t>(n));
    PutLe32(fh + 4, crc);
    if (data != nullptr) {
      iovec iov[2] = {{fh, sizeof(fh)}, {const_cast<char*>(data), n}};
      if (!SendAll(fd, iov, 2, 0)) return false;
    } else {
      if (!SendBytes(fd, absl::string_view(fh, sizeof(fh)), MSG_MORE)) {
        return false;
      }
      off_t pos = static_cast<off_t>(off);
      size_t left = n;
      while (left > 0) {
        ssize_t w = sendfile(fd, file_fd, &pos, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;  // Client gone, or file shrank.
        left -= static_cast<size_t>(w);
      }
    }
    service_->AddBytesRead(n);
    return true;
  };

  [&] {
    absl::StatusOr<ObjectReader> reader =
        ObjectReader::Open(*root_, path, offset, length);
    if (!reader.ok()) return fail(reader.status());
    const ObjectReader& r = *reader;
    const uint64_t size = r.size();
    const uint64_t end = r.end();
    std::optional<Checksums> sums;
    if (end > offset || verify) {
      absl::StatusOr<Checksums> c =
          verify ? r.LoadChecksumsForVerify() : r.LoadChecksums();
      if (c.ok()) {
        sums = *std::move(c);
      } else if (verify) {
        return fail(c.status());
      }
      // Without verify a missing or bad sidecar only costs the sendfile
      // path: CRCs are computed from the data.
    }
    std::string ok_header = ReplyHeader(absl::OkStatus());
    if (!SendBytes(fd, ok_header, MSG_MORE)) {
      out.keep = false;
      return;
    }
    replied = true;
    const bool use_sendfile = !so.chunk_hook && conn->use_sendfile;
    const int file_fd = r.fd();
    // pread [off, off + n) into buf, apply the test hook, send.
    auto copy_frame = [&](uint64_t off, size_t n,
                          std::optional<uint32_t> crc) -> bool {
      buf->resize(std::max(buf->size(), n));
      absl::Status s = r.Pread(&(*buf)[0], n, off);
      if (!s.ok()) {
        fail(s);
        return false;
      }
      const uint32_t c =
          crc.has_value() ? *crc : Crc32cExtend(0, &(*buf)[0], n);
      if (so.chunk_hook) so.chunk_hook(off, absl::MakeSpan(&(*buf)[0], n));
      if (!frame(-1, off, buf->data(), n, c)) {
        out.keep = false;
        return false;
      }
      return true;
    };
    if (!sums.has_value()) {
      const size_t max_frame = std::clamp<size_t>(so.chunk_size, kMinBlockSize,
                                                  kDataPortMaxFrameBytes);
      for (uint64_t off = offset; off < end;) {
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(max_frame, end - off));
        if (!copy_frame(off, n, std::nullopt)) return;
        off += n;
      }
    } else {
      const uint64_t bs = sums->block_size;
      for (uint64_t off = offset; off < end;) {
        const uint64_t b = off / bs;
        const uint64_t bstart = b * bs;
        const uint64_t bend = std::min(bstart + bs, size);
        const uint64_t stop = std::min(end, bend);
        const uint32_t stored = sums->block_crc32c[b];
        const size_t n = static_cast<size_t>(stop - off);
        if (off == bstart && stop == bend) {
          // Whole block: its stored CRC, checked by the client end to end.
          if (use_sendfile) {
            if (!frame(file_fd, off, nullptr, n, stored)) {
              out.keep = false;
              return;
            }
          } else if (!copy_frame(off, n, stored)) {
            return;
          }
        } else if (verify) {
          // A part of a block: checked here against the sidecar, sent
          // with a CRC of the part.
          absl::StatusOr<absl::string_view> block =
              r.ReadVerifiedBlock(*sums, b, buf);
          if (!block.ok()) return fail(block.status());
          const char* p = block->data() + (off - bstart);
          if (so.chunk_hook) {
            so.chunk_hook(off, absl::MakeSpan(&(*buf)[off - bstart], n));
          }
          if (!frame(-1, off, p, n, Crc32cExtend(0, p, n))) {
            out.keep = false;
            return;
          }
        } else if (!copy_frame(off, n, std::nullopt)) {
          return;
        }
        off = stop;
      }
    }
    char end_frame[kDataPortFrameHeaderBytes] = {};
    if (!SendBytes(fd, absl::string_view(end_frame, sizeof(end_frame)), 0)) {
      out.keep = false;
    }
  }();
  service_->EndRead(out.status.ok() && out.keep, clock->MonotonicNow() - start);
  if (!out.status.ok() && !absl::IsNotFound(out.status) &&
      !absl::IsOutOfRange(out.status)) {
    RANGEFS_LOG(INFO) << "data port ReadRange: " << out.status;
  }
  return out.keep;
}

}  // namespace node
}  // namespace rangefs
