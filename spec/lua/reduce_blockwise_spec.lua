-- reduce_blockwise_spec.lua — blockwise reductions and softmax (passes/lower_loops_reduce.c)
-- on the host against g:eval on fresh random inputs: rows of 1, 7, 33, 1000, 4097
-- elements, reductions over axis 0 (columns) and every axis set of a rank-3 tensor with
-- and without keepdims, f32/f16/bf16, sum/mean/max/min, softmax over both axes; plus
-- the integer sums/max and NaN / signed-zero semantics of max.
local kiln = require "kiln"
local cases = require "reduce_blockwise_cases"

describe("blockwise reductions and softmax on the host", function()
  for _, c in ipairs(cases.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      local ok, msg = cases.check(table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
      assert(ok, c.name .. ": " .. tostring(msg))
    end)
  end

  it("i32 sum and max over rows and columns are exact", function()
    local icases = require "int8_cases"
    for _, shape in ipairs { { 5, 1000 }, { 1000, 3 } } do
      for ax = 0, 1 do
        local g = kiln.graph("int_red")
        local x = g:param("x", shape, "i32")
        g:output(x:sum { ax }, x:reduce_max { ax })
        local inputs = { x = icases.rand_int(shape, "i32", -100000, 100000) }
        local got = table.pack(kiln.compile(g, { target = "host", cache = false }):run(inputs))
        local want = table.pack(g:eval(inputs))
        for i = 1, 2 do
          local ok, msg = icases.exact(got[i], want[i])
          assert(ok, ("%dx%d axis %d output %d: %s"):format(shape[1], shape[2], ax, i, tostring(msg)))
        end
      end
    end
  end)

  it("max propagates NaN and orders -0 < +0 across chunks", function()
    local n = 1000
    local flat = {}
    for i = 1, 4 * n do flat[i] = -1 - (i % 7) end
    flat[3 * n + 517] = 0 / 0          -- row 4: a NaN in the middle of the row
    flat[n + 1], flat[n + 999] = -0.0, 0.0 -- row 2: -0 first, +0 later
    flat[2 * n + 1], flat[2 * n + 999] = 0.0, -0.0 -- row 3: +0 first, -0 later
    local g = kiln.graph("max_nan")
    g:output(g:param("x", { 4, n }, "f32"):reduce_max { 1 })
    local inputs = { x = kiln.tensor(flat, "f32", { shape = { 4, n } }) }
    local got = kiln.compile(g, { target = "host", cache = false }):run(inputs):flat()
    assert.are.equal(-1, got[1])
    assert.is_true(got[2] == 0 and 1 / got[2] > 0, "row 2: +0")
    assert.is_true(got[3] == 0 and 1 / got[3] > 0, "row 3: +0")
    assert.is_true(got[4] ~= got[4], "row 4: NaN")
  end)
end)
