-- bench/host_gemm.lua — sgemm on the host: kiln's compiled kernel vs OpenBLAS
-- (cblas_sgemm, dlopen'ed), side by side in one run; median GFLOP/s of interleaved
-- repeats after a warm-up, every output checked first. Also compile time per kernel.
--   KILN_THREADS=2 scripts/kiln bench/host_gemm.lua [sizes...] [--reps N] [--perf v1:...]
local sizes, reps, perf = {}, 7, nil
local i = 1
while arg and arg[i] do
  if arg[i] == "--reps" then reps = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == "--perf" then perf = arg[i + 1]; i = i + 1
  else sizes[#sizes + 1] = tonumber(arg[i]) end
  i = i + 1
end
if #sizes == 0 then sizes = { 1024, 2048 } end
local threads = tonumber(os.getenv("KILN_THREADS") or "") or 2

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

print(string.format("host sgemm, %d threads (KILN_THREADS), median of %d", threads, reps))
print(string.format("%-6s %12s %12s %8s %12s", "size", "kiln GF/s", "OpenBLAS", "ratio", "compile ms"))
local rows = {}
for _, n in ipairs(sizes) do
  local g = kiln.graph("sgemm" .. n)
  local a = g:param("a", { n, n }, "f32")
  local b = g:param("b", { n, n }, "f32")
  g:output(g:dot(a, b))
  local p = kiln.compile(g, { target = "host", perf_config = perf, cache = false })
  local A, B = kiln.rand({ n, n }, "f32", { seed = 1 }), kiln.rand({ n, n }, "f32", { seed = 2 })
  local C = kiln.zeros({ n, n }, "f32")
  local got = p:run { a = A, b = B }
  kiln.bench.cblas_sgemm(A, B, C, threads)
  local cmp = kiln.compare(got, C)
  assert(cmp.max_rel < 1e-3 or cmp.max_abs < 1e-3 * n, "kiln and OpenBLAS disagree: " .. cmp.max_abs)
  local tk, tb = {}, {}
  for _ = 1, 2 do p:run { a = A, b = B }; kiln.bench.cblas_sgemm(A, B, C, threads) end -- warm-up
  for _ = 1, reps do
    local t0 = kiln.clock_ms(); p:run { a = A, b = B }; tk[#tk + 1] = kiln.clock_ms() - t0
    t0 = kiln.clock_ms(); kiln.bench.cblas_sgemm(A, B, C, threads); tb[#tb + 1] = kiln.clock_ms() - t0
  end
  local flop = 2.0 * n * n * n
  local gk, gb = flop / median(tk) / 1e6, flop / median(tb) / 1e6
  rows[#rows + 1] = { n = n, kiln = gk, blas = gb, ratio = gk / gb, compile = p.compile_ms, perf = p:kernels()[1].perf_config }
  print(string.format("%-6d %12.1f %12.1f %8.2f %12.1f   %s", n, gk, gb, gk / gb, p.compile_ms, p:kernels()[1].perf_config))
end
return rows
