-- bench/cpa_launch.lua — one cp.async GEMM config, launched a few times (the target of
-- bench/ncu_cpa.sh's profiler; also a quick timing without the whole bench harness).
--   build/kiln bench/cpa_launch.lua S [bt|b] [LAUNCHES] [PIPELINE_EXTRA] [DEVICE] [SIZE]
-- compiles bench/gpu_kiln.lua's 4096^3 f16 GEMM (bt: B stored [N, K], both operands through
-- cp.async; b: B stored [K, N]) with rock-gridwise-to-blockwise{cp-async=S} (S = 1: the
-- register-staged loop) for the CUDA device, checks one launch against float64 dot products
-- at 64 sampled outputs, then launches it LAUNCHES times (default 5) and prints one line:
-- stages, async operands, LDS bytes, registers are in ncu's report; median ms and TFLOP/s of
-- device-event timings here. PIPELINE_EXTRA is appended to the pass options (e.g.
-- ",cp-async-layout=krow"; "" for none); DEVICE defaults to cuda ("host" checks the script
-- here), SIZE (M = N = K) to 4096.
local kiln = require "kiln"
local S = math.tointeger(tonumber(arg[1] or "3")) or error("S must be an integer")
local bt = (arg[2] or "bt") == "bt"
local launches = math.tointeger(tonumber(arg[3] or "5")) or 5
local extra = arg[4] or ""
local device_name = arg[5] or "cuda"
local N = math.tointeger(tonumber(arg[6] or "4096")) or error("SIZE must be an integer")
local g = kiln.graph(bt and "gemm_bt" or "gemm")
local a = g:param("a", { N, N }, "f16")
local b = bt and g:param("b", { N, N }, "f16"):transpose { 1, 0 } or g:param("b", { N, N }, "f16")
g:output(g:dot(a, b))
local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
  "rock-gridwise-to-blockwise{cp-async=" .. S .. extra .. "},", 1)
assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
local dev = kiln.device(device_name)
-- (the pipeline is mma.sync's: sm_90 on a compute capability 9.0 device, whose own target sm_90a takes wgmma)
local p = kiln.compile(g, { target = dev.arch == "sm_90a" and "sm_90" or dev.arch, pipeline = pl })
local k
for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
local A = kiln.rand({ N, N }, "f16", { seed = 11 })
local B = kiln.rand({ N, N }, "f16", { seed = 12 })
local r = p:prepare({ a = A, b = B }, { device = dev })
r:launch()
local out = r:outputs()
out = out[1] or out
local worst = 0
for i = 0, 63 do
  local m, j = (i * 977) % N, (i * 1531 + 7) % N
  local s = 0.0
  for kk = 0, N - 1 do
    local bv = bt and B:get { j, kk } or B:get { kk, j }
    s = s + A:get { m, kk } * bv
  end
  local e = math.abs(out:get { m, j } - s) / (1 + math.abs(s))
  if e ~= e then e = math.huge end
  worst = math.max(worst, e)
end
local ms = r:time { warmup = 1, reps = launches }
table.sort(ms)
local med = ms[(#ms + 1) // 2]
print(("cpa_launch S=%d %s stages=%d async=%s lds=%d grid=%d block=%d  median %.4f ms  %.1f TFLOP/s  check %s (max rel err %.2e)")
  :format(S, bt and "B^T" or "B", k.pipeline_stages or 0, k.async_copy ~= "" and k.async_copy or "-", k.lds_bytes,
    k.grid, k.block, med, 2.0 * N * N * N / (med * 1e-3) / 1e12, worst < 2e-2 and "ok" or "FAILED", worst))
if worst >= 2e-2 then os.exit(1) end
