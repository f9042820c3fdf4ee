// File: internal/agent_reader.h
//
// AgentReader: reads a piece of an object from a storage node's agent over
// TCP (the data port or gRPC: storage_node/node_client.h), with each
// chunk's CRC32C checked as it arrives and, when verifying, the agent
// checking its sidecar. One per node; it keeps one connection to the
// node's current address and reconnects after the address changes. It
// knows nothing of threads, queues or calls: its callers bracket Read,
// which blocks until the agent answers, the deadline passes or the
// canceller fires. Thread-safe.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_AGENT_READER_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_AGENT_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client_lib/options.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace client_internal {

// One agent read: `out.size()` bytes of `object` at `offset`.
struct AgentRead {
  const std::string& object;
  uint64_t offset = 0;
  absl::Span<char> out;
  bool verify = false;                       // the agent checks its sidecar
  absl::Time deadline;                       // wall time
  node::CallCanceller* canceller = nullptr;  // may be null
};

class AgentReader {
 public:
  AgentReader(std::string node_id, ClientTlsOptions tls)
      : node_id_(std::move(node_id)), tls_(std::move(tls)) {}

  // The node's record was (re)read: later reads open a new connection to
  // `address` (empty: the node has none).
  void SetAddress(const std::string& address);
  // Reads r.out.size() bytes; a short answer is DATA_LOSS.
  absl::StatusOr<size_t> Read(const AgentRead& r);

 private:
  absl::StatusOr<std::shared_ptr<node::NodeClient>> Connection();

  const std::string node_id_;
  const ClientTlsOptions tls_;
  absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<node::NodeClient> agent_ ABSL_GUARDED_BY(mu_);
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_AGENT_READER_H_
