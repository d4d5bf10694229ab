-- gemm_reduce_spec.lua — GEMM + reduce fusion (graph-partition's gemm_reduce_of, graph-to-rock's
-- lower_gemm_reduce): reduce_sum(dot(a, b), axes) of f32 is one GEMM kernel whose output write
-- adds each element into its sum atomically after a plan prefill of 0, where the target adds
-- f32 atomically (host, gfx942, sm_90); on gfx1030 the reduction stays a second kernel.
-- reduce_mean (scaled adds) and reduce_max (prefill -inf, NaN-propagating CAS atomics) fuse
-- too. Every axis set, keepdims, batched dots and odd sizes match g:eval on the host; f16
-- sums and a dot read elsewhere too keep two kernels; a bundle for gfx942 + gfx1030 keeps
-- the two plans (one kernel against two); the tile is pre-reduced so that the code holds one
-- global atomic per output point (static count); random reductions after GEMMs match too.
local kiln = require "kiln"
local fg = require "fused_gen"

local kinds = fg.plan_kinds
local function launches(plan)
  local n = 0
  for _, s in ipairs(plan.steps) do if s.kind == "launch" then n = n + 1 end end
  return n
end
local function check(p, g, inputs) assert(fg.check_outputs(table.pack(p:run(inputs)), table.pack(g:eval(inputs)))) end
local function graph(ash, bsh, dt, f)
  local g = kiln.graph("gr")
  local a, b = g:param("a", ash, dt or "f32"), g:param("b", bsh, dt or "f32")
  g:output(f(a:dot(b)))
  local inputs = { a = kiln.rand(ash, dt or "f32", { dist = "normal" }), b = kiln.rand(bsh, dt or "f32", { dist = "normal" }) }
  return g, inputs
end

describe("GEMM + reduce fusion on the host", function()
  local shapes = { { { 7, 33 }, { 33, 5 } }, { { 1, 300 }, { 300, 17 } }, { { 2, 9, 40 }, { 2, 40, 3 } } }
  for _, sh in ipairs(shapes) do
    local rank = #sh[1]
    local axis_sets = rank == 2 and { { 0 }, { 1 }, { 0, 1 }, { -1 } } or { { 0 }, { 1 }, { 2 }, { 0, 2 }, { 0, 1, 2 } }
    for _, axes in ipairs(axis_sets) do
      for _, keep in ipairs({ false, true }) do
        it(("sum over {%s} of a %s dot, keepdims %s"):format(table.concat(axes, ","), table.concat(sh[1], "x"), tostring(keep)), function()
          local g, inputs = graph(sh[1], sh[2], "f32", function(d) return d:reduce_sum(axes, keep) end)
          local p = kiln.compile(g, { cache = false })
          assert.are.equal(1, #p:kernels())
          assert.are.equal("gemm", p:kernels()[1].kind)
          local plan = p:plan()
          assert.are.equal("prefill,launch", kinds(plan))
          assert.are.equal(0, plan.steps[1].value)
          assert.are.equal(plan.outputs[1], plan.steps[1].slot)
          assert.are.same({ plan.steps[1].token }, plan.steps[2].waits)
          check(p, g, inputs)
        end)
      end
    end
  end

  it("a long K and a given perf config", function()
    local g, inputs = graph({ 3, 4096 }, { 4096, 9 }, "f32", function(d) return d:reduce_sum({ 1 }) end)
    local p = kiln.compile(g, { cache = false, perf_config = "v1:4,8,16,4,8,1" })
    assert.are.equal(1, #p:kernels())
    check(p, g, inputs)
  end)

  it("split-K of a GEMM + reduce (the splits add into the same sums)", function()
    local g, inputs = graph({ 3, 20480 }, { 20480, 5 }, "f32", function(d) return d:reduce_sum({ 1 }) end)
    for _, S in ipairs({ 2, 7, 64 }) do
      local p = kiln.compile(g, { cache = false, perf_config = ("v1:4,8,16,4,8,1,%d"):format(S) })
      assert.are.equal(1, #p:kernels())
      assert.are.equal(("v1:4,8,16,4,8,1,%d"):format(S), p:kernels()[1].perf_config)
      assert.are.equal("prefill,launch", kinds(p:plan()))
      check(p, g, inputs)
    end
    local h = graph({ 16, 65536 }, { 65536, 16 }, "f32", function(d) return d:reduce_sum({ 0 }) end)
    local q = kiln.compile(h, { cache = false, targets = { "gfx942" } })
    assert.is_truthy(q:kernels("gfx942")[1].perf_config:match("^v2:%d+,%d+,%d+,%d+,%d+,%d+,%d+$"), "the heuristic splits")
  end)

  it("element-wise work after the sum runs in its own kernel", function()
    local g, inputs = graph({ 6, 20 }, { 20, 7 }, "f32", function(d) return (d:reduce_sum({ 0 }) * 2):relu() end)
    local p = kiln.compile(g, { cache = false })
    assert.are.equal(2, #p:kernels())
    check(p, g, inputs)
  end)

  it("mean and max: one kernel after a prefill of 0 / -inf; an f16 sum, a dot read elsewhere too: two kernels", function()
    for _, c in ipairs({ { "reduce_mean", 0 }, { "reduce_max", -math.huge } }) do
      for _, axes in ipairs({ { 0 }, { 1 }, { 0, 1 } }) do
        local g, inputs = graph({ 37, 70 }, { 70, 29 }, "f32", function(d) return d[c[1]](d, axes, false) end)
        local p = kiln.compile(g, { cache = false })
        assert.are.equal(1, #p:kernels())
        assert.are.equal("prefill,launch", kinds(p:plan()))
        assert.are.equal(c[2], p:plan().steps[1].value)
        check(p, g, inputs)
      end
    end
    local g, inputs = graph({ 5, 24 }, { 24, 6 }, "f16", function(d) return d:reduce_sum({ 1 }) end)
    local p = kiln.compile(g, { cache = false })
    assert.are.equal(2, #p:kernels())
    check(p, g, inputs)
    g = kiln.graph("gr2")
    local a, b = g:param("a", { 5, 24 }, "f32"), g:param("b", { 24, 6 }, "f32")
    local d = a:dot(b)
    g:output(d:reduce_sum({ 1 }), d)
    p = kiln.compile(g, { cache = false })
    assert.are.equal(2, #p:kernels())
    check(p, g, { a = kiln.rand({ 5, 24 }, "f32", { dist = "normal" }), b = kiln.rand({ 24, 6 }, "f32", { dist = "normal" }) })
  end)

  it("max propagates NaN as the reduction does (the atomic is a NaN-propagating CAS loop)", function()
    local g = kiln.graph("grnan")
    local a, b = g:param("a", { 9, 20 }, "f32"), g:param("b", { 20, 7 }, "f32")
    g:output(a:dot(b):reduce_max({ 1 }))
    local av = kiln.rand({ 9, 20 }, "f32", { dist = "normal" }):flat()
    av[3 * 20 + 5] = 0 / 0 -- row 3 of the dot is NaN
    local inputs = { a = kiln.tensor(av, "f32", { shape = { 9, 20 } }), b = kiln.rand({ 20, 7 }, "f32", { dist = "normal" }) }
    local p = kiln.compile(g, { cache = false })
    assert.are.equal(1, #p:kernels())
    local got, want = p:run(inputs):flat(), g:eval(inputs):flat()
    for i = 1, 9 do
      if i == 4 then
        assert.is_true(got[i] ~= got[i] and want[i] ~= want[i], "row 3 is NaN")
      else
        assert.is_true(math.abs(got[i] - want[i]) <= 1e-5 * (1 + math.abs(want[i])))
      end
    end
  end)
end)

describe("random reductions after GEMMs (fused_gen.gen_gemm_reduce)", function()
  for seed = 1, tonumber(os.getenv("KILN_GEMM_REDUCE_COUNT") or "") or 40 do
    local case = fg.gen_gemm_reduce(seed)
    it(case.name, function()
      local p = kiln.compile(case.g, { cache = false })
      assert.are.equal(case.kernels, #p:kernels())
      check(p, case.g, case.inputs)
    end)
  end
end)

describe("GEMM + reduce fusion per target (static)", function()
  it("gfx942 and sm_90: one kernel with atomic adds; gfx1030: two kernels; a bundle keeps both plans", function()
    local g, inputs = graph({ 64, 512 }, { 512, 48 }, "f32", function(d) return d:reduce_sum({ 1 }) end)
    local p = kiln.compile(g, { targets = { "gfx942", "gfx1030", "sm_90", "host" }, cache = false })
    assert.are.equal(1, #p:kernels("gfx942"))
    assert.are.equal(1, #p:kernels("sm_90"))
    assert.are.equal(2, #p:kernels("gfx1030"))
    assert.are.equal("prefill,launch", kinds(p:plan("gfx942")))
    assert.are.equal(2, launches(p:plan("gfx1030")))
    assert.is_truthy(p:disasm(p:kernels("gfx942")[1].name, "gfx942"):find("global_atomic_add_f32", 1, true))
    local ptx = p:disasm(p:kernels("sm_90")[1].name, "sm_90")
    assert.is_truthy(ptx:find("red[%.%w]*%.add%.f32") or ptx:find("atom[%.%w]*%.add%.f32"))
    -- the tile is pre-reduced (registers, lane shuffles, LDS): the code holds one global
    -- atomic per output point of the block (before: one per accumulator element, 16)
    local function count(text, pat) local n = 0 for _ in text:gmatch(pat) do n = n + 1 end return n end
    assert.are.equal(1, count(p:disasm(p:kernels("gfx942")[1].name, "gfx942"), "global_atomic_add_f32"))
    -- sm_90 (FMA path): one per output row a thread holds (mPerThread of its v1 config; the
    -- thread's columns are summed first)
    local mt = tonumber(p:kernels("sm_90")[1].perf_config:match("^v1:%d+,%d+,%d+,(%d+),"))
    assert.are.equal(mt, count(ptx, "atom%.global%.add%.f32") + count(ptx, "red%.global%.add%.f32"))
    local m = kiln.compile((graph({ 64, 512 }, { 512, 48 }, "f32", function(d) return d:reduce_max({ 1 }) end)),
                           { targets = { "gfx942", "gfx1030" }, cache = false })
    assert.are.equal(1, #m:kernels("gfx1030"), "max needs only compare-and-swap: one kernel on gfx1030 too")
    assert.are.equal(-math.huge, m:plan("gfx942").steps[1].value)
    assert.are.equal(1, count(m:disasm(m:kernels("gfx942")[1].name, "gfx942"), "global_atomic_cmpswap"))
    local path = os.tmpname()
    p:save(path)
    local q = kiln.load(path)
    os.remove(path)
    assert.are.same(p:plan("gfx942"), q:plan("gfx942"))
    assert.are.same(p:plan("gfx1030"), q:plan("gfx1030"))
    assert.are.equal(1, launches(q:plan("gfx942")))
    assert.are.equal(2, launches(q:plan("gfx1030")))
    check(q, g, inputs)   -- the host's plan (one kernel)
  end)
end)
