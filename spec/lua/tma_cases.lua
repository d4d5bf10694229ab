-- tma_cases.lua — GEMMs on the Hopper wgmma path with TMA + mbarrier operand loads
-- (sm_90a, rock-gridwise-to-blockwise{tma=1}: passes/rock_tma.h) for the device suite
-- (scripts/gpu_suite.lua): the TMA tiles swizzled (128 / 64 / 32 bytes by the K tile: the
-- default tma-swizzle=128; cases named "... no swizzle" with tma-swizzle=none, and their
-- `want_sw` checked against the kernel's tma_swizzle), f16 / bf16, every operand
-- transposition (MN-major operands through TMA in the swizzled MN-major layout where the
-- config allows it, else registers; K-major operands load
-- through TMA, MN-major ones through registers), tile multiples and odd sizes (TMA's zero
-- fill past the dims), K from 16 to 4096, batch (rank-3 tensor maps), fused epilogues, v3
-- configs at kPerBlock 16..64 and the heuristic; each compiled for sm_90a, its `tma`
-- attribute and PTX (cp.async.bulk.tensor) checked, run on the device and compared with
-- g:eval (fused_gen.check: the input dtype's tolerances). tma_spec compiles every case.
--   local T = require "tma_cases"; for _, c in ipairs(T.cases()) do T.run(c, dev) end
local kiln = require "kiln"
local gen = require "fused_gen"
local G = require "gemm_graphs"
local M = {}

M.pipeline = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{tma=1},", 1)
-- the unswizzled TMA boxes ({8, rows}: 16-byte rows, the core-matrix layout), for comparison
M.pipeline_nosw = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                               "rock-gridwise-to-blockwise{tma=1,tma-swizzle=none},", 1)

-- M.extra (nil: none): options added to rock-gridwise-to-blockwise in every compile of these
-- cases (scripts/gpu_suite.lua sets "persistent=1" under KILN_SUITE_PERSISTENT=1: the whole
-- section with persistent tiles forced on)
M.extra = nil
local function with_extra(pl) return M.extra and G.gtb_extra(pl, M.extra) or pl end -- (gemm_graphs.gtb_extra)

local function R(shape, dt) return kiln.rand(shape, dt, { dist = "normal" }) end

local function dot(Mm, N, K, dt, at, bt, epi, pc, batch)
  local g = kiln.graph("tma_dot")
  local pre = batch and { batch } or {}
  local function sh(a, b) local s = { table.unpack(pre) }; s[#s + 1] = a; s[#s + 1] = b; return s end
  local perm = batch and { 0, 2, 1 } or { 1, 0 }
  -- at: A stored [M, K] (K-major: TMA); else [K, M]. bt: B stored [N, K] (TMA); else [K, N]
  local a = at and g:param("a", sh(Mm, K), dt) or g:param("a", sh(K, Mm), dt):transpose(perm)
  local b = bt and g:param("b", sh(N, K), dt):transpose(perm) or g:param("b", sh(K, N), dt)
  local inputs = { a = R(at and sh(Mm, K) or sh(K, Mm), dt), b = R(bt and sh(N, K) or sh(K, N), dt) }
  local c = g:dot(a, b)
  if epi == "bias_relu" then
    c = (c + g:param("bias", { N }, dt)):relu()
    inputs.bias = R({ N }, dt)
  elseif epi == "residual" then
    c = (c + g:param("r", sh(Mm, N), dt)):relu()
    inputs.r = R(sh(Mm, N), dt)
  end
  g:output(c)
  local want = (at and bt) and "A,B" or at and "A" or bt and "B" or "none"
  -- one K step (the heuristic's kPerBlock: 16 / 32 / 64 for K <= 16 / 32 / larger): the
  -- single-step loop, no TMA
  local kb = pc and tonumber(pc:match("^v3:%d+,%d+,(%d+)")) or (K <= 16 and 16 or K <= 32 and 32 or 64)
  local onestep = K <= kb
  if onestep then want = "none" end
  return { name = ("tma %s%dx%dx%d %s%s%s%s"):format(batch and (batch .. "x") or "", Mm, N, K, dt,
                                                   at and " A[M,K]" or " A[K,M]", bt and " B[N,K]" or " B[K,N]",
                                                   epi and (" + " .. epi) or ""),
           g = g, inputs = inputs, dtype = dt, perf = pc, want = want, mn = { a = not at, b = not bt }, M = Mm, N = N,
           onestep = onestep }
end

-- NHWC conv (KYXC weights) + residual + relu: 1x1 takes TMA for both operands, 3x3 (padded:
-- the im2col view is no box) for the weights only
local function conv(Nb, C, H, W, Kc, S, P, pc, want)
  local g = kiln.graph("tma_conv")
  local x = g:param("x", { Nb, C, H, W }, "f16", { layout = "NHWC" })
  local w = g:param("w", { Kc, C, S, S }, "f16", { layout = "KYXC" })
  local r = g:param("r", { Nb, Kc, H, W }, "f16", { layout = "NHWC" })
  g:output((g:conv(x, w, { padding = { P, P, P, P } }) + r):relu())
  return { name = ("tma conv NHWC %dx%dx%dx%d -> %d %dx%d + add + relu f16"):format(Nb, C, H, W, Kc, S, S), g = g,
           inputs = { x = kiln.rand({ Nb, C, H, W }, "f16", { dist = "normal", layout = "NHWC" }),
                      w = kiln.rand({ Kc, C, S, S }, "f16", { dist = "normal", layout = "KYXC" }),
                      r = kiln.rand({ Nb, Kc, H, W }, "f16", { dist = "normal", layout = "NHWC" }) },
           dtype = "f16", perf = pc, want = want }
end

function M.cases()
  local cs = {}
  local configs = { "v3:128,256,32,64,256,8", "v3:128,256,64,64,256,8", "v3:128,128,64,64,128,8",
                    "v3:64,64,16,64,64,8", "v3:128,64,32,128,64,8", false }
  -- K multiple of 8 (TMA needs 16-byte rows); odd M / N; K small and large
  local shapes = { { 256, 256, 256 }, { 257, 129, 136 }, { 1000, 520, 1024 }, { 33, 24, 4096 }, { 128, 256, 40 } }
  local epis = { false, "bias_relu", "residual" }
  local i = 0
  for _, s in ipairs(shapes) do
    for _, dt in ipairs { "f16", "bf16" } do
      for _, t in ipairs { { true, true }, { true, false }, { false, true } } do
        i = i + 1
        cs[#cs + 1] = dot(s[1], s[2], s[3], dt, t[1], t[2], epis[i % #epis + 1] or nil, configs[i % #configs + 1] or nil)
      end
    end
  end
  cs[#cs + 1] = dot(100, 136, 72, "f16", true, true, "residual", "v3:128,128,32,64,128,8", 3)
  cs[#cs + 1] = dot(130, 300, 136, "bf16", true, false, nil, "v3:128,256,64,64,256,8", 2)
  cs[#cs + 1] = dot(2304, 2048, 256, "f16", true, false, "bias_relu", nil)
  cs[#cs + 1] = dot(2048, 2304, 512, "bf16", true, true, nil, nil)
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, "v3:128,256,32,64,256,8", "A,B")
  cs[#cs + 1] = conv(4, 2048, 7, 7, 512, 1, 0, nil, "A,B")
  cs[#cs + 1] = conv(8, 64, 14, 14, 128, 3, 1, "v3:128,128,32,64,128,8", "A")
  -- both operands MN-major: both through TMA (the swizzled MN-major tiles)
  cs[#cs + 1] = dot(256, 256, 128, "f16", false, false, nil, "v3:128,128,32,64,128,8")
  -- the swizzle by K tile (128 bytes at 64 f16, 64 at 32, 32 at 16) and the unswizzled boxes
  local function sw(c, want_sw, nosw)
    c.want_sw, c.nosw = want_sw, nosw
    if nosw then c.name = c.name .. " no swizzle" end
    return c
  end
  cs[#cs + 1] = sw(dot(1000, 520, 1024, "f16", true, true, "bias_relu", "v3:128,256,64,64,256,8"), 128)
  cs[#cs + 1] = sw(dot(1000, 520, 1024, "f16", true, true, "bias_relu", "v3:128,256,64,64,256,8"), 0, true)
  cs[#cs + 1] = sw(dot(257, 129, 136, "bf16", true, true, nil, "v3:128,128,32,64,128,8"), 64)
  cs[#cs + 1] = sw(dot(70, 72, 400, "f16", true, true, "residual", "v3:64,64,16,64,64,8"), 32)
  -- MN-major operands through TMA: the swizzled MN-major tiles (imm-trans)
  cs[#cs + 1] = sw(dot(300, 264, 520, "f16", false, false, "bias_relu", "v3:128,128,64,64,128,8"), 128)
  cs[#cs + 1] = sw(dot(2304, 2048, 512, "f16", true, false, nil, nil), 128)
  cs[#cs + 1] = sw(dot(257, 129, 136, "bf16", true, false, nil, "v3:128,128,32,64,128,8"), 0, true)
  cs[#cs + 1] = sw(dot(192, 200, 640, "f16", true, true, nil, "v3:64,64,128,64,64,8"), 128)
  cs[#cs + 1] = sw(conv(4, 2048, 7, 7, 512, 1, 0, "v3:128,256,64,64,256,8", "A,B"), 0, true)
  cs[#cs + 1] = sw(conv(8, 64, 14, 14, 128, 3, 1, "v3:128,128,64,64,128,8", "A"), 128)
  return cs
end

-- The warp-specialized loop (rock-gridwise-to-blockwise{tma=1,ws=1}): c.ws cases; their GEMM
-- kernel's `ws` is "on" where both operands go through TMA (then the PTX has setmaxnreg)
M.pipeline_ws = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                             "rock-gridwise-to-blockwise{tma=1,ws=1},", 1)
function M.ws_cases()
  local cs = {}
  local function ws(c) c.ws = true; c.name = c.name .. " ws"; return c end
  -- tile multiples, B [N, K] and [K, N], the large tile and the heuristic
  cs[#cs + 1] = ws(dot(512, 512, 512, "f16", true, true, nil, "v3:128,256,64,64,256,8"))
  cs[#cs + 1] = ws(dot(512, 512, 512, "f16", true, false, nil, "v3:128,256,64,64,256,8"))
  cs[#cs + 1] = ws(dot(1024, 768, 1024, "bf16", true, true, nil, nil))
  cs[#cs + 1] = ws(dot(256, 256, 128, "f16", false, false, nil, "v3:128,128,32,64,128,8"))
  -- odd M / N / K (TMA's zero fill), K = 16 (one step: no TMA loop, ws stays off) and 16384
  cs[#cs + 1] = ws(dot(257, 129, 136, "f16", true, true, "bias_relu", "v3:128,128,32,64,128,8"))
  cs[#cs + 1] = ws(dot(1000, 520, 1032, "bf16", true, false, nil, "v3:128,256,64,64,256,8"))
  cs[#cs + 1] = ws(dot(70, 72, 400, "f16", true, true, "residual", "v3:64,64,16,64,64,8"))
  cs[#cs + 1] = ws(dot(128, 256, 16, "f16", true, true, nil, "v3:128,256,16,64,256,8"))
  cs[#cs + 1] = ws(dot(256, 512, 16384, "f16", true, true, nil, "v3:128,256,64,64,256,8"))
  cs[#cs + 1] = ws(dot(256, 256, 16384, "bf16", true, false, nil, nil))
  -- batch (rank-3 tensor maps); fused residual + relu through the LDS output swizzle
  cs[#cs + 1] = ws(dot(100, 136, 72, "f16", true, true, "residual", "v3:128,128,32,64,128,8", 3))
  cs[#cs + 1] = ws(dot(130, 300, 136, "bf16", true, false, "residual", "v3:128,256,64,64,256,8", 2))
  cs[#cs + 1] = ws(dot(2304, 2048, 512, "f16", true, false, "residual", nil))
  -- the seed conv's shape class: NHWC 1x1 + residual + relu
  cs[#cs + 1] = ws(conv(4, 2048, 7, 7, 512, 1, 0, nil, "A,B"))
  cs[#cs + 1] = ws(conv(4, 2048, 7, 7, 512, 1, 0, "v3:128,256,32,64,256,8", "A,B"))
  return cs
end

-- Persistent tiles (rock-gridwise-to-blockwise{persistent=1}, with the TMA loop and with ws=1):
-- c.persist cases, shapes with more tiles than an H100's 132 SMs hold at once (so workgroups
-- loop over several tiles, the last wave partial) and small ones (one tile each), odd sizes,
-- batch, the fused epilogues and the seed conv's class; their GEMM kernel's `persistent` is
-- "on" and grid_persistent 1 where the TMA loop is taken
M.pipeline_persist = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                  "rock-gridwise-to-blockwise{tma=1,persistent=1},", 1)
M.pipeline_persist_ws = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                     "rock-gridwise-to-blockwise{tma=1,ws=1,persistent=1},", 1)
function M.persist_cases()
  local cs = {}
  local function P(c, ws)
    c.persist, c.ws = true, ws
    c.name = c.name .. (ws and " persistent ws" or " persistent")
    return c
  end
  for _, ws in ipairs { false, true } do
    -- 144 tiles of 128x256 (2304x2048), 256 (4096x2048), 16 x 9 of 64x64 with odd M / N / K, 24 x 8
    cs[#cs + 1] = P(dot(2304, 2048, 512, "f16", true, true, nil, nil), ws)
    cs[#cs + 1] = P(dot(2304, 2048, 512, "f16", true, false, "residual", nil), ws)
    cs[#cs + 1] = P(dot(4096, 2048, 256, "bf16", true, true, nil, "v3:128,256,64,64,256,8"), ws)
    cs[#cs + 1] = P(dot(1000, 520, 1032, "f16", true, true, "bias_relu", "v3:64,64,16,64,64,8"), ws)
    cs[#cs + 1] = P(dot(3000, 2000, 264, "f16", true, false, "residual", nil), ws)
    -- batch 8 (rank-3 tensor maps) of 17 x 9 tiles; few tiles (one per workgroup)
    cs[#cs + 1] = P(dot(1040, 520, 136, "bf16", true, true, "residual", "v3:64,64,32,64,64,8", 8), ws)
    cs[#cs + 1] = P(dot(257, 129, 136, "f16", true, true, "bias_relu", "v3:128,128,32,64,128,8"), ws)
    cs[#cs + 1] = P(dot(256, 256, 128, "f16", false, false, nil, "v3:128,128,32,64,128,8"), ws)
    -- the seed conv's class (NHWC 1x1 -> 512 + residual + relu, the heuristic's config): 2048
    -- channels at batch 16 (4 x 4 tiles, one each), 256 at batch 192 (4 x 37: several each)
    cs[#cs + 1] = P(conv(16, 2048, 7, 7, 512, 1, 0, nil, "A,B"), ws)
    cs[#cs + 1] = P(conv(192, 256, 7, 7, 512, 1, 0, nil, "A,B"), ws)
  end
  -- the mixed loop (B [K, N] on registers with tma-swizzle=none) and a 3x3 conv (one operand
  -- through TMA): the TMA loop's register stage per tile
  local c = P(dot(2304, 2048, 256, "f16", true, false, "bias_relu", "v3:128,128,32,64,128,8"), false)
  c.nosw = true
  cs[#cs + 1] = c
  cs[#cs + 1] = P(conv(32, 64, 28, 28, 128, 3, 1, "v3:128,128,32,64,128,8", "A"), false)
  return cs
end

-- Thread-block clusters (rock-gridwise-to-blockwise{tma=1,cluster=...}; passes/rock_tma.h):
-- c.cluster cases (the option's value: 2, 4, 2x1, 1x2, 4x1, 1x4), odd sizes, grids padded to a
-- multiple of C, batch, both operand layouts (MN-major shared tiles multicast by panel), a
-- register operand (the other shared), K 16384, the seed conv's class; their GEMM kernel's
-- `cluster` is the shape (c.want_cluster where given), grid a multiple of cluster_size, the
-- PTX has .multicast::cluster and .reqnctapercluster
function M.cluster_cases()
  local cs = {}
  local function C(c, opt, want)
    c.cluster, c.want_cluster = opt, want
    c.name = c.name .. " cluster=" .. opt
    return c
  end
  local big = "v3:128,256,64,64,256,8"
  cs[#cs + 1] = C(dot(1000, 520, 1024, "f16", true, true, nil, big), "2", "2x1")
  cs[#cs + 1] = C(dot(1000, 520, 1024, "f16", true, true, "bias_relu", big), "1x2", "1x2") -- N tiles 3: padded
  cs[#cs + 1] = C(dot(1000, 520, 1024, "bf16", true, true, nil, big), "4", "4x1")
  cs[#cs + 1] = C(dot(257, 129, 136, "f16", true, true, "bias_relu", "v3:128,128,32,64,128,8"), "2", "1x2")
  cs[#cs + 1] = C(dot(257, 129, 136, "f16", true, true, "bias_relu", "v3:128,128,32,64,128,8"), "2x1", "2x1") -- padded
  cs[#cs + 1] = C(dot(100, 136, 72, "f16", true, true, "residual", "v3:128,128,32,64,128,8", 3), "2", "1x2")
  cs[#cs + 1] = C(dot(100, 136, 72, "f16", true, true, "residual", "v3:64,64,32,64,64,8", 3), "4", nil)
  -- MN-major shared tiles (B [K, N], A [K, M]: multicast by swizzle panel)
  cs[#cs + 1] = C(dot(130, 304, 136, "bf16", true, false, nil, "v3:128,256,32,64,256,8", 2), "2x1", "2x1")
  cs[#cs + 1] = C(dot(304, 264, 520, "f16", false, true, "bias_relu", "v3:128,64,16,64,64,8"), "1x2", "1x2")
  cs[#cs + 1] = C(dot(300, 264, 520, "f16", false, false, nil, "v3:128,256,32,64,256,8"), "4x1", "4x1")
  cs[#cs + 1] = C(dot(2304, 2048, 512, "f16", true, true, nil, nil), "2", nil)
  cs[#cs + 1] = C(dot(2304, 2048, 512, "f16", true, false, "residual", nil), "4", nil)
  cs[#cs + 1] = C(dot(256, 512, 16384, "f16", true, true, nil, big), "2", "2x1")
  cs[#cs + 1] = C(dot(70, 72, 400, "f16", true, true, "residual", "v3:64,64,16,64,64,8"), "2", "2x1")
  -- the seed conv's class (NHWC 1x1 -> 512 + residual + relu, the heuristic's config) and a
  -- 3x3 conv (only the weights through TMA: they are the shared tile)
  cs[#cs + 1] = C(conv(16, 2048, 7, 7, 512, 1, 0, nil, "A,B"), "2", nil)
  cs[#cs + 1] = C(conv(16, 2048, 7, 7, 512, 1, 0, nil, "A,B"), "4", nil)
  cs[#cs + 1] = C(conv(192, 256, 7, 7, 512, 1, 0, nil, "A,B"), "2x1", "2x1")
  cs[#cs + 1] = C(conv(192, 256, 7, 7, 512, 1, 0, nil, "A,B"), "1x2", "1x2")
  cs[#cs + 1] = C(conv(8, 64, 14, 14, 128, 3, 1, "v3:128,128,32,64,128,8", "A"), "2", "1x2")
  -- the empty-mbarrier loop over many laps of its stages: the bench's 1500x3840x1280 (heuristic
  -- tiles, padded m-tiles), bf16 1 x 2 with K 4096, the seed conv's class 1 x 2
  cs[#cs + 1] = C(dot(1500, 3840, 1280, "f16", true, true, nil, nil), "2", nil)
  cs[#cs + 1] = C(dot(384, 768, 4096, "bf16", true, true, "bias_relu", big), "1x2", "1x2")
  cs[#cs + 1] = C(conv(16, 2048, 7, 7, 512, 1, 0, nil, "A,B"), "1x2", "1x2")
  -- warp-specialized (ws=1): the producer warpgroup issues the multicast slices, the consumer
  -- warpgroups arrive on every CTA's empty mbarriers; odd sizes with padded grids, bf16, batch,
  -- clusters of 4, K 16384, the seed conv's class
  cs[#cs + 1] = C(dot(1000, 520, 1024, "f16", true, true, "bias_relu", big), "2,ws=1", "2x1")
  cs[#cs + 1] = C(dot(1000, 520, 1024, "bf16", true, true, nil, big), "1x2,ws=1", "1x2") -- padded
  cs[#cs + 1] = C(dot(257, 129, 136, "f16", true, true, "bias_relu", "v3:128,128,32,64,128,8"), "2x1,ws=1", "2x1")
  cs[#cs + 1] = C(dot(100, 136, 72, "bf16", true, true, "residual", "v3:64,64,32,64,64,8", 3), "4,ws=1", nil)
  cs[#cs + 1] = C(dot(1500, 3840, 1280, "f16", true, true, nil, nil), "1x2,ws=1", "1x2")
  cs[#cs + 1] = C(dot(256, 512, 16384, "f16", true, true, nil, big), "2,ws=1", "2x1")
  cs[#cs + 1] = C(conv(16, 2048, 7, 7, 512, 1, 0, nil, "A,B"), "2,ws=1", nil)
  cs[#cs + 1] = C(conv(192, 256, 7, 7, 512, 1, 0, nil, "A,B"), "1x2,ws=1", "1x2")
  return cs
end

-- compile_gemm(c, pipeline): c.g compiled for sm_90a (no cache) with pipeline (nil: the
-- default) and c.perf: the program, its GEMM kernel and that kernel's PTX; raises when the
-- program has no GEMM kernel (tma_split_cases and tma_im2col_cases check the rest)
function M.compile_gemm(c, pipeline)
  local p = kiln.compile(c.g, { target = "sm_90a", cache = false, pipeline = pipeline, perf_config = c.perf })
  local k
  for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
  if not k then error("no GEMM kernel", 0) end
  return p, k, p:disasm(k.name, "sm_90a")
end

-- family(F): F, a case file built on this one (its own F.compile), with F.run(c, dev) (F.compile,
-- then this file's run_compiled: its check names the kernel's tma / ws / persistent / cluster
-- choices) and F.device_ok
function M.family(F)
  F.run = function(c, dev) return M.run_compiled(c, dev, F.compile(c)) end
  F.device_ok = M.device_ok
  return F
end

-- Compiles c for sm_90a with tma=1 (its v3 config, else the heuristic), checks the GEMM
-- kernel's `tma` attribute and PTX, runs it on dev (when given) and compares with g:eval.
-- Returns the GEMM kernel's perf config and tma attribute; raises on a failure.
function M.compile(c)
  local opts = { target = "sm_90a", cache = false,
                 pipeline = c.persist and (c.ws and M.pipeline_persist_ws or M.pipeline_persist)
                   or c.ws and M.pipeline_ws or c.nosw and M.pipeline_nosw or M.pipeline }
  if c.cluster then
    opts.pipeline = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                 "rock-gridwise-to-blockwise{tma=1,cluster=" .. c.cluster .. "},", 1)
  end
  if c.persist and c.nosw then
    opts.pipeline = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                 "rock-gridwise-to-blockwise{tma=1,tma-swizzle=none,persistent=1},", 1)
  end
  opts.pipeline = with_extra(opts.pipeline)
  if c.perf then opts.perf_config = c.perf end
  local p = kiln.compile(c.g, opts)
  local k
  for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
  if not k then error("no GEMM kernel", 0) end
  local ptx = p:disasm(k.name, "sm_90a")
  -- MN-major operands (c.mn) load through TMA too where a swizzle panel (16..64 elements:
  -- 32..128 bytes) divides the M / N tile, the warpgroup's part and the instruction (64 for
  -- A, N for B), the K tile fits a box (<= 256) and tma-swizzle is not none
  local want = c.want
  local MB, NB, KB, MPW, NPW = k.perf_config:match("^v3:(%d+),(%d+),(%d+),(%d+),(%d+)")
  if c.mn and not c.onestep and MB then
    MB, NB, KB, MPW, NPW = tonumber(MB), tonumber(NB), tonumber(KB), tonumber(MPW), tonumber(NPW)
    local n = NPW
    while n > 256 or NPW % n ~= 0 do n = n - 8 end
    -- (and the stored rows, M or N elements, a multiple of 16 bytes)
    local function ok(DB, wave, instr, row)
      return not c.nosw and KB <= 256 and DB % 16 == 0 and wave % 16 == 0 and instr % 16 == 0 and row % 8 == 0
    end
    local a = not c.mn.a or ok(MB, MPW, 64, c.M)
    local b = not c.mn.b or ok(NB, NPW, n, c.N)
    want = a and b and "A,B" or a and "A" or b and "B" or "none"
  end
  if want == "none" and k.tma:sub(1, 4) ~= "none" or want ~= "none" and k.tma ~= want then
    error(("%s: tma = %s, want %s"):format(k.perf_config, k.tma, want), 0)
  end
  if c.want_sw and k.tma_swizzle ~= c.want_sw then
    error(("%s: tma_swizzle = %d, want %d"):format(k.perf_config, k.tma_swizzle, c.want_sw), 0)
  end
  local has = ptx:find("cp.async.bulk.tensor", 1, true) ~= nil
  if has ~= (want ~= "none") then error(k.perf_config .. ": cp.async.bulk.tensor " .. (has and "present" or "absent"), 0) end
  if not ptx:find("wgmma.mma_async", 1, true) then error("no wgmma in " .. k.name, 0) end
  if c.persist then
    local on = want ~= "none"
    if (k.persistent == "on") ~= on or (k.grid_persistent == 1) ~= on or (ptx:find("%nctaid.x", 1, true) ~= nil) ~= on then
      error(("%s: persistent = %s, grid_persistent %d with tma %s"):format(k.perf_config, k.persistent,
                                                                          k.grid_persistent, k.tma), 0)
    end
  end
  if c.cluster then
    local ok = k.cluster:sub(1, 3) ~= "off" and (not c.want_cluster or k.cluster == c.want_cluster)
    if not ok or k.cluster_size < 2 or k.grid % k.cluster_size ~= 0 or not ptx:find(".multicast::cluster", 1, true)
       or not ptx:find(".reqnctapercluster " .. k.cluster_size .. ", 1, 1", 1, true)
       -- both operands through TMA: empty mbarriers with remote arrives, else the loop's cluster barrier
       or (k.tma == "A,B") ~= (ptx:find("mbarrier.arrive.shared::cluster", 1, true) ~= nil)
       or (c.cluster:find("ws=1", 1, true) ~= nil) ~= (k.ws == "on") then
      error(("%s: cluster = %s (want %s), cluster_size %d, grid %d"):format(k.perf_config, k.cluster,
                                                                       c.want_cluster or "a shape", k.cluster_size, k.grid), 0)
    end
  end
  if c.ws then
    local on = want == "A,B"
    if (k.ws == "on") ~= on or (ptx:find("setmaxnreg.dec", 1, true) ~= nil) ~= on then
      error(("%s: ws = %s with tma %s"):format(k.perf_config, k.ws, k.tma), 0)
    end
  end
  return p, k
end
function M.run(c, dev) return M.run_compiled(c, dev, M.compile(c)) end
-- M.run_compiled(c, dev, p, k): c's program p (GEMM kernel k) run on dev against g:eval
function M.run_compiled(c, dev, p, k)
  local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
  for i = 1, want.n do
    local good, report = gen.check(got[i], want[i], c.dtype)
    if not good then
      error(("%s tma=%s ws=%s persistent=%s cluster=%s: output %d: %s"):format(k.perf_config, k.tma, k.ws,
                                                                               k.persistent, k.cluster, i,
                                                                               report.summary), 0)
    end
  end
  return k.perf_config
end

-- Only a compute capability 9.0 device runs sm_90a code.
function M.device_ok(dev) return dev.kind == "cuda" and dev.cc == "9.0" end

return M
