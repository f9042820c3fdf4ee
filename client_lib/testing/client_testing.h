// File: testing/client_testing.h
//
// Opening a Client for a test or a benchmark with parts replaced: an
// in-memory namespace (ns::MemoryKv), a fault-injecting file system
// (testing/fault_fs.h), a fake clock.
//
//   ns::MemoryKv kv;
//   ClientTestHooks hooks;
//   hooks.kv = &kv;
//   RANGEFS_ASSIGN_OR_RETURN(auto client, OpenClientForTesting(o, hooks));
#ifndef RANGEFS_CLIENT_LIB_TESTING_CLIENT_TESTING_H_
#define RANGEFS_CLIENT_LIB_TESTING_CLIENT_TESTING_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client_lib/client.h"
#include "client_lib/internal/client_hooks.h"

namespace rangefs {

// See client_internal::ClientHooks: every pointer is optional, not owned,
// and must outlive the Client.
using ClientTestHooks = client_internal::ClientHooks;

inline absl::StatusOr<std::unique_ptr<Client>> OpenClientForTesting(
    const ClientOptions& options, const ClientTestHooks& hooks) {
  return client_internal::OpenClient(options, hooks);
}

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_TESTING_CLIENT_TESTING_H_
