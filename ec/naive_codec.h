// File: naive_codec.h
//
// CodecKind::kRsCauchyGf8 written out plainly: GF(2^8) multiplication by
// log/exp tables, one byte at a time, its own Cauchy matrix and Gauss-Jordan
// inversion, nothing from ISA-L. It computes the same bytes as the ISA-L
// codec, slowly: the reference of ec/codec_test.cc and the baseline of
// ec/codec_benchmark.cc. Not for production data paths.
#ifndef RANGEFS_EC_NAIVE_CODEC_H_
#define RANGEFS_EC_NAIVE_CODEC_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ec/codec.h"

namespace rangefs {
namespace ec {

// INVALID_ARGUMENT if `spec` fails ValidateCodecSpec.
absl::StatusOr<std::unique_ptr<Codec>> NewNaiveCodec(const CodecSpec& spec);

}  // namespace ec
}  // namespace rangefs

#endif  // RANGEFS_EC_NAIVE_CODEC_H_
