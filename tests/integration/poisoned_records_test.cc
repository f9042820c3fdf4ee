// Poisoned namespace records written straight into a real etcd, read by a
// real client (mount and agent data paths, real rangefs-node agents) and by
// the real `rangefs-admin fsck`: every bad record fails alone with an error
// naming its key, nothing crashes or hangs, good files beside it list and
// read byte-exact, and no read ever returns bytes from outside an export.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/testing/status_matchers.h"
#include "client_lib/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/keys.h"
#include "tests/testing/agent_cluster.h"

namespace rangefs {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "TOP-SECRET-BYTES-OUTSIDE-THE-EXPORT";

struct Poison {
  std::string name;   // file under /poison (or a node/live id)
  std::string value;  // raw etcd value
};

v1::FileLayout OneExtent(uint64_t size, const std::string& object) {
  v1::FileLayout l;
  l.set_size(size);
  l.set_state(v1::READY);
  v1::Extent* e = l.add_extents();
  e->set_length(size);
  for (const char* n : {"n1", "n2"}) {
    v1::Replica* r = e->add_replicas();
    r->set_node_id(n);
    r->set_object(object);
  }
  return l;
}

v1::FileLayout Striped(uint64_t unit, int targets) {
  v1::FileLayout l;
  l.set_size(4096);
  l.set_state(v1::READY);
  l.mutable_striped()->set_stripe_unit(unit);
  for (int t = 0; t < targets; ++t) {
    v1::Replica* r = l.mutable_striped()->add_targets()->add_replicas();
    r->set_node_id("n1");
    r->set_object("good/a");
  }
  return l;
}

// Layouts rejected by the record gate (DATA_LOSS on open, `invalid` in List).
std::vector<Poison> GatedLayouts(const std::string& secret_path) {
  std::vector<Poison> p;
  p.push_back({"stripe0", Striped(0, 2).SerializeAsString()});
  p.push_back({"notargets", Striped(1024, 0).SerializeAsString()});
  p.push_back({"dotdot", OneExtent(4096, "../../../../../../../../" +
                                             secret_path.substr(1))
                             .SerializeAsString()});
  p.push_back({"absolute", OneExtent(4096, secret_path).SerializeAsString()});
  v1::FileLayout shortl = OneExtent(4096, "good/a");
  shortl.set_size(8192);
  p.push_back({"short", shortl.SerializeAsString()});
  v1::FileLayout huge = OneExtent(4096, "good/a");
  huge.set_size(UINT64_MAX);
  p.push_back({"huge", huge.SerializeAsString()});
  v1::FileLayout many;
  many.set_size(1000000);
  many.set_state(v1::READY);
  for (int i = 0; i < 1000000; ++i) {
    v1::Extent* e = many.add_extents();
    e->set_offset(static_cast<uint64_t>(i));
    e->set_length(1);
  }
  p.push_back({"million", many.SerializeAsString()});
  p.push_back({"garbage", std::string("\xff\xfe\x00garbage\x01\x02", 12)});
  return p;
}

class PoisonedRecordsTest : public ::testing::TestWithParam<DataPath> {
 protected:
  void SetUp() override {
    // A million-extent record is ~4 MB: let etcd take it, as a bad actor's
    // etcd might.
    auto c = testing::AgentCluster::Start(
        "poison", {.extra_flags = {"--max-request-bytes=16777216"}});
    ASSERT_THAT(c, IsOk());
    cluster_ = std::move(*c);
    for (const char* id : {"n1", "n2"}) {
      ASSERT_THAT(cluster_->AddAgent(id), IsOk());
    }
    secret_ = cluster_->dir() + "/secret";
    std::ofstream(secret_) << kSecret;
    mounts_ = cluster_->dir() + "/mnt";
    ASSERT_EQ(mkdir(mounts_.c_str(), 0755), 0);
    for (size_t i = 0; i < cluster_->agents(); ++i) {
      const testing::AgentProcess& a = cluster_->agent(i);
      // The export dir stands in for the node's NFS mount.
      ASSERT_EQ(symlink(a.export_dir.c_str(), (mounts_ + "/" + a.id).c_str()),
                0);
      ASSERT_EQ(mkdir((a.export_dir + "/good").c_str(), 0755), 0);
      for (const char* obj : {"good/a", "good/b"}) {
        std::ofstream(a.export_dir + "/" + obj) << Content(obj);
      }
      // A symlink planted inside the export, pointing outside it.
      ASSERT_EQ(symlink(secret_.c_str(), (a.export_dir + "/link").c_str()), 0);
    }
    for (const char* obj : {"good/a", "good/b"}) {
      ASSERT_THAT(
          cluster_->store()->CreateFile(absl::StrCat("/poison/", obj + 5),
                                        OneExtent(Content(obj).size(), obj)),
          IsOk());
    }
    ASSERT_THAT(cluster_->store()->CreateFile(
                    "/poison/symlink", OneExtent(sizeof(kSecret) - 1, "link")),
                IsOk());
    const ns::Keys keys("it");
    for (const Poison& p : GatedLayouts(secret_)) {
      Put(keys.File("/poison/" + p.name), p.value);
    }
    v1::NodeRecord badnode;
    badnode.set_id("n3");
    badnode.add_addresses("no address at all");
    badnode.set_export_path("/srv");
    badnode.set_admin_state(v1::ACTIVE);
    Put(keys.Node("n3"), badnode.SerializeAsString());
    Put(keys.Live("n9"), "\xff\xff garbage live");
  }

  void Put(const std::string& key, const std::string& value) {
    ASSERT_THAT(cluster_->etcd_client()->Put(key, value), IsOk()) << key;
  }

  static std::string Content(const std::string& object) {
    std::string s;
    for (int i = 0; i < 5000; ++i) absl::StrAppend(&s, object, "#", i, ";");
    return s;
  }

  std::unique_ptr<Client> OpenClient() {
    ClientOptions o;
    o.etcd_endpoints = cluster_->etcd()->endpoints();
    o.cluster = "it";
    o.data_path = GetParam();
    o.mount_root = mounts_;
    o.default_deadline = absl::Seconds(10);
    o.attempt_timeout = absl::Seconds(2);
    auto c = Client::Open(o);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<testing::AgentCluster> cluster_;
  std::string secret_, mounts_;
};

TEST_P(PoisonedRecordsTest, BadRecordsFailAloneAndGoodFilesRead) {
  std::unique_ptr<Client> client = OpenClient();
  ASSERT_NE(client, nullptr);
  const ns::Keys keys("it");

  // Each gated layout: DATA_LOSS naming its key, from Stat and OpenFile.
  for (const Poison& p : GatedLayouts(secret_)) {
    const std::string path = "/poison/" + p.name;
    EXPECT_THAT(
        client->OpenFile(path).status(),
        StatusIs(absl::StatusCode::kDataLoss, HasSubstr(keys.File(path))))
        << path;
    EXPECT_THAT(client->Stat(path).status(),
                StatusIs(absl::StatusCode::kDataLoss))
        << path;
  }

  // List shows every file: the good ones whole, the bad ones marked.
  auto listed = client->List("/poison");
  ASSERT_THAT(listed, IsOk());
  int good = 0, invalid = 0;
  for (const FileInfo& f : *listed) {
    if (f.invalid.empty()) {
      ++good;
      EXPECT_GT(f.size, 0u) << f.path;
    } else {
      ++invalid;
      EXPECT_THAT(f.invalid, HasSubstr(keys.File(f.path)));
    }
  }
  EXPECT_EQ(good, 3);  // a, b, symlink
  EXPECT_EQ(invalid, static_cast<int>(GatedLayouts(secret_).size()));

  // Good files beside them read byte-exact.
  for (const char* obj : {"good/a", "good/b"}) {
    auto f = client->OpenFile(absl::StrCat("/poison/", obj + 5));
    ASSERT_THAT(f, IsOk());
    std::string buf((*f)->size(), '\0');
    ASSERT_THAT((*f)->Read(0, absl::MakeSpan(buf)), IsOk());
    EXPECT_EQ(buf, Content(obj));
  }

  // A valid layout naming a symlink planted in the export: the read fails
  // (on both replicas) and never returns the bytes it points at.
  auto f = client->OpenFile("/poison/symlink");
  ASSERT_THAT(f, IsOk());
  std::string buf((*f)->size(), '\0');
  absl::StatusOr<size_t> r = (*f)->Read(0, absl::MakeSpan(buf));
  EXPECT_THAT(r, Not(IsOk()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("link"));
  EXPECT_THAT(buf, Not(HasSubstr(kSecret)));
}

TEST_P(PoisonedRecordsTest, FsckReportsEveryBadRecordAndExits4) {
  if (GetParam() != DataPath::kMount) GTEST_SKIP() << "fsck: one run";
  auto fsck = testing::Subprocess::Start(
      {.argv = {testing::RunfilePath("admin/rangefs-admin"),
                "--etcd=" + cluster_->etcd()->endpoints(), "--cluster=it",
                "fsck", "/poison"},
       .log_path = cluster_->dir() + "/fsck.log"});
  ASSERT_THAT(fsck, IsOk());
  absl::StatusOr<int> rc = (*fsck)->Wait(absl::Seconds(60));
  ASSERT_THAT(rc, IsOk()) << "fsck did not end: " << (*fsck)->Log();
  ASSERT_TRUE(WIFEXITED(*rc)) << (*fsck)->Log();
  EXPECT_EQ(WEXITSTATUS(*rc), 4) << (*fsck)->Log();
  const std::string log = (*fsck)->Log();
  for (const Poison& p : GatedLayouts(secret_)) {
    EXPECT_THAT(log, HasSubstr("/poison/" + p.name));
  }
  EXPECT_THAT(log, HasSubstr("/poison/symlink"));  // agents refuse "link"
  EXPECT_THAT(log, HasSubstr("n3"));               // bad node record
  EXPECT_THAT(log, HasSubstr("n9"));               // garbage live record
  EXPECT_THAT(log, Not(HasSubstr("/poison/a ")));
}

INSTANTIATE_TEST_SUITE_P(DataPaths, PoisonedRecordsTest,
                         ::testing::Values(DataPath::kMount, DataPath::kAgent),
                         [](const ::testing::TestParamInfo<DataPath>& i) {
                           return i.param == DataPath::kMount ? "Mount"
                                                              : "Agent";
                         });

}  // namespace
}  // namespace rangefs
