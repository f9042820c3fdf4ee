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

absl::Status Closing(const NfsExport& e) {
  return absl::UnavailableError(
      absl::StrCat("NFS reads of ", e.Describe(), " stopped (client closing)"));
}

}  // namespace

bool NfsLink::Submit(std::unique_ptr<NfsRequest> r) {
  load_.fetch_add(1, std::memory_order_relaxed);
  r->unanswered = &load_;
  if (loop_->Push(this, std::move(r))) return true;
  load_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void NfsLink::Stop() { loop_->StopLink(this); }

absl::StatusOr<std::shared_ptr<NfsLoop>> NfsLoop::Create(bool single,
                                                         Starter start) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, "eventfd for an NFS loop");
  return std::shared_ptr<NfsLoop>(new NfsLoop(fd, single, std::move(start)));
}

NfsLoop::~NfsLoop() { close(event_fd_); }

std::shared_ptr<NfsLink> NfsLoop::Attach(NfsExport e, std::string id) {
  std::shared_ptr<NfsLink> link(
      new NfsLink(shared_from_this(), std::move(e), std::move(id)));
  bool wake;
  {
    absl::MutexLock l(&mu_);
    if (stop_ || (single_ && attached_)) return nullptr;
    attached_ = true;
    links_.fetch_add(1, std::memory_order_relaxed);
    wake = TakeSleeper();
    queue_.push_back(Item{link.get(), nullptr, link});
  }
  if (wake) Wake();
  return link;
}

bool NfsLoop::Push(NfsLink* link, std::unique_ptr<NfsRequest> r) {
  bool wake = false;
  {
    absl::MutexLock l(&mu_);
    if (stop_ || link->stopped_) {
      // Refused, never answered here: this thread may hold a lock that
      // `done` takes (a read call's, handing it its pieces), and a stopped
      // link has no connection left to answer on.
      return false;
    }
    if (!started_ && start_) {
      if (!start_(shared_from_this())) {
        stop_ = true;  // no thread: nothing may wait in its queue
        queue_.clear();
        return false;
      }
    }
    started_ = true;
    wake = TakeSleeper();
    queue_.push_back(Item{link, std::move(r), nullptr});
  }
  if (wake) Wake();
  return true;
}

void NfsLoop::StopLink(NfsLink* link) {
  bool wake;
  {
    absl::MutexLock l(&mu_);
    if (stop_ || link->stopped_) return;
    link->stopped_ = true;
    links_.fetch_sub(1, std::memory_order_relaxed);
    wake = TakeSleeper();
    queue_.push_back(Item{link, nullptr, nullptr});
  }
  if (wake) Wake();
}

bool NfsLoop::TakeSleeper() {
  // Only a loop that waits in poll (or is about to) needs the eventfd: a
  // running one (this thread's own, a `done` starting the next read; or
  // another thread's, servicing its connections) takes its queue before
  // it polls again. One write wakes it: later pushers see it awake.
  const bool sleeping = sleeping_;
  sleeping_ = false;
  return sleeping;
}

bool NfsLoop::Sleep() {
  absl::MutexLock l(&mu_);
  if (!queue_.empty() || stop_) return false;
  sleeping_ = true;
  return true;
}

void NfsLoop::Awake() {
  absl::MutexLock l(&mu_);
  sleeping_ = false;
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
    // Never started (no request came): no thread will take its queue
    // (attaches and stops only), whose links hold the loop.
    if (!started_ && start_) queue_.clear();
  }
  Wake();
}

bool NfsLoop::Retire() {
  absl::MutexLock l(&mu_);
  if (!attached_ || links_.load(std::memory_order_relaxed) > 0) return false;
  stop_ = true;  // its one link stopped, its stop handled: nothing queued
  return true;
}

void NfsLoop::Take(std::vector<Item>* out, bool* stop) {
  // `*out` is empty: its buffer becomes the queue's.
  absl::MutexLock l(&mu_);
  out->swap(queue_);
  *stop = stop_;
}

NfsLoop::Conn* NfsLoop::Find(NfsLink* link) {
  for (Conn& c : conns_) {
    if (c.link.get() == link) return &c;
  }
  return nullptr;
}

void NfsLoop::Handle(Item& item, absl::Time now) {
  if (item.attach != nullptr) {
    auto conn = std::make_unique<NfsConn>(item.link->export_, item.link->id_);
    conns_.push_back(Conn{std::move(item.attach), std::move(conn)});
    return;
  }
  Conn* c = Find(item.link);
  if (item.req == nullptr) {  // the link stopped: after its last request
    if (c == nullptr) return;
    std::shared_ptr<NfsLink> keep = c->link;  // past the erase
    std::unique_ptr<NfsConn> conn = std::move(c->conn);
    conns_.erase(conns_.begin() + (c - conns_.data()));
    conn->Close(Closing(keep->export_));
    return;
  }
  if (c == nullptr) return;  // not reached: attach precedes, stop follows
  if (!item.req->refused.ok()) {
    item.req->Answer(item.req->refused, nullptr, 0);
  } else {
    c->conn->Start(std::move(item.req), now);
  }
}

void NfsLoop::Run() {
  std::vector<pollfd> fds;
  std::vector<int> slot;  // conns_[i]'s index in fds (0: not polled)
  std::vector<Item> fresh;
  for (;;) {
    bool stop = false;
    Take(&fresh, &stop);
    const absl::Time now = absl::Now();
    for (Item& item : fresh) {
      if (stop && item.req != nullptr) {
        item.req->Answer(Closing(item.link->export_), nullptr, 0);
      } else {
        Handle(item, now);
      }
    }
    fresh.clear();  // what answered requests held goes now, not a poll later
    if (stop) break;
    if (single_ && conns_.empty() && Retire()) return;
    // Handle may have added or removed connections: index them afresh.
    fds.assign(1, pollfd{event_fd_, POLLIN, 0});
    slot.assign(conns_.size(), 0);
    absl::Time next = absl::InfiniteFuture();
    const absl::Time t = absl::Now();
    for (size_t i = 0; i < conns_.size(); ++i) {
      NfsConn& c = *conns_[i].conn;
      c.Expire(t);
      conns_[i].link->mounts_.store(c.mounts(), std::memory_order_relaxed);
      next = std::min(next, c.NextDeadline());
      if (c.fd() >= 0) {
        slot[i] = static_cast<int>(fds.size());
        fds.push_back(pollfd{c.fd(), c.events(), 0});
      }
    }
    const absl::Duration wait =
        std::clamp(next - t, absl::ZeroDuration(), kMaxPoll);
    // Rounded up: no busy wait. Pushed to meanwhile: poll without waiting
    // (its connections serviced, then the queue taken).
    const bool sleep = Sleep();
    const int ms = sleep ? static_cast<int>(absl::ToInt64Milliseconds(
                               wait + absl::Microseconds(999)))
                         : 0;
    const int rc = poll(fds.data(), fds.size(), ms);
    if (sleep) Awake();
    if (rc > 0 && (fds[0].revents & POLLIN) != 0) {
      uint64_t v;
      ssize_t n = read(event_fd_, &v, sizeof(v));
      (void)n;
    }
    // Connections are neither added nor removed here (a `done` only
    // queues), so `slot` stays valid.
    for (size_t i = 0; i < conns_.size(); ++i) {
      NfsConn& c = *conns_[i].conn;
      const short rev = rc > 0 && slot[i] > 0 ? fds[slot[i]].revents : 0;
      if (rev != 0 || c.broken()) c.Service(rev);
    }
  }
  for (Conn& c : conns_) c.conn->Close(Closing(c.link->export_));
  conns_.clear();
}

}  // namespace client_internal
}  // namespace rangefs
