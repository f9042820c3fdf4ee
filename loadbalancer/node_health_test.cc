#include "loadbalancer/node_health.h"

#include "absl/status/status.h"
#include "base/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace lb {
namespace {

using ::testing::HasSubstr;

const absl::Status kUnavailable = absl::UnavailableError("connect refused");

class NodeHealthTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  NodeHealthTable table_{&clock_};
};

TEST_F(NodeHealthTest, UnknownNodeIsAdmissibleAndNotProbed) {
  EXPECT_TRUE(table_.Admissible("n1"));
  EXPECT_FALSE(table_.ShouldProbe("n1"));
  NodeState s = table_.State("n1");
  EXPECT_FALSE(s.known);
  EXPECT_EQ(s.node, "n1");
  EXPECT_TRUE(table_.Snapshot().empty());
}

TEST_F(NodeHealthTest, DeadAfterThreeConsecutiveFailures) {
  table_.RecordFailure("n1", kUnavailable);
  table_.RecordFailure("n1", kUnavailable);
  EXPECT_TRUE(table_.Admissible("n1"));
  table_.RecordSuccess("n1", absl::Milliseconds(2));  // resets the streak
  table_.RecordFailure("n1", kUnavailable);
  table_.RecordFailure("n1", kUnavailable);
  EXPECT_TRUE(table_.Admissible("n1"));
  table_.RecordFailure("n1", kUnavailable);
  EXPECT_FALSE(table_.Admissible("n1"));

  NodeState s = table_.State("n1");
  EXPECT_TRUE(s.known);
  EXPECT_TRUE(s.dead);
  EXPECT_EQ(s.successes, 1);
  EXPECT_EQ(s.failures, 5);
  EXPECT_EQ(s.consecutive_failures, 3);
  EXPECT_THAT(s.last_error, HasSubstr("connect refused"));
  EXPECT_EQ(s.dead_since, clock_.Now());
  EXPECT_EQ(s.last_latency, absl::Milliseconds(2));
}

TEST_F(NodeHealthTest, TimeoutMarksDeadAtOnce) {
  table_.RecordFailure("n1", absl::DeadlineExceededError("read 1MiB"));
  EXPECT_FALSE(table_.Admissible("n1"));
  EXPECT_TRUE(table_.State("n1").dead);
}

// A node dead only for timeouts is slow, not known broken (an erasure-coded
// read waits for its cells); any other failure, while dead or before,
// until a success, makes it broken.
TEST_F(NodeHealthTest, DeadOnlyForTimeoutsIsTold) {
  table_.RecordFailure("n1", absl::DeadlineExceededError("attempt stalled"));
  EXPECT_TRUE(table_.State("n1").dead);
  EXPECT_TRUE(table_.State("n1").only_timeouts);
  table_.RecordFailure("n1", kUnavailable);  // while dead
  EXPECT_FALSE(table_.State("n1").only_timeouts);

  table_.RecordFailure("n2", kUnavailable);
  table_.RecordFailure("n2", absl::DeadlineExceededError("attempt timeout"));
  EXPECT_TRUE(table_.State("n2").dead);
  EXPECT_FALSE(table_.State("n2").only_timeouts);

  table_.RecordFailure("n3", kUnavailable);
  table_.RecordSuccess("n3", absl::Milliseconds(1));  // a fresh streak
  table_.RecordFailure("n3", absl::DeadlineExceededError("attempt stalled"));
  EXPECT_TRUE(table_.State("n3").dead);
  EXPECT_TRUE(table_.State("n3").only_timeouts);
}

TEST_F(NodeHealthTest, ThresholdIsConfigurable) {
  NodeHealthTable t(&clock_,
                    {.max_consecutive_failures = 1, .dead_on_timeout = false});
  t.RecordFailure("a", kUnavailable);
  EXPECT_FALSE(t.Admissible("a"));
  NodeHealthTable t5(&clock_,
                     {.max_consecutive_failures = 5, .dead_on_timeout = false});
  for (int i = 0; i < 4; ++i) {
    t5.RecordFailure("b", absl::DeadlineExceededError("slow"));
  }
  EXPECT_TRUE(t5.Admissible("b"));
  t5.RecordFailure("b", kUnavailable);
  EXPECT_FALSE(t5.Admissible("b"));
}

TEST_F(NodeHealthTest, ProbeAfterBackoffThenSuccessRevives) {
  for (int i = 0; i < 3; ++i) table_.RecordFailure("n1", kUnavailable);
  EXPECT_FALSE(table_.ShouldProbe("n1"));
  clock_.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(table_.ShouldProbe("n1"));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(table_.ShouldProbe("n1"));
  // Exactly one probe.
  EXPECT_FALSE(table_.ShouldProbe("n1"));
  EXPECT_TRUE(table_.State("n1").probe_inflight);
  EXPECT_FALSE(table_.Admissible("n1"));

  table_.RecordSuccess("n1", absl::Milliseconds(1));
  EXPECT_TRUE(table_.Admissible("n1"));
  NodeState s = table_.State("n1");
  EXPECT_FALSE(s.dead);
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_FALSE(table_.ShouldProbe("n1"));
}

TEST_F(NodeHealthTest, RecordSuccessesCountsThemAllAndRevives) {
  table_.RecordFailure("n1", kUnavailable);
  table_.RecordSuccesses("n1", 5, absl::Milliseconds(7));
  NodeState s = table_.State("n1");
  EXPECT_EQ(s.successes, 5);
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_EQ(s.last_latency, absl::Milliseconds(7));
  for (int i = 0; i < 3; ++i) table_.RecordFailure("n1", kUnavailable);
  ASSERT_FALSE(table_.Admissible("n1"));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(table_.ShouldProbe("n1"));
  table_.RecordSuccesses("n1", 2, absl::Milliseconds(1));  // the probe's
  EXPECT_TRUE(table_.Admissible("n1"));
  s = table_.State("n1");
  EXPECT_FALSE(s.dead);
  EXPECT_FALSE(s.probe_inflight);
  EXPECT_EQ(s.successes, 7);
}

TEST_F(NodeHealthTest, FailedProbesDoubleBackoffUpToThirtySeconds) {
  for (int i = 0; i < 3; ++i) table_.RecordFailure("n1", kUnavailable);
  const absl::Duration want[] = {
      absl::Seconds(1),  absl::Seconds(2),  absl::Seconds(4), absl::Seconds(8),
      absl::Seconds(16), absl::Seconds(30), absl::Seconds(30)};
  for (absl::Duration backoff : want) {
    EXPECT_EQ(table_.State("n1").probe_backoff, backoff);
    clock_.Advance(backoff - absl::Milliseconds(1));
    EXPECT_FALSE(table_.ShouldProbe("n1")) << backoff;
    clock_.Advance(absl::Milliseconds(1));
    ASSERT_TRUE(table_.ShouldProbe("n1")) << backoff;
    table_.RecordFailure("n1", kUnavailable);  // the probe fails
    EXPECT_TRUE(table_.State("n1").dead);
  }
}

TEST_F(NodeHealthTest, StragglerFailuresDoNotMoveBackoff) {
  for (int i = 0; i < 3; ++i) table_.RecordFailure("n1", kUnavailable);
  // Requests that were in flight when it died fail later: no probe pending.
  table_.RecordFailure("n1", kUnavailable);
  EXPECT_EQ(table_.State("n1").probe_backoff, absl::Seconds(1));
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(table_.ShouldProbe("n1"));
}

TEST_F(NodeHealthTest, LostProbeIsRetriedAfterTimeout) {
  NodeHealthTable t(&clock_, {.probe_timeout = absl::Seconds(5)});
  for (int i = 0; i < 3; ++i) t.RecordFailure("n1", kUnavailable);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(t.ShouldProbe("n1"));
  clock_.Advance(absl::Seconds(4));
  EXPECT_FALSE(t.ShouldProbe("n1"));
  clock_.Advance(absl::Seconds(1));  // lost: backoff 2s from now
  EXPECT_FALSE(t.ShouldProbe("n1"));
  EXPECT_EQ(t.State("n1").probe_backoff, absl::Seconds(2));
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(t.ShouldProbe("n1"));
}

TEST_F(NodeHealthTest, NotLiveAndDrainingAreNotAdmissible) {
  table_.SetLive("n1", /*live=*/false, /*draining=*/false);
  EXPECT_FALSE(table_.Admissible("n1"));
  table_.SetLive("n1", /*live=*/true, /*draining=*/true);
  EXPECT_FALSE(table_.Admissible("n1"));
  table_.SetLive("n1", /*live=*/true, /*draining=*/false);
  EXPECT_TRUE(table_.Admissible("n1"));
  NodeState s = table_.State("n1");
  EXPECT_TRUE(s.live);
  EXPECT_FALSE(s.draining);
}

TEST_F(NodeHealthTest, AdminStates) {
  table_.SetAdminState("n1", AdminState::kDraining);
  EXPECT_FALSE(table_.Admissible("n1"));
  table_.SetAdminState("n1", AdminState::kDisabled);
  EXPECT_FALSE(table_.Admissible("n1"));
  EXPECT_EQ(table_.State("n1").admin, AdminState::kDisabled);
  table_.SetAdminState("n1", AdminState::kActive);
  EXPECT_TRUE(table_.Admissible("n1"));
  EXPECT_EQ(AdminStateName(AdminState::kDraining), "draining");
}

TEST_F(NodeHealthTest, DeadNodeThatIsNotLiveIsNotProbed) {
  for (int i = 0; i < 3; ++i) table_.RecordFailure("n1", kUnavailable);
  table_.SetLive("n1", false, false);
  clock_.Advance(absl::Minutes(1));
  EXPECT_FALSE(table_.ShouldProbe("n1"));
  table_.SetAdminState("n1", AdminState::kDisabled);
  table_.SetLive("n1", true, false);  // re-registered: dead mark cleared
  EXPECT_FALSE(table_.State("n1").dead);
  EXPECT_FALSE(table_.Admissible("n1"));  // still disabled
  table_.SetAdminState("n1", AdminState::kActive);
  EXPECT_TRUE(table_.Admissible("n1"));
}

TEST_F(NodeHealthTest, SnapshotIsSortedAndRemoveForgets) {
  table_.RecordSuccess("b", absl::Milliseconds(1));
  table_.RecordFailure("a", kUnavailable);
  table_.SetAdminState("c", AdminState::kDraining);
  std::vector<NodeState> snap = table_.Snapshot();
  ASSERT_EQ(snap.size(), 3u);
  EXPECT_EQ(snap[0].node, "a");
  EXPECT_EQ(snap[0].failures, 1);
  EXPECT_EQ(snap[1].node, "b");
  EXPECT_EQ(snap[1].successes, 1);
  EXPECT_EQ(snap[2].node, "c");
  table_.Remove("c");
  EXPECT_TRUE(table_.Admissible("c"));
  EXPECT_EQ(table_.Snapshot().size(), 2u);
}

}  // namespace
}  // namespace lb
}  // namespace rangefs
