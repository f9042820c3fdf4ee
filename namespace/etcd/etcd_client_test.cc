// EtcdClient against the real etcd (tests/testing/etcd_cluster.h).
#include "namespace/etcd/etcd_client.h"

#include <sys/wait.h>

#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace etcd {
namespace {

using ::rangefs::testing::EtcdCluster;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Polls `cond` every 10 ms until it holds or `timeout` passes. The default
// bound is generous: it only ends a wait that would otherwise never end, so
// it must hold on a loaded machine (many times slower than an idle one).
bool WaitFor(const std::function<bool()>& cond,
             absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return cond();
}

std::unique_ptr<EtcdCluster> StartEtcd(int members,
                                       std::vector<std::string> flags = {}) {
  auto etcd =
      EtcdCluster::Start({.members = members, .extra_flags = std::move(flags)});
  EXPECT_THAT(etcd, IsOk());
  return etcd.ok() ? std::move(*etcd) : nullptr;
}

std::unique_ptr<EtcdClient> OpenClient(EtcdClientOptions options) {
  auto client = EtcdClient::Open(options);
  EXPECT_THAT(client, IsOk());
  return client.ok() ? std::move(*client) : nullptr;
}

// Collects watch updates from the watch thread.
class Collector {
 public:
  std::function<void(const WatchUpdate&)> Callback() {
    return [this](const WatchUpdate& u) {
      absl::MutexLock l(&mu_);
      updates_.push_back(u);
      for (const WatchEvent& e : u.events) events_.push_back(e);
    };
  }
  std::vector<WatchEvent> events() {
    absl::MutexLock l(&mu_);
    return events_;
  }
  std::vector<WatchUpdate> updates() {
    absl::MutexLock l(&mu_);
    return updates_;
  }
  bool WaitForEvents(size_t n) {
    return WaitFor([&] { return events().size() >= n; });
  }

 private:
  absl::Mutex mu_;
  std::vector<WatchUpdate> updates_ ABSL_GUARDED_BY(mu_);
  std::vector<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
};

// The codes a call may end with when no member answers in time.
MATCHER_P(IsUnreachable, message_part, "") {
  const absl::Status& s = arg.status();
  *result_listener << "status is " << s;
  return (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) &&
         absl::StrContains(s.message(), message_part);
}

// The log tails of all running members, for failure messages.
std::string AllLogs(const EtcdCluster& etcd) {
  std::string out;
  for (int i = 0; i < etcd.size(); ++i) {
    absl::StrAppend(&out, "\n--- member ", i, " (", etcd.endpoint(i), "):\n",
                    etcd.LogTail(i));
  }
  return out;
}

// Retries `put` until it succeeds (etcd may be electing a leader).
absl::StatusOr<int64_t> PutEventually(EtcdClient& c, const std::string& key,
                                      const std::string& value) {
  absl::StatusOr<int64_t> r = absl::UnknownError("not tried");
  WaitFor(
      [&] {
        r = c.Put(key, value);
        return r.ok();
      },
      absl::Seconds(60));
  return r;
}

TEST(EtcdClientTest, OpenRejectsBadOptions) {
  EXPECT_THAT(EtcdClient::Open({.endpoints = " , "}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(EtcdClient::Open({.endpoints = "127.0.0.1:1", .max_attempts = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(EtcdClient::Open({.endpoints = "127.0.0.1:1",
                                .ca_file = "/nonexistent/ca.pem"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("/nonexistent/ca.pem")));
  // Nothing listens there: Open still succeeds (it does not connect).
  EXPECT_THAT(EtcdClient::Open({.endpoints = "http://127.0.0.1:1"}), IsOk());
}

TEST(EtcdClientTest, PutRangeDeleteAndRevisions) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);

  auto r1 = c->Put("/t/a/1", "one");
  ASSERT_THAT(r1, IsOk());
  ASSERT_THAT(c->Put("/t/a/2", "two"), IsOk());
  ASSERT_THAT(c->Put("/t/b/1", "b"), IsOk());
  auto r4 = c->Put("/t/a/1", "uno");
  ASSERT_THAT(r4, IsOk());
  EXPECT_GT(*r4, *r1);

  auto one = c->Range("/t/a/1");
  ASSERT_THAT(one, IsOk());
  ASSERT_EQ(one->kvs.size(), 1u);
  EXPECT_EQ(one->kvs[0].value, "uno");
  EXPECT_EQ(one->kvs[0].mod_revision, *r4);
  EXPECT_EQ(one->kvs[0].create_revision, *r1);
  EXPECT_EQ(one->kvs[0].version, 2);
  EXPECT_EQ(one->revision, *r4);

  auto old = c->Range("/t/a/1", {.revision = *r1});
  ASSERT_THAT(old, IsOk());
  ASSERT_EQ(old->kvs.size(), 1u);
  EXPECT_EQ(old->kvs[0].value, "one");

  auto prefix = c->Range("/t/a/", {.prefix = true});
  ASSERT_THAT(prefix, IsOk());
  ASSERT_EQ(prefix->kvs.size(), 2u);
  EXPECT_EQ(prefix->kvs[0].key, "/t/a/1");
  EXPECT_EQ(prefix->kvs[1].key, "/t/a/2");

  auto limited = c->Range("/t/", {.prefix = true, .limit = 2});
  ASSERT_THAT(limited, IsOk());
  EXPECT_EQ(limited->kvs.size(), 2u);
  EXPECT_TRUE(limited->more);
  EXPECT_EQ(limited->count, 3);

  auto counted = c->Range("/t/", {.prefix = true, .count_only = true});
  ASSERT_THAT(counted, IsOk());
  EXPECT_TRUE(counted->kvs.empty());
  EXPECT_EQ(counted->count, 3);

  auto range = c->Range("/t/a/", {.range_end = "/t/b/2", .keys_only = true});
  ASSERT_THAT(range, IsOk());
  ASSERT_EQ(range->kvs.size(), 3u);
  EXPECT_EQ(range->kvs[2].key, "/t/b/1");
  EXPECT_EQ(range->kvs[2].value, "");

  auto missing = c->Range("/t/missing");
  ASSERT_THAT(missing, IsOk());
  EXPECT_TRUE(missing->kvs.empty());

  EXPECT_THAT(
      c->Range("/t/a/1", {.revision = *r4 + 100}),
      StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("future revision")));

  auto deleted = c->Delete("/t/a/", {.prefix = true});
  ASSERT_THAT(deleted, IsOk());
  EXPECT_EQ(*deleted, 2);
  auto gone = c->Range("/t/", {.prefix = true});
  ASSERT_THAT(gone, IsOk());
  ASSERT_EQ(gone->kvs.size(), 1u);
  EXPECT_EQ(gone->kvs[0].key, "/t/b/1");
  auto none = c->Delete("/t/nothing");
  ASSERT_THAT(none, IsOk());
  EXPECT_EQ(*none, 0);

  auto status = c->Status();
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->version().substr(0, 2), "3.");
  EXPECT_THAT(c->Status(etcd->endpoint(0)), IsOk());
  EXPECT_THAT(c->Status("127.0.0.1:1"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(EtcdClientTest, TxnCompareAndSwapHasOneWinner) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  auto rev = c->Put("/cas/x", "v0");
  ASSERT_THAT(rev, IsOk());

  std::atomic<int> winners{0};
  std::atomic<int> losers{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      etcdserverpb::TxnRequest txn;
      auto* cmp = txn.add_compare();
      cmp->set_key("/cas/x");
      cmp->set_target(etcdserverpb::Compare::MOD);
      cmp->set_result(etcdserverpb::Compare::EQUAL);
      cmp->set_mod_revision(*rev);
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key("/cas/x");
      put->set_value(absl::StrCat("writer", t));
      txn.add_failure()->mutable_request_range()->set_key("/cas/x");
      auto resp = c->Txn(txn);
      ASSERT_THAT(resp, IsOk());
      if (resp->succeeded()) {
        ++winners;
      } else {
        ++losers;
        // The failure branch read the winner's value.
        ASSERT_EQ(resp->responses_size(), 1);
        EXPECT_THAT(resp->responses(0).response_range().kvs(0).value(),
                    HasSubstr("writer"));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(winners.load(), 1);
  EXPECT_EQ(losers.load(), 1);
}

TEST(EtcdClientTest, WatchSeesPutsAndDeletesInOrder) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  auto before = c->Put("/w/before", "x");  // Not seen: watch starts after.
  ASSERT_THAT(before, IsOk());
  Collector col;
  auto watch = c->StartWatch({.key = "/w/", .prefix = true, .prev_kv = true},
                             col.Callback());
  ASSERT_THAT(watch, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watch)->connected(); }));
  ASSERT_THAT(c->Put("/w/a", "1"), IsOk());
  ASSERT_THAT(c->Put("/other", "not watched"), IsOk());
  ASSERT_THAT(c->Put("/w/b", "2"), IsOk());
  ASSERT_THAT(c->Put("/w/a", "3"), IsOk());
  auto del = c->Delete("/w/a");
  ASSERT_THAT(del, IsOk());
  ASSERT_TRUE(col.WaitForEvents(4));
  auto ev = col.events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].kv.key, "/w/a");
  EXPECT_EQ(ev[0].kv.value, "1");
  EXPECT_EQ(ev[1].kv.key, "/w/b");
  EXPECT_EQ(ev[2].kv.value, "3");
  EXPECT_EQ(ev[2].prev_kv.value, "1");
  EXPECT_EQ(ev[3].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(ev[3].kv.key, "/w/a");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ev[i].type, WatchEvent::Type::kPut);
    EXPECT_LT(ev[i].kv.mod_revision, ev[i + 1].kv.mod_revision);
  }
  EXPECT_EQ((*watch)->last_revision(), ev[3].kv.mod_revision);

  // A watch from an old revision replays history.
  Collector replay;
  auto w2 = c->StartWatch({.key = "/w/b", .start_revision = *before},
                          replay.Callback());
  ASSERT_THAT(w2, IsOk());
  ASSERT_TRUE(replay.WaitForEvents(1));
  EXPECT_EQ(replay.events()[0].kv.value, "2");
}

TEST(EtcdClientTest, WatchResumesAfterWatchedMemberIsKilled) {
  auto etcd = StartEtcd(3);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient(
      {.endpoints = etcd->endpoints(), .call_timeout = absl::Seconds(2)});
  ASSERT_NE(c, nullptr);
  auto start = c->Put("/r/start", "");
  ASSERT_THAT(start, IsOk());
  Collector col;
  auto watch = c->StartWatch(
      {.key = "/r/k", .prefix = true, .start_revision = *start + 1},
      col.Callback());
  ASSERT_THAT(watch, IsOk());
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(c->Put(absl::StrCat("/r/k", i), "v"), IsOk());
  }
  ASSERT_TRUE(col.WaitForEvents(5));
  const std::string watched = (*watch)->endpoint();
  int member = -1;
  for (int i = 0; i < etcd->size(); ++i) {
    if (etcd->endpoint(i) == watched) member = i;
  }
  ASSERT_GE(member, 0) << watched;
  ASSERT_THAT(etcd->KillMember(member), IsOk());
  // Written while the watch is disconnected or reconnecting.
  for (int i = 5; i < 10; ++i) {
    ASSERT_THAT(PutEventually(*c, absl::StrCat("/r/k", i), "v"), IsOk())
        << AllLogs(*etcd);
  }
  ASSERT_TRUE(col.WaitForEvents(10));
  EXPECT_NE((*watch)->endpoint(), watched);
  // A marker flushes anything that would follow (duplicates).
  ASSERT_THAT(c->Put("/r/kz", "marker"), IsOk());
  ASSERT_TRUE(col.WaitForEvents(11));
  auto ev = col.events();
  ASSERT_EQ(ev.size(), 11u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ev[i].kv.key, absl::StrCat("/r/k", i)) << "event " << i;
  }
  EXPECT_EQ(ev[10].kv.key, "/r/kz");
  EXPECT_TRUE((*watch)->connected());
}

TEST(EtcdClientTest, WatchResumesAfterSingleMemberRestart) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  Collector col;
  auto watch = c->StartWatch({.key = "/r/k", .prefix = true}, col.Callback());
  ASSERT_THAT(watch, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watch)->connected(); }));
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(c->Put(absl::StrCat("/r/k", i), "v"), IsOk());
  }
  ASSERT_TRUE(col.WaitForEvents(3));
  ASSERT_THAT(etcd->RestartMember(0), IsOk());
  for (int i = 3; i < 6; ++i) {
    ASSERT_THAT(PutEventually(*c, absl::StrCat("/r/k", i), "v"), IsOk());
  }
  ASSERT_THAT(c->Put("/r/kz", "marker"), IsOk());
  ASSERT_TRUE(col.WaitForEvents(7));
  auto ev = col.events();
  ASSERT_EQ(ev.size(), 7u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ev[i].kv.key, absl::StrCat("/r/k", i)) << "event " << i;
  }
}

TEST(EtcdClientTest, CompactionStopsWatchAndFailsOldReads) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  auto first = c->Put("/c/x", "0");
  ASSERT_THAT(first, IsOk());
  int64_t last = 0;
  for (int i = 1; i < 5; ++i) {
    auto r = c->Put("/c/x", absl::StrCat(i));
    ASSERT_THAT(r, IsOk());
    last = *r;
  }
  ASSERT_THAT(c->Compact(last), IsOk());
  EXPECT_THAT(c->Compact(last), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(c->Range("/c/x", {.revision = *first}),
              StatusIs(absl::StatusCode::kOutOfRange,
                       AllOf(HasSubstr("compacted"), HasSubstr("etcd Range"),
                             HasSubstr(etcd->endpoint(0)))));
  auto now = c->Range("/c/x", {.revision = last});
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ(now->kvs[0].value, "4");

  Collector col;
  auto watch =
      c->StartWatch({.key = "/c/x", .start_revision = *first}, col.Callback());
  ASSERT_THAT(watch, IsOk());
  ASSERT_TRUE(WaitFor([&] { return !col.updates().empty(); }));
  ASSERT_TRUE(WaitFor([&] { return (*watch)->stopped(); }));
  auto updates = col.updates();
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_TRUE(updates[0].compacted);
  EXPECT_EQ(updates[0].compact_revision, last);
  EXPECT_TRUE(updates[0].events.empty());
}

TEST(EtcdClientTest, LeaseKeepAliveRevokeAndTimeToLive) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  // 2 s, renewed every ~0.7 s: a renewal may be late by over a second on a
  // loaded machine without the lease running out.
  auto lease = c->LeaseGrant(absl::Seconds(2));
  ASSERT_THAT(lease, IsOk());
  ASSERT_THAT(c->Put("/l/live", "x", *lease), IsOk());
  std::atomic<bool> lost{false};
  auto ka = c->KeepAlive(*lease, absl::Seconds(2), [&] { lost = true; });
  ASSERT_THAT(ka, IsOk());
  EXPECT_EQ((*ka)->lease_id(), *lease);
  // The key outlives its 2 s TTL several times over.
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (absl::Now() < until) {
    auto r = c->Range("/l/live");
    ASSERT_THAT(r, IsOk());
    ASSERT_EQ(r->kvs.size(), 1u) << "leased key expired despite keepalive";
    EXPECT_EQ(r->kvs[0].lease, *lease);
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_THAT(c->LeaseTimeToLive(*lease), IsOk());
  EXPECT_GT((*ka)->last_ttl(), 0);
  EXPECT_FALSE((*ka)->lost());
  ka->reset();  // Stops renewing; does not revoke.
  EXPECT_FALSE(lost.load());
  ASSERT_THAT(c->LeaseRevoke(*lease), IsOk());
  auto r = c->Range("/l/live");
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->kvs.empty());
  EXPECT_THAT(c->LeaseTimeToLive(*lease),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(c->LeaseRevoke(*lease), StatusIs(absl::StatusCode::kNotFound));
}

TEST(EtcdClientTest, KeepAliveReportsLeaseRevokedElsewhere) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints()});
  auto other = OpenClient({.endpoints = etcd->endpoints()});
  ASSERT_NE(c, nullptr);
  ASSERT_NE(other, nullptr);
  auto lease = c->LeaseGrant(absl::Seconds(2));
  ASSERT_THAT(lease, IsOk());
  std::atomic<int> lost{0};
  auto ka = c->KeepAlive(*lease, absl::Seconds(2), [&] { ++lost; });
  ASSERT_THAT(ka, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*ka)->last_ttl() > 0; }));
  ASSERT_THAT(other->LeaseRevoke(*lease), IsOk());
  ASSERT_TRUE(WaitFor([&] { return lost.load() > 0; }));
  EXPECT_TRUE((*ka)->lost());
  EXPECT_EQ(lost.load(), 1);
}

TEST(EtcdClientTest, KeepAliveReportsLossWhileClusterPaused) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints(),
                       .call_timeout = absl::Milliseconds(500)});
  ASSERT_NE(c, nullptr);
  auto lease = c->LeaseGrant(absl::Seconds(1));
  ASSERT_THAT(lease, IsOk());
  std::atomic<int> lost{0};
  auto ka = c->KeepAlive(*lease, absl::Seconds(1), [&] { ++lost; });
  ASSERT_THAT(ka, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*ka)->last_ttl() > 0; }));
  ASSERT_THAT(etcd->PauseMember(0), IsOk());
  const absl::Time paused = absl::Now();
  // etcd never answers now, so only the local TTL can end the lease.
  ASSERT_TRUE(WaitFor([&] { return lost.load() > 0; }));
  // Reported once the TTL (1 s) ran out locally, not after the calls'
  // retries: idle about 1 s; the bound leaves room for a loaded machine.
  const absl::Duration took = absl::Now() - paused;
  EXPECT_LT(took, absl::Seconds(10))
      << "lease loss reported " << absl::FormatDuration(took)
      << " after the pause";
  ASSERT_THAT(etcd->ResumeMember(0), IsOk());
  EXPECT_EQ(lost.load(), 1);
}

TEST(EtcdClientTest, FailsOverWhenLeaderIsKilled) {
  auto etcd = StartEtcd(3);
  ASSERT_NE(etcd, nullptr);
  auto leader = etcd->LeaderIndex();
  ASSERT_THAT(leader, IsOk());
  // The leader first, so that the client is talking to it when it dies.
  std::string endpoints = etcd->endpoint(*leader);
  for (int i = 0; i < 3; ++i) {
    if (i != *leader) absl::StrAppend(&endpoints, ",", etcd->endpoint(i));
  }
  // The Range right after the kill needs a new leader: its attempts (2 s
  // each, on the survivors) cover an election (idle ~1.2 s) even on a
  // loaded machine.
  auto c = OpenClient({.endpoints = endpoints,
                       .call_timeout = absl::Seconds(2),
                       .max_attempts = 10});
  ASSERT_NE(c, nullptr);
  ASSERT_THAT(c->Put("/f/x", "before"), IsOk());
  ASSERT_THAT(etcd->KillMember(*leader), IsOk());
  const absl::Time killed = absl::Now();
  auto r = c->Range("/f/x");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kvs[0].value, "before");
  ASSERT_THAT(PutEventually(*c, "/f/x", "after"), IsOk());
  // One election (idle ~1.2 s); the bound leaves room for a loaded machine.
  const absl::Duration took = absl::Now() - killed;
  EXPECT_LT(took, absl::Seconds(30))
      << "writes resumed " << absl::FormatDuration(took) << " after the kill";
  auto r2 = c->Range("/f/x");
  ASSERT_THAT(r2, IsOk());
  EXPECT_EQ(r2->kvs[0].value, "after");
}

TEST(EtcdClientTest, WritesSkipAnEndpointThatRefusesConnections) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto dead = rangefs::testing::PickUnusedPort();
  ASSERT_THAT(dead, IsOk());
  // The first endpoint refuses connections: a write surely did not reach
  // etcd there, so it is retried on the next one.
  auto c = OpenClient(
      {.endpoints = absl::StrCat("127.0.0.1:", *dead, ",", etcd->endpoint(0))});
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(c->Put("/s/x", "1"), IsOk());
  EXPECT_THAT(c->LeaseGrant(absl::Seconds(5)), IsOk());
  auto r = c->Range("/s/x");
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_THAT(c->Status(absl::StrCat("127.0.0.1:", *dead)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr(absl::StrCat("127.0.0.1:", *dead))));
}

TEST(EtcdClientTest, AllMembersDownFailsFastWithoutHanging) {
  auto etcd = StartEtcd(1);
  ASSERT_NE(etcd, nullptr);
  auto c = OpenClient({.endpoints = etcd->endpoints(),
                       .call_timeout = absl::Milliseconds(300),
                       .max_attempts = 3});
  ASSERT_NE(c, nullptr);
  ASSERT_THAT(c->Put("/d/x", "1"), IsOk());

  // Each call is 3 attempts of 300 ms (idle about 1 s in all); one that hung
  // on the stopped member, or used the default 5 s call timeout, would take
  // 15 s or more. The 10 s bound leaves room for a loaded machine.
  const auto fast = [](absl::Time t0) {
    const absl::Duration took = absl::Now() - t0;
    return ::testing::AssertionResult(took < absl::Seconds(10))
           << "took " << absl::FormatDuration(took);
  };
  ASSERT_THAT(etcd->PauseMember(0), IsOk());
  absl::Time t0 = absl::Now();
  EXPECT_THAT(c->Range("/d/x"), IsUnreachable("etcd Range /d/x"));
  EXPECT_TRUE(fast(t0));
  t0 = absl::Now();
  EXPECT_THAT(c->Put("/d/x", "2"), IsUnreachable("etcd Put /d/x"));
  EXPECT_TRUE(fast(t0));

  ASSERT_THAT(etcd->KillMember(0), IsOk());
  t0 = absl::Now();
  EXPECT_THAT(c->Range("/d/x"), StatusIs(absl::StatusCode::kUnavailable,
                                         HasSubstr(etcd->endpoint(0))));
  EXPECT_TRUE(fast(t0));
  EXPECT_THAT(c->Put("/d/x", "3"), StatusIs(absl::StatusCode::kUnavailable));
}

// Runs etcdctl against `endpoints`; returns OK if it exits 0.
absl::Status Etcdctl(const std::string& endpoints,
                     std::vector<std::string> args) {
  auto dir = rangefs::testing::MakeTempDir("etcdctl-");
  if (!dir.ok()) return dir.status();
  std::vector<std::string> argv = {"/usr/bin/etcdctl",
                                   "--endpoints=" + endpoints};
  argv.insert(argv.end(), args.begin(), args.end());
  auto p = rangefs::testing::Subprocess::Start(
      {.argv = argv, .env = {"ETCDCTL_API=3"}, .log_path = *dir + "/log"});
  if (!p.ok()) return p.status();
  auto ws = (*p)->Wait(absl::Seconds(60));
  if (!ws.ok()) return ws.status();
  if (!WIFEXITED(*ws) || WEXITSTATUS(*ws) != 0) {
    return absl::InternalError(
        absl::StrCat("etcdctl failed: ", (*p)->LogTail()));
  }
  return absl::OkStatus();
}

TEST(EtcdClientTest, AuthWithUsernameAndPassword) {
  // Tokens live 1 s, so the client has to re-authenticate below.
  auto etcd = StartEtcd(1, {"--auth-token-ttl=1"});
  ASSERT_NE(etcd, nullptr);
  const std::string eps = etcd->endpoints();
  ASSERT_THAT(Etcdctl(eps, {"user", "add", "root:pw"}), IsOk());
  ASSERT_THAT(Etcdctl(eps, {"user", "grant-role", "root", "root"}), IsOk());
  ASSERT_THAT(Etcdctl(eps, {"auth", "enable"}), IsOk());

  auto c = OpenClient({.endpoints = eps, .username = "root", .password = "pw"});
  ASSERT_NE(c, nullptr);
  ASSERT_THAT(c->Put("/a/x", "secret"), IsOk());
  auto r = c->Range("/a/x");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->kvs[0].value, "secret");
  Collector col;
  auto watch = c->StartWatch({.key = "/a/x"}, col.Callback());
  ASSERT_THAT(watch, IsOk());
  ASSERT_TRUE(WaitFor([&] { return (*watch)->connected(); }));

  // An unused token expires after its TTL (1 s; etcd checks on a 1 s ticker
  // and every use restarts the TTL), so the client idles, then writes: the
  // write finds its token expired, is refused, and the client authenticates
  // again and resends it (three requests). Should etcd's ticker be late (a
  // loaded machine), the client idles longer and tries again.
  bool reauthenticated = false;
  absl::Duration idle = absl::Milliseconds(2500);
  for (int i = 0; i < 4 && !reauthenticated; ++i, idle *= 2) {
    absl::SleepFor(idle);
    const uint64_t before = c->requests_sent();
    ASSERT_THAT(c->Put("/a/x", "again"), IsOk());
    reauthenticated = c->requests_sent() - before >= 3;
  }
  ASSERT_TRUE(reauthenticated) << "the 1 s token never expired, idle 20 s";
  ASSERT_TRUE(col.WaitForEvents(1));
  EXPECT_EQ(col.events()[0].kv.value, "again");

  auto bad =
      OpenClient({.endpoints = eps, .username = "root", .password = "wrong"});
  ASSERT_NE(bad, nullptr);
  EXPECT_THAT(bad->Range("/a/x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("etcd Authenticate root"),
                             HasSubstr("authentication failed"))));
  auto anonymous = OpenClient({.endpoints = eps});
  ASSERT_NE(anonymous, nullptr);
  EXPECT_THAT(anonymous->Range("/a/x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("user name is empty")));
}

}  // namespace
}  // namespace etcd
}  // namespace rangefs
