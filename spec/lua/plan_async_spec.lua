-- plan_async_spec.lua — the asynchronous executor on the host (driver/plan_exec.c,
-- driver/plan_sched.h): a plan with two independent chains runs wave by wave, the
-- independent launches of a wave as one launch group on the thread pool; the timing
-- records (p:run(inputs, {timing = t}): start_ms, end_ms, ms, stream = the wave on the
-- host) show every step starting after the steps it waits on ended and the independent
-- launches' intervals overlapping (they ran concurrently: their workgroups are
-- interleaved on the pool, so within a worker one launch's workgroup runs before the
-- other's last one); the results match g:eval with and without timing, f32 and f16.
local kiln = require "kiln"
local fg = require "fused_gen"
local A = require "plan_async_cases"

local function check_outputs(p, g, inputs, opts)
  assert(fg.check_outputs(table.pack(p:run(inputs, opts)), table.pack(g:eval(inputs))))
end

describe("the asynchronous executor on the host", function()
  it("independent chains: waves, launch groups, overlapping intervals, g:eval", function()
    for _, dt in ipairs { "f32", "f16" } do
      local g, inputs = A.branches(1024, dt)
      local p = kiln.compile(g, { pipeline = A.no_producer_fusion() })
      local plan = p:plan()
      assert.are.equal("alloc_workspace,launch,launch,free,alloc_workspace,launch,launch,free,launch", fg.plan_kinds(plan))
      local grid = {}
      for _, k in ipairs(p:kernels()) do grid[k.name] = k.grid end   -- workgroups per launch
      for _, i in ipairs { 2, 3, 6, 7 } do
        assert.is_true(grid[plan.steps[i].kernel] >= 64, "enough workgroups to interleave")
      end
      local t = {}
      local x = inputs()
      check_outputs(p, g, x, { timing = t })
      local ok, msg, overlaps = A.check_timing(plan, t)
      assert(ok, msg)
      local wave = {}
      for i, r in ipairs(t) do wave[i] = r.stream end
      assert.are.same({ 0, 1, 2, 3, 0, 1, 2, 3, 3 }, wave)
      -- the two exp/scale launches (steps 2 and 6) ran together, so did the two reductions (3 and 7)
      local pairs_ = {}
      for _, o in ipairs(overlaps) do pairs_[o[1] .. "," .. o[2]] = true end
      assert.is_true(pairs_["2,6"], "steps 2 and 6 overlap")
      assert.is_true(pairs_["3,7"], "steps 3 and 7 overlap")
      assert.is_nil(pairs_["2,3"])   -- dependent: never overlap
      check_outputs(p, g, inputs())   -- untimed: the same schedule
    end
  end)

  it("two independent dots in one wave", function()
    local g, inputs = A.two_dots(96, 80, 48)
    local p = kiln.compile(g)
    local plan = p:plan()
    assert.are.equal("launch,launch", fg.plan_kinds(plan))
    local t = {}
    check_outputs(p, g, inputs(), { timing = t })
    assert(A.check_timing(plan, t))
    assert.are.equal(0, t[1].stream)
    assert.are.equal(0, t[2].stream)
  end)
end)
