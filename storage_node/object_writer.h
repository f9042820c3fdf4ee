// File: object_writer.h
//
// The one way an object enters an export: bytes go to a temp file in the
// export's temp dir while their per-block CRC-32Cs are computed; Commit
// fsyncs it, writes and fsyncs the checksum sidecar, and renames both into
// place (ExportRoot::CommitObject), so that the object appears atomically
// with its sidecar or not at all. Used by WriteObject (ingest) and
// CopyObject (a copy from a peer agent).
//
//   RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w,
//                            ObjectWriter::Begin(root, "a/b", 1 << 20));
//   RANGEFS_RETURN_IF_ERROR(w->Append(data, n));
//   RANGEFS_ASSIGN_OR_RETURN(Checksums c, w->Commit(/*overwrite=*/false));
//
// A writer destroyed before a successful Commit removes its temp files.
// With `direct` (CopyObject), appends of whole 4 KiB-aligned buffers go to
// the disk with O_DIRECT: a copy neither fills the target's page cache
// with replica bytes nobody reads (it would evict what readers use) nor
// pays a page-cache copy per byte; an unaligned append (an object's tail),
// or a file system that refuses O_DIRECT, makes the rest buffered.
// Not thread-safe.
#ifndef RANGEFS_STORAGE_NODE_OBJECT_WRITER_H_
#define RANGEFS_STORAGE_NODE_OBJECT_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage_node/export_root.h"
#include "storage_node/sidecar.h"

namespace rangefs {
namespace node {

class ObjectWriter {
 public:
  // Validates `path` (ExportRoot::ValidateObjectPath) and `block_size`
  // ([kMinBlockSize, kMaxBlockSize]: INVALID_ARGUMENT) and creates the temp
  // file. `root` is not owned and must outlive the writer.
  static absl::StatusOr<std::unique_ptr<ObjectWriter>> Begin(
      const ExportRoot* root, std::string path, uint32_t block_size,
      bool direct = false);

  // Alignment of addresses and sizes that O_DIRECT appends need.
  static constexpr size_t kDirectAlign = 4096;

  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;
  ~ObjectWriter();

  // Appends `n` bytes. Starts writeback every few MiB so the final fsync
  // has little left to do.
  absl::Status Append(const char* p, size_t n);
  uint64_t size() const { return sum_.size(); }
  // Whether appends still go to the disk with O_DIRECT (tests).
  bool direct() const { return direct_; }
  const std::string& path() const { return path_; }

  // Makes the object appear with its sidecar. `check`, when set, sees the
  // checksums once the data is durable and may refuse the commit (its error
  // is returned and nothing appears). ALREADY_EXISTS if the object exists
  // and !overwrite. Call at most once.
  absl::StatusOr<Checksums> Commit(
      bool overwrite,
      const std::function<absl::Status(const Checksums&)>& check = nullptr);

 private:
  ObjectWriter(const ExportRoot* root, std::string path, TempFile obj,
               uint32_t block_size);
  void RemoveTemps();
  // Clears O_DIRECT on the temp file: the rest is written buffered.
  void EndDirect();

  const ExportRoot* root_;
  std::string path_;
  TempFile obj_;
  std::string side_name_;  // The sidecar's temp, once created.
  BlockChecksummer sum_;
  uint64_t writeback_from_ = 0;  // Bytes before it went to writeback.
  bool direct_ = false;          // O_DIRECT set on obj_.fd.
  bool committed_ = false;
};

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_OBJECT_WRITER_H_
