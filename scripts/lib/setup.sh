# setup.sh — sourced by scripts/kiln and scripts/test: installs missing Debian packages
# (non-interactive apt-get), configures build/ once and builds incrementally.
# Env: KILN_BUILD_DIR (default build), KILN_CMAKE_ARGS (extra configure args), KILN_JOBS.
set -euo pipefail
KILN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KILN_BUILD_DIR="${KILN_BUILD_DIR:-$KILN_ROOT/build}"
KILN_PACKAGES="llvm-19-dev llvm-19-tools lld-19 liblld-19-dev liblua5.4-dev lua5.4 lua-busted libreadline-dev cmake make gcc g++ zlib1g-dev libzstd-dev clang-14 libclang-rt-14-dev pkg-config slurm-wlm munge"

kiln_install_deps() {
  local missing=""
  local have
  have="$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $KILN_PACKAGES 2>/dev/null || true)"
  for p in $KILN_PACKAGES; do
    grep -q "^$p ii" <<<"$have" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  echo "kiln: installing missing Debian packages:$missing" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
}

# kiln_build [TARGET...]: configure build/ once, then build the targets (all by default).
kiln_build() {
  local dir="$KILN_BUILD_DIR"
  local jobs="${KILN_JOBS:-$(nproc)}"
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$KILN_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_RULE_MESSAGES=OFF ${KILN_CMAKE_ARGS:-} >&2
  fi
  cmake --build "$dir" -j "$jobs" "${targets[@]}" -- --no-print-directory -s >&2
}

# kiln_fuzz_cc: sets KILN_FUZZ_CC / KILN_FUZZ_CXX to a clang that links libFuzzer with ASan +
# UBSan; otherwise prints why not and returns 1.
kiln_fuzz_cc() {
  KILN_FUZZ_CC="$(command -v clang-14 || command -v clang || true)"
  KILN_FUZZ_CXX="$(command -v clang++-14 || command -v clang++ || true)"
  if [ -z "$KILN_FUZZ_CC" ] || [ -z "$KILN_FUZZ_CXX" ]; then
    echo "clang not found; install clang-14 and libclang-rt-14-dev"; return 1
  fi
  local probe rc=0
  probe="$(mktemp -d)"
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
  if ! "$KILN_FUZZ_CC" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "$KILN_FUZZ_CC cannot link libFuzzer; install libclang-rt-14-dev"; rc=1
  fi
  rm -rf "$probe"
  return $rc
}

# kiln_sanitizer_build TARGET...: builds the targets in the one ASan + UBSan build, configured
# once: with clang and libFuzzer (kiln_fuzz_cc) that is $KILN_FUZZ_DIR (default build-fuzz/:
# clang, RelWithDebInfo, -DKILN_FUZZ=ON, so the library is also instrumented for libFuzzer
# and the same objects serve the sanitized tests and the fuzz targets), else build-asan/
# (the default compiler, Debug, -DKILN_SANITIZE=ON; no fuzz targets). Sets KILN_SAN_DIR and
# KILN_SAN_FUZZ (1 or 0); the build's output goes to $KILN_SAN_DIR/build.log. One build at a
# time per folder (flock).
kiln_sanitizer_build() {
  local jobs="${KILN_JOBS:-$(nproc)}" cfg
  if kiln_fuzz_cc >/dev/null; then
    KILN_SAN_DIR="${KILN_FUZZ_DIR:-$KILN_ROOT/build-fuzz}" KILN_SAN_FUZZ=1
    cfg=(env CC="$KILN_FUZZ_CC" CXX="$KILN_FUZZ_CXX" cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON)
  else
    KILN_SAN_DIR="$KILN_ROOT/build-asan" KILN_SAN_FUZZ=0
    cfg=(cmake -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON)
  fi
  mkdir -p "$KILN_SAN_DIR"
  (
    flock 9
    { [ -f "$KILN_SAN_DIR/CMakeCache.txt" ] ||
      "${cfg[@]}" -S "$KILN_ROOT" -B "$KILN_SAN_DIR" -DCMAKE_RULE_MESSAGES=OFF; } >"$KILN_SAN_DIR/build.log" 2>&1 &&
      cmake --build "$KILN_SAN_DIR" -j "$jobs" --target "$@" >>"$KILN_SAN_DIR/build.log" 2>&1
  ) 9>"$KILN_SAN_DIR/.lock"
}

# kiln_clock: "WALL CPU" in seconds so far, CPU = user+sys of this shell and of every child
# it has waited for (from /proc/$$/stat, clock ticks). kiln_phase NAME: prints
# "== time NAME: wall W s, cpu C s" since the previous kiln_phase (or kiln_clock_start).
kiln_clock() {
  awk -v hz="$(getconf CLK_TCK)" -v now="$(date +%s.%N)" \
      '{ sub(/^.*\) /, ""); printf "%.1f %.1f\n", now, ($12 + $13 + $14 + $15) / hz }' /proc/$$/stat
}
kiln_clock_start() { read -r KILN_T_WALL KILN_T_CPU <<<"$(kiln_clock)"; }
kiln_phase() {
  local w c
  read -r w c <<<"$(kiln_clock)"
  awk -v n="$1" -v w0="$KILN_T_WALL" -v c0="$KILN_T_CPU" -v w="$w" -v c="$c" \
      'BEGIN { printf "== time %s: wall %.0f s, cpu %.0f s\n", n, w - w0, c - c0 }'
  KILN_T_WALL="$w"; KILN_T_CPU="$c"
}
