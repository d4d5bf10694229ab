-- fusion_gpu_spec.lua — the fusion shapes of fusion_cases.lua on a CUDA GPU (tag gpu):
-- the same kernel counts and g:eval on fresh random inputs. Without a CUDA device every
-- case is reported pending with the reason.
local kiln = require "kiln"
local F = require "fusion_cases"

describe("fusion shapes on the GPU #gpu", function()
  local ok, dev = pcall(kiln.device, "cuda")
  if not ok then
    pending("no CUDA device present: " .. tostring(dev):gsub("\n.*", ""))
    return
  end
  for _, c in ipairs(F.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = dev.arch, cache = false })
      assert.are.equal(c.kernels, #p:kernels(), c.name .. ": kernels")
      if c.check then c.check(p, assert) end
      local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
      for i = 1, want.n do
        local good, rep = F.check(got[i], want[i], c.dtypes[i])
        assert(good, c.name .. ": output " .. i .. ": " .. tostring(rep and rep.summary))
      end
    end)
  end
end)
