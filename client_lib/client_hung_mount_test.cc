// A hung mount seen from cold client processes (issue 21): a real etcd,
// three real rangefs-node agents, their export directories as the nodes'
// mounts, except node n1's: a FUSE passthrough of its export
// (client_lib/testing/blocking_fuse) whose reads hang while a control file
// exists, like a hard NFS mount whose server stopped answering (killable,
// nothing else). Files are striped over the three nodes, two replicas per
// column.
//
// Each case runs a fresh rangefs-bench (a new process: no latency known)
// that scans every file once and compares every byte with the source, and
// checks: 0 errors, every byte read and equal, and the process gone within
// 2 s of its last read while the mount is still hung (its Client's
// teardown leaves the threads blocked there; the kernel ends their reads
// when the process dies). The re-admission of a released mount is checked
// in-process, where the client's node table can be watched.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using testing::EtcdCluster;
using testing::RunfilePath;
using testing::Subprocess;

constexpr int kNodes = 3;
constexpr int kFiles = 4;
constexpr uint64_t kUnit = 256 << 10;
constexpr uint64_t kFileSize = 3 * kUnit * 4 + 4321;
constexpr int kHung = 1;  // node n1's mount is the FUSE layer
// The bound: the process is gone this soon after its last read.
constexpr absl::Duration kExitBound = absl::Seconds(2);

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The number after `"key": ` in `json`, from `from` on; -1 if absent.
int64_t JsonInt(const std::string& json, const std::string& key,
                size_t from = 0) {
  const std::string needle = absl::StrCat("\"", key, "\": ");
  const size_t at = json.find(needle, from);
  if (at == std::string::npos) return -1;
  const size_t start = at + needle.size();
  const size_t end = json.find_first_of(",}", start);
  double v = -1;
  if (!absl::SimpleAtod(json.substr(start, end - start), &v)) return -1;
  return static_cast<int64_t>(v);
}

// The cluster, shared by the cases of the suite.
struct Env {
  std::string dir;
  std::unique_ptr<EtcdCluster> etcd;
  std::unique_ptr<etcd::EtcdClient> etcd_client;
  std::unique_ptr<ns::KvBackend> kv;
  std::unique_ptr<ns::NamespaceStore> store;
  std::vector<std::unique_ptr<Subprocess>> agents;
  std::vector<std::unique_ptr<node::NodeClient>> agent_clients;
  std::vector<std::string> data;
  std::string fuse_mount, control;
  std::unique_ptr<Subprocess> fuse;

  ~Env() {
    if (!control.empty()) unlink(control.c_str());  // release any reader
    if (fuse != nullptr) {
      const std::string cmd = "fusermount3 -u -z " + fuse_mount;
      if (system(cmd.c_str()) != 0)
        fprintf(stderr, "failed: %s\n", cmd.c_str());
      fuse.reset();
    }
    agent_clients.clear();
    agents.clear();
    store.reset();
    kv.reset();
    etcd_client.reset();
    etcd.reset();
    if (!dir.empty()) testing::RemoveTree(dir);
  }

  std::string Export(int i) const { return absl::StrCat(dir, "/export", i); }

  absl::Status StartAgent(int i) {
    const std::string id = absl::StrCat("n", i);
    if (mkdir(Export(i).c_str(), 0755) != 0) {
      return absl::InternalError("mkdir " + Export(i));
    }
    RANGEFS_ASSIGN_OR_RETURN(
        std::unique_ptr<Subprocess> p,
        Subprocess::Start(
            {.argv = {RunfilePath("storage_node/rangefs-node"),
                      "--node_id=" + id, "--export_root=" + Export(i),
                      "--listen=127.0.0.1:0", "--chunk_size=262144"},
             .log_path = absl::StrCat(dir, "/", id, ".log")}));
    const std::string marker = "serving on 127.0.0.1:";
    RANGEFS_RETURN_IF_ERROR(p->WaitForLog(marker, absl::Seconds(20)));
    const std::string log = p->Log();
    const size_t at = log.find(marker) + marker.size();
    int port = 0;
    if (!absl::SimpleAtoi(log.substr(at, log.find('\n', at) - at), &port)) {
      return absl::InternalError("no port in " + log);
    }
    const std::string address = absl::StrCat("127.0.0.1:", port);
    agents.push_back(std::move(p));
    RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<node::NodeClient> nc,
                             node::NodeClient::Connect(address));
    agent_clients.push_back(std::move(nc));
    v1::NodeRecord r;
    r.set_id(id);
    r.add_addresses(address);
    r.set_export_path(Export(i));
    r.set_mount_path(Export(i));  // n1's is set to the FUSE layer later
    RANGEFS_RETURN_IF_ERROR(store->AddNode(r));
    v1::LiveRecord live;  // rangefs-node runs without etcd here
    live.set_node_id(id);
    live.set_health(v1::LiveRecord::HEALTHY);
    live.add_addresses(address);
    return store->PutLive(live, 0);
  }

  absl::Status WriteObject(int node, const std::string& object,
                           const std::string& bytes) {
    size_t pos = 0;
    return agent_clients[node]
        ->WriteObject(
            object,
            [&](absl::Span<char> buf) -> absl::StatusOr<size_t> {
              size_t n = std::min(buf.size(), bytes.size() - pos);
              memcpy(buf.data(), bytes.data() + pos, n);
              pos += n;
              return n;
            },
            {.deadline = absl::Now() + absl::Seconds(20), .block_size = 65536})
        .status();
  }

  // Striped over the nodes; column t has replicas on nodes t and t+1. The
  // source bytes also go to <dir>/data<path> (rangefs-bench compares).
  absl::Status CreateFile(const std::string& path, const std::string& bytes) {
    v1::FileLayout l;
    l.set_size(bytes.size());
    l.set_state(v1::READY);
    l.set_checksum(v1::CRC32C_SIDECAR);
    l.set_checksum_block_size(65536);
    auto* s = l.mutable_striped();
    s->set_stripe_unit(kUnit);
    const uint64_t units = (bytes.size() + kUnit - 1) / kUnit;
    for (int t = 0; t < kNodes; ++t) {
      std::string column;
      for (uint64_t k = t; k < units; k += kNodes) {
        column += bytes.substr(k * kUnit, kUnit);
      }
      auto* target = s->add_targets();
      for (int n : {t, (t + 1) % kNodes}) {
        const std::string obj = absl::StrCat("objs", path, "-c", t);
        RANGEFS_RETURN_IF_ERROR(WriteObject(n, obj, column));
        auto* r = target->add_replicas();
        r->set_node_id(absl::StrCat("n", n));
        r->set_object(obj);
      }
    }
    std::ofstream out(dir + "/data" + path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.good()) return absl::InternalError("write data" + path);
    return store->CreateFile(path, l).status();
  }

  // n1's mount becomes the FUSE layer over its export, mounted at
  // `name`, with blocking_fuse's own `options` (e.g. --max_background=1).
  absl::Status MountFuse(const std::string& name = "fuse1",
                         const std::string& options = "") {
    fuse_mount = dir + "/" + name;
    control = dir + "/block1";
    if (mkdir(fuse_mount.c_str(), 0755) != 0) {
      return absl::InternalError("mkdir " + fuse_mount);
    }
    std::vector<std::string> argv = {RunfilePath("client_lib/blocking_fuse"),
                                     Export(kHung), control, fuse_mount, "-f"};
    if (!options.empty()) argv.insert(argv.begin() + 4, options);
    RANGEFS_ASSIGN_OR_RETURN(
        fuse, Subprocess::Start(
                  {.argv = argv, .log_path = dir + "/" + name + ".log"}));
    const std::string probe = fuse_mount + "/objs";
    RANGEFS_RETURN_IF_ERROR(
        fuse->WaitUntil([&] { return access(probe.c_str(), F_OK) == 0; },
                        absl::Seconds(10), "FUSE mount"));
    RANGEFS_ASSIGN_OR_RETURN(ns::NodeEntry n1,
                             store->GetNode(absl::StrCat("n", kHung)));
    n1.record.set_mount_path(fuse_mount);
    return store->UpdateNode(n1.record, n1.mod_revision);
  }

  // Replaces the FUSE layer by a new one at `name` with `options`.
  absl::Status RemountFuse(const std::string& name,
                           const std::string& options) {
    unlink(control.c_str());  // releases any reader of the old layer
    const std::string cmd = "fusermount3 -u -z " + fuse_mount;
    if (system(cmd.c_str()) != 0) return absl::InternalError("failed: " + cmd);
    fuse.reset();
    return MountFuse(name, options);
  }

  static absl::StatusOr<std::unique_ptr<Env>> Start() {
    auto env = std::make_unique<Env>();
    RANGEFS_ASSIGN_OR_RETURN(env->dir, testing::MakeTempDir("hung_mount"));
    RANGEFS_ASSIGN_OR_RETURN(env->etcd, EtcdCluster::Start({}));
    RANGEFS_ASSIGN_OR_RETURN(
        env->etcd_client,
        etcd::EtcdClient::Open({.endpoints = env->etcd->endpoints()}));
    env->kv = ns::NewEtcdKv(env->etcd_client.get());
    env->store = ns::NewKvStore(env->kv.get());
    for (int i = 0; i < kNodes; ++i)
      RANGEFS_RETURN_IF_ERROR(env->StartAgent(i));
    if (mkdir((env->dir + "/data").c_str(), 0755) != 0 ||
        mkdir((env->dir + "/data/hm").c_str(), 0755) != 0) {
      return absl::InternalError("mkdir data");
    }
    absl::BitGen gen(std::seed_seq{21});
    for (int f = 0; f < kFiles; ++f) {
      std::string bytes(kFileSize, '\0');
      for (char& c : bytes) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
      RANGEFS_RETURN_IF_ERROR(env->CreateFile(absl::StrCat("/hm/f", f), bytes));
      env->data.push_back(std::move(bytes));
    }
    RANGEFS_RETURN_IF_ERROR(env->MountFuse());
    return env;
  }
};

class HungMountTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<Env>> env = Env::Start();
    if (env.ok()) {
      env_ = std::move(*env).release();
    } else {
      setup_error_ = new std::string(env.status().ToString());
    }
  }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(env_, nullptr) << (setup_error_ ? *setup_error_ : "");
  }
  void TearDown() override { Release(); }

  // n1's mount hangs every read from now on, or (after >= 0) once it has
  // served `after` more reads.
  void Hang(int after = -1) {
    const std::string tmp = env_->control + ".tmp";
    {
      std::ofstream out(tmp);
      if (after >= 0) out << after;
    }
    ASSERT_EQ(rename(tmp.c_str(), env_->control.c_str()), 0);
  }
  void Release() {
    if (env_ != nullptr) unlink(env_->control.c_str());
  }
  bool Hung() const { return access(env_->control.c_str(), F_OK) == 0; }
  // Every thread's kernel stack and, where gdb is installed, user stack of
  // a child that did not exit: what a hang needs to be understood.
  static std::string ThreadStacks(pid_t pid) {
    std::string out = "\n--- threads of the stuck child ---\n";
    const std::string cmd = absl::StrCat(
        "for t in /proc/", pid, "/task/*; do echo \"$t $(cat $t/comm) ",
        "$(cat $t/wchan)\"; cat $t/stack 2>/dev/null; done; ",
        "command -v gdb >/dev/null && timeout -k 5 30 gdb -batch -p ", pid,
        " -ex 'thread apply all bt' 2>&1 | grep -E '^(#|Thread)'");
    FILE* f = popen(cmd.c_str(), "r");
    if (f == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    pclose(f);
    return out;
  }

  // Reads the FUSE layer blocked so far (its log has a line per read).
  int BlockedReads() const { return CountInLog("blocked read "); }
  // Data reads the FUSE layer answered so far.
  int ServedReads() const { return CountInLog("served read "); }
  int CountInLog(const std::string& needle) const {
    const std::string log = env_->fuse->Log();
    int n = 0;
    for (size_t at = 0; (at = log.find(needle, at)) != std::string::npos;
         ++at) {
      ++n;
    }
    return n;
  }

  struct BenchRun {
    std::string json;  // rangefs-bench's report
    std::string log;
    int exit_code = -1;
    absl::Duration exit_after_last_read = absl::InfiniteDuration();
    bool hung_at_exit = false;
    int64_t Node(int node, const std::string& key) const {
      const size_t at = json.find("\"node_attempts\": {");
      if (at == std::string::npos) return -1;
      const size_t n = json.find(absl::StrCat("\"n", node, "\": {"), at);
      return n == std::string::npos ? -1 : JsonInt(json, key, n);
    }
    int64_t NodeBytes(int node) const {  // "nodes": {"n0": bytes, ...}
      return JsonInt(json, absl::StrCat("n", node), json.find("\"nodes\": {"));
    }
  };

  // A cold rangefs-bench scan of every file, once, with `flags`.
  BenchRun RunBench(const std::vector<std::string>& flags) {
    static int runs = 0;
    std::vector<std::string> argv = {
        RunfilePath("tests/bench/rangefs-bench"),
        "--etcd=" + env_->etcd->endpoints(),
        "--cluster=default",
        "--mount_root=" + env_->dir + "/no-such-root",  // mount_path is set
        "--dir=/hm",
        "--workload=scan",
        "--once",
        "--threads=4",
        "--io_size=1M",
        "--verify_against=" + env_->dir + "/data",
        "--json"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    BenchRun run;
    absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(
        {.argv = argv,
         .log_path = absl::StrCat(env_->dir, "/bench-", ++runs, ".log")});
    EXPECT_THAT(p, IsOk());
    if (!p.ok()) return run;
    absl::StatusOr<int> status = (*p)->Wait(absl::Seconds(30));
    const int64_t exited_ns = MonotonicNs();
    run.hung_at_exit = Hung();
    run.log = (*p)->Log();
    EXPECT_THAT(status, IsOk()) << run.log << ThreadStacks((*p)->pid());
    if (!status.ok()) return run;
    run.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    for (absl::string_view line : absl::StrSplit(run.log, '\n')) {
      if (absl::StartsWith(line, "{")) run.json = std::string(line);
    }
    const int64_t last_read_ns = JsonInt(run.json, "last_read_mono_ns");
    if (last_read_ns > 0) {
      run.exit_after_last_read = absl::Nanoseconds(exited_ns - last_read_ns);
    }
    return run;
  }

  // The per-node attempts part of a report; empty if the child printed none.
  static std::string AttemptsJson(const std::string& json) {
    const size_t at = json.find("\"node_attempts\"");
    return at == std::string::npos ? std::string() : json.substr(at);
  }

  // The checks on one run: 0 errors, every byte read and compared,
  // gone within kExitBound of its last read.
  void ExpectCleanRun(const BenchRun& run, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(run.exit_code, 0) << run.log;
    EXPECT_EQ(JsonInt(run.json, "errors"), 0) << run.log;
    EXPECT_EQ(JsonInt(run.json, "mismatches"), 0) << run.log;
    EXPECT_EQ(JsonInt(run.json, "bytes"),
              static_cast<int64_t>(kFiles * kFileSize));
    EXPECT_LE(run.exit_after_last_read, kExitBound) << run.log;
    fprintf(stderr, "%s: exit %.3f s after the last read; n%d: %s\n",
            what.c_str(), absl::ToDoubleSeconds(run.exit_after_last_read),
            kHung, AttemptsJson(run.json).c_str());
  }

  static Env* env_;
  static std::string* setup_error_;
};

Env* HungMountTest::env_ = nullptr;
std::string* HungMountTest::setup_error_ = nullptr;

struct Mode {
  std::string data_path;
  bool io_uring;
  std::string verify;
  std::string Name() const {
    return absl::StrCat(data_path, io_uring ? " io_uring" : " threads",
                        " verify=", verify);
  }
  std::vector<std::string> Flags() const {
    return {"--data_path=" + data_path,
            absl::StrCat("--io_uring=", io_uring ? "true" : "false"),
            "--verify=" + verify};
  }
};

TEST_F(HungMountTest, MountHungBeforeTheProcessStarts) {
  for (const Mode& m : std::vector<Mode>{{"mount", true, "full"},
                                         {"mount", false, "off"},
                                         {"auto", true, "off"},
                                         {"auto", false, "full"},
                                         {"agent", true, "full"}}) {
    Hang();
    const int blocked_before = BlockedReads();
    BenchRun run = RunBench(m.Flags());
    ExpectCleanRun(run, "hung from the start, " + m.Name());
    EXPECT_TRUE(run.hung_at_exit);
    if (m.data_path != "agent") {
      // It met the hung mount and got every byte elsewhere, from the first
      // read of a new process on (stall detection or hedges: no piece
      // waited for the attempt timeout).
      EXPECT_GT(BlockedReads(), blocked_before) << m.Name();
      EXPECT_EQ(run.NodeBytes(kHung), 0) << m.Name();
      EXPECT_EQ(run.Node(kHung, "timeouts"), 0) << m.Name();
    }
  }
}

TEST_F(HungMountTest, MountHangsInTheMiddleOfAScan) {
  for (const Mode& m :
       std::vector<Mode>{{"mount", true, "full"}, {"mount", false, "off"}}) {
    Hang(/*after=*/4);  // the layer's next 4 reads pass
    const int blocked_before = BlockedReads();
    const int served_before = ServedReads();
    // Round robin: n1 gets its share of the scan's pieces, more than the 4
    // the layer passes (the least-loaded picker may give a node that
    // answers slower than the others' page caches only a few).
    std::vector<std::string> flags = m.Flags();
    flags.push_back("--policy=round_robin");
    BenchRun run = RunBench(flags);
    ExpectCleanRun(run, "hung mid-scan, " + m.Name());
    EXPECT_TRUE(run.hung_at_exit);
    EXPECT_GT(BlockedReads(), blocked_before) << m.Name();
    // The mount answered this process's first reads (4, or a few more when
    // concurrent reads pass the layer's check together), then hung. Whether
    // any whole piece completed first depends on how the kernel split the
    // concurrent reads: not asserted.
    EXPECT_GE(ServedReads() - served_before, 4) << m.Name();
    EXPECT_EQ(run.Node(kHung, "timeouts"), 0) << m.Name();
  }
}

// A FUSE or NFS connection admits max_background asynchronous requests;
// the next one (readahead of an io_uring read) waits for a free request in
// the submitting thread, inside io_uring_enter. With a limit of 1 every
// scan of the hung mount gets there: the node's ring thread blocks in a
// submit, and teardown must neither wait for it nor for its reads.
TEST_F(HungMountTest, SubmitBlockedAtTheMountsBackgroundLimit) {
  ASSERT_THAT(env_->RemountFuse("fuse-bg1", "--max_background=1"), IsOk());
  for (const Mode& m : std::vector<Mode>{{"mount", true, "off"},
                                         {"auto", true, "full"},
                                         {"mount", false, "off"}}) {
    Hang();
    const int blocked_before = BlockedReads();
    BenchRun run = RunBench(m.Flags());
    ExpectCleanRun(run, "background limit 1, " + m.Name());
    EXPECT_TRUE(run.hung_at_exit);
    EXPECT_GT(BlockedReads(), blocked_before) << m.Name();
    EXPECT_EQ(run.NodeBytes(kHung), 0) << m.Name();
  }
}

TEST_F(HungMountTest, ReleasedMountIsReadmittedAndReadAgain) {
  for (bool io_uring : {true, false}) {
    SCOPED_TRACE(io_uring ? "io_uring" : "threads");
    Hang();
    ClientOptions o;
    o.etcd_endpoints = env_->etcd->endpoints();
    o.data_path = DataPath::kMount;
    o.mount_root = env_->dir + "/no-such-root";
    o.io_uring = io_uring;
    o.verify = VerifyMode::kFull;
    o.teardown_timeout = absl::Milliseconds(500);
    auto client = Client::Open(o);
    ASSERT_THAT(client, IsOk());
    std::vector<std::unique_ptr<File>> files;
    for (int f = 0; f < kFiles; ++f) {
      auto file = (*client)->OpenFile(absl::StrCat("/hm/f", f));
      ASSERT_THAT(file, IsOk());
      files.push_back(std::move(*file));
    }
    absl::BitGen gen(std::seed_seq{5});
    int bad = 0;
    // One ReadV of a random range of every file; returns false on error.
    auto read_once = [&] {
      std::vector<std::string> bufs(kFiles);
      std::vector<FileReadRange> ranges;
      for (int f = 0; f < kFiles; ++f) {
        bufs[f].assign(absl::Uniform<size_t>(gen, 1, 1 << 20), '\0');
        ranges.push_back({files[f].get(),
                          absl::Uniform<uint64_t>(gen, 0, kFileSize - 1),
                          absl::MakeSpan(bufs[f])});
      }
      auto results = (*client)->ReadV(ranges);
      for (int f = 0; f < kFiles; ++f) {
        const size_t want =
            std::min<size_t>(bufs[f].size(), kFileSize - ranges[f].offset);
        if (!results[f].ok() || *results[f] != want ||
            bufs[f].compare(0, want, env_->data[f], ranges[f].offset, want) !=
                0) {
          ADD_FAILURE() << "range " << f << ": " << results[f].status();
          ++bad;
        }
      }
    };
    auto n1 = [&] {
      for (const NodeStats& s : (*client)->Stats().nodes) {
        if (s.node == absl::StrCat("n", kHung)) return s;
      }
      return NodeStats{};
    };
    // Reads go on while n1 hangs, until the client has marked it dead.
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (n1().admissible && absl::Now() < give_up) read_once();
    ASSERT_FALSE(n1().admissible);
    EXPECT_EQ(n1().bytes, 0u);
    // The mount comes back: n1 is admitted again and read (its own bound:
    // a slow first phase on a loaded machine must not eat into it).
    Release();
    const absl::Time give_up_again = absl::Now() + absl::Seconds(30);
    while ((!n1().admissible || n1().bytes == 0) &&
           absl::Now() < give_up_again) {
      read_once();
    }
    EXPECT_TRUE(n1().admissible);
    EXPECT_GT(n1().bytes, 0u);
    EXPECT_EQ(bad, 0);
    const absl::Time t0 = absl::Now();
    files.clear();
    client->reset();
    // teardown_timeout is 500 ms: bounded, with room for a loaded machine.
    EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
  }
}

}  // namespace
}  // namespace rangefs
