#include "namespace/cli/data_commands.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "loadbalancer/placement.h"
#include "namespace/layout.h"
#include "storage_node/node_client.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace admin {
namespace {

namespace v1 = ::rangefs::v1;
using node::NodeClient;

constexpr uint64_t kProgressStep = 64 << 20;
constexpr absl::Duration kSmallCallTimeout = absl::Seconds(30);

// Runs fn(i) for i in [0, n) on at most `threads` threads; joins them.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  const size_t workers = std::min(n, static_cast<size_t>(std::max(1, threads)));
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

// The agents of the cluster: node records and one NodeClient per address.
// Thread-safe.
class Agents {
 public:
  Agents(std::vector<ns::NodeEntry> nodes, node::NodeClientTlsOptions tls)
      : tls_(std::move(tls)) {
    for (ns::NodeEntry& n : nodes) {
      if (n.invalid.empty()) records_[n.record.id()] = std::move(n.record);
    }
  }

  const v1::NodeRecord* Find(const std::string& id) const {
    auto it = records_.find(id);
    return it == records_.end() ? nullptr : &it->second;
  }

  // Calls fn with a client for each address of node `id` in turn, moving
  // on only when fn returns UNAVAILABLE. NOT_FOUND for an unknown node.
  absl::Status Call(const std::string& id,
                    const std::function<absl::Status(NodeClient&)>& fn) {
    const v1::NodeRecord* rec = Find(id);
    if (rec == nullptr || rec->addresses().empty()) {
      return absl::NotFoundError(
          absl::StrCat("node ", id, " is not registered (or has no address)"));
    }
    absl::Status last;
    for (const std::string& address : rec->addresses()) {
      absl::StatusOr<NodeClient*> c = Client(address);
      if (!c.ok()) {
        last = c.status();
        continue;
      }
      last = fn(**c);
      if (!absl::IsUnavailable(last)) return last;
    }
    return last;
  }

 private:
  absl::StatusOr<NodeClient*> Client(const std::string& address) {
    absl::MutexLock l(&mu_);
    auto it = clients_.find(address);
    if (it != clients_.end()) return it->second.get();
    RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<NodeClient> c,
                             NodeClient::Connect(address, tls_));
    NodeClient* raw = c.get();
    clients_[address] = std::move(c);
    return raw;
  }

  const node::NodeClientTlsOptions tls_;
  std::map<std::string, v1::NodeRecord> records_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<NodeClient>> clients_
      ABSL_GUARDED_BY(mu_);
};

// Bytes of stripe column t: units t, t+W, t+2W, ... of a `size`-byte file.
uint64_t ColumnBytes(uint64_t size, uint64_t unit, uint64_t width, uint64_t t) {
  uint64_t total = 0;
  for (uint64_t k = t; k * unit < size; k += width) {
    total += std::min(unit, size - k * unit);
  }
  return total;
}

// Reads stripe column t of the local file with pread. Thread-compatible.
class ColumnReader {
 public:
  ColumnReader(int fd, const std::string& name, uint64_t size, uint64_t unit,
               uint64_t width, uint64_t t)
      : fd_(fd), name_(name), size_(size), unit_(unit), width_(width), k_(t) {}

  absl::StatusOr<size_t> Read(absl::Span<char> dst) {
    size_t filled = 0;
    while (filled < dst.size() && k_ * unit_ < size_) {
      const uint64_t off = k_ * unit_ + in_unit_;
      const uint64_t unit_len = std::min(unit_, size_ - k_ * unit_);
      const size_t want = static_cast<size_t>(
          std::min<uint64_t>(dst.size() - filled, unit_len - in_unit_));
      ssize_t n = pread(fd_, dst.data() + filled, want, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, absl::StrCat("pread ", name_, " at ", off));
      }
      if (n == 0) {
        return absl::DataLossError(
            absl::StrCat("local file ", name_,
                         " shrank while being read (EOF at ", off, ")"));
      }
      filled += static_cast<size_t>(n);
      in_unit_ += static_cast<uint64_t>(n);
      if (in_unit_ == unit_len) {
        in_unit_ = 0;
        k_ += width_;
      }
    }
    return filled;
  }

 private:
  const int fd_;
  const std::string name_;
  const uint64_t size_, unit_, width_;
  uint64_t k_;
  uint64_t in_unit_ = 0;
};

std::string RandomHex() {
  absl::BitGen gen;
  return absl::StrCat(
      absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16));
}

struct ScopedFile {
  int fd = -1;
  ~ScopedFile() {
    if (fd >= 0) close(fd);
  }
};

// One object to write: column/extent `unit` on replica node `node`.
struct WriteTask {
  size_t unit = 0;
  std::string node;
  std::string object;
  uint64_t bytes = 0;
  bool started = false;
  absl::Status status;
  uint32_t crc32c = 0;
};

}  // namespace

absl::StatusOr<Table> RunFilePut(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed(
      {"stripe-unit", "width", "replicas", "overwrite", "parallel"}));
  if (a.positional().size() != 2) {
    return absl::InvalidArgumentError(
        "usage: file put LOCAL PATH [--stripe-unit=1M] [--width=N] "
        "[--replicas=2] [--overwrite] [--parallel=8]");
  }
  const std::string local = a.positional()[0];
  const std::string path = a.positional()[1];
  RANGEFS_RETURN_IF_ERROR(ns::ValidatePath(path));
  RANGEFS_ASSIGN_OR_RETURN(uint64_t unit,
                           ParseBytes(a.Get("stripe-unit", "1M")));
  RANGEFS_ASSIGN_OR_RETURN(int64_t replicas, a.GetInt("replicas", 2));
  RANGEFS_ASSIGN_OR_RETURN(int64_t width_flag, a.GetInt("width", 0));
  RANGEFS_ASSIGN_OR_RETURN(int64_t parallel, a.GetInt("parallel", 8));
  const bool overwrite = a.GetBool("overwrite");
  if (unit == 0 || unit > (uint64_t{1} << 32)) {
    return absl::InvalidArgumentError("--stripe-unit must be in (0, 4G]");
  }
  if (replicas < 1 || replicas > ns::kMaxReplicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas must be in [1, ", ns::kMaxReplicas, "]"));
  }
  if (width_flag < 0 || parallel < 1) {
    return absl::InvalidArgumentError("--width >= 1, --parallel >= 1");
  }

  ScopedFile file;
  file.fd = open(local.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", local));
  struct stat st;
  if (fstat(file.fd, &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat ", local));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(local, " is not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  // Existing file: refuse early unless --overwrite.
  int64_t existing_rev = 0;
  absl::StatusOr<ns::FileEntry> existing = ctx.store->GetFile(path);
  if (existing.ok()) {
    if (!overwrite) {
      return absl::AlreadyExistsError(absl::StrCat(
          "file ", path, " exists (use --overwrite to replace it)"));
    }
    existing_rev = existing->mod_revision;
  } else if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }

  // Eligible nodes.
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           ctx.store->ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live,
                           ctx.store->ListLive());
  std::map<std::string, const v1::LiveRecord*> live_by_id;
  for (const ns::LiveEntry& l : live) {
    if (l.invalid.empty()) live_by_id[l.record.node_id()] = &l.record;
  }
  std::vector<lb::PlacementNode> candidates;
  for (const ns::NodeEntry& n : nodes) {
    if (!n.invalid.empty()) continue;  // fails the record gate: never placed
    auto it = live_by_id.find(n.record.id());
    const v1::LiveRecord* l = it == live_by_id.end() ? nullptr : it->second;
    lb::PlacementNode p;
    p.id = n.record.id();
    p.zone = n.record.zone();
    p.admin = n.record.admin_state() == v1::ACTIVE ? lb::AdminState::kActive
              : n.record.admin_state() == v1::DRAINING
                  ? lb::AdminState::kDraining
                  : lb::AdminState::kDisabled;
    p.live = l != nullptr && (l->health() == v1::LiveRecord::HEALTHY ||
                              l->health() == v1::LiveRecord::DEGRADED);
    p.free_bytes = l != nullptr ? l->free_bytes() : 0;
    candidates.push_back(std::move(p));
  }
  size_t eligible = 0;
  for (const lb::PlacementNode& p : candidates) {
    eligible +=
        p.live && p.admin == lb::AdminState::kActive && p.free_bytes > 0;
  }
  const bool striped = size >= unit;
  int width = 1;
  if (striped) {
    width = width_flag > 0 ? static_cast<int>(width_flag)
                           : std::max<int>(1, static_cast<int>(eligible));
    const uint64_t units = (size + unit - 1) / unit;
    width = static_cast<int>(std::min<uint64_t>(width, units));
  }
  absl::BitGen bitgen;
  std::vector<std::vector<std::string>> placement;
  if (size > 0) {
    absl::StatusOr<std::vector<std::vector<lb::NodeId>>> placed =
        lb::PlaceStripes(candidates, width, static_cast<int>(replicas), bitgen);
    if (!placed.ok()) {
      return absl::Status(
          placed.status().code(),
          absl::StrCat("placing ", path, " (", eligible,
                       " live active node(s) with free space): ",
                       placed.status().message()));
    }
    placement = *std::move(placed);
  }

  // Write every column to every replica.
  const std::string prefix = absl::StrCat("f/", RandomHex());
  std::vector<WriteTask> tasks;
  for (size_t t = 0; t < placement.size(); ++t) {
    for (const std::string& n : placement[t]) {
      WriteTask w;
      w.unit = t;
      w.node = n;
      w.object =
          striped ? absl::StrCat(prefix, "/c", t) : absl::StrCat(prefix, "/e0");
      w.bytes = striped ? ColumnBytes(size, unit, width, t) : size;
      tasks.push_back(std::move(w));
    }
  }
  Agents agents(std::move(nodes), ctx.agent_tls);
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> done{0};
  const uint64_t total = size * static_cast<uint64_t>(replicas);
  absl::Mutex progress_mu;
  auto report = [&](uint64_t before, uint64_t after) {
    if (!ctx.progress) return;
    if (before / kProgressStep != after / kProgressStep || after == total) {
      absl::MutexLock l(&progress_mu);
      ctx.progress(after, total);
    }
  };
  ParallelFor(tasks.size(), static_cast<int>(parallel), [&](size_t i) {
    WriteTask& w = tasks[i];
    if (failed.load()) {
      w.status = absl::CancelledError("put aborted");
      return;
    }
    w.started = true;
    uint64_t sent_total = 0;
    w.status = agents.Call(w.node, [&](NodeClient& c) -> absl::Status {
      ColumnReader reader(file.fd, local, size, striped ? unit : size,
                          striped ? width : 1, striped ? w.unit : 0);
      uint64_t sent = 0;
      node::WriteCallOptions o;
      o.deadline = absl::Now() + absl::Seconds(60) +
                   absl::Seconds(static_cast<double>(w.bytes) / (20 << 20));
      o.overwrite = false;
      o.block_size = node::kDefaultBlockSize;
      o.expected_size = static_cast<int64_t>(w.bytes);
      auto r = c.WriteObject(
          w.object,
          [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
            if (failed.load()) return absl::CancelledError("put aborted");
            RANGEFS_ASSIGN_OR_RETURN(size_t n, reader.Read(dst));
            sent += n;
            const uint64_t after = done.fetch_add(n) + n;
            report(after - n, after);
            return n;
          },
          o);
      sent_total += sent;
      if (!r.ok()) {
        done.fetch_sub(sent);
        return r.status();
      }
      if (r->size() != w.bytes) {
        return absl::DataLossError(
            absl::StrCat("node ", w.node, " stored ", r->size(), " bytes of ",
                         w.object, ", expected ", w.bytes));
      }
      w.crc32c = r->crc32c();
      return absl::OkStatus();
    });
    if (!w.status.ok()) failed.store(true);
  });

  absl::Status first_error;
  for (const WriteTask& w : tasks) {
    if (!w.status.ok() && !absl::IsCancelled(w.status)) {
      first_error = absl::Status(
          w.status.code(), absl::StrCat("writing ", w.object, " to node ",
                                        w.node, ": ", w.status.message()));
      break;
    }
  }
  if (first_error.ok()) {
    for (const WriteTask& w : tasks) {
      if (!w.status.ok()) first_error = w.status;
    }
  }

  // Commit.
  absl::StatusOr<ns::FileEntry> committed =
      absl::InternalError("not committed");
  if (first_error.ok()) {
    v1::FileLayout layout;
    layout.set_size(size);
    layout.set_state(v1::READY);
    layout.set_checksum(v1::CRC32C_SIDECAR);
    layout.set_checksum_block_size(node::kDefaultBlockSize);
    if (striped) {
      v1::StripedLayout* s = layout.mutable_striped();
      s->set_stripe_unit(unit);
      for (size_t t = 0; t < placement.size(); ++t) s->add_targets();
      for (const WriteTask& w : tasks) {
        v1::Replica* r = s->mutable_targets(w.unit)->add_replicas();
        r->set_node_id(w.node);
        r->set_object(w.object);
      }
    } else if (size > 0) {
      v1::Extent* e = layout.add_extents();
      e->set_length(size);
      e->set_has_crc32c(true);
      e->set_crc32c(tasks.front().crc32c);
      for (const WriteTask& w : tasks) {
        v1::Replica* r = e->add_replicas();
        r->set_node_id(w.node);
        r->set_object(w.object);
      }
    }
    committed = existing_rev != 0
                    ? ctx.store->ReplaceLayout(path, layout, existing_rev)
                    : ctx.store->CreateFile(path, layout);
    if (!committed.ok()) {
      first_error = absl::Status(committed.status().code(),
                                 absl::StrCat("committing layout of ", path,
                                              " (data written, not visible): ",
                                              committed.status().message()));
    }
  }
  if (!first_error.ok()) {
    // Remove what was (or may have been) written.
    std::vector<std::string> leftovers;
    absl::Mutex left_mu;
    ParallelFor(tasks.size(), static_cast<int>(parallel), [&](size_t i) {
      const WriteTask& w = tasks[i];
      // A definite refusal by the agent (read-only, exists, bad argument)
      // wrote nothing: never delete an object this put did not create.
      const absl::StatusCode code = w.status.code();
      const bool maybe_written = w.status.ok() ||
                                 code == absl::StatusCode::kUnavailable ||
                                 code == absl::StatusCode::kDeadlineExceeded ||
                                 code == absl::StatusCode::kCancelled ||
                                 code == absl::StatusCode::kUnknown ||
                                 code == absl::StatusCode::kInternal ||
                                 code == absl::StatusCode::kAborted;
      if (!w.started || !maybe_written) return;
      absl::Status s = agents.Call(w.node, [&](NodeClient& c) {
        return c.DeleteObject(w.object, absl::Now() + kSmallCallTimeout);
      });
      // A read-only node (FAILED_PRECONDITION) refuses every write, so it
      // cannot hold an object of this put either.
      if (!s.ok() && !absl::IsNotFound(s) && !absl::IsFailedPrecondition(s)) {
        absl::MutexLock l(&left_mu);
        leftovers.push_back(absl::StrCat(w.node, ":", w.object));
      }
    });
    std::sort(leftovers.begin(), leftovers.end());
    std::string note =
        leftovers.empty()
            ? " (nothing visible; written objects removed)"
            : absl::StrCat(" (nothing visible; could not remove ",
                           leftovers.size(), " object(s), remove by hand: ",
                           absl::StrJoin(leftovers, " "), ")");
    return absl::Status(
        first_error.code(),
        absl::StrCat("file put ", path, ": ", first_error.message(), note));
  }
  Table t;
  t.columns = {"path", "size", "width", "replicas", "stripe unit", "file id"};
  t.AddRow({path, HumanBytes(size), absl::StrCat(striped ? width : 0),
            absl::StrCat(replicas), striped ? HumanBytes(unit) : "-",
            absl::StrCat(committed->layout.file_id())});
  t.message = absl::StrCat("put ", local, " as ", path, ": ", size,
                           " bytes in ", tasks.size(), " object(s)");
  return t;
}

absl::StatusOr<Table> RunFileRegister(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"replica", "size"}));
  if (a.positional().size() != 1 || !a.Has("replica")) {
    return absl::InvalidArgumentError(
        "usage: file register PATH --replica=NODE:OBJECT[,NODE:OBJECT] "
        "[--size=N]");
  }
  const std::string path = a.positional()[0];
  RANGEFS_RETURN_IF_ERROR(ns::ValidatePath(path));
  std::vector<std::pair<std::string, std::string>> replicas;
  for (const std::string& flag : a.GetAll("replica")) {
    for (absl::string_view item :
         absl::StrSplit(flag, ',', absl::SkipEmpty())) {
      size_t colon = item.find(':');
      if (colon == absl::string_view::npos || colon == 0 ||
          colon + 1 == item.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--replica=", item, ": expected NODE:OBJECT"));
      }
      replicas.emplace_back(std::string(item.substr(0, colon)),
                            std::string(item.substr(colon + 1)));
      RANGEFS_RETURN_IF_ERROR(ns::ValidateObjectPath(replicas.back().second));
    }
  }
  int64_t want_size = -1;
  if (a.Has("size")) {
    RANGEFS_ASSIGN_OR_RETURN(uint64_t s, ParseBytes(a.Get("size")));
    want_size = static_cast<int64_t>(s);
  }
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           ctx.store->ListNodes());
  Agents agents(std::move(nodes), ctx.agent_tls);
  std::vector<absl::StatusOr<node::StatObjectResponse>> stats(
      replicas.size(), absl::InternalError("not asked"));
  ParallelFor(replicas.size(), 8, [&](size_t i) {
    absl::StatusOr<node::StatObjectResponse> r;
    absl::Status s = agents.Call(replicas[i].first, [&](NodeClient& c) {
      r = c.StatObject(replicas[i].second, absl::Now() + kSmallCallTimeout);
      return r.status();
    });
    stats[i] = s.ok() ? r : absl::StatusOr<node::StatObjectResponse>(s);
  });
  std::vector<std::string> sizes;
  bool mismatch = false;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (!stats[i].ok()) {
      return absl::Status(
          stats[i].status().code(),
          absl::StrCat("file register ", path, ": replica ", replicas[i].first,
                       ":", replicas[i].second, ": ",
                       stats[i].status().message(), " (nothing written)"));
    }
    const int64_t got = static_cast<int64_t>(stats[i]->size());
    if (want_size < 0) want_size = got;  // First replica sets the size.
    mismatch = mismatch || got != want_size;
    sizes.push_back(absl::StrCat(replicas[i].first, ":", replicas[i].second,
                                 " is ", got, " bytes"));
  }
  if (mismatch) {
    return absl::DataLossError(absl::StrCat(
        "file register ", path, ": size mismatch, expected ", want_size,
        " bytes; ", absl::StrJoin(sizes, ", "), " (nothing written)"));
  }
  v1::FileLayout layout;
  layout.set_size(static_cast<uint64_t>(want_size));
  layout.set_state(v1::READY);
  bool sidecars = true;
  uint32_t block = stats[0]->block_size();
  for (const auto& s : stats) {
    sidecars = sidecars && s->has_checksums() && s->block_size() == block;
  }
  layout.set_checksum(sidecars ? v1::CRC32C_SIDECAR : v1::CHECKSUM_NONE);
  if (sidecars) layout.set_checksum_block_size(block);
  if (want_size > 0) {
    v1::Extent* e = layout.add_extents();
    e->set_length(static_cast<uint64_t>(want_size));
    for (const auto& [n, o] : replicas) {
      v1::Replica* r = e->add_replicas();
      r->set_node_id(n);
      r->set_object(o);
    }
  }
  RANGEFS_ASSIGN_OR_RETURN(ns::FileEntry f,
                           ctx.store->CreateFile(path, layout));
  Table t;
  t.message = absl::StrCat("registered ", path, " (", want_size, " bytes, ",
                           replicas.size(), " replica(s), file id ",
                           f.layout.file_id(), ")");
  return t;
}

// Reports node and live records that fail the record gate.
absl::Status AddInvalidRecords(Context& ctx,
                               const std::vector<ns::NodeEntry>& nodes,
                               FsckReport& report) {
  for (const ns::NodeEntry& n : nodes) {
    if (!n.invalid.empty()) {
      report.findings.push_back(
          {"(node record)", n.record.id(), "-", n.invalid});
    }
  }
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live,
                           ctx.store->ListLive());
  for (const ns::LiveEntry& l : live) {
    if (!l.invalid.empty()) {
      report.findings.push_back(
          {"(live record)", l.record.node_id(), "-", l.invalid});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FsckReport> CheckFiles(Context& ctx, const std::string& dir,
                                      bool checksums, int parallel) {
  RANGEFS_RETURN_IF_ERROR(ns::ValidateDir(dir));
  struct Check {
    std::string path, node, object;
    uint64_t need = 0;  // Object must hold at least this many bytes.
    bool sidecar = false;
  };
  std::vector<Check> checks;
  FsckReport report;
  ns::ListFilesOptions o{.dir = dir, .page_size = 1000};
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, ctx.store->ListFiles(o));
    for (const ns::FileEntry& f : r.files) {
      ++report.files;
      if (!f.invalid.empty()) {
        report.findings.push_back({f.path, "-", "-", f.invalid});
        continue;
      }
      const v1::FileLayout& l = f.layout;
      const bool sidecar = l.checksum() == v1::CRC32C_SIDECAR;
      for (const v1::Extent& e : l.extents()) {
        for (const v1::Replica& rep : e.replicas()) {
          checks.push_back({f.path, rep.node_id(), rep.object(),
                            rep.object_offset() + e.length(), sidecar});
        }
      }
      if (l.has_striped() && l.striped().targets_size() > 0) {
        const uint64_t w = l.striped().targets_size();
        for (uint64_t t = 0; t < w; ++t) {
          const uint64_t col =
              ColumnBytes(l.size(), l.striped().stripe_unit(), w, t);
          for (const v1::Replica& rep : l.striped().targets(t).replicas()) {
            checks.push_back({f.path, rep.node_id(), rep.object(),
                              rep.object_offset() + col, sidecar});
          }
        }
      }
    }
    if (ctx.progress) ctx.progress(report.files, 0);
    if (r.next_page_token.empty()) break;
    o.page_token = r.next_page_token;
    o.revision = r.revision;
  }
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           ctx.store->ListNodes());
  RANGEFS_RETURN_IF_ERROR(AddInvalidRecords(ctx, nodes, report));
  Agents agents(std::move(nodes), ctx.agent_tls);
  std::vector<std::string> problems(checks.size());
  ParallelFor(checks.size(), parallel, [&](size_t i) {
    const Check& c = checks[i];
    std::string& problem = problems[i];
    absl::Status s = agents.Call(c.node, [&](NodeClient& nc) -> absl::Status {
      const absl::Time deadline = absl::Now() + kSmallCallTimeout;
      RANGEFS_ASSIGN_OR_RETURN(node::StatObjectResponse st,
                               nc.StatObject(c.object, deadline));
      if (st.size() < c.need) {
        problem =
            absl::StrCat("short: ", st.size(), " bytes, layout needs ", c.need);
        return absl::OkStatus();
      }
      if (!checksums) return absl::OkStatus();
      if (!st.has_checksums()) {
        if (c.sidecar) problem = "no checksum sidecar";
        return absl::OkStatus();
      }
      RANGEFS_ASSIGN_OR_RETURN(
          node::ChecksumObjectResponse stored,
          nc.ChecksumObject(c.object, /*recompute=*/false, deadline));
      RANGEFS_ASSIGN_OR_RETURN(
          node::ChecksumObjectResponse now,
          nc.ChecksumObject(c.object, /*recompute=*/true,
                            absl::Now() + absl::Minutes(10)));
      std::vector<std::string> bad;
      const int n =
          std::max(stored.block_crc32c_size(), now.block_crc32c_size());
      for (int b = 0; b < n; ++b) {
        if (b >= stored.block_crc32c_size() || b >= now.block_crc32c_size() ||
            stored.block_crc32c(b) != now.block_crc32c(b)) {
          if (bad.size() < 5) bad.push_back(absl::StrCat(b));
        }
      }
      if (!bad.empty() || stored.size() != now.size()) {
        problem = absl::StrCat(
            "checksum mismatch (data differs from sidecar) in block(s) ",
            absl::StrJoin(bad, ","), " of ", stored.block_size(), " bytes");
      }
      return absl::OkStatus();
    });
    if (!s.ok()) {
      problem = absl::IsNotFound(s)
                    ? absl::StrCat("missing: ", s.message())
                    : absl::StrCat("unreachable or error: ", s.message());
    }
  });
  report.objects_checked = checks.size();
  for (size_t i = 0; i < checks.size(); ++i) {
    if (problems[i].empty()) continue;
    report.findings.push_back(
        {checks[i].path, checks[i].node, checks[i].object, problems[i]});
  }
  std::sort(report.findings.begin(), report.findings.end(),
            [](const FsckFinding& x, const FsckFinding& y) {
              return std::tie(x.path, x.node, x.object) <
                     std::tie(y.path, y.node, y.object);
            });
  return report;
}

absl::StatusOr<Table> RunFsck(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"checksums", "parallel"}));
  if (a.positional().size() > 1) {
    return absl::InvalidArgumentError(
        "usage: fsck [DIR] [--checksums] [--parallel=N]");
  }
  const std::string dir = a.positional().empty() ? "/" : a.positional()[0];
  RANGEFS_ASSIGN_OR_RETURN(int64_t parallel, a.GetInt("parallel", 8));
  RANGEFS_ASSIGN_OR_RETURN(
      FsckReport r,
      CheckFiles(ctx, dir, a.GetBool("checksums"),
                 static_cast<int>(std::max<int64_t>(1, parallel))));
  Table t;
  t.columns = {"path", "node", "object", "problem"};
  for (const FsckFinding& f : r.findings) {
    t.AddRow({f.path, f.node, f.object, f.problem});
  }
  t.message = absl::StrCat("fsck ", dir, ": ", r.files, " file(s), ",
                           r.objects_checked, " replica object(s) checked, ",
                           r.findings.size(), " problem(s)");
  if (!r.findings.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(r.findings.size(), " problem(s) found\n", FormatHuman(t)));
  }
  return t;
}

}  // namespace admin
}  // namespace rangefs
