// File: tls.h
//
// TLS material for the agent's gRPC service (the server side; NodeClient's
// side, NodeClientTlsOptions and MakeNodeChannelCredentials, is in
// tls_client.h, included here): PEM files named in options are read once,
// at Agent::Start / NodeClient::Connect.
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
#include "grpcpp/security/server_credentials.h"
#include "storage_node/tls_client.h"

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

// Insecure credentials when !options.enabled(), else TLS (and mTLS with a
// client CA). Errors: see the file comment.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
MakeAgentServerCredentials(const AgentTlsOptions& options);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_TLS_H_
