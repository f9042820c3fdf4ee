// Fixture for layering_test: storage_node/ may not include client_lib/.
#include "client_lib/client.h"
#include "storage_node/sidecar.h"
