#include "namespace/etcd_kv.h"

#include <utility>

#include "base/status_macros.h"

namespace rangefs {
namespace ns {
namespace {

KvEntry ToEntry(const etcd::KeyValue& kv) {
  return KvEntry{kv.key,          kv.value,   kv.create_revision,
                 kv.mod_revision, kv.version, kv.lease};
}

// Moves key and value (a page of a big listing: no second copy).
KvEntry ToEntry(etcd::KeyValue&& kv) {
  return KvEntry{std::move(kv.key), std::move(kv.value), kv.create_revision,
                 kv.mod_revision,   kv.version,          kv.lease};
}

class EtcdWatch : public KvWatch {
 public:
  explicit EtcdWatch(std::unique_ptr<etcd::Watch> w) : w_(std::move(w)) {}
  int64_t last_revision() const override { return w_->last_revision(); }
  bool connected() const override { return w_->connected(); }

 private:
  std::unique_ptr<etcd::Watch> w_;
};

class EtcdKv : public KvBackend {
 public:
  explicit EtcdKv(etcd::EtcdClient* client) : client_(client) {}

  absl::StatusOr<KvRange> Range(absl::string_view key,
                                absl::string_view range_end, int64_t limit,
                                int64_t revision) override {
    etcd::RangeOptions o;
    o.range_end = std::string(range_end);
    o.limit = limit;
    o.revision = revision;
    RANGEFS_ASSIGN_OR_RETURN(etcd::RangeResult r, client_->Range(key, o));
    KvRange out;
    out.revision = r.revision;
    out.more = r.more;
    out.kvs.reserve(r.kvs.size());
    for (etcd::KeyValue& kv : r.kvs) out.kvs.push_back(ToEntry(std::move(kv)));
    return out;
  }

  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request) override {
    return client_->Txn(request);
  }

  absl::StatusOr<std::unique_ptr<KvWatch>> Watch(
      absl::string_view key, absl::string_view range_end,
      int64_t start_revision, KvWatchCallback callback) override {
    etcd::WatchOptions o;
    o.key = std::string(key);
    o.range_end = std::string(range_end);
    o.start_revision = start_revision;
    RANGEFS_ASSIGN_OR_RETURN(
        std::unique_ptr<etcd::Watch> w,
        client_->StartWatch(
            o, [cb = std::move(callback)](const etcd::WatchUpdate& u) {
              KvWatchUpdate out;
              out.revision = u.revision;
              out.compacted = u.compacted;
              out.compact_revision = u.compact_revision;
              out.events.reserve(u.events.size());
              for (const etcd::WatchEvent& e : u.events) {
                out.events.push_back(KvEvent{
                    e.type == etcd::WatchEvent::Type::kDelete, ToEntry(e.kv)});
              }
              cb(out);
            }));
    return std::unique_ptr<KvWatch>(new EtcdWatch(std::move(w)));
  }

 private:
  etcd::EtcdClient* const client_;
};

}  // namespace

std::unique_ptr<KvBackend> NewEtcdKv(etcd::EtcdClient* client) {
  return std::make_unique<EtcdKv>(client);
}

}  // namespace ns
}  // namespace rangefs
