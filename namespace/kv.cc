#include "namespace/kv.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace ns {

int64_t NextPageSize(const KvRange& previous) {
  constexpr int64_t kMin = 1000, kMax = 10000;
  constexpr size_t kTargetBytes = 4 << 20;
  if (previous.kvs.empty()) return kMin;
  size_t bytes = 0;
  for (const KvEntry& e : previous.kvs) bytes += e.key.size() + e.value.size();
  const size_t per_key = std::max<size_t>(1, bytes / previous.kvs.size());
  return std::clamp<int64_t>(static_cast<int64_t>(kTargetBytes / per_key), kMin,
                             kMax);
}

absl::StatusOr<int64_t> ForEachRangePage(KvBackend& kv, absl::string_view begin,
                                         absl::string_view end,
                                         int64_t revision, int64_t page_size,
                                         const KvPageCallback& on_page) {
  if (page_size < 0 || page_size > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("page size ", page_size, " is not in 0..10000"));
  }
  const bool adaptive = page_size == 0;
  int64_t limit = adaptive ? NextPageSize({}) : page_size;
  std::string start(begin);
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(KvRange r, kv.Range(start, end, limit, revision));
    if (revision == 0) revision = r.revision;
    if (r.kvs.empty()) break;
    std::string last = r.kvs.back().key;
    // Sized before on_page may take the values.
    if (adaptive && r.more) limit = NextPageSize(r);
    RANGEFS_RETURN_IF_ERROR(on_page(r.kvs, revision));
    if (!r.more) break;
    start = std::move(last);
    start.push_back('\0');
  }
  return revision;
}

}  // namespace ns
}  // namespace rangefs
