-- fused_spec.lua — >= 200 seeded random fused graphs compiled for the host and compared
local kiln = require "kiln"
-- with the reference evaluator. KILN_FUSED_COUNT overrides the count.
local gen = require "fused_gen"

describe("random fused graphs on the host #compile", function()
  local count = tonumber(os.getenv("KILN_FUSED_COUNT") or "") or 210
  for seed = 1, count do
    local case = gen.gen(seed)
    it(case.name, function()
      local p = kiln.compile(case.g, { target = "host", cache = false })
      if case.kernels then
        assert.are.equal(case.kernels, #p:kernels(), "a GEMM with its prologues, epilogues and outputs must be one kernel")
      end
      local got = table.pack(p:run(case.inputs))
      local want = table.pack(case.g:eval(case.inputs))
      assert.are.equal(want.n, got.n)
      for i = 1, want.n do
        local ok, report = gen.check(got[i], want[i], case.dtypes[i])
        assert(ok, case.name .. ": output " .. i .. ": " .. tostring(report and report.summary or report))
      end
    end)
  end
end)
