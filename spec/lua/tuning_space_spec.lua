-- tuning_space_spec.lua — kiln.tuning_space (driver/tuning_space.h, passes/perf_space.h):
-- every quick config of odd-shaped GEMMs and a convolution compiles on the host and matches
-- the reference evaluator on random inputs; rejected configs carry their reason; quick lists
-- stay within 30; the GPU spaces hold only configs that validate for that target.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local function dot_graph(name, M, K, N, dt, batch)
  local g = kiln.graph(name)
  local sa, sb = { M, K }, { K, N }
  if batch then sa, sb = { batch, M, K }, { batch, K, N } end
  local a, b = g:param("a", sa, dt), g:param("b", sb, dt)
  g:output((g:dot(a, b) + 1):relu())
  return g
end

local function conv_graph()
  local g = kiln.graph("ts_conv")
  local x = g:param("x", { 1, 5, 9, 7 }, "f32")
  local w = g:param("w", { 6, 5, 3, 3 }, "f32")
  g:output(g:conv(x, w, { padding = { 1, 1 } }))
  return g
end

local function inputs(g)
  local ins = {}
  for _, p in ipairs(g:params()) do ins[p.name] = kiln.rand(p.shape, p.dtype) end
  return ins
end

describe("tuning spaces #compile", function()
  local cases = {
    { "37x29x53 f32", function() return dot_graph("ts1", 37, 29, 53, "f32") end, { rtol = 1e-4, atol = 1e-4 } },
    { "2x7x13x5 f16", function() return dot_graph("ts2", 7, 13, 5, "f16", 2) end, { rtol = 2e-2, atol = 2e-2 } },
    { "conv 5->6 3x3 on 9x7", conv_graph, { rtol = 1e-4, atol = 1e-4 } },
  }
  for _, c in ipairs(cases) do
    it("every quick config compiles on the host and matches g:eval: " .. c[1], function()
      local g = c[2]()
      local list, rejected = kiln.tuning_space(g, { target = "host", level = "quick", rejected = true })
      assert.truthy(#list >= 10 and #list <= 30, "quick list of " .. #list)
      assert.truthy(#rejected > 0)
      for _, r in ipairs(rejected) do
        assert.are.equal("string", type(r.reason))
        helper.has(r.reason, r.config)
      end
      local ins = inputs(g)
      local ref = g:eval(ins)
      for _, pc in ipairs(list) do
        local p = kiln.compile(g, { perf_config = pc })
        assert.are.equal(pc, p:kernels()[1].perf_config)
        local cmp = kiln.compare(p:run(ins), ref, c[3])
        assert.is_true(cmp.ok, pc .. ": " .. cmp.summary)
      end
    end)
  end

  it("full and exhaustive spaces only hold configs that validate; GPU targets too", function()
    local g = dot_graph("ts3", 37, 29, 53, "f16")
    for _, t in ipairs{ "host", "gfx942", "sm_90", "gfx1100" } do
      local q = kiln.tuning_space(g, { target = t })
      local f, fr = kiln.tuning_space(g, { target = t, level = "full", rejected = true })
      assert.truthy(#q <= 30 and #q > 0, t)
      assert.truthy(#f >= #q, t)
      local seen = {}
      for _, pc in ipairs(f) do
        assert.is_nil(seen[pc], pc); seen[pc] = true
      end
      for _, r in ipairs(fr) do assert.is_nil(seen[r.config], r.config) end
      -- a sample of the full space gets through the GEMM passes (no LLVM) for the target
      for i = 1, #f, math.max(1, #f // 12) do
        local ok, err = pcall(kiln.compile, g, { target = t, perf_config = f[i],
          pipeline = "graph-partition,graph-to-rock,rock-regularize,rock-conv-to-gemm,rock-gemm-to-gridwise,"
            .. "rock-gridwise-to-blockwise,rock-blockwise-to-threadwise" })
        assert.truthy(ok or not tostring(err):find("perf config", 1, true), t .. " " .. f[i] .. ": " .. tostring(err))
      end
    end
    local _, rej = kiln.tuning_space(g, { target = "gfx942", level = "full", rejected = true })
    local reasons = table.concat((function() local t = {} for _, r in ipairs(rej) do t[#t + 1] = r.reason end return t end)(), "\n")
    helper.has(reasons, "exceeds the max workgroup size")
    helper.has(reasons, "registers per thread")
    helper.has(reasons, "only padding")
  end)

  it("AMDGPU: configs that would spill are rejected (register estimate), the heuristic's is not", function()
    local g = dot_graph("ts4", 4096, 4096, 4096, "f16")
    for _, c in ipairs { { "gfx942", "v2:256,256,64,128,64,4" }, { "gfx1100", "v2:256,64,64,64,64,16" } } do
      local q = kiln.tuning_space(g, { target = c[1] })
      local _, rej = kiln.tuning_space(g, { target = c[1], level = "full", rejected = true })
      local why
      for _, r in ipairs(rej) do if r.config == c[2] then why = r.reason end end
      assert.is_string(why, c[2] .. " rejected on " .. c[1])
      helper.has(why, "would spill")
      local p = kiln.compile(g, { targets = { c[1] }, cache = false })
      assert.are.equal(p:kernels(c[1])[1].perf_config, q[1], "the heuristic's config leads the quick list")
    end
  end)

  it("a graph without a GEMM has no space; bad levels and targets are errors", function()
    local g = kiln.graph("ts_ew")
    local a = g:param("a", { 3, 5 }, "f32")
    g:output(a:exp())
    assert.are.same({}, kiln.tuning_space(g))
    local g2 = dot_graph("ts4", 8, 8, 8, "f32")
    helper.has(helper.fails(kiln.tuning_space, g2, { level = "medium" }), 'level must be "quick", "full" or "exhaustive"')
    helper.has(helper.fails(kiln.tuning_space, g2, { target = "gfx0" }), "unknown target 'gfx0'")
    helper.has(helper.fails(kiln.tuning_space, g2, { levle = "full" }), "levle")
  end)
end)
