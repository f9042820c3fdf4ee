#include "namespace/record_gate.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "namespace/layout.h"
#include "namespace/nfs_export.h"

namespace rangefs {
namespace ns {
namespace {

absl::Status Invalid(absl::string_view key, absl::string_view rule) {
  return absl::DataLossError(absl::StrCat("invalid record at etcd key ",
                                          absl::CEscape(key), ": ", rule));
}

absl::Status CheckSize(absl::string_view key, absl::string_view value,
                       size_t max) {
  if (value.size() > max) {
    return Invalid(
        key, absl::StrCat("value is ", value.size(), " bytes (max ", max, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckIdMatchesKey(absl::string_view key, absl::string_view key_id,
                               absl::string_view id) {
  if (!key_id.empty() && key_id != id) {
    return Invalid(key, absl::StrCat("names node \"", absl::CEscape(id),
                                     "\" but its key names \"",
                                     absl::CEscape(key_id), "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckString(absl::string_view key, absl::string_view what,
                         absl::string_view s, size_t max) {
  if (s.size() > max) {
    return Invalid(
        key, absl::StrCat(what, " is ", s.size(), " bytes (max ", max, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckLiveLists(absl::string_view key, const v1::LiveRecord& r) {
  if (r.addresses_size() > kMaxNodeAddresses) {
    return Invalid(key,
                   absl::StrCat("has ", r.addresses_size(), " addresses (max ",
                                kMaxNodeAddresses, ")"));
  }
  for (int i = 0; i < r.addresses_size(); ++i) {
    absl::Status a = ValidateAddress(r.addresses(i));
    if (!a.ok()) {
      return Invalid(key, absl::StrCat("address ", i, ": ", a.message()));
    }
  }
  if (r.corrupt_objects_size() > kMaxListedObjects) {
    return Invalid(
        key, absl::StrCat("lists ", r.corrupt_objects_size(),
                          " corrupt objects (max ", kMaxListedObjects, ")"));
  }
  if (r.rdma_ports_size() > kMaxRdmaPorts) {
    return Invalid(key, absl::StrCat("lists ", r.rdma_ports_size(),
                                     " RDMA ports (max ", kMaxRdmaPorts, ")"));
  }
  return absl::OkStatus();
}

// A bad NFS export costs only the export: cleared, with the reason in
// `refused`; the record is otherwise used as usual.
void GateNfsExport(absl::string_view key, v1::LiveRecord& r) {
  if (!r.has_nfs_export()) return;
  v1::NfsExport* e = r.mutable_nfs_export();
  e->clear_refused();
  if (e->url().empty() && e->version().empty()) return;
  absl::Status s = ValidateNfsExport(*e);
  if (s.ok()) return;
  e->clear_url();
  e->clear_version();
  e->set_refused(absl::StrCat("invalid record at etcd key ", key, ": ",
                              s.message(), "; NFS export not used"));
}

}  // namespace

absl::StatusOr<v1::FileLayout> DecodeFileLayout(absl::string_view key,
                                                absl::string_view value) {
  if (absl::Status s = CheckSize(key, value, kMaxLayoutBytes); !s.ok()) {
    return s;
  }
  v1::FileLayout layout;
  if (!layout.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Invalid(key, "not a decodable file layout");
  }
  if (absl::Status s = ValidateLayout(layout); !s.ok()) {
    return Invalid(key, s.message());
  }
  return layout;
}

absl::StatusOr<v1::NodeRecord> DecodeNodeRecord(absl::string_view key,
                                                absl::string_view key_id,
                                                absl::string_view value) {
  if (absl::Status s = CheckSize(key, value, kMaxRecordBytes); !s.ok()) {
    return s;
  }
  v1::NodeRecord r;
  if (!r.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Invalid(key, "not a decodable node record");
  }
  if (r.addresses_size() > kMaxNodeAddresses) {
    return Invalid(key,
                   absl::StrCat("has ", r.addresses_size(), " addresses (max ",
                                kMaxNodeAddresses, ")"));
  }
  if (absl::Status s = ValidateNode(r); !s.ok()) {
    return Invalid(key, s.message());
  }
  if (absl::Status s = CheckString(key, "zone", r.zone(), 255); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckString(key, "rack", r.rack(), 255); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckIdMatchesKey(key, key_id, r.id()); !s.ok()) {
    return s;
  }
  return r;
}

absl::StatusOr<v1::LiveRecord> DecodeLiveRecord(absl::string_view key,
                                                absl::string_view key_id,
                                                absl::string_view value) {
  if (absl::Status s = CheckSize(key, value, kMaxRecordBytes); !s.ok()) {
    return s;
  }
  v1::LiveRecord r;
  if (!r.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Invalid(key, "not a decodable live record");
  }
  if (absl::Status s = ValidateNodeId(r.node_id()); !s.ok()) {
    return Invalid(key, s.message());
  }
  if (!v1::LiveRecord::Health_IsValid(r.health())) {
    return Invalid(key, absl::StrCat("health ", r.health(), " is unknown"));
  }
  if (absl::Status s = CheckLiveLists(key, r); !s.ok()) return s;
  if (absl::Status s = CheckIdMatchesKey(key, key_id, r.node_id()); !s.ok()) {
    return s;
  }
  GateNfsExport(key, r);
  return r;
}

}  // namespace ns
}  // namespace rangefs
