-- cp_async_cases.lua — GEMM and conv graphs for the multi-stage (cp.async) K-loop pipeline
-- of rock-gridwise-to-blockwise{cp-async=S}, shared by cp_async_spec.lua (host: the same
-- loop with plain copies) and scripts/gpu_suite.lua (NVIDIA: cp.async): odd sizes, K from
-- 16 to 4096, transposed operands, batch, conv with padding / stride / dilation, a fused
-- prologue (that operand keeps the register path) and a fused epilogue.
--   M.cases() -> { {name=, g=, inputs=, dtype=, host_perf=, async=}, ... }
--     host_perf: a host perf config with a small kPerBlock (several K steps);
--     prologue: the operand ("A") with an input-fusion prologue (never async)
--   M.pipeline(S) -> the default pipeline with rock-gridwise-to-blockwise{cp-async=S}
--   M.check(got, want, dtype) -> ok, report (fusion_cases.lua's tolerances)
local kiln = require "kiln"
local F = require "fusion_cases"
local M = { stages = { 1, 2, 3, 4 }, check = F.check }

function M.pipeline(S)
  local p, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
    "rock-gridwise-to-blockwise{cp-async=" .. S .. "},", 1)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  return p
end

local seed = 0
local function case(list, name, params, build, host_perf, prologue)
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
  list[#list + 1] = { name = name, g = g, inputs = inputs, dtype = out.dtype, host_perf = host_perf, prologue = prologue }
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

return M
