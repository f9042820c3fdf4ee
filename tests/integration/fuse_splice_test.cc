// rangefs-mount's splice path (MountFs::ReadSpliced, File::LocalSpans):
// reads whose bytes lie in object files on a local file system are
// answered by splicing those files into the FUSE reply. A real etcd, two
// real agents, a file striped in 256 KiB units over both (each 1 MiB read
// crosses stripe units and column objects), and real mounts read with
// os.pread at edge offsets, compared byte for byte with the source. The
// spliced-reads counter proves the path ran; a mount with --verify=full
// never splices and still catches a corrupt object (EIO), as the copy path
// does.
//
// Runs in a private mount namespace (base/testing:private_mounts_main).
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/testing/ports.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/mount_harness.h"
#include "tests/integration/pipe_max_size.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using ::testing::HasSubstr;
using testing::MountProcess;
using testing::Q;
using testing::Sh;
using testing::ShResult;

// Not a multiple of anything: the last stripe unit and the last CRC block
// are partial.
constexpr uint64_t kSize = (8 << 20) + 12345;

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

// The start of a `python3 -c "..."` script (the caller closes the quote)
// with spliced(): the mount's rangefs_mount_spliced_reads_total, read from
// its metrics port.
std::string SplicedCounterPy(int port) {
  return absl::StrCat(
      "/usr/bin/python3 -c \"import os, sys, urllib.request\n"
      "def spliced():\n"
      "  t = urllib.request.urlopen('http://127.0.0.1:",
      port,
      "/metrics', timeout=5).read().decode()\n"
      "  return int([l.split()[1] for l in t.splitlines() if "
      "l.startswith('rangefs_mount_spliced_reads_total ')][0])\n");
}

class FuseSpliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status s = Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status Start() {
    // A splice reply of 1 MiB needs a 2 MiB pipe: above the default
    // fs.pipe-max-size without CAP_SYS_RESOURCE (as in some containers),
    // the mount refuses to splice (and says so). The test raises the limit
    // for its duration, as deploy/README.md tells operators to.
    RANGEFS_RETURN_IF_ERROR(pipe_max_.Raise(2 << 20));
    RANGEFS_ASSIGN_OR_RETURN(cluster_, AgentCluster::Start("fuse_splice_test"));
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
    src_ = cluster_->dir() + "/big";
    WritePattern(src_, kSize);
    RANGEFS_RETURN_IF_ERROR(testing::PutFile(
        ctx_, src_, "/s/big", {"--stripe-unit=256K", "--replicas=1"}));
    { std::ofstream(cluster_->dir() + "/py") << kPreadCheck; }
    // The mount path: each export bind-mounted at <mount_root>/<node>.
    mroot_ = cluster_->dir() + "/mroot";
    mkdir(mroot_.c_str(), 0755);
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      const std::string target = mroot_ + "/" + cluster_->agent(i).id;
      mkdir(target.c_str(), 0755);
      ShResult b =
          Sh(absl::StrCat("mount --bind -o ro ",
                          Q(cluster_->agent(i).export_dir), " ", Q(target)));
      if (b.code != 0) return absl::InternalError("bind mount: " + b.output);
      binds_.push_back(target);
    }
    return absl::OkStatus();
  }
  void TearDown() override {
    // The mounts' logs say why a read was not spliced (e.g. "splice: off").
    if (HasFailure() && cluster_ != nullptr) {
      std::cerr << Sh("tail -n 20 " + Q(cluster_->dir()) + "/*.*.log").output;
    }
    mounts_.clear();
    for (const std::string& b : binds_) Sh("umount -l " + Q(b));
    cluster_.reset();
  }

  // A mount over the mount path with `flags`; its metrics on a port.
  MountProcess* Mount(const std::string& name, std::vector<std::string> flags,
                      int* port) {
    auto p = testing::PickUnusedPort();
    if (!p.ok()) return nullptr;
    *port = *p;
    flags.push_back("--data_path=mount");
    flags.push_back("--mount_root=" + mroot_);
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

  static int64_t Metric(int port, const std::string& name) {
    ShResult r = Sh(absl::StrCat(
        "/usr/bin/python3 -c \"import urllib.request; print(urllib.request."
        "urlopen('http://127.0.0.1:",
        port, "/metrics', timeout=5).read().decode())\" | grep '^", name,
        " ' | awk '{print $2}'"));
    int64_t v = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(r.output), &v) ? v : -1;
  }

  ShResult Check(MountProcess* m, const std::vector<std::string>& ranges) {
    std::string cmd = absl::StrCat("/usr/bin/python3 ", cluster_->dir(), "/py ",
                                   Q(m->path("/s/big")), " ", Q(src_));
    for (const std::string& r : ranges) absl::StrAppend(&cmd, " ", r);
    return Sh(cmd);
  }

  // Offsets where a splice reply could go wrong: unaligned starts and
  // lengths, a stripe unit's end (256 KiB), a column object's next unit
  // (1 MiB = one row of 4 units on 2 nodes), the last partial unit.
  static std::vector<std::string> EdgeRanges() {
    const uint64_t u = 256 << 10;
    std::vector<std::string> r;
    for (uint64_t off :
         {uint64_t{0}, uint64_t{12345}, u - 1, u, 3 * u - 7,
          uint64_t{5 << 20} + 4097, kSize - (1 << 20) - 3, kSize - 200000}) {
      for (uint64_t n :
           {uint64_t{1 << 20}, uint64_t{(1 << 20) + 7}, uint64_t{200001}}) {
        r.push_back(absl::StrCat(off, ":", n));
      }
    }
    r.push_back(absl::StrCat(kSize - 12345, ":", 1 << 20));  // short at EOF
    r.push_back(absl::StrCat(0, ":", kSize + 100));          // whole, past EOF
    return r;
  }

  std::unique_ptr<AgentCluster> cluster_;
  admin::Context ctx_;
  std::string src_, mroot_;
  testing::ScopedPipeMaxSize pipe_max_;  // put back when the test ends
  std::vector<std::string> binds_;
  std::vector<std::unique_ptr<MountProcess>> mounts_;
};

TEST_F(FuseSpliceTest, SplicedReadsAreByteExactAtEdgeOffsets) {
  int dio_port = 0, pc_port = 0;
  MountProcess* dio = Mount("dio", {"-o", "direct_io=true"}, &dio_port);
  MountProcess* pc = Mount("pc", {"-o", "direct_io=false"}, &pc_port);
  ASSERT_NE(dio, nullptr);
  ASSERT_NE(pc, nullptr);
  // A first whole read opens every column object (the library's ring
  // thread opens them; until then reads take the copy path).
  for (MountProcess* m : {dio, pc}) {
    ASSERT_EQ(Sh("cat " + Q(m->path("/s/big")) + " >/dev/null").code, 0);
  }
  const int64_t before = Metric(dio_port, "rangefs_mount_spliced_reads_total");
  ASSERT_GE(before, 0);
  for (MountProcess* m : {dio, pc}) {
    ShResult r = Check(m, EdgeRanges());
    EXPECT_EQ(r.code, 0) << m->mountpoint() << ": " << r.output;
    EXPECT_EQ(r.output, "ok\n") << m->mountpoint();
  }
  // Direct: every pread is a request, answered spliced.
  EXPECT_GE(Metric(dio_port, "rangefs_mount_spliced_reads_total") - before,
            static_cast<int64_t>(EdgeRanges().size()));
  // Page cache: the kernel's readahead requests (the cat) were spliced too.
  EXPECT_GT(Metric(pc_port, "rangefs_mount_spliced_reads_total"), 0);
  // sha256 of the whole file through both mounts.
  const std::string want = Sh("sha256sum < " + Q(src_)).output;
  for (MountProcess* m : {dio, pc}) {
    EXPECT_EQ(Sh("sha256sum < " + Q(m->path("/s/big"))).output, want);
  }
}

// One open file read twice in 1 MiB requests (a direct mount: each read a
// request): the first pass opens the objects through the copy path
// (which may wait, and then hands the stream to the Reader); the second
// finds every byte in the objects' page cache and is spliced, whatever
// the first pass decided.
TEST_F(FuseSpliceTest, SecondPassOfOneOpenIsSpliced) {
  int port = 0;
  MountProcess* m = Mount("twice", {"-o", "direct_io=true"}, &port);
  ASSERT_NE(m, nullptr);
  const std::string py =
      absl::StrCat(SplicedCounterPy(port),
                   "f = os.open(sys.argv[1], os.O_RDONLY)\n"
                   "want = open(sys.argv[2], 'rb').read()\n"
                   "for p in range(2):\n"
                   "  s0 = spliced(); got = b''\n"
                   "  while True:\n"
                   "    b = os.pread(f, 1 << 20, len(got))\n"
                   "    if not b: break\n"
                   "    got += b\n"
                   "  print(p, got == want, spliced() - s0)\" ",
                   Q(m->path("/s/big")), " ", Q(src_));
  ShResult r = Sh(py);
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> lines = absl::StrSplit(r.output, '\n');
  ASSERT_GE(lines.size(), 2u) << r.output;
  EXPECT_THAT(lines[0], ::testing::StartsWith("0 True ")) << r.output;
  // 9 requests (8 MiB + 12345 bytes); every one spliced.
  EXPECT_EQ(lines[1], "1 True 9") << r.output;
}

// Cold bytes (not in the objects' page cache): a request continuing the
// handle's sequential stream is spliced too (the kernel reads the object
// ahead as for a read(2) of it); a cold read that continues nothing goes
// the copy path. Every request finds the objects' cache dropped
// (POSIX_FADV_DONTNEED), so none is helped by an earlier read-ahead.
TEST_F(FuseSpliceTest, ColdStreamIsSplicedOtherColdReadsAreCopied) {
  int port = 0;
  MountProcess* m = Mount("cold", {"-o", "direct_io=true"}, &port);
  ASSERT_NE(m, nullptr);
  ShResult objs = Sh(absl::StrCat("find ", Q(cluster_->dir()),
                                  "/export-n* -type f -path '*/f/*' ! -name "
                                  "'.*' | tr '\\n' ' '"));
  ASSERT_EQ(objs.code, 0);
  ASSERT_FALSE(objs.output.empty());
  const std::string py = absl::StrCat(
      SplicedCounterPy(port),
      "def drop():\n"
      "  for o in sys.argv[3:]:\n"
      "    d = os.open(o, os.O_RDONLY)\n"
      "    os.posix_fadvise(d, 0, 0, os.POSIX_FADV_DONTNEED)\n"
      "    os.close(d)\n"
      "f = os.open(sys.argv[1], os.O_RDONLY)\n"
      "want = open(sys.argv[2], 'rb').read()\n"
      "got = b''\n"  // a first pass opens the column objects
      "while True:\n"
      "  b = os.pread(f, 1 << 20, len(got))\n"
      "  if not b: break\n"
      "  got += b\n"
      "s0 = spliced(); got = b''\n"
      "while True:\n"
      "  drop()\n"
      "  b = os.pread(f, 1 << 20, len(got))\n"
      "  if not b: break\n"
      "  got += b\n"
      "print('stream', got == want, spliced() - s0)\n"
      "drop(); s0 = spliced(); b = os.pread(f, 1 << 20, 3 << 20)\n"
      "print('jump', b == want[3 << 20:4 << 20], spliced() - s0)\" ",
      Q(m->path("/s/big")), " ", Q(src_), " ", objs.output);
  ShResult r = Sh(py);
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<std::string> lines = absl::StrSplit(r.output, '\n');
  ASSERT_GE(lines.size(), 2u) << r.output;
  // 9 requests (8 MiB + 12345 bytes): the first starts no stream (copy),
  // the 8 after it continue it, each spliced although cold.
  EXPECT_EQ(lines[0], "stream True 8") << r.output;
  EXPECT_EQ(lines[1], "jump True 0") << r.output;
}

// After a burst of parallel reads, FUSE workers beyond max_idle_threads
// (default 4) end: the kernel hands each request to the worker that has
// waited longest, so every idle worker kept takes turns, and a single
// reader's requests would cycle through all of them.
//
// The burst samples the mount's thread count while it runs and prints the
// peak: the test checks the burst did start more than 4 threads beyond
// those before it, then that they end. A control mount that keeps 64 idle
// workers keeps what its bursts started: more than 4 left after them shows
// the bursts start FUSE workers, not only the library's short-lived threads
// (a Reader's prefetch). How many requests overlap depends on the scheduler
// (a loaded machine served 16 readers with 2 extra workers), so a burst
// that started too few is run again, a bounded number of times.
TEST_F(FuseSpliceTest, IdleWorkersBeyondTheLimitEndAfterABurst) {
  int port = 0, port64 = 0;
  MountProcess* m = Mount("burst", {"-o", "direct_io=true"}, &port);
  MountProcess* m64 =
      Mount("burst64", {"-o", "direct_io=true,max_idle_threads=64"}, &port64);
  ASSERT_NE(m, nullptr);
  ASSERT_NE(m64, nullptr);
  auto task_dir = [](MountProcess* p) {
    ShResult pid = Sh("awk '/^pid = / {print $3}' " +
                      Q(p->mountpoint() + ".status") + "/*.status");
    return absl::StrCat("/proc/", absl::StripAsciiWhitespace(pid.output),
                        "/task");
  };
  auto threads = [](const std::string& dir) {
    ShResult r = Sh("ls " + Q(dir) + " | wc -l");
    int n = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(r.output), &n) ? n : -1;
  };
  // 16 readers at once, 1 MiB preads over the whole file; a 17th thread
  // counts the mount's threads until the readers end; prints the most seen.
  constexpr char kBurstPy[] =
      "/usr/bin/python3 -c \"import os, sys, threading, time\n"
      "def run():\n"
      "  f = os.open(sys.argv[1], os.O_RDONLY)\n"
      "  o = 0\n"
      "  while os.pread(f, 1 << 20, o): o += 1 << 20\n"
      "peak, done = [0], threading.Event()\n"
      "def count():\n"
      "  while not done.is_set():\n"
      "    peak[0] = max(peak[0], len(os.listdir(sys.argv[2])))\n"
      "    time.sleep(0.0005)\n"
      "c = threading.Thread(target=count); c.start()\n"
      "ts = [threading.Thread(target=run) for _ in range(16)]\n"
      "[t.start() for t in ts]; [t.join() for t in ts]\n"
      "done.set(); c.join(); print(peak[0])\" ";
  auto burst = [&](MountProcess* p, const std::string& dir) {
    ShResult r = Sh(kBurstPy + Q(p->path("/s/big")) + " " + Q(dir));
    int peak = -1;
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.output), &peak))
        << r.output;
    return peak;
  };
  const std::string dir = task_dir(m), dir64 = task_dir(m64);
  for (MountProcess* p : {m, m64}) {
    ASSERT_EQ(Sh("cat " + Q(p->path("/s/big")) + " >/dev/null").code, 0);
  }
  const int before = threads(dir), before64 = threads(dir64);
  ASSERT_GT(before, 0);
  ASSERT_GT(before64, 0);
  for (int i = 0; i < 10 && threads(dir64) <= before64 + 4; ++i) {
    ASSERT_GT(burst(m64, dir64), 0);
  }
  ASSERT_GT(threads(dir64), before64 + 4)
      << "10 bursts left no more than 4 workers on a mount keeping 64 idle";
  int peak = 0;
  for (int i = 0; i < 10 && peak <= before + 4; ++i) peak = burst(m, dir);
  ASSERT_GT(peak, before + 4) << "10 bursts never ran more than 4 threads "
                                 "beyond the "
                              << before << " before them";
  // A worker ends when it answers a request while more than the limit are
  // idle: at once, but allow the last ones a moment (bounded).
  int after = threads(dir);
  for (int i = 0; i < 100 && after > before + 4; ++i) {
    usleep(100 * 1000);
    after = threads(dir);
  }
  EXPECT_LE(after, before + 4)
      << "threads before the burst: " << before << ", at its peak: " << peak;
}

TEST_F(FuseSpliceTest, OffMeansNoSplicing) {
  int port = 0;
  MountProcess* m =
      Mount("nosplice", {"-o", "direct_io=true,splice=false"}, &port);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(Sh("cat " + Q(m->path("/s/big")) + " >/dev/null").code, 0);
  ShResult r = Check(m, EdgeRanges());
  EXPECT_EQ(r.output, "ok\n");
  EXPECT_EQ(Metric(port, "rangefs_mount_spliced_reads_total"), 0);
  EXPECT_GT(Metric(port, "rangefs_mount_reads_total"), 0);
}

TEST_F(FuseSpliceTest, VerifyingMountNeverSplicesAndCatchesCorruption) {
  int vport = 0;
  MountProcess* v =
      Mount("verify", {"--verify=full", "-o", "direct_io=true"}, &vport);
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(Sh("cat " + Q(v->path("/s/big")) + " >/dev/null").code, 0);
  EXPECT_EQ(Check(v, EdgeRanges()).output, "ok\n");
  // Corrupt the first byte of every column object (their sidecars stay).
  ShResult objs = Sh(absl::StrCat("find ", Q(cluster_->dir()),
                                  "/export-n* -type f -path '*/f/*' ! -name "
                                  "'.*' | head -n 8"));
  ASSERT_EQ(objs.code, 0);
  ASSERT_FALSE(objs.output.empty());
  ASSERT_EQ(Sh("for o in $(find " + Q(cluster_->dir()) +
               "/export-n* -type f -path '*/f/*' ! -name '.*'); do "
               "printf '\\x5a\\xa5' | dd of=\"$o\" bs=1 seek=0 conv=notrunc "
               "status=none; done")
                .code,
            0);
  ShResult r = Check(v, {"0:1048576"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("errno 5"));  // EIO: DATA_LOSS
  EXPECT_EQ(Metric(vport, "rangefs_mount_spliced_reads_total"), 0);
}

}  // namespace
}  // namespace rangefs
