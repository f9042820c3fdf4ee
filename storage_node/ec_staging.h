// File: ec_staging.h
//
// Where RebuildEcColumn (ec_rebuilder.h) puts a column it rebuilds in
// ranges of rows, before the column appears: a staging object in the
// export's temp dir (never listed, never served; removed when the agent
// starts, and by a sweep once idle: EcRebuilderOptions::staging_idle),
// named after the destination path, plus a record of the rows
// written so far: for each row, a "written" mark and the row's k + m cell
// CRC-32Cs. A row is marked only once its bytes are durable, so after any
// crash the marks are a subset of what is on disk.
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<EcStaging> s,
//                            EcStaging::Open(root, key, /*fresh=*/false));
//   RANGEFS_RETURN_IF_ERROR(s->WriteCell(row, cell));          // each row
//   RANGEFS_RETURN_IF_ERROR(s->Record(first_row, range_crcs)); // the range
//   RANGEFS_ASSIGN_OR_RETURN(Checksums c, s->Commit(overwrite));  // last
//
// A staging object belongs to one EcStagingKey (path, geometry, column,
// rebuild id): opening it for another key (a later attempt, a crashed
// caller's leftovers) empties it first; opening it for the same key keeps
// its rows (a repeated range overwrites them). Commit reads the whole
// object back and checks every cell against its recorded CRC before the
// rename. Callers serialize the calls on one path (EcRebuilder does).
// Thread-compatible.
#ifndef RANGEFS_STORAGE_NODE_EC_STAGING_H_
#define RANGEFS_STORAGE_NODE_EC_STAGING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "namespace/ec_layout.h"
#include "storage_node/export_root.h"
#include "storage_node/object_writer.h"
#include "storage_node/scoped_fd.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {

// What a staging object holds: column `column` of the file `g`, rebuilt
// as object `path` by attempt `rebuild_id`.
struct EcStagingKey {
  std::string path;  // valid object path (ExportRoot::ValidateObjectPath)
  ns::EcGeometry g;  // rows set
  int column = 0;
  uint64_t rebuild_id = 0;
};

// Name of the staging object of `path` in the temp dir ("ec-" and 16 hex
// digits); its record is that name plus ".rows". Pure.
std::string EcStagingName(absl::string_view path);

// A staging object found in the temp dir: its object and record (either
// may be missing), as a sweep sees them.
struct EcStagingFiles {
  std::string name;       // EcStagingName's form
  absl::Time last_write;  // the later mtime of the object and the record
  uint64_t bytes = 0;     // on disk (allocated) of both
};

// The staging objects in root's temp dir (files named like EcStagingName,
// with or without the record suffix), one entry per name; other temp
// files are not listed. A file gone meanwhile is skipped. Blocking.
absl::StatusOr<std::vector<EcStagingFiles>> ListEcStaging(
    const ExportRoot& root);
// The staging object `name` as ListEcStaging describes it; NOT_FOUND when
// neither of its files exists.
absl::StatusOr<EcStagingFiles> StatEcStaging(const ExportRoot& root,
                                             const std::string& name);
// Removes both files of staging object `name` (OK if gone).
absl::Status RemoveEcStaging(const ExportRoot& root, const std::string& name);

class EcStaging {
 public:
  // Opens (creating) the staging object of key.path and its record.
  // Empties both when they belong to another key, or when `fresh`.
  // `root` is not owned and must outlive the result.
  static absl::StatusOr<std::unique_ptr<EcStaging>> Open(const ExportRoot* root,
                                                         EcStagingKey key,
                                                         bool fresh);

  // Writes the stored bytes of `row`'s cell at its offset (row * cell).
  absl::Status WriteCell(uint64_t row, absl::string_view bytes);
  // Makes the cells written durable, then marks rows [first_row,
  // first_row + crcs.size() / (k + m)) with their CRCs (row major, k + m
  // per row) and makes the marks durable.
  absl::Status Record(uint64_t first_row, absl::Span<const uint32_t> crcs);

  // Checks the whole staging object (every row marked, else
  // FAILED_PRECONDITION naming the first missing one; its size; each cell
  // read back against its recorded CRC, else DATA_LOSS naming the row),
  // then renames it into place as key.path with its sidecar (block size =
  // cell) and drops the record. ALREADY_EXISTS if the object exists and
  // !overwrite. Blocking; reads the column once.
  absl::StatusOr<Checksums> Commit(bool overwrite);
  // Removes the staging object and its record (a whole-column call that
  // failed: nobody comes back for its rows).
  absl::Status Remove();
  // Appends the recorded CRC table (a ".cells" object's bytes, see
  // ns::EncodeEcCellCrcs) to `out`, in pieces. Call when every row is
  // marked (Commit checks that; this does too).
  absl::Status AppendCellsTable(ObjectWriter& out);

 private:
  EcStaging(const ExportRoot* root, EcStagingKey key, ScopedFd data,
            ScopedFd record);
  // The column CRC of each row in [0, rows); FAILED_PRECONDITION naming
  // the first row not marked.
  absl::StatusOr<std::vector<uint32_t>> RecordedColumnCrcs();
  // Calls fn(row, crcs of its k + m cells) for every row, in order, in
  // pieces; FAILED_PRECONDITION at the first row not marked.
  absl::Status ForEachRecordedRow(
      const std::function<absl::Status(uint64_t, absl::Span<const uint32_t>)>&
          fn);

  const ExportRoot* const root_;
  const EcStagingKey key_;
  const std::string name_;  // in the temp dir; the record is name_ + ".rows"
  ScopedFd data_;
  ScopedFd record_;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_EC_STAGING_H_
