-- nd_conv_quant_spec.lua — the graph ops MIGraphX graphs need (spec/lua/nd_conv_quant_cases.lua)
-- on the host: 1-D and 3-D convs with random shapes against a direct sum (g:eval) and the
-- compiled kernels against g:eval in f32 / f16 / bf16 / i8; quant_dot / quant_conv (i8 ->
-- i32, exact); quantize (ties to even, saturation) / dequantize; erf (error bound by
-- dtype); recip, round; greater / greater_equal (1 / 0 in the operands' dtype, NaN: 0)
-- with where; NaN-propagating max / min; located errors for bad operands; the i8 matrix
-- instructions in 1-D / 3-D quant_conv code objects for gfx942 and sm_90 (no GPU needed).
local kiln = require "kiln"
local helper = require "helper"
local C = require "nd_conv_quant_cases"

local function run_host(g, inputs)
  local p = kiln.compile(g, { target = "host", cache = false })
  return p, table.pack(p:run(inputs))
end

local function check_conv(sp, dt, runs)
  for _ = 1, runs do
    local c = C.rand_conv(sp, dt)
    local want = c.g:eval(c.inputs)
    local ref, shape = C.conv_ref(c.inputs.x, c.inputs.w, c.p)
    assert.are.same(shape, want.shape, c.name .. ": shape")
    local wf = want:flat()
    for i = 1, #ref do
      -- g:eval sums in double and rounds the result to the dtype once
      local tol = dt == "i8" and 0 or (dt == "f32" and 1e-5 or (dt == "f16" and 2e-2 or 0.12)) * (1 + math.abs(ref[i]))
      assert(math.abs(ref[i] - wf[i]) <= tol, string.format("%s: element %d: g:eval %s, direct sum %s", c.name,
                                                            i - 1, wf[i], ref[i]))
    end
    local _, got = run_host(c.g, c.inputs)
    local ok, summary = C.check(got[1], want, dt)
    assert(ok, c.name .. ": " .. tostring(summary))
    if dt == "i8" then assert.are.equal("i32", got[1].dtype) end
  end
end

describe("N-D conv", function()
  for _, dt in ipairs { "f32", "f16", "bf16", "i8" } do
    it("1-D conv, random shapes (stride, padding, dilation, groups, depthwise), " .. dt, function()
      check_conv(1, dt, 4)
    end)
    it("3-D conv, random shapes (stride, padding, dilation, groups, depthwise), " .. dt, function()
      check_conv(3, dt, 3)
    end)
  end

  it("1-D and 3-D convs are one implicit-GEMM kernel each, with a fused add + relu epilogue", function()
    for _, c in ipairs {
      { x = { 2, 4, 20 }, w = { 6, 4, 3 }, opts = { stride = 2, padding = { 1, 2 } }, y = { 2, 6, 11 } },
      { x = { 1, 4, 6, 7, 5 }, w = { 8, 4, 3, 3, 2 }, opts = { padding = 1, stride = { 1, 2, 1 } }, y = { 1, 8, 6, 4, 6 } },
      { x = { 2, 6, 5, 5, 5 }, w = { 6, 1, 3, 1, 3 }, opts = { groups = 6, dilation = { 2, 1, 1 }, padding = { 2, 1, 0, 0, 1, 1 } },
        y = { 2, 6, 4, 5, 5 } },
    } do
      local g = kiln.graph("conv_nd_kernels")
      local x, w = g:param("x", c.x, "f32"), g:param("w", c.w, "f32")
      local y = g:conv(x, w, c.opts)
      assert.are.same(c.y, y.shape)
      local r = g:param("r", c.y, "f32")
      g:output((y + r):relu())
      local p = kiln.compile(g, { target = "host", cache = false })
      assert.are.equal(1, #p:kernels())
      local ins = { x = C.rand(c.x, "f32"), w = C.rand(c.w, "f32"), r = C.rand(c.y, "f32") }
      local ok, s = C.check(p:run(ins), g:eval(ins), "f32")
      assert(ok, s)
    end
  end)

  it("params and tensors with permuted strides (NWC, NDHWC) feed 1-D and 3-D convs", function()
    for _, sp in ipairs { 1, 3 } do
      local xs = sp == 1 and { 2, 3, 9 } or { 1, 3, 4, 5, 6 }
      local st = sp == 1 and { 27, 1, 3 } or { 360, 1, 90, 18, 3 }  -- channels last
      local ws = sp == 1 and { 4, 3, 2 } or { 4, 3, 2, 2, 3 }
      local g = kiln.graph("strided_conv" .. sp)
      local x, w = g:param("x", xs, "f32", { strides = st }), g:param("w", ws, "f32")
      g:output(g:conv(x, w, { padding = 1 }))
      local tx = kiln.rand(xs, "f32", { strides = st, dist = "normal" })
      assert.are.same(st, tx.strides)
      local ins = { x = tx, w = C.rand(ws, "f32") }
      local ok, s = C.check(select(2, run_host(g, ins))[1], g:eval(ins), "f32")
      assert(ok, s)
    end
  end)

  it("bad N-D conv operands and attributes are located errors", function()
    local g = kiln.graph("conv_bad")
    local x, w4 = g:param("x", { 1, 4, 5, 5, 5 }, "f32"), g:param("w", { 2, 4, 3, 3 }, "f32")
    local ok, err = pcall(function() return g:conv(x, w4) end)
    assert.is_false(ok)
    helper.has(tostring(err), "needs a rank-5 filter")
    helper.has(tostring(err), "nd_conv_quant_spec.lua:")
    local w5 = g:param("w5", { 2, 4, 3, 3, 3 }, "f32")
    ok, err = pcall(function() return g:conv(x, w5, { stride = { 1, 2 } }) end)
    assert.is_false(ok)
    helper.has(tostring(err), "'stride' must be an integer or a list of 3 integers")
    local w9 = g:param("w9", { 2, 4, 9, 3, 3 }, "f32")
    ok, err = pcall(function() return g:conv(x, w9) end)
    assert.is_false(ok)
    helper.has(tostring(err), "does not fit the padded input")
  end)
end)

describe("quantized ops", function()
  it("quant_dot and quant_conv take i8 and return i32 exactly; other dtypes are errors", function()
    for _, c in ipairs(C.cases(1)) do
      if c.name:find("quant_dot", 1, true) then
        local _, got = run_host(c.g, c.inputs)
        local ok, s = C.check(got[1], c.g:eval(c.inputs), "i32")
        assert(ok, s)
      end
    end
    local g = kiln.graph("quant_bad")
    local a, b = g:param("a", { 4, 4 }, "f16"), g:param("b", { 4, 4 }, "f16")
    local ok, err = pcall(function() return g:quant_dot(a, b) end)
    assert.is_false(ok)
    helper.has(tostring(err), "quant_dot: operands must be i8")
    local x, w = g:param("x", { 1, 4, 5, 5 }, "i8"), g:param("w", { 2, 4, 3, 3 }, "i8")
    assert.are.equal("i32", g:quant_conv(x, w).dtype)
  end)

  it("quantize rounds ties to even and saturates; dequantize subtracts the zero point", function()
    local g = kiln.graph("quant_exact")
    local x, s, z = g:param("x", { 10 }, "f32"), g:param("s", { 1 }, "f32"), g:param("z", { 10 }, "i8")
    local q = g:quantize(x, s, z)
    assert.are.equal("i8", q.dtype)
    g:output(q, g:dequantize(q, s, z), g:quantize(x, s))
    -- x / 0.5 = 0.5, 1.5, 2.5, -0.5, -2.5, 1000, -1000, NaN, 3.2, -3.2
    local xs = kiln.tensor({ 0.25, 0.75, 1.25, -0.25, -1.25, 500, -500, 0 / 0, 1.6, -1.6 }, "f32")
    local zs = kiln.tensor({ 1, 1, -3, 2, 0, 5, -5, 7, -1, 1 }, "i8")
    local ins = { x = xs, s = kiln.tensor({ 0.5 }, "f32"), z = zs }
    local wq = { 1, 3, -1, 2, -2, 127, -128, 0, 2, -2 }        -- round half even + zp, saturated, NaN -> 0
    local wq0 = { 0, 2, 2, -0, -2, 127, -128, 0, 3, -3 }
    for _, r in ipairs { table.pack(g:eval(ins)), select(2, run_host(g, ins)) } do
      assert.are.same(wq, r[1]:flat())
      local dq = r[2]:flat()
      for i = 1, 10 do assert.are.equal((wq[i] - zs:flat()[i]) * 0.5, dq[i]) end
      assert.are.same(wq0, r[3]:flat())
    end
  end)

  it("quantize / dequantize with broadcast scale and zero point, f32 / f16 / bf16, against g:eval", function()
    for _, c in ipairs(C.cases(1)) do
      if c.name:find("quantize", 1, true) then
        local _, got = run_host(c.g, c.inputs)
        local want = table.pack(c.g:eval(c.inputs))
        local sat = false
        for _, v in ipairs(want[1]:flat()) do sat = sat or v == 127 or v == -128 end
        assert.is_true(sat, c.name .. ": some values saturate")
        for i = 1, want.n do
          local ok, s = C.check(got[i], want[i], c.dtypes[i])
          assert(ok, c.name .. " output " .. i .. ": " .. tostring(s))
        end
      end
    end
  end)
end)

describe("element-wise ops for MIGraphX", function()
  it("erf, recip, round, greater, greater_equal, where, max, min: compiled against g:eval, f32 / f16 / bf16", function()
    for _, c in ipairs(C.cases(1)) do
      if c.name:find("erf", 1, true) then
        local _, got = run_host(c.g, c.inputs)
        local want = table.pack(c.g:eval(c.inputs))
        for i = 1, want.n do
          local ok, s = C.check(got[i], want[i], c.dtypes[i])
          assert(ok, c.name .. " output " .. i .. ": " .. tostring(s))
          local gf, wf = got[i]:flat(), want[i]:flat()
          for j = 1, #wf do -- NaN where the reference has NaN
            assert((gf[j] ~= gf[j]) == (wf[j] ~= wf[j]), c.name .. " output " .. i .. " element " .. (j - 1))
          end
        end
      end
    end
  end)

  it("erf: known values in g:eval; compiled error bound by dtype over a wide range", function()
    local g0 = kiln.graph("erf_ref")
    local x0 = g0:param("x", { 4 }, "f32")
    g0:output(x0:erf())
    local r = g0:eval{ x = kiln.tensor({ 0.5, 1, -2, 0 }, "f32") }:flat()
    local known = { 0.52049987781304654, 0.84270079294971487, -0.99532226501895273, 0 }
    for i = 1, 4 do assert(math.abs(r[i] - known[i]) <= 1e-7 * math.abs(known[i]), "erf " .. i) end
    local bound = { f32 = 1e-6, f16 = 2.0 ^ -10, bf16 = 2.0 ^ -7 }     -- relative: ~8 f32 ulp, 1 ulp of f16 / bf16
    for _, dt in ipairs { "f32", "f16", "bf16" } do
      local g = kiln.graph("erf_" .. dt)
      local x = g:param("x", { 4096 }, dt)
      g:output(x:erf())
      local v = kiln.rand({ 4096 }, "f32", { dist = "normal" }):flat()
      for i = 1, #v do v[i] = v[i] * (i % 2 == 0 and 2.5 or 0.05) end
      local xs = kiln.tensor(v, dt)
      local want, got = g:eval{ x = xs }:flat(), select(2, run_host(g, { x = xs }))[1]:flat()
      for i = 1, #want do
        local err = math.abs(got[i] - want[i])
        assert(err <= bound[dt] * math.abs(want[i]) + 1e-30,
               string.format("%s erf(%.9g) = %.9g, reference %.9g", dt, xs:flat()[i], got[i], want[i]))
      end
    end
  end)

  it("greater / greater_equal give 1 / 0 in the operands' dtype; where takes them with broadcast operands", function()
    local g = kiln.graph("cmp_where")
    local a, b = g:param("a", { 3, 1 }, "f32"), g:param("b", { 1, 4 }, "f32")
    local gt, ge = g:greater(a, b), g:greater_equal(a, b)
    assert.are.equal("f32", gt.dtype)
    assert.are.same({ 3, 4 }, gt.shape)
    local ia, ib = g:param("ia", { 4 }, "i32"), g:param("ib", { 4 }, "i32")
    assert.are.equal("i32", g:greater(ia, ib).dtype)
    local c8 = g:param("c8", { 3, 4 }, "i8") -- MIGraphX's booleans: an i8 condition
    g:output(gt, ge, g:where(gt, a, b), g:where(ge, 2, b), g:greater(ia, ib), g:greater_equal(ia, ib),
             g:where(c8, a, b))
    local ins = { a = kiln.tensor({ { 1 }, { 0 / 0 }, { -2 } }, "f32"), b = kiln.tensor({ { 1, -3, 0 / 0, 4 } }, "f32"),
                  ia = kiln.tensor({ 1, 5, -7, 3 }, "i32"), ib = kiln.tensor({ 1, 4, -6, 9 }, "i32"),
                  c8 = kiln.tensor({ { 1, 0, 0, 1 }, { 0, 1, 0, 0 }, { 0, 0, -3, 0 } }, "i8") }
    local N = 0 / 0
    local want = { { 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 }, { 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 } }
    for _, r in ipairs { table.pack(g:eval(ins)), select(2, run_host(g, ins)) } do
      assert.are.same(want[1], r[1]:flat())
      assert.are.same(want[2], r[2]:flat())
      local w3 = r[3]:flat()
      local e3 = { 1, 1, N, 4, 1, -3, N, 4, 1, -2, N, 4 }
      for i = 1, 12 do assert((w3[i] ~= w3[i] and e3[i] ~= e3[i]) or w3[i] == e3[i], "where element " .. (i - 1)) end
      assert.are.same({ 0, 1, 0, 0 }, r[5]:flat())
      assert.are.same({ 1, 1, 0, 0 }, r[6]:flat())
      local w7, e7 = r[7]:flat(), { 1, -3, N, 1, 1, N, N, 4, 1, -3, -2, 4 }
      for i = 1, 12 do assert((w7[i] ~= w7[i] and e7[i] ~= e7[i]) or w7[i] == e7[i], "i8 where element " .. (i - 1)) end
    end
  end)

  it("max / min propagate NaN (element-wise and reduce_max) on the host and in g:eval", function()
    local g = kiln.graph("nan_maxmin")
    local a, b = g:param("a", { 6 }, "f32"), g:param("b", { 6 }, "f32")
    g:output(g:max(a, b), g:min(a, b), g:max(b, a), g:min(b, a), g:reduce_max(g:reshape(a, { 2, 3 }), { 1 }))
    local ins = { a = kiln.tensor({ 0 / 0, 1, 0 / 0, -2, 3, 0.5 }, "f32"), b = kiln.tensor({ 1, 0 / 0, 0 / 0, 5, -1, 0.25 }, "f32") }
    for _, r in ipairs { table.pack(g:eval(ins)), select(2, run_host(g, ins)) } do
      for o = 1, 4 do
        local v = r[o]:flat()
        for i = 1, 3 do assert(v[i] ~= v[i], "output " .. o .. " element " .. (i - 1) .. " is NaN") end
      end
      assert.are.same({ 5, 3, 0.5 }, { r[1]:flat()[4], r[1]:flat()[5], r[1]:flat()[6] })
      assert.are.same({ -2, -1, 0.25 }, { r[2]:flat()[4], r[2]:flat()[5], r[2]:flat()[6] })
      local m = r[5]:flat()
      assert(m[1] ~= m[1], "reduce_max of a row with NaN is NaN")
      assert.are.equal(3, m[2])
    end
  end)
end)

describe("GPU code objects for N-D i8 convs (no GPU needed)", function()
  local INSTR = { gfx942 = "v_mfma_i32_32x32x16_i8", sm_90 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" }
  for _, sp in ipairs { 1, 3 } do
    it(sp .. "-D quant_conv compiles for gfx942 and sm_90 with the i8 matrix instructions", function()
      local g = kiln.graph("qconv" .. sp .. "d_gpu")
      local xs = sp == 1 and { 4, 64, 64 } or { 2, 64, 4, 8, 8 }
      local ws = sp == 1 and { 64, 64, 3 } or { 64, 64, 2, 1, 1 }
      local x, w = g:param("x", xs, "i8"), g:param("w", ws, "i8")
      g:output(g:quant_conv(x, w, { padding = 1 }))
      local p = kiln.compile(g, { targets = { "gfx942", "sm_90" }, cache = false })
      for t, instr in pairs(INSTR) do
        local n = 0
        for _, k in ipairs(p:kernels(t)) do
          if p:disasm(k.name, t):find(instr, 1, true) then n = n + 1 end
        end
        assert.is_true(n >= 1, t .. ": no kernel with " .. instr)
      end
    end)
  end
end)
