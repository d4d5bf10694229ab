-- int8_cases.lua — integer-contraction cases shared by int8_spec.lua, int8_gpu_spec.lua
-- and scripts/gpu_suite.lua: fresh full-range i8 inputs (-128..127, no zeros), exact
-- comparison, and GEMM / conv graphs whose i32 results leave the i8 range.
--   M.rand_i8(shape [, opts]) / M.rand_int(shape, dtype, lo, hi) -> tensor
--   M.exact(got, want) -> true | false, message
--   M.gpu_cases() -> { {name=, g=, inputs=, dtype=}, ... }   (sizes for a GPU run)
local kiln = require "kiln"
local M = {}

math.randomseed(os.time(), math.floor(os.clock() * 1e6))

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- Values in [lo, hi] without 0.
local function rand_flat(n, lo, hi)
  local flat = {}
  for i = 1, n do
    local v = math.random(lo, hi - 1)
    flat[i] = v >= 0 and v + 1 or v
  end
  return flat
end

function M.rand_i8(shape, opts)
  local o = { shape = shape }
  for k, v in pairs(opts or {}) do o[k] = v end
  return kiln.tensor(rand_flat(numel(shape), -128, 127), "i8", o)
end

function M.rand_int(shape, dtype, lo, hi)
  return kiln.tensor(rand_flat(numel(shape), lo, hi), dtype, { shape = shape })
end

-- got == want element for element (same dtype and shape).
function M.exact(got, want)
  if got.dtype ~= want.dtype then return false, "dtype " .. got.dtype .. ", the reference " .. want.dtype end
  local gs, ws = got.shape, want.shape
  if #gs ~= #ws then return false, "rank differs" end
  for i = 1, #ws do if gs[i] ~= ws[i] then return false, "shape differs" end end
  local g, w = got:flat(), want:flat()
  for i = 1, #w do
    if g[i] ~= w[i] then return false, string.format("element %d is %s, the reference %s", i - 1, tostring(g[i]), tostring(w[i])) end
  end
  return true
end

function M.gpu_cases()
  local cases = {}
  do
    local g = kiln.graph("i8_gemm")
    local a, b = g:param("a", { 512, 640 }, "i8"), g:param("b", { 640, 384 }, "i8")
    g:output(g:dot(a, b))
    cases[#cases + 1] = { name = "i8 GEMM 512x384x640 -> i32", g = g, dtype = "i32",
                          inputs = { a = M.rand_i8({ 512, 640 }), b = M.rand_i8({ 640, 384 }) } }
  end
  do
    local g = kiln.graph("i8_gemm_bias_relu_f32")
    local a, b = g:param("a", { 2, 200, 136 }, "i8"), g:param("b", { 136, 264 }, "i8")
    local bias = g:param("bias", { 264 }, "i32")
    g:output((g:dot(a, b) + bias):relu():convert("f32"))
    cases[#cases + 1] = { name = "batched i8 GEMM + i32 bias + relu -> f32", g = g, dtype = "f32",
                          inputs = { a = M.rand_i8({ 2, 200, 136 }), b = M.rand_i8({ 136, 264 }),
                                     bias = M.rand_int({ 264 }, "i32", -20000, 20000) } }
  end
  do
    local g = kiln.graph("i8_conv_requant")
    local x = g:param("x", { 2, 64, 14, 14 }, "i8", { layout = "NHWC" })
    local w = g:param("w", { 128, 64, 3, 3 }, "i8", { layout = "KYXC" })
    g:output(g:conv(x, w, { padding = 1 }):clip(-30000, 30000):convert("i8"))
    cases[#cases + 1] = { name = "i8 conv NHWC 3x3 + clip -> i8", g = g, dtype = "i8",
                          inputs = { x = M.rand_i8({ 2, 64, 14, 14 }, { layout = "NHWC" }),
                                     w = M.rand_i8({ 128, 64, 3, 3 }, { layout = "KYXC" }) } }
  end
  return cases
end

return M
