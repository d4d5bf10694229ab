-- f64_math_cases.lua — f64 exp / log / tanh / sigmoid / erf / pow / softmax (the polynomials of
-- passes/llvm_math.c, the same code on the host, NVPTX and AMDGPU) against g:eval (libm),
-- for f64_math_spec.lua (the host) and scripts/gpu_suite.lua (a device). Inputs are fresh
-- random each run (M.seed names the run) and span the whole f64 range: subnormals, values
-- past exp's overflow and underflow, log's whole exponent range, pow's results up to the
-- overflow threshold, plus +-0, +-inf and NaN. check() allows M.ULPS units in the last
-- place (the measured worst is ~1.2) and wants every special exactly (NaN, inf, zero's sign).
local kiln = require "kiln"
local M = {}

M.ULPS = 4
M.seed = math.random(1, 1 << 30)

local SPECIALS = { 0.0, -0.0, 1 / 0, -1 / 0, 0 / 0, 1.0, -1.0, 4.9406564584124654e-324, -4.9406564584124654e-324,
                   2.2250738585072014e-308, -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308 }

-- a random double with a uniformly random binary exponent in [lo, hi] and sign (+ only if pos)
local function wide(lo, hi, pos)
  local v = (1 + math.random()) * 2.0 ^ math.random(lo, hi)
  return (pos or math.random() < 0.5) and v or -v
end
local function uniform(a, b) return a + (b - a) * math.random() end

-- { name, arity, input generator (one value, or two for pow), build(g, x[, y]) }
local FUNCS = {
  { "exp", 1, function(i)
    if i % 3 == 0 then return uniform(-750, 712) end
    if i % 3 == 1 then return wide(-1074, 9) end
    return uniform(-1, 1) * ({ 709.78, 708.4, 745.13, 0.3466 })[i % 4 + 1]
  end, function(_, x) return x:exp() end },
  { "log", 1, function(i)
    if i % 4 == 0 then return 1 + uniform(-1e-6, 1e-6) end
    if i % 4 == 1 then return uniform(0.5, 2) end
    if i % 17 == 2 then return wide(-5, 5) end -- negatives: NaN
    return wide(-1074, 1023, true)
  end, function(_, x) return x:log() end },
  { "tanh", 1, function(i)
    if i % 2 == 0 then return uniform(-25, 25) end
    return wide(-1074, 6)
  end, function(_, x) return x:tanh() end },
  { "sigmoid", 1, function(i)
    if i % 2 == 0 then return uniform(-40, 40) end
    return wide(-1074, 10)
  end, function(_, x) return x:sigmoid() end },
  { "erf", 1, function(i)
    if i % 3 == 0 then return uniform(-6.5, 6.5) end
    if i % 3 == 1 then return uniform(-1.6, 1.6) end
    return wide(-1074, 2)
  end, function(_, x) return x:erf() end },
  { "pow", 2, function(i)
    local k = i % 5
    if k == 0 then -- |y log x| up to the overflow / underflow thresholds
      local x = wide(-1074, 1023, true)
      return x, uniform(-709, 709) / math.abs(math.log(x))
    elseif k == 1 then -- negative x, integral y
      return -uniform(0, 10), math.random(-60, 60) + 0.0
    elseif k == 2 then -- negative x, non-integral y: NaN
      return -uniform(0.1, 10), uniform(-5, 5)
    elseif k == 3 then
      return uniform(0, 4), uniform(-30, 30)
    end
    return 1 + uniform(-1e-9, 1e-9), uniform(-1e12, 1e12)
  end, function(_, x, y) return x ^ y end },
}

-- every pair of specials (pow), or the specials (unary)
local function specials(arity)
  if arity == 1 then return SPECIALS, nil end
  local sy = { 0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -0.5, 2.5, 1e20, -1e20, 1 / 0, -1 / 0, 0 / 0, 1075.0, -1075.0 }
  local xs, ys = {}, {}
  for _, a in ipairs(SPECIALS) do
    for _, b in ipairs(sy) do xs[#xs + 1], ys[#ys + 1] = a, b end
  end
  for _, a in ipairs { 2.0, -2.0, 0.5, -0.5, 10.0 } do
    for _, b in ipairs(sy) do xs[#xs + 1], ys[#ys + 1] = a, b end
  end
  return xs, ys
end

-- The cases, n random inputs each (and the specials): { name, g, inputs, kernels[, k] }
-- (k: the terms of a reduction's sums).
function M.cases(n)
  math.randomseed(M.seed)
  local out = {}
  for _, f in ipairs(FUNCS) do
    local name, arity, gen, build = f[1], f[2], f[3], f[4]
    local xs, ys = specials(arity)
    local X, Y = {}, {}
    for i, v in ipairs(xs) do X[i] = v; if ys then Y[i] = ys[i] end end
    for i = 1, n do
      local a, b = gen(i)
      X[#X + 1] = a
      if arity == 2 then Y[#Y + 1] = b end
    end
    local g = kiln.graph("f64_" .. name)
    local x = g:param("x", { #X }, "f64")
    local inputs = { x = kiln.tensor(X, "f64") }
    if arity == 2 then
      inputs.y = kiln.tensor(Y, "f64")
      g:output(build(g, x, g:param("y", { #Y }, "f64")))
    else
      g:output(build(g, x))
    end
    out[#out + 1] = { name = ("f64 %s (%d values, seed %d)"):format(name, #X, M.seed), g = g, inputs = inputs,
                      kernels = 1 }
  end
  -- fused with a reduction: the softmax of lower_loops_reduce.c, values up to |x| ~ 700
  local g = kiln.graph("f64_softmax")
  local x = g:param("x", { 7, 129 }, "f64")
  g:output((x * 2):softmax(-1), x:exp():sum({ 1 }):log())
  local t = {}
  for i = 1, 7 * 129 do t[i] = uniform(-1, 1) * (i % 2 == 0 and 350 or 3) end
  -- the conditioning of softmax's exp: its argument y = 2x - max(2x) is a rounded double,
  -- and exp(y) moves by |y| / 2 ulps per half-ulp of y. The reference rounds y once; a GPU
  -- row kept in registers computes exp(x - m_thread) * exp(m_thread - m) (two arguments,
  -- each no larger than |y|, each rounded): up to 1.5 |y| ulps apart, for |y| up to 700
  -- (seen on an H100: 427 ulps at y = -680, where the host's one-pass form gives 1.6).
  local cond = {}
  for r = 0, 6 do
    local m = -1 / 0
    for j = 1, 129 do m = math.max(m, 2 * t[r * 129 + j]) end
    for j = 1, 129 do cond[r * 129 + j] = 2 * math.abs(2 * t[r * 129 + j] - m) end
  end
  out[#out + 1] = { name = ("f64 softmax(x * 2) and log(sum(exp(x))) 7x129 (seed %d)"):format(M.seed), g = g,
                    inputs = { x = kiln.tensor(t, "f64", { shape = { 7, 129 } }) }, k = 129, kernels = 2,
                    cond = { cond } }
  return out
end

local TINY = 2.2250738585072014e-308
-- got, want: tensors (output `out` of case c). Returns true and the largest error in ulps,
-- or false and the bad elements (at most 8 listed). c.cond[out][i], where given, adds the
-- ulps the problem's own conditioning allows at element i.
function M.check(got, want, c, out)
  local o, r = got:flat(), want:flat()
  local cond = c and c.cond and c.cond[out or 1] or nil
  local x = c and c.inputs.x:flat()
  local y = c and c.inputs.y and c.inputs.y:flat()
  local bad, worst = {}, 0
  for i = 1, #r do
    local a, b = o[i], r[i]
    local ok
    if b ~= b then
      ok = a ~= a
    elseif a == b then
      ok = a ~= 0 or 1 / a == 1 / b -- the sign of a zero
    elseif a ~= a or math.abs(a) == 1 / 0 or math.abs(b) == 1 / 0 then
      ok = false
    else
      local u = math.abs(a - b) / (math.max(math.abs(b), TINY) * 2.0 ^ -52)
      -- a sum of k terms: the reference adds in another order (k ulp at most)
      ok = u <= M.ULPS + (c and c.k or 0) + (cond and cond[i] or 0)
      if u > worst then worst = u end
    end
    if not ok and #bad < 8 then
      bad[#bad + 1] = ("[%d] x=%.17g%s got %.17g want %.17g"):format(i, x and x[i] or 0 / 0,
        y and (" y=%.17g"):format(y[i]) or "", a, b)
    end
  end
  if #bad == 0 then return true, worst end
  return false, table.concat(bad, "\n  ")
end

-- Bitwise equality of two results (NaN with NaN): the device runs the host's code.
function M.same_bits(a, b)
  local o, r = a:flat(), b:flat()
  for i = 1, #r do
    local u, v = o[i], r[i]
    if not ((u ~= u and v ~= v) or (u == v and (u ~= 0 or 1 / u == 1 / v))) then
      return false, ("[%d] device %.17g, host %.17g"):format(i, u, v)
    end
  end
  return true
end

return M
