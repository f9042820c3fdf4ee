// File: decode_cache.h
//
// The decode tables of an erasure code, cached per erasure pattern (which
// cells are read, which are rebuilt): a mutex-guarded LRU map of bounded
// size. Internal to ec/.
#ifndef RANGEFS_EC_DECODE_CACHE_H_
#define RANGEFS_EC_DECODE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "ec/codec.h"

namespace rangefs {
namespace ec {

// Thread-safe.
class DecodeCache {
 public:
  using Tables = std::shared_ptr<const std::vector<unsigned char>>;

  // Keeps at most `capacity` (>= 1) patterns, dropping the least recently
  // used.
  explicit DecodeCache(size_t capacity);

  // The tables cached under `key`, or those `build` returns (then cached).
  // `build` runs without the lock held; its error is returned, not cached.
  absl::StatusOr<Tables> GetOrBuild(
      uint64_t key,
      absl::FunctionRef<absl::StatusOr<std::vector<unsigned char>>()> build);

  DecodeCacheStats stats() const;

 private:
  using Entry = std::pair<uint64_t, Tables>;

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // most recent first
  absl::flat_hash_map<uint64_t, std::list<Entry>::iterator> index_
      ABSL_GUARDED_BY(mu_);
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ec
}  // namespace rangefs

#endif  // RANGEFS_EC_DECODE_CACHE_H_
