// Storage policies (issue 36) through rangefs-admin against a real etcd and
// four real rangefs-node processes: `policy set` refuses what the cluster
// cannot place (too few nodes, too few racks) and says why; `file put`
// follows the destination's policy unless --replicas/--ec is given, and
// respects --min-size and --min-age; `file stat` and `file ls` show the
// policy and whether the layout meets it; `policy ls` and `policy rm`.
// The keeper's conversions are tested with the keeper (tests/integration).
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "admin/commands.h"
#include "admin/table.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;

constexpr int kAgents = 4;
constexpr absl::Duration kWait = absl::Seconds(60);
constexpr uint64_t kCell = 64 << 10;

class PolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = testing::AgentCluster::Start("policy_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = std::move(*c).release();
    ASSERT_THAT(cluster_->AddLiveAgents(kAgents, kWait), IsOk());
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
  }

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  std::string Local(const std::string& name, uint64_t size) {
    const std::string path = absl::StrCat(cluster_->dir(), "/", name);
    std::ofstream(path, std::ios::binary) << std::string(size, 'x');
    return path;
  }

  // `file stat PATH`'s value of `field`.
  std::string StatField(const std::string& path, const std::string& field) {
    auto t = Run({"file", "stat", path});
    EXPECT_THAT(t, IsOk()) << path;
    if (!t.ok()) return "<error>";
    for (const auto& row : t->rows) {
      if (row[0] == field) return row[1];
    }
    return "<no row " + field + ">";
  }

  // Puts a `size`-byte file (cells of kCell) with extra flags; the layout.
  v1::FileLayout Put(const std::string& path, uint64_t size,
                     std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {"file", "put", Local("src", size), path,
                                     absl::StrCat("--stripe-unit=", kCell)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto put = Run(argv);
    EXPECT_THAT(put, IsOk()) << path;
    auto f = cluster_->store()->GetFile(path);
    EXPECT_THAT(f, IsOk()) << path;
    return f.ok() ? f->layout : v1::FileLayout();
  }

  static int ReplicasOf(const v1::FileLayout& l) {
    if (l.extents_size() > 0) return l.extents(0).replicas_size();
    if (l.striped().targets_size() > 0) {
      return l.striped().targets(0).replicas_size();
    }
    return 0;
  }

  static testing::AgentCluster* cluster_;
  admin::Context ctx_;
};

testing::AgentCluster* PolicyTest::cluster_ = nullptr;

TEST_F(PolicyTest, SetRefusesWhatTheClusterCannotPlace) {
  EXPECT_THAT(Run({"policy", "set", "/big", "--ec=3+2"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("policy set /big ec=3+2 refused: ec=3+2 "
                                 "needs 5 live ACTIVE nodes (distinct nodes "
                                 "per row); the cluster has 4 (n0, n1, n2, "
                                 "n3)")));
  EXPECT_THAT(Run({"policy", "set", "/big", "--replicas=5"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("replicas=5 needs 5 live ACTIVE nodes")));
  EXPECT_THAT(Run({"policy", "set", "/big", "--replicas=2", "--ec=2+1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exactly one of --replicas=N and --ec=K+M")));
  EXPECT_THAT(Run({"policy", "set", "/big", "--ec=2+"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Run({"policy", "set", "/big", "--ec=2+1", "--min-age=5 days"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--min-age=\"5 days\"")));
  EXPECT_THAT(Run({"policy", "set", "big", "--ec=2+1"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("policy directory")));

  // Racks in the node records: n0, n1 in r1, n2, n3 in r2: two failure
  // domains, so RS(2,1) (three cells a row) cannot be placed.
  auto nodes = cluster_->store()->ListNodes();
  ASSERT_THAT(nodes, IsOk());
  for (const ns::NodeEntry& n : *nodes) {
    v1::NodeRecord r = n.record;
    r.set_rack(r.id() < "n2" ? "r1" : "r2");
    ASSERT_THAT(cluster_->store()->UpdateNode(r, n.mod_revision), IsOk());
  }
  EXPECT_THAT(Run({"policy", "set", "/racks", "--ec=2+1"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("ec=2+1 needs 3 distinct racks")));
  // Replicas are placed by node: 3 replicas still fit.
  EXPECT_THAT(Run({"policy", "set", "/racks", "--replicas=3"}), IsOk());
  nodes = cluster_->store()->ListNodes();
  ASSERT_THAT(nodes, IsOk());
  for (const ns::NodeEntry& n : *nodes) {
    v1::NodeRecord r = n.record;
    r.clear_rack();
    ASSERT_THAT(cluster_->store()->UpdateNode(r, n.mod_revision), IsOk());
  }
  EXPECT_THAT(Run({"policy", "set", "/racks", "--ec=2+1"}), IsOk());
  ASSERT_THAT(Run({"policy", "rm", "/racks/"}), IsOk());
  EXPECT_THAT(Run({"policy", "rm", "/racks"}),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no storage policy for /racks")));
}

TEST_F(PolicyTest, PutFollowsThePolicyUnlessAFlagSaysOtherwise) {
  ASSERT_THAT(Run({"policy", "set", "/cold", "--ec=2+1"}), IsOk());
  ASSERT_THAT(Run({"policy", "set", "/cold/hot", "--replicas=3"}), IsOk());
  const uint64_t big = 5 * 2 * kCell + 123;  // > ec-min-rows (2) full rows

  v1::FileLayout l = Put("/cold/a", big);
  ASSERT_TRUE(ns::IsErasureCoded(l)) << l.DebugString();
  EXPECT_EQ(l.striped().erasure().data_columns(), 2u);
  EXPECT_EQ(l.striped().erasure().parity_columns(), 1u);
  EXPECT_EQ(StatField("/cold/a", "policy"), "ec=2+1 from /cold");
  EXPECT_EQ(StatField("/cold/a", "policy_state"), "met");

  // The nearest policy wins.
  l = Put("/cold/hot/x/b", big);
  EXPECT_FALSE(ns::IsErasureCoded(l));
  EXPECT_EQ(ReplicasOf(l), 3);
  EXPECT_EQ(StatField("/cold/hot/x/b", "policy"), "replicas=3 from /cold/hot");
  EXPECT_EQ(StatField("/cold/hot/x/b", "policy_state"), "met");

  // An explicit flag wins over the policy: the file waits for the keeper.
  l = Put("/cold/c", big, {"--replicas=2"});
  EXPECT_FALSE(ns::IsErasureCoded(l));
  EXPECT_EQ(ReplicasOf(l), 2);
  EXPECT_EQ(StatField("/cold/c", "policy_state"), "pending");
  l = Put("/cold/hot/d", big, {"--ec=2+1"});
  EXPECT_TRUE(ns::IsErasureCoded(l));
  EXPECT_EQ(StatField("/cold/hot/d", "policy_state"), "pending");

  // Outside any policy: the default, 2 replicas, and no policy shown.
  l = Put("/warm/e", big);
  EXPECT_EQ(ReplicasOf(l), 2);
  EXPECT_EQ(StatField("/warm/e", "policy"), "-");

  // file ls: the policy's directory and the state, per file.
  auto ls = Run({"file", "ls", "/cold"});
  ASSERT_THAT(ls, IsOk());
  const std::string shown = admin::FormatHuman(*ls);
  EXPECT_EQ(ls->columns[6], "policy");
  EXPECT_EQ(ls->columns[7], "policy_state");
  bool saw_pending = false;
  for (const auto& row : ls->rows) {
    if (row[0] == "/cold/c") {
      EXPECT_EQ(row[6], "/cold") << shown;
      EXPECT_EQ(row[7], "pending") << shown;
      saw_pending = true;
    }
    if (row[0] == "/cold/hot/x/b") {
      EXPECT_EQ(row[6], "/cold/hot") << shown;
    }
  }
  EXPECT_TRUE(saw_pending) << shown;

  // policy ls lists both, placeable; rm: files keep their layout, the
  // policy further up applies.
  auto pls = Run({"policy", "ls"});
  ASSERT_THAT(pls, IsOk());
  ASSERT_EQ(pls->rows.size(), 2u) << admin::FormatHuman(*pls);
  EXPECT_EQ(pls->rows[0][0], "/cold");
  EXPECT_EQ(pls->rows[0][1], "ec=2+1");
  EXPECT_EQ(pls->rows[0][5], "yes");
  EXPECT_EQ(pls->rows[1][0], "/cold/hot");
  ASSERT_THAT(Run({"policy", "rm", "/cold/hot"}), IsOk());
  EXPECT_EQ(StatField("/cold/hot/x/b", "policy"), "ec=2+1 from /cold");
  EXPECT_EQ(StatField("/cold/hot/x/b", "policy_state"), "pending");
  ASSERT_THAT(Run({"policy", "rm", "/cold"}), IsOk());
}

TEST_F(PolicyTest, MinSizeAndMinAgeKeepTheIngestLayout) {
  ASSERT_THAT(Run({"policy", "set", "/sized", "--ec=2+1", "--min-size=1M"}),
              IsOk());
  ASSERT_THAT(Run({"policy", "set", "/aged", "--ec=2+1", "--min-age=2h"}),
              IsOk());
  const uint64_t small = 5 * 2 * kCell;  // 640 KiB: under 1M
  v1::FileLayout l = Put("/sized/small", small);
  EXPECT_FALSE(ns::IsErasureCoded(l));
  EXPECT_EQ(StatField("/sized/small", "policy_state"),
            "exempt (below min-size 1048576)");
  l = Put("/sized/large", 2 << 20);
  EXPECT_TRUE(ns::IsErasureCoded(l));
  EXPECT_EQ(StatField("/sized/large", "policy_state"), "met");
  // A new file is younger than any min-age: it keeps the put's layout.
  l = Put("/aged/new", 2 << 20);
  EXPECT_FALSE(ns::IsErasureCoded(l));
  EXPECT_EQ(ReplicasOf(l), 2);
  EXPECT_EQ(StatField("/aged/new", "policy_state"),
            "exempt (younger than min-age 2h)");
  EXPECT_EQ(StatField("/aged/new", "policy"), "ec=2+1 from /aged, min-age 2h");
  ASSERT_THAT(Run({"policy", "rm", "/sized"}), IsOk());
  ASSERT_THAT(Run({"policy", "rm", "/aged"}), IsOk());
}

}  // namespace
}  // namespace rangefs
