#include "namespace/kv.h"

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

}  // namespace ns
}  // namespace rangefs
