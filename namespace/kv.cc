#include "namespace/kv.h"

#include <algorithm>

namespace rangefs {
namespace ns {

std::string PrefixRangeEnd(absl::string_view prefix) {
  std::string end(prefix);
  for (int i = static_cast<int>(end.size()) - 1; i >= 0; --i) {
    if (static_cast<unsigned char>(end[i]) < 0xff) {
      end[i] = static_cast<char>(end[i] + 1);
      end.resize(i + 1);
      return end;
    }
  }
  return std::string(1, '\0');  // All 0xff: to the end of the keyspace.
}

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

}  // namespace ns
}  // namespace rangefs
