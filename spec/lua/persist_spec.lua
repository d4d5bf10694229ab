-- Persistent tiles of the sm_90a TMA wgmma GEMMs (rock-gridwise-to-blockwise{persistent=1},
-- with the TMA loop and with ws=1; passes/rock_tma.h): the kernel's `persistent` / 
-- `grid_persistent` (p:kernels()), the option's default and errors, every device case of
-- spec/lua/tma_cases.lua (persist_cases) compiling as expected, static checks of the PTX (the
-- tile loop over %nctaid.x; the TMA loop's next-tile loads after the tile's last
-- wgmma.wait_group 0 and before its epilogue's stores; ws: the two block barriers only), and
-- ptxas -arch=sm_90a with 0 spill bytes for the benchmark shapes (printed: registers).
-- Numerics: spec/c/test_accel.c (test_persist: several tiles per workgroup in the interpreter)
-- and the gpu-tagged cases of scripts/gpu_suite.lua (section tma).
local kiln = require "kiln"
local G = require "gemm_graphs"
local count, dot_graph = G.count, G.dot
local function gemm_of(p) return G.gemm_of(p, "sm_90a") end
local compile = G.compile_gtb_sm90a

-- the block barriers (bar.sync 0 / barrier.sync 0) of a PTX text
local function block_barriers(ptx)
  local n = 0
  for line in ptx:gmatch("[^\n]+") do
    local b = line:match("^%s*(bar[%w%.]*%s+[^;]+);")
    if b and (b:match("^bar%.sync%s+0$") or b:match("^barrier%.sync%s+0$")) then n = n + 1 end
  end
  return n
end

describe("persistent tiles (sm_90a TMA wgmma GEMMs)", function()
  it("persistent=0 (the default, KL_PERSIST_DEFAULT_STR) and auto (KL_PERSIST_AUTO, today off) launch a tile per workgroup; persistent=1 records the choice; bad values are errors", function()
    local p = kiln.compile(dot_graph(512, 512, 256, "f16", false, true), { target = "sm_90a", cache = false })
    assert.are.equal("", gemm_of(p).persistent)
    assert.are.equal(0, gemm_of(p).grid_persistent)
    assert.is_nil(p:disasm(gemm_of(p).name, "sm_90a"):find("%nctaid.x", 1, true))
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "persistent=auto")
    assert.are.equal("", gemm_of(p).persistent)
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "persistent=1")
    local k = gemm_of(p)
    assert.are.equal("on", k.persistent)
    assert.are.equal(1, k.grid_persistent)
    assert.is_true(k.grid > 1, "grid " .. k.grid) -- the tiles: the launch takes min(tiles, SMs x resident)
    assert.is_truthy(p:disasm(k.name, "sm_90a"):find("%nctaid.x", 1, true))
    -- not applicable: the reason on the kernel
    p = compile(dot_graph(128, 256, 256, "f16", false, true), "persistent=1", "v3:128,256,64,64,256,8")
    assert.are.equal("off (one tile)", gemm_of(p).persistent)
    assert.are.equal(0, gemm_of(p).grid_persistent)
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "persistent=1,tma=0")
    assert.are.equal("off (the TMA loop is not taken)", gemm_of(p).persistent)
    -- sm_90 (mma.sync, no TMA)
    p = kiln.compile(dot_graph(512, 512, 256, "f16", false, true), { target = "sm_90", cache = false, pipeline = G.gtb_pipeline("persistent=1") })
    local k90 = G.gemm_of(p, "sm_90")
    assert.are.equal("off (the TMA loop is not taken)", k90.persistent)
    local ok, e = pcall(compile, dot_graph(64, 64, 64, "f16"), "persistent=yes")
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("persistent must be 0, 1 or auto", 1, true), tostring(e))
  end)
  it("gemm_graphs.gtb_extra (KILN_SUITE_PERSISTENT's way in tma_cases / wgmma_cases) adds an option to rock-gridwise-to-blockwise once", function()
    local pl = G.gtb_extra(nil, "persistent=1")
    assert.is_truthy(pl:find("rock-gridwise-to-blockwise{persistent=1}", 1, true), pl)
    assert.are.equal(pl, G.gtb_extra(pl, "persistent=1"))
    local p2 = G.gtb_extra(G.gtb_pipeline("tma=1"), "persistent=1")
    assert.is_truthy(p2:find("rock-gridwise-to-blockwise{tma=1,persistent=1}", 1, true), p2)
    local p = kiln.compile(G.dot(256, 256, 128, "f16", false, true), { target = "sm_90a", cache = false, pipeline = p2 })
    assert.are.equal("on", G.gemm_of(p, "sm_90a").persistent)
  end)
  it("every persistent device case of spec/lua/tma_cases.lua (persist_cases) compiles for sm_90a with persistent as expected", function()
    local T = require "tma_cases"
    local n = 0
    for _, c in ipairs(G.sample(T.persist_cases(), "persist_cases")) do
      local ok, p, k = pcall(T.compile, c)
      assert.is_true(ok, c.name .. ": " .. tostring(p))
      if k.persistent == "on" then n = n + 1 end
    end
    assert.is_true(n >= (os.getenv("KILN_SPEC_SANITIZED") and 3 or 20), "persistent cases: " .. n)
  end)
  it("the TMA loop: the next tile's loads after the tile's wgmma.wait_group 0, before its epilogue's stores", function()
    local p = compile(dot_graph(1024, 1024, 512, "f16", false, true), "persistent=1")
    local k = gemm_of(p)
    local ptx = p:disasm(k.name, "sm_90a")
    local w0 = ptx:find("wgmma.wait_group.sync.aligned 0;", 1, true)
    assert.is_truthy(w0, "wait_group 0")
    -- the wait's block (its barrier, then the branch on thread 0 and a next tile) and the
    -- block it branches to: the next tile's boxes, no global store yet
    local l1 = ptx:find("\n$L__BB", w0, true)
    local l2 = l1 and ptx:find("\n$L__BB", l1 + 1, true)
    local seg = l2 and ptx:sub(w0, l2) or ""
    assert.is_truthy(seg:find("bar.sync", 1, true), "the barrier after the tile's wait_group 0")
    assert.is_truthy(seg:find("cp.async.bulk.tensor", 1, true), "the next tile's TMA boxes after the wait")
    assert.is_nil(seg:find("st.global", 1, true), "the epilogue's stores after the next tile's boxes")
    -- W stages, one init / inval each; the block barriers: after the inits, per K step and the
    -- swizzle's, no more
    assert.are.equal(count(ptx, "mbarrier%.init"), count(ptx, "mbarrier%.inval"))
    assert.are.equal(1, count(ptx, "%%nctaid%.x"))
  end)
  it("ws=1: the producer loops over every tile's steps; two block barriers (the split, the join)", function()
    local p = compile(dot_graph(1024, 1024, 512, "f16", false, true), "persistent=1,ws=1")
    local k = gemm_of(p)
    assert.are.equal("on", k.ws)
    assert.are.equal("on", k.persistent)
    local ptx = p:disasm(k.name, "sm_90a")
    assert.are.equal(2, block_barriers(ptx))
    assert.is_true(count(ptx, "%%nctaid%.x") >= 1)
    assert.are.equal(1, count(ptx, "setmaxnreg%.dec"))
  end)
  -- the benchmark shapes: 4096^3 / 8192^3 f16 with B [N, K] and [K, N], the seed conv at batch
  -- 512, with the TMA loop and ws=1; the output swizzle in its own LDS (applied)
  local function dg(n, bt) return function() return dot_graph(n, n, n, "f16", false, bt) end end
  local shapes = {
    { "4096^3 f16 B^T", dg(4096, true) }, { "4096^3 f16 B [K,N]", dg(4096, false) },
    { "8192^3 f16 B^T", dg(8192, true) }, { "8192^3 f16 B [K,N]", dg(8192, false) },
    { "seed conv n512", G.seed_conv },
  }
  for _, opt in ipairs { "persistent=1", "persistent=1,ws=1" } do
    for _, c in ipairs(shapes) do
      it(c[1] .. " " .. opt, function()
        if G.sanitized(c[1] .. " " .. opt) then return end
        local p = compile(c[2](), opt)
        local k = gemm_of(p)
        assert.are.equal("on", k.persistent)
        assert.are.equal("A,B", k.tma)
        assert.is_truthy(k.output_swizzle:find("^applied"), k.output_swizzle)
        assert.is_true(k.lds_bytes <= 227 * 1024, "LDS " .. k.lds_bytes)
        local ptx = p:disasm(k.name, "sm_90a")
        local log = G.ptxas_v("sm_90a", ptx)
        if log then
          local regs = tonumber(log:match("Used (%d+) registers"))
          local st, ld = log:match("(%d+) bytes spill stores, (%d+) bytes spill loads")
          print(("persist_spec: sm_90a %s %s %s: %d stages, LDS %d, ptxas %d registers, %s/%s spill bytes"):format(
            c[1], opt, k.perf_config, count(ptx, "mbarrier%.init%.shared::cta%.b64 %[[^]]+%], 1;"), k.lds_bytes, regs, st, ld))
          assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
        end
      end)
    end
  end
end)
