// File: store_test_suite.h
//
// Behaviour tests of NamespaceStore shared by the MemoryKv unit test and the
// real-etcd integration test. A fixture derives from StoreTestSuite, sets
// `store_` in SetUp, then says RANGEFS_STORE_TESTS(FixtureName).
#ifndef RANGEFS_NAMESPACE_STORE_TEST_SUITE_H_
#define RANGEFS_NAMESPACE_STORE_TEST_SUITE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "namespace/store.h"

namespace rangefs {
namespace ns {

class StoreTestSuite : public ::testing::Test {
 protected:
  void AddNodes(int n = 3) {
    for (int i = 1; i <= n; ++i) {
      v1::NodeRecord node;
      node.set_id("n" + std::to_string(i));
      node.add_addresses("127.0.0.1:" + std::to_string(7000 + i));
      node.set_export_path("/srv/rangefs/n" + std::to_string(i));
      ASSERT_THAT(store_->AddNode(node), IsOk());
    }
  }
  static v1::FileLayout OneExtent(uint64_t size,
                                  std::vector<std::string> nodes) {
    v1::FileLayout l;
    l.set_size(size);
    l.set_state(v1::READY);
    if (size > 0) {
      v1::Extent* e = l.add_extents();
      e->set_length(size);
      for (const std::string& n : nodes) {
        v1::Replica* r = e->add_replicas();
        r->set_node_id(n);
        r->set_object("obj/" + n);
      }
    }
    return l;
  }
  // A path is a file or a directory, never both: creates and renames that
  // would make one both are refused, naming the path they clash with.
  // Create and overwrite set content_generation; layout changes and
  // renames keep it (namespace/content_id.h).
  void ExpectContentGenerationMovesOnlyWithNewBytes() {
    AddNodes();
    auto a = store_->CreateFile("/c/a", OneExtent(100, {"n1"}));
    ASSERT_THAT(a, IsOk());
    EXPECT_EQ(a->layout.content_generation(), 1u);
    auto moved =
        store_->ReplaceLayout("/c/a", OneExtent(100, {"n2"}), a->mod_revision);
    ASSERT_THAT(moved, IsOk());
    EXPECT_EQ(moved->layout.generation(), 2u);
    EXPECT_EQ(moved->layout.content_generation(), 1u);
    auto fresh = store_->OverwriteFile("/c/a", OneExtent(100, {"n3"}),
                                       moved->mod_revision);
    ASSERT_THAT(fresh, IsOk());
    EXPECT_EQ(fresh->layout.generation(), 3u);
    EXPECT_EQ(fresh->layout.content_generation(), 3u);
    EXPECT_EQ(fresh->layout.file_id(), a->layout.file_id());
    EXPECT_EQ(store_->GetFile("/c/a")->layout.content_generation(), 3u);
    EXPECT_THAT(store_->OverwriteFile("/c/a", OneExtent(1, {"n1"}),
                                      moved->mod_revision),
                StatusIs(absl::StatusCode::kAborted));
    ASSERT_THAT(store_->RenameFile("/c/a", "/c/b", 0), IsOk());
    EXPECT_EQ(store_->GetFile("/c/b")->layout.content_generation(), 3u);
  }

  // Reserved ids are never handed out again, and creating files with them
  // leaves the counter where it is.
  void ExpectReservedFileIds() {
    AddNodes(1);
    auto first = store_->ReserveFileIds(10);
    ASSERT_THAT(first, IsOk());
    auto after = store_->CreateFile("/r/next", OneExtent(1, {"n1"}));
    ASSERT_THAT(after, IsOk());
    EXPECT_GE(after->layout.file_id(), *first + 10);
    v1::FileLayout l = OneExtent(1, {"n1"});
    l.set_file_id(*first + 3);
    auto reserved = store_->CreateFile("/r/reserved", l);
    ASSERT_THAT(reserved, IsOk());
    EXPECT_EQ(reserved->layout.file_id(), *first + 3);
    auto again = store_->CreateFile("/r/again", OneExtent(1, {"n1"}));
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->layout.file_id(), after->layout.file_id() + 1);
    auto second = store_->ReserveFileIds(5);
    ASSERT_THAT(second, IsOk());
    EXPECT_EQ(*second, again->layout.file_id() + 1);
    EXPECT_THAT(store_->ReserveFileIds(0),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }

  void ExpectFileDirectoryClashesRefused() {
    AddNodes(1);
    ASSERT_THAT(store_->CreateFile("/data/data.csv", OneExtent(1, {"n1"})),
                IsOk());
    ASSERT_THAT(
        store_->CreateFile("/data/pq/part-0.parquet", OneExtent(1, {"n1"})),
        IsOk());
    // Below a file.
    EXPECT_THAT(
        store_->CreateFile("/data/data.csv/inner.gz", OneExtent(1, {"n1"})),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 ::testing::HasSubstr("/data/data.csv is a file")));
    EXPECT_THAT(store_->CreateFile("/data/data.csv/x/y", OneExtent(1, {"n1"})),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         ::testing::HasSubstr("/data/data.csv is a file")));
    // On a directory.
    EXPECT_THAT(store_->CreateFile("/data/pq", OneExtent(1, {"n1"})),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         ::testing::AllOf(
                             ::testing::HasSubstr("/data/pq is a directory"),
                             ::testing::HasSubstr("/data/pq/part-0.parquet"))));
    EXPECT_THAT(store_->CreateFile("/data", OneExtent(1, {"n1"})),
                StatusIs(absl::StatusCode::kFailedPrecondition));
    // Names that only share a prefix do not clash.
    EXPECT_THAT(store_->CreateFile("/data/pq2", OneExtent(1, {"n1"})), IsOk());
    EXPECT_THAT(store_->CreateFile("/data/data.csv2/a", OneExtent(1, {"n1"})),
                IsOk());
    // Renames obey the same rule.
    ASSERT_THAT(store_->CreateFile("/x", OneExtent(1, {"n1"})), IsOk());
    EXPECT_THAT(store_->RenameFile("/x", "/data/pq", 0),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         ::testing::HasSubstr("/data/pq is a directory")));
    EXPECT_THAT(store_->RenameFile("/x", "/data/data.csv/x", 0),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         ::testing::HasSubstr("/data/data.csv is a file")));
    // A file may move below its own old path: it leaves it in the move.
    EXPECT_THAT(store_->RenameFile("/x", "/x/y", 0), IsOk());
    EXPECT_THAT(store_->GetFile("/x/y"), IsOk());
    // Nothing refused was written.
    EXPECT_THAT(store_->GetFile("/data/pq"),
                StatusIs(absl::StatusCode::kNotFound));
    EXPECT_THAT(store_->GetFile("/data/data.csv/inner.gz"),
                StatusIs(absl::StatusCode::kNotFound));
    // Too deep to check in one transaction: refused up front.
    std::string deep;
    for (int i = 0; i < 65; ++i) deep += "/d";
    EXPECT_THAT(store_->CreateFile(deep, OneExtent(1, {"n1"})),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::HasSubstr("65 components deep")));
  }

  // Writers racing to create /race<i>/b and /race<i>/b/c, released
  // together: never both win.
  void ExpectRacingClashWritersNeverBothWin(int rounds) {
    AddNodes(1);
    for (int round = 0; round < rounds; ++round) {
      const std::string dir = "/race" + std::to_string(round);
      const std::vector<std::string> paths = {dir + "/b", dir + "/b/c",
                                              dir + "/b", dir + "/b/c/d"};
      std::vector<absl::Status> got(paths.size());
      std::atomic<int> waiting{static_cast<int>(paths.size())};
      std::vector<std::thread> threads;
      for (size_t i = 0; i < paths.size(); ++i) {
        threads.emplace_back([&, i] {
          waiting.fetch_sub(1);
          while (waiting.load() > 0) std::this_thread::yield();
          got[i] = store_->CreateFile(paths[i], OneExtent(1, {"n1"})).status();
        });
      }
      for (auto& t : threads) t.join();
      auto listed = store_->ListFiles({.dir = dir});
      ASSERT_THAT(listed, IsOk());
      ASSERT_EQ(listed->files.size(), 1u)
          << "round " << round << ": a path became a file and a directory";
      int won = 0;
      for (const absl::Status& s : got) won += s.ok() ? 1 : 0;
      EXPECT_EQ(won, 1) << "round " << round;
    }
  }

  std::unique_ptr<NamespaceStore> store_;
};

#define RANGEFS_STORE_TESTS(Fixture)                                           \
  TEST_F(Fixture, NodeLifecycle) {                                             \
    AddNodes();                                                                \
    v1::NodeRecord dup;                                                        \
    dup.set_id("n1");                                                          \
    dup.set_export_path("/x");                                                 \
    EXPECT_THAT(store_->AddNode(dup),                                          \
                StatusIs(absl::StatusCode::kAlreadyExists));                   \
    auto nodes = store_->ListNodes();                                          \
    ASSERT_THAT(nodes, IsOk());                                                \
    ASSERT_EQ(nodes->size(), 3u);                                              \
    EXPECT_EQ((*nodes)[0].record.admin_state(), v1::ACTIVE);                   \
    EXPECT_THAT(store_->RemoveNode("n1"),                                      \
                StatusIs(absl::StatusCode::kFailedPrecondition,                \
                         ::testing::HasSubstr("drain or disable")));           \
    ASSERT_THAT(store_->SetNodeState("n1", v1::DRAINING), IsOk());             \
    EXPECT_EQ(store_->GetNode("n1")->record.admin_state(), v1::DRAINING);      \
    auto n1 = store_->GetNode("n1");                                           \
    ASSERT_THAT(n1, IsOk());                                                   \
    EXPECT_THAT(store_->UpdateNode(n1->record, n1->mod_revision - 1),          \
                StatusIs(absl::StatusCode::kAborted));                         \
    ASSERT_THAT(store_->RemoveNode("n1"), IsOk());                             \
    EXPECT_THAT(store_->GetNode("n1"), StatusIs(absl::StatusCode::kNotFound)); \
    EXPECT_THAT(store_->GetNode("bad/id"),                                     \
                StatusIs(absl::StatusCode::kInvalidArgument));                 \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, FileLifecycle) {                                             \
    AddNodes();                                                                \
    auto a = store_->CreateFile("/d/a", OneExtent(100, {"n1", "n2"}));         \
    ASSERT_THAT(a, IsOk());                                                    \
    EXPECT_EQ(a->layout.generation(), 1u);                                     \
    EXPECT_GT(a->layout.file_id(), 0u);                                        \
    auto b = store_->CreateFile("/d/b", OneExtent(5, {"n3"}));                 \
    ASSERT_THAT(b, IsOk());                                                    \
    EXPECT_NE(a->layout.file_id(), b->layout.file_id());                       \
    EXPECT_THAT(store_->CreateFile("/d/a", OneExtent(1, {"n1"})),              \
                StatusIs(absl::StatusCode::kAlreadyExists));                   \
    EXPECT_THAT(store_->CreateFile("/d/c", OneExtent(1, {"n9"})),              \
                StatusIs(absl::StatusCode::kFailedPrecondition,                \
                         ::testing::HasSubstr("unknown node \"n9\"")));        \
    EXPECT_THAT(store_->CreateFile("/d/../c", OneExtent(1, {"n1"})),           \
                StatusIs(absl::StatusCode::kInvalidArgument));                 \
    auto got = store_->GetFile("/d/a");                                        \
    ASSERT_THAT(got, IsOk());                                                  \
    EXPECT_EQ(got->layout.size(), 100u);                                       \
    EXPECT_EQ(got->mod_revision, a->mod_revision);                             \
    auto r = store_->ReplaceLayout("/d/a", OneExtent(200, {"n2", "n3"}),       \
                                   a->mod_revision);                           \
    ASSERT_THAT(r, IsOk());                                                    \
    EXPECT_EQ(r->layout.generation(), 2u);                                     \
    EXPECT_EQ(r->layout.file_id(), a->layout.file_id());                       \
    EXPECT_THAT(                                                               \
        store_->ReplaceLayout("/d/a", OneExtent(1, {"n1"}), a->mod_revision),  \
        StatusIs(absl::StatusCode::kAborted,                                   \
                 ::testing::HasSubstr("changed by someone else")));            \
    EXPECT_THAT(store_->RenameFile("/d/a", "/d/b", 0),                         \
                StatusIs(absl::StatusCode::kAlreadyExists));                   \
    ASSERT_THAT(store_->RenameFile("/d/a", "/e/a", r->mod_revision), IsOk());  \
    EXPECT_THAT(store_->GetFile("/d/a"),                                       \
                StatusIs(absl::StatusCode::kNotFound));                        \
    auto moved = store_->GetFile("/e/a");                                      \
    ASSERT_THAT(moved, IsOk());                                                \
    EXPECT_EQ(moved->layout.size(), 200u);                                     \
    EXPECT_THAT(store_->DeleteFile("/e/a", moved->mod_revision + 100),         \
                StatusIs(absl::StatusCode::kAborted));                         \
    ASSERT_THAT(store_->DeleteFile("/e/a", moved->mod_revision), IsOk());      \
    EXPECT_THAT(store_->DeleteFile("/e/a", 0),                                 \
                StatusIs(absl::StatusCode::kNotFound));                        \
    EXPECT_THAT(store_->RenameFile("/nope", "/x", 0),                          \
                StatusIs(absl::StatusCode::kNotFound));                        \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ListingIsPagedAndPrefixExact) {                              \
    AddNodes(1);                                                               \
    for (int i = 0; i < 25; ++i) {                                             \
      ASSERT_THAT(store_->CreateFile("/dir/f" + std::to_string(100 + i),       \
                                     OneExtent(1, {"n1"})),                    \
                  IsOk());                                                     \
    }                                                                          \
    ASSERT_THAT(store_->CreateFile("/dirx/other", OneExtent(1, {"n1"})),       \
                IsOk());                                                       \
    std::vector<std::string> seen;                                             \
    ListFilesOptions o{.dir = "/dir", .page_size = 10};                        \
    for (int page = 0; page < 10; ++page) {                                    \
      auto r = store_->ListFiles(o);                                           \
      ASSERT_THAT(r, IsOk());                                                  \
      for (const auto& f : r->files) seen.push_back(f.path);                   \
      if (r->next_page_token.empty()) break;                                   \
      o.page_token = r->next_page_token;                                       \
      o.revision = r->revision;                                                \
    }                                                                          \
    ASSERT_EQ(seen.size(), 25u);                                               \
    EXPECT_EQ(seen.front(), "/dir/f100");                                      \
    EXPECT_EQ(seen.back(), "/dir/f124");                                       \
    auto all = store_->ListFiles({.dir = "/", .page_size = 100});              \
    ASSERT_THAT(all, IsOk());                                                  \
    EXPECT_EQ(all->files.size(), 26u);                                         \
    EXPECT_THAT(store_->ListFiles({.dir = "/dir", .page_size = 0}),            \
                StatusIs(absl::StatusCode::kInvalidArgument));                 \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ConcurrentWritersLoseNoUpdate) {                             \
    AddNodes(1);                                                               \
    ASSERT_THAT(store_->CreateFile("/counter", OneExtent(1, {"n1"})), IsOk()); \
    constexpr int kWriters = 8;                                                \
    constexpr int kIncrements = 15;                                            \
    std::atomic<int> aborted{0};                                               \
    std::vector<std::thread> threads;                                          \
    for (int w = 0; w < kWriters; ++w) {                                       \
      threads.emplace_back([&] {                                               \
        for (int i = 0; i < kIncrements; ++i) {                                \
          for (int attempt = 0; attempt < 1000; ++attempt) {                   \
            auto cur = store_->GetFile("/counter");                            \
            if (!cur.ok()) continue;                                           \
            v1::FileLayout next = OneExtent(cur->layout.size() + 1, {"n1"});   \
            auto s =                                                           \
                store_->ReplaceLayout("/counter", next, cur->mod_revision);    \
            if (s.ok()) break;                                                 \
            if (absl::IsAborted(s.status())) ++aborted;                        \
          }                                                                    \
        }                                                                      \
      });                                                                      \
    }                                                                          \
    for (auto& t : threads) t.join();                                          \
    auto final_entry = store_->GetFile("/counter");                            \
    ASSERT_THAT(final_entry, IsOk());                                          \
    EXPECT_EQ(final_entry->layout.size(), 1u + kWriters * kIncrements);        \
    EXPECT_EQ(final_entry->layout.generation(), 1u + kWriters * kIncrements);  \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ConcurrentCreatesGetDistinctIds) {                           \
    AddNodes(1);                                                               \
    std::vector<std::thread> threads;                                          \
    std::vector<uint64_t> ids(8);                                              \
    for (int w = 0; w < 8; ++w) {                                              \
      threads.emplace_back([&, w] {                                            \
        auto f = store_->CreateFile("/c/" + std::to_string(w),                 \
                                    OneExtent(1, {"n1"}));                     \
        if (f.ok()) ids[w] = f->layout.file_id();                              \
      });                                                                      \
    }                                                                          \
    for (auto& t : threads) t.join();                                          \
    std::sort(ids.begin(), ids.end());                                         \
    EXPECT_NE(ids[0], 0u);                                                     \
    EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());                 \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ReplaceLayoutIfAddsTheGuardToTheTransaction) {               \
    AddNodes();                                                                \
    auto f = store_->CreateFile("/g", OneExtent(10, {"n1"}));                  \
    ASSERT_THAT(f, IsOk());                                                    \
    /* The guard: VALUE(<guard key>) == "mine"; the key is not a file. */      \
    const std::string guard_key = store_->keys().NodePrefix() + "~guard";      \
    etcdserverpb::TxnRequest put;                                              \
    auto* p = put.add_success()->mutable_request_put();                        \
    p->set_key(guard_key);                                                     \
    p->set_value("theirs");                                                    \
    ASSERT_THAT(store_->kv()->Txn(put), IsOk());                               \
    TxnGuard g;                                                                \
    etcdserverpb::Compare c;                                                   \
    c.set_key(guard_key);                                                      \
    c.set_target(etcdserverpb::Compare::VALUE);                                \
    c.set_result(etcdserverpb::Compare::EQUAL);                                \
    c.set_value("mine");                                                       \
    g.compares.push_back(c);                                                   \
    std::string seen;                                                          \
    g.on_failure = [&](const etcdserverpb::TxnResponse& r) {                   \
      seen = r.responses(0).response_range().kvs(0).value();                   \
      return absl::CancelledError("not mine");                                 \
    };                                                                         \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g", OneExtent(20, {"n2"}),           \
                                        f->mod_revision, g),                   \
                StatusIs(absl::StatusCode::kCancelled));                       \
    EXPECT_EQ(seen, "theirs"); /* the guard's key, read first */               \
    EXPECT_EQ(store_->GetFile("/g")->mod_revision, f->mod_revision);           \
    /* The store's own checks still apply, guard or not. */                    \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g", OneExtent(20, {"n9"}),           \
                                        f->mod_revision, g),                   \
                StatusIs(absl::StatusCode::kFailedPrecondition));              \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g/./x", OneExtent(20, {"n2"}),       \
                                        f->mod_revision, g),                   \
                StatusIs(absl::StatusCode::kInvalidArgument));                 \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g", OneExtent(20, {"n2"}),           \
                                        f->mod_revision + 100, g),             \
                StatusIs(absl::StatusCode::kAborted));                         \
    TxnGuard many;                                                             \
    many.compares.assign(21, c);                                               \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g", OneExtent(20, {"n2"}),           \
                                        f->mod_revision, many),                \
                StatusIs(absl::StatusCode::kInvalidArgument));                 \
    /* on_failure OK: the store's reason. */                                   \
    g.on_failure = [](const etcdserverpb::TxnResponse&) {                      \
      return absl::OkStatus();                                                 \
    };                                                                         \
    EXPECT_THAT(store_->ReplaceLayoutIf("/g", OneExtent(20, {"n2"}),           \
                                        f->mod_revision, g),                   \
                StatusIs(absl::StatusCode::kFailedPrecondition));              \
    /* Once the guard holds, the layout is replaced. */                        \
    p->set_value("mine");                                                      \
    ASSERT_THAT(store_->kv()->Txn(put), IsOk());                               \
    auto r = store_->ReplaceLayoutIf("/g", OneExtent(20, {"n2"}),              \
                                     f->mod_revision, g);                      \
    ASSERT_THAT(r, IsOk());                                                    \
    EXPECT_EQ(r->layout.generation(), 2u);                                     \
    EXPECT_EQ(r->layout.file_id(), f->layout.file_id());                       \
    EXPECT_EQ(store_->GetFile("/g")->layout.size(), 20u);                      \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ContentGenerationMovesOnlyWithNewBytes) {                    \
    ExpectContentGenerationMovesOnlyWithNewBytes();                            \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, FileDirectoryClashesAreRefused) {                            \
    ExpectFileDirectoryClashesRefused();                                       \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, ReservedFileIdsAreNotReusedNorContended) {                   \
    ExpectReservedFileIds();                                                   \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, RacingClashWritersNeverBothWin) {                            \
    ExpectRacingClashWritersNeverBothWin(10);                                  \
  }                                                                            \
                                                                               \
  TEST_F(Fixture, LiveRecords) {                                               \
    v1::LiveRecord live;                                                       \
    live.set_node_id("n1");                                                    \
    live.set_health(v1::LiveRecord::HEALTHY);                                  \
    ASSERT_THAT(store_->PutLive(live, 0), IsOk());                             \
    auto l = store_->ListLive();                                               \
    ASSERT_THAT(l, IsOk());                                                    \
    ASSERT_EQ(l->size(), 1u);                                                  \
    EXPECT_EQ((*l)[0].record.health(), v1::LiveRecord::HEALTHY);               \
  }

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_STORE_TEST_SUITE_H_
