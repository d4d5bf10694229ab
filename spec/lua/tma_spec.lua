-- TMA + mbarrier K loops of wgmma GEMMs (sm_90a, rock-gridwise-to-blockwise{tma=1};
-- passes/rock_tma.h): the K-major operands load through cp.async.bulk.tensor completing on
-- mbarriers, the kernel takes one 128-byte grid_constant tensor-map parameter per map, and
-- the kernel's `tma` attribute names the operands; ptxas -arch=sm_90a (when the toolkit is
-- on the machine) accepts the PTX with 0 spill bytes for the large tiles at kPerBlock 32
-- and 64 (printed: registers). Numerics: spec/c/test_accel.c (the interpreter) and the
-- gpu-tagged cases of scripts/gpu_suite.lua.
local kiln = require "kiln"
local find_ptxas = require "ptxas_tool"
local ptxas = find_ptxas()

local G = require "gemm_graphs"
local count, dot_graph = G.count, G.dot
local function tma_pipeline(opt) return G.gtb_pipeline("tma=" .. opt) end
local function gemm_of(p) return G.gemm_of(p, "sm_90a") end
local function ptxas_log(ptx) return G.ptxas_v("sm_90a", ptx) end

describe("TMA + mbarrier wgmma GEMMs (sm_90a)", function()
  if not ptxas then print("tma_spec: ptxas not found: ptxas checks skipped") end
  it("on by default (KL_TMA_DEFAULT_STR); tma=0 keeps the register loop; tma=1 records the operands; bad option values are errors", function()
    local p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false })
    assert.are.equal("A,B", gemm_of(p).tma)
    assert.is_truthy(p:disasm(gemm_of(p).name, "sm_90a"):find("cp.async.bulk.tensor", 1, true))
    -- the access list counts the TMA boxes as loads of both inputs (driver/kernel_access.h)
    local loads = {}
    for _, x in ipairs(gemm_of(p).accesses) do
      if x.kind == "load" then loads[#loads + 1] = x.arg .. ":" .. x.bytes end
    end
    assert.are.equal(2, #loads, table.concat(loads, " "))
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = tma_pipeline(0) })
    assert.are.equal("", gemm_of(p).tma)
    assert.is_nil(p:disasm(gemm_of(p).name, "sm_90a"):find("cp.async.bulk.tensor", 1, true))
    -- A [M,K] row-major: K-major; B [K,N] row-major: MN-major, both through TMA (the MN-major
    -- tile swizzled always); with tma-swizzle=none B keeps the register path
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = tma_pipeline(1) })
    assert.are.equal("A,B", gemm_of(p).tma)
    assert.are.equal(128, gemm_of(p).tma_swizzle)
    p = kiln.compile(dot_graph(256, 256, 256, "f16"), { target = "sm_90a", cache = false, pipeline = tma_pipeline("1,tma-swizzle=none") })
    assert.are.equal("A", gemm_of(p).tma)
    p = kiln.compile(dot_graph(256, 256, 256, "bf16", false, true), { target = "sm_90a", cache = false, pipeline = tma_pipeline(1) })
    assert.are.equal("A,B", gemm_of(p).tma)
    p = kiln.compile(dot_graph(256, 256, 256, "f16", true, false), { target = "sm_90a", cache = false, pipeline = tma_pipeline(1) })
    assert.are.equal("A,B", gemm_of(p).tma)
    p = kiln.compile(dot_graph(256, 256, 256, "f16", true, false), { target = "sm_90a", cache = false, pipeline = tma_pipeline("1,tma-swizzle=none") })
    assert.is_truthy(gemm_of(p).tma:find("^none %(A: MN%-major"), gemm_of(p).tma)
    assert.are.equal(0, gemm_of(p).tma_swizzle)
    local ok, e = pcall(kiln.compile, dot_graph(64, 64, 64, "f16"), { target = "sm_90a", cache = false, pipeline = tma_pipeline("1,tma-swizzle=16") })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("tma-swizzle must be 128, 64, 32 or none", 1, true), tostring(e))
    for _, bad in ipairs { "2", "7", "-1" } do
      local ok, e = pcall(kiln.compile, dot_graph(64, 64, 64, "f16"), { target = "sm_90a", cache = false, pipeline = tma_pipeline(bad) })
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find("tma must be 0 (off), 1 (on", 1, true), tostring(e))
    end
  end)
  -- the benchmark shapes: GEMMs (B^T: both operands K-major) and the seed conv at batch 512
  -- (1x1 NHWC 2048 -> 512, 7x7: both operands K-major boxes); the TMA tiles 128-byte swizzled
  -- at K tiles of 64 (one box {64, rows} per operand and stage), 64-byte at 32 (tma-swizzle's
  -- default), and the unswizzled boxes {8, rows} with tma-swizzle=none
  local function dg(n, bt) return function() return dot_graph(n, n, n, "f16", false, bt) end end
  local cases = {
    { "4096^3 f16 B^T KB 32", dg(4096, true), "v3:128,256,32,64,256,8", "A,B", "1", 64 },
    { "4096^3 f16 B^T KB 64", dg(4096, true), "v3:128,256,64,64,256,8", "A,B", "1", 128 },
    { "4096^3 f16 B^T KB 64 no swizzle", dg(4096, true), "v3:128,256,64,64,256,8", "A,B", "1,tma-swizzle=none", 0 },
    { "8192^3 f16 B^T KB 32", dg(8192, true), "v3:128,256,32,64,256,8", "A,B", "1", 64 },
    { "8192^3 f16 B^T KB 64", dg(8192, true), "v3:128,256,64,64,256,8", "A,B", "1", 128 },
    -- B [K, N] (MN-major) through TMA too: the 128-byte swizzled MN-major tile, imm-trans-b
    { "4096^3 f16 KB 32", dg(4096, false), "v3:128,256,32,64,256,8", "A,B", "1", 128 },
    { "4096^3 f16 KB 64", dg(4096, false), "v3:128,256,64,64,256,8", "A,B", "1", 128 },
    { "4096^3 f16 KB 64 no swizzle", dg(4096, false), "v3:128,256,64,64,256,8", "A", "1,tma-swizzle=none", 0 },
    { "8192^3 f16 KB 32", dg(8192, false), "v3:128,256,32,64,256,8", "A,B", "1", 128 },
    { "8192^3 f16 KB 64", dg(8192, false), "v3:128,256,64,64,256,8", "A,B", "1", 128 },
    { "seed conv n512 heuristic", G.seed_conv, nil, "A,B", "1", 128 },
    { "seed conv n512 KB 64", G.seed_conv, "v3:128,256,64,64,256,8", "A,B", "1", 128 },
    { "seed conv n512 KB 64 no swizzle", G.seed_conv, "v3:128,256,64,64,256,8", "A,B", "1,tma-swizzle=none", 0 },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local p = kiln.compile(c[2](), { target = "sm_90a", cache = false, perf_config = c[3], pipeline = tma_pipeline(c[5]) })
      local k = gemm_of(p)
      assert.are.equal(c[4], k.tma)
      assert.are.equal(c[6], k.tma_swizzle)
      local ptx = p:disasm(k.name, "sm_90a")
      local ntma = count(ptx, "cp%.async%.bulk%.tensor%.%dd%.shared::cluster%.global%.mbarrier::complete_tx::bytes")
      assert.is_true(ntma > 0, "cp.async.bulk.tensor")
      assert.is_true(count(ptx, "mbarrier%.try_wait%.parity%.shared::cta%.b64") > 0, "mbarrier.try_wait.parity")
      assert.is_true(count(ptx, "mbarrier%.arrive%.expect_tx%.shared::cta%.b64") > 0, "arrive.expect_tx")
      assert.is_true(count(ptx, "mbarrier%.init%.shared::cta%.b64") > 0, "mbarrier.init")
      assert.are.equal(c[4] == "A,B" and 2 or 1, count(ptx, "%.param %.align 64 %.b8 [%w_]+%[128%]"), "tensor-map params")
      assert.is_true(count(ptx, "wgmma%.mma_async") > 0)
      -- an MN-major B: every wgmma with imm-trans-b 1 (the last of its immediates)
      if c[1]:find("^%d+^3 f16 KB") and c[4] == "A,B" then
        assert.is_true(count(ptx, "p, 1, 1, 0, 1;") > 0, "imm-trans-b")
        assert.are.equal(0, count(ptx, "p, 1, 1, 0, 0;"), "imm-trans-b")
      end
      -- swizzled tiles: the dynamic shared memory 1024-byte aligned (the swizzle's XOR is
      -- taken from the absolute address)
      if c[6] == 128 then assert.is_truthy(ptx:find(".extern .shared .align 1024 .b8 __kiln_dyn_lds[]", 1, true)) end
      if ptxas then
        local log = ptxas_log(ptx)
        local regs = tonumber(log:match("Used (%d+) registers"))
        assert.is_truthy(regs, "ptxas: " .. log)
        local st, ld = log:match("(%d+) bytes spill stores, (%d+) bytes spill loads")
        print(("tma_spec: sm_90a %s %s tma=%s swizzle %d: %d TMA issues, ptxas %d registers, %s/%s spill bytes"):format(
          c[1], k.perf_config, k.tma, k.tma_swizzle, ntma, regs, st, ld))
        assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
      end
    end)
  end
  -- The mbarriers of a dynamic-shared-memory kernel (PTX: mbarrier.init [%rN] with %rN =
  -- the dynamic base + an offset) end within the kernel's lds_bytes, the launch's dynamic
  -- shared memory: the 3x3 conv (the im2col operand on registers, its skewed tiles not a
  -- multiple of the 128-byte TMA alignment) had them 32 bytes past it (the alignment
  -- padding uncounted): CUDA_ERROR_ILLEGAL_ADDRESS on the H100.
  local function mbarriers_within(ptx, lds_bytes, name)
    if not ptx:find("__kiln_dyn_lds", 1, true) then return end
    local off, n = {}, 0
    for r, o in ptx:gmatch("add%.s32%s+(%%r%d+),%s*%%r%d+,%s*(%d+);") do off[r] = tonumber(o) end
    for r in ptx:gmatch("mbarrier%.init%.shared::cta%.b64%s+%[(%%r%d+)%]") do
      assert.is_truthy(off[r], name .. ": the offset of mbarrier register " .. r)
      assert.is_true(off[r] + 8 <= lds_bytes,
                     ("%s: an mbarrier at dynamic shared byte %d, the launch passes %d"):format(name, off[r], lds_bytes))
      n = n + 1
    end
    return n
  end
  it("every device case of spec/lua/tma_cases.lua compiles for sm_90a with the expected operands", function()
    local T = require "tma_cases"
    local checked = 0
    for _, c in ipairs(T.cases()) do
      local ok, p, k = pcall(T.compile, c)
      assert.is_true(ok, c.name .. ": " .. tostring(p))
      checked = checked + (mbarriers_within(p:disasm(k.name, "sm_90a"), k.lds_bytes, c.name) or 0)
    end
    assert.is_true(checked > 0, "no mbarrier of a dynamic-LDS kernel checked")
  end)
end)
