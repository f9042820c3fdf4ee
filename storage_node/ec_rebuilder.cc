#include "storage_node/ec_rebuilder.h"

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crc32c.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "ec/codec.h"
#include "namespace/ec_layout.h"
#include "storage_node/ec_staging.h"
#include "storage_node/object_writer.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {
namespace {

// Peer clients kept; past it the cache starts over (addresses come from
// callers, so it must not grow without bound).
constexpr size_t kMaxPeers = 256;
// Largest object offset a survivor may name (no overflow past it).
constexpr uint64_t kMaxObjectOffset = uint64_t{1} << 60;
constexpr absl::Duration kDefaultSurvivorTimeout = absl::Seconds(30);

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("RebuildEcColumn: ", what));
}

ns::EcGeometry GeometryOf(const RebuildEcColumnRequest& r) {
  ns::EcGeometry g;
  g.k = r.k();
  g.m = r.m();
  g.cell = r.cell_size();
  g.size = r.file_size();
  const uint64_t row_bytes = static_cast<uint64_t>(g.k) * g.cell;
  g.rows = (g.size + row_bytes - 1) / row_bytes;
  return g;
}

uint64_t StoredBytes(const ns::EcGeometry& g, uint64_t row, int t) {
  return t < g.k ? ns::DataCellBytes(g, row, t) : g.cell;
}

// The request's rows: [first_row, end).
uint64_t EndRow(const RebuildEcColumnRequest& r, const ns::EcGeometry& g) {
  return r.has_row_count() ? r.first_row() + r.row_count() : g.rows;
}

// first_row, row_count, rebuild_id and the CRCs of the range (the
// geometry's fields are valid).
absl::Status ValidateRange(const RebuildEcColumnRequest& r) {
  const ns::EcGeometry g = GeometryOf(r);
  const uint64_t n = static_cast<uint64_t>(r.k() + r.m());
  if (r.first_row() >= g.rows && !(g.rows == 0 && r.first_row() == 0)) {
    return Invalid(absl::StrCat("first_row ", r.first_row(),
                                " is not below the file's ", g.rows, " rows"));
  }
  if (r.has_row_count() &&
      (r.row_count() == 0 || r.row_count() > g.rows - r.first_row())) {
    return Invalid(absl::StrCat("row_count ", r.row_count(), " from first_row ",
                                r.first_row(), " is not in [1, ",
                                g.rows - r.first_row(), "] (the file has ",
                                g.rows, " rows)"));
  }
  const uint64_t end = EndRow(r, g);
  const uint64_t rows = end - r.first_row();
  if (rows > static_cast<uint64_t>(kMaxEcRebuildCrcs) / n) {
    return Invalid(absl::StrCat(
        "rows [", r.first_row(), ", ", end, ") of ", n, " cells: more than ",
        kMaxEcRebuildCrcs, " cell CRCs in one call (set row_count lower)"));
  }
  if (static_cast<uint64_t>(r.cell_crc32c_size()) != rows * n) {
    return Invalid(absl::StrCat(r.cell_crc32c_size(), " cell CRCs; rows [",
                                r.first_row(), ", ", end, ") of ", n,
                                " cells need ", rows * n));
  }
  const bool whole = r.first_row() == 0 && end == g.rows;
  if (!whole && r.rebuild_id() == 0) {
    return Invalid(absl::StrCat("rebuild_id 0: rows [", r.first_row(), ", ",
                                end, ") are not the whole column (", g.rows,
                                " rows), so a nonzero rebuild_id must tie "
                                "them to their attempt"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRebuildRequest(const RebuildEcColumnRequest& r) {
  if (absl::Status s = ExportRoot::ValidateObjectPath(r.path()); !s.ok()) {
    return Invalid(absl::StrCat("path: ", s.message()));
  }
  if (absl::Status s = ec::ValidateCodecSpec({.k = r.k(), .m = r.m()});
      !s.ok()) {
    return Invalid(
        absl::StrCat("k = ", r.k(), ", m = ", r.m(), ": ", s.message()));
  }
  const int n = r.k() + r.m();
  if (r.column() < 0 || r.column() >= n) {
    return Invalid(
        absl::StrCat("column ", r.column(), " is not in [0, ", n, ")"));
  }
  if (r.cell_size() < kMinBlockSize || r.cell_size() > kMaxBlockSize) {
    return Invalid(absl::StrCat("cell_size ", r.cell_size(), " is not in [",
                                kMinBlockSize, ", ", kMaxBlockSize, "]"));
  }
  if (r.file_size() > kMaxEcRebuildFileSize) {
    return Invalid(absl::StrCat("file_size ", r.file_size(), " is past ",
                                kMaxEcRebuildFileSize));
  }
  RANGEFS_RETURN_IF_ERROR(ValidateRange(r));
  if (r.survivors_size() < r.k() || r.survivors_size() >= n) {
    return Invalid(absl::StrCat(r.survivors_size(), " survivors; between ",
                                r.k(), " and ", n - 1, " are needed"));
  }
  std::set<int> seen;
  for (int i = 0; i < r.survivors_size(); ++i) {
    const EcSurvivor& s = r.survivors(i);
    const std::string which =
        absl::StrCat("survivor ", i, " (column ", s.column(), ")");
    if (s.column() < 0 || s.column() >= n || s.column() == r.column() ||
        !seen.insert(s.column()).second) {
      return Invalid(absl::StrCat(which, ": not a distinct column of [0, ", n,
                                  ") other than ", r.column()));
    }
    if (s.address().empty() || s.address().size() > kMaxEcSurvivorAddress) {
      return Invalid(absl::StrCat(which, ": address must be host:port of 1 to ",
                                  kMaxEcSurvivorAddress, " bytes"));
    }
    if (absl::Status p = ExportRoot::ValidateObjectPath(s.path()); !p.ok()) {
      return Invalid(absl::StrCat(which, ": path: ", p.message()));
    }
    if (s.object_offset() > kMaxObjectOffset) {
      return Invalid(absl::StrCat(which, ": object_offset ", s.object_offset(),
                                  " is past ", kMaxObjectOffset));
    }
  }
  return absl::OkStatus();
}

absl::Duration StagingSweepInterval(absl::Duration idle) {
  return std::clamp(idle / 4, absl::Seconds(1), absl::Minutes(10));
}

EcRebuilder::EcRebuilder(const ExportRoot* root, EcRebuilderOptions options)
    : root_(root),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()) {
  if (root_->writable() && options_.staging_idle > absl::ZeroDuration()) {
    sweeper_ = std::make_unique<PeriodicTask>(
        StagingSweepInterval(options_.staging_idle), [this] {
          absl::StatusOr<EcStagingSweep> s =
              SweepIdleStaging(options_.staging_idle);
          if (!s.ok()) {
            RANGEFS_LOG(WARNING) << "sweeping idle EC staging objects of "
                                 << root_->root_dir() << ": " << s.status();
          }
        });
  }
}

EcRebuilder::~EcRebuilder() { sweeper_.reset(); }

absl::StatusOr<EcStagingSweep> EcRebuilder::SweepIdleStaging(
    absl::Duration idle) {
  const absl::Time idle_before = clock_->Now() - idle;
  RANGEFS_ASSIGN_OR_RETURN(std::vector<EcStagingFiles> found,
                           ListEcStaging(*root_));
  EcStagingSweep swept;
  for (const EcStagingFiles& f : found) {
    if (f.last_write >= idle_before) continue;
    {
      absl::MutexLock l(&mu_);
      if (busy_.count(f.name) > 0 || !sweeping_.insert(f.name).second) {
        continue;  // a call (or another sweep) has it
      }
    }
    // No call can write it now: look again (one may have, since the list).
    absl::StatusOr<EcStagingFiles> now = StatEcStaging(*root_, f.name);
    absl::Status s = now.status();
    if (now.ok() && now->last_write < idle_before) {
      s = RemoveEcStaging(*root_, f.name);
      if (s.ok()) {
        ++swept.objects;
        swept.bytes += now->bytes;
        RANGEFS_LOG(INFO) << "swept EC staging " << f.name << " of "
                          << root_->root_dir() << " (" << now->bytes
                          << " bytes), idle since " << now->last_write;
      }
    }
    if (!s.ok() && !absl::IsNotFound(s)) {
      RANGEFS_LOG(WARNING) << "sweeping EC staging " << f.name << ": " << s;
    }
    absl::MutexLock l(&mu_);
    sweeping_.erase(f.name);
  }
  if (swept.bytes > 0 && options_.on_swept_bytes) {
    options_.on_swept_bytes(swept.bytes);
  }
  return swept;
}

absl::StatusOr<NodeClient*> EcRebuilder::Peer(const std::string& address) {
  absl::MutexLock l(&mu_);
  auto it = peers_.find(address);
  if (it != peers_.end()) return it->second.get();
  if (peers_.size() >= kMaxPeers) peers_.clear();
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<NodeClient> c,
                           NodeClient::Connect(address, options_.peer_tls));
  NodeClient* raw = c.get();
  peers_[address] = std::move(c);
  return raw;
}

namespace {

// One rebuild in progress: the request, the survivors' order, the codec.
class ColumnRebuild {
 public:
  ColumnRebuild(
      const RebuildEcColumnRequest& r, const ec::Codec& codec,
      std::function<absl::StatusOr<NodeClient*>(const std::string&)> peer,
      absl::Time deadline)
      : r_(r),
        g_(GeometryOf(r)),
        codec_(codec),
        peer_(std::move(peer)),
        deadline_(deadline) {
    for (int i = 0; i < r.survivors_size(); ++i) order_.push_back(i);
    timeout_ = r.survivor_timeout_ms() > 0
                   ? absl::Milliseconds(r.survivor_timeout_ms())
                   : kDefaultSurvivorTimeout;
  }

  // The stored bytes of the column's cell of `row`, verified.
  absl::StatusOr<std::string> Row(uint64_t row);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  absl::StatusOr<std::string> ReadCell(const EcSurvivor& s, uint64_t row);
  uint32_t Crc(uint64_t row, int t) const {
    return r_.cell_crc32c(static_cast<int>(
        (row - r_.first_row()) * static_cast<uint64_t>(g_.k + g_.m) +
        static_cast<uint64_t>(t)));
  }

  const RebuildEcColumnRequest& r_;
  const ns::EcGeometry g_;
  const ec::Codec& codec_;
  const std::function<absl::StatusOr<NodeClient*>(const std::string&)> peer_;
  const absl::Time deadline_;
  absl::Duration timeout_;
  std::vector<int> order_;  // survivor indexes, those that failed last
  uint64_t bytes_read_ = 0;
};

absl::StatusOr<std::string> ColumnRebuild::ReadCell(const EcSurvivor& s,
                                                    uint64_t row) {
  const uint64_t stored = StoredBytes(g_, row, s.column());
  std::string cell(g_.cell, '\0');  // zero-padded for coding
  RANGEFS_ASSIGN_OR_RETURN(NodeClient * peer, peer_(s.address()));
  const uint64_t at = s.object_offset() + row * g_.cell;
  size_t got = 0;
  while (got < stored) {
    RANGEFS_ASSIGN_OR_RETURN(
        size_t n,
        peer->ReadRange(
            s.path(), at + got, absl::MakeSpan(cell.data() + got, stored - got),
            {.deadline = std::min(deadline_, absl::Now() + timeout_),
             .verify_on_server = true,
             .check_chunk_crc = true}));
    if (n == 0) {
      return absl::DataLossError(
          absl::StrCat(s.path(), " on ", s.address(), " ends at byte ",
                       at + got, "; the column needs ", at + stored));
    }
    got += n;
  }
  if (Crc32c(absl::string_view(cell.data(), stored)) != Crc(row, s.column())) {
    return absl::DataLossError(
        absl::StrCat(s.path(), " on ", s.address(),
                     ": checksum mismatch with the cell CRC table"));
  }
  return cell;
}

absl::StatusOr<std::string> ColumnRebuild::Row(uint64_t row) {
  const int n = g_.k + g_.m;
  const int t = r_.column();
  std::vector<std::string> held(static_cast<size_t>(n));
  std::vector<const char*> present(static_cast<size_t>(n), nullptr);
  std::vector<std::string> skipped;
  std::vector<int> good, failed;
  size_t next = 0;
  // The missing number of survivors are read at once, then again for each
  // one that failed, until k are good or none is left.
  while (static_cast<int>(good.size()) < g_.k && next < order_.size()) {
    const size_t batch =
        std::min(order_.size() - next, static_cast<size_t>(g_.k) - good.size());
    std::vector<absl::StatusOr<std::string>> got(
        batch, absl::UnavailableError("not read"));
    std::vector<std::thread> threads;
    for (size_t i = 1; i < batch; ++i) {
      threads.emplace_back(
          [&, i] { got[i] = ReadCell(r_.survivors(order_[next + i]), row); });
    }
    got[0] = ReadCell(r_.survivors(order_[next]), row);
    for (std::thread& th : threads) th.join();
    for (size_t i = 0; i < batch; ++i) {
      const int idx = order_[next + i];
      const int s = r_.survivors(idx).column();
      bytes_read_ += StoredBytes(g_, row, s);
      if (!got[i].ok()) {
        skipped.push_back(
            absl::StrCat("column ", s, ": ", got[i].status().message()));
        failed.push_back(idx);
        continue;
      }
      held[s] = *std::move(got[i]);
      present[s] = held[s].data();
      good.push_back(idx);
    }
    next += batch;
  }
  // Survivors that failed are asked last from now on.
  std::vector<int> order = good;
  for (size_t i = next; i < order_.size(); ++i) order.push_back(order_[i]);
  order.insert(order.end(), failed.begin(), failed.end());
  order_ = std::move(order);
  if (static_cast<int>(good.size()) < g_.k) {
    return absl::DataLossError(absl::StrCat(
        "row ", row, ": only ", good.size(), " good cell(s) of the ", g_.k,
        " needed to rebuild column ", t, " (", absl::StrJoin(skipped, "; "),
        "); nothing written"));
  }
  std::string out(g_.cell, '\0');
  char* dst = out.data();
  const int wanted[] = {t};
  RANGEFS_RETURN_IF_ERROR(
      codec_.Decode(present, wanted, absl::MakeConstSpan(&dst, 1), g_.cell));
  const uint64_t stored = StoredBytes(g_, row, t);
  const bool padding_zero =
      std::all_of(out.begin() + static_cast<std::ptrdiff_t>(stored), out.end(),
                  [](char c) { return c == 0; });
  out.resize(stored);
  const uint32_t crc = Crc32c(out);
  if (!padding_zero || crc != Crc(row, t)) {
    return absl::DataLossError(absl::StrCat(
        "row ", row, ": rebuilt cell of column ", t, " has CRC-32C ",
        absl::Hex(crc), (padding_zero ? "" : " and non-zero padding"),
        ", the cell CRC table says ", absl::Hex(Crc(row, t)),
        " (a survivor is corrupt in a way its CRC does not show, or the "
        "table is wrong); nothing written"));
  }
  return out;
}

}  // namespace

absl::StatusOr<EcRebuildResult> EcRebuilder::Rebuild(
    const RebuildEcColumnRequest& request, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  RANGEFS_RETURN_IF_ERROR(ValidateRebuildRequest(request));
  const std::string name = EcStagingName(request.path());
  {
    absl::MutexLock l(&mu_);
    auto not_swept = [this, &name]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return sweeping_.count(name) == 0;
    };
    mu_.Await(absl::Condition(&not_swept));
    if (!busy_.insert(name).second) {
      return absl::AbortedError(
          absl::StrCat("RebuildEcColumn of ", request.path(),
                       ": another call on that path is running on this node"));
    }
  }
  absl::StatusOr<EcRebuildResult> r =
      RebuildRange(request, deadline, cancelled);
  absl::MutexLock l(&mu_);
  busy_.erase(name);
  return r;
}

absl::StatusOr<EcRebuildResult> EcRebuilder::RebuildRange(
    const RebuildEcColumnRequest& request, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  const std::string& path = request.path();
  if (!request.overwrite()) {
    absl::StatusOr<struct stat> st = root_->Stat(path);
    if (st.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("object ", path, " already exists in ",
                       root_->root_dir(), " (set overwrite to replace it)"));
    }
    if (!absl::IsNotFound(st.status())) return st.status();
  }
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ec::Codec> codec,
                           ec::NewCodec({.k = request.k(), .m = request.m()}));
  const ns::EcGeometry g = GeometryOf(request);
  const uint64_t first = request.first_row();
  const uint64_t end = EndRow(request, g);
  const bool ends_column = end == g.rows;
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<EcStaging> staging,
      EcStaging::Open(root_,
                      {.path = path,
                       .g = g,
                       .column = request.column(),
                       .rebuild_id = request.rebuild_id()},
                      /*fresh=*/first == 0 && ends_column));
  absl::StatusOr<EcRebuildResult> r =
      RebuildInto(*staging, request, *codec, deadline, cancelled);
  if (!r.ok() && first == 0 && ends_column) staging->Remove().IgnoreError();
  return r;
}

absl::StatusOr<EcRebuildResult> EcRebuilder::RebuildInto(
    EcStaging& staging, const RebuildEcColumnRequest& request,
    const ec::Codec& codec, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  const std::string& path = request.path();
  const ns::EcGeometry g = GeometryOf(request);
  const uint64_t first = request.first_row();
  const uint64_t end = EndRow(request, g);
  RateLimiter call_limiter(request.max_bytes_per_sec(), clock_);
  const absl::Time mono_deadline =
      deadline == absl::InfiniteFuture()
          ? deadline
          : clock_->MonotonicNow() + (deadline - absl::Now());
  ColumnRebuild rebuild(
      request, codec, [this](const std::string& a) { return Peer(a); },
      deadline);
  for (uint64_t row = first; row < end; ++row) {
    if (cancelled && cancelled()) {
      return absl::CancelledError(absl::StrCat(
          "rebuild of ", path, " cancelled at row ", row, " of ", g.rows));
    }
    RANGEFS_ASSIGN_OR_RETURN(std::string cell, rebuild.Row(row));
    // Paced by the bytes rebuilt (the survivors' reads are k times that).
    if (options_.limiter != nullptr) {
      RANGEFS_RETURN_IF_ERROR(
          options_.limiter->Acquire(cell.size(), mono_deadline));
    }
    RANGEFS_RETURN_IF_ERROR(call_limiter.Acquire(cell.size(), mono_deadline));
    RANGEFS_RETURN_IF_ERROR(staging.WriteCell(row, cell));
    if (options_.on_bytes) options_.on_bytes(cell.size());
  }
  RANGEFS_RETURN_IF_ERROR(staging.Record(first, request.cell_crc32c()));
  EcRebuildResult result;
  result.bytes_read = rebuild.bytes_read();
  if (end < g.rows) return result;
  std::unique_ptr<ObjectWriter> cells;
  if (request.column() >= g.k) {
    RANGEFS_ASSIGN_OR_RETURN(
        cells, ObjectWriter::Begin(root_, ns::EcCellsObject(path),
                                   static_cast<uint32_t>(g.cell)));
    RANGEFS_RETURN_IF_ERROR(staging.AppendCellsTable(*cells));
  }
  RANGEFS_ASSIGN_OR_RETURN(Checksums c, staging.Commit(request.overwrite()));
  result.committed = true;
  result.size = c.object_size;
  result.crc32c = c.crc32c;
  if (cells != nullptr) {
    RANGEFS_ASSIGN_OR_RETURN(Checksums cc, cells->Commit(request.overwrite()));
    result.cells_size = cc.object_size;
  }
  return result;
}

}  // namespace node
}  // namespace rangefs
