#include "mount/direct_io_mode.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rangefs {
namespace mount {

absl::StatusOr<DirectIoMode> ParseDirectIoMode(absl::string_view key,
                                               absl::string_view value) {
  const std::string s = absl::AsciiStrToLower(value);
  if (s == "auto") return DirectIoMode::kAuto;
  if (s == "" || s == "1" || s == "true" || s == "yes" || s == "on") {
    return DirectIoMode::kAlways;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") {
    return DirectIoMode::kNever;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("option ", key, "=", value, ": want auto, true or false"));
}

absl::string_view DirectIoModeName(DirectIoMode mode) {
  switch (mode) {
    case DirectIoMode::kAuto:
      return "auto";
    case DirectIoMode::kAlways:
      return "true";
    case DirectIoMode::kNever:
      return "false";
  }
  return "auto";
}

bool OpenDirect(DirectIoMode mode, uint64_t size, bool mmap_ok) {
  switch (mode) {
    case DirectIoMode::kAlways:
      return true;
    case DirectIoMode::kNever:
      return false;
    case DirectIoMode::kAuto:
      return mmap_ok && size >= kAutoDirectIoMinBytes;
  }
  return false;
}

}  // namespace mount
}  // namespace rangefs
