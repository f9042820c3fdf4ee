#include "namespace/keys.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rangefs {
namespace ns {

Keys::Keys(absl::string_view cluster)
    : root_(absl::StrCat("/rangefs/v1/", cluster, "/")) {}

std::string Keys::Node(absl::string_view id) const {
  return absl::StrCat(root_, "nodes/", id);
}
std::string Keys::NodePrefix() const { return absl::StrCat(root_, "nodes/"); }
std::string Keys::Live(absl::string_view id) const {
  return absl::StrCat(root_, "live/", id);
}
std::string Keys::LivePrefix() const { return absl::StrCat(root_, "live/"); }
std::string Keys::FilesRoot() const { return absl::StrCat(root_, "files"); }
std::string Keys::File(absl::string_view path) const {
  return absl::StrCat(FilesRoot(), path);
}
std::string Keys::FileDirPrefix(absl::string_view dir) const {
  if (dir.empty() || dir == "/") return absl::StrCat(FilesRoot(), "/");
  if (absl::EndsWith(dir, "/")) return absl::StrCat(FilesRoot(), dir);
  return absl::StrCat(FilesRoot(), dir, "/");
}
std::string Keys::NextFileId() const {
  return absl::StrCat(root_, "meta/next_file_id");
}

std::string Keys::PolicyPrefix() const {
  return absl::StrCat(root_, "policies");
}
std::string Keys::Policy(absl::string_view dir) const {
  return absl::StrCat(PolicyPrefix(), dir);
}

std::string Keys::KeeperLeader() const {
  return absl::StrCat(root_, "keeper/leader");
}
std::string Keys::KeeperStatus() const {
  return absl::StrCat(root_, "keeper/status");
}
std::string Keys::KeeperTrashPrefix() const {
  return absl::StrCat(root_, "keeper/trash/");
}
std::string Keys::KeeperTrash(absl::string_view node_id,
                              absl::string_view object) const {
  return absl::StrCat(KeeperTrashPrefix(), node_id, "/", object);
}
std::string Keys::KeeperSuspectPrefix() const {
  return absl::StrCat(root_, "keeper/suspect/");
}
std::string Keys::KeeperSuspect(absl::string_view node_id,
                                absl::string_view object) const {
  return absl::StrCat(KeeperSuspectPrefix(), node_id, "/", object);
}

namespace {
bool StripPrefix(absl::string_view key, absl::string_view prefix,
                 std::string* rest) {
  if (!absl::StartsWith(key, prefix) || key.size() == prefix.size()) {
    return false;
  }
  *rest = std::string(key.substr(prefix.size()));
  return true;
}
}  // namespace

bool Keys::ParseNode(absl::string_view key, std::string* id) const {
  return StripPrefix(key, NodePrefix(), id);
}
bool Keys::ParseLive(absl::string_view key, std::string* id) const {
  return StripPrefix(key, LivePrefix(), id);
}
bool Keys::ParseFile(absl::string_view key, std::string* path) const {
  std::string root = FilesRoot();
  if (!absl::StartsWith(key, root)) return false;
  absl::string_view rest = key.substr(root.size());
  if (rest.size() < 2 || rest[0] != '/') return false;
  *path = std::string(rest);
  return true;
}

bool Keys::ParsePolicy(absl::string_view key, std::string* dir) const {
  std::string root = PolicyPrefix();
  if (!absl::StartsWith(key, root)) return false;
  absl::string_view rest = key.substr(root.size());
  if (rest.empty() || rest[0] != '/') return false;
  *dir = std::string(rest);
  return true;
}

bool Keys::ParseKeeperTrash(absl::string_view key, std::string* node_id,
                            std::string* object) const {
  return ParseNodeObject(key, KeeperTrashPrefix(), node_id, object);
}

bool Keys::ParseKeeperSuspect(absl::string_view key, std::string* node_id,
                              std::string* object) const {
  return ParseNodeObject(key, KeeperSuspectPrefix(), node_id, object);
}

bool Keys::ParseNodeObject(absl::string_view key, absl::string_view prefix,
                           std::string* node_id, std::string* object) {
  std::string rest;
  if (!StripPrefix(key, prefix, &rest)) return false;
  const size_t slash = rest.find('/');
  if (slash == 0 || slash == std::string::npos || slash + 1 == rest.size()) {
    return false;
  }
  *node_id = rest.substr(0, slash);
  *object = rest.substr(slash + 1);
  return true;
}

}  // namespace ns
}  // namespace rangefs
