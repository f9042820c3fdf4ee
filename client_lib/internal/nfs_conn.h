// File: internal/nfs_conn.h
//
// NfsConn: one libnfs context (one TCP connection to a node's NFS server),
// driven through libnfs's asynchronous API by the one thread that owns it
// (NfsLoop): that thread polls fd()/events() and calls Service() and
// Expire(). libnfs itself never times a request out (nfs_set_timeout does
// nothing in 4.0), so every request carries its own deadline: one not
// answered by then fails DEADLINE_EXCEEDED, and the context is torn down
// (its server does not answer: every other request on it fails
// UNAVAILABLE). A context that breaks (nfs_service fails, a mount fails, a
// request fails with an error other than the file's own: an NFSv4 lease
// lost, a reset connection) is torn down too, and the next request mounts
// a new one (NFSv3 and v4 alike: a v4 context whose lease expired never
// recovers). File handles are cached per object path; a cached handle
// that reads ESTALE or ENOENT (the file was replaced while its server was
// down, or re-exported; libnfs 4.0 fails a v3 READ of a stale handle with
// EFAULT and NFS3ERR_STALE in its error text) is dropped and the path
// looked up again, once, in the same read. Every handle is closed before
// its context is destroyed (libnfs 4.0's nfs_destroy_context frees none).
// Opens go one at a time (an
// NFSv4.0 open-owner's sequence ids must not race: libnfs 4.0 sends
// concurrent OPENs of one context with clashing seqids, answered
// NFS4ERR_BAD_SEQID / OLD_STATEID); reads run concurrently. Not
// thread-safe: its loop's only.
#ifndef RANGEFS_CLIENT_LIB_INTERNAL_NFS_CONN_H_
#define RANGEFS_CLIENT_LIB_INTERNAL_NFS_CONN_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client_lib/internal/nfs_export.h"

struct nfs_context;
struct nfsfh;

namespace rangefs {
namespace client_internal {

// One read: `length` bytes of `path` (relative to the export) at `offset`.
struct NfsRequest {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
  // A short read is the file's end, not an error (a sidecar, read whole).
  bool to_eof = false;
  absl::Time deadline;  // wall time
  // Not to be sent: answered with this on the connection's thread (a
  // request its submitter found wrong while it may hold locks that `done`
  // takes: NfsNode's refusals).
  absl::Status refused;
  // Called once, on the connection's thread: OK with the bytes (`data`,
  // `n`: valid during the call only), or an error.
  std::function<void(const absl::Status&, const char* data, size_t n)> done;
  // Set by NfsLink::Submit: its count of requests not answered, taken down
  // by Answer before `done` runs.
  std::atomic<int64_t>* unanswered = nullptr;

  // Ends the request: `done`, once (the only way it is called).
  void Answer(const absl::Status& s, const char* data, size_t n) {
    if (unanswered != nullptr) {
      unanswered->fetch_sub(1, std::memory_order_relaxed);
    }
    auto d = std::move(done);
    d(s, data, n);
  }
};

class NfsConn {
 public:
  // `id`: unique in the process (the NFSv4 client name).
  NfsConn(NfsExport e, std::string id);
  ~NfsConn();  // Close(UNAVAILABLE)
  NfsConn(const NfsConn&) = delete;
  NfsConn& operator=(const NfsConn&) = delete;

  // Starts `r` now, or once the context is mounted (mounting it if none).
  void Start(std::unique_ptr<NfsRequest> r, absl::Time now);
  // Broken (a failed write or service): the loop's Service tears it down.
  bool broken() const { return !broken_.ok(); }
  // The context's socket and the poll events it waits for; -1 if none.
  int fd() const;
  short events() const;
  // After poll: `revents` of fd().
  void Service(short revents);
  // Fails the requests whose deadline passed (tearing the context down if
  // one was with the server).
  void Expire(absl::Time now);
  // No later than the earliest deadline of a request not answered (it may
  // be an answered request's: the loop then wakes once early, and Expire
  // finds the true one); InfiniteFuture if none. Kept as requests start,
  // so that a loop pass walks the requests only when one may be late.
  absl::Time NextDeadline() const { return earliest_; }
  // Requests not answered yet.
  size_t pending() const { return ops_.size() - orphans_; }
  // Fails every request with `why` and destroys the context.
  void Close(const absl::Status& why);
  // Contexts mounted so far (1 + rebuilds); for tests and stats.
  int mounts() const { return mounts_; }

 private:
  struct Op;
  enum class State { kDown, kMounting, kReady };

  void Mount(absl::Time now);
  static void MountCb(int err, nfs_context* nfs, void* data, void* priv);
  static void OpenCb(int err, nfs_context* nfs, void* data, void* priv);
  static void ReadCb(int err, nfs_context* nfs, void* data, void* priv);
  void Begin(Op* op);
  void Open(Op* op);
  // The next queued open, once none is in flight.
  void NextOpen();
  void Read(Op* op, nfsfh* fh);
  void OnRead(Op* op, int err, const char* data);
  // Ends `op` with `s` (and the bytes), erasing it.
  void Finish(Op* op, const absl::Status& s, const char* data, size_t n);
  // Caches `fh` (just opened) as `path`'s handle, retiring one it
  // replaces.
  void Cache(const std::string& path, nfsfh* fh);
  // Gives back a handle no longer cached: closed now (v3, when no read
  // in flight uses it) or at teardown.
  void Retire(nfsfh* fh);
  // A request libnfs holds reads through `fh`.
  bool InUse(const nfsfh* fh) const;
  // Closes `fh`, freeing it (v3 now; v4 once the context is destroyed).
  void Release(nfsfh* fh);
  // Closes every handle the context gave: before nfs_destroy_context.
  void ReleaseHandles();
  // Marks the context for teardown after the current libnfs call.
  void Break(absl::Status why);
  void Teardown(const absl::Status& why);
  absl::Status Error(absl::string_view what, const Op& op, int err) const;

  const NfsExport export_;
  const std::string url_;
  const std::string id_;
  nfs_context* ctx_ = nullptr;
  State state_ = State::kDown;
  bool closing_ = false;  // inside nfs_destroy_context
  bool in_service_ = false;
  absl::Status broken_;       // set: tear down after nfs_service returns
  absl::Status mount_error_;  // the last mount's failure
  absl::Time retry_after_ = absl::InfinitePast();
  uint64_t readmax_ = 1 << 20;
  int mounts_ = 0;
  size_t orphans_ = 0;  // ops_ already answered, still known to libnfs
  absl::Time earliest_ = absl::InfiniteFuture();  // NextDeadline()
  absl::flat_hash_map<Op*, std::unique_ptr<Op>> ops_;
  std::vector<Op*> waiting_;     // for the mount
  bool opening_ = false;         // an open is in flight
  std::vector<Op*> open_queue_;  // for it to end (first in, first out)
  absl::flat_hash_map<std::string, nfsfh*> handles_;
  // Handles dropped as stale, closed at teardown (v4; v3 ones in use).
  std::vector<nfsfh*> retired_;
};

}  // namespace client_internal
}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_INTERNAL_NFS_CONN_H_
