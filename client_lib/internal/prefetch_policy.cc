#include "client_lib/internal/prefetch_policy.h"

#include <algorithm>

namespace rangefs {
namespace client_internal {

void PrefetchPolicy::Gap(absl::Duration gap) {
  gaps_[1] = gaps_[0];
  gaps_[0] = gap;
}

void PrefetchPolicy::Fill(absl::Duration took) { fill_ = took; }

bool PrefetchPolicy::Pays(size_t bytes) const {
  const absl::Duration gain = std::min({gaps_[0], gaps_[1], fill_});
  const absl::Duration copy =
      absl::Seconds(static_cast<double>(bytes) / kCopyBytesPerSec);
  return gain >= 2 * copy;
}

}  // namespace client_internal
}  // namespace rangefs
