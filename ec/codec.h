// File: codec.h
//
// Erasure codes over stripe rows: k data cells plus m parity cells, all of the
// same length; any k of the k + m cells rebuild the others. Reed-Solomon works
// bytewise, so a byte range [a, b) of a lost cell is rebuilt from the same
// range [a, b) of k survivors.
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ec::Codec> codec,
//                            ec::NewCodec({.k = 6, .m = 3}));
//   RANGEFS_RETURN_IF_ERROR(codec->Encode(data_cells, parity_cells));
//   // cells[i] == nullptr for a lost cell; rebuild cells 2 and 7:
//   RANGEFS_RETURN_IF_ERROR(codec->Decode(cells, {2, 7}, {out2, out7}, len));
//
// FORMAT: the parity bytes on disk depend on the code's generator matrix. The
// matrix of CodecKind::kRsCauchyGf8 is fixed forever: ISA-L's
// gf_gen_cauchy1_matrix (identity over k rows, then 1 / (i ^ j) in GF(2^8)
// with the polynomial 0x11d). Changing it, the field or the cell order is a
// format change: stored parity would silently decode to wrong bytes. A new
// matrix is a new CodecKind. ec/codec_test.cc pins the bytes (a golden
// vector).
//
// C++ namespace rangefs::ec. Depends only on base/, Abseil and ISA-L.
#ifndef RANGEFS_EC_CODEC_H_
#define RANGEFS_EC_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rangefs {
namespace ec {

// The code a striped layout records. Values are stored (layout.proto mirrors
// them): never renumber.
enum class CodecKind : int {
  // Reed-Solomon over GF(2^8), polynomial 0x11d, ISA-L's Cauchy matrix
  // (gf_gen_cauchy1_matrix). Systematic: data cells are plain file bytes.
  kRsCauchyGf8 = 1,
};

// Caps every CodecSpec must meet (ValidateCodecSpec; the record gate applies
// them to stored layouts).
inline constexpr int kMinDataCells = 1;     // k >= 1
inline constexpr int kMinParityCells = 1;   // m >= 1
inline constexpr int kMaxCellsPerRow = 32;  // k + m <= 32
// Longest cell one Encode/Decode call takes (ISA-L lengths are `int`).
inline constexpr size_t kMaxCellBytes = size_t{1} << 30;
// Decode tables kept per codec (one entry per erasure pattern, LRU).
inline constexpr size_t kDecodeCacheEntries = 256;

struct CodecSpec {
  CodecKind kind = CodecKind::kRsCauchyGf8;
  int k = 0;  // data cells per row
  int m = 0;  // parity cells per row
};

// OK if `spec` is a known kind within the caps above; else INVALID_ARGUMENT
// naming the broken rule.
absl::Status ValidateCodecSpec(const CodecSpec& spec);

// Counters of a codec's decode-table cache.
struct DecodeCacheStats {
  uint64_t hits = 0;    // Decode calls that found their tables cached
  uint64_t misses = 0;  // Decode calls that built (and cached) tables
  size_t entries = 0;   // patterns cached now (<= kDecodeCacheEntries)
};

// One erasure code with fixed k and m. Thread-safe: Encode and Decode may run
// concurrently on one Codec (Decode shares a mutex-guarded table cache).
// Cells are numbered 0..k-1 (data) then k..k+m-1 (parity).
class Codec {
 public:
  virtual ~Codec() = default;

  virtual int k() const = 0;
  virtual int m() const = 0;

  // Computes the m parity cells of one row from its k data cells. Every span
  // of `data` and `parity` has the same length (0 allowed, at most
  // kMaxCellBytes); `parity` spans must not overlap `data`. INVALID_ARGUMENT
  // for a wrong count or size; nothing is written then.
  virtual absl::Status Encode(
      absl::Span<const absl::Span<const char>> data,
      absl::Span<const absl::Span<char>> parity) const = 0;

  // Rebuilds the cells listed in `wanted` (data or parity, distinct, each
  // absent in `cells`) from the present ones. `cells` has k + m entries:
  // cells[i] points at `len` bytes of cell i, or is nullptr where cell i is
  // absent; at least k must be present (only k of them are read). out[j]
  // receives `len` bytes of cell wanted[j]. INVALID_ARGUMENT for fewer than
  // k present cells, a bad index, a wanted cell that is present, mismatched
  // counts or len > kMaxCellBytes; nothing is written then. Deciding that
  // too few cells is data loss (DATA_LOSS) is the caller's business.
  absl::Status Decode(absl::Span<const char* const> cells,
                      absl::Span<const int> wanted, absl::Span<char* const> out,
                      size_t len) const {
    return Decode(cells, wanted, out, len, nullptr);
  }
  // Runs `pass`, the part of a Decode that reads and writes the cells'
  // bytes (nothing else of the Decode runs inside it: no lock held, nothing
  // allocated), and says whether it ran to its end: RunCatchingSigbus
  // (base/sigbus_guard.h) for cells in a mapped file that may shrink.
  using PassRunner = bool (*)(absl::FunctionRef<void()> pass);
  // As above, the pass run by `run` (null: called directly). If `run` says
  // the pass was cut off: DATA_LOSS, and `out` holds anything.
  virtual absl::Status Decode(absl::Span<const char* const> cells,
                              absl::Span<const int> wanted,
                              absl::Span<char* const> out, size_t len,
                              PassRunner run) const = 0;

  virtual DecodeCacheStats decode_cache_stats() const = 0;
};

// The production codec for `spec` (ISA-L for kRsCauchyGf8). INVALID_ARGUMENT
// if ValidateCodecSpec fails.
absl::StatusOr<std::unique_ptr<Codec>> NewCodec(const CodecSpec& spec);

}  // namespace ec
}  // namespace rangefs

#endif  // RANGEFS_EC_CODEC_H_
