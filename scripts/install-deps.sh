#!/usr/bin/env bash
# Installs the Debian 12 packages weir builds and tests with.
#   scripts/install-deps.sh               what the build and the tests need
#   scripts/install-deps.sh --build-only  what building weir needs (make demo)
# Idempotent: apt-get runs only when a package is missing.
set -euo pipefail

BUILD_ONLY=0
case "${1:-}" in
  "") ;;
  --build-only) BUILD_ONLY=1 ;;
  *) echo "install-deps: unknown argument '$1' (--build-only or nothing)" >&2; exit 2 ;;
esac

# Compilers, tools and libraries: everything CMake's configure step finds,
# the linker (lld), and what make package uses (file, help2man).
BUILD_PACKAGES=(
  build-essential cmake ninja-build ccache lld pkg-config file help2man
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libxxhash-dev libzstd-dev librocksdb-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libcpp-httplib-dev libssl-dev
  prometheus-cpp-dev
  librdkafka-dev libpq-dev
  libcurl4-openssl-dev libpugixml-dev
  libzookeeper-mt-dev libfuse3-dev
  libpg-query-dev libre2-dev
)
# The servers, clients and tools the tests start, the sanitizer and fuzz
# builds' compiler, the browser of the web UI tests.
TEST_PACKAGES=(
  prometheus iproute2 kcat postgresql nodejs zookeeper fuse3
  clang libclang-rt-14-dev
  chromium chromium-driver fonts-dejavu-core
  openssl
)
PACKAGES=("${BUILD_PACKAGES[@]}")
if [ "$BUILD_ONLY" -eq 0 ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$BUILD_ONLY" -eq 1 ]; then exit 0; fi
# Debian's nodejs comes without npm (other builds of Node include it).
if ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

# The S3-compatible server the tests start (s3rver, from the npm registry,
# at the versions tests/s3rver/package-lock.json pins), into
# tests/s3rver/node_modules.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -x "$ROOT/tests/s3rver/node_modules/.bin/s3rver" ]; then
  echo "install-deps: installing s3rver (npm) into tests/s3rver" >&2
  npm ci --prefix "$ROOT/tests/s3rver" --no-audit --no-fund --loglevel=error >/dev/null
fi
