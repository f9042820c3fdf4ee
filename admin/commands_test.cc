#include "admin/commands.h"

#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/storage_policy.h"
#include "nlohmann/json.hpp"

namespace rangefs {
namespace admin {
namespace {

using ::testing::HasSubstr;

class CommandsTest : public ::testing::Test {
 protected:
  CommandsTest() {
    store_ = ns::NewKvStore(&kv_, {.cluster = "t"});
    ctx_.store = store_.get();
    ctx_.cluster = "t";
  }
  absl::StatusOr<Table> Run(std::vector<std::string> argv) {
    auto a = Args::Parse(argv);
    if (!a.ok()) return a.status();
    return RunCommand(ctx_, *a);
  }
  std::string TempFile(const std::string& name, const std::string& content) {
    std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
    std::ofstream(path) << content;
    return path;
  }
  // Writes a raw key (the keeper's records) as etcd would hold it.
  void PutKey(const std::string& key, const std::string& value) {
    etcdserverpb::TxnRequest txn;
    auto* p = txn.add_success()->mutable_request_put();
    p->set_key(key);
    p->set_value(value);
    ASSERT_THAT(kv_.Txn(txn), IsOk());
  }

  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  Context ctx_;
};

TEST_F(CommandsTest, NodeCommands) {
  ASSERT_THAT(Run({"node", "add", "n1", "--address=10.0.0.1:7070",
                   "--export=/srv/a", "--zone=z1", "--capacity=10G"}),
              IsOk());
  ASSERT_THAT(Run({"node", "add", "n2", "--address", "10.0.0.2:7070",
                   "--export", "/srv/b"}),
              IsOk());
  EXPECT_THAT(Run({"node", "add", "n1", "--address=h:1", "--export=/x"}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(
      Run({"node", "add", "n3", "--export=/x"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--address")));
  EXPECT_THAT(Run({"node", "add", "n3", "--adress=h:1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown flag --adress")));
  auto list = Run({"node", "list"});
  ASSERT_THAT(list, IsOk());
  ASSERT_EQ(list->rows.size(), 2u);
  EXPECT_EQ(list->rows[0][0], "n1");
  EXPECT_EQ(list->rows[0][5], "10.0 GiB");
  EXPECT_THAT(FormatHuman(*list), HasSubstr("ID  STATE   ADDRESSES"));
  EXPECT_THAT(FormatJson(*list), HasSubstr("\"id\": \"n2\""));
  EXPECT_THAT(Run({"node", "remove", "n1"}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_THAT(Run({"node", "drain", "n1"}), IsOk());
  {
    // A layout with a replica on n1 blocks its removal.
    v1::FileLayout l;
    l.set_size(10);
    l.set_state(v1::READY);
    v1::Extent* e = l.add_extents();
    e->set_length(10);
    e->add_replicas()->set_node_id("n1");
    e->mutable_replicas(0)->set_object("o");
    ASSERT_THAT(store_->CreateFile("/held", l), IsOk());
    EXPECT_THAT(Run({"node", "remove", "n1"}),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("still holds 1 replica(s) of 1 file(s) "
                                   "(e.g. /held)")));
    ASSERT_THAT(store_->DeleteFile("/held", 0), IsOk());
  }
  auto show = Run({"node", "show", "n1"});
  ASSERT_THAT(show, IsOk());
  EXPECT_THAT(show->json, HasSubstr("\"admin_state\": \"DRAINING\""));
  ASSERT_THAT(Run({"node", "remove", "n1"}), IsOk());
  EXPECT_THAT(Run({"node", "show", "n1"}),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(Run({"node", "frobnicate"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown node command")));
}

TEST_F(CommandsTest, FileCommandsAndDumpRestore) {
  ASSERT_THAT(Run({"node", "add", "n1", "--address=h:1", "--export=/e"}),
              IsOk());
  std::string layout = TempFile("l.json", R"({
    "size": "100", "state": "READY",
    "extents": [{"offset": "0", "length": "100",
                 "replicas": [{"node_id": "n1", "object": "o/a"}]}]})");
  ASSERT_THAT(Run({"file", "create", "/d/a", "--layout=" + layout}), IsOk());
  ASSERT_THAT(Run({"file", "create", "/d/b", "--layout", layout}), IsOk());
  std::string bad = TempFile("bad.json", R"({"size": "100", "state": "READY",
    "extents": [{"offset": "0", "length": "50",
                 "replicas": [{"node_id": "n1", "object": "o/a"}]}]})");
  EXPECT_THAT(Run({"file", "create", "/d/c", "--layout=" + bad}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("extents cover [0, 50)")));
  std::string junk = TempFile("junk.json", "{not json");
  EXPECT_THAT(
      Run({"file", "create", "/d/c", "--layout=" + junk}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("junk.json")));
  auto ls = Run({"file", "ls", "/d"});
  ASSERT_THAT(ls, IsOk());
  ASSERT_EQ(ls->rows.size(), 2u);
  EXPECT_EQ(ls->rows[1][0], "/d/b");
  auto ds = Run({"file", "dataset", "/d"});
  ASSERT_THAT(ds, IsOk());
  ASSERT_EQ(ds->rows.size(), 1u);
  EXPECT_EQ(ds->rows[0][2], "2");    // files
  EXPECT_EQ(ds->rows[0][3], "200");  // bytes
  EXPECT_EQ(ds->rows[0][4], "0");    // invalid
  EXPECT_NE(ds->rows[0][1], "0");    // revision
  EXPECT_THAT(Run({"file", "dataset", "/d", "--revision=999999"}),
              StatusIs(absl::StatusCode::kOutOfRange));
  auto stat = Run({"file", "stat", "/d/a"});
  ASSERT_THAT(stat, IsOk());
  EXPECT_THAT(FormatHuman(*stat), HasSubstr("1 extent(s)"));
  // --json: numbers as numbers, the size in bytes.
  const nlohmann::json rows = nlohmann::json::parse(FormatJson(*stat));
  std::map<std::string, nlohmann::json> field;
  for (const nlohmann::json& r : rows) field[r["field"]] = r["value"];
  EXPECT_EQ(field["size"], 100) << rows;
  EXPECT_EQ(field["content_generation"], 1) << rows;
  EXPECT_TRUE(field["file_id"].is_number()) << rows;
  EXPECT_EQ(field["path"], "/d/a") << rows;
  auto lay = Run({"file", "layout", "/d/a"});
  ASSERT_THAT(lay, IsOk());
  EXPECT_THAT(lay->json, HasSubstr("\"node_id\": \"n1\""));
  ASSERT_THAT(Run({"file", "mv", "/d/a", "/e/a"}), IsOk());
  EXPECT_THAT(Run({"file", "stat", "/d/a"}),
              StatusIs(absl::StatusCode::kNotFound));
  // Dump, then restore into an empty cluster: same nodes and files.
  std::string dump_path = std::string(getenv("TEST_TMPDIR")) + "/dump.json";
  ASSERT_THAT(Run({"dump", "--out=" + dump_path}), IsOk());
  ns::MemoryKv other_kv;
  auto other = ns::NewKvStore(&other_kv, {.cluster = "t"});
  Context other_ctx;
  other_ctx.store = other.get();
  other_ctx.cluster = "t";
  auto a = Args::Parse({"restore", "--in=" + dump_path});
  ASSERT_THAT(a, IsOk());
  auto restored = RunCommand(other_ctx, *a);
  ASSERT_THAT(restored, IsOk());
  EXPECT_THAT(restored->message, HasSubstr("1 node(s) and 2 file(s)"));
  auto orig = store_->GetFile("/e/a");
  auto copy = other->GetFile("/e/a");
  ASSERT_THAT(copy, IsOk());
  EXPECT_EQ(copy->layout.file_id(), orig->layout.file_id());
  EXPECT_EQ(copy->layout.size(), 100u);
  // A new file in the restored cluster gets a fresh id.
  auto fresh = other->CreateFile("/new", orig->layout);
  ASSERT_THAT(fresh, IsOk());
  a = Args::Parse({"restore", "--in=" + dump_path});
  auto again = RunCommand(other_ctx, *a);
  ASSERT_THAT(again, IsOk());
  EXPECT_THAT(again->message, HasSubstr("3 already present"));
  ASSERT_THAT(Run({"file", "rm", "/e/a"}), IsOk());
  EXPECT_THAT(Run({"file", "rm", "/e/a"}),
              StatusIs(absl::StatusCode::kNotFound));
}

// policy set/ls/rm over the fake store (real etcd and agents:
// tests/integration/policy_test.cc), and policies through dump/restore.
TEST_F(CommandsTest, PolicyCommandsAndDumpRestore) {
  for (const char* id : {"n1", "n2", "n3"}) {
    ASSERT_THAT(Run({"node", "add", id, "--address=h:1", "--export=/e"}),
                IsOk());
  }
  EXPECT_THAT(Run({"policy", "set", "/cold", "--ec=2+1"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has 0 (none)")));
  for (const char* id : {"n1", "n2", "n3"}) {
    v1::LiveRecord l;
    l.set_node_id(id);
    l.set_health(v1::LiveRecord::HEALTHY);
    ASSERT_THAT(store_->PutLive(l, 0), IsOk());
  }
  auto set = Run(
      {"policy", "set", "/cold/", "--ec=2+1", "--min-size=1M", "--min-age=7d"});
  ASSERT_THAT(set, IsOk());
  EXPECT_THAT(set->message,
              HasSubstr("ec=2+1 from /cold, min-size 1048576, min-age 168h"));
  ASSERT_THAT(Run({"policy", "set", "/", "--replicas=3"}), IsOk());
  EXPECT_THAT(
      Run({"policy", "set", "/x", "--replicas=2", "--min-age=1.5s"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("whole seconds")));
  EXPECT_THAT(Run({"policy", "set", "/x", "--replicas=2", "--min-age=-1h"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Run({"policy", "bogus"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown policy command")));
  auto ls = Run({"policy", "ls"});
  ASSERT_THAT(ls, IsOk());
  ASSERT_EQ(ls->rows.size(), 2u) << FormatHuman(*ls);
  EXPECT_EQ(ls->rows[0][0], "/");
  EXPECT_EQ(ls->rows[1][0], "/cold");
  EXPECT_EQ(ls->rows[1][2], "1048576");
  EXPECT_EQ(ls->rows[1][3], "168h");
  EXPECT_EQ(ls->rows[1][5], "yes");
  // The cluster shrinks: ls says which policy cannot be placed, and why.
  ASSERT_THAT(Run({"node", "drain", "n3"}), IsOk());
  ls = Run({"policy", "ls"});
  ASSERT_THAT(ls, IsOk());
  EXPECT_THAT(ls->rows[0][5], HasSubstr("no: replicas=3 needs 3"));
  EXPECT_THAT(ls->rows[1][5], HasSubstr("no: ec=2+1 needs 3"));

  std::string dump_path =
      std::string(getenv("TEST_TMPDIR")) + "/policy-dump.json";
  auto dumped = Run({"dump", "--out=" + dump_path});
  ASSERT_THAT(dumped, IsOk());
  EXPECT_THAT(dumped->message, HasSubstr("and 2 storage policy(ies)"));
  ns::MemoryKv other_kv;
  auto other = ns::NewKvStore(&other_kv, {.cluster = "t"});
  Context other_ctx;
  other_ctx.store = other.get();
  other_ctx.cluster = "t";
  auto a = Args::Parse({"restore", "--in=" + dump_path});
  ASSERT_THAT(a, IsOk());
  auto restored = RunCommand(other_ctx, *a);
  ASSERT_THAT(restored, IsOk());
  EXPECT_THAT(restored->message, HasSubstr("and 2 storage policy(ies)"));
  auto copied = ns::LoadPolicies(other_kv, other->keys());
  ASSERT_THAT(copied, IsOk());
  ASSERT_EQ(copied->policies().size(), 2u);
  EXPECT_EQ(copied->policies()[1].goal, ns::LayoutGoal::Ec(2, 1));
  EXPECT_EQ(copied->policies()[1].min_age, absl::Hours(168));

  ASSERT_THAT(Run({"policy", "rm", "/cold"}), IsOk());
  EXPECT_THAT(Run({"policy", "rm", "/cold"}),
              StatusIs(absl::StatusCode::kNotFound));
  // A record the gate refuses: listed as invalid, and dump refuses.
  PutKey(store_->keys().Policy("/bad"), "\xff\xff");
  ls = Run({"policy", "ls"});
  ASSERT_THAT(ls, IsOk());
  EXPECT_EQ(ls->rows.back()[1], "invalid");
  EXPECT_THAT(ls->message, HasSubstr("1 invalid record(s)"));
  EXPECT_THAT(Run({"dump", "--out=" + dump_path}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("policies/bad")));
}

TEST_F(CommandsTest, FileDirectoryClashesAreRefusedAndFsckFindsOldOnes) {
  ASSERT_THAT(Run({"node", "add", "n1", "--address=h:1", "--export=/e"}),
              IsOk());
  std::string empty =
      TempFile("empty.json", R"({"size": "0", "state": "READY"})");
  ASSERT_THAT(Run({"file", "create", "/d/pq/part-0", "--layout=" + empty}),
              IsOk());
  ASSERT_THAT(Run({"file", "create", "/d/data.csv", "--layout=" + empty}),
              IsOk());
  auto dir = Run({"file", "create", "/d/pq", "--layout=" + empty});
  EXPECT_THAT(dir, StatusIs(absl::StatusCode::kFailedPrecondition,
                            HasSubstr("/d/pq is a directory")));
  EXPECT_EQ(ExitCode(dir.status()), 4);
  EXPECT_THAT(
      Run({"file", "create", "/d/data.csv/inner.gz", "--layout=" + empty}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("/d/data.csv is a file")));
  EXPECT_THAT(Run({"file", "mv", "/d/data.csv", "/d/pq"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("/d/pq is a directory")));
  EXPECT_THAT(Run({"fsck", "/d"}), IsOk());
  // A clash written straight into etcd (an older version, by hand).
  auto good = store_->GetFile("/d/data.csv");
  ASSERT_THAT(good, IsOk());
  PutKey(store_->keys().File("/d/data.csv/inner.gz"),
         good->layout.SerializeAsString());
  auto fsck = Run({"fsck", "/d"});
  EXPECT_THAT(fsck, StatusIs(absl::StatusCode::kFailedPrecondition,
                             HasSubstr("file /d/data.csv is also a directory: "
                                       "1 file(s) below it "
                                       "(/d/data.csv/inner.gz)")));
  EXPECT_EQ(ExitCode(fsck.status()), 4);
}

TEST_F(CommandsTest, StatusShowsTheKeeper) {
  auto st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("no active keeper"));
  const ns::Keys& k = store_->keys();
  PutKey(k.KeeperLeader(), "kx");
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("keeper kx active (no round reported"));
  v1::KeeperStatus ks;
  ks.set_updated_unix_ms(absl::ToUnixMillis(absl::Now()));
  ks.set_moves_planned(3);
  ks.set_bytes_planned(3 << 20);
  ks.set_dead_nodes(1);
  ks.set_trash_pending(2);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("3 replica move(s) to do (3.0 MiB)"));
  EXPECT_THAT(st->message,
              HasSubstr("1 dead, 0 draining node(s); 2 object(s)"));
  EXPECT_THAT(st->message, ::testing::Not(HasSubstr("in progress")));
  // A round in progress shows its bytes copied and the ETA.
  ks.set_in_round(true);
  ks.set_bytes_copied(1 << 20);
  ks.set_eta_s(42.7);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("round in progress: 1.0 MiB of 3.0 MiB "
                                     "copied, ETA 42s"));
  // Storage-policy conversions: the backlog per policy, the ETA (unknown
  // while unpaced and nothing is converted yet), what the round freed.
  v1::KeeperStatus::PolicyConversions* c = ks.add_conversions();
  c->set_policy("/sealed");
  c->set_files(4);
  c->set_bytes(8 << 20);
  c->set_bytes_saved(7 << 20);
  ks.set_convert_eta_s(-1);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("policy /sealed: 4 file(s) (8.0 MiB) to "
                                     "convert, 7.0 MiB to free; conversions "
                                     "ETA unknown"));
  EXPECT_THAT(st->message, ::testing::Not(HasSubstr("done this round")));
  ks.set_convert_eta_s(90.5);
  ks.set_conversions_done(2);
  ks.set_convert_bytes_saved(3 << 20);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("; conversions ETA 1m30s; 2 "
                                     "conversion(s) done this round (3.0 MiB "
                                     "freed)"));
}

// --json status: the node rows as before (each with "kind": "node"), then
// one keeper row carrying what the text line says, as numbers.
TEST_F(CommandsTest, StatusJsonHasNodeRowsThenTheKeeperRow) {
  ASSERT_THAT(Run({"node", "add", "n1", "--address=n1:1", "--export=/e"}),
              IsOk());
  auto parse = [&]() {
    auto st = Run({"status"});
    EXPECT_THAT(st, IsOk());
    if (!st.ok()) return nlohmann::json();
    EXPECT_EQ(FormatHuman(*st).find("keeper\","), std::string::npos);
    return nlohmann::json::parse(FormatJson(*st), nullptr, false);
  };
  nlohmann::json rows = parse();
  ASSERT_TRUE(rows.is_array()) << rows;
  ASSERT_EQ(rows.size(), 2u) << rows;
  // What tests/bench/part_k.sh does: every row has "node" and "live".
  for (const auto& r : rows) {
    ASSERT_TRUE(r.contains("node") && r.contains("live")) << r;
  }
  EXPECT_EQ(rows[0]["kind"], "node");
  EXPECT_EQ(rows[0]["node"], "n1");
  EXPECT_EQ(rows[0]["live"], "no");
  EXPECT_EQ(rows[1]["kind"], "keeper");
  EXPECT_EQ(rows[1]["node"], "");
  EXPECT_EQ(rows[1]["active"], false);
  EXPECT_EQ(rows[1]["reported"], false);

  const ns::Keys& k = store_->keys();
  PutKey(k.KeeperLeader(), "kx");
  v1::KeeperStatus ks;
  ks.set_updated_unix_ms(1234);
  ks.set_moves_planned(3);
  ks.set_moves_done(1);
  ks.set_moves_failed(2);
  ks.set_stuck(4);
  ks.set_bytes_planned(3 << 20);
  ks.set_under_replicated_files(2);
  ks.set_under_replicated_bytes(2 << 20);
  ks.set_dead_nodes(1);
  ks.set_draining_nodes(5);
  ks.set_trash_pending(6);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  rows = parse();
  ASSERT_EQ(rows.size(), 2u) << rows;
  const nlohmann::json& kr = rows[1];
  EXPECT_EQ(kr["kind"], "keeper");
  EXPECT_EQ(kr["active"], true);
  EXPECT_EQ(kr["keeper_id"], "kx");
  EXPECT_EQ(kr["reported"], true);
  EXPECT_EQ(kr["updated_unix_ms"], 1234);
  EXPECT_EQ(kr["moves_planned"], 3);
  EXPECT_EQ(kr["moves_done"], 1);
  EXPECT_EQ(kr["moves_failed"], 2);
  EXPECT_EQ(kr["stuck"], 4);
  EXPECT_EQ(kr["bytes_planned"], 3 << 20);
  EXPECT_EQ(kr["under_replicated_files"], 2);
  EXPECT_EQ(kr["under_replicated_bytes"], 2 << 20);
  EXPECT_EQ(kr["dead_nodes"], 1);
  EXPECT_EQ(kr["draining_nodes"], 5);
  EXPECT_EQ(kr["trash_pending"], 6);
  EXPECT_EQ(kr["in_round"], false);
  EXPECT_TRUE(kr["eta_s"].is_null());
  // The text line says the same.
  auto st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("2 under-replicated file(s) (2.0 MiB)"));

  ks.set_in_round(true);
  ks.set_bytes_copied(1 << 20);
  ks.set_eta_s(42.5);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  rows = parse();
  ASSERT_EQ(rows.size(), 2u) << rows;
  EXPECT_EQ(rows[1]["in_round"], true);
  EXPECT_EQ(rows[1]["bytes_copied"], 1 << 20);
  EXPECT_EQ(rows[1]["eta_s"], 42.5);
}

// A node with a record but no live record shows at once as unreachable
// (no keeper needed); the keeper's record adds the files at risk and the
// countdown to healing, in the text line and as numbers in the JSON row.
TEST_F(CommandsTest, StatusShowsUnreachableNodesAndWhenHealingStarts) {
  for (const char* id : {"n1", "n2", "n3"}) {
    ASSERT_THAT(Run({"node", "add", id, absl::StrCat("--address=", id, ":1"),
                     "--export=/e"}),
                IsOk());
  }
  v1::LiveRecord l;
  l.set_node_id("n1");
  l.set_health(v1::LiveRecord::HEALTHY);
  ASSERT_THAT(store_->PutLive(l, 0), IsOk());
  auto st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message,
              HasSubstr("3 node(s), 1 live, 2 unreachable (n2, n3)"));
  EXPECT_THAT(st->message, HasSubstr("no active keeper"));
  auto json = [&]() {
    auto s = Run({"status"});
    EXPECT_THAT(s, IsOk());
    if (!s.ok()) return nlohmann::json();
    nlohmann::json rows = nlohmann::json::parse(FormatJson(*s), nullptr, false);
    return rows.is_array() && !rows.empty() ? rows.back() : nlohmann::json();
  };
  nlohmann::json kr = json();
  EXPECT_EQ(kr["kind"], "keeper");
  EXPECT_EQ(kr["unreachable_nodes"], 2);

  const ns::Keys& k = store_->keys();
  PutKey(k.KeeperLeader(), "kx");
  v1::KeeperStatus ks;
  ks.set_updated_unix_ms(absl::ToUnixMillis(absl::Now()));
  ks.set_missing_nodes(2);
  ks.set_at_risk_files(166);
  ks.set_at_risk_bytes(3 << 20);
  ks.set_dead_after_s(600);
  ks.set_heal_starts_unix_ms(
      absl::ToUnixMillis(absl::Now() + absl::Seconds(98)));
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message,
              HasSubstr("166 file(s) (3.0 MiB) at risk on unreachable "
                        "node(s); healing starts in 1m3"));
  EXPECT_THAT(st->message,
              ::testing::ContainsRegex("healing starts in 1m3[89]s"));
  kr = json();
  EXPECT_EQ(kr["at_risk_files"], 166);
  EXPECT_EQ(kr["at_risk_bytes"], 3 << 20);
  EXPECT_EQ(kr["unreachable_nodes"], 2);
  EXPECT_EQ(kr["dead_after_s"], 600);
  ASSERT_TRUE(kr["heal_starts_in_s"].is_number()) << kr;
  EXPECT_GE(kr["heal_starts_in_s"].get<int>(), 97);
  EXPECT_LE(kr["heal_starts_in_s"].get<int>(), 98);

  // Once it passed: healing now (0 in the JSON).
  ks.set_heal_starts_unix_ms(
      absl::ToUnixMillis(absl::Now() - absl::Seconds(5)));
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, HasSubstr("at risk on unreachable node(s); "
                                     "healing now"));
  EXPECT_EQ(json()["heal_starts_in_s"], 0);

  // No node missing: nothing about risk, and null in the JSON.
  ks.clear_heal_starts_unix_ms();
  ks.set_at_risk_files(0);
  ks.set_at_risk_bytes(0);
  PutKey(k.KeeperStatus(), ks.SerializeAsString());
  st = Run({"status"});
  ASSERT_THAT(st, IsOk());
  EXPECT_THAT(st->message, ::testing::Not(HasSubstr("at risk")));
  EXPECT_TRUE(json()["heal_starts_in_s"].is_null());
}

TEST_F(CommandsTest, RepairDryRunPrintsThePlanAndChangesNothing) {
  // n1 and n2 live, n3 has no live record (dead here); /f has replicas on
  // n1 and n3: the plan moves n3's replica to n2.
  for (const char* id : {"n1", "n2", "n3"}) {
    ASSERT_THAT(Run({"node", "add", id, absl::StrCat("--address=", id, ":1"),
                     "--export=/e"}),
                IsOk());
  }
  for (const char* id : {"n1", "n2"}) {
    v1::LiveRecord l;
    l.set_node_id(id);
    l.set_health(v1::LiveRecord::HEALTHY);
    l.set_free_bytes(1 << 30);
    l.set_total_bytes(2 << 30);
    ASSERT_THAT(store_->PutLive(l, 0), IsOk());
  }
  std::string layout = TempFile("r.json", R"({
    "size": "100", "state": "READY",
    "extents": [{"offset": "0", "length": "100",
                 "replicas": [{"node_id": "n1", "object": "o/f"},
                              {"node_id": "n3", "object": "o/f"}]}]})");
  ASSERT_THAT(Run({"file", "create", "/f", "--layout=" + layout}), IsOk());
  auto before = store_->GetFile("/f");
  ASSERT_THAT(before, IsOk());
  EXPECT_THAT(Run({"repair"}), StatusIs(absl::StatusCode::kInvalidArgument));
  auto plan = Run({"repair", "--dry-run"});
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->rows.size(), 1u);
  EXPECT_EQ(plan->rows[0], (std::vector<std::string>{"move", "/f", "0", "o/f",
                                                     "n3", "n2", "n1", "100"}));
  EXPECT_THAT(plan->message, HasSubstr("1 move(s)"));
  EXPECT_THAT(plan->message, HasSubstr("1 dead (no live record)"));
  auto after = store_->GetFile("/f");
  ASSERT_THAT(after, IsOk());
  EXPECT_EQ(after->mod_revision, before->mod_revision);
  EXPECT_THAT(Run({"repair", "--dry-run", "--rebalance-tolerance=x"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // A slot left with 3 replicas by a move's first step (n3's marked
  // leaving; the layout rules accept it): a drop, no copy.
  std::string left = TempFile("g.json", R"({
    "size": "100", "state": "READY",
    "extents": [{"offset": "0", "length": "100",
                 "replicas": [{"node_id": "n3", "object": "o/g",
                               "leaving": true},
                              {"node_id": "n1", "object": "o/g"},
                              {"node_id": "n2", "object": "o/g"}]}]})");
  ASSERT_THAT(Run({"file", "create", "/g", "--layout=" + left}), IsOk());
  plan = Run({"repair", "--dry-run"});
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->rows.size(), 2u);
  EXPECT_EQ(plan->rows[1], (std::vector<std::string>{"drop", "/g", "0", "o/g",
                                                     "n3", "-", "-", "0"}));
}

TEST_F(CommandsTest, RepairDryRunListsErasureCodedRebuilds) {
  // A 2+1 file on n1..n3; n3 has no live record (dead here), n4 is up and
  // holds no column: column 2 is rebuilt there, by n4's agent. Then fsck
  // finds column 0 corrupt (a suspect record): one readable column is left,
  // both are stuck.
  for (const char* id : {"n1", "n2", "n3", "n4"}) {
    ASSERT_THAT(Run({"node", "add", id, absl::StrCat("--address=", id, ":1"),
                     "--export=/e"}),
                IsOk());
  }
  for (const char* id : {"n1", "n2", "n4"}) {
    v1::LiveRecord l;
    l.set_node_id(id);
    l.set_health(v1::LiveRecord::HEALTHY);
    l.set_free_bytes(1 << 30);
    l.set_total_bytes(2 << 30);
    ASSERT_THAT(store_->PutLive(l, 0), IsOk());
  }
  v1::FileLayout l;
  l.set_size(3 * 2 * 4096 + 100);  // 4 rows: parity column 4 x 4096
  l.set_state(v1::READY_EC);
  l.set_checksum(v1::CRC32C_SIDECAR);
  l.set_checksum_block_size(4096);
  l.mutable_striped()->set_stripe_unit(4096);
  v1::ErasureCode* e = l.mutable_striped()->mutable_erasure();
  e->set_codec(v1::ErasureCode::RS_CAUCHY_GF8);
  e->set_data_columns(2);
  e->set_parity_columns(1);
  for (int t = 0; t < 3; ++t) {
    v1::Replica* r = l.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id(absl::StrCat("n", t + 1));
    r->set_object(absl::StrCat("o/c", t));
  }
  ASSERT_THAT(store_->CreateFile("/ec", l), IsOk());
  auto plan = Run({"repair", "--dry-run"});
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->rows.size(), 1u) << FormatHuman(*plan);
  EXPECT_EQ(plan->rows[0],
            (std::vector<std::string>{"rebuild", "/ec", "2", "o/c2", "n3", "n4",
                                      "dead: 2 of 2 columns, by n4", "16384"}));
  EXPECT_THAT(plan->message, HasSubstr("1 erasure-coded column rebuild(s)"));
  // fsck's suspect record of column 0: its rebuild finds no free node.
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(store_->keys().KeeperSuspect("n1", "o/c0"));
  put->set_value("checksum mismatch");
  ASSERT_THAT(store_->kv()->Txn(txn), IsOk());
  plan = Run({"repair", "--dry-run"});
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->rows.size(), 2u) << FormatHuman(*plan);
  EXPECT_EQ(plan->rows[0][0], "stuck");
  EXPECT_EQ(plan->rows[1][0], "stuck");
  EXPECT_THAT(plan->rows[0][7], HasSubstr("only 1 readable column(s)"));
}

TEST_F(CommandsTest, ExitCodes) {
  EXPECT_EQ(ExitCode(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCode(absl::InvalidArgumentError("")), 2);
  EXPECT_EQ(ExitCode(absl::NotFoundError("")), 3);
  EXPECT_EQ(ExitCode(absl::AbortedError("")), 4);
  EXPECT_EQ(ExitCode(absl::UnavailableError("")), 5);
  EXPECT_THAT(Run({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("no command")));
}

TEST(ArgsTest, ParsesBytesAndFlags) {
  EXPECT_EQ(*ParseBytes("4096"), 4096u);
  EXPECT_EQ(*ParseBytes("10G"), 10ull << 30);
  EXPECT_EQ(*ParseBytes("512MiB"), 512ull << 20);
  EXPECT_THAT(ParseBytes("ten"), StatusIs(absl::StatusCode::kInvalidArgument));
  auto a = Args::Parse({"x", "--json", "--n=1", "--m", "2", "y"});
  ASSERT_THAT(a, IsOk());
  EXPECT_TRUE(a->GetBool("json"));
  EXPECT_EQ(a->Get("m"), "2");
  EXPECT_EQ(a->positional().size(), 2u);
  EXPECT_THAT(Args::Parse({"--dangling"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TableTest, JsonKeepsColumnOrderAndEscapes) {
  Table t;
  t.columns = {"Zeta", "free space"};
  t.AddRow({"a\"b\n\x01", "1"});
  EXPECT_EQ(FormatJson(t),
            "[\n {\n  \"zeta\": \"a\\\"b\\n\\u0001\",\n  \"free_space\": "
            "\"1\"\n }\n]\n");
  Table empty;
  empty.columns = {"id"};
  EXPECT_EQ(FormatJson(empty), "[]\n");
  Table msg;
  msg.message = "node n1 drained";
  EXPECT_EQ(FormatJson(msg), "{\n \"message\": \"node n1 drained\"\n}\n");
  EXPECT_EQ(FormatJsonError(absl::NotFoundError("no \"x\"")),
            "{\"error\":\"no \\\"x\\\"\",\"code\":\"NOT_FOUND\"}\n");
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
