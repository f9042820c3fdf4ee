// Fixture for layering_test: repair/ may not include admin/ (a program).
#include "admin/commands.h"
#include "ingest/agents.h"
