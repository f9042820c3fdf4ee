// File: keys.h
//
// The only place that spells rangefs's etcd keys. Everything lives under a
// versioned, per-cluster prefix:
//
//   /rangefs/v1/<cluster>/nodes/<node_id>   NodeRecord  (rangefs-admin)
//   /rangefs/v1/<cluster>/live/<node_id>    LiveRecord  (agent, under lease)
//   /rangefs/v1/<cluster>/files<path>       FileLayout  (path starts with /)
//   /rangefs/v1/<cluster>/meta/next_file_id decimal counter
//   /rangefs/v1/<cluster>/keeper/leader     active keeper id (under lease)
//   /rangefs/v1/<cluster>/keeper/status     KeeperStatus (under lease)
//   /rangefs/v1/<cluster>/keeper/trash/<node_id>/<object>
//                                           TrashRecord (object awaiting
//                                           deletion, keeper/README.md)
//   /rangefs/v1/<cluster>/keeper/suspect/<node_id>/<object>
//                                           what `fsck` found wrong with a
//                                           replica (text); the keeper
//                                           repairs it and drops the key
//   /rangefs/v1/<cluster>/policies<dir>     StoragePolicyRecord (dir starts
//                                           with /; storage_policy.h)
#ifndef RANGEFS_NAMESPACE_KEYS_H_
#define RANGEFS_NAMESPACE_KEYS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rangefs {
namespace ns {

inline constexpr absl::string_view kDefaultCluster = "default";

// Thread-compatible value type.
class Keys {
 public:
  explicit Keys(absl::string_view cluster = kDefaultCluster);

  const std::string& root() const { return root_; }  // "/rangefs/v1/<c>/"
  std::string Node(absl::string_view id) const;
  std::string NodePrefix() const;
  std::string Live(absl::string_view id) const;
  std::string LivePrefix() const;
  // `path` is a normalized absolute path ("/crawl/seg-1").
  std::string File(absl::string_view path) const;
  // Prefix of all files under directory `dir` ("/" or "/crawl"); ends
  // with '/'.
  std::string FileDirPrefix(absl::string_view dir) const;
  std::string FilesRoot() const;  // ".../files"
  std::string NextFileId() const;
  // rangefs-keeper: its election key, and objects that left every layout
  // and wait for their grace period before deletion.
  std::string KeeperLeader() const;
  std::string KeeperStatus() const;
  std::string KeeperTrashPrefix() const;
  std::string KeeperTrash(absl::string_view node_id,
                          absl::string_view object) const;
  std::string KeeperSuspectPrefix() const;
  std::string KeeperSuspect(absl::string_view node_id,
                            absl::string_view object) const;

  // Storage policies: `dir` is a normalized absolute directory ("/" or
  // "/crawl"); the root's key is PolicyPrefix() + "/".
  std::string Policy(absl::string_view dir) const;
  std::string PolicyPrefix() const;  // ".../policies" (no trailing '/')

  // Inverse mappings; return false if `key` is not of that kind.
  bool ParseNode(absl::string_view key, std::string* id) const;
  bool ParseLive(absl::string_view key, std::string* id) const;
  bool ParseFile(absl::string_view key, std::string* path) const;
  // The directory of a policy key (starts with '/').
  bool ParsePolicy(absl::string_view key, std::string* dir) const;
  // Node id (up to the first '/') and object of a trash key.
  bool ParseKeeperTrash(absl::string_view key, std::string* node_id,
                        std::string* object) const;
  bool ParseKeeperSuspect(absl::string_view key, std::string* node_id,
                          std::string* object) const;

 private:
  // "<prefix><node_id>/<object>" -> node_id, object (both non-empty).
  static bool ParseNodeObject(absl::string_view key, absl::string_view prefix,
                              std::string* node_id, std::string* object);

  std::string root_;
};

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_KEYS_H_
