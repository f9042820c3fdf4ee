#include "client_lib/mountd/mount_status.h"

#include <errno.h>
#include <stdio.h>

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"

namespace rangefs {
namespace mountd {

namespace {

std::string Clean(absl::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

absl::string_view MountHealthName(MountHealth h) {
  switch (h) {
    case MountHealth::kHealthy:
      return "healthy";
    case MountHealth::kUnhealthy:
      return "unhealthy";
    case MountHealth::kMounting:
      return "mounting";
    case MountHealth::kFailed:
      return "failed";
  }
  return "unknown";
}

const MountStatusEntry* MountStatusFile::Find(absl::string_view node_id) const {
  for (const MountStatusEntry& e : mounts) {
    if (e.node_id == node_id) return &e;
  }
  return nullptr;
}

std::string FormatMountStatus(const MountStatusFile& f) {
  std::string out = "# rangefs-mountd mount status v1\n";
  absl::StrAppend(&out, "updated_unix_ms=", f.updated_unix_ms,
                  "\tpass=", f.pass, "\tmounter=", Clean(f.mounter), "\n");
  for (const MountStatusEntry& e : f.mounts) {
    absl::StrAppend(
        &out, "node=", Clean(e.node_id), "\tstate=", MountHealthName(e.health),
        "\tpath=", Clean(e.path), "\tsince_unix_ms=", e.since_unix_ms,
        "\thung_since_unix_ms=", e.hung_since_unix_ms,
        "\treadahead_kb=", Clean(e.readahead_kb), "\terror=", Clean(e.error),
        "\n");
  }
  return out;
}

absl::StatusOr<MountStatusFile> ParseMountStatus(absl::string_view text) {
  MountStatusFile f;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::pair<std::string, std::string>> kv;
    for (absl::string_view field : absl::StrSplit(line, '\t')) {
      size_t eq = field.find('=');
      if (eq == absl::string_view::npos) continue;
      kv.emplace_back(std::string(field.substr(0, eq)),
                      std::string(field.substr(eq + 1)));
    }
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("mount status line ", line_no, ": ", why));
    };
    if (!kv.empty() && kv[0].first == "node") {
      MountStatusEntry e;
      bool have_state = false;
      for (const auto& [k, v] : kv) {
        if (k == "node") e.node_id = v;
        if (k == "path") e.path = v;
        if (k == "error") e.error = v;
        if (k == "readahead_kb") e.readahead_kb = v;
        if (k == "since_unix_ms") (void)absl::SimpleAtoi(v, &e.since_unix_ms);
        if (k == "hung_since_unix_ms" &&
            (!absl::SimpleAtoi(v, &e.hung_since_unix_ms) ||
             e.hung_since_unix_ms < 0)) {
          e.hung_since_unix_ms = 0;
        }
        if (k == "state") {
          for (MountHealth h : {MountHealth::kHealthy, MountHealth::kUnhealthy,
                                MountHealth::kMounting, MountHealth::kFailed}) {
            if (v == MountHealthName(h)) {
              e.health = h;
              have_state = true;
            }
          }
          if (!have_state) return bad(absl::StrCat("unknown state ", v));
        }
      }
      if (e.node_id.empty()) return bad("empty node");
      if (!have_state) return bad("no state");
      if (e.hung() && e.health == MountHealth::kHealthy) {
        e.health = MountHealth::kUnhealthy;  // hung is never healthy
      }
      f.mounts.push_back(std::move(e));
    } else {
      for (const auto& [k, v] : kv) {
        if (k == "updated_unix_ms")
          (void)absl::SimpleAtoi(v, &f.updated_unix_ms);
        if (k == "pass") (void)absl::SimpleAtoi(v, &f.pass);
        if (k == "mounter") f.mounter = v;
      }
    }
  }
  return f;
}

absl::StatusOr<MountStatusFile> ReadMountStatus(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, absl::StrCat("open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMountStatus(ss.str());
}

absl::Status WriteMountStatus(const std::string& path,
                              const MountStatusFile& file) {
  std::string tmp = path + ".tmp";
  std::string text = FormatMountStatus(file);
  FILE* f = fopen(tmp.c_str(), "we");
  if (f == nullptr) return ErrnoStatus(errno, absl::StrCat("create ", tmp));
  size_t n = fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : errno;
  if (fclose(f) != 0 && err == 0) err = errno;
  if (err != 0) return ErrnoStatus(err, absl::StrCat("write ", tmp));
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace mountd
}  // namespace rangefs
