// doctor against a deliberately broken setup on a real etcd: a node whose
// agent is not running (no live record), a missing mount, a mount with the
// wrong options, a disabled node whose agent still runs, and a TLS etcd
// reached with the wrong CA.
#include "admin/doctor.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/testing/status_matchers.h"
#include "client_lib/mountd/mount_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/memory_kv.h"
#include "namespace/storage_policy.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/etcd_namespace.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace admin {
namespace {

using ::rangefs::IsOk;
using ::rangefs::StatusIs;
using ::rangefs::testing::EtcdCluster;
using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::StartEtcdNamespace;
using ::rangefs::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The row whose check is `check`; fails the test if there is none.
std::vector<std::string> Row(const Table& t, const std::string& check) {
  for (const auto& row : t.rows) {
    if (row[0] == check) return row;
  }
  ADD_FAILURE() << "no row " << check << " in\n" << FormatHuman(t);
  return {"", "", "", ""};
}

v1::NodeRecord Node(const std::string& id, v1::AdminState state) {
  v1::NodeRecord n;
  n.set_id(id);
  n.add_addresses("127.0.0.1:7070");
  n.set_export_path("/srv/" + id);
  n.set_admin_state(state);
  return n;
}

absl::Status PutLive(ns::NamespaceStore& store, const std::string& id,
                     v1::LiveRecord::TransportSecurity security) {
  v1::LiveRecord l;
  l.set_node_id(id);
  l.set_health(v1::LiveRecord::HEALTHY);
  l.set_version("test");
  l.set_transport_security(security);
  return store.PutLive(l, 0);
}

TEST(DoctorTest, ReportsABrokenSetup) {
  auto dir = MakeTempDir("doctor-");
  ASSERT_THAT(dir.status(), IsOk());
  auto etcd = EtcdCluster::Start({.members = 1});
  ASSERT_THAT(etcd.status(), IsOk());
  auto client = etcd::EtcdClient::Open({.endpoints = (*etcd)->endpoints()});
  ASSERT_THAT(client.status(), IsOk());
  auto kv = ns::NewEtcdKv(client->get());
  auto store = ns::NewKvStore(kv.get(), {.cluster = "doc"});
  // up: agent live, mounted well. down: no live record, not mounted.
  // tcp: live, mounted over TCP with a small rsize and readahead.
  // off: disabled but its agent still runs.
  for (const auto& [id, state] :
       std::vector<std::pair<std::string, v1::AdminState>>{
           {"up", v1::ACTIVE},
           {"down", v1::ACTIVE},
           {"tcp", v1::DRAINING},
           {"off", v1::DISABLED}}) {
    ASSERT_THAT(store->AddNode(Node(id, state)), IsOk());
  }
  // up serves mTLS, tcp runs --insecure, off publishes a value doctor does
  // not know.
  ASSERT_THAT(PutLive(*store, "up", v1::LiveRecord::MTLS), IsOk());
  ASSERT_THAT(PutLive(*store, "tcp", v1::LiveRecord::INSECURE), IsOk());
  ASSERT_THAT(PutLive(*store, "off",
                      static_cast<v1::LiveRecord::TransportSecurity>(99)),
              IsOk());

  // A mount table as the kernel shows it (mount checks only read text).
  const std::string root = *dir + "/mnt";
  std::ofstream(*dir + "/mountinfo")
      << "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
      << "90 22 0:51 / " << root
      << "/up ro,relatime - nfs4 10.0.0.1:/srv/up "
         "ro,vers=4.2,rsize=1048576,hard,proto=rdma,port=20049\n"
      << "91 22 0:52 / " << root
      << "/tcp ro,relatime - nfs4 10.0.0.2:/srv/tcp "
         "ro,vers=4.2,rsize=65536,hard,proto=tcp\n"
      << "92 22 0:53 / " << root
      << "/off ro,relatime - nfs4 10.0.0.3:/srv/off ro,proto=rdma\n";
  for (const auto& [dev, kb] : std::vector<std::pair<std::string, std::string>>{
           {"0:51", "4096"}, {"0:52", "128"}}) {
    std::string bdi = *dir + "/sys/class/bdi/" + dev;
    ASSERT_EQ(system(("mkdir -p " + bdi).c_str()), 0);
    std::ofstream(bdi + "/read_ahead_kb") << kb << "\n";
  }

  Context ctx;
  ctx.store = store.get();
  ctx.cluster = "doc";
  auto args = Args::Parse(
      {"doctor", "--etcd=" + (*etcd)->endpoints(), "--mount-root=" + root,
       "--mountinfo=" + *dir + "/mountinfo", "--sysfs-root=" + *dir + "/sys"});
  ASSERT_THAT(args.status(), IsOk());
  auto t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  SCOPED_TRACE(FormatHuman(*t));

  auto etcd_row = Row(*t, "etcd " + (*etcd)->endpoint(0));
  EXPECT_EQ(etcd_row[1], "WARN");  // reachable, but plaintext
  EXPECT_THAT(etcd_row[2], HasSubstr("reachable over plaintext"));
  EXPECT_EQ(Row(*t, "clock")[1], "OK");
  EXPECT_THAT(Row(*t, "clock")[2], HasSubstr("HTTP Date"));

  EXPECT_EQ(Row(*t, "node up")[1], "OK");
  auto down = Row(*t, "node down");
  EXPECT_EQ(down[1], "FAIL");
  EXPECT_THAT(down[2], HasSubstr("no live record"));
  EXPECT_THAT(down[3], HasSubstr("systemctl status rangefs-node"));
  EXPECT_EQ(Row(*t, "node off")[1], "WARN");
  EXPECT_THAT(Row(*t, "node off")[2], HasSubstr("agent is still running"));

  auto insecure = Row(*t, "security tcp");
  EXPECT_EQ(insecure[1], "WARN");
  EXPECT_THAT(insecure[2], HasSubstr("INSECURE"));
  EXPECT_THAT(insecure[3], HasSubstr("--tls_client_ca"));
  EXPECT_THAT(insecure[3], HasSubstr("--agents=tcp@HOST"));
  EXPECT_EQ(Row(*t, "security off")[1], "WARN");
  EXPECT_THAT(Row(*t, "security off")[2],
              HasSubstr("unknown transport security value 99"));
  for (const auto& row : t->rows) {
    EXPECT_NE(row[0], "security up");  // mTLS: nothing to say
    EXPECT_NE(row[0], "security");     // no all-clear with insecure agents
  }

  EXPECT_EQ(Row(*t, "mount up")[1], "OK");
  EXPECT_THAT(Row(*t, "mount up")[2], HasSubstr("readahead 4096 KiB"));
  auto missing = Row(*t, "mount down");
  EXPECT_EQ(missing[1], "FAIL");
  EXPECT_THAT(missing[2], HasSubstr("is not mounted"));
  EXPECT_THAT(missing[3], HasSubstr("rangefs-mountd"));
  auto tcp = Row(*t, "mount tcp");
  EXPECT_EQ(tcp[1], "WARN");
  EXPECT_THAT(tcp[2], HasSubstr("proto=tcp, not rdma"));
  EXPECT_THAT(tcp[2], HasSubstr("rsize=65536"));
  EXPECT_THAT(tcp[2], HasSubstr("readahead 128 KiB"));
  EXPECT_THAT(tcp[3], HasSubstr("proto=rdma,port=20049"));
  EXPECT_EQ(Row(*t, "mount off")[1], "WARN");  // stale mount
  EXPECT_EQ(Row(*t, "mountd")[1], "WARN");     // no status file

  auto rdma_rows = 0;
  for (const auto& row : t->rows) {
    if (row[0].rfind("rdma", 0) == 0) ++rdma_rows;
  }
  EXPECT_GE(rdma_rows, 1);
  EXPECT_THAT(t->message, HasSubstr("failure(s)"));
  EXPECT_EQ(t->exit_code, kDoctorExitFailures);

  auto bad = Args::Parse({"doctor", "--bogus=1"});
  ASSERT_THAT(bad.status(), IsOk());
  EXPECT_THAT(RunDoctor(ctx, *bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  testing::RemoveTree(*dir);
}

TEST(DoctorTest, ReportsAPathThatIsAFileAndADirectory) {
  auto n = StartEtcdNamespace({.cluster = "doc"});
  ASSERT_THAT(n.status(), IsOk());
  v1::FileLayout empty;
  empty.set_state(v1::READY);
  ASSERT_THAT(n->store->CreateFile("/d/pq/part-0", empty), IsOk());
  Context ctx;
  ctx.store = n->store.get();
  ctx.cluster = "doc";
  auto args =
      Args::Parse({"doctor", "--etcd=" + n->etcd->endpoints(), "--mounts=no"});
  ASSERT_THAT(args.status(), IsOk());
  auto t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  EXPECT_EQ(Row(*t, "namespace")[1], "OK") << FormatHuman(*t);
  // The store refuses the clash; an older version or a hand wrote it.
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(n->store->keys().File("/d/pq"));
  put->set_value(empty.SerializeAsString());
  ASSERT_THAT(n->kv->Txn(txn), IsOk());
  t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  auto row = Row(*t, "namespace");
  EXPECT_EQ(row[1], "FAIL") << FormatHuman(*t);
  EXPECT_THAT(row[2], HasSubstr("file /d/pq is also a directory"));
  EXPECT_THAT(row[3], HasSubstr("rangefs-admin file mv /d/pq"));
}

// All rows whose check is `check`.
std::vector<std::vector<std::string>> Rows(const Table& t,
                                           const std::string& check) {
  std::vector<std::vector<std::string>> out;
  for (const auto& row : t.rows) {
    if (row[0] == check) out.push_back(row);
  }
  return out;
}

// A storage policy that fit the cluster when it was set, and no longer
// does once nodes go (their live records gone, one drained): a WARN naming
// what it needs and has; the policy that still fits is counted OK.
TEST(DoctorTest, ReportsPoliciesTheShrunkClusterCannotPlace) {
  auto n = StartEtcdNamespace({.cluster = "doc"});
  ASSERT_THAT(n.status(), IsOk());
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_THAT(n->store->AddNode(Node(id, v1::ACTIVE)), IsOk());
    ASSERT_THAT(PutLive(*n->store, id, v1::LiveRecord::MTLS), IsOk());
  }
  ns::StoragePolicy ec;
  ec.dir = "/cold";
  ec.goal = ns::LayoutGoal::Ec(2, 1);
  ASSERT_THAT(ns::PutPolicy(*n->kv, n->store->keys(), ec), IsOk());
  ns::StoragePolicy two;
  two.dir = "/hot";
  two.goal = ns::LayoutGoal::Replicas(2);
  ASSERT_THAT(ns::PutPolicy(*n->kv, n->store->keys(), two), IsOk());
  Context ctx;
  ctx.store = n->store.get();
  ctx.cluster = "doc";
  auto args =
      Args::Parse({"doctor", "--etcd=" + n->etcd->endpoints(), "--mounts=no"});
  ASSERT_THAT(args.status(), IsOk());
  auto t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  auto rows = Rows(*t, "policy");
  ASSERT_EQ(rows.size(), 1u) << FormatHuman(*t);
  EXPECT_EQ(rows[0][1], "OK");
  EXPECT_THAT(rows[0][2], HasSubstr("2 of 2 storage policy(ies)"));

  // The cluster shrinks: c is drained.
  ASSERT_THAT(n->store->SetNodeState("c", v1::DRAINING), IsOk());
  t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  rows = Rows(*t, "policy");
  ASSERT_EQ(rows.size(), 2u) << FormatHuman(*t);
  EXPECT_EQ(rows[0][1], "WARN");
  EXPECT_THAT(rows[0][2], HasSubstr("policy of /cold cannot be placed now: "
                                    "ec=2+1 needs 3 live ACTIVE nodes"));
  EXPECT_THAT(rows[0][2], HasSubstr("has 2 (a, b)"));
  EXPECT_THAT(rows[0][3], HasSubstr("policy set /cold"));
  EXPECT_EQ(rows[1][1], "OK");
  EXPECT_THAT(rows[1][2], HasSubstr("1 of 2 storage policy(ies)"));
  EXPECT_EQ(t->exit_code == kDoctorExitFailures ||
                t->exit_code == kDoctorExitWarnings,
            true);
}

// deploy/local/cluster.sh "mounts" each node as a symlink to its export
// directory: that is not a failure. Warnings only: exit code 6.
TEST(DoctorTest, SymlinkToTheExportIsALocalMountAndWarningsExitSix) {
  auto dir = MakeTempDir("doctor-link-");
  ASSERT_THAT(dir.status(), IsOk());
  auto etcd = EtcdCluster::Start({.members = 1});
  ASSERT_THAT(etcd.status(), IsOk());
  ns::MemoryKv kv;
  auto store = ns::NewKvStore(&kv, {.cluster = "doc"});
  const std::string root = *dir + "/mnt";
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  for (const std::string id : {"ln", "odd"}) {
    ASSERT_THAT(store->AddNode(Node(id, v1::ACTIVE)), IsOk());
    ASSERT_THAT(PutLive(*store, id, v1::LiveRecord::MTLS), IsOk());
  }
  // ln -> its export (/srv/ln, Node()), with a trailing slash; odd ->
  // somewhere else.
  ASSERT_EQ(symlink("/srv/ln/", (root + "/ln").c_str()), 0);
  ASSERT_EQ(symlink("../elsewhere", (root + "/odd").c_str()), 0);
  std::ofstream(*dir + "/mountinfo")
      << "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n";

  Context ctx;
  ctx.store = store.get();
  ctx.cluster = "doc";
  auto args = Args::Parse(
      {"doctor", "--etcd=" + (*etcd)->endpoints(), "--mount-root=" + root,
       "--mountinfo=" + *dir + "/mountinfo", "--sysfs-root=" + *dir + "/sys",
       "--fuse-status=" + *dir + "/fuse"});
  ASSERT_THAT(args.status(), IsOk());
  auto t = RunDoctor(ctx, *args);
  ASSERT_THAT(t.status(), IsOk());
  SCOPED_TRACE(FormatHuman(*t));
  auto ln = Row(*t, "mount ln");
  EXPECT_EQ(ln[1], "OK");
  EXPECT_THAT(ln[2], HasSubstr("symlink to the node's export directory"));
  auto odd = Row(*t, "mount odd");
  EXPECT_EQ(odd[1], "WARN");
  EXPECT_THAT(odd[2], HasSubstr(*dir + "/mnt/../elsewhere"));
  for (const auto& row : t->rows) EXPECT_NE(row[1], "FAIL") << row[0];
  EXPECT_EQ(t->exit_code, kDoctorExitWarnings);
  testing::RemoveTree(*dir);
}

void PutRaw(ns::MemoryKv& kv, const std::string& key,
            const std::string& value) {
  etcdserverpb::TxnRequest txn;
  auto* p = txn.add_success()->mutable_request_put();
  p->set_key(key);
  p->set_value(value);
  ASSERT_THAT(kv.Txn(txn), IsOk());
}

// A node without a live record is a WARN while the keeper counts it
// missing (with the files at risk and the countdown to healing), a FAIL
// once the keeper counts it dead.
TEST(DoctorTest, UnreachableNodeWarnsWithTheCountdownDeadOneFails) {
  ns::MemoryKv kv;
  auto store = ns::NewKvStore(&kv, {.cluster = "doc"});
  for (const std::string id : {"up", "gone", "dead"}) {
    ASSERT_THAT(store->AddNode(Node(id, v1::ACTIVE)), IsOk());
  }
  ASSERT_THAT(PutLive(*store, "up", v1::LiveRecord::MTLS), IsOk());
  PutRaw(kv, store->keys().KeeperLeader(), "kx");
  v1::KeeperStatus ks;
  ks.set_updated_unix_ms(absl::ToUnixMillis(absl::Now()));
  ks.set_at_risk_files(7);
  ks.set_heal_starts_unix_ms(
      absl::ToUnixMillis(absl::Now() + absl::Seconds(98)));
  ks.set_dead_after_s(600);
  ks.add_dead_node_ids("dead");
  PutRaw(kv, store->keys().KeeperStatus(), ks.SerializeAsString());

  Context ctx;
  ctx.store = store.get();
  DoctorOptions o;
  o.check_mounts = false;
  auto t = RunDoctorWith(ctx, o);
  ASSERT_THAT(t.status(), IsOk());
  SCOPED_TRACE(FormatHuman(*t));
  EXPECT_EQ(Row(*t, "node up")[1], "OK");
  auto gone = Row(*t, "node gone");
  EXPECT_EQ(gone[1], "WARN");
  EXPECT_THAT(gone[2], HasSubstr("unreachable"));
  EXPECT_THAT(gone[2], HasSubstr("7 file(s) at risk"));
  EXPECT_THAT(gone[2], ::testing::ContainsRegex("healing starts in 1m3[89]s"));
  auto dead = Row(*t, "node dead");
  EXPECT_EQ(dead[1], "FAIL");
  EXPECT_THAT(dead[2], HasSubstr("replicas are being re-created"));

  // Past heal_starts: healing now.
  ks.set_heal_starts_unix_ms(
      absl::ToUnixMillis(absl::Now() - absl::Seconds(1)));
  PutRaw(kv, store->keys().KeeperStatus(), ks.SerializeAsString());
  t = RunDoctorWith(ctx, o);
  ASSERT_THAT(t.status(), IsOk());
  EXPECT_THAT(Row(*t, "node gone")[2], HasSubstr("healing now"));
}

TEST(DoctorTest, ShowsHungMountsWithTheirDuration) {
  auto dir = MakeTempDir("doctor-hung-");
  ASSERT_THAT(dir.status(), IsOk());
  ns::MemoryKv kv;
  auto store = ns::NewKvStore(&kv, {.cluster = "doc"});
  ASSERT_THAT(store->AddNode(Node("sn-1", v1::ACTIVE)), IsOk());
  ASSERT_THAT(store->AddNode(Node("sn-2", v1::ACTIVE)), IsOk());
  const std::string root = *dir + "/mnt";
  std::ofstream(*dir + "/mountinfo")
      << "90 22 0:51 / " << root
      << "/sn-1 ro,relatime - nfs4 10.0.0.1:/srv/sn-1 "
         "ro,vers=4.2,rsize=1048576,hard,proto=rdma,port=20049\n";
  // sn-1's stat has hung for 95 s; sn-2 is healthy (and not hung).
  const absl::Time since = absl::Now() - absl::Seconds(95);
  mountd::MountStatusFile f;
  f.updated_unix_ms = absl::ToUnixMillis(absl::Now());
  f.mounts.push_back({"sn-1", mountd::MountHealth::kUnhealthy, root + "/sn-1",
                      absl::ToUnixMillis(since), "",
                      "stat of " + root + "/sn-1 did not return within 5s",
                      absl::ToUnixMillis(since)});
  f.mounts.push_back({"sn-2", mountd::MountHealth::kHealthy, root + "/sn-2"});
  const std::string status_file = *dir + "/mounts-status";
  ASSERT_THAT(mountd::WriteMountStatus(status_file, f), IsOk());

  Context ctx;
  ctx.store = store.get();
  ctx.cluster = "doc";
  auto args = Args::Parse(
      {"doctor", "--etcd=127.0.0.1:1", "--timeout=0.2", "--mount-root=" + root,
       "--mountinfo=" + *dir + "/mountinfo", "--sysfs-root=" + *dir + "/sys",
       "--mount-status=" + status_file});
  ASSERT_THAT(args.status(), IsOk());
  // The doctor reads the clock somewhere in [before, after]; however long
  // that takes on a loaded machine, the duration it shows lies in between.
  const absl::Time before = absl::Now();
  auto t = RunDoctor(ctx, *args);
  const absl::Time after = absl::Now();
  ASSERT_THAT(t.status(), IsOk());
  SCOPED_TRACE(FormatHuman(*t));

  EXPECT_EQ(Row(*t, "mountd")[1], "OK");  // read from --mount-status
  auto hung = Row(*t, "hung sn-1");
  EXPECT_EQ(hung[1], "FAIL");
  const std::string prefix = root + "/sn-1 hung for ";
  ASSERT_THAT(hung[2], StartsWith(prefix));
  const std::string shown = hung[2].substr(
      prefix.size(), hung[2].find(' ', prefix.size()) - prefix.size());
  absl::Duration hung_for;
  ASSERT_TRUE(absl::ParseDuration(shown, &hung_for)) << shown;
  EXPECT_EQ(hung_for, absl::Trunc(hung_for, absl::Seconds(1))) << shown;
  const absl::Time since_ms = absl::FromUnixMillis(absl::ToUnixMillis(since));
  EXPECT_GE(hung_for, absl::Trunc(before - since_ms, absl::Seconds(1)))
      << shown;
  EXPECT_LE(hung_for, after - since_ms) << shown;  // 1m35s and a little
  EXPECT_THAT(hung[2], HasSubstr(absl::FormatTime("(since %Y-%m-%d %H:%M:%S",
                                                  since, absl::UTCTimeZone())));
  EXPECT_THAT(hung[2], HasSubstr("did not return within 5s"));
  EXPECT_THAT(hung[3], HasSubstr("node disable sn-1"));
  for (const auto& row : t->rows) EXPECT_NE(row[0], "hung sn-2");
  testing::RemoveTree(*dir);
}

int RunToExit(const std::vector<std::string>& argv, const std::string& log) {
  auto p = Subprocess::Start({.argv = argv, .log_path = log});
  if (!p.ok()) return -1;
  auto st = (*p)->Wait(absl::Seconds(30));
  return st.ok() && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
}

TEST(DoctorTest, WrongEtcdCaIsAFailureWithAFix) {
  auto dir = MakeTempDir("doctor-tls-");
  ASSERT_THAT(dir.status(), IsOk());
  std::string script = RunfilePath("deploy/etcd/make-certs.sh");
  ASSERT_EQ(RunToExit({"/bin/bash", script, *dir + "/good", "--members=m0"},
                      *dir + "/mk.log"),
            0);
  ASSERT_EQ(RunToExit({"/bin/bash", script, *dir + "/other", "--members=m0"},
                      *dir + "/mk.log"),
            0);
  auto etcd = EtcdCluster::Start({.members = 1, .tls_dir = *dir + "/good"});
  ASSERT_THAT(etcd.status(), IsOk());
  etcd::EtcdClientOptions eo{.endpoints = (*etcd)->endpoints(),
                             .call_timeout = absl::Seconds(1),
                             .max_attempts = 1,
                             .ca_file = *dir + "/other/ca.crt",
                             .cert_file = *dir + "/other/rangefs-admin.crt",
                             .key_file = *dir + "/other/rangefs-admin.key"};
  auto client = etcd::EtcdClient::Open(eo);
  ASSERT_THAT(client.status(), IsOk());
  auto kv = ns::NewEtcdKv(client->get());
  auto store = ns::NewKvStore(kv.get(), {.cluster = "doc"});
  Context ctx;
  ctx.store = store.get();
  DoctorOptions o;
  o.etcd = eo;
  o.check_mounts = false;
  auto t = RunDoctorWith(ctx, o);
  ASSERT_THAT(t.status(), IsOk());
  SCOPED_TRACE(FormatHuman(*t));
  auto row = Row(*t, "etcd " + (*etcd)->endpoint(0));
  EXPECT_EQ(row[1], "FAIL");
  EXPECT_THAT(row[2], HasSubstr("unreachable over TLS"));
  EXPECT_THAT(row[3], HasSubstr("is the CA that signed etcd's server"));
  EXPECT_EQ(Row(*t, "nodes")[1], "FAIL");
  EXPECT_EQ(Row(*t, "clock")[1], "WARN");  // not measured over TLS

  // With the right CA and cert the same endpoint is OK over TLS.
  o.etcd.ca_file = *dir + "/good/ca.crt";
  o.etcd.cert_file = *dir + "/good/rangefs-admin.crt";
  o.etcd.key_file = *dir + "/good/rangefs-admin.key";
  auto good = etcd::EtcdClient::Open(o.etcd);
  ASSERT_THAT(good.status(), IsOk());
  auto kv2 = ns::NewEtcdKv(good->get());
  auto store2 = ns::NewKvStore(kv2.get(), {.cluster = "doc"});
  ctx.store = store2.get();
  auto t2 = RunDoctorWith(ctx, o);
  ASSERT_THAT(t2.status(), IsOk());
  EXPECT_EQ(Row(*t2, "etcd " + (*etcd)->endpoint(0))[1], "OK")
      << FormatHuman(*t2);
  EXPECT_THAT(Row(*t2, "etcd " + (*etcd)->endpoint(0))[2],
              HasSubstr("reachable over TLS"));
  EXPECT_EQ(Row(*t2, "nodes")[1], "WARN");  // none registered
  testing::RemoveTree(*dir);
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
