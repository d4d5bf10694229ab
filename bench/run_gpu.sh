#!/usr/bin/env bash
# bench/run_gpu.sh — the whole GPU suite in one command, on the GPU machine, from
# the repository root, with a static build/kiln there (cmake -DKILN_STATIC=ON here, carried):
#
#   bash bench/run_gpu.sh            # results under $OUT when set, else /tmp/kiln_bench
#
# Runs bench/gpu_peers.py, which for every case of bench/gpu_cases.txt runs kiln's side
# (build/kiln bench/gpu_kiln.lua) and then the peers (cuBLAS, Triton, torch eager / graph /
# compile, torch copy), so drift hits both; then bench/gpu_report.py prints the merged table
# and the targets. Writes (8 files, few enough that a remote run can copy them all back):
#   results.tsv    every row (kiln and peers), the source of the table
#   table.md       the table as Markdown for bench/RESULTS.md, machine header included
#   kernel_time_vs_peers.png, fraction_of_peak.png, compile_latency.png
#                  one plot per question, titled with date, commit and device (gpu_report.py)
#   machine.txt    date, commit, GPU, driver, clocks before and after
#   kernels.txt    ptxas -v resource use and the SASS instruction mix of kiln's kernels
#   log.txt        the full log
# Environment: BENCH_TIMEOUT (s, default 500) bounds the measuring part so the report still
# runs inside a 10-minute call; BENCH_ARGS adds arguments to gpu_peers.py (e.g.
# "--no-compile --budget-ms 300" or "--case gemm_f16_4096"); KILN_COMMIT names the commit
# when the tree has no .git.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-/tmp/kiln_bench}"
mkdir -p "$OUT"
KILN="${KILN:-build/kiln}"
PTX_DIR="$(mktemp -d /tmp/kiln_ptx.XXXXXX)"
export PYTHONUNBUFFERED=1

machine() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: ${KILN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "host: $(uname -srm), $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode --format=csv 2>&1 | sed 's/^/  /'
}
{ echo "== before"; machine; } > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# The static kiln is ~120 MB (every LLVM target), too large to copy comfortably:
# carry build/kiln.xz (strip build/kiln && xz -T2 -k -f build/kiln: ~23 MB) and it is unpacked here.
if [ -f "$KILN.xz" ] && [ "$KILN.xz" -nt "$KILN" ]; then   # absent or older than the .xz
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$KILN.xz" "$KILN" &&
    chmod +x "$KILN" && echo "unpacked $KILN.xz"
fi
if ! "$KILN" -v > /dev/null 2>&1; then
  echo "run_gpu.sh: $KILN does not run here (build it with -DKILN_STATIC=ON and carry build/kiln)" | tee "$OUT/log.txt"
  "$KILN" -v 2>&1 | tee -a "$OUT/log.txt"
  exit 1
fi
"$KILN" -e 'local d = kiln.device("cuda"); print(string.format("kiln sees: %s, arch %s, %d SMs, driver %s", d.name, d.arch, d.compute_units, d.driver))' 2>&1 | tee "$OUT/log.txt"

# shellcheck disable=SC2086
timeout "${BENCH_TIMEOUT:-500}" python3 bench/gpu_peers.py "$OUT/results.tsv" --kiln "$KILN" --ptx "$PTX_DIR" ${BENCH_ARGS:-} 2>&1 | tee -a "$OUT/log.txt"
status=${PIPESTATUS[0]}
[ "$status" = 124 ] && echo "run_gpu.sh: the measuring part hit BENCH_TIMEOUT; the table below is partial" | tee -a "$OUT/log.txt"

# resource use and instruction mix of kiln's kernels (ptxas and cuobjdump from CUDA, else Triton's copies)
tool() {
  local t; t="$(command -v "$1" 2>/dev/null)" || true
  [ -z "$t" ] && [ -x "/usr/local/cuda/bin/$1" ] && t="/usr/local/cuda/bin/$1"
  [ -z "$t" ] && t="$(python3 -c "import os, triton; print(os.path.join(os.path.dirname(triton.__file__), 'backends', 'nvidia', 'bin', '$1'))" 2>/dev/null)"
  [ -n "$t" ] && [ -x "$t" ] && echo "$t"
}
PTXAS="$(tool ptxas)"; CUOBJDUMP="$(tool cuobjdump)"
# opcode counts (with modifiers: HMMA.16816.F32.BF16, LDS.128, ...) of a cuobjdump -sass listing
sass_mix() {
  awk '/\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// { op = ($2 ~ /^@/) ? $3 : $2; sub(/;$/, "", op); print op }' |
    sort | uniq -c | sort -rn
}
{
  echo "ptxas: ${PTXAS:-missing}   cuobjdump: ${CUOBJDUMP:-missing}"
  for f in "$PTX_DIR"/*.ptx; do
    [ -e "$f" ] || continue
    echo; echo "== $(basename "$f")"
    [ -n "$PTXAS" ] || continue
    "$PTXAS" -arch=sm_90 -v "$f" -o "$f.cubin" 2>&1 | grep -vE '^$' | sed 's/^/  /'
    if [ -n "$CUOBJDUMP" ] && [ -e "$f.cubin" ]; then
      echo "  SASS instruction mix (top 24 opcodes):"
      "$CUOBJDUMP" -sass "$f.cubin" | sass_mix | head -24 | sed 's/^/    /'
    fi
  done
} > "$OUT/kernels.txt" 2>&1

{ echo "== after"; machine; } >> "$OUT/machine.txt"
python3 bench/gpu_report.py "$OUT/results.tsv" --md "$OUT/table.md" --plots "$OUT" --machine "$OUT/machine.txt" 2>&1 | tee -a "$OUT/log.txt"
rm -rf "$PTX_DIR"
exit "$status"
