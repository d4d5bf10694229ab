# busted.sh — runs the busted specs (spec/lua/*_spec.lua) one file per process on
# KILN_JOBS parallel workers (default nproc), the slowest files first. Sourced by scripts/test.
#   kiln_busted LOGDIR CMD...   runs `CMD... FILE` for every spec file, its output in
#                               LOGDIR/NAME.log; sets BUSTED_S, BUSTED_F, BUSTED_E, BUSTED_P
#                               (the sums of the files' "N successes / N failures / N errors /
#                               N pending" lines; a file without that line counts one
#                               failure) and prints the failing files' output, the slowest
#                               files and one summary line of the same form. With
#                               KILN_SPEC_TIMES=1 also every file's time and the 40 slowest
#                               tests (the "time" lines of the busted_timed.lua output handler).
# The files share nothing at run time (busted insulates each file; temporary files come
# from os.tmpname), so the order and the split do not change what runs.

# Spec files known to be slow in either busted pass (the "spec file times" of a
# KILN_SPEC_TIMES=1 run), slowest first, started first so that the workers finish together;
# the others follow in name order. Only the order depends on it.
KILN_SLOW_SPECS="output_swizzle_spec input_cvt_spec nvidia_gemm_spec cp_async_spec amd_suite_spec splitk_workspace_spec amd_loop_spec tma_spec fp8_spec elementwise_pairs_spec ptx_addr_spec memory_spec fused_spec"

kiln_busted() {
  local logdir="$1"
  shift
  rm -rf "$logdir"
  mkdir -p "$logdir"
  local jobs="${KILN_JOBS:-$(nproc)}" files=() f n
  for n in $KILN_SLOW_SPECS; do [ -f "$KILN_ROOT/spec/lua/$n.lua" ] && files+=("$KILN_ROOT/spec/lua/$n.lua"); done
  for f in "$KILN_ROOT"/spec/lua/*_spec.lua; do
    n="$(basename "$f" .lua)"
    grep -qw -- "$n" <<<"$KILN_SLOW_SPECS" || files+=("$f")
  done
  local running=0 start
  start=$(date +%s.%N)
  for f in "${files[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
      wait -n
      running=$((running - 1))
    fi
    "$@" "$f" >"$logdir/$(basename "$f" .lua).log" 2>&1 &
    running=$((running + 1))
  done
  wait
  BUSTED_S=0 BUSTED_F=0 BUSTED_E=0 BUSTED_P=0
  local line s fl e p secs times=""
  for f in "${files[@]}"; do
    n="$(basename "$f" .lua)"
    line="$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$logdir/$n.log" | tail -1)"
    if [ -z "$line" ]; then
      BUSTED_F=$((BUSTED_F + 1))
      echo "-- $n: busted did not report a summary"
      tail -40 "$logdir/$n.log"
      continue
    fi
    read -r s fl e p secs <<<"$(sed -E 's|([0-9]+) success(es)? / ([0-9]+) failures? / ([0-9]+) errors? / ([0-9]+) pending[^0-9]*([0-9.]*).*|\1 \3 \4 \5 \6|' <<<"$line")"
    BUSTED_S=$((BUSTED_S + s)) BUSTED_F=$((BUSTED_F + fl)) BUSTED_E=$((BUSTED_E + e)) BUSTED_P=$((BUSTED_P + p))
    times="$times${secs:-0} $n"$'\n'
    if [ "$fl" != 0 ] || [ "$e" != 0 ]; then
      echo "-- $n: $line"
      tail -60 "$logdir/$n.log"
    fi
  done
  if [ -n "${KILN_SPEC_TIMES:-}" ] && [ "$KILN_SPEC_TIMES" != 0 ]; then
    echo "spec file times (s):"
    sort -rn <<<"$times" | awk 'NF { printf "  %7.1f %s\n", $1, $2 }'
    echo "slowest tests (s):"
    for f in "${files[@]}"; do
      n="$(basename "$f" .lua)"
      sed -nE "s/^time +([0-9.]+) s  (.*)/\1 $n: \2/p" "$logdir/$n.log"
    done | sort -rn | head -40 | awk '{ printf "  %7.1f %s\n", $1, substr($0, length($1) + 2) }'
  fi
  echo "slowest: $(sort -rn <<<"$times" | head -8 | awk 'NF { printf "%s%s %.0f s", sep, $2, $1; sep = ", " }')"
  awk -v s="$BUSTED_S" -v f="$BUSTED_F" -v e="$BUSTED_E" -v p="$BUSTED_P" -v t0="$start" -v t1="$(date +%s.%N)" -v n="${#files[@]}" -v j="$jobs" \
    'BEGIN { printf "%d successes / %d failures / %d errors / %d pending : %.1f seconds (%d files, %d at a time)\n", s, f, e, p, t1 - t0, n, j }'
}
