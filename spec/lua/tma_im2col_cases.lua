-- tma_im2col_cases.lua — 2-D NHWC convs whose activation operand loads through TMA im2col
-- mode on the Hopper wgmma path (passes/rock_tma_im2col.h, rock-gridwise-to-blockwise
-- {tma=1,tma-im2col=1}), for the device suite (scripts/gpu_suite.lua, section tma_im2col) and
-- tma_im2col_spec (host: compiles every case, checks the kernels' `tma`, the .im2col loads in
-- the PTX and ptxas' spills and local memory). Cases: relu(conv(x, w) + r) with x / r / the
-- output NHWC and w KYXC: 3x3 padding 1 stride 1 and 2, odd H / W, several images (tiles of
-- pixels crossing rows and images), C 64 / 128 / 256, f16 / bf16, asymmetric padding and
-- dilation, split K (channel slices), the ResNet-50 3x3 layers at batch 2 with the batch-64
-- tiles and the heuristic; each compiled for sm_90a,
-- run on the device and compared with g:eval (fused_gen.check: the input dtype's tolerances).
-- Each kept small (well under a second of device time).
--   local T = require "tma_im2col_cases"; for _, c in ipairs(T.cases()) do T.run(c, dev) end
local kiln = require "kiln"
local T = require "tma_cases"
local M = {}

M.pipeline = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                          "rock-gridwise-to-blockwise{tma=1,ws=0,tma-im2col=1},", 1)

local function R(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end

-- o: {r, s, stride = {sh, sw}, padding = {t, b, l, r}, dilation = {dh, dw}}; want: the GEMM
-- kernel's tma
local function conv(Nb, C, H, W, Kc, dt, o, pc, want)
  local r, s = o.r or 3, o.s or 3
  local st, pad, dil = o.stride or { 1, 1 }, o.padding or { 1, 1, 1, 1 }, o.dilation or { 1, 1 }
  local Ho = (H + pad[1] + pad[2] - dil[1] * (r - 1) - 1) // st[1] + 1
  local Wo = (W + pad[3] + pad[4] - dil[2] * (s - 1) - 1) // st[2] + 1
  local g = kiln.graph("tma_im2col_conv")
  local x = g:param("x", { Nb, C, H, W }, dt, { layout = "NHWC" })
  local w = g:param("w", { Kc, C, r, s }, dt, { layout = "KYXC" })
  local res = g:param("r", { Nb, Kc, Ho, Wo }, dt, { layout = "NHWC" })
  g:output(((g:conv(x, w, { stride = st, padding = pad, dilation = dil }) + res):relu()):transpose { 0, 2, 3, 1 })
  return { name = ("tma im2col conv NHWC %dx%dx%dx%d -> %d %dx%d s%dx%d p%s d%dx%d %s"):format(Nb, C, H, W, Kc, r, s,
             st[1], st[2], table.concat(pad, ","), dil[1], dil[2], dt), g = g,
           inputs = { x = R({ Nb, C, H, W }, dt, "NHWC"), w = R({ Kc, C, r, s }, dt, "KYXC"),
                      r = R({ Nb, Kc, Ho, Wo }, dt, "NHWC") },
           dtype = dt, perf = pc, want = want }
end

function M.cases()
  return {
    -- 3x3 pad 1 stride 1, odd H / W, 2 images: tiles of 64 pixels cross rows and the image
    conv(2, 64, 7, 9, 64, "f16", {}, "v3:64,64,64,64,64,8", "A,B(im2col)"),
    -- stride 2, C 128 (two 64-channel panels per tap), 3 images
    conv(3, 128, 9, 7, 64, "f16", { stride = { 2, 2 } }, "v3:64,64,64,64,64,8", "A,B(im2col)"),
    -- C 256, 40 filters (M past the tile), bf16
    conv(1, 256, 5, 6, 40, "bf16", {}, "v3:64,64,64,64,64,8", "A,B(im2col)"),
    -- asymmetric padding, strides (2, 1), dilation (1, 2), a 3x2 window, bf16
    conv(2, 64, 9, 8, 24, "bf16", { r = 3, s = 2, stride = { 2, 1 }, padding = { 1, 1, 0, 2 }, dilation = { 1, 2 } },
         "v3:64,64,64,64,64,8", "A,B(im2col)"),
    -- 48 channels in 32-byte panels of 16 (K tile 16)
    conv(2, 48, 5, 5, 32, "f16", {}, "v3:64,64,16,64,64,8", "A,B(im2col)"),
    -- 128-pixel tiles over 4 images of 5x5 (a tile holds more than one image)
    conv(4, 64, 5, 5, 64, "f16", {}, "v3:64,128,64,64,128,8", "A,B(im2col)"),
    -- the ResNet-50 3x3 layers at batch 2 with the batch-64 heuristic's tiles (sub-wave N tiles of
    -- 96 / 192)
    conv(2, 512, 7, 7, 512, "f16", {}, "v3:128,96,64,64,96,8", "A,B(im2col)"),
    conv(2, 256, 14, 14, 256, "bf16", {}, "v3:128,192,64,64,192,8", "A,B(im2col)"),
    conv(2, 64, 56, 56, 64, "f16", {}, nil, "A,B(im2col)"),
    -- split K by the config (channel slices of 64, 32-element panels in the second): the
    -- filter's slices through their rank-4 maps, the activation's through im2col boxes at
    -- channel g Ck + k % Ck
    conv(2, 128, 5, 5, 64, "f16", {}, "v3:64,64,64,64,64,8,2", "A,B(im2col)"),
    conv(1, 192, 6, 5, 40, "bf16", { stride = { 2, 1 } }, "v3:64,64,32,64,64,8,3", "A,B(im2col)"),
    -- the ResNet-50 7x7x512 layer at batch 2 with the heuristic (split K)
    conv(2, 512, 7, 7, 512, "f16", {}, nil, "A,B(im2col)"),
  }
end

-- compile c for sm_90a with tma-im2col=1: the program, its GEMM kernel and PTX; errors name
-- what differs
function M.compile(c)
  local p, k, ptx = T.compile_gemm(c, M.pipeline)
  if k.tma ~= c.want then error(("%s: tma = %s, want %s"):format(k.perf_config, k.tma, c.want), 0) end
  if (ptx:find("cp.async.bulk.tensor.4d.shared::cluster.global.im2col", 1, true) ~= nil) ~= (c.want:find("im2col", 1, true) ~= nil) then
    error(k.perf_config .. ": the PTX's im2col TMA loads do not match tma = " .. k.tma, 0)
  end
  return p, k, ptx
end

return T.family(M)
