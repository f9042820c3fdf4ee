// One namespace watch per process, counted by etcd itself
// (etcd_debugging_mvcc_watcher_total on its /metrics): a library client
// and a rangefs-mount each hold one watch of the file records, plus the
// client's watches of node and live records, whatever they list, open,
// read or preload. Real etcd, real agents, a real FUSE mount.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/testing/http_get.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "gtest/gtest.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using testing::Q;
using testing::Sh;
using testing::ShResult;

// Watches a client holds: the namespace (file records), node records and
// live records (client_lib/internal/client_impl.cc).
constexpr int kClientWatches = 3;

class NamespaceWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = AgentCluster::Start("namespace_watch_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
    for (const char* id : {"n0", "n1"}) {
      auto a = cluster_->AddAgent(id);
      ASSERT_THAT(a, IsOk());
      ASSERT_TRUE(cluster_->WaitLive(
          (*a)->id, [](bool found, const ns::LiveEntry&) { return found; },
          testing::kMountWait));
    }
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
    const std::string src = cluster_->dir() + "/src";
    std::ofstream(src) << std::string(3 << 20, 'x');
    for (const char* path : {"/d/a", "/d/b", "/e/c"}) {
      ASSERT_THAT(testing::PutFile(ctx_, src, path,
                                   {"--stripe-unit=1M", "--replicas=2"}),
                  IsOk());
    }
    // The port of the (one) etcd member's client URL.
    const std::string endpoints = cluster_->etcd()->endpoints();
    absl::string_view ep = endpoints;
    ep = ep.substr(0, ep.find(','));
    ep = ep.substr(ep.rfind(':') + 1);
    ASSERT_TRUE(absl::SimpleAtoi(ep, &etcd_port_)) << ep;
  }

  // etcd's count of watchers now; -1 if it cannot be read.
  int Watchers() {
    auto r = testing::HttpGet(etcd_port_, "/metrics");
    if (!r.ok()) return -1;
    for (absl::string_view line : absl::StrSplit(*r, '\n')) {
      double v;
      if (absl::ConsumePrefix(&line, "etcd_debugging_mvcc_watcher_total ") &&
          absl::SimpleAtod(line, &v)) {
        return static_cast<int>(v);
      }
    }
    return -1;
  }

  // Waits (bounded) for etcd to count `want` watchers; false with the last
  // count in *last.
  bool WaitWatchers(int want, int* last) {
    const absl::Time end = absl::Now() + testing::kMountWait;
    do {
      *last = Watchers();
      if (*last == want) return true;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < end);
    return false;
  }

  std::unique_ptr<AgentCluster> cluster_;
  admin::Context ctx_;
  int etcd_port_ = 0;
};

TEST_F(NamespaceWatchTest, ALibraryClientHoldsOneNamespaceWatch) {
  const int base = Watchers();
  ASSERT_GE(base, 0);
  ClientOptions o;
  o.etcd_endpoints = cluster_->etcd()->endpoints();
  o.cluster = "it";
  auto client = Client::Open(o);
  ASSERT_THAT(client, IsOk());
  int now = 0;
  ASSERT_TRUE(WaitWatchers(base + kClientWatches, &now)) << now;
  // Listing, opening, reading and a dataset add none.
  ASSERT_THAT((*client)->List("/d"), IsOk());
  auto f = (*client)->OpenFile("/d/a");
  ASSERT_THAT(f, IsOk());
  std::string buf(1 << 20, '\0');
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  auto ds = (*client)->OpenDataset("/e", 0);
  ASSERT_THAT(ds, IsOk());
  EXPECT_EQ(Watchers(), base + kClientWatches);
  f->reset();
  ds->reset();
  client->reset();
  ASSERT_TRUE(WaitWatchers(base, &now)) << now;
}

TEST_F(NamespaceWatchTest, AMountHoldsOneNamespaceWatch) {
  const int base = Watchers();
  ASSERT_GE(base, 0);
  auto m = testing::MountProcess::Start(cluster_->etcd()->endpoints(),
                                        cluster_->dir() + "/mnt");
  ASSERT_THAT(m, IsOk());
  int now = 0;
  // The layout cache's watch feeds the mount's tree too (before: a second
  // watch of the same records).
  ASSERT_TRUE(WaitWatchers(base + kClientWatches, &now)) << now;
  ShResult r = Sh("ls -R " + Q((*m)->mountpoint()) + " && cat " +
                  Q((*m)->path("/d/a")) + " | wc -c");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, absl::StrCat(3 << 20))) << r.output;
  EXPECT_EQ(Watchers(), base + kClientWatches);
  ASSERT_THAT((*m)->StopWithSignal(), IsOk());
  ASSERT_TRUE(WaitWatchers(base, &now)) << now;
}

// Not a watch, but this fixture has what it needs: a wrong cluster name or
// a directory that does not exist is an error naming what exists, never an
// empty mount (issue 33).
TEST_F(NamespaceWatchTest, AMountOfAnEmptyClusterOrMissingDirFails) {
  const std::string bin = testing::RunfilePath("mount/rangefs-mount");
  const std::string mnt = cluster_->dir() + "/mnt-empty";
  mkdir(mnt.c_str(), 0755);
  const std::string etcd = cluster_->etcd()->endpoints();
  ShResult r = Sh(
      absl::StrCat(Q(bin), " -f --etcd=", Q(etcd), " --cluster=nope ", Q(mnt)));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "cluster \"nope\"")) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "clusters there: it")) << r.output;
  r = Sh(absl::StrCat(Q(bin), " -f --etcd=", Q(etcd),
                      " --cluster=it --dir=/missing ", Q(mnt)));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "directory /missing does not exist"))
      << r.output;
  EXPECT_FALSE(testing::IsRangefsMounted(mnt));
}

}  // namespace
}  // namespace rangefs
