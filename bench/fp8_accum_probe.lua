-- bench/fp8_accum_probe.lua — measures how a device's fp8 GEMM accumulates (on sm_90a: the
-- fp8 wgmma, wgmma.mma_async m64nNk32 .f32.e4m3 / .e5m2, opted in with
-- fp8-compute{gemm-operands=fp8}; the default, f16 operands, as the control).
-- C = A @ B with B all 2^-b and rows of A (values x 2^b, so the products are the values
-- below) built to show the kept bits:
--   1+2^-s            products 1 and 2^-s in one k32 instruction
--   [1]+k32[2^-s]     1 at k = 0, 2^-s at k = 32: the f32 accumulator plus the next instruction
--   1+1.5*2^-s        1, 2^-s, 2^-(s+1) in one instruction: truncation or rounding
--   1-2^-s            1, -2^-s: the small addend truncated toward zero, or the sum rounded
--   31*2^-s+1         31 copies of 2^-s then 1 in one instruction: per-addend or wide sum
--   [1]+k128[2^-s]    1 at k = 0, 2^-s at k = 128: the next promotion interval (fp8-promote=128:
--                     an f32 add, exact here; fp8-promote=0: as [1]+k32[2^-s])
-- Configurations (format, b): f8e5m2 2^-8 (B normal: the measured rule), f8e4m3fn 2^-8 (B
-- subnormal in e4m3fn: the H100 kept two bits fewer), f8e4m3fn 2^-6 (B normal), f8e4m3fn 2^-7
-- and f8e5m2 2^-15 (B subnormal, one bit fewer by the stored-exponent model): each run with
-- gemm-operands=fp8 and fp8-promote=0 (one level), =128 (two levels), and gemm-operands=auto
-- (f16, the control). One line per row (g:eval's value, the device's, the difference, and
-- the prediction of spec/lua/fp8_wgmma_rule.lua with the products' alignment exponents of
-- fp8_wgmma_rule.align_exponent: the stored-exponent model of subnormal operands), then a
-- verdict per run: the first inexact s per family and how many rows the rule matches. What
-- to look at: every fp8 verdict "matches N of N rows" (the model holds: predicted first
-- inexact s, fp8-promote=0: e5m2 2^-8 14/14/13/14/14, e4m3fn 2^-8 12/14/11/12/12, e4m3fn
-- 2^-6 as e5m2, e4m3fn 2^-7 and e5m2 2^-15 13/14/12/13/13; the k128 family none with
-- fp8-promote=128, 14 with 0). Runs on `cuda` (KILN_DEVICE=host: the host, where every
-- row is exact).
--   build/kiln bench/fp8_accum_probe.lua          (KILN_DEVICE=host build/kiln ...)
package.path = "spec/lua/?.lua;" .. package.path
local RULE = require "fp8_wgmma_rule"
local dev = kiln.device(os.getenv("KILN_DEVICE") or "cuda")
print(("device: %s (%s)"):format(dev.name, dev.arch))
local K, Mm, N = 256, 128, 64

local function rows(S)
  local r = {}
  local function row(fam, s, desc) local a = {}; for k = 1, K do a[k] = 0 end; r[#r + 1] = { fam = fam, s = s, desc = desc, a = a }; return a end
  for s = 1, S do local a = row("one", s, "1+2^-" .. s); a[1], a[2] = 1, 2 ^ -s end
  for s = 1, S do local a = row("acc", s, "[1]+k32[2^-" .. s .. "]"); a[1], a[33] = 1, 2 ^ -s end
  for s = 1, S - 1 do local a = row("round", s, "1+1.5*2^-" .. s); a[1], a[2], a[3] = 1, 2 ^ -s, 2 ^ -(s + 1) end
  for s = 1, S do local a = row("minus", s, "1-2^-" .. s); a[1], a[2] = 1, -(2 ^ -s) end
  for s = 1, S do local a = row("wide", s, "31*2^-" .. s .. "+1"); for k = 1, 31 do a[k] = 2 ^ -s end; a[32] = 1 end
  for s = 1, S do local a = row("k128", s, "[1]+k128[2^-" .. s .. "]"); a[1], a[129] = 1, 2 ^ -s end
  assert(#r <= Mm)
  return r
end

-- {format, b (B = 2^-b), S (the largest s whose 2^-s * 2^b the format holds)}
local CONFIGS = { { "f8e5m2", 8, 17 }, { "f8e4m3fn", 8, 17 }, { "f8e4m3fn", 6, 15 }, { "f8e4m3fn", 7, 16 },
                  { "f8e5m2", 15, 17 } }
for _, cf in ipairs(CONFIGS) do
  local dt, BS = cf[1], 2 ^ cf[2]
  local R = rows(cf[3])
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
  for _, mode in ipairs { { "fp8", 0 }, { "fp8", 128 }, { "auto", 0 } } do
    local pl = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=" .. mode[1] .. "}", 1)
      :gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=" .. mode[2] .. "}", 1)
    local p = kiln.compile(g, { target = dev.arch, pipeline = pl, cache = false })
    local wg, promote = false, 0
    for _, k in ipairs(p:kernels()) do
      if k.kind == "gemm" and dev.kind == "cuda" then wg = (p:disasm(k.name, dev.arch) or ""):find("wgmma[^\n]*k32%.f32%.e[45]m[23]") ~= nil end
      if k.kind == "gemm" then promote = k.fp8_promote or 0 end
    end
    local got = p:run(ins, { device = dev }):flat()
    print(("== %s B=2^-%d gemm-operands=%s fp8-promote=%d (fp8 wgmma in the PTX: %s; kernel fp8_promote %s)"):format(
      dt, cf[2], mode[1], mode[2], tostring(wg), tostring(promote)))
    local first = {} -- per family: the smallest s whose row is not exact
    local agree = 0
    for i, r in ipairs(R) do
      local w, x = want[(i - 1) * N + 1], got[(i - 1) * N + 1]
      local prod, ex = {}, {}
      for k = 1, K do
        prod[k] = r.a[k]
        if r.a[k] ~= 0 then ex[k] = RULE.align_exponent(r.a[k] * BS, 1 / BS, dt) end
      end
      local rule = RULE.emulate(prod, K // 32, { ex = ex, promote = promote // 32 })
      if x == rule then agree = agree + 1 end
      if x ~= w and not first[r.fam] then first[r.fam] = r.s end
      print(("%-20s want %.10g got %.10g diff %-10.3g rule %.10g%s"):format(r.desc, w, x, x - w, rule, x == rule and "" or "  (rule differs)"))
    end
    local function at(f) return first[f] and tostring(first[f]) or "none" end
    print(("verdict %s B=2^-%d %s promote %d: first inexact s: 1+2^-s %s, [1]+k32[2^-s] %s, 1+1.5*2^-s %s, 1-2^-s %s, "
           .. "31*2^-s+1 %s, [1]+k128[2^-s] %s; the rule of spec/lua/fp8_wgmma_rule.lua (%d bits kept, truncation per "
           .. "addend, stored-exponent alignment) matches %d of %d rows"):format(
      dt, cf[2], mode[1], mode[2], at("one"), at("acc"), at("round"), at("minus"), at("wide"), at("k128"), RULE.KEEP,
      agree, #R))
  end
end
