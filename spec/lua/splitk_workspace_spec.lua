-- splitk_workspace_spec.lua — split-K through a workspace (passes/split_k_workspace.c): a dot
-- or conv whose output cannot take atomic adds (f16 / bf16, an epilogue, a target without f32
-- atomics) computes f32 partials [S, ...] in a workspace, and an element-wise kernel sums them
-- and runs the cast and the epilogue: alloc_workspace, two launches, free. On the host every
-- split factor of dots with K from 1 to 65536 in f32 / f16 / bf16 with linear and non-linear
-- epilogues (relu, add + relu, cast, scale) matches g:eval on fresh random inputs, and so do
-- convs (NCHW / NHWC, groups, channels that do not divide); a dot's remainder R = K % S
-- (R <= 16, S + 2R <= 40) is outer products in the sum kernel, a larger one a second GEMM; the plan's workspace holds S
-- partials and its tokens chain; the heuristic takes the workspace form on gfx942 / sm_90 for
-- f16 64x64x65536 and on gfx1030 for f32 too; a bad split is a located error; the sm_90a
-- 33x127x4099 f16 plan (remainder 3) spills nothing under ptxas (skipped without it).
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fg = require "fused_gen"

local kinds = fg.plan_kinds
local WS = "alloc_workspace,launch,launch,free"

local function check(p, g, inputs) assert(fg.check_outputs(table.pack(p:run(inputs)), table.pack(g:eval(inputs)))) end
local function rand(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end

-- epilogues on c = dot / conv result (r: a param of c's shape)
local epilogues = {
  none = function(c) return c end,
  relu = function(c) return c:relu() end,
  add_relu = function(c, r) return (c + r):relu() end,
  cast = function(c) return c:convert("f16") end,   -- of an f32 result
  scale = function(c) return c * 2 end,
}

local function dot_graph(M, N, K, dt, epi)
  local g = kiln.graph("skw")
  local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
  local r = epi == "add_relu" and g:param("r", { M, N }, dt) or nil
  g:output(epilogues[epi](a:dot(b), r))
  local inputs = { a = rand({ M, K }, dt), b = rand({ K, N }, dt) }
  if r then inputs.r = rand({ M, N }, dt) end
  return g, inputs
end

-- the workspace slot of a plan (its alloc_workspace step's slot)
local function workspace(plan)
  for _, s in ipairs(plan.steps) do
    if s.kind == "alloc_workspace" then return plan.slots[s.slot], s end
  end
end

describe("split-K through a workspace on the host", function()
  -- dtype and epilogue pairs: the workspace form for each (f32 only with an epilogue)
  local combos = { { "f16", "none" }, { "bf16", "relu" }, { "f32", "add_relu" }, { "f32", "cast" }, { "bf16", "scale" } }
  for _, K in ipairs({ 1, 2, 5, 100, 4097, 65536 }) do
    it(("dot 3x5 with K = %d, every split factor, f32 / f16 / bf16, epilogues"):format(K), function()
      local factors = K > 4096 and { 2, 3, 32 } or { 1, 2, 3, 4, 8, 16, 32, K }
      for fi, S in ipairs(factors) do
        if S <= K then
          local dt, epi = table.unpack(combos[(fi + K) % #combos + 1])
          local g, inputs = dot_graph(3, 5, K, dt, epi)
          local p = kiln.compile(g, { perf_config = ("v1:4,8,1,4,8,1,%d"):format(S), cache = false })
          local plan = p:plan()
          if S > 32 then   -- the partials summed by a reduce (below)
            assert.is_truthy(kinds(plan):find("alloc_workspace", 1, true))
          elseif S > 1 then
            assert.are.equal(WS, kinds(plan), ("K %d S %d %s %s"):format(K, S, dt, epi))
            local slot = workspace(plan)
            assert.are.equal(("tensor<%dx3x5xf32>"):format(S), slot.type)
            assert.are.equal(S * 3 * 5 * 4, slot.bytes)
          else
            assert.are.equal("launch", kinds(plan))
          end
          check(p, g, inputs)
        end
      end
    end)
  end

  it("the plan: the partial kernel writes the workspace, the sum kernel reads it, free waits on both", function()
    local g, inputs = dot_graph(7, 9, 300, "f16", "relu")
    local p = kiln.compile(g, { perf_config = "v1:4,8,2,4,8,1,4", cache = false })
    local plan = p:plan()
    assert.are.equal(WS, kinds(plan))
    local al, k0, k1, fr = table.unpack(plan.steps)
    assert.are.same({ al.token }, k0.waits)
    assert.are.equal(al.slot, k0.args[#k0.args])             -- the partials' kernel writes the workspace
    assert.are.same({ k0.token }, k1.waits)
    assert.are.equal(al.slot, k1.args[1])                    -- the sum kernel reads it
    assert.are.equal(plan.outputs[1], k1.args[#k1.args])     -- and writes the output
    assert.are.equal(al.slot, fr.slot)
    assert.are.same({ k0.token, k1.token }, fr.waits)
    assert.are.equal(2, #p:kernels())
    check(p, g, inputs)
  end)

  it("a remainder (S does not divide K): outer products in the sum (R <= 16, S + 2R <= 40), else a second GEMM whose epilogue sums: still two kernels", function()
    for _, sh in ipairs({ { 100, 3 }, { 1000, 7 }, { 17, 16 }, { 4099, 16 }, { 23, 5 }, { 37, 8 }, { 112, 32 }, { 127, 16 } }) do
      local K, S = table.unpack(sh)
      local R = K % S
      for _, dt in ipairs({ "f16", "bf16", "f32" }) do
        local g, inputs = dot_graph(5, 6, K, dt, "add_relu")
        local p = kiln.compile(g, { perf_config = ("v1:4,8,1,4,8,1,%d"):format(S), cache = false })
        assert.are.equal(WS, kinds(p:plan()))
        assert.are.equal(("tensor<%dx5x6xf32>"):format(S), workspace(p:plan()).type)
        local ks = p:kernels()
        assert.are.equal(2, #ks)
        assert.are.equal(R <= 16 and S + 2 * R <= 40 and "elementwise" or "gemm", ks[2].kind, ("K %d S %d"):format(K, S))
        check(p, g, inputs)
      end
    end
  end)

  it("a split above 32 sums the partials in a reduce kernel", function()
    local g, inputs = dot_graph(3, 5, 1000, "f16", "relu")
    local p = kiln.compile(g, { perf_config = "v1:4,8,1,4,8,1,100", cache = false })
    assert.is_truthy(kinds(p:plan()):find("alloc_workspace", 1, true))
    assert.is_true(#p:kernels() >= 2)
    check(p, g, inputs)
  end)

  it("batched dots (batch ranks that differ, broadcast)", function()
    for _, sh in ipairs({ { { 2, 4, 64 }, { 2, 64, 3 } }, { { 3, 2, 5, 40 }, { 40, 7 } }, { { 1, 6, 33 }, { 4, 33, 2 } } }) do
      local as, bs = table.unpack(sh)
      for _, dt in ipairs({ "f16", "bf16" }) do
        local g = kiln.graph("skwb")
        local a, b = g:param("a", as, dt), g:param("b", bs, dt)
        g:output(a:dot(b):relu())
        local p = kiln.compile(g, { perf_config = "v1:4,4,2,4,4,1,4", cache = false })
        assert.are.equal(WS, kinds(p:plan()))
        check(p, g, { a = rand(as, dt), b = rand(bs, dt) })
      end
    end
  end)

  it("implicit-GEMM convs: NCHW and NHWC, add + relu, groups, channels that do not divide", function()
    -- x shape, w shape, groups, layouts, dtype, split, epilogue
    local cases = {
      { { 2, 12, 5, 6 }, { 3, 12, 3, 3 }, 1, false, "f16", 4, "none" },
      { { 2, 13, 5, 6 }, { 3, 13, 3, 3 }, 1, false, "f16", 4, "add_relu" },
      { { 2, 12, 5, 6 }, { 4, 12, 3, 3 }, 1, true, "bf16", 3, "add_relu" },
      { { 2, 12, 5, 6 }, { 4, 6, 3, 3 }, 2, false, "f32", 3, "relu" },
      { { 1, 37, 4, 4 }, { 5, 37, 3, 3 }, 1, true, "f16", 8, "relu" },
    }
    for _, c in ipairs(cases) do
      local xs, ws, groups, nhwc, dt, S, epi = table.unpack(c)
      local g = kiln.graph("skwc")
      local x = g:param("x", xs, dt, nhwc and { layout = "NHWC" } or nil)
      local w = g:param("w", ws, dt, nhwc and { layout = "KYXC" } or nil)
      local rs = { xs[1], ws[1], xs[3], xs[4] }
      local r = epi == "add_relu" and g:param("r", rs, dt, nhwc and { layout = "NHWC" } or nil) or nil
      g:output(epilogues[epi](g:conv(x, w, { padding = { 1, 1, 1, 1 }, groups = groups }), r))
      local p = kiln.compile(g, { perf_config = ("v1:4,8,1,4,8,1,%d"):format(S), cache = false })
      assert.are.equal(WS, kinds(p:plan()), dt .. " " .. epi)
      local inputs = { x = rand(xs, dt, nhwc and "NHWC" or nil), w = rand(ws, dt, nhwc and "KYXC" or nil) }
      if r then inputs.r = rand(rs, dt, nhwc and "NHWC" or nil) end
      check(p, g, inputs)
    end
  end)

  it("an f32 output written directly keeps the atomic form (prefill + one launch)", function()
    local g, inputs = dot_graph(3, 5, 100, "f32", "none")
    local p = kiln.compile(g, { perf_config = "v1:4,8,1,4,8,1,4", cache = false })
    assert.are.equal("prefill,launch", kinds(p:plan()))
    check(p, g, inputs)
  end)
end)

describe("split-K through a workspace: errors (nothing compiles)", function()
  local function compile_err(g, pc)
    local ok, err = pcall(kiln.compile, g, { perf_config = pc, cache = false })
    assert.is_false(ok)
    return tostring(err)
  end
  it("splitK larger than K, at the dot", function()
    local g = dot_graph(4, 4, 5, "f16", "relu")
    local err = compile_err(g, "v1:4,4,1,4,4,1,6")
    helper.has(err, "splitK (6) is larger than K (5)")
    helper.has(err, "splitk_workspace_spec.lua")
  end)
  it("a conv's splitK larger than its input channels, or not dividing a grouped conv's", function()
    local g = kiln.graph("skwce")
    local x, w = g:param("x", { 1, 4, 5, 5 }, "f16"), g:param("w", { 2, 4, 3, 3 }, "f16")
    g:output(g:conv(x, w))
    helper.has(compile_err(g, "v1:4,4,1,4,4,1,6"), "splitK (6) is larger than the input channels per group (4)")
    local h = kiln.graph("skwcg")
    local y, v = h:param("x", { 1, 8, 5, 5 }, "f16"), h:param("w", { 4, 4, 3, 3 }, "f16")
    h:output(h:conv(y, v, { groups = 2 }))
    helper.has(compile_err(h, "v1:4,4,1,4,4,1,3"), "splitK (3) must divide the input channels per group (4)")
  end)
  it("the context stays usable after an error", function()
    local g, inputs = dot_graph(4, 4, 5, "f16", "relu")
    compile_err(g, "v1:4,4,1,4,4,1,6")
    local p = kiln.compile(g, { perf_config = "v1:4,4,1,4,4,1,5", cache = false })
    check(p, g, inputs)
  end)
end)

describe("split-K through a workspace per target (static)", function()
  -- a remainder K % S = 3 of a 33x127x4099 f16 dot on sm_90a (the heuristic's S = 16): its
  -- sum kernel used to be the remainder GEMM (64x128 wgmma tile) whose epilogue read all 16
  -- partials of its 64 accumulators before adding (1024 live f32 per thread): ptxas spilled
  -- 9260 bytes. The remainder is now outer products in the element-wise sum: no spills.
  it("sm_90a: 33x127x4099 f16, the remainder's kernel and the partials' spill nothing (ptxas)", function()
    local ptxas = require "ptxas_tool"()
    local g = kiln.graph("skwr")
    local a, b = g:param("a", { 33, 4099 }, "f16"), g:param("b", { 4099, 127 }, "f16")
    g:output(a:dot(b))
    local p = kiln.compile(g, { target = "sm_90a", cache = false })
    assert.are.equal(WS, kinds(p:plan("sm_90a")))
    local ks = p:kernels("sm_90a")
    assert.are.equal(2, #ks)
    assert.are.same({ "gemm", "elementwise" }, { ks[1].kind, ks[2].kind })
    if not ptxas then
      print("splitk_workspace_spec: no ptxas, the sm_90a spill check is skipped")
      return
    end
    for _, k in ipairs(ks) do
      local path = os.tmpname()
      local f = assert(io.open(path, "wb"))
      f:write(p:disasm(k.name, "sm_90a"))
      f:close()
      local h = io.popen(("%s -arch=sm_90a -v -o %s.cubin %s 2>&1"):format(ptxas, path, path))
      local log = h:read("a")
      h:close()
      os.remove(path .. ".cubin")
      os.remove(path)
      assert.is_truthy(log:match("Used (%d+) registers"), "ptxas: " .. log)
      assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), k.name .. " spills: " .. log)
    end
  end)

  local function gemm(M, N, K, dt, epi)
    local g = kiln.graph("skwt")
    local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
    g:output(epilogues[epi or "none"](a:dot(b)))
    return g
  end

  it("the heuristic splits f16 and bf16 64x64x65536 through a workspace on gfx942 and gfx1030", function()
    for _, dt in ipairs({ "f16", "bf16" }) do
      local p = kiln.compile(gemm(64, 64, 65536, dt), { targets = { "gfx942", "gfx1030" }, cache = false })
      for _, t in ipairs({ "gfx942", "gfx1030" }) do
        local plan = p:plan(t)
        assert.are.equal(WS, kinds(plan), t)
        local S = tonumber(workspace(plan).type:match("^tensor<(%d+)x64x64xf32>$"))
        assert.is_true(S >= 2 and S <= 32, t)
        assert.is_true(p:kernels(t)[1].grid >= S, t)
      end
      helper.has(p:plan_text("gfx942"), "alloc_workspace")
    end
  end)

  it("f32 with a relu on gfx942, and f32 on gfx1030 (no f32 atomic add), take the workspace form", function()
    local p = kiln.compile(gemm(16, 16, 65536, "f32", "relu"), { targets = { "gfx942" }, cache = false })
    assert.are.equal(WS, kinds(p:plan("gfx942")))
    local q = kiln.compile(gemm(16, 16, 65536, "f32"), { targets = { "gfx1030", "gfx942" }, cache = false })
    assert.are.equal(WS, kinds(q:plan("gfx1030")))
    assert.are.equal("prefill,launch", kinds(q:plan("gfx942")))
    assert.is_nil(q:disasm(q:kernels("gfx1030")[1].name, "gfx1030"):find("atomic", 1, true))
  end)

  it("no split when the output tiles fill the compute units", function()
    local p = kiln.compile(gemm(2048, 2048, 4096, "f16"), { targets = { "gfx942", "sm_90" }, cache = false })
    assert.are.equal("launch", kinds(p:plan("gfx942")))
    assert.are.equal("launch", kinds(p:plan("sm_90")))
  end)

  it("a v2 config with splitK on an f16 output", function()
    local g = gemm(64, 64, 4096, "f16", "relu")
    local p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:32,32,16,32,32,1,8", cache = false })
    assert.are.equal(WS, kinds(p:plan("gfx942")))
    assert.are.equal("tensor<8x64x64xf32>", workspace(p:plan("gfx942")).type)
    assert.are.equal("v2:32,32,16,32,32,1", p:kernels("gfx942")[1].perf_config)
  end)
end)

-- The joint choice of split and tiles on sm_90 (passes/gemm_split.h kl_gemm_split_choose): the
-- split GEMM's cost with a per-K-step latency floor and the L2 rate (passes/rock_accel.h), plus
-- the partials' traffic. Static: the choices; host: the same plan shapes (the same splits and
-- tiles forced with v1 configs) against g:eval at odd shapes.
describe("split-K: the joint choice on sm_90", function()
  local function gemm(M, N, K, dt, epi)
    local g = kiln.graph("skj")
    local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
    g:output(epilogues[epi or "none"](a:dot(b)))
    return g, { a = rand({ M, K }, dt), b = rand({ K, N }, dt) }
  end
  local function cdiv(a, b) return (a + b - 1) // b end
  -- the first kernel's tile (mPerBlock, nPerBlock) and split (its grid over the output tiles)
  local function choice(p, M, N)
    local k = p:kernels("sm_90")[1]
    local mb, nb = k.perf_config:match("^v%d:(%d+),(%d+),")
    mb, nb = tonumber(mb), tonumber(nb)
    local tiles = cdiv(M, mb) * cdiv(N, nb)
    assert.are.equal(0, k.grid % tiles, k.perf_config)
    return k.grid // tiles, mb, nb, k
  end

  it("64x64x65536 f16 / bf16: one 64x64 tile split >= 64 ways (atomic f32 sum, then the cast)", function()
    for _, dt in ipairs({ "f16", "bf16" }) do
      local p = kiln.compile(gemm(64, 64, 65536, dt), { targets = { "sm_90" }, cache = false })
      assert.are.equal("alloc_workspace,prefill,launch,launch,free", kinds(p:plan("sm_90")), dt)
      local S, mb, nb, k = choice(p, 64, 64)
      assert.are.same({ 64, 64 }, { mb, nb }, k.perf_config)
      assert.is_true(S >= 64 and S <= 256, tostring(S))
      -- all 4 sub-partitions of each SM busy: blocks of 4 warps one per SM, or smaller blocks more per SM
      assert.is_true(k.block * cdiv(k.grid, 132) >= 128, "4 warps per SM: " .. k.block .. " x " .. k.grid)
      assert.are.equal("tensor<64x64xf32>", workspace(p:plan("sm_90")).type)
    end
  end)

  it("64x64x65536 f32: the atomic form with 64x64 tiles split >= 64 ways", function()
    local p = kiln.compile(gemm(64, 64, 65536, "f32"), { targets = { "sm_90" }, cache = false })
    assert.are.equal("prefill,launch", kinds(p:plan("sm_90")))
    local pc = p:kernels("sm_90")[1].perf_config
    local S = tonumber(pc:match("^v1:64,64,%d+,%d+,%d+,%d+,(%d+)$"))
    assert.is_truthy(S, pc)
    assert.is_true(S >= 64, pc)
  end)

  it("8192x320x1280 f16: 128x128 tiles (fewer L2 bytes per FLOP than 64x64), no split; big GEMMs keep theirs",
     function()
    local p = kiln.compile(gemm(8192, 320, 1280, "f16"), { targets = { "sm_90" }, cache = false })
    assert.are.equal("launch", kinds(p:plan("sm_90")))
    -- (both operands take cp.async, B in its M / N-major stages: the async heuristic's tiles, at
    -- least 128x128, kl_accel_config_heuristic_async)
    local mb, nb = p:kernels("sm_90")[1].perf_config:match("^v2:(%d+),(%d+),32,")
    assert.is_true(tonumber(mb) >= 128 and tonumber(nb) >= 128, p:kernels("sm_90")[1].perf_config)
    local q = kiln.compile(gemm(4096, 4096, 4096, "f16"), { targets = { "sm_90", "sm_80" }, cache = false })
    assert.are.equal("v2:256,128,32,64,64,8", q:kernels("sm_90")[1].perf_config)
    assert.are.equal("launch", kinds(q:plan("sm_90")))
  end)

  it("the host runs the plan shapes sm_90 picks (same splits and tiles) and matches g:eval", function()
    local cases = { { 100, 37, 10000, "bf16" }, { 37, 29, 20000, "f32" }, { 37, 29, 20000, "f32", "relu" },
                    { 64, 64, 65536, "f16", "relu" }, { 1, 1, 65536, "f16" }, { 16, 16, 65536, "bf16", "scale" },
                    { 64, 64, 65536, "f32" } }
    for _, c in ipairs(cases) do
      local M, N, K, dt, epi = table.unpack(c)
      local g, inputs = gemm(M, N, K, dt, epi)
      local p = kiln.compile(g, { targets = { "sm_90" }, cache = false })
      local S, mb, nb = choice(p, M, N)
      local name = table.concat(c, " ") .. " S " .. S
      assert.is_true(S > 1, name)
      local h = kiln.compile(g, { perf_config = ("v1:%d,%d,16,%d,%d,1,%d"):format(mb, nb, mb, nb, S), cache = false })
      assert.are.equal(kinds(p:plan("sm_90")), kinds(h:plan()), name)
      check(h, g, inputs)
    end
  end)
end)

describe("split-K of convs: the joint choice on sm_90", function()
  -- relu(conv(x, w) + r), x NHWC, w KYXC [K, C, S, S], r NHWC (the bench's swz cases)
  local function conv(Nb, C, H, W, K, S, dt, attrs)
    attrs = attrs or {}
    local g = kiln.graph("skw_conv")
    local x = g:param("x", { Nb, C, H, W }, dt, { layout = "NHWC" })
    local w = g:param("w", { K, C // (attrs.groups or 1), S, S }, dt, { layout = "KYXC" })
    local y = g:conv(x, w, { padding = attrs.padding or (S - 1) // 2, stride = attrs.stride, dilation = attrs.dilation,
                             groups = attrs.groups })
    local r = g:param("r", y.shape, dt, { layout = "NHWC" })
    g:output((y + r):relu())
    local inputs = { x = rand({ Nb, C, H, W }, dt, "NHWC"), w = rand({ K, C // (attrs.groups or 1), S, S }, dt, "KYXC"),
                     r = rand(y.shape, dt, "NHWC") }
    return g, inputs, y.shape
  end
  local function gemm_kernel(p, t)
    for _, k in ipairs(p:kernels(t)) do if k.kind == "gemm" then return k end end
  end
  local function load_bytes(k)
    local b = {}
    for _, a in ipairs(k.accesses) do if a.kind == "load" then b[a.arg] = math.max(b[a.arg] or 0, a.bytes) end end
    return b
  end

  it("ResNet-50's 3x3 conv on 7x7x512 at batch 64 splits in two: 200 blocks of 128x128 (was 100, no split)",
     function()
    for _, dt in ipairs({ "f16", "bf16" }) do
      local g = conv(64, 512, 7, 7, 512, 3, dt)
      local p = kiln.compile(g, { targets = { "sm_90", "sm_80" }, cache = false })
      assert.are.equal(WS, kinds(p:plan("sm_90")), dt)
      local k = gemm_kernel(p, "sm_90")
      assert.are.equal("v2:128,128,32,64,64,8", k.perf_config)
      assert.are.equal(200, k.grid)
      -- sm_80 has no joint choice (no L2 rate): the tile-count rule, 100 blocks fill its 108 SMs
      assert.are.equal("launch", kinds(p:plan("sm_80")))
    end
  end)

  it("the channel-sliced GEMM reads both operands in 16-byte vectors and pipelines through cp.async", function()
    -- 3x3 pad 1, 3x3 stride 2, 3x3 dilation 2 pad 2, 1x1, and a grouped conv (forced split)
    local cases = { { 4, 512, 7, 7, 512, 3, "f16" }, { 4, 256, 14, 14, 256, 3, "bf16", { stride = 2, padding = 1 } },
                    { 4, 256, 9, 9, 256, 3, "f16", { dilation = 2, padding = 2 } }, { 1, 2048, 7, 7, 512, 1, "bf16" } }
    for _, c in ipairs(cases) do
      local g = conv(table.unpack(c))
      local name = table.concat(c, " ", 1, 7)
      local p = kiln.compile(g, { targets = { "sm_90" }, cache = false })
      assert.are.equal(WS, kinds(p:plan("sm_90")), name)
      local b = load_bytes(gemm_kernel(p, "sm_90"))
      assert.are.same({ in0 = 16, in1 = 16 }, b, name)
      local q = kiln.compile(g, { target = "sm_90", cache = false,
                                  pipeline = require("cp_async_cases").pipeline(3) })
      assert.are.equal("A,B", gemm_kernel(q, "sm_90").async_copy, name)
    end
    local g = conv(2, 256, 7, 7, 128, 3, "f16", { groups = 2 })
    local p = kiln.compile(g, { target = "sm_90", perf_config = "v2:64,64,32,32,32,8,4", cache = false })
    assert.are.equal(WS, kinds(p:plan("sm_90")))
    assert.are.same({ in0 = 16, in1 = 16 }, load_bytes(gemm_kernel(p, "sm_90")))
  end)

  it("the host runs the conv plans sm_90 picks (same splits and tiles) and matches g:eval", function()
    local cases = { { 2, 256, 7, 7, 64, 3, "f16" }, { 2, 128, 10, 10, 32, 3, "bf16", { stride = 2, padding = 1 } },
                    { 1, 192, 6, 6, 48, 3, "f16", { dilation = 2, padding = 2 } }, { 1, 1024, 3, 3, 64, 1, "bf16" },
                    { 2, 96, 5, 5, 64, 3, "f32", { groups = 2, padding = { 0, 2, 1, 0 } } } }
    for _, c in ipairs(cases) do
      local g, inputs, ys = conv(table.unpack(c))
      local name = table.concat(c, " ", 1, 7)
      local p = kiln.compile(g, { targets = { "sm_90" }, cache = false })
      local k = gemm_kernel(p, "sm_90")
      local mb, nb = k.perf_config:match("^v%d:(%d+),(%d+),")
      mb, nb = tonumber(mb), tonumber(nb)
      -- the GEMM's grid: G*S x ceil(M / mb) x ceil(N / nb), M = K / G, N = batch x output pixels
      local G = c[8] and c[8].groups or 1
      local S = k.grid // (G * ((c[5] // G + mb - 1) // mb) * ((ys[1] * ys[3] * ys[4] + nb - 1) // nb))
      assert.is_true(S > 1 == (kinds(p:plan("sm_90")) == WS), name .. " S " .. S)
      local h = kiln.compile(g, { perf_config = ("v1:%d,%d,16,%d,%d,1,%d"):format(mb, nb, mb, nb, S), cache = false })
      assert.are.equal(kinds(p:plan("sm_90")), kinds(h:plan()), name .. " S " .. S)
      check(h, g, inputs)
    end
  end)
end)
