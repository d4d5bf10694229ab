-- fusion_spec.lua — one conv/dot with element-wise prologues, epilogues, fan-out, several
-- outputs and views compiles to the kernel count its case names (one, but for a producer
-- that is also an output) and matches g:eval on fresh random inputs, on the host.
local kiln = require "kiln"
local F = require "fusion_cases"

describe("fusion shapes on the host", function()
  for _, c in ipairs(F.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      assert.are.equal(c.kernels, #p:kernels(), c.name .. ": kernels")
      if c.check then c.check(p, assert) end
      local got, want = table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs))
      assert.are.equal(want.n, got.n)
      for i = 1, want.n do
        local ok, rep = F.check(got[i], want[i], c.dtypes[i])
        assert(ok, c.name .. ": output " .. i .. ": " .. tostring(rep and rep.summary))
      end
    end)
  end

  it("input fusion can be switched off: the producer is a kernel of its own", function()
    local g = kiln.graph("nofuse")
    local a, b = g:param("a", { 33, 17 }, "f32"), g:param("b", { 17, 9 }, "f16")
    g:output(g:dot(a:convert("f16"), b))
    local off = kiln.default_pipeline():gsub("graph%-partition,", "graph-partition{input-fusion=false},", 1)
    local p1 = kiln.compile(g, { target = "host", cache = false })
    local p2 = kiln.compile(g, { target = "host", cache = false, pipeline = off })
    assert.are.equal(1, #p1:kernels())
    assert.are.equal(2, #p2:kernels())
    local ins = { a = kiln.rand({ 33, 17 }, "f32"), b = kiln.rand({ 17, 9 }, "f16") }
    assert.is_true((F.check(p1:run(ins), g:eval(ins), "f16")))
    assert.is_true((F.check(p2:run(ins), g:eval(ins), "f16")))
  end)

  it("g:hint checks its options", function()
    local g = kiln.graph("hint")
    local x = g:param("x", { 2, 2 }, "f32")
    assert.has_error(function() g:hint(x, { primary = 1 }) end)
    assert.has_error(function() g:hint(x, { prim = true }) end)
    assert.are.equal(x, g:hint(x, { primary = true }))
  end)
end)
