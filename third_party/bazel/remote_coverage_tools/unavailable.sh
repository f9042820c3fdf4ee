#!/bin/sh
echo "coverage tools are unavailable offline; use gcov/lcov outside Bazel" >&2
exit 1
