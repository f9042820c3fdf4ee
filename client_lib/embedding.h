// File: embedding.h
//
// For rangefs's own programs that already hold the namespace a Client
// needs (rangefs-mount keeps one etcd connection and one watch-fed layout
// cache for its directory tree and its reads). Jobs use Client::Open.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto client,
//       OpenClientSharingNamespace(options, kv.get(), cache.get()));
//
// `kv` and `cache` (built over `kv`) are not owned, must not be null and
// must outlive the Client. Codes as Client::Open.
#ifndef RANGEFS_CLIENT_LIB_EMBEDDING_H_
#define RANGEFS_CLIENT_LIB_EMBEDDING_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client_lib/client.h"
#include "client_lib/internal/client_hooks.h"

namespace rangefs {

inline absl::StatusOr<std::unique_ptr<Client>> OpenClientSharingNamespace(
    const ClientOptions& options, ns::KvBackend* kv, ns::LayoutCache* cache) {
  client_internal::ClientHooks hooks;
  hooks.kv = kv;
  hooks.layout_cache = cache;
  return client_internal::OpenClient(options, hooks);
}

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_EMBEDDING_H_
