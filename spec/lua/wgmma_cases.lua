-- wgmma_cases.lua — GEMMs and convs on the Hopper wgmma path (sm_90a, its default: passes/rock_wgmma.h)
-- for the device suites (scripts/gpu_wgmma.lua alone, scripts/gpu_suite.lua with the rest):
-- f16 / bf16, every operand transposition, tile multiples and odd sizes, K from 16 to 4096,
-- batch, fused epilogues (bias + relu, sigmoid + cast, residual), the seed conv and a padded
-- 3x3 conv, each compiled for sm_90a with a v3 perf config (or the heuristic through
-- rock-gemm-to-gridwise{wgmma=true}), its PTX checked for wgmma.mma_async, run on the device
-- and compared with g:eval (fused_gen.check: the input dtype's tolerances).
-- fp8 (quant_dot / quant_conv of f8e4m3fn / f8e5m2 -> f32) on the opt-in fp8 wgmma
-- (fp8-compute{gemm-operands=fp8}: wgmma m64nNk32 e4m3 / e5m2; the default takes the exact
-- f16 path): the PTX must have the fp8 wgmma, and the outputs are checked against the
-- measured accumulation rule of the instruction (spec/lua/fp8_wgmma_rule.lua: each k32
-- instruction truncates its addends below 2^(emax - 13)), not the f32 summation bound:
--   "exact" cases: random nonzero inputs from M.exact_set(K) (signs and small multiples of
--     powers of two, f32 epilogue operands from the same set), on which the rule drops
--     nothing: every output element must equal g:eval exactly (layouts, descriptors, K
--     loop, epilogues, with no tolerance);
--   the random-normal cases: every output finite, and sampled elements (first, last and
--     254 more) within the rule's bound (fp8_wgmma_rule.bound over the element's products
--     in the GEMM's K order, K padded to kPerBlock) plus one f32 rounding of the epilogue;
--     the message says on how many sampled elements (cases without epilogue) the output
--     equals the rule's emulation bit for bit.
-- M.check_fp8 (the f32 summation bound) is for the f32-accumulating paths (the host runs
-- the fp8 GEMM IR in spec/lua/fp8_spec.lua).
-- A case makes its inputs (c.inputs) on first use.
--   local W = require "wgmma_cases"; for _, c in ipairs(W.cases()) do W.run(c, dev) end
local kiln = require "kiln"
local gen = require "fused_gen"
local G = require "gemm_graphs"
local RULE = require "fp8_wgmma_rule"
local M = {}

M.pipeline = kiln.default_pipeline():gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{wgmma=true}", 1)
-- the opt-in fp8 wgmma (with a perf config / with the heuristic)
M.fp8_pipeline = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=fp8}", 1)
M.fp8_wgmma_pipeline = M.pipeline:gsub("fp8%-compute", "fp8-compute{gemm-operands=fp8}", 1)
-- M.extra (nil: none): options added to rock-gridwise-to-blockwise in every compile of these
-- cases (scripts/gpu_suite.lua sets "persistent=1" under KILN_SUITE_PERSISTENT=1: the whole
-- section with persistent tiles forced on)
M.extra = nil
local function with_extra(pl) return M.extra and G.gtb_extra(pl, M.extra) or pl end -- (gemm_graphs.gtb_extra)
-- pipeline with rock-gemm-to-gridwise's fp8-promote set to P (K elements per promotion
-- interval of the fp8 wgmma, 0: one level)
function M.with_promote(pl, P)
  local r, n = pl:gsub("rock%-gemm%-to%-gridwise{", "rock-gemm-to-gridwise{fp8-promote=" .. P .. ",", 1)
  if n == 0 then r = pl:gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=" .. P .. "}", 1) end
  return r
end

-- a small deterministic generator (the exact cases' inputs)
local function lcg(seed)
  local s = seed
  return function(n) s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff; return (s >> 33) % n + 1 end
end
-- a tensor of shape (layout) whose values are random signs times random members of set
local function exact_tensor(shape, dt, set, rnd, layout)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = {}
  for i = 1, n do t[i] = set[rnd(#set)] * (rnd(2) == 1 and -1 or 1) end
  local x = kiln.tensor(t, dt, { shape = shape })
  return layout and x:as_layout(layout) or x
end

local function R(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end

-- the case with its inputs made on first use of case.inputs (make()): the specs that only
-- compile the cases (nvidia_gemm_spec) or run some of them never make the others' tensors
local function lazy(case, make)
  return setmetatable(case, { __index = function(t, k)
    if k ~= "inputs" then return nil end
    local v = make()
    rawset(t, "inputs", v)
    return v
  end })
end

local function dot(name, Mm, N, K, dt, at, bt, epi, pc, batch)
  local g = kiln.graph("wg_dot")
  local pre = batch and { batch } or {}
  local function sh(a, b) local s = { table.unpack(pre) }; s[#s + 1] = a; s[#s + 1] = b; return s end
  local perm = batch and { 0, 2, 1 } or { 1, 0 }
  -- epi "cvt_a": A an f32 input converted to dt, "scale_a": A times a [1, K] row (input
  -- fusion prologues; not with at / batch)
  local adt = epi == "cvt_a" and "f32" or dt
  local a = at and g:param("a", sh(K, Mm), adt):transpose(perm) or g:param("a", sh(Mm, K), adt)
  local b = bt and g:param("b", sh(N, K), dt):transpose(perm) or g:param("b", sh(K, N), dt)
  local function inputs()
    local x = { a = R(at and sh(K, Mm) or sh(Mm, K), adt), b = R(bt and sh(N, K) or sh(K, N), dt) }
    if epi == "scale_a" then x.s = R({ 1, K }, dt) end
    if epi == "bias_relu" then x.bias = R({ N }, dt) end
    if epi == "residual" then x.r = R(sh(Mm, N), dt) end
    return x
  end
  if epi == "cvt_a" then
    a = a:convert(dt)
  elseif epi == "scale_a" then
    a = a * g:param("s", { 1, K }, dt)
  end
  local c = g:dot(a, b)
  if epi == "bias_relu" then
    c = (c + g:param("bias", { N }, dt)):relu()
  elseif epi == "sigmoid_f32" then
    c = c:sigmoid():convert("f32")
  elseif epi == "residual" then
    c = (c + g:param("r", sh(Mm, N), dt)):relu()
  end
  g:output(c)
  return lazy({ name = ("%s %s%dx%dx%d %s%s%s%s"):format(name, batch and (batch .. "x") or "", Mm, N, K, dt,
                                                    at and " A^T" or "", bt and " B^T" or "", epi and (" + " .. epi) or ""),
           g = g, dtype = dt, perf = pc }, inputs)
end

local function conv(Nb, C, H, W, Kc, S, P, pc)
  local g = kiln.graph("wg_conv")
  local x = g:param("x", { Nb, C, H, W }, "f16", { layout = "NHWC" })
  local w = g:param("w", { Kc, C, S, S }, "f16", { layout = "KYXC" })
  local r = g:param("r", { Nb, Kc, H, W }, "f16", { layout = "NHWC" })
  g:output((g:conv(x, w, { padding = { P, P, P, P } }) + r):relu())
  return lazy({ name = ("conv NHWC %dx%dx%dx%d -> %d %dx%d + add + relu f16"):format(Nb, C, H, W, Kc, S, S), g = g,
                 dtype = "f16", perf = pc },
               function()
                 return { x = R({ Nb, C, H, W }, "f16", "NHWC"), w = R({ Kc, C, S, S }, "f16", "KYXC"),
                          r = R({ Nb, Kc, H, W }, "f16", "NHWC") }
               end)
end

-- fp8 x fp8 -> f32 (quant_dot): the same views as dot; `absdot` is the graph of
-- |A| @ |B| (f32, evaluated in f64) that scales the f32 summation bound; `terms(o)` the
-- products of output element o (0-based, row-major) in the GEMM's K order. exact: inputs
-- from fp8_wgmma_rule.exact_set(K) (seeded by `seed`), else kiln.rand normal.
local function qdot(name, Mm, N, K, dt, at, bt, epi, pc, batch, exact, seed, promote)
  local function build(abs)
    local g = kiln.graph(abs and "wg_qdot_abs" or "wg_qdot")
    local pre = batch and { batch } or {}
    local function sh(a, b) local s = { table.unpack(pre) }; s[#s + 1] = a; s[#s + 1] = b; return s end
    local perm = batch and { 0, 2, 1 } or { 1, 0 }
    local a = at and g:param("a", sh(K, Mm), dt):transpose(perm) or g:param("a", sh(Mm, K), dt)
    local b = bt and g:param("b", sh(N, K), dt):transpose(perm) or g:param("b", sh(K, N), dt)
    if abs then
      g:output(g:dot(a:convert("f32"):abs(), b:convert("f32"):abs()))
      return g
    end
    local c = g:quant_dot(a, b)
    if epi == "bias_relu" then
      c = (c + g:param("bias", { N }, "f32")):relu()
    elseif epi == "residual" then
      c = c + g:param("r", sh(Mm, N), "f32")
    end
    g:output(c)
    return g
  end
  local function inputs()
    local pre = batch and { batch } or {}
    local function sh(a, b) local s = { table.unpack(pre) }; s[#s + 1] = a; s[#s + 1] = b; return s end
    local Rx = R
    if exact then
      local set, rnd = RULE.exact_set(K), lcg(seed or 1)
      Rx = function(shape, t) return exact_tensor(shape, t, set, rnd) end
    end
    local x = { a = Rx(at and sh(K, Mm) or sh(Mm, K), dt), b = Rx(bt and sh(N, K) or sh(K, N), dt) }
    if epi == "bias_relu" then x.bias = Rx({ N }, "f32") end
    if epi == "residual" then x.r = Rx(sh(Mm, N), "f32") end
    return x
  end
  local case
  local Af, Bf
  local function terms(o)
    Af, Bf = Af or case.inputs.a:flat(), Bf or case.inputs.b:flat()
    local j, i, bb = o % N, o // N % Mm, o // (N * Mm)
    local p, ex = {}, {}
    for k = 0, K - 1 do
      local x = at and Af[bb * K * Mm + k * Mm + i + 1] or Af[bb * Mm * K + i * K + k + 1]
      local y = bt and Bf[bb * N * K + j * K + k + 1] or Bf[bb * K * N + k * N + j + 1]
      p[k + 1] = x * y
      ex[k + 1] = RULE.align_exponent(x, y, dt)
    end
    return p, ex
  end
  case = lazy({ name = ("%s%s %s%dx%dx%d %s%s%s%s%s"):format(name, exact and " exact" or "", batch and (batch .. "x") or "",
                                                            Mm, N, K, dt, at and " A^T" or "", bt and " B^T" or "",
                                                            epi and (" + " .. epi) or "",
                                                            promote and (" fp8-promote=" .. promote) or ""),
                 g = build(false), dtype = dt, perf = pc, promote = promote,
                 fp8 = { absdot = build(true), K = K, exact = exact, epi = epi, terms = terms } }, inputs)
  return case
end
M.qdot = qdot -- (bench/fp8_promote_probe.lua builds its variants with it)

local function qconv(Nb, C, H, W, Kc, S, P, dt, pc, exact, seed)
  local function build(abs)
    local g = kiln.graph("wg_qconv")
    local x = g:param("x", { Nb, C, H, W }, dt, { layout = "NHWC" })
    local w = g:param("w", { Kc, C, S, S }, dt, { layout = "KYXC" })
    if abs then
      g:output(g:conv(x:convert("f32"):abs(), w:convert("f32"):abs(), { padding = { P, P, P, P } }))
    else
      g:output(g:quant_conv(x, w, { padding = { P, P, P, P } }))
    end
    return g
  end
  local K = C * S * S
  local Rx = R
  if exact then
    local set, rnd = RULE.exact_set(K), lcg(seed or 1)
    Rx = function(shape, t, layout) return exact_tensor(shape, t, set, rnd, layout) end
  end
  local function inputs() return { x = Rx({ Nb, C, H, W }, dt, "NHWC"), w = Rx({ Kc, C, S, S }, dt, "KYXC") } end
  local case
  -- the GEMM's K order of an NHWC input and a KYXC filter: (y, x, c), c fastest
  -- (passes/rock_conv_to_gemm.c); stride 1, output [Nb, Kc, Ho, Wo]
  local Ho, Wo = H + 2 * P - S + 1, W + 2 * P - S + 1
  local Xf, Wf
  local function terms(o)
    Xf, Wf = Xf or case.inputs.x:flat(), Wf or case.inputs.w:flat()
    local ow, oh, kc, n = o % Wo, o // Wo % Ho, o // (Wo * Ho) % Kc, o // (Wo * Ho * Kc)
    local p, ex = {}, {}
    for y = 0, S - 1 do
      for xx = 0, S - 1 do
        for c = 0, C - 1 do
          local ih, iw = oh + y - P, ow + xx - P
          local v, e = 0.0, nil
          if ih >= 0 and ih < H and iw >= 0 and iw < W then
            local a, b = Xf[((n * C + c) * H + ih) * W + iw + 1], Wf[((kc * C + c) * S + y) * S + xx + 1]
            v, e = a * b, RULE.align_exponent(a, b, dt)
          end
          p[#p + 1] = v
          ex[#p] = e
        end
      end
    end
    return p, ex
  end
  case = lazy({ name = ("quant_conv%s NHWC %dx%dx%dx%d -> %d %dx%d %s"):format(exact and " exact" or "", Nb, C, H, W, Kc, S,
                                                                                S, dt),
                 g = build(false), dtype = dt, perf = pc,
                 fp8 = { absdot = build(true), K = K, exact = exact, terms = terms } }, inputs)
  return case
end

-- |A| @ |B| of an fp8 case, evaluated in f64 (its operands only).
function M.absdot(c)
  local ins = {}
  for _, k in ipairs { "a", "b", "x", "w" } do ins[k] = c.inputs[k] end
  return c.fp8.absdot:eval(ins)
end

-- fp8 products are exact in f32 and the sum of K of them, added in f32 in any order,
-- is within (K - 1) u sum |a_k b_k| of the exact sum (u = 2^-24, the standard bound of
-- recursive summation), plus one rounding (u |want|) for a fused f32 epilogue add: the
-- bound per output element, from the |A| @ |B| graph. true, or false and the worst element.
function M.check_fp8(got, want, absdot, K)
  local u = 2 ^ -24
  local gf, wf, af = got:flat(), want:flat(), absdot:flat()
  if #gf ~= #wf then return false, ("%d outputs, want %d"):format(#gf, #wf) end
  local worst, wi = 0, 0
  for i = 1, #wf do
    local tol = (K - 1) * u * af[i] + u * math.abs(wf[i]) + 1e-30
    local r = math.abs(gf[i] - wf[i]) / tol
    if not (r <= worst) then worst, wi = r, i end
  end
  if worst > 1 then
    return false, ("element %d: got %.9g, want %.9g (|A||B| %.6g, K %d): %.3g x the f32 summation bound"):format(
      wi, gf[wi], wf[wi], af[wi], K, worst)
  end
  return true, ("within %.3g x the f32 summation bound"):format(worst)
end

-- The fp8 wgmma check (the header; fp8_wgmma_rule.lua). got / want: the output tensors,
-- pc the GEMM kernel's perf config (its kPerBlock: the K padding), promote its fp8_promote
-- (K elements per promotion interval, 0 or nil: one level; the rule's two-level emulation
-- and bound, the products' alignment exponents from their operands). Exact cases: every
-- element equal. Otherwise every element finite and nsample (256) sampled elements within
-- bound + 2u (|want| + bound) + K 2^-53 sum|p| (u = 2^-24: the rule's bound, one f32
-- rounding of g:eval's result and one of a fused f32 epilogue add on the device, the f64
-- reference's own summation). true, or false and the worst element.
function M.check_fp8_wgmma(c, got, want, pc, nsample, promote)
  local gf, wf = got:flat(), want:flat()
  if #gf ~= #wf then return false, ("%d outputs, want %d"):format(#gf, #wf) end
  if c.fp8.exact then
    for i = 1, #wf do
      if gf[i] ~= wf[i] then
        return false, ("exact case: element %d: got %.9g, want %.9g (every addend is a multiple of the kept "
                       .. "quantum: nothing may differ)"):format(i, gf[i], wf[i])
      end
    end
    return true, ("all %d elements exact"):format(#wf)
  end
  for i = 1, #gf do
    if gf[i] ~= gf[i] or math.abs(gf[i]) == math.huge then return false, ("element %d not finite: %s"):format(i, gf[i]) end
  end
  local K = c.fp8.K
  local P = (promote or 0) // 32
  local nsl = #RULE.slices(K, pc)
  local rnd, idx = lcg(7), { 1, #wf }
  while #idx < math.min(nsample or 256, #wf) do idx[#idx + 1] = rnd(#wf) end
  local worst, wi, wb, same, cmp = 0, 1, 0, 0, 0
  for _, i in ipairs(idx) do
    local t, ex = c.fp8.terms(i - 1)
    local opts = { promote = P, ex = ex }
    local abs = 0
    for k = 1, #t do abs = abs + math.abs(t[k]) end
    local b = RULE.gemm_bound(t, K, pc, opts)
    local tol = b + 2 ^ -23 * (math.abs(wf[i]) + b) + K * 2 ^ -53 * abs + 1e-30
    local r = math.abs(gf[i] - wf[i]) / tol
    if not (r <= worst) then worst, wi, wb = r, i, b end
    if not c.fp8.epi and nsl <= 2 then
      cmp = cmp + 1
      if gf[i] == RULE.gemm_emulate(t, K, pc, opts) then same = same + 1 end
    end
  end
  local model = (cmp > 0 and ("; equal to the rule's emulation on %d of %d"):format(same, cmp) or "")
    .. (P > 0 and (" (two-level, fp8-promote=%d)"):format(P * 32) or " (one level)")
  if worst > 1 then
    return false, ("element %d: got %.9g, want %.9g, |err| %.3g x the fp8 wgmma rule's bound %.3g (K %d, %s, %d K "
                   .. "slices)%s"):format(wi, gf[wi], wf[wi], worst, wb, K, pc, nsl, model)
  end
  return true, ("%d sampled elements within %.3g x the fp8 wgmma rule's bound%s"):format(#idx, worst, model)
end

-- The first case is the simplest (one warpgroup, one 64x64 tile per block, plain f16 GEMM):
-- run it first when bringing the path up.
function M.cases()
  local cs = { dot("simplest", 128, 128, 64, "f16", false, false, nil, "v3:64,64,16,64,64,8") }
  local configs = { "v3:128,128,64,64,128,8", "v3:64,64,32,64,64,8", "v3:128,256,32,64,256,8",
                    "v3:128,64,32,128,64,8", "v3:64,128,16,64,64,8", false }
  local shapes = { { 256, 256, 256 }, { 257, 129, 16 }, { 1000, 515, 1024 }, { 33, 17, 4096 }, { 128, 128, 4096 } }
  local epis = { false, "bias_relu", "sigmoid_f32" }
  local i = 0
  for _, s in ipairs(shapes) do
    for _, dt in ipairs { "f16", "bf16" } do
      for t = 0, 3 do
        i = i + 1
        local pc = configs[i % #configs + 1]
        cs[#cs + 1] = dot("gemm", s[1], s[2], s[3], dt, t % 2 == 1, t >= 2, epis[i % #epis + 1] or nil, pc or nil)
      end
    end
  end
  for _, dt in ipairs { "f16", "bf16" } do
    cs[#cs + 1] = dot("batch", 100, 136, 72, dt, false, false, "residual", "v3:128,128,32,64,128,8", 3)
    cs[#cs + 1] = dot("batch", 100, 136, 72, dt, true, true, "residual", nil, 3)
  end
  -- the large tiles (two warpgroups of m64n256k16, of 2 x m64n128k16; LDS above 48 KiB,
  -- 3 buffers) on odd sizes, transposes, epilogues, batch; the heuristic's 128x256x32
  local big = { "v3:128,256,64,64,256,8", "v3:256,128,64,128,128,8", "v3:128,256,32,64,256,8" }
  for j, b in ipairs(big) do
    cs[#cs + 1] = dot("big", 300, 520, 200, j == 2 and "bf16" or "f16", j == 2, j ~= 1, epis[j], b)
    cs[#cs + 1] = dot("big", 257, 259, 1000, j == 1 and "bf16" or "f16", j == 3, j == 2, epis[j % 3 + 1] or nil, b)
    cs[#cs + 1] = dot("big batch", 130, 300, 136, "f16", j == 1, j == 3, "residual", b, 2)
  end
  -- the heuristic's large tiles (c.expect: its config): kPerBlock 64 where K has 3 or more
  -- tiles of 64 (remainders of 0, 1, 2 steps after the 3-buffer loop), 32 for K = 288 and
  -- for an operand converted from f32 (staged wider than its type)
  local function expect(c, e) c.expect = e; return c end
  local X64, X32 = "v3:128,256,64,64,256,8", "v3:128,256,32,64,256,8"
  cs[#cs + 1] = expect(dot("heuristic large", 2304, 2048, 256, "f16", false, false, "bias_relu", nil), X64)
  cs[#cs + 1] = expect(dot("heuristic large", 2304, 2048, 288, "bf16", true, true, nil, nil), X32)
  cs[#cs + 1] = expect(dot("heuristic large", 2304, 2048, 320, "f16", false, true, "bias_relu", nil), X64)
  cs[#cs + 1] = expect(dot("heuristic large", 2304, 2048, 448, "bf16", false, false, "scale_a", nil), X64)
  cs[#cs + 1] = expect(dot("heuristic large", 2304, 2048, 256, "f16", false, false, "cvt_a", nil), X32)
  -- kPerBlock 64 forced on odd sizes with 1 and 2 peeled steps (K 448 -> 7 steps, 320 -> 5),
  -- and on the seed conv's K (2048: 32 steps, 2 peeled; the heuristic's pick at batch 512,
  -- checked statically in nvidia_gemm_spec)
  cs[#cs + 1] = dot("big", 130, 260, 320, "f16", true, false, "residual", X64)
  cs[#cs + 1] = dot("big", 200, 300, 448, "bf16", false, true, "bias_relu", "v3:256,128,64,128,128,8")
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, X64)
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, "v3:128,256,32,64,256,8")
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, "v3:128,128,64,64,128,8")
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, nil)
  cs[#cs + 1] = conv(8, 64, 14, 14, 128, 3, 1, "v3:128,128,32,64,128,8")
  cs[#cs + 1] = conv(2, 37, 9, 11, 40, 3, 1, "v3:64,64,16,64,64,8")
  -- fp8 (quant_dot / quant_conv -> f32 on the opt-in fp8 wgmma k32 e4m3 / e5m2; kpack 16:
  -- LDS [K/16, rows, 16]): both formats, every operand transposition, odd sizes, K from 16
  -- to 8192, batch, f32 epilogues, the large tiles and the heuristic; each as an exact case
  -- (inputs on which the rule drops nothing: checked bit for bit) and a random-normal one
  -- (checked against the rule's bound)
  local f8cfg = { "v3:128,128,128,64,128,16", "v3:64,64,64,64,64,16", "v3:128,256,64,64,256,16",
                  "v3:256,128,64,128,128,16", "v3:64,128,32,64,64,16", false }
  local f8shapes = { { 256, 256, 256 }, { 257, 129, 16 }, { 1000, 515, 1024 }, { 33, 17, 4096 }, { 128, 136, 8192 },
                     { 300, 520, 200 }, { 64, 64, 20 } }
  local f8epis = { false, "bias_relu", "residual" }
  i = 0
  for _, exact in ipairs { true, false } do
    for _, s in ipairs(f8shapes) do
      for _, dt in ipairs { "f8e4m3fn", "f8e5m2" } do
        for t = 0, 1 do
          i = i + 1
          local pc = f8cfg[i % #f8cfg + 1]
          local tr = i % 4
          -- every other case one level (fp8-promote=0, the default), the others two levels (128)
          cs[#cs + 1] = qdot("fp8 gemm", s[1], s[2], s[3], dt, tr % 2 == 1, tr >= 2, f8epis[i % #f8epis + 1] or nil,
                             pc or nil, nil, exact, i, i % 2 == 0 and 0 or 128)
        end
      end
    end
    cs[#cs + 1] = qdot("fp8 batch", 100, 136, 72, "f8e4m3fn", false, true, "residual", "v3:128,128,64,64,128,16", 3, exact, 101)
    cs[#cs + 1] = qdot("fp8 batch", 100, 136, 72, "f8e5m2", true, false, nil, nil, 3, exact, 102)
    cs[#cs + 1] = qdot("fp8 large (heuristic)", 2304, 2048, 256, "f8e4m3fn", false, false, nil, nil, nil, exact, 103)
    cs[#cs + 1] = qdot("fp8 large (heuristic)", 2304, 2048, 320, "f8e5m2", false, true, "bias_relu", nil, nil, exact, 104)
    cs[#cs + 1] = qconv(4, 256, 7, 7, 512, 1, 0, "f8e4m3fn", nil, exact, 105)
    cs[#cs + 1] = qconv(2, 37, 9, 11, 40, 3, 1, "f8e5m2", "v3:64,64,32,64,64,16", exact, 106)
  end
  -- two-level accumulation (rock-gemm-to-gridwise{fp8-promote=P}: the wgmma into a temporary,
  -- added to the f32 accumulator every P K elements): random normal e4m3fn / e5m2, K 16 to
  -- 8192 (odd K: a partial last interval), odd sizes, intervals of 1, 2, 4, 8 k32 instructions,
  -- the heuristic (its promotion tiles) and given configs; checked against the rule's
  -- two-level emulation and bound; two exact twins bit for bit
  local pshapes = { { 257, 129, 16 }, { 77, 45, 333 }, { 1000, 515, 1024 }, { 33, 17, 4096 }, { 128, 136, 8192 },
                    { 300, 520, 200 }, { 64, 64, 20 }, { 2304, 2048, 320 } }
  local promotes = { 128, 64, 256, 32 }
  local pcfg = { [128] = "v3:128,128,64,64,128,16", [64] = "v3:64,64,64,64,64,16", [256] = "v3:128,64,128,64,64,16" }
  i = 0
  for _, s in ipairs(pshapes) do
    for _, dt in ipairs { "f8e4m3fn", "f8e5m2" } do
      i = i + 1
      local P = promotes[i % #promotes + 1]
      local pc = i % 3 == 0 and pcfg[P] or nil
      cs[#cs + 1] = qdot("fp8 promoted", s[1], s[2], s[3], dt, i % 4 == 1, i % 4 >= 2, f8epis[i % #f8epis + 1] or nil,
                         pc, nil, false, 200 + i, P)
    end
  end
  cs[#cs + 1] = qdot("fp8 promoted", 300, 520, 1000, "f8e4m3fn", false, true, nil, nil, nil, true, 301, 128)
  cs[#cs + 1] = qdot("fp8 promoted", 100, 136, 72, "f8e5m2", true, false, "residual", nil, 3, true, 302, 64)
  return cs
end

-- M.compile(c): compiles c for sm_90a (its v3 config, else the wgmma heuristic: c.expect,
-- when given, is the config it must take; fp8 cases with fp8-compute{gemm-operands=fp8}),
-- checks the GEMM kernel's PTX for wgmma.mma_async (the fp8 k32 form for fp8); returns the
-- program and the GEMM kernel's perf config. M.run(c, dev): that, run on dev and compared
-- with g:eval (fp8: M.check_fp8_wgmma); returns the perf config and, for fp8, the check's
-- message; raises on a failure.
function M.compile(c)
  local opts = { target = "sm_90a", cache = false }
  if c.perf then opts.perf_config = c.perf else opts.pipeline = M.pipeline end
  if c.fp8 then opts.pipeline = c.perf and M.fp8_pipeline or M.fp8_wgmma_pipeline end
  if c.promote then opts.pipeline = M.with_promote(opts.pipeline or kiln.default_pipeline(), c.promote) end
  opts.pipeline = with_extra(opts.pipeline)
  local p = kiln.compile(c.g, opts)
  local pc, promote
  for _, k in ipairs(p:kernels()) do
    if k.kind == "gemm" then
      pc, promote = k.perf_config, k.fp8_promote
      if c.promote and c.fp8 and promote ~= c.promote then
        error(("kernel fp8_promote %s, the case asked for %d"):format(tostring(promote), c.promote), 0)
      end
      local want = c.fp8 and "wgmma%.mma_async%.sync%.aligned%.m64n%d+k32%.f32%.e[45]m[23]%.e[45]m[23]" or "wgmma%.mma_async"
      if not p:disasm(k.name, "sm_90a"):find(want) then error("no " .. want .. " in " .. k.name .. " (" .. pc .. ")", 0) end
    end
  end
  if not pc then error("no GEMM kernel", 0) end
  if c.expect and pc ~= c.expect then error(("the heuristic took %s, expected %s"):format(pc, c.expect), 0) end
  return p, pc, promote
end

function M.run(c, dev)
  local p, pc, promote = M.compile(c)
  local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
  if c.fp8 then
    local good, msg = M.check_fp8_wgmma(c, got[1], want[1], pc, nil, promote)
    if not good then error(("%s: %s"):format(pc, msg), 0) end
    return pc, msg
  end
  for i = 1, want.n do
    local good, report = gen.check(got[i], want[i], c.dtype)
    if not good then error(("%s: output %d: %s"):format(pc, i, report.summary), 0) end
  end
  return pc
end

-- Only a compute capability 9.0 device runs sm_90a code.
function M.device_ok(dev) return dev.kind == "cuda" and dev.cc == "9.0" end

return M
