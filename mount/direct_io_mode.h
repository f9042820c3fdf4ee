// File: direct_io_mode.h
//
// How rangefs-mount opens a file for the kernel: through the mount's own
// page cache (kernel readahead; a file read again comes from memory), or
// FOPEN_DIRECT_IO (each read(2) goes to the daemon, which answers straight
// into the reader's buffer). `-o direct_io=auto|true|false`; auto is the
// default:
//
//   bool direct = OpenDirect(DirectIoMode::kAuto, file_size, mmap_ok);
//
// Why auto opens large files direct (tests/bench/RESULTS.md, part M, run
// M6): a sequential read of a large file through the page cache costs
// three copies (library -> daemon buffer, reply -> the mount's pages,
// pages -> reader) and holds the bytes twice on the host (the storage
// mounts' page cache has them); the kernel's FUSE page-cache path tops out
// at null_fuse's rate whatever the daemon does. Direct, the daemon's reply
// is copied straight into the reader's buffer. Small files stay cached:
// one or two requests read them whole, and tools re-read them often.
#ifndef RANGEFS_MOUNT_DIRECT_IO_MODE_H_
#define RANGEFS_MOUNT_DIRECT_IO_MODE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rangefs {
namespace mount {

enum class DirectIoMode {
  kAuto,    // direct for files of at least kAutoDirectIoMinBytes
  kAlways,  // every file direct (-o direct_io, direct_io=true)
  kNever,   // every file through the page cache (direct_io=false)
};

// Files at least this large are opened direct in kAuto mode.
inline constexpr uint64_t kAutoDirectIoMinBytes = 8ull << 20;

// "auto", or a boolean word ("", 1/0, true/false, yes/no, on/off; "" is
// true, as a bare `-o direct_io`). INVALID_ARGUMENT naming `key` and the
// value otherwise.
absl::StatusOr<DirectIoMode> ParseDirectIoMode(absl::string_view key,
                                               absl::string_view value);

// "auto", "true" or "false".
absl::string_view DirectIoModeName(DirectIoMode mode);

// Whether an open of a file of `size` bytes is answered FOPEN_DIRECT_IO.
// `mmap_ok`: the kernel lets direct files be mmap()ed
// (FUSE_DIRECT_IO_ALLOW_MMAP, init_flags.h); without it kAuto keeps every
// file cached, so mmap never breaks unasked (kAlways is direct anyway).
bool OpenDirect(DirectIoMode mode, uint64_t size, bool mmap_ok);

}  // namespace mount
}  // namespace rangefs

#endif  // RANGEFS_MOUNT_DIRECT_IO_MODE_H_
