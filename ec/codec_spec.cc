#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ec/codec.h"

namespace rangefs {
namespace ec {

absl::Status ValidateCodecSpec(const CodecSpec& spec) {
  if (spec.kind != CodecKind::kRsCauchyGf8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "erasure code: unknown codec kind ", static_cast<int>(spec.kind)));
  }
  if (spec.k < kMinDataCells) {
    return absl::InvalidArgumentError(absl::StrCat(
        "erasure code: k = ", spec.k, " data cells, need >= ", kMinDataCells));
  }
  if (spec.m < kMinParityCells) {
    return absl::InvalidArgumentError(
        absl::StrCat("erasure code: m = ", spec.m,
                     " parity cells, need >= ", kMinParityCells));
  }
  if (spec.k > kMaxCellsPerRow - spec.m) {
    return absl::InvalidArgumentError(
        absl::StrCat("erasure code: k + m = ", spec.k, " + ", spec.m,
                     " cells per row, at most ", kMaxCellsPerRow));
  }
  return absl::OkStatus();
}

}  // namespace ec
}  // namespace rangefs
