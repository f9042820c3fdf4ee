#include "storage_node/agent_service.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/crc32c.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "grpcpp/support/method_handler.h"
#include "storage_node/grpc_status.h"
#include "storage_node/object_reader.h"
#include "storage_node/object_writer.h"
#include "storage_node/read_chunk_codec.h"
#include "storage_node/scrubber.h"

namespace rangefs {
namespace node {
namespace {

// Adds 1 to `counter` for the guard's lifetime.
class CountGuard {
 public:
  explicit CountGuard(std::atomic<int64_t>* counter) : counter_(counter) {
    counter_->fetch_add(1);
  }
  CountGuard(const CountGuard&) = delete;
  CountGuard& operator=(const CountGuard&) = delete;
  ~CountGuard() { counter_->fetch_sub(1); }

 private:
  std::atomic<int64_t>* counter_;
};

// OK if object `path` does not exist in `root`; ALREADY_EXISTS if it does.
absl::Status CheckAbsent(const ExportRoot& root, const std::string& path) {
  absl::StatusOr<struct stat> st = root.Stat(path);
  if (st.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("object ", path, " already exists in ", root.root_dir(),
                     " (set overwrite to replace it)"));
  }
  return absl::IsNotFound(st.status()) ? absl::OkStatus() : st.status();
}

absl::Status BusyStatus(int64_t now_inflight, int max) {
  return absl::ResourceExhaustedError(
      absl::StrCat("node busy: ", now_inflight - 1, " reads in flight (max ",
                   max, "); retry on another replica or later"));
}

absl::Status CancelledStatus(absl::string_view what, absl::string_view path) {
  return absl::CancelledError(
      absl::StrCat(what, " of ", path, " cancelled by the client"));
}

}  // namespace

AgentService::AgentService(const ExportRoot* root, AgentServiceOptions options)
    : root_(root),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
      write_access_(options_.write_access),
      copy_limiter_(options_.copy_max_bytes_per_sec, clock_) {
  copier_ = std::make_unique<ObjectCopier>(
      root_,
      ObjectCopierOptions{
          .peer_tls = options_.peer_tls,
          .limiter = &copy_limiter_,
          .clock = clock_,
          .on_bytes = [this](uint64_t n) { bytes_written_.fetch_add(n); },
          .nice = options_.copy_nice,
      });
  ec_rebuilder_ = std::make_unique<EcRebuilder>(
      root_,
      EcRebuilderOptions{
          .peer_tls = options_.peer_tls,
          .limiter = &copy_limiter_,
          .clock = clock_,
          .on_bytes =
              [this](uint64_t n) {
                bytes_written_.fetch_add(n);
                ec_rebuilt_bytes_.fetch_add(n);
              },
          .staging_idle = options_.ec_staging_idle,
          .on_swept_bytes =
              [this](uint64_t n) { ec_staging_swept_bytes_.fetch_add(n); },
      });
  // Method 1 of NodeAgent (proto order) is ReadRange. A "streamed" handler
  // is a bidi stream on the server side: one request read, then writes.
  constexpr int kReadRangeMethodIndex = 1;
  MarkMethodStreamed(
      kReadRangeMethodIndex,
      new grpc::internal::BidiStreamingHandler<AgentService, ReadRangeRequest,
                                               grpc::ByteBuffer>(
          &AgentService::ReadRangeRaw, this));
}

AgentService::~AgentService() { ec_rebuilder_.reset(); }

// ---------------------------------------------------------------- WriteObject

grpc::Status AgentService::WriteObject(
    grpc::ServerContext* context,
    grpc::ServerReader<WriteObjectRequest>* reader,
    WriteObjectResponse* response) {
  absl::Status denied = write_access_.Check(*context, "WriteObject");
  if (!denied.ok()) {
    RANGEFS_LOG(WARNING) << "from " << context->peer() << ": " << denied;
    return ToGrpcStatus(denied);
  }
  CountGuard inflight(&inflight_writes_);
  absl::Status s = DoWriteObject(context, reader, response);
  if (s.ok()) {
    writes_.fetch_add(1);
  } else if (!absl::IsAlreadyExists(s) && !absl::IsFailedPrecondition(s)) {
    RANGEFS_LOG(INFO) << "WriteObject: " << s;
  }
  return ToGrpcStatus(s);
}

absl::Status AgentService::DoWriteObject(
    grpc::ServerContext* context,
    grpc::ServerReader<WriteObjectRequest>* reader,
    WriteObjectResponse* response) {
  if (options_.read_only) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node is read-only; refusing writes to export ", root_->root_dir()));
  }
  WriteObjectRequest req;
  if (!reader->Read(&req)) {
    if (context->IsCancelled()) return CancelledStatus("write", "(no header)");
    return absl::InvalidArgumentError("WriteObject: empty request stream");
  }
  if (!req.has_header()) {
    return absl::InvalidArgumentError(
        "WriteObject: the first message must carry the header");
  }
  const WriteObjectHeader header = req.header();
  const std::string& path = header.path();
  RANGEFS_RETURN_IF_ERROR(ExportRoot::ValidateObjectPath(path));
  if (!header.overwrite()) {
    // Early answer; the rename re-checks atomically.
    RANGEFS_RETURN_IF_ERROR(CheckAbsent(*root_, path));
  }
  RANGEFS_ASSIGN_OR_RETURN(
      std::unique_ptr<ObjectWriter> obj,
      ObjectWriter::Begin(root_, path,
                          header.block_size() == 0 ? options_.default_block_size
                                                   : header.block_size()));
  while (reader->Read(&req)) {
    if (req.has_header()) {
      return absl::InvalidArgumentError(
          absl::StrCat("WriteObject ", path, ": header sent twice"));
    }
    const std::string& data = req.data();
    if (header.has_expected_size() &&
        obj->size() + data.size() > header.expected_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("WriteObject ", path, ": more than expected_size ",
                       header.expected_size(), " bytes sent"));
    }
    RANGEFS_RETURN_IF_ERROR(obj->Append(data.data(), data.size()));
    bytes_written_.fetch_add(data.size());
  }
  if (context->IsCancelled()) return CancelledStatus("write", path);
  if (header.has_expected_size() && obj->size() != header.expected_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("WriteObject ", path, ": got ", obj->size(),
                     " bytes, expected_size is ", header.expected_size()));
  }
  RANGEFS_ASSIGN_OR_RETURN(
      Checksums checksums,
      obj->Commit(header.overwrite(), [&](const Checksums&) {
        return context->IsCancelled() ? CancelledStatus("write", path)
                                      : absl::OkStatus();
      }));
  response->set_size(checksums.object_size);
  response->set_crc32c(checksums.crc32c);
  response->set_block_count(checksums.block_crc32c.size());
  return absl::OkStatus();
}

// ------------------------------------------------------------------ ReadRange

grpc::Status AgentService::ReadRangeRaw(grpc::ServerContext* context,
                                        RawReadStream* stream) {
  ReadRangeRequest req;
  if (!stream->Read(&req)) {
    if (context->IsCancelled()) {
      return ToGrpcStatus(CancelledStatus("read", "(no request)"));
    }
    return ToGrpcStatus(absl::InvalidArgumentError(
        "ReadRange: missing or unparsable ReadRangeRequest"));
  }
  // Counted like the data port's reads; past the cap refused at once.
  if (absl::Status slot = BeginRead(); !slot.ok()) return ToGrpcStatus(slot);
  if (options_.read_started_hook) options_.read_started_hook(req.path());
  const absl::Time start = clock_->MonotonicNow();
  absl::Status s = DoReadRange(context, req, stream);
  EndRead(s.ok(), clock_->MonotonicNow() - start);
  return ToGrpcStatus(s);
}

absl::Status AgentService::DoReadRange(grpc::ServerContext* context,
                                       const ReadRangeRequest& request,
                                       RawReadStream* stream) {
  RANGEFS_ASSIGN_OR_RETURN(
      ObjectReader r, ObjectReader::Open(*root_, request.path(),
                                         request.offset(), request.length()));
  const size_t chunk_size = std::max<size_t>(options_.chunk_size, 1);

  // Each chunk's data is a fresh slice (`p` points into it) that gRPC
  // sends without copying; the slice is freed once it is on the wire.
  auto send = [&](uint64_t off, const grpc::Slice& data,
                  char* p) -> absl::Status {
    const size_t n = data.size();
    const uint32_t crc = Crc32cExtend(0, p, n);
    if (options_.chunk_hook) options_.chunk_hook(off, absl::MakeSpan(p, n));
    if (context->IsCancelled() ||
        !stream->Write(EncodeReadRangeChunk(off, data, crc))) {
      return CancelledStatus("read", r.path());
    }
    bytes_read_.fetch_add(n);
    return absl::OkStatus();
  };

  if (!request.verify()) {
    for (uint64_t off = r.begin(); off < r.end();) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(chunk_size, r.end() - off));
      char* p;
      grpc::Slice data = NewWritableSlice(n, &p);
      RANGEFS_RETURN_IF_ERROR(r.Pread(p, n, off));
      RANGEFS_RETURN_IF_ERROR(send(off, data, p));
      off += n;
    }
    return absl::OkStatus();
  }

  // verify=true: read whole checksum blocks, check them, then send the
  // requested part.
  RANGEFS_ASSIGN_OR_RETURN(Checksums c, r.LoadChecksumsForVerify());
  std::string buf;
  for (uint64_t b = r.begin() / c.block_size;
       b < c.block_crc32c.size() && b * c.block_size < r.end(); ++b) {
    RANGEFS_ASSIGN_OR_RETURN(absl::string_view block,
                             r.ReadVerifiedBlock(c, b, &buf));
    const uint64_t bstart = b * c.block_size;
    uint64_t off = std::max(r.begin(), bstart);
    const uint64_t stop = std::min(r.end(), bstart + block.size());
    while (off < stop) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(chunk_size, stop - off));
      char* p;
      grpc::Slice data = NewWritableSlice(n, &p);
      memcpy(p, block.data() + (off - bstart), n);
      RANGEFS_RETURN_IF_ERROR(send(off, data, p));
      off += n;
    }
  }
  return absl::OkStatus();
}

// ------------------------------------------------------ StatObject, Checksum

grpc::Status AgentService::StatObject(grpc::ServerContext* /*context*/,
                                      const StatObjectRequest* request,
                                      StatObjectResponse* response) {
  return ToGrpcStatus(DoStatObject(*request, response));
}

absl::Status AgentService::DoStatObject(const StatObjectRequest& request,
                                        StatObjectResponse* response) {
  const std::string& path = request.path();
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, root_->OpenForRead(path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("fstat object ", path));
  }
  response->set_size(static_cast<uint64_t>(st.st_size));
  response->set_mtime_ns(int64_t{st.st_mtim.tv_sec} * 1000000000 +
                         st.st_mtim.tv_nsec);
  absl::StatusOr<ScopedFd> sfd = root_->OpenSidecarForRead(path);
  if (!sfd.ok()) return absl::OkStatus();  // No checksums.
  absl::StatusOr<Checksums> c = ReadSidecar(sfd->get(), path);
  if (c.ok() && c->object_size == static_cast<uint64_t>(st.st_size)) {
    response->set_has_checksums(true);
    response->set_block_size(c->block_size);
    response->set_block_count(c->block_crc32c.size());
  }
  return absl::OkStatus();
}

grpc::Status AgentService::ChecksumObject(grpc::ServerContext* /*context*/,
                                          const ChecksumObjectRequest* request,
                                          ChecksumObjectResponse* response) {
  return ToGrpcStatus(DoChecksumObject(*request, response));
}

absl::Status AgentService::DoChecksumObject(
    const ChecksumObjectRequest& request, ChecksumObjectResponse* response) {
  const std::string& path = request.path();
  RANGEFS_ASSIGN_OR_RETURN(ScopedFd fd, root_->OpenForRead(path));
  absl::StatusOr<Checksums> stored = absl::NotFoundError("no sidecar");
  absl::StatusOr<ScopedFd> sfd = root_->OpenSidecarForRead(path);
  if (sfd.ok()) stored = ReadSidecar(sfd->get(), path);
  Checksums c;
  if (request.recompute()) {
    const uint32_t bs =
        stored.ok() ? stored->block_size : options_.default_block_size;
    RANGEFS_ASSIGN_OR_RETURN(c, ComputeChecksums(fd.get(), bs, path));
  } else if (stored.ok()) {
    c = *std::move(stored);
  } else if (absl::IsNotFound(stored.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "object ", path, " has no checksum sidecar; ask with recompute=true"));
  } else {
    return stored.status();
  }
  response->set_size(c.object_size);
  response->set_block_size(c.block_size);
  for (uint32_t b : c.block_crc32c) response->add_block_crc32c(b);
  response->set_crc32c(c.crc32c);
  return absl::OkStatus();
}

// ---------------------------------------------------------- Scrub, GetStats

grpc::Status AgentService::Scrub(grpc::ServerContext* context,
                                 const ScrubRequest* request,
                                 ScrubResponse* response) {
  ScrubReport r = ScrubExport(
      *root_, {.max_bytes_per_sec = request->max_bytes_per_sec(),
               .clock = clock_,
               .cancelled = [context] { return context->IsCancelled(); }});
  if (r.cancelled) {
    return ToGrpcStatus(CancelledStatus("scrub", root_->root_dir()));
  }
  response->set_objects_checked(r.objects_checked);
  response->set_bytes_checked(r.bytes_checked);
  response->set_objects_without_checksums(r.objects_without_checksums);
  for (const std::string& p : r.corrupt_paths) response->add_corrupt_paths(p);
  return grpc::Status::OK;
}

grpc::Status AgentService::GetStats(grpc::ServerContext* /*context*/,
                                    const GetStatsRequest* /*request*/,
                                    GetStatsResponse* response) {
  *response = Stats();
  return grpc::Status::OK;
}

grpc::Status AgentService::DeleteObject(grpc::ServerContext* context,
                                        const DeleteObjectRequest* request,
                                        DeleteObjectResponse* /*response*/) {
  // The path is untrusted and not validated yet: quote a bounded prefix.
  absl::Status denied = write_access_.Check(
      *context,
      absl::StrCat("DeleteObject \"",
                   absl::CEscape(request->path().substr(0, 256)), "\""));
  if (!denied.ok()) {
    RANGEFS_LOG(WARNING) << "from " << context->peer() << ": " << denied;
    return ToGrpcStatus(denied);
  }
  if (options_.read_only) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("node is read-only; refusing to delete ", request->path(),
                     " in export ", root_->root_dir())));
  }
  absl::Status s = root_->RemoveObject(request->path());
  if (s.ok()) RANGEFS_LOG(INFO) << "deleted object " << request->path();
  return ToGrpcStatus(s);
}

grpc::Status AgentService::CopyObject(grpc::ServerContext* context,
                                      const CopyObjectRequest* request,
                                      CopyObjectResponse* response) {
  absl::Status denied = write_access_.Check(
      *context,
      absl::StrCat("CopyObject \"",
                   absl::CEscape(request->path().substr(0, 256)), "\""));
  if (!denied.ok()) {
    RANGEFS_LOG(WARNING) << "from " << context->peer() << ": " << denied;
    return ToGrpcStatus(denied);
  }
  if (options_.read_only) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("node is read-only; refusing to copy ", request->path(),
                     " into export ", root_->root_dir())));
  }
  CountGuard inflight(&inflight_writes_);
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<Checksums> c =
      copier_->Copy(*request, absl::FromChrono(context->deadline()),
                    [context] { return context->IsCancelled(); });
  if (!c.ok()) {
    if (!absl::IsAlreadyExists(c.status())) {
      RANGEFS_LOG(WARNING) << "CopyObject: " << c.status();
    }
    return ToGrpcStatus(c.status());
  }
  writes_.fetch_add(1);
  RANGEFS_LOG(INFO) << "copied object " << request->path() << " ("
                    << c->object_size << " bytes) from "
                    << request->source_address() << " in "
                    << (clock_->MonotonicNow() - start);
  response->set_size(c->object_size);
  response->set_crc32c(c->crc32c);
  response->set_block_count(c->block_crc32c.size());
  return grpc::Status::OK;
}

grpc::Status AgentService::RebuildEcColumn(
    grpc::ServerContext* context, const RebuildEcColumnRequest* request,
    RebuildEcColumnResponse* response) {
  absl::Status denied = write_access_.Check(
      *context,
      absl::StrCat("RebuildEcColumn \"",
                   absl::CEscape(request->path().substr(0, 256)), "\""));
  if (!denied.ok()) {
    RANGEFS_LOG(WARNING) << "from " << context->peer() << ": " << denied;
    return ToGrpcStatus(denied);
  }
  if (options_.read_only) {
    return ToGrpcStatus(absl::FailedPreconditionError(
        absl::StrCat("node is read-only; refusing to rebuild ",
                     absl::CEscape(request->path().substr(0, 256)),
                     " into export ", root_->root_dir())));
  }
  CountGuard inflight(&inflight_writes_);
  const absl::Time start = clock_->MonotonicNow();
  absl::StatusOr<EcRebuildResult> r =
      ec_rebuilder_->Rebuild(*request, absl::FromChrono(context->deadline()),
                             [context] { return context->IsCancelled(); });
  if (!r.ok()) {
    if (!absl::IsAlreadyExists(r.status())) {
      RANGEFS_LOG(WARNING) << "RebuildEcColumn: " << r.status();
    }
    return ToGrpcStatus(r.status());
  }
  if (r->committed) writes_.fetch_add(1);
  RANGEFS_LOG(INFO) << "rebuilt column " << request->column() << " as "
                    << request->path() << " (rows from " << request->first_row()
                    << (r->committed ? ", committed, " : ", staged, ")
                    << r->size << " bytes, " << r->bytes_read
                    << " read from survivors) in "
                    << (clock_->MonotonicNow() - start);
  response->set_committed(r->committed);
  response->set_size(r->size);
  response->set_crc32c(r->crc32c);
  response->set_bytes_read(r->bytes_read);
  response->set_cells_size(r->cells_size);
  return grpc::Status::OK;
}

grpc::Status AgentService::ListObjects(grpc::ServerContext* context,
                                       const ListObjectsRequest* /*request*/,
                                       grpc::ServerWriter<ObjectInfo>* writer) {
  bool cancelled = false;
  absl::Status s = root_->ForEachObject([&](const std::string& path) {
    if (context->IsCancelled()) {
      cancelled = true;
      return false;
    }
    absl::StatusOr<struct stat> st = root_->Stat(path);
    if (!st.ok()) return true;  // Gone meanwhile.
    ObjectInfo info;
    info.set_path(path);
    info.set_size(static_cast<uint64_t>(st->st_size));
    info.set_mtime_ns(int64_t{st->st_mtim.tv_sec} * 1000000000 +
                      st->st_mtim.tv_nsec);
    if (!writer->Write(info)) {
      cancelled = true;
      return false;
    }
    return true;
  });
  if (cancelled) {
    return ToGrpcStatus(CancelledStatus("listing", root_->root_dir()));
  }
  return ToGrpcStatus(s);
}

absl::Status AgentService::BeginRead() {
  const int64_t now_inflight = inflight_reads_.fetch_add(1) + 1;
  if (now_inflight > options_.max_concurrent_reads) {
    inflight_reads_.fetch_sub(1);
    reads_rejected_.fetch_add(1);
    return BusyStatus(now_inflight, options_.max_concurrent_reads);
  }
  return absl::OkStatus();
}

void AgentService::EndRead(bool ok, absl::Duration latency) {
  read_latency_.Record(latency);
  if (ok) reads_.fetch_add(1);
  inflight_reads_.fetch_sub(1);
}

GetStatsResponse AgentService::Stats() const {
  GetStatsResponse r;
  r.set_bytes_read(bytes_read_.load());
  r.set_reads(reads_.load());
  r.set_bytes_written(bytes_written_.load());
  r.set_writes(writes_.load());
  r.set_inflight(
      static_cast<uint64_t>(inflight_reads_.load() + inflight_writes_.load()));
  r.set_read_latency_p50_us(
      absl::ToInt64Microseconds(read_latency_.Percentile(50)));
  r.set_read_latency_p99_us(
      absl::ToInt64Microseconds(read_latency_.Percentile(99)));
  absl::StatusOr<uint64_t> free_bytes = root_->FreeBytes();
  r.set_free_bytes(free_bytes.ok() ? *free_bytes : 0);
  r.set_export_healthy(root_->CheckHealth().ok() && free_bytes.ok());
  r.set_reads_rejected(reads_rejected_.load());
  r.set_ec_rebuilt_bytes(ec_rebuilt_bytes_.load());
  r.set_ec_staging_swept_bytes(ec_staging_swept_bytes_.load());
  r.set_data_port(static_cast<uint32_t>(data_port_.load()));
  return r;
}

}  // namespace node
}  // namespace rangefs
