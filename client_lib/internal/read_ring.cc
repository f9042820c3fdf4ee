#include "client_lib/internal/read_ring.h"

#include <sys/eventfd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace rangefs {
namespace client_internal {

std::unique_ptr<ReadRing> ReadRing::Create(int depth, bool nowait,
                                           std::string* error) {
  std::unique_ptr<ReadRing> r(new ReadRing());
  r->nowait_ = nowait;
  // One entry more than the slots: the armed eventfd read.
  int rc = io_uring_queue_init(static_cast<unsigned>(depth) + 1, &r->ring_, 0);
  if (rc < 0) {
    *error = absl::StrCat("io_uring_queue_init(", depth, "): ", strerror(-rc));
    return nullptr;
  }
  r->ring_ok_ = true;  // from here on the destructor tears the ring down
  r->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (r->wake_fd_ < 0) {
    *error = absl::StrCat("eventfd: ", strerror(errno));
    return nullptr;
  }
  r->slots_.resize(static_cast<size_t>(depth));
  for (int i = depth - 1; i >= 0; --i) r->free_.push_back(i);
  return r;
}

ReadRing::~ReadRing() {
  // Not io_uring_queue_exit on a ring that never was: it would close fd 0.
  if (ring_ok_) io_uring_queue_exit(&ring_);  // cancels the armed read
  if (wake_fd_ >= 0) close(wake_fd_);
  for (Slot& s : slots_) free(s.buf);
}

void ReadRing::Start(std::shared_ptr<RingFile> file, uint64_t offset,
                     size_t want, size_t alloc, bool direct,
                     std::unique_ptr<Context> context, char* into) {
  const int i = free_.back();
  free_.pop_back();
  ++inflight_;
  Slot& slot = slots_[i];
  slot.into = into;
  if (into == nullptr && slot.cap < alloc) {
    free(slot.buf);
    slot.cap = std::max(alloc, size_t{64} << 10);
    slot.buf = static_cast<char*>(aligned_alloc(kDirectIoAlignment, slot.cap));
  }
  if (context != nullptr) slot.context = std::move(context);
  slot.file = std::move(file);
  slot.offset = offset;
  slot.direct = direct;
  slot.want = want;
  slot.done = 0;
  Issue(i);
}

io_uring_sqe* ReadRing::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {  // cannot happen: entries > slots; be safe anyway
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

void ReadRing::Issue(int i) {
  Slot& s = slots_[i];
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_read(sqe, s.file->fd(), s.data() + s.done,
                     static_cast<unsigned>(s.want - s.done), s.offset + s.done);
  if (nowait_) sqe->rw_flags = RWF_NOWAIT;
  io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(i));
}

void ReadRing::SubmitAndWait(absl::Duration timeout) {
  int rc;
  if (timeout <= absl::ZeroDuration()) {
    rc = io_uring_submit(&ring_);
  } else {
    if (!wake_armed_) {
      io_uring_sqe* sqe = GetSqe();
      io_uring_prep_read(sqe, wake_fd_, &wake_buf_, sizeof(wake_buf_), 0);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      wake_armed_ = true;
    }
    if (timeout == absl::InfiniteDuration()) {
      rc = io_uring_submit_and_wait(&ring_, 1);
    } else {
      const int64_t ns = absl::ToInt64Nanoseconds(timeout);
      __kernel_timespec ts{.tv_sec = ns / 1000000000,
                           .tv_nsec = ns % 1000000000};
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
      if (rc == -ETIME) rc = 0;
    }
  }
  if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
    RANGEFS_LOG(ERROR) << "io_uring_submit: " << strerror(-rc);
  }
}

void ReadRing::TakeCompletions(size_t max) {
  unsigned head;
  unsigned n = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    if (ended_.size() >= max) break;
    ++n;
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    if (tag == kWakeTag) {
      wake_armed_ = false;
    } else {
      ended_.emplace_back(static_cast<int>(tag), cqe->res);
    }
  }
  io_uring_cq_advance(&ring_, n);
}

void ReadRing::Wake() {
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    RANGEFS_LOG(ERROR) << "io_uring wake: eventfd write: " << strerror(errno);
  }
}

}  // namespace client_internal
}  // namespace rangefs
