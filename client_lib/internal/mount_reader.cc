#include "client_lib/internal/mount_reader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/crc32c.h"
#include "base/status_macros.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace client_internal {
namespace {

uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

absl::Status MountReader::Plan(const MountPiece& piece, absl::string_view dir,
                               MountPlan* plan) {
  plan->path.mount.assign(dir.data(), dir.size());  // safe when aliased
  plan->path.object.assign(piece.object);
  plan->sums.reset();
  plan->direct = o_direct_;
  uint64_t align = plan->direct ? kDirectIoAlignment : 1;
  if (piece.verify) {
    RANGEFS_ASSIGN_OR_RETURN(plan->sums,
                             Sidecar(plan->path.mount, piece.object));
    const uint64_t bs = plan->sums->block_size;
    if (bs == 0 || (plan->direct && bs % align != 0)) {
      return absl::DataLossError(absl::StrCat("sidecar of ", plan->path.full(),
                                              ": bad block size ", bs));
    }
    align = bs;
  }
  plan->start = piece.offset / align * align;
  plan->end = RoundUp(piece.offset + piece.length, align);
  if (plan->sums != nullptr) {
    plan->end = std::min(plan->end, plan->sums->object_size);
  }
  if (plan->end < piece.offset + piece.length) {
    return absl::DataLossError(absl::StrCat(
        plan->path.full(), " is ", plan->end,
        " bytes by its sidecar; need up to ", piece.offset + piece.length));
  }
  plan->span = static_cast<size_t>(plan->end - plan->start);
  plan->alloc = static_cast<size_t>(RoundUp(plan->span, kDirectIoAlignment));
  plan->lead = static_cast<size_t>(piece.offset - plan->start);
  return absl::OkStatus();
}

absl::StatusOr<size_t> MountReader::Read(const MountPlan& plan, char* buf) {
  return fs_->PRead(plan.path, plan.start,
                    absl::MakeSpan(buf, plan.direct ? plan.alloc : plan.span),
                    {.direct = plan.direct});
}

absl::StatusOr<size_t> MountReader::Check(const MountPiece& piece,
                                          const MountPlan& plan, const char* p,
                                          size_t n, bool* checksum_failure) {
  if (n < plan.lead + piece.length) {
    return absl::DataLossError(absl::StrCat(
        "short read of ", plan.path.full(), " at ", piece.offset, ": ",
        n - std::min(n, plan.lead), " of ", piece.length, " bytes"));
  }
  if (plan.sums != nullptr) {
    const node::Checksums& sums = *plan.sums;
    const uint64_t bs = sums.block_size;
    for (uint64_t off = plan.start; off < plan.end; off += bs) {
      const uint64_t blk = off / bs;
      const size_t len = static_cast<size_t>(std::min(bs, plan.end - off));
      if (blk >= sums.block_crc32c.size() ||
          Crc32cExtend(0, p + (off - plan.start), len) !=
              sums.block_crc32c[blk]) {
        *checksum_failure = true;
        return absl::DataLossError(
            absl::StrCat("checksum mismatch in ", plan.path.full(), " block ",
                         blk, " (bytes ", off, "..", off + len, ")"));
      }
    }
  }
  return piece.length;
}

bool MountReader::HasSidecar(const std::string& object) {
  absl::MutexLock l(&mu_);
  return sidecars_.contains(object);
}

absl::StatusOr<std::shared_ptr<const node::Checksums>> MountReader::Sidecar(
    const std::string& dir, const std::string& object) {
  {
    absl::MutexLock l(&mu_);
    auto it = sidecars_.find(object);
    if (it != sidecars_.end()) return it->second;
  }
  const MountPath path{dir, node::SidecarPathFor(object)};
  RANGEFS_ASSIGN_OR_RETURN(std::string data, fs_->ReadFile(path));
  absl::StatusOr<node::Checksums> c = node::DecodeSidecar(data);
  if (!c.ok()) {
    return absl::DataLossError(
        absl::StrCat("sidecar ", path.full(), ": ", c.status().message()));
  }
  auto sp = std::make_shared<const node::Checksums>(std::move(*c));
  absl::MutexLock l(&mu_);
  sidecars_[object] = sp;
  return sp;
}

}  // namespace client_internal
}  // namespace rangefs
