#include "storage_node/tls.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
MakeAgentServerCredentials(const AgentTlsOptions& options) {
  if (!options.enabled()) return grpc::InsecureServerCredentials();
  if (options.cert_file.empty() || options.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "agent TLS needs both a certificate and a key (tls_cert '",
        options.cert_file, "', tls_key '", options.key_file, "')"));
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  RANGEFS_ASSIGN_OR_RETURN(
      pair.cert_chain, ReadPemFile(options.cert_file, "agent TLS certificate"));
  RANGEFS_ASSIGN_OR_RETURN(pair.private_key,
                           ReadPemFile(options.key_file, "agent TLS key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.client_ca_file.empty()) {
    RANGEFS_ASSIGN_OR_RETURN(
        ssl.pem_root_certs,
        ReadPemFile(options.client_ca_file, "agent TLS client CA"));
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else {
    ssl.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace node
}  // namespace rangefs
