// File: rdma_devices.h
//
// Lists the node's RDMA devices through libibverbs, for logs and (later)
// the live record. This directory is the only place that includes
// <infiniband/verbs.h>.
#ifndef RANGEFS_STORAGE_NODE_RDMA_RDMA_DEVICES_H_
#define RANGEFS_STORAGE_NODE_RDMA_RDMA_DEVICES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rangefs {
namespace node {

struct RdmaPort {
  int number = 0;        // 1-based, as verbs numbers them.
  std::string state;     // "ACTIVE", "DOWN", ... (ibv_port_state_str).
  double rate_gbps = 0;  // Active width x per-lane speed; 0 if unknown.
};

struct RdmaDevice {
  std::string name;  // e.g. "mlx5_0".
  std::vector<RdmaPort> ports;
};

// Returns the RDMA devices and their ports. A kernel or host without RDMA
// (ibv_get_device_list fails with ENOSYS/ENODEV, or finds none) yields an
// empty list, logged as "no RDMA devices", not an error. A device that
// cannot be opened or queried is listed without ports (logged). Blocking.
absl::StatusOr<std::vector<RdmaDevice>> ListRdmaDevices();

// Link rate in Gb/s for a verbs active_width code (1, 2, 4, 8, 16 = 1x, 4x,
// 8x, 12x, 2x) and active_speed code (1 SDR .. 128 NDR); 0 if unknown.
double RdmaRateGbps(int active_width, int active_speed);

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_RDMA_RDMA_DEVICES_H_
