#include "namespace/layout.h"

#include <algorithm>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "namespace/ec_layout.h"

namespace rangefs {
namespace ns {

namespace {

absl::Status CheckComponents(absl::string_view what, absl::string_view path,
                             absl::string_view body) {
  size_t index = 0;
  for (absl::string_view c : absl::StrSplit(body, '/')) {
    if (c.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", path, "\": empty component ", index,
                       " (duplicate or trailing '/')"));
    }
    if (c == "." || c == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " \"", path, "\": component ", index, " is \"", c,
                       "\" (paths must be normalized)"));
    }
    if (c.size() > kMaxNameBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " \"", path.substr(0, 64), "...\": component ", index, " is ",
          c.size(), " bytes (max ", kMaxNameBytes, ")"));
    }
    ++index;
  }
  return absl::OkStatus();
}

absl::Status CheckChars(absl::string_view what, absl::string_view path) {
  if (path.size() > kMaxPathBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", path.substr(0, 64), "...\" is ", path.size(),
                     " bytes (max ", kMaxPathBytes, ")"));
  }
  for (size_t i = 0; i < path.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(path[i]);
    if (ch == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " contains a NUL byte at position ", i));
    }
    if (ch < 0x20 || ch == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " \"", absl::CEscape(path), "\" contains control character ",
          int{ch}, " at position ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckReplicas(
    absl::string_view where,
    const google::protobuf::RepeatedPtrField<v1::Replica>& replicas,
    uint64_t span, const NodeKnownFn& node_known) {
  if (replicas.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has no replicas"));
  }
  if (replicas.size() > kMaxReplicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has ", replicas.size(), " replicas (max ", kMaxReplicas, ")"));
  }
  if (std::all_of(replicas.begin(), replicas.end(),
                  [](const v1::Replica& r) { return r.leaving(); })) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": every one of its ", replicas.size(),
        " replica(s) is marked leaving (a slot needs one that stays)"));
  }
  std::set<absl::string_view> nodes;
  for (int r = 0; r < replicas.size(); ++r) {
    const v1::Replica& rep = replicas[r];
    std::string rw = absl::StrCat(where, " replica ", r);
    absl::Status id = ValidateNodeId(rep.node_id());
    if (!id.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(rw, ": ", id.message()));
    }
    if (!nodes.insert(rep.node_id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": node \"", rep.node_id(),
                       "\" holds more than one replica (replicas must be "
                       "on distinct nodes)"));
    }
    if (!rep.replaced_by().empty()) {
      absl::Status by = ValidateNodeId(rep.replaced_by());
      if (!rep.leaving() || !by.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            rw, ": replaced_by \"", absl::CEscape(rep.replaced_by()), "\" ",
            by.ok() ? "is set on a replica not marked leaving" : by.message()));
      }
    }
    absl::Status obj = ValidateObjectPath(rep.object());
    if (!obj.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(rw, ": ", obj.message()));
    }
    if (rep.object_offset() > kMaxFileSize ||
        span > kMaxFileSize - rep.object_offset()) {
      return absl::InvalidArgumentError(absl::StrCat(rw, ": object offset ",
                                                     rep.object_offset(), " + ",
                                                     span, " bytes overflows"));
    }
    if (node_known && !node_known(rep.node_id())) {
      return absl::FailedPreconditionError(
          absl::StrCat(rw, ": unknown node \"", rep.node_id(),
                       "\" (add it with `rangefs-admin node add`)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePath(absl::string_view path) {
  if (path.empty()) return absl::InvalidArgumentError("path is empty");
  RANGEFS_RETURN_IF_ERROR(CheckChars("path", path));
  if (path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "path \"", path, "\" is not absolute (must start with /)"));
  }
  if (path == "/") {
    return absl::InvalidArgumentError("path \"/\" is a directory, not a file");
  }
  return CheckComponents("path", path, path.substr(1));
}

absl::Status ValidateDir(absl::string_view dir) {
  if (dir == "/") return absl::OkStatus();
  return ValidatePath(dir);
}

absl::Status ValidateObjectPath(absl::string_view object) {
  if (object.empty()) {
    return absl::InvalidArgumentError("object path is empty");
  }
  RANGEFS_RETURN_IF_ERROR(CheckChars("object path", object));
  if (object[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("object path \"", object,
                     "\" is absolute (must be relative to the export)"));
  }
  return CheckComponents("object path", object, object);
}

namespace {

// A name that is one etcd key component: 1-64 of [A-Za-z0-9._-], not "."
// or "..". `what` names it in errors ("node id").
absl::Status ValidateName(absl::string_view what, absl::string_view id) {
  if (id.empty())
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (id.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", id.substr(0, 16), "...\" is ", id.size(),
                     " chars (max 64)"));
  }
  if (id == "." || id == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", id, "\" is reserved"));
  }
  for (size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " \"", absl::CEscape(id), "\": character at position ", i,
          " is not one of [A-Za-z0-9._-]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateNodeId(absl::string_view id) {
  return ValidateName("node id", id);
}

absl::Status ValidateClusterName(absl::string_view name) {
  return ValidateName("cluster name", name);
}

absl::Status ValidateAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", absl::CEscape(address.substr(0, 64)), "\" is not host:port"));
  }
  absl::string_view host = address.substr(0, colon);
  if (host.size() > 253) {
    return absl::InvalidArgumentError(
        absl::StrCat("host of \"", address.substr(0, 64), "...\" is ",
                     host.size(), " chars (max 253)"));
  }
  for (size_t i = 0; i < host.size(); ++i) {
    const char c = host[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                    c == '_' || c == ':' || c == '[' || c == ']';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host of \"", absl::CEscape(address), "\": character at position ", i,
          " is not one of [A-Za-z0-9.-_:[]]"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNode(const v1::NodeRecord& node) {
  RANGEFS_RETURN_IF_ERROR(ValidateNodeId(node.id()));
  std::string where = absl::StrCat("node \"", node.id(), "\"");
  for (int i = 0; i < node.addresses_size(); ++i) {
    absl::Status a = ValidateAddress(node.addresses(i));
    if (!a.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": address ", i, ": ", a.message()));
    }
  }
  absl::Status e = ValidateDir(node.export_path());
  if (!e.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": export path: ", e.message()));
  }
  if (!node.mount_path().empty()) {
    absl::Status m = ValidateDir(node.mount_path());
    if (!m.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": mount path: ", m.message()));
    }
  }
  if (!v1::AdminState_IsValid(node.admin_state()) ||
      node.admin_state() == v1::ADMIN_STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": admin state ", node.admin_state(),
                     " is not active, draining or disabled"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLayout(const v1::FileLayout& layout,
                            const NodeKnownFn& node_known) {
  const uint64_t size = layout.size();
  if (size > kMaxFileSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout size ", size, " exceeds the maximum file size ", kMaxFileSize));
  }
  if (layout.state() != v1::IMPORTING && layout.state() != v1::READY &&
      layout.state() != v1::READY_EC) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout state ", layout.state(),
                     " is not importing, ready or ready (erasure-coded)"));
  }
  if (layout.content_generation() > layout.generation() &&
      layout.generation() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout content_generation ", layout.content_generation(),
                     " is above its generation ", layout.generation()));
  }
  if (layout.checksum() == v1::CRC32C_SIDECAR &&
      layout.checksum_block_size() == 0) {
    return absl::InvalidArgumentError(
        "layout uses crc32c sidecars but checksum_block_size is 0");
  }
  const bool has_striped = layout.has_striped();
  const bool has_extents = layout.extents_size() > 0;
  if (has_striped && has_extents) {
    return absl::InvalidArgumentError(
        "layout has both extents and a striped form; use one");
  }
  if (!has_striped && !has_extents) {
    if (size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout of size ", size, " has neither extents nor stripes"));
    }
  }
  if (layout.extents_size() > kMaxExtents) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout has ", layout.extents_size(), " extents (max ",
                     kMaxExtents, "); use the striped form"));
  }
  if (has_extents) {
    uint64_t expected = 0;
    for (int i = 0; i < layout.extents_size(); ++i) {
      const v1::Extent& e = layout.extents(i);
      std::string where =
          absl::StrCat("extent ", i, " [", e.offset(), ", +", e.length(), ")");
      if (e.length() == 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, " is empty"));
      }
      if (e.offset() > expected) {
        return absl::InvalidArgumentError(
            absl::StrCat("gap: bytes [", expected, ", ", e.offset(),
                         ") are not covered before ", where));
      }
      if (e.offset() < expected) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " overlaps the previous extent, which ends at ", expected,
            i > 0 && e.offset() < layout.extents(i - 1).offset()
                ? " (extents must be sorted by offset)"
                : ""));
      }
      if (e.length() > kMaxFileSize || e.offset() > kMaxFileSize - e.length()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": offset + length overflows"));
      }
      expected = e.offset() + e.length();
      if (expected > size) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " ends at ", expected, ", past the file size ", size));
      }
      RANGEFS_RETURN_IF_ERROR(
          CheckReplicas(where, e.replicas(), e.length(), node_known));
    }
    if (expected != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "extents cover [0, ", expected, ") but the file size is ", size,
          "; bytes [", expected, ", ", size, ") have no extent"));
    }
  }
  if (has_striped) {
    const v1::StripedLayout& s = layout.striped();
    if (s.stripe_unit() == 0) {
      return absl::InvalidArgumentError("striped layout: stripe_unit is 0");
    }
    if (s.stripe_unit() > kMaxFileSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("striped layout: stripe_unit ", s.stripe_unit(),
                       " exceeds the maximum file size ", kMaxFileSize));
    }
    if (s.targets_size() == 0) {
      return absl::InvalidArgumentError("striped layout has no targets");
    }
    if (s.targets_size() > kMaxStripeTargets) {
      return absl::InvalidArgumentError(
          absl::StrCat("striped layout has ", s.targets_size(),
                       " targets (max ", kMaxStripeTargets, ")"));
    }
    RANGEFS_RETURN_IF_ERROR(ValidateErasureCode(layout));
    const uint64_t width = static_cast<uint64_t>(DataColumnCount(s));
    const uint64_t units = (size + s.stripe_unit() - 1) / s.stripe_unit();
    const uint64_t rows = (units + width - 1) / width;
    const uint64_t column_bytes = rows * s.stripe_unit();
    for (int t = 0; t < s.targets_size(); ++t) {
      RANGEFS_RETURN_IF_ERROR(CheckReplicas(absl::StrCat("stripe target ", t),
                                            s.targets(t).replicas(),
                                            column_bytes, node_known));
    }
  }
  if (!has_striped) RANGEFS_RETURN_IF_ERROR(ValidateErasureCode(layout));
  size_t bytes = layout.ByteSizeLong();
  if (bytes > kMaxLayoutBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout encodes to ", bytes, " bytes (max ", kMaxLayoutBytes,
        " under etcd's request limit); use the striped form"));
  }
  return absl::OkStatus();
}

std::vector<Piece> MapRange(const v1::FileLayout& layout, uint64_t offset,
                            uint64_t length, uint64_t max_piece) {
  std::vector<Piece> out;
  if (offset >= layout.size()) return out;
  uint64_t end =
      layout.size() - offset < length ? layout.size() : offset + length;
  if (max_piece == 0) max_piece = UINT64_MAX;
  if (layout.has_striped()) {
    const v1::StripedLayout& s = layout.striped();
    const uint64_t unit = s.stripe_unit();
    // Erasure-coded: only the k data columns hold file bytes.
    const uint64_t width = static_cast<uint64_t>(DataColumnCount(s));
    uint64_t pos = offset;
    while (pos < end) {
      uint64_t k = pos / unit;
      uint64_t unit_end = std::min(end, (k + 1) * unit);
      uint64_t n = std::min(unit_end - pos, max_piece);
      Piece p;
      p.offset = pos;
      p.length = n;
      p.unit = static_cast<uint32_t>(k % width);
      p.replicas = &s.targets(static_cast<int>(k % width)).replicas();
      p.object_delta = (k / width) * unit + (pos - k * unit);
      out.push_back(p);
      pos += n;
    }
    return out;
  }
  MapExtents(layout.extents(), 0, offset, end, max_piece, &out);
  return out;
}

void MapExtents(const google::protobuf::RepeatedPtrField<v1::Extent>& ext,
                uint32_t first_unit, uint64_t offset, uint64_t end,
                uint64_t max_piece, std::vector<Piece>* out) {
  if (max_piece == 0) max_piece = UINT64_MAX;
  // First extent whose end is past `offset`.
  auto it = std::upper_bound(ext.begin(), ext.end(), offset,
                             [](uint64_t off, const v1::Extent& e) {
                               return off < e.offset() + e.length();
                             });
  uint64_t pos = offset;
  for (; it != ext.end() && pos < end; ++it) {
    const v1::Extent& e = *it;
    uint64_t e_end = std::min(end, e.offset() + e.length());
    while (pos < e_end) {
      uint64_t n = std::min(e_end - pos, max_piece);
      Piece p;
      p.offset = pos;
      p.length = n;
      p.unit = first_unit + static_cast<uint32_t>(it - ext.begin());
      p.replicas = &e.replicas();
      p.object_delta = pos - e.offset();
      out->push_back(p);
      pos += n;
    }
  }
}

std::vector<std::string> ReferencedNodes(const v1::FileLayout& layout) {
  std::set<std::string> nodes;
  for (const v1::Extent& e : layout.extents()) {
    for (const v1::Replica& r : e.replicas()) nodes.insert(r.node_id());
  }
  for (const auto& t : layout.striped().targets()) {
    for (const v1::Replica& r : t.replicas()) nodes.insert(r.node_id());
  }
  return std::vector<std::string>(nodes.begin(), nodes.end());
}

absl::string_view AdminStateName(v1::AdminState state) {
  switch (state) {
    case v1::ACTIVE:
      return "active";
    case v1::DRAINING:
      return "draining";
    case v1::DISABLED:
      return "disabled";
    default:
      return "unspecified";
  }
}

absl::string_view FileStateName(v1::FileState state) {
  switch (state) {
    case v1::IMPORTING:
      return "importing";
    case v1::READY:
      return "ready";
    case v1::READY_EC:
      return "ready (erasure-coded)";
    default:
      return "unspecified";
  }
}

}  // namespace ns
}  // namespace rangefs
