#include "client_lib/read_canceller.h"

#include <algorithm>
#include <utility>

namespace rangefs {

void ReadCanceller::Cancel() {
  absl::MutexLock l(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  for (client_internal::CancelHook* h : hooks_) h->on_cancel_();
}

bool ReadCanceller::cancelled() const {
  absl::MutexLock l(&mu_);
  return cancelled_;
}

namespace client_internal {

CancelHook::CancelHook(ReadCanceller* canceller,
                       std::function<void()> on_cancel)
    : canceller_(canceller), on_cancel_(std::move(on_cancel)) {
  if (canceller_ == nullptr) return;
  bool now;
  {
    absl::MutexLock l(&canceller_->mu_);
    now = canceller_->cancelled_;
    if (!now) canceller_->hooks_.push_back(this);
  }
  if (now) on_cancel_();
}

CancelHook::~CancelHook() {
  if (canceller_ == nullptr) return;
  absl::MutexLock l(&canceller_->mu_);
  auto& hooks = canceller_->hooks_;
  hooks.erase(std::remove(hooks.begin(), hooks.end(), this), hooks.end());
}

}  // namespace client_internal
}  // namespace rangefs
