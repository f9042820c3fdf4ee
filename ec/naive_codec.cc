#include "ec/naive_codec.h"

#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "ec/rs_codec.h"

namespace rangefs {
namespace ec {
namespace {

// GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d) and
// generator 2, as ISA-L.
class Gf256 {
 public:
  Gf256() {
    int x = 1;
    for (int i = 0; i < 255; ++i) {
      exp_[i] = exp_[i + 255] = static_cast<unsigned char>(x);
      log_[x] = i;
      x <<= 1;
      if (x & 0x100) x ^= 0x11d;
    }
  }

  unsigned char Mul(unsigned char a, unsigned char b) const {
    if (a == 0 || b == 0) return 0;
    return exp_[log_[a] + log_[b]];
  }
  // a != 0.
  unsigned char Inv(unsigned char a) const { return exp_[255 - log_[a]]; }

 private:
  std::array<unsigned char, 510> exp_{};
  std::array<int, 256> log_{};
};

const Gf256& Field() {
  static const Gf256 field;
  return field;
}

// Inverts the n x n row-major matrix `a` by Gauss-Jordan elimination; false
// if it is singular.
bool Invert(std::vector<unsigned char> a, int n,
            std::vector<unsigned char>* inverse) {
  const Gf256& gf = Field();
  std::vector<unsigned char>& b = *inverse;
  b.assign(n * n, 0);
  for (int i = 0; i < n; ++i) b[i * n + i] = 1;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    while (pivot < n && a[pivot * n + col] == 0) ++pivot;
    if (pivot == n) return false;
    for (int c = 0; c < n; ++c) {
      std::swap(a[col * n + c], a[pivot * n + c]);
      std::swap(b[col * n + c], b[pivot * n + c]);
    }
    const unsigned char scale = gf.Inv(a[col * n + col]);
    for (int c = 0; c < n; ++c) {
      a[col * n + c] = gf.Mul(a[col * n + c], scale);
      b[col * n + c] = gf.Mul(b[col * n + c], scale);
    }
    for (int r = 0; r < n; ++r) {
      const unsigned char f = a[r * n + col];
      if (r == col || f == 0) continue;
      for (int c = 0; c < n; ++c) {
        a[r * n + c] ^= gf.Mul(f, a[col * n + c]);
        b[r * n + c] ^= gf.Mul(f, b[col * n + c]);
      }
    }
  }
  return true;
}

// out[o][i] = sum over j of rows[o * k + j] * in[j][i], byte by byte.
void MultiplyCells(const unsigned char* rows, int k, int outs, size_t len,
                   const unsigned char* const* in, unsigned char* const* out) {
  const Gf256& gf = Field();
  for (int o = 0; o < outs; ++o) {
    for (size_t i = 0; i < len; ++i) {
      unsigned char v = 0;
      for (int j = 0; j < k; ++j) v ^= gf.Mul(rows[o * k + j], in[j][i]);
      out[o][i] = v;
    }
  }
}

// Thread-safe (immutable after construction).
class NaiveCodec final : public RsCodec {
 public:
  explicit NaiveCodec(const CodecSpec& spec)
      : RsCodec(spec), matrix_((spec.k + spec.m) * spec.k) {
    // FORMAT (codec.h): identity, then row i >= k, column j: 1 / (i ^ j).
    const int k = spec.k;
    for (int i = 0; i < k + spec.m; ++i) {
      for (int j = 0; j < k; ++j) {
        matrix_[i * k + j] =
            i < k ? (i == j ? 1 : 0)
                  : Field().Inv(static_cast<unsigned char>(i ^ j));
      }
    }
  }

 protected:
  void EncodeCells(size_t len, const unsigned char* const* data,
                   unsigned char* const* parity) const override {
    MultiplyCells(&matrix_[k() * k()], k(), m(), len, data, parity);
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
    std::vector<unsigned char> inverse;
    if (!Invert(std::move(survivors), k, &inverse)) {
      return absl::InternalError("erasure code: singular decode matrix");
    }
    const int outs = static_cast<int>(wanted.size());
    std::vector<unsigned char> rows(outs * k, 0);
    for (int o = 0; o < outs; ++o) {
      const int w = wanted[o];
      for (int c = 0; c < k; ++c) {
        for (int i = 0; i < k; ++i) {
          rows[o * k + c] ^=
              Field().Mul(matrix_[w * k + i], inverse[i * k + c]);
        }
      }
    }
    return rows;
  }

  void DecodeCells(const std::vector<unsigned char>& tables, size_t len,
                   const unsigned char* const* sources, int outs,
                   unsigned char* const* out) const override {
    MultiplyCells(tables.data(), k(), outs, len, sources, out);
  }

 private:
  std::vector<unsigned char> matrix_;  // (k + m) x k, row-major
};

}  // namespace

absl::StatusOr<std::unique_ptr<Codec>> NewNaiveCodec(const CodecSpec& spec) {
  RANGEFS_RETURN_IF_ERROR(ValidateCodecSpec(spec));
  return std::make_unique<NaiveCodec>(spec);
}

}  // namespace ec
}  // namespace rangefs
