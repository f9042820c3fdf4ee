#include "ingest/agents.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rangefs {
namespace ingest {

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  const size_t workers = std::min(n, static_cast<size_t>(std::max(1, threads)));
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  // The calling thread is one of the workers: a put of a small file (two
  // replica writes) starts one thread, not two.
  std::vector<std::thread> pool;
  pool.reserve(workers > 0 ? workers - 1 : 0);
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  if (workers > 0) work();
  for (std::thread& t : pool) t.join();
}

uint64_t ColumnBytes(uint64_t size, uint64_t unit, uint64_t width, uint64_t t) {
  uint64_t total = 0;
  for (uint64_t k = t; k * unit < size; k += width) {
    total += std::min(unit, size - k * unit);
  }
  return total;
}

Agents::Agents(std::vector<ns::NodeEntry> nodes, node::NodeClientTlsOptions tls)
    : tls_(std::move(tls)) {
  for (ns::NodeEntry& n : nodes) {
    if (n.invalid.empty()) records_[n.record.id()] = std::move(n.record);
  }
}

const v1::NodeRecord* Agents::Find(const std::string& id) const {
  auto it = records_.find(id);
  return it == records_.end() ? nullptr : &it->second;
}

absl::Status Agents::Call(
    const std::string& id,
    const std::function<absl::Status(node::NodeClient&)>& fn) {
  const v1::NodeRecord* rec = Find(id);
  if (rec == nullptr || rec->addresses().empty()) {
    return absl::NotFoundError(
        absl::StrCat("node ", id, " is not registered (or has no address)"));
  }
  absl::Status last;
  for (const std::string& address : rec->addresses()) {
    absl::StatusOr<node::NodeClient*> c = Client(address);
    if (!c.ok()) {
      last = c.status();
      continue;
    }
    last = fn(**c);
    if (!absl::IsUnavailable(last)) return last;
  }
  return last;
}

absl::StatusOr<node::NodeClient*> Agents::Client(const std::string& address) {
  absl::MutexLock l(&mu_);
  auto it = clients_.find(address);
  if (it != clients_.end()) return it->second.get();
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<node::NodeClient> c,
                           node::NodeClient::Connect(address, tls_));
  node::NodeClient* raw = c.get();
  clients_[address] = std::move(c);
  return raw;
}

}  // namespace ingest
}  // namespace rangefs
