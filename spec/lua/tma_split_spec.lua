-- TMA for split-K operands (passes/rock_tma.h: K in runs, rank-4 tensor maps; split dots'
-- slices as plain boxes) and the sm_90a wgmma heuristic's sub-wave tiles
-- (passes/rock_wgmma.h): every case of spec/lua/tma_split_cases.lua compiles for sm_90a with
-- the operands it names through TMA (4-D loads for channel-sliced filters) and, where the
-- toolkit is on the machine, ptxas -arch=sm_90a reports 0 spill bytes. Numerics:
-- spec/c/test_accel.c (test_tma_split: the interpreter against g:eval) and the gpu_suite
-- section tma_split.
local kiln = require "kiln"
local T = require "tma_split_cases"
local G = require "gemm_graphs"

describe("TMA for split-K operands (sm_90a)", function()
  for _, c in ipairs(T.cases()) do
    it(c.name .. " " .. (c.perf or "heuristic"), function()
      local _, k, ptx = T.compile(c)
      local bad, log = G.ptxas_unclean("sm_90a", ptx)
      assert.are.same({}, bad or {}, k.name .. " " .. k.perf_config .. ": " .. tostring(log))
    end)
  end
  it("the ResNet-50 3x3 layers at batch 64 take the sub-wave model's tiles, unsplit, the filter through TMA", function()
    for _, s in ipairs { { 512, 7, "v3:128,96,64,64,96,8" }, { 256, 14, "v3:128,192,64,64,192,8" } } do
      local g = kiln.graph("r50")
      local x = g:param("x", { 64, s[1], s[2], s[2] }, "f16", { layout = "NHWC" })
      local w = g:param("w", { s[1], s[1], 3, 3 }, "f16", { layout = "KYXC" })
      local r = g:param("r", { 64, s[1], s[2], s[2] }, "f16", { layout = "NHWC" })
      g:output(((g:conv(x, w, { padding = 1 }) + r):relu()):transpose { 0, 2, 3, 1 })
      local p = kiln.compile(g, { target = "sm_90a", cache = false })
      assert.are.equal(1, #p:kernels())
      local k = p:kernels()[1]
      assert.are.equal(s[3], k.perf_config)
      assert.are.equal(132, k.grid)
      assert.are.equal("A", k.tma)
    end
  end)
end)
