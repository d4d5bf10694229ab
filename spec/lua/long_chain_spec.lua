-- long_chain_spec.lua — a fused chain of 20,000 element-wise ops (one kernel) compiles and
-- matches the reference bit for bit: graph-to-rock builds the scalar body with its own stack
-- (it recursed once per fused op and overflowed an 8 MB stack near 18,000 ops) and finds
-- memoized scalars by hash. The chain mixes unary ops, a full-shape and a broadcast operand
-- and views (reshape), all exact in f32 (one rounding per op, as the reference: strict_fp,
-- so no multiply and add are contracted into an FMA). (Most ops
-- are one LLVM instruction: LLVM's own time grows faster than linearly on one huge block.)
local kiln = require "kiln"

describe("a long fused element-wise chain", function()
  it("20,000 ops in one host kernel, bit for bit against g:eval", function()
    local g = kiln.graph("chain")
    local x = g:param("x", { 8, 8 }, "f32")
    local a = g:param("a", { 8, 8 }, "f32")
    local b = g:param("b", { 1, 8 }, "f32")
    local y, n = x, 0
    while n < 20000 do
      local k = n % 8
      if k == 0 then y = y * a
      elseif k == 1 then y = -y
      elseif k == 2 then y = y + b
      elseif k == 3 then y = y:abs()
      elseif k == 4 then y = y - a
      elseif k == 5 then y = (n % 800 == 5) and y:reshape { 64 }:reshape { 8, 8 } or y * b
      elseif k == 6 then y = (n % 100 == 6) and y:relu() or y + a
      else y = (n % 100 == 7) and y:min(a) or -y end
      n = n + 1
    end
    g:output(y)
    local p = kiln.compile(g, { target = "host", cache = false, strict_fp = true })
    assert.are.equal(1, #p:kernels())
    local ins = { x = kiln.rand({ 8, 8 }, "f32", { dist = "normal" }), a = kiln.rand({ 8, 8 }, "f32", { dist = "normal" }),
                  b = kiln.rand({ 1, 8 }, "f32", { dist = "normal" }) }
    local got, want = p:run(ins), g:eval(ins)
    local r = kiln.compare(got, want, { rtol = 0, atol = 0 })
    assert.are.equal(0, r.mismatches, r.summary)
    local nonzero = 0
    for _, v in ipairs(want:flat()) do if v ~= 0 then nonzero = nonzero + 1 end end
    assert.is_true(nonzero > 32, "the chain keeps most values non-zero")
  end)
end)
