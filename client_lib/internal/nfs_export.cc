#include "client_lib/internal/nfs_export.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "namespace/nfs_export.h"

namespace rangefs {
namespace client_internal {

absl::StatusOr<NfsExport> ParseNfsExport(absl::string_view node,
                                         absl::string_view url,
                                         absl::string_view version) {
  absl::Status bad = ns::ValidateNfsVersion(version.empty() ? "4" : version);
  absl::StatusOr<ns::NfsUrl> u = ns::ParseNfsUrl(url);
  if (bad.ok() && !u.ok()) bad = u.status();
  if (!bad.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", node, ": NFS export in its record: ", bad.message()));
  }
  NfsExport e;
  e.host = u->host;
  e.port = u->port;
  e.path = u->export_path;
  e.mount_port = u->mount_port;
  e.version = version == "3" ? 3 : 4;
  return e;
}

std::string NfsExport::LibnfsUrl() const {
  std::string url = absl::StrCat("nfs://", host, path, "?version=", version);
  if (port != 0) absl::StrAppend(&url, "&nfsport=", port);
  if (mount_port != 0) absl::StrAppend(&url, "&mountport=", mount_port);
  return url;
}

std::string NfsExport::Describe() const {
  return absl::StrCat("nfs://", host, port != 0 ? absl::StrCat(":", port) : "",
                      path, " (v", version, ")");
}

}  // namespace client_internal
}  // namespace rangefs
