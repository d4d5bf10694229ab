-- bench/fp8_accum_probe.lua — measures how a device's fp8 GEMM accumulates (on sm_90a: the
-- fp8 wgmma, wgmma.mma_async m64nNk32 .f32.e4m3 / .e5m2, opted in with
-- fp8-compute{gemm-operands=fp8}; the default, f16 operands, as the control).
-- C = A @ B with B all 2^-8 and rows of A (values x 2^8, so the products are the values
-- below, also in f8e4m3fn whose smallest value is 2^-9) built to show the kept bits:
--   1+2^-s            products 1 and 2^-s in one k32 instruction
--   [1]+k32[2^-s]     1 at k = 0, 2^-s at k = 32: the f32 accumulator plus the next instruction
--   1+1.5*2^-s        1, 2^-s, 2^-(s+1) in one instruction: truncation or rounding
--   1-2^-s            1, -2^-s: the small addend truncated toward zero, or the sum rounded
--   31*2^-s+1         31 copies of 2^-s then 1 in one instruction: per-addend or wide sum
-- One line per row (g:eval's value, the device's, the difference, and what the rule of
-- spec/lua/fp8_wgmma_rule.lua predicts), then a verdict: the bits kept below the largest
-- addend's leading bit as the rows show them. Runs on `cuda` (KILN_DEVICE=host: the host,
-- where every row is exact).
--   build/kiln bench/fp8_accum_probe.lua          (KILN_DEVICE=host build/kiln ...)
package.path = "spec/lua/?.lua;" .. package.path
local RULE = require "fp8_wgmma_rule"
local dev = kiln.device(os.getenv("KILN_DEVICE") or "cuda")
print(("device: %s (%s)"):format(dev.name, dev.arch))
local K, Mm, N, S = 64, 128, 64, 17
local BS = 2 ^ 8 -- A values are scaled up by BS, B is 1 / BS

local function rows()
  local r = {}
  local function row(fam, s, desc) local a = {}; for k = 1, K do a[k] = 0 end; r[#r + 1] = { fam = fam, s = s, desc = desc, a = a }; return a end
  for s = 1, S do local a = row("one", s, "1+2^-" .. s); a[1], a[2] = 1, 2 ^ -s end
  for s = 1, S do local a = row("acc", s, "[1]+k32[2^-" .. s .. "]"); a[1], a[33] = 1, 2 ^ -s end
  for s = 1, S - 1 do local a = row("round", s, "1+1.5*2^-" .. s); a[1], a[2], a[3] = 1, 2 ^ -s, 2 ^ -(s + 1) end
  for s = 1, S do local a = row("minus", s, "1-2^-" .. s); a[1], a[2] = 1, -(2 ^ -s) end
  for s = 1, S do local a = row("wide", s, "31*2^-" .. s .. "+1"); for k = 1, 31 do a[k] = 2 ^ -s end; a[32] = 1 end
  assert(#r <= Mm)
  return r
end

local R = rows()
for _, dt in ipairs { "f8e5m2", "f8e4m3fn" } do
  local A = {}
  for i = 1, Mm do
    A[i] = {}
    for k = 1, K do A[i][k] = R[i] and R[i].a[k] * BS or (k == 1 and BS or 0) end
  end
  local B = {}
  for k = 1, K do B[k] = {}; for j = 1, N do B[k][j] = 1 / BS end end
  local g = kiln.graph("fp8_accum_probe")
  g:output(g:quant_dot(g:param("a", { Mm, K }, dt), g:param("b", { K, N }, dt)))
  local ins = { a = kiln.tensor(A, dt), b = kiln.tensor(B, dt) }
  local want = g:eval(ins):flat()
  for _, mode in ipairs { "fp8", "auto" } do
    local pl = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=" .. mode .. "}", 1)
    local p = kiln.compile(g, { target = dev.arch, pipeline = pl, cache = false })
    local wg = false
    for _, k in ipairs(p:kernels()) do
      if k.kind == "gemm" and dev.kind == "cuda" then wg = (p:disasm(k.name, dev.arch) or ""):find("wgmma[^\n]*k32%.f32%.e[45]m[23]") ~= nil end
    end
    local got = p:run(ins, { device = dev }):flat()
    print(("== %s gemm-operands=%s (fp8 wgmma in the PTX: %s)"):format(dt, mode, tostring(wg)))
    local first = {} -- per family: the smallest s whose row is not exact
    local agree = 0
    for i, r in ipairs(R) do
      local w, x = want[(i - 1) * N + 1], got[(i - 1) * N + 1]
      local prod = {}
      for k = 1, K do prod[k] = r.a[k] end
      local rule = RULE.emulate(prod, K // 32)
      if x == rule then agree = agree + 1 end
      if x ~= w and not first[r.fam] then first[r.fam] = r.s end
      print(("%-20s want %.10g got %.10g diff %-10.3g rule %.10g%s"):format(r.desc, w, x, x - w, rule, x == rule and "" or "  (rule differs)"))
    end
    local function at(f) return first[f] and tostring(first[f]) or "none" end
    print(("verdict %s %s: first inexact s: 1+2^-s %s, [1]+k32[2^-s] %s, 1+1.5*2^-s %s, 1-2^-s %s, 31*2^-s+1 %s => %s; "
           .. "the rule of spec/lua/fp8_wgmma_rule.lua (%d bits kept, truncation per addend) matches %d of %d rows"):format(
      dt, mode, at("one"), at("acc"), at("round"), at("minus"), at("wide"),
      first.one and ("keeps %d bits below the largest addend's leading bit"):format(first.one - 1)
        or ("exact to 2^-%d (f32 accumulation)"):format(S), RULE.KEEP, agree, #R))
  end
end
