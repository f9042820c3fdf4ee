// File: layout_goal.cc
#include "namespace/layout_goal.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace ns {
namespace {

constexpr int kMaxGoalReplicas = 16;

absl::Status BadGoal(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "layout goal \"", text, "\": ", why, " (want replicas=N with N in [1, ",
      kMaxGoalReplicas,
      "] or ec=K+M with K, M >= 1 and K + M <= ", kMaxEcCellsPerRow, ")"));
}

absl::StatusOr<LayoutGoal> ParseEc(absl::string_view text,
                                   absl::string_view value) {
  std::pair<absl::string_view, absl::string_view> km =
      absl::StrSplit(value, absl::MaxSplits('+', 1));
  int k = 0;
  int m = 0;
  if (!absl::SimpleAtoi(km.first, &k) || !absl::SimpleAtoi(km.second, &m) ||
      k < 1 || m < 1 || k + m > kMaxEcCellsPerRow) {
    return BadGoal(text, "bad erasure code");
  }
  return LayoutGoal::Ec(k, m);
}

bool SlotMeetsReplicas(
    const google::protobuf::RepeatedPtrField<v1::Replica>& replicas, int n) {
  int staying = 0;
  for (const v1::Replica& r : replicas) {
    if (r.leaving()) return false;
    ++staying;
  }
  return staying == n;
}

}  // namespace

std::string LayoutGoal::ToString() const {
  if (is_ec()) return absl::StrCat("ec=", ec_k, "+", ec_m);
  return absl::StrCat("replicas=", replicas);
}

absl::StatusOr<LayoutGoal> ParseLayoutGoal(absl::string_view text) {
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (kv.first == "ec") return ParseEc(text, kv.second);
  int n = 0;
  if (kv.first != "replicas" || !absl::SimpleAtoi(kv.second, &n) || n < 1 ||
      n > kMaxGoalReplicas) {
    return BadGoal(text, "not a layout goal");
  }
  return LayoutGoal::Replicas(n);
}

bool LayoutMeetsGoal(const v1::FileLayout& layout, const LayoutGoal& goal) {
  if (goal.is_ec()) {
    return IsErasureCoded(layout) &&
           layout.striped().erasure().data_columns() ==
               static_cast<uint32_t>(goal.ec_k) &&
           layout.striped().erasure().parity_columns() ==
               static_cast<uint32_t>(goal.ec_m);
  }
  if (IsErasureCoded(layout)) return false;
  for (const v1::Extent& e : layout.extents()) {
    if (!SlotMeetsReplicas(e.replicas(), goal.replicas)) return false;
  }
  if (layout.has_striped()) {
    for (const v1::StripedLayout::Target& t : layout.striped().targets()) {
      if (!SlotMeetsReplicas(t.replicas(), goal.replicas)) return false;
    }
  }
  return true;
}

}  // namespace ns
}  // namespace rangefs
