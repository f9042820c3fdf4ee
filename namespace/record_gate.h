// File: record_gate.h
//
// The one gate every value read from etcd passes before any code looks at
// its fields: decode, then validate with the same rules `file create` and
// `node add` apply (layout.h), plus caps on counts and sizes. etcd is shared
// infrastructure: its contents are input, not truth.
//
//   absl::StatusOr<v1::FileLayout> l = DecodeFileLayout(kv.key, kv.value);
//   if (!l.ok()) { /* this file is unreadable; others are unaffected */ }
//
// Every error is DATA_LOSS and names the etcd key and the broken rule, e.g.
//   "invalid record at etcd key /rangefs/v1/c/files/a: striped layout:
//    stripe_unit is 0". No arithmetic on a record's fields happens before
// it passed the gate. Pure functions; thread-safe.
#ifndef RANGEFS_NAMESPACE_RECORD_GATE_H_
#define RANGEFS_NAMESPACE_RECORD_GATE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/layout.pb.h"

namespace rangefs {
namespace ns {

// Caps on what one node or live record may hold (layouts: kMaxLayoutBytes,
// kMaxExtents, kMaxStripeTargets, kMaxReplicas in layout.h).
inline constexpr int kMaxNodeAddresses = 16;
inline constexpr size_t kMaxRecordBytes = 64 << 10;  // node and live records
inline constexpr int kMaxListedObjects = 1024;       // live corrupt_objects
inline constexpr int kMaxRdmaPorts = 64;

// A file layout value: decodable, at most kMaxLayoutBytes, and valid by
// ValidateLayout (node existence is not checked here: a node record may be
// added or removed independently).
absl::StatusOr<v1::FileLayout> DecodeFileLayout(absl::string_view key,
                                                absl::string_view value);

// A node record value: decodable, valid by ValidateNode, and the id it
// names is the one in its key (`key_id`; empty = not checked).
absl::StatusOr<v1::NodeRecord> DecodeNodeRecord(absl::string_view key,
                                                absl::string_view key_id,
                                                absl::string_view value);

// A live record value: decodable, a valid node id equal to `key_id` (empty
// = not checked), host:port addresses, a known health, bounded lists.
// An invalid nfs_export (ValidateNfsExport) does not fail the record: its
// url and version are cleared and nfs_export.refused says why.
absl::StatusOr<v1::LiveRecord> DecodeLiveRecord(absl::string_view key,
                                                absl::string_view key_id,
                                                absl::string_view value);

}  // namespace ns
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_RECORD_GATE_H_
