// File: write_access.h
//
// Who may change an agent's export (WriteObject, including overwrites,
// CopyObject, RebuildEcColumn and DeleteObject). Under mTLS every client holds a certificate
// from the cluster CA; only those whose identity is on the agent's writer list
// (rangefs-node --writers=CN,...) may change the export, the others read.
// Without client certificates there are no identities, and the agent's
// start-up policy (transport_security.h) has already limited who can
// connect: loopback only, or anyone with --insecure.
//
//   WriteAccess access({.check_identity = true, .writers = {"rangefs-admin"}});
//   RANGEFS_RETURN_IF_ERROR(access.Check(*context, "WriteObject data/x"));
//
// A certificate's identities are its subject CN and its subject
// alternative names, as gRPC reports them; a writer entry matches one of
// them exactly (case-sensitive). Thread-safe (immutable after construction).
#ifndef RANGEFS_STORAGE_NODE_WRITE_ACCESS_H_
#define RANGEFS_STORAGE_NODE_WRITE_ACCESS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"

namespace rangefs {
namespace node {

struct WriteAccessOptions {
  // false: any caller may write (no client certificates to check).
  bool check_identity = false;
  // Identities (certificate CN or SAN) allowed to write when
  // check_identity is set. Empty: nobody may write.
  std::vector<std::string> writers;
};

// The subject CN and SANs of an authenticated TLS peer; empty for a
// plaintext peer or one without a verified certificate.
std::vector<std::string> PeerIdentities(const grpc::AuthContext& auth);

class WriteAccess {
 public:
  explicit WriteAccess(WriteAccessOptions options)
      : options_(std::move(options)) {}

  // OK if a peer with `identities` may do `what` (e.g. "WriteObject a/b").
  // PERMISSION_DENIED naming `what`, the peer's identities (or "no client
  // certificate") and the --writers flag to change otherwise.
  absl::Status CheckIdentities(absl::Span<const std::string> identities,
                               absl::string_view what) const;
  // CheckIdentities with the identities of the call's peer.
  absl::Status Check(const grpc::ServerContext& context,
                     absl::string_view what) const;

  const WriteAccessOptions& options() const { return options_; }

 private:
  const WriteAccessOptions options_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_WRITE_ACCESS_H_
