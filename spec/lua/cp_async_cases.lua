-- cp_async_cases.lua — GEMM and conv graphs for the multi-stage (cp.async) K-loop pipeline
-- of rock-gridwise-to-blockwise{cp-async=S}, shared by cp_async_spec.lua (host: the same
-- loop with plain copies) and scripts/gpu_suite.lua (NVIDIA: cp.async): odd sizes, K from
-- 16 to 4096, transposed operands, batch, conv with padding / stride / dilation, a fused
-- prologue (that operand keeps the register path) and a fused epilogue.
--   M.cases() -> { {name=, g=, inputs=, dtype=, host_perf=, async=}, ... }
--     host_perf: a host perf config with a small kPerBlock (several K steps);
--     prologue: the operand ("A") with an input-fusion prologue (never async)
--   M.gpu_cases() -> the same fields plus piped / piped_xor, mn (larger shapes, see there) and
--     gpu_perf (a GPU perf config, or nil for the heuristic's)
--   M.pipeline(S[, layout]) -> the default pipeline with rock-gridwise-to-blockwise{cp-async=S}
--     (and cp-async-layout=layout when given: "xor", "krow" or "kgroup"; default xor) and
--     graph-partition{input-fusion-cost=false} (the prologue cases keep their fused prologue
--     on every target: sm_90's input-fusion cost rule would make a large convert a kernel of
--     its own, passes/input_fusion_cost.h)
--   M.variants: { {S, layout}, ... } the GPU suite runs: S = 1..4 (the default layout, xor), krow at
--     S = 2, 3, kgroup at S = 3 and -1 (auto, the default pipeline's choice)
--   M.check(got, want, dtype) -> ok, report (fusion_cases.lua's tolerances)
--   M.run_check(p, c) -> ok, report: p (compiled from case c's graph) run on c.inputs and
--     checked against c.g:eval (evaluated once per case, kept as c.want)
local kiln = require "kiln"
local F = require "fusion_cases"
local M = { stages = { 1, 2, 3, 4 }, check = F.check,
            variants = { { 1 }, { 2 }, { 3 }, { 4 }, { 2, "krow" }, { 3, "krow" }, { 3, "kgroup" }, { -1 } } }

function M.pipeline(S, layout)
  local opt = "cp-async=" .. S .. (layout and (",cp-async-layout=" .. layout) or "")
  local p, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
    "rock-gridwise-to-blockwise{" .. opt .. "},", 1)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  p, n = p:gsub("graph%-partition,", "graph-partition{input-fusion-cost=false},", 1)
  assert(n == 1, "the default pipeline has no plain graph-partition")
  return p
end

function M.run_check(p, c)
  local got = p:run(c.inputs)
  c.want = c.want or c.g:eval(c.inputs)
  return M.check(got[1] or got, c.want[1] or c.want, c.dtype)
end

local seed = 0
local function case(list, name, params, build, host_perf, prologue, gpu_perf)
  local g = kiln.graph((name:gsub("[^%w]", "_")))
  local p, inputs = {}, {}
  for _, d in ipairs(params) do
    seed = seed + 1
    p[d[1]] = g:param(d[1], d[2], d[3], d[4])
    inputs[d[1]] = kiln.rand(d[2], d[3], { seed = 7300 + seed })
    if d[4] then inputs[d[1]] = inputs[d[1]]:as_layout(d[4].layout) end
  end
  local out = build(g, p)
  g:output(out)
  list[#list + 1] = { name = name, g = g, inputs = inputs, dtype = out.dtype, host_perf = host_perf, prologue = prologue,
                      gpu_perf = gpu_perf }
end

function M.cases()
  local L = {}
  for _, dt in ipairs { "f16", "bf16", "f32" } do
    local other = dt == "f32" and "f16" or "f32"
    for _, sz in ipairs { { 64, 64, 16 }, { 128, 96, 256 }, { 37, 29, 45 }, { 64, 40, 4096 } } do
      local m, n, k = sz[1], sz[2], sz[3]
      local tag = ("%s %dx%dx%d"):format(dt, m, n, k)
      local kb = k >= 1024 and 128 or 8
      local perf = ("v1:32,32,%d,32,32,1"):format(kb)
      case(L, tag .. " dot", { { "a", { m, k }, dt }, { "b", { k, n }, dt } },
        function(g, p) return g:dot(p.a, p.b) end, perf)
      case(L, tag .. " A^T B^T", { { "a", { k, m }, dt }, { "b", { n, k }, dt } },
        function(g, p) return g:dot(p.a:transpose { 1, 0 }, p.b:transpose { 1, 0 }) end, perf)
      case(L, tag .. " batch 3, + bias, relu", { { "a", { 3, m, k }, dt }, { "b", { 3, k, n }, dt }, { "bias", { 1, 1, n }, dt } },
        function(g, p) return (g:dot(p.a, p.b) + p.bias):relu() end, perf)
      case(L, tag .. " dot(convert(a), b): the prologue operand keeps registers",
        { { "a", { m, k }, other }, { "b", { k, n }, dt } },
        function(g, p) return g:dot(p.a:convert(dt), p.b) end, perf, "A")
    end
    case(L, dt .. " conv NHWC 3x3 pad 1 stride 2 dilation 2, + r, relu",
      { { "x", { 2, 16, 11, 13 }, dt, { layout = "NHWC" } }, { "w", { 24, 16, 3, 3 }, dt, { layout = "KYXC" } },
        { "r", { 2, 24, 5, 6 }, dt, { layout = "NHWC" } } },
      function(g, p) return (g:conv(p.x, p.w, { padding = { 1, 1, 1, 1 }, stride = { 2, 2 }, dilation = { 2, 2 } }) + p.r):relu() end,
      "v1:32,32,8,32,32,1")
    case(L, dt .. " conv NCHW 3x3 pad 1 (odd channels)",
      { { "x", { 2, 5, 7, 9 }, dt }, { "w", { 6, 5, 3, 3 }, dt } },
      function(g, p) return g:conv(p.x, p.w, { padding = { 1, 1, 1, 1 } }) end, "v1:32,32,8,32,32,1")
    case(L, dt .. " conv NHWC 1x1 64 -> 32",
      { { "x", { 4, 64, 5, 5 }, dt, { layout = "NHWC" } }, { "w", { 32, 64, 1, 1 }, dt, { layout = "KYXC" } } },
      function(g, p) return g:conv(p.x, p.w) end, "v1:32,32,8,32,32,1")
  end
  return L
end

-- Larger shapes for the GPU (the heuristic's tiles: several K steps, so the pipeline runs):
-- f16 / bf16 GEMMs (row-major, A^T, B^T, batch 2 with bias + relu), K 1024 and 4096, an odd
-- M / N, and NHWC convs (1x1, 3x3 pad 1, 3x3 stride 2) with add + relu. piped = true: with
-- cp-async=S on an sm_80+ device the kernel must pipeline (pipeline_stages >= 2; checked
-- statically for sm_80 / sm_90 by cp_async_spec).
function M.gpu_cases()
  local L = {}
  for _, dt in ipairs { "f16", "bf16" } do
    for _, sz in ipairs { { 512, 384, 1024 }, { 256, 256, 4096 }, { 333, 200, 1024 } } do
      local m, n, k = sz[1], sz[2], sz[3]
      local tag = ("%s %dx%dx%d"):format(dt, m, n, k)
      case(L, tag .. " dot", { { "a", { m, k }, dt }, { "b", { k, n }, dt } },
        function(g, p) return g:dot(p.a, p.b) end)
      case(L, tag .. " A^T", { { "a", { k, m }, dt }, { "b", { k, n }, dt } },
        function(g, p) return g:dot(p.a:transpose { 1, 0 }, p.b) end)
      case(L, tag .. " B^T", { { "a", { m, k }, dt }, { "b", { n, k }, dt } },
        function(g, p) return g:dot(p.a, p.b:transpose { 1, 0 }) end)
      case(L, tag .. " batch 2 + bias, relu", { { "a", { 2, m, k }, dt }, { "b", { 2, k, n }, dt }, { "bias", { 1, 1, n }, dt } },
        function(g, p) return (g:dot(p.a, p.b) + p.bias):relu() end)
      case(L, tag .. " dot(convert(a), b)", { { "a", { m, k }, "f32" }, { "b", { k, n }, dt } },
        function(g, p) return g:dot(p.a:convert(dt), p.b) end, nil, "A")
    end
    for _, cv in ipairs { { 8, 256, 14, 14, 128, 1, 1, 0 }, { 4, 64, 28, 28, 64, 3, 1, 1 }, { 4, 128, 28, 28, 128, 3, 2, 1 } } do
      local nb, c, h, w, kc, r, st, pd = table.unpack(cv)
      local oh, ow = (h + 2 * pd - r) // st + 1, (w + 2 * pd - r) // st + 1
      case(L, ("%s conv NHWC %dx%dx%dx%d -> %d %dx%d stride %d pad %d + r, relu"):format(dt, nb, c, h, w, kc, r, r, st, pd),
        { { "x", { nb, c, h, w }, dt, { layout = "NHWC" } }, { "w", { kc, c, r, r }, dt, { layout = "KYXC" } },
          { "r", { nb, kc, oh, ow }, dt, { layout = "NHWC" } } },
        function(g, p) return (g:conv(p.x, p.w, { padding = { pd, pd, pd, pd }, stride = { st, st } }) + p.r):relu() end)
    end
  end
  -- the tiles of bench/gpu_kiln.lua's 4096^3 f16 GEMM (128x128x32, 4 warps; K 4096: 128 K
  -- steps, so S = 3 runs 42 unrolled loop iterations and a tail of 2 steps) with B stored
  -- [N, K] (both operands async): S = 3 / 4 take 56000 / 74688 bytes of dynamic shared
  -- memory (kiln.cpa3.bt faulted with ILLEGAL_ADDRESS on an H200: the prepared run
  -- launched it without them); and with B stored [K, N] (B through registers: S capped at 2)
  for _, dt in ipairs { "f16", "bf16" } do
    local m, n, k = 256, 128, 4096
    case(L, ("%s %dx%dx%d B^T, bench tiles 128x128x32"):format(dt, m, n, k), { { "a", { m, k }, dt }, { "b", { n, k }, dt } },
      function(g, p) return g:dot(p.a, p.b:transpose { 1, 0 }) end, nil, nil, "v2:128,128,32,64,64,8")
    case(L, ("%s %dx%dx%d, bench tiles 128x128x32"):format(dt, m, n, k), { { "a", { m, k }, dt }, { "b", { k, n }, dt } },
      function(g, p) return g:dot(p.a, p.b) end, nil, nil, "v2:128,128,32,64,64,8")
    -- the larger tiles of the async path (bench/gpu_kiln.lua's CPA_VARIANTS): 128x256x32 (8
    -- warps) and 256x128x32 over odd sizes (padded tiles: the copies' zero fill), B stored
    -- [N, K] (both operands async), batch, a fused epilogue; and A stored [K, M] (A through
    -- registers, B async)
    case(L, ("%s 2x300x520x1000 B^T + bias, relu, tiles 128x256x32"):format(dt),
      { { "a", { 2, 300, 1000 }, dt }, { "b", { 2, 520, 1000 }, dt }, { "bias", { 1, 1, 520 }, dt } },
      function(g, p) return (g:dot(p.a, p.b:transpose { 0, 2, 1 }) + p.bias):relu() end, nil, nil,
      "v2:128,256,32,64,64,8")
    case(L, ("%s 520x300x1000 B^T, tiles 256x128x32"):format(dt), { { "a", { 520, 1000 }, dt }, { "b", { 300, 1000 }, dt } },
      function(g, p) return g:dot(p.a, p.b:transpose { 1, 0 }) end, nil, nil, "v2:256,128,32,64,64,8")
    case(L, ("%s 384x512x768 A^T B^T, tiles 128x256x32"):format(dt), { { "a", { 768, 384 }, dt }, { "b", { 512, 768 }, dt } },
      function(g, p) return g:dot(p.a:transpose { 1, 0 }, p.b:transpose { 1, 0 }) end, nil, nil, "v2:128,256,32,64,64,8")
  end
  -- M / N-contiguous operands (B stored [K, N], A stored [K, M]) in the M / N-major xor stages
  -- (ldmatrix.trans), K tiles of 32 (the xor layout): odd sizes (padded tiles), batch with a
  -- fused bias + relu, both operands M / N-major, long K, the async heuristic's 256x128x32 and
  -- 128x256x32; and K = 16 (one K step: no pipeline). mn = true: the GPU suite also runs them
  -- for sm_80 (its PTX on the device).
  local mn = {}
  for _, dt in ipairs { "f16", "bf16" } do
    case(L, ("%s 1000x600x2000 B [K, N], tiles 128x128x32"):format(dt), { { "a", { 1000, 2000 }, dt }, { "b", { 2000, 600 }, dt } },
      function(g, p) return g:dot(p.a, p.b) end, nil, nil, "v2:128,128,32,64,64,8")
    mn[#L] = "piped"
    case(L, ("%s 2x264x392x1024 A [K, M] B [K, N] + bias, relu, tiles 256x128x32"):format(dt),
      { { "a", { 2, 1024, 264 }, dt }, { "b", { 2, 1024, 392 }, dt }, { "bias", { 1, 1, 392 }, dt } },
      function(g, p) return (g:dot(p.a:transpose { 0, 2, 1 }, p.b) + p.bias):relu() end, nil, nil, "v2:256,128,32,64,64,8")
    mn[#L] = "xor"
    case(L, ("%s 384x256x4096 A [K, M], tiles 128x256x32"):format(dt), { { "a", { 4096, 384 }, dt }, { "b", { 256, 4096 }, dt } },
      function(g, p) return g:dot(p.a:transpose { 1, 0 }, p.b:transpose { 1, 0 }) end, nil, nil, "v2:128,256,32,64,64,8")
    mn[#L] = "piped"
    case(L, ("%s 520x264x16 B [K, N] (one K step)"):format(dt), { { "a", { 520, 16 }, dt }, { "b", { 16, 264 }, dt } },
      function(g, p) return g:dot(p.a, p.b) end)
    mn[#L] = "once"
  end
  -- piped: with cp-async=S >= 2 an sm_80+ device pipelines the kernel whatever the layout (an
  -- operand is K-major, or the case's tiles take the xor stages); piped_xor: only in the xor
  -- layout (cp-async-layout xor or auto with K tiles of 32: every operand M / N-major, or a
  -- prologue on the other). Not asserted: a prologue on A with an N-major B and A^T with an
  -- N-major B at the heuristic's tiles (K 64 tiles take kgroup stages under auto, where an
  -- M / N-major operand stays on the register path).
  for i, c in ipairs(L) do
    c.mn = mn[i] ~= nil or nil
    if mn[i] then
      c.piped, c.piped_xor = mn[i] == "piped" or nil, mn[i] == "xor" or nil
    else
      c.piped = not (c.name:find("convert", 1, true) or c.name:find("A^T", 1, true)) or nil
    end
  end
  return L
end

return M
