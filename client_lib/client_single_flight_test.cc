// Single flight at the piece level (issue 20): concurrent reads of the same
// bytes in one client share one physical read, and a read waiting for
// another's never waits past its own deadline. Namespace on a real etcd;
// the nodes' mounts are temp directories read through a FaultyFs over the
// real file system, which holds the first physical read until released so
// that the concurrency is certain, not a matter of timing.
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "base/testing/temp_dir.h"
#include "client_lib/client.h"
#include "client_lib/fs.h"
#include "client_lib/testing/client_testing.h"
#include "client_lib/testing/fault_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/etcd_namespace.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using testing::EtcdCluster;

constexpr size_t kMiB = 1 << 20;
constexpr size_t kSize = 4 * kMiB;

// Polls `done` up to 30 s (generous: the machine may be loaded).
template <typename F>
bool Eventually(F done) {
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

class SingleFlightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::MakeTempDir("single_flight");
    ASSERT_THAT(dir, IsOk());
    root_ = *dir;
    auto ns = testing::StartEtcdNamespace();
    ASSERT_THAT(ns, IsOk());
    etcd_ = std::move(ns->etcd);
    etcd_client_ = std::move(ns->client);
    kv_ = std::move(ns->kv);
    store_ = std::move(ns->store);
    ASSERT_EQ(mkdir((root_ + "/n0").c_str(), 0755), 0);
    v1::NodeRecord r;
    r.set_id("n0");
    r.add_addresses("127.0.0.1:1");  // no agent: mount path only
    r.set_export_path("/export");
    ASSERT_THAT(store_->AddNode(r), IsOk());

    absl::BitGen gen(std::seed_seq{20});
    data_.resize(kSize);
    for (char& c : data_) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
    std::ofstream out(root_ + "/n0/obj", std::ios::binary);
    out.write(data_.data(), static_cast<std::streamsize>(data_.size()));
    ASSERT_TRUE(out.good());
    out.close();
    v1::FileLayout l;
    l.set_size(kSize);
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_offset(0);
    e->set_length(kSize);
    auto* rep = e->add_replicas();
    rep->set_node_id("n0");
    rep->set_object("obj");
    ASSERT_THAT(store_->CreateFile("/hot/f", l), IsOk());

    ClientOptions o;
    o.mount_root = root_;
    o.data_path = DataPath::kMount;
    o.mount_status_file = "-";
    o.io_uring = false;     // reads go through the FaultyFs
    o.max_io_size = kSize;  // one piece per 4 MiB read
    o.hedging = false;      // one replica anyway
    o.attempt_timeout = absl::Seconds(30);
    o.default_deadline = absl::Seconds(30);
    ClientTestHooks h;
    h.kv = kv_.get();
    h.fs = &faulty_;
    auto c = OpenClientForTesting(o, h);
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
    auto f = client_->OpenFile("/hot/f");
    ASSERT_THAT(f, IsOk());
    file_ = std::move(*f);
  }

  void TearDown() override {
    faulty_.Release();  // a read still held ends now
    file_.reset();
    client_.reset();
    store_.reset();
    kv_.reset();
    etcd_client_.reset();
    etcd_.reset();
    testing::RemoveTree(root_);
  }

  uint64_t PhysicalReads() {
    uint64_t n = 0;
    for (const NodeStats& s : client_->Stats().nodes) n += s.requests;
    return n;
  }

  std::string root_;
  std::string data_;
  std::unique_ptr<ReadOnlyFs> posix_ = NewPosixFs();
  FaultyFs faulty_{posix_.get()};
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> etcd_client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<File> file_;
};

TEST_F(SingleFlightTest, SixteenReadersOfOneRangeShareOnePhysicalRead) {
  constexpr int kThreads = 16;
  faulty_.AddRule(
      {.path_contains = "/obj", .action = FaultAction::kBlock, .nth = 1});
  std::vector<std::string> bufs(kThreads, std::string(kSize, '\0'));
  std::vector<absl::StatusOr<size_t>> results(kThreads, size_t{0});
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { results[t] = file_->Read(0, absl::MakeSpan(bufs[t])); });
  }
  // The first read is held; the other 15 wait for it.
  const bool joined = Eventually([&] {
    return faulty_.blocked_now() == 1 &&
           client_->Stats().shared_waiting == kThreads - 1;
  });
  EXPECT_TRUE(joined) << "waiting " << client_->Stats().shared_waiting;
  faulty_.Release();
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_THAT(results[t], IsOk());
    EXPECT_EQ(*results[t], kSize);
    EXPECT_TRUE(bufs[t] == data_) << "reader " << t << " got wrong bytes";
  }
  const ClientStats s = client_->Stats();
  EXPECT_EQ(PhysicalReads(), 1u);
  EXPECT_EQ(s.shared_pieces, kThreads - 1u);
  EXPECT_EQ(s.shared_bytes, (kThreads - 1u) * kSize);
  EXPECT_EQ(s.shared_waiting, 0);
  EXPECT_EQ(s.bytes, kThreads * kSize);

  // Flights end with their reads: the next read is a physical one.
  std::string again(kMiB, '\0');
  ASSERT_THAT(file_->Read(kMiB, absl::MakeSpan(again)), IsOk());
  EXPECT_EQ(again, data_.substr(kMiB, kMiB));
  EXPECT_EQ(PhysicalReads(), 2u);
}

TEST_F(SingleFlightTest, OverlappingReaderWaitsOnlyWithinItsOwnDeadline) {
  faulty_.AddRule(
      {.path_contains = "/obj", .action = FaultAction::kBlock, .nth = 1});
  std::string whole(kSize, '\0');
  absl::StatusOr<size_t> leader = size_t{0};
  std::thread t([&] { leader = file_->Read(0, absl::MakeSpan(whole)); });
  ASSERT_TRUE(Eventually([&] { return faulty_.blocked_now() == 1; }));

  // [1 MiB, 2 MiB) lies inside the held read: it waits for it, up to its
  // own 300 ms deadline.
  std::string part(kMiB, '\0');
  ReadOptions ro;
  ro.deadline = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<size_t> r = file_->Read(kMiB, absl::MakeSpan(part), ro);
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(faulty_.blocked_now(), 1);  // the leader is still held
  EXPECT_EQ(PhysicalReads(), 1u);

  faulty_.Release();
  t.join();
  ASSERT_THAT(leader, IsOk());
  EXPECT_TRUE(whole == data_);
  EXPECT_EQ(client_->Stats().shared_pieces, 0u);  // nobody left to serve
}

TEST_F(SingleFlightTest, FollowersReadThemselvesWhenTheLeaderGivesUp) {
  faulty_.AddRule(
      {.path_contains = "/obj", .action = FaultAction::kBlock, .nth = 1});
  std::string a(kSize, '\0');
  absl::StatusOr<size_t> leader = size_t{0};
  // The leader gives up (is cancelled) once its follower waits for it: a
  // short deadline could pass first on a loaded machine (the follower would
  // then read by itself, never having followed).
  ReadCanceller give_up;
  ReadOptions leader_options;
  leader_options.canceller = &give_up;
  std::thread t(
      [&] { leader = file_->Read(0, absl::MakeSpan(a), leader_options); });
  const bool held = Eventually([&] { return faulty_.blocked_now() == 1; });
  std::string b(2 * kMiB, '\0');
  absl::StatusOr<size_t> follower = size_t{0};
  std::thread u([&] { follower = file_->Read(kMiB, absl::MakeSpan(b)); });
  const bool following =
      Eventually([&] { return client_->Stats().shared_waiting == 1; });
  give_up.Cancel();
  t.join();  // the leader gave up: its follower is released
  EXPECT_TRUE(held);
  EXPECT_TRUE(following);
  EXPECT_THAT(leader, StatusIs(absl::StatusCode::kCancelled));
  u.join();
  ASSERT_THAT(follower, IsOk());
  EXPECT_TRUE(b == data_.substr(kMiB, 2 * kMiB));
  const ClientStats s = client_->Stats();
  EXPECT_EQ(s.shared_released, 1u);
  EXPECT_EQ(PhysicalReads(), 2u);
}

}  // namespace
}  // namespace rangefs
