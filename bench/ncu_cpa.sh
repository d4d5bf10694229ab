#!/usr/bin/env bash
# bench/ncu_cpa.sh — Nsight Compute profile of the cp.async GEMM pipeline against the
# register-staged loop (the GPU machine; kiln as the static binary, bench/README.md).
#
#   bash bench/ncu_cpa.sh [OUT_DIR] [CONFIG ...]
#
# CONFIG is "S:bt" / "S:b" / "S:bt:EXTRA" (S stages of rock-gridwise-to-blockwise{cp-async=S}
# on bench/gpu_kiln.lua's 4096^3 f16 GEMM, B stored [N, K] (bt: both operands through
# cp.async) or [K, N] (b: B through registers); EXTRA: more pass options, e.g.
# ",cp-async-layout=krow"); default: 1:bt 3:bt:,cp-async-layout=kgroup 3:bt:,cp-async-layout=krow
# 3:bt (the xor layout, the default) 4:bt. Each config runs bench/cpa_launch.lua (checks
# one launch against float64, then times a few) under ncu, which profiles its second GEMM
# launch (the first timed one). Writes OUT_DIR (default /tmp/kiln_ncu) /ncu_<config>.csv (raw
# metrics) and ncu_cpa_summary.txt: one column per config, one row per metric: duration,
# SM / tensor-pipe / shared-pipe use, occupancy (registers, shared memory, the carveout),
# warp stall reasons per issued instruction, shared-memory wavefronts and bank conflicts per
# instruction kind (LDSM, STS, LDGSTS), global sectors per request, L2 / DRAM traffic.
# What it decides (docs/ARCHITECTURE.md, the cp.async paragraph): whether the slower cp.async
# kernels lose on the shared-memory data path — the hypothesis: LDGSTS shared wavefronts per
# instruction about 32 with the kgroup layout (S = 3) and about 11 with krow, against 4 for a
# conflict-free 512-byte write; global sectors per LDGSTS request 32 / 20 / 16 for kgroup /
# krow / xor (the LDS side: krow's 80-byte pitch puts odd rows across three 32-byte sectors); the shared pipe busier than at S = 1; stalls on mio_throttle /
# short_scoreboard — or elsewhere (long_scoreboard / barrier stalls, L2 sectors per request,
# achieved occupancy below the 8 warps per SM of all three).
set -u
OUT_DIR=${1:-/tmp/kiln_ncu}
shift || true
CONFIGS=("$@")
[ ${#CONFIGS[@]} -eq 0 ] && CONFIGS=("1:bt" "3:bt:,cp-async-layout=kgroup" "3:bt:,cp-async-layout=krow" "3:bt" "4:bt")
KILN=${KILN:-build/kiln}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
mkdir -p "$OUT_DIR"
if [ ! -x "$KILN" ] && [ -f build/kiln.xz ]; then
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open("build/kiln.xz"), open("build/kiln","wb"))' && chmod +x build/kiln
fi
# metric names differ between ncu versions: keep the wanted ones this ncu knows
"$NCU" --query-metrics > "$OUT_DIR/ncu_metrics.txt" 2>&1 || true
WANT="gpu__time_duration sm__throughput sm__warps_active launch__registers_per_thread
launch__occupancy_limit_registers launch__occupancy_limit_shared_mem launch__occupancy_limit_warps
launch__shared_mem_config_size launch__shared_mem_per_block_dynamic launch__shared_mem_per_block_static
launch__waves_per_multiprocessor sm__pipe_tensor_op_hmma_cycles_active sm__inst_executed_pipe_lsu
smsp__inst_executed smsp__inst_executed_op_ldgsts smsp__inst_executed_op_ldsm smsp__inst_executed_op_shared_st
l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts l1tex__data_bank_conflicts_pipe_lsu_mem_shared
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts
l1tex__data_pipe_lsu_wavefronts l1tex__lsu_writeback_active l1tex__m_xbar2l1tex_read_bytes
l1tex__t_requests_pipe_lsu_mem_global_op_ld l1tex__t_sectors_pipe_lsu_mem_global_op_ld
l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts
l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access
lts__t_sectors_srcunit_tex_op_read lts__t_requests_srcunit_tex_op_read lts__t_sector_hit_rate dram__bytes_read
smsp__average_warps_issue_stalled_barrier_per_issue_active smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active
smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active smsp__average_warps_issue_stalled_mio_throttle_per_issue_active
smsp__average_warps_issue_stalled_lg_throttle_per_issue_active smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active
smsp__average_warps_issue_stalled_wait_per_issue_active smsp__average_warps_issue_stalled_not_selected_per_issue_active
smsp__average_warps_issue_stalled_selected_per_issue_active smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active
smsp__average_warps_issue_stalled_membar_per_issue_active smsp__average_warps_issue_stalled_drain_per_issue_active
smsp__average_warps_issue_stalled_sleeping_per_issue_active smsp__average_warps_issue_stalled_tex_throttle_per_issue_active
smsp__average_warps_issue_stalled_imc_miss_per_issue_active smsp__average_warps_issue_stalled_no_instruction_per_issue_active
smsp__average_warps_issue_stalled_branch_resolving_per_issue_active smsp__average_warps_issue_stalled_misc_per_issue_active"
METRICS=""
for m in $WANT; do   # without the list (the query failed) only the sections' metrics are taken
  if grep -Eq "^[[:space:]]*$m([[:space:]]|$)" "$OUT_DIR/ncu_metrics.txt" 2>/dev/null; then
    case $m in
      launch__*) METRICS="$METRICS,$m" ;;
      *_per_issue_active) METRICS="$METRICS,$m.ratio" ;;
      *hit_rate) METRICS="$METRICS,$m.pct" ;;
      sm__throughput|sm__warps_active|sm__pipe_tensor_op_hmma_cycles_active) METRICS="$METRICS,$m.avg.pct_of_peak_sustained_active" ;;
      *) METRICS="$METRICS,$m.sum" ;;
    esac
  fi
done
METRICS=${METRICS#,}
MARGS=()
[ -n "$METRICS" ] && MARGS=(--metrics "$METRICS")
for c in "${CONFIGS[@]}"; do
  IFS=: read -r S OP EXTRA <<< "$c"
  tag="S${S}_${OP}$(echo "${EXTRA:-}" | tr -c 'A-Za-z0-9' '_' | sed 's/_*$//')"
  echo "== $c -> $OUT_DIR/ncu_$tag.csv"
  "$NCU" --target-processes all -k regex:gemm --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    ${MARGS[@]+"${MARGS[@]}"} --csv --page raw \
    "$KILN" bench/cpa_launch.lua "$S" "$OP" 5 "${EXTRA:-}" > "$OUT_DIR/ncu_$tag.csv" 2> "$OUT_DIR/ncu_$tag.log"
  echo "   rc=$? $(grep -h '^cpa_launch' "$OUT_DIR/ncu_$tag.csv" "$OUT_DIR/ncu_$tag.log" | head -1)"
done
python3 - "$OUT_DIR" "${CONFIGS[@]}" <<'PY' | tee "$OUT_DIR/ncu_cpa_summary.txt"
import csv, io, os, re, sys
out, configs = sys.argv[1], sys.argv[2:]
cols, lines = {}, {}
for c in configs:
    S, op, *ex = c.split(":")
    tag = "S%s_%s%s" % (S, op, re.sub("_*$", "", re.sub("[^A-Za-z0-9]", "_", ex[0] if ex else "")))
    text = open(os.path.join(out, "ncu_%s.csv" % tag), errors="replace").read()
    lines[c] = [l for l in text.splitlines() if l.startswith("cpa_launch")]
    rows = [l for l in text.splitlines() if l.startswith('"')]
    vals = {}
    if len(rows) >= 3:
        r = list(csv.reader(io.StringIO("\n".join(rows))))
        head, units, data = r[0], r[1], r[2]
        for h, u, v in zip(head, units, data):
            vals[h] = (v, u)
    cols[c] = vals
names = sorted({h for v in cols.values() for h in v if re.match(r"^(gpu|sm|smsp|l1tex|lts|dram|launch)__", h)})
print("ncu summary, 4096^3 f16 GEMM, second launch of each config (bench/ncu_cpa.sh)")
for c in configs:
    print("  %-14s %s" % (c, lines[c][0] if lines[c] else "(no cpa_launch line: see the .log)"))
w = max([len(n) for n in names] + [10])
print("%-*s %s" % (w, "metric", " ".join("%16s" % c for c in configs)))
for n in names:
    print("%-*s %s" % (w, n, " ".join("%16s" % (cols[c].get(n, ("-", ""))[0])[:16] for c in configs)))
def num(c, n):
    try: return float(cols[c][n][0].replace(",", ""))
    except Exception: return None
print("\nderived (per instruction / request):")
for c in configs:
    parts = []
    for kind in ("ldsm", "ldgsts", "st", "ld"):
        wf = num(c, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_%s.sum" % kind)
        bc = num(c, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_%s.sum" % kind)
        ni = num(c, {"ldsm": "smsp__inst_executed_op_ldsm.sum", "ldgsts": "smsp__inst_executed_op_ldgsts.sum",
                     "st": "smsp__inst_executed_op_shared_st.sum"}.get(kind, ""))
        if wf is not None and ni:
            parts.append("%s wavefronts/inst %.2f" % (kind, wf / ni))
        if bc is not None and ni:
            parts.append("%s conflicts/inst %.2f" % (kind, bc / ni))
    for k in ("ld", "ldgsts"):
        s = num(c, "l1tex__t_sectors_pipe_lsu_mem_global_op_%s.sum" % k)
        q = num(c, "l1tex__t_requests_pipe_lsu_mem_global_op_%s.sum" % k)
        if s and q: parts.append("global %s sectors/request %.2f" % (k, s / q))
    print("  %-14s %s" % (c, "; ".join(parts) or "-"))
PY
