#include "client_lib/internal/nfs_export.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rangefs {
namespace client_internal {
namespace {

constexpr size_t kMaxUrl = 4096;

absl::Status Bad(absl::string_view node, absl::string_view url,
                 absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("node ", node, ": NFS export \"", absl::CEscape(url),
                   "\" in its record: ", why));
}

bool HostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '-' || c == '_';
}

bool Ipv6Char(char c) {
  return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == ':' ||
         c == '.';
}

// Splits "host[:port]" (host possibly "[v6]"); empty `why` on success.
std::string SplitAuthority(absl::string_view a, NfsExport* e) {
  absl::string_view host = a;
  absl::string_view port;
  if (absl::StartsWith(a, "[")) {
    const size_t close = a.find(']');
    if (close == absl::string_view::npos) return "unclosed '[' in the host";
    host = a.substr(0, close + 1);
    for (char c : host.substr(1, host.size() - 2)) {
      if (!Ipv6Char(c)) return "bad character in the IPv6 address";
    }
    absl::string_view rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return "junk after the IPv6 address";
      port = rest.substr(1);
      if (port.empty()) return "empty port";
    }
  } else {
    const size_t colon = a.find(':');
    if (colon != absl::string_view::npos) {
      host = a.substr(0, colon);
      port = a.substr(colon + 1);
      if (port.empty()) return "empty port";
    }
    for (char c : host) {
      if (!HostChar(c)) return "bad character in the host";
    }
  }
  if (host.empty() || host == "[]") return "no host";
  e->host = std::string(host);
  if (!port.empty()) {
    int p = 0;
    if (!absl::SimpleAtoi(port, &p) || p < 1 || p > 65535 ||
        !absl::ascii_isdigit(static_cast<unsigned char>(port[0]))) {
      return absl::StrCat("bad port \"", absl::CEscape(port), "\"");
    }
    e->port = p;
  }
  return "";
}

std::string CheckPath(absl::string_view path) {
  if (path.empty() || path[0] != '/') return "the export path is not absolute";
  for (char c : path) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "control character in the export path";
    if (c == '?' || c == '#' || c == '&' || c == '%' || c == '\\') {
      return absl::StrCat("character '", std::string(1, c),
                          "' in the export path");
    }
  }
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return "\"..\" in the export path";
  }
  return "";
}

}  // namespace

absl::StatusOr<NfsExport> ParseNfsExport(absl::string_view node,
                                         absl::string_view url,
                                         absl::string_view version) {
  if (url.size() > kMaxUrl) return Bad(node, url.substr(0, 64), "too long");
  NfsExport e;
  if (version == "3") {
    e.version = 3;
  } else if (version.empty() || version == "4" || version == "4.1") {
    e.version = 4;
  } else {
    return Bad(node, url,
               absl::StrCat("NFS version \"", absl::CEscape(version),
                            "\" (want 3, 4 or 4.1)"));
  }
  constexpr absl::string_view kScheme = "nfs://";
  if (!absl::StartsWith(url, kScheme)) return Bad(node, url, "not nfs://");
  absl::string_view rest = url.substr(kScheme.size());
  const size_t q = rest.find('?');
  absl::string_view query;
  if (q != absl::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const size_t slash = rest.find('/');
  if (slash == absl::string_view::npos) return Bad(node, url, "no export path");
  std::string why = SplitAuthority(rest.substr(0, slash), &e);
  if (why.empty()) why = CheckPath(rest.substr(slash));
  if (why.empty() && q != absl::string_view::npos) {
    constexpr absl::string_view kMountPort = "mountport=";
    int p = 0;
    if (!absl::StartsWith(query, kMountPort) ||
        !absl::SimpleAtoi(query.substr(kMountPort.size()), &p) || p < 1 ||
        p > 65535) {
      why = "the only option allowed is mountport=<1..65535>";
    }
    e.mount_port = p;
  }
  if (!why.empty()) return Bad(node, url, why);
  absl::string_view path = rest.substr(slash);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  e.path = std::string(path);
  return e;
}

std::string NfsExport::LibnfsUrl() const {
  std::string url = absl::StrCat("nfs://", host, path, "?version=", version);
  if (port != 0) absl::StrAppend(&url, "&nfsport=", port);
  if (mount_port != 0) absl::StrAppend(&url, "&mountport=", mount_port);
  return url;
}

std::string NfsExport::Describe() const {
  return absl::StrCat("nfs://", host, port != 0 ? absl::StrCat(":", port) : "",
                      path, " (v", version, ")");
}

}  // namespace client_internal
}  // namespace rangefs
