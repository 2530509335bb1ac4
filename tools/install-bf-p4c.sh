#!/usr/bin/env bash
# bf-p4c, p4c's open Tofino back end (backends/tofino: the compiler, its
# driver and the assembler bfas), built from a pinned p4c release into its
# own prefix, so that it leaves alone the p4c in /usr/local that the BMv2
# build uses. It shows that linkemu's link model compiles for Tofino:
#   bf-p4c --target tofino --arch tna PROGRAM.p4
#   bf-p4c --target tofino2 --arch t2na PROGRAM.p4
#
#   tools/install-bf-p4c.sh          build and install (as root)
#   tools/install-bf-p4c.sh --check  print bf-p4c's version and path, or
#                                    "missing" (and exit 1)
#
# About 2.5 hours on 2 cores. The build folder is kept: run the script again
# after an interruption and the compile goes on where it stopped; sources are
# fetched and configured again only when the folder lacks them. Debian 12 is
# too old for this release in places, so it takes Abseil from Debian 13's
# source archive, Z3 4.11 from PyPI's z3-solver wheel (p4c takes none newer
# than 4.11: later ones crash under its garbage collector), and applies
# linkemu's patches (tools/bf-p4c). Environment:
#   SOURCE   a git host holding OWNER/NAME (default https://github.com) or a
#            folder of clones laid out as OWNER+NAME/repo
#   PREFIX   where bf-p4c is installed (default /opt/bf-p4c)
#   WORKDIR  the build folder (default /var/tmp/linkemu-bf-p4c)
#   JOBS     parallel compile jobs (default: the machine's cores)
set -euo pipefail

SOURCE=${SOURCE:-https://github.com}
PREFIX=${PREFIX:-/opt/bf-p4c}
WORKDIR=${WORKDIR:-/var/tmp/linkemu-bf-p4c}
JOBS=${JOBS:-$(nproc)}
TOOLS=$(cd "$(dirname "$0")" && pwd)
PATCHES=$TOOLS/bf-p4c
. "$TOOLS/lib.sh"

# p4c release 1.2.5.16 and the p4runtime commit its CMakeLists.txt fetches.
P4C_COMMIT=6b7ec98e77dfc71c6e1309d9a76183cb31f35a8a
P4RUNTIME_COMMIT=ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5
# The Abseil release p4c fetches, as Debian packages it.
ABSEIL_URL=https://deb.debian.org/debian/pool/main/a/abseil/abseil_20240722.0.orig.tar.gz
ABSEIL_SHA256=df6d1f5ef540725f3851201176a60486aab332410788465c9877910bb471c34a
Z3_WHEEL=z3-solver==4.11.2.0
# Python packages (the versions p4c's CI takes): the driver's tools need the
# first two, and packing its logging tools needs them all.
TOOL_PYTHON_PACKAGES=(jsl==0.2.4 jsonschema==4.23.0)
BUILD_PYTHON_PACKAGES=("${TOOL_PYTHON_PACKAGES[@]}" pyinstaller==6.11.0 pyyaml==6.0.2)

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git curl unzip python3-venv bison flex libfl-dev
  libboost-dev libboost-iostreams-dev libboost-graph-dev libgc-dev libgmp-dev
  libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev rapidjson-dev
)

check() {
  if [ -x "$PREFIX/bin/bf-p4c" ]; then
    printf '%-8s %s  %s\n' bf-p4c "$("$PREFIX/bin/bf-p4c" --version 2>&1 | head -n 1)" "$PREFIX/bin/bf-p4c"
  else
    printf '%-8s missing\n' bf-p4c
    return 1
  fi
}

# The sources, patched; p4c/.patched marks a complete tree.
sources() {
  [ -f p4c/.patched ] && return 0
  say "sources: p4c $P4C_COMMIT (1.2.5.16), p4runtime, Abseil, Z3"
  fetch p4lang/p4c "$P4C_COMMIT" p4c
  fetch p4lang/p4runtime "$P4RUNTIME_COMMIT" p4runtime
  for patch in "$PATCHES"/*.patch; do git -C p4c apply "$patch"; done
  curl -sSfL -o abseil.tar.gz "$ABSEIL_URL"
  echo "$ABSEIL_SHA256  abseil.tar.gz" | sha256sum -c --quiet
  rm -rf abseil && mkdir abseil && tar -xzf abseil.tar.gz -C abseil --strip-components=1
  rm abseil.tar.gz
  /usr/bin/python3 -m venv venv
  venv/bin/pip install -q "${BUILD_PYTHON_PACKAGES[@]}"
  venv/bin/pip download -q --no-deps --only-binary=:all: -d wheel "$Z3_WHEEL"
  rm -rf z3 && unzip -q wheel/z3_solver-*.whl 'z3/include/*' 'z3/lib/libz3.so*' && rm -rf wheel
  touch p4c/.patched
}

# Debian 12's protobuf (3.21) has no CMake package, which p4c looks for:
# tools/bf-p4c has one, with a protoc that adapts the C++ it writes to p4c.
# p4c asks for 25.3 and takes any other version with a warning; it is told
# 3.21 will do. Changed files are copied over on any run, and the compile
# then configures again.
protobuf_config() {
  mkdir -p cmake/protobuf
  install -C -m 644 "$PATCHES/protobuf-config.cmake" cmake/protobuf/
  install -C -m 755 "$PATCHES/protoc" cmake/protobuf/
  [ -f cmake/protobuf/protobuf-config-version.cmake ] ||
    printf 'set(PACKAGE_VERSION %s)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' \
      "$(protoc --version | cut -d ' ' -f 2)" >cmake/protobuf/protobuf-config-version.cmake
}

configure() {
  [ -f p4c/build/build.ninja ] && return 0
  say "configure"
  rm -rf p4c/build
  # Unity build, as p4c's own CI does it; only the Tofino back end and the
  # front end it needs; every dependency from this folder or Debian, none
  # downloaded by CMake.
  cmake -S p4c -B p4c/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_RPATH="$PREFIX/lib" \
    -DENABLE_TOFINO=ON -DP4C_DRIVER_NAME=bf-p4c \
    -DENABLE_BMV2=OFF -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF \
    -DENABLE_P4FMT=OFF -DENABLE_P4TEST=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF \
    -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF -DENABLE_LTO=OFF \
    -DP4C_USE_PREINSTALLED_BDWGC=ON \
    -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DENABLE_PROTOBUF_STATIC=OFF \
    -DProtobuf_DIR="$WORKDIR/cmake/protobuf" \
    -DUSE_PREINSTALLED_Z3=ON -DZ3_INCLUDE_DIR="$WORKDIR/z3/include" \
    -DZ3_LIBRARY="$WORKDIR/z3/lib/libz3.so" \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
    -DFETCHCONTENT_SOURCE_DIR_ABSEIL="$WORKDIR/abseil" \
    -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$WORKDIR/p4runtime"
}

if [ "${1:-}" = --check ]; then check; exit; fi
if [ $# -gt 0 ]; then echo "usage: $0 [--check]" >&2; exit 2; fi

if command -v apt-get >/dev/null; then
  apt-get install -y -q --no-install-recommends "${BUILD_PACKAGES[@]}" >/dev/null ||
    { apt-get update -q && apt-get install -y -q --no-install-recommends "${BUILD_PACKAGES[@]}"; }
fi
mkdir -p "$WORKDIR"
cd "$WORKDIR"
# The driver's logging tools are packed with this folder's pyinstaller.
export PATH=$WORKDIR/venv/bin:$PATH
sources
protobuf_config
configure
say "compile: ninja -j$JOBS (goes on where an earlier run stopped)"
# -k 0: an error stops only what depends on it, so that one run shows every
# error and builds all the rest.
ninja -C p4c/build -j"$JOBS" -k 0
say "install into $PREFIX"
cmake --install p4c/build
install -d "$PREFIX/lib"
install -m 644 z3/lib/libz3.so* "$PREFIX/lib/"
# The driver and its Python tools run with a Python of their own.
[ -x "$PREFIX/venv/bin/python3" ] || /usr/bin/python3 -m venv "$PREFIX/venv"
"$PREFIX/venv/bin/pip" install -q "${TOOL_PYTHON_PACKAGES[@]}"
for tool in "$PREFIX"/bin/*; do
  if head -n 1 "$tool" | grep -q '^#!.*python'; then sed -i "1s|.*|#!$PREFIX/venv/bin/python3|" "$tool"; fi
done
check
