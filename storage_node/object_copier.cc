#include "storage_node/object_copier.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/thread_priority.h"
#include "storage_node/object_writer.h"

namespace rangefs {
namespace node {
namespace {

// Peer clients kept; past it the cache starts over (addresses come from
// callers, so it must not grow without bound).
constexpr size_t kMaxPeers = 256;
// Piece buffers kept for later copies (two per copy running at once).
constexpr size_t kMaxFreeBuffers = 16;

// DATA_LOSS unless the source's sidecar reply is self-consistent.
absl::Status CheckSourceChecksums(const std::string& where,
                                  const ChecksumObjectResponse& c) {
  if (c.block_size() < kMinBlockSize || c.block_size() > kMaxBlockSize) {
    return absl::DataLossError(
        absl::StrCat(where, ": block size ", c.block_size(), " out of range"));
  }
  const uint64_t blocks = (c.size() + c.block_size() - 1) / c.block_size();
  if (static_cast<uint64_t>(c.block_crc32c_size()) != blocks) {
    return absl::DataLossError(absl::StrCat(
        where, ": ", c.block_crc32c_size(), " block checksums for ", c.size(),
        " bytes in blocks of ", c.block_size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompareChecksums(const std::string& path,
                              const ChecksumObjectResponse& want,
                              const Checksums& got) {
  if (got.object_size != want.size() ||
      got.block_crc32c.size() !=
          static_cast<size_t>(want.block_crc32c_size())) {
    return absl::DataLossError(absl::StrCat(
        "copy of ", path, ": got ", got.object_size, " bytes in ",
        got.block_crc32c.size(), " blocks, the source's sidecar says ",
        want.size(), " bytes in ", want.block_crc32c_size()));
  }
  for (size_t b = 0; b < got.block_crc32c.size(); ++b) {
    if (got.block_crc32c[b] != want.block_crc32c(static_cast<int>(b))) {
      return absl::DataLossError(absl::StrCat(
          "copy of ", path, ": block ", b, " has crc32c ",
          absl::Hex(got.block_crc32c[b]), ", the source's sidecar says ",
          absl::Hex(want.block_crc32c(static_cast<int>(b)))));
    }
  }
  if (got.crc32c != want.crc32c()) {
    return absl::DataLossError(absl::StrCat(
        "copy of ", path, ": object crc32c ", absl::Hex(got.crc32c),
        ", the source's sidecar says ", absl::Hex(want.crc32c())));
  }
  return absl::OkStatus();
}

ObjectCopier::ObjectCopier(const ExportRoot* root, ObjectCopierOptions options)
    : root_(root),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()) {}

absl::StatusOr<NodeClient*> ObjectCopier::Peer(const std::string& address) {
  absl::MutexLock l(&mu_);
  auto it = peers_.find(address);
  if (it != peers_.end()) return it->second.get();
  if (peers_.size() >= kMaxPeers) peers_.clear();
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<NodeClient> c,
                           NodeClient::Connect(address, options_.peer_tls));
  NodeClient* raw = c.get();
  peers_[address] = std::move(c);
  return raw;
}

ObjectCopier::Buffer ObjectCopier::TakeBuffer() {
  {
    absl::MutexLock l(&mu_);
    if (!free_buffers_.empty()) {
      Buffer b = std::move(free_buffers_.back());
      free_buffers_.pop_back();
      return b;
    }
  }
  void* p = nullptr;
  if (posix_memalign(&p, ObjectWriter::kDirectAlign, options_.read_bytes) !=
      0) {
    return Buffer(nullptr);
  }
  return Buffer(static_cast<char*>(p));
}

void ObjectCopier::GiveBuffer(Buffer b) {
  if (b == nullptr) return;
  absl::MutexLock l(&mu_);
  if (free_buffers_.size() < kMaxFreeBuffers) {
    free_buffers_.push_back(std::move(b));
  }
}

absl::StatusOr<Checksums> ObjectCopier::Copy(
    const CopyObjectRequest& request, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  if (options_.nice == 0) return CopyHere(request, deadline, cancelled);
  // A thread's priority can be lowered but not raised back without
  // privilege, and the caller's thread serves other RPCs afterwards.
  absl::StatusOr<Checksums> out;
  std::thread t([&] {
    if (absl::Status s = LowerThreadPriority(options_.nice); !s.ok()) {
      RANGEFS_LOG(WARNING) << "copy of " << request.path()
                           << " runs at normal priority: " << s;
    }
    out = CopyHere(request, deadline, cancelled);
  });
  t.join();
  return out;
}

absl::StatusOr<Checksums> ObjectCopier::CopyHere(
    const CopyObjectRequest& request, absl::Time deadline,
    const std::function<bool()>& cancelled) {
  const std::string& path = request.path();
  const std::string& src_path =
      request.source_path().empty() ? path : request.source_path();
  RANGEFS_RETURN_IF_ERROR(ExportRoot::ValidateObjectPath(path));
  RANGEFS_RETURN_IF_ERROR(ExportRoot::ValidateObjectPath(src_path));
  const std::string where =
      absl::StrCat("source ", src_path, " on ", request.source_address());
  if (!request.overwrite()) {
    absl::StatusOr<struct stat> st = root_->Stat(path);
    if (st.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("object ", path, " already exists in ",
                       root_->root_dir(), " (set overwrite to replace it)"));
    }
    if (!absl::IsNotFound(st.status())) return st.status();
  }
  RANGEFS_ASSIGN_OR_RETURN(NodeClient * peer, Peer(request.source_address()));
  absl::StatusOr<ChecksumObjectResponse> want =
      peer->ChecksumObject(src_path, /*recompute=*/false, deadline);
  if (absl::IsFailedPrecondition(want.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, " has no checksums; a copy could not be verified: ",
                     want.status().message()));
  }
  RANGEFS_RETURN_IF_ERROR(want.status());
  RANGEFS_RETURN_IF_ERROR(CheckSourceChecksums(where, *want));
  RANGEFS_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> out,
                           ObjectWriter::Begin(root_, path, want->block_size(),
                                               options_.direct_writes));

  RateLimiter call_limiter(request.max_bytes_per_sec(), clock_);
  // The limiters take monotonic deadlines.
  const absl::Time mono_deadline =
      deadline == absl::InfiniteFuture()
          ? deadline
          : clock_->MonotonicNow() + (deadline - absl::Now());
  // Two buffers: the next piece is read (throttled) on a helper thread
  // while this one is written, so the network and the disk overlap.
  const size_t piece = static_cast<size_t>(
      std::min<uint64_t>(options_.read_bytes, want->size()));
  Buffer bufs[2] = {TakeBuffer(), TakeBuffer()};
  absl::Cleanup give_back = [&] {
    GiveBuffer(std::move(bufs[0]));
    GiveBuffer(std::move(bufs[1]));
  };
  if (bufs[0] == nullptr || bufs[1] == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("copy of ", path, ": no memory for piece buffers"));
  }
  auto read_piece = [&](uint64_t off, Buffer* buf) -> absl::Status {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(piece, want->size() - off));
    if (options_.limiter != nullptr) {
      RANGEFS_RETURN_IF_ERROR(options_.limiter->Acquire(n, mono_deadline));
    }
    RANGEFS_RETURN_IF_ERROR(call_limiter.Acquire(n, mono_deadline));
    RANGEFS_ASSIGN_OR_RETURN(
        size_t got,
        peer->ReadRange(src_path, off, absl::MakeSpan(buf->get(), n),
                        {.deadline = deadline,
                         .verify_on_server = true,
                         .check_chunk_crc = true,
                         .background = options_.nice > 0}));
    if (got != n) {
      return absl::DataLossError(absl::StrCat(where, " ended at ", off + got,
                                              " bytes; its sidecar says ",
                                              want->size()));
    }
    return absl::OkStatus();
  };
  absl::Status next =
      want->size() > 0 ? read_piece(0, &bufs[0]) : absl::OkStatus();
  for (uint64_t off = 0, i = 0; off < want->size(); ++i) {
    RANGEFS_RETURN_IF_ERROR(next);
    if (cancelled && cancelled()) {
      return absl::CancelledError(
          absl::StrCat("copy of ", path, " from ", where, " cancelled"));
    }
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(piece, want->size() - off));
    const uint64_t next_off = off + n;
    std::thread reader;
    if (next_off < want->size()) {
      reader = std::thread([&, next_off, i] {
        next = read_piece(next_off, &bufs[(i + 1) % 2]);
      });
    }
    absl::Status wrote = out->Append(bufs[i % 2].get(), n);
    if (reader.joinable()) reader.join();
    RANGEFS_RETURN_IF_ERROR(wrote);
    if (options_.on_bytes) options_.on_bytes(n);
    off = next_off;
  }
  return out->Commit(request.overwrite(), [&](const Checksums& got) {
    return CompareChecksums(path, *want, got);
  });
}

}  // namespace node
}  // namespace rangefs
