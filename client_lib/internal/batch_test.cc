// Batch's claim rule (AttemptSink): the first good answer of a piece is
// copied into the caller's buffer, later ones and answers after Close are
// not; failures are queued for the caller's loop; an in-place read holds
// its piece until it ends.
#include "client_lib/internal/batch.h"

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b_.hedge_wins = &hedge_wins_;
    PieceState& p = b_.pieces.emplace_back();
    p.dst = dst_.data();
    p.active = 2;
    absl::MutexLock l(&b_.mu);
    b_.remaining = 1;
  }
  Attempt* NewAttempt(bool hedge) {
    absl::MutexLock l(&b_.mu);
    Attempt* a = b_.attempts.Add();
    a->piece = 0;
    a->length = dst_.size();
    a->hedge = hedge;
    return a;
  }

  // The hedge's "hedgeABC" came first and won the piece; both ended.
  void ExpectTheHedgeWon(Attempt* primary, Attempt* hedge) {
    EXPECT_EQ(dst_, "hedgeABC");
    EXPECT_EQ(hedge_wins_.load(), 1u);
    absl::MutexLock l(&b_.mu);
    EXPECT_TRUE(b_.pieces[0].done);
    EXPECT_EQ(b_.remaining, 0);
    EXPECT_EQ(b_.pieces[0].active, 0);
    EXPECT_TRUE(primary->finished && hedge->finished);
  }

  std::string dst_ = std::string(8, '.');
  std::atomic<uint64_t> hedge_wins_{0};
  Batch b_;
};

TEST_F(BatchTest, FirstAnswerWinsThePiece) {
  Attempt* primary = NewAttempt(false);
  Attempt* hedge = NewAttempt(true);
  EXPECT_TRUE(b_.Completed(hedge, size_t{8}, "hedgeABC"));
  EXPECT_FALSE(b_.Completed(primary, size_t{8}, "primary!"));
  ExpectTheHedgeWon(primary, hedge);
}

// CompletedAll is Completed for each, in order: the first answer wins the
// piece (a hedge's win counted), the later one is not copied.
TEST_F(BatchTest, CompletedAllIsCompletedForEachInOrder) {
  Attempt* primary = NewAttempt(false);
  Attempt* hedge = NewAttempt(true);
  const AttemptSink::Success done[] = {{hedge, "hedgeABC"},
                                       {primary, "primary!"}};
  b_.CompletedAll(done);
  ExpectTheHedgeWon(primary, hedge);
  absl::MutexLock l(&b_.mu);
  EXPECT_TRUE(primary->status.ok() && hedge->status.ok());
}

// A large piece's bytes are copied with the lock let go (Completed does
// so above 16 KiB): the rest of a CompletedAll still runs under the lock,
// and every piece of it ends.
TEST_F(BatchTest, CompletedAllLetsGoOfTheLockForALargeCopy) {
  std::string big(64 << 10, '.');
  const std::string bytes(big.size(), 'b');
  {
    absl::MutexLock l(&b_.mu);
    PieceState& p = b_.pieces.emplace_back();
    p.dst = big.data();
    p.active = 1;
    b_.remaining = 2;
  }
  Attempt* small = NewAttempt(false);
  Attempt* large;
  {
    absl::MutexLock l(&b_.mu);
    large = b_.attempts.Add();
    large->piece = 1;
    large->length = big.size();
  }
  const AttemptSink::Success done[] = {{large, bytes.data()},
                                       {small, "smallABC"}};
  b_.CompletedAll(done);
  EXPECT_TRUE(big == bytes);
  EXPECT_EQ(dst_, "smallABC");
  absl::MutexLock l(&b_.mu);
  EXPECT_EQ(b_.remaining, 0);
  EXPECT_EQ(b_.copiers, 0);
  EXPECT_TRUE(b_.pieces[0].done && b_.pieces[1].done);
}

// The attempts of a call keep their addresses while more are added (the
// I/O threads hold them), and ForEach visits each once, in order.
TEST(AttemptListTest, AttemptsStayPutAndAreVisitedInOrder) {
  AttemptList list;
  std::vector<Attempt*> added;
  for (int i = 0; i < 2000; ++i) {
    Attempt* a = list.Add();
    EXPECT_EQ(a->piece, 0);  // a fresh attempt
    EXPECT_FALSE(a->finished);
    a->piece = i;
    added.push_back(a);
  }
  EXPECT_EQ(list.size(), added.size());
  std::vector<Attempt*> seen;
  list.ForEach([&](Attempt& a) { seen.push_back(&a); });
  EXPECT_EQ(seen, added);
  for (int i = 0; i < 2000; ++i) EXPECT_EQ(added[i]->piece, i);
  AttemptList empty;
  int visits = 0;
  empty.ForEach([&](Attempt&) { ++visits; });
  EXPECT_EQ(visits, 0);
  EXPECT_EQ(empty.size(), 0u);
}

// While one attempt's bytes are being copied in (the piece claimed, the
// lock released), another attempt of the piece fails: the piece is as good
// as done, so the failure is not queued for a retry (which, with no replica
// left, would fail the piece and count it done twice).
TEST_F(BatchTest, FailureOfAPieceBeingCopiedIsNotQueued) {
  NewAttempt(false);
  Attempt* hedge = NewAttempt(true);
  {
    absl::MutexLock l(&b_.mu);
    b_.pieces[0].claimed = true;  // the primary's copy is under way
  }
  EXPECT_FALSE(b_.Completed(hedge, absl::UnavailableError("down"), nullptr));
  absl::MutexLock l(&b_.mu);
  EXPECT_TRUE(b_.failed.empty());
  EXPECT_EQ(b_.remaining, 1);
  EXPECT_FALSE(hedge->status.ok());
}

TEST_F(BatchTest, NothingIsWrittenAfterClose) {
  Attempt* a = NewAttempt(false);
  {
    absl::MutexLock l(&b_.mu);
    b_.closed = true;
    b_.closed_hint.store(true);
  }
  EXPECT_TRUE(b_.Ended());
  EXPECT_FALSE(b_.Completed(a, size_t{8}, "too late"));
  EXPECT_EQ(dst_, "........");
}

TEST_F(BatchTest, FailuresAreQueuedForTheCaller) {
  Attempt* a = NewAttempt(false);
  EXPECT_FALSE(b_.Completed(a, absl::UnavailableError("n1 down"), nullptr));
  absl::MutexLock l(&b_.mu);
  ASSERT_EQ(b_.failed.size(), 1u);
  EXPECT_EQ(b_.failed[0], a);
  EXPECT_TRUE(absl::IsUnavailable(a->status));
  EXPECT_EQ(dst_, "........");
}

// An in-place read (its bytes land in dst_ itself) claims its piece: a
// hedge's answer meanwhile is not copied over it. Its own success ends the
// piece with nothing copied.
TEST_F(BatchTest, InPlaceReadHoldsItsPieceAndEndsIt) {
  Attempt* primary = NewAttempt(false);
  Attempt* hedge = NewAttempt(true);
  {
    absl::MutexLock l(&b_.mu);
    b_.StartLanding(primary);
    EXPECT_EQ(b_.landing_on_ring, 1);
  }
  EXPECT_FALSE(b_.Completed(hedge, size_t{8}, "hedgeABC"));
  EXPECT_EQ(dst_, "........");
  dst_ = "landed!!";  // what the kernel wrote
  EXPECT_FALSE(b_.Completed(primary, size_t{8}, dst_.data()));
  EXPECT_EQ(dst_, "landed!!");
  EXPECT_EQ(hedge_wins_.load(), 0u);
  absl::MutexLock l(&b_.mu);
  EXPECT_TRUE(b_.pieces[0].done);
  EXPECT_EQ(b_.remaining, 0);
  EXPECT_EQ(b_.landing_on_ring, 0);
  EXPECT_FALSE(primary->landing);
  EXPECT_TRUE(primary->status.ok());
}

// An in-place read that failed (a checksum mismatch) opens its piece
// again and is queued for a retry; one that goes on to its node's ring
// thread (LandingFailed) opens it and is not.
TEST_F(BatchTest, FailedInPlaceReadOpensItsPiece) {
  Attempt* a = NewAttempt(false);
  {
    absl::MutexLock l(&b_.mu);
    b_.StartLanding(a);
  }
  EXPECT_FALSE(b_.Completed(a, absl::DataLossError("bad block"), dst_.data()));
  {
    absl::MutexLock l(&b_.mu);
    EXPECT_FALSE(b_.pieces[0].claimed);
    EXPECT_EQ(b_.landing_on_ring, 0);
    ASSERT_EQ(b_.failed.size(), 1u);
    b_.failed.clear();
  }
  Attempt* b = NewAttempt(false);
  {
    absl::MutexLock l(&b_.mu);
    b_.StartLanding(b);
  }
  b_.LandingFailed(b);
  {
    absl::MutexLock l(&b_.mu);
    EXPECT_FALSE(b_.pieces[0].claimed);
    EXPECT_FALSE(b->landing);
    EXPECT_EQ(b_.landing_on_ring, 0);
    EXPECT_TRUE(b_.failed.empty());
  }
  // The ring thread's answer is then copied in the usual way.
  EXPECT_FALSE(b_.Completed(b, size_t{8}, "fromring"));
  EXPECT_EQ(dst_, "fromring");
}

// An agent read landing in dst_ (Land) holds the piece, but another
// attempt whose bytes come first wins it: it cancels the landing read and
// copies only once that read has let go (here the read writes into dst_
// after it sees the cancel, as a socket read in progress may).
TEST_F(BatchTest, AnswerFirstCancelsALandingAgentReadAndWaitsForIt) {
  Attempt* primary = NewAttempt(false);
  Attempt* hedge = NewAttempt(true);
  char* dst = b_.Land(primary);
  ASSERT_EQ(dst, dst_.data());
  EXPECT_EQ(b_.Land(hedge), nullptr);  // one holder at a time
  std::thread reader([&] {
    const absl::Time end = absl::Now() + absl::Seconds(30);
    while (!primary->canceller.cancelled() && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    memcpy(dst, "part", 4);
    EXPECT_FALSE(
        b_.Completed(primary, absl::CancelledError("cancelled"), nullptr));
  });
  EXPECT_TRUE(b_.Completed(hedge, size_t{8}, "hedgeABC"));
  reader.join();
  EXPECT_TRUE(primary->canceller.cancelled());
  EXPECT_EQ(dst_, "hedgeABC");
  absl::MutexLock l(&b_.mu);
  EXPECT_TRUE(b_.pieces[0].done);
  EXPECT_EQ(b_.pieces[0].landing, nullptr);
  EXPECT_EQ(b_.landing_agent, 0);
  EXPECT_EQ(b_.remaining, 0);
}

// A landing agent read that fails gives the piece back for a retry; one
// that ends with every byte ends the piece; none starts on a closed call.
TEST_F(BatchTest, LandingAgentReadEndsItsPieceOrGivesItBack) {
  Attempt* a = NewAttempt(false);
  ASSERT_NE(b_.Land(a), nullptr);
  EXPECT_FALSE(b_.Completed(a, absl::DataLossError("frame crc"), nullptr));
  {
    absl::MutexLock l(&b_.mu);
    EXPECT_FALSE(b_.pieces[0].claimed);
    ASSERT_EQ(b_.failed.size(), 1u);
    b_.failed.clear();
  }
  Attempt* b = NewAttempt(false);
  char* dst = b_.Land(b);
  ASSERT_NE(dst, nullptr);
  memcpy(dst, "agent!!!", 8);
  EXPECT_FALSE(b_.Completed(b, size_t{8}, dst));
  EXPECT_EQ(dst_, "agent!!!");
  {
    absl::MutexLock l(&b_.mu);
    EXPECT_TRUE(b_.pieces[0].done);
    EXPECT_EQ(b_.landing_agent, 0);
    b_.closed = true;
  }
  EXPECT_EQ(b_.Land(NewAttempt(false)), nullptr);
}

// A landing agent read that was abandoned (a stall), its piece failed
// meanwhile with no replica left, then ends with every byte: the piece
// stays failed and is not counted done twice.
TEST_F(BatchTest, LandingReadEndingAfterItsPieceFailedCountsNothing) {
  Attempt* a = NewAttempt(false);
  ASSERT_NE(b_.Land(a), nullptr);
  {
    absl::MutexLock l(&b_.mu);
    a->abandoned = true;
    b_.pieces[0].active--;
    b_.pieces[0].done = true;  // as FailPiece does
    b_.remaining--;
  }
  EXPECT_FALSE(b_.Completed(a, size_t{8}, dst_.data()));
  absl::MutexLock l(&b_.mu);
  EXPECT_EQ(b_.remaining, 0);
  EXPECT_EQ(b_.landing_agent, 0);
  EXPECT_FALSE(b_.pieces[0].claimed);
}

TEST_F(BatchTest, DroppedAttemptEndsAsNotNeeded) {
  Attempt* a = NewAttempt(false);
  b_.Dropped(a);
  absl::MutexLock l(&b_.mu);
  EXPECT_TRUE(a->finished);
  EXPECT_TRUE(absl::IsCancelled(a->status));
  EXPECT_EQ(b_.pieces[0].active, 1);
  EXPECT_TRUE(b_.failed.empty());
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
