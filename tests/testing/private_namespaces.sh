#!/usr/bin/env bash
# For shell tests that make mounts (FUSE) or network namespaces, veths and tc
# rules (deploy/local/cluster.sh --hosts=netns): source it first thing,
#
#   source "$TEST_SRCDIR/$TEST_WORKSPACE/tests/testing/private_namespaces.sh"
#
# and the test re-runs itself in private mount and network namespaces, with
# loopback up and a private /run/netns. Everything the test makes then dies
# with its last process, even when Bazel kills it on a timeout and no trap
# runs (Bazel's process-wrapper kills every process left): the mounts, the
# named network namespaces (their /run/netns entries are mounts in the
# test's namespace) and the veths (made in the test's own network). Other
# tests on the machine never see them, nor clash with their names.
# Without the privilege to unshare, the test runs as it is (a warning says
# so).
if [ -z "${RANGEFS_TEST_PRIVATE_NS:-}" ]; then
  if unshare --mount --net --propagation private true 2>/dev/null; then
    export RANGEFS_TEST_PRIVATE_NS=1
    exec unshare --mount --net --propagation private bash "$0" "$@"
  fi
  echo "private_namespaces.sh: cannot unshare mount+net namespaces; running in the host's" >&2
else
  ip link set lo up || { echo "private_namespaces.sh: cannot bring lo up" >&2; exit 1; }
  mkdir -p /run/netns && mount -t tmpfs rangefs-test-netns /run/netns \
    || { echo "private_namespaces.sh: cannot mount a private /run/netns" >&2; exit 1; }
fi
