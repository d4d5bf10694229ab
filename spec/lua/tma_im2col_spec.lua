-- TMA im2col mode for the activation operand of NHWC convs (passes/rock_tma_im2col.h): every
-- case of spec/lua/tma_im2col_cases.lua compiles for sm_90a with tma-im2col=1 into a kernel
-- whose `tma` names B(im2col) and whose PTX holds cp.async.bulk.tensor.4d ... .im2col; where
-- the toolkit is on the machine, ptxas -arch=sm_90a reports 0 spill bytes and no stack
-- frame. The option's default (off) keeps the register path. Numerics: spec/c/test_accel.c
-- (test_tma_im2col: the interpreter's im2col walk against g:eval) and the gpu_suite section
-- tma_im2col.
local kiln = require "kiln"
local T = require "tma_im2col_cases"
local G = require "gemm_graphs"

describe("TMA im2col mode (sm_90a)", function()
  for _, c in ipairs(T.cases()) do
    it(c.name .. " " .. (c.perf or "heuristic"), function()
      local _, k, ptx = T.compile(c)
      local bad, log = G.ptxas_unclean("sm_90a", ptx, true)
      assert.are.same({}, bad or {}, k.name .. " " .. k.perf_config .. ": " .. tostring(log))
    end)
  end
  it("is off by default: the activation stays on registers", function()
    local c = T.cases()[1]
    local p = kiln.compile(c.g, { target = "sm_90a", cache = false, perf_config = c.perf })
    for _, k in ipairs(p:kernels()) do
      if k.kind == "gemm" then assert.are.equal("A", k.tma) end
    end
  end)
end)
