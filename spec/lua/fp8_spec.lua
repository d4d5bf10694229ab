-- fp8_spec.lua — the fp8 dtypes (f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz: core/dtype.h)
-- through the Lua API and the whole pipeline: tensors round through the format's rules;
-- every graph op takes fp8 operands (element-wise, reductions, softmax, concat, where,
-- dot, conv, quant_dot / quant_conv -> f32) and runs on the host against g:eval on fresh
-- random inputs with the fp8 tolerances; fp8 GEMMs use the f16 matrix instructions with
-- f32 accumulation on the GPU targets (code only, no GPU needed). The generated
-- conversions themselves are checked bit for bit in spec/c/test_fp8_codegen.c.
local kiln = require "kiln"

local F8 = { "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz" }
local MAX = { f8e4m3fn = 448, f8e5m2 = 57344, f8e4m3fnuz = 240, f8e5m2fnuz = 57344 }

local seed = os.time()
local function rnd(shape, dt, opts)
  seed = seed + 1
  local o = { seed = seed }
  for k, v in pairs(opts or {}) do o[k] = v end
  return kiln.rand(shape, dt, o)
end
-- kernel counts as the same graph has in f16 (fp8 adds no kernel)
local function kernels_f16(build)
  local g = build("f16")
  return #kiln.compile(g, { target = "host", cache = false }):kernels()
end

local function check(g, inputs, what, kernels)
  local want = { g:eval(inputs) }
  local p = kiln.compile(g, { target = "host", cache = false })
  if kernels then assert.are.equal(kernels, #p:kernels(), what .. ": kernels") end
  local got = { p:run(inputs) }
  assert.are.equal(#want, #got)
  for i = 1, #want do
    assert.are.equal(want[i].dtype, got[i].dtype, what)
    local c = kiln.compare(got[i], want[i])
    assert.is_true(c.ok, what .. " output " .. i .. " (" .. want[i].dtype .. "): " .. tostring(c.message or ""))
  end
end

describe("fp8 dtypes", function()
  it("tensors store through the format: round to nearest even, saturation / inf, NaN", function()
    for _, dt in ipairs(F8) do
      local t = kiln.tensor({ 1.0, 1.0625, 1.1875, -3.5, 1e6, -1e6, 0 / 0 }, dt)
      assert.are.equal(dt, t.dtype)
      assert.are.equal(1, t.nbytes / t.numel)
      local v = t:flat()
      assert.are.equal(1.0, v[1])
      if dt:find("e4m3") then
        assert.are.equal(1.0, v[2]) -- tie between 1 and 1.125: even
        assert.are.equal(1.25, v[3]) -- tie between 1.125 and 1.25: even
      end
      assert.are.equal(-3.5, v[4])
      if dt == "f8e5m2" then
        assert.are.equal(math.huge, v[5])
        assert.are.equal(-math.huge, v[6])
      else
        assert.are.equal(MAX[dt], v[5])
        assert.are.equal(-MAX[dt], v[6])
      end
      assert.is_true(v[7] ~= v[7])
      local r = rnd({ 64 }, dt):flat()
      local nonzero = 0
      for _, x in ipairs(r) do
        assert.is_true(x >= -1 and x <= 1)
        if x ~= 0 then nonzero = nonzero + 1 end
      end
      assert.is_true(nonzero > 48, dt .. ": random values")
    end
  end)

  it("element-wise ops, where, clip and concat on fp8 compute in f32, one kernel", function()
    for _, dt in ipairs(F8) do
      local r, c = math.random(2, 9), math.random(3, 40)
      local function build(t)
        local g = kiln.graph("ew_" .. t)
        local a, b = g:param("a", { r, c }, t), g:param("b", { c }, t)
        local y = ((a * b + a) / (b:abs() + 1.5)):relu()
        local z = g:where(g:greater(a, b), a:exp(), (b - a):tanh()):clip(-0.75, 2)
        g:output(y, z, a:convert("f32") + b:convert("f16"):convert("f32"))
        return g
      end
      local g1 = kiln.graph("ew1_" .. dt)
      local a1, b1 = g1:param("a", { r, c }, dt), g1:param("b", { c }, dt)
      g1:output(((a1 * b1 + a1) / (b1:abs() + 1.5)):relu())
      check(g1, { a = rnd({ r, c }, dt), b = rnd({ c }, dt) }, "element-wise chain " .. dt, 1)
      check(build(dt), { a = rnd({ r, c }, dt), b = rnd({ c }, dt) }, "element-wise " .. dt, kernels_f16(build))
      local g2 = kiln.graph("cat_" .. dt)
      local p, q = g2:param("p", { 3, c }, dt), g2:param("q", { 2, c }, dt)
      g2:output(g2:concat({ p, q }, 0):neg())
      check(g2, { p = rnd({ 3, c }, dt), q = rnd({ 2, c }, dt) }, "concat " .. dt)
    end
  end)

  it("views of fp8 values copy codes; converts between fp8 and i1 / i8 / i32 go through f32", function()
    for _, dt in ipairs(F8) do
      local r, c = math.random(5, 40), math.random(20, 40)
      local g = kiln.graph("views_" .. dt)
      local a, m = g:param("a", { r, c }, dt), g:param("m", { r, c }, "i1")
      g:output(a:transpose({ 1, 0 }), a:slice({ 0, 3 }, { r, 20 }), m:convert(dt), (a * 9):convert("i32"),
               (a * 9):convert("i8"), g:where(m, a, a:neg()))
      check(g, { a = rnd({ r, c }, dt), m = rnd({ r, c }, "i1") }, "views / converts " .. dt)
    end
  end)

  it("reductions and softmax read fp8 and accumulate in f32", function()
    for _, dt in ipairs(F8) do
      local g = kiln.graph("red_" .. dt)
      local r, c = math.random(2, 7), math.random(100, 3000)
      local a = g:param("a", { r, c }, dt)
      g:output(a:reduce_sum({ axes = { 1 } }), a:reduce_max({ axes = { 0 } }), g:softmax(a, 1))
      check(g, { a = rnd({ r, c }, dt) }, "reductions " .. dt)
    end
  end)

  it("dot / conv of fp8 (fp8 results) and quant_dot / quant_conv (f32 results); one kernel a dot", function()
    for _, dt in ipairs(F8) do
      local m, k, n = math.random(3, 40), math.random(5, 70), math.random(2, 33)
      local g = kiln.graph("dot_" .. dt)
      local a, b = g:param("a", { 2, m, k }, dt), g:param("b", { k, n }, dt)
      local q = g:quant_dot(a, b)
      assert.are.equal("f32", q.dtype)
      g:output(q)
      check(g, { a = rnd({ 2, m, k }, dt), b = rnd({ k, n }, dt) }, "quant_dot " .. dt, 1)
      local g1 = kiln.graph("dotf8_" .. dt)
      local a1, b1 = g1:param("a", { m, k }, dt), g1:param("b", { k, n }, dt)
      local d = g1:dot(a1, b1)
      assert.are.equal(dt, d.dtype)
      g1:output(d:relu())
      check(g1, { a = rnd({ m, k }, dt), b = rnd({ k, n }, dt) }, "dot " .. dt, 1)
      local g2 = kiln.graph("conv_" .. dt)
      local x, w = g2:param("x", { 1, 6, 9, 8 }, dt, { layout = "NHWC" }), g2:param("w", { 5, 6, 3, 3 }, dt)
      g2:output(g2:quant_conv(x, w, { padding = 1 }), g2:conv(x, w, { stride = 2 }))
      check(g2, { x = rnd({ 1, 6, 9, 8 }, dt, { layout = "NHWC" }), w = rnd({ 5, 6, 3, 3 }, dt) }, "conv " .. dt)
    end
  end)

  it("quant_dot / quant_conv of two fp8 formats (e4m3 x e5m2) -> f32", function()
    for _, pair in ipairs{ { "f8e4m3fnuz", "f8e5m2fnuz" }, { "f8e5m2", "f8e4m3fn" } } do
      local m, k, n = math.random(3, 30), math.random(5, 50), math.random(2, 20)
      local g = kiln.graph("mixed")
      local a, b = g:param("a", { m, k }, pair[1]), g:param("b", { k, n }, pair[2])
      local q = g:quant_dot(a, b)
      assert.are.equal("f32", q.dtype)
      local x, w = g:param("x", { 1, 4, 6, 6 }, pair[1]), g:param("w", { 3, 4, 3, 3 }, pair[2])
      g:output(q, g:quant_conv(x, w))
      check(g, { a = rnd({ m, k }, pair[1]), b = rnd({ k, n }, pair[2]), x = rnd({ 1, 4, 6, 6 }, pair[1]),
                 w = rnd({ 3, 4, 3, 3 }, pair[2]) }, "mixed " .. pair[1] .. " x " .. pair[2])
    end
  end)

  it("GPU targets: fp8 quant_dot runs on the f16 matrix instructions with f32 accumulation", function()
    local INSTR = { gfx942 = "v_mfma_f32_32x32x8_f16", gfx1100 = "v_wmma_f32_16x16x16_f16",
      sm_90 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" }
    local targets = { "gfx942", "gfx1100", "sm_90" }
    for _, dt in ipairs{ "f8e4m3fnuz", "f8e5m2" } do
      local g = kiln.graph("gpu_" .. dt)
      local a, b = g:param("a", { 128, 256 }, dt), g:param("b", { 256, 64 }, dt)
      g:output(g:quant_dot(a, b))
      local p = kiln.compile(g, { targets = targets, cache = false })
      for _, t in ipairs(targets) do
        local ks = p:kernels(t)
        assert.are.equal(1, #ks, t)
        assert.truthy(p:disasm(ks[1].name, t):find(INSTR[t], 1, true), dt .. " on " .. t .. ": no " .. INSTR[t])
      end
    end
  end)

  -- fp8-compute{gemm-operands=fp8}: the GEMM keeps its fp8 operands (the opt-in fp8 wgmma
  -- on sm_90a) and, without fp8 matrix instructions, converts after its tiles; the host runs
  -- that IR: the device suite's small fp8 cases (spec/lua/wgmma_cases.lua: both OCP
  -- formats, transposes, odd sizes, K 16 to 8192, batch, f32 epilogues, quant_conv, exact and
  -- random inputs) within the f32 summation bound of g:eval (the exact ones bit for bit), and
  -- the fnuz formats against g:eval; the default (auto) takes f16 operands on the host and on
  -- sm_90a
  it("gemm-operands=fp8: the host runs the fp8 GEMM IR (fp8 tiles) within the f32 summation bound", function()
    local W = require "wgmma_cases"
    local pl = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=fp8}", 1)
    local n = 0
    -- (scripts/test's sanitizer pass: every third case, gemm_graphs.sample; as many in proportion below)
    local all = W.cases()
    local cases = require("gemm_graphs").sample(all, "fp8_spec: wgmma_cases", 3)
    for _, c in ipairs(cases) do
      if c.fp8 and not c.name:find("large", 1, true) and not c.name:find("1000x515", 1, true) then
        local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = pl })
        assert.truthy(p:ir("after:graph-to-rock"):find("rock%.[a-z]+\"%([^\n]*%(buffer<[^>]*xf8e[45]m[23]"), c.name)
        local got, want = p:run(c.inputs), c.g:eval(c.inputs)
        local ok, msg = W.check_fp8(got, want, W.absdot(c), c.fp8.K)
        assert.is_true(ok, c.name .. ": " .. msg)
        if c.fp8.exact then
          -- the exact inputs' sums are exact in f32 too: g:eval bit for bit
          ok, msg = W.check_fp8_wgmma(c, got, want)
          assert.is_true(ok, c.name .. ": " .. msg)
        end
        n = n + 1
      end
    end
    assert.is_true(n >= 20 * #cases // #all, "cases: " .. n)
    for _, dt in ipairs { "f8e4m3fnuz", "f8e5m2fnuz" } do
      local g = kiln.graph("fnuz")
      local a, b = g:param("a", { 37, 45 }, dt), g:param("b", { 45, 29 }, dt)
      g:output(g:quant_dot(a, b))
      local inputs = { a = rnd({ 37, 45 }, dt), b = rnd({ 45, 29 }, dt) }
      local p = kiln.compile(g, { target = "host", cache = false, pipeline = pl })
      assert.is_true(kiln.compare(p:run(inputs), g:eval(inputs)).ok, dt)
    end
    local g = kiln.graph("auto")
    g:output(g:quant_dot(g:param("a", { 8, 16 }, "f8e4m3fn"), g:param("b", { 16, 8 }, "f8e4m3fn")))
    for _, t in ipairs { "host", "sm_90a" } do
      local ir = kiln.compile(g, { target = t, cache = false }):ir("after:fp8-compute")
      assert.truthy(ir:find("graph.convert[^\n]*xf16>", 1, false), "auto on " .. t .. ": f16 operands")
      assert.falsy(ir:find('graph%.dot"[^\n]*: %(tensor<[%dx]+f8'), "auto on " .. t .. ": no fp8 GEMM operands")
    end
    local ir = kiln.compile(g, { target = "sm_90a", cache = false, pipeline = pl }):ir("after:fp8-compute")
    assert.truthy(ir:find('graph%.dot"[^\n]*: %(tensor<[%dx]+f8e4m3fn>, tensor<[%dx]+f8e4m3fn>'), "fp8 on sm_90a: fp8 operands")
    local ok, err = pcall(kiln.compile, g, { target = "host", cache = false,
      pipeline = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=f8}", 1) })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("gemm-operands must be auto, fp8 or f16, got f8", 1, true), tostring(err))
  end)

  it("GPU targets: element-wise, reductions and softmax on fp8 compile (vector loads of fp8 codes)", function()
    local targets = { "gfx942", "gfx1100", "sm_90" }
    for _, dt in ipairs{ "f8e4m3fn", "f8e5m2fnuz" } do
      local g = kiln.graph("gpu_ew_" .. dt)
      local a, b = g:param("a", { 64, 4096 }, dt), g:param("b", { 4096 }, dt)
      g:output(((a * b) + a):relu(), a:reduce_sum({ axes = { 1 } }), g:softmax(a, 1))
      local p = kiln.compile(g, { targets = targets, cache = false })
      for _, t in ipairs(targets) do assert.is_true(#p:kernels(t) >= 3, dt .. " on " .. t) end
    end
  end)

  it("quant_dot of fp8 with i8 is an error at the op", function()
    local g = kiln.graph("bad")
    local a, b = g:param("a", { 4, 4 }, "f8e4m3fn"), g:param("b", { 4, 4 }, "i8")
    local ok, err = pcall(function() return g:quant_dot(a, b) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("i8 or fp8", 1, true), tostring(err))
    assert.truthy(tostring(err):find("fp8_spec.lua", 1, true), "located: " .. tostring(err))
  end)
end)
