// File: tls.h
//
// TLS material for the agent's gRPC service and for NodeClient: PEM files
// named in options are read once, at Agent::Start / NodeClient::Connect.
//
//   // Server (rangefs-node --tls_cert --tls_key [--tls_client_ca]):
//   RANGEFS_ASSIGN_OR_RETURN(auto creds, MakeAgentServerCredentials(
//       {.cert_file = "node.crt", .key_file = "node.key",
//        .client_ca_file = "clients-ca.crt"}));   // set: mTLS
//   // Client:
//   RANGEFS_ASSIGN_OR_RETURN(auto creds, MakeNodeChannelCredentials(
//       {.ca_file = "ca.crt", .cert_file = "c.crt", .key_file = "c.key"}));
//
// Errors: INVALID_ARGUMENT naming the option and the file when a PEM file is
// missing, unreadable or empty, or when options are inconsistent (a key
// without a certificate, ...). Thread-safe (pure functions).
#ifndef RANGEFS_STORAGE_NODE_TLS_H_
#define RANGEFS_STORAGE_NODE_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace rangefs {
namespace node {

// TLS of the agent's server. All empty: plaintext.
struct AgentTlsOptions {
  std::string cert_file;  // PEM server certificate (chain); set: TLS on.
  std::string key_file;   // PEM private key of cert_file; required with it.
  // PEM CA bundle; set: every client must present a certificate signed by
  // it (mTLS). Requires cert_file.
  std::string client_ca_file;

  bool enabled() const {
    return !cert_file.empty() || !key_file.empty() || !client_ca_file.empty();
  }
};

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

// Insecure credentials when !options.enabled(), else TLS (and mTLS with a
// client CA). Errors: see the file comment.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
MakeAgentServerCredentials(const AgentTlsOptions& options);

// Insecure credentials when !options.enabled(), else TLS. A client
// certificate is sent when cert_file is set. Errors: see the file comment.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeNodeChannelCredentials(const NodeClientTlsOptions& options);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_TLS_H_
