#include "namespace/clusters.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "namespace/keys.h"

namespace rangefs {
namespace ns {

namespace {

constexpr absl::string_view kRoot = "/rangefs/v1/";

// True if any key starts with `prefix`.
absl::StatusOr<bool> AnyKey(KvBackend& kv, const std::string& prefix) {
  RANGEFS_ASSIGN_OR_RETURN(KvRange r,
                           kv.Range(prefix, PrefixRangeEnd(prefix), 1, 0));
  return !r.kvs.empty();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListClusters(KvBackend& kv,
                                                      size_t max) {
  std::vector<std::string> out;
  const std::string end = PrefixRangeEnd(kRoot);
  std::string from(kRoot);
  while (out.size() < max) {
    RANGEFS_ASSIGN_OR_RETURN(KvRange r, kv.Range(from, end, 1, 0));
    if (r.kvs.empty()) break;
    absl::string_view rest = r.kvs[0].key;
    rest.remove_prefix(kRoot.size());
    const size_t slash = rest.find('/');
    if (slash == absl::string_view::npos) {
      // A key right under the root: not a cluster's; step past it.
      from = absl::StrCat(r.kvs[0].key, std::string(1, '\0'));
      continue;
    }
    out.emplace_back(rest.substr(0, slash));
    from = PrefixRangeEnd(absl::StrCat(kRoot, out.back(), "/"));
  }
  return out;
}

absl::StatusOr<std::string> EmptyClusterMessage(KvBackend& kv,
                                                absl::string_view cluster,
                                                absl::string_view endpoint) {
  const Keys keys(cluster);
  RANGEFS_ASSIGN_OR_RETURN(bool nodes, AnyKey(kv, keys.NodePrefix()));
  if (nodes) return std::string();
  RANGEFS_ASSIGN_OR_RETURN(bool files, AnyKey(kv, keys.FilesRoot() + "/"));
  if (files) return std::string();
  RANGEFS_ASSIGN_OR_RETURN(std::vector<std::string> clusters, ListClusters(kv));
  return absl::StrCat(
      "cluster \"", cluster, "\" at ", endpoint, " has no nodes and no files (",
      clusters.empty()
          ? std::string("no cluster there has any record")
          : absl::StrCat("clusters there: ", absl::StrJoin(clusters, ", ")),
      "); give --cluster or $RANGEFS_CLUSTER");
}

}  // namespace ns
}  // namespace rangefs
