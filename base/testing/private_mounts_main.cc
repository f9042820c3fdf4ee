// A gtest main for tests that mount file systems (FUSE layers, bind
// mounts): the test process first enters a private mount namespace, before
// any thread exists, so every mount it or its children make dies with it,
// even when the test is killed on timeout and its TearDown never runs.
// Link `//base/testing:private_mounts_main` instead of gtest_main.
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "gtest/gtest.h"

int main(int argc, char** argv) {
  if (unshare(CLONE_NEWNS) == 0) {
    mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  } else {
    fprintf(stderr, "%s: unshare(CLONE_NEWNS): %s (continuing)\n", argv[0],
            strerror(errno));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
