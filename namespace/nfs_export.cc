#include "namespace/nfs_export.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rangefs {
namespace ns {
namespace {

constexpr absl::string_view kScheme = "nfs://";

absl::Status Bad(absl::string_view url, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("NFS export URL \"", absl::CEscape(url.substr(0, 128)),
                   "\": ", why, " (want nfs://host[:port]/export)"));
}

bool HostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool Ipv6Char(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
         (c >= '0' && c <= '9') || c == ':' || c == '.';
}

// "host" or "[v6]"; returns the rest after it (":port/..." or "/...").
absl::Status ParseHost(absl::string_view url, absl::string_view* rest,
                       NfsUrl* out) {
  absl::string_view r = *rest;
  size_t end = 0;
  if (absl::StartsWith(r, "[")) {
    end = r.find(']');
    if (end == absl::string_view::npos) return Bad(url, "unclosed '[' in host");
    for (char c : r.substr(1, end - 1)) {
      if (!Ipv6Char(c)) return Bad(url, "bad character in IPv6 host");
    }
    if (end == 1) return Bad(url, "empty host");
    ++end;
  } else {
    while (end < r.size() && r[end] != ':' && r[end] != '/') {
      if (!HostChar(r[end])) {
        return Bad(url, absl::StrCat("host character at position ",
                                     kScheme.size() + end,
                                     " is not one of [A-Za-z0-9.-_]"));
      }
      ++end;
    }
    if (end == 0) return Bad(url, "empty host");
  }
  if (end > 255) return Bad(url, "host longer than 255 characters");
  out->host = std::string(r.substr(0, end));
  *rest = r.substr(end);
  return absl::OkStatus();
}

absl::Status ParsePort(absl::string_view url, absl::string_view text,
                       absl::string_view what, int* port) {
  if (text.empty() || text.size() > 5 || !absl::SimpleAtoi(text, port) ||
      *port < 1 || *port > 65535) {
    return Bad(url, absl::StrCat(what, " \"", absl::CEscape(text),
                                 "\" is not 1..65535"));
  }
  return absl::OkStatus();
}

absl::Status CheckExportPath(absl::string_view url, absl::string_view path) {
  if (!absl::StartsWith(path, "/")) return Bad(url, "no export path");
  for (char c : path) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x21 || u == 0x7f || c == '%' || c == '#') {
      return Bad(url, "export path has a control character, space, '%' or '#'");
    }
  }
  if (path == "/") return absl::OkStatus();
  if (absl::EndsWith(path, "/")) return Bad(url, "export path ends in '/'");
  for (absl::string_view part : absl::StrSplit(path.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return Bad(url, "export path is not normalized (\"//\", \".\", \"..\")");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseQuery(absl::string_view url, absl::string_view query,
                        NfsUrl* out) {
  for (absl::string_view kv : absl::StrSplit(query, '&')) {
    if (!absl::ConsumePrefix(&kv, "mountport=")) {
      return Bad(url, absl::StrCat("unknown query parameter \"",
                                   absl::CEscape(kv.substr(0, 32)),
                                   "\" (only mountport=P)"));
    }
    if (out->mount_port != 0) return Bad(url, "mountport given twice");
    absl::Status s = ParsePort(url, kv, "mountport", &out->mount_port);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NfsUrl> ParseNfsUrl(absl::string_view url) {
  if (url.size() > kMaxNfsUrlBytes) {
    return Bad(url, absl::StrCat("longer than ", kMaxNfsUrlBytes, " bytes"));
  }
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, kScheme)) {
    return Bad(url, "scheme is not nfs://");
  }
  NfsUrl out;
  if (absl::Status s = ParseHost(url, &rest, &out); !s.ok()) return s;
  if (absl::ConsumePrefix(&rest, ":")) {
    const size_t slash = rest.find('/');
    if (absl::Status s =
            ParsePort(url, rest.substr(0, slash), "port", &out.port);
        !s.ok()) {
      return s;
    }
    rest = slash == absl::string_view::npos ? "" : rest.substr(slash);
  }
  const size_t q = rest.find('?');
  if (q != absl::string_view::npos) {
    if (absl::Status s = ParseQuery(url, rest.substr(q + 1), &out); !s.ok()) {
      return s;
    }
    rest = rest.substr(0, q);
  }
  if (absl::Status s = CheckExportPath(url, rest); !s.ok()) return s;
  out.export_path = std::string(rest);
  return out;
}

absl::Status ValidateNfsVersion(absl::string_view version) {
  if (version == "3" || version == "4" || version == "4.1") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("NFS version \"", absl::CEscape(version.substr(0, 32)),
                   "\" is not 3, 4 or 4.1"));
}

absl::Status ValidateNfsExport(const v1::NfsExport& e) {
  if (absl::StatusOr<NfsUrl> u = ParseNfsUrl(e.url()); !u.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("nfs_export.url: ", u.status().message()));
  }
  if (absl::Status s = ValidateNfsVersion(e.version()); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("nfs_export.version: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace ns
}  // namespace rangefs
