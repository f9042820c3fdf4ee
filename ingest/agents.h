// File: agents.h
//
// The storage-node agents of a cluster as the admin tools see them: node
// records from etcd and one NodeClient per address, dialled on first use;
// plus a bounded ParallelFor and the stripe-column arithmetic that the
// ingest writer and fsck share.
//
//   Agents agents(std::move(nodes), tls);
//   absl::Status s = agents.Call("n1", [&](node::NodeClient& c) {
//     return c.DeleteObject("f/abc/e0", absl::Now() + absl::Seconds(30));
//   });
#ifndef RANGEFS_INGEST_AGENTS_H_
#define RANGEFS_INGEST_AGENTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace ingest {

// Runs fn(i) for i in [0, n) on at most `threads` threads (at least one),
// the calling thread among them; joins the others before returning.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn);

// Bytes of stripe column t: units t, t+W, t+2W, ... of a `size`-byte file
// striped in `unit`-byte units over `width` columns.
uint64_t ColumnBytes(uint64_t size, uint64_t unit, uint64_t width, uint64_t t);

// Node records (those that pass the record gate) and their agents.
// Thread-safe.
class Agents {
 public:
  Agents(std::vector<ns::NodeEntry> nodes, node::NodeClientTlsOptions tls);

  // The record of node `id`, or nullptr. Valid as long as this object.
  const v1::NodeRecord* Find(const std::string& id) const;

  // Calls fn with a client for each address of node `id` in turn, moving
  // on only when fn returns UNAVAILABLE. NOT_FOUND for an unknown node.
  absl::Status Call(const std::string& id,
                    const std::function<absl::Status(node::NodeClient&)>& fn);

 private:
  absl::StatusOr<node::NodeClient*> Client(const std::string& address);

  const node::NodeClientTlsOptions tls_;
  std::map<std::string, v1::NodeRecord> records_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<node::NodeClient>> clients_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace ingest
}  // namespace rangefs

#endif  // RANGEFS_INGEST_AGENTS_H_
