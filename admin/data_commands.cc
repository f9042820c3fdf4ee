#include "admin/data_commands.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "admin/bulk_put.h"
#include "admin/ec_fsck.h"
#include "admin/progress_meter.h"
#include "base/errno_status.h"
#include "base/status_macros.h"
#include "ingest/agents.h"
#include "ingest/ingest_writer.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "namespace/storage_policy.h"
#include "namespace/tree_clash.h"
#include "storage_node/node_client.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace admin {
namespace {

namespace v1 = ::rangefs::v1;
using node::NodeClient;

constexpr absl::Duration kSmallCallTimeout = absl::Seconds(30);

}  // namespace

namespace {

constexpr size_t kFailuresListed = 20;

// Removes a file (the spooled stdin) when it goes out of scope.
struct ScopedUnlink {
  std::string path;
  ~ScopedUnlink() {
    if (!path.empty()) unlink(path.c_str());
  }
};

// "K+M" of --ec: two positive integers.
absl::StatusOr<std::pair<int, int>> ParseErasureCode(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '+');
  int k = 0, m = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &k) ||
      !absl::SimpleAtoi(parts[1], &m) || k < 1 || m < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ec=\"", absl::CEscape(text),
                     "\": want K+M, data and parity columns (e.g. 6+3, 10+4)"));
  }
  return std::make_pair(k, m);
}

// The table of a put of one file.
Table SingleFileTable(const std::string& shown, const std::string& path,
                      const ingest::IngestOptions& o,
                      const ingest::IngestResult& r) {
  Table t;
  t.columns = {"path",        "size",    "width",    "replicas",
               "stripe unit", "file id", "raw bytes"};
  const std::string protection =
      r.ec_data > 0 ? absl::StrCat("ec ", r.ec_data, "+", r.ec_parity)
                    : absl::StrCat(r.replicas > 0 ? r.replicas : o.replicas);
  t.AddRow({path, Cell::Bytes(r.size), Cell::Int(r.striped ? r.width : 0),
            protection, r.striped ? Cell::Bytes(o.stripe_unit) : Cell::Null(),
            Cell::Int(static_cast<int64_t>(r.file_id)),
            Cell::Bytes(r.raw_bytes)});
  t.message = absl::StrCat("put ", shown, " as ", path, ": ", r.size,
                           " bytes in ", r.objects, " object(s)");
  if (r.ec_data > 0) {
    absl::StrAppend(&t.message, ", erasure-coded ", r.ec_data, "+", r.ec_parity,
                    " (", r.raw_bytes, " bytes stored)");
  }
  if (!r.policy.empty()) {
    absl::StrAppend(&t.message, ", following the storage policy of ", r.policy);
  }
  if (!r.note.empty()) absl::StrAppend(&t.message, "\nnote: ", r.note);
  return t;
}

// "; 12 file(s) followed the storage policies of /crawl, /cold" or "".
std::string PolicyNote(const BulkPutResult& r) {
  std::set<std::string> dirs;
  size_t files = 0;
  for (const ingest::IngestResult& x : r.results) {
    if (x.policy.empty()) continue;
    dirs.insert(x.policy);
    ++files;
  }
  if (files == 0) return "";
  return absl::StrCat("; ", files, " file(s) followed the storage policies of ",
                      absl::StrJoin(dirs, ", "));
}

// Re-placements and leftovers of the puts, for the summary.
std::string WriterNotes(const BulkPutResult& r) {
  std::string notes;
  std::vector<std::string> leftovers;
  size_t replicated = 0;
  for (const ingest::IngestResult& x : r.results) replicated += !x.note.empty();
  if (replicated > 0) {
    absl::StrAppend(&notes, "\nnote: ", replicated,
                    " file(s) under --ec's minimum size stored with "
                    "replicas instead");
  }
  for (const ingest::IngestResult& x : r.results) {
    for (const std::string& m : x.replaced) {
      absl::StrAppend(&notes, "\nre-placed ", m);
    }
    leftovers.insert(leftovers.end(), x.leftovers.begin(), x.leftovers.end());
  }
  if (!leftovers.empty()) {
    absl::StrAppend(&notes, "\n", leftovers.size(),
                    " failed attempt(s) on unreachable nodes, in no layout, "
                    "left to rangefs-keeper's orphan collector: ",
                    absl::StrJoin(leftovers, " "));
  }
  return notes;
}

// The summary of a put of a directory; an error naming each failed file
// (the first kFailuresListed) when any failed.
absl::StatusOr<Table> DirectoryResult(const std::string& local,
                                      const std::string& dest,
                                      const PutPlan& plan,
                                      const BulkPutResult& r,
                                      const std::string& protection) {
  const double secs = std::max(1e-3, absl::ToDoubleSeconds(r.elapsed));
  std::string summary = absl::StrCat(
      "put ", local, " as ", dest, ": ", r.files, " file(s), ",
      HumanBytes(r.bytes), " in ", absl::StrFormat("%.1f", secs), " s (",
      absl::StrFormat("%.0f", static_cast<double>(r.files) / secs),
      " files/s, ", HumanBytes(static_cast<uint64_t>(r.bytes / secs)), "/s), ",
      protection, PolicyNote(r));
  if (!plan.skipped.empty()) {
    absl::StrAppend(&summary, "\nskipped ", plan.skipped.size(), ": ",
                    absl::StrJoin(plan.skipped, ", "));
  }
  absl::StrAppend(&summary, WriterNotes(r));
  if (r.failures.empty()) {
    Table t;
    t.message = summary;
    return t;
  }
  std::string msg = absl::StrCat(r.failures.size(), " of ", plan.items.size(),
                                 " file(s) failed");
  if (r.not_started > 0) {
    absl::StrAppend(&msg, ", ", r.not_started, " not started after ",
                    r.failures.size(), " failures");
  }
  absl::StrAppend(&msg, " (the others were put: ", summary, "):");
  for (size_t i = 0; i < r.failures.size() && i < kFailuresListed; ++i) {
    const PutFailure& f = r.failures[i];
    absl::StrAppend(&msg, "\n  ", f.item.local, " -> ", f.item.path, ": ",
                    f.status.message());
  }
  if (r.failures.size() > kFailuresListed) {
    absl::StrAppend(&msg, "\n  ... and ", r.failures.size() - kFailuresListed,
                    " more");
  }
  return absl::Status(r.failures.front().status.code(), msg);
}

}  // namespace

absl::StatusOr<Table> RunFilePut(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(
      a.CheckAllowed({"stripe-unit", "width", "replicas", "overwrite",
                      "parallel", "recursive", "jobs", "ec", "ec-min-rows"}));
  if (a.positional().size() != 2) {
    return absl::InvalidArgumentError(
        "usage: file put LOCAL|DIR|- PATH|DIR/ [-r] [--jobs=32] "
        "[--stripe-unit=1M] [--width=N] [--replicas=2] [--ec=K+M] "
        "[--ec-min-rows=2] [--overwrite] [--parallel=8]");
  }
  const std::string local = a.positional()[0];
  const std::string dest = a.positional()[1];
  ingest::IngestOptions o;
  RANGEFS_ASSIGN_OR_RETURN(o.stripe_unit,
                           ParseBytes(a.Get("stripe-unit", "1M")));
  RANGEFS_ASSIGN_OR_RETURN(int64_t replicas, a.GetInt("replicas", 2));
  RANGEFS_ASSIGN_OR_RETURN(int64_t width, a.GetInt("width", 0));
  RANGEFS_ASSIGN_OR_RETURN(int64_t parallel, a.GetInt("parallel", 8));
  RANGEFS_ASSIGN_OR_RETURN(int64_t jobs, a.GetInt("jobs", kDefaultPutJobs));
  if (jobs < 1 || jobs > 1024) {
    return absl::InvalidArgumentError("--jobs must be in [1, 1024]");
  }
  // Out-of-int values fail IngestFile's range checks with the same message.
  o.replicas = static_cast<int>(std::clamp<int64_t>(replicas, -1, 1 << 20));
  o.width = static_cast<int>(std::clamp<int64_t>(width, -1, 1 << 20));
  o.parallel = static_cast<int>(std::clamp<int64_t>(parallel, 0, 1 << 20));
  o.overwrite = a.GetBool("overwrite");
  o.agent_tls = ctx.agent_tls;
  if (a.Has("ec")) {
    RANGEFS_ASSIGN_OR_RETURN(const auto code,
                             ParseErasureCode(a.Get("ec", "")));
    o.ec_data = code.first;
    o.ec_parity = code.second;
  }
  if (!a.Has("replicas") && !a.Has("ec")) {
    // No flag says otherwise: files below a storage policy follow it.
    RANGEFS_ASSIGN_OR_RETURN(
        ns::PolicyTable policies,
        ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys()));
    if (!policies.policies().empty()) {
      o.policies = std::make_shared<const ns::PolicyTable>(std::move(policies));
    }
  }
  RANGEFS_ASSIGN_OR_RETURN(int64_t min_rows, a.GetInt("ec-min-rows", 2));
  o.ec_min_rows = static_cast<int>(std::clamp<int64_t>(min_rows, -1, 1 << 20));

  ScopedUnlink spooled;
  std::string source = local;
  if (local == "-") {
    if (absl::EndsWith(dest, "/")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "file put - ", dest,
          ": stdin has no name; give the file's path, not a directory"));
    }
    RANGEFS_ASSIGN_OR_RETURN(spooled.path, SpoolToTempFile(STDIN_FILENO));
    source = spooled.path;
  }
  RANGEFS_ASSIGN_OR_RETURN(PutPlan plan, PlanPut(source, dest));
  const std::string shown = local == "-" ? "stdin" : local;
  ingest::IngestSession session(*ctx.store, o);
  ProgressMeter meter("put", plan.items.size(), plan.bytes,
                      ctx.progress ? TerminalProgressSink() : nullptr);
  RANGEFS_ASSIGN_OR_RETURN(std::optional<std::set<std::string>> existing,
                           ListExisting(*ctx.store, plan));
  const BulkPutResult r = PutAll(session, plan, static_cast<int>(jobs), meter,
                                 existing.has_value() ? &*existing : nullptr);
  if (plan.directory) {
    return DirectoryResult(
        local, dest, plan, r,
        o.ec_data > 0
            ? absl::StrCat("erasure-coded ", o.ec_data, "+", o.ec_parity, " (",
                           o.replicas, " replica(s) under the minimum)")
            : absl::StrCat(o.replicas, " replica(s) each",
                           o.policies != nullptr
                               ? " unless a storage policy says otherwise"
                               : ""));
  }
  if (!r.failures.empty()) return r.failures.front().status;
  Table t = SingleFileTable(shown, plan.items[0].path, o, r.results[0]);
  absl::StrAppend(&t.message, WriterNotes(r));
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
  ingest::Agents agents(std::move(nodes), ctx.agent_tls);
  std::vector<absl::StatusOr<node::StatObjectResponse>> stats(
      replicas.size(), absl::InternalError("not asked"));
  ingest::ParallelFor(replicas.size(), 8, [&](size_t i) {
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
  std::vector<ns::FileEntry> coded;  // With --checksums: rows checked.
  ns::TreeClashFinder clashes;
  ns::ListFilesOptions o{.dir = dir, .page_size = 1000};
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, ctx.store->ListFiles(o));
    for (const ns::FileEntry& f : r.files) {
      ++report.files;
      clashes.Add(f.path);
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
      if (ns::IsErasureCoded(l)) {
        // Data and parity columns and each parity column's ".cells"
        // object: present, long enough, sidecars intact. The parity bytes
        // themselves are not recomputed yet.
        const ns::EcGeometry g = ns::EcGeometryOf(l);
        for (int t = 0; t < g.k + g.m; ++t) {
          const v1::Replica& rep = l.striped().targets(t).replicas(0);
          checks.push_back({f.path, rep.node_id(), rep.object(),
                            rep.object_offset() + ns::EcColumnBytes(g, t),
                            sidecar});
          if (t >= g.k) {
            checks.push_back({f.path, rep.node_id(),
                              ns::EcCellsObject(rep.object()),
                              ns::EcCellsBytes(g), sidecar});
          }
        }
        if (checksums) {
          coded.push_back(f);  // Rows checked below (ec_fsck.h).
        } else {
          report.notes.push_back(absl::StrCat(
              f.path, ": erasure-coded ", g.k, "+", g.m,
              ": cells and parity not checked (--checksums checks them)"));
        }
      } else if (l.has_striped() && l.striped().targets_size() > 0) {
        const uint64_t w = l.striped().targets_size();
        for (uint64_t t = 0; t < w; ++t) {
          const uint64_t col =
              ingest::ColumnBytes(l.size(), l.striped().stripe_unit(), w, t);
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
  for (const ns::TreeClash& c : clashes.Clashes()) {
    report.findings.push_back({c.file, "-", "-", ns::DescribeTreeClash(c)});
  }
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::NodeEntry> nodes,
                           ctx.store->ListNodes());
  RANGEFS_RETURN_IF_ERROR(AddInvalidRecords(ctx, nodes, report));
  ingest::Agents agents(std::move(nodes), ctx.agent_tls);
  std::vector<std::string> problems(checks.size());
  ingest::ParallelFor(checks.size(), parallel, [&](size_t i) {
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
  std::vector<EcFileCheck> coded_checks(coded.size());
  ingest::ParallelFor(coded.size(), parallel, [&](size_t i) {
    coded_checks[i] = CheckCodedFile(agents, coded[i], absl::Minutes(1));
  });
  for (size_t i = 0; i < coded.size(); ++i) {
    for (FsckFinding& f : coded_checks[i].findings) {
      report.findings.push_back(std::move(f));
    }
    if (!coded_checks[i].data_loss_rows.empty()) {
      report.data_loss.push_back(coded[i].path);
    }
  }
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

// Records each replica found corrupt, short or missing (not an
// unreachable node) for rangefs-keeper, which copies a good replica over
// it and drops the record (keeper/README.md). Returns a note for the
// summary ("" when there is none).
std::string ReportSuspects(Context& ctx,
                           const std::vector<FsckFinding>& findings) {
  etcdserverpb::TxnRequest txn;
  // An object can have several findings (its sidecar and, erasure-coded,
  // its cells): etcd refuses a key twice in one transaction.
  std::set<std::pair<std::string, std::string>> reported;
  for (const FsckFinding& f : findings) {
    if (f.node == "-" || !(absl::StartsWith(f.problem, "checksum mismatch") ||
                           absl::StartsWith(f.problem, "short: ") ||
                           absl::StartsWith(f.problem, "missing: "))) {
      continue;
    }
    if (!reported.emplace(f.node, f.object).second) continue;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(ctx.store->keys().KeeperSuspect(f.node, f.object));
    put->set_value(f.problem);
  }
  const int n = txn.success_size();
  if (n == 0) return "";
  absl::StatusOr<etcdserverpb::TxnResponse> r = ctx.store->kv()->Txn(txn);
  if (!r.ok()) {
    return absl::StrCat(
        "; could not report ", n,
        " replica(s) to rangefs-keeper: ", r.status().message());
  }
  return absl::StrCat("; ", n,
                      " replica(s) reported to rangefs-keeper for repair");
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
  for (const std::string& n : r.notes)
    absl::StrAppend(&t.message, "\nnote: ", n);
  absl::StrAppend(&t.message, ReportSuspects(ctx, r.findings));
  if (!r.data_loss.empty()) {
    return absl::DataLossError(
        absl::StrCat(r.data_loss.size(), " erasure-coded file(s) lost data (",
                     absl::StrJoin(r.data_loss, ", "), "); ", r.findings.size(),
                     " problem(s) found\n", FormatHuman(t)));
  }
  if (!r.findings.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(r.findings.size(), " problem(s) found\n", FormatHuman(t)));
  }
  return t;
}

}  // namespace admin
}  // namespace rangefs
