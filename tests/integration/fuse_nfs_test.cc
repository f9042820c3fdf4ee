// rangefs-mount over the userspace NFS data path (-o data_path=nfs): a
// real etcd, two real agents, one real nfs-ganesha per node serving the
// node's export directory (published by the agent with --nfs_export), a
// file striped in 256 KiB units over both nodes with two replicas, and a
// real FUSE mount with no mount_root: every byte comes from ganesha over
// libnfs. Reads with os.pread at edge offsets are compared byte for byte
// with the source, and the library's per-node counters (the mount's
// metrics) prove the NFS path served them. With one ganesha SIGSTOPped, a
// whole-file read through the mount still completes from the other
// replica with no read error, and the mount unmounts cleanly while the
// server is still stopped. Runs over NFSv4.1 and v3.
//
// Runs in a private mount namespace (base/testing:private_mounts_main);
// needs root and /usr/bin/ganesha.nfsd (deploy/install-deps.sh).
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/ganesha_server.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using testing::GaneshaServer;
using testing::MountProcess;
using testing::Q;
using testing::Sh;
using testing::ShResult;

// Not a multiple of anything: the last stripe unit and the last CRC block
// are partial.
constexpr uint64_t kSize = (4 << 20) + 12345;

void WritePattern(const std::string& path, uint64_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  std::string buf(size, '\0');
  for (uint64_t i = 0; i + 8 <= size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(&buf[i], &x, 8);
  }
  out.write(buf.data(), static_cast<std::streamsize>(size));
}

// Reads each "offset:length" of `file` with os.pread and compares it with
// `src`; prints "ok" or what differs; exit 1 on an OSError (its errno).
constexpr char kPreadCheck[] = R"PY(
import os, sys
m, s = os.open(sys.argv[1], os.O_RDONLY), open(sys.argv[2], 'rb').read()
bad = []
for r in sys.argv[3:]:
    off, n = map(int, r.split(':'))
    try:
        got = os.pread(m, n, off)
    except OSError as e:
        print('errno', e.errno); sys.exit(1)
    if got != s[off:off + n]:
        bad.append('%s: %d bytes, differ' % (r, len(got)))
print('\n'.join(bad) if bad else 'ok')
)PY";

class FuseNfsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const absl::Status s = Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    mounts_.clear();
    for (auto& n : nfs_) (void)n->Resume();
    nfs_.clear();
    cluster_.reset();
  }

  // Node `id`: its agent, a ganesha serving its export, and the agent
  // started again with --nfs_export so its live record names the server.
  absl::Status AddNfsNode(const std::string& id) {
    RANGEFS_ASSIGN_OR_RETURN(testing::AgentProcess * a, cluster_->AddAgent(id));
    RANGEFS_ASSIGN_OR_RETURN(
        auto nfs, GaneshaServer::Start(
                      {.export_dir = a->export_dir, .version = GetParam()}));
    const std::string url = nfs->url();
    nfs_.push_back(std::move(nfs));
    a->argv.push_back("--nfs_export=" + url);
    a->argv.push_back("--nfs_version=" + GetParam());
    RANGEFS_RETURN_IF_ERROR(cluster_->Restart(*a));
    if (!cluster_->WaitLive(
            id,
            [&](bool found, const ns::LiveEntry& e) {
              return found && e.record.nfs_export().url() == url;
            },
            testing::kMountWait)) {
      return absl::DeadlineExceededError(
          absl::StrCat(id, ": no live record naming ", url));
    }
    return absl::OkStatus();
  }

  absl::Status Start() {
    RANGEFS_ASSIGN_OR_RETURN(cluster_, AgentCluster::Start("fuse_nfs_test"));
    for (const char* id : {"n0", "n1"}) {
      RANGEFS_RETURN_IF_ERROR(AddNfsNode(id));
    }
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
    src_ = cluster_->dir() + "/big";
    WritePattern(src_, kSize);
    RANGEFS_RETURN_IF_ERROR(testing::PutFile(
        ctx_, src_, "/s/big", {"--stripe-unit=256K", "--replicas=2"}));
    { std::ofstream(cluster_->dir() + "/py") << kPreadCheck; }
    return absl::OkStatus();
  }

  // A mount over the NFS path with no usable mount_root (nothing there);
  // its metrics on *port.
  MountProcess* Mount(const std::string& name, std::vector<std::string> flags,
                      int* port) {
    auto p = testing::PickUnusedPort();
    if (!p.ok()) return nullptr;
    *port = *p;
    flags.push_back("-o");
    flags.push_back("data_path=nfs");
    flags.push_back("--mount_root=" + cluster_->dir() + "/no-such-root");
    flags.push_back(absl::StrCat("--metrics_port=", *port));
    auto m = MountProcess::Start(cluster_->etcd()->endpoints(),
                                 cluster_->dir() + "/" + name, flags);
    if (!m.ok()) {
      ADD_FAILURE() << m.status();
      return nullptr;
    }
    mounts_.push_back(std::move(*m));
    return mounts_.back().get();
  }

  // The sum over all samples of metric `name` (an extended regex; any
  // labels after it); -1 if absent.
  static int64_t Metric(int port, const std::string& name) {
    ShResult r = Sh(absl::StrCat(
        "/usr/bin/python3 -c \"import urllib.request; print(urllib.request."
        "urlopen('http://127.0.0.1:",
        port, "/metrics', timeout=5).read().decode())\" | grep -E '^", name,
        "[ {]' | awk '{s += $NF} END {if (NR) print s}'"));
    int64_t v = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(r.output), &v) ? v : -1;
  }

  ShResult Check(MountProcess* m, const std::vector<std::string>& ranges) {
    std::string cmd = absl::StrCat("/usr/bin/python3 ", cluster_->dir(), "/py ",
                                   Q(m->path("/s/big")), " ", Q(src_));
    for (const std::string& r : ranges) absl::StrAppend(&cmd, " ", r);
    return Sh(cmd);
  }

  static std::vector<std::string> EdgeRanges() {
    const uint64_t u = 256 << 10;
    std::vector<std::string> r;
    for (uint64_t off : {uint64_t{0}, uint64_t{1}, u - 1, u, 3 * u - 7,
                         kSize - (1 << 20) - 3, kSize - 4097, kSize - 1}) {
      for (uint64_t n :
           {uint64_t{1}, uint64_t{4096}, uint64_t{(1 << 20) + 7}}) {
        r.push_back(absl::StrCat(off, ":", n));
      }
    }
    r.push_back(absl::StrCat(0, ":", kSize + 100));  // whole, past EOF
    return r;
  }

  std::unique_ptr<AgentCluster> cluster_;
  std::vector<std::unique_ptr<GaneshaServer>> nfs_;
  admin::Context ctx_;
  std::string src_;
  std::vector<std::unique_ptr<MountProcess>> mounts_;
};

TEST_P(FuseNfsTest, ReadsByteExactOverNfs) {
  int port = 0;
  MountProcess* m = Mount("mnt", {"--direct_io=true"}, &port);
  ASSERT_NE(m, nullptr);
  ShResult r = Check(m, EdgeRanges());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "ok\n");
  // Every attempt went to a ganesha: none to an agent or a mount.
  EXPECT_GT(Metric(port, "rangefs_client_node_nfs_reads_total"), 0);
  EXPECT_EQ(Metric(port, "rangefs_client_node_agent_reads_total"), 0);
  EXPECT_EQ(Metric(port, "rangefs_client_node_mount_reads_total"), 0);
  EXPECT_EQ(Metric(port, "rangefs_mount_read_errors_total"), 0);
  EXPECT_THAT(m->StopWithSignal(), IsOk());
}

TEST_P(FuseNfsTest, PausedServerReadsFromTheOtherReplica) {
  int port = 0;
  MountProcess* m =
      Mount("mnt", {"--direct_io=true", "--read_deadline=20s"}, &port);
  ASSERT_NE(m, nullptr);
  ASSERT_THAT(nfs_[0]->Pause(), IsOk());
  const absl::Time t0 = absl::Now();
  ShResult r = Check(m, {absl::StrCat(0, ":", kSize)});
  const absl::Duration took = absl::Now() - t0;
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "ok\n");
  // Within the read deadline (20 s).
  EXPECT_LT(took, absl::Seconds(20)) << took;
  EXPECT_EQ(Metric(port, "rangefs_mount_read_errors_total"), 0);
  // The stopped server was asked (and the reads moved on without it).
  EXPECT_GT(Metric(port, R"(rangefs_client_node_nfs_reads_total\{node="n0"\})"),
            0);
  EXPECT_GT(Metric(port, R"(rangefs_client_node_nfs_reads_total\{node="n1"\})"),
            0);
  EXPECT_EQ(Metric(port, "rangefs_client_node_agent_reads_total"), 0);
  // Unmounts cleanly while ganesha n0 is still stopped.
  ASSERT_TRUE(nfs_[0]->running());
  EXPECT_THAT(m->StopWithSignal(), IsOk());
  ASSERT_THAT(nfs_[0]->Resume(), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Versions, FuseNfsTest, ::testing::Values("4.1", "3"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "3" ? std::string("v3")
                                                 : std::string("v41");
                         });

}  // namespace
}  // namespace rangefs
