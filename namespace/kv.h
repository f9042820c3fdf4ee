// File: kv.h
//
// The slice of etcd that the namespace store needs: versioned reads,
// transactions (etcd's own TxnRequest/TxnResponse messages as the language)
// and watches. Two implementations: EtcdKv (namespace/etcd_kv.h, the real
// thing) and MemoryKv (namespace/memory_kv.h, a single-process fake with
// etcd's revision semantics, for unit tests only).
#ifndef RANGEFS_NAMESPACE_KV_H_
#define RANGEFS_NAMESPACE_KV_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "namespace/etcd/key_range.h"
#include "proto/etcd/rpc.pb.h"

namespace rangefs {
namespace ns {

struct KvEntry {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct KvRange {
  std::vector<KvEntry> kvs;
  int64_t revision = 0;  // store revision the read was served at
  bool more = false;     // `limit` cut the result
};

struct KvEvent {
  bool deleted = false;
  KvEntry kv;  // for a delete: key and mod_revision only
};

struct KvWatchUpdate {
  std::vector<KvEvent> events;
  int64_t revision = 0;
  // The start revision was compacted: the watch stopped; re-list, re-watch.
  bool compacted = false;
  int64_t compact_revision = 0;
};

using KvWatchCallback = std::function<void(const KvWatchUpdate&)>;

// Stops the watch when destroyed (joins any thread it owns).
class KvWatch {
 public:
  virtual ~KvWatch() = default;
  // Highest revision delivered so far.
  virtual int64_t last_revision() const = 0;
  // False while the watch cannot reach the store (it keeps retrying and
  // resumes without losing events) or after it stopped on compaction.
  virtual bool connected() const = 0;
};

// Returns the etcd range end that covers every key starting with `prefix`
// (namespace/etcd/key_range.h, the one implementation in the tree).
using etcd::PrefixRangeEnd;

// Keys per Range for the next page of a big paged listing, given the page
// just read (0 keys: the first page): about 4 MiB of values per page,
// between 1,000 and 10,000 keys. Few pages matter: etcd 3.4 walks every
// key from a page's start to the range's end to count them, so each page
// costs as much as the rest of the listing in index walks.
int64_t NextPageSize(const KvRange& previous);

// Thread-safe.
class KvBackend {
 public:
  virtual ~KvBackend() = default;
  // Reads `key` (range_end empty) or [key, range_end), sorted by key, at
  // `revision` (0 = latest), at most `limit` keys (0 = all).
  // OUT_OF_RANGE if `revision` is compacted or in the future;
  // UNAVAILABLE / DEADLINE_EXCEEDED when the store cannot be reached.
  virtual absl::StatusOr<KvRange> Range(absl::string_view key,
                                        absl::string_view range_end,
                                        int64_t limit, int64_t revision) = 0;
  // Runs one etcd transaction. Compares and ops follow etcd semantics.
  virtual absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request) = 0;
  // Watches [key, range_end) from `start_revision` (0 = now). `callback`
  // runs on a thread owned by the backend, in revision order; it must not
  // destroy the watch.
  virtual absl::StatusOr<std::unique_ptr<KvWatch>> Watch(
      absl::string_view key, absl::string_view range_end,
      int64_t start_revision, KvWatchCallback callback) = 0;
};

// Receives one page of a paged read (ForEachRangePage): its keys, in key
// order, and the revision every page is read at. It may move the values out
// of `page`. A non-OK status stops the walk and is returned as is.
using KvPageCallback =
    std::function<absl::Status(std::vector<KvEntry>& page, int64_t revision)>;

// Reads [begin, end) page by page at one revision and passes each non-empty
// page to `on_page`, in key order. `revision` 0 reads the latest: the first
// page's revision then pins the rest, so the pages together are one
// consistent snapshot. `page_size` keys per Range (1..10,000), or 0: sized
// by NextPageSize. Returns the revision read at (also when the range is
// empty). Errors: INVALID_ARGUMENT for a bad page_size; the backend's
// errors (OUT_OF_RANGE for a compacted or future revision) and those of
// `on_page`, as they are. This is the one paging loop over etcd in the tree.
absl::StatusOr<int64_t> ForEachRangePage(KvBackend& kv, absl::string_view begin,
                                         absl::string_view end,
                                         int64_t revision, int64_t page_size,
                                         const KvPageCallback& on_page);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_KV_H_
