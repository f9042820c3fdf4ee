// File: internal/ec_call_cells.h
//
// The row plan of erasure-coded reads (ec_read.h): which cells of a row a
// read call reads anyway. A call that covers whole rows (a scan's window)
// reads the data cells of a row as its own pieces (EcRole::kData); when
// one of them is lost, its rebuild takes the row's other data cells from
// those pieces' bytes in the caller's buffer instead of reading them a
// second time, and reads only what is missing (a parity cell for a whole
// row). EcCallCells finds those pieces: the call's planned data pieces,
// indexed once by (layout, file offset).
//
// Thread-compatible; built and used under Batch::mu.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_EC_CALL_CELLS_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_EC_CALL_CELLS_H_

#include <cstdint>
#include <vector>

#include "client_lib/internal/batch.h"

namespace rangefs {
namespace client_internal {

class EcCallCells {
 public:
  // The planned piece of the call (a kData piece of the caller's) that
  // holds file bytes [offset, offset + length) of the file `layout` maps,
  // and where they start in its buffer; -1 if none holds all of them.
  // Indexes the planned pieces on first use (helpers, added later, are
  // never among them).
  int Find(const Batch& b, const v1::FileLayout* layout, uint64_t offset,
           uint64_t length, const char** at);

 private:
  bool indexed_ = false;
  std::vector<int> pieces_;  // kData pieces by (layout, offset)
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_EC_CALL_CELLS_H_
