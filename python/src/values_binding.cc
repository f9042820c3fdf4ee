// Plain values for Python: FileInfo, RangeLocation, ReplicaLocation as
// read-only classes; ClientStats as dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "client_lib/client.h"
#include "client_lib/locate.h"
#include "client_lib/stats.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace rangefs {
namespace python {
namespace {

py::dict HistogramToDict(const LatencyHistogram& h) {
  py::dict d;
  d["upper_bounds_seconds"] = h.upper_bounds_seconds;
  d["counts"] = h.counts;
  d["sum_seconds"] = h.sum_seconds;
  d["count"] = h.count;
  d["min_seconds"] = h.min_seconds;
  d["max_seconds"] = h.max_seconds;
  return d;
}

py::dict NodeToDict(const NodeStats& n) {
  py::dict d;
  d["bytes"] = n.bytes;
  d["requests"] = n.requests;
  d["errors"] = n.errors;
  d["timeouts"] = n.timeouts;
  d["stalls"] = n.stalls;
  d["moved"] = n.moved;
  d["checksum_failures"] = n.checksum_failures;
  d["mount_reads"] = n.mount_reads;
  d["agent_reads"] = n.agent_reads;
  d["nfs_reads"] = n.nfs_reads;
  d["uring_reads"] = n.uring_reads;
  d["caller_reads"] = n.caller_reads;
  d["in_place_reads"] = n.in_place_reads;
  d["cached_reads"] = n.cached_reads;
  d["mount_reported_down"] = n.mount_reported_down;
  d["local"] = n.local;
  d["inflight"] = n.inflight;
  d["outstanding_bytes"] = n.outstanding_bytes;
  d["admissible"] = n.admissible;
  d["latency"] = HistogramToDict(n.latency);
  return d;
}

}  // namespace

py::dict StatsToDict(const ClientStats& s) {
  py::dict d;
  d["reads"] = s.reads;
  d["pieces"] = s.pieces;
  d["bytes"] = s.bytes;
  d["retries"] = s.retries;
  d["hedges"] = s.hedges;
  d["hedge_wins"] = s.hedge_wins;
  d["checksum_failures"] = s.checksum_failures;
  d["deadline_exceeded"] = s.deadline_exceeded;
  d["unavailable"] = s.unavailable;
  d["layout_aborts"] = s.layout_aborts;
  d["layout_refreshes"] = s.layout_refreshes;
  d["stale_layout_serves"] = s.stale_layout_serves;
  d["local_bytes"] = s.local_bytes;
  d["layout_hits"] = s.layout_hits;
  d["layout_cold_lookups"] = s.layout_cold_lookups;
  d["etcd_requests"] = s.etcd_requests;
  d["shared_pieces"] = s.shared_pieces;
  d["shared_bytes"] = s.shared_bytes;
  d["shared_released"] = s.shared_released;
  d["shared_waiting"] = s.shared_waiting;
  d["ec_degraded_reads"] = s.ec_degraded_reads;
  d["ec_reconstructed_bytes"] = s.ec_reconstructed_bytes;
  d["ec_parity_hedges"] = s.ec_parity_hedges;
  d["ec_parity_hedge_wins"] = s.ec_parity_hedge_wins;
  d["ec_helper_reads"] = s.ec_helper_reads;
  d["ec_helper_bytes_copied"] = s.ec_helper_bytes_copied;
  d["ec_helper_bytes_in_place"] = s.ec_helper_bytes_in_place;
  d["ec_decodes_cut_off"] = s.ec_decodes_cut_off;
  d["ec_crc_mismatches"] = s.ec_crc_mismatches;
  d["ec_unchecked_cells"] = s.ec_unchecked_cells;
  py::dict nodes;
  for (const NodeStats& n : s.nodes) nodes[py::str(n.node)] = NodeToDict(n);
  d["nodes"] = nodes;
  d["latency"] = HistogramToDict(s.latency);
  return d;
}

void BindValues(py::module_& m) {
  py::class_<FileInfo>(m, "FileInfo",
                       "A file of the namespace (Client.stat, Client.ls).")
      .def_readonly("path", &FileInfo::path)
      .def_readonly("size", &FileInfo::size)
      .def_readonly("file_id", &FileInfo::file_id)
      .def_readonly("generation", &FileInfo::generation)
      .def_readonly("ready", &FileInfo::ready,
                    "False while the file is still being ingested")
      .def_readonly("mod_revision", &FileInfo::mod_revision,
                    "etcd revision of the file's last change")
      .def_readonly("invalid", &FileInfo::invalid,
                    "Non-empty: why the file's etcd record is invalid")
      .def("__repr__", [](const FileInfo& f) {
        return absl::StrCat("FileInfo(path='", f.path, "', size=", f.size,
                            ", generation=", f.generation,
                            f.ready ? "" : ", ready=False",
                            f.invalid.empty() ? "" : ", invalid", ")");
      });
  py::class_<ReplicaLocation>(m, "ReplicaLocation",
                              "One replica of a located range.")
      .def_readonly("node", &ReplicaLocation::node)
      .def_readonly("addresses", &ReplicaLocation::addresses,
                    "the node agent's host:port addresses")
      .def_readonly("hosts", &ReplicaLocation::hosts,
                    "their hosts, without ports")
      .def_readonly("healthy", &ReplicaLocation::healthy,
                    "False: read only as a last resort")
      .def("__repr__", [](const ReplicaLocation& r) {
        return absl::StrCat(
            "ReplicaLocation(node='", r.node, "', hosts=[",
            r.hosts.empty() ? "" : absl::StrCat("'", r.hosts[0], "'"),
            r.hosts.size() > 1 ? ", ..." : "", "]",
            r.healthy ? "" : ", healthy=False", ")");
      });
  py::class_<RangeLocation>(
      m, "RangeLocation",
      "A byte range whose bytes share replicas, in the order reads try them.")
      .def_readonly("offset", &RangeLocation::offset)
      .def_readonly("length", &RangeLocation::length)
      .def_readonly("replicas", &RangeLocation::replicas)
      .def("__repr__", [](const RangeLocation& r) {
        std::string nodes;
        for (const ReplicaLocation& l : r.replicas) {
          absl::StrAppend(&nodes, nodes.empty() ? "" : ", ", "'", l.node, "'");
        }
        return absl::StrCat("RangeLocation(offset=", r.offset,
                            ", length=", r.length, ", nodes=[", nodes, "])");
      });
}

}  // namespace python
}  // namespace rangefs
