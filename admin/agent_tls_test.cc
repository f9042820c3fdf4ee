// rangefs-admin's agent commands (file put, fsck) over TLS/mTLS to a real
// in-process agent, with certificates made by deploy/etcd/make-certs.sh.
#include <sys/stat.h>

#include <fstream>

#include "admin/commands.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "storage_node/agent.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace admin {
namespace {

using ::rangefs::testing::MakeTempDir;
using ::rangefs::testing::RunfilePath;
using ::rangefs::testing::Subprocess;

TEST(AgentTlsTest, FilePutAndFsckSpeakMtlsToAgents) {
  auto dir = MakeTempDir("agent-tls");
  ASSERT_THAT(dir, IsOk());
  const std::string certs = *dir + "/certs";
  auto mk = Subprocess::Start(
      {.argv = {"/bin/bash", RunfilePath("deploy/etcd/make-certs.sh"), certs,
                "--members=", "--agents=agent", "--clients=admin,job"},
       .log_path = *dir + "/mk.log"});
  ASSERT_THAT(mk, IsOk());
  auto st = (*mk)->Wait(absl::Seconds(60));
  ASSERT_THAT(st, IsOk());
  ASSERT_EQ(WEXITSTATUS(*st), 0) << (*mk)->Log();
  const std::string exp = *dir + "/export";
  ASSERT_EQ(mkdir(exp.c_str(), 0755), 0);
  auto agent = node::Agent::Start({.node_id = "n1",
                                   .export_root = exp,
                                   .tls = {.cert_file = certs + "/agent.crt",
                                           .key_file = certs + "/agent.key",
                                           .client_ca_file = certs + "/ca.crt"},
                                   .writers = {"admin"}});
  ASSERT_THAT(agent, IsOk());

  ns::MemoryKv kv;
  auto store = ns::NewKvStore(&kv, {.cluster = "t"});
  v1::NodeRecord n;
  n.set_id("n1");
  n.add_addresses((*agent)->address());
  n.set_export_path(exp);
  ASSERT_THAT(store->AddNode(n), IsOk());
  v1::LiveRecord live;
  live.set_node_id("n1");
  live.set_health(v1::LiveRecord::HEALTHY);
  live.set_free_bytes(1ull << 40);
  ASSERT_THAT(store->PutLive(live, 0), IsOk());

  const std::string local = *dir + "/local";
  std::ofstream(local) << std::string(3 << 20, 'x') << "tail";
  Context ctx;
  ctx.store = store.get();
  ctx.cluster = "t";
  auto run = [&](std::vector<std::string> argv) {
    auto a = Args::Parse(argv);
    EXPECT_THAT(a, IsOk());
    return RunCommand(ctx, *a);
  };
  // No client certificate: the agent refuses, nothing is committed.
  ctx.agent_tls = {.ca_file = certs + "/ca.crt"};
  EXPECT_THAT(run({"file", "put", local, "/f", "--replicas=1"}),
              ::testing::Not(IsOk()));
  EXPECT_THAT(store->GetFile("/f"), StatusIs(absl::StatusCode::kNotFound));
  // A certificate of the CA that is not on the agent's --writers: refused
  // (PERMISSION_DENIED), nothing is committed.
  ctx.agent_tls = {.ca_file = certs + "/ca.crt",
                   .cert_file = certs + "/job.crt",
                   .key_file = certs + "/job.key"};
  EXPECT_THAT(run({"file", "put", local, "/f", "--replicas=1"}),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(store->GetFile("/f"), StatusIs(absl::StatusCode::kNotFound));
  // With the admin's certificate (a writer): put and fsck work.
  ctx.agent_tls = {.ca_file = certs + "/ca.crt",
                   .cert_file = certs + "/admin.crt",
                   .key_file = certs + "/admin.key"};
  ASSERT_THAT(run({"file", "put", local, "/f", "--replicas=1"}), IsOk());
  EXPECT_EQ(store->GetFile("/f")->layout.size(), (3u << 20) + 4);
  EXPECT_THAT(run({"fsck", "/", "--checksums"}), IsOk());
  testing::RemoveTree(*dir);
}

}  // namespace
}  // namespace admin
}  // namespace rangefs
