// File: etcd_client.h
//
// A small etcd v3 client over gRPC: KV (Range, Put, Delete, Txn, Compact),
// Maintenance.Status, leases (grant, revoke, time-to-live, background
// keep-alive) and watches that resume after a disconnect. It talks to etcd
// 3.4 with the project's trimmed protos (proto/etcd/rpc.proto).
//
//   RANGEFS_ASSIGN_OR_RETURN(auto etcd, etcd::EtcdClient::Open(
//       {.endpoints = "127.0.0.1:2379,127.0.0.1:22379"}));
//   RANGEFS_ASSIGN_OR_RETURN(int64_t rev, etcd->Put("/rangefs/v1/x", "v"));
//   RANGEFS_ASSIGN_OR_RETURN(auto all,
//                            etcd->Range("/rangefs/v1/", {.prefix = true}));
//   auto watch = etcd->StartWatch(
//       {.key = "/rangefs/v1/", .prefix = true, .start_revision = rev + 1},
//       [](const etcd::WatchUpdate& u) { ... });
//
// Endpoints and failover: the client keeps one gRPC channel per endpoint and
// sends each call to the "current" endpoint; UNAVAILABLE or
// DEADLINE_EXCEEDED moves the current endpoint to the next one. Idempotent
// calls (Range, Status, LeaseTimeToLive, LeaseRevoke, the internal
// Authenticate) are retried up to `max_attempts` times with exponential
// backoff. Put, Delete, Txn, Compact and LeaseGrant are retried only when the
// request surely did not reach etcd (the connection could not be
// established); otherwise their error is returned as is, because the write
// may have happened.
//
// Errors: gRPC codes are kept (they match absl::StatusCode) and the message
// says what and where: "etcd Range /rangefs/v1/x at 127.0.0.1:2379: ...".
// A compacted or future revision is OUT_OF_RANGE (etcd's own code). When no
// member could be reached within the attempts, UNAVAILABLE names the
// endpoints and carries the last error. Every RPC has a deadline
// (call_timeout), so no call hangs even if every member is stopped.
#ifndef RANGEFS_NAMESPACE_ETCD_ETCD_CLIENT_H_
#define RANGEFS_NAMESPACE_ETCD_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/etcd/rpc.pb.h"

namespace rangefs {
namespace etcd {

struct EtcdClientOptions {
  // Comma-separated "host:port" list; an "http://" or "https://" prefix is
  // accepted and dropped. Required.
  std::string endpoints;
  // Deadline of each RPC attempt.
  absl::Duration call_timeout = absl::Seconds(5);
  // Attempts per idempotent call (>= 1), across endpoints.
  int max_attempts = 4;
  // Backoff between attempts: doubles from initial_backoff up to max_backoff.
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(1);
  // TLS when ca_file is set. cert_file and key_file (both or neither) give a
  // client certificate. PEM files, read by Open.
  std::string ca_file, cert_file, key_file;
  // etcd authentication: when username is set, the client calls
  // Auth.Authenticate on first use and sends the token as metadata "token";
  // on "invalid auth token" it authenticates again once and retries.
  std::string username, password;
};

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct RangeOptions {
  std::string range_end;  // Explicit [key, range_end).
  bool prefix = false;    // range_end = PrefixRangeEnd(key) (key_range.h);
                          // wins over range_end.
  int64_t limit = 0;      // 0: no limit.
  int64_t revision = 0;   // 0: latest.
  bool keys_only = false;
  bool count_only = false;
  bool serializable = false;  // Served by the member alone (may be stale).
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // Store revision the range was served at.
  bool more = false;     // More keys beyond `limit`.
  int64_t count = 0;     // Keys in the whole range.
};

class Watch;
class LeaseKeepAlive;

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // For kDelete: key and mod_revision (the delete's revision).
  KeyValue prev_kv;  // Set only with WatchOptions::prev_kv (empty if none).
};

struct WatchUpdate {
  std::vector<WatchEvent> events;  // Never empty unless `compacted`.
  int64_t revision = 0;            // Header revision of this response.
  // The start revision was compacted: the watch has stopped; the caller must
  // re-list and re-watch.
  bool compacted = false;
  int64_t compact_revision = 0;
};

struct WatchOptions {
  std::string key;
  bool prefix = false;    // range_end = PrefixRangeEnd(key) (key_range.h);
                          // wins over range_end.
  std::string range_end;  // Explicit [key, range_end).
  // First revision to deliver; 0: changes after the current revision.
  int64_t start_revision = 0;
  bool prev_kv = false;
};

namespace internal {
class Core;
struct WatchState;
struct KeepAliveState;
}  // namespace internal

// Thread-safe. Watch and LeaseKeepAlive handles share the client's
// connections and may outlive the EtcdClient object.
class EtcdClient {
 public:
  // Validates `options` and creates the channels. INVALID_ARGUMENT on bad
  // options (empty endpoints, max_attempts < 1, non-positive timeout, a
  // missing or unreadable PEM file). Does not contact etcd.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Open(
      const EtcdClientOptions& options);
  virtual ~EtcdClient();

  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Unary RPCs sent so far (every attempt of Range, Put, Txn, Lease*, ...;
  // watch and keep-alive streams not counted). Tests and benchmarks count
  // a job's etcd round trips with it.
  uint64_t requests_sent() const;

  // Reads `key` (or a range, see RangeOptions). Blocks. OUT_OF_RANGE for a
  // compacted or future revision.
  absl::StatusOr<RangeResult> Range(absl::string_view key,
                                    const RangeOptions& options = {});
  // Returns the new store revision.
  absl::StatusOr<int64_t> Put(absl::string_view key, absl::string_view value,
                              int64_t lease = 0);
  // Deletes `key` (or a range: prefix/range_end are honoured; the other
  // RangeOptions fields are ignored). Returns the number of keys deleted.
  absl::StatusOr<int64_t> Delete(absl::string_view key,
                                 const RangeOptions& options = {});
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request);
  // Compacts history up to `revision`. OUT_OF_RANGE if already compacted
  // there or if `revision` is in the future.
  absl::Status Compact(int64_t revision, bool physical = true);
  // Status of member `endpoint` (one of the client's endpoints, retried on
  // that member only), or of the current endpoint when empty.
  absl::StatusOr<etcdserverpb::StatusResponse> Status(
      const std::string& endpoint = "");

  // Grants a lease (TTL rounded up to whole seconds, at least 1). Returns its
  // id.
  absl::StatusOr<int64_t> LeaseGrant(absl::Duration ttl);
  // Revokes the lease and deletes its keys. NOT_FOUND if unknown.
  absl::Status LeaseRevoke(int64_t lease_id);
  // Remaining TTL in whole seconds (0: under 1 s left); NOT_FOUND if
  // expired or unknown.
  absl::StatusOr<int64_t> LeaseTimeToLive(int64_t lease_id);
  // Keeps `lease_id` alive from a background thread (every ttl/3, later the
  // TTL etcd reports / 3) over the LeaseKeepAlive stream, reconnecting across
  // endpoints. `on_lost` (may be empty) is called once, from that thread,
  // when etcd says the lease expired (TTL <= 0) or it could not be renewed
  // before its TTL ran out; the thread then stops. Destroying the handle
  // stops and joins the thread; it does not revoke the lease. The join waits
  // for a running on_lost, so on_lost must not destroy its own handle.
  // INVALID_ARGUMENT for ttl < 1 s or lease_id <= 0.
  absl::StatusOr<std::unique_ptr<LeaseKeepAlive>> KeepAlive(
      int64_t lease_id, absl::Duration ttl, std::function<void()> on_lost);
  // Watches from a background thread; `callback` is called from that thread,
  // in revision order, never under the client's locks. After a disconnect it
  // reconnects (next endpoint, with backoff) and resumes from the last seen
  // revision + 1, so no event is lost or duplicated. On compaction it
  // delivers one update with compacted=true and stops. Destroying the Watch
  // cancels the stream and joins the thread (waiting for a running
  // callback; the callback must not destroy its own Watch).
  // INVALID_ARGUMENT for an empty key or a null callback.
  absl::StatusOr<std::unique_ptr<Watch>> StartWatch(
      const WatchOptions& options,
      std::function<void(const WatchUpdate&)> callback);

 private:
  explicit EtcdClient(std::shared_ptr<internal::Core> core);
  std::shared_ptr<internal::Core> core_;
};

// A running watch (see EtcdClient::StartWatch). Thread-safe.
class Watch {
 public:
  virtual ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  // Revision of the last delivered event (or, before any event, the
  // revision the watch started after). 0 until known.
  int64_t last_revision() const;
  // True while a watch stream is established (created by etcd).
  bool connected() const;
  // True once the watch stopped for good (after a compacted update).
  bool stopped() const;
  // Endpoint of the current (or last) stream, "" before the first.
  std::string endpoint() const;

 private:
  friend class EtcdClient;
  explicit Watch(std::shared_ptr<internal::WatchState> state);
  std::shared_ptr<internal::WatchState> state_;
  std::thread thread_;
  std::thread watchdog_;
};

// A lease kept alive in the background (see EtcdClient::KeepAlive).
// Thread-safe.
class LeaseKeepAlive {
 public:
  virtual ~LeaseKeepAlive();
  LeaseKeepAlive(const LeaseKeepAlive&) = delete;
  LeaseKeepAlive& operator=(const LeaseKeepAlive&) = delete;
  int64_t lease_id() const;
  // True once the lease is known (or presumed) expired; on_lost has been or
  // is being called.
  bool lost() const;
  // TTL (seconds) from etcd's last keep-alive response; 0 before one.
  int64_t last_ttl() const;

 private:
  friend class EtcdClient;
  explicit LeaseKeepAlive(std::shared_ptr<internal::KeepAliveState> state);
  std::shared_ptr<internal::KeepAliveState> state_;
  std::thread thread_;
};

}  // namespace etcd
}  // namespace rangefs

#endif  // RANGEFS_NAMESPACE_ETCD_ETCD_CLIENT_H_
