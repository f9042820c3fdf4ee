// File: flag_config.h
//
// layered_config.h for programs with Abseil flags: before
// absl::ParseCommandLine, each bound flag takes its value from the layered
// config (the file of --config=FILE or $RANGEFS_CONFIG, with $RANGEFS_ETCD
// and $RANGEFS_CLUSTER over it); flags on the command line, parsed
// afterwards, win.
//
//   constexpr FlagBinding kBindings[] = {{"etcd_endpoints", "etcd_endpoints"},
//                                        {"cluster", "cluster"}};
//   if (absl::Status s = ApplyLayeredConfigToFlags(argc, argv, kBindings);
//       !s.ok()) { /* print, exit 2 */ }
//   absl::ParseCommandLine(argc, argv);
#ifndef RANGEFS_BASE_FLAG_CONFIG_H_
#define RANGEFS_BASE_FLAG_CONFIG_H_

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace rangefs {

struct FlagBinding {
  const char* key;   // config key (base/config.cc KnownConfigKeys)
  const char* flag;  // Abseil flag name, without "--"
};

// Finds --config=FILE (or --config FILE) in argv, loads the layered config
// and sets every bound flag whose key it has. INVALID_ARGUMENT naming the
// key and flag for a value the flag does not accept, or a binding naming an
// unknown flag; the errors of LoadLayeredConfig.
absl::Status ApplyLayeredConfigToFlags(int argc, char** argv,
                                       absl::Span<const FlagBinding> bindings);

}  // namespace rangefs

#endif  // RANGEFS_BASE_FLAG_CONFIG_H_
