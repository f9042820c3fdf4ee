// File: rs_codec.h
//
// What every Reed-Solomon implementation of Codec shares: argument checks,
// the choice of the k cells a decode reads, and the decode-table cache. A
// subclass supplies the arithmetic (ISA-L, or the naive table loop). Internal
// to ec/.
#ifndef RANGEFS_EC_RS_CODEC_H_
#define RANGEFS_EC_RS_CODEC_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ec/codec.h"
#include "ec/decode_cache.h"

namespace rangefs {
namespace ec {

// Thread-safe if the subclass's hooks are (they are const).
class RsCodec : public Codec {
 public:
  // `spec` must pass ValidateCodecSpec.
  explicit RsCodec(const CodecSpec& spec);

  int k() const final { return k_; }
  int m() const final { return m_; }
  absl::Status Encode(absl::Span<const absl::Span<const char>> data,
                      absl::Span<const absl::Span<char>> parity) const final;
  using Codec::Decode;
  absl::Status Decode(absl::Span<const char* const> cells,
                      absl::Span<const int> wanted, absl::Span<char* const> out,
                      size_t len, PassRunner run) const final;
  DecodeCacheStats decode_cache_stats() const final { return cache_.stats(); }

 protected:
  // Writes the m parity cells of `len` bytes from the k data cells.
  virtual void EncodeCells(size_t len, const unsigned char* const* data,
                           unsigned char* const* parity) const = 0;
  // The tables that rebuild cells `wanted` (ascending) from cells `sources`
  // (k of them, ascending). INTERNAL if the matrix is singular (a bug: every
  // square submatrix of a Cauchy matrix is invertible).
  virtual absl::StatusOr<std::vector<unsigned char>> BuildDecodeTables(
      absl::Span<const int> sources, absl::Span<const int> wanted) const = 0;
  // Applies `tables` (from BuildDecodeTables) to the k source cells, writing
  // `outs` cells (in the order of `wanted`).
  virtual void DecodeCells(const std::vector<unsigned char>& tables, size_t len,
                           const unsigned char* const* sources, int outs,
                           unsigned char* const* out) const = 0;

 private:
  const int k_;
  const int m_;
  mutable DecodeCache cache_;
};

}  // namespace ec
}  // namespace rangefs

#endif  // RANGEFS_EC_RS_CODEC_H_
