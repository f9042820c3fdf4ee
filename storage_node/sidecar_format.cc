#include "storage_node/sidecar_format.h"

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace node {

std::string SidecarPathFor(absl::string_view object_path) {
  size_t slash = object_path.rfind('/');
  if (slash == absl::string_view::npos) {
    return absl::StrCat(".", object_path, kSidecarSuffix);
  }
  return absl::StrCat(object_path.substr(0, slash + 1), ".",
                      object_path.substr(slash + 1), kSidecarSuffix);
}

}  // namespace node
}  // namespace rangefs
