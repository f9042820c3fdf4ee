#include "mount/metrics.h"

#include "absl/strings/str_cat.h"

namespace rangefs {
namespace mount {

namespace {

void Counter(std::string& out, const char* name, const char* help, uint64_t v) {
  absl::StrAppend(&out, "# HELP rangefs_mount_", name, " ", help,
                  "\n# TYPE rangefs_mount_", name, " counter\nrangefs_mount_",
                  name, " ", v, "\n");
}

void Gauge(std::string& out, const char* name, const char* help, int64_t v) {
  absl::StrAppend(&out, "# HELP rangefs_mount_", name, " ", help,
                  "\n# TYPE rangefs_mount_", name, " gauge\nrangefs_mount_",
                  name, " ", v, "\n");
}

uint64_t Get(const std::atomic<uint64_t>& a) {
  return a.load(std::memory_order_relaxed);
}

}  // namespace

std::string MountPrometheusText(const MountCounters& c, const IndexGauges& g) {
  std::string out;
  Counter(out, "lookups_total", "FUSE lookups", Get(c.lookups));
  Counter(out, "getattrs_total", "FUSE getattrs", Get(c.getattrs));
  Counter(out, "readdirs_total", "FUSE readdir(plus) calls", Get(c.readdirs));
  Counter(out, "opens_total", "files opened", Get(c.opens));
  Counter(out, "reads_total", "FUSE reads", Get(c.reads));
  Counter(out, "read_bytes_total", "bytes returned by reads",
          Get(c.read_bytes));
  Counter(out, "reader_reads_total",
          "reads served by a handle's sequential prefetching Reader",
          Get(c.reader_reads));
  Counter(out, "getxattrs_total", "getxattr calls", Get(c.getxattrs));
  Counter(out, "errors_total", "calls answered with an errno", Get(c.errors));
  Counter(out, "read_errors_total", "reads answered with an errno",
          Get(c.read_errors));
  Counter(out, "estale_total", "reads refused: the file changed since open",
          Get(c.estale));
  Counter(out, "erofs_total", "write-ish calls refused (read-only)",
          Get(c.erofs));
  Counter(out, "invalidations_total", "kernel cache invalidations sent",
          Get(c.invalidations));
  Gauge(out, "open_files", "open file handles",
        c.open_files.load(std::memory_order_relaxed));
  Gauge(out, "files", "files in the mounted namespace",
        static_cast<int64_t>(g.files));
  Gauge(out, "bytes", "bytes in the mounted namespace",
        static_cast<int64_t>(g.total_bytes));
  Gauge(out, "revision", "etcd revision the tree reflects", g.revision);
  Gauge(out, "watch_connected", "1 while the namespace watch is connected",
        g.watch_connected ? 1 : 0);
  Gauge(out, "pinned", "1 for a --revision snapshot", g.pinned ? 1 : 0);
  return out;
}

}  // namespace mount
}  // namespace rangefs
