-- bench/tune_bench.lua — what tuning buys and costs: for a few GEMM
-- shapes and one ResNet-50 convolution, the heuristic's time, the best quick-tuned and the best
-- full-tuned time, and each tuning's wall time with its compile share, on the present device.
--
--   build-static/kiln bench/tune_bench.lua [DEVICE] [--full-max N] [--budget-ms MS] [--jobs N]
--                                          [--out PATH] [--small] [--case ID]...
--
-- DEVICE: cuda (default auto), hip or host (host: the shapes divided by 8, --small implied:
-- a check of the harness). Tuning goes through kiln.tune with db = false (nothing is written):
-- quick is the quick list (<= 30 + the heuristic); "full" is the full space sampled evenly down
-- to --full-max configs (default 150; 0 = the whole space, thousands on GPUs: far beyond a
-- few minutes) plus the quick list, so full's best is never worse than quick's measured ones.
-- Each candidate: warm-up, 20 timed launches (fewer, at least 5, when 20 would take more than
-- --budget-ms, default 300: slow candidates cost little) rotating among buffer sets,
-- the median after dropping 1.5-IQR outliers (driver/tune.h). The heuristic time is the quick
-- run's heuristic row (the same statistic, the same run).
-- wall = kiln.tune end to end (res.total_ms: random inputs on the host, compiles, loading,
-- measuring, checking every candidate's outputs, recording); compile share = (LLVM compile
-- wall time on the thread pool + loading the binaries on the device, a GPU driver's PTX JIT
-- included) / wall. A second table splits the quick tuning's wall time into its phases
-- (res.profile, the "time" line of kiln.tune_table).
-- Output: a markdown table on stdout, and TSV rows in --out (default tune_bench.tsv).
local fmt = string.format
local device_name, full_max, jobs, out_path, small, budget_ms = "auto", 150, nil, "tune_bench.tsv", false, 300
local want = {}
do
  local i = 1
  local function val() i = i + 1; local v = assert(arg[i], "missing value after " .. arg[i - 1]); return v end
  while arg and arg[i] do
    local a = arg[i]
    if a == "--full-max" then full_max = assert(math.tointeger(tonumber(val())), "--full-max takes an integer")
    elseif a == "--budget-ms" then budget_ms = assert(tonumber(val()), "--budget-ms takes a number")
    elseif a == "--jobs" then jobs = assert(math.tointeger(tonumber(val())), "--jobs takes an integer")
    elseif a == "--out" then out_path = val()
    elseif a == "--small" then small = true
    elseif a == "--case" then want[val()] = true
    elseif a:match("^%-") then error("unknown option " .. a)
    else device_name = a end
    i = i + 1
  end
end

local dev = kiln.device(device_name)
if dev.kind == "host" then small = true end
local div = small and 8 or 1

local function gemm(M, N, K, dt)
  return function()
    local g = kiln.graph(fmt("gemm_%dx%dx%d", M, N, K))
    local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
    g:output(g:dot(a, b))
    return g
  end
end

-- ResNet-50 res2 3x3 convolution (64 -> 64 channels, 56x56, pad 1), NHWC, batch 8, + relu
local function resnet_conv(n, c, hw, k)
  return function()
    local g = kiln.graph("resnet50_res2_3x3")
    local x = g:param("x", { n, c, hw, hw }, "f16", { layout = "NHWC" })
    local w = g:param("w", { k, c, 3, 3 }, "f16", { layout = "KYXC" })
    g:output(g:conv(x, w, { padding = { 1, 1 } }):relu())
    return g
  end
end

local CASES = {
  { id = "gemm_4096^3_f16", make = gemm(4096 // div, 4096 // div, 4096 // div, "f16") },
  { id = "gemm_8192x320x1280_f16", make = gemm(8192 // div, 320 // div, 1280 // div, "f16") },
  { id = "gemm_384x2304x768_f16", make = gemm(384 // div, 2304 // div, 768 // div, "f16") },
  { id = "resnet50_conv_3x3_64_56x56_n8_f16", make = resnet_conv(small and 1 or 8, 64 // (small and 4 or 1),
    56 // div, 64 // (small and 4 or 1)) },
}

local function sample(list, n)
  if n <= 0 or #list <= n then return list end
  local out, step = {}, #list / n
  for i = 0, n - 1 do out[#out + 1] = list[math.floor(i * step) + 1] end
  return out
end

local function union(a, b)
  local seen, out = {}, {}
  for _, l in ipairs { a, b } do
    for _, c in ipairs(l) do
      if not seen[c] then seen[c] = true; out[#out + 1] = c end
    end
  end
  return out
end

local function share(res) return (res.compile_wall_ms + res.load_ms) / res.total_ms end

local target = dev.arch
io.stderr:write(fmt("tune_bench on %s (%s), target %s, full sampled to %s configs\n", dev.name, dev.kind, target,
  full_max > 0 and tostring(full_max) or "all"))
local rows = {}
local tsv_new = io.open(out_path, "r") == nil
local tsv = assert(io.open(out_path, "a"))
if tsv_new then
  tsv:write("case\tdevice\ttarget\theuristic_ms\tquick_ms\tquick_config\tquick_wall_s\tquick_compile_share\t" ..
    "quick_candidates\tfull_ms\tfull_config\tfull_wall_s\tfull_compile_share\tfull_candidates\tfull_space\n")
end
for _, c in ipairs(CASES) do
  if next(want) == nil or want[c.id] then
    local g = c.make()
    local quick_list = kiln.tuning_space(g, { target = target, level = "quick" })
    local full_space = kiln.tuning_space(g, { target = target, level = "full" })
    local progress = kiln.tune_progress_printer(io.stderr, kiln._isatty(2), c.id .. " quick")
    local q = kiln.tune(g, { device = dev, target = target, level = "quick", db = false, jobs = jobs,
      budget_ms = budget_ms, progress = progress })
    local full_list = union(quick_list, sample(full_space, full_max))
    progress = kiln.tune_progress_printer(io.stderr, kiln._isatty(2), c.id .. " full")
    local f = kiln.tune(g, { device = dev, target = target, db = false, jobs = jobs, configs = full_list,
      budget_ms = budget_ms, progress = progress })
    io.stderr:write(kiln.tune_table(q, 5), "\n", kiln.tune_table(f, 5), "\n")
    local r = {
      id = c.id, heur = q.heuristic_ms, quick = q.best and q.best.ms or q.heuristic_ms,
      quick_cfg = q.best and q.best.config or "(heuristic)", quick_wall = q.total_ms / 1000, quick_share = share(q),
      quick_profile = q.profile,
      quick_n = q.ncandidates, full = f.best and f.best.ms or f.heuristic_ms,
      full_cfg = f.best and f.best.config or "(heuristic)", full_wall = f.total_ms / 1000, full_share = share(f),
      full_n = f.ncandidates, space = #full_space,
    }
    rows[#rows + 1] = r
    tsv:write(fmt("%s\t%s\t%s\t%.5f\t%.5f\t%s\t%.2f\t%.3f\t%d\t%.5f\t%s\t%.2f\t%.3f\t%d\t%d\n", r.id, dev.name, target,
      r.heur or -1, r.quick or -1, r.quick_cfg, r.quick_wall, r.quick_share, r.quick_n, r.full or -1, r.full_cfg,
      r.full_wall, r.full_share, r.full_n, r.space))
    tsv:flush()
  end
end
tsv:close()

print(fmt("\nTuning on %s (%s): heuristic vs quick-tuned vs full-tuned (full = the quick list + %s of the full " ..
  "space); times are medians in ms; wall = kiln.tune end to end, compile share = (LLVM compile + loading on " ..
  "the device) / wall", dev.name, target, full_max > 0 and fmt("%d evenly sampled configs", full_max) or "all"))
print("")
print("| case | heuristic ms | quick ms (speedup) | quick wall s (compile share) | full ms (speedup) | " ..
  "full wall s (compile share) | quick vs full | candidates quick / full / space |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for _, r in ipairs(rows) do
  local function sp(x) return (r.heur and x) and fmt("%.2fx", r.heur / x) or "-" end
  print(fmt("| %s | %.4f | %.4f (%s) | %.1f (%.0f%%) | %.4f (%s) | %.1f (%.0f%%) | %+.1f%% | %d / %d / %d |", r.id,
    r.heur or -1, r.quick or -1, sp(r.quick), r.quick_wall, 100 * r.quick_share, r.full or -1, sp(r.full),
    r.full_wall, 100 * r.full_share, 100 * ((r.quick or 0) / (r.full or 1) - 1), r.quick_n, r.full_n, r.space))
end
print("\nWhere the quick tuning's wall time went (seconds; res.profile): random inputs on the host, LLVM " ..
  "compile on the thread pool, loading on the device, device buffers and input uploads, timed launches, " ..
  "downloading and checking every output element of every candidate, the best config's compile and record")
print("")
print("| case | wall | inputs | compile | load | buffers+upload | runs | checks | record | other |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for _, r in ipairs(rows) do
  local p = r.quick_profile
  print(fmt("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |", r.id, r.quick_wall,
    p.inputs_ms / 1000, p.compile_ms / 1000, p.load_ms / 1000, p.prepare_ms / 1000, p.run_ms / 1000,
    p.check_ms / 1000, p.record_ms / 1000, p.other_ms / 1000))
end
print(fmt("\nbest configs: %s", table.concat((function()
  local t = {}
  for _, r in ipairs(rows) do t[#t + 1] = fmt("%s quick %s full %s", r.id, r.quick_cfg, r.full_cfg) end
  return t
end)(), "; ")))
print("TSV rows: " .. out_path)
