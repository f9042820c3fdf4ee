#include "admin/commands.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "admin/data_commands.h"
#include "admin/file_get.h"
#include "admin/keeper_info.h"
#include "admin/policy_commands.h"
#include "admin/repair_command.h"
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "namespace/storage_policy.h"
#include "namespace/subtree_snapshot.h"
#include "nlohmann/json.hpp"

namespace rangefs {
namespace admin {
namespace {

namespace v1 = ::rangefs::v1;
using ns::FileEntry;
using ns::NodeEntry;

absl::Status WantPositional(const Args& a, size_t n, const char* usage) {
  if (a.positional().size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", n, " argument(s): ", usage, "; got ",
                     a.positional().size()));
  }
  return absl::OkStatus();
}

std::string FormatTime(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  auto s = google::protobuf::util::MessageToJsonString(m, &out, o);
  if (!s.ok()) return absl::InternalError(std::string(s.message()));
  return out;
}

// --- node ---

absl::StatusOr<Table> NodeAdd(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed(
      {"address", "export", "mount", "zone", "rack", "capacity", "state"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "node add ID"));
  v1::NodeRecord n;
  n.set_id(a.positional()[0]);
  for (const std::string& addr : a.GetAll("address")) n.add_addresses(addr);
  n.set_export_path(a.Get("export"));
  n.set_mount_path(a.Get("mount"));
  n.set_zone(a.Get("zone"));
  n.set_rack(a.Get("rack"));
  if (a.Has("capacity")) {
    RANGEFS_ASSIGN_OR_RETURN(uint64_t cap, ParseBytes(a.Get("capacity")));
    n.set_capacity_bytes(cap);
  }
  std::string state = a.Get("state", "active");
  if (state == "active") {
    n.set_admin_state(v1::ACTIVE);
  } else if (state == "draining") {
    n.set_admin_state(v1::DRAINING);
  } else if (state == "disabled") {
    n.set_admin_state(v1::DISABLED);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--state=", state, ": expected active, draining or disabled"));
  }
  if (n.addresses().empty()) {
    return absl::InvalidArgumentError(
        "node add: at least one --address=HOST:PORT of the agent is needed");
  }
  RANGEFS_RETURN_IF_ERROR(ctx.store->AddNode(n));
  Table t;
  t.message = absl::StrCat("node ", n.id(), " added (", state, ")");
  return t;
}

void AddNodeColumns(Table& t) {
  t.columns = {"id", "state", "addresses", "export", "zone", "capacity"};
}

void AddNodeRow(Table& t, const v1::NodeRecord& n) {
  t.AddRow(
      {n.id(), std::string(ns::AdminStateName(n.admin_state())),
       absl::StrJoin(n.addresses(), ","), n.export_path(), n.zone(),
       n.capacity_bytes() ? Cell::Bytes(n.capacity_bytes()) : Cell::Null()});
}

absl::StatusOr<Table> NodeList(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_ASSIGN_OR_RETURN(std::vector<NodeEntry> nodes,
                           ctx.store->ListNodes());
  Table t;
  AddNodeColumns(t);
  for (const NodeEntry& e : nodes) {
    if (e.invalid.empty()) {
      AddNodeRow(t, e.record);
    } else {
      t.AddRow({e.record.id(), "invalid", e.invalid, "-", "-", Cell::Null()});
    }
  }
  return t;
}

absl::StatusOr<Table> NodeShow(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "node show ID"));
  RANGEFS_ASSIGN_OR_RETURN(NodeEntry e, ctx.store->GetNode(a.positional()[0]));
  Table t;
  RANGEFS_ASSIGN_OR_RETURN(t.json, ToJson(e.record));
  return t;
}

absl::StatusOr<Table> NodeSetState(Context& ctx, Args& a, v1::AdminState s,
                                   const char* verb) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_RETURN_IF_ERROR(
      WantPositional(a, 1, absl::StrCat("node ", verb, " ID").c_str()));
  RANGEFS_RETURN_IF_ERROR(ctx.store->SetNodeState(a.positional()[0], s));
  Table t;
  t.message = absl::StrCat("node ", a.positional()[0], " is now ",
                           ns::AdminStateName(s));
  return t;
}

// FAILED_PRECONDITION if a layout still has a replica on node `id`.
absl::Status CheckNodeHoldsNothing(ns::NamespaceStore& store,
                                   const std::string& id) {
  ns::ListFilesOptions lo;
  int64_t replicas = 0, files = 0;
  std::string example;
  do {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult page, store.ListFiles(lo));
    lo.revision = page.revision;
    lo.page_token = page.next_page_token;
    for (const ns::FileEntry& f : page.files) {
      int64_t here = 0;
      for (const v1::Extent& e : f.layout.extents()) {
        for (const v1::Replica& r : e.replicas()) here += r.node_id() == id;
      }
      for (const auto& t : f.layout.striped().targets()) {
        for (const v1::Replica& r : t.replicas()) here += r.node_id() == id;
      }
      if (here > 0 && example.empty()) example = f.path;
      replicas += here;
      files += here > 0;
    }
  } while (!lo.page_token.empty());
  if (replicas == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "node ", id, " still holds ", replicas, " replica(s) of ", files,
      " file(s) (e.g. ", example,
      "); `node drain` it and let rangefs-keeper move them off first"));
}

absl::StatusOr<Table> NodeRemove(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "node remove ID"));
  RANGEFS_RETURN_IF_ERROR(CheckNodeHoldsNothing(*ctx.store, a.positional()[0]));
  RANGEFS_RETURN_IF_ERROR(ctx.store->RemoveNode(a.positional()[0]));
  Table t;
  t.message = absl::StrCat("node ", a.positional()[0], " removed");
  return t;
}

// --- file ---

int Replicas(const v1::FileLayout& l) {
  if (ns::IsErasureCoded(l)) return 1;  // one copy per column, plus parity
  if (l.has_striped() && l.striped().targets_size() > 0) {
    return l.striped().targets(0).replicas_size();
  }
  return l.extents_size() > 0 ? l.extents(0).replicas_size() : 0;
}

// Bytes the layout's objects hold on the agents (sidecars not counted).
uint64_t RawBytes(const v1::FileLayout& l) {
  if (ns::IsErasureCoded(l)) {
    const ns::EcGeometry g = ns::EcGeometryOf(l);
    uint64_t bytes = static_cast<uint64_t>(g.m) * ns::EcCellsBytes(g);
    for (int t = 0; t < g.k + g.m; ++t) bytes += ns::EcColumnBytes(g, t);
    return bytes;
  }
  uint64_t bytes = 0;
  for (const v1::Extent& e : l.extents()) {
    bytes += e.length() * static_cast<uint64_t>(e.replicas_size());
  }
  if (l.has_striped() && l.striped().targets_size() > 0) {
    bytes += l.size() * static_cast<uint64_t>(Replicas(l));
  }
  return bytes;
}

std::string Shape(const v1::FileLayout& l) {
  if (ns::IsErasureCoded(l)) {
    const v1::ErasureCode& e = l.striped().erasure();
    return absl::StrCat("striped ", e.data_columns(), "x",
                        HumanBytes(l.striped().stripe_unit()), ", ec ",
                        e.data_columns(), "+", e.parity_columns());
  }
  if (l.has_striped()) {
    return absl::StrCat("striped ", l.striped().targets_size(), "x",
                        HumanBytes(l.striped().stripe_unit()));
  }
  return absl::StrCat(l.extents_size(), " extent(s)");
}

// The policy a file is under and how it stands with it (storage_policy.h):
// {"/crawl", "met"}, {"/crawl", "pending"}; two null cells when none.
std::pair<Cell, Cell> PolicyCells(const ns::PolicyTable& policies,
                                  const FileEntry& f, absl::Time now) {
  const ns::PolicyResolution r =
      ns::ResolvePolicy(policies, f.path, f.layout.size(),
                        absl::FromUnixMillis(f.layout.created_unix_ms()), now);
  if (r.policy == nullptr) return {Cell::Null(), Cell::Null()};
  return {Cell(r.policy->dir), Cell(ns::PolicyState(r, f.layout))};
}

absl::StatusOr<Table> FileStat(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"revision"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "file stat PATH"));
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("revision", 0));
  RANGEFS_ASSIGN_OR_RETURN(FileEntry f,
                           ctx.store->GetFile(a.positional()[0], rev));
  const v1::FileLayout& l = f.layout;
  Table t;
  t.columns = {"field", "value"};
  t.AddRow({"path", f.path});
  // Numbers as JSON numbers (--json), sizes in bytes.
  t.AddRow({"file_id", Cell::Int(static_cast<int64_t>(l.file_id()))});
  t.AddRow({"generation", Cell::Int(static_cast<int64_t>(l.generation()))});
  t.AddRow({"content_generation",
            Cell::Int(static_cast<int64_t>(l.content_generation()))});
  Cell size = Cell::Bytes(l.size());
  size.text = absl::StrCat(l.size(), " (", HumanBytes(l.size()), ")");
  t.AddRow({"size", size});
  t.AddRow({"state", std::string(ns::FileStateName(l.state()))});
  t.AddRow({"layout", Shape(l)});
  t.AddRow({"replicas", Cell::Int(Replicas(l))});
  if (ns::IsErasureCoded(l)) {
    const v1::ErasureCode& e = l.striped().erasure();
    t.AddRow({"erasure_code",
              absl::StrCat("ec ", e.data_columns(), "+", e.parity_columns(),
                           " (reed-solomon cauchy gf(2^8))")});
  }
  Cell raw = Cell::Bytes(RawBytes(l));
  raw.text = absl::StrCat(RawBytes(l), " (", HumanBytes(RawBytes(l)), ")");
  t.AddRow({"raw_bytes", raw});
  t.AddRow({"nodes", absl::StrJoin(ns::ReferencedNodes(l), ",")});
  t.AddRow({"checksum",
            l.checksum() == v1::CRC32C_SIDECAR
                ? absl::StrCat("crc32c/", HumanBytes(l.checksum_block_size()))
                : "none"});
  t.AddRow({"created", FormatTime(l.created_unix_ms())});
  t.AddRow({"modified", FormatTime(l.modified_unix_ms())});
  t.AddRow({"mod_revision", Cell::Int(f.mod_revision)});
  RANGEFS_ASSIGN_OR_RETURN(
      ns::PolicyTable policies,
      ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys(), rev));
  const ns::PolicyResolution r =
      ns::ResolvePolicy(policies, f.path, l.size(),
                        absl::FromUnixMillis(l.created_unix_ms()), absl::Now());
  t.AddRow({"policy", r.policy == nullptr
                          ? Cell::Null()
                          : Cell(ns::DescribePolicy(*r.policy))});
  t.AddRow({"policy_state",
            r.policy == nullptr ? Cell::Null() : Cell(ns::PolicyState(r, l))});
  return t;
}

absl::StatusOr<Table> FileLayoutCmd(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"revision"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "file layout PATH"));
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("revision", 0));
  RANGEFS_ASSIGN_OR_RETURN(FileEntry f,
                           ctx.store->GetFile(a.positional()[0], rev));
  Table t;
  RANGEFS_ASSIGN_OR_RETURN(t.json, ToJson(f.layout));
  return t;
}

absl::StatusOr<Table> FileLs(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"revision", "limit"}));
  if (a.positional().size() > 1) {
    return absl::InvalidArgumentError("usage: file ls [DIR]");
  }
  std::string dir = a.positional().empty() ? "/" : a.positional()[0];
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("revision", 0));
  RANGEFS_ASSIGN_OR_RETURN(int64_t limit, a.GetInt("limit", 0));
  Table t;
  t.columns = {"path",     "size",       "state",  "layout",
               "replicas", "generation", "policy", "policy_state"};
  ns::ListFilesOptions o{.dir = dir, .page_size = 1000, .revision = rev};
  const absl::Time now = absl::Now();
  ns::PolicyTable policies;
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, ctx.store->ListFiles(o));
    if (o.page_token.empty()) {
      // The policies as of the listing's revision.
      RANGEFS_ASSIGN_OR_RETURN(
          policies,
          ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys(), r.revision));
    }
    for (const FileEntry& f : r.files) {
      if (limit > 0 && static_cast<int64_t>(t.rows.size()) >= limit) break;
      if (!f.invalid.empty()) {
        t.AddRow({f.path, Cell::Null(), "invalid", f.invalid, Cell::Null(),
                  Cell::Null(), Cell::Null(), Cell::Null()});
        continue;
      }
      const auto [policy, state] = PolicyCells(policies, f, now);
      t.AddRow({f.path, Cell::Int(static_cast<int64_t>(f.layout.size())),
                std::string(ns::FileStateName(f.layout.state())),
                Shape(f.layout), Cell::Int(Replicas(f.layout)),
                Cell::Int(static_cast<int64_t>(f.layout.generation())), policy,
                state});
    }
    if (r.next_page_token.empty() ||
        (limit > 0 && static_cast<int64_t>(t.rows.size()) >= limit)) {
      break;
    }
    o.page_token = r.next_page_token;
    o.revision = r.revision;
  }
  return t;
}

// What a job pinning DIR with Client::OpenDataset would get: the files,
// their size and the revision, read the same way (ns::LoadSubtree).
absl::StatusOr<Table> FileDataset(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"revision"}));
  if (a.positional().size() > 1) {
    return absl::InvalidArgumentError("usage: file dataset [DIR]");
  }
  const std::string dir = a.positional().empty() ? "/" : a.positional()[0];
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("revision", 0));
  RANGEFS_ASSIGN_OR_RETURN(
      ns::SubtreeSnapshot s,
      ns::LoadSubtree(*ctx.store->kv(), ctx.store->keys(), dir, rev));
  size_t record_bytes = 0;
  for (const ns::SnapshotFile& f : s.files) record_bytes += f.layout.size();
  Table t;
  t.columns = {"dir", "revision", "files", "bytes", "invalid", "record_bytes"};
  t.AddRow({s.dir, Cell::Int(s.revision),
            Cell::Int(static_cast<int64_t>(s.files.size())),
            Cell::Int(static_cast<int64_t>(s.bytes)),
            Cell::Int(static_cast<int64_t>(s.invalid)),
            Cell::Int(static_cast<int64_t>(record_bytes))});
  return t;
}

absl::StatusOr<Table> FileRm(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"if-revision"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "file rm PATH"));
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("if-revision", 0));
  RANGEFS_RETURN_IF_ERROR(ctx.store->DeleteFile(a.positional()[0], rev));
  Table t;
  t.message = absl::StrCat("removed ", a.positional()[0],
                           " (objects on the nodes are left in place)");
  return t;
}

absl::StatusOr<Table> FileMv(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"if-revision"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 2, "file mv FROM TO"));
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, a.GetInt("if-revision", 0));
  RANGEFS_RETURN_IF_ERROR(
      ctx.store->RenameFile(a.positional()[0], a.positional()[1], rev));
  Table t;
  t.message =
      absl::StrCat("renamed ", a.positional()[0], " -> ", a.positional()[1]);
  return t;
}

absl::StatusOr<std::string> ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// file create PATH --layout=FILE.json: records a layout given as JSON
// (proto3 JSON of rangefs.v1.FileLayout), validated like any other.
absl::StatusOr<Table> FileCreate(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"layout"}));
  RANGEFS_RETURN_IF_ERROR(WantPositional(a, 1, "file create PATH --layout=F"));
  if (!a.Has("layout")) {
    return absl::InvalidArgumentError("file create: --layout=FILE.json needed");
  }
  RANGEFS_ASSIGN_OR_RETURN(std::string text, ReadFileText(a.Get("layout")));
  v1::FileLayout layout;
  auto s = google::protobuf::util::JsonStringToMessage(text, &layout);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout file ", a.Get("layout"), ": ", std::string(s.message())));
  }
  RANGEFS_ASSIGN_OR_RETURN(FileEntry f,
                           ctx.store->CreateFile(a.positional()[0], layout));
  Table t;
  t.message = absl::StrCat("created ", f.path, " (file id ", f.layout.file_id(),
                           ", ", f.layout.size(), " bytes)");
  return t;
}

// --- status, dump, restore ---

// "keeper ka active, ..." or "no active keeper". Records that do not parse
// are reported as such.
std::string KeeperSummary(const KeeperInfo& k, absl::Time now) {
  if (!k.error.ok()) return absl::StrCat("keeper: ", k.error.message());
  if (k.id.empty()) return "no active keeper";
  std::string out = absl::StrCat("keeper ", absl::CEscape(k.id), " active");
  if (!k.reported) return absl::StrCat(out, " (no round reported yet)");
  const v1::KeeperStatus& st = k.st;
  const absl::Duration ago = now - absl::FromUnixMillis(st.updated_unix_ms());
  absl::StrAppend(
      &out, " (last round ",
      absl::FormatDuration(absl::Trunc(ago, absl::Seconds(1))),
      " ago): ", st.moves_planned(), " replica move(s) to do (",
      HumanBytes(st.bytes_planned()), "), ", st.moves_done(), " done, ",
      st.moves_failed(), " failed, ", st.stuck(), " stuck; ",
      st.under_replicated_files(), " under-replicated file(s) (",
      HumanBytes(st.under_replicated_bytes()), "); ", st.dead_nodes(),
      " dead, ", st.draining_nodes(), " draining node(s); ", st.trash_pending(),
      " object(s) awaiting deletion");
  const std::string countdown = HealCountdown(k, now);
  if (st.at_risk_files() > 0 || !countdown.empty()) {
    absl::StrAppend(&out, "; ", st.at_risk_files(), " file(s) (",
                    HumanBytes(st.at_risk_bytes()),
                    ") at risk on unreachable node(s)");
    if (!countdown.empty()) absl::StrAppend(&out, "; ", countdown);
  }
  // Storage-policy conversions (keeper/README.md): per policy, what is
  // not at its goal yet.
  for (const v1::KeeperStatus::PolicyConversions& c : st.conversions()) {
    if (c.files() == 0) continue;
    absl::StrAppend(
        &out, "; policy ", absl::CEscape(c.policy()), ": ", c.files(),
        " file(s) (", HumanBytes(c.bytes()), ") to convert, ",
        c.bytes_saved() >= 0
            ? absl::StrCat(HumanBytes(static_cast<uint64_t>(c.bytes_saved())),
                           " to free")
            : absl::StrCat(HumanBytes(static_cast<uint64_t>(-c.bytes_saved())),
                           " more to store"),
        c.stuck() > 0 ? absl::StrCat(", ", c.stuck(), " stuck")
                      : std::string());
  }
  // ETA: published with the round's plan (at the keeper's pace), then at
  // the round's rate; unknown while unpaced and nothing converted yet.
  bool pending = false;
  for (const v1::KeeperStatus::PolicyConversions& c : st.conversions()) {
    pending = pending || c.files() > c.stuck();
  }
  if (pending && st.convert_eta_s() != 0) {
    absl::StrAppend(
        &out, "; conversions ETA ",
        st.convert_eta_s() < 0 ? std::string("unknown")
        : st.convert_eta_s() < 1
            ? std::string("under 1s")
            : absl::FormatDuration(absl::Trunc(
                  absl::Seconds(st.convert_eta_s()), absl::Seconds(1))));
  }
  if (st.conversions_done() > 0) {
    const int64_t saved = st.convert_bytes_saved();
    absl::StrAppend(
        &out, "; ", st.conversions_done(), " conversion(s) done this round (",
        saved >= 0
            ? absl::StrCat(HumanBytes(static_cast<uint64_t>(saved)), " freed")
            : absl::StrCat(HumanBytes(static_cast<uint64_t>(-saved)),
                           " more stored"),
        ")");
  }
  if (st.in_round()) {
    absl::StrAppend(
        &out, "; round in progress: ", HumanBytes(st.bytes_copied()), " of ",
        HumanBytes(st.bytes_planned()), " copied, ETA ",
        st.eta_s() > 0 ? absl::FormatDuration(absl::Trunc(
                             absl::Seconds(st.eta_s()), absl::Seconds(1)))
                       : std::string("unknown"));
  }
  return out;
}

// `status --json`'s keeper row: {"kind": "keeper", "node": "", "live": "",
// ...}. "node" and "live" are there (empty) so that scripts which scan the
// rows for a node keep working; the counts are JSON numbers.
// "unreachable_nodes" (nodes with a record but no live record) is there
// whatever the keeper reported.
std::string KeeperJsonRow(const KeeperInfo& k, int unreachable,
                          absl::Time now) {
  nlohmann::ordered_json j = {{"kind", "keeper"}, {"node", ""}, {"live", ""}};
  if (!k.error.ok()) j["error"] = std::string(k.error.message());
  j["active"] = k.error.ok() && !k.id.empty();
  j["keeper_id"] = k.id;
  j["reported"] = k.reported;
  j["unreachable_nodes"] = unreachable;
  if (k.reported) {
    const v1::KeeperStatus& st = k.st;
    j["updated_unix_ms"] = st.updated_unix_ms();
    j["revision"] = st.revision();
    j["files"] = st.files();
    j["moves_planned"] = st.moves_planned();
    j["bytes_planned"] = st.bytes_planned();
    j["moves_done"] = st.moves_done();
    j["moves_failed"] = st.moves_failed();
    j["stuck"] = st.stuck();
    j["under_replicated_files"] = st.under_replicated_files();
    j["under_replicated_bytes"] = st.under_replicated_bytes();
    j["dead_nodes"] = st.dead_nodes();
    j["draining_nodes"] = st.draining_nodes();
    j["missing_nodes"] = st.missing_nodes();
    j["trash_pending"] = st.trash_pending();
    j["trash_deleted"] = st.trash_deleted();
    j["in_round"] = st.in_round();
    j["bytes_copied"] = st.bytes_copied();
    // null: not in a round, or no rate yet.
    j["eta_s"] = st.in_round() && st.eta_s() > 0
                     ? nlohmann::ordered_json(st.eta_s())
                     : nlohmann::ordered_json(nullptr);
    j["at_risk_files"] = st.at_risk_files();
    j["at_risk_bytes"] = st.at_risk_bytes();
    // null: no node missing; 0: healing now.
    const std::optional<int64_t> heal = HealStartsInSeconds(k, now);
    j["heal_starts_in_s"] = heal.has_value() ? nlohmann::ordered_json(*heal)
                                             : nlohmann::ordered_json(nullptr);
    j["dead_after_s"] = st.dead_after_s();
    // Storage-policy conversions: per policy, files and logical bytes not
    // at the goal yet, raw bytes converting them frees, and those stuck.
    nlohmann::ordered_json conv = nlohmann::ordered_json::array();
    for (const v1::KeeperStatus::PolicyConversions& c : st.conversions()) {
      conv.push_back({{"policy", c.policy()},
                      {"files", c.files()},
                      {"bytes", c.bytes()},
                      {"bytes_saved", c.bytes_saved()},
                      {"stuck", c.stuck()}});
    }
    j["conversions"] = conv;
    j["conversions_done"] = st.conversions_done();
    j["convert_bytes_saved"] = st.convert_bytes_saved();
    // null: unknown (nothing converted yet this round).
    j["convert_eta_s"] = st.convert_eta_s() >= 0
                             ? nlohmann::ordered_json(st.convert_eta_s())
                             : nlohmann::ordered_json(nullptr);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<Table> Status(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({}));
  RANGEFS_ASSIGN_OR_RETURN(std::vector<NodeEntry> nodes,
                           ctx.store->ListNodes());
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::LiveEntry> live,
                           ctx.store->ListLive());
  Table t;
  t.columns = {"node",  "admin", "live",     "health", "free",
               "total", "read",  "inflight", "p99 us"};
  uint64_t free_sum = 0, total_sum = 0;
  int alive = 0;
  for (const NodeEntry& n : nodes) {
    if (!n.invalid.empty()) {
      t.AddRow({n.record.id(), "invalid", "-", n.invalid, Cell::Null(),
                Cell::Null(), Cell::Null(), Cell::Null(), Cell::Null()});
      continue;
    }
    const v1::LiveRecord* l = nullptr;
    for (const ns::LiveEntry& e : live) {
      if (e.invalid.empty() && e.record.node_id() == n.record.id()) {
        l = &e.record;
      }
    }
    std::string health = "-";
    if (l != nullptr) {
      health = v1::LiveRecord::Health_Name(l->health());
      if (!l->health_reason().empty()) {
        absl::StrAppend(&health, " (", l->health_reason(), ")");
      }
      free_sum += l->free_bytes();
      total_sum += l->total_bytes();
      ++alive;
    }
    t.AddRow(
        {n.record.id(), std::string(ns::AdminStateName(n.record.admin_state())),
         l ? "yes" : "no", health,
         l ? Cell::Bytes(l->free_bytes()) : Cell::Null(),
         l ? Cell::Bytes(l->total_bytes()) : Cell::Null(),
         l ? Cell::Bytes(l->bytes_read()) : Cell::Null(),
         l ? Cell::Int(l->inflight()) : Cell::Null(),
         l ? Cell::Int(static_cast<int64_t>(l->read_p99_us())) : Cell::Null()});
  }
  RANGEFS_ASSIGN_OR_RETURN(int64_t rev, ctx.store->CurrentRevision());
  const KeeperInfo keeper = ReadKeeperInfo(*ctx.store);
  const std::vector<std::string> unreachable = UnreachableNodes(nodes, live);
  const absl::Time now = absl::Now();
  t.message = absl::StrCat(nodes.size(), " node(s), ", alive, " live");
  if (!unreachable.empty()) {
    absl::StrAppend(&t.message, ", ", unreachable.size(), " unreachable (",
                    absl::StrJoin(unreachable, ", ",
                                  [](std::string* out, const std::string& id) {
                                    absl::StrAppend(out, absl::CEscape(id));
                                  }),
                    ")");
  }
  absl::StrAppend(&t.message, "; ", HumanBytes(free_sum), " free of ",
                  HumanBytes(total_sum), "; etcd revision ", rev, "; ",
                  KeeperSummary(keeper, now));
  t.json_row_kind = "node";
  t.json_extra.push_back(
      KeeperJsonRow(keeper, static_cast<int>(unreachable.size()), now));
  return t;
}

// " and 2 storage policy(ies)", or "" for none.
std::string PoliciesPart(int n) {
  return n == 0 ? "" : absl::StrCat(" and ", n, " storage policy(ies)");
}

// Restores the dump's policies that the cluster does not have; returns
// how many it wrote; `skipped` counts those left as they are.
absl::StatusOr<int> RestorePolicies(Context& ctx, const v1::NamespaceDump& dump,
                                    size_t& skipped) {
  if (dump.policies_size() == 0) return 0;
  RANGEFS_ASSIGN_OR_RETURN(
      ns::PolicyTable existing,
      ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys()));
  int restored = 0;
  for (const v1::StoragePolicyRecord& r : dump.policies()) {
    if (existing.Nearest(r.dir()) != nullptr &&
        existing.Nearest(r.dir())->dir == r.dir()) {
      ++skipped;
      continue;
    }
    RANGEFS_RETURN_IF_ERROR(ns::PutPolicy(*ctx.store->kv(), ctx.store->keys(),
                                          ns::FromRecord(r.dir(), r)));
    ++restored;
  }
  return restored;
}

absl::StatusOr<Table> Dump(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"out"}));
  v1::NamespaceDump dump;
  dump.set_cluster(ctx.cluster);
  RANGEFS_ASSIGN_OR_RETURN(std::vector<NodeEntry> nodes,
                           ctx.store->ListNodes());
  std::vector<std::string> invalid;
  for (const NodeEntry& n : nodes) {
    if (n.invalid.empty()) {
      *dump.add_nodes() = n.record;
    } else {
      invalid.push_back(n.invalid);
    }
  }
  ns::ListFilesOptions o{.dir = "/", .page_size = 1000};
  while (true) {
    RANGEFS_ASSIGN_OR_RETURN(ns::ListFilesResult r, ctx.store->ListFiles(o));
    dump.set_revision(r.revision);
    for (FileEntry& f : r.files) {
      if (!f.invalid.empty()) {
        invalid.push_back(f.invalid);
        continue;
      }
      auto* e = dump.add_files();
      e->set_path(f.path);
      *e->mutable_layout() = std::move(f.layout);
    }
    if (ctx.progress) ctx.progress(dump.files_size(), 0);
    if (r.next_page_token.empty()) break;
    o.page_token = r.next_page_token;
    o.revision = r.revision;
  }
  RANGEFS_ASSIGN_OR_RETURN(
      ns::PolicyTable policies,
      ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys(), dump.revision()));
  for (const ns::StoragePolicy& p : policies.policies()) {
    *dump.add_policies() = ns::ToRecord(p);
  }
  invalid.insert(invalid.end(), policies.invalid().begin(),
                 policies.invalid().end());
  if (!invalid.empty()) {
    // A dump that silently dropped records would lose them on restore.
    return absl::DataLossError(absl::StrCat(
        "dump refused: ", invalid.size(),
        " record(s) fail validation; fix them or remove them (file rm, "
        "node rm, policy rm) first:\n  ",
        absl::StrJoin(invalid, "\n  ")));
  }
  dump.set_dumped_unix_ms(absl::ToUnixMillis(absl::Now()));
  RANGEFS_ASSIGN_OR_RETURN(std::string json, ToJson(dump));
  Table t;
  std::string out = a.Get("out");
  if (out.empty() || out == "-") {
    t.json = json;
    return t;
  }
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << json;
  f.close();
  if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", out));
  t.message = absl::StrCat("dumped ", dump.nodes_size(), " node(s) and ",
                           dump.files_size(), " file(s)",
                           PoliciesPart(dump.policies_size()), " at revision ",
                           dump.revision(), " to ", out);
  return t;
}

absl::StatusOr<Table> Restore(Context& ctx, Args& a) {
  RANGEFS_RETURN_IF_ERROR(a.CheckAllowed({"in"}));
  if (!a.Has("in")) {
    return absl::InvalidArgumentError("restore: --in=DUMP.json needed");
  }
  RANGEFS_ASSIGN_OR_RETURN(std::string text, ReadFileText(a.Get("in")));
  v1::NamespaceDump dump;
  auto s = google::protobuf::util::JsonStringToMessage(text, &dump);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dump file ", a.Get("in"), ": ", std::string(s.message())));
  }
  // Validate everything before writing anything.
  for (const v1::NodeRecord& n : dump.nodes()) {
    RANGEFS_RETURN_IF_ERROR(ns::ValidateNode(n));
  }
  for (const auto& f : dump.files()) {
    absl::Status p = ns::ValidatePath(f.path());
    absl::Status l = ns::ValidateLayout(f.layout());
    if (!p.ok() || !l.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dump entry ", f.path(), ": ",
                       (p.ok() ? l : p).message(), " (nothing was restored)"));
    }
  }
  for (const v1::StoragePolicyRecord& r : dump.policies()) {
    if (absl::Status s = ns::ValidatePolicy(ns::FromRecord(r.dir(), r));
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dump policy ", r.dir(), ": ", s.message(),
                       " (nothing was restored)"));
    }
  }
  size_t nodes = 0, files = 0, skipped = 0;
  for (const v1::NodeRecord& n : dump.nodes()) {
    absl::Status st = ctx.store->AddNode(n);
    if (absl::IsAlreadyExists(st)) {
      ++skipped;
    } else if (!st.ok()) {
      return st;
    } else {
      ++nodes;
    }
  }
  const size_t total = dump.files_size();
  for (const auto& f : dump.files()) {
    auto st = ctx.store->CreateFile(f.path(), f.layout());
    if (absl::IsAlreadyExists(st.status())) {
      ++skipped;
    } else if (!st.ok()) {
      return absl::Status(
          st.status().code(),
          absl::StrCat("restore stopped at ", f.path(), " (", files, " of ",
                       total, " files restored): ", st.status().message()));
    } else {
      ++files;
    }
    if (ctx.progress && (files + skipped) % 100 == 0) {
      ctx.progress(files + skipped, total);
    }
  }
  if (ctx.progress) ctx.progress(total, total);
  RANGEFS_ASSIGN_OR_RETURN(const int policies,
                           RestorePolicies(ctx, dump, skipped));
  Table t;
  t.message = absl::StrCat("restored ", nodes, " node(s) and ", files,
                           " file(s)", PoliciesPart(policies), "; ", skipped,
                           " already present and left unchanged");
  return t;
}

}  // namespace

std::string Usage(const std::string& group) {
  std::string node = R"(node commands:
  node add ID --address=HOST:PORT [--address=...] --export=DIR [--mount=DIR]
           [--zone=Z] [--rack=R] [--capacity=BYTES] [--state=active|draining|disabled]
  node list
  node show ID
  node drain ID | node disable ID | node enable ID
  node remove ID            (only when draining or disabled, and no layout
                            has a replica on it: rangefs-keeper moves them)
)";
  std::string file = R"(file commands:
  file ls [DIR] [--revision=R] [--limit=N]
  file dataset [DIR] [--revision=R]    files, bytes, invalid records and
                                       revision of DIR pinned as a dataset
  file stat PATH [--revision=R]
  file layout PATH [--revision=R]      (JSON)
  file create PATH --layout=LAYOUT.json
  file mv FROM TO [--if-revision=R]
  file rm PATH [--if-revision=R]
  file put LOCAL|DIR|- PATH|DIR/ [-r] [--jobs=32] [--stripe-unit=1M]
           [--width=N] [--replicas=2] [--ec=K+M] [--ec-min-rows=2]
           [--overwrite] [--parallel=8]
                                       (writes through the node agents; a
                                       directory recursively, "-" = stdin,
                                       DIR/ = under DIR with LOCAL's name;
                                       --ec=6+3: Reed-Solomon, K data + M
                                       parity columns on K+M distinct nodes,
                                       files under --ec-min-rows full rows
                                       of K x stripe unit get --replicas;
                                       without --replicas and --ec, a file
                                       below a storage policy follows it:
                                       see policy commands)
  file get PATH|DIR LOCAL|LOCALDIR/ [--overwrite] [--jobs=8]
                                       (verified copy out; a directory
                                       recursively)
  file cat PATH...                     (verified bytes to stdout)
  file register PATH --replica=NODE:OBJECT[,NODE:OBJECT] [--size=N]
)";
  std::string policy = R"(policy commands (storage policies per directory):
  policy set DIR (--replicas=N | --ec=K+M) [--min-size=BYTES] [--min-age=DURATION]
                            files below DIR (the nearest policy above a
                            file applies) should have N replicas or an
                            erasure code K+M; files under --min-size or
                            younger than --min-age (36h, 90m, 7d) keep
                            their ingest layout. `file put` below DIR
                            follows it unless --replicas/--ec is given;
                            rangefs-keeper converts existing files.
                            Refused (exit 4) when the cluster cannot place
                            it: fewer live ACTIVE nodes than N or K+M, or
                            fewer racks than K+M where nodes have racks
  policy ls                 every policy, and whether it can be placed now
  policy rm DIR             remove DIR's policy (files keep their layout)
)";
  std::string other = R"(other commands:
  status                    nodes, live state, capacity, rangefs-keeper's
                            last round (--json: node rows with "kind":
                            "node", then one "kind": "keeper" row)
  doctor [--mount-root=DIR] [--mount-status=FILE] [--fuse-status=DIR]
         [--mounts=no]      checks etcd, TLS, clock skew, node/live records,
                            storage policies the cluster cannot place,
                            mounts, rangefs-mount file systems and RDMA;
                            prints each finding with its fix; exit 0: all
                            OK, 1: a FAIL, 6: warnings only
  dump [--out=FILE]         whole namespace as JSON (stdout by default):
                            nodes, files and storage policies
  restore --in=FILE         re-create nodes, files and policies from a dump
  fsck [DIR] [--checksums]  check every replica object (exit 4 on problems)
  repair --dry-run [--rebalance-tolerance=0.10]
                            the moves rangefs-keeper would make now (dead or
                            draining nodes, corrupt replicas, rebalancing)
)";
  if (group == "node") return node;
  if (group == "file") return file;
  if (group == "policy") return policy;
  return absl::StrCat(
      "usage: rangefs-admin [--etcd=HOST:PORT,...] [--cluster=NAME] [--json]\n"
      "                     [--ca=PEM --cert=PEM --key=PEM] [--user=U "
      "--password=P]\n"
      "                     [--timeout=SECONDS] [--config=FILE] COMMAND ...\n"
      "Endpoints also come from $RANGEFS_ETCD, the cluster from "
      "$RANGEFS_CLUSTER,\nboth and the TLS files from --config or "
      "$RANGEFS_CONFIG (see deploy/config/rangefs.conf.example).\n"
      "--agent-ca=PEM [--agent-cert=PEM --agent-key=PEM]: TLS to the "
      "agents (file put\nneeds a certificate on the agents' --writers, "
      "e.g. rangefs-admin.crt).\n"
      "--version prints the version and git commit. Exit status: 0 ok, 1 "
      "error,\n2 usage, 3 not found, 4 conflict or problems found, 5 etcd "
      "or agents\nunavailable (doctor: see below).\n\n",
      node, "\n", file, "\n", policy, "\n", other);
}

absl::StatusOr<Table> RunCommand(Context& ctx, Args& args) {
  const std::string group = args.Shift();
  if (group == "node") {
    const std::string verb = args.Shift();
    if (verb == "add") return NodeAdd(ctx, args);
    if (verb == "list" || verb == "ls") return NodeList(ctx, args);
    if (verb == "show") return NodeShow(ctx, args);
    if (verb == "drain") return NodeSetState(ctx, args, v1::DRAINING, "drain");
    if (verb == "disable") {
      return NodeSetState(ctx, args, v1::DISABLED, "disable");
    }
    if (verb == "enable") return NodeSetState(ctx, args, v1::ACTIVE, "enable");
    if (verb == "remove" || verb == "rm") return NodeRemove(ctx, args);
    return absl::InvalidArgumentError(
        absl::StrCat("unknown node command \"", verb, "\"\n", Usage("node")));
  }
  if (group == "file") {
    const std::string verb = args.Shift();
    if (verb == "ls" || verb == "list") return FileLs(ctx, args);
    if (verb == "dataset") return FileDataset(ctx, args);
    if (verb == "stat") return FileStat(ctx, args);
    if (verb == "layout") return FileLayoutCmd(ctx, args);
    if (verb == "create") return FileCreate(ctx, args);
    if (verb == "rm") return FileRm(ctx, args);
    if (verb == "mv") return FileMv(ctx, args);
    if (verb == "put") return RunFilePut(ctx, args);
    if (verb == "get") return RunFileGet(ctx, args);
    if (verb == "cat") return RunFileCat(ctx, args);
    if (verb == "register") return RunFileRegister(ctx, args);
    return absl::InvalidArgumentError(
        absl::StrCat("unknown file command \"", verb, "\"\n", Usage("file")));
  }
  if (group == "policy") return RunPolicyCommand(ctx, args);
  if (group == "status") return Status(ctx, args);
  if (group == "fsck") return RunFsck(ctx, args);
  if (group == "repair") return RunRepair(ctx, args);
  if (group == "dump") return Dump(ctx, args);
  if (group == "restore") return Restore(ctx, args);
  return absl::InvalidArgumentError(absl::StrCat(
      group.empty() ? "no command given"
                    : absl::StrCat("unknown command \"", group, "\""),
      "\n", Usage()));
}

int ExitCode(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
      return 2;
    case absl::StatusCode::kNotFound:
      return 3;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return 4;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return 5;
    default:
      return 1;
  }
}

}  // namespace admin
}  // namespace rangefs
