// Fixture for layering_test: a public client header with a gRPC-based include.
#include <grpcpp/grpcpp.h>
#include <string>

#include "absl/time/time.h"
#include "storage_node/node_client.h"
