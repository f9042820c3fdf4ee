#include "storage_node/rdma/rdma_devices.h"

#include <errno.h>
#include <infiniband/verbs.h>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/logging.h"

namespace rangefs {
namespace node {

double RdmaRateGbps(int active_width, int active_speed) {
  int lanes = 0;
  switch (active_width) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      return 0;
  }
  double lane_gbps = 0;
  switch (active_speed) {
    case 1:
      lane_gbps = 2.5;
      break;  // SDR
    case 2:
      lane_gbps = 5.0;
      break;  // DDR
    case 4:
      lane_gbps = 10.0;
      break;  // QDR / FDR10
    case 8:
      lane_gbps = 10.0;
      break;  // FDR10
    case 16:
      lane_gbps = 14.0625;
      break;  // FDR
    case 32:
      lane_gbps = 25.78125;
      break;  // EDR
    case 64:
      lane_gbps = 50.0;
      break;  // HDR
    case 128:
      lane_gbps = 100.0;
      break;  // NDR
    default:
      return 0;
  }
  return lanes * lane_gbps;
}

absl::StatusOr<std::vector<RdmaDevice>> ListRdmaDevices() {
  std::vector<RdmaDevice> out;
  int num = 0;
  errno = 0;
  struct ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    int e = errno;
    if (e == ENOSYS || e == ENODEV || e == ENOENT || e == 0) {
      RANGEFS_LOG(INFO) << "no RDMA devices (ibv_get_device_list: errno " << e
                        << ")";
      return out;
    }
    return ErrnoStatus(e, "ibv_get_device_list");
  }
  for (int i = 0; i < num; ++i) {
    RdmaDevice dev;
    dev.name = ibv_get_device_name(list[i]);
    struct ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      RANGEFS_LOG(WARNING) << "ibv_open_device " << dev.name << " failed";
      out.push_back(std::move(dev));
      continue;
    }
    struct ibv_device_attr attr;
    if (ibv_query_device(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        struct ibv_port_attr pa;
        if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
        dev.ports.push_back(
            {.number = p,
             .state = ibv_port_state_str(pa.state),
             .rate_gbps = RdmaRateGbps(pa.active_width, pa.active_speed)});
      }
    } else {
      RANGEFS_LOG(WARNING) << "ibv_query_device " << dev.name << " failed";
    }
    ibv_close_device(ctx);
    out.push_back(std::move(dev));
  }
  ibv_free_device_list(list);
  if (out.empty()) RANGEFS_LOG(INFO) << "no RDMA devices";
  return out;
}

}  // namespace node
}  // namespace rangefs
