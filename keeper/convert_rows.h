// File: convert_rows.h
//
// The rows of a file being converted to an erasure code by the keeper
// (convert.h): row r's k data cells are read through `read` (from the
// file's current replicas; k at once), coded (ec::Codec; data cells
// zero-padded to a full cell for coding only) and kept until every column
// writer took them (a writer more than kCachedRows behind reads and codes
// the row again: same bytes). A request for row r also starts reading and
// coding rows r + 1 .. r + kAheadRows in the background, so the writers
// never wait for a row's reads after the first (a pipeline of reads,
// coding and writes). Every row coded records the CRC32C of its
// k + m cells as stored, which CellsObject() returns in the ".cells" format
// of proto/layout.proto once every row was coded. The ingest side of the
// same idea reads a local file: ingest/ec_rows.h.
//
//   ConvertRows rows(g, *codec, read_cell);
//   ColumnStream s(rows, /*t=*/6);        // parity column 0
//   absl::StatusOr<size_t> n = s.Read(buffer);
//   std::string cells = *rows.CellsObject();
#ifndef RANGEFS_KEEPER_CONVERT_ROWS_H_
#define RANGEFS_KEEPER_CONVERT_ROWS_H_

#include <cstdint>
#include <functional>
#include <future>
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
namespace keeper {

// The stored bytes of data cell (row, c): exactly ns::DataCellBytes of
// them; any other length is an error of the caller's source.
using DataCellReader =
    std::function<absl::StatusOr<std::string>(uint64_t row, int c)>;

// One coded row: k data cells as stored, then m parity cells.
struct ConvertRow {
  std::vector<std::string> cells;
};

// Thread-safe. `codec` must outlive it.
class ConvertRows {
 public:
  // Rows kept behind the newest request, and rows coded ahead of it.
  static constexpr size_t kCachedRows = 4;
  static constexpr uint64_t kAheadRows = 4;

  ConvertRows(const ns::EcGeometry& g, const ec::Codec& codec,
              DataCellReader read);
  // Waits for the rows still being read or coded in the background.
  ~ConvertRows();
  ConvertRows(const ConvertRows&) = delete;
  ConvertRows& operator=(const ConvertRows&) = delete;

  const ns::EcGeometry& geometry() const { return g_; }

  // Row `row` (< geometry().rows), read and coded on first use.
  absl::StatusOr<std::shared_ptr<const ConvertRow>> Row(uint64_t row);

  // The ".cells" object: for each row, the k + m CRC32Cs, little-endian.
  // FAILED_PRECONDITION if some row was never coded.
  absl::StatusOr<std::string> CellsObject() const;

  // Data bytes read so far.
  uint64_t bytes_read() const;

 private:
  using Coded = absl::StatusOr<std::shared_ptr<const ConvertRow>>;

  // Starts coding rows [first, last) not yet started; the futures of rows
  // dropped from the cache go to `dropped`, to be destroyed (waited for)
  // without mu_.
  void Start(uint64_t first, uint64_t last,
             std::vector<std::shared_future<Coded>>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads and codes `row`; takes mu_ only to record its CRCs.
  Coded Code(uint64_t row) ABSL_LOCKS_EXCLUDED(mu_);

  const ns::EcGeometry g_;
  const ec::Codec& codec_;
  const DataCellReader read_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_future<Coded>> cache_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> crcs_ ABSL_GUARDED_BY(mu_);  // rows x (k + m)
  std::vector<bool> coded_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_read_ ABSL_GUARDED_BY(mu_) = 0;
};

// The stored bytes of column t (data: its file bytes; parity: rows x
// cell), in order, for WriteObject. Thread-compatible.
class ColumnStream {
 public:
  ColumnStream(ConvertRows& rows, int t) : rows_(rows), t_(t) {}

  // Fills dst (short only at the column's end); 0 at the end.
  absl::StatusOr<size_t> Read(absl::Span<char> dst);

 private:
  ConvertRows& rows_;
  const int t_;
  uint64_t row_ = 0;
  uint64_t in_cell_ = 0;
  std::shared_ptr<const ConvertRow> current_;
};

}  // namespace keeper
}  // namespace rangefs

#endif  // RANGEFS_KEEPER_CONVERT_ROWS_H_
