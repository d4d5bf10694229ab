-- int8_spec.lua — integer contractions: i8 x i8 dot / conv accumulate and
-- return i32 (as MIGraphX's quant_dot and rocMLIR), in ONE kernel, on the host and with
-- the integer matrix instructions on GPU targets (code objects / PTX, no GPU needed);
-- element-wise epilogues (i32 bias, relu, clip, convert to f32 / i8) fuse into that
-- kernel. Inputs use the full i8 range -128..127 so results leave the i8 range; every
-- comparison against g:eval is exact.
local kiln = require "kiln"

local cases = require "int8_cases"
local rand_i8, rand_int = cases.rand_i8, cases.rand_int

local function assert_exact(got, want, what)
  local ok, msg = cases.exact(got, want)
  assert(ok, what .. ": " .. tostring(msg))
end

local function max_abs(t)
  local m = 0
  for _, v in ipairs(t:flat()) do m = math.max(m, math.abs(v)) end
  return m
end

-- Compiles g for the host, runs it and checks one kernel and exact agreement with g:eval.
local function check_host(g, inputs, out_dtype, what)
  local want = g:eval(inputs)
  assert.are.equal(out_dtype, want.dtype, what .. ": g:eval dtype")
  local p = kiln.compile(g, { target = "host", cache = false })
  assert.are.equal(1, #p:kernels(), what .. ": kernels")
  assert_exact(p:run(inputs), want, what)
  return want
end

describe("integer contractions", function()
  it("i8 x i8 dot has an i32 result; the reference is exact (against a direct sum)", function()
    local g = kiln.graph("i8_dot")
    local a, b = g:param("a", { 5, 70 }, "i8"), g:param("b", { 70, 6 }, "i8")
    local y = g:dot(a, b)
    assert.are.equal("i32", y.dtype)
    g:output(y)
    local ta, tb = rand_i8({ 5, 70 }), rand_i8({ 70, 6 })
    local r = g:eval{ a = ta, b = tb }
    assert.are.equal("i32", r.dtype)
    for i = 0, 4 do
      for j = 0, 5 do
        local s = 0
        for k = 0, 69 do s = s + ta:get{ i, k } * tb:get{ k, j } end
        assert.are.equal(s, r:get{ i, j })
      end
    end
    assert.is_true(max_abs(r) > 127, "results leave the i8 range")
  end)

  it("i8 conv and batched dot infer i32 (i32 stays i32)", function()
    local g = kiln.graph("i8_types")
    local x, w = g:param("x", { 1, 4, 5, 5 }, "i8"), g:param("w", { 3, 4, 3, 3 }, "i8")
    assert.are.equal("i32", g:conv(x, w).dtype)
    local a, b = g:param("a", { 2, 3, 4 }, "i8"), g:param("b", { 4, 5 }, "i8")
    assert.are.equal("i32", g:dot(a, b).dtype)
    local c, d = g:param("c", { 3, 4 }, "i32"), g:param("d", { 4, 5 }, "i32")
    assert.are.equal("i32", g:dot(c, d).dtype)
  end)

  it("host: i8 dot (odd sizes, batched, transposed) in one kernel, exact", function()
    local g = kiln.graph("i8_dot_host")
    local a, b = g:param("a", { 37, 70 }, "i8"), g:param("b", { 70, 45 }, "i8")
    g:output(g:dot(a, b))
    local r = check_host(g, { a = rand_i8({ 37, 70 }), b = rand_i8({ 70, 45 }) }, "i32", "dot")
    assert.is_true(max_abs(r) > 127)
    local g2 = kiln.graph("i8_bdot_host")
    local a2, b2 = g2:param("a", { 3, 19, 33 }, "i8"), g2:param("b", { 41, 19 }, "i8")
    g2:output(g2:dot(a2, b2, { transpose_a = true, transpose_b = true }))
    check_host(g2, { a = rand_i8({ 3, 19, 33 }), b = rand_i8({ 41, 19 }) }, "i32", "batched transposed dot")
  end)

  it("host: i1 and i32 dots return i32 (vectorized i1 reads are bytes), exact", function()
    for _, dt in ipairs{ "i1", "i32" } do
      local g = kiln.graph(dt .. "_dot_host")
      local a, b = g:param("a", { 8, 9 }, dt), g:param("b", { 9, 8 }, dt)
      g:output(g:dot(a, b))
      local ta = dt == "i1" and kiln.rand({ 8, 9 }, "i1") or rand_int({ 8, 9 }, "i32", -3000, 3000)
      local tb = dt == "i1" and kiln.rand({ 9, 8 }, "i1") or rand_int({ 9, 8 }, "i32", -3000, 3000)
      check_host(g, { a = ta, b = tb }, "i32", dt .. " dot")
    end
  end)

  it("host: i8 conv (NHWC, stride, padding) in one kernel, exact", function()
    local g = kiln.graph("i8_conv_host")
    local x = g:param("x", { 2, 16, 9, 7 }, "i8", { layout = "NHWC" })
    local w = g:param("w", { 24, 16, 3, 3 }, "i8", { layout = "KYXC" })
    g:output(g:conv(x, w, { stride = { 2, 1 }, padding = { 1, 1, 0, 2 } }))
    local r = check_host(g, { x = rand_i8({ 2, 16, 9, 7 }, { layout = "NHWC" }), w = rand_i8({ 24, 16, 3, 3 }, { layout = "KYXC" }) },
                         "i32", "conv")
    assert.is_true(max_abs(r) > 127)
  end)

  it("host: epilogues fuse into the one kernel (i32 bias + relu, convert to f32, clip + convert to i8)", function()
    local g = kiln.graph("i8_dot_bias_relu")
    local a, b = g:param("a", { 33, 64 }, "i8"), g:param("b", { 64, 40 }, "i8")
    local bias = g:param("bias", { 40 }, "i32")
    g:output((g:dot(a, b) + bias):relu())
    local ins = { a = rand_i8({ 33, 64 }), b = rand_i8({ 64, 40 }), bias = rand_int({ 40 }, "i32", -5000, 5000) }
    check_host(g, ins, "i32", "dot + bias + relu")

    local g2 = kiln.graph("i8_dot_f32")
    local a2, b2 = g2:param("a", { 33, 64 }, "i8"), g2:param("b", { 64, 40 }, "i8")
    g2:output(g2:dot(a2, b2):convert("f32"))
    check_host(g2, { a = ins.a, b = ins.b }, "f32", "dot -> f32")

    local g3 = kiln.graph("i8_conv_requant")
    local x = g3:param("x", { 1, 8, 6, 6 }, "i8", { layout = "NHWC" })
    local w = g3:param("w", { 12, 8, 1, 1 }, "i8")
    local cb = g3:param("cb", { 12, 1, 1 }, "i32")
    g3:output((g3:conv(x, w) + cb):clip(-128, 127):convert("i8"))
    check_host(g3, { x = rand_i8({ 1, 8, 6, 6 }, { layout = "NHWC" }), w = rand_i8({ 12, 8, 1, 1 }),
                     cb = rand_int({ 12, 1, 1 }, "i32", -100, 100) }, "i8", "conv + bias + clip -> i8")
  end)

  -- GPU code generation without a GPU: one kernel, i32 output buffer, the integer matrix
  -- instruction in the disassembly / PTX.
  local GPU = {
    gfx908 = "v_mfma_i32_32x32x8i8", gfx90a = "v_mfma_i32_32x32x8i8", gfx942 = "v_mfma_i32_32x32x16_i8",
    gfx1100 = "v_wmma_i32_16x16x16_iu8", sm_80 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    sm_90 = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
  }
  local targets = { "gfx908", "gfx90a", "gfx942", "gfx1100", "sm_80", "sm_90" }

  local function check_gpu(g, out_elem, what)
    local p = kiln.compile(g, { targets = targets, cache = false })
    for _, t in ipairs(targets) do
      local ks = p:kernels(t)
      assert.are.equal(1, #ks, what .. " on " .. t .. ": kernels")
      local k = ks[1]
      local out = k.args[#k.args]
      assert.is_false(out.input)
      assert.truthy(out.type:find("x" .. out_elem .. "[,>]"), what .. " on " .. t .. ": output " .. out.type)
      assert.truthy(p:disasm(k.name, t):find(GPU[t], 1, true), what .. " on " .. t .. ": no " .. GPU[t])
    end
  end

  it("GPU targets: i8 dot -> i32 with the integer matrix instructions, one kernel", function()
    local g = kiln.graph("i8_dot_gpu")
    local a, b = g:param("a", { 128, 128 }, "i8"), g:param("b", { 128, 128 }, "i8")
    g:output(g:dot(a, b))
    check_gpu(g, "i32", "dot")
  end)

  it("GPU targets: i8 conv + i32 bias + relu -> f32, one kernel with the integer matrix instructions", function()
    local g = kiln.graph("i8_conv_gpu")
    local x = g:param("x", { 2, 64, 8, 8 }, "i8", { layout = "NHWC" })
    local w = g:param("w", { 64, 64, 1, 1 }, "i8", { layout = "KYXC" })
    local bias = g:param("bias", { 64, 1, 1 }, "i32")
    g:output((g:conv(x, w) + bias):relu():convert("f32"))
    check_gpu(g, "f32", "conv + bias + relu -> f32")
  end)
end)
