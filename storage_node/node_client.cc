#include "storage_node/node_client.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/sync_stream.h"
#include "storage_node/read_chunk_codec.h"

namespace rangefs {
namespace node {

namespace {

// Attaches a context to an optional canceller for one scope.
class Attachment {
 public:
  Attachment(CallCanceller* c, grpc::ClientContext* ctx) : c_(c) {
    ok_ = c_ == nullptr || c_->Attach(ctx);
  }
  ~Attachment() {
    if (c_ != nullptr && ok_) c_->Detach();
  }
  bool ok() const { return ok_; }

 private:
  CallCanceller* c_;
  bool ok_;
};

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  if (deadline != absl::InfiniteFuture()) {
    ctx->set_deadline(absl::ToChronoTime(deadline));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NodeClient>> NodeClient::Connect(
    const std::string& address, const NodeClientTlsOptions& tls,
    const NodeClientOptions& options) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) ||
      port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("node address \"", address, "\" is not host:port"));
  }
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> creds,
                           MakeNodeChannelCredentials(tls));
  grpc::ChannelArguments args;
  if (!tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(tls.server_name_override);
  }
  args.SetMaxReceiveMessageSize(64 << 20);
  // ReadRange throughput: let the agent send each chunk in few large
  // HTTP/2 frames (the default is 16 KiB frames) and keep several chunks
  // in flight. Measured with node_bench: ~-15% CPU per GiB read.
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1);  // RFC max.
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = grpc::CreateCustomChannel(address, creds, args);
  return std::unique_ptr<NodeClient>(new NodeClient(
      address, channel, options, options.use_data_port && !tls.enabled()));
}

NodeClient::NodeClient(std::string address,
                       std::shared_ptr<grpc::Channel> channel,
                       const NodeClientOptions& options, bool use_data_port)
    : address_(std::move(address)),
      channel_(std::move(channel)),
      stub_(NodeAgent::NewStub(channel_)),
      raw_read_range_("/rangefs.node.NodeAgent/ReadRange",
                      grpc::internal::RpcMethod::SERVER_STREAMING, channel_),
      options_(options),
      use_data_port_(use_data_port) {}

int NodeClient::data_port() const {
  absl::MutexLock l(&dp_mu_);
  return data_port_ != nullptr ? data_port_->port() : 0;
}

std::shared_ptr<DataPortClient> NodeClient::DataPort(absl::Time deadline) {
  {
    absl::MutexLock l(&dp_mu_);
    if (data_port_ != nullptr) return data_port_;
    // Concurrent reads use gRPC while one of them asks.
    if (discovering_ || absl::Now() < next_discovery_) return nullptr;
    discovering_ = true;
  }
  absl::StatusOr<GetStatsResponse> stats =
      GetStats(std::min(deadline, absl::Now() + absl::Seconds(1)));
  absl::MutexLock l(&dp_mu_);
  discovering_ = false;
  if (!stats.ok() || stats->data_port() == 0 || stats->data_port() > 65535) {
    // An agent that answered "no data port" (the default) is asked again
    // only now and then; one that did not answer, sooner.
    next_discovery_ = absl::Now() + (stats.ok() ? 12 * options_.data_port_retry
                                                : options_.data_port_retry);
    return nullptr;
  }
  const std::string host = address_.substr(0, address_.rfind(':'));
  data_port_ = std::make_shared<DataPortClient>(
      address_, host, static_cast<int>(stats->data_port()),
      options_.max_idle_data_connections);
  return data_port_;
}

void NodeClient::ForgetDataPort(const std::shared_ptr<DataPortClient>& dp) {
  absl::MutexLock l(&dp_mu_);
  if (data_port_ == dp) {
    data_port_ = nullptr;
    next_discovery_ = absl::Now() + options_.data_port_retry;
  }
}

absl::Status NodeClient::Error(const grpc::Status& s, absl::string_view what,
                               absl::string_view path) const {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, " ", path, " on node ", address_, ": ",
                                   s.error_message()));
}

absl::StatusOr<size_t> NodeClient::ReadRange(const std::string& path,
                                             uint64_t offset,
                                             absl::Span<char> dst,
                                             const ReadCallOptions& options) {
  if (use_data_port_ &&
      !(options.canceller != nullptr && options.canceller->cancelled())) {
    std::shared_ptr<DataPortClient> dp = DataPort(options.deadline);
    if (dp != nullptr) {
      bool not_sent = false;
      absl::StatusOr<size_t> r =
          dp->ReadRange(path, offset, dst,
                        {.deadline = options.deadline,
                         .verify_on_server = options.verify_on_server,
                         .check_crc = options.check_chunk_crc,
                         .background = options.background,
                         .canceller = options.canceller},
                        &not_sent);
      if (!not_sent || absl::IsCancelled(r.status()) ||
          absl::IsDeadlineExceeded(r.status())) {
        return r;
      }
      // The data port is gone (agent restarted without it, firewall):
      // this read and the next ones use gRPC until rediscovery.
      ForgetDataPort(dp);
    }
  }
  return GrpcReadRange(path, offset, dst, options);
}

absl::StatusOr<size_t> NodeClient::GrpcReadRange(
    const std::string& path, uint64_t offset, absl::Span<char> dst,
    const ReadCallOptions& options) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options.deadline);
  Attachment attach(options.canceller, &ctx);
  if (!attach.ok()) {
    return absl::CancelledError(
        absl::StrCat("ReadRange ", path, " on node ", address_, ": cancelled"));
  }
  ReadRangeRequest req;
  req.set_path(path);
  req.set_offset(offset);
  req.set_length(dst.size());
  req.set_verify(options.verify_on_server);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel_.get(), raw_read_range_, &ctx, req));
  grpc::ByteBuffer raw;
  size_t got = 0;
  absl::Status bad;
  while (reader->Read(&raw)) {
    // Decodes into the free part of `dst`: one copy, one CRC pass.
    absl::StatusOr<DecodedChunk> chunk =
        DecodeReadRangeChunk(raw, dst.subspan(got), options.check_chunk_crc);
    if (chunk.ok() && chunk->offset != offset + got) {
      chunk = absl::InternalError(
          absl::StrCat("chunk at ", chunk->offset, " (+", chunk->size,
                       ") does not follow byte ", offset + got));
    } else if (absl::IsOutOfRange(chunk.status())) {
      // More data than asked for: the agent broke the protocol.
      chunk = absl::InternalError(chunk.status().message());
    }
    if (!chunk.ok()) {
      bad = absl::Status(
          chunk.status().code(),
          absl::StrCat("ReadRange ", path, " on node ", address_, " at byte ",
                       offset + got, ": ", chunk.status().message()));
      ctx.TryCancel();
      break;
    }
    got += chunk->size;
  }
  grpc::Status st = reader->Finish();
  if (!bad.ok()) return bad;
  if (!st.ok()) return Error(st, "ReadRange", path);
  return got;
}

void NodeClient::AwaitConnection(absl::Time deadline) {
  if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return;
  // Rides out a transient connect failure (the channel would fail the call
  // at once while in its reconnect backoff) for at most 5 s or the
  // deadline; a node that stays down still fails the call below.
  channel_->WaitForConnected(
      absl::ToChronoTime(std::min(deadline, absl::Now() + absl::Seconds(5))));
}

absl::StatusOr<WriteObjectResponse> NodeClient::WriteObject(
    const std::string& path,
    const std::function<absl::StatusOr<size_t>(absl::Span<char>)>& read,
    const WriteCallOptions& options) {
  AwaitConnection(options.deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options.deadline);
  WriteObjectResponse resp;
  auto writer = stub_->WriteObject(&ctx, &resp);
  WriteObjectRequest req;
  WriteObjectHeader* h = req.mutable_header();
  h->set_path(path);
  h->set_overwrite(options.overwrite);
  h->set_block_size(options.block_size);
  if (options.expected_size >= 0) {
    h->set_expected_size(static_cast<uint64_t>(options.expected_size));
  }
  bool stream_ok = writer->Write(req);
  // One request message, reused: `read` fills its data field in place, so
  // the bytes are copied once (by serialization) and no buffer is
  // allocated per message.
  const size_t chunk =
      options.chunk_bytes > 0 ? options.chunk_bytes : size_t{4} << 20;
  WriteObjectRequest data;
  std::string* buf = data.mutable_data();
  absl::Status read_error;
  while (stream_ok) {
    buf->resize(chunk);
    absl::StatusOr<size_t> n = read(absl::MakeSpan(&(*buf)[0], buf->size()));
    if (n.ok() && *n > chunk) {
      n = absl::InvalidArgumentError(absl::StrCat("read callback returned ", *n,
                                                  " bytes for a ", chunk,
                                                  "-byte buffer"));
    }
    if (!n.ok()) {
      read_error = n.status();
      ctx.TryCancel();
      break;
    }
    if (*n == 0) break;
    buf->resize(*n);
    stream_ok = writer->Write(data);
  }
  if (read_error.ok() && stream_ok) writer->WritesDone();
  grpc::Status st = writer->Finish();
  if (!read_error.ok()) {
    return absl::Status(
        read_error.code(),
        absl::StrCat("WriteObject ", path, " to node ", address_,
                     " aborted: ", read_error.message()));
  }
  if (!st.ok()) return Error(st, "WriteObject", path);
  return resp;
}

absl::StatusOr<StatObjectResponse> NodeClient::StatObject(
    const std::string& path, absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  StatObjectRequest req;
  req.set_path(path);
  StatObjectResponse resp;
  grpc::Status st = stub_->StatObject(&ctx, req, &resp);
  if (!st.ok()) return Error(st, "StatObject", path);
  return resp;
}

absl::StatusOr<ChecksumObjectResponse> NodeClient::ChecksumObject(
    const std::string& path, bool recompute, absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  ChecksumObjectRequest req;
  req.set_path(path);
  req.set_recompute(recompute);
  ChecksumObjectResponse resp;
  grpc::Status st = stub_->ChecksumObject(&ctx, req, &resp);
  if (!st.ok()) return Error(st, "ChecksumObject", path);
  return resp;
}

absl::Status NodeClient::DeleteObject(const std::string& path,
                                      absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  DeleteObjectRequest req;
  req.set_path(path);
  DeleteObjectResponse resp;
  grpc::Status st = stub_->DeleteObject(&ctx, req, &resp);
  return Error(st, "DeleteObject", path);
}

absl::StatusOr<CopyObjectResponse> NodeClient::CopyObject(
    const CopyObjectRequest& request, absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  CopyObjectResponse resp;
  grpc::Status st = stub_->CopyObject(&ctx, request, &resp);
  if (!st.ok()) {
    return Error(st, absl::StrCat("CopyObject from ", request.source_address()),
                 request.path());
  }
  return resp;
}

absl::StatusOr<RebuildEcColumnResponse> NodeClient::RebuildEcColumn(
    const RebuildEcColumnRequest& request, absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  RebuildEcColumnResponse resp;
  grpc::Status st = stub_->RebuildEcColumn(&ctx, request, &resp);
  if (!st.ok()) {
    return Error(st,
                 absl::StrCat("RebuildEcColumn of column ", request.column()),
                 request.path());
  }
  return resp;
}

absl::StatusOr<std::vector<ObjectInfo>> NodeClient::ListObjects(
    absl::Time deadline) {
  AwaitConnection(deadline);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  ListObjectsRequest req;
  std::unique_ptr<grpc::ClientReader<ObjectInfo>> reader =
      stub_->ListObjects(&ctx, req);
  std::vector<ObjectInfo> out;
  ObjectInfo info;
  while (reader->Read(&info)) out.push_back(info);
  grpc::Status st = reader->Finish();
  if (!st.ok()) return Error(st, "ListObjects", "");
  return out;
}

absl::StatusOr<ScrubResponse> NodeClient::Scrub(uint64_t max_bytes_per_sec,
                                                absl::Time deadline) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  ScrubRequest req;
  req.set_max_bytes_per_sec(max_bytes_per_sec);
  ScrubResponse resp;
  grpc::Status st = stub_->Scrub(&ctx, req, &resp);
  if (!st.ok()) return Error(st, "Scrub", "");
  return resp;
}

absl::StatusOr<GetStatsResponse> NodeClient::GetStats(absl::Time deadline) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  GetStatsRequest req;
  GetStatsResponse resp;
  grpc::Status st = stub_->GetStats(&ctx, req, &resp);
  if (!st.ok()) return Error(st, "GetStats", "");
  return resp;
}

}  // namespace node
}  // namespace rangefs
