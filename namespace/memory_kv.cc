#include "namespace/memory_kv.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace ns {

namespace {

bool InRange(const std::string& k, absl::string_view key,
             absl::string_view range_end) {
  if (range_end.empty()) return k == key;
  if (k < key) return false;
  if (range_end.size() == 1 && range_end[0] == '\0') return true;
  return k < range_end;
}

}  // namespace

struct MemoryKv::Watcher {
  std::string key;
  std::string range_end;
  KvWatchCallback callback;
  std::atomic<int64_t> last_revision{0};
  std::atomic<bool> stopped{false};
};

class MemoryKv::WatchHandle : public KvWatch {
 public:
  WatchHandle(MemoryKv* kv, std::shared_ptr<Watcher> w)
      : kv_(kv), w_(std::move(w)) {}
  ~WatchHandle() override { kv_->Unregister(w_.get()); }
  int64_t last_revision() const override { return w_->last_revision.load(); }
  bool connected() const override { return kv_->available(); }

 private:
  MemoryKv* kv_;
  std::shared_ptr<Watcher> w_;
};

MemoryKv::~MemoryKv() = default;

void MemoryKv::SetAvailable(bool available) {
  absl::MutexLock l(&mu_);
  available_ = available;
}

bool MemoryKv::available() {
  absl::MutexLock l(&mu_);
  return available_;
}

int MemoryKv::open_watches() {
  absl::MutexLock l(&mu_);
  int n = 0;
  for (const auto& w : watchers_) n += w->stopped.load() ? 0 : 1;
  return n;
}

int64_t MemoryKv::revision() {
  absl::MutexLock l(&mu_);
  return revision_;
}

absl::Status MemoryKv::CheckRevision(int64_t revision) const {
  if (!available_) return absl::UnavailableError("memory kv: unavailable");
  if (revision > 0 && revision < compact_revision_) {
    return absl::OutOfRangeError(absl::StrCat(
        "memory kv: required revision ", revision,
        " has been compacted (compacted at ", compact_revision_, ")"));
  }
  if (revision > revision_) {
    return absl::OutOfRangeError(absl::StrCat(
        "memory kv: required revision ", revision, " is a future revision"));
  }
  return absl::OkStatus();
}

const MemoryKv::Version* MemoryKv::At(const std::string& key,
                                      int64_t revision) const {
  auto it = history_.find(key);
  if (it == history_.end()) return nullptr;
  const Version* found = nullptr;
  for (const Version& v : it->second) {
    if (revision > 0 && v.mod_revision > revision) break;
    found = &v;
  }
  if (found == nullptr || found->deleted) return nullptr;
  return found;
}

KvRange MemoryKv::RangeLocked(absl::string_view key,
                              absl::string_view range_end, int64_t limit,
                              int64_t revision) const {
  KvRange out;
  out.revision = revision_;
  auto emit = [&](const std::string& k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Version* v = At(k, revision);
    if (v == nullptr) return true;
    if (limit > 0 && static_cast<int64_t>(out.kvs.size()) == limit) {
      out.more = true;
      return false;
    }
    out.kvs.push_back(KvEntry{k, v->value, v->create_revision, v->mod_revision,
                              v->version, 0});
    return true;
  };
  if (range_end.empty()) {
    emit(std::string(key));
    return out;
  }
  for (auto it = history_.lower_bound(std::string(key));
       it != history_.end() && InRange(it->first, key, range_end); ++it) {
    if (!emit(it->first)) break;
  }
  return out;
}

absl::StatusOr<KvRange> MemoryKv::Range(absl::string_view key,
                                        absl::string_view range_end,
                                        int64_t limit, int64_t revision) {
  absl::MutexLock l(&mu_);
  absl::Status s = CheckRevision(revision);
  if (!s.ok()) return s;
  return RangeLocked(key, range_end, limit, revision);
}

namespace {

// etcd's compare of one key's state (all zero for a missing key).
bool CompareKey(const etcdserverpb::Compare& c, bool exists, int64_t version,
                int64_t create_revision, int64_t mod_revision,
                const std::string& value) {
  int cmp = 0;
  auto three_way = [](auto a, auto b) { return a < b ? -1 : (a > b ? 1 : 0); };
  switch (c.target()) {
    case etcdserverpb::Compare::VERSION:
      cmp = three_way(version, c.version());
      break;
    case etcdserverpb::Compare::CREATE:
      cmp = three_way(create_revision, c.create_revision());
      break;
    case etcdserverpb::Compare::MOD:
      cmp = three_way(mod_revision, c.mod_revision());
      break;
    case etcdserverpb::Compare::VALUE:
      if (!exists) return false;  // etcd: a missing key fails.
      cmp = three_way(value, c.value());
      break;
    default:
      return false;
  }
  switch (c.result()) {
    case etcdserverpb::Compare::EQUAL:
      return cmp == 0;
    case etcdserverpb::Compare::NOT_EQUAL:
      return cmp != 0;
    case etcdserverpb::Compare::GREATER:
      return cmp > 0;
    case etcdserverpb::Compare::LESS:
      return cmp < 0;
    default:
      return false;
  }
}

}  // namespace

bool MemoryKv::CompareLocked(const etcdserverpb::Compare& c) const {
  if (c.range_end().empty()) {
    const Version* v = At(c.key(), 0);
    if (v == nullptr) return CompareKey(c, false, 0, 0, 0, "");
    return CompareKey(c, true, v->version, v->create_revision, v->mod_revision,
                      v->value);
  }
  // etcd: every key in [key, range_end) must pass; an empty range compares
  // as one missing key.
  const KvRange r = RangeLocked(c.key(), c.range_end(), 0, 0);
  if (r.kvs.empty()) return CompareKey(c, false, 0, 0, 0, "");
  for (const KvEntry& e : r.kvs) {
    if (!CompareKey(c, true, e.version, e.create_revision, e.mod_revision,
                    e.value)) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<etcdserverpb::TxnResponse> MemoryKv::Txn(
    const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse resp;
  std::vector<KvEvent> events;
  std::vector<std::shared_ptr<Watcher>> watchers;
  int64_t rev;
  {
    absl::MutexLock l(&mu_);
    if (!available_) return absl::UnavailableError("memory kv: unavailable");
    if (request.compare_size() > 128 || request.success_size() > 128 ||
        request.failure_size() > 128) {
      return absl::InvalidArgumentError(
          "memory kv: too many operations in txn request (max 128)");
    }
    bool ok = true;
    for (const auto& c : request.compare()) {
      ok = ok && CompareLocked(c);
    }
    resp.set_succeeded(ok);
    const auto& ops = ok ? request.success() : request.failure();
    bool writes = false;
    for (const auto& op : ops) {
      writes = writes || op.has_request_put() || op.has_request_delete_range();
      if (op.has_request_txn()) {
        return absl::UnimplementedError("memory kv: nested txn");
      }
    }
    const int64_t new_rev = writes ? revision_ + 1 : revision_;
    bool wrote = false;
    for (const auto& op : ops) {
      etcdserverpb::ResponseOp* r = resp.add_responses();
      if (op.has_request_range()) {
        const auto& rr = op.request_range();
        // Reads inside a txn see the writes before them.
        int64_t saved = revision_;
        revision_ = new_rev;
        KvRange range = RangeLocked(rr.key(), rr.range_end(), rr.limit(), 0);
        revision_ = saved;
        auto* out = r->mutable_response_range();
        for (const KvEntry& e : range.kvs) {
          auto* kv = out->add_kvs();
          kv->set_key(e.key);
          kv->set_value(e.value);
          kv->set_create_revision(e.create_revision);
          kv->set_mod_revision(e.mod_revision);
          kv->set_version(e.version);
        }
        out->set_more(range.more);
        out->set_count(static_cast<int64_t>(range.kvs.size()));
      } else if (op.has_request_put()) {
        const auto& p = op.request_put();
        auto& h = history_[p.key()];
        const Version* cur = At(p.key(), 0);
        Version v;
        v.mod_revision = new_rev;
        v.create_revision = cur ? cur->create_revision : new_rev;
        v.version = cur ? cur->version + 1 : 1;
        v.value = p.value();
        h.push_back(v);
        events.push_back(
            KvEvent{false, KvEntry{p.key(), p.value(), v.create_revision,
                                   new_rev, v.version, 0}});
        r->mutable_response_put();
        wrote = true;
      } else if (op.has_request_delete_range()) {
        const auto& d = op.request_delete_range();
        std::vector<std::string> keys;
        if (d.range_end().empty()) {
          keys.push_back(d.key());
        } else {
          for (auto it = history_.lower_bound(d.key());
               it != history_.end() &&
               InRange(it->first, d.key(), d.range_end());
               ++it) {
            keys.push_back(it->first);
          }
        }
        int64_t deleted = 0;
        for (const std::string& k : keys) {
          if (At(k, 0) == nullptr) continue;
          Version v;
          v.mod_revision = new_rev;
          v.deleted = true;
          history_[k].push_back(v);
          KvEvent ev;
          ev.deleted = true;
          ev.kv.key = k;
          ev.kv.mod_revision = new_rev;
          events.push_back(ev);
          ++deleted;
          wrote = true;
        }
        r->mutable_response_delete_range()->set_deleted(deleted);
      }
    }
    if (wrote) revision_ = new_rev;
    rev = revision_;
    resp.mutable_header()->set_revision(rev);
    if (!events.empty()) watchers = watchers_;
  }
  if (!events.empty()) {
    absl::MutexLock d(&delivery_mu_);
    for (const auto& w : watchers) {
      if (w->stopped.load()) continue;
      KvWatchUpdate u;
      u.revision = rev;
      for (const KvEvent& e : events) {
        if (InRange(e.kv.key, w->key, w->range_end)) u.events.push_back(e);
      }
      if (u.events.empty()) continue;
      w->last_revision.store(rev);
      w->callback(u);
    }
  }
  return resp;
}

absl::StatusOr<std::unique_ptr<KvWatch>> MemoryKv::Watch(
    absl::string_view key, absl::string_view range_end, int64_t start_revision,
    KvWatchCallback callback) {
  auto w = std::make_shared<Watcher>();
  w->key = std::string(key);
  w->range_end = std::string(range_end);
  w->callback = std::move(callback);
  KvWatchUpdate replay;
  {
    absl::MutexLock l(&mu_);
    if (!available_) return absl::UnavailableError("memory kv: unavailable");
    if (start_revision > 0 && start_revision < compact_revision_) {
      replay.compacted = true;
      replay.compact_revision = compact_revision_;
    } else if (start_revision > 0) {
      for (const auto& [k, versions] : history_) {
        if (!InRange(k, w->key, w->range_end)) continue;
        for (const Version& v : versions) {
          if (v.mod_revision < start_revision) continue;
          KvEvent e;
          e.deleted = v.deleted;
          e.kv = KvEntry{k,         v.value, v.create_revision, v.mod_revision,
                         v.version, 0};
          replay.events.push_back(e);
        }
      }
      std::stable_sort(replay.events.begin(), replay.events.end(),
                       [](const KvEvent& a, const KvEvent& b) {
                         return a.kv.mod_revision < b.kv.mod_revision;
                       });
    }
    replay.revision = revision_;
    if (!replay.compacted) watchers_.push_back(w);
  }
  if (replay.compacted || !replay.events.empty()) {
    absl::MutexLock d(&delivery_mu_);
    w->last_revision.store(replay.revision);
    w->callback(replay);
  }
  return std::unique_ptr<KvWatch>(new WatchHandle(this, w));
}

void MemoryKv::Unregister(Watcher* w) {
  w->stopped.store(true);
  absl::MutexLock d(&delivery_mu_);  // Wait out an in-flight delivery.
  absl::MutexLock l(&mu_);
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(),
                                 [w](const std::shared_ptr<Watcher>& p) {
                                   return p.get() == w;
                                 }),
                  watchers_.end());
}

void MemoryKv::CancelWatchesCompacted() {
  std::vector<std::shared_ptr<Watcher>> watchers;
  KvWatchUpdate u;
  {
    absl::MutexLock l(&mu_);
    watchers.swap(watchers_);
    u.compacted = true;
    u.compact_revision = compact_revision_;
    u.revision = revision_;
  }
  absl::MutexLock d(&delivery_mu_);
  for (const auto& w : watchers) {
    if (w->stopped.load()) continue;
    w->callback(u);
  }
}

absl::Status MemoryKv::Compact(int64_t revision) {
  absl::MutexLock l(&mu_);
  if (revision > revision_) {
    return absl::OutOfRangeError("memory kv: compact to a future revision");
  }
  if (revision <= compact_revision_) {
    return absl::OutOfRangeError("memory kv: revision already compacted");
  }
  compact_revision_ = revision;
  for (auto& [k, versions] : history_) {
    // Keep the newest version at or below `revision` plus everything after.
    size_t keep = 0;
    for (size_t i = 0; i < versions.size(); ++i) {
      if (versions[i].mod_revision <= revision) keep = i;
    }
    versions.erase(versions.begin(), versions.begin() + keep);
  }
  return absl::OkStatus();
}

}  // namespace ns
}  // namespace rangefs
