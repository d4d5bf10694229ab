-- maxmin_signed_zero_spec.lua — max/min are commutative, so their semantics must be symmetric:
-- IEEE 754-2019 maximum/minimum. NaN if either operand is NaN; otherwise -0 < +0 for max/min
-- (max(-0, +0) = +0, min(-0, +0) = -0 in either operand order); relu(-0) = +0. The host code
-- must match the float64 reference (g:eval) bit for bit (NaN for NaN, the sign of zero), and
-- the reference must match that rule written out here. CSE merges max(x, y) with max(y, x),
-- which is only correct under a symmetric rule: 1/max(x, y) - 1/max(y, x) is the witness.
local kiln = require "kiln"

local DTYPES = { "f32", "f16", "bf16" }
local VALUES = { -0.0, 0.0, -1, 1, 0 / 0, -math.huge, math.huge }
local NRAND = 15

local function isnan(v) return v ~= v end
local function same_bits(g, w)
  if isnan(w) or isnan(g) then return isnan(w) and isnan(g) end
  return g == w and (g ~= 0 or 1 / g == 1 / w)
end
local function fmt(v) return string.format("%.9g", v) end

-- The IEEE 754-2019 maximum / minimum, written out.
local function neg_zero(v) return v == 0 and 1 / v < 0 end
local function ieee_max(a, b)
  if isnan(a) or isnan(b) then return 0 / 0 end
  if a == b then return neg_zero(a) and b or a end
  return a > b and a or b
end
local function ieee_min(a, b)
  if isnan(a) or isnan(b) then return 0 / 0 end
  if a == b then return neg_zero(a) and a or b end
  return a < b and a or b
end

-- Every ordered pair of VALUES, then NRAND fresh random pairs (normal, never zero), and the
-- same random value on both sides.
local function operands(dt)
  local xs, ys = {}, {}
  for _, a in ipairs(VALUES) do for _, b in ipairs(VALUES) do xs[#xs + 1] = a; ys[#ys + 1] = b end end
  local r = kiln.rand({ 2 * NRAND }, "f32", { dist = "normal" }):flat()
  for i = 1, NRAND do xs[#xs + 1] = 3 * r[i]; ys[#ys + 1] = 3 * r[NRAND + i] end
  xs[#xs + 1] = 3 * r[1]; ys[#ys + 1] = 3 * r[1]
  return kiln.tensor(xs, dt, { shape = { #xs } }), kiln.tensor(ys, dt, { shape = { #ys } })
end

-- Compiles g for the host and returns its results and the reference's, as flat lists.
local function run_both(g, ins)
  local p = kiln.compile(g, { target = "host", cache = false })
  local got, want = { p:run(ins) }, { g:eval(ins) }
  assert.are.equal(#want, #got)
  for i = 1, #want do got[i], want[i] = got[i]:flat(), want[i]:flat() end
  return got, want
end

local function mismatches(dt, names, xs, ys, got, want, rules)
  local bad = {}
  for k, name in ipairs(names) do
    for i = 1, #xs do
      local g, w = got[k][i], want[k][i]
      local ieee = rules[k] and rules[k](xs[i], ys[i])
      if not same_bits(g, w) then
        bad[#bad + 1] = string.format("%s %s: x = %s, y = %s: host %s, reference %s", dt, name, fmt(xs[i]), fmt(ys[i]), fmt(g), fmt(w))
      elseif ieee ~= nil and not same_bits(w, ieee) then
        bad[#bad + 1] = string.format("%s %s: x = %s, y = %s: reference %s, IEEE 754-2019 %s", dt, name, fmt(xs[i]), fmt(ys[i]), fmt(w), fmt(ieee))
      end
    end
  end
  return bad
end

describe("max/min at signed zeros and NaN (IEEE 754-2019 maximum/minimum)", function()
  for _, dt in ipairs(DTYPES) do
    it(dt .. ": every ordered pair of {-0, +0, -1, 1, NaN, -inf, inf} in both operand orders", function()
      local g = kiln.graph("maxmin_" .. dt)
      local x, y = g:param("x", { #VALUES * #VALUES + NRAND + 1 }, dt), g:param("y", { #VALUES * #VALUES + NRAND + 1 }, dt)
      g:output(x:max(y), y:max(x), x:min(y), y:min(x), g:max(x, y), g:min(y, x))
      local tx, ty = operands(dt)
      local got, want = run_both(g, { x = tx, y = ty })
      local xs, ys = tx:flat(), ty:flat()
      local swap = function(f) return function(a, b) return f(b, a) end end
      local bad = mismatches(dt, { "max(x, y)", "max(y, x)", "min(x, y)", "min(y, x)", "g:max(x, y)", "g:min(y, x)" },
                             xs, ys, got, want, { ieee_max, swap(ieee_max), ieee_min, swap(ieee_min), ieee_max, swap(ieee_min) })
      assert(#bad == 0, #bad .. " results differ:\n" .. table.concat(bad, "\n"))
    end)

    it(dt .. ": max/min with a constant ±0 and relu, on zeros of both signs", function()
      local g = kiln.graph("maxmin_const_" .. dt)
      local n = #VALUES + NRAND
      local x = g:param("x", { n }, dt)
      g:output(x:max(0), x:min(0), x:max(-0.0), x:min(-0.0), x:relu())
      local v = {}
      for i, s in ipairs(VALUES) do v[i] = s end
      for i, s in ipairs(kiln.rand({ NRAND }, "f32", { dist = "normal" }):flat()) do v[#VALUES + i] = 3 * s end
      local tx = kiln.tensor(v, dt, { shape = { n } })
      local got, want = run_both(g, { x = tx })
      local xs, zs, nzs = tx:flat(), {}, {}
      for i = 1, n do zs[i], nzs[i] = 0.0, -0.0 end
      local rule = function(f, c) return function(a) return f(a, c) end end
      local bad = mismatches(dt, { "max(x, 0)", "min(x, 0)", "max(x, -0)", "min(x, -0)", "relu(x)" }, xs, zs, got, want,
                             { rule(ieee_max, 0.0), rule(ieee_min, 0.0), rule(ieee_max, -0.0), rule(ieee_min, -0.0), rule(ieee_max, 0.0) })
      assert(#bad == 0, #bad .. " results differ:\n" .. table.concat(bad, "\n"))
    end)
  end

  it("f32: CSE of max(x, y) with max(y, x) keeps the reference's result (1/max(x,y) - 1/max(y,x))", function()
    local g = kiln.graph("maxmin_cse")
    local x, y = g:param("x", { #VALUES * #VALUES + NRAND + 1 }, "f32"), g:param("y", { #VALUES * #VALUES + NRAND + 1 }, "f32")
    g:output(1 / x:max(y) - 1 / y:max(x), 1 / x:min(y) - 1 / y:min(x))
    local tx, ty = operands("f32")
    local got, want = run_both(g, { x = tx, y = ty })
    local xs, ys = tx:flat(), ty:flat()
    local diff = function(f) return function(a, b) return 1 / f(a, b) - 1 / f(b, a) end end
    local bad = mismatches("f32", { "1/max(x,y) - 1/max(y,x)", "1/min(x,y) - 1/min(y,x)" }, xs, ys, got, want,
                           { diff(ieee_max), diff(ieee_min) })
    assert(#bad == 0, #bad .. " results differ:\n" .. table.concat(bad, "\n"))
  end)

  it("reduce_max of {-0, +0} is +0 whatever the order", function()
    local g = kiln.graph("maxmin_reduce")
    local x = g:param("x", { 2, 2 }, "f32")
    g:output(x:reduce_max({ 1 }))
    local tx = kiln.tensor({ { -0.0, 0.0 }, { 0.0, -0.0 } }, "f32")
    local got, want = run_both(g, { x = tx })
    for i = 1, 2 do
      assert(same_bits(want[1][i], 0.0), "reference row " .. i .. ": " .. fmt(want[1][i]) .. " (1/v = " .. fmt(1 / want[1][i]) .. ")")
      assert(same_bits(got[1][i], 0.0), "host row " .. i .. ": " .. fmt(got[1][i]) .. " (1/v = " .. fmt(1 / got[1][i]) .. ")")
    end
  end)
end)
