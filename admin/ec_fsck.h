// File: ec_fsck.h
//
// `fsck --checksums` of one erasure-coded file: every row's k data and m
// parity cells are read through the agents, each checked against the cell
// CRCs of the ".cells" objects (repair/ec_cells.h) and the parity against
// the codec's re-encoding of the data cells. The findings name each column
// object with bad cells (and its rows), each ".cells" object that is
// unreadable or disagrees, and, per file, the damaged rows with how many
// good cells each has left; a row with fewer than k is data loss.
#ifndef RANGEFS_ADMIN_EC_FSCK_H_
#define RANGEFS_ADMIN_EC_FSCK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "admin/data_commands.h"
#include "ingest/agents.h"
#include "namespace/store.h"

namespace rangefs {
namespace admin {

struct EcFileCheck {
  std::vector<FsckFinding> findings;
  // The rows with fewer than k good cells (empty: the file is readable).
  std::vector<uint64_t> data_loss_rows;
};

// Checks coded file `f` (ns::IsErasureCoded) row by row. Reads with the
// agents of `agents`, each call bounded by `call_timeout`.
EcFileCheck CheckCodedFile(ingest::Agents& agents, const ns::FileEntry& f,
                           absl::Duration call_timeout);

}  // namespace admin
}  // namespace rangefs

#endif  // RANGEFS_ADMIN_EC_FSCK_H_
