// Tests of the test harnesses themselves, against the real things: Debian's
// etcd and a real child process.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace testing {
namespace {

using ::testing::HasSubstr;

TEST(EtcdClusterTest, SingleMemberPutGet) {
  auto etcd = EtcdCluster::Start({.members = 1});
  ASSERT_THAT(etcd, IsOk());
  EtcdCluster& c = **etcd;
  EXPECT_EQ(c.size(), 1);
  ASSERT_THAT(c.GatewayPut(0, "/rangefs/test/a", "value-1"), IsOk());
  auto v = c.GatewayGet(0, "/rangefs/test/a");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(*v, "value-1");
  EXPECT_THAT(c.GatewayGet(0, "/rangefs/test/missing"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(EtcdClusterTest, ThreeMembersSurviveLeaderKill) {
  auto etcd = EtcdCluster::Start({.members = 3});
  ASSERT_THAT(etcd, IsOk());
  EtcdCluster& c = **etcd;
  auto leader = c.LeaderIndex();
  ASSERT_THAT(leader, IsOk());
  ASSERT_THAT(c.GatewayPut(*leader, "/k", "before"), IsOk());
  ASSERT_THAT(c.KillMember(*leader), IsOk());
  EXPECT_FALSE(c.running(*leader));
  int other = (*leader + 1) % 3;
  // A new leader is elected; a write through a survivor succeeds within a
  // bounded time (etcd needs roughly one election timeout).
  absl::Status put = absl::UnknownError("not tried");
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (absl::Now() < deadline) {
    put = c.GatewayPut(other, "/k", "after");
    if (put.ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_THAT(put, IsOk()) << c.LogTail(other);
  auto new_leader = c.LeaderIndex();
  ASSERT_THAT(new_leader, IsOk());
  EXPECT_NE(*new_leader, *leader);
  // The killed member comes back with its data and sees the new write.
  ASSERT_THAT(c.RestartMember(*leader), IsOk());
  absl::StatusOr<std::string> v;
  while (absl::Now() < deadline + absl::Seconds(5)) {
    v = c.GatewayGet(*leader, "/k");
    if (v.ok() && *v == "after") break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(*v, "after");
}

TEST(EtcdClusterTest, DestructorStopsMembers) {
  int port;
  {
    auto etcd = EtcdCluster::Start({.members = 1});
    ASSERT_THAT(etcd, IsOk());
    port = (*etcd)->client_port(0);
    EXPECT_TRUE(TcpPortOpen(port));
  }
  EXPECT_FALSE(TcpPortOpen(port));
}

class SubprocessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = MakeTempDir("proc-");
    ASSERT_THAT(dir, IsOk());
    dir_ = *dir;
    auto port = PickUnusedPort();
    ASSERT_THAT(port, IsOk());
    port_ = *port;
  }
  absl::StatusOr<std::unique_ptr<Subprocess>> StartServer() {
    return Subprocess::Start(
        {.argv = {RunfilePath("tests/testing/ready_server"),
                  absl::StrCat(port_)},
         .log_path = dir_ + "/server.log"});
  }
  std::string dir_;
  int port_ = 0;
};

TEST_F(SubprocessTest, StartsWaitsAndExitsOnSigterm) {
  auto p = StartServer();
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT((*p)->WaitForLog("ready on", absl::Seconds(10)), IsOk());
  ASSERT_THAT((*p)->WaitForTcpPort(port_, absl::Seconds(10)), IsOk());
  ASSERT_THAT((*p)->Signal(SIGTERM), IsOk());
  auto st = (*p)->Wait(absl::Seconds(10));
  ASSERT_THAT(st, IsOk());
  EXPECT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 0);
  EXPECT_FALSE(TcpPortOpen(port_));
  EXPECT_THAT((*p)->Signal(SIGTERM),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(SubprocessTest, StopContAndKill) {
  auto p = StartServer();
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT((*p)->WaitForTcpPort(port_, absl::Seconds(10)), IsOk());
  ASSERT_THAT((*p)->Signal(SIGSTOP), IsOk());
  EXPECT_TRUE((*p)->Running());
  // A stopped process does not exit on SIGUSR1 until continued.
  ASSERT_THAT((*p)->Signal(SIGUSR1), IsOk());
  EXPECT_THAT((*p)->Wait(absl::Milliseconds(200)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_THAT((*p)->Signal(SIGCONT), IsOk());
  auto st = (*p)->Wait(absl::Seconds(10));
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(WEXITSTATUS(*st), 3);
  // Kill of an exited process is fine; a fresh one is killed and reaped.
  EXPECT_THAT((*p)->Kill(), IsOk());
  auto q = StartServer();
  ASSERT_THAT(q, IsOk());
  ASSERT_THAT((*q)->WaitForTcpPort(port_, absl::Seconds(10)), IsOk());
  pid_t pid = (*q)->pid();
  ASSERT_THAT((*q)->Kill(), IsOk());
  EXPECT_FALSE((*q)->Running());
  EXPECT_NE(kill(pid, 0), 0);  // Reaped: the pid no longer exists.
}

TEST_F(SubprocessTest, ReportsEarlyExitWithLog) {
  auto p = Subprocess::Start(
      {.argv = {RunfilePath("tests/testing/ready_server")},  // No port: usage.
       .log_path = dir_ + "/bad.log"});
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT((*p)->WaitForLog("never printed", absl::Seconds(10)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("usage: ready_server")));
  auto missing = Subprocess::Start(
      {.argv = {"/nonexistent/binary"}, .log_path = dir_ + "/missing.log"});
  ASSERT_THAT(missing, IsOk());
  auto st = (*missing)->Wait(absl::Seconds(10));
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(WEXITSTATUS(*st), 127);
  EXPECT_THAT((*missing)->Log(), HasSubstr("cannot exec /nonexistent/binary"));
  EXPECT_THAT(Subprocess::Start({.argv = {}, .log_path = "x"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Bazel signals the test's process group on a timeout: a child must be in
// it (a FUSE server in a group of its own outlived a test stuck in a request
// to it, and Bazel waited for that test forever).
TEST_F(SubprocessTest, ChildIsInTheTestsProcessGroup) {
  auto p = StartServer();
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(getpgid((*p)->pid()), getpgrp());
}

// Run only by DiesWithAKilledTest, in a copy of this binary: starts a
// ready_server child on $RANGEFS_HELPER_PORT and waits to be killed.
TEST(SubprocessHelper, DISABLED_StartServerAndWait) {
  const char* port = getenv("RANGEFS_HELPER_PORT");
  ASSERT_NE(port, nullptr);
  auto p = Subprocess::Start(
      {.argv = {RunfilePath("tests/testing/ready_server"), port},
       .log_path = absl::StrCat(getenv("RANGEFS_HELPER_DIR"), "/child.log")});
  ASSERT_THAT(p, IsOk());
  ASSERT_THAT((*p)->WaitForLog("ready on", absl::Seconds(30)), IsOk());
  printf("helper: child ready\n");
  fflush(stdout);
  pause();  // Until SIGKILL.
}

// A test process killed with SIGKILL (no destructor runs) takes its child
// with it.
TEST_F(SubprocessTest, DiesWithAKilledTest) {
  auto helper = Subprocess::Start(
      {.argv = {"/proc/self/exe", "--gtest_also_run_disabled_tests",
                "--gtest_filter=SubprocessHelper.DISABLED_StartServerAndWait"},
       .env = {absl::StrCat("RANGEFS_HELPER_PORT=", port_),
               "RANGEFS_HELPER_DIR=" + dir_},
       .log_path = dir_ + "/helper.log"});
  ASSERT_THAT(helper, IsOk());
  ASSERT_THAT((*helper)->WaitForLog("helper: child ready", absl::Seconds(30)),
              IsOk());
  ASSERT_TRUE(TcpPortOpen(port_));
  ASSERT_THAT((*helper)->Kill(), IsOk());
  // Bounded poll: the child's listener closes when the kernel kills it.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (TcpPortOpen(port_) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(TcpPortOpen(port_))
      << "the child of a SIGKILLed test still listens 30 s later";
}

}  // namespace
}  // namespace testing
}  // namespace rangefs
