#include "client_lib/mountd/mountinfo.h"

#include <errno.h>

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/errno_status.h"

namespace rangefs {
namespace mountd {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' &&
        s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 +
                                      (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string FindOption(absl::string_view options, absl::string_view name) {
  for (absl::string_view opt : absl::StrSplit(options, ',')) {
    size_t eq = opt.find('=');
    absl::string_view key = opt.substr(0, eq);
    if (key != name) continue;
    if (eq == absl::string_view::npos) return "1";
    return std::string(opt.substr(eq + 1));
  }
  return "";
}

}  // namespace

std::string MountInfo::dev() const { return absl::StrCat(major, ":", minor); }

bool MountInfo::read_only() const {
  return FindOption(mount_options, "ro") == "1";
}

std::string MountInfo::Option(absl::string_view name) const {
  std::string v = FindOption(mount_options, name);
  if (!v.empty()) return v;
  return FindOption(super_options, name);
}

absl::StatusOr<std::vector<MountInfo>> ParseMountInfo(absl::string_view text) {
  std::vector<MountInfo> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    // id parent major:minor root mount_point options [optional...] - type
    // source super_options
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    auto bad = [&] {
      return absl::InvalidArgumentError(
          absl::StrCat("mountinfo line ", line_no, ": \"", line, "\""));
    };
    if (dash == 0 || dash + 3 > f.size()) return bad();
    MountInfo m;
    std::vector<absl::string_view> dev = absl::StrSplit(f[2], ':');
    if (dev.size() != 2 || !absl::SimpleAtoi(dev[0], &m.major) ||
        !absl::SimpleAtoi(dev[1], &m.minor)) {
      return bad();
    }
    m.root = Unescape(f[3]);
    m.mount_point = Unescape(f[4]);
    m.mount_options = std::string(f[5]);
    m.fs_type = std::string(f[dash + 1]);
    m.source = Unescape(f[dash + 2]);
    if (dash + 3 < f.size()) m.super_options = std::string(f[dash + 3]);
    out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<std::vector<MountInfo>> ReadMountInfo(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, absl::StrCat("open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMountInfo(ss.str());
}

const MountInfo* FindMount(const std::vector<MountInfo>& mounts,
                           absl::string_view mount_point) {
  const MountInfo* found = nullptr;
  for (const MountInfo& m : mounts) {
    if (m.mount_point == mount_point) found = &m;
  }
  return found;
}

}  // namespace mountd
}  // namespace rangefs
