#include "mount/metrics.h"

#include "base/prometheus_text.h"

namespace rangefs {
namespace mount {

namespace {

uint64_t Get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}

}  // namespace

std::string MountPrometheusText(const MountCounters& c, const IndexGauges& g) {
  PrometheusText w("rangefs_mount_");
  w.Counter("lookups_total", "FUSE lookups", Get(c.lookups));
  w.Counter("getattrs_total", "FUSE getattrs", Get(c.getattrs));
  w.Counter("readdirs_total", "FUSE readdir(plus) calls", Get(c.readdirs));
  w.Counter("opens_total", "files opened", Get(c.opens));
  w.Counter("reads_total", "FUSE reads", Get(c.reads));
  w.Counter("read_bytes_total", "bytes returned by reads", Get(c.read_bytes));
  w.Counter("reader_reads_total",
            "reads served by a handle's sequential prefetching Reader",
            Get(c.reader_reads));
  w.Counter("spliced_reads_total",
            "reads answered by splicing object files into the reply",
            Get(c.spliced_reads));
  w.Counter("getxattrs_total", "getxattr calls", Get(c.getxattrs));
  w.Counter("errors_total", "calls answered with an errno", Get(c.errors));
  w.Counter("read_errors_total", "reads answered with an errno",
            Get(c.read_errors));
  w.Counter("estale_total", "reads refused: the file changed since open",
            Get(c.estale));
  w.Counter("erofs_total", "write-ish calls refused (read-only)", Get(c.erofs));
  w.Counter("invalidations_total", "kernel cache invalidations sent",
            Get(c.invalidations));
  w.Gauge("open_files", "open file handles",
          c.open_files.load(std::memory_order_relaxed));
  w.Gauge("files", "files in the mounted namespace",
          static_cast<int64_t>(g.files));
  w.Gauge("bytes", "bytes in the mounted namespace",
          static_cast<int64_t>(g.total_bytes));
  w.Gauge("revision", "etcd revision the tree reflects", g.revision);
  w.Gauge("watch_connected", "1 while the namespace watch is connected",
          g.watch_connected ? 1 : 0);
  w.Gauge("pinned", "1 for a --revision snapshot", g.pinned ? 1 : 0);
  return w.Take();
}

}  // namespace mount
}  // namespace rangefs
