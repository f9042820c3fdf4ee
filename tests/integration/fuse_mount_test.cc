// rangefs-mount end to end: a real etcd, two real rangefs-node agents,
// files ingested with `file put`, and a real FUSE mount read by ordinary
// tools (ls, stat, cat, sha256sum, cmp, dd, tail, python, mmap, fio with
// --verify, getfattr). The suite's mount reads over the mount path (the
// agents' exports bind-mounted as <mount_root>/<node>); the fault tests
// (fuse_mount_fault_test) use the agent path.
//
// The test runs in a private mount namespace (base/testing:private_mounts_main,
// before any thread): every mount it makes dies with it even if it is killed.
// Each mount process is also unmounted (fusermount3 -u -z) and killed by its
// harness object.
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin/doctor.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mount/mount_status.h"
#include "namespace/storage_policy.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using testing::AgentCluster;
using ::testing::HasSubstr;
using testing::MountProcess;
using ::testing::Not;
using testing::Q;
using testing::Sh;
using testing::ShResult;

constexpr uint64_t kBigSize = (24 << 20) + 12345;

// Deterministic bytes (fast to generate, different per seed).
void WritePattern(const std::string& path, uint64_t size, uint32_t seed) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string buf(1 << 20, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t done = 0; done < size;) {
    for (size_t i = 0; i < buf.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      memcpy(&buf[i], &x, 8);
    }
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), size - done));
    out.write(buf.data(), static_cast<std::streamsize>(n));
    done += n;
  }
}

std::string Sha256(const std::string& path) {
  ShResult r = Sh(absl::StrCat("sha256sum < ", Q(path)));
  return r.code == 0 ? r.output.substr(0, 64) : "error: " + r.output;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls `cond` every 5 ms for up to `timeout`; returns how long it took, or
// a negative duration if it never held.
absl::Duration TimeUntil(const std::function<bool()>& cond,
                         absl::Duration timeout = testing::kMountWait) {
  const absl::Time start = absl::Now();
  while (absl::Now() - start < timeout) {
    if (cond()) return absl::Now() - start;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return -absl::Seconds(1);
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

const std::string& LongName() {
  static const std::string* n = new std::string(255, 'L');
  return *n;
}
// 85 three-byte characters: a 255-byte UTF-8 component.
const std::string& LongUtf8Name() {
  static const std::string* n = [] {
    auto* s = new std::string;
    for (int i = 0; i < 85; ++i) *s += "\xE5\x90\x8D";  // 名
    return s;
  }();
  return *n;
}

class FuseMountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = StartSuite();
    if (!s.ok()) setup_error_ = new std::string(s.ToString());
  }
  static void TearDownTestSuite() {
    dio_.reset();
    mount_.reset();
    if (cluster_ != nullptr) {
      for (const std::string& b : binds_) {
        Sh("umount -l " + Q(b), testing::kMountWait);
      }
    }
    cluster_.reset();
  }
  void SetUp() override { ASSERT_EQ(setup_error_, nullptr) << *setup_error_; }

  static absl::Status StartSuite() {
    RANGEFS_ASSIGN_OR_RETURN(cluster_, AgentCluster::Start("fuse_mount_test"));
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
    WritePattern(src_ + "/big", kBigSize, 1);
    ShResult fio = Sh(
        absl::StrCat("fio --name=w --filename=", src_,
                     "/fio --rw=write --bs=1M --verify_interval=4k --size=16M "
                     "--verify=crc32c --do_verify=0 "
                     "--verify_state_save=0 --output=/dev/null"));
    if (fio.code != 0) return absl::InternalError("fio write: " + fio.output);
    { std::ofstream(src_ + "/small") << "hello rangefs\n"; }
    RANGEFS_RETURN_IF_ERROR(
        testing::PutFile(ctx_, src_ + "/big", "/data/big",
                         {"--stripe-unit=1M", "--replicas=2"}));
    RANGEFS_RETURN_IF_ERROR(
        testing::PutFile(ctx_, src_ + "/fio", "/data/fio",
                         {"--stripe-unit=1M", "--replicas=2"}));
    RANGEFS_RETURN_IF_ERROR(testing::PutFile(ctx_, src_ + "/small",
                                             "/data/small", {"--replicas=2"}));
    for (const std::string& name :
         {std::string("with  spaces and 'quotes'"),
          std::string("\xC3\xBCn\xC3\xAF-\xE5\x90\x8D\xE5\x89\x8D.txt"),
          LongName(), LongUtf8Name()}) {
      RANGEFS_RETURN_IF_ERROR(
          testing::PutFile(ctx_, src_ + "/small", "/odd/" + name, {}));
    }
    // The suite's mount reads over the mount path: each export bind-mounted
    // at <mount_root>/<node>.
    const std::string mroot = cluster_->dir() + "/mroot";
    mkdir(mroot.c_str(), 0755);
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      const std::string target = mroot + "/" + cluster_->agent(i).id;
      mkdir(target.c_str(), 0755);
      ShResult b =
          Sh(absl::StrCat("mount --bind -o ro ",
                          Q(cluster_->agent(i).export_dir), " ", Q(target)));
      if (b.code != 0) return absl::InternalError("bind mount: " + b.output);
      binds_.push_back(target);
    }
    RANGEFS_ASSIGN_OR_RETURN(metrics_port_, testing::PickUnusedPort());
    status_dir_ = cluster_->dir() + "/status";
    RANGEFS_ASSIGN_OR_RETURN(
        mount_, MountProcess::Start(
                    cluster_->etcd()->endpoints(), cluster_->dir() + "/mnt",
                    {"--data_path=mount", "--mount_root=" + mroot,
                     "--status_dir=" + status_dir_,
                     absl::StrCat("--metrics_port=", metrics_port_)}));
    // The same namespace again with -o direct_io: the data tests read
    // through both mounts.
    RANGEFS_ASSIGN_OR_RETURN(
        dio_, MountProcess::Start(
                  cluster_->etcd()->endpoints(), cluster_->dir() + "/mnt_dio",
                  {"--data_path=mount", "--mount_root=" + mroot,
                   "--status_dir=" + cluster_->dir(), "-o", "direct_io",
                   "--metrics_file=" + DioMetricsFile(),
                   "--metrics_interval=100ms"}));
    return absl::OkStatus();
  }

  static std::string M(const std::string& rel) { return mount_->path(rel); }
  static std::string DioMetricsFile() { return cluster_->dir() + "/dio.prom"; }
  // The mounts whose reads the data tests check: the default one and the
  // -o direct_io one.
  static std::vector<MountProcess*> DataMounts() {
    return {mount_.get(), dio_.get()};
  }

  static std::string* setup_error_;
  static std::unique_ptr<AgentCluster> cluster_;
  static admin::Context ctx_;
  static std::string src_;
  static std::string status_dir_;
  static int metrics_port_;
  static std::vector<std::string> binds_;
  static std::unique_ptr<MountProcess> mount_;
  static std::unique_ptr<MountProcess> dio_;
};

std::string* FuseMountTest::setup_error_ = nullptr;
std::unique_ptr<AgentCluster> FuseMountTest::cluster_;
admin::Context FuseMountTest::ctx_;
std::string FuseMountTest::src_;
std::string FuseMountTest::status_dir_;
int FuseMountTest::metrics_port_ = 0;
std::vector<std::string> FuseMountTest::binds_;
std::unique_ptr<MountProcess> FuseMountTest::mount_;
std::unique_ptr<MountProcess> FuseMountTest::dio_;

TEST_F(FuseMountTest, LsAndStatShowTheNamespace) {
  ShResult ls = Sh("ls -lR " + Q(M("")));
  ASSERT_EQ(ls.code, 0) << ls.output;
  EXPECT_THAT(ls.output, HasSubstr(absl::StrCat(kBigSize, " ")));
  EXPECT_THAT(ls.output, HasSubstr("data"));
  EXPECT_THAT(ls.output, HasSubstr("-r--r--r--"));
  EXPECT_THAT(ls.output, HasSubstr("dr-xr-xr-x"));
  ShResult find = Sh("cd " + Q(M("")) + " && find . -type f | LC_ALL=C sort");
  ASSERT_EQ(find.code, 0) << find.output;
  EXPECT_EQ(find.output,
            absl::StrCat("./data/big\n./data/fio\n./data/small\n./odd/",
                         LongName(), "\n./odd/with  spaces and 'quotes'\n",
                         "./odd/\xC3\xBCn\xC3\xAF-\xE5\x90\x8D\xE5\x89\x8D.txt"
                         "\n./odd/",
                         LongUtf8Name(), "\n"));
  ShResult st =
      Sh("stat -c '%s %F %a' " + Q(M("/data/big")) + " " + Q(M("/data")));
  ASSERT_EQ(st.code, 0) << st.output;
  EXPECT_EQ(st.output,
            absl::StrCat(kBigSize, " regular file 444\n0 directory 555\n"));
  ShResult df = Sh("df " + Q(M("")));
  EXPECT_EQ(df.code, 0) << df.output;
  EXPECT_THAT(df.output, HasSubstr("rangefs:it:/"));
}

TEST_F(FuseMountTest, CatSha256sumAndCmpMatchTheSource) {
  for (MountProcess* m : DataMounts()) {
    SCOPED_TRACE(m->mountpoint());
    EXPECT_EQ(Sha256(m->path("/data/big")), Sha256(src_ + "/big"));
    ShResult cmp =
        Sh("cmp " + Q(m->path("/data/big")) + " " + Q(src_ + "/big"));
    EXPECT_EQ(cmp.code, 0) << cmp.output;
    ShResult cat = Sh("cat " + Q(m->path("/data/small")));
    EXPECT_EQ(cat.output, "hello rangefs\n");
    ShResult cmp2 =
        Sh("cmp " + Q(m->path("/data/fio")) + " " + Q(src_ + "/fio"));
    EXPECT_EQ(cmp2.code, 0) << cmp2.output;
  }
}

// -o direct_io really bypasses the kernel's page cache of the mount: the
// same bytes read twice reach the daemon twice (the default mount serves
// the second read from its page cache), and mmap still works (the
// FUSE_DIRECT_IO_ALLOW_MMAP init flag, mount/init_flags.h).
TEST_F(FuseMountTest, DirectIoReadsReachTheDaemonEveryTime) {
  auto read_bytes = [&]() -> int64_t {
    // The metrics file is rewritten (atomically) every 100 ms from counters
    // read just before. The first rewrite seen may have read them before
    // the reads above were counted; the second one seen read them after.
    // (Counted by rewrites, not by time: on a loaded machine the writer
    // may be late by any amount.)
    const std::string f = DioMetricsFile();
    auto mtime = [&]() -> std::string {
      struct stat st;
      if (stat(f.c_str(), &st) != 0) return "";
      return absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
    };
    std::string last = mtime();
    int rewrites = 0;
    const absl::Time end = absl::Now() + testing::kMountWait;
    while (rewrites < 2 && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(20));  // polls the file's rewrite
      const std::string now = mtime();
      if (!now.empty() && now != last) {
        ++rewrites;
        last = now;
      }
    }
    if (rewrites < 2) {
      ADD_FAILURE() << f << " rewritten " << rewrites << " times in "
                    << testing::kMountWait;
      return -1;
    }
    ShResult r = Sh("grep '^rangefs_mount_read_bytes_total ' " + Q(f) +
                    " | awk '{print $2}'");
    int64_t v = -1;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(r.output), &v) ? v : -1;
  };
  const std::string dd =
      "dd if=" + Q(dio_->path("/data/big")) + " bs=1M count=2 status=none";
  ASSERT_EQ(Sh(dd + " >/dev/null").code, 0);
  const int64_t b0 = read_bytes();
  ASSERT_GE(b0, 2 << 20);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Sh(dd + " >/dev/null").code, 0);
  // Exactly the bytes asked for, each time: no page cache, no readahead.
  EXPECT_EQ(read_bytes() - b0, 2 * (2 << 20));
  // The kernel granted mmap of direct_io files (Linux >= 6.6 offers it).
  ShResult py =
      Sh("/usr/bin/python3 -c \"import mmap, sys; f = open(sys.argv[1], 'rb'); "
         "m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ); "
         "print(len(m), m[:13].decode())\" " +
         Q(dio_->path("/data/small")));
  EXPECT_EQ(py.code, 0) << py.output;
  EXPECT_EQ(py.output, "14 hello rangefs\n");
}

TEST_F(FuseMountTest, DdTailPythonSeekAndMmap) {
  auto both = [&](const std::string& cmd_fmt) {
    auto run = [&](const std::string& f) {
      return Sh(absl::StrReplaceAll(cmd_fmt, {{"FILE", Q(f)}}));
    };
    ShResult b = run(src_ + "/big");
    for (MountProcess* m : DataMounts()) {
      ShResult a = run(m->path("/data/big"));
      EXPECT_EQ(a.code, 0) << cmd_fmt << ": " << a.output;
      EXPECT_EQ(a.output, b.output) << cmd_fmt << " on " << m->mountpoint();
      EXPECT_EQ(a.output.size(), 68u) << a.output;  // "<sha256>  -\n"
    }
  };
  both("dd if=FILE bs=64k skip=37 count=5 status=none | sha256sum");
  both("dd if=FILE bs=1M iflag=direct status=none | sha256sum");
  both("tail -c 100001 FILE | sha256sum");
  const std::string py =
      "import hashlib, mmap, sys\n"
      "f = open(sys.argv[1], 'rb')\n"
      "f.seek(12345)\n"
      "a = f.read(1000003)\n"
      "f.seek(-4097, 2)\n"
      "b = f.read()\n"
      "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
      "c = m[5 << 20:(5 << 20) + 777777] + m[len(m) - 10:]\n"
      "print(hashlib.sha256(a + b + c).hexdigest(), len(m))\n";
  std::ofstream(src_ + "/t.py") << py;
  ShResult b =
      Sh("/usr/bin/python3 " + Q(src_ + "/t.py") + " " + Q(src_ + "/big"));
  for (MountProcess* m : DataMounts()) {
    ShResult a = Sh("/usr/bin/python3 " + Q(src_ + "/t.py") + " " +
                    Q(m->path("/data/big")));
    ASSERT_EQ(a.code, 0) << m->mountpoint() << ": " << a.output;
    EXPECT_EQ(a.output, b.output) << m->mountpoint();
    EXPECT_THAT(a.output, HasSubstr(absl::StrCat(" ", kBigSize)));
  }
}

void FioVerify(const std::string& file) {
  const std::string common = absl::StrCat(
      "fio --filename=", Q(file),
      " --readonly --size=16M --verify=crc32c --verify_interval=4k "
      "--verify_state_load=0 "
      "--output-format=terse --terse-version=3 ");
  for (const std::string& job :
       {std::string("--name=seq --rw=read --bs=1M --ioengine=psync"),
        std::string("--name=seqdirect --rw=read --bs=128k --direct=1 "
                    "--ioengine=psync"),
        std::string("--name=rand --rw=randread --bs=4k --ioengine=io_uring "
                    "--iodepth=16 --number_ios=3000 --direct=1"),
        std::string("--name=randbuf --rw=randread --bs=4k --ioengine=io_uring "
                    "--iodepth=8 --number_ios=3000")}) {
    ShResult r = Sh(common + job, absl::Seconds(300));
    EXPECT_EQ(r.code, 0) << job << ": " << r.output;
    // Terse v3: field 5 is the job's error code.
    std::vector<std::string> f = absl::StrSplit(r.output, ';');
    ASSERT_GT(f.size(), 6u) << r.output;
    EXPECT_EQ(f[4], "0") << job << ": " << r.output;
  }
}

TEST_F(FuseMountTest, FioPsyncAndIoUringVerify) {
  for (MountProcess* m : DataMounts()) {
    SCOPED_TRACE(m->mountpoint());
    FioVerify(m->path("/data/fio"));
  }
}

TEST_F(FuseMountTest, WritesAreReadOnlyFileSystem) {
  for (const std::string& cmd :
       {"echo x > " + Q(M("/new")), "echo x >> " + Q(M("/data/small")),
        "mkdir " + Q(M("/d")), "rm " + Q(M("/data/small")),
        "rmdir " + Q(M("/odd")), "chmod 600 " + Q(M("/data/small")),
        "touch " + Q(M("/data/small")),
        "mv " + Q(M("/data/small")) + " " + Q(M("/data/s2")),
        "ln -s x " + Q(M("/data/l")), "truncate -s 0 " + Q(M("/data/small")),
        "setfattr -n user.x -v 1 " + Q(M("/data/small"))}) {
    ShResult r = Sh(cmd);
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_THAT(r.output, HasSubstr("Read-only file system")) << cmd;
  }
  EXPECT_EQ(Sh("cat " + Q(M("/data/small"))).output, "hello rangefs\n");
}

// Changes reach the mount through its etcd watch: they show in tens of
// milliseconds idle. The bound allows a loaded machine 10x the promised
// second and is still far below what a mount without a working watch
// would take (max_staleness, 5 min); the measured times are recorded.
constexpr absl::Duration kShowsWithin = absl::Seconds(10);

TEST_F(FuseMountTest, NamespaceChangesShowWithinASecond) {
  const std::string f = M("/fresh/dir/file");
  ASSERT_FALSE(Exists(f));
  ASSERT_THAT(testing::PutFile(ctx_, src_ + "/small", "/fresh/dir/file"),
              IsOk());
  const absl::Duration appeared = TimeUntil([&] { return Exists(f); });
  EXPECT_GE(appeared, absl::ZeroDuration()) << "never appeared";
  EXPECT_LT(appeared, kShowsWithin) << "appeared after " << appeared;
  EXPECT_EQ(Sh("cat " + Q(f)).output, "hello rangefs\n");
  ShResult ls = Sh("ls " + Q(M("/fresh")));
  EXPECT_EQ(ls.output, "dir\n");
  // A new file in a directory the kernel already knows.
  ASSERT_THAT(testing::PutFile(ctx_, src_ + "/small", "/fresh/dir/second"),
              IsOk());
  const absl::Duration listed = TimeUntil([&] {
    return Sh("ls " + Q(M("/fresh/dir"))).output == "file\nsecond\n";
  });
  EXPECT_GE(listed, absl::ZeroDuration()) << "never listed";
  EXPECT_LT(listed, kShowsWithin) << "listed after " << listed;
  // Removal.
  ASSERT_THAT(cluster_->store()->DeleteFile("/fresh/dir/file", 0), IsOk());
  ASSERT_THAT(cluster_->store()->DeleteFile("/fresh/dir/second", 0), IsOk());
  const absl::Duration gone =
      TimeUntil([&] { return !Exists(f) && !Exists(M("/fresh")); });
  EXPECT_GE(gone, absl::ZeroDuration()) << "never gone";
  EXPECT_LT(gone, kShowsWithin) << "gone after " << gone;
  RecordProperty("appear_ms",
                 absl::StrCat(absl::ToInt64Milliseconds(appeared)));
  RecordProperty("list_ms", absl::StrCat(absl::ToInt64Milliseconds(listed)));
  RecordProperty("remove_ms", absl::StrCat(absl::ToInt64Milliseconds(gone)));
}

TEST_F(FuseMountTest, OddNamesWork) {
  for (const std::string& name :
       {std::string("with  spaces and 'quotes'"),
        std::string("\xC3\xBCn\xC3\xAF-\xE5\x90\x8D\xE5\x89\x8D.txt"),
        LongName(), LongUtf8Name()}) {
    const std::string p = M("/odd/" + name);
    EXPECT_TRUE(Exists(p)) << name;
    EXPECT_EQ(Slurp(p), "hello rangefs\n") << name;
  }
  EXPECT_EQ(LongName().size(), 255u);
  EXPECT_EQ(LongUtf8Name().size(), 255u);
  // 256 bytes: the kernel refuses the name before it reaches us.
  errno = 0;
  const int rc = access(M("/odd/" + LongName() + "x").c_str(), F_OK);
  const int e = errno;
  EXPECT_NE(rc, 0);
  EXPECT_EQ(e, ENAMETOOLONG);
}

TEST_F(FuseMountTest, XattrsShowTheLayout) {
  ShResult r = Sh("getfattr -d " + Q(M("/data/big")));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.generation=\"1\""));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.replicas=\"2\""));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.nodes=\"n0,n1\""));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.layout=\"{"));
  EXPECT_THAT(r.output, HasSubstr("stripe_unit"));
  ShResult one = Sh("getfattr --only-values -n user.rangefs.file_id " +
                    Q(M("/data/small")));
  EXPECT_EQ(one.code, 0) << one.output;
  EXPECT_THAT(Sh("getfattr -n user.nope " + Q(M("/data/small"))).output,
              HasSubstr("No such attribute"));
  EXPECT_EQ(Sh("getfattr -d " + Q(M("/data"))).output, "");
  // The storage policy the file is under, read from etcd at each call.
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.policy=\"none\""));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.policy_state=\"none\""));
  ns::StoragePolicy p;
  p.dir = "/data";
  p.goal = ns::LayoutGoal::Replicas(3);
  ASSERT_THAT(ns::PutPolicy(*ctx_.store->kv(), ctx_.store->keys(), p), IsOk());
  r = Sh("getfattr -d " + Q(M("/data/big")));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.policy=\"replicas=3 from "
                                  "/data\""));
  EXPECT_THAT(r.output, HasSubstr("user.rangefs.policy_state=\"pending\""));
  ASSERT_THAT(ns::DeletePolicy(*ctx_.store->kv(), ctx_.store->keys(), "/data"),
              IsOk());
}

TEST_F(FuseMountTest, ChangedBytesGiveEstaleOnOldHandlesNeverMixed) {
  const std::string v1 = src_ + "/v1", v2 = src_ + "/v2";
  WritePattern(v1, 3 << 20, 7);
  WritePattern(v2, 3 << 20, 8);
  ASSERT_THAT(testing::PutFile(ctx_, v1, "/data/victim",
                               {"--stripe-unit=1M", "--replicas=2"}),
              IsOk());
  const std::string victim = M("/data/victim");
  ASSERT_GE(TimeUntil([&] { return Exists(victim); }), absl::ZeroDuration());
  // The reader opens, reads everything once, waits for the go file, then
  // re-reads with pread until the read fails; every byte it got must be v1.
  // Its 120 s bound is a safety net (the overwrite shows in well under a
  // second idle).
  const std::string go = src_ + "/go";
  const std::string py = absl::StrCat(
      "import errno, os, sys, time\n"
      "old = open(sys.argv[2], 'rb').read()\n"
      "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
      "assert os.pread(fd, len(old) + 1, 0) == old\n"
      "print('opened', flush=True)\n"
      "end = time.time() + 120\n"
      "while not os.path.exists(sys.argv[3]) and time.time() < end:\n"
      "    time.sleep(0.005)\n"
      "mixed = 0\n"
      "while time.time() < end:\n"
      "    try:\n"
      "        for off in range(0, len(old), 65536):\n"
      "            if os.pread(fd, 65536, off) != old[off:off + 65536]:\n"
      "                mixed += 1\n"
      "    except OSError as e:\n"
      "        print('error', errno.errorcode[e.errno], 'mixed', mixed)\n"
      "        sys.exit(0)\n"
      "print('no error; mixed', mixed)\n");
  std::ofstream(src_ + "/stale.py") << py;
  auto reader = testing::Subprocess::Start(
      {.argv = {"/usr/bin/python3", src_ + "/stale.py", victim, v1, go},
       .log_path = src_ + "/stale.log"});
  ASSERT_THAT(reader, IsOk());
  ASSERT_THAT((*reader)->WaitForLog("opened", testing::kMountWait), IsOk());
  ASSERT_THAT(
      testing::PutFile(ctx_, v2, "/data/victim",
                       {"--stripe-unit=1M", "--replicas=2", "--overwrite"}),
      IsOk());
  std::ofstream(go) << "go";
  auto status = (*reader)->Wait(absl::Seconds(180));
  ASSERT_THAT(status, IsOk());
  EXPECT_THAT((*reader)->Log(), HasSubstr("error ESTALE mixed 0"));
  // A new open sees the new bytes.
  EXPECT_EQ(Sha256(victim), Sha256(v2));
}

TEST_F(FuseMountTest, MetricsAndStatusFile) {
  ASSERT_EQ(Sh("cat " + Q(M("/data/small"))).code, 0);
  ShResult r = Sh(absl::StrCat(
      "/usr/bin/python3 -c \"import urllib.request; print(urllib.request."
      "urlopen('http://127.0.0.1:",
      metrics_port_, "/metrics', timeout=5).read().decode())\""));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rangefs_mount_reads_total "));
  EXPECT_THAT(r.output, HasSubstr("rangefs_mount_watch_connected 1"));
  EXPECT_THAT(r.output, HasSubstr("rangefs_client_"));
  std::vector<std::string> errors;
  auto all = mount::ReadStatusDir(status_dir_, &errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].mountpoint, mount_->mountpoint());
  EXPECT_EQ(all[0].pid, mount_->process().pid());
  EXPECT_EQ(all[0].cluster, "it");
  EXPECT_TRUE(all[0].watch_connected);
  EXPECT_GE(all[0].files, 7u);
}

TEST_F(FuseMountTest, PinnedSubtreeMountAndFusermountUnmount) {
  auto rev = cluster_->store()->CurrentRevision();
  ASSERT_THAT(rev, IsOk());
  ASSERT_THAT(testing::PutFile(ctx_, src_ + "/small", "/data/later"), IsOk());
  auto pinned = MountProcess::Start(
      cluster_->etcd()->endpoints(), cluster_->dir() + "/pinned",
      {"--dir=/data", absl::StrCat("--revision=", *rev), "--data_path=agent",
       "--status_dir="});
  ASSERT_THAT(pinned, IsOk());
  const std::string root = (*pinned)->mountpoint();
  ShResult ls = Sh("ls " + Q(root));
  EXPECT_THAT(ls.output, HasSubstr("big\nfio\nsmall\n"));
  EXPECT_THAT(ls.output, Not(HasSubstr("later")));
  EXPECT_TRUE(Exists(M("/data/later")));  // the live mount has it
  EXPECT_EQ(Sha256(root + "/big"), Sha256(src_ + "/big"));
  ShResult u = Sh("fusermount3 -u " + Q(root));
  EXPECT_EQ(u.code, 0) << u.output;
  EXPECT_THAT((*pinned)->WaitExit(), IsOk());
  ASSERT_THAT(cluster_->store()->DeleteFile("/data/later", 0), IsOk());
}

TEST_F(FuseMountTest, SigtermAndSigintUnmountCleanly) {
  for (int sig : {SIGTERM, SIGINT}) {
    auto m = MountProcess::Start(cluster_->etcd()->endpoints(),
                                 cluster_->dir() + "/sig",
                                 {"--data_path=agent", "--status_dir="});
    ASSERT_THAT(m, IsOk());
    // Busy: an open file and a read done.
    int fd = open((*m)->path("/data/small").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    char buf[64];
    EXPECT_EQ(read(fd, buf, sizeof(buf)), 14);
    EXPECT_THAT((*m)->StopWithSignal(sig), IsOk()) << sig;
    close(fd);
  }
}

TEST_F(FuseMountTest, MountHelperForMountAndUmount) {
  const std::string mp = cluster_->dir() + "/helper";
  mkdir(mp.c_str(), 0755);
  const std::string sdir = cluster_->dir() + "/helper-status";
  ShResult r = Sh(absl::StrCat(
      "RANGEFS_MOUNT=", Q(testing::RunfilePath("mount/rangefs-mount")), " ",
      Q(testing::RunfilePath("mount/mount.rangefs")), " ",
      Q(cluster_->etcd()->endpoints()), " ", Q(mp),
      " -o rw,_netdev,cluster=it,dir=/odd,data_path=agent,status_dir=", sdir,
      " -n"));
  ASSERT_EQ(r.code, 0) << r.output;
  // The helper returned after the daemon serves: no waiting needed.
  ASSERT_TRUE(testing::IsRangefsMounted(mp));
  auto st = mount::ReadStatusDir(sdir, nullptr);
  ASSERT_EQ(st.size(), 1u);
  const pid_t pid = static_cast<pid_t>(st[0].pid);
  EXPECT_EQ(Slurp(mp + "/with  spaces and 'quotes'"), "hello rangefs\n");
  ShResult u = Sh("umount " + Q(mp));
  EXPECT_EQ(u.code, 0) << u.output;
  // The daemon (not our child) exits on the unmount.
  const absl::Duration exited =
      TimeUntil([&] { return kill(pid, 0) != 0 && errno == ESRCH; });
  EXPECT_GE(exited, absl::ZeroDuration());
  if (exited < absl::ZeroDuration()) kill(pid, SIGKILL);
  EXPECT_FALSE(testing::IsRangefsMounted(mp));
  EXPECT_TRUE(mount::ReadStatusDir(sdir, nullptr).empty());
  // A bad option fails the mount and says why.
  ShResult bad = Sh(absl::StrCat(
      "RANGEFS_MOUNT=", Q(testing::RunfilePath("mount/rangefs-mount")), " ",
      Q(testing::RunfilePath("mount/mount.rangefs")), " 127.0.0.1:1 ", Q(mp),
      " -o cluster=it,etcd_timeout=200ms,status_dir="));
  EXPECT_NE(bad.code, 0);
  EXPECT_THAT(bad.output, HasSubstr("UNAVAILABLE"));
  EXPECT_FALSE(testing::IsRangefsMounted(mp));
}

TEST_F(FuseMountTest, DoctorChecksRangefsMounts) {
  const std::string sdir = cluster_->dir() + "/doctor-status";
  auto victim = MountProcess::Start(
      cluster_->etcd()->endpoints(), cluster_->dir() + "/doomed",
      {"--data_path=agent", "--status_dir=" + sdir});
  ASSERT_THAT(victim, IsOk());
  ASSERT_THAT((*victim)->process().Kill(), IsOk());  // no clean exit
  auto doctor = [&](const std::string& status_dir) {
    auto args =
        admin::Args::Parse({"doctor", "--etcd=" + cluster_->etcd()->endpoints(),
                            "--mount-root=" + cluster_->dir() + "/mroot",
                            "--fuse-status=" + status_dir});
    EXPECT_THAT(args.status(), IsOk());
    auto t = admin::RunDoctor(ctx_, *args);
    EXPECT_THAT(t.status(), IsOk());
    return t.ok() ? *t : admin::Table();
  };
  auto row = [](const admin::Table& t, const std::string& check) {
    for (const auto& r : t.rows) {
      if (r[0] == check) return r;
    }
    return std::vector<std::string>{check, "missing", "", ""};
  };
  admin::Table t = doctor(status_dir_);
  auto ok = row(t, "fuse " + mount_->mountpoint());
  EXPECT_EQ(ok[1], "OK") << ok[2];
  EXPECT_THAT(ok[2], HasSubstr("it:/"));
  EXPECT_THAT(ok[2], HasSubstr("readahead 16384 KiB"));
  // The killed daemon's mount is still there (ENOTCONN): FAIL with the fix.
  auto dead = row(t, "fuse " + (*victim)->mountpoint());
  EXPECT_EQ(dead[1], "WARN") << dead[2];  // its status is in another dir
  t = doctor(sdir);
  dead = row(t, "fuse " + (*victim)->mountpoint());
  EXPECT_EQ(dead[1], "FAIL") << dead[2];
  EXPECT_THAT(dead[2], HasSubstr("is gone"));
  EXPECT_THAT(dead[3], HasSubstr("fusermount3 -u -z"));
}

}  // namespace
}  // namespace rangefs
