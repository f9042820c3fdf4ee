// File: file_get.h
//
// Copy-out: `rangefs-admin file get` and `file cat`, reading through the
// client library (client_lib/client.h) over the admin's own etcd
// connection: pieces read in parallel across nodes and replicas, every
// piece checked against its CRC32C sidecar (ClientOptions::verify =
// kFull), a failed replica retried on another.
//
//   file get PATH LOCAL           -> LOCAL (LOCAL/<base name> if LOCAL is
//                                    a directory or ends in "/")
//   file get DIR LOCAL            -> LOCAL/<path under DIR> for every file
//                                    below DIR (recursive)
//   file get DIR LOCAL/           -> LOCAL/<base name of DIR>/<path under DIR>
//   file cat PATH...              -> the bytes, in order, on stdout
//
// The names mirror `file put` (bulk_put.h). Each file is written to a
// temp file beside its destination and renamed into place only once
// complete and verified: a failed or interrupted get leaves no partial
// file under the destination's name. An existing local file is
// ALREADY_EXISTS unless --overwrite.
#ifndef RANGEFS_ADMIN_FILE_GET_H_
#define RANGEFS_ADMIN_FILE_GET_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "admin/args.h"
#include "admin/commands.h"
#include "admin/table.h"
#include "client_lib/client.h"

namespace rangefs {
namespace admin {

// Files copied at once by `file get` of a directory (--jobs).
constexpr int kDefaultGetJobs = 8;

// A Client over ctx's store connection (same etcd client and cluster),
// with full verification, agent TLS from ctx. The store must outlive it.
absl::StatusOr<std::unique_ptr<Client>> OpenCopyOutClient(Context& ctx);

// `file get PATH|DIR LOCAL [--overwrite] [--jobs=8]`. Codes: NOT_FOUND (no
// such file or directory in the namespace), ALREADY_EXISTS (local file
// exists, no --overwrite), INVALID_ARGUMENT (usage, a namespace name that
// cannot be a local name), DATA_LOSS (every replica failed its checksum),
// errno errors naming the local path. For a directory, every file is
// tried; the first failure's code is returned, naming each failed file.
absl::StatusOr<Table> RunFileGet(Context& ctx, Args& args);

// `file cat PATH...`: writes each file's bytes to `out_fd` in order.
// Stops at the first error (bytes already written stay written).
absl::StatusOr<Table> CatFiles(Context& ctx, Args& args, int out_fd);
// CatFiles to stdout.
absl::StatusOr<Table> RunFileCat(Context& ctx, Args& args);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_FILE_GET_H_
