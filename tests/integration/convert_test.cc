// Storage-policy conversions (issue 36) by the real rangefs-keeper against a
// real etcd and ten real rangefs-node processes: a directory of 2-replica
// files is converted to RS(6,3) under a policy while a library reader reads
// every file (fresh opens and handles opened before, byte-exact, 0
// errors), and so do a FUSE reader (a real rangefs-mount, descriptors
// opened before and fresh opens) and a Python reader (the rangefs package
// in a subprocess); the bytes in the agents' export directories go from 2x the
// logical bytes to <= 1.55x once the grace period ends; then back to 2
// replicas, the same checks. A file below --min-size and one younger than
// --min-age keep their layout. A keeper killed at each step of a
// conversion (--test_exit_at_convert_step) is replaced by one that
// finishes it: fsck clean, nothing lost, no orphan after the grace period.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "admin/commands.h"
#include "admin/data_commands.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/layout.h"
#include "namespace/layout_goal.h"
#include "namespace/storage_policy.h"
#include "tests/integration/mount_harness.h"
#include "tests/testing/agent_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kUnit = 1 << 20;  // stripe unit = checksum block = cell
constexpr uint64_t kRow = 6 * kUnit;
constexpr int kAgents = 10;
constexpr absl::Duration kWait = absl::Seconds(120);

std::string Random(uint64_t size, unsigned seed) {
  std::string s(size, '\0');
  std::mt19937_64 gen(seed);
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

bool Poll(const std::function<bool()>& done, absl::Duration within) {
  const absl::Time deadline = absl::Now() + within;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(100));  // polling, bounded
  }
  return true;
}

// Every regular file below `dir` (relative path -> bytes).
void Walk(const std::string& dir, const std::string& rel,
          std::map<std::string, uint64_t>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string full = dir + "/" + name;
    const std::string r = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (lstat(full.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      Walk(full, r, out);
    } else if (S_ISREG(st.st_mode)) {
      (*out)[r] = static_cast<uint64_t>(st.st_size);
    }
  }
  closedir(d);
}

class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = testing::AgentCluster::Start("convert_test");
    ASSERT_THAT(c, IsOk());
    cluster_ = *std::move(c);
    ASSERT_THAT(cluster_->AddLiveAgents(kAgents, kWait), IsOk());
    ctx_.store = cluster_->store();
    ctx_.cluster = "it";
  }
  void TearDown() override {
    StopReader();
    fuse_reader_stop_.store(true);
    if (fuse_reader_.joinable()) fuse_reader_.join();
    for (const auto& [path, fd] : fuse_fds_) close(fd);
    python_.reset();
    mount_.reset();
    if (HasFailure() && keeper_ != nullptr) {
      std::cerr << "--- keeper log tail:\n" << keeper_->LogTail(16384) << "\n";
    }
    keeper_.reset();
    cluster_.reset();
  }

  absl::StatusOr<admin::Table> Run(std::vector<std::string> argv) {
    auto args = admin::Args::Parse(argv);
    if (!args.ok()) return args.status();
    return admin::RunCommand(ctx_, *args);
  }

  // Puts `size` random bytes as `path` with 2 replicas over `width`
  // columns of 1 MiB (width 0: the put's default shape).
  void Put(const std::string& path, uint64_t size, int width) {
    const std::string data = Random(size, static_cast<unsigned>(files_.size()));
    const std::string local =
        absl::StrCat(cluster_->dir(), "/local", std::hash<std::string>()(path));
    std::ofstream(local, std::ios::binary) << data;
    std::vector<std::string> argv = {"file", "put", local, path,
                                     "--replicas=2"};
    if (width > 0) argv.push_back(absl::StrCat("--width=", width));
    ASSERT_THAT(Run(argv), IsOk());
    files_[path] = data;
    locals_[path] = local;
  }

  void SetPolicy(const std::string& dir, const std::string& goal,
                 uint64_t min_size = 0,
                 absl::Duration min_age = absl::ZeroDuration()) {
    ns::StoragePolicy p;
    p.dir = dir;
    auto g = ns::ParseLayoutGoal(goal);
    ASSERT_THAT(g, IsOk());
    p.goal = *g;
    p.min_size = min_size;
    p.min_age = min_age;
    p.set_time = absl::Now();
    ASSERT_THAT(
        ns::PutPolicy(*cluster_->store()->kv(), cluster_->store()->keys(), p),
        IsOk());
  }

  void StartKeeper(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        testing::RunfilePath("keeper/rangefs-keeper"),
        "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
        "--cluster=it",
        "--id=k1",
        "--lease_ttl_s=2",
        "--interval_s=0.2",
        "--dead_after_s=30",
        "--delete_grace_s=1",
        "--orphan_scan_interval_s=0.5",
        "--rebalance_tolerance=0",
        "--etcd_timeout_s=2"};
    // A flag in `extra` replaces the default above.
    for (std::string& f : extra) {
      const std::string name = f.substr(0, f.find('=') + 1);
      argv.erase(std::remove_if(argv.begin() + 1, argv.end(),
                                [&](const std::string& d) {
                                  return absl::StartsWith(d, name);
                                }),
                 argv.end());
      argv.push_back(std::move(f));
    }
    auto p = testing::Subprocess::Start(
        {.argv = argv,
         .log_path = absl::StrCat(cluster_->dir(), "/keeper",
                                  ++keepers_started_, ".log")});
    ASSERT_THAT(p, IsOk());
    keeper_ = *std::move(p);
  }

  v1::FileLayout Layout(const std::string& path) {
    auto f = cluster_->store()->GetFile(path);
    return f.ok() ? f->layout : v1::FileLayout();
  }
  bool Meets(const std::string& path, const std::string& goal) {
    return ns::LayoutMeetsGoal(Layout(path), *ns::ParseLayoutGoal(goal));
  }

  // Bytes in every export directory (objects, sidecars, .cells), and the
  // (node, object) pairs there that no layout references (sidecars are
  // their object's; .cells objects their parity column's).
  // Compacts etcd to now (production compacts hourly): the trash goes only
  // once no retained revision references it.
  void Compact() {
    auto rev = cluster_->store()->CurrentRevision();
    if (rev.ok()) (void)cluster_->etcd_client()->Compact(*rev);
  }

  uint64_t RawBytes(std::vector<std::string>* unreferenced = nullptr) {
    std::set<std::pair<std::string, std::string>> referenced;
    auto files = cluster_->store()->ListFiles({});
    for (const ns::FileEntry& f : files->files) {
      const v1::FileLayout& l = f.layout;
      for (const auto& e : l.extents()) {
        for (const auto& r : e.replicas()) {
          referenced.emplace(r.node_id(), r.object());
        }
      }
      for (int t = 0; t < l.striped().targets_size(); ++t) {
        for (const auto& r : l.striped().targets(t).replicas()) {
          referenced.emplace(r.node_id(), r.object());
          referenced.emplace(r.node_id(), ns::EcCellsObject(r.object()));
        }
      }
    }
    uint64_t total = 0;
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      const auto& a = cluster_->agent(i);
      std::map<std::string, uint64_t> objects;
      Walk(a.export_dir, "", &objects);
      for (const auto& [rel, bytes] : objects) {
        total += bytes;
        const std::string base = rel.substr(rel.rfind('/') + 1);
        if (absl::EndsWith(rel, ".rangefs-crc") ||
            absl::StartsWith(base, ".")) {
          continue;  // a sidecar, or an agent's own file
        }
        if (unreferenced != nullptr && referenced.count({a.id, rel}) == 0) {
          unreferenced->push_back(absl::StrCat(a.id, ":", rel));
        }
      }
    }
    return total;
  }
  uint64_t LogicalBytes() {
    uint64_t n = 0;
    for (const auto& [p, d] : files_) n += d.size();
    return n;
  }

  std::unique_ptr<Client> OpenClient() {
    ClientOptions o;
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.data_path = DataPath::kAgent;
    o.default_deadline = absl::Seconds(20);
    auto c = Client::Open(o);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  // A reader: in a loop, every file through a handle opened before the
  // conversions and through a fresh open, compared with what was put.
  void StartReader() {
    client_ = OpenClient();
    ASSERT_NE(client_, nullptr);
    for (const auto& [path, data] : files_) {
      auto f = client_->OpenFile(path);
      ASSERT_THAT(f, IsOk());
      handles_[path] = *std::move(f);
    }
    reader_ = std::thread([this] {
      while (!stop_.load()) {
        for (const auto& [path, data] : files_) {
          Check(path, *handles_[path], data);
          auto f = client_->OpenFile(path);
          if (!f.ok()) {
            Error(absl::StrCat("open ", path, ": ", f.status().ToString()));
            continue;
          }
          Check(path, **f, data);
        }
        scans_.fetch_add(1);
      }
    });
  }
  void Check(const std::string& path, File& f, const std::string& data) {
    std::string out(data.size(), '\0');
    auto r = f.Read(0, absl::MakeSpan(out));
    if (!r.ok()) {
      Error(absl::StrCat("read ", path, ": ", r.status().ToString()));
    } else if (*r != data.size() || out != data) {
      Error(absl::StrCat("read ", path, ": not the bytes put"));
    }
  }
  void Error(const std::string& e) {
    std::lock_guard<std::mutex> l(mu_);
    if (errors_.size() < 10) errors_.push_back(e);
    error_count_.fetch_add(1);
  }
  void StopReader() {
    stop_.store(true);
    if (reader_.joinable()) reader_.join();
  }
  // Waits until the library reader (and the FUSE and Python readers,
  // where started) finished `n` more whole scans each.
  void WaitScans(int n) {
    const int64_t s0 = scans_.load();
    const int64_t f0 = fuse_scans_.load();
    const int64_t p0 = python_ != nullptr ? PythonScans() : 0;
    EXPECT_TRUE(Poll(
        [&] {
          return scans_.load() >= s0 + n &&
                 (mount_ == nullptr || fuse_scans_.load() >= f0 + n) &&
                 (python_ == nullptr || PythonScans() >= p0 + n);
        },
        kWait))
        << "scans: library " << scans_.load() - s0 << ", fuse "
        << fuse_scans_.load() - f0 << ", python "
        << (python_ != nullptr ? PythonScans() - p0 : 0);
  }

  // A FUSE reader: a real rangefs-mount (agent path, direct_io, so reads
  // reach the daemon rather than the page cache) reading, in a loop, every
  // file, compared with what was put: on even scans through descriptors
  // opened before the conversions, on odd ones through fresh opens (half
  // the bytes of both each scan: the test's run time on 2 cores).
  void StartFuseReader() {
    auto m = testing::MountProcess::Start(
        cluster_->etcd()->endpoints(), cluster_->dir() + "/mnt",
        {"--data_path=agent", "--direct_io=true", "--attr_timeout=0",
         "--entry_timeout=0"});
    ASSERT_THAT(m, IsOk());
    mount_ = *std::move(m);
    for (const auto& [path, data] : files_) {
      const int fd = open(mount_->path(path).c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
      fuse_fds_[path] = fd;
    }
    fuse_reader_ = std::thread([this] {
      while (!fuse_reader_stop_.load()) {
        const bool old = fuse_scans_.load() % 2 == 0;
        for (const auto& [path, data] : files_) {
          if (old) {
            FuseCheck(path, "old fd", fuse_fds_[path], data);
            continue;
          }
          const int fd = open(mount_->path(path).c_str(), O_RDONLY);
          if (fd < 0) {
            Error(absl::StrCat("fuse open ", path, ": ", strerror(errno)));
            continue;
          }
          FuseCheck(path, "fresh fd", fd, data);
          close(fd);
        }
        fuse_scans_.fetch_add(1);
      }
    });
  }
  void FuseCheck(const std::string& path, const char* how, int fd,
                 const std::string& data) {
    std::string out(data.size() + 1, '\0');  // +1: sees a too-long file
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = pread(fd, &out[got], out.size() - got, got);
      if (n < 0) {
        Error(absl::StrCat("fuse read (", how, ") ", path, " at ", got, ": ",
                           strerror(errno)));
        return;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
    if (out != data) {
      Error(absl::StrCat("fuse read (", how, ") ", path, ": ", got,
                         " bytes, not the bytes put"));
    }
  }

  // A Python reader: tests/integration/convert_reader.py with the rangefs
  // package (//python:package) on its path, in a subprocess.
  void StartPythonReader() {
    std::vector<std::string> argv = {"/usr/bin/python3",
                                     testing::RunfilePath("tests/integration/"
                                                          "convert_reader.py"),
                                     cluster_->etcd()->endpoints(), "it",
                                     PythonStopFile()};
    for (const auto& [path, local] : locals_) {
      argv.push_back(absl::StrCat(path, "=", local));
    }
    auto p = testing::Subprocess::Start(
        {.argv = argv,
         .env = {"PYTHONPATH=" + testing::RunfilePath("python"),
                 "PYTHONDONTWRITEBYTECODE=1"},
         .log_path = cluster_->dir() + "/python_reader.log"});
    ASSERT_THAT(p, IsOk());
    python_ = *std::move(p);
    ASSERT_THAT(python_->WaitForLog("ready", kWait), IsOk())
        << python_->LogTail();
  }
  std::string PythonStopFile() { return cluster_->dir() + "/python_stop"; }
  // The Python reader's whole scans so far (its last "scan N" line).
  int64_t PythonScans() {
    const std::string log = python_->Log();
    const size_t at = log.rfind("\nscan ");
    if (at == std::string::npos) return 0;
    const size_t end = log.find('\n', at + 1);
    int64_t n = 0;
    if (!absl::SimpleAtoi(log.substr(at + 6, end - at - 6), &n)) return 0;
    return n;
  }
  // Stops the Python reader; expects a clean exit (no error seen).
  void StopPythonReader() {
    std::ofstream(PythonStopFile()) << "stop";
    auto status = python_->Wait(kWait);
    ASSERT_THAT(status, IsOk());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "python reader: wait status " << *status << "\n"
        << python_->LogTail(8192);
    EXPECT_THAT(python_->Log(), HasSubstr(" errors=0"));
  }

  std::pair<absl::Status, std::string> Fsck(const std::string& dir) {
    auto r = Run({"fsck", dir, "--checksums"});
    if (!r.ok()) return {r.status(), std::string(r.status().message())};
    return {absl::OkStatus(), admin::FormatHuman(*r)};
  }

  std::unique_ptr<testing::AgentCluster> cluster_;
  admin::Context ctx_;
  std::unique_ptr<testing::Subprocess> keeper_;
  int keepers_started_ = 0;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> locals_;  // rangefs path -> local copy
  std::unique_ptr<testing::MountProcess> mount_;
  std::map<std::string, int> fuse_fds_;
  std::thread fuse_reader_;
  std::atomic<bool> fuse_reader_stop_{false};
  std::atomic<int64_t> fuse_scans_{0};
  std::unique_ptr<testing::Subprocess> python_;
  std::unique_ptr<Client> client_;
  std::map<std::string, std::unique_ptr<File>> handles_;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> scans_{0}, error_count_{0};
  std::mutex mu_;
  std::vector<std::string> errors_;
};

TEST_F(ConvertTest, DirectoryGoesToEcAndBackUnderReadsWithRawBytesChecked) {
  // Width 6, 1 MiB units = cells: converted parity only. Width 4: copied
  // into the RS(6,3) shape. Sizes just under whole rows (raw bytes of a
  // partial last row's parity would blur the ratio).
  for (int i = 0; i < 3; ++i) {
    Put(absl::StrCat("/sealed/f", i), 3 * kRow - 1000 * (i + 1), 6);
  }
  Put("/sealed/w4", 2 * kRow - 777, 4);
  Put("/sealed/small", 200 << 10, 0);  // below --min-size: stays replicated
  Put("/young/f", 2 * kRow - 5, 6);    // younger than --min-age
  const uint64_t logical = LogicalBytes();
  const uint64_t raw0 = RawBytes();
  EXPECT_GE(raw0, 2 * logical);
  EXPECT_LE(raw0, 2 * logical + logical / 100);  // sidecars
  SetPolicy("/sealed", "ec=6+3", /*min_size=*/1 << 20);
  SetPolicy("/young", "ec=6+3", 0, absl::Hours(1));
  StartReader();
  StartFuseReader();
  StartPythonReader();
  WaitScans(1);
  StartKeeper({"--convert_bytes_per_sec=0"});
  for (const char* p :
       {"/sealed/f0", "/sealed/f1", "/sealed/f2", "/sealed/w4"}) {
    ASSERT_TRUE(Poll([&] { return Meets(p, "ec=6+3"); }, kWait))
        << p << "\n"
        << keeper_->LogTail(8192);
  }
  EXPECT_THAT(keeper_->Log(),
              HasSubstr("ec-in-place conversion of /sealed/f0"));
  EXPECT_THAT(keeper_->Log(), HasSubstr("ec-rewrite conversion of /sealed/w4"));
  // The parity-only path kept the replica objects as data columns.
  EXPECT_TRUE(absl::StartsWith(
      ns::DataReplica(Layout("/sealed/f0"), 0).object(), "f/"));
  EXPECT_TRUE(Meets("/sealed/small", "replicas=2"));
  EXPECT_TRUE(Meets("/young/f", "replicas=2"));
  // Once the grace period is over, the trash is deleted.
  const uint64_t young_small =
      2 * (files_["/young/f"].size() + files_["/sealed/small"].size());
  const uint64_t sealed = logical - young_small / 2;
  uint64_t raw1 = 0;
  EXPECT_TRUE(Poll(
      [&] {
        Compact();
        raw1 = RawBytes();
        return raw1 - young_small <= sealed * 155 / 100;
      },
      kWait))
      << "raw " << raw1 << " of " << sealed << " logical bytes (+ "
      << young_small << " replicated)";
  WaitScans(2);
  {
    auto [s, text] = Fsck("/sealed");
    EXPECT_THAT(s, IsOk()) << text;
  }
  std::vector<std::string> orphans;
  auto no_orphans = [&] {
    Compact();
    orphans.clear();
    RawBytes(&orphans);
    return orphans.empty();
  };
  EXPECT_TRUE(Poll(no_orphans, kWait)) << absl::StrJoin(orphans, ", ");

  // Back to two replicas.
  SetPolicy("/sealed", "replicas=2", 1 << 20);
  for (const char* p :
       {"/sealed/f0", "/sealed/f1", "/sealed/f2", "/sealed/w4"}) {
    ASSERT_TRUE(Poll([&] { return Meets(p, "replicas=2"); }, kWait))
        << p << "\n"
        << keeper_->LogTail(8192);
  }
  EXPECT_THAT(keeper_->Log(),
              HasSubstr("ec-to-replicas conversion of /sealed/f0"));
  uint64_t raw2 = 0;
  EXPECT_TRUE(Poll(
      [&] {
        Compact();
        raw2 = RawBytes();
        return raw2 <= 2 * logical + logical / 100;
      },
      kWait))
      << "raw " << raw2 << " of " << logical << " logical bytes";
  EXPECT_GE(raw2, 2 * logical);
  WaitScans(2);
  StopReader();
  fuse_reader_stop_.store(true);
  fuse_reader_.join();
  StopPythonReader();
  EXPECT_EQ(error_count_.load(), 0) << absl::StrJoin(errors_, "\n");
  EXPECT_GT(scans_.load(), 4);
  EXPECT_GT(fuse_scans_.load(), 4);
  EXPECT_GT(PythonScans(), 4);
  RecordProperty("library_scans", absl::StrCat(scans_.load()));
  RecordProperty("fuse_scans", absl::StrCat(fuse_scans_.load()));
  RecordProperty("python_scans", absl::StrCat(PythonScans()));
  {
    auto [s, text] = Fsck("/");
    EXPECT_THAT(s, IsOk()) << text;
  }
  EXPECT_TRUE(Poll(no_orphans, kWait)) << absl::StrJoin(orphans, ", ");
  RecordProperty("raw_x_before",
                 absl::StrCat(static_cast<double>(raw0) / logical));
  RecordProperty(
      "raw_x_ec_sealed",
      absl::StrCat(static_cast<double>(raw1 - young_small) / sealed));
  RecordProperty("raw_x_back",
                 absl::StrCat(static_cast<double>(raw2) / logical));
}

// The keeper exits (as if killed) at step N of its first conversion; the
// next keeper finishes: the goal met, the bytes intact, fsck clean, and
// after the grace period no object outside the layouts.
TEST_F(ConvertTest, AKeeperKilledAtEachStepIsFinishedByTheNext) {
  for (int step = 1; step <= 4; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    const std::string dir = absl::StrCat("/crash", step);
    const std::string path = dir + "/f";
    const std::string back = dir + "/g";
    Put(path, 2 * kRow - 3, 6);   // replicas -> EC
    Put(back, 2 * kRow - 11, 6);  // EC, then back to replicas
    SetPolicy(back, "ec=6+3");    // a policy on the file itself
    StartKeeper();
    ASSERT_TRUE(Poll([&] { return Meets(back, "ec=6+3"); }, kWait))
        << keeper_->LogTail(8192);
    keeper_.reset();
    // EC -> replicas, killed at step N.
    SetPolicy(back, "replicas=2");
    StartKeeper({absl::StrCat("--test_exit_at_convert_step=", step)});
    ASSERT_THAT(keeper_->Wait(kWait), IsOk()) << keeper_->LogTail(8192);
    EXPECT_THAT(keeper_->Log(), HasSubstr("--test_exit_at_convert_step"));
    // Replicas -> EC in place, killed at step N (or the first conversion
    // again, if the one above is not done yet).
    SetPolicy(path, "ec=6+3");
    StartKeeper({absl::StrCat("--test_exit_at_convert_step=", step)});
    ASSERT_THAT(keeper_->Wait(kWait), IsOk()) << keeper_->LogTail(8192);
    EXPECT_THAT(keeper_->Log(), HasSubstr("--test_exit_at_convert_step"));
    StartKeeper();
    ASSERT_TRUE(Poll([&] { return Meets(path, "ec=6+3"); }, kWait))
        << keeper_->LogTail(8192);
    ASSERT_TRUE(Poll([&] { return Meets(back, "replicas=2"); }, kWait))
        << keeper_->LogTail(8192);
    // Orphans (written, never swapped in) and trash go after the grace.
    std::vector<std::string> orphans;
    EXPECT_TRUE(Poll(
        [&] {
          Compact();
          orphans.clear();
          RawBytes(&orphans);
          return orphans.empty();
        },
        kWait))
        << absl::StrJoin(orphans, ", ");
    auto c = OpenClient();
    ASSERT_NE(c, nullptr);
    for (const std::string& p : {path, back}) {
      auto f = c->OpenFile(p);
      ASSERT_THAT(f, IsOk());
      std::string out(files_[p].size(), '\0');
      auto r = (*f)->Read(0, absl::MakeSpan(out));
      ASSERT_THAT(r, IsOk());
      EXPECT_TRUE(out == files_[p]) << p;
    }
    auto [s, text] = Fsck(dir);
    EXPECT_THAT(s, IsOk()) << text;
    keeper_.reset();
  }
}

// The status record, `rangefs-admin status` and the metrics file show the
// backlog per policy (files, bytes, bytes to free) and an ETA as soon as the
// round is planned: the keeper here exits (as if killed) at the first step
// of its first conversion, so what it published is what an operator saw
// while that conversion ran. Before, the first record came after the first
// conversion ended.
TEST_F(ConvertTest, StatusShowsTheBacklogWhileTheFirstConversionRuns) {
  Put("/st/a", 2 * kRow - 3, 6);
  Put("/st/b", 2 * kRow - 7, 6);
  SetPolicy("/st", "ec=6+3");
  const std::string metrics = cluster_->dir() + "/keeper.prom";
  // A lease that outlives the check: the records are under it.
  StartKeeper({"--test_exit_at_convert_step=1", "--parallel_conversions=1",
               "--lease_ttl_s=60", "--convert_bytes_per_sec=4194304",
               "--metrics_file=" + metrics});
  ASSERT_THAT(keeper_->Wait(kWait), IsOk()) << keeper_->LogTail(8192);
  ASSERT_THAT(keeper_->Log(), HasSubstr("--test_exit_at_convert_step"));
  EXPECT_TRUE(Meets("/st/a", "replicas=2") && Meets("/st/b", "replicas=2"));

  auto range = cluster_->store()->kv()->Range(
      cluster_->store()->keys().KeeperStatus(), "", 0, 0);
  ASSERT_THAT(range, IsOk());
  ASSERT_EQ(range->kvs.size(), 1u) << "no status record published";
  v1::KeeperStatus st;
  ASSERT_TRUE(st.ParseFromString(range->kvs[0].value));
  EXPECT_TRUE(st.in_round());
  EXPECT_EQ(st.conversions_done(), 0);
  ASSERT_EQ(st.conversions_size(), 1) << st.ShortDebugString();
  const v1::KeeperStatus::PolicyConversions& c = st.conversions(0);
  EXPECT_EQ(c.policy(), "/st");
  EXPECT_EQ(c.files(), 2);
  EXPECT_EQ(c.bytes(), files_["/st/a"].size() + files_["/st/b"].size());
  EXPECT_GT(c.bytes_saved(), 0);  // 2 replicas -> RS(6,3)
  EXPECT_EQ(c.stuck(), 0);
  // ~12 MiB of parity at 4 MiB/s, one file at a time.
  EXPECT_GT(st.convert_eta_s(), 1);
  EXPECT_LT(st.convert_eta_s(), 10);

  auto status = Run({"status"});
  ASSERT_THAT(status, IsOk());
  EXPECT_THAT(status->message, HasSubstr("policy /st: 2 file(s) ("));
  EXPECT_THAT(status->message, HasSubstr(") to convert, "));
  EXPECT_THAT(status->message, HasSubstr("conversions ETA "));

  std::ifstream in(metrics);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  EXPECT_THAT(text,
              HasSubstr("rangefs_keeper_convert_pending_files{policy=\"/st\"} "
                        "2\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "rangefs_keeper_convert_pending_bytes{policy=\"/st\"} ",
                        c.bytes(), "\n")));
  EXPECT_THAT(text, HasSubstr("rangefs_keeper_convert_pending_saved_bytes{"
                              "policy=\"/st\"} "));
  EXPECT_THAT(text, HasSubstr("rangefs_keeper_convert_eta_seconds "));
  EXPECT_THAT(text, Not(HasSubstr("rangefs_keeper_convert_eta_seconds -1")));
}

// rangefs-keeper --dry_run lists what a round would do: the rebuild of an
// erasure-coded column whose node is dead (as rangefs-admin repair
// --dry-run lists it: the same words) and a conversion to a policy.
TEST_F(ConvertTest, KeeperDryRunListsEcRebuildsAndConversions) {
  const std::string data = Random(3 * kRow + 17, 99);
  const std::string local = cluster_->dir() + "/ec_local";
  std::ofstream(local, std::ios::binary) << data;
  ASSERT_THAT(Run({"file", "put", local, "/ecd/f", "--ec=6+3",
                   "--stripe-unit=64K", "--ec-min-rows=0"}),
              IsOk());
  Put("/conv/f", kRow - 5, 1);  // two replicas on two nodes
  SetPolicy("/conv", "ec=6+3");
  // A column of /ecd/f on a node without a replica of /conv/f dies.
  // (--width=1: a striped layout of one column; extents too, in case.)
  std::set<std::string> conv_nodes;
  const v1::FileLayout conv = Layout("/conv/f");
  for (const auto& e : conv.extents()) {
    for (const auto& r : e.replicas()) conv_nodes.insert(r.node_id());
  }
  for (const auto& t : conv.striped().targets()) {
    for (const auto& r : t.replicas()) conv_nodes.insert(r.node_id());
  }
  ASSERT_EQ(conv_nodes.size(), 2u) << conv.DebugString();
  const v1::FileLayout ec = Layout("/ecd/f");
  int column = -1;
  std::string node;
  for (int t = 0; t < ec.striped().targets_size() && column < 0; ++t) {
    node = ec.striped().targets(t).replicas(0).node_id();
    if (conv_nodes.count(node) == 0) column = t;
  }
  ASSERT_GE(column, 0);
  for (size_t i = 0; i < cluster_->agents(); ++i) {
    if (cluster_->agent(i).id == node) {
      ASSERT_THAT(cluster_->agent(i).process->Kill(), IsOk());
    }
  }
  ASSERT_TRUE(cluster_->WaitLive(
      node, [](bool found, const ns::LiveEntry&) { return !found; }, kWait));

  auto p = testing::Subprocess::Start(
      {.argv = {testing::RunfilePath("keeper/rangefs-keeper"),
                "--etcd_endpoints=" + cluster_->etcd()->endpoints(),
                "--cluster=it", "--dry_run"},
       .log_path = cluster_->dir() + "/keeper_dry_run.log"});
  ASSERT_THAT(p, IsOk());
  auto exit = (*p)->Wait(kWait);
  ASSERT_THAT(exit, IsOk());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) << (*p)->Log();
  const std::string out = (*p)->Log();

  auto admin = Run({"repair", "--dry-run"});
  ASSERT_THAT(admin, IsOk());
  std::vector<std::string> rebuild;
  bool admin_converts = false;
  for (const auto& row : admin->rows) {
    if (row[0] == "rebuild" && row[1] == "/ecd/f") rebuild = row;
    if (row[0] == "convert" && row[1] == "/conv/f") admin_converts = true;
  }
  ASSERT_EQ(rebuild.size(), 8u) << admin::FormatHuman(*admin);
  EXPECT_TRUE(admin_converts) << admin::FormatHuman(*admin);
  EXPECT_EQ(rebuild[2], absl::StrCat(column));
  EXPECT_EQ(rebuild[4], node);
  // The keeper's line: the same column and words (each run picks its own
  // target among the equals).
  EXPECT_THAT(out, HasSubstr(absl::StrCat("rebuild /ecd/f column ", column, " ",
                                          rebuild[3], ": ", node, " -> ")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("(reads dead: 6 of 8 columns, by ")));
  EXPECT_THAT(rebuild[6], HasSubstr("dead: 6 of 8 columns, by "));
  EXPECT_THAT(out, HasSubstr("1 erasure-coded column rebuild(s)"));
  EXPECT_THAT(out, HasSubstr("convert /conv/f: ec-rewrite -> ec=6+3"));
}

}  // namespace
}  // namespace rangefs
