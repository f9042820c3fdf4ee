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
  # erasure coding (ec/): Intel ISA-L's Reed-Solomon kernels
  libisal-dev
  # the client library's userspace NFS data path (libnfs); nfs-cat for the
  # NFS benchmark's baseline
  libnfs-dev libnfs-utils
  # clang: the thread-safety analysis build (--config=tsa)
  clang
  # the Python package (python/): pybind11 and CPython's headers; the test
  # virtualenv is made from Debian's python3 (python/venv.sh)
  python3-pybind11 python3-dev python3-venv
  # run and test (fio and attr: the rangefs-mount tests run fio --verify and
  # getfattr through the mount)
  etcd-server etcd-client fuse3 iproute2 procps psmisc openssl python3 curl
  systemd fio attr
  # real NFS in userspace (issue 37): nfs-ganesha serves node exports
  # (deploy/node/export.sh --ganesha, cluster.sh up --nfs, the tests' harness
  # tests/testing/ganesha_server.h), rpcbind for its NFSv3, libnfs-utils'
  # nfs-cat / nfs-ls check and read them
  nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils
  # client_lib:nfs_leak_test runs the NFS data path under its leak checker
  valgrind
  # benchmarks (gnuplot draws tests/bench/run.sh's timelines)
  iperf3 gnuplot-nox
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
