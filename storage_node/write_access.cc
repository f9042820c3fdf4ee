#include "storage_node/write_access.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"

namespace rangefs {
namespace node {

std::vector<std::string> PeerIdentities(const grpc::AuthContext& auth) {
  std::vector<std::string> out;
  if (!auth.IsPeerAuthenticated()) return out;
  for (const char* property :
       {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& v : auth.FindPropertyValues(property)) {
      std::string id(v.data(), v.size());
      if (!id.empty() && std::find(out.begin(), out.end(), id) == out.end()) {
        out.push_back(std::move(id));
      }
    }
  }
  return out;
}

absl::Status WriteAccess::CheckIdentities(
    absl::Span<const std::string> identities, absl::string_view what) const {
  if (!options_.check_identity) return absl::OkStatus();
  for (const std::string& id : identities) {
    if (std::find(options_.writers.begin(), options_.writers.end(), id) !=
        options_.writers.end()) {
      return absl::OkStatus();
    }
  }
  const std::string peer =
      identities.empty()
          ? std::string("a peer without a client certificate")
          : absl::StrCat("certificate \"", absl::StrJoin(identities, "\", \""),
                         "\"");
  const std::string writers =
      options_.writers.empty()
          ? std::string("this agent has no writers")
          : absl::StrCat("its writers are ",
                         absl::StrJoin(options_.writers, ","));
  return absl::PermissionDeniedError(absl::StrCat(
      what, " refused: ", peer,
      " may read but not change this agent's export (", writers,
      "); use a writer's certificate, or add the identity to the "
      "agent's --writers (agent_writers in rangefs.conf, WRITERS in "
      "the node env file)"));
}

absl::Status WriteAccess::Check(const grpc::ServerContext& context,
                                absl::string_view what) const {
  if (!options_.check_identity) return absl::OkStatus();
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  std::vector<std::string> ids;
  if (auth != nullptr) ids = PeerIdentities(*auth);
  return CheckIdentities(ids, what);
}

}  // namespace node
}  // namespace rangefs
