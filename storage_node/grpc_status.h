// File: grpc_status.h
//
// absl::Status <-> grpc::Status at the gRPC edge. The code numbers are the
// same (google.rpc.Code), so only the representation changes.
#ifndef RANGEFS_STORAGE_NODE_GRPC_STATUS_H_
#define RANGEFS_STORAGE_NODE_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace rangefs {
namespace node {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

}  // namespace node
}  // namespace rangefs

#endif  // RANGEFS_STORAGE_NODE_GRPC_STATUS_H_
