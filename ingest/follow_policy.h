// File: follow_policy.h
//
// `file put` into a directory with a storage policy (namespace/
// storage_policy.h): the policy's goal replaces the put's own protection
// (IngestOptions replicas / ec_data / ec_parity) for each file it applies
// to, so new files are born in the layout the policy asks for and
// rangefs-keeper has nothing to convert. A file the policy exempts (under
// its min-size, or younger than its min-age, which a new file always is
// when min-age > 0) keeps the put's own options. Pure; thread-safe.
//
//   IngestOptions o = ...;             // the put's flags or defaults
//   std::string dir = FollowPolicy(*policies, "/crawl/seg-1", size,
//                                  absl::Now(), o);
#ifndef RANGEFS_INGEST_FOLLOW_POLICY_H_
#define RANGEFS_INGEST_FOLLOW_POLICY_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "ingest/ingest_writer.h"
#include "namespace/storage_policy.h"

namespace rangefs {
namespace ingest {

// Applies the goal of the policy `path` is under to `o` (replicas=N: N
// replicas, no erasure code; ec=K+M: ec_data K, ec_parity M, `replicas`
// left for files under ec_min_rows). Returns the policy's directory, or ""
// when no policy's goal applies (o unchanged).
std::string FollowPolicy(const ns::PolicyTable& policies,
                         absl::string_view path, uint64_t size, absl::Time now,
                         IngestOptions& o);

}  // namespace ingest
}  // namespace rangefs

#endif  // RANGEFS_INGEST_FOLLOW_POLICY_H_
