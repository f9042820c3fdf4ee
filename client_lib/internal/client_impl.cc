#include "client_lib/internal/client_impl.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/clock.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "client_lib/client.h"
#include "client_lib/fs.h"
#include "client_lib/internal/client_hooks.h"
#include "client_lib/internal/dataset_impl.h"
#include "client_lib/internal/file_impl.h"
#include "client_lib/internal/local_node.h"
#include "client_lib/io_threads.h"
#include "client_lib/mountd/mount_status.h"
#include "loadbalancer/hedge.h"
#include "loadbalancer/latency_tracker.h"
#include "loadbalancer/node_health.h"
#include "loadbalancer/registry.h"
#include "namespace/clusters.h"
#include "namespace/ec_layout.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/keys.h"
#include "namespace/layout.h"
#include "namespace/layout_cache.h"
#include "namespace/record_gate.h"
#include "namespace/store.h"
#include "namespace/subtree_snapshot.h"

namespace rangefs {
namespace client_internal {
namespace {

LatencyHistogram ToLatencyHistogram(const lb::HistogramSnapshot& h) {
  LatencyHistogram out;
  out.upper_bounds_seconds = h.upper_bounds_seconds;
  out.counts = h.counts;
  out.sum_seconds = h.sum_seconds;
  out.count = h.count;
  out.min_seconds = h.min_seconds;
  out.max_seconds = h.max_seconds;
  return out;
}

}  // namespace

ClientImpl::~ClientImpl() {
  // Real time: the caller's clock may be a fake that does not move.
  const absl::Time give_up = absl::Now() + options_.teardown_timeout;
  node_watch_.reset();
  live_watch_.reset();
  {
    // No call runs any more; end the reads the borrowed rings still have
    // in flight (abandoned ones: a hung mount). A ring whose reads do not
    // end is leaked, as the kernel may still write into its buffers.
    absl::MutexLock l(&rings_mu_);
    for (std::unique_ptr<ReadRing>& r : rings_) {
      for (absl::Time now = absl::Now(); r->inflight() > 0 && now < give_up;
           now = absl::Now()) {
        r->SubmitAndWait(std::min(give_up - now, absl::Milliseconds(100)));
        ReapCallerRing(*r);
      }
      if (r->inflight() > 0) {
        RANGEFS_LOG(WARNING) << "client: " << r->inflight()
                             << " mount read(s) still in flight at close; "
                                "their ring is left open";
        r.release();  // NOLINT: deliberately leaked
      }
    }
  }
  std::vector<std::shared_ptr<NodeRuntime>> nodes;
  {
    absl::MutexLock l(&nodes_mu_);
    for (auto& [id, n] : nodes_) nodes.push_back(n);
  }
  // A node marked dead (its reads stalled or timed out) is hung, not slow:
  // its threads blocked in reads are not waited for at all; nor are those
  // of a node once it has answered none of its attempts for its stall
  // delay.
  const absl::Time now = clock_->MonotonicNow();
  const absl::Time real_now = absl::Now();
  std::vector<std::pair<NodeRuntime*, absl::Duration>> delays;
  std::vector<absl::Time> deadlines;
  for (const auto& n : nodes) {
    absl::Time d = give_up;
    if (health_.State(n->id()).dead) {
      d = absl::InfinitePast();
    } else {
      const absl::Time silent = n->SilentFor(StallDelay(n.get(), delays));
      if (silent != absl::InfiniteFuture()) {
        d = std::min(d, real_now + (silent - now));
      }
    }
    deadlines.push_back(d);
    n->BeginStop();
  }
  // The nodes' NFS connections are stopped: their loops answer what they
  // held (never blocking but in poll) before the nodes' threads are waited.
  core_->nfs_loops().Shutdown(give_up);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::shared_ptr<NodeRuntime>& n = nodes[i];
    const int left = n->Shutdown(deadlines[i]);
    if (left > 0) {
      RANGEFS_LOG(WARNING) << "client: node " << n->id() << ": " << left
                           << " I/O thread(s) still blocked in a read at "
                              "close (hung mount?) are left to end with it";
    }
  }
}

absl::Status ClientImpl::Init() {
  const ClientOptions& o = options_;
  RANGEFS_RETURN_IF_ERROR(ns::ValidateClusterName(o.cluster));
  if (o.max_io_size < 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_io_size ", o.max_io_size, " is below 4096"));
  }
  if (o.max_inflight_per_node < 1 || o.max_inflight_global < 1) {
    return absl::InvalidArgumentError("in-flight caps must be >= 1");
  }
  if (o.io_uring_depth < 1) {
    return absl::InvalidArgumentError("io_uring_depth must be >= 1");
  }
  if (o.nfs_event_loops < 0 || o.nfs_event_loops > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nfs_event_loops must be in 0..256, not ", o.nfs_event_loops));
  }
  if (o.nfs_connections_per_node < 1 || o.nfs_connections_per_node > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("nfs_connections_per_node must be in 1..64, not ",
                     o.nfs_connections_per_node));
  }
  if (o.verify == VerifyMode::kSampled && o.verify_sample_every < 1) {
    return absl::InvalidArgumentError("verify_sample_every must be >= 1");
  }
  RANGEFS_ASSIGN_OR_RETURN(policy_, lb::NewPolicy(o.lb_policy));
  if (o.local_node.empty()) local_hosts_ = LocalInterfaceHosts();
  if (o.mount_status_file != "-" && o.data_path != DataPath::kAgent &&
      o.data_path != DataPath::kNfs) {
    status_path_ = o.mount_status_file.empty()
                       ? absl::StrCat(o.mount_root, "/.rangefs-mounts")
                       : o.mount_status_file;
  }
  kv_ = hooks_.kv;
  if (kv_ == nullptr) {
    if (o.etcd_endpoints.empty()) {
      return absl::InvalidArgumentError(
          "ClientOptions: etcd_endpoints is required");
    }
    RANGEFS_ASSIGN_OR_RETURN(
        etcd_, etcd::OpenEtcdClient({.endpoints = o.etcd_endpoints,
                                     .ca_file = o.etcd_ca_file,
                                     .cert_file = o.etcd_cert_file,
                                     .key_file = o.etcd_key_file,
                                     .username = o.etcd_username,
                                     .password = o.etcd_password}));
    own_kv_ = ns::NewEtcdKv(etcd_.get());
    kv_ = own_kv_.get();
  }
  cache_ = hooks_.layout_cache;
  if (cache_ == nullptr) {
    ns::LayoutCacheOptions co;
    co.cluster = o.cluster;
    co.max_staleness = o.max_layout_staleness;
    co.clock = hooks_.clock;
    RANGEFS_ASSIGN_OR_RETURN(own_cache_, ns::LayoutCache::Open(kv_, co));
    cache_ = own_cache_.get();
  }
  store_ = ns::NewKvStore(kv_, {.cluster = o.cluster, .clock = hooks_.clock});

  // Node records and live records: load, then watch from that revision.
  const std::string np = keys_.NodePrefix();
  const std::string lp = keys_.LivePrefix();
  RANGEFS_ASSIGN_OR_RETURN(ns::KvRange nodes,
                           kv_->Range(np, ns::PrefixRangeEnd(np), 0, 0));
  for (const ns::KvEntry& e : nodes.kvs) ApplyNode(e);
  if (nodes.kvs.empty()) WarnIfEmptyCluster();
  RANGEFS_ASSIGN_OR_RETURN(
      ns::KvRange lives,
      kv_->Range(lp, ns::PrefixRangeEnd(lp), 0, nodes.revision));
  for (const ns::KvEntry& e : lives.kvs) ApplyLive(e);
  RANGEFS_ASSIGN_OR_RETURN(
      node_watch_,
      kv_->Watch(np, ns::PrefixRangeEnd(np), nodes.revision + 1,
                 [this](const ns::KvWatchUpdate& u) { OnNodeEvent(u); }));
  RANGEFS_ASSIGN_OR_RETURN(
      live_watch_,
      kv_->Watch(lp, ns::PrefixRangeEnd(lp), nodes.revision + 1,
                 [this](const ns::KvWatchUpdate& u) { OnLiveEvent(u); }));
  return absl::OkStatus();
}

void ClientImpl::WarnIfEmptyCluster() {
  const std::string endpoint = options_.etcd_endpoints.empty()
                                   ? std::string("the given etcd")
                                   : options_.etcd_endpoints;
  absl::StatusOr<std::string> why =
      ns::EmptyClusterMessage(*kv_, options_.cluster, endpoint);
  if (why.ok() && !why->empty()) {
    RANGEFS_LOG(WARNING) << "rangefs client: " << *why;
  }
}

NodeRuntime* ClientImpl::Node(const std::string& id) {
  {
    absl::ReaderMutexLock l(&nodes_mu_);
    auto it = nodes_.find(id);
    if (it != nodes_.end()) return it->second.get();
  }
  NodeRuntime* n;
  bool created = false;
  {
    absl::MutexLock l(&nodes_mu_);
    auto& slot = nodes_[id];
    if (slot == nullptr) {
      slot = std::make_shared<NodeRuntime>(core_, id);
      slot->SetDefaultMount(options_.mount_root);
      created = true;
    }
    n = slot.get();
  }
  if (created && !status_path_.empty()) {
    // status_mu_ comes before nodes_mu_. A reload in between sets the same.
    absl::ReaderMutexLock sl(&status_mu_);
    n->set_mount_down(MountDownLocked(id));
  }
  return n;
}

bool ClientImpl::MountDownLocked(const std::string& id) {
  if (!status_valid_) return false;
  const mountd::MountStatusEntry* e = status_.Find(id);
  return e == nullptr || e->health != mountd::MountHealth::kHealthy;
}

void ClientImpl::MaybeReloadMountStatus() {
  if (status_path_.empty()) return;
  const int64_t now = absl::ToUnixNanos(clock_->MonotonicNow());
  if (now < status_next_ns_.load(std::memory_order_relaxed)) return;
  if (!status_mu_.TryLock()) return;  // another caller is reloading
  status_next_ns_.store(
      now + absl::ToInt64Nanoseconds(options_.mount_recheck_interval));
  absl::StatusOr<mountd::MountStatusFile> f =
      mountd::ReadMountStatus(status_path_);
  const bool was_valid = status_valid_;
  status_valid_ = false;
  if (f.ok()) {
    const absl::Time updated = absl::FromUnixMillis(f->updated_unix_ms);
    if (clock_->Now() - updated <= options_.mount_status_max_age) {
      status_valid_ = true;
      status_ = std::move(*f);
    } else if (was_valid) {
      RANGEFS_LOG(WARNING) << status_path_ << " is stale (updated "
                           << absl::FormatTime(updated)
                           << "): rangefs-mountd down? ignoring it";
    }
  } else if (!absl::IsNotFound(f.status())) {
    RANGEFS_LOG(WARNING) << "mount status: " << f.status();
  }
  {
    absl::ReaderMutexLock l(&nodes_mu_);
    for (auto& [id, n] : nodes_) {
      const bool down = MountDownLocked(id);
      if (down != n->mount_down()) {
        RANGEFS_LOG(INFO) << "node " << id << ": rangefs-mountd reports its "
                          << "mount " << (down ? "unusable" : "healthy");
      }
      n->set_mount_down(down);
    }
  }
  status_mu_.Unlock();
}

void ClientImpl::ApplyNode(const ns::KvEntry& kv) {
  std::string id;
  if (!keys_.ParseNode(kv.key, &id)) return;
  absl::StatusOr<v1::NodeRecord> rec =
      ns::DecodeNodeRecord(kv.key, id, kv.value);
  if (!rec.ok()) {
    RANGEFS_LOG(WARNING) << rec.status() << "; node taken out of service";
    health_.SetAdminState(id, lb::AdminState::kDisabled);
    return;
  }
  v1::NodeRecord& r = *rec;
  const bool local =
      IsLocalNode(r.id(), {r.addresses().begin(), r.addresses().end()},
                  options_.local_node, local_hosts_);
  if (local && !r.export_path().empty()) {
    r.set_mount_path(r.export_path());  // this host's own export directory
  }
  Node(r.id())->set_local(local);
  Node(r.id())->SetRecord(r, options_.mount_root);
  lb::AdminState s = lb::AdminState::kActive;
  if (r.admin_state() == v1::DRAINING) s = lb::AdminState::kDraining;
  if (r.admin_state() == v1::DISABLED) s = lb::AdminState::kDisabled;
  health_.SetAdminState(r.id(), s);
}

void ClientImpl::ApplyLive(const ns::KvEntry& kv) {
  std::string id;
  if (!keys_.ParseLive(kv.key, &id)) return;
  absl::StatusOr<v1::LiveRecord> r = ns::DecodeLiveRecord(kv.key, id, kv.value);
  if (!r.ok()) {
    RANGEFS_LOG(WARNING) << r.status() << "; node treated as not live";
    health_.SetLive(id, false, false);
    absl::MutexLock l(&capacity_mu_);
    capacity_.erase(id);
    return;
  }
  health_.SetLive(id, true, r->health() == v1::LiveRecord::DRAINING);
  Node(id)->SetNfsExport(r->nfs_export());
  absl::MutexLock l(&capacity_mu_);
  capacity_[id] = {r->total_bytes(), r->free_bytes()};
}

void ClientImpl::OnNodeEvent(const ns::KvWatchUpdate& u) {
  for (const ns::KvEvent& e : u.events) {
    std::string id;
    if (!keys_.ParseNode(e.kv.key, &id)) continue;
    if (e.deleted) {
      health_.SetAdminState(id, lb::AdminState::kDisabled);
    } else {
      ApplyNode(e.kv);
    }
  }
}

void ClientImpl::OnLiveEvent(const ns::KvWatchUpdate& u) {
  for (const ns::KvEvent& e : u.events) {
    std::string id;
    if (!keys_.ParseLive(e.kv.key, &id)) continue;
    if (e.deleted) {
      health_.SetLive(id, false, false);  // lease gone: no new reads
      absl::MutexLock l(&capacity_mu_);
      capacity_.erase(id);
    } else {
      ApplyLive(e.kv);
    }
  }
}

absl::StatusOr<std::unique_ptr<File>> ClientImpl::OpenFile(
    absl::string_view path) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->Lookup(path));
  if (!ns::IsReady(l->header)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not ready (state ",
                     ns::FileStateName(l->header.state()), ")"));
  }
  return std::unique_ptr<File>(new FileImpl(this, std::move(l), false));
}

absl::StatusOr<std::unique_ptr<File>> ClientImpl::OpenFile(
    absl::string_view path, int64_t at_revision) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->LookupAt(path, at_revision));
  if (!ns::IsReady(l->header)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " was not ready at revision ", at_revision));
  }
  return std::unique_ptr<File>(new FileImpl(this, std::move(l), true));
}

FileInfo ToInfo(const std::string& path, const v1::FileLayout& l,
                int64_t mod_revision) {
  return FileInfo{.path = path,
                  .size = l.size(),
                  .file_id = l.file_id(),
                  .generation = l.generation(),
                  .content_generation = l.content_generation(),
                  .ready = ns::IsReady(l),
                  .mod_revision = mod_revision};
}

absl::StatusOr<FileInfo> ClientImpl::Stat(absl::string_view path) {
  RANGEFS_ASSIGN_OR_RETURN(std::shared_ptr<const ns::CachedLayout> l,
                           cache_->Lookup(path));
  return ToInfo(l->path, l->header, l->mod_revision);
}

absl::StatusOr<std::vector<FileInfo>> ClientImpl::List(absl::string_view dir) {
  // Through the layout cache, which keeps the layouts it lists: opening a
  // listed file then makes no etcd request.
  RANGEFS_ASSIGN_OR_RETURN(std::vector<ns::FileEntry> files, cache_->List(dir));
  std::vector<FileInfo> out;
  out.reserve(files.size());
  for (const ns::FileEntry& f : files) {
    out.push_back(ToInfo(f.path, f.layout, f.mod_revision));
    out.back().invalid = f.invalid;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Dataset>> ClientImpl::OpenDataset(
    absl::string_view dir, int64_t at_revision) {
  RANGEFS_ASSIGN_OR_RETURN(ns::SubtreeSnapshot s,
                           ns::LoadSubtree(*kv_, keys_, dir, at_revision));
  return std::unique_ptr<Dataset>(new DatasetImpl(this, std::move(s)));
}

std::vector<absl::StatusOr<size_t>> ClientImpl::ReadV(
    absl::Span<const FileReadRange> ranges, const ReadOptions& options) {
  std::vector<Request> reqs;
  reqs.reserve(ranges.size());
  for (const FileReadRange& r : ranges) {
    auto* f = dynamic_cast<FileImpl*>(r.file);
    if (f != nullptr && f->client() != static_cast<FileHost*>(this)) {
      f = nullptr;
    }
    reqs.push_back({f, r.offset, r.dst});
  }
  CallReport report;
  std::vector<absl::StatusOr<size_t>> out = Execute(reqs, options, &report);
  HintReadV(reqs, out, report);
  return out;
}

ClientStats ClientImpl::Stats() {
  {
    // Reads that ended on idle borrowed rings: settle them first.
    absl::MutexLock l(&rings_mu_);
    for (ReadRing* r : idle_rings_) {
      if (r->inflight() > 0) {
        ReapCallerRing(*r);
        r->SubmitAndWait(absl::ZeroDuration());
      }
    }
  }
  ClientStats s;
  s.reads = reads_.load();
  s.pieces = pieces_.load();
  s.bytes = bytes_.load();
  s.retries = retries_.load();
  s.hedges = hedges_.load();
  s.window_refills = window_refills_.load();
  s.hedge_wins = core_->hedge_wins();
  s.checksum_failures = core_->checksum_failures();
  s.deadline_exceeded = deadline_exceeded_.load();
  s.unavailable = unavailable_.load();
  s.layout_aborts = layout_aborts_.load();
  s.layout_refreshes = layout_refreshes_.load();
  const ns::LayoutCacheStats cs = cache_->stats();
  s.stale_layout_serves = cs.stale_serves;
  s.layout_hits = cs.hits;
  s.layout_cold_lookups = cs.cold_lookups;
  s.etcd_requests = etcd_ != nullptr ? etcd_->requests_sent() : 0;
  const FlightStats fs = flights_->stats();
  s.shared_pieces = fs.shared_pieces;
  s.shared_bytes = fs.shared_bytes;
  s.shared_released = fs.released;
  s.shared_waiting = fs.waiting;
  s.ec_degraded_reads = ec_degraded_reads_.load();
  s.ec_reconstructed_bytes = ec_reconstructed_bytes_.load();
  s.ec_parity_hedges = ec_parity_hedges_.load();
  s.ec_parity_hedge_wins = ec_parity_hedge_wins_.load();
  s.ec_helper_reads = ec_helper_reads_.load();
  s.ec_helper_bytes_copied = ec_helper_bytes_copied_.load();
  s.ec_helper_bytes_in_place = ec_helper_bytes_in_place_.load();
  s.ec_decodes_cut_off = ec_decodes_cut_off_.load();
  s.ec_crc_mismatches = ec_crc_mismatches_.load();
  s.ec_unchecked_cells = ec_unchecked_cells_.load();
  s.latency = ToLatencyHistogram(latency_.GlobalCumulativeSnapshot());
  {
    absl::MutexLock l(&capacity_mu_);
    for (const auto& [id, c] : capacity_) {
      s.live_total_bytes += c.first;
      s.live_free_bytes += c.second;
    }
  }
  absl::ReaderMutexLock l(&nodes_mu_);
  for (auto& [id, n] : nodes_) {
    NodeCounters& c = n->counters();
    NodeStats ns;
    ns.node = id;
    ns.bytes = c.bytes.load();
    ns.requests = c.requests.load();
    ns.errors = c.errors.load();
    ns.timeouts = c.timeouts.load();
    ns.stalls = c.stalls.load();
    ns.moved = c.moved.load();
    ns.checksum_failures = c.checksum_failures.load();
    ns.mount_reads = c.mount_reads.load();
    ns.agent_reads = c.agent_reads.load();
    ns.uring_reads = c.uring_reads.load();
    ns.nfs_reads = c.nfs_reads.load();
    ns.caller_reads = c.caller_reads.load();
    ns.in_place_reads = c.in_place_reads.load();
    ns.cached_reads = c.cached_reads.load();
    ns.ec_helper_reads = c.ec_helper_reads.load();
    ns.local = n->local();
    if (ns.local) s.local_bytes += ns.bytes;
    ns.mount_reported_down = n->mount_down();
    ns.inflight = c.inflight.load();
    ns.queued = c.queued.load();
    ns.outstanding_bytes = c.outstanding_bytes.load();
    ns.admissible = Admissible(n.get());
    ns.latency = ToLatencyHistogram(latency_.NodeSnapshot(id));
    s.nodes.push_back(std::move(ns));
  }
  std::sort(
      s.nodes.begin(), s.nodes.end(),
      [](const NodeStats& a, const NodeStats& b) { return a.node < b.node; });
  return s;
}

absl::StatusOr<std::unique_ptr<Client>> OpenClient(const ClientOptions& options,
                                                   const ClientHooks& hooks) {
  auto c = std::make_unique<ClientImpl>(options, hooks);
  RANGEFS_RETURN_IF_ERROR(c->Init());
  return std::unique_ptr<Client>(std::move(c));
}

}  // namespace client_internal

absl::StatusOr<std::unique_ptr<Client>> Client::Open(
    const ClientOptions& options) {
  return client_internal::OpenClient(options, {});
}

}  // namespace rangefs
