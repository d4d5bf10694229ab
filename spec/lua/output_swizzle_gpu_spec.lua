-- output_swizzle_gpu_spec.lua — output_swizzle_cases.lua and the fusion shapes of
-- fusion_cases.lua on a CUDA GPU (tag gpu) with rock-output-swizzle forced on, forced off
-- and under the guard, against g:eval on fresh random inputs. Without a CUDA device
-- every case is reported pending with the reason.
local kiln = require "kiln"
local S = require "output_swizzle_cases"
local F = require "fusion_cases"

describe("rock-output-swizzle on the GPU #gpu", function()
  local ok, dev = pcall(kiln.device, "cuda")
  if not ok then
    pending("no CUDA device present: " .. tostring(dev):gsub("\n.*", ""))
    return
  end
  for _, c in ipairs(S.cases()) do
    for _, mode in ipairs(S.modes) do
      it(c.name .. " force=" .. mode, function() S.run(c, mode, dev.arch, dev) end)
    end
  end
  for _, c in ipairs(F.cases()) do
    for _, mode in ipairs { "on", "off" } do
      it("fusion shape " .. c.name .. " force=" .. mode, function()
        local p = kiln.compile(c.g, { target = dev.arch, cache = false, pipeline = S.pipeline(mode) })
        assert.are.equal(c.kernels, #p:kernels())
        local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
        for i = 1, want.n do
          local good, rep = F.check(got[i], want[i], c.dtypes[i])
          assert(good, c.name .. ": output " .. i .. ": " .. tostring(rep and rep.summary))
        end
      end)
    end
  end
end)
