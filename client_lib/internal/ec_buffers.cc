#include "client_lib/internal/ec_buffers.h"

#include <utility>

namespace rangefs {
namespace client_internal {

EcBuffer& EcBuffer::operator=(EcBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    pool_ = o.pool_;
    data_ = std::move(o.data_);
    size_ = o.size_;
    o.pool_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void EcBuffer::reset() {
  if (pool_ != nullptr && data_ != nullptr) {
    pool_->Give(std::move(data_), size_);
  }
  data_.reset();
  pool_ = nullptr;
  size_ = 0;
}

EcBuffers& EcBuffers::Shared() {
  static EcBuffers* const shared = new EcBuffers();
  return *shared;
}

EcBuffer EcBuffers::Take(size_t n) {
  EcBuffer b;
  b.size_ = n;
  if (n < kMinBytes || n > kMaxBytes) {
    b.data_.reset(new char[n]);  // not zeroed; not kept
    return b;
  }
  b.pool_ = this;
  {
    absl::MutexLock l(&mu_);
    // The smallest kept buffer that is big enough.
    int best = -1;
    for (size_t j = 0; j < kept_.size(); ++j) {
      if (kept_[j].size >= n &&
          (best < 0 || kept_[j].size < kept_[static_cast<size_t>(best)].size)) {
        best = static_cast<int>(j);
      }
    }
    if (best >= 0) {
      Kept& k = kept_[static_cast<size_t>(best)];
      b.data_ = std::move(k.data);
      b.size_ = k.size;
      kept_bytes_ -= k.size;
      k = std::move(kept_.back());
      kept_.pop_back();
      return b;
    }
  }
  b.data_.reset(new char[n]);
  return b;
}

void EcBuffers::Give(std::unique_ptr<char[]> data, size_t size) {
  absl::MutexLock l(&mu_);
  if (kept_.size() >= kMaxKept || kept_bytes_ + size > kMaxKeptBytes) return;
  kept_bytes_ += size;
  kept_.push_back({std::move(data), size});
}

size_t EcBuffers::kept() const {
  absl::MutexLock l(&mu_);
  return kept_.size();
}

}  // namespace client_internal
}  // namespace rangefs
