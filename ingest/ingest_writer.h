// File: ingest_writer.h
//
// The ingest writer: puts a local file into rangefs. It places stripe
// columns on live ACTIVE nodes (lb::PlaceStripes), writes every column
// object to every replica through the agents in parallel (WriteObject; the
// agent writes the CRC32C sidecar), then commits the layout with one
// CreateFile (or, with `overwrite`, ReplaceLayout) only after every replica
// acknowledged. A write whose node fails mid-put (agent down or killed,
// disk full, read-only: replacement.h) is re-placed on another eligible
// node, up to `replace_attempts` times per object; the failed attempt's
// object is deleted, or, on a node that cannot be reached, left to
// rangefs-keeper's orphan collector (it is in no layout; IngestResult
// names it). On any other failure nothing becomes visible and the objects
// written are deleted (objects on unreachable nodes are named in the
// error). Files smaller than the stripe unit get one extent. With
// ec_data/ec_parity the file gets an erasure-coded striped layout
// (proto/layout.proto: k data columns written exactly as a plain striped
// file of width k, m parity columns coded while streaming (ec_rows.h),
// then each parity column's ".cells" object of cell CRCs).
//
// `rangefs-admin file put` is a thin front end to this library:
//
//   IngestOptions o;
//   o.replicas = 2;
//   absl::StatusOr<IngestResult> r = IngestFile(store, "/data/seg0",
//   "/crawl/seg0", o);
//
// Many files: one IngestSession, called from many threads, shares what a
// put of one file would set up each time (the agents' connections, the node
// and live records placement reads):
//
//   IngestSession session(store, o);
//   ParallelFor(files.size(), 16, [&](size_t i) {
//     results[i] = session.Put(files[i].local, files[i].path);
//   });
#ifndef RANGEFS_INGEST_INGEST_WRITER_H_
#define RANGEFS_INGEST_INGEST_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "namespace/storage_policy.h"
#include "namespace/store.h"
#include "storage_node/node_client.h"

namespace rangefs {
namespace ingest {

struct IngestOptions {
  uint64_t stripe_unit = uint64_t{1} << 20;  // in (0, 4 GiB]
  int width = 0;     // stripe columns; 0 = one per eligible node
  int replicas = 2;  // in [1, ns::kMaxReplicas]
  // Erasure coding (--ec=K+M): ec_data (k) data columns plus ec_parity (m)
  // parity columns, one object each on k + m distinct nodes (distinct
  // zone/rack pairs where the node records allow), Reed-Solomon (Cauchy,
  // GF(2^8)) parity coded row by row while streaming, cell = stripe_unit
  // (in [4 KiB, 16 MiB]: one sidecar CRC block). 0 = replicas.
  int ec_data = 0;
  int ec_parity = 0;
  // A file under ec_min_rows full rows (ec_min_rows x k x stripe_unit
  // bytes; 12 MiB for 6+3 with 1 MiB cells) is stored with `replicas`
  // instead, and IngestResult.note says so: below that, the parity of a
  // partial row costs more than the code saves. 0: code every non-empty
  // file (an empty file never has objects).
  int ec_min_rows = 2;
  // Storage policies (namespace/storage_policy.h; null: none). A file
  // under a policy whose goal applies to it (follow_policy.h) is stored
  // with the policy's replicas or erasure code instead of `replicas`,
  // `ec_data` and `ec_parity`; IngestResult.policy names the directory.
  std::shared_ptr<const ns::PolicyTable> policies;
  bool overwrite = false;  // replace an existing PATH (new objects)
  int parallel = 8;        // concurrent object writes, >= 1
  // Times one object's write moves to another node when its node fails
  // (0: a node failure fails the put).
  int replace_attempts = 2;
  // TLS towards the agents; empty ca_file = plaintext.
  node::NodeClientTlsOptions agent_tls;
  // Called with (bytes written, total bytes) every 64 MiB and at the end,
  // serialized; may be empty.
  std::function<void(size_t, size_t)> progress;
};

struct IngestResult {
  uint64_t size = 0;     // bytes of the file
  bool striped = false;  // striped layout (else one extent)
  int width = 1;         // stripe data columns (1 when not striped)
  int ec_data = 0;       // k, m when erasure-coded, else 0
  int ec_parity = 0;
  uint64_t raw_bytes = 0;  // bytes stored on the agents (data + parity)
  std::string note;        // e.g. why an --ec put was stored with replicas
  std::string policy;      // the directory whose storage policy it followed
  int replicas = 0;        // replicas per column (1 when erasure-coded)
  uint64_t file_id = 0;    // the committed layout's file_id
  size_t objects = 0;      // objects written (columns x replicas)
  // Writes moved to another node: "OBJECT: FROM -> TO (why)".
  std::vector<std::string> replaced;
  // Failed attempts' objects that could not be deleted ("node:object"):
  // in no layout, so rangefs-keeper's orphan collector removes them.
  std::vector<std::string> leftovers;
};

// Ingests `local` as namespace path `path` through `store` (not owned).
// Blocking; uses at most options.parallel threads, joined before return.
// Codes: INVALID_ARGUMENT (bad path or options, `local` not a regular
// file), NOT_FOUND (local file), ALREADY_EXISTS (PATH exists, no
// overwrite), FAILED_PRECONDITION (too few eligible nodes: for --ec, fewer
// than k + m, before anything is written), agent and etcd
// errors as they come (prefixed with what failed and where).
absl::StatusOr<IngestResult> IngestFile(ns::NamespaceStore& store,
                                        const std::string& local,
                                        const std::string& path,
                                        const IngestOptions& options);

// Puts many files with shared agent connections, a shared view of the
// node and live records (read at the first put, again when older than
// `refresh` and after a put that failed placing or writing) and file ids
// reserved in blocks (ns::NamespaceStore::ReserveFileIds; ids of a block
// left unused are skipped, never reused). Thread-safe:
// Put may run on many threads at once. `store` is not owned and must
// outlive the session.
class IngestSession {
 public:
  IngestSession(ns::NamespaceStore& store, IngestOptions options,
                absl::Duration refresh = absl::Seconds(5));
  ~IngestSession();
  IngestSession(const IngestSession&) = delete;
  IngestSession& operator=(const IngestSession&) = delete;

  // IngestFile(store, local, path, options) with the shared state.
  // `progress` (may be empty) replaces options.progress for this put.
  // `known_absent`: the caller listed the destination and `path` was not
  // there, so the put skips its own existence check (a file created since
  // still makes the commit fail with ALREADY_EXISTS, after the writes).
  absl::StatusOr<IngestResult> Put(
      const std::string& local, const std::string& path,
      const std::function<void(size_t, size_t)>& progress = {},
      bool known_absent = false);

 private:
  struct View;
  absl::StatusOr<std::shared_ptr<const View>> CurrentView();
  void Invalidate();

  ns::NamespaceStore& store_;
  const IngestOptions options_;
  const absl::Duration refresh_;
  // A file id for a new file, 0 for the store to assign. The first put
  // takes no reservation (a session of one file costs what it did);
  // later ones take ids from blocks reserved with ReserveFileIds, growing
  // from 16 to 1024 ids: a CreateFile that takes the next id from the
  // namespace's counter updates it by compare-and-swap, so concurrent
  // creates would mostly lose and retry.
  absl::StatusOr<uint64_t> NextFileId();

  absl::Mutex ids_mu_;
  bool first_put_ ABSL_GUARDED_BY(ids_mu_) = true;
  uint64_t next_id_ ABSL_GUARDED_BY(ids_mu_) = 0;
  uint64_t ids_left_ ABSL_GUARDED_BY(ids_mu_) = 0;
  uint64_t block_ ABSL_GUARDED_BY(ids_mu_) = 16;
  absl::Mutex mu_;
  std::shared_ptr<const View> view_ ABSL_GUARDED_BY(mu_);
  absl::Time view_time_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ingest
}  // namespace rangefs

#endif  // RANGEFS_INGEST_INGEST_WRITER_H_
