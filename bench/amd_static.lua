-- bench/amd_static.lua — static estimates for AMD GPUs (no AMD GPU needed): compiles the
-- suite's kernels (spec/lua/amd_cases.lua) for gfx90a, gfx942, gfx1100 and gfx1030 and
-- prints one markdown table per target from the code objects (p:kernels(t)[i].amdgpu,
-- driver/amdgpu_stats.h): tile, VGPR/AGPR, LDS, occupancy, matrix instructions per K step
-- and an estimate of the fraction of the matrix peak.
-- Run: build/kiln bench/amd_static.lua [skew|dbuf32|all|waits]   (from the repository root; "all":
-- the suite's other GEMMs and convs too (8192x320x1280, 384x2304x768, the seed conv at
-- batch 1, ResNet-50's 3x3 convs of 128 / 256 / 512 channels); "skew":
-- every kernel with rock-gridwise-to-blockwise{amd-lds-layout=skew}, the LDS tiles before
-- the xor layout: the "before" table of the big tiles, and the plain kpack-1 tiles before
-- xor1 (f32 MFMA, the FMA path); "dbuf32": the 4096³ f16 / bf16
-- GEMMs of gfx90a and gfx1100 at kPerBlock 32 double-buffered (perf config given,
-- amd-k-loop=2), where 256x128x64 / 256x64x64 cannot double-buffer: gfx1100's heuristic
-- takes it since session 36 (kl_accel_amd_k_tile), gfx90a's does not (LLVM's s_barrier);
-- "waits": one table of every suite GEMM (spec/lua/amd_cases.lua) on gfx90a, gfx942,
-- gfx1100, gfx1030 and gfx908: tile, VGPR / AGPR, scratch, occupancy, whether the main loop
-- has an s_waitcnt vmcnt(0) between a global_load and the next s_barrier
-- (amd_isa.loads_to_barrier) or breaks amd_isa.pipelining, and the llvm-mca cycles per loop
-- iteration)
-- Estimate (GEMMs and convs on the matrix path): the AMD cost model of the GEMM heuristic
-- (passes/rock_accel.h) with the code object's own occupancy: per K step of a workgroup,
-- step = issue + max(MFMA cycles at the target's cu_flops_per_clk, tile bytes /
-- l2_bytes_per_cu_clk, LDS bytes read and written / 128) + 200 per barrier beyond one per
-- K step (the barrier between a step's LDS writes and its MFMAs: every wave waits there
-- for the slowest wave's stores, so no other wave hides that LDS round trip); issue = the
-- llvm-mca cycles per K step of the main loop (one wave's issue-limited time, counted as
-- not overlapping the matrix pipe: pessimistic), at least 128; conc = workgroups per CU from
-- the measured occupancy; time = ceil(workgroups / (CUs * conc)) * K steps * max(conc *
-- step, step + 200 / waves per SIMD); fraction = 2*M*N*K / (CUs * cu_flops_per_clk) /
-- time. It charges wave quantization, padding, L2/LDS bandwidth and exposed LDS
-- latency, not instruction issue limits or clock throttling: an upper bound to check on
-- hardware. Kernels without matrix instructions (reductions, softmax, element-wise,
-- gfx1030 and f32 on gfx1100) are memory-bound or on the FMA path: "-".
package.path = "spec/lua/?.lua;" .. package.path
local kiln = require "kiln"
local C = require "amd_cases"

local RATE = { -- cu_flops_per_clk of core/target.c
  gfx90a = { f16 = 1024, bf16 = 1024, f32 = 256 }, gfx942 = { f16 = 2048, bf16 = 2048, f32 = 256 },
  gfx1100 = { f16 = 512, bf16 = 512 } }
local L2 = { gfx90a = 19, gfx942 = 27, gfx1100 = 24, gfx1030 = 16 }
local CUS = { gfx90a = 104, gfx942 = 304, gfx1100 = 96, gfx1030 = 80 }
local INSTR = { -- m, n, k and A / B elements per lane
  gfx90a = { f16 = { 32, 32, 8, 4 }, bf16 = { 32, 32, 8, 4 }, f32 = { 32, 32, 2, 1 } },
  gfx942 = { f16 = { 32, 32, 8, 4 }, bf16 = { 32, 32, 8, 4 }, f32 = { 32, 32, 2, 1 } },
  gfx1100 = { f16 = { 16, 16, 16, 16 }, bf16 = { 16, 16, 16, 16 } } }

local CASES = {
  { "GEMM 4096³ f16", "gemm_f16_4096", { 4096, 4096, 4096 }, "f16" },
  { "GEMM 4096³ bf16", "gemm_bf16_4096", { 4096, 4096, 4096 }, "bf16" },
  { "GEMM 4096³ f32", "gemm_f32_4096", { 4096, 4096, 4096 }, "f32" },
  -- convs: the implicit GEMM of rock-conv-to-gemm, M = output channels, N = N*H*W, K = C*R*S
  -- (before session 35 the table took M = N*H*W, N = channels: 4x the tiles of the 3x3
  -- conv's 64x256 tile, whose M side then padded 64 -> 256)
  { "seed conv 1x1 2048→512 7x7 n512 +add+relu", "conv_seed_f16_n512", { 512, 512 * 49, 2048 }, "f16" },
  { "3x3 conv 64→64 56x56 n64 +add+relu", "conv_r50_3x3_c64_f16_n64", { 64, 64 * 56 * 56, 576 }, "f16" },
  { "softmax 8192x8192 f16", "softmax_f16_8192x8192" },
  -- the other GEMMs and convs of the suite (argument "all")
  { "GEMM 8192x320x1280 f16", "gemm_f16_8192x320x1280", { 8192, 320, 1280 }, "f16", all = true },
  { "GEMM 8192x320x1280 bf16", "gemm_bf16_8192x320x1280", { 8192, 320, 1280 }, "bf16", all = true },
  { "GEMM 8192x320x1280 f32", "gemm_f32_8192x320x1280", { 8192, 320, 1280 }, "f32", all = true },
  { "GEMM 384x2304x768 f16", "gemm_f16_384x2304x768", { 384, 2304, 768 }, "f16", all = true },
  { "GEMM 384x2304x768 bf16", "gemm_bf16_384x2304x768", { 384, 2304, 768 }, "bf16", all = true },
  { "seed conv n1", "conv_seed_f16_n1", { 512, 49, 2048 }, "f16", all = true },
  { "3x3 conv 128→128 28x28 n64", "conv_r50_3x3_c128_f16_n64", { 128, 64 * 28 * 28, 1152 }, "f16", all = true },
  { "3x3 conv 256→256 14x14 n64", "conv_r50_3x3_c256_f16_n64", { 256, 64 * 14 * 14, 2304 }, "f16", all = true },
  { "3x3 conv 512→512 7x7 n64", "conv_r50_3x3_c512_f16_n64", { 512, 64 * 7 * 7, 4608 }, "f16", all = true },
  { "row sum 8192x8192 f16", "rowsum_f16_8192x8192" },
  { "element-wise add 16384² f32", "ew_add_f32_16384x16384" },
}
local by_id = {}
for _, l in ipairs { C.GEMMS, C.OTHERS } do for _, c in ipairs(l) do by_id[c[1]] = c end end

local function estimate(t, dt, k, mnk, mca_step, bps)
  local rate, ins = RATE[t] and RATE[t][dt], INSTR[t] and INSTR[t][dt]
  local mb, nb, kb, mw, nw = k.perf_config:match("^v2:(%d+),(%d+),(%d+),(%d+),(%d+)")
  if not (rate and mb) then return nil end
  mb, nb, kb, mw, nw = tonumber(mb), tonumber(nb), tonumber(kb), tonumber(mw), tonumber(nw)
  local s = k.amdgpu
  local eb = dt == "f32" and 4 or 2
  local wave = s.wave_size
  local waves = k.block // wave
  local simds = wave == 64 and 4 or 2
  local conc = math.max(1, (s.occupancy * simds) // waves)
  local tiles = math.ceil(mnk[1] / mb) * math.ceil(mnk[2] / nb)
  conc = math.min(conc, math.ceil(tiles / CUS[t]))
  local busy = math.min(1, conc * waves / simds)
  local flops = 2 * mb * nb * kb
  local mma = flops / (rate * busy)
  local tile_bytes = kb * (mb + nb) * eb
  local l2 = tile_bytes / L2[t]
  local rm, rn, ks = mw // ins[1], nw // ins[2], kb // ins[3]
  local lds = ((rm + rn) * ins[4] * ks * wave * eb * waves + tile_bytes) / 128
  local step = math.max(128, mca_step or 0) + math.max(mma, l2, lds) + 200 * math.max(0, (bps or 1) - 1)
  local wps = conc * waves / simds
  local round = math.max(conc * step, step + 200 / math.max(1, wps))
  local time = math.ceil(tiles / (CUS[t] * conc)) * math.ceil(mnk[3] / kb) * round
  local ideal = 2 * mnk[1] * mnk[2] * mnk[3] / (CUS[t] * rate)
  local bound = mma >= math.max(l2, lds) and "MFMA" or l2 >= lds and "L2" or "LDS"
  return ideal / time, bound
end

-- llvm-mca(-19)'s cycles per iteration of the main loop (the innermost loop with the most
-- matrix instructions, else the innermost loop with the most lines; labels and comments
-- dropped), 100 iterations, -mcpu = the target; "-" without the tool or a loop
local isa = require "amd_isa"
local MCA
for _, n in ipairs { "llvm-mca-19", "llvm-mca" } do
  if not MCA and os.execute("command -v " .. n .. " >/dev/null 2>&1") then MCA = n end
end
local function mca_cycles(asm, t) -- cycles per loop iteration (a number), or nil
  local l, ls = isa.main_loop(asm)
  if not l then
    local loops
    loops, ls = isa.loops(asm)
    for _, x in ipairs(loops) do
      if x.innermost and (not l or x.back - x.head > l.back - l.head) then l = x end
    end
  end
  if not (MCA and l) then return nil end
  local body = {}
  for i = l.head, l.back do
    local x = ls[i]:gsub(";.*$", "")
    if not x:match("^%.L%x+:") and x:match("%S") and not x:match("^%s*s_c?branch") then body[#body + 1] = x end
  end
  local f = os.tmpname()
  local h = io.open(f, "w")
  h:write(table.concat(body, "\n"), "\n")
  h:close()
  local pipe = io.popen(("%s -mtriple=amdgcn-amd-amdhsa -mcpu=%s -iterations=100 %s 2>/dev/null"):format(MCA, t, f))
  local o = pipe:read("a")
  pipe:close()
  os.remove(f)
  local cyc = tonumber(o:match("Total Cycles:%s*(%d+)"))
  return cyc and cyc / 100
end
local SKEW, DBUF, ALL = arg and arg[1] == "skew", arg and arg[1] == "dbuf32", arg and arg[1] == "all"
if arg and arg[1] == "waits" then
  local T = { "gfx90a", "gfx942", "gfx1100", "gfx1030", "gfx908" }
  print("| target | kernel | tile | VGPR / AGPR | scratch | occupancy (waves/SIMD) | vmcnt(0) load -> barrier | pipelining findings | mca cycles per loop iteration (main loop; FMA path: its largest innermost loop) |")
  print("|---|---|---|---|---|---|---|---|---|")
  for _, c in ipairs(C.GEMMS) do
    local prog = kiln.compile(c[3](kiln), { targets = T, cache = false })
    for _, t in ipairs(T) do
      for _, k in ipairs(prog:kernels(t)) do
        if k.kind == "gemm" then
          local s, asm = k.amdgpu, prog:disasm(k.name, t)
          local mca = mca_cycles(asm, t)
          print(("| %s | %s | %s | %d / %d | %d | %d (%s) | %s | %d | %s |"):format(t, c[1], k.perf_config, s.vgpr, s.agpr,
            s.scratch_bytes, s.occupancy, s.occupancy_limit, #isa.loads_to_barrier(asm) > 0 and "yes" or "no",
            #isa.pipelining(asm), mca and ("%.2f"):format(mca) or "-"))
        end
      end
    end
  end
  return
end
local PIPE = SKEW and kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
  "rock-gridwise-to-blockwise{amd-lds-layout=skew},", 1) or nil
local DBUF_CFG = { gfx90a = "v2:256,128,32,128,32,8", gfx1100 = "v2:256,64,32,64,16,8" }
local DBUF_PIPE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
  "rock-gridwise-to-blockwise{amd-k-loop=2},", 1)

local out = {}
local function p(s) out[#out + 1] = s end
for _, t in ipairs(C.TARGETS) do
  p("")
  p(("### %s (%d CUs)"):format(t, CUS[t]))
  p("")
  p("| kernel | tile (perf config) | LDS tiles | grid x block | VGPR / AGPR | LDS bytes | scratch | occupancy (waves/SIMD, limit) | matrix instrs per K step per wave (loop body) | barriers per K step | mca cycles per loop iteration (per K step) | est. fraction of matrix peak (bound) |")
  p("|---|---|---|---|---|---|---|---|---|---|---|---|")
  for _, c in ipairs(CASES) do
    if c.all and not ALL then goto next end
    local case = by_id[c[2]]
    local opts = { targets = { t }, cache = false, pipeline = PIPE }
    if DBUF and DBUF_CFG[t] and c[2]:match("^gemm_b?f16_4096$") then
      opts.perf_config, opts.pipeline = DBUF_CFG[t], DBUF_PIPE
    end
    local prog = kiln.compile(case[3](kiln), opts)
    for _, k in ipairs(prog:kernels(t)) do
      local s, l = k.amdgpu, k.amdgpu.loop
      local mm = l.mfma + l.wmma
      local per_step, nper = "-", nil
      local mb, nb, kb = k.perf_config:match("^v2:(%d+),(%d+),(%d+),")
      local ins = c[4] and INSTR[t] and INSTR[t][c[4]]
      if mb and ins then
        nper = tonumber(mb) * tonumber(nb) * tonumber(kb) // (ins[1] * ins[2] * ins[3]) // (k.block // s.wave_size)
        per_step = ("%d (%d)"):format(nper, mm)
      elseif l.found then
        per_step = ("0 (%d FMA)"):format(l.valu_fma)
      end
      local asm = prog:disasm(k.name, t)
      local bps, steps
      if nper and mm > 0 then
        local nbar, st = isa.barriers_per_step(asm, nper)
        if nbar and st and st > 0 then bps, steps = nbar / st, st end
      end
      local mca = mca_cycles(asm, t)
      local mca_s = mca and (steps and ("%.0f (%.0f)"):format(mca, mca / steps) or ("%.0f"):format(mca)) or "-"
      local est = "-"
      if c[3] and k.kind == "gemm" then
        local f, b = estimate(t, c[4], k, c[3], mca and steps and mca / steps, bps)
        if f then est = ("%.0f%% (%s)"):format(100 * f, b) end
      end
      p(("| %s%s | %s | %s | %d x %d | %d / %d | %d | %d | %d (%s) | %s | %s | %s | %s |"):format(c[1],
        k.kind == "gemm" and "" or (c[3] and " — " .. k.kind .. " kernel" or ""),
        k.perf_config ~= "" and k.perf_config or "-", k.amd_lds_layout ~= "" and k.amd_lds_layout or
        (mb and (k.perf_config:match(",1$") and "plain" or "skew") or "-"), k.grid, k.block, s.vgpr, s.agpr, s.lds_bytes, s.scratch_bytes,
        s.occupancy, s.occupancy_limit, per_step, bps and ("%g"):format(bps) or "-", mca_s, est))
    end
    ::next::
  end
end
print(table.concat(out, "\n"))
