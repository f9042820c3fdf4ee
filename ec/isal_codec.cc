#include "ec/isal_codec.h"

#include <isa-l/erasure_code.h>

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ec/rs_codec.h"

namespace rangefs {
namespace ec {
namespace {

// ISA-L's expanded multiplication tables: 32 bytes per matrix coefficient.
constexpr int kTableBytesPerCoefficient = 32;

// Thread-safe (ISA-L's calls read only the tables and the cells).
class IsalCodec final : public RsCodec {
 public:
  explicit IsalCodec(const CodecSpec& spec)
      : RsCodec(spec),
        matrix_((spec.k + spec.m) * spec.k),
        encode_tables_(kTableBytesPerCoefficient * spec.k * spec.m) {
    // Rows 0..k-1: identity; rows k..k+m-1: the Cauchy rows (FORMAT, see
    // codec.h).
    gf_gen_cauchy1_matrix(matrix_.data(), spec.k + spec.m, spec.k);
    ec_init_tables(spec.k, spec.m, &matrix_[spec.k * spec.k],
                   encode_tables_.data());
  }

 protected:
  void EncodeCells(size_t len, const unsigned char* const* data,
                   unsigned char* const* parity) const override {
    // ISA-L takes non-const pointers but only reads data and tables.
    ec_encode_data(static_cast<int>(len), k(), m(),
                   const_cast<unsigned char*>(encode_tables_.data()),
                   const_cast<unsigned char**>(data),
                   const_cast<unsigned char**>(parity));
  }

  absl::StatusOr<std::vector<unsigned char>> BuildDecodeTables(
      absl::Span<const int> sources,
      absl::Span<const int> wanted) const override {
    const int k = this->k();
    std::vector<unsigned char> survivors(k * k);
    for (int r = 0; r < k; ++r) {
      for (int c = 0; c < k; ++c) {
        survivors[r * k + c] = matrix_[sources[r] * k + c];
      }
    }
    // inverse * (source cells) = data cells.
    std::vector<unsigned char> inverse(k * k);
    if (gf_invert_matrix(survivors.data(), inverse.data(), k) != 0) {
      return absl::InternalError(absl::StrCat(
          "erasure code: singular decode matrix for RS(", k, ",", m(), ")"));
    }
    // One row per wanted cell, over the source cells: a data cell's row of
    // the inverse, or a parity cell's generator row times the inverse.
    const int outs = static_cast<int>(wanted.size());
    std::vector<unsigned char> rows(outs * k);
    for (int o = 0; o < outs; ++o) {
      const int w = wanted[o];
      for (int c = 0; c < k; ++c) {
        unsigned char v = 0;
        if (w < k) {
          v = inverse[w * k + c];
        } else {
          for (int i = 0; i < k; ++i) {
            v ^= gf_mul(matrix_[w * k + i], inverse[i * k + c]);
          }
        }
        rows[o * k + c] = v;
      }
    }
    std::vector<unsigned char> tables(kTableBytesPerCoefficient * k * outs);
    ec_init_tables(k, outs, rows.data(), tables.data());
    return tables;
  }

  void DecodeCells(const std::vector<unsigned char>& tables, size_t len,
                   const unsigned char* const* sources, int outs,
                   unsigned char* const* out) const override {
    ec_encode_data(static_cast<int>(len), k(), outs,
                   const_cast<unsigned char*>(tables.data()),
                   const_cast<unsigned char**>(sources),
                   const_cast<unsigned char**>(out));
  }

 private:
  std::vector<unsigned char> matrix_;  // (k + m) x k, row-major
  std::vector<unsigned char> encode_tables_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Codec>> NewIsalCodec(const CodecSpec& spec) {
  RANGEFS_RETURN_IF_ERROR(ValidateCodecSpec(spec));
  return std::make_unique<IsalCodec>(spec);
}

}  // namespace ec
}  // namespace rangefs
