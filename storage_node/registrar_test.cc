// EtcdRegistrar against a real etcd, with the Agent in-process: the node
// check at start, the live record's fields, re-registration after a lost
// lease, admin state changes while running, and revocation at shutdown.
#include "storage_node/registrar.h"

#include <string.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "storage_node/agent.h"
#include "storage_node/node_client.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace node {
namespace {

using ::testing::HasSubstr;

class RegistrarTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = testing::EtcdCluster::Start({});
    ASSERT_THAT(c, IsOk());
    cluster_ = c->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    auto dir = testing::ScopedTempDir::Make("registrar_test");
    ASSERT_THAT(dir, IsOk());
    temp_ = *std::move(dir);
    dir_ = temp_.path();
    auto etcd = etcd::EtcdClient::Open({.endpoints = cluster_->endpoints(),
                                        .call_timeout = absl::Seconds(10)});
    ASSERT_THAT(etcd, IsOk());
    etcd_ = *std::move(etcd);
    kv_ = ns::NewEtcdKv(etcd_.get());
    // A cluster per test keeps tests independent.
    store_ = ns::NewKvStore(
        kv_.get(),
        {.cluster =
             ::testing::UnitTest::GetInstance()->current_test_info()->name()});
  }
  void TearDown() override {
    agent_.reset();
    registrar_.reset();
  }

  void AddNode(const std::string& id, v1::AdminState state) {
    v1::NodeRecord n;
    n.set_id(id);
    n.add_addresses("127.0.0.1:1");
    n.set_export_path(dir_);
    n.set_admin_state(state);
    ASSERT_THAT(store_->AddNode(n), IsOk());
  }

  absl::Status StartAgent(const std::string& id, v1::NfsExport nfs = {}) {
    registrar_ = std::make_unique<EtcdRegistrar>(
        store_.get(), etcd_.get(),
        // A lease renewed every ~2 s: it survives a renewal that a loaded
        // machine delays by seconds (no test here waits for it to expire).
        RegistrarOptions{.lease_ttl = absl::Seconds(6),
                         .live_interval = absl::Milliseconds(100),
                         .nfs_export = std::move(nfs)});
    auto a = Agent::Start({.node_id = id,
                           .export_root = dir_,
                           .listen = "127.0.0.1:0",
                           .registrar = registrar_.get()});
    if (!a.ok()) return a.status();
    agent_ = *std::move(a);
    return absl::OkStatus();
  }

  // Polls ListLive until `pred` holds for node `id` (nullptr: absent).
  bool WaitLive(const std::string& id,
                const std::function<bool(const v1::LiveRecord*)>& pred,
                absl::Duration timeout, ns::LiveEntry* out = nullptr) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      auto live = store_->ListLive();
      if (live.ok()) {
        const ns::LiveEntry* found = nullptr;
        for (const ns::LiveEntry& e : *live) {
          if (e.record.node_id() == id) found = &e;
        }
        if (pred(found ? &found->record : nullptr)) {
          if (out != nullptr && found != nullptr) *out = *found;
          return true;
        }
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  static testing::EtcdCluster* cluster_;
  testing::ScopedTempDir temp_;  // removed with the fixture
  std::string dir_;
  std::unique_ptr<etcd::EtcdClient> etcd_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<EtcdRegistrar> registrar_;
  std::unique_ptr<Agent> agent_;
};

testing::EtcdCluster* RegistrarTest::cluster_ = nullptr;

TEST_F(RegistrarTest, PublishesLiveRecordWithSaneFields) {
  AddNode("n1", v1::ACTIVE);
  ASSERT_THAT(StartAgent("n1"), IsOk());
  ns::LiveEntry e;
  ASSERT_TRUE(WaitLive(
      "n1", [](const v1::LiveRecord* r) { return r != nullptr; },
      absl::Seconds(60), &e));
  EXPECT_EQ(e.lease, registrar_->lease_id());
  EXPECT_NE(e.lease, 0);
  const v1::LiveRecord& r = e.record;
  EXPECT_EQ(r.health(), v1::LiveRecord::HEALTHY) << r.health_reason();
  EXPECT_EQ(r.version(), kAgentVersion);
  ASSERT_EQ(r.addresses_size(), 1);
  EXPECT_EQ(r.addresses(0), agent_->address());
  EXPECT_GT(r.total_bytes(), 0u);
  EXPECT_GT(r.free_bytes(), 0u);
  EXPECT_LE(r.free_bytes(), r.total_bytes());
  EXPECT_GT(r.started_unix_ms(), 0);
  EXPECT_GE(r.updated_unix_ms(), r.started_unix_ms());
  EXPECT_FALSE(r.rdma_status().empty());
  // A plaintext agent on 127.0.0.1 (the MTLS and INSECURE cases:
  // agent_security_test).
  EXPECT_EQ(r.transport_security(), v1::LiveRecord::PLAINTEXT_LOOPBACK);
  // Shutdown revokes the lease: the record is gone at once.
  agent_->Shutdown(absl::Now() + absl::Seconds(2));
  auto live = store_->ListLive();
  ASSERT_THAT(live, IsOk());
  EXPECT_TRUE(live->empty());
}

TEST_F(RegistrarTest, PublishesNfsExport) {
  AddNode("n1", v1::ACTIVE);
  v1::NfsExport nfs;
  nfs.set_url("nfs://127.0.0.1:20490/srv/n1?mountport=20491");
  nfs.set_version("3");
  ASSERT_THAT(StartAgent("n1", nfs), IsOk());
  ns::LiveEntry e;
  ASSERT_TRUE(WaitLive(
      "n1", [](const v1::LiveRecord* r) { return r != nullptr; },
      absl::Seconds(60), &e));
  EXPECT_EQ(e.record.nfs_export().url(), nfs.url());
  EXPECT_EQ(e.record.nfs_export().version(), "3");
  EXPECT_EQ(e.record.nfs_export().refused(), "");
}

TEST_F(RegistrarTest, RefusesBadNfsExport) {
  AddNode("n1", v1::ACTIVE);
  v1::NfsExport nfs;
  nfs.set_url("nfs://127.0.0.1/srv/../n1");
  nfs.set_version("4.1");
  EXPECT_THAT(StartAgent("n1", nfs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nfs_export.url")));
}

TEST_F(RegistrarTest, RefusesUnregisteredNode) {
  absl::Status s = StartAgent("ghost");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(std::string(s.message()), HasSubstr("not registered"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("refusing to serve"));
}

TEST_F(RegistrarTest, RefusesDisabledNode) {
  AddNode("off", v1::DISABLED);
  absl::Status s = StartAgent("off");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(s.message()), HasSubstr("DISABLED"));
}

TEST_F(RegistrarTest, ReRegistersAfterLeaseLoss) {
  AddNode("n2", v1::ACTIVE);
  ASSERT_THAT(StartAgent("n2"), IsOk());
  const int64_t first = registrar_->lease_id();
  ASSERT_NE(first, 0);
  // Someone (or an etcd partition) kills the lease: the record vanishes.
  ASSERT_THAT(etcd_->LeaseRevoke(first), IsOk());
  ns::LiveEntry e;
  ASSERT_TRUE(WaitLive(
      "n2",
      [](const v1::LiveRecord* r) {
        return r != nullptr;  // Checked below: under a new lease.
      },
      absl::Seconds(60), &e));
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (absl::Now() < end && (e.lease == first || e.lease == 0)) {
    WaitLive(
        "n2", [](const v1::LiveRecord* r) { return r != nullptr; },
        absl::Seconds(1), &e);
  }
  EXPECT_NE(e.lease, first);
  // The record under the new lease is written before the registration is
  // counted (Register's last step): wait for the count, bounded.
  const absl::Time counted = absl::Now() + absl::Seconds(10);
  while (registrar_->registrations() < 2 && absl::Now() < counted) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_GE(registrar_->registrations(), 2);
}

TEST_F(RegistrarTest, ReportsAdminStateChanges) {
  AddNode("n3", v1::ACTIVE);
  ASSERT_THAT(StartAgent("n3"), IsOk());
  ASSERT_THAT(store_->SetNodeState("n3", v1::DISABLED), IsOk());
  EXPECT_TRUE(WaitLive(
      "n3",
      [](const v1::LiveRecord* r) {
        return r != nullptr && r->health() == v1::LiveRecord::UNHEALTHY &&
               r->health_reason() == "node disabled by admin";
      },
      absl::Seconds(60)));
  ASSERT_THAT(store_->SetNodeState("n3", v1::ACTIVE), IsOk());
  EXPECT_TRUE(WaitLive(
      "n3",
      [](const v1::LiveRecord* r) {
        return r != nullptr && r->health() == v1::LiveRecord::HEALTHY;
      },
      absl::Seconds(60)));
}

TEST_F(RegistrarTest, CountsServedBytes) {
  AddNode("n4", v1::ACTIVE);
  ASSERT_THAT(StartAgent("n4"), IsOk());
  v1::LiveRecord before = registrar_->BuildLiveRecord();
  EXPECT_EQ(before.bytes_written(), 0u);
  EXPECT_EQ(before.inflight(), 0u);
  // A write and a read through the agent show up in the live record.
  auto nc = NodeClient::Connect(agent_->address());
  ASSERT_THAT(nc, IsOk());
  std::string data(100000, 'x');
  bool sent = false;
  ASSERT_THAT((*nc)->WriteObject("a/obj",
                                 [&](absl::Span<char> dst) -> size_t {
                                   if (sent) return 0;
                                   sent = true;
                                   memcpy(dst.data(), data.data(), data.size());
                                   return data.size();
                                 }),
              IsOk());
  std::string buf(data.size(), '\0');
  ASSERT_THAT((*nc)->ReadRange("a/obj", 0, absl::MakeSpan(buf)), IsOk());
  EXPECT_TRUE(WaitLive(
      "n4",
      [](const v1::LiveRecord* r) {
        return r != nullptr && r->bytes_written() == 100000 &&
               r->bytes_read() == 100000 && r->reads() == 1;
      },
      absl::Seconds(60)));
}

}  // namespace
}  // namespace node
}  // namespace rangefs
