#include "client_lib/internal/readahead_hints.h"

#include <algorithm>

namespace rangefs {
namespace client_internal {

HintRange ReadaheadHints::Observe(uint64_t offset, uint64_t length,
                                  uint64_t size, bool waited) {
  if (length == 0) return {};
  absl::MutexLock l(&mu_);
  return ObserveLocked(offset, length, size, waited);
}

absl::InlinedVector<HintRange, 2> ReadaheadHints::ObserveAll(
    absl::Span<const HintRange> calls, uint64_t size, bool waited) {
  absl::InlinedVector<HintRange, 2> out;
  absl::MutexLock l(&mu_);
  for (const HintRange& c : calls) {
    if (c.length == 0) continue;
    const HintRange h = ObserveLocked(c.offset, c.length, size, waited);
    if (h.length > 0) out.push_back(h);
  }
  return out;
}

HintRange ReadaheadHints::ObserveLocked(uint64_t offset, uint64_t length,
                                        uint64_t size, bool waited) {
  ++clock_;
  Stream* s = nullptr;
  for (Stream& c : streams_) {
    if (c.last_use != 0 && c.end == offset) s = &c;
  }
  if (s == nullptr) {  // a new stream in the least recently used slot
    s = &*std::min_element(streams_.begin(), streams_.end(),
                           [](const Stream& a, const Stream& b) {
                             return a.last_use < b.last_use;
                           });
    *s = Stream{.end = offset + length, .last_use = clock_};
    return {};
  }
  s->end = offset + length;
  s->last_use = clock_;
  if (s->end >= size) return {};
  if (s->window == 0 && !waited) return {};  // cached so far: no cost
  const uint64_t from = std::max(s->hinted_end, s->end);
  if (s->window != 0 && s->hinted_end >= s->end + s->window / 2) return {};
  s->window = s->window == 0
                  ? std::min(w_.max_window, std::max(w_.min_window, 4 * length))
                  : std::min(w_.max_window, 2 * s->window);
  const uint64_t to = std::min(size, s->end + s->window);
  if (to <= from) return {};
  s->hinted_end = to;
  return {.offset = from, .length = to - from};
}

}  // namespace client_internal
}  // namespace rangefs
