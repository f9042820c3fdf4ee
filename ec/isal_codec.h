// File: isal_codec.h
//
// CodecKind::kRsCauchyGf8 with Intel ISA-L (libisal, Debian libisal-dev):
// gf_gen_cauchy1_matrix, ec_init_tables, ec_encode_data (SSE/AVX/AVX2/AVX-512
// chosen at run time) and gf_invert_matrix for decode tables. The production
// codec; NewCodec returns it.
#ifndef RANGEFS_EC_ISAL_CODEC_H_
#define RANGEFS_EC_ISAL_CODEC_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ec/codec.h"

namespace rangefs {
namespace ec {

// INVALID_ARGUMENT if `spec` fails ValidateCodecSpec.
absl::StatusOr<std::unique_ptr<Codec>> NewIsalCodec(const CodecSpec& spec);

}  // namespace ec
}  // namespace rangefs

#endif  // RANGEFS_EC_ISAL_CODEC_H_
