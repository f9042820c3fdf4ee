// File::LocalSpans (file.h): where a range's bytes lie in object files a
// caller may read itself (rangefs-mount splices them into FUSE replies).
// The pieces are planned as a Read plans them (ns::MapRange), each on the
// replica Dispatch would choose first (this host's node while admissible,
// else the policy's pick among the admissible ones); anything a Read would
// check or work around (verification, erasure coding, a mount not known
// good, an object not open yet, a network file system) is refused with
// FAILED_PRECONDITION, and the caller reads the usual way.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "client_lib/file.h"
#include "client_lib/internal/client_impl.h"
#include "client_lib/internal/node_runtime.h"
#include "client_lib/internal/ring_file.h"
#include "namespace/cached_layout.h"
#include "namespace/ec_layout.h"

namespace rangefs {

absl::StatusOr<std::vector<ObjectSpan>> File::LocalSpans(uint64_t, uint64_t) {
  return absl::UnimplementedError(
      absl::StrCat(path(), ": this File has no local spans"));
}

namespace client_internal {
namespace {

ObjectSpan::Residency Residency(int fd, uint64_t offset, uint64_t length) {
  switch (PageCachedRange(fd, offset, length)) {
    case PageCached::kYes:
      return ObjectSpan::Residency::kCached;
    case PageCached::kNo:
      return ObjectSpan::Residency::kNotCached;
    case PageCached::kUnknown:
      break;
  }
  return ObjectSpan::Residency::kUnknown;
}

}  // namespace

std::shared_ptr<RingFile> NodeRuntime::LocalObject(const std::string& object,
                                                   uint64_t offset,
                                                   uint64_t length) {
  // Not counted as a read of the node: the caller may not read it.
  const ClientOptions& o = client_->options();
  if (o.data_path == DataPath::kAgent || o.o_direct || mount_down()) {
    return nullptr;
  }
  if (o.data_path == DataPath::kAuto &&
      mount_state_.load(std::memory_order_relaxed) != 1) {
    return nullptr;  // not known good yet: the node's threads check it
  }
  MountPlan plan;
  const MountPiece piece{object, offset, length, /*verify=*/false};
  if (!mount_reader_.Plan(piece, mount_dir(), &plan).ok()) return nullptr;
  std::shared_ptr<RingFile> file = OpenRingFd(plan.path, /*direct=*/false);
  if (file == nullptr || !file->caller_safe()) return nullptr;
  return file;
}

absl::StatusOr<std::vector<ObjectSpan>> ClientImpl::LocalSpans(
    FileImpl* file, uint64_t offset, uint64_t length) {
  if (options_.verify != VerifyMode::kOff) {
    return absl::FailedPreconditionError(
        "verifying client: bytes are read and checked, not handed out");
  }
  if (!core_->RingWanted()) {
    return absl::FailedPreconditionError("no mount reads on this client");
  }
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           file->Current());
  const v1::FileLayout& layout = l->header;
  if (ns::IsErasureCoded(layout)) {
    return absl::FailedPreconditionError(
        absl::StrCat(l->path, " is erasure-coded"));
  }
  if (offset > layout.size()) {
    return absl::OutOfRangeError(absl::StrCat("spans at ", offset,
                                              " past the end of ", l->path,
                                              " (size ", layout.size(), ")"));
  }
  length = std::min(length, layout.size() - offset);
  RANGEFS_ASSIGN_OR_RETURN(ns::MappedRange m,
                           ns::MapRange(*l, offset, length, 0));
  static thread_local absl::InsecureBitGen bitgen;
  std::unique_ptr<lb::Picker> picker;
  std::vector<ObjectSpan> out;
  out.reserve(m.pieces.size());
  for (const ns::Piece& p : m.pieces) {
    const auto& replicas = *p.replicas;
    absl::InlinedVector<lb::Candidate, 4> cands;
    absl::InlinedVector<int, 4> index;
    int chosen = -1;
    for (int r = 0; r < replicas.size(); ++r) {
      NodeRuntime* n = Node(replicas[r].node_id());
      if (!Admissible(n)) continue;
      if (n->local()) {
        chosen = r;
        break;
      }
      NodeCounters& c = n->counters();
      cands.push_back({.node = n->id(),
                       .inflight = static_cast<int>(c.inflight.load()),
                       .outstanding_bytes = c.outstanding_bytes.load(),
                       .ewma_latency = latency_.Ewma(n->latency_handle())});
      index.push_back(r);
    }
    if (chosen < 0 && !cands.empty()) {
      if (picker == nullptr) picker = policy_->NewPicker(bitgen);
      chosen = index[picker->Pick(cands,
                                  absl::HashOf(layout.file_id(), p.unit) | 1)];
    }
    if (chosen < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          l->path, " bytes at ", p.offset, ": no healthy replica"));
    }
    const v1::Replica& rep = replicas[chosen];
    NodeRuntime* n = Node(rep.node_id());
    std::shared_ptr<RingFile> f =
        n->LocalObject(rep.object(), p.ObjectOffset(rep), p.length);
    if (f == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(l->path, " bytes at ", p.offset, ": node ", n->id(),
                       "'s object is not open on a local file system"));
    }
    const int fd = f->fd();
    if (!out.empty() && out.back().fd == fd &&
        out.back().object_offset + out.back().length == p.ObjectOffset(rep)) {
      out.back().length += p.length;  // contiguous in one object
      continue;
    }
    out.push_back(ObjectSpan{.fd = fd,
                             .object_offset = p.ObjectOffset(rep),
                             .length = p.length,
                             .hold = std::move(f)});
  }
  for (ObjectSpan& s : out) {
    s.residency = Residency(s.fd, s.object_offset, s.length);
  }
  return out;
}

}  // namespace client_internal
}  // namespace rangefs
