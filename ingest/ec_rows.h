// File: ec_rows.h
//
// Parity of an erasure-coded put, computed while streaming: row r's m
// parity cells are coded (ec::Codec) from the k data cells of row r, read
// from the local file and zero-padded to a full cell for coding only. Each
// parity column's writer pulls its bytes through a ParityColumnReader; a
// row is coded once and kept until the m writers took it (a writer more
// than kCachedRows behind codes it again: same bytes). Every row coded also
// records the CRC32C of its k + m cells (data cells as stored: file bytes
// only), which CellsObject() returns in the ".cells" format of
// proto/layout.proto once every row was coded.
//
//   ParityRows rows(fd, "/data/seg", size, 1 << 20, *codec);
//   ParityColumnReader r(rows, /*j=*/0);   // parity column 0, row by row
//   absl::StatusOr<size_t> n = r.Read(buffer);
//   ...
//   std::string cells = rows.CellsObject();  // k + m CRCs per row
#ifndef RANGEFS_INGEST_EC_ROWS_H_
#define RANGEFS_INGEST_EC_ROWS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "ec/codec.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace ingest {

// One coded row: its m parity cells (each `cell` bytes).
struct CodedRow {
  std::vector<std::string> parity;
};

// The rows of one local file. Thread-safe. `fd` (not owned) and `codec`
// must outlive it.
class ParityRows {
 public:
  static constexpr size_t kCachedRows = 8;

  ParityRows(int fd, std::string name, const ns::EcGeometry& g,
             const ec::Codec& codec);

  const ns::EcGeometry& geometry() const { return g_; }

  // Row `row` (< geometry().rows), coded on first use. Errors: the local
  // file's (pread, DATA_LOSS if it shrank), the codec's.
  absl::StatusOr<std::shared_ptr<const CodedRow>> Row(uint64_t row);

  // The ".cells" object: for each row, the k + m CRC32Cs, little-endian.
  // FAILED_PRECONDITION if some row was never coded.
  absl::StatusOr<std::string> CellsObject() const;

 private:
  absl::StatusOr<std::shared_ptr<const CodedRow>> Code(uint64_t row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;
  const std::string name_;
  const ns::EcGeometry g_;
  const ec::Codec& codec_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<const CodedRow>> cache_
      ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> crcs_ ABSL_GUARDED_BY(mu_);  // rows x (k + m)
  std::vector<bool> coded_ ABSL_GUARDED_BY(mu_);
};

// The bytes of parity column j (rows x cell), in order. Thread-compatible.
class ParityColumnReader {
 public:
  ParityColumnReader(ParityRows& rows, int j) : rows_(rows), j_(j) {}

  // Fills dst (short only at the column's end); 0 at the end.
  absl::StatusOr<size_t> Read(absl::Span<char> dst);

 private:
  ParityRows& rows_;
  const int j_;
  uint64_t row_ = 0;
  uint64_t in_cell_ = 0;
  std::shared_ptr<const CodedRow> current_;
};

}  // namespace ingest
}  // namespace rangefs

#endif  // RANGEFS_INGEST_EC_ROWS_H_
