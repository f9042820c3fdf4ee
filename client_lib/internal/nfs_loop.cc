#include "client_lib/internal/nfs_loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace rangefs {
namespace client_internal {
namespace {

// The longest poll: a bound on how late a deadline may fire should the
// clock jump.
constexpr absl::Duration kMaxPoll = absl::Milliseconds(100);

// The loop whose Run this thread is in (null: none).
thread_local const NfsLoop* running_loop = nullptr;

}  // namespace

absl::StatusOr<std::unique_ptr<NfsLoop>> NfsLoop::Create(NfsExport e,
                                                         std::string id) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, "eventfd for an NFS loop");
  return std::unique_ptr<NfsLoop>(new NfsLoop(std::move(e), std::move(id), fd));
}

NfsLoop::NfsLoop(NfsExport e, std::string id, int event_fd)
    : export_(std::move(e)), id_(std::move(id)), event_fd_(event_fd) {}

NfsLoop::~NfsLoop() { close(event_fd_); }

bool NfsLoop::Submit(std::unique_ptr<NfsRequest> r) {
  load_.fetch_add(1, std::memory_order_relaxed);
  auto done = std::move(r->done);
  r->done = [this, done = std::move(done)](const absl::Status& s,
                                           const char* data, size_t n) {
    load_.fetch_sub(1, std::memory_order_relaxed);
    done(s, data, n);
  };
  // On the loop's own thread (a `done` that starts the next read): queued
  // with no wake-up, since the loop takes its queue before it polls again.
  const bool own = running_loop == this;
  bool wake = false;
  {
    absl::MutexLock l(&mu_);
    if (stop_) {
      // Refused, never answered here: this thread may hold a lock that
      // `done` takes (a read call's, handing it its pieces), and a stopped
      // loop has no thread left to answer on.
      load_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    wake = queue_.empty() && !own;
    queue_.push_back(std::move(r));
  }
  if (wake) Wake();
  return true;
}

void NfsLoop::Wake() {
  const uint64_t one = 1;
  ssize_t n = write(event_fd_, &one, sizeof(one));
  (void)n;  // EAGAIN: already signalled
}

void NfsLoop::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  Wake();
}

std::vector<std::unique_ptr<NfsRequest>> NfsLoop::Take(bool* stop) {
  std::vector<std::unique_ptr<NfsRequest>> out;
  absl::MutexLock l(&mu_);
  out.swap(queue_);
  *stop = stop_;
  return out;
}

void NfsLoop::Run() {
  running_loop = this;
  NfsConn conn(export_, id_);
  for (;;) {
    bool stop = false;
    std::vector<std::unique_ptr<NfsRequest>> fresh = Take(&stop);
    absl::Time now = absl::Now();
    for (auto& r : fresh) {
      if (stop) {
        r->done(absl::UnavailableError(
                    absl::StrCat("NFS reads of ", export_.Describe(),
                                 " stopped (client closing)")),
                nullptr, 0);
      } else if (!r->refused.ok()) {
        r->done(r->refused, nullptr, 0);
      } else {
        conn.Start(std::move(r), now);
      }
    }
    if (stop) break;
    conn.Expire(absl::Now());
    mounts_.store(conn.mounts(), std::memory_order_relaxed);
    pollfd fds[2] = {{event_fd_, POLLIN, 0}, {conn.fd(), conn.events(), 0}};
    const int nfds = fds[1].fd >= 0 ? 2 : 1;
    const absl::Duration wait = std::clamp(conn.NextDeadline() - absl::Now(),
                                           absl::ZeroDuration(), kMaxPoll);
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(
        wait + absl::Microseconds(999)));  // rounded up: no busy wait
    const int rc = poll(fds, nfds, ms);
    if (rc > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t v;
      ssize_t n = read(event_fd_, &v, sizeof(v));
      (void)n;
    }
    if ((nfds == 2 && rc > 0 && fds[1].revents != 0) || conn.broken()) {
      conn.Service(nfds == 2 && rc > 0 ? fds[1].revents : 0);
    }
  }
  conn.Close(absl::UnavailableError(absl::StrCat(
      "NFS reads of ", export_.Describe(), " stopped (client closing)")));
  running_loop = nullptr;
}

}  // namespace client_internal
}  // namespace rangefs
