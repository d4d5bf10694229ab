-- elementwise_pairs_cases.lua — the element-wise op pairs shared by elementwise_pairs_spec.lua,
-- elementwise_pairs_gpu_spec.lua and scripts/gpu_suite.lua (kiln only: no busted, no luassert).
-- Every pair (unary∘unary, unary∘binary and binary∘unary with a constant) in f32, f16 and
-- bf16, packed PACK pairs to a kernel, on fresh random inputs plus NaN, ±0, ±inf and negatives,
-- compared with the float64 reference evaluator (g:eval) under this rule:
--  - A pair of exact ops (neg abs relu clip max min add sub mul div sqrt round floor ceil greater: one correctly rounded
--    result per op) must match the reference bit for bit (NaN for NaN, the sign of zero).
--  - Other pairs: NaN and inf must match. f32: |got - ref| <= 2^-12 |ref| + 2^-19 (an inner
--    f32 result off by an ulp is amplified by the outer op: log near 1, exp of large values).
--    f16/bf16: every op is computed in f32 and rounded once, as the reference does, so at
--    most NARROW_MISS elements of a pair may differ at all, by at most 2 ulp(ref) + the
--    smallest normal (sigmoid rounded after every step missed on a third of them).
--   M.DTYPES, M.UNARY, M.BINARY, M.PAIRS ({name, build(x), exact}), M.PACK, M.N
--   M.inputs(dtype [, shape]) -> tensor of N values (the specials, then 3 * normal)
--   M.check(dtype, name, exact, xs, got, want, first) -> nil | message (pair, x, got, want)
--   M.packed_graph(dtype, cases) -> graph, inputs (without x)
--   M.sweep(dtype, target [, device]) -> { kernels =, want_kernels =, pairs =, bad = {msg...} }
local kiln = require "kiln"
local M = {}

M.DTYPES = { "f32", "f16", "bf16" }
local PREC = { f32 = 24, f16 = 11, bf16 = 8 }          -- significand bits
local EMIN = { f32 = -126, f16 = -14, bf16 = -126 }     -- exponent of the smallest normal
M.NARROW_MISS = 3                                       -- of 64 elements, f16/bf16 inexact pairs

-- unary ops: name, builder, exact?
M.UNARY = {
  { "neg", function(x) return -x end, true },
  { "abs", function(x) return x:abs() end, true },
  { "relu", function(x) return x:relu() end, true },
  { "clip(-0.5,0.75)", function(x) return x:clip(-0.5, 0.75) end, true },
  { "clip(0,2)", function(x) return x:clip(0, 2) end, true },
  { "clip(0.25,0.5)", function(x) return x:clip(0.25, 0.5) end, true },    -- bounds of both signs:
  { "clip(-2,-0.25)", function(x) return x:clip(-2, -0.25) end, true },    -- each constant-key compare
  { "sqrt", function(x) return x:sqrt() end, true },
  { "exp", function(x) return x:exp() end, false },
  { "log", function(x) return x:log() end, false },
  { "rsqrt", function(x) return x:rsqrt() end, false },
  { "tanh", function(x) return x:tanh() end, false },
  { "sigmoid", function(x) return x:sigmoid() end, false },
  { "erf", function(x) return x:erf() end, false },
  { "recip", function(x) return x:recip() end, false },
  { "round", function(x) return x:round() end, true },
  { "floor", function(x) return x:floor() end, true, "step" },
  { "ceil", function(x) return x:ceil() end, true, "step" },
}
-- binary ops with a constant operand
M.BINARY = {
  { "+0.75", function(x) return x + 0.75 end, true },
  { "0.75-", function(x) return 0.75 - x end, true },
  { "*-1.5", function(x) return x * -1.5 end, true },
  { "/3", function(x) return x / 3 end, true },
  { "max0", function(x) return x:max(0) end, true },
  { "min0", function(x) return x:min(0) end, true },
  { "max-0.5", function(x) return x:max(-0.5) end, true },
  { "min0.5", function(x) return x:min(0.5) end, true },
  { "^2", function(x) return x ^ 2 end, false },
  { ">0.5", function(x) return x:greater(0.5) end, true },
}

-- Every pair: {name, build(x), exact}.
local function pairs_of()
  local list = {}
  local function add(a, b)
    -- a step op (floor, ceil) jumps at the integers, where an inexact inner op's results
    -- often sit (erf -> +-1, x ^ 2 of an integer): one ulp there is a whole step, so a step
    -- op is paired after exact ops only
    if a[4] == "step" and not b[3] then return end
    list[#list + 1] = { a[1] .. "(" .. b[1] .. ")", function(x) return a[2](b[2](x)) end, a[3] and b[3] }
  end
  for _, a in ipairs(M.UNARY) do for _, b in ipairs(M.UNARY) do add(a, b) end end
  for _, a in ipairs(M.UNARY) do for _, b in ipairs(M.BINARY) do add(a, b); add(b, a) end end
  return list
end
M.PAIRS = pairs_of()

local SPECIALS = { 0 / 0, 0.0, -0.0, math.huge, -math.huge, 1, -1, 0.5, -0.5, 2, -2, 3.25, -3.25, 20, -20, -100 }
M.N = 64
local N = M.N

-- Fresh random inputs (normal, scale 3: both signs, never zero) after the specials.
function M.inputs(dt, shape)
  local r = kiln.rand({ N - #SPECIALS }, "f32", { dist = "normal" }):flat()
  local v = {}
  for i, s in ipairs(SPECIALS) do v[i] = s end
  for i, s in ipairs(r) do v[#SPECIALS + i] = 3 * s end
  return kiln.tensor(v, dt, { shape = shape or { N } })
end

local function isnan(v) return v ~= v end
local function ulp(dt, v)
  local a = math.abs(v)
  local e = (a > 0 and a < math.huge) and math.floor(math.log(a, 2)) or EMIN[dt]
  if e < EMIN[dt] then e = EMIN[dt] end
  return 2.0 ^ (e - PREC[dt] + 1)
end
local function same_bits(g, w)
  if isnan(w) or isnan(g) then return isnan(w) and isnan(g) end
  return g == w and (g ~= 0 or 1 / g == 1 / w)
end
local function fmt(v) return string.format("%.9g", v) end

-- Checks one pair: gx inputs, gv results, wv reference values (flat, from index first);
-- returns nil or a message naming the first bad element.
function M.check(dt, name, exact, gx, gv, wv, first)
  local misses = 0
  for i = 1, #gx do
    local g, w = gv[first + i - 1], wv[first + i - 1]
    if not same_bits(g, w) then
      misses = misses + 1
      local tol = dt == "f32" and 2.0 ^ -12 * math.abs(w) + 2.0 ^ -19 or 2 * ulp(dt, w) + 2.0 ^ EMIN[dt]
      local bad = exact or isnan(g) ~= isnan(w) or math.abs(w) == math.huge or math.abs(g) == math.huge or
                  math.abs(g - w) > tol
      if bad or (dt ~= "f32" and misses > M.NARROW_MISS) then
        return string.format("%s %s: x = %s: got %s, reference %s%s", dt, name, fmt(gx[i]), fmt(g), fmt(w),
                             bad and "" or string.format(" (%d elements differ)", misses))
      end
    end
  end
end

-- The sweep packs PACK pairs into one kernel: output row r (of PACK rows of N) is pair
-- r, picked by where() with one-hot row masks, so a dtype's 403 pairs are 26 kernels of
-- one graph (one host JIT per kernel is what costs time).
M.PACK = 16
local PACK = M.PACK
function M.packed_graph(dt, cases)
  local g = kiln.graph("pairs_" .. dt)
  local x = g:param("x", { 1, N }, dt)
  local ins, masks = {}, {}
  for k = 1, PACK do
    masks[k] = g:param("m" .. k, { PACK, 1 }, "f32")
    local v = {}
    for r = 1, PACK do v[r] = { r == k and 1 or 0 } end
    ins["m" .. k] = kiln.tensor(v, "f32")
  end
  local outs = {}
  for first = 1, #cases, PACK do
    local n = math.min(PACK, #cases - first + 1)
    local y = cases[first + n - 1][2](x)
    for k = n - 1, 1, -1 do y = g:where(masks[k], cases[first + k - 1][2](x), y) end
    outs[#outs + 1] = y
  end
  g:output(table.unpack(outs))
  return g, ins
end

-- Every pair of dt, compiled for target (a name: "host", "sm_90", ...) and run on device
-- (default: the target's own), against g:eval on fresh inputs. Returns the kernel count (and
-- the one the packing makes), the number of pairs and the messages of the pairs that differ.
function M.sweep(dt, target, device)
  local g, ins = M.packed_graph(dt, M.PAIRS)
  ins.x = M.inputs(dt, { 1, N })
  local p = kiln.compile(g, { target = target, cache = false })
  local got
  if device then got = { p:run(ins, { device = device }) } else got = { p:run(ins) } end
  local want = { g:eval(ins) }
  local gx, bad = ins.x:flat(), {}
  for i, c in ipairs(M.PAIRS) do
    local o, r = (i - 1) // PACK + 1, (i - 1) % PACK
    bad[#bad + 1] = M.check(dt, c[1], c[3], gx, got[o]:flat(), want[o]:flat(), r * N + 1)
  end
  return { kernels = #p:kernels(), want_kernels = math.ceil(#M.PAIRS / PACK), pairs = #M.PAIRS, bad = bad }
end

return M
