// File: client.h
//
// The rangefs client library: what crawl, index and mining jobs link.
// Resolves logical paths through the etcd namespace, splits reads on
// extent / stripe / max-I/O boundaries, runs the pieces in parallel on
// per-node worker pools over the node's mount (pread) or agent (gRPC),
// picks replicas with a load-balancing policy, retries failed pieces on
// other replicas, hedges slow ones, and verifies CRC32C checksums.
//
//   ClientOptions o;
//   o.etcd_endpoints = "127.0.0.1:2379";
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<Client> c, Client::Open(o));
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<File> f,
//                            c->OpenFile("/crawl/seg-0001"));
//   std::vector<char> buf(f->size());
//   RANGEFS_ASSIGN_OR_RETURN(size_t n, f->Read(0, absl::MakeSpan(buf)));
//
// Thread-safe. Owns per-node I/O threads (created on a node's first read)
// and the namespace watch. Destroy every File and Reader first, with no call
// running.
//
// Teardown is bounded. The destructor returns within
// ClientOptions::teardown_timeout (1 s by default; at once for a node
// already judged hung) however many reads are stuck in a hung mount (a read
// on a hard NFS mount whose server stopped answering blocks until it
// answers): it stops and joins every I/O thread that ends in that time, and
// leaves running (detaches) the threads still blocked in a read, with the
// io_uring rings and buffers such reads use. This is the one exception to
// joining every thread. A thread left behind runs no client code any more:
// when its read returns it drops what it holds and exits, and until then it
// keeps alive everything the read may still write into (its own buffers,
// never a caller's: a call never returns with a read still writing into
// its buffer) and the read's file descriptor, so that no later Client of
// the process gets that descriptor number while the read may still land.
// The process can exit normally meanwhile: the kernel ends such reads when
// it dies (a read on an NFS hard mount is killable; so is one on a FUSE
// file system whose daemon answers interrupts, e.g.
// client_lib/testing/blocking_fuse).
//
// Debian's Abseil is a debug build: every absl::Mutex lock runs deadlock
// detection (~5% of the CPU of small reads). The library leaves that
// process-wide switch alone; a job's main() may turn it off, as Abseil's
// release builds have it:
//   absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#ifndef RANGEFS_CLIENT_LIB_CLIENT_H_
#define RANGEFS_CLIENT_LIB_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client_lib/dataset.h"
#include "client_lib/file.h"
#include "client_lib/file_info.h"
#include "client_lib/locate.h"
#include "client_lib/options.h"
#include "client_lib/stats.h"

namespace rangefs {

class Client {
 public:
  // Connects to etcd, loads the node records and starts watching nodes/ and
  // live/. INVALID_ARGUMENT for bad options (unknown lb_policy, zero caps);
  // UNAVAILABLE if etcd cannot be reached. Changes no process-wide setting.
  // (Tests open a Client over an in-memory namespace, a test file system or
  // a fake clock with client_lib/testing/client_testing.h.)
  static absl::StatusOr<std::unique_ptr<Client>> Open(
      const ClientOptions& options);
  virtual ~Client() = default;

  // Opens the current layout of `path`. NOT_FOUND; INVALID_ARGUMENT (bad
  // path); FAILED_PRECONDITION (file still importing); UNAVAILABLE;
  // DATA_LOSS naming the etcd key and the broken rule when the file's
  // record is invalid (namespace/record_gate.h).
  virtual absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path) = 0;
  // Opens `path` as of etcd revision `at_revision` (a consistent snapshot
  // of a namespace); OUT_OF_RANGE once that revision is compacted.
  virtual absl::StatusOr<std::unique_ptr<File>> OpenFile(
      absl::string_view path, int64_t at_revision) = 0;

  virtual absl::StatusOr<FileInfo> Stat(absl::string_view path) = 0;
  // Every file below `dir` ("/" for all), sorted by path. A file whose
  // record is invalid is listed with FileInfo::invalid set; it hides no
  // other file.
  // The layouts listed are kept in the client's layout cache (bounded,
  // kept current by its watch): opening or stating a listed file then makes
  // no etcd request.
  virtual absl::StatusOr<std::vector<FileInfo>> List(absl::string_view dir) = 0;

  // Reads every file record below `dir` ("/" for all) once, in paged etcd
  // reads at one revision (`at_revision`, or the latest when 0), and
  // returns the snapshot as a Dataset whose List/Stat/OpenFile never touch
  // etcd (see dataset.h). INVALID_ARGUMENT (bad dir or revision);
  // OUT_OF_RANGE once `at_revision` is compacted (or in the future);
  // UNAVAILABLE. Blocks for about one etcd round trip per 1,000-10,000
  // files.
  virtual absl::StatusOr<std::unique_ptr<Dataset>> OpenDataset(
      absl::string_view dir, int64_t at_revision) = 0;

  // Reads ranges of possibly many files (opened from this Client) in one
  // parallel batch; result[i] is for ranges[i] with File::Read's codes. No
  // dst is written after this returns.
  virtual std::vector<absl::StatusOr<size_t>> ReadV(
      absl::Span<const FileReadRange> ranges,
      const ReadOptions& options = {}) = 0;

  // Where the bytes of [offset, offset + length) of `path` live (the
  // current layout, clipped at the file size): ranges in file order, cut
  // where the replica set changes (extent and stripe-unit boundaries), each
  // with its replicas in the order a read would try them (locate.h).
  // Codes of OpenFile; OUT_OF_RANGE if offset > size. No I/O to the nodes.
  virtual absl::StatusOr<std::vector<RangeLocation>> Locate(
      absl::string_view path, uint64_t offset, uint64_t length) = 0;

  virtual ClientStats Stats() = 0;
  virtual std::string PrometheusText() = 0;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_CLIENT_H_
