// File: nfs_export.h
//
// A storage node's NFS export as published in its live record
// (v1::NfsExport: "nfs://host[:port]/export[?mountport=P]" and a protocol
// version "3", "4" (v4.0) or "4.1"): the one parser and validator, used by the
// agent for its --nfs_export flag, by the record gate on every read, and by
// clients that connect to the export. Pure functions; thread-safe.
//
//   absl::StatusOr<NfsUrl> u = ParseNfsUrl("nfs://10.0.0.7:2049/srv/sn-07");
//   // u->host "10.0.0.7", u->port 2049, u->export_path "/srv/sn-07"
#ifndef RANGEFS_NAMESPACE_NFS_EXPORT_H_
#define RANGEFS_NAMESPACE_NFS_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

inline constexpr int kDefaultNfsPort = 2049;
inline constexpr size_t kMaxNfsUrlBytes = 1024;

// The parts of an NFS export URL.
struct NfsUrl {
  std::string host;  // "10.0.0.7", "node7.example", "[fd00::7]"
  int port = kDefaultNfsPort;
  std::string export_path;  // absolute, normalized ("/srv/sn-07")
  int mount_port = 0;       // v3 MOUNT port; 0: ask the server's rpcbind
};

// Parses "nfs://host[:port]/export[?mountport=P]". INVALID_ARGUMENT, naming
// the rule, for anything else: another scheme, an empty or odd host, a port
// outside 1..65535, a relative or unnormalized export path ("//", ".",
// "..", trailing "/" other than the root), control characters, spaces,
// '%' or '#', an unknown query parameter, more than kMaxNfsUrlBytes.
absl::StatusOr<NfsUrl> ParseNfsUrl(absl::string_view url);

// OK for "3", "4" (NFSv4.0) and "4.1"; INVALID_ARGUMENT otherwise.
// Debian's libnfs 4.0 speaks v3 and v4.0 only (a 4.1-only server refuses
// its SETCLIENTID with NFS4ERR_MINOR_VERS_MISMATCH): rangefs's ganesha
// config serves v4.0 and v4.1 together.
absl::Status ValidateNfsVersion(absl::string_view version);

// Both of the above on a published export. INVALID_ARGUMENT names the field.
absl::Status ValidateNfsExport(const v1::NfsExport& e);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_NFS_EXPORT_H_
