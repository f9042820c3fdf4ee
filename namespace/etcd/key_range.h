// File: key_range.h
//
// etcd key ranges: the one function that turns a key prefix into the end of
// the range [prefix, end) that covers it. Every etcd range read, watch and
// delete of a prefix in the tree uses it (the etcd client's `prefix`
// options, and the namespace layer through namespace/kv.h).
//
//   kv->Range(prefix, PrefixRangeEnd(prefix), 0, 0);
#ifndef RANGEFS_NAMESPACE_ETCD_KEY_RANGE_H_
#define RANGEFS_NAMESPACE_ETCD_KEY_RANGE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace etcd {

// Returns the smallest key greater than every key starting with `prefix`:
// "a/" -> "a0", "a\xff" -> "b". For an empty or all-0xff prefix returns
// "\0", which etcd reads as "to the end of the keyspace".
std::string PrefixRangeEnd(absl::string_view prefix);

}  // namespace etcd
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_ETCD_KEY_RANGE_H_
