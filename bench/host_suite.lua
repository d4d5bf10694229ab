-- bench/host_suite.lua — the host side of the benchmark report, one command:
--   KILN_THREADS=2 build/kiln bench/host_suite.lua [OUT.tsv] [--quick]
-- 1. sgemm: kiln's host kernel vs OpenBLAS (bench/host_gemm.lua: interleaved repeats, median)
-- 2. the GPU suite's harness on the host device with the small cases of bench/host_cases.txt
--    (bench/gpu_kiln.lua --device host: prepared runs, checked outputs, medians; compile
--    latency for sm_90 / gfx942 (compile only) and host (compile + ORC JIT load))
-- Rows go to OUT.tsv (default /tmp/kiln_bench/host_results.tsv) in the columns of the GPU
-- suite; `python3 bench/gpu_report.py OUT.tsv` prints them as the merged table.
local out, quick = "/tmp/kiln_bench/host_results.tsv", false
for _, a in ipairs(arg or {}) do
  if a == "--quick" then quick = true else out = a end
end
os.execute("mkdir -p '" .. out:gsub("/[^/]*$", "") .. "' 2>/dev/null")
local t0 = kiln.clock_ms()
local script_arg = arg

-- 1. sgemm vs OpenBLAS
local COLUMNS = { "case", "kind", "impl", "dtype", "shape", "ms", "ms_p10", "ms_p90", "reps", "sets", "flop", "bytes",
                  "value", "unit", "check", "note" }
local function write_row(row)
  local exists = io.open(out, "r")
  if exists then exists:close() end
  local f = assert(io.open(out, "a"))
  if not exists then f:write(table.concat(COLUMNS, "\t"), "\n") end
  local cells = {}
  for i, c in ipairs(COLUMNS) do cells[i] = (tostring(row[c] == nil and "" or row[c]):gsub("[\t\r\n]", " ")) end
  f:write(table.concat(cells, "\t"), "\n")
  f:close()
end
local sizes = quick and { "256", "512" } or { "512", "1024" }
arg = { [-1] = script_arg and script_arg[-1], sizes[1], sizes[2], "--reps", quick and "3" or "7" }   -- [-1]: finds build/kiln_bench.so
local ok, rows = pcall(dofile, "bench/host_gemm.lua")
if not ok then
  print("sgemm vs OpenBLAS: " .. tostring(rows))
  write_row { case = "sgemm", kind = "gemm", impl = "kiln", dtype = "f32", unit = "GFLOP/s", check = "ERROR " .. tostring(rows) }
else
  for _, r in ipairs(rows) do
    local flop = 2.0 * r.n * r.n * r.n
    local base = { case = "sgemm_host_" .. r.n, kind = "gemm", dtype = "f32", shape = r.n .. "x" .. r.n .. "x" .. r.n,
                   flop = flop, bytes = 3.0 * r.n * r.n * 4, unit = "GFLOP/s", check = "ok (kiln vs OpenBLAS output)" }
    local k = {} for key, v in pairs(base) do k[key] = v end
    k.impl, k.value, k.ms, k.note = "kiln", r.kiln, flop / r.kiln / 1e6, string.format("perf=%s compile=%.0fms (p:run, host)", r.perf, r.compile)
    write_row(k)
    local b = {} for key, v in pairs(base) do b[key] = v end
    b.impl, b.value, b.ms, b.note = "openblas", r.blas, flop / r.blas / 1e6, "cblas_sgemm"
    write_row(b)
  end
end

-- 2. the GPU harness on the host device
arg = { out, "--cases", "bench/host_cases.txt", "--device", "host", "--budget-ms", quick and "100" or "400" }
dofile("bench/gpu_kiln.lua")
arg = script_arg
print(string.format("host suite done in %.1f s -> %s (python3 bench/gpu_report.py %s)", (kiln.clock_ms() - t0) / 1e3, out, out))
