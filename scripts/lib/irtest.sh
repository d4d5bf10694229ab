# irtest.sh — runs IR tests: every spec/ir/**/*.kir's "// RUN:" lines, with %s replaced
# by the file path and build/ tools (kiln, FileCheck) first on PATH. Sourced by
# scripts/test; sets IR_PASSED / IR_FAILED.
kiln_ir_tests() {
  local bindir="$KILN_BUILD_DIR/tools"
  mkdir -p "$bindir"
  ln -sf "$KILN_BUILD_DIR/kiln" "$bindir/kiln"
  ln -sf /usr/lib/llvm-19/bin/not "$bindir/not"
  ln -sf "$(command -v FileCheck-19 || echo /usr/lib/llvm-19/bin/FileCheck)" "$bindir/FileCheck"
  IR_PASSED=0; IR_FAILED=0
  local f
  while IFS= read -r f; do
    local runs ok=1 out
    runs="$(sed -n 's|^// RUN: *||p' "$f")"
    if [ -z "$runs" ]; then echo "IR FAIL $f: no RUN line"; IR_FAILED=$((IR_FAILED + 1)); continue; fi
    while IFS= read -r cmd; do
      cmd="${cmd//%s/$f}"
      if ! out="$(cd "$KILN_ROOT" && PATH="$bindir:$PATH" bash -o pipefail -c "$cmd" 2>&1)"; then
        ok=0; echo "IR FAIL $f"; echo "  RUN: $cmd"; echo "$out" | head -30 | sed 's/^/  | /'
      fi
    done <<<"$runs"
    if [ $ok = 1 ]; then IR_PASSED=$((IR_PASSED + 1)); else IR_FAILED=$((IR_FAILED + 1)); fi
  done < <(find "$KILN_ROOT/spec/ir" -name '*.kir' | sort)
  echo "IR tests: $IR_PASSED passed, $IR_FAILED failed"
}
