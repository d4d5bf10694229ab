-- vector_access_spec.lua — element-wise kernels on the host with their global accesses as
-- wide as the views allow (spec/lua/vector_access_cases.lua): every case against g:eval on
-- fresh random inputs, and the widths p:kernels() reports per argument (derived from the
-- lowered IR) — 16 bytes where a view is contiguous, less where it forbids it.
local kiln = require "kiln"
local C = require "vector_access_cases"

describe("element-wise kernels read and write as wide as their views allow (host)", function()
  local cases = C.cases()
  for _, c in ipairs(C.reductions()) do
    c.title = "reduction " .. c.name .. ": vector loads and stores, against g:eval"
    cases[#cases + 1] = c
  end
  for _, c in ipairs(cases) do
    it(c.title or c.name, function()
      local p = kiln.compile(c.g, { cache = false })
      local err = C.check_widths(p, c, "host")
      assert.is_nil(err, err)
      local good, rep = C.check(p:run(c.inputs), c.g:eval(c.inputs), c.dtype)
      assert.is_true(good, rep and rep.summary)
    end)
  end

  it("reports every access of a kernel: loads of the inputs and the store of the output, with counts", function()
    local g = kiln.graph("acc")
    local x, y = g:param("x", { 64, 256 }, "f32"), g:param("y", { 256, 64 }, "f32")
    g:output(x + y:transpose { 1, 0 })
    local k = kiln.compile(g, { cache = false }):kernels()[1]
    local got = {}
    for _, a in ipairs(k.accesses) do
      assert.is_true(a.count >= 1)
      got[#got + 1] = a.kind .. " " .. a.bytes
    end
    table.sort(got)
    -- the contiguous input and the output at 16 bytes, the transposed input at 4
    assert.are.same({ "load 16", "load 4", "store 16" }, got)
    assert.are_not.equal(k.accesses[1].arg, k.accesses[2].arg)
  end)

  -- reductions that keep the innermost dim: vectors of consecutive output points

  it("reports the vectorized loads of GEMM operands and reductions too", function()
    local g = kiln.graph("gemm")
    g:output(g:param("a", { 128, 64 }, "f16"):dot(g:param("b", { 64, 256 }, "f16")))
    local r = kiln.graph("rows")
    r:output(r:param("x", { 64, 8192 }, "f32"):sum { 1 })
    for _, t in ipairs { "gfx942", "sm_90" } do
      for _, gg in ipairs { g, r } do
        local k = kiln.compile(gg, { targets = { t }, cache = false }):kernels(t)[1]
        for _, a in ipairs(k.accesses) do
          if a.kind == "load" then assert.are.equal(16, a.bytes, t .. " " .. k.kind .. " " .. a.arg) end
        end
      end
    end
  end)
end)
