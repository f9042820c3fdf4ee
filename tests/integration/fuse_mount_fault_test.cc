// Faults under rangefs-mount: real etcd, two real agents (every byte on
// both), a real FUSE mount reading over the agent path. A node SIGSTOPped
// (hung) or SIGKILLed while sha256sum / a Python hasher / fio read through
// the mount: they finish with the right bytes. etcd stopped: the tree and
// cached layouts are still served, lookups of unknown names fail at once.
//
// The mount's readahead is small (128 KiB) so that most of each file is
// read from the nodes after the fault, not from the page cache. Runs in a
// private mount namespace (see fuse_mount_test.cc).
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/testing/http_get.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using ::testing::HasSubstr;
using testing::MountProcess;
using testing::Q;
using testing::Sh;
using testing::ShResult;

void WritePattern(const std::string& path, uint64_t size, uint32_t seed) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string buf(1 << 20, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t done = 0; done < size; done += buf.size()) {
    for (size_t i = 0; i < buf.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      memcpy(&buf[i], &x, 8);
    }
    out.write(buf.data(), static_cast<std::streamsize>(
                              std::min<uint64_t>(buf.size(), size - done)));
  }
}

// The mount's etcd call timeout. Long, so that a lookup that waited for a
// paused etcd would take at least this long, far above kNoEtcdWait; short
// enough that nothing else here notices.
constexpr absl::Duration kEtcdTimeout = absl::Seconds(10);
// An ENOENT answered without asking etcd: well under a millisecond idle;
// this bound holds on a loaded machine and stays below kEtcdTimeout.
constexpr absl::Duration kNoEtcdWait = absl::Seconds(5);
// A safety net for a whole-file read through the mount with a node hung or
// dead (a second or two idle).
constexpr absl::Duration kSlowRead = absl::Seconds(300);

std::string Sha256(const std::string& path) {
  ShResult r = Sh(absl::StrCat("sha256sum < ", Q(path)), kSlowRead);
  return r.code == 0 ? r.output.substr(0, 64) : "error: " + r.output;
}

class FuseMountFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = StartSuite();
    if (!s.ok()) setup_error_ = new std::string(s.ToString());
  }
  static void TearDownTestSuite() {
    mount_.reset();
    cluster_.reset();
  }
  void SetUp() override { ASSERT_EQ(setup_error_, nullptr) << *setup_error_; }

  static absl::Status StartSuite() {
    RANGEFS_ASSIGN_OR_RETURN(cluster_,
                             AgentCluster::Start("fuse_mount_fault_test"));
    for (const char* id : {"n0", "n1"}) {
      RANGEFS_ASSIGN_OR_RETURN(testing::AgentProcess * a,
                               cluster_->AddAgent(id));
      if (!cluster_->WaitLive(
              a->id, [](bool found, const ns::LiveEntry&) { return found; },
              testing::kMountWait)) {
        return absl::DeadlineExceededError(absl::StrCat(id, " not live"));
      }
    }
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
    src_ = cluster_->dir() + "/src";
    mkdir(src_.c_str(), 0755);
    for (const char* name : {"hash", "sum", "etcd"}) {
      const std::string local = absl::StrCat(src_, "/", name);
      WritePattern(local, 48 << 20, name[0]);
      RANGEFS_RETURN_IF_ERROR(
          testing::PutFile(ctx_, local, absl::StrCat("/f/", name),
                           {"--stripe-unit=1M", "--replicas=2"}));
    }
    ShResult fio = Sh(
        absl::StrCat("fio --name=w --filename=", src_,
                     "/fio --rw=write --bs=1M --verify_interval=4k --size=48M "
                     "--verify=crc32c --do_verify=0 --verify_state_save=0 "
                     "--output=/dev/null"));
    if (fio.code != 0) return absl::InternalError("fio write: " + fio.output);
    RANGEFS_RETURN_IF_ERROR(testing::PutFile(
        ctx_, src_ + "/fio", "/f/fio", {"--stripe-unit=1M", "--replicas=2"}));
    RANGEFS_ASSIGN_OR_RETURN(metrics_port_, testing::PickUnusedPort());
    RANGEFS_ASSIGN_OR_RETURN(
        mount_, MountProcess::Start(
                    cluster_->etcd()->endpoints(), cluster_->dir() + "/mnt",
                    {"--data_path=agent", "--readahead_kb=128", "--status_dir=",
                     absl::StrCat("--etcd_timeout=",
                                  absl::ToInt64Seconds(kEtcdTimeout), "s"),
                     absl::StrCat("--metrics_port=", metrics_port_)}));
    return absl::OkStatus();
  }

  static std::string M(const std::string& rel) { return mount_->path(rel); }

  // The value of metric line `name` (with labels, e.g.
  // rangefs_client_node_stalls_total{node="n0"}), or -1. Fetched in
  // process: cheap enough to poll.
  static int64_t Metric(const std::string& name) {
    absl::StatusOr<std::string> r = testing::HttpGet(metrics_port_, "/metrics");
    if (!r.ok()) return -1;
    for (absl::string_view line : absl::StrSplit(*r, '\n')) {
      if (absl::ConsumePrefix(&line, name + " ")) {
        int64_t v;
        if (absl::SimpleAtoi(line, &v)) return v;
      }
    }
    return -1;
  }
  static int64_t ReadBytes() {
    return Metric("rangefs_mount_read_bytes_total");
  }
  // Attempts on `node` that did not simply succeed.
  static int64_t Trouble(const std::string& node) {
    int64_t sum = 0;
    for (const char* m : {"errors", "timeouts", "stalls", "moved"}) {
      sum += std::max<int64_t>(
          0, Metric(absl::StrCat("rangefs_client_node_", m, "_total{node=\"",
                                 node, "\"}")));
    }
    return sum;
  }

  static std::string* setup_error_;
  static std::unique_ptr<AgentCluster> cluster_;
  static admin::Context ctx_;
  static std::string src_;
  static int metrics_port_;
  static std::unique_ptr<MountProcess> mount_;
};

std::string* FuseMountFaultTest::setup_error_ = nullptr;
std::unique_ptr<AgentCluster> FuseMountFaultTest::cluster_;
admin::Context FuseMountFaultTest::ctx_;
std::string FuseMountFaultTest::src_;
int FuseMountFaultTest::metrics_port_ = 0;
std::unique_ptr<MountProcess> FuseMountFaultTest::mount_;

TEST_F(FuseMountFaultTest, EtcdDownServesCachedMetadataNewLookupsFailFast) {
  ASSERT_EQ(Sh("ls " + Q(M("/f"))).code, 0);  // the kernel knows /f
  ASSERT_THAT(cluster_->etcd()->PauseMember(0), IsOk());
  struct Resume {
    AgentCluster* c;
    ~Resume() { (void)c->etcd()->ResumeMember(0); }
  } resume{cluster_.get()};
  ShResult ls = Sh("ls -lR " + Q(M("")));
  EXPECT_EQ(ls.code, 0) << ls.output;
  EXPECT_THAT(ls.output, HasSubstr("fio"));
  ShResult st = Sh("stat -c %s " + Q(M("/f/etcd")));
  EXPECT_EQ(st.output, absl::StrCat(48 << 20, "\n"));
  // Layouts were preloaded: a file never opened before still reads.
  EXPECT_EQ(Sha256(M("/f/etcd")), Sha256(src_ + "/etcd"));
  ShResult x = Sh("cd " + Q(M("/f")) +
                  " && getfattr -n user.rangefs.replicas --only-values etcd");
  EXPECT_EQ(x.output, "2");
  // A name the namespace does not have: ENOENT at once, no etcd wait.
  const absl::Time start = absl::Now();
  errno = 0;
  const int rc = access(M("/f/never-there").c_str(), F_OK);
  const int e = errno;
  const absl::Duration took = absl::Now() - start;
  EXPECT_NE(rc, 0);
  EXPECT_EQ(e, ENOENT);
  EXPECT_LT(took, kNoEtcdWait) << "ENOENT after " << took;
  RecordProperty("enoent_us", absl::StrCat(absl::ToInt64Microseconds(took)));
  // etcd back: changes flow again. If the pause outlasted the agents'
  // 2 s leases (likely on a loaded machine), etcd expires them on resuming
  // and the agents register again: until then placement finds too few
  // live nodes and refuses the put before writing anything. Retried until
  // both are back, which the later tests need too.
  ASSERT_THAT(cluster_->etcd()->ResumeMember(0), IsOk());
  absl::Status put;
  const absl::Time put_deadline = absl::Now() + testing::kMountWait;
  do {
    put = testing::PutFile(ctx_, src_ + "/etcd", "/f/after");
    if (!absl::IsFailedPrecondition(put)) break;
    absl::SleepFor(absl::Milliseconds(50));  // polls the agents' return
  } while (absl::Now() < put_deadline);
  ASSERT_THAT(put, IsOk());
  const absl::Time deadline = absl::Now() + testing::kMountWait;
  while (access(M("/f/after").c_str(), F_OK) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(access(M("/f/after").c_str(), F_OK), 0);
}

TEST_F(FuseMountFaultTest, HungNodeWhileHashingAndSha256sum) {
  // The hasher reads 1 MiB at a time, stops after 8 MiB until told to go
  // on: the node is SIGSTOPped in that pause, so the rest (uncached) must
  // come from the other replica. (Its 300 s wait is a safety net; the go
  // file comes at once.)
  const std::string go = src_ + "/go-hash";
  std::ofstream(src_ + "/hash.py")
      << "import hashlib, os, sys, time\n"
         "h = hashlib.sha256()\n"
         "f = open(sys.argv[1], 'rb', buffering=0)\n"
         "n = 0\n"
         "while True:\n"
         "    b = f.read(1 << 20)\n"
         "    if not b:\n"
         "        break\n"
         "    h.update(b)\n"
         "    n += len(b)\n"
         "    if n == 8 << 20:\n"
         "        print('progress', flush=True)\n"
         "        end = time.time() + 300\n"
         "        while not os.path.exists(sys.argv[2]) and time.time() < "
         "end:\n"
         "            time.sleep(0.005)\n"
         "print('sha', h.hexdigest(), n, flush=True)\n";
  auto hasher = testing::Subprocess::Start(
      {.argv = {"/usr/bin/python3", src_ + "/hash.py", M("/f/hash"), go},
       .log_path = src_ + "/hash.log"});
  ASSERT_THAT(hasher, IsOk());
  ASSERT_THAT((*hasher)->WaitForLog("progress", testing::kMountWait), IsOk());
  testing::AgentProcess& n0 = cluster_->agent(0);
  const int64_t trouble = Trouble("n0");
  ASSERT_THAT(n0.process->Signal(SIGSTOP), IsOk());
  struct Cont {
    testing::AgentProcess& a;
    ~Cont() { (void)a.process->Signal(SIGCONT); }
  } cont{n0};
  const absl::Time start = absl::Now();
  std::ofstream(go) << "go";
  auto status = (*hasher)->Wait(kSlowRead);
  ASSERT_THAT(status, IsOk()) << (*hasher)->LogTail();
  const absl::Duration hashed = absl::Now() - start;
  EXPECT_THAT(
      (*hasher)->Log(),
      HasSubstr(absl::StrCat("sha ", Sha256(src_ + "/hash"), " ", 48 << 20)));
  // sha256sum of a file never read, with n0 still hung.
  const absl::Time start2 = absl::Now();
  EXPECT_EQ(Sha256(M("/f/sum")), Sha256(src_ + "/sum"));
  const absl::Duration summed = absl::Now() - start2;
  // How often the library met the hung node (information: after its lease
  // expires the node is no longer picked at all).
  RecordProperty("n0_attempts_failed_or_moved",
                 absl::StrCat(Trouble("n0") - trouble));
  RecordProperty("hash_after_sigstop_ms",
                 absl::StrCat(absl::ToInt64Milliseconds(hashed)));
  RecordProperty("sha256sum_with_hung_node_ms",
                 absl::StrCat(absl::ToInt64Milliseconds(summed)));
}

TEST_F(FuseMountFaultTest, KilledNodeUnderFioVerify) {
  // O_DIRECT and rate-limited: every block goes to the nodes, and the run
  // is still going when n1 dies (the rate caps fio at 16 MB/s, so 40 MiB
  // are left to read when n1 dies; load can only slow it further).
  const std::string common = absl::StrCat(
      "fio --filename=", Q(M("/f/fio")),
      " --readonly --size=48M --verify=crc32c --verify_interval=4k "
      "--verify_state_load=0 --output-format=terse --terse-version=3 "
      "--direct=1 ");
  const int64_t before = ReadBytes();
  ASSERT_GE(before, 0);
  const int64_t trouble = Trouble("n1");
  auto fio = testing::Subprocess::Start(
      {.argv = {"/bin/bash", "-c",
                common + "--name=seq --rw=read --bs=128k --ioengine=psync "
                         "--rate=16m"},
       .log_path = src_ + "/fio-seq.log"});
  ASSERT_THAT(fio, IsOk());
  const absl::Time deadline = absl::Now() + testing::kMountWait;
  while (ReadBytes() < before + (8 << 20) && (*fio)->Running() &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GE(ReadBytes(), before + (8 << 20)) << (*fio)->LogTail();
  ASSERT_TRUE((*fio)->Running())
      << "fio ended before n1 was killed: " << (*fio)->LogTail();
  ASSERT_THAT(cluster_->agent(1).process->Kill(), IsOk());
  auto status = (*fio)->Wait(kSlowRead);
  ASSERT_THAT(status, IsOk());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << (*fio)->Log();
  std::vector<std::string> f = absl::StrSplit((*fio)->Log(), ';');
  ASSERT_GT(f.size(), 6u) << (*fio)->Log();
  EXPECT_EQ(f[4], "0") << (*fio)->Log();
  // Information only: a dead agent's connection may be dropped before any
  // attempt fails on it.
  RecordProperty("n1_attempts_failed_or_moved",
                 absl::StrCat(Trouble("n1") - trouble));
  // Random 4 KiB through io_uring with the node dead.
  ShResult r = Sh(common +
                      "--name=rand --rw=randread --bs=4k --ioengine=io_uring "
                      "--iodepth=16 --number_ios=2000",
                  kSlowRead);
  EXPECT_EQ(r.code, 0) << r.output;
  std::vector<std::string> g = absl::StrSplit(r.output, ';');
  ASSERT_GT(g.size(), 6u) << r.output;
  EXPECT_EQ(g[4], "0") << r.output;
}

}  // namespace
}  // namespace rangefs
