// Unit tests of the client engine over MemoryKv (namespace) and
// MemoryFs/FaultyFs (the nodes' mounts).
#include "client_lib/client.h"

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/testing/fake_clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/testing/client_testing.h"
#include "client_lib/testing/fault_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"
#include "storage_node/sidecar.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using ::testing::HasSubstr;

constexpr int kNodes = 4;
constexpr char kMountRoot[] = "/m";

std::string Node(int i) { return absl::StrCat("n", i); }

std::string RandomBytes(absl::BitGen& g, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(absl::Uniform<uint8_t>(g));
  return s;
}

// Threads of this process now.
int ThreadCount() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Polls `done` up to `timeout` (generous: the machine may be loaded).
template <typename F>
bool Eventually(F done, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time end = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// What "at once" means for a call that returns, or a teardown that ends,
// without waiting for hung reads: well within the deadlines and timeouts
// the tests set against it (10 s, 30 s), with room for a loaded machine
// (they take 0.2-0.6 s idle).
constexpr absl::Duration kAtOnce = absl::Seconds(5);

// The real clock, counting its uses: a client's threads must not use the
// caller's clock after the client was destroyed.
class CountingClock : public Clock {
 public:
  absl::Time Now() override {
    calls_.fetch_add(1);
    return Clock::Real()->Now();
  }
  absl::Time MonotonicNow() override {
    calls_.fetch_add(1);
    return Clock::Real()->MonotonicNow();
  }
  void SleepFor(absl::Duration d) override { Clock::Real()->SleepFor(d); }
  int64_t calls() const { return calls_.load(); }

 private:
  std::atomic<int64_t> calls_{0};
};

// The count of an OK read, or SIZE_MAX (after a failure) if it failed.
size_t ReadOk(const absl::StatusOr<size_t>& n) {
  EXPECT_THAT(n, IsOk());
  return n.ok() ? *n : SIZE_MAX;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = ns::NewKvStore(&kv_);
    for (int i = 0; i < kNodes; ++i) {
      v1::NodeRecord r;
      r.set_id(Node(i));
      r.add_addresses("127.0.0.1:1");
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
  }

  ClientOptions Options() {
    ClientOptions o;
    o.mount_root = kMountRoot;
    o.data_path = DataPath::kMount;
    o.seed = 42;
    o.default_deadline = absl::Seconds(10);
    return o;
  }

  // Options() with reads sent round robin over the replicas and no hedges:
  // what a fault, stall or timeout does to one attempt, undisguised.
  ClientOptions RoundRobinNoHedging() {
    ClientOptions o = Options();
    o.lb_policy = "round_robin";
    o.hedging = false;
    return o;
  }

  // The in-memory namespace and the fault-injecting mounts.
  ClientTestHooks Hooks() {
    ClientTestHooks h;
    h.kv = &kv_;
    h.fs = &faulty_;
    return h;
  }

  // The fixture owns the client so that TearDown can release blocked
  // reads before the client joins its workers.
  Client* OpenClient(ClientOptions o) {
    auto c = OpenClientForTesting(o, Hooks());
    EXPECT_THAT(c, IsOk());
    clients_.push_back(c.ok() ? std::move(*c) : nullptr);
    return clients_.back().get();
  }

  void TearDown() override {
    faulty_.ClearRules();
    faulty_.Release();
    clients_.clear();
  }

  // Stores an object on a node's "mount", with its CRC sidecar.
  void PutObject(const std::string& node, const std::string& object,
                 const std::string& data, uint32_t block_size = 4096) {
    const std::string dir = absl::StrCat(kMountRoot, "/", node);
    mem_.AddFile(dir + "/" + object, data);
    node::BlockChecksummer sum(block_size);
    sum.Update(data.data(), data.size());
    mem_.AddFile(dir + "/" + node::SidecarPathFor(object),
                 node::EncodeSidecar(sum.Finish()));
  }

  // File `path`: one extent of `data`, in `object` on nodes n0..n<r-1>.
  void OneExtentFile(const std::string& path, const std::string& object,
                     const std::string& data, int replicas) {
    v1::FileLayout l;
    l.set_size(data.size());
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_length(data.size());
    for (int i = 0; i < replicas; ++i) {
      PutObject(Node(i), object, data);
      v1::Replica* r = e->add_replicas();
      r->set_node_id(Node(i));
      r->set_object(object);
    }
    ASSERT_THAT(store_->CreateFile(path, l), IsOk());
  }

  // Creates `path` with `data`: random extents (or a striped layout) with
  // two replicas each on random distinct nodes, objects at random offsets.
  void CreateFile(const std::string& path, const std::string& data,
                  bool striped, uint64_t unit, int width) {
    v1::FileLayout l;
    l.set_size(data.size());
    l.set_state(v1::READY);
    l.set_checksum(v1::CRC32C_SIDECAR);
    l.set_checksum_block_size(4096);
    auto pick2 = [&](int seed) {
      int a = seed % kNodes;
      int b = (a + 1 + absl::Uniform(gen_, 0, kNodes - 1)) % kNodes;
      return std::make_pair(a, b);
    };
    if (striped) {
      l.mutable_striped()->set_stripe_unit(unit);
      const uint64_t units = (data.size() + unit - 1) / unit;
      for (int t = 0; t < width; ++t) {
        std::string column;
        for (uint64_t k = t; k < units; k += width) {
          column += data.substr(k * unit, unit);
        }
        auto* target = l.mutable_striped()->add_targets();
        auto [a, b] = pick2(t + absl::Uniform(gen_, 0, kNodes));
        for (int n : {a, b}) {
          const uint64_t lead = absl::Uniform(gen_, 0, 3) * 512;
          const std::string obj = absl::StrCat("o", path.substr(1), "/c", t);
          PutObject(Node(n), obj, RandomBytes(gen_, lead) + column);
          auto* r = target->add_replicas();
          r->set_node_id(Node(n));
          r->set_object(obj);
          r->set_object_offset(lead);
        }
      }
    } else {
      uint64_t pos = 0;
      int i = 0;
      while (pos < data.size()) {
        uint64_t len = std::min<uint64_t>(
            data.size() - pos, absl::Uniform<uint64_t>(gen_, 1, 70000));
        auto* e = l.add_extents();
        e->set_offset(pos);
        e->set_length(len);
        auto [a, b] = pick2(i);
        for (int n : {a, b}) {
          const uint64_t lead = absl::Uniform(gen_, 0, 3) * 4096;
          const std::string obj = absl::StrCat("o", path.substr(1), "/e", i);
          PutObject(Node(n), obj,
                    RandomBytes(gen_, lead) + data.substr(pos, len));
          auto* r = e->add_replicas();
          r->set_node_id(Node(n));
          r->set_object(obj);
          r->set_object_offset(lead);
        }
        pos += len;
        ++i;
      }
    }
    ASSERT_THAT(store_->CreateFile(path, l), IsOk());
  }

  // A one-extent file with replicas on n0 and n1.
  std::string SimpleFile(const std::string& path, size_t size) {
    std::string data = RandomBytes(gen_, size);
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_offset(0);
    e->set_length(size);
    for (int n : {0, 1}) {
      const std::string obj = absl::StrCat("s", path.substr(1));
      PutObject(Node(n), obj, data);
      auto* r = e->add_replicas();
      r->set_node_id(Node(n));
      r->set_object(obj);
    }
    EXPECT_THAT(store_->CreateFile(path, l), IsOk());
    return data;
  }

  // A file of `size` bytes in extents of `extent` bytes; extent K is object
  // "w<path without />/eK" on n0 and n1.
  std::string WindowedFile(const std::string& path, size_t size,
                           size_t extent) {
    std::string data = RandomBytes(gen_, size);
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(v1::READY);
    for (size_t pos = 0, k = 0; pos < size; pos += extent, ++k) {
      const size_t len = std::min(extent, size - pos);
      auto* e = l.add_extents();
      e->set_offset(pos);
      e->set_length(len);
      const std::string obj = absl::StrCat("w", path.substr(1), "/e", k);
      for (int n : {0, 1}) {
        PutObject(Node(n), obj, data.substr(pos, len));
        auto* r = e->add_replicas();
        r->set_node_id(Node(n));
        r->set_object(obj);
      }
    }
    EXPECT_THAT(store_->CreateFile(path, l), IsOk());
    return data;
  }

  const NodeStats* FindNode(const ClientStats& s, const std::string& id) {
    for (const NodeStats& n : s.nodes) {
      if (n.node == id) return &n;
    }
    return nullptr;
  }

  absl::BitGen gen_{std::seed_seq{7}};
  ns::MemoryKv kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  MemoryFs mem_;
  FaultyFs faulty_{&mem_};
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(ClientTest, SplitAndReassembleAreByteExactAtEveryBoundary) {
  for (int layout = 0; layout < 8; ++layout) {
    const bool striped = layout % 2 == 1;
    const uint64_t unit = 1024 * absl::Uniform(gen_, 1, 9) + (layout % 3);
    const int width = absl::Uniform(gen_, 1, 4);
    const std::string data =
        RandomBytes(gen_, absl::Uniform<size_t>(gen_, 1, 300000));
    const std::string path = absl::StrCat("/f", layout);
    CreateFile(path, data, striped, unit, width);
    ClientOptions o = Options();
    o.max_io_size = 4096 * absl::Uniform(gen_, 1, 5);
    o.verify = layout % 4 == 0 ? VerifyMode::kFull : VerifyMode::kOff;
    // No stall judgement: a loaded machine may leave a node's worker
    // unscheduled past its stall delay (200 ms), and the stall moves that
    // node's pieces as retries; here a retry must mean a failed read.
    o.stall_factor = 0;
    Client* client = OpenClient(o);
    ASSERT_NE(client, nullptr);
    auto f = client->OpenFile(path);
    ASSERT_THAT(f, IsOk());
    ASSERT_EQ((*f)->size(), data.size());
    // Boundaries: stripe units, max_io multiples, file ends, +-1.
    std::vector<uint64_t> points = {0, data.size()};
    for (uint64_t p = unit; p < data.size(); p += unit) points.push_back(p);
    for (uint64_t p = o.max_io_size; p < data.size(); p += o.max_io_size) {
      points.push_back(p);
    }
    for (int i = 0; i < 200; ++i) {
      uint64_t a = points[absl::Uniform<size_t>(gen_, 0, points.size())];
      uint64_t b = points[absl::Uniform<size_t>(gen_, 0, points.size())];
      a = std::min<uint64_t>(data.size(),
                             a + absl::Uniform(gen_, -1, 2) + (a == 0 ? 1 : 0));
      b = std::min<uint64_t>(data.size(),
                             b + absl::Uniform(gen_, -1, 2) + (b == 0 ? 1 : 0));
      if (i % 10 == 0) {
        a = absl::Uniform<uint64_t>(gen_, 0, data.size());
        b = absl::Uniform<uint64_t>(gen_, 0, data.size() + 1000);
      }
      if (a > b) std::swap(a, b);
      std::string buf(b - a + absl::Uniform(gen_, 0, 3), '\xAA');
      auto n = (*f)->Read(a, absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk()) << path << " [" << a << "," << b << ")";
      const size_t want = std::min<size_t>(buf.size(), data.size() - a);
      ASSERT_EQ(*n, want);
      ASSERT_EQ(buf.substr(0, want), data.substr(a, want))
          << path << " at " << a;
      // Bytes past EOF are untouched.
      ASSERT_EQ(buf.substr(want), std::string(buf.size() - want, '\xAA'));
    }
    // ReadV with many ranges.
    std::vector<std::string> bufs(300);
    std::vector<ReadRange> ranges;
    for (auto& b : bufs) {
      b.assign(absl::Uniform<size_t>(gen_, 0, 9000), '\0');
      ranges.push_back(
          {absl::Uniform<uint64_t>(gen_, 0, data.size()), absl::MakeSpan(b)});
    }
    auto results = (*f)->ReadV(ranges);
    ASSERT_EQ(results.size(), ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
      ASSERT_THAT(results[i], IsOk());
      size_t want =
          std::min<size_t>(bufs[i].size(), data.size() - ranges[i].offset);
      ASSERT_EQ(*results[i], want);
      ASSERT_EQ(bufs[i].substr(0, want), data.substr(ranges[i].offset, want));
    }
    EXPECT_EQ(client->Stats().retries, 0u);
  }
}

TEST_F(ClientTest, PastEofIsOutOfRangeAndAtEofIsZero) {
  SimpleFile("/eof", 5000);
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/eof");
  ASSERT_THAT(f, IsOk());
  char buf[100];
  EXPECT_THAT((*f)->Read(5001, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kOutOfRange));
  auto n = (*f)->Read(5000, absl::MakeSpan(buf));
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 0u);
  n = (*f)->Read(4950, absl::MakeSpan(buf));
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 50u);
  EXPECT_THAT(client->OpenFile("/nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, FailedReplicaIsRetriedOnTheOtherOne) {
  const std::string data = SimpleFile("/r", 200000);
  faulty_.AddRule({.path_contains = "/n0/"});  // every read on n0 fails
  ClientOptions o = Options();
  o.max_io_size = 8192;
  o.lb_policy = "round_robin";
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/r");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  auto n = (*f)->Read(0, absl::MakeSpan(buf));
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(buf, data);
  ClientStats s = client->Stats();
  EXPECT_GT(s.retries, 0u);
  EXPECT_GT(FindNode(s, "n0")->errors, 0u);
  EXPECT_EQ(FindNode(s, "n1")->errors, 0u);
  // After max_consecutive_failures n0 is dead: later reads avoid it.
  uint64_t n0_requests = FindNode(s, "n0")->requests;
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  EXPECT_EQ(FindNode(client->Stats(), "n0")->requests, n0_requests);
}

TEST_F(ClientTest, AllReplicasFailingIsUnavailableWithReasons) {
  SimpleFile("/bad", 10000);
  faulty_.AddRule({.path_contains = "/n0/",
                   .error = absl::UnavailableError("disk on fire")});
  faulty_.AddRule(
      {.path_contains = "/n1/", .error = absl::UnavailableError("cable cut")});
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/bad");
  ASSERT_THAT(f, IsOk());
  char buf[100];
  auto n = (*f)->Read(0, absl::MakeSpan(buf));
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(n.status().message(), HasSubstr("node n0"));
  EXPECT_THAT(n.status().message(), HasSubstr("disk on fire"));
  EXPECT_THAT(n.status().message(), HasSubstr("node n1"));
  EXPECT_THAT(n.status().message(), HasSubstr("cable cut"));
}

TEST_F(ClientTest, ChecksumMismatchGoesToTheOtherReplica) {
  const std::string data = SimpleFile("/c", 50000);
  mem_.CorruptByte("/m/n0/sc", 12345);
  ClientOptions o = Options();
  o.verify = VerifyMode::kFull;
  o.lb_policy = "round_robin";
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/c");
  ASSERT_THAT(f, IsOk());
  for (int i = 0; i < 4; ++i) {
    std::string buf(100, '\0');
    auto n = (*f)->Read(12300, absl::MakeSpan(buf));
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(buf, data.substr(12300, 100));
  }
  ClientStats s = client->Stats();
  EXPECT_GE(s.checksum_failures, 1u);
  EXPECT_GE(FindNode(s, "n0")->checksum_failures, 1u);
  // Both replicas corrupt: DATA_LOSS.
  mem_.CorruptByte("/m/n1/sc", 12345);
  std::string buf(100, '\0');
  EXPECT_THAT((*f)->Read(12300, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(ClientTest, BlockedReadReturnsByDeadlineAndNeverTouchesTheBuffer) {
  SimpleFile("/blk", 100000);
  faulty_.AddRule({.action = FaultAction::kBlock});  // every read hangs
  ClientOptions o = Options();
  o.hedging = false;
  // The call's deadline passes on a fake clock once its read is blocked:
  // on the real one a loaded machine could end the call before any worker
  // took its read (nothing would be blocked).
  FakeClock clock;
  ClientTestHooks hooks = Hooks();
  hooks.clock = &clock;
  auto client = OpenClientForTesting(o, hooks);  // destroyed before `clock`
  ASSERT_THAT(client, IsOk());
  auto f = (*client)->OpenFile("/blk");
  ASSERT_THAT(f, IsOk());
  std::string buf(100000, '\x5C');
  absl::StatusOr<size_t> n;
  absl::Time returned;
  std::thread caller([&] {
    n = (*f)->Read(0, absl::MakeSpan(buf),
                   {.deadline = absl::Milliseconds(200)});
    returned = absl::Now();
  });
  const bool blocked = faulty_.WaitForBlocked(1, absl::Seconds(30));
  const absl::Time t0 = absl::Now();
  clock.Advance(absl::Milliseconds(201));
  caller.join();
  ASSERT_TRUE(blocked);
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(returned - t0, kAtOnce) << "after its deadline passed";
  // Let the hung reads finish: they must land in worker buffers only.
  faulty_.ClearRules();
  faulty_.Release();
  EXPECT_TRUE(Eventually([&] {
    int64_t inflight = 0;
    for (auto& nd : (*client)->Stats().nodes) inflight += nd.inflight;
    return inflight == 0 && faulty_.blocked_now() == 0;
  }));
  EXPECT_EQ(faulty_.blocked_now(), 0);
  EXPECT_EQ(buf, std::string(100000, '\x5C'));
}

TEST_F(ClientTest, BlockedReplicaIsHedgedToTheOtherOne) {
  const std::string data = SimpleFile("/h", 4096);
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  ClientOptions o = Options();
  o.lb_policy = "round_robin";
  o.attempt_timeout = absl::Seconds(20);  // only a hedge can save it
  // No stall detection: it would mark n0 dead and move the piece, with no
  // hedge, when the first timers' pass that sees n0's read started runs
  // past its stall delay (4 x the hedge delay, real clock: a loaded machine).
  o.stall_factor = 0;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/h");
  ASSERT_THAT(f, IsOk());
  for (int i = 0; i < 4; ++i) {
    std::string buf(4096, '\0');
    auto n = (*f)->Read(0, absl::MakeSpan(buf), {.deadline = absl::Seconds(5)});
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(buf, data);
  }
  ClientStats s = client->Stats();
  EXPECT_GE(s.hedges, 1u);
  EXPECT_GE(s.hedge_wins, 1u);
  EXPECT_EQ(FindNode(s, "n0")->bytes, 0u);  // n0 never answered
  faulty_.Release();
}

TEST_F(ClientTest, TimedOutAttemptIsRetriedElsewhereWithoutHedging) {
  const std::string data = SimpleFile("/t", 4096);
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  ClientOptions o = RoundRobinNoHedging();
  // n1's attempts must not time out too (a loaded machine may leave a
  // worker unscheduled for tens of ms): 500 ms, paid once (n0 is dead
  // after its first timeout). No stall detection, which would move the
  // piece first (300 ms on a cold node).
  o.attempt_timeout = absl::Milliseconds(500);
  o.stall_factor = 0;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/t");
  ASSERT_THAT(f, IsOk());
  for (int i = 0; i < 3; ++i) {
    std::string buf(4096, '\0');
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
    EXPECT_EQ(buf, data);
  }
  ClientStats s = client->Stats();
  EXPECT_EQ(s.hedges, 0u);
  EXPECT_GE(FindNode(s, "n0")->timeouts, 1u);
  EXPECT_FALSE(FindNode(s, "n0")->admissible);  // dead on timeout
  faulty_.Release();
}

TEST_F(ClientTest, StalledNodeIsMarkedDeadAndItsPiecesMoveWithoutHedges) {
  const std::string data = WindowedFile("/st", 64 * 4096, 4096);
  ClientOptions o = RoundRobinNoHedging();
  o.attempt_timeout = absl::Seconds(60);  // only stall detection can save it
  o.stall_min_delay = absl::Milliseconds(30);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/st");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  // Warm-up: latency samples of both nodes (the stall delay needs 10).
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  // Every warm-up read answered, n0 admissible: a read of n0 whose worker a
  // loaded machine left unscheduled past the stall delay (30 ms, real
  // clock) was judged a stall, which marks n0 dead until that read's late
  // answer revives it. Judged so at the warm-up's end (nothing of n0 queued
  // to move), n0 would get no piece of the read below (seen: moved 0).
  ASSERT_TRUE(Eventually([&] {
    const ClientStats w = client->Stats();
    for (const NodeStats& nd : w.nodes) {
      if (nd.inflight != 0) return false;
    }
    return FindNode(w, "n0")->admissible;
  }));
  const NodeStats warm = *FindNode(client->Stats(), "n0");
  // n0 hangs: its 8 workers block, its other pieces queue behind them.
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  std::fill(buf.begin(), buf.end(), '\0');
  auto n = (*f)->Read(0, absl::MakeSpan(buf), {.deadline = absl::Seconds(10)});
  ASSERT_THAT(n, IsOk());
  EXPECT_TRUE(buf == data);
  ClientStats s = client->Stats();
  const NodeStats* n0 = FindNode(s, "n0");
  // This read's, not the warm-up's.
  EXPECT_GE(n0->stalls - warm.stalls, 1u);
  // Queued behind the stalled ones: moved at once.
  EXPECT_GE(n0->moved - warm.moved, 1u);
  EXPECT_EQ(n0->timeouts, 0u);
  EXPECT_FALSE(n0->admissible);
  EXPECT_EQ(s.hedges, 0u);
  faulty_.Release();
}

// The same judged late: on a fake clock that jumps past every stall delay
// at once (a timers' pass that a loaded machine ran late), the queued pieces
// are past their own stall delay too. They still move as pieces of a node
// just marked dead by the started ones' stall, not as stalls of their own.
TEST_F(ClientTest, QueuedPiecesOfAStalledNodeMoveWhenJudgedLate) {
  const std::string data = WindowedFile("/sl", 64 * 4096, 4096);
  ClientOptions o = RoundRobinNoHedging();
  o.attempt_timeout = absl::Seconds(60);
  o.stall_min_delay = absl::Milliseconds(30);
  FakeClock clock;
  ClientTestHooks hooks = Hooks();
  hooks.clock = &clock;
  auto client = OpenClientForTesting(o, hooks);  // destroyed before `clock`
  ASSERT_THAT(client, IsOk());
  auto f = (*client)->OpenFile("/sl");
  ASSERT_THAT(f, IsOk());
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  std::string buf(data.size(), '\0');
  absl::StatusOr<size_t> n;
  absl::Notification returned;
  std::thread caller([&] {
    n = (*f)->Read(0, absl::MakeSpan(buf), {.deadline = absl::Seconds(30)});
    returned.Notify();
  });
  // n0's 8 workers hold a piece each; its other pieces queue behind them.
  const bool blocked =
      faulty_.WaitForBlocked(o.max_inflight_per_node, absl::Seconds(30));
  // n1's 32 pieces answered (their latencies are taken before their bytes
  // are counted) before the jump: a read of n1 that spanned it would time
  // 2 s, and the slowest answer seen sets a cold node's stall delay (4 x 2 s
  // on this clock, which never gets there): n0's pieces would wait for the
  // deadline (1 run in 4 on a loaded machine).
  const bool n1_answered = Eventually([&] {
    return FindNode((*client)->Stats(), "n1")->bytes == data.size() / 2;
  });
  clock.Advance(absl::Seconds(2));  // past every stall delay, not the timeout
  // Bounded: pieces that never move leave the call to its deadline.
  if (!returned.WaitForNotificationWithTimeout(absl::Seconds(30))) {
    clock.Advance(absl::Seconds(30));
  }
  caller.join();
  ASSERT_TRUE(blocked);
  ASSERT_TRUE(n1_answered);
  ASSERT_THAT(n, IsOk());
  EXPECT_TRUE(buf == data);
  ClientStats s = (*client)->Stats();
  const NodeStats* n0 = FindNode(s, "n0");
  EXPECT_GE(n0->stalls, 1u);
  EXPECT_GE(n0->moved, 1u);
  EXPECT_EQ(n0->stalls + n0->moved, 32u);  // every piece of n0, once
  EXPECT_EQ(n0->timeouts, 0u);
  EXPECT_FALSE(n0->admissible);
  EXPECT_EQ(s.hedges, 0u);
  faulty_.ClearRules();
  faulty_.Release();
}

TEST_F(ClientTest, StallOnTheOnlyReplicaIsWaitedFor) {
  // One replica (on n0): a slow answer past the stall delay must still be
  // taken, not turned into UNAVAILABLE.
  const std::string data = RandomBytes(gen_, 4096);
  ASSERT_NO_FATAL_FAILURE(OneExtentFile("/one", "one", data, 1));
  ClientOptions o = Options();
  o.stall_min_delay = absl::Milliseconds(20);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/one");
  ASSERT_THAT(f, IsOk());
  std::string buf(4096, '\0');
  for (int i = 0; i < 12; ++i) {  // latency samples: the stall delay is known
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  faulty_.AddRule({.path_contains = "/n0/",
                   .action = FaultAction::kDelay,
                   .delay = absl::Milliseconds(200)});
  std::fill(buf.begin(), buf.end(), '\0');
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  EXPECT_EQ(buf, data);
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0")->stalls, 0u);
  EXPECT_EQ(s.unavailable, 0u);
}

// Two replicas, n1's node known dead (it failed its reads): a slow answer
// from n0 past the stall delay must still be taken. Moving the piece to the
// dead node's untried replica would fail at once and leave the piece with
// no replica to try (a read error; seen in keeper_test's etcd outage).
TEST_F(ClientTest, StallIsWaitedForWhenTheOtherReplicaIsOnADeadNode) {
  const std::string data = RandomBytes(gen_, 4096);
  ASSERT_NO_FATAL_FAILURE(OneExtentFile("/two", "two", data, 2));
  ClientOptions o = RoundRobinNoHedging();
  o.stall_min_delay = absl::Milliseconds(20);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/two");
  ASSERT_THAT(f, IsOk());
  std::string buf(4096, '\0');
  for (int i = 0; i < 24; ++i) {  // latency samples: the stall delay is known
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  // n1 fails its reads until it is marked dead (each read still succeeds on
  // n0).
  faulty_.AddRule({.path_contains = "/n1/", .action = FaultAction::kFail});
  ASSERT_TRUE(Eventually([&] {
    EXPECT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
    return !FindNode(client->Stats(), "n1")->admissible;
  }));
  faulty_.AddRule({.path_contains = "/n0/",
                   .action = FaultAction::kDelay,
                   .delay = absl::Milliseconds(200)});
  for (int i = 0; i < 3; ++i) {
    std::fill(buf.begin(), buf.end(), '\0');
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk()) << "read " << i;
    EXPECT_EQ(buf, data);
  }
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0")->stalls, 0u);
  EXPECT_EQ(s.unavailable, 0u);
}

TEST_F(ClientTest, ReadInFlightMovesWhenItsNodeIsDrained) {
  const std::string data = SimpleFile("/mv", 4096);
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  ClientOptions o = RoundRobinNoHedging();
  o.attempt_timeout = absl::Seconds(60);
  o.stall_min_delay = absl::Seconds(60);  // no stall either: only the drain
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/mv");
  ASSERT_THAT(f, IsOk());
  // Reads in the background until one is stuck on n0 (round robin sends
  // one of the first two there).
  std::vector<absl::Status> results;
  std::thread reader([&] {
    for (int i = 0; i < 4; ++i) {
      std::string buf(4096, '\0');
      auto r =
          (*f)->Read(0, absl::MakeSpan(buf), {.deadline = absl::Seconds(10)});
      results.push_back(r.status());
      if (r.ok() && buf != data)
        results.push_back(absl::DataLossError("bytes"));
    }
  });
  const bool blocked = faulty_.WaitForBlocked(1, absl::Seconds(30));
  ASSERT_THAT(store_->SetNodeState("n0", v1::DRAINING), IsOk());
  reader.join();
  ASSERT_TRUE(blocked);
  for (const absl::Status& st : results) EXPECT_THAT(st, IsOk());
  EXPECT_GE(FindNode(client->Stats(), "n0")->moved, 1u);
  faulty_.Release();
}

// Records the order of the reads it passes on (paths only).
class OrderFs : public ReadOnlyFs {
 public:
  explicit OrderFs(ReadOnlyFs* base) : base_(base) {}
  absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                               absl::Span<char> dst,
                               const FsReadOptions& options) override {
    {
      absl::MutexLock l(&mu_);
      order_.push_back(path.full());
    }
    return base_->PRead(path, offset, dst, options);
  }
  absl::StatusOr<std::string> ReadFile(const MountPath& path) override {
    return base_->ReadFile(path);
  }
  absl::Status CheckDir(const std::string& path) override {
    return base_->CheckDir(path);
  }
  std::vector<std::string> order() {
    absl::MutexLock l(&mu_);
    return order_;
  }

 private:
  ReadOnlyFs* const base_;
  absl::Mutex mu_;
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ClientTest, RetriesGoToTheFrontOfTheirNodesQueueInOrder) {
  // Eight one-replica extents on n0, then two extents on n1 and n0. n0 has
  // one worker, blocked on the first extent, so seven wait in its queue.
  // The last two go to n1 (least loaded), fail there and are retried on
  // n0: late pieces, they must be read before the seven, and in the order
  // they failed (first in, first out among late pieces).
  constexpr size_t kExtent = 4096;
  const std::string data = RandomBytes(gen_, 10 * kExtent);
  v1::FileLayout l;
  l.set_size(data.size());
  l.set_state(v1::READY);
  for (int k = 0; k < 10; ++k) {
    auto* e = l.add_extents();
    e->set_offset(k * kExtent);
    e->set_length(kExtent);
    const std::string obj = absl::StrCat("fq/e", k);
    for (int n : k < 8 ? std::vector<int>{0} : std::vector<int>{1, 0}) {
      PutObject(Node(n), obj, data.substr(k * kExtent, kExtent));
      auto* r = e->add_replicas();
      r->set_node_id(Node(n));
      r->set_object(obj);
    }
  }
  ASSERT_THAT(store_->CreateFile("/fq", l), IsOk());
  faulty_.AddRule({.path_contains = absl::StrCat("/", Node(0), "/fq/e0"),
                   .action = FaultAction::kBlock});
  for (const char* e : {"e8", "e9"}) {
    faulty_.AddRule({.path_contains = absl::StrCat("/", Node(1), "/fq/", e),
                     .error = absl::UnavailableError("n1 lost it")});
  }
  OrderFs order(&faulty_);
  ClientOptions o = Options();
  ClientTestHooks hooks = Hooks();
  hooks.fs = &order;
  o.max_inflight_per_node = 1;
  o.hedging = false;
  o.stall_factor = 0;
  o.attempt_timeout = absl::Seconds(60);
  auto client = OpenClientForTesting(o, hooks);  // destroyed before `order`
  ASSERT_THAT(client, IsOk());
  auto f = (*client)->OpenFile("/fq");
  ASSERT_THAT(f, IsOk());
  std::string got(data.size(), '\0');
  absl::StatusOr<size_t> n;
  std::thread reader([&] { n = (*f)->Read(0, absl::MakeSpan(got)); });
  ASSERT_TRUE(faulty_.WaitForBlocked(1, absl::Seconds(30)));
  // n0's reads so far (its one worker is blocked in the last of them, e0).
  auto seen_on_n0 = [&] {
    std::vector<std::string> seen;
    for (const std::string& p : order.order()) {
      if (absl::StrContains(p, absl::StrCat("/", Node(0), "/"))) {
        seen.push_back(p.substr(p.rfind('/') + 1));
      }
    }
    return seen;
  };
  // Wait (bounded) until both retries are in n0's queue: every one of its
  // 10 attempts read or queued. Not until its `requests` reach 10: an
  // attempt is counted there when dispatched, and the calling thread hands
  // it to its node a little later (Flush), which may be after e0 is
  // released and the worker took e1..e7.
  const absl::Time limit = absl::Now() + absl::Seconds(30);
  int64_t queued = 0;
  size_t seen = 0;
  for (;;) {
    queued = FindNode((*client)->Stats(), Node(0))->queued;
    seen = seen_on_n0().size();
    if (queued + static_cast<int64_t>(seen) >= 10 || absl::Now() > limit) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(queued + static_cast<int64_t>(seen), 10)
      << "n0: " << queued << " queued, " << seen << " read, after 30 s";
  faulty_.Release();
  reader.join();
  ASSERT_THAT(n, IsOk());
  EXPECT_TRUE(got == data);
  const std::vector<std::string> on_n0 = seen_on_n0();
  ASSERT_EQ(on_n0.size(), 10u);
  // e0 was taken first (or, if n0's worker had not started yet, the
  // retries were): the retries must come before e1..e7 either way.
  const size_t e8 = std::find(on_n0.begin(), on_n0.end(), "e8") - on_n0.begin();
  const size_t e9 = std::find(on_n0.begin(), on_n0.end(), "e9") - on_n0.begin();
  const size_t e1 = std::find(on_n0.begin(), on_n0.end(), "e1") - on_n0.begin();
  const std::string read_order = absl::StrJoin(on_n0, " ");
  EXPECT_LT(e8, e1) << "a retry waited behind first attempts: " << read_order;
  EXPECT_LT(e9, e1) << "a retry waited behind first attempts: " << read_order;
  EXPECT_LT(e8, e9) << "late pieces were taken last in, first out: "
                    << read_order;
}

TEST_F(ClientTest, HedgeBudgetHolds) {
  SimpleFile("/b", 4096);
  // Reads take 2-20 ms and the hedge delay is the 1st percentile, so nearly
  // every read wants a hedge: only the budget stops them.
  faulty_.AddRule({.action = FaultAction::kDelay,
                   .delay = absl::Milliseconds(2),
                   .jitter = absl::Milliseconds(18)});
  ClientOptions o = Options();
  o.hedge_min_delay = absl::ZeroDuration();
  o.hedge_quantile = 0.01;
  o.hedge_burst = 5;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/b");
  ASSERT_THAT(f, IsOk());
  const int kReads = 100;
  for (int i = 0; i < kReads; ++i) {
    char buf[512];
    ASSERT_THAT((*f)->Read(i, absl::MakeSpan(buf)), IsOk());
  }
  ClientStats s = client->Stats();
  EXPECT_GE(s.hedges, 5u);  // at least the burst was used
  EXPECT_LE(s.hedges, static_cast<uint64_t>(0.05 * kReads + 5));
}

TEST_F(ClientTest, DrainedNodeGetsNoNewReads) {
  SimpleFile("/d", 40000);
  ClientOptions o = Options();
  o.max_io_size = 4096;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/d");
  ASSERT_THAT(f, IsOk());
  std::string buf(40000, '\0');
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  ASSERT_THAT(store_->SetNodeState("n0", v1::DRAINING), IsOk());
  const uint64_t before = FindNode(client->Stats(), "n0")->requests;
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  ClientStats s = client->Stats();
  EXPECT_EQ(FindNode(s, "n0")->requests, before);
  EXPECT_FALSE(FindNode(s, "n0")->admissible);
}

TEST_F(ClientTest, LayoutChangeAdoptsSameBytesAndAbortsOtherwise) {
  const std::string data = SimpleFile("/l", 8192);
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/l");
  ASSERT_THAT(f, IsOk());
  auto entry = store_->GetFile("/l");
  ASSERT_THAT(entry, IsOk());
  // Same bytes, one replica dropped: adopted silently.
  v1::FileLayout l = entry->layout;
  l.mutable_extents(0)->mutable_replicas()->RemoveLast();
  auto e2 = store_->ReplaceLayout("/l", l, entry->mod_revision);
  ASSERT_THAT(e2, IsOk());
  std::string buf(8192, '\0');
  ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  EXPECT_EQ(buf, data);
  EXPECT_EQ(client->Stats().layout_refreshes, 1u);
  // Resized: the bytes may differ.
  l.set_size(4096);
  l.mutable_extents(0)->set_length(4096);
  ASSERT_THAT(store_->ReplaceLayout("/l", l, e2->mod_revision), IsOk());
  EXPECT_THAT((*f)->Read(0, absl::MakeSpan(buf)),
              StatusIs(absl::StatusCode::kAborted));
  // A pinned File does not change.
  auto pinned = client->OpenFile("/l", e2->mod_revision);
  ASSERT_THAT(pinned, IsOk());
  EXPECT_EQ((*pinned)->size(), 8192u);
}

TEST_F(ClientTest, ReaderAndMultiFileReadV) {
  const std::string a = SimpleFile("/ra", 300000);
  const std::string b = SimpleFile("/rb", 7000);
  ClientOptions o = Options();
  o.max_io_size = 16384;
  Client* client = OpenClient(o);
  auto fa = client->OpenFile("/ra");
  auto fb = client->OpenFile("/rb");
  ASSERT_THAT(fa, IsOk());
  ASSERT_THAT(fb, IsOk());
  std::unique_ptr<Reader> owned_reader =
      fa->get()->NewReader({.initial_readahead = 4096, .max_readahead = 65536});
  Reader& reader = *owned_reader;
  std::string got;
  char chunk[1000];
  for (int i = 0; i < 1000; ++i) {
    auto n = reader.Read(absl::MakeSpan(chunk));
    ASSERT_THAT(n, IsOk());
    if (*n == 0) break;
    got.append(chunk, *n);
  }
  EXPECT_EQ(got, a);
  EXPECT_EQ(reader.readahead(), 65536u);
  ASSERT_THAT(reader.Seek(10), IsOk());
  ASSERT_THAT(reader.Read(absl::MakeSpan(chunk)), IsOk());
  EXPECT_EQ(std::string(chunk, 1000), a.substr(10, 1000));
  EXPECT_EQ(reader.readahead(), 4096u);

  std::string x(5000, '\0'), y(100, '\0'), z(10, '\0');
  std::vector<FileReadRange> ranges = {{fa->get(), 1000, absl::MakeSpan(x)},
                                       {fb->get(), 6950, absl::MakeSpan(y)},
                                       {fb->get(), 7001, absl::MakeSpan(z)}};
  auto r = client->ReadV(ranges);
  ASSERT_THAT(r[0], IsOk());
  EXPECT_EQ(x, a.substr(1000, 5000));
  ASSERT_THAT(r[1], IsOk());
  EXPECT_EQ(*r[1], 50u);
  EXPECT_EQ(y.substr(0, 50), b.substr(6950));
  EXPECT_THAT(r[2], StatusIs(absl::StatusCode::kOutOfRange));

  auto st = client->Stat("/rb");
  ASSERT_THAT(st, IsOk());
  EXPECT_EQ(st->size, 7000u);
  auto list = client->List("/");
  ASSERT_THAT(list, IsOk());
  EXPECT_EQ(list->size(), 2u);
  const std::string prom = client->PrometheusText();
  EXPECT_THAT(prom, HasSubstr("rangefs_client_node_bytes_total{node=\"n0\"}"));
  EXPECT_THAT(prom, HasSubstr("rangefs_client_hedges_total"));
  EXPECT_THAT(prom, HasSubstr("rangefs_client_read_latency_seconds_bucket"));
}

TEST_F(ClientTest, ReaderIsByteExactWithAndWithoutPrefetch) {
  const std::string data = RandomBytes(gen_, 1000000 + 123);
  CreateFile("/scan", data, /*striped=*/false, 0, 0);
  ClientOptions o = Options();
  o.max_io_size = 16384;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/scan");
  ASSERT_THAT(f, IsOk());
  for (bool prefetch : {false, true}) {
    for (size_t chunk : {1000, 4096, 65536, 300000}) {
      SCOPED_TRACE(absl::StrCat("prefetch=", prefetch, " chunk=", chunk));
      std::unique_ptr<Reader> owned_reader =
          f->get()->NewReader({.initial_readahead = 4096,
                               .max_readahead = 65536,
                               .prefetch = prefetch});
      Reader& reader = *owned_reader;
      std::string got, buf(chunk, '\0');
      for (int i = 0; i < 2000; ++i) {
        auto n = reader.Read(absl::MakeSpan(buf));
        ASSERT_THAT(n, IsOk());
        if (*n == 0) break;
        got.append(buf.data(), *n);
      }
      EXPECT_EQ(got.size(), data.size());
      EXPECT_TRUE(got == data);
      EXPECT_EQ(reader.position(), data.size());
      ASSERT_EQ(ReadOk(reader.Read(absl::MakeSpan(buf))), 0u);

      // Seek back into the middle (a prefetch may be in flight), then
      // forward, then to exactly where the stream would continue.
      for (uint64_t at : {uint64_t{500001}, uint64_t{12345}, uint64_t{900000},
                          std::min<uint64_t>(900000 + chunk, data.size())}) {
        ASSERT_THAT(reader.Seek(at), IsOk());
        auto n = reader.Read(absl::MakeSpan(buf));
        ASSERT_THAT(n, IsOk());
        ASSERT_EQ(*n, std::min<uint64_t>(chunk, data.size() - at));
        EXPECT_TRUE(std::string(buf.data(), *n) == data.substr(at, *n));
      }
      EXPECT_THAT(reader.Seek(data.size() + 1),
                  StatusIs(absl::StatusCode::kOutOfRange));
    }
  }
}

TEST_F(ClientTest, ReaderNextViewsAreByteExact) {
  const std::string data = RandomBytes(gen_, 1000000 + 77);
  CreateFile("/views", data, /*striped=*/false, 0, 0);
  ClientOptions o = Options();
  o.max_io_size = 16384;
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/views");
  ASSERT_THAT(f, IsOk());
  for (bool prefetch : {false, true}) {
    for (size_t max : {size_t{1000}, size_t{65536}, size_t{300000}}) {
      SCOPED_TRACE(absl::StrCat("prefetch=", prefetch, " max=", max));
      std::unique_ptr<Reader> owned_reader =
          f->get()->NewReader({.initial_readahead = 4096,
                               .max_readahead = 65536,
                               .prefetch = prefetch});
      Reader& reader = *owned_reader;
      std::string got;
      for (int i = 0; i < 5000; ++i) {
        auto view = reader.Next(max);
        ASSERT_THAT(view, IsOk());
        if (view->empty()) break;
        ASSERT_LE(view->size(), std::min<size_t>(max, 65536));
        got.append(view->data(), view->size());
      }
      EXPECT_TRUE(got == data);
      EXPECT_EQ(reader.position(), data.size());
      // Mixed with Read and Seek: views continue at the position.
      ASSERT_THAT(reader.Seek(12345), IsOk());
      std::string buf(1000, '\0');
      ASSERT_EQ(ReadOk(reader.Read(absl::MakeSpan(buf))), 1000u);
      auto view = reader.Next(500);
      ASSERT_THAT(view, IsOk());
      EXPECT_TRUE(std::string(view->data(), view->size()) ==
                  data.substr(13345, view->size()));
      EXPECT_EQ(view->size(), 500u);
    }
  }
}

TEST_F(ClientTest, ReaderNextReportsAFailedWindowOnce) {
  constexpr size_t kWindow = 65536;
  const std::string data = WindowedFile("/nx", 4 * kWindow, kWindow);
  faulty_.ClearRules();
  faulty_.AddRule({.path_contains = "wnx/e1",
                   .error = absl::UnavailableError("window one is gone")});
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/nx");
  ASSERT_THAT(f, IsOk());
  std::unique_ptr<Reader> owned_reader =
      f->get()->NewReader({.initial_readahead = kWindow,
                           .max_readahead = kWindow,
                           .prefetch = true});
  Reader& reader = *owned_reader;
  auto first = reader.Next();
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->size(), kWindow);
  std::string got(first->data(), first->size());
  auto bad = reader.Next();
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(reader.position(), kWindow);
  faulty_.ClearRules();
  for (int i = 0; i < 100; ++i) {
    auto view = reader.Next();
    ASSERT_THAT(view, IsOk());
    if (view->empty()) break;
    got.append(view->data(), view->size());
  }
  EXPECT_TRUE(got == data);
}

TEST_F(ClientTest, ReaderPrefetchErrorComesWithTheReadThatNeedsIt) {
  constexpr size_t kWindow = 65536;
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(absl::StrCat("prefetch=", prefetch));
    const std::string path = prefetch ? "/pf1" : "/pf0";
    const std::string data = WindowedFile(path, 6 * kWindow, kWindow);
    faulty_.ClearRules();
    // Window 2 (bytes [128K, 192K)) fails on both replicas.
    faulty_.AddRule({.path_contains = absl::StrCat("w", path.substr(1), "/e2"),
                     .error = absl::UnavailableError("window two is gone")});
    Client* client = OpenClient(Options());
    auto f = client->OpenFile(path);
    ASSERT_THAT(f, IsOk());
    std::unique_ptr<Reader> owned_reader =
        f->get()->NewReader({.initial_readahead = kWindow,
                             .max_readahead = kWindow,
                             .prefetch = prefetch});
    Reader& reader = *owned_reader;
    std::string got, buf(24576, '\0');
    // 24K reads: the sixth one, at 120K, gets the 8K before the bad window.
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(ReadOk(reader.Read(absl::MakeSpan(buf))), buf.size());
      got.append(buf);
    }
    ASSERT_EQ(ReadOk(reader.Read(absl::MakeSpan(buf))), 8192u);
    got.append(buf.data(), 8192);
    EXPECT_EQ(reader.position(), 2 * kWindow);
    auto bad = reader.Read(absl::MakeSpan(buf));
    EXPECT_THAT(bad, StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_THAT(bad.status().message(), HasSubstr("window two is gone"));
    EXPECT_EQ(reader.position(), 2 * kWindow);
    // Once the node recovers the stream continues where it failed.
    faulty_.ClearRules();
    for (int i = 0; i < 100; ++i) {
      auto n = reader.Read(absl::MakeSpan(buf));
      ASSERT_THAT(n, IsOk());
      if (*n == 0) break;
      got.append(buf.data(), *n);
    }
    EXPECT_TRUE(got == data);
  }
}

TEST_F(ClientTest, ReaderDestroyedMidStreamWaitsForItsPrefetch) {
  const std::string data = RandomBytes(gen_, 2000000);
  CreateFile("/mid", data, /*striped=*/false, 0, 0);
  faulty_.AddRule({.action = FaultAction::kDelay,
                   .delay = absl::Milliseconds(2),
                   .jitter = absl::Milliseconds(3)});
  Client* client = OpenClient(Options());
  auto f = client->OpenFile("/mid");
  ASSERT_THAT(f, IsOk());
  const uint64_t reads_before = mem_.reads();
  for (int round = 0; round < 20; ++round) {
    auto reader = (*f)->NewReader(
        ReaderOptions{.initial_readahead = 65536, .max_readahead = 262144});
    char buf[5000];
    for (int i = 0; i <= round; ++i) {
      ASSERT_THAT(reader->Read(absl::MakeSpan(buf)), IsOk());
    }
    EXPECT_TRUE(
        std::string(buf, sizeof(buf)) ==
        data.substr((round + 1) * sizeof(buf) - sizeof(buf), sizeof(buf)));
    const absl::Time t0 = absl::Now();
    reader.reset();  // cancels and joins the in-flight prefetch
    EXPECT_LT(absl::Now() - t0, kAtOnce);
  }
  EXPECT_GT(mem_.reads(), reads_before);
  // A blocked prefetch: reads return by their deadline, destruction at once.
  faulty_.ClearRules();
  {
    std::unique_ptr<Reader> owned_reader =
        f->get()->NewReader({.initial_readahead = 65536,
                             .max_readahead = 65536,
                             .read = {.deadline = absl::Milliseconds(200)}});
    Reader& reader = *owned_reader;
    char buf[1000];
    ASSERT_THAT(reader.Read(absl::MakeSpan(buf)), IsOk());
    faulty_.AddRule({.action = FaultAction::kBlock});
    const absl::Time t0 = absl::Now();
    // The prefetch may have finished already; either way this returns.
    for (int i = 0; i < 200; ++i) {
      auto n = reader.Read(absl::MakeSpan(buf));
      if (!n.ok()) {
        EXPECT_THAT(n, StatusIs(absl::StatusCode::kDeadlineExceeded));
        break;
      }
    }
    EXPECT_LT(absl::Now() - t0, kAtOnce);
  }
  faulty_.Release();
}

TEST_F(ClientTest, DestructionIsBoundedWithReadsStuckAndLeavesThemHarmless) {
  SimpleFile("/stuck", 100000);
  faulty_.AddRule({.action = FaultAction::kBlock});  // both replicas hang
  CountingClock clock;
  const int threads_before = ThreadCount();
  ClientOptions o = Options();
  ClientTestHooks hooks = Hooks();
  hooks.clock = &clock;
  o.hedging = false;
  o.teardown_timeout = absl::Milliseconds(200);
  auto client = OpenClientForTesting(o, hooks);
  ASSERT_THAT(client, IsOk());
  auto f = (*client)->OpenFile("/stuck");
  ASSERT_THAT(f, IsOk());
  std::string buf(100000, '\x5C');
  // The call ends once both replicas' reads are blocked (n0's, then n1's
  // after n0's stalled), not by a deadline that a loaded machine could
  // reach before n1's read started.
  ReadCanceller cancel;
  absl::StatusOr<size_t> n;
  std::thread caller([&] {
    n = (*f)->Read(0, absl::MakeSpan(buf),
                   {.deadline = absl::Seconds(60), .canceller = &cancel});
  });
  const bool blocked = faulty_.WaitForBlocked(2, absl::Seconds(30));
  cancel.Cancel();
  caller.join();
  ASSERT_TRUE(blocked) << faulty_.blocked_now() << " read(s) blocked";
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kCancelled));
  f->reset();
  const absl::Time t0 = absl::Now();
  client->reset();
  EXPECT_LT(absl::Now() - t0, kAtOnce);
  // The blocked threads were left running; nothing else.
  const int left = ThreadCount() - threads_before;
  EXPECT_GE(left, 2);
  EXPECT_LE(left, 2 * o.max_inflight_per_node);
  const int64_t clock_calls = clock.calls();
  // The mount comes back: the left threads' reads complete (into their own
  // buffers), and the threads exit without running any client code.
  faulty_.ClearRules();
  faulty_.Release();
  EXPECT_TRUE(Eventually([&] { return ThreadCount() == threads_before; }))
      << ThreadCount() - threads_before << " thread(s) still running";
  EXPECT_EQ(faulty_.blocked_now(), 0);
  EXPECT_EQ(clock.calls(), clock_calls);
  EXPECT_EQ(buf, std::string(100000, '\x5C'));
}

TEST_F(ClientTest, ReaderDestructionCancelsItsHungPrefetchAtOnce) {
  // Extents e0..e15 on n0 and n1; every read of e1* hangs on both.
  const std::string data = WindowedFile("/rh", 16 * 65536, 65536);
  faulty_.AddRule({.path_contains = "/e1", .action = FaultAction::kBlock});
  ClientOptions o = Options();  // 10 s default deadline
  o.teardown_timeout = absl::Milliseconds(200);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/rh");
  ASSERT_THAT(f, IsOk());
  auto reader = (*f)->NewReader(
      ReaderOptions{.initial_readahead = 65536, .max_readahead = 1 << 20});
  std::string buf(1000, '\0');
  ASSERT_THAT(reader->Read(absl::MakeSpan(buf)), IsOk());  // e0; prefetch e1
  EXPECT_TRUE(buf == data.substr(0, 1000));
  ASSERT_TRUE(faulty_.WaitForBlocked(1, absl::Seconds(30)));
  absl::Time t0 = absl::Now();
  reader.reset();
  EXPECT_LT(absl::Now() - t0, kAtOnce);
  t0 = absl::Now();
  f->reset();
  clients_.clear();
  EXPECT_LT(absl::Now() - t0, kAtOnce);
}

TEST_F(ClientTest, CancelEndsACallAtOnceWithoutTouchingItsBuffer) {
  SimpleFile("/cx", 100000);
  faulty_.AddRule({.action = FaultAction::kBlock});
  Client* client = OpenClient(Options());  // 10 s default deadline
  auto f = client->OpenFile("/cx");
  ASSERT_THAT(f, IsOk());
  ReadCanceller cancel;
  std::string buf(100000, '\x5C');
  absl::StatusOr<size_t> n;
  absl::Time returned;
  std::thread caller([&] {
    n = (*f)->Read(0, absl::MakeSpan(buf), {.canceller = &cancel});
    returned = absl::Now();
  });
  ASSERT_TRUE(faulty_.WaitForBlocked(1, absl::Seconds(30)));
  const absl::Time t0 = absl::Now();
  cancel.Cancel();
  caller.join();
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_LT(returned - t0, kAtOnce);
  // Cancelled already: at once, nothing read.
  EXPECT_THAT((*f)->Read(0, absl::MakeSpan(buf), {.canceller = &cancel}),
              StatusIs(absl::StatusCode::kCancelled));
  faulty_.ClearRules();
  faulty_.Release();
  EXPECT_TRUE(Eventually([&] {
    for (const NodeStats& s : client->Stats().nodes) {
      if (s.inflight != 0) return false;
    }
    return true;
  }));
  EXPECT_EQ(buf, std::string(100000, '\x5C'));
  // An uncancelled call still reads.
  EXPECT_EQ(ReadOk((*f)->Read(0, absl::MakeSpan(buf))), buf.size());
}

TEST_F(ClientTest, ColdClientMovesOffANodeThatNeverAnswers) {
  // A new process (no latency known) and n0 hung from the start: its
  // pieces move by stall detection well within a second, not after the
  // attempt timeout; no hedge needed. 8 pieces: the process never knows
  // the 10 latencies a p99 needs (the cold_latency prior rules).
  const std::string data = WindowedFile("/cold", 8 * 4096, 4096);
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  ClientOptions o = RoundRobinNoHedging();
  o.attempt_timeout = absl::Seconds(30);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/cold");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(ReadOk((*f)->Read(0, absl::MakeSpan(buf))), data.size());
  EXPECT_LT(absl::Now() - t0, kAtOnce);
  EXPECT_TRUE(buf == data);
  ClientStats s = client->Stats();
  const NodeStats* n0 = FindNode(s, "n0");
  EXPECT_GE(n0->stalls, 1u);
  EXPECT_EQ(n0->timeouts, 0u);
  EXPECT_FALSE(n0->admissible);
}

TEST_F(ClientTest, ColdNodeQueuedBehindAStuckThreadIsJudgedToo) {
  // One worker per node: n0's only thread hangs on the first piece, whose
  // hedge answers from n1; the pieces queued behind it never start, yet
  // they move well before the attempt timeout.
  const std::string data = WindowedFile("/q", 32 * 4096, 4096);
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  ClientOptions o = Options();
  o.lb_policy = "round_robin";
  o.max_inflight_per_node = 1;
  o.attempt_timeout = absl::Seconds(30);
  Client* client = OpenClient(o);
  auto f = client->OpenFile("/q");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(ReadOk((*f)->Read(0, absl::MakeSpan(buf))), data.size());
  EXPECT_LT(absl::Now() - t0, kAtOnce);
  EXPECT_TRUE(buf == data);
  const NodeStats* n0 = FindNode(client->Stats(), "n0");
  EXPECT_GE(n0->stalls, 1u);
  EXPECT_EQ(n0->timeouts, 0u);
}

// Each read takes `latency` on `clock` (advanced as it starts), then a
// little real time, so that the client's loop sees the time pass while the
// read is in flight.
class ClockedFs : public ReadOnlyFs {
 public:
  ClockedFs(ReadOnlyFs* base, FakeClock* clock, absl::Duration latency)
      : base_(base), clock_(clock), latency_(latency) {}
  absl::StatusOr<size_t> PRead(const MountPath& path, uint64_t offset,
                               absl::Span<char> dst,
                               const FsReadOptions& options) override {
    clock_->Advance(latency_);
    absl::SleepFor(absl::Milliseconds(5));
    return base_->PRead(path, offset, dst, options);
  }
  absl::StatusOr<std::string> ReadFile(const MountPath& path) override {
    return base_->ReadFile(path);
  }
  absl::Status CheckDir(const std::string& path) override {
    return base_->CheckDir(path);
  }

 private:
  ReadOnlyFs* const base_;
  FakeClock* const clock_;
  const absl::Duration latency_;
};

TEST_F(ClientTest, ColdHealthyReadsAreNotHedged) {
  // Every read takes 5 ms: a new process must not hedge them (while it
  // knows fewer than 10 latencies, the hedge delay is cold_latency, 75 ms,
  // not hedge_min_delay). 8 pieces: the process never knows 10. The 5 ms
  // are on a fake clock: all 8 reads take 40 ms of it, however long a
  // loaded machine makes them take.
  const std::string data = WindowedFile("/warm", 8 * 4096, 4096);
  FakeClock clock;
  ClockedFs clocked(&faulty_, &clock, absl::Milliseconds(5));
  ClientOptions o = Options();
  ASSERT_GT(o.cold_latency, absl::Milliseconds(8 * 5));
  ClientTestHooks hooks = Hooks();
  hooks.fs = &clocked;
  hooks.clock = &clock;
  auto client = OpenClientForTesting(o, hooks);  // destroyed before both
  ASSERT_THAT(client, IsOk());
  auto f = (*client)->OpenFile("/warm");
  ASSERT_THAT(f, IsOk());
  std::string buf(data.size(), '\0');
  EXPECT_EQ(ReadOk((*f)->Read(0, absl::MakeSpan(buf))), data.size());
  EXPECT_TRUE(buf == data);
  EXPECT_EQ((*client)->Stats().hedges, 0u);
}

// A ReadV of many small ranges with ReadOptions::max_in_flight keeps at
// most that many reads in flight (and more than one), the next going as one
// ends; every byte lands in its range. The same ReadV without it has more
// in flight at once. A negative value is refused for every range.
TEST_F(ClientTest, MaxInFlightBoundsACallsConcurrentReads) {
  const std::string data = SimpleFile("/f", 64 * 4096);
  ClientOptions o = Options();
  o.hedging = false;
  // Reads are held below: none may stall or time out and be read twice.
  o.stall_factor = 0;
  o.attempt_timeout = absl::Seconds(120);
  Client* c = OpenClient(o);
  auto f = c->OpenFile("/f");
  ASSERT_THAT(f, IsOk());
  std::vector<std::string> bufs(64, std::string(4096, 'x'));
  std::vector<ReadRange> ranges;
  for (int k = 0; k < 64; ++k) {
    ranges.push_back({.offset = static_cast<uint64_t>(k) * 4096,
                      .dst = absl::MakeSpan(bufs[k])});
  }
  // The ReadV with `options`, its reads held until `held` of them are in
  // the file system at once (then released); false if that never happens.
  auto read_all = [&](ReadOptions options, int held) {
    faulty_.ResetMaxInside();
    faulty_.AddRule({.action = FaultAction::kBlock});
    std::vector<absl::StatusOr<size_t>> res;
    std::thread caller([&] { res = (*f)->ReadV(ranges, options); });
    const bool reached = faulty_.WaitForBlocked(held, absl::Seconds(30));
    faulty_.ClearRules();
    faulty_.Release();
    caller.join();
    for (int k = 0; k < 64; ++k) {
      EXPECT_EQ(ReadOk(res[k]), 4096u) << k;
      EXPECT_EQ(bufs[k], data.substr(k * 4096, 4096)) << k;
      bufs[k].assign(4096, 'x');
    }
    return reached;
  };
  for (int cap : {3, 1}) {
    SCOPED_TRACE(absl::StrCat("max_in_flight ", cap));
    EXPECT_TRUE(read_all({.max_in_flight = cap}, cap))
        << "never " << cap << " reads in flight at once";
    EXPECT_LE(faulty_.max_inside(), cap);
  }
  // Without the cap: more at once (16 worker threads).
  EXPECT_TRUE(read_all({}, 4)) << "never 4 reads in flight at once";
  EXPECT_GT(faulty_.max_inside(), 3);

  auto bad = (*f)->ReadV(ranges, {.max_in_flight = -1});
  for (const auto& r : bad) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("max_in_flight")));
  }
}

// A window (max_in_flight) refilled in call order would fill with the
// reads of a node that does not answer and leave the others idle; the
// next read is one of the least busy node's.
TEST_F(ClientTest, MaxInFlightWindowDoesNotPileUpOnAStuckNode) {
  constexpr int kEach = 8;
  const std::string stuck = RandomBytes(gen_, kEach * 4096);
  const std::string quick = RandomBytes(gen_, kEach * 4096);
  OneExtentFile("/stuck", "st", stuck, 1);  // on n0 only
  {
    v1::FileLayout l;
    l.set_size(quick.size());
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_length(quick.size());
    PutObject(Node(1), "qu", quick);
    v1::Replica* r = e->add_replicas();
    r->set_node_id(Node(1));
    r->set_object("qu");
    ASSERT_THAT(store_->CreateFile("/quick", l), IsOk());
  }
  ClientOptions o = Options();
  o.hedging = false;
  o.stall_factor = 0;  // n0's reads wait: nothing moves or times out
  o.attempt_timeout = absl::Seconds(120);
  Client* c = OpenClient(o);
  auto fs = c->OpenFile("/stuck");
  auto fq = c->OpenFile("/quick");
  ASSERT_THAT(fs, IsOk());
  ASSERT_THAT(fq, IsOk());
  // n0's ranges first, in call order.
  std::vector<std::string> bufs(2 * kEach, std::string(4096, 'x'));
  std::vector<FileReadRange> ranges;
  for (int k = 0; k < 2 * kEach; ++k) {
    File* f = k < kEach ? fs->get() : fq->get();
    ranges.push_back(
        {f, static_cast<uint64_t>(k % kEach) * 4096, absl::MakeSpan(bufs[k])});
  }
  faulty_.AddRule({.path_contains = "/n0/", .action = FaultAction::kBlock});
  const uint64_t before = mem_.reads();
  std::vector<absl::StatusOr<size_t>> res;
  std::thread caller([&] { res = c->ReadV(ranges, {.max_in_flight = 4}); });
  // Every read of n1 gets through while n0 holds what it got.
  const bool quick_done =
      Eventually([&] { return mem_.reads() - before >= kEach; });
  const int held = faulty_.blocked_now();
  faulty_.ClearRules();
  faulty_.Release();
  caller.join();
  EXPECT_TRUE(quick_done) << "n1's reads waited behind n0's";
  EXPECT_LE(held, 4);
  for (int k = 0; k < 2 * kEach; ++k) {
    EXPECT_EQ(ReadOk(res[k]), 4096u) << k;
    EXPECT_EQ(bufs[k],
              (k < kEach ? stuck : quick).substr((k % kEach) * 4096, 4096))
        << k;
  }
}

TEST_F(ClientTest, BadOptionsAreInvalidArgument) {
  ClientOptions o = Options();
  o.lb_policy = "fastest_please";
  EXPECT_THAT(OpenClientForTesting(o, Hooks()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o = Options();
  o.max_inflight_per_node = 0;
  EXPECT_THAT(OpenClientForTesting(o, Hooks()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace rangefs
