// File: transport_security.h
//
// rangefs-node's start-up policy for its listeners: secure by default.
// An agent may serve plaintext (or TLS without client certificates) only on
// loopback addresses; anywhere else it needs mTLS (a server certificate and
// a client CA, so every client presents a certificate from the cluster CA),
// or the operator's explicit --insecure.
//
//   RANGEFS_ASSIGN_OR_RETURN(TransportSecurity sec, DecideTransportSecurity({
//       .listen = "0.0.0.0:7070", .data_listen = "auto", .tls = tls}));
//
// Loopback: 127.0.0.0/8, ::1 (also IPv4-mapped), "localhost". Everything
// else is not: 0.0.0.0, [::], any other IP, any other host name. The raw-TCP
// data port (plaintext; off whenever TLS is on) counts as a listener too.
// Thread-safe (pure functions).
#ifndef RANGEFS_STORAGE_NODE_TRANSPORT_SECURITY_H_
#define RANGEFS_STORAGE_NODE_TRANSPORT_SECURITY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage_node/tls.h"

namespace rangefs {
namespace node {

// How an agent's listeners are protected, as it publishes it in its live
// record (proto/layout.proto, LiveRecord.transport_security).
enum class TransportSecurity {
  kPlaintextLoopback,  // No TLS; loopback listeners only.
  kTlsLoopback,        // Server TLS without client certificates; loopback.
  kMtls,               // TLS + a client certificate from the client CA.
  kInsecure,           // Not mTLS on a non-loopback listener (--insecure).
};

// "plaintext-loopback", "tls-loopback", "mtls", "insecure".
absl::string_view TransportSecurityName(TransportSecurity s);

// True for a loopback host: 127.0.0.0/8, ::1, ::ffff:127.x.y.z (with or
// without brackets), "localhost" (any case).
bool IsLoopbackHost(absl::string_view host);

struct ListenerConfig {
  std::string listen;       // host:port of the gRPC service.
  std::string data_listen;  // "auto", "", "off" or host:port (agent.h).
  AgentTlsOptions tls;
  bool insecure = false;  // --insecure: allow non-loopback without mTLS.
};

// Splits "host:port" / "[v6]:port" (the brackets stay in `host`).
// INVALID_ARGUMENT if malformed or the port is outside [0, 65535].
absl::Status SplitHostPort(absl::string_view hostport, std::string* host,
                           int* port);

// The protection `config` gives. FAILED_PRECONDITION, saying what to do
// (mTLS flags, a loopback address, or --insecure), when a non-loopback
// listener is not under mTLS and `insecure` is false; INVALID_ARGUMENT for
// a listen or data_listen that is not host:port.
absl::StatusOr<TransportSecurity> DecideTransportSecurity(
    const ListenerConfig& config);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_TRANSPORT_SECURITY_H_
