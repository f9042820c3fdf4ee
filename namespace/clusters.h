// File: clusters.h
//
// Which clusters an etcd holds, so that a wrong or missing cluster name is
// an error that says what exists instead of an empty world:
//
//   RANGEFS_ASSIGN_OR_RETURN(std::string why,
//       EmptyClusterMessage(kv, "prod", "10.0.0.1:2379"));
//   if (!why.empty()) { /* warn or fail with `why` */ }
#ifndef RANGEFS_NAMESPACE_CLUSTERS_H_
#define RANGEFS_NAMESPACE_CLUSTERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "namespace/kv.h"

namespace rangefs {
namespace ns {

// The names of the clusters with any record (/rangefs/v1/<name>/...), in
// order, at most `max`: one etcd Range of one key per cluster.
absl::StatusOr<std::vector<std::string>> ListClusters(KvBackend& kv,
                                                      size_t max = 20);

// "" if `cluster` has a node or file record; else a message naming the
// cluster, the endpoint and the clusters that exist there:
//   cluster "prod" at 10.0.0.1:2379 has no nodes and no files (clusters
//   there: local); give --cluster or $RANGEFS_CLUSTER
// The errors of the etcd reads.
absl::StatusOr<std::string> EmptyClusterMessage(KvBackend& kv,
                                                absl::string_view cluster,
                                                absl::string_view endpoint);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_CLUSTERS_H_
