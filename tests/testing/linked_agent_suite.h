// File: linked_agent_suite.h
//
// LinkedAgentSuite<Self>: a GoogleTest fixture whose tests share one
// AgentCluster (agent_cluster.h), started once for the suite: real etcd,
// Self::kSuiteAgents live agents, and their export directories linked as
// the client's mounts (AgentCluster::LinkMounts: they stand in for the
// nodes' NFS mounts). Self names the cluster with Self::kSuiteName. With
// helpers for erasure-coded files: MountEntry, PutEcFile.
//
//   class EcPutTest : public testing::LinkedAgentSuite<EcPutTest> {
//    public:
//     static constexpr char kSuiteName[] = "ec_put_test";
//     static constexpr int kSuiteAgents = 9;
//   };
#ifndef RANGEFS_TESTS_TESTING_LINKED_AGENT_SUITE_H_
#define RANGEFS_TESTS_TESTING_LINKED_AGENT_SUITE_H_

#include <fstream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "admin/commands.h"
#include "base/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace testing {

template <typename Self>
class LinkedAgentSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = AgentCluster::Start(Self::kSuiteName);
    ASSERT_THAT(c, IsOk());
    cluster_ = std::move(*c).release();
    ASSERT_THAT(cluster_->AddLiveAgents(Self::kSuiteAgents, absl::Seconds(60)),
                IsOk());
    absl::StatusOr<std::string> mounts = cluster_->LinkMounts();
    ASSERT_THAT(mounts, IsOk());
    mounts_ = new std::string(*mounts);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    delete mounts_;
    mounts_ = nullptr;
  }

  // Node `id`'s entry under the mount root (its export directory, linked).
  static std::string MountEntry(const std::string& id) {
    return *mounts_ + "/" + id;
  }

  // Puts `data` at `path` as `rangefs-admin file put --ec=6+3
  // --stripe-unit=256K --ec-min-rows=0` does; returns its layout (empty,
  // with the test failed, if the put or the lookup failed).
  static v1::FileLayout PutEcFile(const std::string& path,
                                  const std::string& data) {
    admin::Context ctx;
    ctx.store = cluster_->store();
    ctx.cluster = "it";
    const std::string local =
        absl::StrCat(cluster_->dir(), "/put-", path.substr(1));
    std::ofstream(local, std::ios::binary) << data;
    auto args = admin::Args::Parse({"file", "put", local, path, "--ec=6+3",
                                    "--stripe-unit=256K", "--ec-min-rows=0"});
    EXPECT_THAT(args, IsOk());
    if (!args.ok()) return {};
    EXPECT_THAT(admin::RunCommand(ctx, *args), IsOk());
    auto f = cluster_->store()->GetFile(path);
    EXPECT_THAT(f, IsOk());
    if (!f.ok()) return {};
    return f->layout;
  }

  static AgentCluster* cluster_;
  static std::string* mounts_;  // the mount root the clients use
};

template <typename Self>
AgentCluster* LinkedAgentSuite<Self>::cluster_ = nullptr;
template <typename Self>
std::string* LinkedAgentSuite<Self>::mounts_ = nullptr;

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_LINKED_AGENT_SUITE_H_
