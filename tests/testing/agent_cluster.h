// File: agent_cluster.h
//
// Test fixture pieces for integration tests of rangefs-node with etcd: a
// real etcd (EtcdCluster), a NamespaceStore over it, and real rangefs-node
// processes, each with a temp export directory, registered with
// `node add`-equivalent records. Thread-compatible; testonly.
#ifndef RANGEFS_TESTS_TESTING_AGENT_CLUSTER_H_
#define RANGEFS_TESTS_TESTING_AGENT_CLUSTER_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "namespace/etcd/etcd_client.h"
#include "namespace/etcd_kv.h"
#include "namespace/store.h"
#include "tests/testing/etcd_cluster.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace testing {

struct AgentProcess {
  std::string id;
  std::string export_dir;
  std::string address;  // 127.0.0.1:port
  std::vector<std::string> argv;
  std::unique_ptr<Subprocess> process;
};

class AgentCluster {
 public:
  static absl::StatusOr<std::unique_ptr<AgentCluster>> Start(
      const std::string& name, const EtcdClusterOptions& etcd = {}) {
    std::unique_ptr<AgentCluster> c(new AgentCluster);
    RANGEFS_ASSIGN_OR_RETURN(c->dir_, MakeTempDir(name));
    RANGEFS_ASSIGN_OR_RETURN(c->etcd_, EtcdCluster::Start(etcd));
    RANGEFS_ASSIGN_OR_RETURN(
        c->client_, etcd::EtcdClient::Open({.endpoints = c->etcd_->endpoints(),
                                            .call_timeout = absl::Seconds(2)}));
    c->kv_ = ns::NewEtcdKv(c->client_.get());
    c->store_ = ns::NewKvStore(c->kv_.get(), {.cluster = "it"});
    return c;
  }
  ~AgentCluster() {
    agents_.clear();
    store_.reset();
    kv_.reset();
    client_.reset();
    etcd_.reset();
    RemoveTree(dir_);
  }

  ns::NamespaceStore* store() { return store_.get(); }
  etcd::EtcdClient* etcd_client() { return client_.get(); }
  EtcdCluster* etcd() { return etcd_.get(); }
  const std::string& dir() const { return dir_; }
  AgentProcess& agent(size_t i) { return *agents_[i]; }
  size_t agents() const { return agents_.size(); }

  // Adds node record `id` (unless !add_record) on a free port and starts
  // its agent with a 2 s lease. Does not wait for readiness when
  // `wait` is false (the agent may be meant to fail). The agent listens on
  // `listen_host` (e.g. "0.0.0.0" in a test's own network namespace); the
  // node record and `address` name 127.0.0.1 either way.
  absl::StatusOr<AgentProcess*> AddAgent(
      const std::string& id, bool add_record = true,
      v1::AdminState state = v1::ACTIVE,
      std::vector<std::string> extra_flags = {}, bool wait = true,
      const std::string& listen_host = "127.0.0.1") {
    auto a = std::make_unique<AgentProcess>();
    a->id = id;
    a->export_dir = absl::StrCat(dir_, "/export-", id);
    if (mkdir(a->export_dir.c_str(), 0755) != 0) {
      return absl::InternalError(absl::StrCat("mkdir ", a->export_dir));
    }
    // PickUnusedPort's port may be taken by another process before the
    // agent binds it (an outgoing connection's ephemeral port, another
    // test's server): then the agent exits, and it starts again on another.
    for (int attempt = 1;; ++attempt) {
      RANGEFS_ASSIGN_OR_RETURN(int port, PickUnusedPort());
      a->address = absl::StrCat("127.0.0.1:", port);
      if (add_record) RANGEFS_RETURN_IF_ERROR(PutNodeRecord(*a, state));
      a->argv = {RunfilePath("storage_node/rangefs-node"),
                 "--node_id=" + id,
                 "--export_root=" + a->export_dir,
                 absl::StrCat("--listen=", listen_host, ":", port),
                 "--etcd_endpoints=" + etcd_->endpoints(),
                 "--cluster=it",
                 "--lease_ttl_s=2",
                 "--live_interval_s=0.2",
                 "--shutdown_grace_s=5"};
      a->argv.insert(a->argv.end(), extra_flags.begin(), extra_flags.end());
      RANGEFS_RETURN_IF_ERROR(Launch(*a));
      if (!wait) break;
      absl::Status s = WaitServing(*a);
      if (s.ok()) break;
      if (attempt == kPortTries || !PortTaken(*a)) return s;
    }
    agents_.push_back(std::move(a));
    return agents_.back().get();
  }

  // Starts the agent's process again (same flags, same export).
  // If another process holds its port meanwhile, tries again while the port
  // is taken, up to kPortTries starts, a second apart.
  absl::Status Restart(AgentProcess& a) {
    for (int attempt = 1;; ++attempt) {
      a.process.reset();
      RANGEFS_RETURN_IF_ERROR(Launch(a));
      absl::Status s = WaitServing(a);
      if (s.ok() || attempt == kPortTries || !PortTaken(a)) return s;
      absl::SleepFor(absl::Seconds(1));  // a back-off, not a wait for an event
    }
  }

  // The live record of `id`, or nullptr-equivalent (found=false).
  bool Live(const std::string& id, ns::LiveEntry* out) {
    auto live = store_->ListLive();
    if (!live.ok()) return false;
    for (ns::LiveEntry& e : *live) {
      if (e.record.node_id() == id) {
        if (out != nullptr) *out = std::move(e);
        return true;
      }
    }
    return false;
  }

  // Adds agents n<first>..n<first + count - 1> (AddAgent's defaults) and
  // waits until each one's live record is there.
  absl::Status AddLiveAgents(int count, absl::Duration timeout, int first = 0) {
    for (int i = first; i < first + count; ++i) {
      RANGEFS_ASSIGN_OR_RETURN(AgentProcess * a,
                               AddAgent(absl::StrCat("n", i)));
      if (!WaitLive(
              a->id, [](bool found, const ns::LiveEntry&) { return found; },
              timeout)) {
        return absl::DeadlineExceededError(
            absl::StrCat("agent ", a->id, " not live after ",
                         absl::FormatDuration(timeout)));
      }
    }
    return absl::OkStatus();
  }

  // <dir()>/mnt, with an entry <id> a symlink to each agent's export
  // directory: each export stands in for its node's mount (a client's
  // mount_root). Returns the directory.
  absl::StatusOr<std::string> LinkMounts() {
    const std::string root = dir_ + "/mnt";
    if (mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", root));
    }
    for (const std::unique_ptr<AgentProcess>& a : agents_) {
      const std::string entry = root + "/" + a->id;
      if (symlink(a->export_dir.c_str(), entry.c_str()) != 0 &&
          errno != EEXIST) {
        return absl::InternalError(absl::StrCat("symlink ", entry));
      }
    }
    return root;
  }

  // Polls until `pred(found, entry)` holds; false on timeout.
  bool WaitLive(const std::string& id,
                const std::function<bool(bool, const ns::LiveEntry&)>& pred,
                absl::Duration timeout, ns::LiveEntry* out = nullptr) {
    const absl::Time end = absl::Now() + timeout;
    do {
      ns::LiveEntry e;
      bool found = Live(id, &e);
      if (pred(found, e)) {
        if (out != nullptr) *out = e;
        return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    } while (absl::Now() < end);
    return false;
  }

 private:
  AgentCluster() = default;
  static constexpr int kPortTries = 5;

  absl::Status WaitServing(AgentProcess& a) {
    return a.process->WaitForLog(
        absl::StrCat("rangefs-node ", a.id, " serving on"), absl::Seconds(60));
  }
  // The agent exited because its port was in use.
  static bool PortTaken(AgentProcess& a) {
    return absl::StrContains(a.process->Log(), "Address already in use");
  }
  // Adds the node record of `a`, or points the one there at a's address.
  absl::Status PutNodeRecord(const AgentProcess& a, v1::AdminState state) {
    v1::NodeRecord n;
    n.set_id(a.id);
    n.add_addresses(a.address);
    n.set_export_path(a.export_dir);
    n.set_admin_state(state);
    absl::StatusOr<ns::NodeEntry> old = store_->GetNode(a.id);
    if (absl::IsNotFound(old.status())) return store_->AddNode(n);
    RANGEFS_RETURN_IF_ERROR(old.status());
    return store_->UpdateNode(n, old->mod_revision);
  }

  absl::Status Launch(AgentProcess& a) {
    static int launches = 0;
    RANGEFS_ASSIGN_OR_RETURN(
        a.process,
        Subprocess::Start({.argv = a.argv,
                           .log_path = absl::StrCat(dir_, "/", a.id, "-",
                                                    ++launches, ".log")}));
    return absl::OkStatus();
  }

  std::string dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<ns::KvBackend> kv_;
  std::unique_ptr<ns::NamespaceStore> store_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_AGENT_CLUSTER_H_
