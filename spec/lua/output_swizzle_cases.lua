-- output_swizzle_cases.lua — graphs whose GEMM output goes through rock-output-swizzle,
-- shared by output_swizzle_spec.lua (host), output_swizzle_gpu_spec.lua (tag gpu) and
-- scripts/gpu_suite.lua: dot and conv, f32 / f16 / bf16, aligned and odd sizes, outputs
-- row-major, transposed, NHWC and NCHW, residuals in the output's layout and in the
-- other one, fan-out to two outputs. Each case runs with the pass forced on, forced off
-- and under the guard (M.pipeline(mode)); `agrees` says whether every fused access is
-- contiguous along the output's fast dim (the guard's expectation on GPU targets).
--   M.cases() -> { {name=, g=, inputs=, dtype=, agrees=bool|nil}, ... }
--   M.modes, M.pipeline(mode) -> the default pipeline with rock-output-swizzle{force=mode}
--   M.check(got, want, dtype) -> ok, report (fusion_cases.lua's tolerances)
local kiln = require "kiln"
local F = require "fusion_cases"
local M = { modes = { "on", "off", "auto" }, check = F.check }

function M.pipeline(mode)
  local p = kiln.default_pipeline():gsub("rock%-output%-swizzle,", "rock-output-swizzle{force=" .. mode .. "},", 1)
  return p
end

local seed = 0
local function case(list, name, params, build, agrees)
  local g = kiln.graph((name:gsub("[^%w]", "_")))
  local p, inputs, dt = {}, {}, nil
  for _, d in ipairs(params) do
    seed = seed + 1
    p[d[1]] = g:param(d[1], d[2], d[3])
    inputs[d[1]] = kiln.rand(d[2], d[3], { seed = 9100 + seed })
    dt = dt or d[3]
  end
  local outs = { build(g, p) }
  g:output(table.unpack(outs))
  list[#list + 1] = { name = name, g = g, inputs = inputs, dtype = outs[1].dtype, agrees = agrees, nout = #outs }
end

function M.cases()
  local L = {}
  for _, dt in ipairs { "f32", "f16", "bf16" } do
    for _, sz in ipairs { { 128, 96, 40 }, { 37, 29, 45 } } do
      local m, n, k = sz[1], sz[2], sz[3]
      local tag = ("%s %dx%dx%d"):format(dt, m, n, k)
      local AB = { { "a", { m, k }, dt }, { "b", { k, n }, dt } }
      local function with(extra)
        local t = { AB[1], AB[2] }
        for _, e in ipairs(extra) do t[#t + 1] = e end
        return t
      end
      case(L, tag .. " dot, row-major output", AB, function(g, p) return g:dot(p.a, p.b) end, true)
      case(L, tag .. " dot + r (row-major, agrees), relu", with { { "r", { m, n }, dt } },
        function(g, p) return (g:dot(p.a, p.b) + p.r):relu() end, true)
      case(L, tag .. " dot + r^T (disagrees), relu", with { { "r", { n, m }, dt } },
        function(g, p) return (g:dot(p.a, p.b) + p.r:transpose { 1, 0 }):relu() end, false)
      case(L, tag .. " transposed output", AB, function(g, p) return g:dot(p.a, p.b):transpose { 1, 0 } end, true)
      case(L, tag .. " (dot + r^T)^T: transposed output, residual agrees", with { { "r", { n, m }, dt } },
        function(g, p) return (g:dot(p.a, p.b) + p.r:transpose { 1, 0 }):transpose { 1, 0 } end, true)
      case(L, tag .. " fan-out {relu(c + bias[N]), c * 2}", with { { "bias", { 1, n }, dt } },
        function(g, p)
          local c = g:dot(p.a, p.b)
          return (c + p.bias):relu(), c * 2
        end)
    end
    -- conv: NCHW output (M = output channels is the slow dim) and NHWC (channels fastest)
    local x, w, r = { 2, 16, 7, 7 }, { 32, 16, 1, 1 }, { 2, 32, 7, 7 }
    case(L, dt .. " NCHW 1x1 conv + r, relu", { { "x", x, dt }, { "w", w, dt }, { "r", r, dt } },
      function(g, p) return (g:conv(p.x, p.w) + p.r):relu() end, true)
    case(L, dt .. " NHWC 1x1 conv + r (NHWC), relu", { { "x", { 2, 7, 7, 16 }, dt }, { "w", w, dt }, { "r", { 2, 7, 7, 32 }, dt } },
      function(g, p)
        local c = g:conv(p.x:transpose { 0, 3, 1, 2 }, p.w)
        return (c:transpose { 0, 2, 3, 1 } + p.r):relu()
      end, true)
    case(L, dt .. " NHWC 1x1 conv + r (NCHW: disagrees), relu", { { "x", { 2, 7, 7, 16 }, dt }, { "w", w, dt }, { "r", r, dt } },
      function(g, p)
        local c = g:conv(p.x:transpose { 0, 3, 1, 2 }, p.w)
        return ((c + p.r):relu()):transpose { 0, 2, 3, 1 }
      end, false)
    case(L, dt .. " NHWC 3x3 conv (padded) + r, relu, odd channels", { { "x", { 1, 6, 5, 7 }, dt }, { "w", { 9, 7, 3, 3 }, dt }, { "r", { 1, 6, 5, 9 }, dt } },
      function(g, p)
        local c = g:conv(p.x:transpose { 0, 3, 1, 2 }, p.w, { padding = { 1, 1, 1, 1 } })
        return (c:transpose { 0, 2, 3, 1 } + p.r):relu()
      end, true)
  end
  return L
end

-- Compiles c with the swizzle in `mode` for target (and device, when given), runs it on
-- the device (host when nil) and compares every output with g:eval. Returns the
-- program; raises with the case name on a mismatch.
function M.run(c, mode, target, dev)
  local p = kiln.compile(c.g, { target = target, cache = false, pipeline = M.pipeline(mode) })
  local got = table.pack(p:run(c.inputs, dev and { device = dev } or nil))
  local want = table.pack(c.g:eval(c.inputs))
  if got.n ~= want.n then error(("%s (%s): %d outputs, want %d"):format(c.name, mode, got.n, want.n), 0) end
  for i = 1, want.n do
    local ok, rep = M.check(got[i], want[i], want[i].dtype)
    if not ok then error(("%s (force=%s): output %d: %s"):format(c.name, mode, i, tostring(rep and rep.summary)), 0) end
  end
  return p
end

return M
