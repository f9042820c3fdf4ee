// File: internal/nfs_export.h
//
// A storage node's NFS export as its live record names it
// ("nfs://host[:port]/export[?mountport=P]" and an NFS version "3", "4" or
// "4.1"), checked by the one rule (namespace/nfs_export.h: ns::ParseNfsUrl,
// ns::ValidateNfsVersion) and put in the form libnfs takes. The record is
// untrusted input: a bad one is INVALID_ARGUMENT naming the node and what
// is wrong, and the node is then read through its agent.
//
//   RANGEFS_ASSIGN_OR_RETURN(NfsExport e,
//                            ParseNfsExport("n1", "nfs://10.0.0.1/srv", "4"));
//   e.LibnfsUrl();  // "nfs://10.0.0.1/srv?version=4"
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_EXPORT_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace client_internal {

struct NfsExport {
  std::string host;    // a name, an IPv4 address or a bracketed IPv6 one
  int port = 0;        // the URL's (2049 if it names none)
  int mount_port = 0;  // v3's MOUNT service; 0: ask the server's rpcbind
  std::string path;    // absolute, no trailing '/' (except "/" itself)
  // 3 or 4 (libnfs 4.0 speaks NFSv4.0 only; a "4.1" export serves 4.0
  // too).
  int version = 4;

  // "nfs://host/path?version=V[&nfsport=P][&mountport=M]": libnfs's own
  // URL, whose options nfs_parse_url_dir applies to a context.
  std::string LibnfsUrl() const;
  // "nfs://host[:port]/path (v4)": for messages.
  std::string Describe() const;
};

// `version`: "3", "4" or "4.1" ("" means "4"). Errors name `node`.
absl::StatusOr<NfsExport> ParseNfsExport(absl::string_view node,
                                         absl::string_view url,
                                         absl::string_view version);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_EXPORT_H_
