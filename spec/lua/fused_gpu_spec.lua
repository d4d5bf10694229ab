-- fused_gpu_spec.lua — the random fused-graph suite on a CUDA GPU (tag gpu). Without a
local kiln = require "kiln"
-- CUDA device every case is reported pending with the reason.
local gen = require "fused_gen"

describe("random fused graphs on the GPU #gpu", function()
  local ok, dev = pcall(kiln.device, "cuda")
  local count = tonumber(os.getenv("KILN_FUSED_COUNT") or "") or 210
  if not ok then
    pending("no CUDA device present: " .. tostring(dev):gsub("\n.*", ""))
    return
  end
  for seed = 1, count do
    local case = gen.gen(seed)
    it(case.name, function()
      local p = kiln.compile(case.g, { target = dev.arch, cache = false })
      if case.kernels then
        assert.are.equal(case.kernels, #p:kernels(), "a GEMM with its prologues, epilogues and outputs must be one kernel")
      end
      local got = table.pack(p:run(case.inputs, { device = dev }))
      local want = table.pack(case.g:eval(case.inputs))
      assert.are.equal(want.n, got.n)
      for i = 1, want.n do
        local good, report = gen.check(got[i], want[i], case.dtypes[i])
        assert(good, case.name .. ": output " .. i .. ": " .. tostring(report and report.summary or report))
      end
    end)
  end
end)
