#include "ingest/ingest_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "ec/codec.h"
#include "ingest/agents.h"
#include "ingest/ec_rows.h"
#include "ingest/follow_policy.h"
#include "ingest/replacement.h"
#include "loadbalancer/placement.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace ingest {
namespace {

using node::NodeClient;

static_assert(ns::kMaxEcCellsPerRow == ec::kMaxCellsPerRow,
              "the record gate's cap on k + m must be the codec's");

constexpr uint64_t kProgressStep = 64 << 20;
constexpr uint64_t kMaxMessageBytes = 1 << 20;
constexpr absl::Duration kSmallCallTimeout = absl::Seconds(30);

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
  bool local_error = false;  // the local file failed, not the node
  absl::Status status;
  uint32_t crc32c = 0;
};

// Where the columns go.
struct Placement {
  std::vector<lb::PlacementNode> candidates;  // what placement saw
  bool striped = false;
  int width = 1;                                  // data columns
  std::vector<std::vector<std::string>> columns;  // column -> replica nodes
  // Erasure-coded: columns holds k data then m parity columns.
  ns::EcGeometry ec;
  bool coded() const { return ec.k > 0; }
};

absl::Status ValidateOptions(const std::string& path, const IngestOptions& o) {
  RANGEFS_RETURN_IF_ERROR(ns::ValidatePath(path));
  if (o.stripe_unit == 0 || o.stripe_unit > (uint64_t{1} << 32)) {
    return absl::InvalidArgumentError("--stripe-unit must be in (0, 4G]");
  }
  if (o.replicas < 1 || o.replicas > ns::kMaxReplicas) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas must be in [1, ", ns::kMaxReplicas, "]"));
  }
  if (o.width < 0 || o.parallel < 1) {
    return absl::InvalidArgumentError("--width >= 1, --parallel >= 1");
  }
  if (o.ec_data != 0 || o.ec_parity != 0) {
    absl::Status spec =
        ec::ValidateCodecSpec({.kind = ec::CodecKind::kRsCauchyGf8,
                               .k = o.ec_data,
                               .m = o.ec_parity});
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--ec=", o.ec_data, "+", o.ec_parity, ": ", spec.message()));
    }
    if (o.stripe_unit < node::kMinBlockSize ||
        o.stripe_unit > node::kMaxBlockSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--ec needs a --stripe-unit (the cell, one CRC block) in [",
          node::kMinBlockSize, ", ", node::kMaxBlockSize, "]; got ",
          o.stripe_unit));
    }
    if (o.ec_min_rows < 0) {
      return absl::InvalidArgumentError("--ec-min-rows must be >= 0");
    }
  }
  return absl::OkStatus();
}

// True if a `size`-byte file is erasure-coded under `o` (else replicas).
bool CodesFile(uint64_t size, const IngestOptions& o) {
  if (o.ec_data == 0 || size == 0) return false;
  const uint64_t row = static_cast<uint64_t>(o.ec_data) * o.stripe_unit;
  return size >= static_cast<uint64_t>(o.ec_min_rows) * row;
}

ns::EcGeometry Geometry(uint64_t size, const IngestOptions& o) {
  ns::EcGeometry g;
  g.k = o.ec_data;
  g.m = o.ec_parity;
  g.cell = o.stripe_unit;
  g.size = size;
  const uint64_t row = static_cast<uint64_t>(g.k) * g.cell;
  g.rows = (size + row - 1) / row;
  return g;
}

// Opens `local` (a regular file) into `file`; returns its size.
absl::StatusOr<uint64_t> OpenLocal(const std::string& local, ScopedFile& file) {
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
  return static_cast<uint64_t>(st.st_size);
}

// The mod revision of an existing `path` (0: none). ALREADY_EXISTS when it
// exists and `overwrite` is false.
absl::StatusOr<int64_t> ExistingRevision(ns::NamespaceStore& store,
                                         const std::string& path,
                                         bool overwrite) {
  absl::StatusOr<ns::FileEntry> existing = store.GetFile(path);
  if (existing.ok()) {
    if (!overwrite) {
      return absl::AlreadyExistsError(absl::StrCat(
          "file ", path, " exists (use --overwrite to replace it)"));
    }
    return existing->mod_revision;
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  return 0;
}

// Placement candidates from the node and live records that pass the gate.
// `with_racks`: the zone key is "zone/rack", so that placement spreads
// over racks too (erasure-coded puts).
std::vector<lb::PlacementNode> Candidates(
    const std::vector<ns::NodeEntry>& nodes,
    const std::vector<ns::LiveEntry>& live, bool with_racks) {
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
    p.zone = with_racks ? absl::StrCat(n.record.zone(), "/", n.record.rack())
                        : n.record.zone();
    p.admin = n.record.admin_state() == v1::ACTIVE ? lb::AdminState::kActive
              : n.record.admin_state() == v1::DRAINING
                  ? lb::AdminState::kDraining
                  : lb::AdminState::kDisabled;
    p.live = l != nullptr && (l->health() == v1::LiveRecord::HEALTHY ||
                              l->health() == v1::LiveRecord::DEGRADED);
    p.free_bytes = l != nullptr ? l->free_bytes() : 0;
    candidates.push_back(std::move(p));
  }
  return candidates;
}

// k + m columns of one object each on k + m distinct nodes: one target of
// k + m replicas for lb::PlaceStripes (distinct nodes; distinct zone/rack
// keys where there are enough), then one node per column.
absl::StatusOr<Placement> PlaceCoded(Placement out, const std::string& path,
                                     uint64_t size, const IngestOptions& o,
                                     size_t eligible) {
  out.ec = Geometry(size, o);
  out.striped = true;
  out.width = out.ec.k;
  const int n = out.ec.k + out.ec.m;
  if (eligible < static_cast<size_t>(n)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "placing ", path, " with --ec=", out.ec.k, "+", out.ec.m, ": needs ", n,
        " live active nodes with free space (one per column, all "
        "distinct), the cluster has ",
        eligible, "; nothing was written"));
  }
  absl::BitGen bitgen;
  absl::StatusOr<std::vector<std::vector<lb::NodeId>>> placed =
      lb::PlaceStripes(out.candidates, 1, n, bitgen);
  if (!placed.ok()) {
    return absl::Status(placed.status().code(),
                        absl::StrCat("placing ", path, " with --ec: ",
                                     placed.status().message()));
  }
  for (const lb::NodeId& id : placed->front()) out.columns.push_back({id});
  return out;
}

absl::StatusOr<Placement> Place(const std::vector<lb::PlacementNode>& cluster,
                                const std::string& path, uint64_t size,
                                const IngestOptions& o) {
  Placement out;
  out.candidates = cluster;
  const std::vector<lb::PlacementNode>& candidates = out.candidates;
  size_t eligible = 0;
  for (const lb::PlacementNode& p : candidates) {
    eligible +=
        p.live && p.admin == lb::AdminState::kActive && p.free_bytes > 0;
  }
  if (CodesFile(size, o))
    return PlaceCoded(std::move(out), path, size, o, eligible);
  out.striped = size >= o.stripe_unit;
  if (out.striped) {
    out.width =
        o.width > 0 ? o.width : std::max<int>(1, static_cast<int>(eligible));
    const uint64_t units = (size + o.stripe_unit - 1) / o.stripe_unit;
    out.width = static_cast<int>(std::min<uint64_t>(out.width, units));
  }
  if (size == 0) return out;
  absl::BitGen bitgen;
  absl::StatusOr<std::vector<std::vector<lb::NodeId>>> placed =
      lb::PlaceStripes(candidates, out.width, o.replicas, bitgen);
  if (!placed.ok()) {
    return absl::Status(placed.status().code(),
                        absl::StrCat("placing ", path, " (", eligible,
                                     " live active node(s) with free space): ",
                                     placed.status().message()));
  }
  out.columns = *std::move(placed);
  return out;
}

std::vector<WriteTask> MakeTasks(const Placement& p, uint64_t size,
                                 uint64_t unit) {
  const std::string prefix = absl::StrCat("f/", RandomHex());
  std::vector<WriteTask> tasks;
  for (size_t t = 0; t < p.columns.size(); ++t) {
    for (const std::string& n : p.columns[t]) {
      WriteTask w;
      w.unit = t;
      w.node = n;
      w.object = p.striped ? absl::StrCat(prefix, "/c", t)
                           : absl::StrCat(prefix, "/e0");
      w.bytes = p.coded()   ? ns::EcColumnBytes(p.ec, static_cast<int>(t))
                : p.striped ? ColumnBytes(size, unit, p.width, t)
                            : size;
      tasks.push_back(std::move(w));
    }
  }
  return tasks;
}

// Shared state of one put's writers. Thread-safe.
struct WriteState {
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> done{0};
  uint64_t total = 0;
  absl::Mutex progress_mu;
  const IngestOptions* options = nullptr;
  ParityRows* parity = nullptr;  // erasure-coded puts only

  void Report(uint64_t before, uint64_t after) {
    if (!options->progress) return;
    if (before / kProgressStep != after / kProgressStep || after == total) {
      absl::MutexLock l(&progress_mu);
      options->progress(after, total);
    }
  }
};

// Streams task `w`'s column of the local file to one agent.
absl::Status WriteOne(NodeClient& c, WriteTask& w, const ScopedFile& file,
                      const std::string& local, uint64_t size,
                      const Placement& p, WriteState& state) {
  const uint64_t unit = state.options->stripe_unit;
  ColumnReader reader(file.fd, local, size, p.striped ? unit : size,
                      p.striped ? p.width : 1, p.striped ? w.unit : 0);
  // Parity column j = unit - k of an erasure-coded put.
  std::unique_ptr<ParityColumnReader> parity;
  if (p.coded() && static_cast<int>(w.unit) >= p.ec.k) {
    parity = std::make_unique<ParityColumnReader>(
        *state.parity, static_cast<int>(w.unit) - p.ec.k);
  }
  uint64_t sent = 0;
  node::WriteCallOptions o;
  o.deadline = absl::Now() + absl::Seconds(60) +
               absl::Seconds(static_cast<double>(w.bytes) / (20 << 20));
  o.overwrite = false;
  // Erasure-coded: one sidecar CRC block per cell.
  o.block_size =
      p.coded() ? static_cast<uint32_t>(unit) : node::kDefaultBlockSize;
  o.expected_size = static_cast<int64_t>(w.bytes);
  // A message no larger than the object: the client sizes (and zero-fills)
  // its buffer to chunk_bytes per message, 4 MiB by default, which for
  // small files cost more CPU than the rest of the put. At most 1 MiB:
  // a put of a directory has up to jobs x parallel streams open.
  o.chunk_bytes = static_cast<size_t>(
      std::clamp<uint64_t>(w.bytes, 4096, kMaxMessageBytes));
  auto r = c.WriteObject(
      w.object,
      [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
        if (state.failed.load()) return absl::CancelledError("put aborted");
        absl::StatusOr<size_t> read =
            parity != nullptr ? parity->Read(dst) : reader.Read(dst);
        if (!read.ok()) {
          w.local_error = true;
          return read.status();
        }
        const size_t n = *read;
        sent += n;
        const uint64_t after = state.done.fetch_add(n) + n;
        state.Report(after - n, after);
        return n;
      },
      o);
  if (!r.ok()) {
    state.done.fetch_sub(sent);
    return r.status();
  }
  if (r->size() != w.bytes) {
    return absl::DataLossError(absl::StrCat("node ", w.node, " stored ",
                                            r->size(), " bytes of ", w.object,
                                            ", expected ", w.bytes));
  }
  w.crc32c = r->crc32c();
  return absl::OkStatus();
}

// The first real failure among the tasks (a cancellation only if nothing
// else failed), with the object and node named.
absl::Status FirstError(const std::vector<WriteTask>& tasks) {
  for (const WriteTask& w : tasks) {
    if (!w.status.ok() && !absl::IsCancelled(w.status)) {
      return absl::Status(w.status.code(),
                          absl::StrCat("writing ", w.object, " to node ",
                                       w.node, ": ", w.status.message()));
    }
  }
  absl::Status first;
  for (const WriteTask& w : tasks) {
    if (!w.status.ok()) first = w.status;
  }
  return first;
}

v1::FileLayout BuildLayout(const Placement& p, uint64_t size, uint64_t unit,
                           const std::vector<WriteTask>& tasks) {
  v1::FileLayout layout;
  layout.set_size(size);
  layout.set_state(v1::READY);
  layout.set_checksum(v1::CRC32C_SIDECAR);
  layout.set_checksum_block_size(node::kDefaultBlockSize);
  if (p.striped) {
    v1::StripedLayout* s = layout.mutable_striped();
    s->set_stripe_unit(unit);
    if (p.coded()) {
      layout.set_state(v1::READY_EC);
      layout.set_checksum_block_size(static_cast<uint32_t>(unit));
      v1::ErasureCode* e = s->mutable_erasure();
      e->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
      e->set_data_columns(static_cast<uint32_t>(p.ec.k));
      e->set_parity_columns(static_cast<uint32_t>(p.ec.m));
    }
    for (size_t t = 0; t < p.columns.size(); ++t) s->add_targets();
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
  return layout;
}

// Deletes what a failed put wrote (or may have written); returns the
// objects ("node:object", sorted) that could not be removed.
std::vector<std::string> RemoveWritten(const std::vector<WriteTask>& tasks,
                                       Agents& agents, int parallel) {
  std::vector<std::string> leftovers;
  absl::Mutex left_mu;
  ParallelFor(tasks.size(), parallel, [&](size_t i) {
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
                               code == absl::StatusCode::kAborted ||
                               code == absl::StatusCode::kDataLoss;
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
  return leftovers;
}

// WriteTask.unit of a ".cells" object.
constexpr size_t kCellsUnit = static_cast<size_t>(-1);

// Writes each parity column's ".cells" object (the k + m CRCs of every
// row, ParityRows::CellsObject) next to it, in parallel. Appends the tasks
// to `all` (so a failed put removes them); the first error, if any.
absl::Status WriteCellChecksums(const Placement& p,
                                const std::vector<WriteTask>& tasks,
                                const ParityRows& parity, Agents& agents,
                                std::vector<WriteTask>* all) {
  RANGEFS_ASSIGN_OR_RETURN(const std::string cells, parity.CellsObject());
  std::vector<WriteTask> writes;
  for (const WriteTask& w : tasks) {
    if (static_cast<int>(w.unit) < p.ec.k) continue;
    WriteTask c;
    c.unit = kCellsUnit;
    c.node = w.node;
    c.object = ns::EcCellsObject(w.object);
    c.bytes = cells.size();
    writes.push_back(std::move(c));
  }
  ParallelFor(writes.size(), static_cast<int>(writes.size()), [&](size_t i) {
    WriteTask& c = writes[i];
    c.started = true;
    c.status = agents.Call(c.node, [&](NodeClient& client) {
      size_t at = 0;
      node::WriteCallOptions o;
      o.deadline = absl::Now() + kSmallCallTimeout;
      o.overwrite = false;
      o.expected_size = static_cast<int64_t>(cells.size());
      o.chunk_bytes = static_cast<size_t>(
          std::clamp<uint64_t>(cells.size(), 4096, kMaxMessageBytes));
      auto r = client.WriteObject(
          c.object,
          [&](absl::Span<char> dst) -> absl::StatusOr<size_t> {
            const size_t n = std::min(dst.size(), cells.size() - at);
            std::copy_n(cells.data() + at, n, dst.data());
            at += n;
            return n;
          },
          o);
      if (!r.ok()) return r.status();
      if (r->size() != cells.size()) {
        return absl::DataLossError(absl::StrCat(
            "stored ", r->size(), " bytes, expected ", cells.size()));
      }
      return absl::OkStatus();
    });
  });
  absl::Status error = FirstError(writes);
  for (WriteTask& c : writes) all->push_back(std::move(c));
  return error;
}

absl::Status Undo(const std::string& path, const absl::Status& error,
                  const std::vector<WriteTask>& tasks, Agents& agents,
                  int parallel) {
  const std::vector<std::string> leftovers =
      RemoveWritten(tasks, agents, parallel);
  std::string note =
      leftovers.empty()
          ? " (nothing visible; written objects removed)"
          : absl::StrCat(" (nothing visible; could not remove ",
                         leftovers.size(), " object(s), remove by hand: ",
                         absl::StrJoin(leftovers, " "), ")");
  return absl::Status(error.code(), absl::StrCat("file put ", path, ": ",
                                                 error.message(), note));
}

// Moves writes whose node failed to other nodes (PickReplacement).
// Thread-safe: a task's node changes only under mu_.
class Replacer {
 public:
  Replacer(const Placement& p, std::vector<WriteTask>& tasks)
      : candidates_(p.candidates), all_distinct_(p.coded()), tasks_(tasks) {
    for (const lb::PlacementNode& n : candidates_) zone_[n.id] = n.zone;
    for (const WriteTask& w : tasks_) planned_[w.node] += w.bytes;
  }

  // Task i's write failed on its node (tasks_[i].status): points the task
  // at another node and keeps the failed attempt for deletion. False (the
  // task unchanged) when no node is eligible.
  bool Replace(size_t i) {
    absl::MutexLock l(&mu_);
    WriteTask& w = tasks_[i];
    failed_nodes_.insert(w.node);
    std::set<lb::NodeId> exclude = failed_nodes_;
    std::set<std::string> zones;
    for (size_t j = 0; j < tasks_.size(); ++j) {
      // Erasure-coded: every column on its own node.
      if (j == i || (tasks_[j].unit != w.unit && !all_distinct_)) continue;
      exclude.insert(tasks_[j].node);
      zones.insert(zone_[tasks_[j].node]);
    }
    absl::StatusOr<lb::NodeId> next =
        PickReplacement(candidates_, exclude, zones, planned_, bitgen_);
    if (!next.ok()) {
      w.status = absl::Status(
          w.status.code(),
          absl::StrCat(w.status.message(), "; no node to re-place it on: ",
                       next.status().message()));
      return false;
    }
    replaced_.push_back(absl::StrCat(w.object, ": ", w.node, " -> ", *next,
                                     " (", w.status.message(), ")"));
    abandoned_.push_back(w);
    planned_[w.node] -= w.bytes;
    planned_[*next] += w.bytes;
    w.node = *next;
    w.status = absl::OkStatus();
    w.started = false;
    return true;
  }

  std::vector<std::string> replaced() {
    absl::MutexLock l(&mu_);
    return replaced_;
  }
  std::vector<WriteTask> abandoned() {
    absl::MutexLock l(&mu_);
    return abandoned_;
  }

 private:
  const std::vector<lb::PlacementNode> candidates_;
  const bool all_distinct_;
  std::vector<WriteTask>& tasks_;
  absl::Mutex mu_;
  std::map<lb::NodeId, std::string> zone_ ABSL_GUARDED_BY(mu_);
  std::map<lb::NodeId, uint64_t> planned_ ABSL_GUARDED_BY(mu_);
  std::set<lb::NodeId> failed_nodes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> replaced_ ABSL_GUARDED_BY(mu_);
  std::vector<WriteTask> abandoned_ ABSL_GUARDED_BY(mu_);
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

// What placement reads of the cluster, and the agents' connections.
struct IngestSession::View {
  std::vector<lb::PlacementNode> candidates;
  std::vector<lb::PlacementNode> rack_candidates;  // zone key "zone/rack"
  std::unique_ptr<Agents> agents;
};

IngestSession::IngestSession(ns::NamespaceStore& store, IngestOptions options,
                             absl::Duration refresh)
    : store_(store), options_(std::move(options)), refresh_(refresh) {}

IngestSession::~IngestSession() = default;

absl::StatusOr<std::shared_ptr<const IngestSession::View>>
IngestSession::CurrentView() {
  absl::MutexLock l(&mu_);
  const absl::Time now = absl::Now();
  if (view_ != nullptr && now - view_time_ < refresh_) return view_;
  // Read under the lock: concurrent puts wait for one read, not one each.
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           store_.ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live, store_.ListLive());
  auto view = std::make_shared<View>();
  view->candidates = Candidates(nodes, live, false);
  view->rack_candidates = Candidates(nodes, live, true);
  view->agents = std::make_unique<Agents>(std::move(nodes), options_.agent_tls);
  view_ = view;
  view_time_ = now;
  return view_;
}

absl::StatusOr<uint64_t> IngestSession::NextFileId() {
  absl::MutexLock l(&ids_mu_);
  if (first_put_) {
    first_put_ = false;
    return 0;
  }
  if (ids_left_ == 0) {
    RANGEFS_ASSIGN_OR_RETURN(next_id_, store_.ReserveFileIds(block_));
    ids_left_ = block_;
    block_ = std::min<uint64_t>(block_ * 2, 1024);
  }
  --ids_left_;
  return next_id_++;
}

void IngestSession::Invalidate() {
  absl::MutexLock l(&mu_);
  view_time_ = absl::InfinitePast();
}

absl::StatusOr<IngestResult> IngestFile(ns::NamespaceStore& store,
                                        const std::string& local,
                                        const std::string& path,
                                        const IngestOptions& options) {
  IngestSession session(store, options);
  return session.Put(local, path);
}

absl::StatusOr<IngestResult> IngestSession::Put(
    const std::string& local, const std::string& path,
    const std::function<void(size_t, size_t)>& progress, bool known_absent) {
  IngestOptions options = options_;
  if (progress) options.progress = progress;
  RANGEFS_RETURN_IF_ERROR(ValidateOptions(path, options));
  ScopedFile file;
  RANGEFS_ASSIGN_OR_RETURN(const uint64_t size, OpenLocal(local, file));
  std::string policy;
  if (options.policies != nullptr) {
    policy = FollowPolicy(*options.policies, path, size, absl::Now(), options);
    // The policy's code with the put's stripe unit and minimum rows.
    if (!policy.empty()) {
      if (absl::Status s = ValidateOptions(path, options); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(path, ": storage policy of ",
                                                   policy, ": ", s.message()));
      }
    }
  }
  int64_t existing_rev = 0;
  if (!known_absent) {
    RANGEFS_ASSIGN_OR_RETURN(existing_rev,
                             ExistingRevision(store_, path, options.overwrite));
  }
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const View> view, CurrentView());
  std::string note;
  if (options.ec_data > 0 && !CodesFile(size, options)) {
    note = absl::StrCat(path, ": ", size, " bytes, under --ec's minimum of ",
                        options.ec_min_rows, " full rows (",
                        options.ec_min_rows, " x ", options.ec_data, " x ",
                        options.stripe_unit, " bytes): stored with ",
                        options.replicas, " replica(s) instead");
  }
  const bool coded = CodesFile(size, options);
  auto candidates = [&] {
    return coded ? view->rack_candidates : view->candidates;
  };
  absl::StatusOr<Placement> placed = Place(candidates(), path, size, options);
  if (!placed.ok()) {
    // Placement saw a view up to `refresh` old: decide on a fresh one.
    Invalidate();
    RANGEFS_ASSIGN_OR_RETURN(view, CurrentView());
    placed = Place(candidates(), path, size, options);
  }
  if (!placed.ok()) return placed.status();
  Placement& placement = *placed;
  std::vector<WriteTask> tasks =
      MakeTasks(placement, size, options.stripe_unit);

  Agents& agents = *view->agents;
  WriteState state;
  state.total = 0;
  for (const WriteTask& w : tasks) state.total += w.bytes;
  state.options = &options;
  std::unique_ptr<ec::Codec> codec;
  std::unique_ptr<ParityRows> parity;
  if (placement.coded()) {
    RANGEFS_ASSIGN_OR_RETURN(
        codec, ec::NewCodec({.k = placement.ec.k, .m = placement.ec.m}));
    parity = std::make_unique<ParityRows>(file.fd, local, placement.ec, *codec);
    state.parity = parity.get();
  }
  Replacer replacer(placement, tasks);
  ParallelFor(tasks.size(), options.parallel, [&](size_t i) {
    WriteTask& w = tasks[i];
    for (int moves = 0;; ++moves) {
      if (state.failed.load()) {
        w.status = absl::CancelledError("put aborted");
        return;
      }
      w.started = true;
      w.status = agents.Call(w.node, [&](NodeClient& c) {
        return WriteOne(c, w, file, local, size, placement, state);
      });
      if (w.status.ok() || w.local_error || !NodeFailure(w.status) ||
          moves >= options.replace_attempts || !replacer.Replace(i)) {
        break;
      }
    }
    if (!w.status.ok()) state.failed.store(true);
  });
  // Failed attempts (re-placed) are deleted whether or not the put
  // succeeds.
  std::vector<WriteTask> all = tasks;
  const std::vector<WriteTask> abandoned = replacer.abandoned();
  all.insert(all.end(), abandoned.begin(), abandoned.end());

  absl::Status error = FirstError(tasks);
  if (error.ok() && placement.coded()) {
    error = WriteCellChecksums(placement, tasks, *parity, agents, &all);
  }
  if (!replacer.replaced().empty() || !error.ok()) Invalidate();
  if (!error.ok()) return Undo(path, error, all, agents, options.parallel);
  v1::FileLayout layout =
      BuildLayout(placement, size, options.stripe_unit, tasks);
  absl::StatusOr<ns::FileEntry> committed;
  if (existing_rev != 0) {
    committed = store_.OverwriteFile(path, layout, existing_rev);
  } else {
    absl::StatusOr<uint64_t> id = NextFileId();
    if (id.ok()) {
      layout.set_file_id(*id);
      committed = store_.CreateFile(path, layout);
    } else {
      committed = id.status();
    }
  }
  if (!committed.ok()) {
    error = absl::Status(committed.status().code(),
                         absl::StrCat("committing layout of ", path,
                                      " (data written, not visible): ",
                                      committed.status().message()));
    return Undo(path, error, all, agents, options.parallel);
  }
  IngestResult result;
  result.replaced = replacer.replaced();
  result.leftovers = RemoveWritten(abandoned, agents, options.parallel);
  result.size = size;
  result.striped = placement.striped;
  result.width = placement.width;
  result.file_id = committed->layout.file_id();
  result.objects = tasks.size();
  result.ec_data = placement.ec.k;
  result.ec_parity = placement.ec.m;
  result.note = note;
  result.policy = policy;
  result.replicas = placement.coded() ? 1 : options.replicas;
  for (size_t i = 0; i < all.size(); ++i) {
    // The put's objects: the columns' and the ".cells" objects (after
    // `tasks` and the failed attempts, which were removed).
    if (i < tasks.size() || all[i].unit == kCellsUnit) {
      result.raw_bytes += all[i].bytes;
    }
  }
  return result;
}

}  // namespace ingest
}  // namespace rangefs
