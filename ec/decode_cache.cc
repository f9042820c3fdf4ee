#include "ec/decode_cache.h"

#include <algorithm>
#include <utility>

namespace rangefs {
namespace ec {

DecodeCache::DecodeCache(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)) {}

absl::StatusOr<DecodeCache::Tables> DecodeCache::GetOrBuild(
    uint64_t key,
    absl::FunctionRef<absl::StatusOr<std::vector<unsigned char>>()> build) {
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
    ++misses_;
  }
  absl::StatusOr<std::vector<unsigned char>> built = build();
  if (!built.ok()) return built.status();
  auto tables =
      std::make_shared<const std::vector<unsigned char>>(*std::move(built));
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {  // another thread built it meanwhile
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(key, tables);
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return tables;
}

DecodeCacheStats DecodeCache::stats() const {
  absl::MutexLock lock(&mu_);
  return {.hits = hits_, .misses = misses_, .entries = lru_.size()};
}

}  // namespace ec
}  // namespace rangefs
