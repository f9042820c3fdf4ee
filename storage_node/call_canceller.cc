#include "storage_node/call_canceller.h"

#include <sys/socket.h>

namespace rangefs {
namespace node {

void CallCanceller::Cancel() {
  absl::MutexLock l(&mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
  // Under mu_: the owner cannot close (and the fd number be reused) before
  // it Detaches, which takes mu_.
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

bool CallCanceller::cancelled() {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

bool CallCanceller::Attach(grpc::ClientContext* ctx) {
  absl::MutexLock l(&mu_);
  if (cancelled_) return false;
  ctx_ = ctx;
  return true;
}

bool CallCanceller::AttachFd(int fd) {
  absl::MutexLock l(&mu_);
  if (cancelled_) return false;
  fd_ = fd;
  return true;
}

void CallCanceller::Detach() {
  absl::MutexLock l(&mu_);
  ctx_ = nullptr;
  fd_ = -1;
}

}  // namespace node
}  // namespace rangefs
