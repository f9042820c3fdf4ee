// File: internal/client_hooks.h
//
// What a test or an embedding replaces in a Client: the namespace backend,
// the layout cache, the mount file system and the clock. Not part of the
// public API: tests reach it through client_lib/testing/client_testing.h.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_HOOKS_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_HOOKS_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "client_lib/client.h"
#include "client_lib/options.h"

namespace rangefs {

class Clock;
class ReadOnlyFs;
namespace ns {
class KvBackend;
class LayoutCache;
}  // namespace ns

namespace client_internal {

// Every pointer is optional and not owned; it must outlive the Client.
struct ClientHooks {
  // Replaces the etcd connection (etcd_endpoints is then not needed).
  ns::KvBackend* kv = nullptr;
  // Built over the same kv; replaces the client's own layout cache.
  ns::LayoutCache* layout_cache = nullptr;
  // nullptr = NewPosixFs(). If the Client's teardown left threads blocked in
  // it (teardown_timeout), it must stay usable until their calls return.
  ReadOnlyFs* fs = nullptr;
  // nullptr = Clock::Real(). With a non-real clock the engine re-reads it at
  // least every 2 ms of real time.
  Clock* clock = nullptr;
  // Called on the decoding thread before each erasure-coded decode's pass
  // (a test truncates an object the decode has mapped), with the call's
  // lock released when the decode writes the caller's buffer itself, held
  // otherwise: it must not read through the client.
  std::function<void()> before_ec_decode;
};

// Client::Open with hooks (Client::Open passes none).
absl::StatusOr<std::unique_ptr<Client>> OpenClient(const ClientOptions& options,
                                                   const ClientHooks& hooks);

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_CLIENT_HOOKS_H_
