#!/usr/bin/env bash
# p4c and BMv2's simple_switch_grpc, built the way linkemu needs them: BMv2
# with PI (the P4Runtime server the control plane talks to) and Thrift (its
# runtime server, the only way to set BMv2's queue depths and rates),
# optimised and without logging macros, which cost time on every packet and
# so skew every timing figure, and with linkemu's patches (tools/bmv2: timed
# departure, which lets a held packet sleep instead of going round, cheaper
# field writes and lookups, and a receive thread woken in batches).
#
#   tools/install-p4-tools.sh              install what is missing (as root)
#   tools/install-p4-tools.sh --check      report what is installed, and how
#   tools/install-p4-tools.sh --no-source  packages only (CI)
#
# It takes p4lang's Debian/Ubuntu packages where this machine reaches them
# (they may have the logging macros on, and lack timed departure), otherwise
# it builds pinned sources into /usr/local: about 50 minutes on 2 cores. A
# tool already installed with PI and Thrift is left as it is, unless it is a
# switch built without tools/bmv2's current patches and SOURCE has the
# sources. Environment:
#   SOURCE   a git host holding OWNER/NAME (default https://github.com) or a
#            folder of clones laid out as OWNER+NAME/repo
#   WORKDIR  where the sources are built and logged (default
#            /var/tmp/linkemu-p4-tools); a tree is removed once installed
#   JOBS     parallel compile jobs (default: the machine's cores)
set -euo pipefail

SOURCE=${SOURCE:-https://github.com}
TOOLS=$(cd "$(dirname "$0")" && pwd)
PATCHES=$TOOLS/bmv2
# What a build from source records of the patches it applied.
PATCHES_STAMP=/usr/local/share/linkemu/bmv2-patches.sha256
. "$TOOLS/lib.sh"
WORKDIR=${WORKDIR:-/var/tmp/linkemu-p4-tools}
JOBS=${JOBS:-$(nproc)}

# PI: release v0.1.2 and the fixes after it up to this commit. BMv2: release
# 1.15.5. p4c: release 1.2.4.8, the last made for protobuf 3.21 (Debian 12's;
# later ones expect 3.25), and the p4runtime commit its CMakeLists.txt fetches.
PI_COMMIT=f96af95e090619491e3abf2df69df340c2c9cb46
BMV2_COMMIT=693e69e634fedf007964a069fdd69acc441a5f80
P4C_COMMIT=32893b7e879db9e1c368d3568d41cb3d20c034d0
P4RUNTIME_COMMIT=1e771c4e05c4e7e250df00212b3ca02ee3202d71

BUILD_PACKAGES=(
  build-essential autoconf automake libtool pkg-config cmake bison flex libfl-dev
  libboost-dev libboost-system-dev libboost-thread-dev libboost-filesystem-dev
  libboost-program-options-dev libboost-graph-dev libboost-iostreams-dev libboost-test-dev
  libgc-dev libgmp-dev libpcap-dev libjudy-dev libreadline-dev libssl-dev libffi-dev
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libprotoc-dev
  thrift-compiler libthrift-dev libnanomsg-dev libjsoncpp-dev libxxhash-dev libevent-dev
  python3-dev python3-thrift
)

# Every way of not installing ends in one line, so that make setup goes on.
stop() { echo "p4 tools not installed: $*" >&2; exit 1; }

# What is on PATH: P4C and SWITCH (paths, empty when missing), and the
# switch's PI, THRIFT (yes/no, from the libraries it links), MACROS (on/off),
# TIMED (yes/no: tools/bmv2's timed departure) and PATCHED (yes/no: built
# with tools/bmv2's patches as they are now).
probe() {
  P4C=$(command -v p4c || true)
  SWITCH=$(command -v simple_switch_grpc || true)
  PI=no THRIFT=no MACROS=off TIMED=no PATCHED=no
  [ -n "$SWITCH" ] || return 0
  local libs
  libs=$(ldd "$SWITCH" 2>/dev/null || true)
  if grep -q 'libpi\.so[^ ]* => /' <<<"$libs"; then PI=yes; fi
  if grep -q 'libthrift[^ ]* => /' <<<"$libs"; then THRIFT=yes; fi
  # A format string of BMLOG_DEBUG_PKT in simple_switch.cpp: it is compiled
  # in only with the logging macros (bm/config.h's BM_LOG_DEBUG_ON).
  if grep -aqF 'Processing packet received on port' "$SWITCH"; then MACROS=on; fi
  # The option's name: testbed/bmv2.py asks the same way.
  if grep -aqF 'departure-time-field' "$SWITCH"; then TIMED=yes; fi
  if [ "$(cat "$PATCHES_STAMP" 2>/dev/null)" = "$(patches_sum)" ]; then PATCHED=yes; fi
}

patches_sum() { cat "$PATCHES"/*.patch | sha256sum | cut -d' ' -f1; }

need_p4c() { [ -z "$P4C" ]; }
need_bmv2() { [ -z "$SWITCH" ] || [ "$PI" = no ] || [ "$THRIFT" = no ]; }

# Prints what is installed and how; fails when linkemu cannot run with it.
check() {
  probe
  if [ -n "$P4C" ]; then
    printf '%-19s %s  %s\n' p4c "$(p4c --version 2>&1 | head -n 1)" "$P4C"
  else
    printf '%-19s missing\n' p4c
  fi
  if [ -n "$SWITCH" ]; then
    printf '%-19s %s  %s\n' simple_switch_grpc "$("$SWITCH" --version 2>&1)" "$SWITCH"
    printf '%-19s PI (P4Runtime server): %s, Thrift server: %s, logging macros: %s\n' \
      '' "$PI" "$THRIFT" "$MACROS"
    printf '%-19s timed departure (tools/bmv2): %s, all of tools/bmv2: %s\n' '' "$TIMED" \
      "$PATCHED"
  else
    printf '%-19s missing\n' simple_switch_grpc
  fi
  if [ -n "$SWITCH" ] && [ "$TIMED" = no ]; then
    echo "note: this BMv2 lacks timed departure: held packets go round the hold loop," \
         "which holds fewer and costs a core (docs/benchmark.md); 'make p4-tools' with" \
         "SOURCE set builds one with it"
  fi
  if [ -n "$SWITCH" ] && [ "$TIMED" = yes ] && [ "$PATCHED" = no ]; then
    echo "note: this BMv2 was built without some of tools/bmv2's patches, so it runs" \
         "slower than docs/benchmark.md's figures; 'make p4-tools' with SOURCE set" \
         "rebuilds it"
  fi
  if [ -n "$SWITCH" ] && [ "$MACROS" = on ]; then
    echo "warning: BMv2 has its logging macros on: fine for the tests, but they slow" \
         "every packet, so no timing figure (make bench) from it holds"
  fi
  if need_p4c || need_bmv2; then
    echo "linkemu needs p4c and simple_switch_grpc with PI and Thrift: 'make p4-tools'" \
         "installs them (docs/install.md 'P4 tools'); until then the BMv2 tests skip"
    return 1
  fi
}

apt_install() {
  apt-get install -y -q --no-install-recommends "$@" >>"$WORKDIR/apt.log" 2>&1 ||
    { apt-get update -q >>"$WORKDIR/apt.log" 2>&1 &&
      apt-get install -y -q --no-install-recommends "$@" >>"$WORKDIR/apt.log" 2>&1; }
}

# p4lang publishes packages on the openSUSE Build Service, in a repository
# named after the distribution's release. Fails when that is out of reach.
packages() {
  local list=/etc/apt/sources.list.d/p4lang.list key=/etc/apt/keyrings/p4lang.asc wanted=()
  # shellcheck source=/dev/null
  REPO=https://download.opensuse.org/repositories/home:/p4lang/$(. /etc/os-release
    case $ID in
      debian) echo "Debian_${VERSION_ID:-}" ;;
      ubuntu) echo "xUbuntu_${VERSION_ID:-}" ;;
    esac)
  curl -fsS --max-time 30 -o "$WORKDIR/p4lang.asc" "$REPO/Release.key" 2>/dev/null || return 1
  say "p4lang's packages from $REPO"
  install -D -m 644 "$WORKDIR/p4lang.asc" "$key"
  echo "deb [signed-by=$key] $REPO/ /" >"$list"
  if need_p4c; then wanted+=(p4lang-p4c); fi
  if need_bmv2; then wanted+=(p4lang-bmv2); fi
  if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${wanted[@]}"; } \
       >>"$WORKDIR/apt.log" 2>&1; then
    say "  none installed (see $WORKDIR/apt.log)"
    rm -f "$list"
    apt-get update -q >>"$WORKDIR/apt.log" 2>&1 || true
  fi
}

# step LABEL COMMAND...: runs COMMAND with its output in $LOG, showing the
# log's last line every minute, so that a long build is seen to move.
step() {
  local label=$1 pid seconds=0
  shift
  say "$label"
  "$@" >>"$LOG" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    seconds=$((seconds + 5))
    if [ $((seconds % 60)) = 0 ]; then say "  $(tail -n 1 "$LOG" | cut -c 1-100)"; fi
  done
  wait "$pid" || { tail -n 25 "$LOG"; echo "$label failed; the whole log: $LOG" >&2; exit 1; }
}

build_pi() {
  LOG=$WORKDIR/PI.log
  cd "$WORKDIR"
  say "PI $PI_COMMIT"
  fetch p4lang/PI "$PI_COMMIT" PI
  # Its submodules, at the commits the PI tree records, from SOURCE too.
  local key path name
  while read -r key path; do
    name=$(git -C PI config -f .gitmodules "${key%.path}.url")
    name=${name#https://github.com/}
    fetch "${name%.git}" "$(git -C PI rev-parse "HEAD:$path")" "PI/$path"
  done < <(git -C PI config -f .gitmodules --get-regexp '\.path$')
  cd PI
  step "PI: configure" sh -c './autogen.sh &&
    ./configure --with-proto --without-internal-rpc --without-cli --without-bmv2'
  step "PI: make -j$JOBS" make -j"$JOBS"
  step "PI: install" make install
  ldconfig
  cd "$WORKDIR" && rm -rf PI
}

build_bmv2() {
  LOG=$WORKDIR/bmv2.log
  cd "$WORKDIR"
  say "BMv2 $BMV2_COMMIT (1.15.5)"
  fetch p4lang/behavioral-model "$BMV2_COMMIT" bmv2
  cd bmv2
  local patch
  for patch in "$PATCHES"/*.patch; do
    git apply "$patch" >>"$LOG" 2>&1 || stop "$patch does not apply to BMv2 $BMV2_COMMIT"
    say "  applied ${patch#"$PATCHES"/}"
  done
  # -g: symbols for profilers, at no cost in speed.
  step "BMv2: configure --with-pi --with-thrift --disable-logging-macros --disable-elogger, -O3" \
    sh -c './autogen.sh && ./configure --with-pi --with-thrift --disable-logging-macros \
      --disable-elogger "CFLAGS=-O3 -g" "CXXFLAGS=-O3 -g"'
  step "BMv2: make -j$JOBS" make -j"$JOBS"
  step "BMv2: install" make install
  ldconfig
  mkdir -p "$(dirname "$PATCHES_STAMP")"
  patches_sum >"$PATCHES_STAMP"
  cd "$WORKDIR" && rm -rf bmv2
}

build_p4c() {
  LOG=$WORKDIR/p4c.log
  cd "$WORKDIR"
  say "p4c $P4C_COMMIT (1.2.4.8)"
  fetch p4lang/p4c "$P4C_COMMIT" p4c
  fetch p4lang/p4runtime "$P4RUNTIME_COMMIT" p4runtime
  # Unity build, as p4c's own CI does it (many times fewer compiler runs);
  # the back ends linkemu does not use off; p4runtime from SOURCE, not GitHub.
  step "p4c: cmake" cmake -S p4c -B p4c/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
    -DENABLE_GTESTS=OFF -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF \
    -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_LTO=OFF \
    -DENABLE_PROTOBUF_STATIC=OFF -DP4C_USE_PREINSTALLED_PROTOBUF=ON \
    -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$WORKDIR/p4runtime" -DFETCHCONTENT_FULLY_DISCONNECTED=ON
  step "p4c: make -j$JOBS" make -C p4c/build -j"$JOBS"
  step "p4c: install" make -C p4c/build install
  rm -rf p4c p4runtime
}

# Whether SOURCE has the pinned sources.
reachable() {
  local repo
  for repo in p4lang/PI p4lang/behavioral-model p4lang/p4c; do
    GIT_TERMINAL_PROMPT=0 timeout 60 git ls-remote "$(url "$repo")" HEAD >/dev/null 2>&1 ||
      return 1
  done
}

install_tools() {
  probe
  if [ -n "$SWITCH" ] && ! need_bmv2 && [ "$PATCHED" = no ] && [ "$1" != --no-source ] &&
     [ "$(id -u)" = 0 ] && reachable; then
    say "simple_switch_grpc lacks tools/bmv2's current patches: rebuilding BMv2 with them"
    mkdir -p "$WORKDIR"
    apt_install "${BUILD_PACKAGES[@]}" ||
      stop "apt-get cannot install the build's packages ($WORKDIR/apt.log)"
    build_bmv2
    say "done"
    check
    return
  fi
  if ! need_p4c && ! need_bmv2; then
    say "p4c and simple_switch_grpc with PI and Thrift are installed: nothing to do"
    check
    return
  fi
  [ "$(id -u)" = 0 ] || stop "installing needs root: sudo make p4-tools"
  command -v apt-get >/dev/null ||
    stop "no apt-get: build p4c and BMv2 as docs/install.md 'P4 tools' says"
  mkdir -p "$WORKDIR"
  if ! command -v curl >/dev/null || ! command -v git >/dev/null; then
    apt_install ca-certificates curl git ||
      stop "apt-get cannot install curl and git ($WORKDIR/apt.log)"
  fi
  packages || true
  probe
  if need_p4c || need_bmv2; then
    [ "$1" != --no-source ] || stop "no p4lang packages from $REPO, and no source build here (CI)"
    reachable || stop "no p4lang packages from $REPO, and no sources at SOURCE=$SOURCE;" \
                      "see docs/install.md 'P4 tools'"
    say "building from $SOURCE in $WORKDIR with $JOBS jobs; first the packages the build needs"
    apt_install "${BUILD_PACKAGES[@]}" ||
      stop "apt-get cannot install the build's packages ($WORKDIR/apt.log)"
    if need_bmv2; then
      [ -e /usr/local/lib/libpigrpcserver.so ] || build_pi
      build_bmv2
    fi
    if need_p4c; then build_p4c; fi
  fi
  say "done"
  check
}

case ${1:-} in
  --check) check ;;
  '' | --no-source) install_tools "${1:-}" ;;
  *) echo "usage: $0 [--check | --no-source]" >&2; exit 2 ;;
esac
