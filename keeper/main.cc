// rangefs-keeper: keeps every file at its replica count on healthy, active
// storage nodes (keeper/README.md). Any number may run; one is active,
// elected through etcd. Parses flags, wires the election and the keeper,
// runs rounds until SIGTERM/SIGINT.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/atomic_file.h"
#include "base/flag_config.h"
#include "base/flags_usage.h"
#include "base/logging.h"
#include "base/metrics_server.h"
#include "keeper/convert_goals.h"
#include "keeper/election.h"
#include "keeper/keeper.h"
#include "keeper/metrics.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd/etcd_settings.h"
#include "namespace/etcd_kv.h"
#include "namespace/layout.h"
#include "namespace/store.h"
#include "proto/layout.pb.h"
#include "repair/ec_plan.h"

ABSL_FLAG(std::string, etcd, "",
          "Same as --etcd_endpoints (the name every rangefs tool takes).");
ABSL_FLAG(std::string, etcd_endpoints, "127.0.0.1:2379",
          "Comma-separated etcd endpoints.");
ABSL_FLAG(std::string, cluster, "default", "Cluster name in the namespace.");
ABSL_FLAG(std::string, id, "",
          "This keeper's id (in the leader key and logs); empty: "
          "<hostname>-<pid>.");
ABSL_FLAG(double, lease_ttl_s, 10,
          "Leader lease TTL in seconds (>= 1): a dead active keeper is "
          "replaced within about this.");
ABSL_FLAG(double, interval_s, 5,
          "Seconds between rounds (and between campaigns of a standby).");
ABSL_FLAG(double, dead_after_s, 600,
          "A node whose live record is absent this long is dead and its "
          "replicas are re-created elsewhere.");
ABSL_FLAG(double, delete_grace_s, 3600,
          "An object that left every layout is deleted no sooner than this "
          "after it left, and only once etcd compacted past that revision.");
ABSL_FLAG(int, parallel_copies, 4, "Copies running at once.");
ABSL_FLAG(double, orphan_scan_interval_s, 3600,
          "How often every node's objects are listed to find orphans "
          "(objects in no layout and no trash, older than the grace); 0: "
          "never.");
ABSL_FLAG(double, rebalance_tolerance, 0.10,
          "When nothing needs repair, replicas move from the fullest to the "
          "emptiest up nodes until every one is within this fraction of the "
          "mean fill; 0: no rebalancing.");
ABSL_FLAG(int64_t, copy_bytes_per_sec, 400 << 20,
          "Cluster-wide cap on the bytes/s of all copies together; 0: none "
          "(each agent also caps its own: rangefs-node "
          "--copy_max_bytes_per_sec).");
ABSL_FLAG(int64_t, ec_rebuild_bytes_per_sec, 100 << 20,
          "Pace of each erasure-coded column rebuild, in rebuilt bytes/s (it "
          "reads k times that from the surviving columns); with "
          "--copy_bytes_per_sec, its share of that when lower; 0: unpaced.");
ABSL_FLAG(int64_t, convert_bytes_per_sec, 100 << 20,
          "Pace of each storage-policy conversion (rangefs-admin policy "
          "set), in bytes/s written or copied (parity columns, new "
          "replicas); with --copy_bytes_per_sec, its share of that when "
          "lower; 0: unpaced.");
ABSL_FLAG(int, parallel_conversions, 2,
          "Storage-policy conversions (files) running at once.");
ABSL_FLAG(int, test_exit_at_convert_step, 0,
          "Testing only: exit (status 9, no cleanup) at this step of the "
          "first storage-policy conversion (1: a new object written, 2: all "
          "written, 3: trash records written, 4: layout swapped); 0: never.");
ABSL_FLAG(bool, dry_run, false,
          "Print what a round would do now (replica moves: repairs, drains, "
          "rebalancing; erasure-coded column rebuilds; storage-policy "
          "conversions; nodes without a live record count as dead) and "
          "exit, changing nothing; needs no leadership.");
ABSL_FLAG(std::string, metrics_file, "",
          "Write Prometheus metrics (rangefs_keeper_*) to this file after "
          "every round and with each progress report (temp file + rename; "
          "e.g. for node_exporter's textfile collector); empty: none.");
ABSL_FLAG(int, metrics_port, 0,
          "Serve Prometheus metrics (rangefs_keeper_*, as of the moment of "
          "the scrape) at http://127.0.0.1:PORT/metrics; 0: no server.");
ABSL_FLAG(double, progress_interval_s, 5,
          "Publish a round's plan (moves, conversions pending per policy, "
          "ETAs) to `rangefs-admin status` and --metrics_file as soon as it "
          "is planned, then its progress while its moves and conversions "
          "run (also to the log) at most this often.");
ABSL_FLAG(double, etcd_timeout_s, 5, "Deadline of each etcd call.");
ABSL_FLAG(bool, test_exit_after_add, false,
          "Fault injection for tests: the process exits at once (status 9, "
          "no cleanup, as if killed) after the first step of its first move "
          "(new replica added, old one not yet removed).");
ABSL_FLAG(std::string, config, "",
          "rangefs config file (deploy/config/rangefs.conf.example); flags "
          "and $RANGEFS_ETCD/$RANGEFS_CLUSTER override it. Default: "
          "$RANGEFS_CONFIG.");
ABSL_FLAG(std::string, etcd_ca, "", "PEM CA for etcd TLS.");
ABSL_FLAG(std::string, etcd_cert, "", "PEM client certificate for etcd.");
ABSL_FLAG(std::string, etcd_key, "", "PEM client key for etcd.");
ABSL_FLAG(std::string, agent_ca, "",
          "PEM CA of the agents' certificates; set: TLS to agents.");
ABSL_FLAG(std::string, agent_cert, "",
          "PEM client certificate for agents doing mTLS; its identity must "
          "be on the agents' --writers (CopyObject and DeleteObject are "
          "writes).");
ABSL_FLAG(std::string, agent_key, "", "PEM key of --agent_cert.");

namespace {

std::string DefaultId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, "-", getpid());
}

// Set by the signal thread on SIGTERM/SIGINT.
absl::Notification stop;

// Writes the round's report for `rangefs-admin status`, under the leader
// lease. Best effort.
void PublishStatus(const rangefs::keeper::RoundReport& r, const std::string& id,
                   int64_t lease, const std::string& key,
                   rangefs::etcd::EtcdClient* etcd, bool in_round = false,
                   double eta_s = 0) {
  if (lease == 0) return;
  rangefs::v1::KeeperStatus s;
  s.set_keeper_id(id);
  s.set_revision(r.revision);
  s.set_updated_unix_ms(absl::ToUnixMillis(absl::Now()));
  s.set_files(r.files);
  s.set_dead_nodes(r.dead_nodes);
  s.set_draining_nodes(r.draining_nodes);
  s.set_missing_nodes(r.missing_nodes);
  s.set_moves_planned(r.moves_planned);
  s.set_moves_done(r.moves_done);
  s.set_moves_failed(r.moves_failed);
  s.set_stuck(r.stuck);
  s.set_under_replicated_files(r.under_replicated_files);
  s.set_under_replicated_bytes(r.under_replicated_bytes);
  s.set_bytes_planned(r.bytes_planned);
  s.set_bytes_copied(r.bytes_copied);
  s.set_trash_pending(r.trash_pending);
  s.set_trash_deleted(r.trash_deleted);
  s.set_in_round(in_round);
  s.set_eta_s(eta_s > 0 ? eta_s : 0);
  s.set_at_risk_files(r.at_risk_files);
  s.set_at_risk_bytes(r.at_risk_bytes);
  if (r.heal_starts != absl::InfiniteFuture()) {
    s.set_heal_starts_unix_ms(absl::ToUnixMillis(r.heal_starts));
  }
  s.set_dead_after_s(absl::ToDoubleSeconds(r.dead_after));
  for (const std::string& n : r.dead_node_ids) s.add_dead_node_ids(n);
  for (const auto& [policy, b] : r.convert_backlog) {
    rangefs::v1::KeeperStatus::PolicyConversions* c = s.add_conversions();
    c->set_policy(policy);
    c->set_files(b.files);
    c->set_bytes(b.bytes);
    c->set_bytes_saved(b.bytes_saved);
    c->set_stuck(b.stuck);
  }
  s.set_conversions_done(r.conversions_done);
  s.set_convert_bytes_saved(r.convert_bytes_saved);
  s.set_convert_eta_s(r.convert_eta_s);
  absl::StatusOr<int64_t> put = etcd->Put(key, s.SerializeAsString(), lease);
  if (!put.ok()) {
    RANGEFS_LOG(WARNING) << "keeper " << id
                         << ": publishing its status: " << put.status();
  }
}

// --dry_run: prints the plan, one move, column rebuild or conversion per
// line, and a summary.
int DryRun(rangefs::keeper::Keeper& keeper) {
  rangefs::keeper::RoundReport r;
  absl::StatusOr<rangefs::keeper::RoundPlan> round = keeper.DryRun(&r);
  if (!round.ok()) {
    fprintf(stderr, "rangefs-keeper: %s\n", round.status().ToString().c_str());
    return 1;
  }
  const rangefs::keeper::Plan& plan = round->moves;
  const rangefs::keeper::ConvertPlan& conversions = round->conversions;
  for (const rangefs::keeper::Move& m : plan.moves) {
    if (m.drop) {
      printf("drop %s slot %d %s: leaving replica on %s\n", m.path.c_str(),
             m.slot, m.object.c_str(), m.from_node.c_str());
      continue;
    }
    printf("%s %s slot %d %s: %s -> %s (copy from %s, %llu bytes)\n",
           m.in_place ? "repair" : "move", m.path.c_str(), m.slot,
           m.object.c_str(), m.from_node.c_str(), m.target_node.c_str(),
           m.source_node.c_str(), static_cast<unsigned long long>(m.bytes));
  }
  // Erasure-coded columns, listed as rangefs-admin repair --dry-run does.
  size_t ec_columns = 0;
  for (const rangefs::keeper::EcFileRepair& f : round->ec.files) {
    for (const rangefs::keeper::EcColumnRepair& c : f.columns) {
      const rangefs::keeper::EcRepairListing l =
          rangefs::keeper::ListEcRepair(f, c);
      printf("%s %s column %d %s: %s -> %s (reads %s, %llu bytes)\n",
             l.action.c_str(), f.path.c_str(), c.column, c.object.c_str(),
             c.from_node.c_str(), c.target_node.c_str(), l.reads.c_str(),
             static_cast<unsigned long long>(c.bytes));
      ++ec_columns;
    }
  }
  for (const rangefs::keeper::StuckSlot& s : plan.stuck) {
    printf("stuck %s slot %d: %s\n", s.path.c_str(), s.slot, s.reason.c_str());
  }
  for (const rangefs::keeper::Conversion& c : conversions.conversions) {
    printf(
        "convert %s: %s -> %s (%s, policy %s; %llu bytes to write, raw "
        "%llu -> %llu bytes)\n",
        c.path.c_str(), rangefs::keeper::ConversionKindName(c.kind),
        c.goal.ToString().c_str(),
        c.kind == rangefs::keeper::ConversionKind::kEcInPlace ? "parity only"
                                                              : "copies",
        c.policy.c_str(), static_cast<unsigned long long>(c.bytes_to_write),
        static_cast<unsigned long long>(c.raw_before),
        static_cast<unsigned long long>(c.raw_after));
  }
  for (const rangefs::keeper::StuckSlot& s : conversions.stuck) {
    printf("stuck conversion %s: %s\n", s.path.c_str(), s.reason.c_str());
  }
  if (!conversions.conversions.empty() || !conversions.stuck.empty()) {
    printf("%zu conversion(s), %llu bytes to write; %zu stuck\n",
           conversions.conversions.size(),
           static_cast<unsigned long long>(conversions.bytes),
           conversions.stuck.size());
  }
  printf(
      "%zu move(s), %zu erasure-coded column rebuild(s), %llu bytes; %zu "
      "stuck; %d files at revision %lld; %d dead, %d draining node(s)%s\n",
      plan.moves.size(), ec_columns,
      static_cast<unsigned long long>(plan.bytes + round->ec.bytes),
      plan.stuck.size(), r.files, static_cast<long long>(r.revision),
      r.dead_nodes, r.draining_nodes,
      r.rebalance_moves > 0 ? " (rebalancing: nothing to repair)" : "");
  return 0;
}

}  // namespace

constexpr char kUsage[] =
    "usage: rangefs-keeper [--config=FILE] [--etcd_endpoints=H:P,...]\n"
    "                      [--cluster=C] [--FLAG=VALUE ...]\n"
    "Settings: flags > $RANGEFS_ETCD, $RANGEFS_CLUSTER > the config file\n"
    "(--config or $RANGEFS_CONFIG) > defaults.\n"
    "Keeps every file at its replica count on healthy, active storage nodes\n"
    "and converts files to their storage policy (rangefs-admin policy set)\n"
    "(keeper/README.md); one of any number running is active.";

// Config keys (base/config.cc) that set the keeper's flags of the same
// meaning.
constexpr rangefs::FlagBinding kConfigBindings[] = {
    {"etcd_endpoints", "etcd_endpoints"},
    {"cluster", "cluster"},
    {"etcd_ca", "etcd_ca"},
    {"etcd_cert", "etcd_cert"},
    {"etcd_key", "etcd_key"},
    {"agent_ca", "agent_ca"},
    {"agent_cert", "agent_cert"},
    {"agent_key", "agent_key"}};

int main(int argc, char** argv) {
  if (auto text =
          rangefs::HelpOrVersion(argc, argv, "rangefs-keeper", kUsage)) {
    fputs(text->c_str(), stdout);
    return 0;
  }
  if (absl::Status s =
          rangefs::ApplyLayeredConfigToFlags(argc, argv, kConfigBindings);
      !s.ok()) {
    fprintf(stderr, "rangefs-keeper: %s\n", s.ToString().c_str());
    return 2;
  }
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_etcd).empty()) {
    absl::SetFlag(&FLAGS_etcd_endpoints, absl::GetFlag(FLAGS_etcd));
  }
  if (absl::Status s =
          rangefs::ns::ValidateClusterName(absl::GetFlag(FLAGS_cluster));
      !s.ok()) {
    fprintf(stderr, "%s: --cluster: %s\n", "rangefs-keeper",
            s.ToString().c_str());
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A round checks `stop` before each move: on SIGTERM no new move starts,
  // copies in flight finish (bounded by their deadline), then it resigns.
  std::thread signals([&stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    RANGEFS_LOG(INFO) << "signal " << sig << ": stopping";
    stop.Notify();
  });
  signals.detach();

  // A negative rate is a mistake, not "unpaced" (that is 0).
  for (const auto& [name, value] :
       {std::pair<const char*, int64_t>{
            "copy_bytes_per_sec", absl::GetFlag(FLAGS_copy_bytes_per_sec)},
        {"ec_rebuild_bytes_per_sec",
         absl::GetFlag(FLAGS_ec_rebuild_bytes_per_sec)},
        {"convert_bytes_per_sec",
         absl::GetFlag(FLAGS_convert_bytes_per_sec)}}) {
    if (value < 0) {
      fprintf(stderr,
              "rangefs-keeper: --%s=%lld: want bytes/s >= 0 (0: unpaced)\n",
              name, static_cast<long long>(value));
      return 2;
    }
  }
  std::string id = absl::GetFlag(FLAGS_id);
  if (id.empty()) id = DefaultId();
  rangefs::etcd::EtcdSettings es;
  es.endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  es.call_timeout = absl::Seconds(absl::GetFlag(FLAGS_etcd_timeout_s));
  es.ca_file = absl::GetFlag(FLAGS_etcd_ca);
  es.cert_file = absl::GetFlag(FLAGS_etcd_cert);
  es.key_file = absl::GetFlag(FLAGS_etcd_key);
  absl::StatusOr<std::unique_ptr<rangefs::etcd::EtcdClient>> etcd =
      rangefs::etcd::OpenEtcdClient(es);
  if (!etcd.ok()) {
    fprintf(stderr, "rangefs-keeper: %s\n", etcd.status().ToString().c_str());
    return 2;
  }
  const absl::Duration ttl = absl::Seconds(absl::GetFlag(FLAGS_lease_ttl_s));
  if (ttl < absl::Seconds(1)) {
    fprintf(stderr, "rangefs-keeper: --lease_ttl_s must be >= 1\n");
    return 2;
  }
  auto kv = rangefs::ns::NewEtcdKv(etcd->get());
  auto store = rangefs::ns::NewKvStore(
      kv.get(), {.cluster = absl::GetFlag(FLAGS_cluster)});

  rangefs::keeper::KeeperOptions ko;
  ko.id = id;
  ko.dead_after = absl::Seconds(absl::GetFlag(FLAGS_dead_after_s));
  ko.delete_grace = absl::Seconds(absl::GetFlag(FLAGS_delete_grace_s));
  ko.parallel_copies = std::max(1, absl::GetFlag(FLAGS_parallel_copies));
  ko.orphan_scan_interval =
      absl::Seconds(absl::GetFlag(FLAGS_orphan_scan_interval_s));
  ko.rebalance.tolerance = absl::GetFlag(FLAGS_rebalance_tolerance);
  ko.rebalance.max_moves = 2 * ko.parallel_copies;
  ko.copy_bytes_per_sec =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_copy_bytes_per_sec));
  ko.ec_rebuild_bytes_per_sec =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_ec_rebuild_bytes_per_sec));
  ko.convert_bytes_per_sec =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_convert_bytes_per_sec));
  ko.parallel_conversions =
      std::max(1, absl::GetFlag(FLAGS_parallel_conversions));
  ko.goals = [&store] {
    return rangefs::keeper::LoadGoals(store.get(), rangefs::Clock::Real());
  };
  if (const int step = absl::GetFlag(FLAGS_test_exit_at_convert_step);
      step > 0) {
    ko.convert_at_step = [id, step](int at,
                                    const rangefs::keeper::Conversion& c) {
      if (at != step) return;
      RANGEFS_LOG(WARNING) << "keeper " << id
                           << ": --test_exit_at_convert_step: exiting at step "
                           << step << " of the conversion of " << c.path;
      _exit(9);
    };
  }
  ko.agent_tls.ca_file = absl::GetFlag(FLAGS_agent_ca);
  ko.agent_tls.cert_file = absl::GetFlag(FLAGS_agent_cert);
  ko.agent_tls.key_file = absl::GetFlag(FLAGS_agent_key);
  // The metrics and the progress of the round in flight, shared by the
  // round's move threads (on_progress) and the loop below.
  std::mutex metrics_mu;
  rangefs::keeper::KeeperMetrics metrics;
  absl::Time round_start = absl::Now(), last_progress = absl::Now();
  bool published_in_round = false;
  std::function<void(const rangefs::keeper::RoundReport&, double)> publish;
  const std::string metrics_file = absl::GetFlag(FLAGS_metrics_file);
  const absl::Duration progress_interval =
      absl::Seconds(std::max(0.0, absl::GetFlag(FLAGS_progress_interval_s)));
  auto write_metrics_locked = [&] {
    if (metrics_file.empty()) return;
    absl::Status w = rangefs::WriteFileAtomically(
        metrics_file, rangefs::keeper::KeeperPrometheusText(metrics));
    if (!w.ok()) {
      RANGEFS_LOG(WARNING) << "keeper " << id << ": metrics file: " << w;
    }
  };
  // Destroyed (its thread joined) before the metrics it renders.
  std::unique_ptr<rangefs::MetricsServer> metrics_server;
  if (const int port = absl::GetFlag(FLAGS_metrics_port); port != 0) {
    absl::StatusOr<std::unique_ptr<rangefs::MetricsServer>> s =
        rangefs::MetricsServer::Start(port, [&] {
          std::lock_guard<std::mutex> l(metrics_mu);
          return rangefs::keeper::KeeperPrometheusText(metrics);
        });
    if (!s.ok()) {
      RANGEFS_LOG(ERROR) << "--metrics_port=" << port << ": " << s.status();
      return 2;
    }
    metrics_server = *std::move(s);
    RANGEFS_LOG(INFO) << "metrics at http://127.0.0.1:"
                      << metrics_server->port() << "/metrics";
  }
  ko.on_progress = [&](const rangefs::keeper::RoundReport& r) {
    std::lock_guard<std::mutex> l(metrics_mu);
    const absl::Time now = absl::Now();
    metrics.in_round = true;
    metrics.round = r;
    metrics.eta_s = rangefs::keeper::EtaSeconds(
        r.bytes_planned > r.bytes_copied ? r.bytes_planned - r.bytes_copied : 0,
        r.bytes_copied, now - round_start);
    // The first call of a round (its plan) is published at once.
    if (published_in_round && now - last_progress < progress_interval) return;
    published_in_round = true;
    last_progress = now;
    RANGEFS_LOG(INFO)
        << "keeper " << id << ": round progress: " << r.moves_done << "/"
        << r.moves_planned << " moves done, " << r.moves_failed << " failed; "
        << r.bytes_copied << " of " << r.bytes_planned << " bytes copied; ETA "
        << (metrics.eta_s < 0
                ? std::string("unknown")
                : absl::StrCat(static_cast<int64_t>(metrics.eta_s), " s"))
        << "; conversions " << r.conversions_done << "/"
        << r.conversions_planned << " done, ETA "
        << (r.convert_eta_s < 0
                ? std::string("unknown")
                : absl::StrCat(static_cast<int64_t>(r.convert_eta_s), " s"));
    if (publish) publish(r, metrics.eta_s);
    write_metrics_locked();
  };
  if (absl::GetFlag(FLAGS_test_exit_after_add)) {
    ko.after_add = [id](const rangefs::keeper::Move& m) {
      RANGEFS_LOG(WARNING) << "keeper " << id << ": --test_exit_after_add: "
                           << "exiting between the steps of the move of "
                           << m.path << " slot " << m.slot;
      _exit(9);
    };
  }
  rangefs::keeper::LeaderElection election(
      etcd->get(), {.key = store->keys().KeeperLeader(), .id = id, .ttl = ttl});
  // Every etcd write of a round compares the leader key's lease with ours.
  ko.leader_lease = [&election] { return election.lease(); };
  rangefs::keeper::Keeper keeper(store.get(), etcd->get(), ko);
  if (absl::GetFlag(FLAGS_dry_run)) return DryRun(keeper);

  publish = [&](const rangefs::keeper::RoundReport& r, double eta_s) {
    PublishStatus(r, id, election.lease(), store->keys().KeeperStatus(),
                  etcd->get(), /*in_round=*/true, eta_s);
  };
  printf("rangefs-keeper %s started\n", id.c_str());
  fflush(stdout);
  const absl::Duration interval =
      absl::Seconds(std::max(0.05, absl::GetFlag(FLAGS_interval_s)));
  bool was_leader = false;
  do {
    absl::StatusOr<bool> leader = election.Campaign();
    if (!leader.ok()) {
      RANGEFS_LOG(WARNING) << "keeper " << id
                           << ": campaign failed: " << leader.status();
      continue;
    }
    if (*leader != was_leader) {
      printf("rangefs-keeper %s %s\n", id.c_str(),
             *leader ? "is active" : "is standby");
      fflush(stdout);
      was_leader = *leader;
      std::lock_guard<std::mutex> l(metrics_mu);
      metrics.active = *leader;
      write_metrics_locked();
    }
    if (!*leader) continue;
    {
      std::lock_guard<std::mutex> l(metrics_mu);
      round_start = last_progress = absl::Now();
      published_in_round = false;
    }
    absl::StatusOr<rangefs::keeper::RoundReport> r = keeper.RunRound(
        [&] { return election.IsLeader() && !stop.HasBeenNotified(); });
    if (!r.ok()) {
      RANGEFS_LOG(WARNING) << "keeper " << id
                           << ": round failed: " << r.status();
      continue;
    }
    {
      std::lock_guard<std::mutex> l(metrics_mu);
      metrics.AddRound(*r);
      write_metrics_locked();
    }
    PublishStatus(*r, id, election.lease(), store->keys().KeeperStatus(),
                  etcd->get());
    if (r->conversions_planned > 0 || r->conversions_stuck > 0) {
      RANGEFS_LOG(INFO) << "keeper " << id << ": conversions "
                        << r->conversions_done << "/" << r->conversions_planned
                        << " done, " << r->conversions_failed << " failed, "
                        << r->conversions_abandoned << " abandoned, "
                        << r->conversions_stuck << " stuck; "
                        << r->convert_bytes_written << " bytes written, "
                        << r->convert_bytes_saved << " raw bytes freed";
    }
    if (r->moves_planned > 0 || r->stuck > 0 || r->trash_deleted > 0 ||
        r->orphans_found > 0 || r->stopped) {
      RANGEFS_LOG(INFO) << "keeper " << id << ": round at revision "
                        << r->revision << ": " << r->files << " files, "
                        << r->dead_nodes << " dead / " << r->draining_nodes
                        << " draining / " << r->missing_nodes
                        << " missing nodes; moves " << r->moves_done << "/"
                        << r->moves_planned << " done, " << r->moves_failed
                        << " failed, " << r->moves_abandoned << " abandoned, "
                        << r->rebalance_moves << " to rebalance, " << r->stuck
                        << " stuck; " << r->bytes_copied
                        << " bytes copied; trash " << r->trash_deleted
                        << " deleted, " << r->trash_pending << " pending"
                        << (r->stopped ? "; stopped (lost the lease)" : "");
    }
  } while (!stop.WaitForNotificationWithTimeout(interval));
  election.Resign();
  {
    std::lock_guard<std::mutex> l(metrics_mu);
    metrics.active = false;
    write_metrics_locked();
  }
  printf("rangefs-keeper %s stopped\n", id.c_str());
  return 0;
}
