#include "client_lib/testing/fault_fs.h"

#include <algorithm>
#include <cstring>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace rangefs {
namespace {

// The lexical half of PosixFs's confinement (there are no symlinks here).
absl::Status CheckObject(const MountPath& path) {
  if (path.object.empty() || path.object[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("object path \"", path.object, "\" must be relative"));
  }
  for (absl::string_view c : absl::StrSplit(path.object, '/')) {
    if (c.empty() || c == "." || c == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("object path \"", path.object, "\" leaves its mount"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void MemoryFs::AddFile(const std::string& path, std::string data) {
  absl::MutexLock l(&mu_);
  files_[path] = std::move(data);
  for (size_t p = path.rfind('/'); p != std::string::npos && p > 0;
       p = path.rfind('/', p - 1)) {
    dirs_[path.substr(0, p)] = true;
  }
}

void MemoryFs::CorruptByte(const std::string& path, uint64_t offset) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it != files_.end() && offset < it->second.size()) {
    it->second[offset] = static_cast<char>(it->second[offset] ^ 1);
  }
}

void MemoryFs::RemoveDir(const std::string& dir) {
  absl::MutexLock l(&mu_);
  dirs_[dir] = false;
  for (auto it = files_.begin(); it != files_.end();) {
    if (absl::StartsWith(it->first, dir + "/")) {
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<size_t> MemoryFs::PRead(const MountPath& path, uint64_t offset,
                                       absl::Span<char> dst,
                                       const FsReadOptions&) {
  reads_.fetch_add(1);
  RANGEFS_RETURN_IF_ERROR(CheckObject(path));
  absl::MutexLock l(&mu_);
  auto it = files_.find(path.full());
  if (it == files_.end()) {
    return absl::NotFoundError(
        absl::StrCat("open ", path.full(), ": no such file"));
  }
  const std::string& d = it->second;
  if (offset >= d.size()) return size_t{0};
  size_t n = std::min<size_t>(dst.size(), d.size() - offset);
  memcpy(dst.data(), d.data() + offset, n);
  return n;
}

absl::StatusOr<std::string> MemoryFs::ReadFile(const MountPath& path) {
  RANGEFS_RETURN_IF_ERROR(CheckObject(path));
  absl::MutexLock l(&mu_);
  auto it = files_.find(path.full());
  if (it == files_.end()) {
    return absl::NotFoundError(
        absl::StrCat("open ", path.full(), ": no such file"));
  }
  return it->second;
}

absl::Status MemoryFs::CheckDir(const std::string& path) {
  absl::MutexLock l(&mu_);
  auto it = dirs_.find(path);
  if (it == dirs_.end() || !it->second) {
    return absl::NotFoundError(absl::StrCat("stat mount ", path));
  }
  return absl::OkStatus();
}

FaultyFs::~FaultyFs() {
  Release();
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](int* inside) { return *inside == 0; }, &inside_));
}

void FaultyFs::AddRule(FaultRule rule) {
  absl::MutexLock l(&mu_);
  released_ = false;
  rules_.push_back({std::move(rule), 0});
}

void FaultyFs::ClearRules() {
  absl::MutexLock l(&mu_);
  rules_.clear();
}

void FaultyFs::Release() {
  absl::MutexLock l(&mu_);
  released_ = true;
}

int FaultyFs::max_inside() {
  absl::MutexLock l(&mu_);
  return max_inside_;
}

void FaultyFs::ResetMaxInside() {
  absl::MutexLock l(&mu_);
  max_inside_ = inside_;
}

int FaultyFs::blocked_now() {
  absl::MutexLock l(&mu_);
  return blocked_;
}

bool FaultyFs::WaitForBlocked(int n, absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  struct Arg {
    int* blocked;
    int n;
  } arg{&blocked_, n};
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](Arg* a) { return *a->blocked >= a->n; }, &arg),
      timeout);
}

absl::StatusOr<size_t> FaultyFs::PRead(const MountPath& path, uint64_t offset,
                                       absl::Span<char> dst,
                                       const FsReadOptions& options) {
  FaultRule hit;
  bool matched = false;
  {
    absl::MutexLock l(&mu_);
    max_inside_ = std::max(max_inside_, ++inside_);
    for (Rule& r : rules_) {
      if (!r.rule.path_contains.empty() &&
          !absl::StrContains(path.full(), r.rule.path_contains)) {
        continue;
      }
      ++r.matched;
      if (r.rule.nth != 0 && r.matched != r.rule.nth) continue;
      hit = r.rule;
      matched = true;
      break;
    }
    if (matched && hit.action == FaultAction::kBlock) {
      ++blocked_;
      mu_.Await(absl::Condition(&released_));
      --blocked_;
    }
  }
  if (matched) faults_.fetch_add(1);
  absl::StatusOr<size_t> result;
  if (matched && hit.action == FaultAction::kFail) {
    result = hit.error;
  } else {
    if (matched && hit.action == FaultAction::kDelay) {
      absl::Duration d = hit.delay;
      if (hit.jitter > absl::ZeroDuration()) {
        thread_local absl::InsecureBitGen gen;
        d += absl::Nanoseconds(absl::Uniform<int64_t>(
            gen, 0, absl::ToInt64Nanoseconds(hit.jitter)));
      }
      absl::SleepFor(d);
    }
    result = base_->PRead(path, offset, dst, options);
  }
  absl::MutexLock l(&mu_);
  --inside_;
  return result;
}

}  // namespace rangefs
