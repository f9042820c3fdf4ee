#include "client_lib/internal/ec_call_cells.h"

#include <algorithm>
#include <functional>
#include <iterator>

namespace rangefs {
namespace client_internal {

int EcCallCells::Find(const Batch& b, const v1::FileLayout* layout,
                      uint64_t offset, uint64_t length, const char** at) {
  auto before = [&b](int x, int y) {
    const PieceState& p = b.pieces[x];
    const PieceState& q = b.pieces[y];
    if (p.layout != q.layout) return std::less<>()(p.layout, q.layout);
    return p.piece.offset < q.piece.offset;
  };
  if (!indexed_) {
    indexed_ = true;
    for (size_t i = 0; i < b.pieces.size(); ++i) {
      const PieceState& p = b.pieces[i];
      if (p.ec == EcRole::kData && p.range >= 0) {
        pieces_.push_back(static_cast<int>(i));
      }
    }
    std::sort(pieces_.begin(), pieces_.end(), before);
  }
  // The last piece of `layout` starting at or before `offset`.
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), 0,
                             [&](int /*unused*/, int y) {
                               const PieceState& q = b.pieces[y];
                               if (layout != q.layout)
                                 return std::less<>()(layout, q.layout);
                               return offset < q.piece.offset;
                             });
  if (it == pieces_.begin()) return -1;
  const int i = *std::prev(it);
  const PieceState& p = b.pieces[i];
  if (p.layout != layout || p.piece.offset > offset ||
      p.piece.offset + p.piece.length < offset + length) {
    return -1;
  }
  *at = p.dst + (offset - p.piece.offset);
  return i;
}

}  // namespace client_internal
}  // namespace rangefs
