// File: memory_kv.h
//
// An in-memory KvBackend with etcd's revision semantics (one global
// revision, per-key create/mod revision and version, full history for
// reads at a past revision, compaction). For unit tests only: integration
// tests use a real etcd. Watch callbacks run synchronously on the thread
// that committed the write, after the store's lock is released.
// Thread-safe.
#ifndef RANGEFS_NAMESPACE_MEMORY_KV_H_
#define RANGEFS_NAMESPACE_MEMORY_KV_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "namespace/kv.h"

namespace rangefs {
namespace ns {

class MemoryKv : public KvBackend {
 public:
  MemoryKv() = default;
  ~MemoryKv() override;

  absl::StatusOr<KvRange> Range(absl::string_view key,
                                absl::string_view range_end, int64_t limit,
                                int64_t revision) override;
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request) override;
  absl::StatusOr<std::unique_ptr<KvWatch>> Watch(
      absl::string_view key, absl::string_view range_end,
      int64_t start_revision, KvWatchCallback callback) override;

  // Drops history before `revision`; later reads and watches below it get
  // OUT_OF_RANGE / compacted.
  absl::Status Compact(int64_t revision);
  // While unavailable, every call returns UNAVAILABLE (simulates etcd down).
  void SetAvailable(bool available);
  bool available();
  // Cancels every watch as etcd does for a watcher that fell behind a
  // compaction: each gets one update with compacted = true.
  void CancelWatchesCompacted();
  int64_t revision();
  // Watches registered and not cancelled or destroyed.
  int open_watches();

 private:
  struct Version {
    int64_t mod_revision = 0;
    int64_t create_revision = 0;
    int64_t version = 0;
    bool deleted = false;
    std::string value;
  };
  struct Watcher;
  class WatchHandle;

  // Latest live version of `key` at `revision`, or nullptr.
  const Version* At(const std::string& key, int64_t revision) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRevision(int64_t revision) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  KvRange RangeLocked(absl::string_view key, absl::string_view range_end,
                      int64_t limit, int64_t revision) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CompareLocked(const etcdserverpb::Compare& c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unregister(Watcher* w);

  absl::Mutex mu_;
  std::map<std::string, std::vector<Version>> history_ ABSL_GUARDED_BY(mu_);
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 1;  // etcd starts at 1
  int64_t compact_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool available_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  // Serializes watch delivery so callbacks see revision order.
  absl::Mutex delivery_mu_;
};

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_MEMORY_KV_H_
