#!/usr/bin/env bash
# Installs every Debian package rangefs needs to build, test, benchmark and run.
# Idempotent: returns in well under a second when everything is present.
set -euo pipefail

PACKAGES=(
  # build
  bazel-bootstrap pkg-config g++ protobuf-compiler protobuf-compiler-grpc
  libgrpc++-dev libprotobuf-dev libabsl-dev libgtest-dev libgmock-dev
  libibverbs-dev librdmacm-dev liburing-dev libfuse3-dev clang-format
  libcli11-dev nlohmann-json3-dev libbenchmark-dev
  # run and test
  etcd-server etcd-client fuse3 iproute2 procps psmisc openssl python3 curl
  systemd
  # benchmarks (gnuplot draws tests/bench/run.sh's timelines)
  fio iperf3 gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
