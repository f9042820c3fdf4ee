#!/bin/sh
# Bazel's --workspace_status_command (.bazelrc): the git commit the build
# comes from, for --version (base/version.h). STABLE_ keys are part of the
# stamped action's key, so a cached header never carries another commit.
# Offline; outside a git checkout (a source tarball) the commit is "unknown".
commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
echo "STABLE_GIT_COMMIT ${commit:-unknown}"
