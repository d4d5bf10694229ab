-- raster_spec.lua — the grouped raster order of GEMM workgroups
-- (rock-gridwise-to-blockwise{raster-group-m=GM}, passes/gemm_raster.h) on the host, where
-- the same lowering runs: dots and convs with odd tile counts (a partial last group), batch,
-- split-K (atomic and workspace forms: the split slices are batches of the tiled GEMM),
-- fused epilogues, against g:eval on fresh random inputs for GM = 2, 3, 8 and larger than
-- the m-tiles; the option's errors; the IR of the order; the default (row order) emits
-- nothing; GPU targets compile with it (the wgmma path of sm_90a included).
local kiln = require "kiln"
local fg = require "fused_gen"

local function pipeline(gm)
  local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise([^,]*)", function(opts)
    if opts:sub(1, 1) == "{" then return "rock-gridwise-to-blockwise{" .. opts:sub(2, -2) .. ",raster-group-m=" .. gm .. "}" end
    return "rock-gridwise-to-blockwise{raster-group-m=" .. gm .. "}"
  end)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  return pl
end

local function R(shape, dt) return kiln.rand(shape, dt or "f32", { dist = "normal" }) end

local function check(g, inputs, opts)
  local p = kiln.compile(g, opts)
  assert(fg.check_outputs(table.pack(p:run(inputs)), table.pack(g:eval(inputs))))
  return p
end

describe("grouped raster order on the host", function()
  -- tiles of 8 x 8 (v1:8,8,...): M = 61 -> 8 m-tiles, N = 45 -> 6 n-tiles; GM = 3 leaves a
  -- partial group of 2, GM = 8 one group, GM = 100 is taken as 8
  local GMS = { 2, 3, 5, 8, 100 }

  it("dots with odd tile counts and a partial last group, every GM", function()
    for _, gm in ipairs(GMS) do
      for _, s in ipairs { { 61, 45, 19 }, { 9, 130, 7 }, { 130, 9, 33 }, { 1, 1, 5 }, { 17, 1, 3 } } do
        local M, N, K = table.unpack(s)
        local g = kiln.graph("raster_dot")
        local a, b, bias = g:param("a", { M, K }, "f32"), g:param("b", { K, N }, "f32"), g:param("bias", { N }, "f32")
        g:output((g:dot(a, b) + bias):relu())
        check(g, { a = R { M, K }, b = R { K, N }, bias = R { N } },
              { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,8,8,8,8,1" })
      end
    end
  end)

  it("batched dots (the order stays within a batch) and f16 with the heuristic's tiles", function()
    for _, gm in ipairs { 2, 3, 4 } do
      local g = kiln.graph("raster_batch")
      local a, b = g:param("a", { 3, 50, 24 }, "f32"), g:param("b", { 3, 24, 37 }, "f32")
      g:output(g:dot(a, b))
      check(g, { a = R { 3, 50, 24 }, b = R { 3, 24, 37 } },
            { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,8,8,8,8,1" })
      local g2 = kiln.graph("raster_f16")
      local a2, b2 = g2:param("a", { 300, 64 }, "f16"), g2:param("b", { 64, 260 }, "f16")
      g2:output(g2:dot(a2, b2))
      check(g2, { a = R({ 300, 64 }, "f16"), b = R({ 64, 260 }, "f16") },
            { target = "host", cache = false, pipeline = pipeline(gm) })
    end
  end)

  it("split-K: the atomic form and the workspace form", function()
    for _, gm in ipairs { 2, 3 } do
      local g = kiln.graph("raster_splitk")
      local a, b = g:param("a", { 37, 300 }, "f32"), g:param("b", { 300, 29 }, "f32")
      g:output(g:dot(a, b))
      local p = check(g, { a = R { 37, 300 }, b = R { 300, 29 } },
                      { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,8,8,8,8,1,3" })
      assert.are.equal("prefill,launch", fg.plan_kinds(p:plan()))
      local g2 = kiln.graph("raster_splitk_ws")
      local a2, b2 = g2:param("a", { 37, 300 }, "f16"), g2:param("b", { 300, 29 }, "f16")
      g2:output(g2:dot(a2, b2):relu())
      p = check(g2, { a = R({ 37, 300 }, "f16"), b = R({ 300, 29 }, "f16") },
                { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,8,8,8,8,1,4" })
      assert.are.equal(2, #p:kernels())
    end
  end)

  it("a conv with a residual and relu (NHWC), odd sizes", function()
    for _, gm in ipairs { 2, 3 } do
      local g = kiln.graph("raster_conv")
      local x = g:param("x", { 2, 13, 9, 9 }, "f32", { layout = "NHWC" })
      local w = g:param("w", { 20, 13, 3, 3 }, "f32", { layout = "KYXC" })
      local r = g:param("r", { 2, 20, 9, 9 }, "f32", { layout = "NHWC" })
      g:output((g:conv(x, w, { padding = { 1, 1, 1, 1 } }) + r):relu())
      check(g, { x = kiln.rand({ 2, 13, 9, 9 }, "f32", { layout = "NHWC" }), w = kiln.rand({ 20, 13, 3, 3 }, "f32", { layout = "KYXC" }),
                 r = kiln.rand({ 2, 20, 9, 9 }, "f32", { layout = "NHWC" }) },
            { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,16,8,8,16,1" })
    end
  end)

  it("emits the order only when asked, with constant divisors", function()
    local g = kiln.graph("raster_ir")
    local a, b = g:param("a", { 61, 19 }, "f32"), g:param("b", { 19, 45 }, "f32")
    g:output(g:dot(a, b))
    local texts = {}
    for _, gm in ipairs { 0, 3 } do
      kiln.compile(g, { target = "host", cache = false, pipeline = pipeline(gm), perf_config = "v1:8,8,8,8,8,1",
                        print_ir_after = { "rock-gridwise-to-blockwise" }, on_ir = function(_, t) texts[gm] = t end })
    end
    assert.is_nil(texts[0]:find("arith.select", 1, true), texts[0])
    -- 8 m-tiles, GM 3: groups of 3 x 6 = 18 workgroups, a last group of width 2
    local t = texts[3]
    assert.truthy(t:find("arith.select", 1, true), t)
    assert.truthy(t:find("arith.constant 18 : index", 1, true), t)
    assert.truthy(t:find("arith.cmpi \"ge\"", 1, true) or t:find("arith.cmpi", 1, true), t)
  end)

  it("rejects a negative group", function()
    local g = kiln.graph("raster_bad")
    g:output(g:dot(g:param("a", { 8, 8 }, "f32"), g:param("b", { 8, 8 }, "f32")))
    local ok, err = pcall(kiln.compile, g, { target = "host", cache = false, pipeline = pipeline(-2) })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("raster-group-m must be -1 (auto), 0 or 1 (row order) or the m-tiles per group (>= 2), got -2", 1, true), err)
  end)

  it("auto (the default) groups where row order's wave overflows half the L2 (NVIDIA), row order elsewhere", function()
    local function order(g, target, pl)
      local p = kiln.compile(g, { target = target, cache = false, pipeline = pl })
      return p:kernels()[1].raster_group_m
    end
    -- the seed conv at batch 512 (M 512, N 25088, K 2048; sm_90a 128x256 tiles: 4 x 98): row order's
    -- wave reads 98 column-blocks of 1 MiB (99 MiB, twice the 50 MiB L2); 4 m-tiles per group 35 MiB
    local g = kiln.graph("raster_seed")
    local x = g:param("x", { 512, 2048, 7, 7 }, "f16", { layout = "NHWC" })
    local w = g:param("w", { 512, 2048, 1, 1 }, "f16", { layout = "KYXC" })
    local r = g:param("r", { 512, 512, 7, 7 }, "f16", { layout = "NHWC" })
    g:output((g:conv(x, w) + r):relu())
    assert.are.equal(4, order(g, "sm_90a"))
    assert.are.equal(0, order(g, "sm_90a", pipeline(0))) -- asked: row order
    assert.are.equal(0, order(g, "gfx942"))              -- no L2 model on AMD
    -- 4096^3 on sm_90a (32 x 16 tiles of 128x256): row order's wave reads 9 row-blocks of 1 MiB and all
    -- 16 column-blocks of 2 MiB (41 MiB), the best group (16) 34 MiB: not a quarter less, row order;
    -- 8192^3 (64 x 32): row order 138 MiB, group 15 66 MiB
    local function sq(n)
      local gg = kiln.graph("raster_sq")
      gg:output(gg:dot(gg:param("a", { n, n }, "f16"), gg:param("b", { n, n }, "f16")))
      return gg
    end
    assert.are.equal(0, order(sq(4096), "sm_90a"))
    assert.are.equal(15, order(sq(8192), "sm_90a"))
    assert.are.equal(0, order(sq(1024), "sm_90a")) -- small: the wave holds everything
    assert.are.equal(0, order(sq(256), "host"))
  end)

  it("compiles for GPU targets with the order (sm_90a wgmma, sm_90 mma.sync, gfx942)", function()
    local g = kiln.graph("raster_gpu")
    local a, b = g:param("a", { 1024, 256 }, "f16"), g:param("b", { 256, 1536 }, "f16")
    g:output(g:dot(a, b))
    for _, t in ipairs { "sm_90a", "sm_90", "gfx942" } do
      local p = kiln.compile(g, { target = t, cache = false, pipeline = pipeline(8) })
      local k = p:kernels(t)[1]
      if t == "sm_90a" then assert.truthy(k.perf_config:match("^v3:"), k.perf_config) end
      assert.truthy(#p:binary(k.name, t) > 0)
    end
  end)
end)
