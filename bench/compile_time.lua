-- bench/compile_time.lua — cold compile time of the seed conv (examples/conv_add_relu.lua's
-- graph: NHWC 1x1 conv 2048 -> 512 on 7x7, + residual + relu, f16, batch 512) per target.
--
--   build/kiln bench/compile_time.lua [OUT.tsv] [--target T]... [--n N] [--batch B] [--dtype D]
--
-- Targets default to sm_90a, sm_90, sm_80 (--target, repeatable, replaces them: gfx942, host,
-- any kiln target). Per target: one warm-up compile (its time is the "first" column: the
-- process's one-time initialisation of LLVM's targets is in the first target's), then N
-- (default 7) compiles `kiln.compile(g, {target = T, cache = false})`: no in-memory and no
-- disk cache, the whole pipeline every time (kiln's passes, plan, LLVM IR, O3, code
-- generation to PTX / HSACO / object; nothing is loaded on a device, and for NVIDIA the
-- driver's PTX -> SASS compile is not included). Each compile is timed as process CPU time
-- (os.clock: all threads of the process) and wall time (kiln.clock_ms); the table gives the
-- median, minimum and maximum of the N, and the medians of p.compile_phases (wall ms of
-- kiln's passes, plan, LLVM IR, LLVM's optimisation, its code generator). The machine's load
-- (/proc/loadavg, where readable) is printed before and after: a loaded machine stretches wall
-- time more than CPU time. OUT.tsv (optional) gets a header if new, then one row per target.
local out_path, targets, n, batch, dtype = nil, {}, 7, 512, "f16"
do
  local i = 1
  local function val()
    i = i + 1
    local v = assert(arg[i], "compile_time.lua: missing value after " .. arg[i - 1])
    return v
  end
  while arg and arg[i] do
    local a = arg[i]
    if a == "--target" then targets[#targets + 1] = val()
    elseif a == "--n" then n = assert(math.tointeger(tonumber(val())), "--n takes an integer")
    elseif a == "--batch" then batch = assert(math.tointeger(tonumber(val())), "--batch takes an integer")
    elseif a == "--dtype" then dtype = val()
    elseif a:sub(1, 2) == "--" then error("compile_time.lua: unknown option " .. a)
    elseif not out_path then out_path = a
    else error("compile_time.lua: unexpected argument " .. a) end
    i = i + 1
  end
  assert(n >= 1, "--n must be at least 1")
  if #targets == 0 then targets = { "sm_90a", "sm_90", "sm_80" } end
end

local function loadavg()
  local f = io.open("/proc/loadavg")
  if not f then return "?" end
  local s = f:read("l") or "?"
  f:close()
  return (s:match("^(%S+ %S+ %S+)")) or s
end

local function sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

local function median(t)
  local s = sorted(t)
  local m = #s
  if m % 2 == 1 then return s[(m + 1) // 2] end
  return (s[m // 2] + s[m // 2 + 1]) / 2
end

local function graph()
  local g = kiln.graph("conv_add_relu_" .. dtype)
  local x = g:param("x", { batch, 2048, 7, 7 }, dtype, { layout = "NHWC" })
  local w = g:param("w", { 512, 2048, 1, 1 }, dtype, { layout = "KYXC" })
  local r = g:param("r", { batch, 512, 7, 7 }, dtype, { layout = "NHWC" })
  g:output((g:conv(x, w) + r):relu())
  return g
end

local PHASES = { "passes", "plan", "llvm_ir", "llvm_opt", "llvm_codegen" }
local g = graph()
local load_before = loadavg()
local rows = {}
for _, t in ipairs(targets) do
  local row = { target = t }
  local ok, err = pcall(function()
    local function once()
      local c0, w0 = os.clock(), kiln.clock_ms()
      local p = kiln.compile(g, { target = t, cache = false })
      local c1, w1 = os.clock(), kiln.clock_ms()
      return (c1 - c0) * 1000, w1 - w0, p
    end
    row.first = once()
    local cpu, wall, ph = {}, {}, {}
    local p
    for i = 1, n do
      cpu[i], wall[i], p = once()
      for k, v in pairs(p.compile_phases) do
        ph[k] = ph[k] or {}
        table.insert(ph[k], v)
      end
    end
    assert(not p.from_cache, "compile_time.lua: a compile came from the cache")
    row.cpu, row.wall = median(cpu), median(wall)
    row.cpu_min, row.cpu_max = sorted(cpu)[1], sorted(cpu)[n]
    row.wall_min, row.wall_max = sorted(wall)[1], sorted(wall)[n]
    row.kernels = #p:kernels()
    row.phases = {}
    for _, k in ipairs(PHASES) do row.phases[k] = ph[k] and median(ph[k]) or 0 end
  end)
  if not ok then row.error = tostring(err) end
  rows[#rows + 1] = row
end
local load_after = loadavg()

print(string.format("seed conv (conv_add_relu, %s, batch %d) cold compile, cache = false, warm-up + median of %d",
                    dtype, batch, n))
print(string.format("load average before: %s, after: %s", load_before, load_after))
print(string.format("%-8s %9s %15s %9s %15s %8s  %s", "target", "cpu ms", "(min-max)", "wall ms", "(min-max)",
                    "first", "phases (wall ms, medians): passes plan llvm_ir llvm_opt llvm_codegen"))
for _, r in ipairs(rows) do
  if r.error then
    print(string.format("%-8s ERROR %s", r.target, r.error))
  else
    local ph = {}
    for _, k in ipairs(PHASES) do ph[#ph + 1] = string.format("%.1f", r.phases[k]) end
    print(string.format("%-8s %9.1f %15s %9.1f %15s %8.1f  %s", r.target, r.cpu,
                        string.format("(%.1f-%.1f)", r.cpu_min, r.cpu_max), r.wall,
                        string.format("(%.1f-%.1f)", r.wall_min, r.wall_max), r.first, table.concat(ph, " ")))
  end
end

if out_path then
  local cols = { "case", "target", "dtype", "batch", "n", "cpu_ms", "cpu_min", "cpu_max", "wall_ms", "wall_min",
                 "wall_max", "first_ms", "passes", "plan", "llvm_ir", "llvm_opt", "llvm_codegen", "kernels",
                 "load_before", "load_after", "check" }
  local f0 = io.open(out_path, "r")
  local fresh = f0 == nil
  if f0 then fresh = f0:read(1) == nil; f0:close() end
  local f = assert(io.open(out_path, "a"))
  if fresh then f:write(table.concat(cols, "\t"), "\n") end
  for _, r in ipairs(rows) do
    local v = { "compile_conv_n" .. batch .. "_" .. r.target, r.target, dtype, batch, n }
    local function num(x) return x and string.format("%.2f", x) or "" end
    for _, x in ipairs { r.cpu, r.cpu_min, r.cpu_max, r.wall, r.wall_min, r.wall_max, r.first } do v[#v + 1] = num(x) end
    for _, k in ipairs(PHASES) do v[#v + 1] = num(r.phases and r.phases[k]) end
    v[#v + 1] = r.kernels or ""
    v[#v + 1] = load_before
    v[#v + 1] = load_after
    v[#v + 1] = r.error and ("ERROR " .. r.error:gsub("[\t\n]", " ")) or "ok"
    for i = 1, #v do v[i] = tostring(v[i]) end
    f:write(table.concat(v, "\t"), "\n")
  end
  f:close()
  print("wrote " .. out_path)
end
