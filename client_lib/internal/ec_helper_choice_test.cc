#include "client_lib/internal/ec_helper_choice.h"

#include <vector>

#include "gtest/gtest.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr int kK = 6;
constexpr int kM = 3;

// Data cells 1..5 and parity cells 6..8 of an RS(6,3) row whose data cell
// 0 is lost, all admissible and idle.
std::vector<HelperCandidate> IdleRow() {
  std::vector<HelperCandidate> c;
  for (int t = 1; t < kK + kM; ++t) c.push_back({.cell = t, .usable = true});
  return c;
}

HelperCandidate& Cell(std::vector<HelperCandidate>& c, int t) {
  for (HelperCandidate& h : c) {
    if (h.cell == t) return h;
  }
  ADD_FAILURE() << "no cell " << t;
  return c[0];
}

TEST(PickHelperCellTest, NoCandidates) {
  EXPECT_EQ(PickHelperCell({}, kK, kM, 0), -1);
}

TEST(PickHelperCellTest, OneCandidateIsPickedWhateverItsState) {
  const HelperCandidate dead{
      .cell = 7, .usable = false, .outstanding_bytes = 1 << 20};
  EXPECT_EQ(PickHelperCell({&dead, 1}, kK, kM, 5), 7);
}

TEST(PickHelperCellTest, IdleParityNodesTakeTurnsByRow) {
  std::vector<HelperCandidate> c = IdleRow();
  EXPECT_EQ(PickHelperCell(c, kK, kM, 0), 6);
  EXPECT_EQ(PickHelperCell(c, kK, kM, 1), 7);
  EXPECT_EQ(PickHelperCell(c, kK, kM, 2), 8);
  EXPECT_EQ(PickHelperCell(c, kK, kM, 3), 6);
}

TEST(PickHelperCellTest, ADeadParityNodeIsPassedOver) {
  std::vector<HelperCandidate> c = IdleRow();
  Cell(c, 6).usable = false;
  for (uint64_t row = 0; row < 6; ++row) {
    EXPECT_NE(PickHelperCell(c, kK, kM, row), 6) << "row " << row;
  }
}

TEST(PickHelperCellTest, TheLeastLoadedParityNodeWins) {
  std::vector<HelperCandidate> c = IdleRow();
  Cell(c, 6).outstanding_bytes = 4 << 20;  // hung: its reads stay in flight
  Cell(c, 7).outstanding_bytes = 1 << 20;
  Cell(c, 8).outstanding_bytes = 2 << 20;
  for (uint64_t row = 0; row < 6; ++row) {
    EXPECT_EQ(PickHelperCell(c, kK, kM, row), 7) << "row " << row;
  }
}

TEST(PickHelperCellTest, ParityBeforeDataEvenWhenBusier) {
  std::vector<HelperCandidate> c = IdleRow();
  for (int t = kK; t < kK + kM; ++t) Cell(c, t).outstanding_bytes = 8 << 20;
  EXPECT_GE(PickHelperCell(c, kK, kM, 0), kK);
}

TEST(PickHelperCellTest, DataCellsWhenNoParityIsLeft) {
  std::vector<HelperCandidate> c;
  for (int t = 1; t < kK; ++t) c.push_back({.cell = t, .usable = true});
  Cell(c, 1).outstanding_bytes = 1;
  EXPECT_EQ(PickHelperCell(c, kK, kM, 0), 2);  // 1 busier, 0 is lost
  EXPECT_EQ(PickHelperCell(c, kK, kM, 4), 4);  // the rotation's first
}

TEST(PickHelperCellTest, AnInadmissibleNodeOnlyWhenNothingElseIsLeft) {
  std::vector<HelperCandidate> c = {
      {.cell = 6, .usable = false},
      {.cell = 2, .usable = true, .outstanding_bytes = 64 << 20}};
  EXPECT_EQ(PickHelperCell(c, kK, kM, 0), 2);
  c.pop_back();
  EXPECT_EQ(PickHelperCell(c, kK, kM, 0), 6);
}

}  // namespace
}  // namespace client_internal
}  // namespace rangefs
