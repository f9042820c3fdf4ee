// File: tls_client.h
//
// TLS material for NodeClient (the client half of the agent protocol): PEM
// files named in options are read once, at NodeClient::Connect. The
// agent's server side is in tls.h.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto creds, MakeNodeChannelCredentials(
//       {.ca_file = "ca.crt", .cert_file = "c.crt", .key_file = "c.key"}));
//
// Errors: INVALID_ARGUMENT naming the option and the file when a PEM file is
// missing, unreadable or empty, or when options are inconsistent (a key
// without a certificate, ...). Thread-safe (pure functions).
#ifndef RANGEFS_STORAGE_NODE_TLS_CLIENT_H_
#define RANGEFS_STORAGE_NODE_TLS_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/credentials.h"

namespace rangefs {
namespace node {

// TLS of a NodeClient channel. ca_file empty (and the rest empty):
// plaintext.
struct NodeClientTlsOptions {
  std::string ca_file;    // PEM CA bundle the agent's cert must chain to.
  std::string cert_file;  // PEM client certificate, for agents doing mTLS.
  std::string key_file;   // PEM key of cert_file; required with it.
  // Name checked against the agent certificate instead of the host of the
  // address (tests, or certificates naming a DNS alias). Empty: the host.
  std::string server_name_override;

  bool enabled() const {
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty();
  }
};

// Reads a whole PEM file. INVALID_ARGUMENT "<what> file '<path>' ..." if it
// cannot be read or is empty.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

// Insecure credentials when !options.enabled(), else TLS. A client
// certificate is sent when cert_file is set. Errors: see the file comment.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeNodeChannelCredentials(const NodeClientTlsOptions& options);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_TLS_CLIENT_H_
