-- examples_spec.lua — every script in examples/ runs to completion with build/kiln on the
-- host (each checks its own results against the reference evaluator and errors if not).
local bin = os.getenv("KILN_BIN") or "build/kiln"

describe("examples", function()
  for _, name in ipairs { "conv_add_relu", "gemm", "custom_pass", "ir_tour" } do
    it(name .. ".lua runs and checks its results", function()
      local cmd = string.format("KILN_DEVICE=host %s examples/%s.lua 2>&1", bin, name)
      local f = assert(io.popen(cmd))
      local out = f:read("a")
      local ok, _, code = f:close()
      assert(ok and code == 0, name .. " failed:\n" .. out)
    end)
  end
end)
