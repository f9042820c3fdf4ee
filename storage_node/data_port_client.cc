#include "storage_node/data_port_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "storage_node/data_port_wire.h"

namespace rangefs {
namespace node {
namespace {

// Connecting gives up after this even with a later deadline: a node that
// does not answer a SYN is better tried elsewhere.
constexpr absl::Duration kMaxConnectTime = absl::Seconds(5);

bool Cancelled(CallCanceller* c) { return c != nullptr && c->cancelled(); }

// A connection's receive/send timeout as set (SO_RCVTIMEO, SO_SNDTIMEO):
// InfiniteDuration for none (the kernel's zero).
constexpr absl::Duration kNotArmed = absl::InfiniteDuration();

// Sets the socket's receive/send timeouts to `t` (kNotArmed: none).
absl::Status SetTimeouts(int fd, absl::Duration t, absl::Duration* armed) {
  timeval tv{};  // Zero: no timeout.
  if (t != kNotArmed) tv = absl::ToTimeval(t);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    *armed = absl::ZeroDuration();  // unknown: set again next time
    return ErrnoStatus(errno, "setsockopt SO_RCVTIMEO");
  }
  *armed = t;
  return absl::OkStatus();
}

// Makes the socket's timeouts end no later than `deadline`: set afresh
// only where they could wait past it (a pooled connection keeps what an
// earlier read set, which ends sooner; a socket call that times out
// before the deadline re-arms, RecvExact). DEADLINE_EXCEEDED if nothing is
// left.
absl::Status ArmTimeouts(int fd, absl::Time deadline, absl::Duration* armed) {
  if (deadline == absl::InfiniteFuture()) {
    return *armed == kNotArmed ? absl::OkStatus()
                               : SetTimeouts(fd, kNotArmed, armed);
  }
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) {
    return absl::DeadlineExceededError("deadline passed");
  }
  if (*armed > absl::ZeroDuration() && *armed <= left) return absl::OkStatus();
  return SetTimeouts(fd, std::max(left, absl::Milliseconds(1)), armed);
}

// The status for a socket call that failed with `err` (0: EOF).
absl::Status TransportError(int err, const DataPortReadOptions& options,
                            absl::string_view what) {
  if (Cancelled(options.canceller)) return absl::CancelledError("cancelled");
  if ((err == EAGAIN || err == EWOULDBLOCK) &&
      absl::Now() >= options.deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("deadline exceeded while ", what));
  }
  if (err == 0) {
    return absl::UnavailableError(
        absl::StrCat("connection closed by the agent while ", what));
  }
  return absl::UnavailableError(ErrnoStatus(err, what).message());
}

// After a socket call on `fd` that returned `r` (errno `err` when < 0):
// OK to call again (EINTR; a timeout before the deadline, the timeouts
// re-armed to the time left), else the error.
absl::Status RetryOrFail(int fd, ssize_t r, int err,
                         const DataPortReadOptions& options,
                         absl::Duration* armed, absl::string_view what) {
  if (r < 0 && err == EINTR) return absl::OkStatus();
  if (r < 0 && (err == EAGAIN || err == EWOULDBLOCK) &&
      !Cancelled(options.canceller) && absl::Now() < options.deadline) {
    // The timeout was shorter than the time left (set by an earlier read
    // on this connection), or the kernel timer fired a little early.
    *armed = absl::ZeroDuration();
    absl::Status s = ArmTimeouts(fd, options.deadline, armed);
    if (s.ok()) return s;
  }
  return TransportError(r == 0 ? 0 : err, options, what);
}

// Receives exactly `n` bytes, re-arming the timeout until the deadline.
absl::Status RecvExact(int fd, char* p, size_t n,
                       const DataPortReadOptions& options,
                       absl::Duration* armed, absl::string_view what) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, MSG_WAITALL);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    absl::Status s = RetryOrFail(fd, r, errno, options, armed, what);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// One reply's bytes off the socket through a buffer: the reply of a small
// read (header, frame, end frame) usually comes whole in one recv(2)
// instead of one a field; a large frame's bytes beyond what the buffer
// holds go straight into the caller's buffer.
class ReplyStream {
 public:
  ReplyStream(int fd, const DataPortReadOptions& options, absl::Duration* armed)
      : fd_(fd), options_(options), armed_(armed) {}

  // Fills exactly `n` bytes at `p` (DataPortRecvFn).
  absl::Status Fill(char* p, size_t n, absl::string_view what) {
    const size_t take = std::min(n, end_ - begin_);
    std::memcpy(p, buf_ + begin_, take);
    begin_ += take;
    if (take == n) return absl::OkStatus();
    p += take;
    n -= take;
    if (n >= sizeof(buf_) / 2) {
      return RecvExact(fd_, p, n, options_, armed_, what);
    }
    begin_ = end_ = 0;
    while (end_ < n) {
      ssize_t r = recv(fd_, buf_ + end_, sizeof(buf_) - end_, 0);
      if (r > 0) {
        end_ += static_cast<size_t>(r);
        continue;
      }
      absl::Status s = RetryOrFail(fd_, r, errno, options_, armed_, what);
      if (!s.ok()) return s;
    }
    std::memcpy(p, buf_, n);
    begin_ = n;
    return absl::OkStatus();
  }
  // Bytes received past what Fill handed out: after a whole reply, a
  // protocol error (the connection is not reused).
  size_t unread() const { return end_ - begin_; }

 private:
  const int fd_;
  const DataPortReadOptions& options_;
  absl::Duration* const armed_;
  char buf_[16 << 10];
  size_t begin_ = 0;
  size_t end_ = 0;
};

absl::Status SendExact(int fd, const char* p, size_t n,
                       const DataPortReadOptions& options,
                       absl::Duration* armed) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    absl::Status s =
        RetryOrFail(fd, w, errno, options, armed, "sending the request");
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Detaches the canceller on scope exit.
class FdAttachment {
 public:
  FdAttachment(CallCanceller* c, int fd) : c_(c) {
    ok_ = c_ == nullptr || c_->AttachFd(fd);
  }
  ~FdAttachment() {
    if (c_ != nullptr && ok_) c_->Detach();
  }
  bool ok() const { return ok_; }

 private:
  CallCanceller* c_;
  bool ok_;
};

}  // namespace

DataPortClient::DataPortClient(std::string node_address, std::string host,
                               int port, size_t max_idle, int max_active)
    : node_address_(std::move(node_address)),
      host_(std::move(host)),
      port_(port),
      max_idle_(max_idle),
      max_active_(std::max(1, max_active)) {}

size_t DataPortClient::waiting() const {
  absl::MutexLock l(&mu_);
  return waiting_.size();
}

size_t DataPortClient::idle_connections() const {
  absl::MutexLock l(&mu_);
  return idle_.size();
}

absl::StatusOr<ScopedFd> DataPortClient::Open(
    const DataPortReadOptions& options) {
  std::string host = host_;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(port_);
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host_, ": ", gai_strerror(rc)));
  }
  const absl::Time give_up =
      std::min(options.deadline, absl::Now() + kMaxConnectTime);
  absl::Status last = absl::UnavailableError("no address");
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    ScopedFd fd(
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) {
      last = ErrnoStatus(errno, "socket");
      continue;
    }
    int err = 0;
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      while (err == EINPROGRESS || err == EINTR) {
        if (Cancelled(options.canceller)) {
          freeaddrinfo(res);
          return absl::CancelledError("cancelled while connecting");
        }
        const absl::Duration left = give_up - absl::Now();
        if (left <= absl::ZeroDuration()) {
          err = ETIMEDOUT;
          break;
        }
        // Short slices so that Cancel() is seen while connecting.
        pollfd p{fd.get(), POLLOUT, 0};
        const int ms = static_cast<int>(
            std::clamp<int64_t>(absl::ToInt64Milliseconds(left), 1, 50));
        int n = poll(&p, 1, ms);
        if (n < 0 && errno != EINTR) {
          err = errno;
          break;
        }
        if (n > 0) {
          socklen_t len = sizeof(err);
          getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
          break;
        }
      }
    }
    if (err != 0) {
      last = ErrnoStatus(
          err, absl::StrCat("connect to data port ", host_, ":", port_));
      continue;
    }
    const int flags = fcntl(fd.get(), F_GETFL);
    fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    freeaddrinfo(res);
    opened_.fetch_add(1);
    return fd;
  }
  freeaddrinfo(res);
  if (absl::IsDeadlineExceeded(last) || absl::Now() >= options.deadline) {
    return absl::DeadlineExceededError(last.message());
  }
  return absl::UnavailableError(last.message());
}

absl::StatusOr<size_t> DataPortClient::ReadRange(
    const std::string& path, uint64_t offset, absl::Span<char> dst,
    const DataPortReadOptions& options, bool* not_sent) {
  if (not_sent != nullptr) *not_sent = false;
  auto prefix = [&](uint64_t at) {
    return absl::StrCat("ReadRange ", path, " on node ", node_address_,
                        " (data port ", port_, ") at byte ", at, ": ");
  };
  if (path.size() > kDataPortMaxPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix(offset), "path longer than ", kDataPortMaxPathBytes, " bytes"));
  }
  {
    // Our turn: at most max_active_ reads at once. The canceller cannot
    // wake this wait, so it is looked at every kTurnPoll.
    constexpr absl::Duration kTurnPoll = absl::Milliseconds(5);
    absl::MutexLock l(&mu_);
    if (active_ < max_active_ && waiting_.empty()) {
      ++active_;
    } else {
      Waiter me;
      waiting_.push_back(&me);
      while (!me.granted) {
        absl::Status gone;
        const absl::Time now = absl::Now();
        if (Cancelled(options.canceller)) {
          gone = absl::CancelledError(
              absl::StrCat(prefix(offset), "cancelled while queued"));
        } else if (now >= options.deadline) {
          gone = absl::DeadlineExceededError(absl::StrCat(
              prefix(offset), "deadline passed while queued behind ", active_,
              " reads"));
        }
        if (!gone.ok()) {
          waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &me));
          return gone;
        }
        turn_.WaitWithTimeout(&mu_,
                              std::min(options.deadline - now, kTurnPoll));
      }
    }
  }
  absl::Cleanup done = [this] {
    absl::MutexLock l(&mu_);
    if (waiting_.empty()) {
      --active_;
    } else {  // our turn goes to the first in line
      waiting_.front()->granted = true;
      waiting_.pop_front();
      turn_.SignalAll();
    }
  };
  // A pooled connection may have been closed by the agent meanwhile (idle
  // timeout, restart): then the read is retried once on a new connection.
  for (int attempt = 0;; ++attempt) {
    if (Cancelled(options.canceller)) {
      return absl::CancelledError(absl::StrCat(prefix(offset), "cancelled"));
    }
    Conn c;
    {
      absl::MutexLock l(&mu_);
      if (attempt > 0) {
        // The agent closed a pooled connection: the others are likely
        // closed too (it restarted, or they idled out together). Retry on
        // a new one, not on the next stale one.
        idle_.clear();
      } else if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    const bool pooled = c.fd.valid();
    if (!pooled) {
      absl::StatusOr<ScopedFd> opened = Open(options);
      if (!opened.ok()) {
        if (not_sent != nullptr) *not_sent = true;
        return absl::Status(
            opened.status().code(),
            absl::StrCat(prefix(offset), opened.status().message()));
      }
      c.fd = *std::move(opened);
    }
    bool reusable = false, no_reply = false;
    absl::StatusOr<size_t> r =
        ReadOnce(c, path, offset, dst, options, &reusable, &no_reply);
    if (reusable) {
      absl::MutexLock l(&mu_);
      if (idle_.size() < max_idle_) idle_.push_back(std::move(c));
    }
    if (!r.ok() && pooled && no_reply && attempt == 0 &&
        absl::IsUnavailable(r.status())) {
      continue;
    }
    return r;
  }
}

absl::StatusOr<size_t> DataPortClient::ReadOnce(
    Conn& c, const std::string& path, uint64_t offset, absl::Span<char> dst,
    const DataPortReadOptions& options, bool* reusable, bool* no_reply) {
  *reusable = false;
  *no_reply = true;
  size_t got = 0;
  auto err = [&](const absl::Status& s) {
    return absl::Status(
        s.code(), absl::StrCat("ReadRange ", path, " on node ", node_address_,
                               " (data port ", port_, ") at byte ",
                               offset + got, ": ", s.message()));
  };
  const int fd = c.fd.get();
  FdAttachment attach(options.canceller, fd);
  if (!attach.ok()) return err(absl::CancelledError("cancelled"));
  absl::Status s = ArmTimeouts(fd, options.deadline, &c.armed);
  if (!s.ok()) return err(s);
  const uint8_t flags = (options.verify_on_server ? kDataPortFlagVerify : 0) |
                        (options.background ? kDataPortFlagBackground : 0);
  const std::string req =
      EncodeDataPortRequest(path, offset, dst.size(), flags);
  s = SendExact(fd, req.data(), req.size(), options, &c.armed);
  if (!s.ok()) return err(s);

  ReplyStream in(fd, options, &c.armed);
  DataPortReply reply = ReadDataPortReply(
      [&](char* p, size_t n, absl::string_view what) {
        return in.Fill(p, n, what);
      },
      dst, options.check_crc || options.verify_on_server, offset);
  if (reply.status.ok() && in.unread() > 0) {
    reply.status = absl::InternalError(absl::StrCat(
        "protocol error: ", in.unread(), " bytes after the end frame"));
  }
  *reusable = reply.reusable && in.unread() == 0;
  *no_reply = !reply.header_received;
  if (reply.status.ok()) return reply.got;
  if (reply.refused) {
    return absl::Status(
        reply.status.code(),
        absl::StrCat("ReadRange ", path, " on node ", node_address_, ": ",
                     reply.status.message()));
  }
  got = reply.got;
  return err(reply.status);
}

}  // namespace node
}  // namespace rangefs
