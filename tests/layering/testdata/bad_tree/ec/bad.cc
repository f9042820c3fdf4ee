// Fixture for layering_test: the erasure codec may not see the layout schema
// (proto/ is above ec/); base/ is below it.
#include "base/status_macros.h"
#include "proto/layout.pb.h"
