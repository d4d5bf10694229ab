-- reduce_split_spec.lua — multi-block reductions (reduce-split, passes/reduce_split.c): a
-- reduction split into a partial and a final kernel through a workspace, on the host
-- against g:eval on fresh random inputs (rows long and short, columns, every axis set of a
-- rank-3 tensor with and without keepdims, sum/mean/max/min, f32/f16/bf16, the split
-- forced by g:hint); the plan's shape (alloc_workspace, two launches, the second waiting
-- on the first, free) and its slots; the heuristic on GPU targets (compiled, not run:
-- scripts/gpu_suite.lua runs it on a device) and a bundle whose per-target plans differ;
-- bad split hints.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local RB = require "reduce_blockwise_cases"
local RS = require "reduce_split_cases"

local kinds = require("fused_gen").plan_kinds

describe("multi-block reductions", function()
  for _, c in ipairs(RS.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      assert.are.equal(c.kernels, #p:kernels())
      local ok, msg = RB.check(table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
      assert(ok, c.name .. ": " .. tostring(msg))
    end)
  end

  it("the plan: a workspace for the partials, written by the first launch, read by the second, freed", function()
    local g = kiln.graph("split_plan")
    local x = g:param("x", { 4, 8192 }, "f16")
    g:output(g:hint(x:sum { 1 }, { split = 16 }))
    local p = kiln.compile(g, { cache = false })
    local plan = p:plan()
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(plan))
    local alloc, k1, k2, free = table.unpack(plan.steps)
    local ws = alloc.slot
    assert.are.equal("result", plan.slots[ws].kind)
    assert.are.equal(4 * 16 * 4, alloc.bytes)                -- 4 x 16 f32 partials
    assert.are.same({ plan.slots[k1.args[1]].kind, k1.args[2] }, { "param", ws })   -- k1: x -> partials
    assert.are.same({ ws }, { k2.args[1] })                   -- k2 reads the partials ...
    assert.are.same({ k1.token }, k2.waits)                   -- ... after k1 wrote them
    assert.are.equal(ws, free.slot)
    assert.are.same({ k1.token, k2.token }, free.waits)
    local xi = kiln.rand({ 4, 8192 }, "f16")
    local ok, msg = RB.check(table.pack(p:run { x = xi }), table.pack(g:eval { x = xi }), "f16", 8192)
    assert(ok, msg)
  end)

  it("split = 1 keeps one kernel; the pass option splits every reduction", function()
    local g = kiln.graph("split_one")
    local x = g:param("x", { 2, 1024 }, "f32")
    g:output(g:hint(x:sum { 1 }, { split = 1 }), x:reduce_max { 1 })
    local p = kiln.compile(g, { cache = false })
    assert.are.equal("launch,launch", kinds(p:plan()))
    local p2 = kiln.compile(g, { cache = false, pipeline = "reduce-split{split=4}," .. kiln.default_pipeline():gsub("^reduce%-split,", "") })
    -- the hint (1) wins over the option for the sum; the max splits in four
    assert.are.equal(3, #p2:kernels())
    local xi = kiln.rand({ 2, 1024 }, "f32")
    local got, want = table.pack(p2:run { x = xi }), table.pack(g:eval { x = xi })
    local ok, msg = RB.check(got, want, "f32", 1024)
    assert(ok, msg)
  end)

  for _, t in ipairs { "gfx942", "sm_90" } do
    it("the heuristic on " .. t .. ": few long rows split, many or short rows do not", function()
      for _, h in ipairs(RS.HEURISTIC) do
        local name, shape, axes, split = h[1], h[2], h[3], h[4]
        local g = kiln.graph("heur")
        g:output(g:param("x", shape, "f32"):sum(axes))
        local p = kiln.compile(g, { target = t, cache = false })
        local want = split and "alloc_workspace,launch,launch,free" or "launch"
        assert.are.equal(want, kinds(p:plan(t)), t .. " " .. name)
      end
    end)
  end

  it("plans differ per target: one bundle, a split plan for sm_90 and one launch for the host", function()
    local g = kiln.graph("split_targets")
    local x = g:param("x", { 2, 1048576 }, "f32")
    g:output(x:mean { 1 })
    local p = kiln.compile(g, { targets = { "host", "sm_90" }, cache = false })
    assert.are.equal("launch", kinds(p:plan("host")))
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(p:plan("sm_90")))
    local path = os.tmpname()
    p:save(path)
    local q = kiln.load(path)
    os.remove(path)
    assert.are.equal("launch", kinds(q:plan("host")))
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(q:plan("sm_90")))
    local xi = kiln.rand({ 2, 1048576 }, "f32")
    local ok, msg = RB.check(table.pack(q:run { x = xi }), table.pack(g:eval { x = xi }), "f32", 1048576)
    assert(ok, msg)
  end)

  it("the host heuristic never splits", function()
    local g = kiln.graph("heur_host")
    g:output(g:param("x", { 1, 1048576 }, "f32"):sum { 1 })
    assert.are.equal("launch", kinds(kiln.compile(g, { target = "host", cache = false }):plan()))
  end)

  it("bad split hints are errors at the line that built the reduction", function()
    local g = kiln.graph("split_bad")
    local x = g:param("x", { 3, 10 }, "f32")
    g:output(g:hint(x:sum { 1 }, { split = 4 }))
    local ok, err = pcall(kiln.compile, g, { cache = false })
    assert.is_false(ok)
    helper.has(tostring(err), "split 4 does not divide the extent 10 of axis 1")
    helper.has(tostring(err), "reduce_split_spec.lua:")
    local ok2, err2 = pcall(function() g:hint(x, { split = 2 }) end)
    assert.is_false(ok2)
    helper.has(tostring(err2), "split applies to a reduction")
    local ok3, err3 = pcall(function() g:hint(x:sum { 1 }, { split = 0 }) end)
    assert.is_false(ok3)
    helper.has(tostring(err3), "split must be an integer >= 1")
  end)
end)
