// File: options.h
//
// Options of the rangefs client (client.h). Every knob is a field with a
// default; a new knob is a new field, never an overload.
//
//   ClientOptions o;
//   o.etcd_endpoints = "10.0.0.1:2379,10.0.0.2:2379";
//   o.data_path = DataPath::kAuto;
//   RANGEFS_ASSIGN_OR_RETURN(auto client, Client::Open(o));
#ifndef RANGEFS_CLIENT_LIB_OPTIONS_H_
#define RANGEFS_CLIENT_LIB_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client_lib/read_canceller.h"

namespace rangefs {

// How the client reaches a node's bytes.
enum class DataPath {
  // pread on the node's mount (<mount_root>/<node> or NodeRecord.mount_path).
  kMount,
  // The node agent's gRPC ReadRange over TCP (NodeRecord.addresses).
  kAgent,
  // The mount when its directory exists and reads from it succeed (this
  // host's own node: its export directory); else the node's NFS export
  // through the library's own userspace NFS client, when its record names
  // one; else the agent. A failed mount is re-checked every
  // `mount_recheck_interval`.
  kAuto,
  // The node's NFS export (NodeRecord's nfs://host[:port]/export, NFSv3 or
  // v4) read in userspace with libnfs, no kernel mount: each node gets
  // `nfs_connections_per_node` connections, driven by the client's
  // `nfs_event_loops` event-loop threads, and every request carries the
  // library's deadline (at most `attempt_timeout`): a server that does
  // not answer fails it DEADLINE_EXCEEDED, and the node is judged like a
  // hung mount (stall delay, dead-node table, hedges to other replicas);
  // its connection is torn down and mounted again for the next read (a
  // hung server stalls no other node's connections on the same loop).
  // Verification reads the sidecars over NFS. A node whose record has no
  // NFS export, or a malformed one (logged), reads its agent.
  kNfs,
};

enum class VerifyMode {
  kOff,      // mount path: no check; agent path: chunk CRCs only
  kSampled,  // every `verify_sample_every`-th piece is verified
  kFull,     // every piece is verified
};

// TLS towards the agents (agent data path): PEM file paths. All empty =
// plaintext.
struct ClientTlsOptions {
  std::string ca_file;    // CA bundle the agent's certificate must chain to
  std::string cert_file;  // client certificate, for agents doing mTLS
  std::string key_file;   // key of cert_file; required with it
  // Name checked against the agent certificate instead of the host of the
  // address (tests, or certificates naming a DNS alias). Empty: the host.
  std::string server_name_override;
};

struct ClientOptions {
  // --- namespace ---
  // etcd endpoints "host:port,host:port" (required; tests replace etcd
  // through client_lib/testing/client_testing.h).
  std::string etcd_endpoints;
  std::string cluster = "default";
  // TLS / auth for etcd: PEM file paths; empty = plaintext.
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
  std::string etcd_username, etcd_password;
  // TLS towards the agents (agent data path); empty ca_file = plaintext.
  ClientTlsOptions agent_tls;
  // Layouts are served this long from cache while etcd is unreachable.
  absl::Duration max_layout_staleness = absl::Minutes(5);

  // --- data path ---
  // Node N's mount is NodeRecord.mount_path if set, else <mount_root>/<N>.
  std::string mount_root = "/mnt/rangefs";
  DataPath data_path = DataPath::kAuto;
  bool o_direct = false;  // mount path: O_DIRECT through aligned buffers
  absl::Duration mount_recheck_interval = absl::Seconds(5);
  // Mount path through io_uring: each node gets one ring-owning I/O thread
  // that takes the node's queued pieces in batches and keeps up to
  // `io_uring_depth` reads in flight (IORING_OP_READ into buffers the ring
  // thread owns; the bytes are copied out while the call still holds the
  // piece, as on the thread-pool path). Used only with the production file
  // system (no test file system, client_lib/testing/client_testing.h) and a
  // data_path other than kAgent; a node whose io_uring_queue_init fails
  // (ENOSYS, EPERM, EINVAL for a depth the kernel refuses) falls back to
  // `max_inflight_per_node` worker threads. Agent reads (kAuto with a bad
  // mount) still run on worker threads. A hung read occupies one ring slot of
  // its node only. Small reads (pieces of at most 64 KiB: index lookups) skip
  // the ring thread: the calling thread submits and reaps them itself on a ring
  // it borrows for the call (one per concurrent call, at most 64 per client),
  // once the node's ring thread has opened the object and found the mount
  // good; anything that could block (an open, a sidecar to load, a mount
  // check after an error) stays with the node's ring thread. These reads
  // are RWF_NOWAIT: one that would block (data not cached, a mount that
  // does not answer) moves to the node's ring thread, so a calling thread
  // never owns a read that a hung mount holds; a file system that refuses
  // RWF_NOWAIT turns the caller path off for that node.
  bool io_uring = true;
  // Mount reads whose bytes are already in the page cache of a local file
  // system (ext4, xfs, btrfs, tmpfs: a node's export on this host, or a
  // test's) are copied by the calling thread straight into the caller's
  // buffer with preadv2(RWF_NOWAIT) (the bytes checked against the sidecar
  // when verifying): one copy, no hand-off to the node's threads. A read
  // not wholly cached, and every read of a network or FUSE mount (which may
  // block), goes the usual way. Needs io_uring (the node's ring thread
  // opens the files).
  bool page_cache_reads = true;
  // Reads land in the caller's buffer itself, with no copy out of a
  // buffer of the client's:
  // - a small read on the caller's ring (above) that reads exactly the
  //   piece's bytes (no sidecar blocks around it; with o_direct, a caller's
  //   buffer aligned to 4096 bytes). Nothing can cancel it, so its call
  //   waits for it to end before returning, even past its deadline, and
  //   neither hedges nor moves it: only local file systems take these
  //   reads, and a local disk that hangs would hold the call;
  // - an agent read (data port or gRPC), each frame's CRC32C checked where
  //   it lands. It can be cancelled (its socket shut down): a hedge or
  //   retry that answers first cancels it and waits for it to let go, and
  //   so does the call's return.
  // false: every read lands in a buffer of the client's, and a call always
  // returns by its deadline.
  bool in_place_reads = true;
  // Reads in flight per node on the node's ring (the per-node cap there),
  // and per call on a borrowed ring.
  int io_uring_depth = 32;
  // NFS data path: connections (libnfs contexts) per node; a read goes to
  // the least loaded. 1..64.
  int nfs_connections_per_node = 1;
  // NFS data path: the most event-loop threads driving the connections of
  // all nodes (a new connection goes to the loop with the fewest; a new
  // loop starts once each has 2); 0 = one per CPU. 0..256.
  int nfs_event_loops = 0;
  // The mount health file written by rangefs-mountd (client_lib/mountd/
  // mount_status.h); "" = <mount_root>/.rangefs-mounts, "-" = not read. It
  // is re-read every `mount_recheck_interval`. While it exists and is newer
  // than `mount_status_max_age`, a node it lists as anything but healthy, or
  // does not list, has no usable mount: kAuto reads it through the agent,
  // kMount treats the node as not admissible (like a dead node: only a last
  // resort). A missing or stale file changes nothing (mountd not running).
  std::string mount_status_file;
  absl::Duration mount_status_max_age = absl::Minutes(2);

  // --- parallel engine ---
  // Largest single physical read (NFS rsize). Pieces are cut here and at
  // extent / stripe-unit boundaries.
  size_t max_io_size = 1 << 20;
  // Single flight: a piece whose bytes (same file record, same or a
  // containing byte range) another read of this client is fetching now
  // waits for that read instead of reading itself, within its own
  // deadline; if that read's call ends without the bytes, it reads itself.
  // ClientStats::shared_pieces / shared_bytes count what it saved.
  bool single_flight = true;
  // Pieces shorter than this neither lead nor join a flight: for small
  // reads the bookkeeping (a shared table, a lock, an allocation per
  // piece) costs more CPU than the physical read it might save.
  uint64_t single_flight_min_bytes = 64 << 10;
  // Worker threads per node = requests in flight per node (3FS uses 8).
  // A hung node blocks only its own workers.
  int max_inflight_per_node = 8;
  // Physical reads in flight in the whole process; further pieces wait.
  int max_inflight_global = 256;
  // Per call (ReadOptions::deadline = zero uses this).
  absl::Duration default_deadline = absl::Seconds(30);
  // An attempt still pending after this is treated as timed out: its node
  // is marked dead and the piece goes to another replica (the attempt keeps
  // running on its worker and its result is discarded).
  absl::Duration attempt_timeout = absl::Seconds(5);
  // Stall detection ("The Tail at Scale"'s probation): an attempt that has
  // started and not answered after stall_factor x its node's windowed p99
  // latency (at least stall_min_delay, at most attempt_timeout; a node
  // without 10 samples: see cold_latency), on a node that has answered
  // nothing else meanwhile (a hung node, not a slow one: stragglers are for
  // hedging), marks its node dead: the piece moves to another replica, and
  // so does every other attempt on that node, in any call, started or
  // queued, without waiting for attempt_timeout or a hedge token. An
  // attempt still queued is judged the same way (plus 20 ms) from the
  // later of its dispatch and the last read its node's threads started,
  // and only while some read of that node is under way: a node whose
  // threads are all stuck never starts it, but time in the client's own
  // queue (a machine too loaded to run its threads) is no stall. A piece
  // with no untried replica left and no hedge in flight keeps waiting (up
  // to attempt_timeout). The node is re-admitted by probing. 0 = off.
  double stall_factor = 4;
  absl::Duration stall_min_delay = absl::Milliseconds(200);
  // What the stall and hedge delays assume of a node before the process
  // knows its latency: a node with fewer than 10 samples of its own is
  // judged by the process-wide window (the other nodes' latency); while that
  // has fewer than 10 samples too (a new process), its p99 is taken to be
  // cold_latency (or the slowest answer seen, if larger): the stall delay is
  // then stall_factor x that (within the bounds above: 300 ms by default,
  // so that a node which answers nothing from the first read of a new
  // process is marked dead well within a second) and the hedge delay is
  // that itself.
  absl::Duration cold_latency = absl::Milliseconds(75);

  // --- replica choice ---
  std::string lb_policy = "least_loaded";  // loadbalancer/registry.h
  // Hedged reads: a piece still pending after its node's windowed
  // `hedge_quantile` latency (never more than the process-wide one, never
  // less than hedge_min_delay; a node without 10 samples: see cold_latency)
  // is sent to another replica too, if the hedge
  // budget has a token; the first answer wins. Retries, hedges and moved
  // pieces go to the front of their node's queue (first in, first out among
  // themselves): their call is already late.
  bool hedging = true;
  double hedge_quantile = 0.95;
  double hedge_max_ratio = 0.05;  // hedges per primary read (token bucket)
  int hedge_burst = 10;
  absl::Duration hedge_min_delay = absl::Milliseconds(1);
  // This host's own storage node (a job running beside its data): its
  // replicas are read first while it is healthy (admissible), straight from
  // its export directory (NodeRecord.export_path) unless data_path is kAgent;
  // ClientStats::local_bytes counts what it delivered. Empty: a node one of
  // whose agent addresses belongs to this host's network interfaces
  // (loopback excluded), if any.
  std::string local_node;
  // Seed of the pickers' random generator; 0 = random. A nonzero seed
  // makes a client's picks the same in every process (its n-th call draws
  // from seed + n - 1).
  uint64_t seed = 0;

  // --- verification ---
  VerifyMode verify = VerifyMode::kOff;
  int verify_sample_every = 64;

  // --- teardown ---
  // Destroying the Client waits at most this long (real time) for its I/O
  // threads; those still blocked in a read (a hung mount) are then left to
  // finish on their own (see client.h).
  absl::Duration teardown_timeout = absl::Seconds(1);
};

struct ReadOptions {
  // Zero: ClientOptions::default_deadline.
  absl::Duration deadline = absl::ZeroDuration();
  // Not owned, may be null; must outlive the call. Cancel() on it ends the
  // call soon with CANCELLED for the ranges not complete (read_canceller.h).
  ReadCanceller* canceller = nullptr;
  // At most this many of the call's pieces are read at once (0: all of
  // them, within ClientOptions::max_inflight_global); the next is
  // dispatched as soon as one ends. A ReadV of many small ranges with it
  // keeps that many reads in flight all along, like an I/O queue depth,
  // where smaller ReadV calls would drain between calls. The next piece is
  // the one, of the next 16 in call order, whose least busy node has the
  // fewest reads in flight, so that a slow node's reads do not take the
  // whole window while the others idle. Negative: INVALID_ARGUMENT for
  // every range.
  int max_in_flight = 0;
};

// One range of a File::ReadV. `dst` is caller-owned; it is never written
// after the call returns.
struct ReadRange {
  uint64_t offset = 0;
  absl::Span<char> dst;
};

class File;

// One range of a multi-file Client::ReadV.
struct FileReadRange {
  File* file = nullptr;  // not owned
  uint64_t offset = 0;
  absl::Span<char> dst;
};

}  // namespace rangefs

#endif  // RANGEFS_CLIENT_LIB_OPTIONS_H_
