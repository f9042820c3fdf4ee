// File: store.h
//
// NamespaceStore: the global namespace (nodes, live records, file layouts)
// with transactional updates. Every mutation is one etcd transaction guarded
// by a compare on the entry's mod_revision, so concurrent admins never lose
// an update: the loser gets ABORTED and re-reads.
//
//   auto store = NewKvStore(kv, {.cluster = "prod"});
//   RANGEFS_ASSIGN_OR_RETURN(FileEntry f, store->GetFile("/crawl/seg-1"));
//   f.layout.set_state(v1::READY);
//   absl::Status s = store->ReplaceLayout(f.path, f.layout, f.mod_revision);
//   if (absl::IsAborted(s)) { /* someone else won: re-read, redo */ }
//
// Every record read passes the record gate (record_gate.h): a bad record
// is DATA_LOSS for that record alone, and listings report it in place.
//
// Codes: NOT_FOUND (no such path/node), ALREADY_EXISTS, INVALID_ARGUMENT
// (bad path/layout/record, see layout.h), FAILED_PRECONDITION (unknown node,
// node still active on remove), ABORTED (lost a compare-and-swap),
// OUT_OF_RANGE (revision compacted or in the future), UNAVAILABLE /
// DEADLINE_EXCEEDED (etcd unreachable). Thread-safe.
#ifndef RANGEFS_NAMESPACE_STORE_H_
#define RANGEFS_NAMESPACE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/clock.h"
#include "namespace/keys.h"
#include "namespace/kv.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

// Listings report a record that failed the record gate (record_gate.h)
// as an entry whose `invalid` says why (naming the etcd key and the rule)
// and whose record is empty; every other field is as listed. Single-record
// reads (GetFile, GetNode) return that reason as DATA_LOSS instead.
struct FileEntry {
  std::string path;
  std::string invalid;  // empty: the layout passed the gate
  v1::FileLayout layout;
  int64_t mod_revision = 0;  // CAS token for ReplaceLayout/Rename/Delete
  int64_t create_revision = 0;
};

struct NodeEntry {
  std::string invalid;  // empty: valid; else record.id() is the key's id
  v1::NodeRecord record;
  int64_t mod_revision = 0;
};

struct LiveEntry {
  std::string invalid;  // empty: valid; else record.node_id() is the key's
  v1::LiveRecord record;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct ListFilesOptions {
  std::string dir = "/";     // every file below this directory
  std::string page_token;    // from a previous page; empty = first
  int64_t page_size = 1000;  // 1..10000
  int64_t revision = 0;      // 0 = latest; else pinned (page 2+ reuse it)
  bool keys_only = false;    // paths only, layouts left empty
};

struct ListFilesResult {
  std::vector<FileEntry> files;
  std::string next_page_token;  // empty = no more
  int64_t revision = 0;         // pass back to get a consistent listing
};

// A caller's own conditions for one write, checked in the same etcd
// transaction as the store's (e.g. rangefs-keeper's leader lease,
// keeper/leader_guard.h): the write happens only if they all hold too.
struct TxnGuard {
  std::vector<etcdserverpb::Compare> compares;  // At most 20.
  // Called when the transaction failed, before the store says why: the
  // response's first compares.size() failure responses are range reads of
  // each compare's key, in order. A non-OK status is the write's result;
  // OK: the store's own reason (NOT_FOUND, ABORTED, FAILED_PRECONDITION).
  // May be empty (the store's reason).
  std::function<absl::Status(const etcdserverpb::TxnResponse&)> on_failure;
};

struct StoreOptions {
  std::string cluster = std::string(kDefaultCluster);
  Clock* clock = nullptr;    // nullptr = Clock::Real(); not owned
  int max_cas_retries = 64;  // internal retries for counter/state updates
};

class NamespaceStore {
 public:
  virtual ~NamespaceStore() = default;

  // --- nodes (admin) ---
  virtual absl::Status AddNode(const v1::NodeRecord& node) = 0;
  virtual absl::StatusOr<NodeEntry> GetNode(absl::string_view id) = 0;
  virtual absl::StatusOr<std::vector<NodeEntry>> ListNodes() = 0;
  // Replaces a node record if its mod_revision still equals `expected`.
  virtual absl::Status UpdateNode(const v1::NodeRecord& node,
                                  int64_t expected_mod_revision) = 0;
  // Read-modify-write of the admin state (retried internally on conflict).
  virtual absl::Status SetNodeState(absl::string_view id,
                                    v1::AdminState state) = 0;
  // FAILED_PRECONDITION while the node is active (drain/disable first).
  virtual absl::Status RemoveNode(absl::string_view id) = 0;

  // --- live records (agents) ---
  // Writes the node's live record attached to `lease` (0 = no lease).
  virtual absl::Status PutLive(const v1::LiveRecord& live, int64_t lease) = 0;
  virtual absl::StatusOr<std::vector<LiveEntry>> ListLive() = 0;

  // --- files ---
  // Creates `path`. Assigns file_id (if 0) from a cluster-wide counter and
  // generation 1; sets created/modified times. Validates the layout and
  // that every referenced node exists (checked inside the transaction).
  // A file_id the counter is already past (ReserveFileIds) leaves the
  // counter alone, so such creates do not contend with each other.
  virtual absl::StatusOr<FileEntry> CreateFile(absl::string_view path,
                                               v1::FileLayout layout) = 0;
  // Moves the file id counter past `count` ids no one else will be given
  // and returns the first (bulk ingest: one counter update per block, not
  // one compare-and-swap per file). INVALID_ARGUMENT unless count is in
  // [1, 1<<20]; ABORTED if the counter stayed contended.
  virtual absl::StatusOr<uint64_t> ReserveFileIds(uint64_t count) = 0;
  // `revision` 0 = latest, else the layout as of that etcd revision.
  virtual absl::StatusOr<FileEntry> GetFile(absl::string_view path,
                                            int64_t revision = 0) = 0;
  // Replaces the layout if the file's mod_revision equals `expected`;
  // keeps file_id, created time and content_generation (the same bytes,
  // placed differently: copies added, moved or dropped), bumps generation.
  virtual absl::StatusOr<FileEntry> ReplaceLayout(
      absl::string_view path, v1::FileLayout layout,
      int64_t expected_mod_revision) = 0;
  // ReplaceLayout with `guard`'s compares in the same transaction; the
  // same checks (path, layout and every referenced node record read and
  // validated, nodes compared in the transaction) and results, or
  // guard.on_failure's status when the transaction failed.
  // INVALID_ARGUMENT for more than 20 guard compares.
  virtual absl::StatusOr<FileEntry> ReplaceLayoutIf(
      absl::string_view path, v1::FileLayout layout,
      int64_t expected_mod_revision, const TxnGuard& guard) = 0;
  // ReplaceLayout for new bytes at `path` (file put --overwrite): the same
  // checks, and content_generation becomes the new generation, so readers
  // holding the old layout see a change of content (namespace/content_id.h).
  virtual absl::StatusOr<FileEntry> OverwriteFile(
      absl::string_view path, v1::FileLayout layout,
      int64_t expected_mod_revision) = 0;
  // Moves `from` to `to` atomically. `expected_mod_revision` 0 = any.
  virtual absl::Status RenameFile(absl::string_view from, absl::string_view to,
                                  int64_t expected_mod_revision) = 0;
  // `expected_mod_revision` 0 = any.
  virtual absl::Status DeleteFile(absl::string_view path,
                                  int64_t expected_mod_revision) = 0;
  virtual absl::StatusOr<ListFilesResult> ListFiles(
      const ListFilesOptions& options) = 0;
  // Current etcd revision.
  virtual absl::StatusOr<int64_t> CurrentRevision() = 0;

  virtual const Keys& keys() const = 0;
  virtual KvBackend* kv() = 0;
};

// A NamespaceStore over any KvBackend (EtcdKv in production, MemoryKv in
// unit tests). `kv` is not owned and must outlive the store.
std::unique_ptr<NamespaceStore> NewKvStore(KvBackend* kv,
                                           const StoreOptions& options = {});

// Decodes and validates a stored layout (DecodeFileLayout): DATA_LOSS
// naming the key and the broken rule for a bad record.
absl::StatusOr<v1::FileLayout> ParseLayout(const KvEntry& kv);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_STORE_H_
