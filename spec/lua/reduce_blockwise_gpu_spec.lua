-- reduce_blockwise_gpu_spec.lua — the cases of reduce_blockwise_spec.lua (blockwise
-- reductions and softmax: rows of 1 .. 70000, columns, every axis set, f32/f16/bf16,
-- sum/mean/max/min, softmax over both axes) on a CUDA GPU against g:eval (tag gpu).
-- Without a CUDA device every case is reported pending with the reason.
local kiln = require "kiln"
local cases = require "reduce_blockwise_cases"

describe("blockwise reductions and softmax on the GPU #gpu", function()
  local ok, dev = pcall(kiln.device, "cuda")
  if not ok then
    pending("no CUDA device present: " .. tostring(dev):gsub("\n.*", ""))
    return
  end
  for _, c in ipairs(cases.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = dev.arch, cache = false })
      local good, msg = cases.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)),
                                    c.dtype, c.k)
      assert(good, c.name .. ": " .. tostring(msg))
    end)
  end
end)
