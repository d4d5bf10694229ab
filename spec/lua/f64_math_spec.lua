-- f64_math_spec.lua — f64 exp / log / tanh / sigmoid / erf / pow and an f64 softmax on the host
-- against g:eval (spec/lua/f64_math_cases.lua: the whole f64 range and the specials, within
-- a few ulp). The host runs the very code the GPUs run (passes/llvm_math.c, no libm), so
-- these numbers hold there too; the code objects for sm_80, sm_90, gfx942 and gfx1100 build
-- with no calls, no scratch / local memory (ptxas -v when the CUDA toolkit is present).
local kiln = require "kiln"
local helper = require "helper"
local C = require "f64_math_cases"

describe("f64 math on the host", function()
  for _, c in ipairs(C.cases(1500)) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      assert.are.equal(c.kernels, #p:kernels(), "kernels")
      local got, want = table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs))
      for i = 1, want.n do
        local ok, msg = C.check(got[i], want[i], c, i)
        assert(ok, ("output %d: %s"):format(i, msg))
      end
    end)
  end
end)

local ptxas = require "ptxas_tool"

describe("f64 math on GPU targets", function()
  local targets = { "sm_80", "sm_90", "gfx942", "gfx1100" }
  local pa = ptxas()
  it("exp, log, tanh, sigmoid, erf, pow and softmax compile with no calls and no scratch", function()
    local g = kiln.graph("f64_all")
    local x, y = g:param("x", { 5, 33 }, "f64"), g:param("y", { 5, 33 }, "f64")
    g:output(x:exp() + x:log() * x:tanh() + x ^ y + x:sigmoid() + x:erf(), (x * 2):softmax(-1))
    local p = kiln.compile(g, { targets = targets, cache = false })
    for _, t in ipairs(targets) do
      for _, k in ipairs(p:kernels(t)) do
        local code = p:disasm(k.name, t)
        if t:match("^gfx") then
          local co = p:code_object(k.name, t)
          assert.are.equal(0, co.scratch_bytes, t .. ": scratch")
          assert.is_falsy(code:find("s_swappc", 1, true), t .. ": a call")
        else
          assert.is_falsy(code:find("call", 1, true), t .. ": a call")
          assert.is_falsy(code:find(".local", 1, true), t .. ": local memory")
          assert.truthy(code:find("mul.rn.f64", 1, true), t .. ": f64 multiplies keep their rounding (no fusion)")
          if pa then
            local f = helper.write_temp(code, ".ptx")
            local o, e = helper.run(("%s -arch=%s -v %s -o /dev/null"):format(pa, t, f))
            local out = (o or "") .. (e or "")
            os.remove(f)
            assert.truthy(out:find("Used %d+ registers"), t .. ": ptxas -v: " .. out)
            assert.truthy(out:find(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", 1, true),
              t .. ": ptxas -v: " .. out)
          end
        end
      end
    end
    if not pa then pending("ptxas not found (CUDA toolkit absent): PTX not assembled") end
  end)
end)
