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
// different generation, the new layout is adopted silently when it holds
// the same bytes (namespace/content_id.h: same file_id, size and content
// generation, no differing CRC: replicas moved, added or dropped by the
// keeper); otherwise (file overwritten, deleted) the call returns ABORTED:
// reopen. A File opened at a revision never changes.
#ifndef RANGEFS_CLIENT_LIB_FILE_H_
#define RANGEFS_CLIENT_LIB_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client_lib/file_info.h"
#include "client_lib/options.h"

namespace rangefs {

struct ReaderOptions {
  size_t initial_readahead = 256 << 10;
  size_t max_readahead = 16 << 20;
  // While the caller consumes one window of a sequential stream, read the
  // next one in the background (one helper thread at a time per Reader).
  bool prefetch = true;
  ReadOptions read;  // per underlying read
};

// A sequential scanner over a File with adaptive readahead: each read that
// continues where the last one stopped doubles the readahead window (up to
// max_readahead), a seek resets it. The window is fetched with one parallel
// File::Read (its pieces spread over nodes and replicas). With
// options.prefetch, each fill of a sequential stream also starts reading the
// following window (the next window size, at least the caller's last Read
// size) on a background thread into the Reader's own buffer; it is used if
// the stream continues there and discarded otherwise (e.g. after a Seek).
// At most one such read is in flight; it never writes the caller's buffer.
// The Reader adapts to where its bytes come from: while every byte of its
// last fill came out of the page cache of a local file system (a node's
// export on this host, warm), reading ahead would only add a copy, so it
// reads nothing ahead and a Read of 128 KiB or more lands straight in the
// caller's buffer; bytes waited for (a disk, a network mount, an agent)
// turn prefetching back on. A caller whose Reads are at least a window (and
// 128 KiB) has them land straight in its buffer too, and gets a background
// read only while it spends time between Reads (twice what copying the
// prefetched bytes once more costs, as the Reader measures it): one that
// calls again at once would gain nothing but that copy. No flag needed;
// `prefetch = false` turns reading ahead off always.
// A prefetch that is no longer wanted (a Seek elsewhere, the Reader's
// destruction, a Cancel of options.read.canceller) is cancelled
// (ReadCanceller), so destruction returns within milliseconds whatever the
// prefetch waits for (a hung mount). Thread-compatible. Made by
// File::NewReader; the File must outlive the Reader.
class Reader {
 public:
  virtual ~Reader() = default;

  // Copies up to dst.size() bytes from the current position into `dst` and
  // advances; returns 0 at end of file. It may return fewer bytes before
  // the end: while an erasure-coded file is read degraded (a lost cell
  // rebuilt), a Read ends on a row boundary, so that the next reads whole
  // rows (a lost cell costs one parity cell read, not k). Errors as File::Read
  // (a prefetched window's error is returned by the Read that needs its bytes).
  // If an error occurs after some bytes were copied, those bytes are returned
  // and the error comes with the next Read.
  virtual absl::StatusOr<size_t> Read(absl::Span<char> dst) = 0;
  // Zero-copy Read: returns a view of up to `max` bytes at the current
  // position, inside the Reader's own window buffer, and advances past them;
  // empty at end of file. The view is valid until the next call on this
  // Reader (Read, Next, Seek) or its destruction. A window is at most
  // max_readahead bytes, so a view may be shorter than `max` before the end.
  // Saves the copy that Read makes out of a prefetched window.
  virtual absl::StatusOr<absl::Span<const char>> Next(
      size_t max = SIZE_MAX) = 0;
  // Moves the position; OUT_OF_RANGE past size(). Non-blocking.
  virtual absl::Status Seek(uint64_t position) = 0;
  virtual uint64_t position() const = 0;
  virtual size_t readahead() const = 0;
};

// A run of a file's bytes that lies in one object file on a local file
// system (File::LocalSpans): `length` bytes at `object_offset` of the open
// file `fd` are the file's bytes, in order.
struct ObjectSpan {
  int fd = -1;  // read-only; open while `hold` (or a copy of it) lives
  uint64_t object_offset = 0;
  uint64_t length = 0;
  std::shared_ptr<const void> hold;
  // Whether every byte was in the page cache when looked up (cachestat(2),
  // Linux 6.5 and later): a reader of kCached bytes does not wait for a
  // disk (unless they are evicted meanwhile).
  enum class Residency { kUnknown, kCached, kNotCached };
  Residency residency = Residency::kUnknown;
};

class File {
 public:
  virtual ~File() = default;
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  virtual uint64_t generation() const = 0;
  // The layout this handle reads through now (it follows same-bytes
  // changes): its file id, size, generations and etcd mod revision.
  virtual FileInfo info() const = 0;

  // Reads up to dst.size() bytes at `offset`, blocking; returns the count
  // (short only at end of file; 0 at offset == size()). Codes:
  // OUT_OF_RANGE if offset > size(); UNAVAILABLE listing each replica's
  // error if all replicas of a piece failed; DATA_LOSS if every replica
  // failed its checksum; DEADLINE_EXCEEDED; CANCELLED (options.canceller
  // fired, see read_canceller.h); ABORTED (see above). `dst` is never
  // written after this returns.
  virtual absl::StatusOr<size_t> Read(uint64_t offset, absl::Span<char> dst,
                                      const ReadOptions& options = {}) = 0;

  // Reads all ranges in parallel across nodes (at most
  // options.max_in_flight pieces at once, when set); result[i] is for
  // ranges[i], with the codes of Read. No dst is written after this
  // returns.
  virtual std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const ReadRange> ranges, const ReadOptions& options = {}) = 0;

  // Where the bytes [offset, offset + length) (clipped at size()) lie, for
  // a caller that moves them itself (rangefs-mount splices them into its
  // FUSE replies): one span per piece, in file order, covering the whole
  // range, each on the replica a Read would choose now (this host's node,
  // else the load-balancing policy's pick among the healthy replicas).
  // Never blocks. Only when no byte needs our checks or a fallback that a
  // Read would do: FAILED_PRECONDITION when verifying
  // (ClientOptions::verify is not kOff: a Read would check the bytes'
  // CRCs), for an erasure-coded file, or when a piece's chosen replica is
  // not a mount known good on a local file system whose object the client
  // has open already (agent path, network mount, first read of an object:
  // Read it); OUT_OF_RANGE if offset > size(); ABORTED as Read. The bytes
  // are whatever the object holds when the caller reads them: an I/O
  // error then is the caller's (no other replica is tried); ClientStats
  // does not count them.
  virtual absl::StatusOr<std::vector<ObjectSpan>> LocalSpans(uint64_t offset,
                                                             uint64_t length);

  // A sequential Reader over this File (see Reader above).
  std::unique_ptr<Reader> NewReader(ReaderOptions options = {});
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_FILE_H_
