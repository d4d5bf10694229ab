-- Thread-block clusters of the sm_90a TMA wgmma GEMMs (rock-gridwise-to-blockwise{cluster=...};
-- passes/rock_tma.h): the kernel's `cluster` / `cluster_size` (p:kernels()), the option's default
-- (1: none) and errors, every device case of spec/lua/tma_cases.lua (cluster_cases) compiling with
-- the cluster as expected, static checks of the PTX (.reqnctapercluster C, the shared operand's
-- cp.async.bulk.tensor .multicast::cluster with %cluster_ctarank, the init's and the end's cluster
-- barriers, in the K loop no barrier but remote arrives on the empty mbarriers: mapa, arrive
-- .shared::cluster), ptxas -arch=sm_90a with 0 spill bytes for the benchmark shapes
-- (skipped with a message where ptxas is absent), and on the host the option changes nothing
-- (no TMA loop there: results against g:eval).
-- Numerics of the protocol: spec/c/test_accel.c (test_cluster: the CTAs of each cluster
-- interpreted together); on the GPU: scripts/gpu_suite.lua (section cluster).
local kiln = require "kiln"
local G = require "gemm_graphs"
local gen = require "fused_gen"
local count, dot_graph = G.count, G.dot
local function gemm_of(p) return G.gemm_of(p, "sm_90a") end
local compile = G.compile_gtb_sm90a

describe("thread-block clusters (sm_90a TMA wgmma GEMMs)", function()
  it("cluster=1 (the default, KL_CLUSTER_DEFAULT_STR) and auto (KL_CLUSTER_AUTO, today 1) take no cluster; shapes are recorded; bad values are errors", function()
    local p = kiln.compile(dot_graph(512, 512, 256, "f16", false, true), { target = "sm_90a", cache = false })
    assert.are.equal("", gemm_of(p).cluster)
    assert.are.equal(0, gemm_of(p).cluster_size)
    local ptx = p:disasm(gemm_of(p).name, "sm_90a")
    assert.is_nil(ptx:find("multicast", 1, true))
    assert.is_nil(ptx:find("reqnctapercluster", 1, true))
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "cluster=auto")
    assert.are.equal("", gemm_of(p).cluster)
    -- 1000 x 520 in 128 x 256 tiles: 8 x 3; 2 = 2x1 (no padding), 1x2 pads N to 4 tiles
    for _, c in ipairs { { "cluster=2", "2x1", 2, 24 }, { "cluster=1x2", "1x2", 2, 32 }, { "cluster=4", "4x1", 4, 24 },
                         { "cluster=1x4", "1x4", 4, 32 }, { "cluster=2x1", "2x1", 2, 24 } } do
      p = compile(dot_graph(1000, 520, 1024, "f16", false, true), c[1], "v3:128,256,64,64,256,8")
      local k = gemm_of(p)
      assert.are.equal(c[2], k.cluster, c[1])
      assert.are.equal(c[3], k.cluster_size, c[1])
      assert.are.equal(c[4], k.grid, c[1])
    end
    -- not applicable: the reason on the kernel
    p = compile(dot_graph(128, 256, 256, "f16", false, true), "cluster=2", "v3:128,256,64,64,256,8")
    assert.are.equal("off (one tile)", gemm_of(p).cluster)
    assert.are.equal(0, gemm_of(p).cluster_size)
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "cluster=2,tma=0")
    assert.are.equal("off (the TMA loop is not taken)", gemm_of(p).cluster)
    -- warp-specialized: the producer warpgroup issues the multicast, the consumers arrive remotely
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "cluster=2,ws=1")
    assert.are.equal("2x1", gemm_of(p).cluster)
    assert.are.equal("on", gemm_of(p).ws)
    p = compile(dot_graph(512, 512, 256, "f16", false, true), "cluster=2,persistent=1")
    assert.is_truthy(gemm_of(p).cluster:find("^off %(persistent tiles"), gemm_of(p).cluster)
    p = kiln.compile(dot_graph(512, 512, 256, "f16", false, true), { target = "sm_90", cache = false, pipeline = G.gtb_pipeline("cluster=2") })
    assert.are.equal("off (the TMA loop is not taken)", G.gemm_of(p, "sm_90").cluster)
    local ok, e = pcall(compile, dot_graph(64, 64, 64, "f16"), "cluster=3")
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("cluster must be 1 (none), 2, 4, 2x1, 4x1, 1x2, 1x4 or auto", 1, true), tostring(e))
  end)
  it("every cluster device case of spec/lua/tma_cases.lua (cluster_cases) compiles for sm_90a with its cluster", function()
    local T = require "tma_cases"
    local n = 0
    for _, c in ipairs(G.sample(T.cluster_cases(), "cluster_cases")) do
      local ok, p, k = pcall(T.compile, c)
      assert.is_true(ok, c.name .. ": " .. tostring(p))
      if k.cluster_size > 1 then n = n + 1 end
    end
    assert.is_true(n >= (os.getenv("KILN_SPEC_SANITIZED") and 3 or 19), "cluster cases: " .. n)
  end)
  it("the PTX: .reqnctapercluster, the shared operand's boxes multicast by %cluster_ctarank, empty mbarriers with remote arrives in place of the K loop's block barrier", function()
    local p = compile(dot_graph(1024, 1024, 512, "f16", false, true), "cluster=2x1", "v3:128,256,64,64,256,8")
    local k = gemm_of(p)
    local ptx = p:disasm(k.name, "sm_90a")
    assert.are.equal(1, count(ptx, "%.reqnctapercluster 2, 1, 1"))
    local mc = count(ptx, "%.multicast::cluster %[")
    assert.is_true(mc >= 1, "multicast loads " .. mc)
    assert.are.equal(mc, count(ptx, "mov%.u32 kr, %%cluster_ctarank;"))
    -- the plain loads (A, the CTA's own) as many as the multicast ones (B: one box per K panel)
    assert.are.equal(mc, count(ptx, "complete_tx::bytes %["))
    -- the init and the end: cluster barriers (not .aligned: a convergent call of the plain form,
    -- passes/lower_tma.c; one instance after the mbarrier init, where LLVM had put one in each arm
    -- of thread 0's branch and the H100 hung on the .aligned form); none in the K loop: slot reuse
    -- through per-stage empty mbarriers (count: 2 warpgroups x C = 4), each warpgroup's lanes 0 ..
    -- C-1 arriving remotely (mapa + mbarrier.arrive.shared::cluster, CUTLASS's form: no
    -- .release.cluster, whose SASS has a MEMBAR.ALL.GPU) on every CTA's empty[s] after its
    -- wait_group, thread 0 waiting before the refill
    assert.are.equal(2, count(ptx, "barrier%.cluster%.arrive%.release;"))
    assert.are.equal(2, count(ptx, "barrier%.cluster%.wait%.acquire;"))
    assert.are.equal(0, count(ptx, "barrier%.cluster[%.%w]*%.aligned"))
    assert.is_true(count(ptx, "mbarrier%.init%.shared::cta%.b64 %[[^%]]+%], 4;") >= 3)
    local ra = count(ptx, "mbarrier%.arrive%.shared::cluster%.b64 _, %[ra%];")
    assert.is_true(ra >= 1, "remote arrives " .. ra)
    assert.are.equal(ra, count(ptx, "mapa%.shared::cluster%.u32 ra, "))
    local first_load = ptx:find("cp.async.bulk.tensor", 1, true)
    assert.are.equal(1, count(ptx:sub(1, first_load), "barrier%.cluster%.arrive"), "one cluster barrier after the init")
    local first_mma = ptx:find("wgmma.mma_async", 1, true)
    local last_wait = select(2, ptx:find(".*wgmma%.wait_group%.sync%.aligned 0;"))
    local between = ptx:sub(first_mma, last_wait)
    assert.is_nil(between:find("bar%.sync%s+0;") or between:find("barrier%.sync%s+0;"), "a block barrier in the K loop")
    assert.is_nil(between:find("barrier.cluster", 1, true), "a cluster barrier in the K loop")
    assert.is_truthy(between:find("mapa.shared::cluster", 1, true), "the remote arrives in the K loop")
    -- ws=1: the same protocol between the producer warpgroup and the consumers; empty[s] counts
    -- one arrival per consumer warpgroup and CTA (2 x 2); the join a cluster barrier
    p = compile(dot_graph(1024, 1024, 512, "f16", false, true), "cluster=2x1,ws=1", "v3:128,256,64,64,256,8")
    k = gemm_of(p)
    assert.are.equal("on", k.ws)
    ptx = p:disasm(k.name, "sm_90a")
    assert.are.equal(2, count(ptx, "barrier%.cluster%.arrive%.release;"))
    assert.is_true(count(ptx, "mbarrier%.init%.shared::cta%.b64 %[[^%]]+%], 4;") >= 3)
    assert.is_true(count(ptx, "mbarrier%.arrive%.shared::cluster%.b64 _, %[ra%];") >= 1)
    assert.are.equal(0, count(ptx, "mbarrier%.arrive%.shared::cta%.b64"), "a local every-thread arrive")
    assert.is_true(count(ptx, "%.multicast::cluster %[") >= 1)
    -- MN-major B shared: its panels multicast (rank 3 maps: batch)
    p = compile(G.dot(256, 512, 128, "f16", false, false), "cluster=2x1", "v3:128,256,32,64,256,8")
    k = gemm_of(p)
    assert.are.equal("2x1", k.cluster)
    assert.is_true(count(p:disasm(k.name, "sm_90a"), "%.multicast::cluster %[") >= 1)
  end)
  -- the benchmark shapes (bench/gpu_cases.txt @c2 / @c4): 4096^3 / 8192^3 f16, bf16 4096^3,
  -- 1500x3840x1280, the seed conv at batch 512
  local function dg(m, n, k, dt) return function() return dot_graph(m, n, k, dt or "f16", false, true) end end
  local shapes = {
    { "4096^3 f16", dg(4096, 4096, 4096) }, { "8192^3 f16", dg(8192, 8192, 8192) },
    { "4096^3 bf16", dg(4096, 4096, 4096, "bf16") }, { "1500x3840x1280 f16", dg(1500, 3840, 1280) },
    { "seed conv n512", G.seed_conv },
  }
  for _, opt in ipairs { "cluster=2", "cluster=4", "cluster=2,ws=1" } do
    for _, c in ipairs(shapes) do
      it(c[1] .. " " .. opt .. ": ptxas sm_90a 0 spill bytes", function()
        if G.sanitized(c[1] .. " " .. opt) then return end
        local p = compile(c[2](), opt)
        local k = gemm_of(p)
        assert.are.equal("A,B", k.tma)
        assert.is_true(k.cluster_size > 1, k.cluster)
        assert.are.equal(0, k.grid % k.cluster_size)
        local ptx = p:disasm(k.name, "sm_90a")
        assert.is_truthy(ptx:find(".multicast::cluster", 1, true))
        assert.is_truthy(ptx:find(".reqnctapercluster " .. k.cluster_size .. ", 1, 1", 1, true))
        local log = G.ptxas_v("sm_90a", ptx)
        if not log then
          print("cluster_spec: ptxas not found: the spill check of " .. c[1] .. " " .. opt .. " skipped")
          return
        end
        local regs = tonumber(log:match("Used (%d+) registers"))
        local st, ld = log:match("(%d+) bytes spill stores, (%d+) bytes spill loads")
        print(("cluster_spec: sm_90a %s %s %s: cluster %s, grid %d, ptxas %d registers, %s/%s spill bytes"):format(
          c[1], opt, k.perf_config, k.cluster, k.grid, regs or -1, st or "?", ld or "?"))
        assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
      end)
    end
  end
  it("on the host the option changes nothing (no TMA loop there): results against g:eval", function()
    for _, c in ipairs { { 70, 72, 40, true }, { 130, 100, 56, false } } do
      local g = G.dot(c[1], c[2], c[3], "f16", c[4], not c[4])
      local inputs = { a = kiln.rand(c[4] and { c[3], c[1] } or { c[1], c[3] }, "f16", { dist = "normal" }),
                       b = kiln.rand(c[4] and { c[3], c[2] } or { c[2], c[3] }, "f16", { dist = "normal" }) }
      local p = kiln.compile(g, { target = "host", cache = false, pipeline = G.gtb_pipeline("cluster=2") })
      local got, want = p:run(inputs), g:eval(inputs)
      local good, report = gen.check(got, want, "f16")
      assert.is_true(good, report.summary)
    end
  end)
end)
