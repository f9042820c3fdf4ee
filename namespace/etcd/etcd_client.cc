#include "namespace/etcd/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "namespace/etcd/key_range.h"
#include "proto/etcd/rpc.grpc.pb.h"

namespace rangefs {
namespace etcd {
namespace internal {

// One connection to an etcd member: its channel and stubs. Replaced as a
// whole (see Core::Reconnect), so holders keep a shared_ptr.
struct Endpoint {
  std::string address;
  absl::Time created;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
};

enum class Retry {
  kIdempotent,  // Retry any transport failure.
  kIfNotSent,   // Retry only when the request surely did not reach etcd.
};

namespace {

bool IsTransportError(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

bool IsInvalidToken(const grpc::Status& s) {
  return absl::StrContains(s.error_message(), "invalid auth token");
}

// True when a failed call certainly was not sent to etcd: the connection
// could not be established.
bool SurelyNotSent(const grpc::Status& s, grpc_connectivity_state before,
                   grpc_connectivity_state after) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    if (before == GRPC_CHANNEL_TRANSIENT_FAILURE) return true;
    const std::string msg = absl::AsciiStrToLower(s.error_message());
    return absl::StrContains(msg, "failed to connect") ||
           absl::StrContains(msg, "connection refused");
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    // Queued while the channel was connecting and it never became ready.
    return before != GRPC_CHANNEL_READY && after != GRPC_CHANNEL_READY;
  }
  return false;
}

absl::Status ToStatus(const grpc::Status& s, absl::string_view what,
                      absl::string_view address) {
  if (s.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(s.error_code());
  std::string msg = s.error_message();
  if (msg.empty()) msg = absl::StatusCodeToString(code);
  return absl::Status(code,
                      absl::StrCat("etcd ", what, " at ", address, ": ", msg));
}

std::string Printable(absl::string_view key) { return absl::CHexEscape(key); }

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd client: cannot read ", what, " file '", path, "'"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd client: ", what, " file '", path, "' is empty"));
  }
  return ss.str();
}

}  // namespace

// State shared by the client and its Watch / LeaseKeepAlive handles.
// Thread-safe.
class Core {
 public:
  using Rpc = std::function<grpc::Status(Endpoint&, grpc::ClientContext*)>;
  using Connect = std::function<std::shared_ptr<Endpoint>(const std::string&)>;

  Core(EtcdClientOptions options, std::vector<std::string> addresses,
       Connect connect)
      : options_(std::move(options)), connect_(std::move(connect)) {
    for (const std::string& a : addresses) {
      auto m = std::make_unique<Member>();
      m->address = a;
      m->conn = connect_(a);
      members_.push_back(std::move(m));
    }
  }

  const EtcdClientOptions& options() const { return options_; }
  uint64_t requests() const { return requests_.load(); }
  int size() const { return static_cast<int>(members_.size()); }
  // The current connection to member i; keep it while using it.
  std::shared_ptr<Endpoint> endpoint(int i) {
    absl::MutexLock l(&members_[i]->mu);
    return members_[i]->conn;
  }
  const std::string& address(int i) const { return members_[i]->address; }
  // Replaces member i's connection if it is still `failed` and the
  // failure says the channel could not (re)connect. gRPC 1.51 channels
  // were seen failing every reconnect to a restarted member (TCP connect
  // or SETTINGS timeouts) while a new channel connected at once.
  void MaybeReconnect(int i, const Endpoint* failed, const grpc::Status& s) {
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
        s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return;
    }
    const std::string msg = absl::AsciiStrToLower(s.error_message());
    const bool connect_failure =
        absl::StrContains(msg, "failed to connect") ||
        absl::StrContains(msg, "handshaker") ||
        absl::StrContains(msg, "settings frame") ||
        absl::StrContains(msg, "connection refused") ||
        failed->channel->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
    if (!connect_failure) return;
    Member& m = *members_[i];
    absl::MutexLock l(&m.mu);
    if (m.conn.get() != failed ||
        absl::Now() - failed->created < absl::Milliseconds(500)) {
      return;
    }
    m.conn = connect_(m.address);
  }
  std::string EndpointList() const {
    std::vector<std::string> v;
    for (const auto& m : members_) v.push_back(m->address);
    return absl::StrJoin(v, ",");
  }
  int IndexOf(absl::string_view address) const {
    for (int i = 0; i < size(); ++i) {
      if (members_[i]->address == address) return i;
    }
    return -1;
  }

  int Current() const { return current_.load(); }
  // Moves the current endpoint past `from` (unless someone already did).
  void Advance(int from) {
    int expected = from;
    current_.compare_exchange_strong(expected, (from + 1) % size());
  }

  // Backoff before retry number `failures` (>= 1), with +-20% jitter.
  absl::Duration Backoff(int failures) {
    absl::Duration d = options_.initial_backoff;
    for (int i = 1; i < failures && d < options_.max_backoff; ++i) d *= 2;
    d = std::min(d, options_.max_backoff);
    double f;
    {
      absl::MutexLock l(&bitgen_mu_);
      f = absl::Uniform(bitgen_, 0.8, 1.2);
    }
    return d * f;
  }

  // The auth token to send, "" when auth is off. Authenticates on first use.
  absl::StatusOr<std::string> Token() {
    if (options_.username.empty()) return std::string();
    absl::MutexLock l(&token_mu_);
    if (!token_.empty()) return token_;
    etcdserverpb::AuthenticateRequest req;
    req.set_name(options_.username);
    req.set_password(options_.password);
    etcdserverpb::AuthenticateResponse resp;
    RANGEFS_RETURN_IF_ERROR(Invoke(
        absl::StrCat("Authenticate ", options_.username), Retry::kIdempotent,
        [&](Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.auth->Authenticate(ctx, req, &resp);
        },
        /*pinned=*/-1, /*use_token=*/false));
    token_ = resp.token();
    return token_;
  }

  // Forgets `token` so that the next Token() authenticates again.
  void InvalidateToken(const std::string& token) {
    absl::MutexLock l(&token_mu_);
    if (token_ == token) token_.clear();
  }

  void AddMetadata(grpc::ClientContext* ctx, const std::string& token) {
    if (!token.empty()) ctx->AddMetadata("token", token);
  }

  // Runs `rpc` with a deadline, failing over and retrying as `retry` allows.
  // `pinned` >= 0 sends every attempt to that endpoint.
  absl::Status Invoke(absl::string_view what, Retry retry, const Rpc& rpc,
                      int pinned = -1, bool use_token = true) {
    absl::Status last;
    bool reauthenticated = false;
    int failures = 0;
    for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
      if (failures > 0) absl::SleepFor(Backoff(failures));
      const int idx = pinned >= 0 ? pinned : Current();
      std::shared_ptr<Endpoint> conn = endpoint(idx);
      Endpoint& ep = *conn;
      std::string token;
      if (use_token) {
        RANGEFS_ASSIGN_OR_RETURN(token, Token());
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
      AddMetadata(&ctx, token);
      const grpc_connectivity_state before =
          ep.channel->GetState(/*try_to_connect=*/true);
      requests_.fetch_add(1, std::memory_order_relaxed);
      const grpc::Status s = rpc(ep, &ctx);
      if (s.ok()) return absl::OkStatus();
      const grpc_connectivity_state after = ep.channel->GetState(false);
      last = ToStatus(s, what, ep.address);
      if (!token.empty() && IsInvalidToken(s) && !reauthenticated) {
        RANGEFS_LOG(INFO) << last << "; authenticating again";
        reauthenticated = true;
        InvalidateToken(token);
        --attempt;  // Does not count as an attempt.
        continue;
      }
      if (!IsTransportError(s.error_code())) return last;
      MaybeReconnect(idx, conn.get(), s);
      ++failures;
      if (pinned < 0) Advance(idx);
      if (retry == Retry::kIfNotSent && !SurelyNotSent(s, before, after)) {
        return last;
      }
    }
    return absl::UnavailableError(
        absl::StrCat("etcd ", what, ": failed after ", options_.max_attempts,
                     " attempt(s) on endpoints ",
                     pinned >= 0 ? address(pinned) : EndpointList(),
                     "; last error: ", last.message()));
  }

 private:
  struct Member {
    std::string address;
    absl::Mutex mu;
    std::shared_ptr<Endpoint> conn ABSL_GUARDED_BY(mu);
  };
  const EtcdClientOptions options_;
  std::atomic<uint64_t> requests_{0};
  const Connect connect_;
  std::vector<std::unique_ptr<Member>> members_;
  std::atomic<int> current_{0};
  absl::Mutex bitgen_mu_;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(bitgen_mu_);
  absl::Mutex token_mu_;
  std::string token_ ABSL_GUARDED_BY(token_mu_);
};

struct WatchState {
  std::shared_ptr<Core> core;
  etcdserverpb::WatchCreateRequest create;
  std::function<void(const WatchUpdate&)> callback;

  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  // The live stream's context, so that the destructor or the watchdog can
  // cancel it.
  grpc::ClientContext* ctx ABSL_GUARDED_BY(mu) = nullptr;
  // The stream must be created by then, else the watchdog cancels it.
  absl::Time create_deadline ABSL_GUARDED_BY(mu) = absl::InfiniteFuture();
  std::string endpoint ABSL_GUARDED_BY(mu);

  // Next revision to deliver; 0: not known yet ("from now").
  std::atomic<int64_t> next_revision{0};
  std::atomic<bool> connected{false};
  std::atomic<bool> stopped{false};

  void Run();
  void Watchdog();
  // Waits `d` or until stopping; returns false when stopping.
  bool Sleep(absl::Duration d) {
    absl::MutexLock l(&mu);
    mu.AwaitWithTimeout(absl::Condition(&stopping), d);
    return !stopping;
  }
};

void WatchState::Watchdog() {
  absl::MutexLock l(&mu);
  while (!stopping) {
    if (ctx != nullptr && absl::Now() > create_deadline) {
      ctx->TryCancel();
      create_deadline = absl::InfiniteFuture();
    }
    mu.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(50));
  }
}

void WatchState::Run() {
  const std::string what = absl::StrCat("Watch ", Printable(create.key()));
  int idx = core->Current();
  int failures = 0;
  while (true) {
    if (failures > 0 && !Sleep(core->Backoff(failures))) break;
    std::shared_ptr<Endpoint> conn = core->endpoint(idx);
    Endpoint& ep = *conn;
    auto token = core->Token();
    if (!token.ok()) {
      RANGEFS_LOG(WARNING) << token.status();
      ++failures;
      idx = (idx + 1) % core->size();
      continue;
    }
    grpc::ClientContext ctx;
    // Makes a member that lost its leader end the stream.
    ctx.AddMetadata("hasleader", "true");
    core->AddMetadata(&ctx, *token);
    {
      absl::MutexLock l(&mu);
      if (stopping) break;
      this->ctx = &ctx;
      create_deadline = absl::Now() + core->options().call_timeout;
      endpoint = ep.address;
    }
    auto stream = ep.watch->Watch(&ctx);
    etcdserverpb::WatchRequest req;
    *req.mutable_create_request() = create;
    req.mutable_create_request()->set_start_revision(next_revision.load());
    bool finished = false;  // Compacted: stop for good.
    bool need_cancel = false;
    if (stream->Write(req)) {
      etcdserverpb::WatchResponse resp;
      while (stream->Read(&resp)) {
        if (resp.compact_revision() > 0) {
          WatchUpdate u;
          u.compacted = true;
          u.compact_revision = resp.compact_revision();
          u.revision = resp.header().revision();
          RANGEFS_LOG(INFO)
              << "etcd " << what << " at " << ep.address << ": revision "
              << next_revision.load() << " compacted (compact_revision "
              << u.compact_revision << ")";
          connected = false;
          callback(u);
          finished = true;
          need_cancel = true;
          break;
        }
        if (resp.canceled()) {
          RANGEFS_LOG(WARNING)
              << "etcd " << what << " at " << ep.address
              << ": canceled by etcd: " << resp.cancel_reason();
          need_cancel = true;
          break;
        }
        if (resp.created()) {
          {
            absl::MutexLock l(&mu);
            create_deadline = absl::InfiniteFuture();
          }
          if (next_revision.load() == 0) {
            next_revision = resp.header().revision() + 1;
          }
          connected = true;
          failures = 0;
          continue;
        }
        WatchUpdate u;
        u.revision = resp.header().revision();
        const int64_t next = next_revision.load();
        for (const mvccpb::Event& e : resp.events()) {
          // Skips events already delivered before a reconnect.
          if (e.kv().mod_revision() < next) continue;
          WatchEvent ev;
          ev.type = e.type() == mvccpb::Event::DELETE
                        ? WatchEvent::Type::kDelete
                        : WatchEvent::Type::kPut;
          auto copy = [](const mvccpb::KeyValue& from, KeyValue* to) {
            to->key = from.key();
            to->value = from.value();
            to->create_revision = from.create_revision();
            to->mod_revision = from.mod_revision();
            to->version = from.version();
            to->lease = from.lease();
          };
          copy(e.kv(), &ev.kv);
          if (e.has_prev_kv()) copy(e.prev_kv(), &ev.prev_kv);
          u.events.push_back(std::move(ev));
        }
        if (!u.events.empty()) {
          next_revision = u.events.back().kv.mod_revision + 1;
          callback(u);
        } else if (resp.events_size() == 0 &&
                   resp.header().revision() + 1 > next) {
          // Progress notification: everything up to the header revision
          // has been delivered.
          next_revision = resp.header().revision() + 1;
        }
      }
    }
    connected = false;
    if (need_cancel) ctx.TryCancel();
    const grpc::Status st = stream->Finish();
    {
      absl::MutexLock l(&mu);
      this->ctx = nullptr;
      create_deadline = absl::InfiniteFuture();
      if (stopping) break;
    }
    if (finished) break;
    if (!token->empty() && IsInvalidToken(st)) core->InvalidateToken(*token);
    RANGEFS_LOG(WARNING) << ToStatus(st, what, ep.address)
                         << "; reconnecting from revision "
                         << next_revision.load();
    core->MaybeReconnect(idx, conn.get(), st);
    idx = (idx + 1) % core->size();
    ++failures;
  }
  stopped = true;
}

struct KeepAliveState {
  std::shared_ptr<Core> core;
  int64_t lease_id = 0;
  absl::Duration ttl;
  std::function<void()> on_lost;

  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  grpc::ClientContext* ctx ABSL_GUARDED_BY(mu) = nullptr;

  std::atomic<bool> lost{false};
  std::atomic<int64_t> last_ttl{0};

  void Run();
  // One renewal through endpoint `idx`; returns etcd's TTL (<= 0: expired).
  absl::StatusOr<int64_t> RenewOnce(int idx, absl::Time deadline);
};

absl::StatusOr<int64_t> KeepAliveState::RenewOnce(int idx,
                                                  absl::Time deadline) {
  std::shared_ptr<Endpoint> conn = core->endpoint(idx);
  Endpoint& ep = *conn;
  const std::string what = absl::StrCat("LeaseKeepAlive ", lease_id);
  RANGEFS_ASSIGN_OR_RETURN(std::string token, core->Token());
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  ctx.AddMetadata("hasleader", "true");
  core->AddMetadata(&ctx, token);
  {
    absl::MutexLock l(&mu);
    if (stopping) return absl::CancelledError("stopping");
    this->ctx = &ctx;
  }
  auto stream = ep.lease->LeaseKeepAlive(&ctx);
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse resp;
  const bool ok = stream->Write(req) && stream->Read(&resp);
  if (ok) ctx.TryCancel();
  const grpc::Status st = stream->Finish();
  {
    absl::MutexLock l(&mu);
    this->ctx = nullptr;
  }
  if (ok) return resp.ttl();
  if (!token.empty() && IsInvalidToken(st)) core->InvalidateToken(token);
  core->MaybeReconnect(idx, conn.get(), st);
  if (st.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "etcd ", what, " at ", ep.address, ": stream ended without reply"));
  }
  return ToStatus(st, what, ep.address);
}

void KeepAliveState::Run() {
  // Presumed: the caller has just granted or renewed the lease.
  absl::Time expiry = absl::Now() + ttl;
  absl::Time next = absl::Now();  // Renew at once to learn the real TTL.
  int idx = core->Current();
  int failures = 0;
  while (true) {
    {
      absl::MutexLock l(&mu);
      mu.AwaitWithTimeout(absl::Condition(&stopping),
                          std::max(next - absl::Now(), absl::ZeroDuration()));
      if (stopping) return;
    }
    const absl::Time sent = absl::Now();
    if (sent >= expiry) {
      RANGEFS_LOG(WARNING) << "etcd lease " << lease_id
                           << " not renewed before its TTL ran out";
      break;
    }
    auto r =
        RenewOnce(idx, std::min(sent + core->options().call_timeout, expiry));
    if (r.ok()) {
      if (*r <= 0) {
        RANGEFS_LOG(WARNING) << "etcd lease " << lease_id << " expired";
        break;
      }
      last_ttl = *r;
      failures = 0;
      expiry = sent + absl::Seconds(*r);
      next = sent + absl::Seconds(*r) / 3;
      continue;
    }
    {
      absl::MutexLock l(&mu);
      if (stopping) return;
    }
    RANGEFS_LOG(WARNING) << r.status() << "; trying another endpoint";
    idx = (idx + 1) % core->size();
    ++failures;
    next = absl::Now() + core->Backoff(failures);
  }
  lost = true;
  if (on_lost) on_lost();
}

}  // namespace internal

using internal::Core;
using internal::Endpoint;
using internal::Printable;
using internal::ReadPemFile;
using internal::Retry;

namespace {

// Moves the key and value out of `from` (a page of a big listing holds
// tens of MB of values: a copy doubles the peak).
void MoveKv(mvccpb::KeyValue* from, KeyValue* to) {
  to->key = std::move(*from->mutable_key());
  to->value = std::move(*from->mutable_value());
  to->create_revision = from->create_revision();
  to->mod_revision = from->mod_revision();
  to->version = from->version();
  to->lease = from->lease();
}

// Fills key and range_end of a range-like request.
template <typename Req>
void SetKeyRange(absl::string_view key, bool prefix,
                 const std::string& range_end, Req* req) {
  if (prefix) {
    // An empty prefix means every key: ["\0", "\0").
    req->set_key(key.empty() ? std::string(1, '\0') : std::string(key));
    req->set_range_end(PrefixRangeEnd(key));
  } else {
    req->set_key(std::string(key));
    req->set_range_end(range_end);
  }
}

std::string RangeWhat(absl::string_view verb, absl::string_view key,
                      bool prefix, const std::string& range_end) {
  std::string what = absl::StrCat(verb, " ", Printable(key));
  if (prefix) {
    absl::StrAppend(&what, "*");
  } else if (!range_end.empty()) {
    absl::StrAppend(&what, "..", Printable(range_end));
  }
  return what;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Open(
    const EtcdClientOptions& options) {
  std::vector<std::string> addresses;
  for (absl::string_view part : absl::StrSplit(options.endpoints, ',')) {
    part = absl::StripAsciiWhitespace(part);
    absl::ConsumePrefix(&part, "http://") ||
        absl::ConsumePrefix(&part, "https://");
    if (!part.empty()) addresses.emplace_back(part);
  }
  if (addresses.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd client: no endpoints in '", options.endpoints, "'"));
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd client: max_attempts must be >= 1, got ", options.max_attempts));
  }
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd client: call_timeout must be positive, got ",
                     absl::FormatDuration(options.call_timeout)));
  }
  if (options.initial_backoff < absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff) {
    return absl::InvalidArgumentError(
        "etcd client: need 0 <= initial_backoff <= max_backoff");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "etcd client: cert_file and key_file go together");
  }
  if (options.username.empty() && !options.password.empty()) {
    return absl::InvalidArgumentError(
        "etcd client: password given without username");
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options.ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    RANGEFS_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                             ReadPemFile(options.ca_file, "CA"));
    if (!options.cert_file.empty()) {
      RANGEFS_ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                               ReadPemFile(options.cert_file, "certificate"));
      RANGEFS_ASSIGN_OR_RETURN(ssl.pem_private_key,
                               ReadPemFile(options.key_file, "key"));
    }
    creds = grpc::SslCredentials(ssl);
  } else if (!options.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "etcd client: cert_file needs ca_file (TLS)");
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  auto connect = [creds](const std::string& address) {
    grpc::ChannelArguments args;
    // Reconnect quickly after a member restarts. (gRPC also takes the
    // minimum backoff as the connect timeout: keep it well above a loaded
    // machine's handshake time.)
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    // Detects a dead or stopped member under a long-lived stream. etcd
    // refuses pings more often than every 5 s.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    // Own connections per client, not shared process-wide.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(256 << 20);
    auto ep = std::make_shared<Endpoint>();
    ep->address = address;
    ep->created = absl::Now();
    ep->channel = grpc::CreateCustomChannel(address, creds, args);
    ep->kv = etcdserverpb::KV::NewStub(ep->channel);
    ep->watch = etcdserverpb::Watch::NewStub(ep->channel);
    ep->lease = etcdserverpb::Lease::NewStub(ep->channel);
    ep->maintenance = etcdserverpb::Maintenance::NewStub(ep->channel);
    ep->auth = etcdserverpb::Auth::NewStub(ep->channel);
    return ep;
  };
  return std::unique_ptr<EtcdClient>(new EtcdClient(
      std::make_shared<Core>(options, addresses, std::move(connect))));
}

EtcdClient::EtcdClient(std::shared_ptr<Core> core) : core_(std::move(core)) {}

EtcdClient::~EtcdClient() = default;

uint64_t EtcdClient::requests_sent() const { return core_->requests(); }

absl::StatusOr<RangeResult> EtcdClient::Range(absl::string_view key,
                                              const RangeOptions& options) {
  etcdserverpb::RangeRequest req;
  SetKeyRange(key, options.prefix, options.range_end, &req);
  req.set_limit(options.limit);
  req.set_revision(options.revision);
  req.set_keys_only(options.keys_only);
  req.set_count_only(options.count_only);
  req.set_serializable(options.serializable);
  etcdserverpb::RangeResponse resp;
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      RangeWhat("Range", key, options.prefix, options.range_end),
      Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.kv->Range(ctx, req, &resp);
      }));
  RangeResult result;
  result.revision = resp.header().revision();
  result.more = resp.more();
  result.count = resp.count();
  result.kvs.resize(resp.kvs_size());
  for (int i = 0; i < resp.kvs_size(); ++i) {
    MoveKv(resp.mutable_kvs(i), &result.kvs[i]);
  }
  return result;
}

absl::StatusOr<int64_t> EtcdClient::Put(absl::string_view key,
                                        absl::string_view value,
                                        int64_t lease) {
  etcdserverpb::PutRequest req;
  req.set_key(std::string(key));
  req.set_value(std::string(value));
  req.set_lease(lease);
  etcdserverpb::PutResponse resp;
  RANGEFS_RETURN_IF_ERROR(
      core_->Invoke(absl::StrCat("Put ", Printable(key)), Retry::kIfNotSent,
                    [&](Endpoint& ep, grpc::ClientContext* ctx) {
                      return ep.kv->Put(ctx, req, &resp);
                    }));
  return resp.header().revision();
}

absl::StatusOr<int64_t> EtcdClient::Delete(absl::string_view key,
                                           const RangeOptions& options) {
  etcdserverpb::DeleteRangeRequest req;
  SetKeyRange(key, options.prefix, options.range_end, &req);
  etcdserverpb::DeleteRangeResponse resp;
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      RangeWhat("Delete", key, options.prefix, options.range_end),
      Retry::kIfNotSent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.kv->DeleteRange(ctx, req, &resp);
      }));
  return resp.deleted();
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(
    const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse resp;
  std::string what = "Txn";
  if (request.compare_size() > 0) {
    absl::StrAppend(&what, " on ", Printable(request.compare(0).key()));
  }
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      what, Retry::kIfNotSent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.kv->Txn(ctx, request, &resp);
      }));
  return resp;
}

absl::Status EtcdClient::Compact(int64_t revision, bool physical) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(physical);
  etcdserverpb::CompactionResponse resp;
  return core_->Invoke(absl::StrCat("Compact ", revision), Retry::kIfNotSent,
                       [&](Endpoint& ep, grpc::ClientContext* ctx) {
                         return ep.kv->Compact(ctx, req, &resp);
                       });
}

absl::StatusOr<etcdserverpb::StatusResponse> EtcdClient::Status(
    const std::string& endpoint) {
  int pinned = -1;
  if (!endpoint.empty()) {
    pinned = core_->IndexOf(endpoint);
    if (pinned < 0) {
      return absl::InvalidArgumentError(absl::StrCat("etcd Status: '", endpoint,
                                                     "' is not one of ",
                                                     core_->EndpointList()));
    }
  }
  etcdserverpb::StatusRequest req;
  etcdserverpb::StatusResponse resp;
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      "Status", Retry::kIdempotent,
      [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.maintenance->Status(ctx, req, &resp);
      },
      pinned));
  return resp;
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(absl::Duration ttl) {
  int64_t seconds = absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)));
  seconds = std::max<int64_t>(seconds, 1);
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(seconds);
  etcdserverpb::LeaseGrantResponse resp;
  const std::string what = absl::StrCat("LeaseGrant ttl=", seconds, "s");
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      what, Retry::kIfNotSent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.lease->LeaseGrant(ctx, req, &resp);
      }));
  if (!resp.error().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd ", what, ": ", resp.error()));
  }
  return resp.id();
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease_id) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse resp;
  int calls = 0;
  absl::Status s =
      core_->Invoke(absl::StrCat("LeaseRevoke ", lease_id), Retry::kIdempotent,
                    [&](Endpoint& ep, grpc::ClientContext* ctx) {
                      ++calls;
                      return ep.lease->LeaseRevoke(ctx, req, &resp);
                    });
  // A retry after a revoke that did reach etcd finds no lease: that is done.
  if (absl::IsNotFound(s) && calls > 1) return absl::OkStatus();
  return s;
}

absl::StatusOr<int64_t> EtcdClient::LeaseTimeToLive(int64_t lease_id) {
  etcdserverpb::LeaseTimeToLiveRequest req;
  req.set_id(lease_id);
  etcdserverpb::LeaseTimeToLiveResponse resp;
  const std::string what = absl::StrCat("LeaseTimeToLive ", lease_id);
  RANGEFS_RETURN_IF_ERROR(core_->Invoke(
      what, Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
        return ep.lease->LeaseTimeToLive(ctx, req, &resp);
      }));
  // etcd reports -1 for an expired or unknown lease (0: under 1 s left).
  if (resp.ttl() < 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd ", what, ": lease expired or unknown"));
  }
  return resp.ttl();
}

absl::StatusOr<std::unique_ptr<LeaseKeepAlive>> EtcdClient::KeepAlive(
    int64_t lease_id, absl::Duration ttl, std::function<void()> on_lost) {
  if (lease_id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd KeepAlive: bad lease id ", lease_id));
  }
  if (ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat("etcd KeepAlive ", lease_id,
                                                   ": ttl must be >= 1s, got ",
                                                   absl::FormatDuration(ttl)));
  }
  auto state = std::make_shared<internal::KeepAliveState>();
  state->core = core_;
  state->lease_id = lease_id;
  state->ttl = ttl;
  state->on_lost = std::move(on_lost);
  std::unique_ptr<LeaseKeepAlive> handle(new LeaseKeepAlive(state));
  handle->thread_ = std::thread([state] { state->Run(); });
  return handle;
}

absl::StatusOr<std::unique_ptr<Watch>> EtcdClient::StartWatch(
    const WatchOptions& options,
    std::function<void(const WatchUpdate&)> callback) {
  if (options.key.empty() && !options.prefix) {
    return absl::InvalidArgumentError("etcd StartWatch: empty key");
  }
  if (!callback) {
    return absl::InvalidArgumentError("etcd StartWatch: null callback");
  }
  if (options.start_revision < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd StartWatch: negative start_revision ", options.start_revision));
  }
  auto state = std::make_shared<internal::WatchState>();
  state->core = core_;
  SetKeyRange(options.key, options.prefix, options.range_end, &state->create);
  state->create.set_progress_notify(true);
  state->create.set_prev_kv(options.prev_kv);
  state->next_revision = options.start_revision;
  state->callback = std::move(callback);
  std::unique_ptr<Watch> handle(new Watch(state));
  handle->thread_ = std::thread([state] { state->Run(); });
  handle->watchdog_ = std::thread([state] { state->Watchdog(); });
  return handle;
}

Watch::Watch(std::shared_ptr<internal::WatchState> state)
    : state_(std::move(state)) {}

Watch::~Watch() {
  {
    absl::MutexLock l(&state_->mu);
    state_->stopping = true;
    if (state_->ctx != nullptr) state_->ctx->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

int64_t Watch::last_revision() const {
  const int64_t next = state_->next_revision.load();
  return next > 0 ? next - 1 : 0;
}

bool Watch::connected() const { return state_->connected.load(); }

bool Watch::stopped() const { return state_->stopped.load(); }

std::string Watch::endpoint() const {
  absl::MutexLock l(&state_->mu);
  return state_->endpoint;
}

LeaseKeepAlive::LeaseKeepAlive(std::shared_ptr<internal::KeepAliveState> state)
    : state_(std::move(state)) {}

LeaseKeepAlive::~LeaseKeepAlive() {
  {
    absl::MutexLock l(&state_->mu);
    state_->stopping = true;
    if (state_->ctx != nullptr) state_->ctx->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t LeaseKeepAlive::lease_id() const { return state_->lease_id; }

bool LeaseKeepAlive::lost() const { return state_->lost.load(); }

int64_t LeaseKeepAlive::last_ttl() const { return state_->last_ttl.load(); }

}  // namespace etcd
}  // namespace rangefs
