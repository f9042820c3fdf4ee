// File: etcd_cluster.h
//
// A real etcd (Debian's /usr/bin/etcd 3.4) for integration tests: one member
// or a cluster of N, on free 127.0.0.1 ports with data in a temp directory.
//
//   RANGEFS_ASSIGN_OR_RETURN(auto etcd, EtcdCluster::Start({.members = 3}));
//   UseEndpoints(etcd->endpoints());            //
//   "127.0.0.1:p1,127.0.0.1:p2,..." RANGEFS_ASSIGN_OR_RETURN(int leader,
//   etcd->LeaderIndex()); etcd->KillMember(leader);                    //
//   SIGKILL etcd->RestartMember(leader);                 // same data dir,
//   rejoins
//
// Members die with the test process (PDEATHSIG) and are SIGKILLed and their
// data removed by the destructor, so a failing or timed-out test leaves
// nothing behind. Thread-compatible.
#ifndef RANGEFS_TESTS_TESTING_ETCD_CLUSTER_H_
#define RANGEFS_TESTS_TESTING_ETCD_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"

namespace rangefs {
namespace testing {

struct EtcdClusterOptions {
  int members = 1;
  std::string etcd_binary = "/usr/bin/etcd";
  absl::Duration start_timeout = absl::Seconds(20);
  // Extra flags for every member, e.g. "--auto-compaction-retention=1".
  std::vector<std::string> extra_flags;
  // TLS: a directory made by deploy/etcd/make-certs.sh (ca.crt and
  // m<i>.crt/m<i>.key for every member). When set, members serve https
  // client and peer URLs with client-cert-auth for both (a client needs a
  // cert signed by ca.crt), and /health is polled on a plain-http metrics
  // URL (metrics_port). LeaderIndex and the Gateway* helpers need plaintext
  // and return FAILED_PRECONDITION under TLS. Empty: plaintext (default).
  std::string tls_dir;
};

class EtcdCluster {
 public:
  // Starts all members and waits until each reports healthy. Retries with
  // new ports if a port was taken meanwhile.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(
      const EtcdClusterOptions& options);
  ~EtcdCluster();

  int size() const { return static_cast<int>(members_.size()); }
  // Client endpoints of all members, "127.0.0.1:P,127.0.0.1:Q".
  std::string endpoints() const;
  // "127.0.0.1:P" of member i.
  std::string endpoint(int i) const;
  int client_port(int i) const { return members_[i].client_port; }
  // Plain-http port serving /health and /metrics (TLS mode only; 0 else).
  int metrics_port(int i) const { return members_[i].metrics_port; }
  bool tls() const { return !options_.tls_dir.empty(); }
  const std::string& data_dir(int i) const { return members_[i].data_dir; }
  bool running(int i) const { return members_[i].process != nullptr; }

  // SIGKILLs member i.
  absl::Status KillMember(int i);
  // Starts member i again with its data dir and waits until it is healthy.
  absl::Status RestartMember(int i);
  // Starts every stopped member, then waits until all are healthy (a
  // majority must run before any member reports healthy).
  absl::Status RestartAll();
  // SIGSTOP / SIGCONT member i. PauseMember returns once every thread of
  // the member is stopped (DEADLINE_EXCEEDED after 5 s).
  absl::Status PauseMember(int i);
  absl::Status ResumeMember(int i);
  // Waits until member i answers /health with health=true.
  absl::Status WaitHealthy(int i, absl::Duration timeout);
  // Index of the member that is leader, asked of the running members.
  absl::StatusOr<int> LeaderIndex();

  // Puts and gets through etcd's JSON gateway: a path to etcd that does not
  // use rangefs code at all (for harness tests and cross-checks).
  absl::Status GatewayPut(int member, const std::string& key,
                          const std::string& value);
  absl::StatusOr<std::string> GatewayGet(int member, const std::string& key);

  // The member's log tail, for failure messages.
  std::string LogTail(int i) const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    int metrics_port = 0;  // TLS mode only.
    std::string data_dir;
    std::string log_path;
    std::unique_ptr<Subprocess> process;
    std::string member_id;  // Hex, from the status endpoint.
  };

  EtcdCluster() = default;
  absl::Status StartMember(int i, bool fresh);
  std::string InitialCluster() const;

  EtcdClusterOptions options_;
  std::string dir_;
  std::vector<Member> members_;
};

// Minimal HTTP/1.1 request to 127.0.0.1:`port`; returns the body of a 200
// response. UNAVAILABLE when nothing listens, DEADLINE_EXCEEDED on timeout.
absl::StatusOr<std::string> HttpRequest(int port, const std::string& method,
                                        const std::string& path,
                                        const std::string& body,
                                        absl::Duration timeout);

}  // namespace testing
}  // namespace rangefs

#endif  // RANGEFS_TESTS_TESTING_ETCD_CLUSTER_H_
