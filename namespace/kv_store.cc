// NamespaceStore over a KvBackend: each mutation is one etcd transaction.
#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "namespace/layout.h"
#include "namespace/record_gate.h"
#include "namespace/store.h"

namespace rangefs {
namespace ns {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

// Nodes compared for existence inside one CreateFile/ReplaceLayout txn;
// etcd allows 128 compares. Layouts over more nodes are checked by a read.
constexpr int kMaxNodeCompares = 100;
// TxnGuard compares a write may add (etcd allows 128 in all).
constexpr size_t kMaxGuardCompares = 20;

void AddCompare(TxnRequest* txn, const std::string& key,
                Compare::CompareTarget target, Compare::CompareResult result,
                int64_t value) {
  Compare* c = txn->add_compare();
  c->set_key(key);
  c->set_target(target);
  c->set_result(result);
  if (target == Compare::MOD) {
    c->set_mod_revision(value);
  } else {
    c->set_version(value);
  }
}

void AddPut(TxnRequest* txn, const std::string& key, const std::string& value,
            int64_t lease = 0) {
  auto* p = txn->add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value(value);
  p->set_lease(lease);
}

void AddDelete(TxnRequest* txn, const std::string& key) {
  txn->add_success()->mutable_request_delete_range()->set_key(key);
}

// On failure, read these keys to explain why.
void AddFailureGet(TxnRequest* txn, const std::string& key) {
  txn->add_failure()->mutable_request_range()->set_key(key);
}

bool ExistsInFailure(const TxnResponse& r, int index) {
  return index < r.responses_size() &&
         r.responses(index).response_range().kvs_size() > 0;
}

// On failure, read one key of [prefix, its end) to explain why.
void AddFailureGetOneUnder(TxnRequest* txn, const std::string& prefix) {
  auto* r = txn->add_failure()->mutable_request_range();
  r->set_key(prefix);
  r->set_range_end(PrefixRangeEnd(prefix));
  r->set_limit(1);
  r->set_keys_only(true);
}

int64_t ModInFailure(const TxnResponse& r, int index) {
  if (!ExistsInFailure(r, index)) return 0;
  return r.responses(index).response_range().kvs(0).mod_revision();
}

// The directories above `path`, outermost first ("/a/b/c": "/a", "/a/b").
std::vector<std::string> Ancestors(absl::string_view path) {
  std::vector<std::string> out;
  for (size_t i = path.find('/', 1); i != absl::string_view::npos;
       i = path.find('/', i + 1)) {
    out.emplace_back(path.substr(0, i));
  }
  return out;
}

// Files can be created at most this many components deep: each ancestor is
// one compare in the creating transaction (etcd allows 128; the nodes'
// compares take what is left, the rest of them checked by a read).
constexpr size_t kMaxCreateDepth = 64;
constexpr int kMaxCompares = 128;

absl::Status CheckCreateDepth(absl::string_view path) {
  const size_t depth = Ancestors(path).size() + 1;
  if (depth > kMaxCreateDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("path ", path, " is ", depth,
                     " components deep (files are created at most ",
                     kMaxCreateDepth, " deep)"));
  }
  return absl::OkStatus();
}

class KvStore : public NamespaceStore {
 public:
  KvStore(KvBackend* kv, const StoreOptions& options)
      : kv_(kv),
        keys_(options.cluster),
        clock_(options.clock ? options.clock : Clock::Real()),
        max_cas_retries_(options.max_cas_retries) {}

  const Keys& keys() const override { return keys_; }
  KvBackend* kv() override { return kv_; }

  absl::Status AddNode(const v1::NodeRecord& in) override {
    v1::NodeRecord node = in;
    if (node.admin_state() == v1::ADMIN_STATE_UNSPECIFIED) {
      node.set_admin_state(v1::ACTIVE);
    }
    if (node.created_unix_ms() == 0) {
      node.set_created_unix_ms(absl::ToUnixMillis(clock_->Now()));
    }
    RANGEFS_RETURN_IF_ERROR(ValidateNode(node));
    TxnRequest txn;
    std::string key = keys_.Node(node.id());
    AddCompare(&txn, key, Compare::VERSION, Compare::EQUAL, 0);
    AddPut(&txn, key, node.SerializeAsString());
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (!r.succeeded()) {
      return absl::AlreadyExistsError(
          absl::StrCat("node \"", node.id(), "\" already exists"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<NodeEntry> GetNode(absl::string_view id) override {
    RANGEFS_RETURN_IF_ERROR(ValidateNodeId(id));
    std::string key = keys_.Node(id);
    RANGEFS_ASSIGN_OR_RETURN(KvRange r, kv_->Range(key, "", 0, 0));
    if (r.kvs.empty()) {
      return absl::NotFoundError(absl::StrCat("node \"", id, "\" not found"));
    }
    return ParseNode(r.kvs[0]);
  }

  absl::StatusOr<std::vector<NodeEntry>> ListNodes() override {
    std::string prefix = keys_.NodePrefix();
    RANGEFS_ASSIGN_OR_RETURN(KvRange r,
                             kv_->Range(prefix, PrefixRangeEnd(prefix), 0, 0));
    std::vector<NodeEntry> out;
    for (const KvEntry& kv : r.kvs) {
      absl::StatusOr<NodeEntry> e = ParseNode(kv);
      if (e.ok()) {
        out.push_back(std::move(*e));
        continue;
      }
      NodeEntry bad;
      bad.invalid = std::string(e.status().message());
      std::string id;
      bad.record.set_id(keys_.ParseNode(kv.key, &id) ? id : kv.key);
      bad.mod_revision = kv.mod_revision;
      out.push_back(std::move(bad));
    }
    return out;
  }

  absl::Status UpdateNode(const v1::NodeRecord& node,
                          int64_t expected_mod_revision) override {
    RANGEFS_RETURN_IF_ERROR(ValidateNode(node));
    TxnRequest txn;
    std::string key = keys_.Node(node.id());
    AddCompare(&txn, key, Compare::MOD, Compare::EQUAL, expected_mod_revision);
    AddPut(&txn, key, node.SerializeAsString());
    AddFailureGet(&txn, key);
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (r.succeeded()) return absl::OkStatus();
    if (!ExistsInFailure(r, 0)) {
      return absl::NotFoundError(
          absl::StrCat("node \"", node.id(), "\" not found"));
    }
    return Conflict(absl::StrCat("node \"", node.id(), "\""),
                    ModInFailure(r, 0), expected_mod_revision);
  }

  absl::Status SetNodeState(absl::string_view id,
                            v1::AdminState state) override {
    if (state == v1::ADMIN_STATE_UNSPECIFIED ||
        !v1::AdminState_IsValid(state)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid admin state ", state));
    }
    absl::Status last;
    for (int i = 0; i < max_cas_retries_; ++i) {
      RANGEFS_ASSIGN_OR_RETURN(NodeEntry e, GetNode(id));
      if (e.record.admin_state() == state) return absl::OkStatus();
      e.record.set_admin_state(state);
      last = UpdateNode(e.record, e.mod_revision);
      if (!absl::IsAborted(last)) return last;
    }
    return last;
  }

  absl::Status RemoveNode(absl::string_view id) override {
    RANGEFS_RETURN_IF_ERROR(ValidateNodeId(id));
    RANGEFS_ASSIGN_OR_RETURN(KvRange raw, kv_->Range(keys_.Node(id), "", 0, 0));
    if (raw.kvs.empty()) {
      return absl::NotFoundError(absl::StrCat("node \"", id, "\" not found"));
    }
    // A record that fails the gate serves nothing: it may always go.
    absl::StatusOr<NodeEntry> parsed = ParseNode(raw.kvs[0]);
    NodeEntry e;
    e.mod_revision = raw.kvs[0].mod_revision;
    if (parsed.ok()) e = std::move(*parsed);
    if (e.record.admin_state() == v1::ACTIVE) {
      return absl::FailedPreconditionError(
          absl::StrCat("node \"", id,
                       "\" is active; drain or disable it before removing it"));
    }
    TxnRequest txn;
    std::string key = keys_.Node(id);
    AddCompare(&txn, key, Compare::MOD, Compare::EQUAL, e.mod_revision);
    AddDelete(&txn, key);
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (!r.succeeded()) {
      return absl::AbortedError(absl::StrCat(
          "node \"", id, "\" changed while removing it; re-check and retry"));
    }
    return absl::OkStatus();
  }

  absl::Status PutLive(const v1::LiveRecord& live, int64_t lease) override {
    RANGEFS_RETURN_IF_ERROR(ValidateNodeId(live.node_id()));
    TxnRequest txn;
    AddPut(&txn, keys_.Live(live.node_id()), live.SerializeAsString(), lease);
    return kv_->Txn(txn).status();
  }

  absl::StatusOr<std::vector<LiveEntry>> ListLive() override {
    std::string prefix = keys_.LivePrefix();
    RANGEFS_ASSIGN_OR_RETURN(KvRange r,
                             kv_->Range(prefix, PrefixRangeEnd(prefix), 0, 0));
    std::vector<LiveEntry> out;
    for (const KvEntry& kv : r.kvs) {
      LiveEntry e;
      std::string id;
      const bool keyed = keys_.ParseLive(kv.key, &id);
      absl::StatusOr<v1::LiveRecord> rec =
          DecodeLiveRecord(kv.key, keyed ? id : "", kv.value);
      if (rec.ok()) {
        e.record = std::move(*rec);
      } else {
        e.invalid = std::string(rec.status().message());
        e.record.set_node_id(keyed ? id : kv.key);
      }
      e.mod_revision = kv.mod_revision;
      e.lease = kv.lease;
      out.push_back(std::move(e));
    }
    return out;
  }

  absl::StatusOr<FileEntry> CreateFile(absl::string_view path,
                                       v1::FileLayout layout) override {
    RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
    RANGEFS_RETURN_IF_ERROR(CheckCreateDepth(path));
    std::vector<std::string> nodes = ReferencedNodes(layout);
    RANGEFS_ASSIGN_OR_RETURN(NodeKnownFn known, KnownNodes(nodes));
    RANGEFS_RETURN_IF_ERROR(ValidateLayout(layout, known));
    const std::string key = keys_.File(path);
    const std::string counter = keys_.NextFileId();
    const int64_t now = absl::ToUnixMillis(clock_->Now());
    layout.set_generation(1);
    layout.set_content_generation(1);
    layout.set_created_unix_ms(now);
    layout.set_modified_unix_ms(now);
    const uint64_t requested_id = layout.file_id();
    for (int attempt = 0; attempt < max_cas_retries_; ++attempt) {
      TxnRequest txn;
      AddCompare(&txn, key, Compare::VERSION, Compare::EQUAL, 0);
      // The counter always ends above every id in use, including ids
      // given by the caller (restore keeps file ids).
      RANGEFS_ASSIGN_OR_RETURN(FileIdCounter c, ReadFileIdCounter());
      const uint64_t next = c.next;
      const int64_t counter_mod = c.mod_revision;
      const uint64_t id = requested_id != 0 ? requested_id : next;
      layout.set_file_id(id);
      // The counter only grows: once past `id` it stays past it.
      if (id >= next) {
        AddCompare(&txn, counter, Compare::MOD, Compare::EQUAL, counter_mod);
        AddPut(&txn, counter, absl::StrCat(id + 1));
      }
      AddTreeCompares(&txn, path);
      const int compared = AddNodeCompares(&txn, nodes);
      AddPut(&txn, key, layout.SerializeAsString());
      AddFailureGet(&txn, key);
      for (int i = 0; i < compared; ++i)
        AddFailureGet(&txn, keys_.Node(nodes[i]));
      AddTreeFailureGets(&txn, path);
      RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
      if (r.succeeded()) {
        FileEntry e;
        e.path = std::string(path);
        e.layout = layout;
        e.mod_revision = r.header().revision();
        e.create_revision = r.header().revision();
        return e;
      }
      if (ExistsInFailure(r, 0)) {
        return absl::AlreadyExistsError(
            absl::StrCat("file ", path, " already exists"));
      }
      RANGEFS_RETURN_IF_ERROR(
          TreeClash(r, 1 + compared, absl::StrCat("create ", path), path));
      for (int i = 0; i < compared; ++i) {
        if (!ExistsInFailure(r, i + 1)) {
          return absl::FailedPreconditionError(
              absl::StrCat("file ", path, ": node \"", nodes[i],
                           "\" was removed while creating the file"));
        }
      }
      // The file id counter moved (a concurrent create): take a new id
      // after a short random pause, so that racing creators spread out.
      thread_local absl::InsecureBitGen bitgen;
      clock_->SleepFor(absl::Microseconds(
          absl::Uniform(bitgen, 0, 200 * std::min(attempt + 1, 20))));
    }
    return absl::AbortedError(absl::StrCat("create ", path,
                                           ": file id counter contended ",
                                           max_cas_retries_, " times; retry"));
  }

  // The file id counter now: the next id (1 when the key is absent) and
  // the key's mod revision (0: absent). INTERNAL for a value that is not a
  // number.
  struct FileIdCounter {
    uint64_t next = 1;
    int64_t mod_revision = 0;
  };
  absl::StatusOr<FileIdCounter> ReadFileIdCounter() {
    const std::string counter = keys_.NextFileId();
    RANGEFS_ASSIGN_OR_RETURN(KvRange c, kv_->Range(counter, "", 0, 0));
    FileIdCounter out;
    if (c.kvs.empty()) return out;
    if (!absl::SimpleAtoi(c.kvs[0].value, &out.next)) {
      return absl::InternalError(
          absl::StrCat("corrupt file id counter at etcd key ", counter));
    }
    out.mod_revision = c.kvs[0].mod_revision;
    return out;
  }

  absl::StatusOr<uint64_t> ReserveFileIds(uint64_t count) override {
    if (count < 1 || count > (uint64_t{1} << 20)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot reserve ", count, " file ids (1 to 1048576 at a time)"));
    }
    const std::string counter = keys_.NextFileId();
    for (int attempt = 0; attempt < max_cas_retries_; ++attempt) {
      RANGEFS_ASSIGN_OR_RETURN(FileIdCounter c, ReadFileIdCounter());
      const uint64_t next = c.next;
      const int64_t counter_mod = c.mod_revision;
      TxnRequest txn;
      AddCompare(&txn, counter, Compare::MOD, Compare::EQUAL, counter_mod);
      AddPut(&txn, counter, absl::StrCat(next + count));
      RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
      if (r.succeeded()) return next;
      thread_local absl::InsecureBitGen bitgen;
      clock_->SleepFor(absl::Microseconds(
          absl::Uniform(bitgen, 0, 200 * std::min(attempt + 1, 20))));
    }
    return absl::AbortedError(
        absl::StrCat("reserving file ids: counter "
                     "contended ",
                     max_cas_retries_, " times; retry"));
  }

  absl::StatusOr<FileEntry> GetFile(absl::string_view path,
                                    int64_t revision) override {
    RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
    RANGEFS_ASSIGN_OR_RETURN(
        KvRange r, Annotate(kv_->Range(keys_.File(path), "", 0, revision), path,
                            revision));
    if (r.kvs.empty()) {
      return absl::NotFoundError(
          revision > 0
              ? absl::StrCat("file ", path, " not found at revision ", revision)
              : absl::StrCat("file ", path, " not found"));
    }
    return ToFileEntry(path, r.kvs[0]);
  }

  absl::StatusOr<FileEntry> ReplaceLayout(
      absl::string_view path, v1::FileLayout layout,
      int64_t expected_mod_revision) override {
    return ReplaceLayoutIf(path, std::move(layout), expected_mod_revision, {});
  }

  absl::StatusOr<FileEntry> ReplaceLayoutIf(absl::string_view path,
                                            v1::FileLayout layout,
                                            int64_t expected_mod_revision,
                                            const TxnGuard& guard) override {
    return Replace(path, std::move(layout), expected_mod_revision, guard,
                   /*new_content=*/false);
  }

  absl::StatusOr<FileEntry> OverwriteFile(
      absl::string_view path, v1::FileLayout layout,
      int64_t expected_mod_revision) override {
    return Replace(path, std::move(layout), expected_mod_revision, {},
                   /*new_content=*/true);
  }

  // ReplaceLayoutIf and OverwriteFile: `new_content` says whether the
  // layout holds new bytes (content_generation = the new generation) or
  // the same bytes as before (content_generation kept).
  absl::StatusOr<FileEntry> Replace(absl::string_view path,
                                    v1::FileLayout layout,
                                    int64_t expected_mod_revision,
                                    const TxnGuard& guard, bool new_content) {
    if (guard.compares.size() > kMaxGuardCompares) {
      return absl::InvalidArgumentError(
          absl::StrCat("replace layout of ", path, ": ", guard.compares.size(),
                       " guard compares (max ", kMaxGuardCompares, ")"));
    }
    RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
    std::vector<std::string> nodes = ReferencedNodes(layout);
    RANGEFS_ASSIGN_OR_RETURN(NodeKnownFn known, KnownNodes(nodes));
    RANGEFS_RETURN_IF_ERROR(ValidateLayout(layout, known));
    const std::string key = keys_.File(path);
    RANGEFS_ASSIGN_OR_RETURN(FileEntry cur, GetFile(path, 0));
    if (cur.mod_revision != expected_mod_revision) {
      return Conflict(absl::StrCat("file ", path), cur.mod_revision,
                      expected_mod_revision);
    }
    layout.set_file_id(cur.layout.file_id());
    layout.set_generation(cur.layout.generation() + 1);
    layout.set_content_generation(
        new_content ? layout.generation() : cur.layout.content_generation());
    layout.set_created_unix_ms(cur.layout.created_unix_ms());
    layout.set_modified_unix_ms(absl::ToUnixMillis(clock_->Now()));
    TxnRequest txn;
    // The guard's reads come first in the failure branch (TxnGuard).
    for (const Compare& c : guard.compares) {
      *txn.add_compare() = c;
      AddFailureGet(&txn, c.key());
    }
    const int file_read = static_cast<int>(guard.compares.size());
    AddCompare(&txn, key, Compare::MOD, Compare::EQUAL, expected_mod_revision);
    AddNodeCompares(&txn, nodes);
    AddPut(&txn, key, layout.SerializeAsString());
    AddFailureGet(&txn, key);
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (!r.succeeded()) {
      if (guard.on_failure) RANGEFS_RETURN_IF_ERROR(guard.on_failure(r));
      if (!ExistsInFailure(r, file_read)) {
        return absl::NotFoundError(absl::StrCat("file ", path, " not found"));
      }
      int64_t mod = ModInFailure(r, file_read);
      if (mod != expected_mod_revision) {
        return Conflict(absl::StrCat("file ", path), mod,
                        expected_mod_revision);
      }
      return absl::FailedPreconditionError(
          absl::StrCat("replace layout of ", path,
                       ": a referenced node was removed meanwhile"));
    }
    FileEntry e;
    e.path = std::string(path);
    e.layout = std::move(layout);
    e.mod_revision = r.header().revision();
    e.create_revision = cur.create_revision;
    return e;
  }

  absl::Status RenameFile(absl::string_view from, absl::string_view to,
                          int64_t expected_mod_revision) override {
    RANGEFS_RETURN_IF_ERROR(ValidatePath(from));
    RANGEFS_RETURN_IF_ERROR(ValidatePath(to));
    RANGEFS_RETURN_IF_ERROR(CheckCreateDepth(to));
    if (from == to) {
      return absl::InvalidArgumentError(
          absl::StrCat("rename ", from, ": source and target are the same"));
    }
    RANGEFS_ASSIGN_OR_RETURN(FileEntry cur, GetFile(from, 0));
    if (expected_mod_revision != 0 &&
        cur.mod_revision != expected_mod_revision) {
      return Conflict(absl::StrCat("file ", from), cur.mod_revision,
                      expected_mod_revision);
    }
    const std::string from_key = keys_.File(from);
    const std::string to_key = keys_.File(to);
    TxnRequest txn;
    AddCompare(&txn, from_key, Compare::MOD, Compare::EQUAL, cur.mod_revision);
    AddCompare(&txn, to_key, Compare::VERSION, Compare::EQUAL, 0);
    AddTreeCompares(&txn, to, from);
    AddDelete(&txn, from_key);
    v1::FileLayout layout = cur.layout;
    layout.set_modified_unix_ms(absl::ToUnixMillis(clock_->Now()));
    AddPut(&txn, to_key, layout.SerializeAsString());
    AddFailureGet(&txn, from_key);
    AddFailureGet(&txn, to_key);
    AddTreeFailureGets(&txn, to, from);
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (r.succeeded()) return absl::OkStatus();
    if (ExistsInFailure(r, 1)) {
      return absl::AlreadyExistsError(
          absl::StrCat("rename ", from, " -> ", to, ": target already exists"));
    }
    if (!ExistsInFailure(r, 0)) {
      return absl::NotFoundError(absl::StrCat("file ", from, " not found"));
    }
    RANGEFS_RETURN_IF_ERROR(
        TreeClash(r, 2, absl::StrCat("rename ", from, " -> ", to), to, from));
    return Conflict(absl::StrCat("file ", from), ModInFailure(r, 0),
                    cur.mod_revision);
  }

  absl::Status DeleteFile(absl::string_view path,
                          int64_t expected_mod_revision) override {
    RANGEFS_RETURN_IF_ERROR(ValidatePath(path));
    const std::string key = keys_.File(path);
    TxnRequest txn;
    if (expected_mod_revision != 0) {
      AddCompare(&txn, key, Compare::MOD, Compare::EQUAL,
                 expected_mod_revision);
    } else {
      AddCompare(&txn, key, Compare::VERSION, Compare::GREATER, 0);
    }
    AddDelete(&txn, key);
    AddFailureGet(&txn, key);
    RANGEFS_ASSIGN_OR_RETURN(TxnResponse r, kv_->Txn(txn));
    if (r.succeeded()) return absl::OkStatus();
    if (!ExistsInFailure(r, 0)) {
      return absl::NotFoundError(absl::StrCat("file ", path, " not found"));
    }
    return Conflict(absl::StrCat("file ", path), ModInFailure(r, 0),
                    expected_mod_revision);
  }

  absl::StatusOr<ListFilesResult> ListFiles(
      const ListFilesOptions& options) override {
    RANGEFS_RETURN_IF_ERROR(ValidateDir(options.dir));
    if (options.page_size < 1 || options.page_size > 10000) {
      return absl::InvalidArgumentError(
          absl::StrCat("page size ", options.page_size, " is not in 1..10000"));
    }
    const std::string prefix = keys_.FileDirPrefix(options.dir);
    std::string start = prefix;
    if (!options.page_token.empty()) {
      // The token is the last path returned (maybe one that failed the
      // gate); continue just after it. Only its position in key order
      // matters, and it must stay under the listed directory.
      if (options.page_token[0] != '/' ||
          options.page_token.size() > 2 * kMaxPathBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("page token \"", options.page_token.substr(0, 64),
                         "\" is not a path"));
      }
      start = keys_.File(options.page_token);
      start.push_back('\0');
      if (start.compare(0, prefix.size(), prefix) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "page token ", options.page_token, " is not under ", options.dir));
      }
    }
    RANGEFS_ASSIGN_OR_RETURN(
        KvRange r, Annotate(kv_->Range(start, PrefixRangeEnd(prefix),
                                       options.page_size, options.revision),
                            options.dir, options.revision));
    ListFilesResult out;
    out.revision = options.revision > 0 ? options.revision : r.revision;
    for (const KvEntry& kv : r.kvs) {
      std::string path;
      if (!keys_.ParseFile(kv.key, &path)) continue;
      if (absl::Status bad = ValidatePath(path); !bad.ok()) {
        FileEntry e;
        e.path = path;
        e.invalid = absl::StrCat("invalid record at etcd key ",
                                 absl::CEscape(kv.key), ": ", bad.message());
        e.mod_revision = kv.mod_revision;
        out.files.push_back(std::move(e));
        continue;
      }
      if (options.keys_only) {
        FileEntry e;
        e.path = path;
        e.mod_revision = kv.mod_revision;
        e.create_revision = kv.create_revision;
        out.files.push_back(std::move(e));
      } else {
        out.files.push_back(ToListedEntry(path, kv));
      }
    }
    if (r.more && !out.files.empty()) {
      out.next_page_token = out.files.back().path;
    }
    return out;
  }

  absl::StatusOr<int64_t> CurrentRevision() override {
    RANGEFS_ASSIGN_OR_RETURN(KvRange r,
                             kv_->Range(keys_.NextFileId(), "", 1, 0));
    return r.revision;
  }

 private:
  static absl::Status Conflict(const std::string& what, int64_t actual,
                               int64_t expected) {
    return absl::AbortedError(absl::StrCat(
        what, " was changed by someone else (mod_revision ", actual,
        ", expected ", expected, "); re-read it and retry"));
  }

  template <typename T>
  static absl::StatusOr<T> Annotate(absl::StatusOr<T> r, absl::string_view what,
                                    int64_t revision) {
    if (r.ok() || revision == 0 || !absl::IsOutOfRange(r.status())) return r;
    return absl::OutOfRangeError(
        absl::StrCat(what, " as of revision ", revision,
                     " is no longer available (compacted) or not yet written: ",
                     r.status().message()));
  }

  absl::StatusOr<NodeEntry> ParseNode(const KvEntry& kv) {
    NodeEntry e;
    std::string id;
    if (!keys_.ParseNode(kv.key, &id)) id.clear();
    RANGEFS_ASSIGN_OR_RETURN(e.record, DecodeNodeRecord(kv.key, id, kv.value));
    e.mod_revision = kv.mod_revision;
    return e;
  }

  absl::StatusOr<FileEntry> ToFileEntry(absl::string_view path,
                                        const KvEntry& kv) {
    RANGEFS_ASSIGN_OR_RETURN(v1::FileLayout layout, ParseLayout(kv));
    FileEntry e;
    e.path = std::string(path);
    e.layout = std::move(layout);
    e.mod_revision = kv.mod_revision;
    e.create_revision = kv.create_revision;
    return e;
  }

  // A listed file: its entry, or one marked invalid (the record gate's
  // reason) so that one bad record hides no other file.
  static FileEntry ToListedEntry(const std::string& path, const KvEntry& kv) {
    FileEntry e;
    e.path = path;
    e.mod_revision = kv.mod_revision;
    e.create_revision = kv.create_revision;
    absl::StatusOr<v1::FileLayout> layout = ParseLayout(kv);
    if (layout.ok()) {
      e.layout = std::move(*layout);
    } else {
      e.invalid = std::string(layout.status().message());
    }
    return e;
  }

  // Reads the node records a layout references; the returned predicate
  // says which exist.
  absl::StatusOr<NodeKnownFn> KnownNodes(const std::vector<std::string>& ids) {
    std::vector<std::string> present;
    if (!ids.empty()) {
      std::string prefix = keys_.NodePrefix();
      RANGEFS_ASSIGN_OR_RETURN(
          KvRange r, kv_->Range(prefix, PrefixRangeEnd(prefix), 0, 0));
      for (const KvEntry& kv : r.kvs) {
        std::string id;
        if (keys_.ParseNode(kv.key, &id)) present.push_back(id);
      }
    }
    std::sort(present.begin(), present.end());
    return NodeKnownFn([present = std::move(present)](absl::string_view id) {
      return std::binary_search(present.begin(), present.end(),
                                std::string(id));
    });
  }

  // The namespace is a tree: a file is never a directory. Compares that
  // `path` may become a file: no ancestor of it is a file (skipping
  // `leaving`, deleted by the same transaction), and no file lies below it.
  void AddTreeCompares(TxnRequest* txn, absl::string_view path,
                       absl::string_view leaving = "") {
    for (const std::string& a : Ancestors(path)) {
      if (a == leaving) continue;
      AddCompare(txn, keys_.File(a), Compare::VERSION, Compare::EQUAL, 0);
    }
    const std::string below = keys_.FileDirPrefix(path);
    Compare* c = txn->add_compare();
    c->set_key(below);
    c->set_range_end(PrefixRangeEnd(below));
    c->set_target(Compare::CREATE);
    c->set_result(Compare::EQUAL);
    c->set_create_revision(0);  // etcd: true iff the range holds no key
  }

  // The failure-branch reads that name the clash AddTreeCompares found:
  // each ancestor, then one key below `path`.
  void AddTreeFailureGets(TxnRequest* txn, absl::string_view path,
                          absl::string_view leaving = "") {
    for (const std::string& a : Ancestors(path)) {
      if (a != leaving) AddFailureGet(txn, keys_.File(a));
    }
    AddFailureGetOneUnder(txn, keys_.FileDirPrefix(path));
  }

  // FAILED_PRECONDITION naming the clash that AddTreeFailureGets' reads,
  // starting at failure response `first`, show; OK if they show none.
  absl::Status TreeClash(const TxnResponse& r, int first,
                         absl::string_view what, absl::string_view path,
                         absl::string_view leaving = "") {
    int i = first;
    for (const std::string& a : Ancestors(path)) {
      if (a == leaving) continue;
      if (ExistsInFailure(r, i++)) {
        return absl::FailedPreconditionError(absl::StrCat(
            what, ": ", a, " is a file, so ", path,
            " cannot be a file below it (a path is a file or a directory, "
            "never both)"));
      }
    }
    if (ExistsInFailure(r, i)) {
      std::string child;
      const std::string& key = r.responses(i).response_range().kvs(0).key();
      if (!keys_.ParseFile(key, &child)) child = key;
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": ", path, " is a directory (it holds ", child,
          "), so it cannot be a file (a path is a file or a directory, "
          "never both)"));
    }
    return absl::OkStatus();
  }

  // Compares that the first of `ids` still exist, as many as the
  // transaction has room for; returns how many.
  int AddNodeCompares(TxnRequest* txn, const std::vector<std::string>& ids) {
    const int budget =
        std::min(kMaxNodeCompares, kMaxCompares - txn->compare_size());
    const int n = std::min(budget, static_cast<int>(ids.size()));
    for (int i = 0; i < n; ++i) {
      AddCompare(txn, keys_.Node(ids[i]), Compare::VERSION, Compare::GREATER,
                 0);
    }
    return n;
  }

  KvBackend* const kv_;
  const Keys keys_;
  Clock* const clock_;
  const int max_cas_retries_;
};

}  // namespace

absl::StatusOr<v1::FileLayout> ParseLayout(const KvEntry& kv) {
  return DecodeFileLayout(kv.key, kv.value);
}

std::unique_ptr<NamespaceStore> NewKvStore(KvBackend* kv,
                                           const StoreOptions& options) {
  return std::make_unique<KvStore>(kv, options);
}

}  // namespace ns
}  // namespace rangefs
