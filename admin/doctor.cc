#include "admin/doctor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin/keeper_info.h"
#include "base/status_macros.h"
#include "client_lib/mountd/mount_status.h"
#include "client_lib/mountd/mountinfo.h"
#include "mount/mount_check.h"
#include "mount/mount_status.h"
#include "namespace/layout.h"
#include "namespace/storage_policy.h"
#include "namespace/storage_policy_placement.h"
#include "namespace/store.h"
#include "namespace/tree_clash.h"

namespace rangefs {
namespace admin {

namespace {

constexpr char kOk[] = "OK";
constexpr char kWarn[] = "WARN";
constexpr char kFail[] = "FAIL";

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(ss.str()));
}

std::vector<std::string> SplitEndpoints(const std::string& eps) {
  std::vector<std::string> out;
  for (absl::string_view e : absl::StrSplit(eps, ',', absl::SkipEmpty())) {
    e = absl::StripAsciiWhitespace(e);
    absl::ConsumePrefix(&e, "https://");
    absl::ConsumePrefix(&e, "http://");
    if (!e.empty()) out.emplace_back(e);
  }
  return out;
}

// GET `path` from host:port over plain HTTP/1.1; returns the Date header.
absl::StatusOr<absl::Time> HttpDate(const std::string& endpoint,
                                    absl::Duration timeout) {
  size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint ", endpoint));
  }
  std::string host = endpoint.substr(0, colon);
  std::string port = endpoint.substr(colon + 1);
  if (absl::StartsWith(host, "[")) host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return absl::UnavailableError(absl::StrCat("resolve ", endpoint));
  }
  int fd =
      socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return absl::UnavailableError("socket");
  }
  const absl::Time deadline = absl::Now() + timeout;
  int rc = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  auto wait = [&](short ev) {
    int ms =
        static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0) return false;
    pollfd p{fd, ev, 0};
    return poll(&p, 1, ms) > 0;
  };
  std::string resp;
  absl::Status st = absl::OkStatus();
  if (rc != 0 && errno != EINPROGRESS) {
    st = absl::UnavailableError(absl::StrCat("connect ", endpoint));
  } else if (rc != 0 && !wait(POLLOUT)) {
    st = absl::DeadlineExceededError(absl::StrCat("connect ", endpoint));
  } else {
    std::string req = "GET /version HTTP/1.1\r\nHost: " + host +
                      "\r\nConnection: close\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(req.size())) {
      st = absl::UnavailableError(absl::StrCat("send to ", endpoint));
    }
    char buf[4096];
    while (st.ok() && resp.find("\r\n\r\n") == std::string::npos) {
      if (!wait(POLLIN)) {
        st = absl::DeadlineExceededError(absl::StrCat("GET ", endpoint));
        break;
      }
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      resp.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  if (!st.ok()) return st;
  for (absl::string_view line : absl::StrSplit(resp, "\r\n")) {
    if (absl::StartsWithIgnoreCase(line, "date:")) {
      std::string v(absl::StripAsciiWhitespace(line.substr(5)));
      absl::Time t;
      std::string err;
      if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", v, absl::UTCTimeZone(),
                          &t, &err)) {
        return t;
      }
      return absl::InternalError(absl::StrCat("bad Date header \"", v, "\""));
    }
  }
  return absl::UnavailableError(
      absl::StrCat(endpoint, " sent no Date header (not an HTTP endpoint?)"));
}

class Report {
 public:
  Report() { t_.columns = {"check", "status", "finding", "fix"}; }
  void Add(const std::string& check, const char* status,
           const std::string& finding, const std::string& fix = "") {
    t_.AddRow({check, status, finding, fix.empty() ? "-" : fix});
    if (status == kOk) ++ok_;
    if (status == kWarn) ++warn_;
    if (status == kFail) ++fail_;
  }
  Table Finish() {
    t_.message = absl::StrCat("doctor: ", ok_, " ok, ", warn_, " warning(s), ",
                              fail_, " failure(s)");
    t_.exit_code = fail_ > 0   ? kDoctorExitFailures
                   : warn_ > 0 ? kDoctorExitWarnings
                               : 0;
    return std::move(t_);
  }

 private:
  Table t_;
  int ok_ = 0, warn_ = 0, fail_ = 0;
};

void CheckEtcd(const DoctorOptions& o, Report& r) {
  const bool tls = !o.etcd.ca_file.empty();
  std::vector<std::string> eps = SplitEndpoints(o.etcd.endpoints);
  if (eps.empty()) {
    r.Add("etcd", kFail, "no etcd endpoints configured",
          "pass --etcd=HOST:PORT,... or set etcd_endpoints in "
          "/etc/rangefs/rangefs.conf");
    return;
  }
  for (const std::string& ep : eps) {
    etcd::EtcdClientOptions eo = o.etcd;
    eo.endpoints = ep;
    eo.max_attempts = 1;
    eo.call_timeout = std::min(eo.call_timeout, absl::Seconds(3));
    auto client = etcd::EtcdClient::Open(eo);
    if (!client.ok()) {
      r.Add("etcd " + ep, kFail, std::string(client.status().message()),
            "fix the --ca/--cert/--key paths (PEM files readable by this "
            "user)");
      continue;
    }
    auto st = (*client)->Status(ep);
    if (st.ok()) {
      r.Add("etcd " + ep, tls ? kOk : kWarn,
            absl::StrCat("reachable over ", tls ? "TLS" : "plaintext",
                         ", etcd ", st->version(), ", member ",
                         absl::Hex(st->header().member_id()),
                         st->leader() == 0 ? ", NO LEADER" : ""),
            tls ? ""
                : "production etcd should use TLS with client certs: "
                  "deploy/etcd/make-certs.sh, then --ca/--cert/--key "
                  "(etcd_ca/etcd_cert/etcd_key)");
      continue;
    }
    std::string fix;
    if (tls) {
      fix = absl::StrCat(
          "TLS handshake or connection failed: check that --ca (",
          o.etcd.ca_file,
          ") is the CA that signed etcd's server certificate, that a client "
          "cert/key signed by etcd's --trusted-ca-file is given (etcd runs "
          "with --client-cert-auth), and that the endpoint serves https; "
          "`openssl s_client -connect ",
          ep, " -CAfile CA -cert CERT -key KEY` shows the handshake");
    } else {
      fix =
          "is etcd running (systemctl status etcd-rangefs)? if etcd serves "
          "https, pass --ca/--cert/--key";
    }
    r.Add("etcd " + ep, kFail,
          absl::StrCat("unreachable", tls ? " over TLS" : "", ": ",
                       st.status().message()),
          fix);
  }
}

void CheckClock(const DoctorOptions& o, Report& r) {
  std::vector<std::string> eps = SplitEndpoints(o.etcd.endpoints);
  if (eps.empty()) return;
  if (!o.etcd.ca_file.empty()) {
    r.Add("clock", kWarn, "skew against etcd not measured over TLS",
          absl::StrCat("compare `date -u` with `curl -sI --cacert CA --cert "
                       "CERT --key KEY https://",
                       eps[0], "/version | grep Date`; keep chrony/NTP on"));
    return;
  }
  const absl::Time before = absl::Now();
  auto date = HttpDate(eps[0], absl::Seconds(2));
  const absl::Time after = absl::Now();
  if (!date.ok()) {
    r.Add("clock", kWarn,
          absl::StrCat("could not read etcd's time: ", date.status().message()),
          "check etcd reachability first");
    return;
  }
  // The Date header is truncated to whole seconds: the server's time was in
  // [date, date + 1s) at some point in [before, after].
  absl::Duration skew = absl::ZeroDuration();
  if (*date + absl::Seconds(1) < before)
    skew = *date + absl::Seconds(1) - before;
  if (*date > after) skew = *date - after;
  std::string finding = absl::StrCat(
      "local clock vs etcd ", eps[0], ": skew ",
      absl::FormatDuration(absl::Trunc(skew, absl::Milliseconds(1))),
      " (HTTP Date, 1 s resolution, round trip ",
      absl::FormatDuration(absl::Trunc(after - before, absl::Milliseconds(1))),
      ")");
  if (absl::AbsDuration(skew) > o.max_clock_skew) {
    r.Add("clock", kFail, finding,
          "sync clocks (chronyc tracking / systemctl status chrony); leases, "
          "timestamps in live records and logs assume synced clocks");
  } else {
    r.Add("clock", kOk, finding);
  }
}

// One WARN row per agent whose live record says it runs insecure, or does
// not say (an older agent), or says something unknown; an OK summary when
// none does.
void CheckAgentSecurity(const std::vector<ns::LiveEntry>& live, Report& r) {
  int mtls = 0, loopback = 0, bad = 0;
  for (const ns::LiveEntry& l : live) {
    const std::string& id = l.record.node_id();
    const std::string check = "security " + id;
    switch (l.record.transport_security()) {
      case v1::LiveRecord::MTLS:
        ++mtls;
        break;
      case v1::LiveRecord::PLAINTEXT_LOOPBACK:
      case v1::LiveRecord::TLS_LOOPBACK:
        ++loopback;
        break;
      case v1::LiveRecord::INSECURE:
        ++bad;
        r.Add(check, kWarn,
              "agent runs INSECURE (--insecure): no client certificates on "
              "a network address, so anyone who can reach it can read, "
              "write, overwrite and delete its objects",
              absl::StrCat(
                  "serve mTLS: make-certs.sh DIR --agents=", id,
                  "@HOST, then TLS_CERT, TLS_KEY, TLS_CLIENT_CA (--tls_cert, "
                  "--tls_key, --tls_client_ca) and WRITERS=rangefs-admin in "
                  "the node's env file, INSECURE=false, restart "
                  "rangefs-node@",
                  id, " (deploy/README.md, \"Agent security\")"));
        break;
      case v1::LiveRecord::TRANSPORT_SECURITY_UNSPECIFIED:
        ++bad;
        r.Add(check, kWarn,
              "agent does not report its transport security (an older "
              "rangefs-node): it may accept writes from anyone",
              absl::StrCat("upgrade rangefs-node on ", id));
        break;
      default:
        ++bad;
        r.Add(check, kWarn,
              absl::StrCat("unknown transport security value ",
                           static_cast<int>(l.record.transport_security()),
                           " in its live record"),
              "upgrade rangefs-admin to the agents' version");
        break;
    }
  }
  if (bad == 0 && !live.empty()) {
    r.Add("security", kOk,
          absl::StrCat(mtls, " agent(s) with mTLS, ", loopback,
                       " on loopback only, none insecure"));
  }
}

// An active or draining node without a live record: WARN while the keeper
// counts it missing (unreachable: a restart, a network blip; with when
// healing starts), FAIL once it counts it dead (its replicas are being
// re-created) or when no keeper reports at all (nothing will heal).
void AddUnreachable(const v1::NodeRecord& rec, const KeeperInfo& keeper,
                    absl::Time now, Report& r) {
  const std::string check = "node " + rec.id();
  const std::string state(ns::AdminStateName(rec.admin_state()));
  const std::string fix = absl::StrCat(
      "on ", rec.id(),
      ": systemctl status rangefs-node; journalctl -u rangefs-node; or "
      "`rangefs-admin node drain ",
      rec.id(), "` if it is gone for good");
  if (!keeper.reported) {
    r.Add(check, kFail,
          absl::StrCat(state,
                       " but no live record: the agent is down or cannot "
                       "reach etcd; no keeper reports (nothing re-creates "
                       "its replicas)"),
          fix);
    return;
  }
  const auto& dead = keeper.st.dead_node_ids();
  if (std::find(dead.begin(), dead.end(), rec.id()) != dead.end()) {
    r.Add(check, kFail,
          absl::StrCat(state,
                       " but dead (no live record for the keeper's "
                       "dead_after): its replicas are being re-created"),
          fix);
    return;
  }
  std::string when = HealCountdown(keeper, now);
  if (when.empty()) {
    when = absl::StrCat(
        "healing starts ",
        absl::FormatDuration(absl::Seconds(keeper.st.dead_after_s())),
        " after the keeper's next round sees it gone");
  }
  r.Add(check, kWarn,
        absl::StrCat(state,
                     " but unreachable (no live record: the agent is down or "
                     "cannot reach etcd); ",
                     keeper.st.at_risk_files(), " file(s) at risk; ", when),
        fix);
}

void CheckNodes(Context& ctx, const std::vector<ns::NodeEntry>& nodes,
                const KeeperInfo& keeper, absl::Time now, Report& r) {
  auto live = ctx.store->ListLive();
  if (!live.ok()) {
    r.Add("live", kFail,
          absl::StrCat("cannot read live records: ", live.status().message()),
          "fix etcd access first");
    return;
  }
  std::map<std::string, const v1::LiveRecord*> by_id;
  for (const ns::LiveEntry& l : *live) {
    if (l.invalid.empty()) {
      by_id[l.record.node_id()] = &l.record;
    } else {
      r.Add("live " + l.record.node_id(), kFail, l.invalid,
            "the agent rewrites its live record within seconds; if this "
            "persists, find who writes that key (etcd auth)");
    }
  }
  std::set<std::string> known;
  if (nodes.empty()) {
    r.Add("nodes", kWarn, "no storage nodes registered",
          "rangefs-admin node add ID --address=HOST:7070 --export=DIR");
  }
  for (const ns::NodeEntry& n : nodes) {
    const v1::NodeRecord& rec = n.record;
    known.insert(rec.id());
    const std::string check = "node " + rec.id();
    if (!n.invalid.empty()) {
      r.Add(check, kFail, n.invalid,
            absl::StrCat("rewrite it: rangefs-admin node rm ", rec.id(),
                         " then node add (clients and mountd ignore it)"));
      continue;
    }
    auto it = by_id.find(rec.id());
    const bool serving =
        rec.admin_state() == v1::ACTIVE || rec.admin_state() == v1::DRAINING;
    if (serving && it == by_id.end()) {
      AddUnreachable(rec, keeper, now, r);
      continue;
    }
    if (!serving && it != by_id.end()) {
      r.Add(check, kWarn,
            absl::StrCat(ns::AdminStateName(rec.admin_state()),
                         " but its agent is still running"),
            absl::StrCat("stop it (systemctl stop rangefs-node on ", rec.id(),
                         ") or `rangefs-admin node enable ", rec.id(), "`"));
      continue;
    }
    if (it == by_id.end()) {
      r.Add(check, kOk,
            absl::StrCat(ns::AdminStateName(rec.admin_state()),
                         ", agent not running (as expected)"));
      continue;
    }
    const v1::LiveRecord& l = *it->second;
    if (l.health() == v1::LiveRecord::UNHEALTHY ||
        l.health() == v1::LiveRecord::DEGRADED) {
      r.Add(check, kWarn,
            absl::StrCat(ns::AdminStateName(rec.admin_state()),
                         ", agent reports ",
                         v1::LiveRecord::Health_Name(l.health()), ": ",
                         l.health_reason()),
            absl::StrCat("journalctl -u rangefs-node on ", rec.id()));
    } else {
      r.Add(check, kOk,
            absl::StrCat(ns::AdminStateName(rec.admin_state()), ", agent live",
                         l.version().empty() ? "" : " version " + l.version()));
    }
  }
  for (const auto& [id, l] : by_id) {
    if (known.count(id) == 0) {
      r.Add("node " + id, kWarn, "live record but no node record",
            absl::StrCat("register it (rangefs-admin node add ", id,
                         " ...) or stop that agent"));
    }
  }
  CheckAgentSecurity(*live, r);
}

// One row per mount that rangefs-mountd reports hung: which call, since
// when and for how long (MountStatusEntry::hung_since_unix_ms).
void CheckHungMounts(const mountd::MountStatusFile& status, absl::Time now,
                     Report& r) {
  for (const mountd::MountStatusEntry& e : status.mounts) {
    if (!e.hung()) continue;
    const absl::Time since = absl::FromUnixMillis(e.hung_since_unix_ms);
    r.Add("hung " + e.node_id, kFail,
          absl::StrCat(
              e.path, " hung for ",
              absl::FormatDuration(absl::Trunc(now - since, absl::Seconds(1))),
              " (since ",
              absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", since,
                               absl::UTCTimeZone()),
              "): ", e.error),
          absl::StrCat("clients avoid this mount meanwhile (agent or other "
                       "replicas); check the NFS server on ",
                       e.node_id,
                       " and the fabric; if it never answers: rangefs-admin "
                       "node disable ",
                       e.node_id, " (mountd then detaches the mount)"));
  }
}

// Where `path` points if it is a symbolic link (deploy/local/cluster.sh
// makes <mount_root>/<id> a link to the node's export directory), made
// absolute against its directory and without trailing slashes; nullopt if
// it is not a link. lstat and readlink only: `path` is not a mount point
// (it is not in mountinfo), so nothing here can wait on a server.
std::optional<std::string> SymlinkTarget(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
    return std::nullopt;
  }
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
  std::string target(buf, static_cast<size_t>(n));
  if (target[0] != '/') {
    target = absl::StrCat(path.substr(0, path.rfind('/') + 1), target);
  }
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  return target;
}

// A node "mounted" as a symlink: OK when it points at the node's own export
// directory (a one-machine cluster: reads go to the local file system, no
// NFS), else WARN.
void CheckSymlinkMount(const v1::NodeRecord& rec, const std::string& target,
                       const std::string& link, Report& r) {
  std::string export_path = rec.export_path();
  while (export_path.size() > 1 && export_path.back() == '/') {
    export_path.pop_back();
  }
  const std::string check = "mount " + rec.id();
  if (link == export_path) {
    r.Add(check, kOk,
          absl::StrCat(target, " is a symlink to the node's export directory ",
                       link,
                       ", not a mount: a one-machine cluster "
                       "(deploy/local/cluster.sh), reads use the local file "
                       "system"));
    return;
  }
  r.Add(check, kWarn,
        absl::StrCat(target, " is a symlink to ", link,
                     ", not a mount and not the node's export directory ",
                     export_path.empty() ? "(none recorded)" : export_path),
        absl::StrCat("on a client: let rangefs-mountd mount it (rm ", target,
                     "); on one machine: ln -sfn ", export_path, " ", target));
}

void CheckMounts(const DoctorOptions& o,
                 const std::vector<ns::NodeEntry>& nodes, Report& r) {
  std::string root = o.mount_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  auto mi = mountd::ReadMountInfo(o.mountinfo_path);
  if (!mi.ok()) {
    r.Add("mounts", kFail, std::string(mi.status().message()), "-");
    return;
  }
  std::string status_path = o.mount_status_file.empty()
                                ? root + "/.rangefs-mounts"
                                : o.mount_status_file;
  auto status = mountd::ReadMountStatus(status_path);
  if (!status.ok()) {
    r.Add("mountd", kWarn,
          absl::StrCat("no mount status file ", status_path,
                       ": rangefs-mountd is not running here"),
          "systemctl enable --now rangefs-mountd");
  } else {
    r.Add("mountd", kOk,
          absl::StrCat(
              "status file updated ",
              absl::FormatDuration(absl::Trunc(
                  absl::Now() - absl::FromUnixMillis(status->updated_unix_ms),
                  absl::Seconds(1))),
              " ago, ", status->mounts.size(), " mount(s)"));
    CheckHungMounts(*status, absl::Now(), r);
  }
  std::set<std::string> wanted;
  for (const ns::NodeEntry& n : nodes) {
    const v1::NodeRecord& rec = n.record;
    if (rec.admin_state() != v1::ACTIVE && rec.admin_state() != v1::DRAINING) {
      continue;
    }
    wanted.insert(rec.id());
    const std::string target = root + "/" + rec.id();
    const std::string check = "mount " + rec.id();
    const mountd::MountInfo* m = mountd::FindMount(*mi, target);
    if (m == nullptr) {
      if (std::optional<std::string> link = SymlinkTarget(target)) {
        CheckSymlinkMount(rec, target, *link, r);
        continue;
      }
      r.Add(check, kFail, absl::StrCat(target, " is not mounted"),
            "systemctl status rangefs-mountd; `rangefs-mountd --config=... "
            "--dry-run` prints the mount command; on the node run "
            "deploy/node/export.sh");
      continue;
    }
    std::vector<std::string> problems, fixes;
    if (!m->read_only()) {
      problems.push_back("mounted read-write");
      fixes.push_back("remount with ro (rangefs-mountd always mounts ro)");
    }
    const bool nfs = absl::StartsWith(m->fs_type, "nfs");
    if (!nfs) {
      problems.push_back(absl::StrCat("fs type ", m->fs_type, ", not NFS"));
      fixes.push_back("only test setups use bind mounts (mount_type = nfs)");
    } else {
      if (m->Option("proto") != "rdma") {
        problems.push_back(
            absl::StrCat("transport proto=", m->Option("proto"), ", not rdma"));
        fixes.push_back(
            "mount with proto=rdma,port=20049; on the node `cat "
            "/proc/fs/nfsd/portlist` must list rdma 20049 (export.sh)");
      }
      int64_t rsize = 0;
      if (!absl::SimpleAtoi(m->Option("rsize"), &rsize) ||
          rsize < o.want_rsize) {
        problems.push_back(absl::StrCat("rsize=", m->Option("rsize")));
        fixes.push_back(absl::StrCat("mount with rsize=", o.want_rsize));
      }
    }
    std::string ra = ReadSmallFile(
        absl::StrCat(o.sysfs_root, "/class/bdi/", m->dev(), "/read_ahead_kb"));
    int64_t ra_kb = -1;
    if (ra.empty() || !absl::SimpleAtoi(ra, &ra_kb)) {
      problems.push_back(absl::StrCat("readahead of ", m->dev(), " unknown"));
      fixes.push_back("check /sys/class/bdi/" + m->dev());
    } else if (nfs && ra_kb < o.min_readahead_kb) {
      problems.push_back(absl::StrCat("readahead ", ra_kb, " KiB"));
      fixes.push_back(absl::StrCat(
          "scans want MiBs: readahead_kb = 4096 in rangefs.conf, or echo "
          "4096 > /sys/class/bdi/",
          m->dev(), "/read_ahead_kb"));
    }
    if (status.ok()) {
      const mountd::MountStatusEntry* e = status->Find(rec.id());
      if (e != nullptr && e->health != mountd::MountHealth::kHealthy) {
        problems.push_back(absl::StrCat("mountd says ",
                                        mountd::MountHealthName(e->health),
                                        ": ", e->error));
        fixes.push_back(absl::StrCat("the NFS server on ", rec.id(),
                                     " does not answer: check the node and "
                                     "the fabric; mountd remounts it"));
      }
    }
    std::string base = absl::StrCat(
        target, " ", m->fs_type, " from ", m->source,
        m->read_only() ? " ro" : " rw",
        ra_kb >= 0 ? absl::StrCat(", readahead ", ra_kb, " KiB") : "");
    if (problems.empty()) {
      r.Add(check, kOk, base);
    } else {
      bool fail = !m->read_only();
      r.Add(check, fail ? kFail : kWarn,
            absl::StrCat(base, ": ", absl::StrJoin(problems, "; ")),
            absl::StrJoin(fixes, "; "));
    }
  }
  for (const mountd::MountInfo& m : *mi) {
    if (!absl::StartsWith(m.mount_point, root + "/")) continue;
    std::string name = m.mount_point.substr(root.size() + 1);
    if (name.find('/') != std::string::npos || wanted.count(name) != 0) {
      continue;
    }
    r.Add("mount " + name, kWarn,
          absl::StrCat(m.mount_point,
                       " is mounted but the node is not active or draining"),
          absl::StrCat("rangefs-mountd unmounts it; by hand: umount -l ",
                       m.mount_point));
  }
}

// rangefs-mount file systems on this host (mount/mount_check.h).
void CheckFuseMounts(const DoctorOptions& o, const std::string& cluster,
                     Report& r) {
  auto mi = mountd::ReadMountInfo(o.mountinfo_path);
  if (!mi.ok()) return;  // reported by CheckMounts
  std::vector<std::string> errors;
  std::vector<mount::MountStatus> statuses =
      mount::ReadStatusDir(o.fuse_status_dir, &errors);
  for (const std::string& e : errors) {
    r.Add("fuse status", kWarn, e, "remove the file if no mount uses it");
  }
  mount::MountCheckOptions mo;
  mo.cluster = cluster;
  mo.now = absl::Now();
  mo.status_dir = o.fuse_status_dir;
  mo.sysfs_root = o.sysfs_root;
  mo.min_readahead_kb = o.min_readahead_kb;
  for (const mount::MountFinding& f :
       mount::CheckRangefsMounts(*mi, statuses, mo)) {
    const char* status =
        f.status == "OK" ? kOk : (f.status == "WARN" ? kWarn : kFail);
    r.Add(f.check, status, f.finding, f.fix);
  }
}

void CheckRdma(const DoctorOptions& o, Report& r) {
  auto devs = o.list_rdma ? o.list_rdma() : node::ListRdmaDevices();
  if (!devs.ok()) {
    r.Add("rdma", kWarn, std::string(devs.status().message()),
          "ibv_devinfo; check rdma-core and the HCA driver");
    return;
  }
  if (devs->empty()) {
    r.Add("rdma", kWarn,
          "none: no RDMA devices, so NFS cannot use proto=rdma here",
          "load the HCA driver (e.g. modprobe mlx5_ib), check `ibv_devinfo` "
          "and `rdma link`; without RDMA mounts fall back to TCP");
    return;
  }
  for (const node::RdmaDevice& d : *devs) {
    if (d.ports.empty()) {
      r.Add("rdma " + d.name, kWarn, "device has no queryable ports",
            "ibv_devinfo -d " + d.name);
    }
    for (const node::RdmaPort& p : d.ports) {
      std::string finding = absl::StrCat(
          "port ", p.number, " ", p.state,
          p.rate_gbps > 0 ? absl::StrCat(" ", p.rate_gbps, " Gb/s") : "");
      if (p.state == "ACTIVE" || p.state == "PORT_ACTIVE") {
        r.Add("rdma " + d.name, kOk, finding);
      } else {
        r.Add("rdma " + d.name, kWarn, finding,
              "check the cable/switch port and the subnet manager "
              "(ibstat; for RoCE: ip link, PFC)");
      }
    }
  }
}

}  // namespace

// Files whose path is also a directory (written by hand or by versions
// that did not refuse them): one FAIL row each, at most kMaxRows.
void CheckNamespaceTree(Context& ctx, Report& r) {
  constexpr size_t kMaxRows = 5;
  ns::TreeClashFinder finder;
  size_t files = 0;
  ns::ListFilesOptions o{.dir = "/", .page_size = 10000, .keys_only = true};
  while (true) {
    absl::StatusOr<ns::ListFilesResult> page = ctx.store->ListFiles(o);
    if (!page.ok()) {
      r.Add("namespace", kFail,
            absl::StrCat("cannot list files: ", page.status().message()),
            "fix etcd access first (see the etcd rows)");
      return;
    }
    for (const ns::FileEntry& f : page->files) finder.Add(f.path);
    files += page->files.size();
    if (page->next_page_token.empty()) break;
    o.page_token = page->next_page_token;
    o.revision = page->revision;
  }
  const std::vector<ns::TreeClash> clashes = finder.Clashes();
  if (clashes.empty()) {
    r.Add("namespace", kOk,
          absl::StrCat(files,
                       " file(s); no path is both a file and a "
                       "directory"));
    return;
  }
  for (size_t i = 0; i < clashes.size() && i < kMaxRows; ++i) {
    r.Add("namespace", kFail, ns::DescribeTreeClash(clashes[i]),
          absl::StrCat("rangefs-admin file mv ", clashes[i].file, " ",
                       clashes[i].file, ".file"));
  }
  if (clashes.size() > kMaxRows) {
    r.Add("namespace", kFail,
          absl::StrCat(clashes.size() - kMaxRows,
                       " more file(s) that are also directories"),
          "rangefs-admin fsck lists them all");
  }
}

namespace {

// Storage policies (namespace/storage_policy.h) the cluster can no longer
// place (it shrank, or nodes are down or draining): a WARN each, since
// rangefs-keeper cannot convert files to them and new puts below them fail;
// records that fail the record gate: a WARN each.
void CheckPolicies(Context& ctx, const std::vector<ns::NodeEntry>& nodes,
                   Report& r) {
  absl::StatusOr<ns::PolicyTable> policies =
      ns::LoadPolicies(*ctx.store->kv(), ctx.store->keys());
  absl::StatusOr<std::vector<ns::LiveEntry>> live = ctx.store->ListLive();
  if (!policies.ok() || !live.ok()) {
    r.Add("policy", kFail,
          absl::StrCat(
              "cannot read storage policies or live records: ",
              (policies.ok() ? live.status() : policies.status()).message()),
          "fix etcd access first (see the etcd rows)");
    return;
  }
  for (const std::string& bad : policies->invalid()) {
    r.Add("policy", kWarn, absl::StrCat(bad, " (ignored)"),
          "rangefs-admin policy set DIR ... again, or policy rm DIR");
  }
  const ns::PlacementCapacity capacity =
      ns::CountPlacementCapacity(nodes, *live);
  size_t ok = 0;
  for (const ns::StoragePolicy& p : policies->policies()) {
    absl::Status s = ns::CheckGoalPlaceable(p.goal, capacity);
    if (s.ok()) {
      ++ok;
      continue;
    }
    r.Add("policy", kWarn,
          absl::StrCat("policy of ", p.dir,
                       " cannot be placed now: ", s.message(),
                       "; rangefs-keeper cannot convert files to it and puts "
                       "below it fail"),
          absl::StrCat("bring nodes back or add some (node add, node enable), "
                       "or change the policy: rangefs-admin policy set ",
                       p.dir, " --replicas=N | --ec=K+M"));
  }
  if (ok > 0 || policies->policies().empty()) {
    r.Add("policy", kOk,
          absl::StrCat(ok, " of ", policies->policies().size(),
                       " storage policy(ies) can be placed on the ",
                       capacity.live_nodes.size(), " live ACTIVE node(s)"));
  }
}

}  // namespace

absl::StatusOr<Table> RunDoctorWith(Context& ctx, const DoctorOptions& o) {
  Report r;
  CheckEtcd(o, r);
  CheckClock(o, r);
  std::vector<ns::NodeEntry> nodes;
  auto listed = ctx.store->ListNodes();
  const bool have_nodes = listed.ok();
  if (have_nodes) {
    nodes = *std::move(listed);
    CheckNodes(ctx, nodes, ReadKeeperInfo(*ctx.store), absl::Now(), r);
  } else {
    r.Add("nodes", kFail,
          absl::StrCat("cannot read node records: ", listed.status().message()),
          "fix etcd access first (see the etcd rows)");
  }
  CheckNamespaceTree(ctx, r);
  if (have_nodes) CheckPolicies(ctx, nodes, r);
  if (o.check_mounts) {
    CheckMounts(o, nodes, r);
    CheckFuseMounts(o, ctx.cluster, r);
  }
  CheckRdma(o, r);
  return r.Finish();
}

absl::StatusOr<Table> RunDoctor(Context& ctx, Args& args) {
  absl::Status s = args.CheckAllowed(
      {"etcd", "ca", "cert", "key", "user", "password", "timeout", "mount-root",
       "mounts", "mountinfo", "sysfs-root", "mount-status", "fuse-status",
       "json", "cluster", "no-progress", "config"});
  if (!s.ok()) return s;
  if (args.positional().size() > 1 ||
      (args.positional().size() == 1 && args.positional()[0] != "doctor")) {
    return absl::InvalidArgumentError(
        "usage: doctor [--mount-root=DIR] [--mount-status=FILE] "
        "[--fuse-status=DIR] [--mounts=no]");
  }
  // The connection rangefs-admin resolved (flags, environment, config
  // file), with doctor's own flags over it.
  etcd::EtcdSettings es = ctx.etcd;
  es.endpoints = args.Get("etcd", es.endpoints);
  if (es.endpoints.empty()) es.endpoints = "127.0.0.1:2379";
  es.ca_file = args.Get("ca", es.ca_file);
  es.cert_file = args.Get("cert", es.cert_file);
  es.key_file = args.Get("key", es.key_file);
  es.username = args.Get("user", es.username);
  es.password = args.Get("password", es.password);
  if (args.Has("timeout")) {
    double secs;
    if (!absl::SimpleAtod(args.Get("timeout"), &secs) || secs <= 0) {
      return absl::InvalidArgumentError("--timeout must be seconds > 0");
    }
    es.call_timeout = absl::Seconds(secs);
  }
  DoctorOptions o;
  RANGEFS_ASSIGN_OR_RETURN(o.etcd, etcd::MakeEtcdClientOptions(es));
  if (!ctx.mount_root.empty()) o.mount_root = ctx.mount_root;
  o.mount_root = args.Get("mount-root", o.mount_root);
  std::string mounts = absl::AsciiStrToLower(args.Get("mounts", "yes"));
  if (mounts != "yes" && mounts != "no") {
    return absl::InvalidArgumentError("--mounts must be yes or no");
  }
  o.check_mounts = mounts == "yes";
  o.mountinfo_path = args.Get("mountinfo", o.mountinfo_path);
  o.sysfs_root = args.Get("sysfs-root", o.sysfs_root);
  o.mount_status_file = args.Get("mount-status", o.mount_status_file);
  o.fuse_status_dir = args.Get("fuse-status", o.fuse_status_dir);
  return RunDoctorWith(ctx, o);
}

}  // namespace admin
}  // namespace rangefs
