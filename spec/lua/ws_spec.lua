-- Warp-specialized TMA K loops of wgmma GEMMs (sm_90a, rock-gridwise-to-blockwise{ws=1};
-- passes/rock_tma.h): a producer warpgroup after the consumer warpgroups issues the TMA
-- boxes on per-stage full / empty mbarriers. Static checks of the PTX: .target sm_90a,
-- .maxntid = the consumers + 128, .maxnreg the most that allows (ptxas allocates exactly
-- that: checked), setmaxnreg.dec in the producer and .inc in the consumers (within what the
-- drop frees), try_wait on both mbarrier sets (full: expect_tx by the producer; empty:
-- plain arrivals of the consumers), the only block barriers (bar.sync 0) the one before
-- the split and the join, every other barrier the consumers' named barrier (barrier.sync 1,
-- nc); ptxas -arch=sm_90a (when the toolkit is on the machine) with 0 spill bytes for the
-- benchmark shapes (printed: registers). Numerics: spec/c/test_accel.c (test_ws, the
-- interpreter runs the roles as coroutines) and the gpu-tagged cases of scripts/gpu_suite.lua.
local kiln = require "kiln"
local find_ptxas = require "ptxas_tool"
local ptxas = find_ptxas()

local G = require "gemm_graphs"
local count, dot_graph = G.count, G.dot
local ws_pipeline = G.gtb_pipeline
local function gemm_of(p) return G.gemm_of(p, "sm_90a") end

-- the static shape of a warp-specialized kernel's PTX for nc consumer threads
local function check_ws_ptx(ptx, nc, what)
  assert.is_truthy(ptx:find("\n.target sm_90a", 1, true), what .. ": .target sm_90a")
  assert.is_truthy(ptx:find((".maxntid %d, 1, 1"):format(nc + 128), 1, true), what .. ": .maxntid")
  assert.are.equal(1, count(ptx, "setmaxnreg%.inc%.sync%.aligned%.u32 %d+;"), what .. ": setmaxnreg.inc")
  assert.are.equal(1, count(ptx, "setmaxnreg%.dec%.sync%.aligned%.u32 40;"), what .. ": setmaxnreg.dec")
  -- the registers at launch pinned by .maxnreg (the most .maxntid allows); the consumers'
  -- raise fits what the producer's drop frees: a setmaxnreg.inc that waits for registers
  -- the block never had would hang the kernel
  local r0 = tonumber(ptx:match("\n%.maxnreg (%d+)"))
  local inc = tonumber(ptx:match("setmaxnreg%.inc%.sync%.aligned%.u32 (%d+);"))
  assert.is_truthy(r0, what .. ": .maxnreg")
  assert.are.equal(math.min(248, 65536 // (nc + 128) // 8 * 8), r0, what .. ": .maxnreg")
  assert.is_true(inc >= r0 and inc <= 256 and inc % 8 == 0 and nc * inc + 128 * 40 <= (nc + 128) * r0,
                 ("%s: setmaxnreg.inc %d with %d at launch for %d consumers"):format(what, inc, r0, nc))
  -- full (producer: expect_tx; consumers wait) and empty (consumers arrive; producer waits)
  assert.is_true(count(ptx, "mbarrier%.arrive%.expect_tx%.shared::cta%.b64") > 0, what .. ": expect_tx")
  assert.is_true(count(ptx, "mbarrier%.arrive%.shared::cta%.b64 _") > 0, what .. ": empty arrivals")
  assert.are.equal(2 * count(ptx, "mbarrier%.init%.shared::cta%.b64 %[[^]]+%], 1;"),
                   count(ptx, "mbarrier%.init%.shared::cta%.b64"), what .. ": as many empty as full mbarriers")
  assert.is_true(count(ptx, ("mbarrier%%.init%%.shared::cta%%.b64 %%[[^]]+%%], %d;"):format(nc)) > 0,
                 what .. ": empty mbarriers expect every consumer thread")
  assert.is_true(count(ptx, "mbarrier%.try_wait%.parity%.shared::cta%.b64") >= 2, what .. ": try_wait")
  -- the block barriers: before the split (after the inits) and the join (before the invals);
  -- every other barrier the consumers' named one
  local block, named, other = 0, 0, {}
  for line in ptx:gmatch("[^\n]+") do
    local b = line:match("^%s*(bar[%w%.]*%s+[^;]+);")
    if b and (b:match("^bar%.sync%s+0$") or b:match("^barrier%.sync%s+0$")) then
      block = block + 1
    elseif b and b:match("^barrier%.sync%s+1,%s*" .. nc .. "$") or (b and b:match("^bar%.sync%s+1,%s*" .. nc .. "$")) then
      named = named + 1
    elseif b then
      other[#other + 1] = b
    end
  end
  assert.are.equal(2, block, what .. ": block barriers (bar.sync 0)")
  assert.are.same({}, other, what .. ": other barriers")
  local first_inc = ptx:find("setmaxnreg.inc", 1, true)
  local first_bar = ptx:find("bar.sync \t0", 1, true) or ptx:find("bar.sync 0", 1, true)
  assert.is_true(first_bar ~= nil and first_bar < first_inc, what .. ": the first block barrier before the split")
  return named
end

describe("warp-specialized TMA wgmma GEMMs (sm_90a)", function()
  if not ptxas then print("ws_spec: ptxas not found: ptxas checks skipped") end
  it("ws=0 (the default, KL_WS_DEFAULT_STR) and ws=auto (KL_WS_AUTO: measured no faster) keep the TMA loop; ws=1 records `ws`; ws needs both operands through TMA; bad values are errors", function()
    local p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false })
    assert.are.equal("", gemm_of(p).ws)
    assert.is_nil(p:disasm(gemm_of(p).name, "sm_90a"):find("setmaxnreg", 1, true))
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = ws_pipeline("ws=auto") })
    assert.are.equal("", gemm_of(p).ws)
    assert.are.equal("A,B", gemm_of(p).tma)
    assert.is_nil(p:disasm(gemm_of(p).name, "sm_90a"):find("setmaxnreg", 1, true))
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = ws_pipeline("ws=1") })
    assert.are.equal("on", gemm_of(p).ws)
    assert.are.equal("A,B", gemm_of(p).tma)
    -- B [K, N] with tma-swizzle=none stays on registers: the TMA loop, ws off with the reason
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = ws_pipeline("ws=1,tma-swizzle=none") })
    assert.are.equal("A", gemm_of(p).tma)
    assert.are.equal("off (not both operands through TMA)", gemm_of(p).ws)
    -- TMA off: no TMA loop to specialize (ws stays "")
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = ws_pipeline("tma=0,ws=1") })
    assert.are.equal("", gemm_of(p).tma)
    assert.is_nil(p:disasm(gemm_of(p).name, "sm_90a"):find("setmaxnreg", 1, true))
    local ok, e = pcall(kiln.compile, dot_graph(64, 64, 64, "f16"), { target = "sm_90a", cache = false, pipeline = ws_pipeline("ws=yes") })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("ws must be 0, 1 or auto", 1, true), tostring(e))
  end)
  it("every warp-specialized device case of spec/lua/tma_cases.lua (ws_cases) compiles for sm_90a with ws as expected", function()
    local T = require "tma_cases"
    local n = 0
    for _, c in ipairs(T.ws_cases()) do
      local ok, p, k = pcall(T.compile, c)
      assert.is_true(ok, c.name .. ": " .. tostring(p))
      if k.ws == "on" then
        check_ws_ptx(p:disasm(k.name, "sm_90a"), k.block_size and k.block_size - 128 or tonumber(p:disasm(k.name, "sm_90a"):match("%.maxntid (%d+), 1, 1")) - 128, c.name)
        n = n + 1
      end
    end
    assert.is_true(n >= 12, "warp-specialized cases: " .. n)
  end)
  -- the benchmark shapes: 4096^3 f16 with B [N, K] and [K, N], the seed conv at batch 512
  -- (NHWC 1x1 2048 -> 512 on 7x7 + residual + relu: the epilogue's LDS output swizzle
  -- behind the named barrier)
  local function dg(n, bt) return function() return dot_graph(n, n, n, "f16", false, bt) end end
  local cases = {
    { "4096^3 f16 B^T", dg(4096, true), nil },
    { "4096^3 f16 B [K,N]", dg(4096, false), nil },
    { "4096^3 f16 B^T KB 32", dg(4096, true), "v3:128,256,32,64,256,8" },
    { "8192^3 f16 B [K,N]", dg(8192, false), nil },
    { "seed conv n512", G.seed_conv, nil },
    -- one consumer warpgroup (block 256: 248 registers at launch, 256 after the raise) and
    -- four (block 640: 96, 104)
    { "1024^3 f16 B^T 64x64", function() return dot_graph(1024, 1024, 1024, "f16", false, true) end, "v3:64,64,16,64,64,8" },
    { "1024^3 f16 B^T 256x128 4 warpgroups", function() return dot_graph(1024, 1024, 1024, "f16", false, true) end, "v3:256,128,64,64,128,8" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local p = kiln.compile(c[2](), { target = "sm_90a", cache = false, perf_config = c[3], pipeline = ws_pipeline("ws=1") })
      local k = gemm_of(p)
      assert.are.equal("on", k.ws)
      assert.are.equal("A,B", k.tma)
      local ptx = p:disasm(k.name, "sm_90a")
      local nc = tonumber(ptx:match("%.maxntid (%d+), 1, 1")) - 128
      local named = check_ws_ptx(ptx, nc, c[1])
      if c[1]:find("seed conv", 1, true) then
        assert.is_truthy(k.output_swizzle:find("^applied"), k.output_swizzle)
        assert.is_true(named >= 2, "the output swizzle's barriers named")
      end
      if ptxas then
        local log = G.ptxas_v("sm_90a", ptx)
        local regs = tonumber(log:match("Used (%d+) registers"))
        assert.is_truthy(regs, "ptxas: " .. log)
        local st, ld = log:match("(%d+) bytes spill stores, (%d+) bytes spill loads")
        assert.are.equal(tonumber(ptx:match("\n%.maxnreg (%d+)")), regs, "ptxas: the registers at launch")
        print(("ws_spec: sm_90a %s %s ws: block %d, ptxas %d registers, %s/%s spill bytes, %d named barriers"):format(
          c[1], k.perf_config, nc + 128, regs, st, ld, named))
        assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
      end
    end)
  end
end)
