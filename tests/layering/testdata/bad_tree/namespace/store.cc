// Fixture for layering_test: non-test code with a testing header.
#include "base/testing/fake_clock.h"
#include "namespace/layout.h"
