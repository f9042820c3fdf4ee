// Unit tests of Client::Locate over MemoryKv: ranges cut where the replica
// set changes, hosts from the node records, healthy replicas first.
#include "client_lib/locate.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "client_lib/internal/local_node.h"
#include "client_lib/testing/client_testing.h"
#include "client_lib/testing/fault_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/memory_kv.h"
#include "namespace/store.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using ::testing::ElementsAre;

std::vector<std::string> Nodes(const RangeLocation& r) {
  std::vector<std::string> out;
  for (const ReplicaLocation& l : r.replicas) out.push_back(l.node);
  return out;
}

class LocateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = ns::NewKvStore(&kv_);
    for (int i = 0; i < 4; ++i) {
      v1::NodeRecord r;
      r.set_id(absl::StrCat("n", i));
      r.add_addresses(absl::StrCat("10.0.0.", i, ":7070"));
      r.add_addresses(absl::StrCat("10.0.1.", i, ":7070"));
      if (i == 3) r.add_addresses("[fd00::3]:7070");
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
    Open("");
  }

  // (Re)opens client_ with ClientOptions::local_node = `local_node`.
  void Open(const std::string& local_node) {
    client_.reset();
    ClientTestHooks h;
    h.kv = &kv_;
    h.fs = &mem_;
    ClientOptions o;
    o.data_path = DataPath::kMount;
    o.mount_root = "/m";
    o.local_node = local_node;
    o.hedging = false;
    auto c = OpenClientForTesting(o, h);
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
  }

  // Extents of 1000 bytes; extent k on nodes[k].
  void CreateFile(const std::string& path,
                  const std::vector<std::vector<int>>& nodes) {
    v1::FileLayout l;
    l.set_size(1000 * nodes.size());
    l.set_state(v1::READY);
    for (size_t k = 0; k < nodes.size(); ++k) {
      auto* e = l.add_extents();
      e->set_offset(1000 * k);
      e->set_length(1000);
      for (int n : nodes[k]) {
        auto* r = e->add_replicas();
        r->set_node_id(absl::StrCat("n", n));
        r->set_object(absl::StrCat("o", k));
      }
    }
    ASSERT_THAT(store_->CreateFile(path, l), IsOk());
  }

  ns::MemoryKv kv_;
  MemoryFs mem_;  // the nodes' mounts /m/<node>; the local one's /export
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<Client> client_;
};

TEST_F(LocateTest, RangesFollowTheReplicaSetsWithHosts) {
  CreateFile("/f", {{0, 1}, {0, 1}, {2, 3}, {1, 0}});
  auto where = client_->Locate("/f", 500, 3000);
  ASSERT_THAT(where, IsOk());
  ASSERT_EQ(where->size(), 3u);
  EXPECT_EQ((*where)[0].offset, 500u);
  EXPECT_EQ((*where)[0].length, 1500u);  // extents 0 and 1 merged
  EXPECT_THAT(Nodes((*where)[0]), ElementsAre("n0", "n1"));
  EXPECT_EQ((*where)[1].offset, 2000u);
  EXPECT_EQ((*where)[1].length, 1000u);
  EXPECT_THAT(Nodes((*where)[1]), ElementsAre("n2", "n3"));
  EXPECT_EQ((*where)[2].offset, 3000u);
  EXPECT_EQ((*where)[2].length, 500u);
  EXPECT_THAT(Nodes((*where)[2]), ElementsAre("n1", "n0"));  // layout order
  const ReplicaLocation& n3 = (*where)[1].replicas[1];
  EXPECT_THAT(n3.addresses,
              ElementsAre("10.0.0.3:7070", "10.0.1.3:7070", "[fd00::3]:7070"));
  EXPECT_THAT(n3.hosts, ElementsAre("10.0.0.3", "10.0.1.3", "fd00::3"));
  EXPECT_TRUE(n3.healthy);
}

TEST_F(LocateTest, ClipsAtTheEndAndRejectsPastIt) {
  CreateFile("/g", {{0}, {1}});
  auto where = client_->Locate("/g", 500, 1 << 20);
  ASSERT_THAT(where, IsOk());
  ASSERT_EQ(where->size(), 2u);
  EXPECT_EQ((*where)[1].offset, 1000u);
  EXPECT_EQ((*where)[1].length, 1000u);
  auto empty = client_->Locate("/g", 2000, 10);
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->empty());
  EXPECT_THAT(client_->Locate("/g", 2001, 1),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(client_->Locate("/missing", 0, 1),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(client_->Locate("bad//path", 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(LocateTest, DrainedReplicaGoesLast) {
  CreateFile("/h", {{0, 1}});
  ASSERT_THAT(store_->SetNodeState("n0", v1::DRAINING), IsOk());
  // The client learns the node state through its watch.
  const absl::Time end = absl::Now() + absl::Seconds(30);
  std::vector<std::string> order;
  while (absl::Now() < end) {
    auto where = client_->Locate("/h", 0, 1000);
    ASSERT_THAT(where, IsOk());
    ASSERT_EQ(where->size(), 1u);
    order = Nodes((*where)[0]);
    if (order[0] == "n1") {
      EXPECT_TRUE((*where)[0].replicas[0].healthy);
      EXPECT_FALSE((*where)[0].replicas[1].healthy);
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_THAT(order, ElementsAre("n1", "n0"));
}

TEST_F(LocateTest, LocalNodeGoesFirstWhileHealthy) {
  CreateFile("/l", {{0, 1, 2}});
  Open("n2");
  auto where = client_->Locate("/l", 0, 1000);
  ASSERT_THAT(where, IsOk());
  EXPECT_THAT(Nodes((*where)[0]), ElementsAre("n2", "n0", "n1"));
}

TEST_F(LocateTest, LocalNodeServesEveryReadFromItsExport) {
  std::string data;
  for (int k = 0; k < 5; ++k) data += std::string(1000, 'a' + k);
  CreateFile("/r", {{0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}});
  for (int k = 0; k < 5; ++k) {
    const std::string obj = absl::StrCat("o", k);
    for (int n = 0; n < 2; ++n) {  // n2 has no mount: only its export
      mem_.AddFile(absl::StrCat("/m/n", n, "/", obj),
                   data.substr(1000 * k, 1000));
    }
    mem_.AddFile("/export/" + obj, data.substr(1000 * k, 1000));  // n2's
  }
  Open("n2");
  auto f = client_->OpenFile("/r");
  ASSERT_THAT(f, IsOk());
  std::string buf(5000, '\0');
  for (int i = 0; i < 4; ++i) {
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  EXPECT_EQ(buf, data);
  const ClientStats s = client_->Stats();
  EXPECT_EQ(s.local_bytes, 4 * data.size());
  for (const NodeStats& n : s.nodes) {
    EXPECT_EQ(n.local, n.node == "n2") << n.node;
    if (n.node != "n2") {
      EXPECT_EQ(n.requests, 0u) << n.node;
    }
  }
  f->reset();
  // Without it the reads go to the replicas' mounts (n2's fails over).
  Open("");
  f = client_->OpenFile("/r");
  ASSERT_THAT(f, IsOk());
  for (int i = 0; i < 4; ++i) {
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
  }
  EXPECT_EQ(client_->Stats().local_bytes, 0u);
  f->reset();
}

TEST(LocalNodeTest, ConfiguredIdOrAnInterfaceAddress) {
  using client_internal::HostOfAddress;
  using client_internal::IsLocalNode;
  EXPECT_EQ(HostOfAddress("10.1.2.3:7070"), "10.1.2.3");
  EXPECT_EQ(HostOfAddress("[fd00::1]:7070"), "fd00::1");
  EXPECT_EQ(HostOfAddress("fd00::1"), "fd00::1");
  EXPECT_EQ(HostOfAddress("host"), "host");
  const std::vector<std::string> mine = {"10.0.0.5", "fd00::5"};
  EXPECT_TRUE(IsLocalNode("n1", {"10.0.0.9:1", "10.0.0.5:7070"}, "", mine));
  EXPECT_TRUE(IsLocalNode("n1", {"[fd00::5]:7070"}, "", mine));
  EXPECT_FALSE(IsLocalNode("n1", {"10.0.0.6:7070"}, "", mine));
  EXPECT_FALSE(IsLocalNode("n1", {"10.0.0.5:7070"}, "n2", mine));
  EXPECT_TRUE(IsLocalNode("n2", {}, "n2", mine));
  for (const std::string& h : client_internal::LocalInterfaceHosts()) {
    EXPECT_NE(h, "127.0.0.1");  // loopback never counts
    EXPECT_NE(h, "::1");
  }
}

}  // namespace
}  // namespace rangefs
