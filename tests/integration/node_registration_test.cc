// rangefs-node processes registering in a real etcd: the live record and
// its fields, refusal of unregistered / disabled ids, expiry after SIGKILL,
// re-registration after a pause past the TTL, and drain on SIGTERM.
#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using testing::AgentProcess;
using ::testing::HasSubstr;

class NodeRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = AgentCluster::Start("node_registration_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
  }
  std::unique_ptr<AgentCluster> cluster_;
};

// Bound on waits for something that takes a few seconds at most idle (an
// agent starting, a lease expiring): generous enough for a loaded 2-core
// machine; a broken feature still fails, only later.
constexpr absl::Duration kWait = absl::Seconds(60);

bool Present(bool found, const ns::LiveEntry&) { return found; }
bool Absent(bool found, const ns::LiveEntry&) { return !found; }

TEST_F(NodeRegistrationTest, LiveRecordAppearsWithSaneFields) {
  auto a = cluster_->AddAgent("n1");
  ASSERT_THAT(a, IsOk());
  ns::LiveEntry e;
  ASSERT_TRUE(cluster_->WaitLive("n1", Present, kWait, &e));
  EXPECT_EQ(e.record.health(), v1::LiveRecord::HEALTHY)
      << e.record.health_reason();
  EXPECT_NE(e.lease, 0);
  EXPECT_THAT(e.record.version(), HasSubstr("rangefs-node"));
  ASSERT_EQ(e.record.addresses_size(), 1);
  EXPECT_EQ(e.record.addresses(0), (*a)->address);
  EXPECT_GT(e.record.total_bytes(), 0u);
  EXPECT_GT(e.record.free_bytes(), 0u);
  EXPECT_EQ(e.record.rdma_status(), "no RDMA devices");
  // The record is refreshed (updated_unix_ms moves).
  const int64_t first = e.record.updated_unix_ms();
  EXPECT_TRUE(cluster_->WaitLive(
      "n1",
      [first](bool found, const ns::LiveEntry& x) {
        return found && x.record.updated_unix_ms() > first;
      },
      kWait));
}

TEST_F(NodeRegistrationTest, UnregisteredNodeExitsNonZero) {
  auto a = cluster_->AddAgent("ghost", /*add_record=*/false, v1::ACTIVE, {},
                              /*wait=*/false);
  ASSERT_THAT(a, IsOk());
  auto st = (*a)->process->Wait(kWait);
  ASSERT_THAT(st, IsOk());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_NE(WEXITSTATUS(*st), 0);
  EXPECT_THAT((*a)->process->Log(), HasSubstr("not registered"));
  EXPECT_THAT((*a)->process->Log(), HasSubstr("refusing to serve"));
  EXPECT_FALSE(cluster_->Live("ghost", nullptr));
}

TEST_F(NodeRegistrationTest, DisabledNodeIsRefused) {
  auto a = cluster_->AddAgent("off", /*add_record=*/true, v1::DISABLED, {},
                              /*wait=*/false);
  ASSERT_THAT(a, IsOk());
  auto st = (*a)->process->Wait(kWait);
  ASSERT_THAT(st, IsOk());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_NE(WEXITSTATUS(*st), 0);
  EXPECT_THAT((*a)->process->Log(), HasSubstr("DISABLED"));
  EXPECT_FALSE(cluster_->Live("off", nullptr));
}

TEST_F(NodeRegistrationTest, RecordDisappearsWithinTtlAfterSigkill) {
  auto a = cluster_->AddAgent("k1");
  ASSERT_THAT(a, IsOk());
  ns::LiveEntry e;
  ASSERT_TRUE(cluster_->WaitLive("k1", Present, kWait, &e));
  ASSERT_THAT((*a)->process->Kill(), IsOk());
  const absl::Time killed = absl::Now();
  // Nobody renews the lease now: what is left of it is at most the agent's
  // TTL (2 s), so the record goes within the TTL. (Asked of etcd rather
  // than timed: on a loaded machine etcd's expiry itself may lag.)
  auto left = cluster_->etcd_client()->LeaseTimeToLive(e.lease);
  if (left.ok()) {
    EXPECT_LE(*left, 2) << "lease " << e.lease << " has " << *left << " s left";
  } else {
    EXPECT_TRUE(absl::IsNotFound(left.status())) << left.status();
  }
  ASSERT_TRUE(cluster_->WaitLive("k1", Absent, kWait))
      << "still live " << absl::Now() - killed << " after SIGKILL";
  RecordProperty("gone_after_ms",
                 absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - killed)));
}

TEST_F(NodeRegistrationTest, ReRegistersAfterPausePastTtl) {
  auto a = cluster_->AddAgent("p1");
  ASSERT_THAT(a, IsOk());
  ns::LiveEntry before;
  ASSERT_TRUE(cluster_->WaitLive("p1", Present, kWait, &before));
  ASSERT_THAT((*a)->process->Signal(SIGSTOP), IsOk());
  // The lease expires while the agent is stopped.
  EXPECT_TRUE(cluster_->WaitLive("p1", Absent, kWait));
  ASSERT_THAT((*a)->process->Signal(SIGCONT), IsOk());
  ns::LiveEntry after;
  ASSERT_TRUE(cluster_->WaitLive(
      "p1",
      [&](bool found, const ns::LiveEntry& e) {
        return found && e.lease != before.lease;
      },
      kWait, &after));
  EXPECT_EQ(after.record.health(), v1::LiveRecord::HEALTHY);
  // The agent logs after its new record is in etcd: wait for the line.
  EXPECT_THAT((*a)->process->WaitForLog("re-registered", kWait), IsOk())
      << (*a)->process->Log();
}

TEST_F(NodeRegistrationTest, ReRegistersAfterEtcdRestart) {
  auto a = cluster_->AddAgent("r1");
  ASSERT_THAT(a, IsOk());
  ns::LiveEntry before;
  ASSERT_TRUE(cluster_->WaitLive("r1", Present, kWait, &before));
  ASSERT_THAT(cluster_->etcd()->KillMember(0), IsOk());
  // Down past the TTL: etcd expires the lease when it comes back.
  absl::SleepFor(absl::Seconds(3));  // An outage of fixed length, not a sync.
  ASSERT_THAT(cluster_->etcd()->RestartMember(0), IsOk());
  ASSERT_TRUE(cluster_->WaitLive(
      "r1",
      [&](bool found, const ns::LiveEntry& e) {
        return found && e.lease != before.lease;
      },
      kWait));
  EXPECT_TRUE((*a)->process->Running());
}

TEST_F(NodeRegistrationTest, DrainsOnSigterm) {
  auto a = cluster_->AddAgent("d1");
  ASSERT_THAT(a, IsOk());
  ASSERT_TRUE(cluster_->WaitLive("d1", Present, kWait));
  ASSERT_THAT((*a)->process->Signal(SIGTERM), IsOk());
  auto st = (*a)->process->Wait(kWait);
  ASSERT_THAT(st, IsOk());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 0);
  // Revoked at once, not after the TTL.
  EXPECT_FALSE(cluster_->Live("d1", nullptr));
  const std::string log = (*a)->process->Log();
  EXPECT_THAT(log, HasSubstr("marked DRAINING"));
  EXPECT_THAT(log, HasSubstr("revoked"));
}

}  // namespace
}  // namespace rangefs
