// Issue 35's stall (a read call asleep to its deadline with nothing in
// flight), at the unit that caused it: EcReads (client_lib/internal/
// ec_read.h) over a real Batch, a real codec and a fake engine that
// records what the call would send. A parity hedge's in-place decode holds
// its data piece's claim without the call's lock; the cell's own read that
// ends meanwhile is dropped by Batch::CompletedLocked (its bytes, or its
// failure, lose to the claim). When that decode then fails its CRC, the
// piece must not be left open with nothing to end it.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client_lib/internal/batch.h"
#include "client_lib/internal/ec_read.h"
#include "client_lib/internal/stuck_pieces.h"
#include "gtest/gtest.h"
#include "namespace/ec_layout.h"
#include "namespace/ec_test_layout.h"

namespace rangefs {
namespace client_internal {
namespace {

namespace v1 = ::rangefs::v1;

constexpr int kK = 4, kM = 2;
constexpr uint64_t kCell = 4096;

// What the call's engine was asked to do.
class FakeEngine final : public EcReads::Engine {
 public:
  bool Start(int i) override {
    started.push_back(i);
    return !refuse;
  }
  bool StartPatient(int i) override {
    patient.push_back(i);
    return true;
  }
  bool Usable(const v1::Replica&) override { return true; }
  int64_t OutstandingBytes(const v1::Replica&) override { return 0; }
  bool TakeHedgeBudget(int) override { return true; }
  absl::StatusOr<const ec::Codec*> Codec(int k, int m) override {
    return codecs.Get(k, m);
  }
  EcCellCrcs& cell_crcs() override { return crcs; }

  bool refuse = false;  // no read can be sent
  std::vector<int> started, patient;
  EcCodecs codecs;
  EcCellCrcs crcs;
};

class EcHedgeStallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One row of RS(4, 2); data cell 0 is the call's one piece.
    layout_ = ns::EcTestLayout(kK, kM, kCell, kK * kCell, "o/c");
    // The row's ".cells" CRCs, known to the client: cell 0's is not the
    // CRC of what its survivors decode to (a survivor's bytes are wrong).
    engine_.crcs.Add(kFileId, ns::ParityReplica(layout_, 0).object(), 0,
                     std::vector<uint32_t>(kK + kM, 0xBAD));
    PieceState& p = b_.pieces.emplace_back();
    p.piece.offset = 0;
    p.piece.length = kCell;
    p.piece.replicas = &layout_.striped().targets(0).replicas();
    p.range = 0;
    p.layout = &layout_;
    p.ec = EcRole::kData;
    p.path = &path_;
    p.file_id = kFileId;
    p.dst = dst_.data();
    b_.pieces.reserve(1 + EcReads::HelperRoom(b_));  // moves `p`
    absl::MutexLock l(&b_.mu);
    b_.remaining = 1;
    // The cell's own read, in flight.
    own_ = b_.attempts.Add();
    own_->piece = 0;
    own_->length = kCell;
    b_.pieces[0].last = own_;
    b_.pieces[0].active = 1;
  }

  // The parity hedge fires and its k helpers answer (zeros).
  void HedgeAndAnswerHelpers() {
    b_.mu.AssertHeld();
    ASSERT_TRUE(ec_.Hedge(b_, 0, engine_));
    ASSERT_EQ(engine_.started.size(), static_cast<size_t>(kK));
    for (int h : engine_.started) {
      PieceState& helper = b_.pieces[h];
      std::memset(helper.dst, 0, helper.piece.length);
      helper.done = true;
      b_.remaining--;
    }
  }

  // The own read ends while the decode holds the claim: the state that
  // Batch::CompletedLocked leaves (finished, no longer active, not queued
  // as failed).
  void OwnReadEndsUnseen(const absl::Status& status) {
    b_.mu.AssertHeld();
    own_->finished = true;
    own_->status = status;
    b_.pieces[0].active--;
  }

  // Whether anything can still end piece 0: done, a read of it sent, or
  // the loop told to step again.
  bool PieceHasAFuture() {
    b_.mu.AssertHeld();
    const PieceState& p = b_.pieces[0];
    return p.done || !engine_.patient.empty() ||
           engine_.started.size() > static_cast<size_t>(kK);
  }

  static constexpr uint64_t kFileId = 7;
  v1::FileLayout layout_;
  std::string path_ = "/ec/f";
  std::string dst_ = std::string(kCell, '.');
  FakeEngine engine_;
  EcReads ec_;
  Batch b_;
  Attempt* own_ = nullptr;
};

TEST_F(EcHedgeStallTest, OwnAnswerDroppedByAFailedHedgeIsReadAgain) {
  absl::MutexLock l(&b_.mu);
  HedgeAndAnswerHelpers();
  OwnReadEndsUnseen(absl::OkStatus());
  ec_.Step(b_, engine_);  // decodes: CRC mismatch, the hedge gives up
  EXPECT_EQ(ec_.counters().crc_mismatches, 1u);
  EXPECT_FALSE(b_.pieces[0].claimed);
  EXPECT_TRUE(b_.self_woken) << "the loop would sleep with nothing to end "
                                "the piece";
  EXPECT_TRUE(StuckPieces(b_, false).empty());  // the loop steps again
  ec_.Step(b_, engine_);                        // the loop's next step
  ASSERT_TRUE(PieceHasAFuture());
  EXPECT_EQ(engine_.patient, std::vector<int>{0});  // its own cell again
}

TEST_F(EcHedgeStallTest, OwnFailureDroppedByAFailedHedgeEndsThePiece) {
  absl::MutexLock l(&b_.mu);
  HedgeAndAnswerHelpers();
  OwnReadEndsUnseen(absl::UnavailableError("node n0 gone"));
  ec_.Step(b_, engine_);
  EXPECT_TRUE(b_.self_woken);
  // The failure is taken as any: a rebuild of its own, whose survivors
  // decode to the same wrong CRC, ends the piece with DATA_LOSS.
  for (int step = 0; step < 3 && !b_.pieces[0].done; ++step) {
    ec_.Step(b_, engine_);
    for (size_t k = 0; k < b_.pieces.size(); ++k) {
      PieceState& h = b_.pieces[k];
      if (h.ec != EcRole::kHelper || h.done) continue;
      std::memset(h.dst, 0, h.piece.length);
      h.done = true;
      b_.remaining--;
    }
  }
  ASSERT_TRUE(b_.pieces[0].done);
  EXPECT_TRUE(absl::IsDataLoss(b_.pieces[0].status)) << b_.pieces[0].status;
  EXPECT_EQ(b_.remaining, 0);
}

// A rebuild that cannot be made (its row lost) while its piece's own
// read, given up on (abandoned), still lands in the buffer: that read's
// failure is never queued, so the piece fails now, not at the deadline.
TEST_F(EcHedgeStallTest, RowLostWhileAGivenUpReadLandsFailsThePiece) {
  absl::MutexLock l(&b_.mu);
  PieceState& p = b_.pieces[0];
  own_->landing = true;
  own_->abandoned = true;
  p.claimed = true;
  p.landing = own_;
  p.active = 0;
  b_.landing_agent = 1;
  engine_.refuse = true;  // no helper can be sent: the row is lost
  ASSERT_TRUE(ec_.TakeFailed(b_, 0));
  ec_.Step(b_, engine_);
  ASSERT_TRUE(p.done) << "left open with nothing that could end it";
  EXPECT_TRUE(absl::IsDataLoss(p.status)) << p.status;
  EXPECT_EQ(b_.remaining, 0);
}

// The stall check's finding (StuckPieces, the read call's safety net):
// an open piece whose attempts all ended, unseen, with nothing else that
// could end it.
class StuckPiecesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b_.pieces.resize(2);
    for (PieceState& p : b_.pieces) p.dst = dst_.data();
    absl::MutexLock l(&b_.mu);
    b_.remaining = 2;
    b_.pieces[1].done = true;  // ended: never stuck
    b_.remaining--;
    // Piece 0's one attempt ended without its failure queued (dropped).
    a_ = b_.attempts.Add();
    a_->piece = 0;
    a_->finished = true;
    a_->status = absl::UnavailableError("gone");
    b_.pieces[0].last = a_;
  }
  std::string dst_ = std::string(16, '.');
  Batch b_;
  Attempt* a_ = nullptr;
};

TEST_F(StuckPiecesTest, OpenPieceWithNothingThatCouldEndItIsFound) {
  absl::MutexLock l(&b_.mu);
  EXPECT_EQ(StuckPieces(b_, false), std::vector<int>{0});
}

TEST_F(StuckPiecesTest, AnythingThatCanStillEndItIsNotAStall) {
  absl::MutexLock l(&b_.mu);
  PieceState& p = b_.pieces[0];
  EXPECT_TRUE(StuckPieces(b_, /*loop_holds_work=*/true).empty());
  a_->finished = false;  // in flight, or queued on its node
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  a_->finished = true;
  b_.failed.push_back(a_);  // the loop retries it next
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  b_.failed.clear();
  p.claimed = true;  // bytes being copied in, or a decode into it
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  p.claimed = false;
  b_.copiers = 1;
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  b_.copiers = 0;
  b_.released.push_back(0);
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  b_.released.clear();
  p.last = nullptr;  // never sent: it follows another read's flight
  EXPECT_TRUE(StuckPieces(b_, false).empty());
  p.last = a_;
  EXPECT_EQ(StuckPieces(b_, false), std::vector<int>{0});
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
