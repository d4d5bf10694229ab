-- bench/gpu_kiln.lua — kiln's side of the GPU suite: GEMM, the fused conv+add+relu,
-- element-wise add, compile latency and the input-fusion cases (a convert or a scale of a
-- GEMM/conv operand; rows kiln, kiln.fuse and kiln.nofuse) on the present device, one TSV row
-- per measurement.
--
--   build/kiln bench/gpu_kiln.lua OUT.tsv [--case ID]... [--cases FILE] [--device NAME]
--                                 [--budget-ms MS] [--samples N] [--ptx DIR] [--suffix S] [--list]
--                                 [--cpa]
--
-- OUT.tsv gets a header if it is new, then rows are appended (bench/gpu_peers.py writes the
-- same columns, bench/gpu_report.py merges them). Cases come from bench/gpu_cases.txt
-- (--cases for another file; --case ID, repeatable, picks some; --case 'ID@v2:...' a listed
-- case with that perf config, tiles and splitK forced: impl kiln.v2:..., kinds gemm, conv and
-- swz). --device defaults to
-- "cuda"; "host" runs the same code on the host device (bench/host_cases.txt: a check of
-- the harness, and the host suite). --ptx DIR writes each case's kernel binaries there;
-- --suffix S is appended to the case ids of the rows (a repeated measurement: "#2").
-- --cpa: the gemm, conv and swz cases also time the cp.async K-loop pipeline,
-- rock-gridwise-to-blockwise{cp-async=S[,cp-async-layout=L]}: impls kiln.cpaauto (S = -1, the
-- default pipeline on the mma.sync target: auto stages, the heuristic's tiles), kiln.cpa1 (S = 1:
-- the register-staged loop), kiln.cpa2 .. kiln.cpa4 (the default layout, xor: [rows, K]
-- swizzled), kiln.cpa3.krow ([rows, K + 16 bytes]) and kiln.cpa3.kgroup (the register path's
-- tiles); the note gives the stages the kernel got, its async operands, their LDS layout and
-- the LDS bytes. Gemm cases time the same with B stored transposed ([N, K], K-contiguous, so
-- both operands go through cp.async): kiln.cpaS.bt[.layout], plus xor with forced tiles:
-- kiln.cpaS.bt.xor.v2:128,128,32,... / 128,256,32 / 256,128,32 (CPA_VARIANTS). Conv cases
-- take the heuristic's tiles only (a given config would also turn off its C^T orientation).
--
-- Method (bench/README.md): random inputs (kiln.rand, uniform [-1, 1), never
-- zeros); p:prepare uploads them once into device buffers, enough buffer sets to span at
-- least 256 MiB (rotated launch by launch, so inputs that fit in the 60 MB L2 are still read
-- from memory), result buffers poisoned with NaN; one launch is checked before any timing
-- (every output element finite, i.e. written; a sample of outputs against float64 dot
-- products computed here from the input tensors); then warm-up (>= 100 ms of launches) and
-- r:time: device events around each launch, launches back to back, median reported with
-- the 10th/90th percentiles. The number of repeats fills --budget-ms (default 600) per case.
local KILN_ROOT = "."
package.path = KILN_ROOT .. "/spec/lua/?.lua;" .. package.path
local FP8_RULE = require "fp8_wgmma_rule" -- the fp8 wgmma's measured accumulation (qgemm kiln.fp8wg rows)
local out_path, device_name, cases_file = nil, "cuda", KILN_ROOT .. "/bench/gpu_cases.txt"
local want_cases, budget_ms, nsamples, ptx_dir, list_only, suffix = {}, 600, 16, nil, false, ""
local CPA = false
local ROTATE_BYTES = 256 * 1024 * 1024
local WARM_MS, MIN_REPS, MAX_REPS = 100, 10, 2000

do
  local i = 1
  local function val() i = i + 1; local v = assert(arg[i], "missing value after " .. arg[i - 1]); return v end
  while arg and arg[i] do
    local a = arg[i]
    if a == "--case" then want_cases[#want_cases + 1] = val()
    elseif a == "--cases" then cases_file = val()
    elseif a == "--device" then device_name = val()
    elseif a == "--budget-ms" then budget_ms = assert(tonumber(val()), "--budget-ms takes a number")
    elseif a == "--samples" then nsamples = assert(math.tointeger(tonumber(val())), "--samples takes an integer")
    elseif a == "--ptx" then ptx_dir = val()
    elseif a == "--list" then list_only = true
    elseif a == "--suffix" then suffix = val()
    elseif a == "--cpa" then CPA = true
    elseif a:sub(1, 2) == "--" then error("gpu_kiln.lua: unknown option " .. a)
    else out_path = a end
    i = i + 1
  end
end

-- ---------------------------------------------------------------- cases ----
local function read_cases(path)
  local f = assert(io.open(path, "r"), "cannot open " .. path)
  local cases = {}
  for line in f:lines() do
    line = line:gsub("#.*", "")
    local w = {}
    for tok in line:gmatch("%S+") do w[#w + 1] = tok end
    if #w > 0 then
      local dims = {}
      for k = 4, #w do dims[#dims + 1] = assert(math.tointeger(tonumber(w[k])), path .. ": bad dimension " .. w[k]) end
      cases[#cases + 1] = { id = w[1], kind = w[2], dtype = w[3], dims = dims }
    end
  end
  f:close()
  return cases
end

local cases = read_cases(cases_file)
if list_only then
  for _, c in ipairs(cases) do print(c.id) end
  return
end
assert(out_path, "usage: build/kiln bench/gpu_kiln.lua OUT.tsv [--case ID]... [--device NAME] (see the file's head)")
if #want_cases > 0 then
  local keep, known = {}, {}
  for _, c in ipairs(cases) do known[c.id] = c end
  for _, id in ipairs(want_cases) do
    -- "ID@v2:..." not listed: case ID with that perf config (kinds gemm, conv, swz)
    local base, cfg = id:match("^(.-)@(v%d:[%d,]+)$")
    local c = known[id] or (base and known[base] and { id = id, kind = known[base].kind, dtype = known[base].dtype,
                                                       dims = known[base].dims })
    if not c then error("no case named " .. id .. " in " .. cases_file) end
    -- a copy per occurrence: the loop below rewrites c.id, and a case asked for twice (a repeat
    -- at the end of a run) ran its second time, and its first, without its @variant
    local copy = {}
    for k, v in pairs(c) do copy[k] = v end
    keep[#keep + 1] = copy
  end
  cases = keep
end
for _, c in ipairs(cases) do -- "#2" for a repeated measurement; "ID@wgmma": case ID, impl kiln.wgmma;
  -- "ID@v2:..." (a perf config): case ID compiled with that config, impl kiln.v2:...
  local base, variant = c.id:match("^(.-)@(%w+)$")
  if not base then base, variant = c.id:match("^(.-)@(v%d:[%d,]+)$") end
  c.variant = variant
  c.name = base or c.id
  c.id = c.name .. suffix
end

local dev_ok, dev = pcall(kiln.device, device_name)
if dev_ok and device_name ~= "host" and dev.kind == "host" then dev_ok, dev = false, "no GPU found (" .. dev.note .. ")" end

-- --------------------------------------------------------------- output ----
local COLUMNS = { "case", "kind", "impl", "dtype", "shape", "ms", "ms_p10", "ms_p90", "reps", "sets", "flop", "bytes",
                  "value", "unit", "check", "note" }
local function clean(s) return (tostring(s):gsub("[\t\r\n]", " ")) end
local function write_row(row)
  local exists = io.open(out_path, "r")
  if exists then exists:close() end
  local f = assert(io.open(out_path, "a"))
  if not exists then f:write(table.concat(COLUMNS, "\t"), "\n") end
  local cells = {}
  for i, c in ipairs(COLUMNS) do cells[i] = clean(row[c] == nil and "" or row[c]) end
  f:write(table.concat(cells, "\t"), "\n")
  f:close()
  print(string.format("%-26s %-6s %10s %s  %s", row.case, row.impl,
                      row.value ~= nil and string.format("%.4g", row.value) or "-", row.unit or "", row.check or ""))
end
local function fmt_num(x) return x and string.format("%.6g", x) or "" end

-- ---------------------------------------------------------------- stats ----
local function sorted(t) local c = {} for i, v in ipairs(t) do c[i] = v end table.sort(c) return c end
local function pct(s, q)   -- s sorted; nearest-rank percentile
  local k = math.max(1, math.min(#s, math.floor(q * (#s - 1) + 0.5) + 1))
  return s[k]
end
local function median(t)
  local s = sorted(t)
  local n = #s
  return n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
end

-- Times a prepared run: a short estimate, warm-up (>= WARM_MS), then reps filling budget_ms.
local function measure(r)
  local est = median(r:time { warmup = 1, reps = 3 })
  if est <= 0 then est = 1e-3 end
  local warm = math.max(2, math.min(1000, math.ceil(WARM_MS / est)))
  local reps = math.max(MIN_REPS, math.min(MAX_REPS, math.floor(budget_ms / est)))
  local ms = r:time { warmup = warm, reps = reps }
  local s = sorted(ms)
  return { ms = median(ms), p10 = pct(s, 0.1), p90 = pct(s, 0.9), reps = reps, warm = warm, sets = r.sets }
end

-- ------------------------------------------------------------ checking ----
local TOL = { f16 = 2e-3, bf16 = 1e-2, f32 = 1e-5 }

-- Every element finite (results are poisoned with NaN before the launch, so a NaN here is an
-- element no kernel wrote, or a computed NaN: both are failures).
local function all_finite(t)
  local z = kiln.zeros(t.shape, t.dtype)
  local cmp = kiln.compare(t, z, { rtol = 0, atol = 1e300 })
  return cmp.mismatches == 0, cmp.mismatches
end

-- Deterministic sample positions (a small LCG, so runs pick the same elements).
local function lcg(seed)
  local s = seed
  return function(n) s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff; return (s >> 33) % n end
end

local function rel_report(num, den, n, dtype)
  local rel = den > 0 and math.sqrt(num / den) or math.sqrt(num)
  local ok = rel == rel and rel <= TOL[dtype]
  return ok, string.format("%s rel=%.2e (tol %.0e) on %d sampled outputs; all outputs finite", ok and "ok" or "FAIL", rel, TOL[dtype], n)
end

-- The values of the list t (float64) rounded to dtype, as a list (through a kiln tensor:
-- the same rounding as kiln's conversions).
local function rounded(t, dtype)
  local x, r = kiln.tensor(t, dtype), {}
  for k = 1, #t do r[k] = x:get { k - 1 } end
  return r
end

-- C = A @ B: nsamples rows x nsamples columns of C against float64 dot products. a_row(t, i),
-- when given, maps the sampled row i of A (a list of K values) to the row the GEMM multiplies
-- (the input-fusion cases: A converted to f16, or A * S rounded to f16). dtype "fp8": within
-- the f32 summation bound; "fp8wg": the opt-in fp8 wgmma, within the bound of its measured
-- accumulation rule (spec/lua/fp8_wgmma_rule.lua, fp8_rule = { pc = the kernel's perf config
-- (its K tiles and split), promote = its fp8_promote (K elements per promotion interval; 0
-- one level), fmt = the fp8 format (the products' alignment exponents) }: each k32 instruction
-- truncating its addends below 2^(emax - 13), the intervals added in f32) plus one f32
-- rounding of the reference.
local function check_gemm(A, B, C, M, N, K, dtype, a_row, fp8_rule)
  local fin, bad = all_finite(C)
  if not fin then return false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad) end
  local rnd = lcg(7)
  local rows, cols = { 0, M - 1 }, { 0, N - 1 }
  while #rows < nsamples do rows[#rows + 1] = rnd(M) end
  while #cols < nsamples do cols[#cols + 1] = rnd(N) end
  local arow, bcol = {}, {}
  for ri, i in ipairs(rows) do
    local t = {}
    for k = 0, K - 1 do t[k + 1] = A:get { i, k } end
    arow[ri] = a_row and a_row(t, i) or t
  end
  for ci, j in ipairs(cols) do local t = {} for k = 0, K - 1 do t[k + 1] = B:get { k, j } end bcol[ci] = t end
  local num, den, worst, f32worst, same = 0.0, 0.0, 0.0, 0.0, 0
  for ri, i in ipairs(rows) do
    local a = arow[ri]
    for ci, j in ipairs(cols) do
      local b, ref, abs = bcol[ci], 0.0, 0.0
      local prod, ex = {}, fp8_rule and {}
      for k = 1, K do
        prod[k] = a[k] * b[k]; ref = ref + prod[k]; abs = abs + math.abs(prod[k])
        if ex then ex[k] = FP8_RULE.align_exponent(a[k], b[k], fp8_rule.fmt) end
      end
      local got = C:get { i, j }
      local d = got - ref
      num = num + d * d; den = den + ref * ref
      -- fp8 operands (qgemm): exact products summed in f32: within (K - 1) 2^-24 sum |a b|
      local f = math.abs(d) / ((K - 1) * 2 ^ -24 * abs + 1e-30)
      if not (f <= f32worst) then f32worst = f end
      local r = f
      if fp8_rule then
        local o = { promote = (fp8_rule.promote or 0) // 32, ex = ex }
        local bnd = FP8_RULE.gemm_bound(prod, K, fp8_rule.pc, o)
        r = math.abs(d) / (bnd + 2 ^ -24 * (math.abs(ref) + bnd) + K * 2 ^ -53 * abs + 1e-30)
        if got == FP8_RULE.gemm_emulate(prod, K, fp8_rule.pc, o) then same = same + 1 end
      end
      if not (r <= worst) then worst = r end
    end
  end
  if dtype == "fp8wg" then
    local ok = worst <= 1
    return ok, string.format("%s max |err| = %.3g x the fp8 wgmma rule's bound (%.3g x the f32 summation bound), rule emulation "
                             .. "exact on %d of %d, rel=%.2e, on %d sampled outputs; all outputs finite", ok and "ok" or "FAIL",
                             worst, f32worst, same, #rows * #cols, den > 0 and math.sqrt(num / den) or 0, #rows * #cols)
  end
  if dtype == "fp8" then
    local ok = worst <= 1
    return ok, string.format("%s max |err| = %.3g x the f32 summation bound (K-1) 2^-24 sum|a b|, rel=%.2e, on %d sampled outputs; all outputs finite",
                             ok and "ok" or "FAIL", worst, den > 0 and math.sqrt(num / den) or 0, #rows * #cols)
  end
  return rel_report(num, den, #rows * #cols, dtype)
end

-- out[n,k,h,w] = relu(sum_c x[n,c,h,w] * w[k,c,0,0] + r[n,k,h,w]). x_pix(t), when given, maps
-- the C values of a sampled pixel of X to the ones the conv reads (conv_cvt: rounded to f16).
local function check_conv(X, W, R, O, Nb, C, H, Wd, K, dtype, x_pix)
  local fin, bad = all_finite(O)
  if not fin then return false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad) end
  local rnd = lcg(11)
  local pix, chans = { { 0, 0, 0 }, { Nb - 1, H - 1, Wd - 1 } }, { 0, K - 1 }
  while #pix < nsamples do pix[#pix + 1] = { rnd(Nb), rnd(H), rnd(Wd) } end
  while #chans < nsamples do chans[#chans + 1] = rnd(K) end
  local xs, ws = {}, {}
  for pi, q in ipairs(pix) do
    local t = {}
    for c = 0, C - 1 do t[c + 1] = X:get { q[1], c, q[2], q[3] } end
    xs[pi] = x_pix and x_pix(t) or t
  end
  for ki, k in ipairs(chans) do local t = {} for c = 0, C - 1 do t[c + 1] = W:get { k, c, 0, 0 } end ws[ki] = t end
  local num, den = 0.0, 0.0
  for pi, q in ipairs(pix) do
    for ki, k in ipairs(chans) do
      local x, w, acc = xs[pi], ws[ki], 0.0
      for c = 1, C do acc = acc + x[c] * w[c] end
      acc = acc + R:get { q[1], k, q[2], q[3] }
      local ref = acc > 0 and acc or 0.0
      local d = O:get { q[1], k, q[2], q[3] } - ref
      num = num + d * d; den = den + ref * ref
    end
  end
  return rel_report(num, den, #pix * #chans, dtype)
end

local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local function check_add(X, Y, Z, R, S)
  local fin, bad = all_finite(Z)
  if not fin then return false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad) end
  local rnd = lcg(13)
  local n, wrong = nsamples * nsamples, 0
  for s = 1, n do
    local i, j = rnd(R), rnd(S)
    if s == 1 then i, j = 0, 0 elseif s == 2 then i, j = R - 1, S - 1 end
    if Z:get { i, j } ~= f32(X:get { i, j } + Y:get { i, j }) then wrong = wrong + 1 end
  end
  return wrong == 0, string.format("%s %d of %d sampled outputs differ from the f32 sum; all outputs finite",
                                   wrong == 0 and "ok" or "FAIL", wrong, n)
end

-- ------------------------------------------------------------ kernels ----
local function kernel_note(p)
  local parts = {}
  for _, k in ipairs(p:kernels()) do
    local bin = p:binary(k.name)
    local path = "fma"
    if k.perf_config:sub(1, 3) == "v2:" or bin:find("mma.sync", 1, true) or bin:find("wgmma", 1, true) then path = "mma.sync" end
    if bin:find("wgmma", 1, true) then path = "wgmma" end
    if k.kind ~= "gemm" then path = k.kind end
    -- the cp.async pipeline where the kernel took it: its async operands, their LDS layout, stages
    local cpa = (k.pipeline_stages or 0) >= 2
        and string.format(" cp.async=%s/%s/S%d", k.async_copy, k.async_lds_layout ~= "" and k.async_lds_layout or "-",
                          k.pipeline_stages) or ""
    local tma = k.tma ~= "" and " tma=" .. k.tma:gsub(" ", "_") or ""
    parts[#parts + 1] = string.format("%s[%s grid=%d block=%d lds=%d perf=%s%s%s]", k.name, path, k.grid, k.block,
                                      k.lds_bytes, k.perf_config ~= "" and k.perf_config or "-", cpa, tma)
  end
  return #p:kernels() .. " kernel(s): " .. table.concat(parts, " ")
end
local function gemm_path(p)
  for _, k in ipairs(p:kernels()) do
    local bin = p:binary(k.name)
    if bin:find("wgmma", 1, true) then return "wgmma" end
    if k.perf_config:sub(1, 3) == "v2:" or bin:find("mma.sync", 1, true) then return "mma.sync" end
  end
  return "fma"
end
local function dump_binaries(id, p)
  if not ptx_dir then return end
  for _, k in ipairs(p:kernels()) do
    local ext = dev.kind == "cuda" and "ptx" or dev.kind == "hip" and "hsaco" or "bc"
    local f = io.open(string.format("%s/%s.%s.%s", ptx_dir, id, k.name, ext), "wb")
    if f then f:write(p:binary(k.name)); f:close() end
  end
end

local function shape_str(d) return table.concat(d, "x") end

-- The variant of a case: "wgmma" compiles for sm_90a with rock-gemm-to-gridwise{wgmma=true}
-- (the Hopper path, passes/rock_wgmma.h, sm_90a's default; compute capability 9.0 only);
-- "mmasync" for sm_90 on such a device (the mma.sync path its own target sm_90a replaced); "mma80" for
-- sm_80 on any GPU of compute capability 8.0 or later (sm_80's PTX, JIT-compiled by the driver); "wgfl" sm_90a
-- with rock-gridwise-to-blockwise{wgmma-fence=late} (the wgmma K loop's earlier fence placement); "v3:..." that
-- wgmma config on sm_90a (compute capability 9.0 only); "v1:..." / "v2:..." with that perf
-- config (a same-run comparison with the heuristic's pick); "rasterG" the default target with
-- the grouped workgroup order of group G (raster_pipeline); "sts" the default target with
-- rock-output-swizzle{stmatrix=false} (the epilogue's scalar LDS stores, before stmatrix);
-- else the default.
local WGMMA_PIPELINE = kiln.default_pipeline():gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{wgmma=true}", 1)
-- "rasterG": the default pipeline with rock-gridwise-to-blockwise{raster-group-m=G} (the grouped
-- workgroup order, passes/gemm_raster.h), its other options kept
local function raster_pipeline(gm)
  local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise([^,]*)", function(o)
    if o:sub(1, 1) == "{" then return "rock-gridwise-to-blockwise{" .. o:sub(2, -2) .. ",raster-group-m=" .. gm .. "}" end
    return "rock-gridwise-to-blockwise{raster-group-m=" .. gm .. "}"
  end)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  return pl
end
-- "tma": sm_90a's wgmma path with TMA + mbarrier loads of the K-major operands, every warpgroup
-- computing (rock-gridwise-to-blockwise{tma=1,ws=0}, passes/rock_tma.h; the heuristic's config; the TMA
-- tiles 128-byte swizzled where the K tile allows, tma-swizzle's default);
-- "tmak64": the same with the 128x256x64 config (v3:128,256,64,64,256,8);
-- "tmanosw" / "tmak64nosw": the same two with tma-swizzle=none (the unswizzled boxes {8, rows})
local TMA_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                  "rock-gridwise-to-blockwise{tma=1,ws=0},", 1)
local TMA_NOSW_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                       "rock-gridwise-to-blockwise{tma=1,ws=0,tma-swizzle=none},", 1)
-- "ws": the warp-specialized TMA loop (rock-gridwise-to-blockwise{tma=1,ws=1}: a producer
-- warpgroup, full / empty mbarriers, setmaxnreg; the heuristic's config); "wsk64" with
-- v3:128,256,64,64,256,8
local WS_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                 "rock-gridwise-to-blockwise{tma=1,ws=1},", 1)
-- "persist": the TMA loop with persistent tiles (rock-gridwise-to-blockwise{tma=1,ws=0,persistent=1}:
-- min(tiles, SMs x resident) workgroups loop over the tiles in the raster order, each issuing the
-- next tile's first loads before its epilogue; passes/rock_tma.h); "wsp": the same with ws=1 (the
-- producer fills the next tile's stages while the consumers run the epilogue)
local PERSIST_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                      "rock-gridwise-to-blockwise{tma=1,ws=0,persistent=1},", 1)
local WSP_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                  "rock-gridwise-to-blockwise{tma=1,ws=1,persistent=1},", 1)
-- "c2" / "c4" / "c1x2" / "c2x1": thread-block clusters of the TMA loop (rock-gridwise-to-blockwise{tma=1,
-- ws=0,cluster=2|4|1x2|2x1}: the cluster's CTAs share one operand tile through TMA multicast;
-- passes/rock_tma.h), the heuristic's config
-- "c2ws" / "c4ws" / "c1x2ws" / "c2x1ws": the same with warp specialization (ws=1: the producer
-- warpgroup issues the multicast slices)
local function cluster_pipeline(shape)
  local ws = shape:find("ws$") and "1" or "0"
  return kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                      "rock-gridwise-to-blockwise{tma=1,ws=" .. ws .. ",cluster=" .. shape:gsub("ws$", "") .. "},", 1)
end
local CLUSTER_VARIANTS = { c2 = "2", c4 = "4", c1x2 = "1x2", c2x1 = "2x1", c2ws = "2ws", c4ws = "4ws", c1x2ws = "1x2ws",
                           c2x1ws = "2x1ws" }
-- "im2col": the TMA loop with the conv activation through TMA im2col mode (rock-gridwise-to-blockwise
-- {tma=1,ws=0,tma-im2col=1}, passes/rock_tma_im2col.h), the heuristic's config
local IM2COL_PIPELINE = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                     "rock-gridwise-to-blockwise{tma=1,ws=0,tma-im2col=1},", 1)
local TMA_VARIANTS = { tma = true, tmak64 = true, tmanosw = true, tmak64nosw = true, ws = true, wsk64 = true,
                       persist = true, wsp = true, im2col = true }
for v in pairs(CLUSTER_VARIANTS) do TMA_VARIANTS[v] = true end
local function compile_case(c, g)
  if TMA_VARIANTS[c.variant] then
    if not (dev.kind == "cuda" and dev.cc == "9.0") then error("the tma variants need a compute capability 9.0 GPU", 0) end
    return kiln.compile(g, { target = "sm_90a",
                             pipeline = CLUSTER_VARIANTS[c.variant] and cluster_pipeline(CLUSTER_VARIANTS[c.variant])
                                 or c.variant == "persist" and PERSIST_PIPELINE or c.variant == "wsp" and WSP_PIPELINE
                                 or c.variant == "im2col" and IM2COL_PIPELINE
                                 or c.variant:find("^ws") and WS_PIPELINE
                                 or c.variant:find("nosw", 1, true) and TMA_NOSW_PIPELINE or TMA_PIPELINE,
                             perf_config = c.variant:find("k64", 1, true) and "v3:128,256,64,64,256,8" or nil })
  end
  if c.variant == "wgmma" then
    if not (dev.kind == "cuda" and dev.cc == "9.0") then error("the wgmma variant needs a compute capability 9.0 GPU", 0) end
    return kiln.compile(g, { target = "sm_90a", pipeline = WGMMA_PIPELINE })
  end
  if c.variant == "wgfl" then -- the wgmma K loop with its proxy fence after the global loads (the earlier loop)
    if not (dev.kind == "cuda" and dev.cc == "9.0") then error("the wgfl variant needs a compute capability 9.0 GPU", 0) end
    local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{wgmma-fence=late},", 1)
    assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
    return kiln.compile(g, { target = "sm_90a", pipeline = pl })
  end
  if c.variant == "mmasync" then
    if not (dev.kind == "cuda" and dev.cc == "9.0") then error("the mmasync variant is for a compute capability 9.0 GPU", 0) end
    return kiln.compile(g, { target = "sm_90" })
  end
  if c.variant == "mma80" then -- sm_80's PTX (A100-class: mma.sync, ldmatrix, cp.async) on any GPU that runs it
    if not (dev.kind == "cuda" and (tonumber(dev.cc) or 0) >= 8.0) then error("the mma80 variant needs an sm_80+ GPU", 0) end
    return kiln.compile(g, { target = "sm_80" })
  end
  if c.variant and c.variant:match("^v3:") then -- a wgmma config: sm_90a, compute capability 9.0 only
    if not (dev.kind == "cuda" and dev.cc == "9.0") then error("a v3 (wgmma) config needs a compute capability 9.0 GPU", 0) end
    return kiln.compile(g, { target = "sm_90a", perf_config = c.variant })
  end
  if c.variant and c.variant:match("^v%d:") then return kiln.compile(g, { target = dev.arch, perf_config = c.variant }) end
  if c.variant == "sts" then -- the default target with the epilogue's scalar LDS stores (no stmatrix)
    local pl, n = kiln.default_pipeline():gsub("rock%-output%-swizzle[^,]*,", "rock-output-swizzle{stmatrix=false},", 1)
    assert(n == 1, "the default pipeline has no rock-output-swizzle")
    return kiln.compile(g, { target = dev.arch, pipeline = pl })
  end
  local gm = c.variant and c.variant:match("^raster(%d+)$")
  if gm then return kiln.compile(g, { target = dev.arch, pipeline = raster_pipeline(gm) }) end
  if c.variant then error("unknown case variant '" .. c.variant .. "'", 0) end
  return kiln.compile(g, { target = dev.arch })
end
local function impl_of(c) return c.variant and ("kiln." .. c.variant) or "kiln" end

-- ---------------------------------------------------------------- cases ----
local run = {}

-- Times the prepared run r when its check passed (ok), fills the row's times and its
-- value = amount / second (amount: TFLOP or GB of the row), frees r and writes the row.
local function time_and_write(row, r, ok, amount)
  if ok then
    local m = measure(r)
    row.ms, row.ms_p10, row.ms_p90, row.reps = fmt_num(m.ms), fmt_num(m.p10), fmt_num(m.p90), m.reps
    row.value = amount / (m.ms * 1e-3)
  end
  r:free()
  write_row(row)
end

local pair_errors = 0   -- ERROR rows of run_fusion_pair (the exit status counts them)

-- --cpa: impls kiln.cpa1 .. kiln.cpa4 of a case (see the header). build(pipeline) -> program;
-- prepare(p) -> prepared run; check(outputs) -> ok, text; base: the row's fixed columns.
local function cpa_pipeline(S, layout)
  local opt = "cp-async=" .. S .. (layout and (",cp-async-layout=" .. layout) or "")
  local pl, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                              "rock-gridwise-to-blockwise{" .. opt .. "},", 1)
  assert(n == 1, "the default pipeline has no rock-gridwise-to-blockwise")
  return pl
end
-- the cp.async rows' target: the pipeline feeds mma.sync, so sm_90 on a compute capability 9.0
-- device (whose own target, sm_90a, takes wgmma)
local CPA_ARCH = dev.arch == "sm_90a" and "sm_90" or dev.arch
-- The variants: S = 1 (the register-staged loop), S = 2..4 in the default layout (xor), S = 3
-- in the krow and kgroup layouts, and (gemm with B stored [N, K] only: tiles = true) xor with
-- the tiles the async path makes possible: 128x128x32 forced, 128x256x32 (8 warps) and
-- 256x128x32; S = -1 (kiln.cpaauto): the mma.sync default, auto stages with the heuristic's
-- tiles (both operands async: 256x128x32 / 128x256x32 where the grid is large).
local CPA_VARIANTS = {
  { -1 }, { 1 }, { 2 }, { 3 }, { 4 }, { 3, "krow" }, { 3, "kgroup" },
  { 3, "xor", "v2:128,128,32,64,64,8", true }, { 4, "xor", "v2:128,128,32,64,64,8", true },
  { 3, "xor", "v2:128,256,32,64,64,8", true }, { 4, "xor", "v2:128,256,32,64,64,8", true },
  { 3, "xor", "v2:256,128,32,64,64,8", true },
}
local function run_cpa(c, base, build, prepare, check, amount, tag, tiles)
  for _, v in ipairs(CPA_VARIANTS) do
   local S, layout, perf = v[1], v[2], v[3]
   if (tiles and CPA_ARCH ~= "host") or not v[4] then
    local row = {}
    for k, x in pairs(base) do row[k] = x end
    local name = "cpa" .. (S < 0 and "auto" or S) .. (tag or "") .. (layout and ("." .. layout) or "") .. (perf and ("." .. perf) or "")
    row.impl = "kiln." .. name
    local ok, err = pcall(function()
      local p = build(cpa_pipeline(S, layout), perf)
      dump_binaries(c.name .. "." .. name:gsub("[:,]", "_"), p)
      local r = prepare(p)
      r:launch()
      local okc, text = check(r:outputs())
      row.sets, row.check = r.sets, text
      local k
      for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
      row.note = string.format("stages=%d async_copy=%s layout=%s lds=%d compile=%.0fms %s",
                               k and k.pipeline_stages or 0, k and k.async_copy ~= "" and k.async_copy or "-",
                               k and k.async_lds_layout ~= "" and k.async_lds_layout or "-", k and k.lds_bytes or 0,
                               p.compile_ms, kernel_note(p))
      time_and_write(row, r, okc, amount)
    end)
    if not ok then
      row.check = "ERROR " .. tostring(err)
      write_row(row)
      pair_errors = pair_errors + 1
    end
   end
  end
end

function run.gemm(c)
  local M, N, K = c.dims[1], c.dims[2], c.dims[3]
  local g = kiln.graph(c.name)
  local a = g:param("a", { M, K }, c.dtype)
  local b = g:param("b", { K, N }, c.dtype)
  g:output(g:dot(a, b))
  local p = compile_case(c, g)
  dump_binaries(c.name .. (c.variant and ("." .. c.variant) or ""), p)
  local A, B = kiln.rand({ M, K }, c.dtype), kiln.rand({ K, N }, c.dtype)
  local r = p:prepare({ a = A, b = B }, { device = dev, rotate_bytes = ROTATE_BYTES })
  r:launch()
  local ok, check = check_gemm(A, B, r:outputs(), M, N, K, c.dtype)
  local row = { case = c.id, kind = "gemm", impl = impl_of(c), dtype = c.dtype, shape = shape_str(c.dims), sets = r.sets,
                flop = 2.0 * M * N * K, bytes = (M * K + K * N + M * N) * (c.dtype == "f32" and 4 or 2),
                unit = "TFLOP/s", check = check,
                note = string.format("path=%s compile=%.0fms %s", gemm_path(p), p.compile_ms, kernel_note(p)) }
  time_and_write(row, r, ok, row.flop / 1e12)
  if not CPA then return end
  local base = { case = c.id, kind = "gemm", dtype = c.dtype, shape = shape_str(c.dims), flop = row.flop, bytes = row.bytes,
                 unit = "TFLOP/s" }
  local function prep(p) return p:prepare({ a = A, b = B }, { device = dev, rotate_bytes = ROTATE_BYTES }) end
  run_cpa(c, base, function(pl) return kiln.compile(g, { target = CPA_ARCH, pipeline = pl }) end, prep,
          function(outs) return check_gemm(A, B, outs, M, N, K, c.dtype) end, row.flop / 1e12)
  -- B stored [N, K] (K-contiguous): both operands through cp.async
  local gt = kiln.graph(c.name .. "_bt")
  gt:output(gt:dot(gt:param("a", { M, K }, c.dtype), gt:param("b", { N, K }, c.dtype):transpose { 1, 0 }))
  local BT = kiln.rand({ N, K }, c.dtype)
  local Bview = { get = function(_, ix) return BT:get { ix[2], ix[1] } end }
  run_cpa(c, base,
          function(pl, perf) return kiln.compile(gt, { target = CPA_ARCH, pipeline = pl, perf_config = perf }) end,
          function(p) return p:prepare({ a = A, b = BT }, { device = dev, rotate_bytes = ROTATE_BYTES }) end,
          function(outs) return check_gemm(A, Bview, outs, M, N, K, c.dtype) end, row.flop / 1e12, ".bt", true)
end

-- fp8 x fp8 -> f32 (MIGraphX's quant_dot): C[M,N] = A[M,K] @ B[K,N] in f32. The default
-- (fp8-compute{gemm-operands=auto}) converts the operands to f16 in the GEMM's loads (exact)
-- and runs the f16 matrix instructions (on sm_90a the f16 wgmma) with f32 accumulation:
-- impls kiln (B stored [K, N]) and kiln.bt (B stored [N, K], K-contiguous, as
-- torch._scaled_mm takes it), checked against the float64 product of sampled outputs within
-- the f32 summation bound (K - 1) 2^-24 sum |a b| (the products of fp8 values are exact).
-- On sm_90a also the opt-in fp8 wgmma (gemm-operands=fp8: the GEMM reads the fp8 codes into
-- LDS and runs wgmma m64nNk32 e4m3 / e5m2; a B stored [K, N] is transposed into the K-major
-- LDS tiles in registers, byte by byte): impls kiln.fp8wg and kiln.fp8wg.bt, whose
-- accumulation is not f32 (each k32 instruction truncates its addends below 2^(emax - 13),
-- measured: bench/RESULTS.md), checked within that rule's bound (spec/lua/fp8_wgmma_rule.lua)
-- and the note says how far over the f32 summation bound it is: kiln.fp8wg one level
-- (rock-gemm-to-gridwise{fp8-promote=0}: every instruction accumulates onto the running sum),
-- kiln.fp8wg.p128 two levels (fp8-promote=128, opt-in: the wgmma into a temporary, added
-- to the f32 accumulator every 128 K elements). Variant ID@pN: only the fp8 wgmma with
-- fp8-promote=N (impl kiln.fp8wg.pN; N = 0: one level).
function run.qgemm(c)
  local M, N, K = c.dims[1], c.dims[2], c.dims[3]
  local modes = { { "auto", 0 } }
  local vp = c.variant and tonumber(c.variant:match("^p(%d+)$"))
  if c.variant and not vp then error("unknown case variant '" .. c.variant .. "'", 0) end
  if dev.arch == "sm_90a" then
    if vp then modes = { { "fp8", vp } } else modes[2], modes[3] = { "fp8", 0 }, { "fp8", 128 } end
  elseif vp then
    error("the fp8 wgmma variants need sm_90a", 0)
  end
  for _, md in ipairs(modes) do
    local mode, promote = md[1], md[2]
    local ptag = mode == "fp8" and (vp or promote > 0) and ("p" .. promote) or nil
    for _, bt in ipairs { false, true } do
      local tag = (mode == "fp8" and "_fp8wg" or "") .. (ptag and ("_" .. ptag) or "") .. (bt and "_bt" or "")
      local g = kiln.graph(c.name .. tag)
      local a = g:param("a", { M, K }, c.dtype)
      local b = bt and g:param("b", { N, K }, c.dtype):transpose { 1, 0 } or g:param("b", { K, N }, c.dtype)
      g:output(g:quant_dot(a, b))
      local pl = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=" .. mode .. "}", 1)
      if mode == "fp8" then
        pl = pl:gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=" .. promote .. "}", 1)
      end
      local p = kiln.compile(g, { target = dev.arch, pipeline = pl })
      dump_binaries(c.name .. tag, p)
      local A, B = kiln.rand({ M, K }, c.dtype), kiln.rand(bt and { N, K } or { K, N }, c.dtype)
      local Bview = bt and { get = function(_, ix) return B:get { ix[2], ix[1] } end } or B
      local r = p:prepare({ a = A, b = B }, { device = dev, rotate_bytes = ROTATE_BYTES })
      r:launch()
      local ok, check
      if mode == "fp8" then
        local pc, gk, kp
        for _, k in ipairs(p:kernels()) do if k.kind == "gemm" then pc, gk, kp = k.perf_config, k.name, k.fp8_promote end end
        local wg = gk and (p:disasm(gk, dev.arch) or ""):find("wgmma[^\n]*k32%.f32%.e[45]m[23]")
        if not wg then
          ok, check = false, "FAIL no fp8 wgmma (k32 e4m3 / e5m2) in the GEMM kernel (" .. tostring(pc) .. ")"
        elseif kp ~= promote then
          ok, check = false, ("FAIL the kernel's fp8_promote is %s, asked for %d"):format(tostring(kp), promote)
        else
          ok, check = check_gemm(A, Bview, r:outputs(), M, N, K, "fp8wg", nil, { pc = pc, promote = kp, fmt = c.dtype })
        end
      else
        ok, check = check_gemm(A, Bview, r:outputs(), M, N, K, "fp8")
      end
      local impl = "kiln" .. (mode == "fp8" and ".fp8wg" or "") .. (ptag and ("." .. ptag) or "") .. (bt and ".bt" or "")
      local row = { case = c.id, kind = "qgemm", impl = impl, dtype = c.dtype, shape = shape_str(c.dims),
                    sets = r.sets, flop = 2.0 * M * N * K, bytes = M * K + K * N + M * N * 4, unit = "TFLOP/s", check = check,
                    note = string.format("f32 out, B %s, gemm-operands=%s%s; path=%s compile=%.0fms %s", bt and "[N,K]" or "[K,N]",
                                         mode, mode == "fp8" and (" fp8-promote=" .. promote) or "", gemm_path(p), p.compile_ms,
                                         kernel_note(p)) }
      time_and_write(row, r, ok, row.flop / 1e12)
    end
  end
end

local function conv_graph(id, dtype, Nb, C, H, W, K)
  local g = kiln.graph(id)
  local x = g:param("x", { Nb, C, H, W }, dtype, { layout = "NHWC" })
  local w = g:param("w", { K, C, 1, 1 }, dtype, { layout = "KYXC" })
  local r = g:param("r", { Nb, K, H, W }, dtype, { layout = "NHWC" })
  g:output((g:conv(x, w) + r):relu())
  return g
end

function run.conv(c)
  local Nb, C, H, W, K = table.unpack(c.dims)
  local g = conv_graph(c.name, c.dtype, Nb, C, H, W, K)
  local p = compile_case(c, g)
  dump_binaries(c.name .. (c.variant and ("." .. c.variant) or ""), p)
  local X = kiln.rand({ Nb, C, H, W }, c.dtype, { layout = "NHWC" })
  local Wt = kiln.rand({ K, C, 1, 1 }, c.dtype, { layout = "KYXC" })
  local R = kiln.rand({ Nb, K, H, W }, c.dtype, { layout = "NHWC" })
  local r = p:prepare({ x = X, w = Wt, r = R }, { device = dev, rotate_bytes = ROTATE_BYTES })
  r:launch()
  local ok, check = check_conv(X, Wt, R, r:outputs(), Nb, C, H, W, K, c.dtype)
  local esz = c.dtype == "f32" and 4 or 2
  local row = { case = c.id, kind = "conv", impl = impl_of(c), dtype = c.dtype, shape = shape_str(c.dims), sets = r.sets,
                flop = 2.0 * Nb * H * W * K * C, bytes = (Nb * C * H * W + K * C + 2 * Nb * K * H * W) * esz,
                unit = "TFLOP/s", check = check,
                note = string.format("fused=%s compile=%.0fms %s", #p:kernels() == 1 and "yes" or "NO", p.compile_ms, kernel_note(p)) }
  time_and_write(row, r, ok, row.flop / 1e12)
  if not CPA then return end
  run_cpa(c, { case = c.id, kind = "conv", dtype = c.dtype, shape = shape_str(c.dims), flop = row.flop, bytes = row.bytes,
               unit = "TFLOP/s" },
          function(pl, perf) return kiln.compile(g, { target = CPA_ARCH, pipeline = pl, perf_config = perf }) end,
          function(p) return p:prepare({ x = X, w = Wt, r = R }, { device = dev, rotate_bytes = ROTATE_BYTES }) end,
          function(outs) return check_conv(X, Wt, R, outs, Nb, C, H, W, K, c.dtype) end, row.flop / 1e12)
end

function run.ew(c)
  local R, S = c.dims[1], c.dims[2]
  local g = kiln.graph(c.name)
  local x = g:param("x", { R, S }, c.dtype)
  local y = g:param("y", { R, S }, c.dtype)
  g:output(x + y)
  local p = kiln.compile(g, { target = dev.arch })
  dump_binaries(c.name, p)
  local X, Y = kiln.rand({ R, S }, c.dtype), kiln.rand({ R, S }, c.dtype)
  local r = p:prepare({ x = X, y = Y }, { device = dev, rotate_bytes = ROTATE_BYTES })
  r:launch()
  local ok, check = check_add(X, Y, r:outputs(), R, S)
  local row = { case = c.id, kind = "ew", impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims), sets = r.sets,
                flop = 1.0 * R * S, bytes = 3.0 * R * S * 4, unit = "GB/s", check = check,
                note = string.format("bytes=read 2 + write 1 tensors; compile=%.0fms %s", p.compile_ms, kernel_note(p)) }
  time_and_write(row, r, ok, row.bytes / 1e9)
end

-- rows: z[r] = sum_s x[r, s] (rowsum), z[r] = sqrt(mean_s x[r, s]^2) (rms) or z = softmax(x, -1)
-- over [R, S]; GB/s of read + write.
-- Check: nsamples rows against float64 (the sum's error relative to the l2 norm of the row, the
-- scale of its rounding; softmax relative to the row's values).
local function check_rows(X, Z, R, S, rowsum, dtype, rms)
  local fin, bad = all_finite(Z)
  if not fin then return false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad) end
  local rnd = lcg(17)
  local rows = { 0, R - 1 }
  while #rows < math.min(nsamples, R) do rows[#rows + 1] = rnd(R) end
  local num, den = 0.0, 0.0
  for _, i in ipairs(rows) do
    local x = {}
    for j = 0, S - 1 do x[j + 1] = X:get { i, j } end
    if rms then
      local sq = 0.0
      for j = 1, S do sq = sq + x[j] * x[j] end
      local ref = math.sqrt(sq / S)
      local d = Z:get { i } - ref
      num = num + d * d; den = den + ref * ref
    elseif rowsum then
      local sum, sq = 0.0, 0.0
      for j = 1, S do sum = sum + x[j]; sq = sq + x[j] * x[j] end
      local d = Z:get { i } - sum
      num = num + d * d; den = den + sq
    else
      local m = -math.huge
      for j = 1, S do if x[j] > m then m = x[j] end end
      local e = 0.0
      for j = 1, S do e = e + math.exp(x[j] - m) end
      for j = 1, S do
        local ref = math.exp(x[j] - m) / e
        local d = Z:get { i, j - 1 } - ref
        num = num + d * d; den = den + ref * ref
      end
    end
  end
  return rel_report(num, den, #rows, dtype)
end

local function run_rows(c)
  local R, S = c.dims[1], c.dims[2]
  local rms = c.kind == "rms"
  local rowsum = c.kind == "rowsum" or rms
  local g = kiln.graph(c.name)
  local x = g:param("x", { R, S }, c.dtype)
  g:output(rms and (x * x):mean({ 1 }):sqrt() or rowsum and x:sum({ 1 }) or x:softmax(-1))
  local p = kiln.compile(g, { target = dev.arch })
  dump_binaries(c.name, p)
  local X = kiln.rand({ R, S }, c.dtype)
  local r = p:prepare({ x = X }, { device = dev, rotate_bytes = ROTATE_BYTES })
  r:launch()
  local ok, check = check_rows(X, r:outputs(), R, S, rowsum, c.dtype, rms)
  local esz = c.dtype == "f32" and 4 or 2
  local row = { case = c.id, kind = c.kind, impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims), sets = r.sets,
                flop = 1.0 * R * S, bytes = (R * S + (rowsum and R or R * S)) * esz, unit = "GB/s", check = check,
                note = string.format("bytes=read + write; compile=%.0fms %s", p.compile_ms, kernel_note(p)) }
  time_and_write(row, r, ok, row.bytes / 1e9)
end
run.rowsum, run.softmax, run.rms = run_rows, run_rows, run_rows

-- Reductions fused with their element-wise producers and consumers, over [R, S] rows:
--   rmsnorm: z = x * rsqrt(mean_s(x^2) + 1e-5)          (one kernel; a split reduction: three)
--   smmask:  z = softmax(x * 0.125 + mask, -1), mask [S]  (one kernel)
--   lse:     z[r] = log(sum_s exp(x[r, s]))              (one kernel)
-- GB/s of the bytes read + written (x, mask, z). Check: sampled rows against float64.
local function run_fused_rows(c)
  local R, S = c.dims[1], c.dims[2]
  local g = kiln.graph(c.name)
  local x = g:param("x", { R, S }, c.dtype)
  local inputs = { x = kiln.rand({ R, S }, c.dtype) }
  local mask
  if c.kind == "rmsnorm" then
    g:output(x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt())
  elseif c.kind == "smmask" then
    mask = g:param("mask", { S }, c.dtype)
    inputs.mask = kiln.rand({ S }, c.dtype)
    g:output((x * 0.125 + mask):softmax(-1))
  else
    g:output(x:exp():sum({ 1 }):log())
  end
  local p = kiln.compile(g, { target = dev.arch })
  dump_binaries(c.name, p)
  local r = p:prepare(inputs, { device = dev, rotate_bytes = ROTATE_BYTES })
  r:launch()
  local Z, X = r:outputs(), inputs.x
  local fin, bad = all_finite(Z)
  local ok, check
  if not fin then
    ok, check = false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad)
  else
    local rnd = lcg(23)
    local rows = { 0, R - 1 }
    while #rows < math.min(nsamples, R) do rows[#rows + 1] = rnd(R) end
    local num, den = 0.0, 0.0
    for _, i in ipairs(rows) do
      local xs = {}
      for j = 0, S - 1 do xs[j + 1] = X:get { i, j } end
      if c.kind == "rmsnorm" then
        local sq = 0.0
        for j = 1, S do sq = sq + xs[j] * xs[j] end
        local rs = 1 / math.sqrt(sq / S + 1e-5)
        for j = 1, S do
          local ref = xs[j] * rs
          local d = Z:get { i, j - 1 } - ref
          num = num + d * d; den = den + ref * ref
        end
      elseif c.kind == "smmask" then
        local v, m = {}, -math.huge
        for j = 1, S do v[j] = xs[j] * 0.125 + inputs.mask:get { j - 1 }; if v[j] > m then m = v[j] end end
        local e = 0.0
        for j = 1, S do e = e + math.exp(v[j] - m) end
        for j = 1, S do
          local ref = math.exp(v[j] - m) / e
          local d = Z:get { i, j - 1 } - ref
          num = num + d * d; den = den + ref * ref
        end
      else
        local e = 0.0
        for j = 1, S do e = e + math.exp(xs[j]) end
        local ref = math.log(e)
        local d = Z:get { i } - ref
        num = num + d * d; den = den + ref * ref
      end
    end
    ok, check = rel_report(num, den, #rows, c.dtype)
  end
  local esz = c.dtype == "f32" and 4 or 2
  local wbytes = c.kind == "lse" and R or R * S
  local row = { case = c.id, kind = c.kind, impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims), sets = r.sets,
                flop = 1.0 * R * S, bytes = (R * S + wbytes + (mask and S or 0)) * esz, unit = "GB/s", check = check,
                note = string.format("bytes=read + write; compile=%.0fms %s", p.compile_ms, kernel_note(p)) }
  time_and_write(row, r, ok, row.bytes / 1e9)
end
run.rmsnorm, run.smmask, run.lse = run_fused_rows, run_fused_rows, run_fused_rows

-- Compile latency of the conv+add+relu graph: graph -> loaded kernel. Cold: cache=false
-- (a new program each time: the whole pipeline, code generation and, where this process
-- has a device of the target's arch, loading the binary — for CUDA that includes the
-- driver's PTX -> SASS compile unless its disk cache answers: run with CUDA_CACHE_DISABLE=1
-- for a cold number). Cached: the same graph again from the in-memory compile cache (its
-- kernels already loaded). Median of 5 each; the very first compile of the process, which
-- also pays one-time initialisation, is given in the note, with the cold compiles' median
-- p.compile_phases (kiln's passes, plan, LLVM IR, LLVM's optimisation, its code generator).
-- Rows are compile_<target>_cold / _cached for the case compile_conv, else <case>_<target>_...
function run.compile(c)
  local Nb, C, H, W, K = table.unpack(c.dims)
  local base = c.name == "compile_conv" and "compile" or c.name
  local g = conv_graph(c.name, c.dtype, Nb, C, H, W, K)
  local targets = {}
  if dev.kind == "cuda" or dev.kind == "hip" then targets[#targets + 1] = dev.arch end
  for _, t in ipairs { "sm_90a", "sm_90", "gfx942", "host" } do
    local dup = false
    for _, u in ipairs(targets) do dup = dup or u == t end
    if not dup then targets[#targets + 1] = t end
  end
  local host = kiln.device("host")
  local disk = os.getenv("CUDA_CACHE_DISABLE") == "1" and "driver cache off" or "driver cache ON"
  for _, t in ipairs(targets) do
    local load_on = (t == dev.arch and dev) or (t == "host" and host) or nil
    local phases = {}
    local function once(cache)
      local t0 = kiln.clock_ms()
      local p = kiln.compile(g, { target = t, cache = cache })
      local t1 = kiln.clock_ms()
      if load_on then p:load_kernels { device = load_on } end
      local t2 = kiln.clock_ms()
      if not cache then
        for k, v in pairs(p.compile_phases) do
          phases[k] = phases[k] or {}
          table.insert(phases[k], v)
        end
      end
      return t2 - t0, t1 - t0, t2 - t1, p
    end
    local ok, err = pcall(function()
      local first = once(false)
      phases = {}
      local cold, comp, load = {}, {}, {}
      local p
      for i = 1, 5 do cold[i], comp[i], load[i], p = once(false) end
      once(true)                                    -- fills the cache (and loads)
      local cached = {}
      for i = 1, 5 do cached[i] = once(true) end
      local what = load_on and ("graph -> loaded kernel on " .. load_on.arch .. (t:sub(1, 3) == "sm_" and ", " .. disk or ""))
                           or "graph -> binary (no device of this arch: not loaded)"
      local mc = median(cold)
      local ph = {}
      for _, k in ipairs { "passes", "plan", "llvm_ir", "llvm_opt", "llvm_codegen" } do
        if phases[k] then ph[#ph + 1] = string.format("%s %.1f", k, median(phases[k])) end
      end
      write_row { case = base .. "_" .. t .. "_cold", kind = "compile", impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims),
                  ms = fmt_num(mc), ms_p10 = fmt_num(sorted(cold)[1]), ms_p90 = fmt_num(sorted(cold)[5]), reps = 5,
                  value = mc, unit = "ms", check = "-",
                  note = string.format("%s; compile %.1f ms + load %.1f ms (medians; compile phases ms: %s); first in process %.1f ms; %d kernel(s)",
                                       what, median(comp), median(load), table.concat(ph, ", "), first, #p:kernels()) }
      local mh = median(cached)
      write_row { case = base .. "_" .. t .. "_cached", kind = "compile", impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims),
                  ms = fmt_num(mh), ms_p10 = fmt_num(sorted(cached)[1]), ms_p90 = fmt_num(sorted(cached)[5]), reps = 5,
                  value = mh, unit = "ms", check = "-", note = "in-memory compile cache hit (kernels already loaded)" }
    end)
    if not ok then
      write_row { case = base .. "_" .. t .. "_cold", kind = "compile", impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims),
                  unit = "ms", check = "ERROR " .. tostring(err) }
    end
  end
end

-- -------------------------------------------------------- input fusion ----
-- The input-fusion cases compile each graph twice: impl "kiln" with the default pipeline
-- (input fusion on: the producer fused into the kernel's global loads, one kernel) and impl
-- "kiln.nofuse" with kiln.default_pipeline() where graph-partition becomes
-- graph-partition{input-fusion=false} (the producer a kernel of its own writing a full-size
-- intermediate that the GEMM/conv kernel reads). A kiln.nofuse program of one kernel is an
-- error (not the baseline); a "kiln" program of several kernels is timed as it is, its note
-- saying fused=NO (the input-fusion cost rule of passes/input_fusion_cost.h declined the
-- prologue). Impl "kiln.fuse" forces fusion: graph-partition{input-fusion-cost=false} (the
-- rule off, every prologue fused); a kiln.fuse program of several kernels is an error.
local function pipeline_with(opt)
  -- graph-partition is one pass anywhere in the list (fp8-compute, reduce-split, ... run before it)
  local pl, n = ("," .. kiln.default_pipeline() .. ","):gsub(",graph%-partition,", ",graph-partition{" .. opt .. "},")
  return n == 1 and pl:sub(2, -2) or nil   -- nil: the pipeline changed shape, the rows say so
end
local FORCED = { ["kiln.nofuse"] = "input-fusion=false", ["kiln.fuse"] = "input-fusion-cost=false" }

local function compile_impl(g, impl)
  if impl == "kiln" then return kiln.compile(g, { target = dev.arch }), "pipeline=default" end
  local pl = pipeline_with(FORCED[impl])
  if not pl then
    error("kiln.default_pipeline() has no plain graph-partition pass: cannot set " .. FORCED[impl])
  end
  return kiln.compile(g, { target = dev.arch, pipeline = pl }), "pipeline=default with graph-partition{" .. FORCED[impl] .. "}"
end

-- Runs impls kiln, kiln.fuse and kiln.nofuse of case c: graph g, inputs (name -> tensor), check(outputs)
-- -> ok, text; base: the row's fixed columns; amount: TFLOP of one launch. A failure of one
-- impl (compile, check, timing) is an ERROR row, and the other still runs.
local function run_fusion_pair(c, g, inputs, check, base, amount)
  for _, impl in ipairs { "kiln", "kiln.fuse", "kiln.nofuse" } do
    local row = {}
    for k, v in pairs(base) do row[k] = v end
    row.case, row.impl, row.unit = c.id, impl, "TFLOP/s"
    local ok, err = pcall(function()
      local p, how = compile_impl(g, impl)
      local nk = #p:kernels()
      if impl == "kiln.nofuse" and nk < 2 then
        error(string.format("kiln.nofuse compiled to %d kernel: input fusion was not off (%s)", nk, how))
      end
      -- fused: the first kernel is the GEMM (a split-K GEMM adds its partials' sum after it)
      if impl == "kiln.fuse" and p:kernels()[1].kind ~= "gemm" then
        error(string.format("kiln.fuse compiled to %d kernels, the first a %s: input fusion was not forced (%s)", nk,
                            p:kernels()[1].kind, how))
      end
      dump_binaries(c.name .. (impl == "kiln" and "" or impl:sub(5)), p)
      local r = p:prepare(inputs, { device = dev, rotate_bytes = ROTATE_BYTES })
      r:launch()
      local okc, text = check(r:outputs())
      row.sets, row.check = r.sets, text
      row.note = string.format("fused=%s path=%s compile=%.0fms %s; %s", nk == 1 and "yes" or "NO", gemm_path(p), p.compile_ms,
                               kernel_note(p), how)
      time_and_write(row, r, okc, amount)
    end)
    if not ok then
      row.check = "ERROR " .. tostring(err)
      write_row(row)
      pair_errors = pair_errors + 1
    end
  end
end

-- C = dot(convert(A f32 -> dtype), B): f32 accumulate, output in dtype.
function run.gemm_cvt(c)
  local M, N, K = c.dims[1], c.dims[2], c.dims[3]
  local g = kiln.graph(c.name)
  local a = g:param("a", { M, K }, "f32")
  local b = g:param("b", { K, N }, c.dtype)
  g:output(g:dot(a:convert(c.dtype), b))
  local A, B = kiln.rand({ M, K }, "f32"), kiln.rand({ K, N }, c.dtype)
  local base = { kind = "gemm_cvt", dtype = c.dtype, shape = shape_str(c.dims), flop = 2.0 * M * N * K,
                 bytes = M * K * 4 + (K * N + M * N) * 2 }
  run_fusion_pair(c, g, { a = A, b = B }, function(C)
    return check_gemm(A, B, C, M, N, K, c.dtype, function(t) return rounded(t, c.dtype) end)
  end, base, base.flop / 1e12)
end

-- C = dot(A * S, B), S [1, K] broadcast over A's rows; A * S in dtype (rounded), f32 accumulate.
function run.gemm_scale(c)
  local M, N, K = c.dims[1], c.dims[2], c.dims[3]
  local g = kiln.graph(c.name)
  local a = g:param("a", { M, K }, c.dtype)
  local s = g:param("s", { 1, K }, c.dtype)
  local b = g:param("b", { K, N }, c.dtype)
  g:output(g:dot(a * s, b))
  local A, S, B = kiln.rand({ M, K }, c.dtype), kiln.rand({ 1, K }, c.dtype), kiln.rand({ K, N }, c.dtype)
  local sv = {}
  for k = 0, K - 1 do sv[k + 1] = S:get { 0, k } end
  local base = { kind = "gemm_scale", dtype = c.dtype, shape = shape_str(c.dims), flop = 2.0 * M * N * K,
                 bytes = (M * K + K + K * N + M * N) * 2 }
  run_fusion_pair(c, g, { a = A, s = S, b = B }, function(C)
    return check_gemm(A, B, C, M, N, K, c.dtype, function(t)
      for k = 1, K do t[k] = t[k] * sv[k] end
      return rounded(t, c.dtype)
    end)
  end, base, base.flop / 1e12)
end

-- relu(conv(convert(x f32 -> dtype), w) + r): the conv case with its input arriving as f32 NHWC.
function run.conv_cvt(c)
  local Nb, C, H, W, K = table.unpack(c.dims)
  local g = kiln.graph(c.name)
  local x = g:param("x", { Nb, C, H, W }, "f32", { layout = "NHWC" })
  local w = g:param("w", { K, C, 1, 1 }, c.dtype, { layout = "KYXC" })
  local r = g:param("r", { Nb, K, H, W }, c.dtype, { layout = "NHWC" })
  g:output((g:conv(x:convert(c.dtype), w) + r):relu())
  local X = kiln.rand({ Nb, C, H, W }, "f32", { layout = "NHWC" })
  local Wt = kiln.rand({ K, C, 1, 1 }, c.dtype, { layout = "KYXC" })
  local R = kiln.rand({ Nb, K, H, W }, c.dtype, { layout = "NHWC" })
  local base = { kind = "conv_cvt", dtype = c.dtype, shape = shape_str(c.dims), flop = 2.0 * Nb * H * W * K * C,
                 bytes = Nb * C * H * W * 4 + (K * C + 2 * Nb * K * H * W) * 2 }
  run_fusion_pair(c, g, { x = X, w = Wt, r = R }, function(O)
    return check_conv(X, Wt, R, O, Nb, C, H, W, K, c.dtype, function(t) return rounded(t, c.dtype) end)
  end, base, base.flop / 1e12)
end

-- ------------------------------------------------------- output swizzle ----
-- relu(conv(x, w) + r), x NHWC, w KYXC [K,C,S,S] (padding S/2), the output NHWC ([N,H,W,K]),
-- r NHWC (A = 1) or NCHW (A = 0); timed three times: impl "kiln" (the default pipeline:
-- rock-output-swizzle's guard decides), "kiln.swz_on" and "kiln.swz_off" (the pass forced).
-- Check: sampled outputs against a float64 sum (padding read as 0).
local function check_swz(X, Wt, R, O, Nb, C, H, Wd, K, S, dtype)
  local fin, bad = all_finite(O)
  if not fin then return false, string.format("FAIL %d outputs not finite (unwritten or NaN)", bad) end
  local rnd, pad = lcg(17), (S - 1) // 2
  local pix, chans = { { 0, 0, 0 }, { Nb - 1, H - 1, Wd - 1 } }, { 0, K - 1 }
  while #pix < nsamples do pix[#pix + 1] = { rnd(Nb), rnd(H), rnd(Wd) } end
  while #chans < nsamples do chans[#chans + 1] = rnd(K) end
  local num, den = 0.0, 0.0
  for _, q in ipairs(pix) do
    for _, k in ipairs(chans) do
      local acc = 0.0
      for ky = 0, S - 1 do
        for kx = 0, S - 1 do
          local y, xx = q[2] + ky - pad, q[3] + kx - pad
          if y >= 0 and y < H and xx >= 0 and xx < Wd then
            for c = 0, C - 1 do acc = acc + X:get { q[1], c, y, xx } * Wt:get { k, c, ky, kx } end
          end
        end
      end
      acc = acc + R:get { q[1], k, q[2], q[3] }
      local ref = acc > 0 and acc or 0.0
      local d = O:get { q[1], q[2], q[3], k } - ref
      num = num + d * d; den = den + ref * ref
    end
  end
  return rel_report(num, den, #pix * #chans, dtype)
end

function run.swz(c)
  local Nb, C, H, W, K, S, A = table.unpack(c.dims)
  local g = kiln.graph(c.name)
  local x = g:param("x", { Nb, C, H, W }, c.dtype, { layout = "NHWC" })
  local w = g:param("w", { K, C, S, S }, c.dtype, { layout = "KYXC" })
  local r = g:param("r", { Nb, K, H, W }, c.dtype, A == 1 and { layout = "NHWC" } or nil)
  g:output(((g:conv(x, w, { padding = (S - 1) // 2 }) + r):relu()):transpose { 0, 2, 3, 1 })
  local X = kiln.rand({ Nb, C, H, W }, c.dtype, { layout = "NHWC" })
  local Wt = kiln.rand({ K, C, S, S }, c.dtype, { layout = "KYXC" })
  local R = kiln.rand({ Nb, K, H, W }, c.dtype, A == 1 and { layout = "NHWC" } or nil)
  local esz = c.dtype == "f32" and 4 or 2
  -- a perf-config variant (ID@v2:...: tiles and splitK forced) is timed once, the guard deciding
  local impls = c.variant and { { impl_of(c), "auto" } } or
      { { "kiln", "auto" }, { "kiln.swz_on", "on" }, { "kiln.swz_off", "off" } }
  for _, impl in ipairs(impls) do
    local row = { case = c.id, kind = "swz", impl = impl[1], dtype = c.dtype, shape = shape_str(c.dims),
                  flop = 2.0 * Nb * H * W * K * C * S * S, bytes = (Nb * C * H * W + K * C * S * S + 2 * Nb * K * H * W) * esz,
                  unit = "TFLOP/s" }
    local ok, err = pcall(function()
      local pipe = kiln.default_pipeline():gsub("rock%-output%-swizzle,", "rock-output-swizzle{force=" .. impl[2] .. "},", 1)
      if c.variant and not c.variant:match("^v%d:") and c.variant ~= "im2col" then
        error("unknown case variant '" .. c.variant .. "'", 0)
      end
      local p
      if c.variant == "im2col" then -- the activation through TMA im2col mode (IM2COL_PIPELINE), sm_90a only
        if not (dev.kind == "cuda" and dev.cc == "9.0") then error("the im2col variant needs a compute capability 9.0 GPU", 0) end
        p = kiln.compile(g, { target = "sm_90a", pipeline = IM2COL_PIPELINE })
      else
        p = kiln.compile(g, { target = dev.arch, pipeline = pipe, perf_config = c.variant })
      end
      dump_binaries(c.name .. (c.variant and ("." .. c.variant) or impl[2] == "auto" and "" or "." .. impl[2]), p)
      local rr = p:prepare({ x = X, w = Wt, r = R }, { device = dev, rotate_bytes = ROTATE_BYTES })
      rr:launch()
      local okc, text = check_swz(X, Wt, R, rr:outputs(), Nb, C, H, W, K, S, c.dtype)
      row.sets, row.check = rr.sets, text
      row.note = string.format("output_swizzle=%s compile=%.0fms %s", p:kernels()[1].output_swizzle, p.compile_ms,
                               kernel_note(p))
      time_and_write(row, rr, okc, row.flop / 1e12)
    end)
    if not ok then
      row.check = "ERROR " .. tostring(err)
      write_row(row)
      pair_errors = pair_errors + 1
    end
  end
  if not CPA or c.variant then return end
  run_cpa(c, { case = c.id, kind = "swz", dtype = c.dtype, shape = shape_str(c.dims),
               flop = 2.0 * Nb * H * W * K * C * S * S, bytes = (Nb * C * H * W + K * C * S * S + 2 * Nb * K * H * W) * esz,
               unit = "TFLOP/s" },
          function(pl) return kiln.compile(g, { target = CPA_ARCH, pipeline = pl }) end,
          function(p) return p:prepare({ x = X, w = Wt, r = R }, { device = dev, rotate_bytes = ROTATE_BYTES }) end,
          function(outs) return check_swz(X, Wt, R, outs, Nb, C, H, W, K, S, c.dtype) end,
          2.0 * Nb * H * W * K * C * S * S / 1e12)
end

-- ----------------------------------------------------------------- main ----
if not dev_ok then
  for _, c in ipairs(cases) do
    write_row { case = c.id, kind = c.kind, impl = "kiln", dtype = c.dtype, shape = shape_str(c.dims),
                unit = ((c.kind == "ew" or c.kind == "rowsum" or c.kind == "rms" or c.kind == "softmax" or c.kind == "rmsnorm" or c.kind == "smmask" or c.kind == "lse") and "GB/s") or (c.kind == "compile" and "ms") or "TFLOP/s",
                check = "ERROR cannot open device '" .. device_name .. "': " .. tostring(dev) }
  end
  os.exit(1)
end
print(string.format("kiln on %s (%s, %s), %d case(s) -> %s", dev.name, dev.arch, dev.driver, #cases, out_path))
local failed = 0
for _, c in ipairs(cases) do
  local fn = run[c.kind]
  local t0 = kiln.clock_ms()
  local ok, err = pcall(function()
    if not fn then error("unknown case kind '" .. c.kind .. "'") end
    fn(c)
  end)
  if not ok then
    failed = failed + 1
    write_row { case = c.id, kind = c.kind, impl = impl_of(c), dtype = c.dtype, shape = shape_str(c.dims),
                unit = ((c.kind == "ew" or c.kind == "rowsum" or c.kind == "rms" or c.kind == "softmax" or c.kind == "rmsnorm" or c.kind == "smmask" or c.kind == "lse") and "GB/s") or (c.kind == "compile" and "ms") or "TFLOP/s",
                check = "ERROR " .. tostring(err) }
  end
  io.stderr:write(string.format("  [%s: %.1f s]\n", c.id, (kiln.clock_ms() - t0) / 1e3))
  collectgarbage(); collectgarbage()
end
if failed + pair_errors > 0 then os.exit(1) end
