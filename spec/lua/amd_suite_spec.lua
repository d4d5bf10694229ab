-- amd_suite_spec.lua — static checks on the benchmark suite's kernels (spec/lua/amd_cases.lua:
-- GEMM 4096^3 f16 / bf16 / f32, 8192x320x1280, 384x2304x768, the seed 1x1 conv at batch 1
-- and 512, ResNet-50's 3x3 convs; all with the heuristic's perf config) on gfx90a, gfx942,
-- gfx1100 and gfx1030, read from the code objects (p:kernels(t)[i].amdgpu,
-- driver/amdgpu_stats.h):
--  * no scratch and no spills at any heuristic choice, in every kernel of the suite;
--  * barriers (amd_isa_spec.lua's checks, on every kernel of the suite): no cache
--    write-back / invalidate instruction, no fence without a syncscope in the LLVM IR;
--  * the no-matrix GEMMs (gfx1030; f32 on gfx1100): fused multiply-adds, a multiple of the
--    thread tile per innermost loop, no v_mul_f32 feeding an add (amd_isa.fma_findings,
--    whose bad patterns amd_fma_spec.lua shows);
--  * gfx942, M, N, K >= 2048: block tile at least 256x128;
--  * the heuristic's K loop (kl_accel_amd_k_tile): gfx1100 4096^3 and 8192x320x1280 f16 / bf16
--    take 256x64x32 double-buffered (one barrier per K step, loads in flight across it, no
--    spills, occupancy at least the K-64 tile's), gfx90a keeps 256x128x64;
--  * the seed conv (n512) and the 3x3 conv (c64) on gfx942 and gfx90a: at least 2 waves per
--    SIMD, no scratch (the old gfx942 picks, given, show occupancy 1);
--  * software pipelining (passes/amdgpu_sched.h): in the main loop (the innermost loop with
--    the most v_mfma / v_wmma) of every GEMM kernel on gfx90a, gfx942, gfx1100 and gfx908
--    (gfx1030 has no matrix loop) the first global_load comes before the first matrix
--    instruction and no s_waitcnt vmcnt(0) sits between the last global_load and the
--    back-edge nor, following the loop across the back-edge, before its first s_barrier
--    (amd_isa.pipelining), padded tiles and convs included
--    (their bounds-masked loads sit behind exec-mask branches, passes/rock_lower_loops.c;
--    LLVM's rotated loop is read from its entry, amd_isa.loops) and on gfx1100 (LLVM 19
--    gives gfx11 no back-off barrier: every s_barrier waits for the loads, so the AMD K
--    loop has no barrier between the loads and the back-edge);
--  * no s_waitcnt vmcnt(0) between a global_load of the main loop and the next s_barrier
--    (amd_isa.loads_to_barrier: the loads stay in flight across the barrier; gfx1100's
--    barrier is inline assembly, passes/lower_barrier.h), every suite GEMM on gfx90a,
--    gfx942, gfx1100 and gfx908, the kpack-1 f32 tiles included (their register copies into the
--    LDS stores' pairs stay below the barrier: kl_amdgpu_pin_pair_stores,
--    passes/amdgpu_sched.h; the old gfx90a f32 loop, kept below, fails both checks);
--  * at most two barriers per K step in every main loop, one where the LDS is
--    double-buffered (two workgroups with two tile pairs fit the LDS, or two pairs fit at
--    no occupancy cost: gfx1100's 128x64x64 seed conv; a forced single-buffered loop,
--    rock-gridwise-to-blockwise{amd-k-loop=1}, shows two);
--  * gfx942 4096^3 f16 / bf16 (the heuristic's 256x256x32): the unpadded xor LDS tiles
--    (amd-lds-layout auto), double-buffered: one s_barrier per K step (two in the loop
--    body of two K steps), LDS <= 64 KiB, scratch 0, no spills; the skewed tiles
--    (amd-lds-layout=skew) keep two barriers per step; every suite GEMM whose kernel
--    takes the xor tiles has one barrier per K step;
--  * no ds_write_b16 / ds_write_b8 (ds_store_b16 / b8 on gfx11) in the main loop of f16 /
--    bf16 GEMMs on gfx90a, gfx942 and gfx1100 (kpack 8: 16-byte LDS rows; a transposed
--    copy keeps two K elements per thread, one 4-byte store: rock-gridwise-to-blockwise);
--  * every kpack-1 suite GEMM (f32 MFMA, the FMA path) takes the xor1 LDS tiles (their bank
--    count: spec/c/test_accel.c, test_banks_amd_other);
--  * reductions and softmax (8192x8192 f16, 64x262144 f32): grid x block >= one wave per CU,
--    and their loads are 16 bytes wide (global_load_dwordx4 / global_load_b128: a lane
--    reads contiguous bytes);
--  * element-wise add (f32, f16): 16-byte loads only (no dword / short loads) and at most
--    one exec-mask branch (s_cbranch_execz / s_and_saveexec) per thread.
-- Each check also runs on a kernel built to break it (a perf config given on purpose) or
-- on the old pattern's text (here, amd_isa_spec.lua and amd_fma_spec.lua). That lanes
-- read contiguous bytes is spec/c/test_accel.c's (test_amd_lanes: the interpreter).
local kiln = require "kiln"
local C = require "amd_cases"
local isa = require "amd_isa"

local compiled = {}
local function compile(c)
  if not compiled[c[1]] then compiled[c[1]] = kiln.compile(c[3](kiln), { targets = C.TARGETS, cache = false }) end
  return compiled[c[1]]
end

-- findings: "<kernel>: scratch N" / "spills v/s" for a kernel's amdgpu stats
local function spills(k)
  local s, out = k.amdgpu, {}
  if s.scratch_bytes ~= 0 then out[#out + 1] = k.name .. ": scratch " .. s.scratch_bytes end
  if s.vgpr_spills ~= 0 or s.sgpr_spills ~= 0 then
    out[#out + 1] = k.name .. ": spills " .. s.vgpr_spills .. "/" .. s.sgpr_spills
  end
  return out
end

-- findings: the block tile of a GEMM kernel when smaller than 256x128 (either way round)
local function small_tile(k)
  local mb, nb = k.perf_config:match("^v%d:(%d+),(%d+),")
  mb, nb = tonumber(mb), tonumber(nb)
  if not mb then return { k.name .. ": no perf config" } end
  if (mb >= 256 and nb >= 128) or (mb >= 128 and nb >= 256) then return {} end
  return { ("%s: block tile %dx%d (%s)"):format(k.name, mb, nb, k.perf_config) }
end

describe("AMDGPU static checks find the bad patterns", function()
  it("a 256-AGPR tile spills on gfx942; a 256x32 tile is below 256x128", function()
    local g = kiln.graph("bad_spill")
    g:output(g:dot(g:param("a", { 512, 512 }, "f16"), g:param("b", { 512, 512 }, "f16")))
    local p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:256,256,32,128,128,8", cache = false })
    local k = p:kernels("gfx942")[1]
    assert.is_true(#spills(k) > 0, "the spill check reports the bad config")
    p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:256,32,64,64,32,4", cache = false })
    assert.are.equal(1, #small_tile(p:kernels("gfx942")[1]))
  end)
end)

-- the main loop of a gfx942 GEMM as LLVM 19 scheduled it before passes/amdgpu_sched.c: the
-- next tile's loads sunk behind the MFMAs; and a loop that drains its loads before the
-- back-edge
local OLD_LOOP = ".L100:\n\tds_write_b128 v49, v[32:35]\n\ts_barrier\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[78:79], v[82:83], a[0:15]\n\tglobal_load_dwordx4 v[32:35], v[40:41], off\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[80:81], v[82:83], a[0:15]\n\ts_cbranch_scc1 65389 ; .L100\n"
local DRAIN_LOOP = ".L100:\n\tglobal_load_dwordx4 v[32:35], v[40:41], off\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[78:79], v[82:83], a[0:15]\n\ts_waitcnt vmcnt(0)\n" ..
  "\tds_write_b128 v49, v[32:35]\n\ts_cbranch_scc1 65389 ; .L100\n"

local SELECT_LOOP = ".L100:\n\tds_write_b128 v49, v[32:35]\n\ts_barrier\n\tglobal_load_dwordx4 v[32:35], v[40:41], off\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[78:79], v[82:83], a[0:15]\n\ts_waitcnt vmcnt(0)\n" ..
  "\tv_cndmask_b32_e32 v32, 0, v32, vcc\n\tv_mfma_f32_32x32x8_f16 a[0:15], v[80:81], v[82:83], a[0:15]\n" ..
  "\ts_cbranch_scc1 65389 ; .L100\n"
local ROTATED_LOOP = "\ts_branch 97 ; .L200\n.L100:\n\ts_or_b64 exec, exec, s[4:5]\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[78:79], v[82:83], a[0:15]\n\ts_waitcnt vmcnt(0)\n\ts_barrier\n" ..
  "\ts_cbranch_scc1 76 ; .L300\n.L200:\n\tds_write_b128 v49, v[32:35]\n\ts_barrier\n" ..
  "\ts_and_saveexec_b64 s[4:5], vcc\n\ts_cbranch_execz 65372 ; .L100\n" ..
  "\tglobal_load_dwordx4 v[32:35], v[40:41], off\n\ts_branch 65363 ; .L100\n.L300:\n\ts_endpgm\n"

-- the main loop of gfx90a's 4096^3 f32 GEMM (v2:256,128,16,128,32,1) before
-- kl_amdgpu_pin_pair_stores, shortened: LLVM 19 hoisted the copies of the loaded values into
-- the ds_write2st64_b64 register pairs, and their vmcnt(0), above the first barrier
local OLD_GFX90A_F32 = ".L1b74:\n\ts_waitcnt vmcnt(1)\n\tv_mov_b32_e32 v126, v74\n\ts_waitcnt vmcnt(0)\n" ..
  "\tv_mov_b32_e32 v127, v70\n\tv_mov_b32_e32 v70, v75\n\ts_and_b32 s10, s4, 0xff\n\ts_barrier\n" ..
  "\tv_mov_b32_e32 v74, v76\n\tv_mov_b32_e32 v75, v72\n\tv_mov_b32_e32 v72, v77\n" ..
  "\tds_write2st64_b64 v1, v[126:127], v[70:71] offset1:2\n\tds_write2st64_b64 v1, v[74:75], v[72:73] offset0:4 offset1:6\n" ..
  "\tds_write_b128 v79, v[66:69] offset:16384\n\ts_waitcnt lgkmcnt(0)\n\ts_barrier\n" ..
  "\tglobal_load_dwordx4 v[74:77], v67, s[0:1]\n\tglobal_load_dwordx4 v[70:73], v66, s[0:1]\n" ..
  "\tglobal_load_dwordx4 v[66:69], v68, s[2:3]\n\tds_read_b32 v128, v81\n\tds_read2st64_b32 v[126:127], v89 offset0:64 offset1:80\n" ..
  "\ts_waitcnt lgkmcnt(0)\n\tv_mfma_f32_32x32x2f32 v[50:65], v127, v126, v[50:65]\n" ..
  "\tv_mfma_f32_32x32x2f32 v[34:49], v128, v126, v[34:49]\n\ts_cbranch_scc1 65338 ; .L1b74\n"

describe("AMDGPU pipelining and LDS store checks find the bad patterns", function()
  it("the old gfx90a f32 loop: vmcnt(0) across the back-edge before the barrier", function()
    local f = isa.pipelining(OLD_GFX90A_F32)
    assert.are.equal(1, #f)
    assert.truthy(f[1]:find("across the back-edge", 1, true), f[1])
    assert.are.equal(1, #isa.loads_to_barrier(OLD_GFX90A_F32))
    -- the loop as it is now: the copies and their waits below the first barrier
    local fixed = OLD_GFX90A_F32:gsub("\ts_barrier\n", "", 1):gsub("^%.L1b74:\n", ".L1b74:\n\ts_barrier\n")
    assert.are.same({}, isa.pipelining(fixed))
    assert.are.same({}, isa.loads_to_barrier(fixed))
  end)
  it("loads behind the MFMAs, vmcnt(0) before the back-edge, 2-byte LDS stores", function()
    assert.are.equal(1, #isa.pipelining(OLD_LOOP))
    assert.truthy(isa.pipelining(OLD_LOOP)[1]:find("after the first matrix instruction", 1, true))
    assert.are.equal(1, #isa.pipelining(DRAIN_LOOP))
    assert.truthy(isa.pipelining(DRAIN_LOOP)[1]:find("vmcnt(0)", 1, true))
    -- the padded tiles' old loop: a select (v_cndmask) of each loaded vector waits for it
    -- among the MFMAs, before the back-edge
    assert.truthy(isa.pipelining(SELECT_LOOP)[1]:find("vmcnt(0)", 1, true))
    -- a rotated loop (entered at .L200): read from its entry, the wait in the latch block
    -- (laid out first) is after the last load; without it the loop passes
    assert.are.equal(1, #isa.pipelining(ROTATED_LOOP))
    assert.truthy(isa.pipelining(ROTATED_LOOP)[1]:find("vmcnt(0)", 1, true))
    assert.are.same({}, isa.pipelining((ROTATED_LOOP:gsub("\ts_waitcnt vmcnt%(0%)\n", ""))))
    -- kpack 4 (the old f16 default) transposes B into LDS two bytes at a time
    local g = kiln.graph("bad_narrow")
    g:output(g:dot(g:param("a", { 1024, 1024 }, "f16"), g:param("b", { 1024, 1024 }, "f16")))
    local p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:256,32,64,64,32,4", cache = false })
    local k = p:kernels("gfx942")[1]
    assert.is_true(#isa.narrow_lds_stores(p:disasm(k.name, "gfx942")) > 0)
    -- gfx1100: WMMA's old kpack 16 (32-byte rows) transposes B two bytes at a time
    p = kiln.compile(g, { targets = { "gfx1100" }, perf_config = "v2:256,64,64,64,16,16", cache = false })
    k = p:kernels("gfx1100")[1]
    assert.is_true(#isa.narrow_lds_stores(p:disasm(k.name, "gfx1100")) > 0)
  end)
end)

-- barriers per K step of a kernel's main loop (nil without one)
local function barriers_per_step(p, k, t)
  local asm = p:disasm(k.name, t)
  local per = isa.mma_per_step(asm, k.perf_config, k.block // k.amdgpu.wave_size)
  if not per then return nil end
  local nb, steps = isa.barriers_per_step(asm, per)
  return nb and nb / steps
end
-- the old single-buffered loop: two barriers around one K step's MFMAs
local TWO_BARRIERS = ".L100:\n\tds_write_b128 v49, v[32:35]\n\ts_barrier\n\tglobal_load_dwordx4 v[32:35], v[40:41], off\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[78:79], v[82:83], a[0:15]\n" ..
  "\tv_mfma_f32_32x32x8_f16 a[0:15], v[80:81], v[82:83], a[0:15]\n\ts_barrier\n\ts_cbranch_scc1 65389 ; .L100\n"

describe("AMDGPU double-buffered K loop: one barrier per K step", function()
  it("the count finds two barriers per step in the single-buffered loop", function()
    local nb, steps = isa.barriers_per_step(TWO_BARRIERS, 2)
    assert.are.equal(2, nb / steps)
  end)
  -- a tile pair small enough that two workgroups with two pairs fit the LDS: double-buffered;
  -- amd-k-loop=1 forces the single-buffered loop (two barriers per step, as before)
  local g = kiln.graph("dbuf")
  g:output(g:dot(g:param("a", { 1024, 1024 }, "f16"), g:param("b", { 1024, 1024 }, "f16")))
  local single = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{amd-k-loop=1},", 1)
  for _, t in ipairs { "gfx90a", "gfx942" } do
    it(t .. " 1024^3 f16 v2:64,64,32,32,32,8 and the suite's gfx942 8192x320x1280 f32", function()
      local p = kiln.compile(g, { targets = { t }, perf_config = "v2:64,64,32,32,32,8", cache = false })
      local k = p:kernels(t)[1]
      assert.are.equal(1, barriers_per_step(p, k, t))
      assert.are.same({}, isa.pipelining(p:disasm(k.name, t)))
      assert.are.same({}, spills(k))
      local q = kiln.compile(g, { targets = { t }, perf_config = "v2:64,64,32,32,32,8", cache = false, pipeline = single })
      assert.are.equal(2, barriers_per_step(q, q:kernels(t)[1], t))
    end)
  end
  it("gfx942 8192x320x1280 f32 (the heuristic's 128x32x16)", function()
    for _, c in ipairs(C.GEMMS) do
      if c[1] == "gemm_f32_8192x320x1280" then
        local p = compile(c)
        local k = p:kernels("gfx942")[1]
        assert.are.equal(1, barriers_per_step(p, k, "gfx942"))
      end
    end
  end)
end)

describe("AMDGPU double-buffered WMMA tile at no occupancy cost (the default rule)", function()
  it("gfx1100 seed conv n512 (128x64x64): one barrier per K step, loads in flight across it, no spills", function()
    local c
    for _, x in ipairs(C.GEMMS) do if x[1] == "conv_seed_f16_n512" then c = x end end
    local p = compile(c)
    local k = p:kernels("gfx1100")[1]
    local asm = p:disasm(k.name, "gfx1100")
    assert.truthy(k.perf_config:find("^v2:128,64,64,"), k.perf_config)
    assert.are.equal(1, barriers_per_step(p, k, "gfx1100"))
    assert.are.same({}, spills(k))
    assert.are.same({}, isa.pipelining(asm))
    assert.are.same({}, isa.loads_to_barrier(asm))
    print(("amd_suite_spec: gfx1100 seed conv %s double-buffered: VGPR %d LDS %d occupancy %d (%s)"):format(
      k.perf_config, k.amdgpu.vgpr, k.amdgpu.lds_bytes, k.amdgpu.occupancy, k.amdgpu.occupancy_limit))
  end)
end)

-- The heuristic's K loop (kl_accel_amd_k_tile, passes/rock_accel.h): gfx1100's 256x64x64
-- (single-buffered, two barriers per K step) becomes 256x64x32 double-buffered for 4096^3 and
-- 8192x320x1280 f16 / bf16: one barrier per K step, the loads in flight across it, at least
-- the occupancy of the K-64 tile, no spills (main at session 35 picked 256x64x64: two
-- barriers per K step). gfx90a keeps 256x128x64 (LLVM's s_barrier: its K-32 loop waited for
-- its loads mid-step, amd_isa.loads_to_barrier).
describe("AMDGPU heuristic K loop: the K-32 double-buffered tile where the K-loop model takes it", function()
  for _, id in ipairs { "gemm_f16_4096", "gemm_bf16_4096", "gemm_f16_8192x320x1280", "gemm_bf16_8192x320x1280" } do
    it("gfx1100 " .. id .. ": 256x64x32, one barrier per K step; gfx90a keeps 256x128x64", function()
      local c
      for _, x in ipairs(C.GEMMS) do if x[1] == id then c = x end end
      local p = compile(c)
      local k = p:kernels("gfx1100")[1]
      local asm = p:disasm(k.name, "gfx1100")
      assert.are.equal("v2:256,64,32,64,16,8", k.perf_config)
      assert.are.equal(1, barriers_per_step(p, k, "gfx1100"))
      assert.are.same({}, spills(k))
      assert.are.same({}, isa.pipelining(asm))
      assert.are.same({}, isa.loads_to_barrier(asm))
      local q = kiln.compile(c[3](kiln), { targets = { "gfx1100" }, perf_config = "v2:256,64,64,64,16,8", cache = false })
      local kq = q:kernels("gfx1100")[1]
      assert.are.equal(2, barriers_per_step(q, kq, "gfx1100"))
      assert.is_true(k.amdgpu.occupancy >= kq.amdgpu.occupancy)
      assert.are.equal("v2:256,128,64,128,32,8", p:kernels("gfx90a")[1].perf_config)
    end)
  end
end)

describe("AMDGPU big tiles: unpadded xor LDS tiles, double-buffered, one barrier per K step", function()
  local skew = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
    "rock-gridwise-to-blockwise{amd-lds-layout=skew},", 1)
  for _, id in ipairs { "gemm_f16_4096", "gemm_bf16_4096" } do
    it("gfx942 " .. id, function()
      local c
      for _, x in ipairs(C.GEMMS) do if x[1] == id then c = x end end
      local p = compile(c)
      local k = p:kernels("gfx942")[1]
      local s, asm = k.amdgpu, p:disasm(k.name, "gfx942")
      assert.truthy(k.perf_config:find("^v2:256,256,"), k.perf_config)
      assert.are.equal("xor", k.amd_lds_layout)
      local per = isa.mma_per_step(asm, k.perf_config, k.block // s.wave_size)
      local nb, steps = isa.barriers_per_step(asm, per)
      assert.are.equal(2, steps, "two K steps per loop iteration")
      assert.are.equal(1, nb / steps, "s_barrier per K step")
      assert.is_true(s.lds_bytes <= 65536, "LDS " .. s.lds_bytes)
      assert.are.same({}, spills(k))
      assert.are.same({}, isa.pipelining(asm))
      assert.are.same({}, isa.narrow_lds_stores(asm))
      print(("amd_suite_spec: gfx942 %s %s xor: VGPR %d AGPR %d LDS %d scratch %d occupancy %d (%s)"):format(id,
        k.perf_config, s.vgpr, s.agpr, s.lds_bytes, s.scratch_bytes, s.occupancy, s.occupancy_limit))
      -- the skewed tiles (36 KiB a pair) do not fit twice: two barriers per step
      local q = kiln.compile(c[3](kiln), { targets = { "gfx942" }, cache = false, pipeline = skew })
      local kq = q:kernels("gfx942")[1]
      assert.are.equal(2, barriers_per_step(q, kq, "gfx942"))
      assert.are.equal("", kq.amd_lds_layout)
    end)
  end
  it("every suite GEMM in the xor layout: one barrier per K step (gfx90a, gfx942, gfx1100)", function()
    for _, c in ipairs(C.GEMMS) do
      local p = compile(c)
      for _, t in ipairs { "gfx90a", "gfx942", "gfx1100" } do
        for _, k in ipairs(p:kernels(t)) do
          local bps = barriers_per_step(p, k, t)
          if k.amd_lds_layout == "xor" then
            assert.are.equal(1, bps, t .. " " .. k.name)
            assert.is_true(k.amdgpu.lds_bytes <= 65536, t .. " " .. k.name)
          end
        end
      end
    end
  end)
end)

describe("AMDGPU suite: pipelined main loops, no 2-byte LDS stores (gfx90a, gfx942, gfx1100, gfx908)", function()
  for _, c in ipairs(C.GEMMS) do
    it(c[1], function()
      local p = compile(c)
      local p908 = kiln.compile(c[3](kiln), { targets = { "gfx908" }, cache = false })
      for _, t in ipairs { "gfx90a", "gfx942", "gfx1100", "gfx908" } do
        local pt = t == "gfx908" and p908 or p
        for _, k in ipairs(pt:kernels(t)) do
          local asm = pt:disasm(k.name, t)
          local f = isa.pipelining(asm)
          assert.are.same({}, f, t .. " " .. k.name)
          assert.are.same({}, isa.loads_to_barrier(asm), t .. " " .. k.name)
          local bps = barriers_per_step(pt, k, t)
          assert.is_true(bps == nil or bps <= 2, t .. " " .. k.name .. ": barriers per K step " .. tostring(bps))
          if not c[1]:find("f32") then
            assert.are.same({}, isa.narrow_lds_stores(asm), t .. " " .. k.name)
          end
        end
      end
    end)
  end
end)

-- every case of the suite: the GEMMs, then the reductions, softmax and element-wise adds
local ALL = {}
for _, l in ipairs { C.GEMMS, C.OTHERS } do for _, c in ipairs(l) do ALL[#ALL + 1] = c end end

describe("AMDGPU suite: workgroup-scope barriers (no cache maintenance, no fence without a scope; every kernel, "
  .. "gfx90a, gfx942, gfx1100, gfx1030)", function()
  for _, c in ipairs(ALL) do
    it(c[1], function()
      local p = compile(c)
      for _, t in ipairs(C.TARGETS) do
        for _, k in ipairs(p:kernels(t)) do
          local where = t .. " " .. k.name .. ": "
          assert.are.same({}, isa.cache_ops(p:disasm(k.name, t)), where .. "cache maintenance")
          assert.is_string(k.llvm_ir, where .. "LLVM IR")
          assert.are.same({}, isa.unscoped_fences(k.llvm_ir), where .. "fences without a scope")
        end
      end
    end)
  end
end)

-- the thread tile of a v1 (FMA path) perf config: mPerThread x nPerThread
local function thread_tile(k)
  local mt, nt = k.perf_config:match("^v1:%d+,%d+,%d+,(%d+),(%d+)")
  return mt and tonumber(mt) * tonumber(nt)
end

describe("AMDGPU suite: the no-matrix GEMMs (gfx1030; f32 on gfx1100) fuse their multiply-adds", function()
  for _, c in ipairs(C.GEMMS) do
    it(c[1], function()
      local p, n = compile(c), 0
      for _, t in ipairs { "gfx1030", "gfx1100" } do
        for _, k in ipairs(p:kernels(t)) do
          local tile = k.kind == "gemm" and thread_tile(k)
          if tile then
            n = n + 1
            assert.are.same({}, isa.fma_findings(p:disasm(k.name, t), tile), t .. " " .. k.name .. " " .. k.perf_config)
          end
        end
      end
      assert.is_true(n > 0, "a GEMM on the FMA path (gfx1030)")
    end)
  end
end)

describe("AMDGPU suite: kpack-1 GEMM tiles (f32 MFMA, the FMA path) in the xor1 LDS layout", function()
  -- test_accel (test_banks_amd_other) proves by interpretation that these tiles' copies and
  -- reads are at most 2-way (the plain tiles' copies up to 5.33 / 8-way); here: the suite's
  -- kpack-1 kernels take them, and amd-lds-layout=skew gives the plain tiles back
  local skew = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
    "rock-gridwise-to-blockwise{amd-lds-layout=skew},", 1)
  it("every suite GEMM with kpack 1 on gfx90a, gfx942, gfx1100, gfx1030", function()
    local n = 0
    for _, c in ipairs(C.GEMMS) do
      local p = compile(c)
      for _, t in ipairs(C.TARGETS) do
        for _, k in ipairs(p:kernels(t)) do
          if k.kind == "gemm" and k.perf_config:match(",1$") then
            n = n + 1
            assert.are.equal("xor1", k.amd_lds_layout, t .. " " .. k.name .. " " .. k.perf_config)
          end
        end
      end
    end
    assert.is_true(n >= 20, "kpack-1 suite GEMMs: " .. n)
    local c
    for _, x in ipairs(C.GEMMS) do if x[1] == "gemm_f32_4096" then c = x end end
    local q = kiln.compile(c[3](kiln), { targets = { "gfx942", "gfx1030" }, cache = false, pipeline = skew })
    for _, t in ipairs { "gfx942", "gfx1030" } do assert.are.equal("", q:kernels(t)[1].amd_lds_layout, t) end
  end)
end)

describe("AMDGPU suite: no scratch, no spills at every heuristic choice (every kernel)", function()
  for _, c in ipairs(ALL) do
    it(c[1], function()
      local p = compile(c)
      for _, t in ipairs(C.TARGETS) do
        for _, k in ipairs(p:kernels(t)) do
          assert.are.same({}, spills(k), t)
        end
      end
    end)
  end
end)

describe("AMDGPU suite: gfx942 GEMMs with M, N, K >= 2048 take block tiles of at least 256x128", function()
  for _, c in ipairs(C.GEMMS) do
    if c.big then
      it(c[1], function()
        for _, k in ipairs(compile(c):kernels("gfx942")) do
          if k.kind == "gemm" then assert.are.same({}, small_tile(k)) end
        end
      end)
    end
  end
end)

-- findings: an MFMA kernel below 2 waves per SIMD, or with scratch
local function low_occupancy(k)
  local s = k.amdgpu
  if s.occupancy >= 2 and s.scratch_bytes == 0 then return {} end
  return { ("%s %s: VGPR %d AGPR %d LDS %d scratch %d occupancy %d (%s)"):format(k.name, k.perf_config, s.vgpr,
    s.agpr, s.lds_bytes, s.scratch_bytes, s.occupancy, s.occupancy_limit) }
end
local function case_of(id)
  for _, x in ipairs(C.GEMMS) do if x[1] == id then return x end end
end
-- The convs on gfx942 / gfx90a at >= 2 waves per SIMD. Before session 35 the heuristic gave
-- gfx942 2-wave tiles (seed conv v2:128,128,32,128,64,8, 3x3 conv v2:64,256,32,64,128,8)
-- whose output-swizzle tile (34 / 36 KiB, which the cost did not charge) left one workgroup
-- per CU, and LLVM, at that LDS-limited occupancy, took 300 VGPRs + 128 AGPRs: occupancy 1;
-- checked: with main at 2f33a9e (kiln.so of that build) the two suite cases and the
-- register case below fail (the "old picks" case gives those configs explicitly, so it
-- passes on both). And a 2-wave tile whose LDS allows 2 waves per SIMD (the seed conv's old
-- config without the swizzle: 18.6 KiB) gets them from LLVM ("amdgpu-waves-per-eu" from the
-- register estimate, passes/lower_to_llvm.c): 364 VGPRs + 128 AGPRs before, 236 + 0 now.
describe("AMDGPU suite: the seed conv and the 3x3 conv at >= 2 waves per SIMD on gfx942 and gfx90a", function()
  for _, id in ipairs { "conv_seed_f16_n512", "conv_r50_3x3_c64_f16_n64" } do
    it(id, function()
      local p = compile(case_of(id))
      for _, t in ipairs { "gfx942", "gfx90a" } do
        for _, k in ipairs(p:kernels(t)) do assert.are.same({}, low_occupancy(k), t) end
      end
    end)
  end
  it("the old picks (given) are reported at occupancy 1", function()
    for id, pc in pairs { conv_seed_f16_n512 = "v2:128,128,32,128,64,8", conv_r50_3x3_c64_f16_n64 = "v2:64,256,32,64,128,8" } do
      local p = kiln.compile(case_of(id)[3](kiln), { targets = { "gfx942" }, perf_config = pc, cache = false })
      assert.are.equal(1, #low_occupancy(p:kernels("gfx942")[1]), id)
    end
  end)
  it("a 2-wave tile whose LDS allows 2 waves per SIMD keeps its registers within 256", function()
    local pipe = kiln.default_pipeline():gsub("rock%-output%-swizzle[^,]*", "rock-output-swizzle{force=off}", 1)
    local p = kiln.compile(case_of("conv_seed_f16_n512")[3](kiln),
      { targets = { "gfx942" }, perf_config = "v2:128,128,32,128,64,8", pipeline = pipe, cache = false })
    local k = p:kernels("gfx942")[1]
    assert.are.same({}, low_occupancy(k))
    assert.is_true(k.amdgpu.vgpr <= 256, "VGPRs + AGPRs " .. k.amdgpu.vgpr)
  end)
end)

-- loads of a disassembly by width: {x4 = 16-byte, narrow = dword / short / byte loads}
local function global_loads(asm)
  local n = { x4 = 0, narrow = 0, exec = 0 }
  for _, l in ipairs(isa.lines(asm)) do
    local m = isa.mnemonic(l) or ""
    if m == "global_load_dwordx4" or m == "global_load_b128" then n.x4 = n.x4 + 1
    elseif m:match("^global_load_") then n.narrow = n.narrow + 1 end
    if m:match("^s_cbranch_exec") or m:match("^s_and_saveexec") then n.exec = n.exec + 1 end
  end
  return n
end
-- findings: a kernel whose grid holds fewer waves than the target has CUs
local function fills_chip(k, t)
  local waves = k.grid * k.block // (k.amdgpu and k.amdgpu.wave_size or 64)
  local cus = kiln.target(t).compute_units
  if waves >= cus then return {} end
  return { ("%s: %d waves for %d CUs (grid %d x block %d)"):format(k.name, waves, cus, k.grid, k.block) }
end

-- the old lowerings: one thread per row (8192 rows in 32 workgroups of 256) and an
-- element-wise loop of one dword per element behind a bounds branch
local OLD_EW = "\ts_and_saveexec_b64 s[0:1], vcc\n\ts_cbranch_execz .L40\n\tglobal_load_dword v1, v[2:3], off\n" ..
  "\tglobal_load_dword v4, v[5:6], off\n"
describe("AMDGPU reduction and element-wise checks find the bad patterns", function()
  it("too few waves, dword loads behind branches", function()
    assert.are.equal(1, #fills_chip({ name = "old_rows", grid = 32, block = 256, amdgpu = { wave_size = 64 } }, "gfx942"))
    local n = global_loads(OLD_EW)
    assert.is_true(n.x4 == 0 and n.narrow == 2 and n.exec == 2)
  end)
end)

describe("AMDGPU suite: reductions fill the chip with 16-byte loads; element-wise kernels load 16 bytes", function()
  for _, c in ipairs(C.OTHERS) do
    it(c[1], function()
      local p = compile(c)
      for _, t in ipairs(C.TARGETS) do
        local ks = p:kernels(t)
        for i, k in ipairs(ks) do
          local n = global_loads(p:disasm(k.name, t))
          local where = t .. " " .. k.name
          assert.is_true(n.x4 > 0, where .. ": 16-byte loads")
          if c[2] == "ew" then
            assert.are.equal(0, n.narrow, where .. ": narrow loads")
            assert.is_true(n.exec <= 1, where .. ": " .. n.exec .. " exec-mask branches")
          elseif i == 1 then -- the first kernel (a split reduction's partials) covers the input
            assert.are.same({}, fills_chip(k, t), where)
          end
        end
      end
    end)
  end
end)
