-- u8_spec.lua — the unsigned 8-bit dtype u8 (MLIR's / MIGraphX's ui8): tensor stores
-- (floats truncate and saturate to 0..255, integers wrap), kiln.rand over the whole range,
-- and compiled host kernels against g:eval (and against direct Lua arithmetic) on fresh
-- random inputs over 0..255 — values above 127 are where a signed load, compare, divide or
-- convert shows: element-wise ops, converts in both directions, reductions, contractions
-- accumulated in i32, quantize with a u8 zero point. GPU targets (gfx942, sm_90) compile
-- the same graphs with unsigned instructions (no GPU needed).
local kiln = require "kiln"

math.randomseed(os.time(), math.floor(os.clock() * 1e6))

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end
-- fresh u8 values in [lo, hi] (default 1..255: no zeros), both halves of the range present
local function rand_u8(shape, lo, hi)
  lo, hi = lo or 1, hi or 255
  local n, flat = numel(shape), {}
  for i = 1, n do flat[i] = math.random(lo, hi) end
  if n >= 2 then flat[1], flat[2] = math.random(lo, 127), math.random(128, hi) end
  return kiln.tensor(flat, "u8", { shape = shape })
end
local function rand_f32(shape, lo, hi)
  local flat = {}
  for i = 1, numel(shape) do flat[i] = lo + (hi - lo) * math.random() end
  return kiln.tensor(flat, "f32", { shape = shape })
end

local function assert_same(got, want, what)
  assert.are.equal(want.dtype, got.dtype, what .. ": dtype")
  local g, w = got:flat(), want:flat()
  assert.are.equal(#w, #g, what .. ": size")
  for i = 1, #w do
    if g[i] ~= w[i] and not (g[i] ~= g[i] and w[i] ~= w[i]) then
      error(string.format("%s: element %d is %s, the reference %s", what, i - 1, tostring(g[i]), tostring(w[i])), 2)
    end
  end
end

-- compiles g for the host, runs it, and checks every output against g:eval exactly
local function check_host(g, inputs, what)
  local want = { g:eval(inputs) }
  local p = kiln.compile(g, { target = "host", cache = false })
  local got = { p:run(inputs) }
  assert.are.equal(#want, #got)
  for i = 1, #want do assert_same(got[i], want[i], what .. " output " .. i) end
  return want
end

describe("u8 tensors", function()
  it("stores: Lua integers wrap mod 256, floats truncate and saturate (NaN -> 0); ui8 is u8", function()
    local t = kiln.tensor({ 0, 127, 128, 255, 256, -1, 300.7, -3.5, 0 / 0, 200.9 }, "u8")
    assert.are.equal("u8", t.dtype)
    assert.are.same({ 0, 127, 128, 255, 0, 255, 255, 0, 0, 200 }, t:flat())
    assert.are.equal("u8", kiln.tensor({ 1 }, "ui8").dtype)
  end)

  it("kiln.rand draws u8 over 0..255 (both halves), normal draws are non-negative", function()
    local r = kiln.rand({ 4096 }, "u8", { seed = math.random(1, 1 << 30) })
    local lo, hi, min, max = 0, 0, 255, 0
    for _, v in ipairs(r:flat()) do
      if v < 128 then lo = lo + 1 else hi = hi + 1 end
      min, max = math.min(min, v), math.max(max, v)
    end
    assert.is_true(lo > 1500 and hi > 1500, lo .. " / " .. hi)
    assert.is_true(min <= 2 and max >= 253)
    for _, v in ipairs(kiln.rand({ 512 }, "u8", { dist = "normal" }):flat()) do assert.is_true(v >= 0 and v <= 255) end
  end)
end)

describe("u8 on the host against g:eval", function()
  it("division by constants (the unguarded instructions) keeps x / 0 = 0, MIN / -1 wrapping, truncation", function()
    local s = { 7, 19 }
    for _, dt in ipairs { "i32", "i64", "u8" } do
      local g = kiln.graph("div_const_" .. dt)
      local a = g:param("a", s, dt)
      g:output(g:div(a, 7), g:div(a, -3), g:div(a, -1), g:div(a, 0), g:div(a, 1), g:div(a, 4))
      local flat, n = {}, numel(s)
      local lo, hi = dt == "u8" and 0 or -1000, dt == "u8" and 255 or 1000
      for i = 1, n do flat[i] = math.random(lo, hi) end
      if dt == "i32" then flat[1] = -2147483648 end
      if dt == "i64" then flat[1] = math.mininteger end
      local ta = kiln.tensor(flat, dt, { shape = s })
      local w = check_host(g, { a = ta }, "division by constants " .. dt)
      local function tdiv(x, y) -- truncating, x / 0 = 0
        if y == 0 then return 0 end
        local q = x // y
        if q < 0 and q * y ~= x then q = q + 1 end
        return q
      end
      local fa = ta:flat()
      for i = 1, n do
        local x = fa[i]
        local m3, m1 = -3, -1
        if dt == "u8" then m3, m1 = 253, 255 end -- the constants as u8
        assert.are.equal(tdiv(x, 7), w[1]:flat()[i])
        assert.are.equal(tdiv(x, m3), w[2]:flat()[i])
        local want_m1 = tdiv(x, m1)
        if dt == "i32" and x == -2147483648 then want_m1 = x end -- wraps
        if dt == "i64" and x == math.mininteger then want_m1 = x end
        assert.are.equal(want_m1, w[3]:flat()[i])
        assert.are.equal(0, w[4]:flat()[i])
        assert.are.equal(x, w[5]:flat()[i])
        assert.are.equal(tdiv(x, 4), w[6]:flat()[i])
      end
    end
  end)

  it("element-wise ops are unsigned (div, max/min, greater, clip) and wrap (add, sub, mul, neg)", function()
    local s = { 9, 37 }
    local g = kiln.graph("u8_ew")
    local a, b = g:param("a", s, "u8"), g:param("b", s, "u8")
    local two = g:param("two", s, "u8")
    g:output(a + b, a - b, a * b, g:div(a, b), g:max(a, b), g:min(a, b), g:greater(a, b), g:greater_equal(a, b),
             -a, g:abs(a), g:relu(a), g:clip(a, 50, 200), g:where(g:greater(a, b), a, b), g:pow(b, two))
    local ta, tb = rand_u8(s), rand_u8(s)
    local twos = {}
    for i = 1, numel(s) do twos[i] = 2 end
    local w = check_host(g, { a = ta, b = tb, two = kiln.tensor(twos, "u8", { shape = s }) }, "element-wise")
    -- the reference itself: direct Lua arithmetic on the unsigned values
    local fa, fb = ta:flat(), tb:flat()
    for i = 1, #fa do
      local x, y = fa[i], fb[i]
      assert.are.equal((x + y) % 256, w[1]:flat()[i])
      assert.are.equal((x - y) % 256, w[2]:flat()[i])
      assert.are.equal((x * y) % 256, w[3]:flat()[i])
      assert.are.equal(x // y, w[4]:flat()[i])
      assert.are.equal(math.max(x, y), w[5]:flat()[i])
      assert.are.equal(math.min(x, y), w[6]:flat()[i])
      assert.are.equal(x > y and 1 or 0, w[7]:flat()[i])
      assert.are.equal(x >= y and 1 or 0, w[8]:flat()[i])
      assert.are.equal((-x) % 256, w[9]:flat()[i])
      assert.are.equal(x, w[10]:flat()[i])
      assert.are.equal(math.min(math.max(x, 50), 200), w[12]:flat()[i])
      assert.are.equal((y * y) % 256, w[14]:flat()[i])
    end
  end)

  it("converts: u8 -> f32 / f16 / bf16 / i8 / i32 / i64 / i1 and f32 / f16 / i32 / i8 -> u8", function()
    local s = { 5, 41 }
    local g = kiln.graph("u8_cvt")
    local a = g:param("a", s, "u8")
    local f = g:param("f", s, "f32")
    local h = g:param("h", s, "f16")
    local i = g:param("i", s, "i32")
    local j = g:param("j", s, "i8")
    g:output(a:convert("f32"), a:convert("f16"), a:convert("bf16"), a:convert("i8"), a:convert("i32"),
             a:convert("i64"), a:convert("i1"), f:convert("u8"), h:convert("u8"), i:convert("u8"), j:convert("u8"),
             (a:convert("f32") * 1.5):convert("u8"))
    local flat_i, flat_j = {}, {}
    for k = 1, numel(s) do flat_i[k], flat_j[k] = math.random(-100000, 100000), math.random(-128, 127) end
    local inputs = { a = rand_u8(s, 0, 255), f = rand_f32(s, -300, 400), h = kiln.tensor(rand_f32(s, -300, 400):flat(), "f16", { shape = s }),
                     i = kiln.tensor(flat_i, "i32", { shape = s }), j = kiln.tensor(flat_j, "i8", { shape = s }) }
    local w = check_host(g, inputs, "converts")
    local fa, ff = inputs.a:flat(), inputs.f:flat()
    for k = 1, #fa do
      assert.are.equal(fa[k], w[1]:flat()[k])
      assert.are.equal(fa[k] >= 128 and fa[k] - 256 or fa[k], w[4]:flat()[k])
      assert.are.equal(fa[k], w[5]:flat()[k])
      local sat = ff[k] ~= ff[k] and 0 or math.max(0, math.min(255, ff[k] >= 0 and math.floor(ff[k]) or math.ceil(ff[k])))
      assert.are.equal(sat, w[8]:flat()[k])
      assert.are.equal(flat_i[k] % 256, w[10]:flat()[k])
      assert.are.equal(flat_j[k] % 256, w[11]:flat()[k])
    end
  end)

  it("reductions: max unsigned, sum wraps in u8, sum of the i32 convert is exact", function()
    local s = { 6, 130 }
    local g = kiln.graph("u8_reduce")
    local a = g:param("a", s, "u8")
    g:output(g:reduce_max(a, { 1 }), g:reduce_sum(a, { 1 }), g:reduce_sum(a:convert("i32"), { 1 }), g:reduce_max(a, { 0 }))
    local ta = rand_u8(s)
    local w = check_host(g, { a = ta }, "reductions")
    for r = 0, 5 do
      local mx, sum = 0, 0
      for c = 0, 129 do
        local v = ta:get{ r, c }
        mx, sum = math.max(mx, v), sum + v
      end
      assert.are.equal(mx, w[1]:get{ r })
      assert.are.equal(sum % 256, w[2]:get{ r })
      assert.are.equal(sum, w[3]:get{ r })
    end
  end)

  it("dot / conv / quant_dot of u8 accumulate and return i32 (exact against a direct sum), epilogues fuse", function()
    local g = kiln.graph("u8_dot")
    local a, b = g:param("a", { 13, 70 }, "u8"), g:param("b", { 70, 9 }, "u8")
    local y = g:dot(a, b)
    assert.are.equal("i32", y.dtype)
    assert.are.equal("i32", g:quant_dot(a, b).dtype)
    g:output(y)
    local ta, tb = rand_u8({ 13, 70 }), rand_u8({ 70, 9 })
    local w = check_host(g, { a = ta, b = tb }, "dot")[1]
    for i = 0, 12 do
      for j = 0, 8 do
        local s = 0
        for k = 0, 69 do s = s + ta:get{ i, k } * tb:get{ k, j } end
        assert.are.equal(s, w:get{ i, j })
      end
    end
    local g2 = kiln.graph("u8_conv")
    local x = g2:param("x", { 2, 5, 6, 6 }, "u8", { layout = "NHWC" })
    local f = g2:param("w", { 4, 5, 3, 3 }, "u8")
    g2:output((g2:quant_conv(x, f, { padding = 1 }) - 100000):clip(-128, 127):convert("i8"))
    local p = kiln.compile(g2, { target = "host", cache = false })
    assert.are.equal(1, #p:kernels())
    local inputs = { x = rand_u8({ 2, 5, 6, 6 }):as_layout("NHWC"), w = rand_u8({ 4, 5, 3, 3 }) }
    assert_same(p:run(inputs), g2:eval(inputs), "conv + clip -> i8")
  end)

  it("quantize with a u8 zero point gives u8 (clipped to 0..255); dequantize of u8", function()
    local s = { 4, 33 }
    local g = kiln.graph("u8_quant")
    local x, sc = g:param("x", s, "f32"), g:param("s", { 1, 33 }, "f32")
    local zp = g:param("zp", { 1, 33 }, "u8")
    local q = g:quantize(x, sc, zp)
    assert.are.equal("u8", q.dtype)
    assert.are.equal("i8", g:quantize(x, sc).dtype)
    g:output(q, g:dequantize(q, sc, zp))
    local inputs = { x = rand_f32(s, -40, 40), s = rand_f32({ 1, 33 }, 0.05, 0.3), zp = rand_u8({ 1, 33 }, 0, 255) }
    local w = check_host(g, inputs, "quantize")
    local lo, hi = 0, 0
    for _, v in ipairs(w[1]:flat()) do
      if v == 0 then lo = lo + 1 elseif v == 255 then hi = hi + 1 end
    end
    assert.is_true(lo > 0 and hi > 0, "both saturation ends reached")
  end)
end)

describe("u8 in bundles", function()
  it("a saved bundle with u8 inputs and outputs loads and runs (u8 slots, exact)", function()
    local s = { 3, 50 }
    local g = kiln.graph("u8_bundle")
    local a, b = g:param("a", s, "u8"), g:param("b", s, "u8")
    g:output(g:max(a, b) - g:div(a, b), g:greater(a, b):convert("i32"))
    local p = kiln.compile(g, { target = "host", cache = false })
    local path = os.tmpname()
    p:save(path)
    local q = kiln.load(path)
    os.remove(path)
    local inputs = { a = rand_u8(s), b = rand_u8(s) }
    local want = { g:eval(inputs) }
    local got = { q:run(inputs) }
    assert_same(got[1], want[1], "bundle output 1")
    assert_same(got[2], want[2], "bundle output 2")
  end)
end)

describe("u8 on GPU targets (code generation, no GPU)", function()
  it("gfx942 and sm_90 compile element-wise / convert / reduce / dot graphs with unsigned instructions", function()
    local g = kiln.graph("u8_gpu")
    local a, b = g:param("a", { 64, 96 }, "u8"), g:param("b", { 64, 96 }, "u8")
    local f = g:param("f", { 64, 96 }, "f32")
    g:output(a:convert("f32"), f:convert("u8"), g:div(a, b), g:greater(a, b), g:reduce_max(a, { 1 }))
    local want = {
      gfx942 = { "v_cvt_f32_ubyte0", "v_cmp_gt_u16" },
      sm_90 = { "cvt.rn.f32.u16", "div.u16", "setp.hi.u32" },
    }
    for _, t in ipairs { "gfx942", "sm_90" } do
      local p = kiln.compile(g, { targets = { t }, cache = false })
      local all = {}
      for _, k in ipairs(p:kernels(t)) do all[#all + 1] = p:disasm(k.name, t) end
      local text = table.concat(all, "\n")
      for _, ins in ipairs(want[t]) do assert.truthy(text:find(ins, 1, true), t .. ": no " .. ins) end
    end
    local g2 = kiln.graph("u8_gpu_dot")
    local x, y = g2:param("a", { 128, 128 }, "u8"), g2:param("b", { 128, 128 }, "u8")
    g2:output(g2:dot(x, y))
    local p = kiln.compile(g2, { targets = { "gfx942", "sm_90" }, cache = false })
    for _, t in ipairs { "gfx942", "sm_90" } do
      local ks = p:kernels(t)
      assert.are.equal(1, #ks, t)
      assert.truthy(ks[1].args[#ks[1].args].type:find("xi32[,>]"), t .. ": " .. ks[1].args[#ks[1].args].type)
    end
  end)
end)
