-- fused_spec.lua — >= 200 seeded random fused graphs compiled for the host and compared
local kiln = require "kiln"
-- with the reference evaluator (issue 5). KILN_FUSED_COUNT overrides the count.
local gen = require "fused_gen"

describe("random fused graphs on the host #compile", function()
  local count = tonumber(os.getenv("KILN_FUSED_COUNT") or "") or 210
  for seed = 1, count do
    local case = gen.gen(seed)
    it(case.name, function()
      local p = kiln.compile(case.g, { target = "host", cache = false })
      if case.kind == "conv" or case.kind == "dot" then
        assert.are.equal(1, #p:kernels(), "a GEMM with its epilogue must be one kernel")
      end
      local got = p:run(case.inputs)
      local want = case.g:eval(case.inputs)
      local ok, report = gen.check(got, want, case.dtype)
      assert(ok, case.name .. ": " .. tostring(report and report.summary or report))
    end)
  end
end)
