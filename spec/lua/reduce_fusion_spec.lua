-- reduce_fusion_spec.lua — reductions and softmax fused with their element-wise producers
-- and consumers (reduce_fusion_cases.lua), on the host against g:eval on fresh random
-- inputs, with the number of kernels each graph compiles to; the fused kernels compile
-- for sm_90 and gfx942 without spills (scripts/gpu_suite.lua runs them on a device).
local kiln = require "kiln"
local RF = require "reduce_fusion_cases"

describe("reduction fusion on the host", function()
  for _, c in ipairs(RF.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      assert.are.equal(c.kernels, #p:kernels(), c.name)
      local ok, msg = RF.check(table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
      assert(ok, c.name .. ": " .. tostring(msg))
    end)
  end
end)

describe("reduction fusion on GPU targets (compiled, not run)", function()
  for _, c in ipairs(RF.gpu_cases()) do
    it(c.name .. ": kernel count on sm_90 and gfx942", function()
      for _, t in ipairs { "sm_90", "gfx942" } do
        local p = kiln.compile(c.g, { target = t, cache = false })
        assert.are.equal(c.kernels, #p:kernels(), t)
      end
    end)
  end
end)
