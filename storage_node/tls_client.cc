#include "storage_node/tls_client.h"

#include <errno.h>
#include <string.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace node {

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", what, " file '", path,
                     "': ", err != 0 ? strerror(err) : "open failed"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", what, " file '", path, "'"));
  }
  std::string pem = ss.str();
  if (pem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " file '", path, "' is empty"));
  }
  return pem;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeNodeChannelCredentials(const NodeClientTlsOptions& options) {
  if (!options.enabled()) return grpc::InsecureChannelCredentials();
  if (options.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "node client TLS: a client certificate was given without ca_file "
        "(the CA that signed the agents' certificates)");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node client TLS needs both a client certificate and its key "
        "(cert_file '",
        options.cert_file, "', key_file '", options.key_file, "')"));
  }
  grpc::SslCredentialsOptions ssl;
  RANGEFS_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                           ReadPemFile(options.ca_file, "node client TLS CA"));
  if (!options.cert_file.empty()) {
    RANGEFS_ASSIGN_OR_RETURN(
        ssl.pem_cert_chain,
        ReadPemFile(options.cert_file, "node client TLS certificate"));
    RANGEFS_ASSIGN_OR_RETURN(
        ssl.pem_private_key,
        ReadPemFile(options.key_file, "node client TLS key"));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace node
}  // namespace rangefs
