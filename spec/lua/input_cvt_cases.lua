-- input_cvt_cases.lua — GEMMs whose operand arrives in another dtype and is converted in
-- the GEMM's loads (input fusion of graph.convert, and the fp8 operand converts of
-- quant_dot, passes/fp8_compute.c), at sizes that are not tile multiples, plus every fp8
-- value converted to f16 (the direct conversion of passes/lower_fp8.h). Shared by
-- spec/lua/input_cvt_spec.lua (host, and code for sm_90 / sm_80 / gfx942) and
-- scripts/gpu_suite.lua (the device).
--   M.cases() -> list of { name, kernels, kernels_on, build = function() -> g, inputs }
--     (kernels_on: arch -> the count on that target where it differs: the input-fusion cost
--     rule of passes/input_fusion_cost.h leaves a convert as a kernel of its own on sm_90)
--   M.fp8_values(dt) -> the values of all 256 codes of fp8 format dt (NaN as 0/0)
--   M.run(c, opts, dev) -> true, or false and a message: compiles c (opts: kiln.compile
--     options), checks the kernel count (kernels_on[opts.target], else kernels), runs it (on dev, default the host) and compares every
--     output with g:eval
--   M.exact(got, want) -> true, or false and a message: equal values (NaN == NaN, the sign
--     of zero), for the exact fp8 -> f16 conversions
local kiln = require "kiln"
local M = {}

M.F8 = { "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz" }
local FMT = { -- mantissa bits, bias, NaN rule
  f8e4m3fn = { 3, 7, "fn" }, f8e5m2 = { 2, 15, "ieee" }, f8e4m3fnuz = { 3, 8, "fnuz" }, f8e5m2fnuz = { 2, 16, "fnuz" },
}

function M.fp8_values(dt)
  local mb, bias, rule = table.unpack(FMT[dt])
  local v = {}
  for code = 0, 255 do
    local s, mag = code >= 128 and -1 or 1, code % 128
    local e, m = mag >> mb, mag % (1 << mb)
    local x
    if rule == "fnuz" and code == 128 then x = 0 / 0
    elseif rule == "fn" and mag == 127 then x = 0 / 0
    elseif rule == "ieee" and e == 31 then x = m == 0 and s * math.huge or 0 / 0
    elseif e == 0 then x = s * m / (1 << mb) * 2.0 ^ (1 - bias)
    else x = s * (1 + m / (1 << mb)) * 2.0 ^ (e - bias) end
    v[#v + 1] = x
  end
  return v
end

local function rnd(shape, dt, layout) return kiln.rand(shape, dt, { layout = layout }) end

function M.cases()
  local cs = {}
  local function add(name, kernels, build, kernels_on)
    cs[#cs + 1] = { name = name, kernels = kernels, build = build, kernels_on = kernels_on }
  end
  -- dot(convert(a), b): a f32 converted to the GEMM dtype in the loads
  for _, s in ipairs { { 77, 130, 333 }, { 1000, 515, 257 } } do
    local m, n, k = s[1], s[2], s[3]
    for _, dt in ipairs { "f16", "bf16" } do
      add(("dot(convert(f32 -> %s)) %dx%dx%d"):format(dt, m, n, k), 1, function()
        local g = kiln.graph("cvt_dot")
        local a, b = g:param("a", { m, k }, "f32"), g:param("b", { k, n }, dt)
        g:output(g:dot(a:convert(dt), b))
        return g, { a = rnd({ m, k }, "f32"), b = rnd({ k, n }, dt) }
      end)
    end
    -- B converted (the other operand), and a scale prologue that keeps the dtype
    add(("dot(a, convert(b f32 -> f16)) %dx%dx%d"):format(m, n, k), 1, function()
      local g = kiln.graph("cvt_dot_b")
      local a, b = g:param("a", { m, k }, "f16"), g:param("b", { k, n }, "f32")
      g:output(g:dot(a, b:convert("f16")))
      return g, { a = rnd({ m, k }, "f16"), b = rnd({ k, n }, "f32") }
    end)
    add(("dot(a * s, b) f16 %dx%dx%d"):format(m, n, k), 1, function()
      local g = kiln.graph("scale_dot")
      local a, sc, b = g:param("a", { m, k }, "f16"), g:param("s", { 1, k }, "f16"), g:param("b", { k, n }, "f16")
      g:output(g:dot(a * sc, b))
      return g, { a = rnd({ m, k }, "f16"), s = rnd({ 1, k }, "f16"), b = rnd({ k, n }, "f16") }
    end)
    -- fp8 operands: quant_dot (both converted to f16 in the loads) and an explicit
    -- fp8 -> f16 convert feeding an f16 dot
    for _, dt in ipairs(M.F8) do
      add(("quant_dot %s %dx%dx%d"):format(dt, m, n, k), 1, function()
        local g = kiln.graph("qdot")
        local a, b = g:param("a", { m, k }, dt), g:param("b", { k, n }, dt)
        g:output(g:quant_dot(a, b))
        return g, { a = rnd({ m, k }, dt), b = rnd({ k, n }, dt) }
      end)
    end
    for _, dt in ipairs { "f8e4m3fn", "f8e5m2" } do
      add(("dot(convert(%s -> f16), f16) %dx%dx%d"):format(dt, m, n, k), 1, function()
        local g = kiln.graph("cvt8_dot")
        local a, b = g:param("a", { m, k }, dt), g:param("b", { k, n }, "f16")
        g:output(g:dot(a:convert("f16"), b))
        return g, { a = rnd({ m, k }, dt), b = rnd({ k, n }, "f16") }
      end)
    end
  end
  -- the conv case with its input arriving as f32 NHWC: relu(conv(convert(x), w) + r)
  add("relu(conv(convert(x f32 -> f16), w) + r) NHWC 3x37x7x9 -> 20", 1, function()
    local g = kiln.graph("cvt_conv")
    local x = g:param("x", { 3, 37, 7, 9 }, "f32", { layout = "NHWC" })
    local w = g:param("w", { 20, 37, 1, 1 }, "f16", { layout = "KYXC" })
    local r = g:param("r", { 3, 20, 7, 9 }, "f16", { layout = "NHWC" })
    g:output((g:conv(x:convert("f16"), w) + r):relu())
    return g, { x = rnd({ 3, 37, 7, 9 }, "f32", "NHWC"), w = rnd({ 20, 37, 1, 1 }, "f16", "KYXC"),
                r = rnd({ 3, 20, 7, 9 }, "f16", "NHWC") }
  end)
  -- the cost rule declines: an f32 A re-read by 16 column blocks costs more in the loads
  -- than a convert kernel on sm_90 (fused 15.0k cycles, a kernel of its own 5.4k); the
  -- chain (a * s) -> f16 becomes one element-wise kernel; elsewhere fused (sm_90a: a wgmma
  -- GEMM keeps its prologue, passes/input_fusion_cost.h)
  add("dot(convert(f32 -> f16)) 1024x1024x512 (a convert kernel on sm_90)", 1, function()
    local g = kiln.graph("cvt_dot_big")
    local a, b = g:param("a", { 1024, 512 }, "f32"), g:param("b", { 512, 1024 }, "f16")
    g:output(g:dot(a:convert("f16"), b))
    return g, { a = rnd({ 1024, 512 }, "f32"), b = rnd({ 512, 1024 }, "f16") }
  end, { sm_90 = 2 })
  add("dot(convert(a * s f32 -> f16)) 1024x1024x512 (one chain kernel on sm_90)", 1, function()
    local g = kiln.graph("cvt_scale_dot_big")
    local a, s, b = g:param("a", { 1024, 512 }, "f32"), g:param("s", { 1, 512 }, "f32"), g:param("b", { 512, 1024 }, "f16")
    g:output(g:dot((a * s):convert("f16"), b))
    return g, { a = rnd({ 1024, 512 }, "f32"), s = rnd({ 1, 512 }, "f32"), b = rnd({ 512, 1024 }, "f16") }
  end, { sm_90 = 2 })
  return cs
end

function M.run(c, opts, dev)
  local g, inputs = c.build()
  local p = kiln.compile(g, opts)
  local want = c.kernels_on and opts and c.kernels_on[opts.target] or c.kernels
  if want and #p:kernels() ~= want then
    return false, ("%d kernels, want %d"):format(#p:kernels(), want)
  end
  local got, want = table.pack(p:run(inputs, dev and { device = dev } or nil)), table.pack(g:eval(inputs))
  for i = 1, want.n do
    local r = kiln.compare(got[i], want[i])
    if not r.ok then return false, ("output %d: %s"):format(i, tostring(r.message or r.summary)) end
  end
  return true
end

function M.exact(got, want)
  local a, b = got:flat(), want:flat()
  if #a ~= #b then return false, ("%d values, want %d"):format(#a, #b) end
  for i = 1, #a do
    local x, y = a[i], b[i]
    local same = (x ~= x and y ~= y) or (x == y and (x ~= 0 or 1 / x == 1 / y))
    if not same then return false, ("value %d: %s, want %s"):format(i, tostring(x), tostring(y)) end
  end
  return true
end

return M
