-- elementwise_pairs_gpu_spec.lua — the element-wise op pair sweep on a GPU (tag gpu): every
-- pair of spec/lua/elementwise_pairs_cases.lua in f32, f16 and bf16, packed 16 to a kernel,
-- compiled for the device's arch, run there and compared with g:eval under the same rule as
-- on the host (bit for bit for a pair of exact ops). Without a CUDA or HIP device every case
-- is reported pending with the reason.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local cases = require "elementwise_pairs_cases"

describe("element-wise op pairs on the GPU #gpu", function()
  local dev, why = helper.gpu_device()
  if not dev then
    pending("no CUDA or HIP device present: " .. why)
    return
  end
  for _, dt in ipairs(cases.DTYPES) do
    it(dt .. ": " .. #cases.PAIRS .. " pairs on " .. dev.arch, function()
      local r = cases.sweep(dt, dev.arch, dev)
      assert.are.equal(r.want_kernels, r.kernels, "kernels")
      assert(#r.bad == 0, #r.bad .. " pairs differ from the reference on " .. dev.arch .. ":\n" .. table.concat(r.bad, "\n"))
    end)
  end
end)
