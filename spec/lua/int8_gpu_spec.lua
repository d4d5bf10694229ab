-- int8_gpu_spec.lua — integer contractions on a GPU (tag gpu): i8 GEMMs and an i8 conv
-- (spec/lua/int8_cases.lua) compiled for the device's arch, one kernel each with the
-- integer matrix instruction, run there and compared exactly with g:eval. Without a CUDA
-- or HIP device every case is reported pending with the reason.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local cases = require "int8_cases"

describe("integer contractions on the GPU #gpu", function()
  local dev, why = helper.gpu_device()
  if not dev then
    pending("no CUDA or HIP device present: " .. why)
    return
  end
  for _, c in ipairs(cases.gpu_cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = dev.arch, cache = false })
      assert.are.equal(1, #p:kernels(), "kernels")
      assert.is_truthy(p:kernels()[1].perf_config:find("^v2:"), "the matrix-instruction path")
      local want = c.g:eval(c.inputs)
      assert.are.equal(c.dtype, want.dtype)
      local ok, msg = cases.exact(p:run(c.inputs, { device = dev }), want)
      assert(ok, c.name .. " on " .. dev.arch .. ": " .. tostring(msg))
    end)
  end
end)
