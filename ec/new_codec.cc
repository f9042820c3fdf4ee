// NewCodec: the production codec of each CodecKind.
#include <memory>

#include "base/status_macros.h"
#include "ec/codec.h"
#include "ec/isal_codec.h"

namespace rangefs {
namespace ec {

absl::StatusOr<std::unique_ptr<Codec>> NewCodec(const CodecSpec& spec) {
  RANGEFS_RETURN_IF_ERROR(ValidateCodecSpec(spec));
  switch (spec.kind) {
    case CodecKind::kRsCauchyGf8:
      return NewIsalCodec(spec);
  }
  return absl::InvalidArgumentError("erasure code: unknown codec kind");
}

}  // namespace ec
}  // namespace rangefs
