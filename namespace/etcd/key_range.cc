#include "namespace/etcd/key_range.h"

namespace rangefs {
namespace etcd {

std::string PrefixRangeEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    const unsigned char c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // All 0xff: to the end of the keyspace.
}

}  // namespace etcd
}  // namespace rangefs
