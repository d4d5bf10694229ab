-- tma_split_cases.lua — split-K GEMMs and convs on the Hopper wgmma path whose operands take
-- TMA (passes/rock_tma.h: a channel-sliced KYXC filter is contiguous in runs of the slice's
-- channels, one per filter tap, and loads through a rank-4 tensor map {Cc, taps, M, G} with
-- each box's K coordinate split; split dots' slices are plain boxes), for the device suite
-- (scripts/gpu_suite.lua, section tma_split) and tma_split_spec (host: compiles every case,
-- checks the kernels' `tma`, the 4-D TMA loads in the PTX and ptxas' spills). Cases: 3x3
-- NHWC convs + residual + relu (padding 1) split 2 / 3 / 4 by a v3 perf config (f16 / bf16,
-- odd M, N, channels of 48 per slice with 32-byte panels), the ResNet-50 7x7x512 and
-- 14x14x256 layers at batch 4 with the bench's tiles (bench/gpu_cases.txt) and the
-- heuristic, a slice that is not whole boxes (registers), split dots with B [K, N] and
-- [N, K]; each compiled for sm_90a, run on the device and compared with g:eval
-- (fused_gen.check: the input dtype's tolerances).
--   local T = require "tma_split_cases"; for _, c in ipairs(T.cases()) do T.run(c, dev) end
local kiln = require "kiln"
local T = require "tma_cases"
local M = {}

local function R(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end

-- relu(conv3x3(x, w) + r), x / r / the output NHWC, w KYXC; want: the GEMM kernel's tma
-- ("A": the filter through TMA; the im2col operand stays on registers); kernels: the count
-- (split: the partials' GEMM, the sum + epilogue kernel and the NHWC output's copy; nil: not
-- checked); a config with a split (7th field) loads the sliced filter through a 4-D map
local function conv(Nb, C, H, W, Kc, dt, pc, want, kernels)
  local g = kiln.graph("tma_split_conv")
  local x = g:param("x", { Nb, C, H, W }, dt, { layout = "NHWC" })
  local w = g:param("w", { Kc, C, 3, 3 }, dt, { layout = "KYXC" })
  local r = g:param("r", { Nb, Kc, H, W }, dt, { layout = "NHWC" })
  g:output(((g:conv(x, w, { padding = 1 }) + r):relu()):transpose { 0, 2, 3, 1 })
  return { name = ("tma split conv NHWC %dx%dx%dx%d -> %d 3x3 %s"):format(Nb, C, H, W, Kc, dt), g = g,
           inputs = { x = R({ Nb, C, H, W }, dt, "NHWC"), w = R({ Kc, C, 3, 3 }, dt, "KYXC"),
                      r = R({ Nb, Kc, H, W }, dt, "NHWC") },
           dtype = dt, perf = pc, want = want, kernels = kernels,
           rank4 = want ~= "none" and pc ~= nil and pc:match("^v3:%d+,%d+,%d+,%d+,%d+,%d+,%d+$") ~= nil }
end
-- relu(a @ b + bias), a [M, K], b [K, N] (tb: [N, K] transposed)
local function dot(Mm, N, K, dt, tb, pc, want)
  local g = kiln.graph("tma_split_dot")
  local a = g:param("a", { Mm, K }, dt)
  local b = tb and g:param("b", { N, K }, dt):transpose { 1, 0 } or g:param("b", { K, N }, dt)
  g:output((g:dot(a, b) + g:param("bias", { N }, dt)):relu())
  return { name = ("tma split dot %dx%dx%d B%s %s"):format(Mm, N, K, tb and "[N,K]" or "[K,N]", dt), g = g,
           inputs = { a = R({ Mm, K }, dt), b = R(tb and { N, K } or { K, N }, dt), bias = R({ N }, dt) },
           dtype = dt, perf = pc, want = want, kernels = 2 }
end

function M.cases()
  return {
    -- runs of 64 channels (C 128 split 2), 128-byte panels; split 4 (runs of 32, K tile 32)
    conv(2, 128, 5, 5, 64, "f16", "v3:64,64,64,64,64,8,2", "A", 3),
    conv(2, 128, 5, 5, 64, "bf16", "v3:128,64,32,64,64,8,4", "A", 3),
    -- runs of 48 (C 96 split 2) with 32-byte panels (K tile 16), odd M 40, N 72
    conv(3, 96, 4, 6, 40, "bf16", "v3:64,64,16,64,64,8,2", "A", 3),
    -- C 192 split 3 (runs of 64), M 130 past the tile (zero fill), N 21
    conv(1, 192, 3, 7, 130, "f16", "v3:128,64,32,64,64,8,3", "A", 3),
    -- runs of 48 with 64-byte panels of 32: a box would cross a run: registers
    conv(3, 96, 4, 6, 40, "f16", "v3:64,64,32,64,64,8,2", "none", 3),
    -- the ResNet-50 3x3 layers at batch 4 with the bench's tiles (split two: the filter
    -- through TMA) and the sub-wave candidates unsplit; the heuristic (one kernel)
    conv(4, 512, 7, 7, 512, "f16", "v3:128,128,64,64,128,8,2", "A", 3),
    conv(4, 512, 7, 7, 512, "bf16", "v3:128,224,64,64,224,8,2", "A", 3),
    conv(4, 512, 7, 7, 512, "f16", "v3:64,128,64,64,128,8,2", "A", 3),
    conv(4, 512, 7, 7, 512, "f16", "v3:128,96,64,64,96,8", "A", 1),
    conv(4, 256, 14, 14, 256, "f16", "v3:128,192,64,64,192,8", "A", 1),
    conv(4, 256, 14, 14, 256, "bf16", nil, "A", nil),
    -- split dots: slices {Kc, M, S} of A; B [K, N] MN-major and [N, K]
    dot(70, 136, 128, "f16", false, "v3:64,64,32,64,64,8,2", "A,B"),
    dot(70, 136, 192, "bf16", true, "v3:64,64,32,64,64,8,3", "A,B"),
    dot(200, 264, 1024, "f16", true, "v3:128,128,64,64,128,8,4", "A,B"),
  }
end

-- compile c for sm_90a: the program and its GEMM kernel; errors name what differs
function M.compile(c)
  local p, k, ptx = T.compile_gemm(c)
  if c.kernels and #p:kernels() ~= c.kernels then
    error(("%s: %d kernels, want %d"):format(k.perf_config, #p:kernels(), c.kernels), 0)
  end
  if (c.want == "none") ~= (k.tma:sub(1, 4) == "none") or c.want ~= "none" and k.tma ~= c.want then
    error(("%s: tma = %s, want %s"):format(k.perf_config, k.tma, c.want), 0)
  end
  local has = ptx:find("cp.async.bulk.tensor", 1, true) ~= nil
  if has ~= (c.want ~= "none") then error(k.perf_config .. ": cp.async.bulk.tensor " .. (has and "present" or "absent"), 0) end
  if c.rank4 and not ptx:find("cp.async.bulk.tensor.4d", 1, true) then
    error(k.perf_config .. ": no 4-D TMA load (the channel-sliced filter's map)", 0)
  end
  return p, k, ptx
end

return T.family(M)
