// Dataset-scale metadata on a real etcd (issue 20): a listed directory is
// opened without etcd requests, a pinned Dataset works from memory (etcd
// stopped, files removed / renamed / replaced after its revision, poisoned
// records), and compaction ends pinning with OUT_OF_RANGE. The nodes'
// mounts are temp directories (mount path); the namespace is a real etcd.
#include <signal.h>
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
#include "client_lib/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/keys.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/etcd_namespace.h"

namespace rangefs {
namespace {

namespace v1 = ::rangefs::v1;
using testing::EtcdCluster;
using ::testing::HasSubstr;

constexpr char kCluster[] = "ds";
constexpr int kNodes = 2;

std::string Node(int i) { return absl::StrCat("n", i); }

class ClientDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::MakeTempDir("dataset");
    ASSERT_THAT(dir, IsOk());
    root_ = *dir;
    auto ns = testing::StartEtcdNamespace({.cluster = kCluster});
    ASSERT_THAT(ns, IsOk());
    etcd_ = std::move(ns->etcd);
    etcd_client_ = std::move(ns->client);
    kv_ = std::move(ns->kv);
    store_ = std::move(ns->store);
    for (int i = 0; i < kNodes; ++i) {
      ASSERT_EQ(mkdir((root_ + "/" + Node(i)).c_str(), 0755), 0);
      v1::NodeRecord r;
      r.set_id(Node(i));
      r.add_addresses("127.0.0.1:1");  // no agent: mount path only
      r.set_export_path("/export");
      ASSERT_THAT(store_->AddNode(r), IsOk());
    }
  }

  void TearDown() override {
    if (paused_) {
      EXPECT_THAT(etcd_->ResumeMember(0), IsOk());
    }
    client_.reset();
    store_.reset();
    kv_.reset();
    etcd_client_.reset();
    etcd_.reset();
    testing::RemoveTree(root_);
  }

  void OpenClient() {
    ClientOptions o;
    o.etcd_endpoints = etcd_->endpoints();
    o.cluster = kCluster;
    o.mount_root = root_;
    o.data_path = DataPath::kMount;
    o.mount_status_file = "-";
    o.default_deadline = absl::Seconds(10);
    auto c = Client::Open(o);
    ASSERT_THAT(c, IsOk());
    client_ = std::move(*c);
  }

  std::string Bytes(size_t n, uint32_t seed) {
    absl::BitGen gen(std::seed_seq{seed});
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
    return s;
  }

  // Writes object `obj` on node n0 and returns a one-extent layout for it.
  v1::FileLayout Object(const std::string& obj, const std::string& data) {
    std::ofstream out(absl::StrCat(root_, "/", Node(0), "/", obj),
                      std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    EXPECT_TRUE(out.good()) << obj;
    v1::FileLayout l;
    l.set_size(data.size());
    l.set_state(v1::READY);
    auto* e = l.add_extents();
    e->set_offset(0);
    e->set_length(data.size());
    auto* r = e->add_replicas();
    r->set_node_id(Node(0));
    r->set_object(obj);
    return l;
  }

  // Creates `path` with `data` (object named after path and `tag`).
  void Create(const std::string& path, const std::string& data,
              const std::string& tag = "") {
    std::string obj = absl::StrCat("o", path.substr(1), tag);
    for (char& c : obj) c = c == '/' ? '_' : c;
    ASSERT_THAT(store_->CreateFile(path, Object(obj, data)), IsOk());
  }

  // Reads the whole of `f`.
  static std::string ReadAll(File& f) {
    std::string buf(f.size(), '\0');
    absl::StatusOr<size_t> n = f.Read(0, absl::MakeSpan(buf));
    EXPECT_THAT(n, IsOk()) << f.path();
    if (!n.ok()) return "";
    buf.resize(*n);
    return buf;
  }

  std::string root_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> etcd_client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::unique_ptr<Client> client_;
  bool paused_ = false;
};

// Polls `done` up to 30 s (generous: the machine may be loaded).
template <typename F>
bool Eventually(F done) {
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST_F(ClientDatasetTest, OpeningListedFilesMakesNoEtcdRequest) {
  constexpr int kFiles = 1200;  // more than one 1,000-key page
  std::vector<std::string> data;
  // Records written 100 per etcd transaction (as valid as CreateFile's).
  const ns::Keys keys(kCluster);
  etcdserverpb::TxnRequest txn;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Bytes(512 + i, i));
    v1::FileLayout l = Object(absl::StrCat("ometa_f", i), data.back());
    l.set_file_id(1000 + i);
    l.set_generation(1);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(keys.File(absl::StrCat("/meta/f", i)));
    put->set_value(l.SerializeAsString());
    if (txn.success_size() == 100) {
      ASSERT_THAT(etcd_client_->Txn(txn), IsOk());
      txn.Clear();
    }
  }
  Create("/other/x", "not listed");
  OpenClient();
  auto listed = client_->List("/meta");
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->size(), kFiles);

  const ClientStats before = client_->Stats();
  for (int i = 0; i < kFiles; ++i) {
    const std::string path = absl::StrCat("/meta/f", i);
    auto f = client_->OpenFile(path);
    ASSERT_THAT(f, IsOk());
    ASSERT_THAT(client_->Stat(path), IsOk());
    if (i % 100 == 0) {
      EXPECT_EQ(ReadAll(**f), data[i]) << path;
    }
  }
  const ClientStats after = client_->Stats();
  EXPECT_GT(before.etcd_requests, 0u);  // the counter counts
  EXPECT_EQ(after.etcd_requests, before.etcd_requests);
  EXPECT_EQ(after.layout_cold_lookups, before.layout_cold_lookups);
  EXPECT_GE(after.layout_hits - before.layout_hits, 2u * kFiles);

  // An unlisted file is a cold lookup: one request.
  ASSERT_THAT(client_->OpenFile("/other/x"), IsOk());
  EXPECT_EQ(client_->Stats().etcd_requests, after.etcd_requests + 1);

  // The watch keeps listed entries current without requests: a re-put is
  // seen, a delete is seen.
  const std::string p = "/meta/f7";
  auto cur = store_->GetFile(p);
  ASSERT_THAT(cur, IsOk());
  const std::string fresh = Bytes(900, 777);
  v1::FileLayout next = Object("meta_f7-v2", fresh);
  next.set_file_id(cur->layout.file_id());
  auto replaced = store_->ReplaceLayout(p, next, cur->mod_revision);
  ASSERT_THAT(replaced, IsOk());
  const uint64_t base = client_->Stats().etcd_requests;
  ASSERT_TRUE(Eventually([&] {
    auto f = client_->OpenFile(p);
    return f.ok() && (*f)->generation() == replaced->layout.generation();
  }));
  auto f7 = client_->OpenFile(p);
  ASSERT_THAT(f7, IsOk());
  EXPECT_EQ(ReadAll(**f7), fresh);
  EXPECT_EQ(client_->Stats().etcd_requests, base);
  ASSERT_THAT(store_->DeleteFile("/meta/f8", 0), IsOk());
  ASSERT_TRUE(Eventually(
      [&] { return absl::IsNotFound(client_->Stat("/meta/f8").status()); }));
}

TEST_F(ClientDatasetTest, DatasetWorksWhileEveryEtcdMemberIsStopped) {
  constexpr int kFiles = 50;
  std::vector<std::string> data;
  for (int i = 0; i < kFiles; ++i) {
    data.push_back(Bytes(4096 + i, 100 + i));
    Create(absl::StrCat("/ds/sub", i % 3, "/f", i), data.back());
  }
  Create("/elsewhere/y", "outside");
  OpenClient();
  auto d = client_->OpenDataset("/ds", 0);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)->file_count(), kFiles);
  EXPECT_EQ((*d)->invalid_count(), 0u);
  EXPECT_GT((*d)->revision(), 0);
  uint64_t total = 0;
  for (const std::string& s : data) total += s.size();
  EXPECT_EQ((*d)->total_bytes(), total);

  ASSERT_THAT(etcd_->PauseMember(0), IsOk());  // SIGSTOP: every member
  paused_ = true;
  const uint64_t requests = client_->Stats().etcd_requests;
  const absl::Time start = absl::Now();
  auto all = (*d)->List("/");
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), kFiles);
  auto sub = (*d)->List("/ds/sub1");
  ASSERT_THAT(sub, IsOk());
  EXPECT_EQ(sub->size(), 17u);  // i % 3 == 1 for i < 50
  for (int i = 0; i < kFiles; ++i) {
    const std::string path = absl::StrCat("/ds/sub", i % 3, "/f", i);
    auto st = (*d)->Stat(path);
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->size, data[i].size());
    auto f = (*d)->OpenFile(path);
    ASSERT_THAT(f, IsOk());
    EXPECT_EQ(ReadAll(**f), data[i]) << path;
  }
  EXPECT_THAT((*d)->OpenFile("/elsewhere/y"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT((*d)->List("/ds/sub1/../x"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // From memory: far from any etcd timeout, and no request sent.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(client_->Stats().etcd_requests, requests);
  ASSERT_THAT(etcd_->ResumeMember(0), IsOk());
  paused_ = false;
}

TEST_F(ClientDatasetTest, PinnedDatasetReadsOldBytesUntilCompaction) {
  const std::string a = Bytes(5000, 1), b = Bytes(6000, 2), c = Bytes(7000, 3);
  Create("/p/a", a);
  Create("/p/b", b);
  Create("/p/c", c);
  OpenClient();
  auto before = client_->OpenDataset("/p", 0);
  ASSERT_THAT(before, IsOk());
  const int64_t rev = (*before)->revision();

  // rm a, mv b -> b2, re-put c with other bytes.
  ASSERT_THAT(store_->DeleteFile("/p/a", 0), IsOk());
  ASSERT_THAT(store_->RenameFile("/p/b", "/p/b2", 0), IsOk());
  auto cur = store_->GetFile("/p/c");
  ASSERT_THAT(cur, IsOk());
  const std::string c2 = Bytes(3000, 4);
  v1::FileLayout next = Object("p_c-v2", c2);
  ASSERT_THAT(store_->ReplaceLayout("/p/c", next, cur->mod_revision), IsOk());

  auto later = client_->OpenDataset("/p", rev);  // pinned after the fact
  ASSERT_THAT(later, IsOk());
  for (const auto* d : {&*before, &*later}) {
    EXPECT_EQ((**d).revision(), rev);
    auto fa = (**d).OpenFile("/p/a");
    ASSERT_THAT(fa, IsOk());
    EXPECT_EQ(ReadAll(**fa), a);
    auto fb = (**d).OpenFile("/p/b");
    ASSERT_THAT(fb, IsOk());
    EXPECT_EQ(ReadAll(**fb), b);
    EXPECT_THAT((**d).Stat("/p/b2"), StatusIs(absl::StatusCode::kNotFound));
    auto fc = (**d).OpenFile("/p/c");
    ASSERT_THAT(fc, IsOk());
    EXPECT_EQ(ReadAll(**fc), c);
  }
  // The latest dataset sees the changes.
  auto now = client_->OpenDataset("/p", 0);
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ((*now)->file_count(), 2u);
  auto fc = (*now)->OpenFile("/p/c");
  ASSERT_THAT(fc, IsOk());
  EXPECT_EQ(ReadAll(**fc), c2);

  // Compaction ends pinning at `rev`: a clear OUT_OF_RANGE; a dataset
  // already open keeps its snapshot.
  ASSERT_THAT(etcd_client_->Compact((*now)->revision()), IsOk());
  auto gone = client_->OpenDataset("/p", rev);
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(gone.status().message(), HasSubstr("compacted"));
  auto fa = (*before)->OpenFile("/p/a");
  ASSERT_THAT(fa, IsOk());
  EXPECT_EQ(ReadAll(**fa), a);
}

TEST_F(ClientDatasetTest, PoisonedRecordFailsOnlyThatFile) {
  const std::string a = Bytes(3000, 5);
  Create("/q/a", a);
  Create("/q/c", Bytes(100, 6));
  const ns::Keys keys(kCluster);
  ASSERT_THAT(etcd_client_->Put(keys.File("/q/b"), "\x08\xff garbage"), IsOk());
  OpenClient();
  auto d = client_->OpenDataset("/q", 0);
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)->file_count(), 3u);
  EXPECT_EQ((*d)->invalid_count(), 1u);
  auto all = (*d)->List("/q");
  ASSERT_THAT(all, IsOk());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[1].path, "/q/b");
  EXPECT_THAT((*all)[1].invalid, HasSubstr(keys.File("/q/b")));
  auto bad = (*d)->OpenFile("/q/b");
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(bad.status().message(), HasSubstr(keys.File("/q/b")));
  EXPECT_THAT((*d)->Stat("/q/b"), StatusIs(absl::StatusCode::kDataLoss));
  auto fa = (*d)->OpenFile("/q/a");
  ASSERT_THAT(fa, IsOk());
  EXPECT_EQ(ReadAll(**fa), a);
  EXPECT_THAT((*d)->OpenFile("/q/c"), IsOk());
  // The client's own listing shows it in place too.
  auto listed = client_->List("/q");
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_FALSE((*listed)[1].invalid.empty());
  EXPECT_THAT(client_->OpenFile("/q/a"), IsOk());
  EXPECT_THAT(client_->OpenFile("/q/b"), StatusIs(absl::StatusCode::kDataLoss));
}

}  // namespace
}  // namespace rangefs
