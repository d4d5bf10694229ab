-- bench/host_gemm.lua — sgemm on the host: kiln's compiled kernel vs OpenBLAS
-- (cblas_sgemm, dlopen'ed by bench/kiln_bench.c), side by side in one run; median GFLOP/s of interleaved
-- repeats after a warm-up, every output checked first. Also compile time per kernel.
--   KILN_THREADS=2 scripts/kiln bench/host_gemm.lua [sizes...] [--reps N] [--perf v1:...]
-- Columns:
--   kiln      the kernel launched on device-resident buffers (p:prepare; the output is
--             written in place, as cblas_sgemm writes into its C), when p:prepare exists
--   p:run     kiln's p:run (also allocates the output tensor and checks the inputs)
--   OpenBLAS  cblas_sgemm with KILN_THREADS threads
--   ratio     kiln / OpenBLAS
--   compile   kiln.compile (passes + LLVM IR), ms
--   jit       the host JIT (LLVM O3 + code generation at first load), ms
local sizes, reps, perf = {}, 7, nil
local i = 1
while arg and arg[i] do
  if arg[i] == "--reps" then reps = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == "--perf" then perf = arg[i + 1]; i = i + 1
  else sizes[#sizes + 1] = tonumber(arg[i]) end
  i = i + 1
end
if #sizes == 0 then sizes = { 1024, 2048 } end
-- OpenBLAS comes from the benchmarks' own Lua C module (bench/kiln_bench.c): build/kiln_bench.so
-- next to the kiln executable running this script, else in $KILN_BUILD_DIR, else in build/.
local function bench_module()
  local exe_dir = arg and arg[-1] and arg[-1]:match("^(.*)/[^/]+$")
  local dir = exe_dir or os.getenv("KILN_BUILD_DIR") or "build"
  package.cpath = dir .. "/?.so;" .. package.cpath
  return require "kiln_bench"
end
local cblas_sgemm = bench_module().cblas_sgemm
local threads = tonumber(os.getenv("KILN_THREADS") or "") or 2

local function median(t)
  local s = {}
  for k, v in ipairs(t) do s[k] = v end
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

print(string.format("host sgemm, %d threads (KILN_THREADS), median of %d", threads, reps))
print(string.format("%-6s %10s %10s %10s %7s %10s %8s   %s", "size", "kiln GF/s", "p:run", "OpenBLAS", "ratio", "compile ms",
                    "jit ms", "perf config"))
local rows = {}
for _, n in ipairs(sizes) do
  local g = kiln.graph("sgemm" .. n)
  local a = g:param("a", { n, n }, "f32")
  local b = g:param("b", { n, n }, "f32")
  g:output(g:dot(a, b))
  local p = kiln.compile(g, { target = "host", perf_config = perf, cache = false })
  local A, B = kiln.rand({ n, n }, "f32", { seed = 1 }), kiln.rand({ n, n }, "f32", { seed = 2 })
  local C = kiln.zeros({ n, n }, "f32")
  local jit
  if p.load_kernels then   -- the JIT: LLVM O3 and code generation when the kernel is loaded
    local t0 = kiln.clock_ms(); p:load_kernels(); jit = kiln.clock_ms() - t0
  end
  local t0 = kiln.clock_ms()
  local got = p:run { a = A, b = B }          -- (without p:load_kernels: the first run loads the kernel)
  local first = kiln.clock_ms() - t0
  cblas_sgemm(A, B, C, threads)
  local cmp = kiln.compare(got, C)
  assert(cmp.max_rel < 1e-3 or cmp.max_abs < 1e-3 * n, "kiln and OpenBLAS disagree: " .. cmp.max_abs)
  local r = p.prepare and p:prepare { a = A, b = B } or nil
  if r then
    r:launch(); r:sync()
    local cmp2 = kiln.compare(r:outputs(), C)
    assert(cmp2.max_rel < 1e-3 or cmp2.max_abs < 1e-3 * n, "prepared kiln and OpenBLAS disagree: " .. cmp2.max_abs)
  end
  local tk, tr, tb = {}, {}, {}
  for _ = 1, 2 do   -- warm-up
    if r then r:launch(); r:sync() end
    p:run { a = A, b = B }
    cblas_sgemm(A, B, C, threads)
  end
  for _ = 1, reps do
    if r then
      local t = kiln.clock_ms(); r:launch(); r:sync(); tk[#tk + 1] = kiln.clock_ms() - t
    end
    local t = kiln.clock_ms(); p:run { a = A, b = B }; tr[#tr + 1] = kiln.clock_ms() - t
    t = kiln.clock_ms(); cblas_sgemm(A, B, C, threads); tb[#tb + 1] = kiln.clock_ms() - t
    collectgarbage()   -- free the outputs of p:run as we go
  end
  local flop = 2.0 * n * n * n
  local gr, gb = flop / median(tr) / 1e6, flop / median(tb) / 1e6
  local gk = r and flop / median(tk) / 1e6 or gr
  jit = jit or first - median(tr)
  rows[#rows + 1] = { n = n, kiln = gk, run = gr, blas = gb, ratio = gk / gb, compile = p.compile_ms, jit = jit,
                      perf = p:kernels()[1].perf_config }
  print(string.format("%-6d %10.1f %10.1f %10.1f %7.2f %10.1f %8.1f   %s", n, gk, gr, gb, gk / gb, p.compile_ms, jit,
                      p:kernels()[1].perf_config))
  if r then r:free() end
end
return rows
