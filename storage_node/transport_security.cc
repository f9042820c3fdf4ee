#include "storage_node/transport_security.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage_node/same_host.h"

namespace rangefs {
namespace node {
namespace {

// What every refusal tells the operator to do.
constexpr char kHowToSecure[] =
    "serve mTLS (--tls_cert, --tls_key and --tls_client_ca = the cluster "
    "CA, with --writers=CN,... naming the certificates allowed to write; "
    "certificates from deploy/etcd/make-certs.sh --agents=...), listen on a "
    "loopback address (127.0.0.1), or pass --insecure to accept that anyone "
    "who can reach the port may read, write, overwrite and delete objects "
    "(deploy/README.md, \"Agent security\")";

// The host the data port would bind, or "" when it is off.
absl::StatusOr<std::string> DataPortHost(const ListenerConfig& c,
                                         const std::string& listen_host) {
  if (c.tls.enabled() || c.data_listen.empty() || c.data_listen == "off") {
    return std::string();  // The agent runs no (plaintext) data port.
  }
  if (c.data_listen == "auto") return listen_host;
  std::string host;
  int port = 0;
  absl::Status s = SplitHostPort(c.data_listen, &host, &port);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_listen: ", s.message()));
  }
  return host;
}

}  // namespace

absl::string_view TransportSecurityName(TransportSecurity s) {
  switch (s) {
    case TransportSecurity::kPlaintextLoopback:
      return "plaintext-loopback";
    case TransportSecurity::kTlsLoopback:
      return "tls-loopback";
    case TransportSecurity::kMtls:
      return "mtls";
    case TransportSecurity::kInsecure:
      return "insecure";
  }
  return "unknown";
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string h(host);
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return IsLoopbackAddress(v4);
  in6_addr v6;
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IsLoopbackAddress(v6);
  return false;  // 0.0.0.0 and :: fall through above; names are not.
}

absl::Status SplitHostPort(absl::string_view hostport, std::string* host,
                           int* port) {
  size_t colon = hostport.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address \"", hostport, "\" is not host:port"));
  }
  int p = 0;
  if (!absl::SimpleAtoi(hostport.substr(colon + 1), &p) || p < 0 || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address \"", hostport, "\" has a bad port"));
  }
  *host = std::string(hostport.substr(0, colon));
  *port = p;
  return absl::OkStatus();
}

absl::StatusOr<TransportSecurity> DecideTransportSecurity(
    const ListenerConfig& c) {
  std::string listen_host;
  int port = 0;
  RANGEFS_RETURN_IF_ERROR(SplitHostPort(c.listen, &listen_host, &port));
  RANGEFS_ASSIGN_OR_RETURN(std::string data_host, DataPortHost(c, listen_host));
  const bool mtls = c.tls.enabled() && !c.tls.client_ca_file.empty();
  if (mtls) return TransportSecurity::kMtls;
  const bool listen_loopback = IsLoopbackHost(listen_host);
  const bool data_loopback = data_host.empty() || IsLoopbackHost(data_host);
  if (listen_loopback && data_loopback) {
    return c.tls.enabled() ? TransportSecurity::kTlsLoopback
                           : TransportSecurity::kPlaintextLoopback;
  }
  if (c.insecure) return TransportSecurity::kInsecure;
  if (!listen_loopback) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve on non-loopback address ", c.listen,
        c.tls.enabled()
            ? " with TLS but without --tls_client_ca: any client could "
              "connect and write"
            : " without TLS: anyone who can reach it could write, overwrite "
              "and delete objects",
        ". To fix: ", kHowToSecure));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to serve the plaintext data port on non-loopback address ",
      data_host, " (--data_listen=", c.data_listen,
      "). To fix: --data_listen=off or a loopback host, or ", kHowToSecure));
}

}  // namespace node
}  // namespace rangefs
