-- splitk_spec.lua — split-K GEMMs (passes/perf_config.h's splitK field, rock-gemm-to-gridwise):
-- the K loop runs over K/splitK per workgroup, the partial products are added atomically
-- (rock.atomic_rmw) into the output after a plan prefill of 0. On the host every split factor
-- (1 to larger than useful) of dot and conv with K from 1 to 65536 and odd M/N matches g:eval
-- on fresh random inputs; bad factors and outputs that cannot take atomic adds are clear
-- compile errors; the heuristic splits a 16x16x65536 f32 GEMM on gfx942 / sm_90 (prefill +
-- launch) and on gfx1030 (no float atomic add) through a workspace (splitk_workspace_spec.lua:
-- f16 / bf16 outputs and epilogues split that way everywhere); the gfx942 code object has
-- global_atomic_add_f32, the sm_90 PTX red/atom .add.f32, the gfx1030 one no atomic; a bundle
-- for gfx942 + gfx1030 + host keeps the three different plans.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fg = require "fused_gen"

local kinds = fg.plan_kinds

local function check(p, g, inputs) assert(fg.check_outputs(table.pack(p:run(inputs)), table.pack(g:eval(inputs)))) end

local function dot_graph(name, ash, bsh, dt)
  local g = kiln.graph(name)
  local a = g:param("a", ash, dt or "f32")
  local b = g:param("b", bsh, dt or "f32")
  return g, a, b
end
local function rand_inputs(shapes, dt)
  local t = {}
  for k, s in pairs(shapes) do t[k] = kiln.rand(s, dt or "f32", { dist = "normal" }) end
  return t
end

-- the split the compiled kernel runs (0: none), from its perf config's 7th field
local function split_of(k)
  local n, last = 0, nil
  for f in k.perf_config:gmatch("[^,:]+") do n, last = n + 1, f end
  return n == 8 and tonumber(last) or 0
end

describe("split-K on the host", function()
  -- kPerBlock 1 (every split factor up to K is a real split) and 16 (slices padded to 16)
  local configs = { "v1:4,8,1,4,8,1,%d", "v1:8,8,16,8,8,1,%d" }
  for _, K in ipairs({ 1, 2, 5, 17, 100, 1000, 4097, 65536 }) do
    it(("dot 3x5 with K = %d, every split factor"):format(K), function()
      for _, S in ipairs({ 1, 2, 3, 4, 8, 16, K }) do
        if S <= K then
          for ci, fmt in ipairs(configs) do
            local g, a, b = dot_graph("sk", { 3, K }, { K, 5 })
            g:output(a:dot(b))
            local p = kiln.compile(g, { perf_config = fmt:format(S), cache = false })
            local plan = p:plan()
            local k = p:kernels()[1]
            if split_of(k) > 1 then
              assert.are.equal("prefill,launch", kinds(plan))
              assert.are.equal(0, plan.steps[1].value)
              assert.are.same({ plan.steps[1].token }, plan.steps[2].waits)
              assert.are.equal(plan.outputs[1], plan.steps[1].slot)
            else
              assert.are.equal("launch", kinds(plan))
            end
            if ci == 1 then   -- kPerBlock 1: slices of ceil(K/S), no slice of padding only
              local want = -(-K // -(-K // S))
              assert.are.equal(want > 1 and want or 0, split_of(k), "kPerBlock 1: the split")
            end
            check(p, g, rand_inputs({ a = { 3, K }, b = { K, 5 } }))
          end
        end
      end
    end)
  end

  it("batched dot and odd shapes (1x1, 7x3, 2x13x9 batches)", function()
    for _, sh in ipairs({ { {}, 1, 1, 300 }, { {}, 7, 3, 129 }, { { 2 }, 13, 9, 77 }, { { 3 }, 1, 16, 1024 } }) do
      local batch, M, N, K = table.unpack(sh)
      local as, bs = {}, {}
      for i, d in ipairs(batch) do as[i], bs[i] = d, d end
      as[#as + 1], as[#as + 2] = M, K
      bs[#bs + 1], bs[#bs + 2] = K, N
      for _, S in ipairs({ 2, 3, 8 }) do
        local g, a, b = dot_graph("skb", as, bs)
        g:output(a:dot(b))
        local p = kiln.compile(g, { perf_config = ("v1:4,4,2,4,4,1,%d"):format(S), cache = false })
        assert.are.equal(S, split_of(p:kernels()[1]))
        assert.are.equal("prefill,launch", kinds(p:plan()))
        check(p, g, rand_inputs({ a = as, b = bs }))
      end
    end
  end)

  it("implicit-GEMM conv (the conv lowers to a GEMM first)", function()
    local g = kiln.graph("skconv")
    local x = g:param("x", { 2, 37, 5, 6 }, "f32")
    local w = g:param("w", { 3, 37, 3, 3 }, "f32")
    g:output(g:conv(x, w, { padding = { 1, 1, 1, 1 } }))
    for _, S in ipairs({ 2, 5, 16 }) do
      local p = kiln.compile(g, { perf_config = ("v1:4,8,1,4,8,1,%d"):format(S), cache = false })
      assert.are.equal(S, split_of(p:kernels()[1]))
      assert.are.equal("prefill,launch", kinds(p:plan()))
      check(p, g, rand_inputs({ x = { 2, 37, 5, 6 }, w = { 3, 37, 3, 3 } }))
    end
  end)

  it("a split with a config string without the field, or splitK 1, is no split", function()
    local g, a, b = dot_graph("sk1", { 5, 300 }, { 300, 3 })
    g:output(a:dot(b))
    for _, pc in ipairs({ "v1:4,8,1,4,8,1", "v1:4,8,1,4,8,1,1" }) do
      local p = kiln.compile(g, { perf_config = pc, cache = false })
      assert.are.equal("v1:4,8,1,4,8,1", p:kernels()[1].perf_config)
      assert.are.equal("launch", kinds(p:plan()))
      check(p, g, rand_inputs({ a = { 5, 300 }, b = { 300, 3 } }))
    end
  end)
end)

describe("split-K errors (nothing compiles, nothing runs)", function()
  local function compile_err(g, pc)
    local ok, err = pcall(kiln.compile, g, { perf_config = pc, cache = false })
    assert.is_false(ok)
    return tostring(err)
  end
  it("splitK larger than K", function()
    local g, a, b = dot_graph("skbig", { 4, 5 }, { 5, 4 })
    g:output(a:dot(b))
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,6"), "splitK (6) is larger than K (5)")
  end)
  it("splitK 0, negative, not a number, an eighth field", function()
    local g, a, b = dot_graph("skbad", { 4, 5 }, { 5, 4 })
    g:output(a:dot(b))
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,0"), "field splitK must be positive, got 0")
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,-2"), "field splitK must be positive, got -2")
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,x"), "field splitK \"x\" is not an integer")
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,2,2"), "too many fields (8; expected 6 or 7")
  end)
  it("a split that rock-gemm-to-gridwise cannot write atomically, without split-k-workspace before it", function()
    local g, a, b = dot_graph("skrelu", { 4, 64 }, { 64, 4 })
    g:output(a:dot(b):relu())
    local pipeline = kiln.default_pipeline():gsub("split%-k%-workspace,", "")
    local ok, err = pcall(kiln.compile, g, { perf_config = "v1:4,4,1,4,4,1,4", pipeline = pipeline, cache = false })
    assert.is_false(ok)
    helper.has(tostring(err),
      "splitK 4 is not possible here: the GEMM writes an intermediate (a fused epilogue reads it)")
  end)
end)

describe("split-K per target (static)", function()
  local function gemm16()
    local g, a, b = dot_graph("skh", { 16, 65536 }, { 65536, 16 })
    g:output(a:dot(b))
    return g
  end
  local p = kiln.compile(gemm16(), { targets = { "gfx942", "gfx1030", "sm_90" }, cache = false })

  it("the heuristic splits a 16x16x65536 f32 GEMM atomically where the target adds f32 atomically", function()
    for _, t in ipairs({ "gfx942", "sm_90" }) do
      local plan = p:plan(t)
      assert.are.equal("prefill,launch", kinds(plan), t)
      assert.are.equal(0, plan.steps[1].value)
      assert.are.same({ plan.steps[1].token }, plan.steps[2].waits)
      local k = p:kernels(t)[1]
      assert.is_true(split_of(k) >= 16, t .. ": split " .. k.perf_config)
      assert.is_true(k.grid >= 16, t .. ": grid")
    end
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(p:plan("gfx1030")))   -- the workspace form
    assert.are.equal(0, split_of(p:kernels("gfx1030")[1]))
    helper.has(p:plan_text("gfx942"), "= prefill %s2 value(0)")
  end)

  it("no split when the output tiles fill the compute units", function()
    local g, a, b = dot_graph("sksq", { 2048, 4096 }, { 4096, 2048 })
    g:output(a:dot(b))
    local q = kiln.compile(g, { targets = { "gfx942" }, cache = false })
    assert.are.equal("launch", kinds(q:plan("gfx942")))
  end)

  it("gfx942 has global_atomic_add_f32, sm_90 red/atom .add.f32, gfx1030 no atomic", function()
    local amd = p:disasm(p:kernels("gfx942")[1].name, "gfx942")
    assert.is_truthy(amd:find("global_atomic_add_f32", 1, true))
    assert.is_nil(amd:find("global_atomic_cmpswap", 1, true))
    local ptx = p:disasm(p:kernels("sm_90")[1].name, "sm_90")
    assert.is_truthy(ptx:find("red[%.%w]*%.add%.f32") or ptx:find("atom[%.%w]*%.add%.f32"))
    local rdna = p:disasm(p:kernels("gfx1030")[1].name, "gfx1030")
    assert.is_nil(rdna:find("atomic", 1, true))
  end)

  it("a forced split on a target without float atomic adds goes through a workspace", function()
    local q = kiln.compile(gemm16(), { targets = { "gfx1030" }, perf_config = "v1:16,16,32,1,1,1,8", cache = false })
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(q:plan("gfx1030")))
  end)

  it("a v2 (matrix instruction) config with splitK", function()
    local q = kiln.compile(gemm16(), { targets = { "gfx942" }, perf_config = "v2:32,32,16,32,32,1,8", cache = false })
    local k = q:kernels("gfx942")[1]
    assert.are.equal("v2:32,32,16,32,32,1,8", k.perf_config)
    assert.are.equal(8, k.grid)
    assert.are.equal("prefill,launch", kinds(q:plan("gfx942")))
    local ok, err = pcall(kiln.compile, gemm16(), { targets = { "gfx942" }, perf_config = "v2:32,32,16,32,32,1,0", cache = false })
    assert.is_false(ok)
    helper.has(tostring(err), "field splitK must be positive, got 0")
  end)

  it("a bundle for gfx942 + gfx1030 + host keeps each target's plan", function()
    local g = gemm16()
    local path = os.tmpname()
    kiln.compile(g, { targets = { "gfx942", "gfx1030", "host" }, cache = false }):save(path)
    local q = kiln.load(path)
    os.remove(path)
    assert.are.same({ "gfx942", "gfx1030", "host" }, q.targets)
    assert.are.equal("prefill,launch", kinds(q:plan("gfx942")))
    assert.are.equal("alloc_workspace,launch,launch,free", kinds(q:plan("gfx1030")))
    assert.are.same(p:plan("gfx942").steps, q:plan("gfx942").steps)
    assert.are_not.equal(q:plan_text("gfx942"), q:plan_text("gfx1030"))
    check(q, g, rand_inputs({ a = { 16, 65536 }, b = { 65536, 16 } }))   -- the host's plan
  end)
end)
