// File: file.h
//
// An open rangefs file: one layout snapshot of a namespace entry, read by
// byte ranges. Thread-safe. Destroy every File (and Reader) before its
// Client.
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f, client->OpenFile(p));
//   std::string buf(1 << 20, '\0');
//   RANGEFS_ASSIGN_OR_RETURN(size_t n, f->Read(0, absl::MakeSpan(buf)));
//
// Layout changes: a File opened without a revision re-checks the namespace
// on each call (a cache hit, no etcd round trip). If the entry now has a
// different generation, the new layout is adopted silently when the bytes
// cannot differ (same file_id and size, and no extent CRC that both know
// differs: replicas moved or were added); otherwise (file replaced,
// resized, deleted) the call returns ABORTED: reopen. A File opened at a
// revision never changes.
#ifndef RANGEFS_CLIENT_LIB_FILE_H_
#define RANGEFS_CLIENT_LIB_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client_lib/options.h"

namespace rangefs {

class File {
 public:
  virtual ~File() = default;
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  virtual uint64_t generation() const = 0;

  // Reads up to dst.size() bytes at `offset`, blocking; returns the count
  // (short only at end of file; 0 at offset == size()). Codes:
  // OUT_OF_RANGE if offset > size(); UNAVAILABLE listing each replica's
  // error if all replicas of a piece failed; DATA_LOSS if every replica
  // failed its checksum; DEADLINE_EXCEEDED; ABORTED (see above). `dst` is
  // never written after this returns.
  virtual absl::StatusOr<size_t> Read(uint64_t offset, absl::Span<char> dst,
                                      const ReadOptions& options = {}) = 0;

  // Reads all ranges in parallel across nodes; result[i] is for ranges[i],
  // with the codes of Read. No dst is written after this returns.
  virtual std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const ReadRange> ranges, const ReadOptions& options = {}) = 0;
};

struct ReaderOptions {
  size_t initial_readahead = 256 << 10;
  size_t max_readahead = 16 << 20;
  ReadOptions read;  // per underlying read
};

// A sequential scanner over a File with adaptive readahead: each read that
// continues where the last one stopped doubles the readahead window (up to
// max_readahead), a seek resets it. The window is fetched with one parallel
// File::Read (its pieces spread over nodes and replicas).
// Thread-compatible. `file` is not owned and must outlive the Reader.
class Reader {
 public:
  explicit Reader(File* file, ReaderOptions options = {});

  // Copies up to dst.size() bytes from the current position into `dst` and
  // advances; returns 0 at end of file. Errors as File::Read.
  absl::StatusOr<size_t> Read(absl::Span<char> dst);
  // Moves the position; OUT_OF_RANGE past size().
  absl::Status Seek(uint64_t position);
  uint64_t position() const { return position_; }
  size_t readahead() const { return window_; }

 private:
  File* const file_;
  const ReaderOptions options_;
  uint64_t position_ = 0;
  size_t window_;
  std::string buffer_;  // bytes [buffer_offset_, +buffer_len_)
  uint64_t buffer_offset_ = 0;
  size_t buffer_len_ = 0;
  uint64_t next_expected_ = 0;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_FILE_H_
