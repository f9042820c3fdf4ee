#include "client_lib/internal/agent_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace client_internal {
namespace {

node::NodeClientTlsOptions ToNodeTls(const ClientTlsOptions& t) {
  return {.ca_file = t.ca_file,
          .cert_file = t.cert_file,
          .key_file = t.key_file,
          .server_name_override = t.server_name_override};
}

}  // namespace

void AgentReader::SetAddress(const std::string& address) {
  absl::MutexLock l(&mu_);
  address_ = address;
  agent_.reset();  // reconnect on next use
}

absl::StatusOr<std::shared_ptr<node::NodeClient>> AgentReader::Connection() {
  absl::MutexLock l(&mu_);
  if (agent_ == nullptr) {
    if (address_.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", node_id_, " has no agent address"));
    }
    RANGEFS_ASSIGN_OR_RETURN(
        std::unique_ptr<node::NodeClient> c,
        node::NodeClient::Connect(address_, ToNodeTls(tls_)));
    agent_ = std::move(c);
  }
  return agent_;
}

absl::StatusOr<size_t> AgentReader::Read(const AgentRead& r) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<node::NodeClient> agent,
                           Connection());
  node::ReadCallOptions o;
  o.deadline = r.deadline;
  o.verify_on_server = r.verify;
  o.check_chunk_crc = true;
  o.canceller = r.canceller;
  RANGEFS_ASSIGN_OR_RETURN(size_t n,
                           agent->ReadRange(r.object, r.offset, r.out, o));
  if (n < r.out.size()) {
    return absl::DataLossError(absl::StrCat("short read of ", r.object,
                                            " from ", agent->address(), ": ", n,
                                            " of ", r.out.size(), " bytes"));
  }
  return n;
}

}  // namespace client_internal
}  // namespace rangefs
