#include "mount/mount_status.h"

#include <dirent.h>

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace rangefs {
namespace mount {

std::string FormatMountStatus(const MountStatus& s) {
  return absl::StrCat(
      "mountpoint = ", s.mountpoint, "\npid = ", s.pid,
      "\ncluster = ", s.cluster, "\ndir = ", s.dir, "\nrevision = ", s.revision,
      "\nindex_revision = ", s.index_revision,
      "\nwatch_connected = ", s.watch_connected ? "true" : "false",
      "\nfiles = ", s.files, "\nopen_files = ", s.open_files,
      "\nreads = ", s.reads, "\nread_errors = ", s.read_errors,
      "\nestale = ", s.estale, "\nstarted_unix_ms = ", s.started_unix_ms,
      "\nupdated_unix_ms = ", s.updated_unix_ms,
      "\ninterval_ms = ", s.interval_ms, "\n");
}

absl::StatusOr<MountStatus> ParseMountStatus(absl::string_view text) {
  std::map<std::string, std::string> kv;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("mount status line ", line_no, ": no '='"));
    }
    kv[std::string(absl::StripAsciiWhitespace(line.substr(0, eq)))] =
        std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  MountStatus s;
  auto str = [&](const char* k, std::string* out) {
    auto it = kv.find(k);
    if (it != kv.end()) *out = it->second;
  };
  absl::Status bad;
  auto num = [&](const char* k, auto* out) {
    auto it = kv.find(k);
    if (it == kv.end()) return;
    if (!absl::SimpleAtoi(it->second, out) && bad.ok()) {
      bad = absl::InvalidArgumentError(absl::StrCat(
          "mount status: ", k, " = ", it->second, " is not a number"));
    }
  };
  str("mountpoint", &s.mountpoint);
  str("cluster", &s.cluster);
  str("dir", &s.dir);
  num("pid", &s.pid);
  num("revision", &s.revision);
  num("index_revision", &s.index_revision);
  num("files", &s.files);
  num("open_files", &s.open_files);
  num("reads", &s.reads);
  num("read_errors", &s.read_errors);
  num("estale", &s.estale);
  num("started_unix_ms", &s.started_unix_ms);
  num("updated_unix_ms", &s.updated_unix_ms);
  num("interval_ms", &s.interval_ms);
  if (!bad.ok()) return bad;
  s.watch_connected = kv["watch_connected"] == "true";
  if (s.mountpoint.empty() || s.pid <= 0) {
    return absl::InvalidArgumentError(
        "mount status: mountpoint and pid are required");
  }
  return s;
}

std::string StatusFilePath(absl::string_view dir,
                           absl::string_view mountpoint) {
  std::string name;
  for (char c : mountpoint) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
        c == '_' || c == '-') {
      name.push_back(c);
    } else {
      absl::StrAppendFormat(&name, "%%%02X", static_cast<unsigned char>(c));
    }
  }
  return absl::StrCat(dir, "/", name, ".status");
}

std::vector<MountStatus> ReadStatusDir(const std::string& dir,
                                       std::vector<std::string>* errors) {
  std::vector<MountStatus> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!absl::EndsWith(name, ".status")) continue;
    const std::string path = absl::StrCat(dir, "/", name);
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    absl::StatusOr<MountStatus> s = ParseMountStatus(ss.str());
    if (s.ok()) {
      out.push_back(*std::move(s));
    } else if (errors != nullptr) {
      errors->push_back(absl::StrCat(path, ": ", s.status().message()));
    }
  }
  closedir(d);
  return out;
}

}  // namespace mount
}  // namespace rangefs
