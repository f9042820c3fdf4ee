#include "client_lib/internal/nfs_node.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client_lib/internal/mount_reader.h"
#include "storage_node/sidecar_format.h"

namespace rangefs {
namespace client_internal {
namespace {

// A sidecar is read whole, at most this much (4 bytes a block: 16 MiB
// covers objects of 256 GiB at 64 KiB blocks).
constexpr uint64_t kMaxSidecar = uint64_t{16} << 20;

// The object's path beneath the export, or INVALID_ARGUMENT (layouts are
// untrusted: no escaping the export).
absl::StatusOr<std::string> ExportPath(const NfsExport& e,
                                       const std::string& object) {
  if (object.empty() || object[0] == '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "object path \"", object, "\" on ", e.Describe(), " is not relative"));
  }
  for (absl::string_view part : absl::StrSplit(object, '/')) {
    if (part == ".." || part == ".") {
      return absl::InvalidArgumentError(absl::StrCat("object path \"", object,
                                                     "\" on ", e.Describe(),
                                                     " has \"", part, "\""));
    }
  }
  return absl::StrCat("/", object);
}

uint64_t RoundUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

std::atomic<void (*)(NfsNode&)> before_read_for_test{nullptr};

}  // namespace

absl::StatusOr<std::shared_ptr<NfsNode>> NfsNode::Create(
    const std::string& node, NfsExport e, int connections, NfsLoopPool& pool) {
  static std::atomic<uint64_t> seq{0};
  std::vector<std::shared_ptr<NfsLink>> links;
  for (int i = 0; i < std::max(1, connections); ++i) {
    absl::StatusOr<std::shared_ptr<NfsLink>> l = pool.Attach(
        e, absl::StrCat("rangefs-", getpid(), "-", node, "-", seq++));
    if (!l.ok()) {
      for (const auto& made : links) made->Stop();
      return l.status();
    }
    links.push_back(std::move(*l));
  }
  return std::shared_ptr<NfsNode>(new NfsNode(std::move(e), std::move(links)));
}

NfsLink& NfsNode::Pick() const {
  NfsLink* best = links_[0].get();
  for (const auto& l : links_) {
    if (l->load() < best->load()) best = l.get();
  }
  return *best;
}

void NfsNode::Stop() {
  stopped_.store(true, std::memory_order_release);
  for (const auto& l : links_) l->Stop();
}

void NfsNode::SetBeforeReadForTest(void (*hook)(NfsNode&)) {
  before_read_for_test.store(hook, std::memory_order_release);
}

int NfsNode::mounts() const {
  int n = 0;
  for (const auto& l : links_) n += l->mounts();
  return n;
}

bool NfsNode::Refuse(absl::Status why, bool checksum_failure, NfsDone done) {
  auto r = std::make_unique<NfsRequest>();
  r->refused = std::move(why);
  r->done = [checksum_failure, done = std::move(done)](const absl::Status& s,
                                                       const char*, size_t) {
    done(s, nullptr, checksum_failure);
  };
  return Pick().Submit(std::move(r));
}

std::shared_ptr<const node::Checksums> NfsNode::CachedSidecar(
    const std::string& o) {
  absl::MutexLock l(&mu_);
  auto it = sidecars_.find(o);
  return it == sidecars_.end() ? nullptr : it->second;
}

bool NfsNode::Read(NfsPiece p, NfsDone done) {
  if (auto* hook = before_read_for_test.load(std::memory_order_acquire)) {
    hook(*this);
  }
  if (!p.verify) return ReadPlanned(p, nullptr, std::move(done));
  std::shared_ptr<const node::Checksums> sums = CachedSidecar(p.object);
  if (sums != nullptr) return ReadPlanned(p, std::move(sums), std::move(done));
  // Kept for the sidecar's answer.
  auto piece = std::make_shared<NfsPiece>(std::move(p));
  absl::StatusOr<std::string> path =
      ExportPath(export_, node::SidecarPathFor(piece->object));
  if (!path.ok()) return Refuse(path.status(), false, std::move(done));
  auto r = std::make_unique<NfsRequest>();
  r->path = std::move(*path);
  r->length = kMaxSidecar;
  r->to_eof = true;
  r->deadline = piece->deadline;
  // On the loop's thread, which holds no caller's lock: a refusal of the
  // planned read (the node stopped meanwhile) is answered here.
  r->done = [this, piece, done = std::make_shared<NfsDone>(std::move(done))](
                const absl::Status& s, const char* data, size_t n) {
    if (!s.ok()) {
      (*done)(s, nullptr, false);
      return;
    }
    absl::StatusOr<node::Checksums> c =
        node::DecodeSidecar(absl::string_view(data, n));
    if (!c.ok()) {
      (*done)(absl::DataLossError(
                  absl::StrCat("sidecar of ", export_.Describe(), " ",
                               piece->object, ": ", c.status().message())),
              nullptr, true);
      return;
    }
    auto sums = std::make_shared<const node::Checksums>(std::move(*c));
    {
      absl::MutexLock l(&mu_);
      sidecars_[piece->object] = sums;
    }
    if (!ReadPlanned(*piece, std::move(sums),
                     [done](const absl::StatusOr<size_t>& r, const char* out,
                            bool checksum_failure) {
                       (*done)(r, out, checksum_failure);
                     })) {
      (*done)(absl::UnavailableError(absl::StrCat(
                  "NFS reads of ", export_.Describe(), " stopped")),
              nullptr, false);
    }
  };
  return Pick().Submit(std::move(r));
}

bool NfsNode::ReadPlanned(const NfsPiece& p,
                          std::shared_ptr<const node::Checksums> sums,
                          NfsDone done) {
  absl::StatusOr<std::string> path = ExportPath(export_, p.object);
  if (!path.ok()) return Refuse(path.status(), false, std::move(done));
  // The span to read: the piece, widened to whole sidecar blocks when
  // verifying (MountReader::Plan's rule, without O_DIRECT).
  MountPlan plan;
  plan.path = {describe_, p.object};
  plan.start = p.offset;
  plan.end = p.offset + p.length;
  if (sums != nullptr) {
    const uint64_t bs = sums->block_size;
    if (bs == 0) {
      return Refuse(absl::DataLossError(absl::StrCat(
                        "sidecar of ", plan.path.full(), ": block size 0")),
                    true, std::move(done));
    }
    plan.start = p.offset / bs * bs;
    plan.end = std::min(RoundUp(p.offset + p.length, bs), sums->object_size);
    if (plan.end < p.offset + p.length) {
      return Refuse(
          absl::DataLossError(absl::StrCat(plan.path.full(), " is ", plan.end,
                                           " bytes by its sidecar; need up to ",
                                           p.offset + p.length)),
          true, std::move(done));
    }
    plan.sums = std::move(sums);
  }
  plan.span = static_cast<size_t>(plan.end - plan.start);
  plan.alloc = plan.span;
  plan.lead = static_cast<size_t>(p.offset - plan.start);
  auto r = std::make_unique<NfsRequest>();
  r->path = std::move(*path);
  r->offset = plan.start;
  r->length = plan.span;
  r->deadline = p.deadline;
  // The plan travels in `done` itself (one allocation less a read).
  r->done = [offset = p.offset, length = p.length, verify = p.verify,
             plan = std::move(plan), done = std::move(done)](
                const absl::Status& s, const char* data, size_t n) {
    if (!s.ok()) {
      done(s, nullptr, false);
      return;
    }
    bool checksum_failure = false;
    const MountPiece piece{plan.path.object, offset, length, verify};
    absl::StatusOr<size_t> len =
        MountReader::Check(piece, plan, data, n, &checksum_failure);
    done(len, len.ok() ? data + plan.lead : nullptr, checksum_failure);
  };
  return Pick().Submit(std::move(r));
}

}  // namespace client_internal
}  // namespace rangefs
