// File: bulk_put.h
//
// `rangefs-admin file put` of many files: a local directory walked
// recursively, put in parallel through one ingest::IngestSession (shared
// agent connections and node records), with a progress line.
//
// Names (the same rule for a file and a directory, and for `file get`):
//   put FILE /a/b      -> /a/b
//   put FILE /a/       -> /a/<base name of FILE>
//   put DIR  /a/b      -> /a/b/<path under DIR> for every file below DIR
//   put DIR  /a/       -> /a/<base name of DIR>/<path under DIR>
// so that repeating a put names the same files. Symbolic links to regular
// files are followed; links to directories, and sockets, FIFOs and devices,
// are skipped and named in the summary. Empty directories leave no trace
// (the namespace has files only).
//
//   RANGEFS_ASSIGN_OR_RETURN(PutPlan plan, PlanPut("/data/crawl", "/crawl"));
//   ingest::IngestSession session(store, options);
//   ProgressMeter meter("put", plan.items.size(), plan.bytes, sink);
//   BulkPutResult r = PutAll(session, plan, 16, meter);
#ifndef RANGEFS_ADMIN_BULK_PUT_H_
#define RANGEFS_ADMIN_BULK_PUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admin/progress_meter.h"
#include "ingest/ingest_writer.h"
#include "namespace/store.h"

namespace rangefs {
namespace admin {

struct PutItem {
  std::string local;  // local file
  std::string path;   // namespace path
  uint64_t size = 0;  // bytes when planned
};

struct PutPlan {
  bool directory = false;            // LOCAL was a directory
  std::string root;                  // the namespace directory items are below
  std::vector<PutItem> items;        // sorted by local path
  uint64_t bytes = 0;                // sum of the sizes
  std::vector<std::string> skipped;  // "LOCAL (why)"
};

// Maps LOCAL and DEST to the files to put (rule above). DEST is checked by
// the put of each file (an invalid name fails that file alone). Codes:
// NOT_FOUND (LOCAL missing), INVALID_ARGUMENT (LOCAL neither a regular
// file nor a directory, DEST not absolute), errno errors naming the
// directory that could not be read.
absl::StatusOr<PutPlan> PlanPut(const std::string& local,
                                const std::string& dest);

struct PutFailure {
  PutItem item;
  absl::Status status;
};

struct BulkPutResult {
  size_t files = 0;  // files put
  uint64_t bytes = 0;
  std::vector<PutFailure> failures;  // in plan order
  size_t not_started = 0;  // files left out after max_failures failures
  std::vector<ingest::IngestResult> results;  // per item; size 0 if failed
  absl::Duration elapsed;
};

// The files already below plan.root (one paged listing, instead of one
// existence check per file), or nothing when the plan is one file or the
// listing would exceed 2 x the plan's files (a big tree below the root:
// each put then checks its own path).
absl::StatusOr<std::optional<std::set<std::string>>> ListExisting(
    ns::NamespaceStore& store, const PutPlan& plan);

// Puts every item of `plan` with at most `jobs` files in flight (each
// file's replicas are written in parallel too: IngestOptions::parallel).
// `existing` (from ListExisting; may be null) lets a put of a path not in
// it skip its existence check.
// A file that fails is recorded and the others go on; after
// `max_failures` failures no further file is started (the cluster is
// likely unwell). Blocking; joins its threads before returning.
BulkPutResult PutAll(ingest::IngestSession& session, const PutPlan& plan,
                     int jobs, ProgressMeter& meter,
                     const std::set<std::string>* existing = nullptr,
                     size_t max_failures = 100);

// Copies all of `fd` (stdin) into a new file under $TMPDIR (or /tmp) and
// returns its name; the caller removes it. The ingest writer needs the
// size before placing, and reads columns with pread.
absl::StatusOr<std::string> SpoolToTempFile(int fd);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_BULK_PUT_H_
