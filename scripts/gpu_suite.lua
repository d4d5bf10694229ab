-- scripts/gpu_suite.lua — the GPU acceptance run without busted (the GPU machine has no
-- Lua installation: run it with a static build/kiln): the random fused-graph suite on
-- the CUDA (or HIP) device against the reference evaluator (every output, and one kernel
-- for each conv/dot graph), the fusion shapes of spec/lua/fusion_cases.lua, the output-swizzle cases
-- (spec/lua/output_swizzle_cases.lua: forced on / off / the guard), then the integer-contraction
-- cases of spec/lua/int8_cases.lua (exact), then the element-wise op pairs of
-- spec/lua/elementwise_pairs_cases.lua (one case per dtype, the rule of the host spec),
-- reductions, plan steps, the asynchronous executor (independent branches on streams),
-- reductions fused with producers and consumers (spec/lua/reduce_fusion_cases.lua), f64
-- transcendentals (spec/lua/f64_math_cases.lua: against g:eval and bit for bit the host's),
-- split-K GEMMs and GEMM + reduce (atomic adds after a prefill),
-- the N-D conv / quantized / comparison cases of spec/lua/nd_conv_quant_cases.lua and the
-- vector-access element-wise cases of spec/lua/vector_access_cases.lua, the ldmatrix GEMMs
-- and convs (f16 / bf16, every operand transposition, odd sizes, batch, epilogues), the
-- cp.async pipeline at S = 1..4 in its xor LDS layout, krow at S = 2, 3, kgroup at S = 3 and auto, with the async
-- path's 128x256x32 / 256x128x32 tiles and M / N-contiguous operands (B [K, N], A [K, M]: ldmatrix.trans;
-- also as sm_80 PTX on a newer GPU) (spec/lua/cp_async_cases.lua), the wgmma cases of
-- spec/lua/wgmma_cases.lua (sm_90a, on compute capability 9.0), the TMA split-K operands of
-- spec/lua/tma_split_cases.lua (sm_90a), the TMA im2col activations of spec/lua/tma_im2col_cases.lua
-- (sm_90a, tma-im2col=1), the AMDGPU K loop's unpadded
-- xor LDS tiles on the device's threads (spec/lua/amd_loop_spec.lua's cases with
-- amd-k-loop=1 / 2 and amd-lds-layout=xor, kpack-8 FMA configs; kpack-1 configs of 32 or
-- more threads on the xor1 tiles of AMD's f32 MFMA / FMA path), the converts fused into GEMM
-- loads of spec/lua/input_cvt_cases.lua (f32 / fp8 operands; every fp8 code to f16), then the
-- MIGraphX-dialect corpus of spec/migraphx (every function verified, its kernel count); a quick
-- tune of three GEMMs on the device whose tuned config the compile then picks.
--   build/kiln scripts/gpu_suite.lua [count] [device]
-- Every section has a name (SECTIONS below, printed at the start; a line per section gives
-- its cases and seconds): KILN_SUITE_SKIP="tune,cp.async" leaves the named sections out,
-- KILN_SUITE_ONLY="wgmma,splitk_ws" runs just those (scripts/lib/suite_select.lua; an
-- unknown name is an error listing them). Device auto without a GPU runs nothing; device
-- host runs the chosen sections on the CPU (a check of the suite itself).
package.path = "spec/lua/?.lua;scripts/lib/?.lua;" .. package.path
local SEL = require "suite_select"
local SECTIONS = { "fused", "fusion", "swizzle", "int8", "ewpairs", "reduce", "vector", "rsplit", "rfusion", "f64",
                   "rheuristic", "plans", "async", "splitk", "splitk_ws", "gemm_reduce", "gemm_reduce_rand", "ndconv",
                   "layout", "ldmatrix", "tune", "cp.async", "amdloop", "wgmma", "tma", "cluster", "tma_split", "tma_im2col",
                   "stmatrix",
                   "cvtfuse", "migraphx", "memory" }
local sel, sel_err = SEL.new(SECTIONS, os.getenv("KILN_SUITE_SKIP"), os.getenv("KILN_SUITE_ONLY"))
if not sel then io.stderr:write("gpu_suite: ", sel_err, "\n"); os.exit(2) end
for _, line in ipairs(sel:header()) do print(line) end
local gen = require "fused_gen"
-- KILN_SUITE_PERSISTENT=1: the wgmma and tma sections compile every case with persistent tiles
-- forced on (rock-gridwise-to-blockwise{...,persistent=1}: wgmma_cases / tma_cases M.extra)
local persist_extra = os.getenv("KILN_SUITE_PERSISTENT") == "1" and "persistent=1" or nil
if persist_extra then print("KILN_SUITE_PERSISTENT=1: the wgmma and tma sections run with persistent=1") end
local count = tonumber(arg and arg[1]) or 210
local dev_ok, dev = pcall(kiln.device, arg and arg[2] or "auto")
if not dev_ok then print("no device: " .. tostring(dev):gsub("^.-error: ", ""):gsub("\n.*", "") .. "; nothing run"); os.exit(1) end
print(string.format("device: %s (%s), %s", dev.name, dev.arch, dev.kind))
if dev.kind == "host" and (arg and arg[2]) ~= "host" then print("no GPU present: nothing to run (device host runs the sections on the CPU)"); return end
local pass, fail, t0 = 0, 0, kiln.clock_ms()
-- a failure prints at once (a run cut by a timeout still shows what failed so far); all
-- failures are listed again before the summary
local failures = setmetatable({}, { __newindex = function(t, k, v)
  print("FAIL " .. v); io.stdout:flush(); rawset(t, k, v)
end })
local function progress(section)
  print(string.format("-- %s: %d passed, %d failed so far (%.1f s)", section, pass, fail, (kiln.clock_ms() - t0) / 1e3))
  io.stdout:flush()
end
-- section(name): closes the open section (a line with its cases and seconds) and says
-- whether name runs (KILN_SUITE_SKIP / KILN_SUITE_ONLY); section(nil) closes the last one
local function section(name) return sel:enter(name, kiln.clock_ms(), pass, fail) end
if section("fused") then
for seed = 1, count do
  local case = gen.gen(seed)
  local ok, err = pcall(function()
    local p = kiln.compile(case.g, { target = dev.arch, cache = false })
    if case.kernels and #p:kernels() ~= case.kernels then error(#p:kernels() .. " kernels, want " .. case.kernels, 0) end
    local got = table.pack(p:run(case.inputs, { device = dev }))
    local want = table.pack(case.g:eval(case.inputs))
    for i = 1, want.n do
      local good, report = gen.check(got[i], want[i], case.dtypes[i])
      if not good then error("output " .. i .. ": " .. tostring(report and report.summary or report), 0) end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = case.name .. ": " .. tostring(err) end
end
progress("random fused graphs")
end
-- the fusion shapes (spec/lua/fusion_cases.lua): kernel counts and every output against g:eval
local F = require "fusion_cases"
local shim = { are = {}, truthy = function(v, m) if not v then error(m or "expected a true value", 0) end end }
function shim.are.equal(a, b, m) if a ~= b then error((m or "") .. ": " .. tostring(b) .. " ~= " .. tostring(a), 0) end end
function shim.are.same(a, b, m)
  if table.concat(a, ",") ~= table.concat(b, ",") then error((m or "") .. ": {" .. table.concat(b, ",") .. "}", 0) end
end
if section("fusion") then
for _, c in ipairs(F.cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    if c.check then c.check(p, shim) end
    local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
    for i = 1, want.n do
      local good, rep = F.check(got[i], want[i], c.dtypes[i])
      if not good then error("output " .. i .. ": " .. tostring(rep and rep.summary), 0) end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
end
-- the output swizzle (spec/lua/output_swizzle_cases.lua): every case forced on, forced off
-- and under the guard, and every fusion shape forced on and off, against g:eval
local SW = require "output_swizzle_cases"
if section("swizzle") then
for _, c in ipairs(SW.cases()) do
  for _, mode in ipairs(SW.modes) do
    local ok, err = pcall(SW.run, c, mode, dev.arch, dev)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. " force=" .. mode .. ": " .. tostring(err) end
  end
end
for _, c in ipairs(F.cases()) do
  for _, mode in ipairs { "on", "off" } do
    local ok, err = pcall(function()
      local p = kiln.compile(c.g, { target = dev.arch, cache = false, pipeline = SW.pipeline(mode) })
      if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
      local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
      for i = 1, want.n do
        local good, rep = F.check(got[i], want[i], c.dtypes[i])
        if not good then error("output " .. i .. ": " .. tostring(rep and rep.summary), 0) end
      end
    end)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. " swizzle force=" .. mode .. ": " .. tostring(err) end
  end
end
end
-- integer contractions (spec/lua/int8_cases.lua): one kernel each, exact against g:eval
local i8 = require "int8_cases"
if section("int8") then
for _, c in ipairs(i8.gpu_cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= 1 then error(#p:kernels() .. " kernels, want 1", 0) end
    local good, msg = i8.exact(p:run(c.inputs, { device = dev }), c.g:eval(c.inputs))
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
end
-- element-wise op pairs (spec/lua/elementwise_pairs_cases.lua): one case per dtype, every
-- failing pair named with its input, got and the reference
local ew = require "elementwise_pairs_cases"
if section("ewpairs") then
for _, dt in ipairs(ew.DTYPES) do
  local name = dt .. " element-wise pairs"
  local ok, err = pcall(function()
    local r = ew.sweep(dt, dev.arch, dev)
    if r.kernels ~= r.want_kernels then error(r.kernels .. " kernels, want " .. r.want_kernels, 0) end
    if #r.bad > 0 then error(#r.bad .. " of " .. r.pairs .. " pairs differ:\n  " .. table.concat(r.bad, "\n  "), 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
end
-- blockwise reductions and softmax (spec/lua/reduce_blockwise_cases.lua) against g:eval
local RB = require "reduce_blockwise_cases"
if section("reduce") then
for _, c in ipairs(RB.cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    local good, msg = RB.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
end
-- element-wise kernels with vector accesses (spec/lua/vector_access_cases.lua): odd sizes,
-- transposes, slices, broadcasts against g:eval, and the widths p:kernels() reports
local VA = require "vector_access_cases"
if section("vector") then
local va_cases = VA.cases()
for _, c in ipairs(VA.reductions()) do va_cases[#va_cases + 1] = c end
for _, c in ipairs(va_cases) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    local werr = VA.check_widths(p, c, dev.arch)
    if werr then error(werr, 0) end
    local good, rep = VA.check(p:run(c.inputs, { device = dev }), c.g:eval(c.inputs), c.dtype)
    if not good then error(rep and rep.summary or "mismatch", 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "vector access " .. c.name .. ": " .. tostring(err) end
end
end
-- multi-block reductions (spec/lua/reduce_split_cases.lua): forced splits, and the
-- heuristic's shapes on this device (two kernels through a workspace where it splits)
local RS = require "reduce_split_cases"
if section("rsplit") then
for _, c in ipairs(RS.cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    local good, msg = RB.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "split " .. c.name .. ": " .. tostring(err) end
end
end
-- reductions and softmax fused with their element-wise producers and consumers
-- (spec/lua/reduce_fusion_cases.lua): the host spec's cases and device-sized ones, kernel
-- counts and every output against g:eval
local RF = require "reduce_fusion_cases"
if section("rfusion") then
local rf_cases = RF.cases()
for _, c in ipairs(RF.gpu_cases()) do rf_cases[#rf_cases + 1] = c end
for _, c in ipairs(rf_cases) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    local good, msg = RF.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "reduce fusion " .. c.name .. ": " .. tostring(err) end
end
end
-- f64 exp / log / tanh / sigmoid / erf / pow / softmax (spec/lua/f64_math_cases.lua): the whole
-- f64 range and its specials within a few ulp of g:eval, and bit for bit what the host's
-- build of the same code computes (passes/llvm_math.c: one lowering for every target)
local M64 = require "f64_math_cases"
if section("f64") then
for _, c in ipairs(M64.cases(100000)) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
    local host = table.pack(kiln.compile(c.g, { target = "host", cache = false }):run(c.inputs))
    for i = 1, want.n do
      local good, msg = M64.check(got[i], want[i], c, i)
      if good then print(("%s: output %d within %.2f ulp"):format(c.name, i, msg)) end
      if not good then error(("output %d against g:eval:\n  %s"):format(i, msg), 0) end
      if not c.k then -- a reduction adds in another order on the device (and softmax splits its exp argument)
        local same, where = M64.same_bits(got[i], host[i])
        if not same then error(("output %d differs from the host's: %s"):format(i, where), 0) end
      end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
progress("f64 math")
end
if section("rheuristic") then
for _, h in ipairs(RS.HEURISTIC) do
  for _, dt in ipairs(h[2][1] * h[2][2] > 16777216 and { "f32" } or { "f32", "f16", "bf16" }) do
    local name = ("heuristic %s %s"):format(h[1], dt)
    local ok, err = pcall(function()
      local g = kiln.graph("heur")
      local x = g:param("x", h[2], dt)
      g:output(x:sum(h[3]), x:mean(h[3]), x:reduce_max(h[3]))
      local p = kiln.compile(g, { target = dev.arch, cache = false })
      local k = 1
      for _, a in ipairs(h[3]) do k = k * h[2][a + 1] end
      local want_k = h[4] and 6 or 3
      if #p:kernels() ~= want_k then error(#p:kernels() .. " kernels, want " .. want_k, 0) end
      local inputs = { x = kiln.rand(h[2], dt) }
      local good, msg = RB.check(table.pack(p:run(inputs, { device = dev })), table.pack(g:eval(inputs)), dt, k)
      if not good then error(msg, 0) end
    end)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
  end
end
end
-- host plans with prefill, copy and workspace steps on streams (spec/lua/plan_steps_gpu_spec.lua's cases)
local plan_kinds = gen.plan_kinds
-- Runs p untimed and then timed into t (a table for the timing records), checking every
-- output against g:eval each time; raises the first mismatch.
local function check_runs(p, g, inputs, t)
  local want = table.pack(g:eval(inputs))
  for _, opts in ipairs { { device = dev }, { device = dev, timing = t } } do
    local got = table.pack(p:run(inputs, opts))
    for i = 1, want.n do
      local good, report = gen.check(got[i], want[i], want[i].dtype)
      if not good then error(("output %d%s: %s"):format(i, opts.timing and " (timed)" or "", report.summary), 0) end
    end
  end
end
local function plan_case(name, g, inputs, want_kinds)
  local ok, err = pcall(function()
    local p = kiln.compile(g, { target = dev.arch, cache = false })
    if plan_kinds(p:plan()) ~= want_kinds then error("steps " .. plan_kinds(p:plan()) .. ", want " .. want_kinds, 0) end
    check_runs(p, g, inputs, {})
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
if section("plans") then
do
  local g = kiln.graph("gpu_prefill")
  local a, b, x = g:param("a", { 64, 0 }, "f32"), g:param("b", { 0, 32 }, "f32"), g:param("x", { 64, 32 }, "f32")
  g:output((a:dot(b) + x):relu(), x)
  plan_case("plan: K = 0 dot (prefill) and a copy", g, { a = kiln.rand({ 64, 0 }, "f32"), b = kiln.rand({ 0, 32 }, "f32"),
            x = kiln.rand({ 64, 32 }, "f32", { dist = "normal" }) }, "alloc_workspace,prefill,launch,free,copy")
  local g2 = kiln.graph("gpu_rmax0")
  local e, z = g2:param("e", { 33, 0 }, "f32"), g2:param("z", { 33 }, "f32")
  g2:output(e:reduce_max({ 1 }):max(z))
  plan_case("plan: empty reduce_max (prefill -inf)", g2, { e = kiln.rand({ 33, 0 }, "f32"),
            z = kiln.rand({ 33 }, "f32", { dist = "normal" }) }, "alloc_workspace,prefill,launch,free")
  local g3 = kiln.graph("gpu_chain3")
  local x3, w3 = g3:param("x", { 1, 16, 10, 10 }, "f32"), g3:param("w", { 8, 16, 3, 3 }, "f32")
  g3:output((g3:conv(x3, w3):reduce_max({ 2, 3 }):softmax(-1) * 2):relu())
  plan_case("plan: three kernels, two workspaces", g3, { x = kiln.rand({ 1, 16, 10, 10 }, "f32", { dist = "normal" }),
            w = kiln.rand({ 8, 16, 3, 3 }, "f32", { dist = "normal" }) },
            "alloc_workspace,launch,alloc_workspace,launch,free,launch,free")
end
end
-- the asynchronous executor (spec/lua/plan_async_cases.lua): plans with independent
-- branches on streams; results against g:eval, timing records ordered by the waits, and
-- independent launches issued on different streams
if section("async") then
do
  local A = require "plan_async_cases"
  local function async_case(name, g, inputs, want_kinds, apart, pipeline)
    local ok, err = pcall(function()
      local p = kiln.compile(g, { target = dev.arch, cache = false, pipeline = pipeline })
      local plan = p:plan()
      if want_kinds and plan_kinds(plan) ~= want_kinds then error("steps " .. plan_kinds(plan) .. ", want " .. want_kinds, 0) end
      local t = {}
      check_runs(p, g, inputs(), t)
      local tok, msg = A.check_timing(plan, t)
      if not tok then error(msg, 0) end
      for _, pr in ipairs(apart) do
        if t[pr[1]].stream == t[pr[2]].stream then error(("steps %d and %d share stream %d"):format(pr[1], pr[2], t[pr[1]].stream), 0) end
      end
    end)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
  end
  for _, dt in ipairs { "f32", "f16" } do
    local g, inputs = A.branches(1024, dt)
    async_case("async: two chains " .. dt, g, inputs,
               "alloc_workspace,launch,launch,free,alloc_workspace,launch,launch,free,launch", { { 2, 6 }, { 3, 7 } },
               A.no_producer_fusion())
  end
  local g, inputs = A.two_dots(1000, 515, 1024, "f16")
  -- sm_90 / sm_90a (the joint split-K choice, passes/gemm_split.h): each 1000x515x1024 dot is
  -- split through a workspace (partials, then the sum): two chains whose first launches run
  -- apart; other CUDA devices: two launches
  local hopper = SEL.hopper(dev.arch)
  if hopper then
    async_case("async: two independent dots f16", g, inputs,
               "alloc_workspace,launch,launch,free,alloc_workspace,launch,launch,free", { { 2, 6 } })
  else
    local cuda = dev.kind == "cuda"
    async_case("async: two independent dots f16", g, inputs, cuda and "launch,launch" or nil, cuda and { { 1, 2 } } or {})
  end
end
end
-- split-K (spec/lua/splitk_spec.lua's cases on the device): the heuristic's split of a
-- 16x16x65536 f32 GEMM (prefill + launch with atomic adds), forced splits of odd dots over
-- K = 1 .. 65536 and of a conv, each against g:eval
local function splitk_case(name, g, inputs, pc, want_kinds)
  local ok, err = pcall(function()
    local p = kiln.compile(g, { target = dev.arch, cache = false, perf_config = pc })
    if want_kinds and plan_kinds(p:plan()) ~= want_kinds then
      error("steps " .. plan_kinds(p:plan()) .. ", want " .. want_kinds, 0)
    end
    local got, want = table.pack(p:run(inputs, { device = dev })), table.pack(g:eval(inputs))
    for i = 1, want.n do
      local good, report = gen.check(got[i], want[i], want[i].dtype)
      if not good then error(("output %d: %s"):format(i, report.summary), 0) end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
local function dot_case(M, N, K)
  local g = kiln.graph("gpu_splitk")
  local a, b = g:param("a", { M, K }, "f32"), g:param("b", { K, N }, "f32")
  g:output(a:dot(b))
  return g, { a = kiln.rand({ M, K }, "f32", { dist = "normal" }), b = kiln.rand({ K, N }, "f32", { dist = "normal" }) }
end
if section("splitk") then
do
  local g, inputs = dot_case(16, 16, 65536)
  splitk_case("split-K: heuristic 16x16x65536 f32", g, inputs, nil, "prefill,launch")
  for _, K in ipairs({ 1, 5, 100, 1000, 4097, 65536 }) do
    for _, S in ipairs({ 1, 2, 3, 4, 8, 16, 1000 }) do
      if S <= K then
        local gk, ik = dot_case(7, 13, K)
        splitk_case(("split-K: 7x13x%d splitK %d"):format(K, S), gk, ik, ("v1:16,16,16,1,1,1,%d"):format(S))
      end
    end
  end
  local gc = kiln.graph("gpu_splitk_conv")
  local x, w = gc:param("x", { 2, 37, 5, 6 }, "f32"), gc:param("w", { 3, 37, 3, 3 }, "f32")
  gc:output(gc:conv(x, w, { padding = { 1, 1, 1, 1 } }))
  splitk_case("split-K: conv splitK 5", gc, { x = kiln.rand({ 2, 37, 5, 6 }, "f32", { dist = "normal" }),
              w = kiln.rand({ 3, 37, 3, 3 }, "f32", { dist = "normal" }) }, "v1:16,16,16,1,1,1,5", "prefill,launch")
end
end
-- split-K through a workspace (spec/lua/splitk_workspace_spec.lua on the device): f16 / bf16
-- outputs and epilogues (relu, add + relu, cast), the heuristic's 64x64x65536 split, forced
-- splits over K = 1 .. 65536 with remainders, and convs; two kernels through a workspace
if section("splitk_ws") then
do
  local WS = "alloc_workspace,launch,launch,free"
  local function skw_dot(M, N, K, dt, epi)
    local g = kiln.graph("gpu_skw")
    local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
    local c, inputs = a:dot(b), { a = kiln.rand({ M, K }, dt, { dist = "normal" }), b = kiln.rand({ K, N }, dt, { dist = "normal" }) }
    if epi == "relu" then c = c:relu() end
    if epi == "add_relu" then
      c = (c + g:param("r", { M, N }, dt)):relu()
      inputs.r = kiln.rand({ M, N }, dt, { dist = "normal" })
    end
    if epi == "cast" then c = c:convert("f16") end
    g:output(c)
    return g, inputs
  end
  -- sm_90 (the joint choice, passes/gemm_split.h): 64x64 tiles split 256 ways, the partials
  -- added atomically into an f32 workspace after a prefill, then the cast / epilogue kernel
  local HWS = dev.kind == "cuda" and SEL.hopper(dev.arch) and "alloc_workspace,prefill,launch,launch,free" or WS
  for _, dt in ipairs({ "f16", "bf16" }) do
    local g, inputs = skw_dot(64, 64, 65536, dt, "none")
    splitk_case("split-K workspace: heuristic 64x64x65536 " .. dt, g, inputs, nil, HWS)
    g, inputs = skw_dot(64, 64, 65536, dt, "relu")
    splitk_case("split-K workspace: heuristic 64x64x65536 relu " .. dt, g, inputs, nil, HWS)
  end
  -- the heuristic's splits at odd shapes (sm_90: joint choice; S = 50, 125, ...) and the
  -- f32 atomic form with its re-picked tiles
  for _, c in ipairs({ { 100, 37, 10000, "f16", "none" }, { 100, 37, 10000, "bf16", "add_relu" },
                       { 37, 29, 20000, "f32", "none" }, { 37, 29, 20000, "f32", "relu" },
                       { 64, 64, 65536, "f32", "none" }, { 1, 1, 65536, "f16", "none" },
                       { 256, 256, 16384, "f16", "none" },
                       { 33, 127, 4099, "f16", "none" } }) do -- remainder 3: outer products in the sum
    local g, inputs = skw_dot(table.unpack(c))
    splitk_case("split-K: heuristic " .. table.concat(c, " "), g, inputs, nil, nil)
  end
  local combos = { { "f16", "none" }, { "bf16", "relu" }, { "f32", "add_relu" }, { "f32", "cast" } }
  for _, K in ipairs({ 1, 5, 100, 1000, 4097, 65536 }) do
    for si, S in ipairs({ 2, 3, 8, 16, 32 }) do
      if S <= K then
        local dt, epi = table.unpack(combos[(si + K) % #combos + 1])
        local g, inputs = skw_dot(7, 13, K, dt, epi)
        splitk_case(("split-K workspace: 7x13x%d splitK %d %s %s"):format(K, S, dt, epi), g, inputs,
                    ("v1:16,16,16,1,1,1,%d"):format(S), WS)
      end
    end
  end
  for _, dt in ipairs({ "f16", "bf16" }) do
    local g = kiln.graph("gpu_skw_conv")
    local x = g:param("x", { 2, 7, 7, 64 }, dt)
    local w = g:param("w", { 32, 64, 3, 3 }, dt, { layout = "KYXC" })
    local r = g:param("r", { 2, 32, 7, 7 }, dt)
    g:output((g:conv(x:transpose { 0, 3, 1, 2 }, w, { padding = { 1, 1, 1, 1 } }) + r):relu())
    splitk_case("split-K workspace: conv 3x3 add+relu splitK 4 " .. dt, g,
                { x = kiln.rand({ 2, 7, 7, 64 }, dt, { dist = "normal" }),
                  w = kiln.rand({ 32, 64, 3, 3 }, dt, { dist = "normal", layout = "KYXC" }),
                  r = kiln.rand({ 2, 32, 7, 7 }, dt, { dist = "normal" }) }, "v1:16,16,16,1,1,1,4", WS)
  end
  -- the heuristic's conv splits (sm_90: the joint choice; the channel-sliced GEMM reads the
  -- sliced KYXC filter in 16-byte vectors): relu(conv(x, w) + r), NHWC / KYXC, 3x3 pad 1
  -- (ResNet-50's 7x7x512 layer at batch 2), stride 2, dilation 2, 1x1, a grouped conv forced
  local HC = dev.kind == "cuda" and SEL.hopper(dev.arch) and WS or nil
  for _, c in ipairs({ { 2, 512, 7, 7, 512, 3, "f16", {} }, { 2, 512, 7, 7, 512, 3, "bf16", {} },
                       { 2, 256, 14, 14, 256, 3, "f16", { stride = { 2, 2 } } },
                       { 2, 256, 11, 11, 128, 3, "bf16", { dilation = { 2, 2 }, padding = 2 } },
                       { 1, 2048, 7, 7, 512, 1, "f16", { padding = 0 } },
                       { 2, 256, 7, 7, 128, 3, "f16", { groups = 2 }, "v2:64,64,32,32,32,8,4" } }) do
    local Nb, C, H, W, K, S, dt, at, pc = table.unpack(c)
    if pc and dev.kind ~= "cuda" then goto next_conv end -- a v2 (mma.sync) config
    local g = kiln.graph("gpu_skw_conv_h")
    local x = g:param("x", { Nb, C, H, W }, dt, { layout = "NHWC" })
    local wsh = { K, C // (at.groups or 1), S, S }
    local w = g:param("w", wsh, dt, { layout = "KYXC" })
    local y = g:conv(x, w, { padding = at.padding or 1, stride = at.stride, dilation = at.dilation, groups = at.groups })
    local r = g:param("r", y.shape, dt, { layout = "NHWC" })
    g:output((y + r):relu())
    splitk_case(("split-K workspace: conv %s %s"):format(pc and "forced" or "heuristic", table.concat(c, " ", 1, 7)), g,
                { x = kiln.rand({ Nb, C, H, W }, dt, { dist = "normal", layout = "NHWC" }),
                  w = kiln.rand(wsh, dt, { dist = "normal", layout = "KYXC" }),
                  r = kiln.rand(y.shape, dt, { dist = "normal", layout = "NHWC" }) }, pc, pc and WS or HC)
    ::next_conv::
  end
end
end
-- GEMM + reduce fusion (spec/lua/gemm_reduce_spec.lua): one kernel with atomics after a
-- prefill (sum, mean: where the device adds f32 atomically; max: every device, CAS loops),
-- the tile pre-reduced in registers, lane shuffles and LDS; every axis set and keepdims
if section("gemm_reduce") then
for _, red in ipairs({ "reduce_sum", "reduce_mean", "reduce_max" }) do
  local one = dev.arch ~= "gfx1030" or red == "reduce_max"
  for _, sh in ipairs({ { { 7, 33 }, { 33, 5 } }, { { 64, 4096 }, { 4096, 48 } }, { { 2, 9, 40 }, { 2, 40, 3 } } }) do
    local sets = #sh[1] == 2 and { { 0 }, { 1 }, { 0, 1 } } or { { 0 }, { 2 }, { 0, 1, 2 } }
    for _, axes in ipairs(sets) do
      for _, keep in ipairs({ false, true }) do
        local name = ("gemm+reduce: %s %s {%s} keepdims %s"):format(table.concat(sh[1], "x"), red,
                                                                  table.concat(axes, ","), tostring(keep))
        local ok, err = pcall(function()
          local g, gd = kiln.graph("gpu_gemm_reduce"), kiln.graph("gpu_gemm_reduce_dot")
          local a, b = g:param("a", sh[1], "f32"), g:param("b", sh[2], "f32")
          local dt = a:dot(b)
          g:output(dt[red](dt, axes, keep))
          gd:output(gd:param("a", sh[1], "f32"):dot(gd:param("b", sh[2], "f32")))
          local inputs = { a = kiln.rand(sh[1], "f32", { dist = "normal" }), b = kiln.rand(sh[2], "f32", { dist = "normal" }) }
          local p = kiln.compile(g, { target = dev.arch, cache = false })
          if one and plan_kinds(p:plan()) ~= "prefill,launch" then error("steps " .. plan_kinds(p:plan()), 0) end
          -- the sum's terms are the dot's outputs: n of them per result, up to term_max each
          local d, term_max, n = gd:eval(inputs), 0, 1
          for _, v in ipairs(d:flat()) do term_max = math.max(term_max, math.abs(v)) end
          for _, ax in ipairs(axes) do n = n * d.shape[ax + 1] end
          -- a sum's (mean's) error grows as sqrt(n) times its terms' size (term_max, / n for
          -- the mean's scaled terms); a max is one of its terms, rounded as g:eval rounds it
          local got, want = p:run(inputs, { device = dev }), g:eval(inputs)
          local good, report
          if red == "reduce_max" then
            good, report = gen.check(got, want, "f32")
          else
            good, report = gen.check_sum(got, want, "f32", n, red == "reduce_mean" and term_max / n or term_max)
          end
          if not good then error(report.summary, 0) end
        end)
        if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
      end
    end
  end
end
end
progress("before gemm+reduce")
-- random reductions after GEMMs (fused_gen.gen_gemm_reduce): kernel count and output
if section("gemm_reduce_rand") then
for seed = 1, 40 do
  local case = gen.gen_gemm_reduce(seed)
  local ok, err = pcall(function()
    local p = kiln.compile(case.g, { target = dev.arch, cache = false })
    if dev.arch ~= "gfx1030" and #p:kernels() ~= case.kernels then
      error(#p:kernels() .. " kernels, want " .. case.kernels, 0)
    end
    local got, want = p:run(case.inputs, { device = dev }), case.g:eval(case.inputs)
    local good, report = gen.check(got, want, case.dtype)
    if not good then error(report.summary, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "gemm+reduce " .. case.name .. ": " .. tostring(err) end
end
end
-- the ops MIGraphX graphs need (spec/lua/nd_conv_quant_cases.lua): random 1-D / 3-D convs
-- (f32 / f16 / bf16, i8 -> i32 exact), quantize / dequantize, quant_dot, erf, recip, round,
-- comparisons with where, NaN max / min, against g:eval
local NQ = require "nd_conv_quant_cases"
if section("ndconv") then
local nq = NQ.cases(4)
for _, sp in ipairs { 1, 3 } do
  for _, dt in ipairs { "f32", "f16", "bf16", "i8" } do
    for _ = 1, 3 do
      local c = NQ.rand_conv(sp, dt, true)
      nq[#nq + 1] = { name = c.name, g = c.g, inputs = c.inputs, dtypes = { dt == "i8" and "i32" or dt } }
    end
  end
end
for _, c in ipairs(nq) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    local got, want = table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs))
    for i = 1, want.n do
      local good, s = NQ.check(got[i], want[i], c.dtypes[i])
      if not good then error("output " .. i .. ": " .. tostring(s), 0) end
      local gf, wf = got[i]:flat(), want[i]:flat()
      for j = 1, #wf do
        if (gf[j] ~= gf[j]) ~= (wf[j] ~= wf[j]) then error("output " .. i .. " element " .. (j - 1) .. ": NaN differs", 0) end
      end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
end
-- outputs in a declared layout (spec/lua/output_layout_cases.lua): every kernel kind, gaps,
-- one value in several layouts, and random fused graphs with a random layout per output
local OL = require "output_layout_cases"
if section("layout") then
local ol_cases = OL.cases()
for _, c in ipairs(OL.random(60)) do ol_cases[#ol_cases + 1] = c end
for _, c in ipairs(ol_cases) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if c.kernels and #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    local good, msg = OL.check(c, table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)))
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "output layout " .. c.name .. ": " .. tostring(err) end
end
end
-- ldmatrix fragment loads (NVIDIA mma.sync f16 / bf16 GEMMs): every operand transposition,
-- odd sizes, K from 16 to 4096, batch, fused epilogues (bias + relu, sigmoid + cast, a
-- residual) and convs (NHWC 1x1 and 3x3 with padding), each against g:eval; on CUDA devices
-- the GEMM kernel's PTX must read its fragments with ldmatrix
if section("ldmatrix") then
do
  -- mma.sync: sm_90 on a compute capability 9.0 device (whose own target, sm_90a, takes wgmma)
  local march = SEL.mma_sync_target(dev.arch)
  local function ldm_case(name, g, inputs, dt) -- tolerances of the input dtype (a cast to f32 keeps its rounding)
    local ok, err = pcall(function()
      local p = kiln.compile(g, { target = march, cache = false })
      if dev.kind == "cuda" then
        local found = false
        for _, k in ipairs(p:kernels()) do
          if k.kind == "gemm" and p:disasm(k.name, march):find("ldmatrix", 1, true) then found = true end
        end
        if not found then error("no ldmatrix in the GEMM kernel", 0) end
      end
      local got, want = table.pack(p:run(inputs, { device = dev })), table.pack(g:eval(inputs))
      for i = 1, want.n do
        local good, report = gen.check(got[i], want[i], dt)
        if not good then error(("output %d: %s"):format(i, report.summary), 0) end
      end
    end)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "ldmatrix: " .. name .. ": " .. tostring(err) end
  end
  local function R(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end
  local shapes = { { 128, 128, 4096 }, { 257, 129, 16 }, { 1000, 515, 1024 }, { 64, 64, 32 }, { 33, 17, 4096 }, { 512, 512, 512 } }
  for si, sh in ipairs(shapes) do
    local M, N, K = table.unpack(sh)
    for _, dt in ipairs { "f16", "bf16" } do
      for t = 0, 3 do
        local at, bt = t % 2 == 1, t >= 2
        local g = kiln.graph("ldm_dot")
        local a = at and g:param("a", { K, M }, dt):transpose { 1, 0 } or g:param("a", { M, K }, dt)
        local b = bt and g:param("b", { N, K }, dt):transpose { 1, 0 } or g:param("b", { K, N }, dt)
        local c, inputs = g:dot(a, b), { a = R(at and { K, M } or { M, K }, dt), b = R(bt and { N, K } or { K, N }, dt) }
        if (si + t) % 3 == 1 then
          c = (c + g:param("bias", { N }, dt)):relu()
          inputs.bias = R({ N }, dt)
        elseif (si + t) % 3 == 2 then
          c = c:sigmoid():convert("f32")
        end
        g:output(c)
        ldm_case(("%dx%dx%d %s%s%s"):format(M, N, K, dt, at and " A^T" or "", bt and " B^T" or ""), g, inputs, dt)
      end
    end
  end
  for _, dt in ipairs { "f16", "bf16" } do -- batched, with a residual
    local g = kiln.graph("ldm_batch")
    local a, b, r = g:param("a", { 3, 100, 72 }, dt), g:param("b", { 3, 72, 136 }, dt), g:param("r", { 3, 100, 136 }, dt)
    g:output((g:dot(a, b) + r):relu())
    ldm_case("batch 3x100x136x72 + residual " .. dt, g, { a = R({ 3, 100, 72 }, dt), b = R({ 3, 72, 136 }, dt), r = R({ 3, 100, 136 }, dt) }, dt)
  end
  for _, cv in ipairs { { 4, 2048, 7, 7, 512, 1, 0 }, { 8, 64, 14, 14, 128, 3, 1 }, { 2, 37, 9, 11, 40, 3, 1 } } do
    local Nb, C, H, W, Kc, S, P = table.unpack(cv)
    local g = kiln.graph("ldm_conv")
    local x = g:param("x", { Nb, C, H, W }, "f16", { layout = "NHWC" })
    local w = g:param("w", { Kc, C, S, S }, "f16", { layout = "KYXC" })
    local r = g:param("r", { Nb, Kc, H, W }, "f16", { layout = "NHWC" })
    g:output((g:conv(x, w, { padding = { P, P, P, P } }) + r):relu())
    ldm_case(("conv NHWC %dx%dx%dx%d -> %d %dx%d + add + relu f16"):format(Nb, C, H, W, Kc, S, S), g,
             { x = R({ Nb, C, H, W }, "f16", "NHWC"), w = R({ Kc, C, S, S }, "f16", "KYXC"), r = R({ Nb, Kc, H, W }, "f16", "NHWC") }, "f16")
  end
end
end
progress("before tune")
-- tuning on the device (lua/kiln/tune.lua): a quick tune of odd f16 / bf16 / f32 GEMMs with
-- an epilogue into a temporary database; every candidate must compile, load and agree with
-- the heuristic's outputs (kiln.tune's check), the compile then picks the tuned config
-- ("tuned (db)") and matches g:eval
if section("tune") then
for _, tc in ipairs { { 200, 136, 72, "f16" }, { 77, 50, 96, "bf16" }, { 64, 96, 40, "f32" } } do
  local M, N, K, dt = table.unpack(tc)
  local name = ("tune %dx%dx%d %s"):format(M, N, K, dt)
  local ok, err = pcall(function()
    local g = kiln.graph("tune_gpu")
    local a, b, bias = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt), g:param("bias", { N }, dt)
    g:output((g:dot(a, b) + bias):relu())
    local db = os.tmpname()
    local res = kiln.tune(g, { device = dev, level = "quick", db = db, runs = 5 })
    if res.nfailed > 0 then
      for _, r in ipairs(res.results) do
        if r.error then error("candidate " .. r.config .. " failed: " .. r.error, 0) end
      end
    end
    local p = kiln.compile(g, { target = dev.arch, tuning_db = db, cache = false })
    os.remove(db)
    local k = p:kernels()[1]
    if res.best and (k.perf_config_source ~= "tuned (db)" or k.perf_config ~= res.best.config) then
      error(("compile took %s (%s), want the tuned %s"):format(k.perf_config, k.perf_config_source, res.best.config), 0)
    end
    local inputs = { a = kiln.rand({ M, K }, dt), b = kiln.rand({ K, N }, dt), bias = kiln.rand({ N }, dt) }
    local c = kiln.compare(p:run(inputs, { device = dev }), g:eval(inputs))
    if not c.ok then error(c.summary, 0) end
    print(("%s: best %s %.4f ms, heuristic %.4f ms, %d candidates in %.1f s"):format(name,
      res.best and res.best.config or "(heuristic)", res.best and res.best.ms or res.heuristic_ms, res.heuristic_ms or -1,
      res.ncandidates, res.wall_ms / 1e3))
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
-- the output check of tuning on the device: a candidate made wrong in one element of a
-- 1M-element output (kiln.tune's _corrupt, tests only) fails with "wrong results", the others
-- pass, and the time profile adds up to the end-to-end time
do
  local name = "tune check catches a wrong candidate (1024x1024x64 f16)"
  local ok, err = pcall(function()
    local g = kiln.graph("tune_gpu_wrong")
    g:output(g:dot(g:param("a", { 1024, 64 }, "f16"), g:param("b", { 64, 1024 }, "f16")))
    local space = kiln.tuning_space(g, { target = dev.arch, level = "quick" })
    local configs = { table.unpack(space, 1, 3) }
    local res = kiln.tune(g, { device = dev, db = false, runs = 5, configs = configs, _corrupt = configs[2] })
    local bad = res.results[#res.results]
    if res.nfailed ~= 1 or bad.config ~= configs[2] or not tostring(bad.error):find("wrong results", 1, true) then
      error("want exactly " .. tostring(configs[2]) .. " failing with wrong results:\n" .. kiln.tune_table(res), 0)
    end
    local p, sum = res.profile, 0
    for _, k in ipairs { "inputs_ms", "compile_ms", "load_ms", "prepare_ms", "run_ms", "check_ms", "record_ms",
      "other_ms" } do sum = sum + p[k] end
    if math.abs(sum - res.total_ms) > 1 then error(("profile %.1f ms vs total %.1f ms"):format(sum, res.total_ms), 0) end
    print(("%s: ok; %s"):format(name, (kiln.tune_table(res):match("time [^\n]*"))))
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
end
progress("before cp.async")
-- the cp.async K-loop pipeline (spec/lua/cp_async_cases.lua): every case with
-- rock-gridwise-to-blockwise{cp-async=S}, S = 1..4 (the default layout, xor), cp-async-layout=krow
-- at S = 2, 3, kgroup at S = 3 and S = -1 (auto: the default pipeline's choice on mma.sync)
-- (CPA.variants), against g:eval on the device; the larger
-- GPU cases must pipeline on sm_80+ (pipeline_stages >= 2; an operand with a prologue never async)
if section("cp.async") then
local CPA = require "cp_async_cases"
local cpa_piped = 0
for _, list in ipairs { CPA.cases(), CPA.gpu_cases() } do
  for _, c in ipairs(list) do
    for _, var in ipairs(CPA.variants) do
      local S, layout = var[1], var[2]
      local ok, err = pcall(function()
        -- the cp.async pipeline is mma.sync's: sm_90 on a compute capability 9.0 device
        local march = SEL.mma_sync_target(dev.arch)
        local p = kiln.compile(c.g, { target = march, cache = false, pipeline = CPA.pipeline(S, layout),
                                      perf_config = c.gpu_perf })
        local k
        for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
        if not k then error("no GEMM kernel", 0) end
        if c.prologue and k.async_copy:find(c.prologue, 1, true) then error("the prologue operand is async", 0) end
        if S > 1 and (c.piped or (c.piped_xor and (not layout or layout == "xor"))) and dev.arch:match("^sm_") and
           k.pipeline_stages < 2 then
          error("not pipelined (async_copy '" .. k.async_copy .. "', " .. k.perf_config .. ")", 0)
        end
        if k.pipeline_stages >= 2 then cpa_piped = cpa_piped + 1 end
        local got, want = p:run(c.inputs, { device = dev }), c.g:eval(c.inputs)
        local good, rep = CPA.check(got, want, c.dtype)
        if not good then error(tostring(rep and rep.summary or rep), 0) end
        -- the prepared run (bench/gpu_kiln.lua's path: its own launch code) on set 2 of 2
        if k.pipeline_stages >= 2 then
          local r = p:prepare(c.inputs, { device = dev, sets = 2 })
          r:launch(2)
          local out = r:outputs(2)
          r:free()
          good, rep = CPA.check(out, want, c.dtype)
          if not good then error("prepared run (lds " .. k.lds_bytes .. "): " .. tostring(rep and rep.summary or rep), 0) end
        end
      end)
      if ok then pass = pass + 1 else
        fail = fail + 1
        failures[#failures + 1] = c.name .. " cp-async=" .. S .. (layout and (" " .. layout) or "") .. ": " .. tostring(err)
      end
    end
  end
end
print(("cp.async pipeline: %d compiled kernels pipelined"):format(cpa_piped))
-- sm_80 (A100-class PTX, which a newer GPU runs): the M / N-major cases (c.mn: B stored [K, N],
-- A stored [K, M] in the M / N-major xor stages read with ldmatrix.trans) at cp-async = 3 and
-- auto; where the device's own mma.sync target is not sm_80
local cc = tonumber((dev.arch:match("^sm_(%d%d)")))
if cc and cc > 80 then
  local mn80 = 0
  for _, c in ipairs(CPA.gpu_cases()) do
    if c.mn then
      for _, S in ipairs { 3, -1 } do
        local ok, err = pcall(function()
          local p = kiln.compile(c.g, { target = "sm_80", cache = false, pipeline = CPA.pipeline(S), perf_config = c.gpu_perf })
          local k
          for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
          if not k then error("no GEMM kernel", 0) end
          if (c.piped or c.piped_xor) and k.pipeline_stages < 2 then
            error("not pipelined (async_copy '" .. k.async_copy .. "', " .. k.perf_config .. ")", 0)
          end
          if k.pipeline_stages >= 2 then mn80 = mn80 + 1 end
          local got, want = p:run(c.inputs, { device = dev }), c.g:eval(c.inputs)
          local good, rep = CPA.check(got, want, c.dtype)
          if not good then error(tostring(rep and rep.summary or rep), 0) end
        end)
        if ok then pass = pass + 1 else
          fail = fail + 1
          failures[#failures + 1] = c.name .. " sm_80 cp-async=" .. S .. ": " .. tostring(err)
        end
      end
    end
  end
  print(("cp.async pipeline, sm_80 PTX, M / N-major operands: %d kernels pipelined"):format(mn80))
end
end
-- the AMDGPU K loop (single / double-buffered) on the unpadded xor LDS tiles
-- (rock-gridwise-to-blockwise{amd-k-loop=L amd-lds-layout=xor}), run by the device's threads:
-- the cp.async cases with kpack-8 FMA configs (spec/lua/amd_loop_spec.lua's host cases), against
-- g:eval; a missing barrier of the double-buffered loop shows as wrong results here
if section("amdloop") then
local CPA = require "cp_async_cases"
local function kpack8(perf)
  local mb, nb, kb, mt, nt = perf:match("^v1:(%d+),(%d+),(%d+),(%d+),(%d+),1$")
  kb = math.max(16, tonumber(kb))
  if tonumber(mb) == 32 and tonumber(nb) == 32 and kb == 16 then kb = 32 end
  return ("v1:%s,%s,%d,%s,%s,8"):format(mb, nb, kb, mt, nt)
end
-- case c compiled with rock-gridwise-to-blockwise{opts} and perf config perf, its GEMM in the
-- LDS layout want, run on the device against g:eval: counted, a failure named c.name .. tag
local function amd_layout_case(c, opts, perf, want, tag)
  local ok, err = pcall(function()
    local pl = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{" .. opts .. "},", 1)
    local p = kiln.compile(c.g, { target = dev.arch, cache = false, pipeline = pl, perf_config = perf })
    local k
    for _, x in ipairs(p:kernels()) do if x.kind == "gemm" then k = x end end
    if not k or k.amd_lds_layout ~= want then error("no GEMM kernel in the " .. want .. " LDS layout", 0) end
    local got, ref = p:run(c.inputs, { device = dev }), c.g:eval(c.inputs)
    local good, rep = CPA.check(got, ref, c.dtype)
    if not good then error(tostring(rep and rep.summary or rep), 0) end
  end)
  if ok then pass = pass + 1 else
    fail = fail + 1
    failures[#failures + 1] = c.name .. tag .. ": " .. tostring(err)
  end
  return ok
end
for _, c in ipairs(CPA.cases()) do
  for _, loop in ipairs { 1, 2 } do
    amd_layout_case(c, "amd-k-loop=" .. loop .. " amd-lds-layout=xor", kpack8(c.host_perf), "xor",
                    " amd-k-loop=" .. loop .. " xor")
  end
end
-- the kpack-1 xor1 LDS tiles (AMD's f32 MFMA and FMA-path layout: each K row's granules
-- XOR'd inside its 128 bytes) on the no-matrix path with many threads per block (perf
-- configs of the cases' tiles, thread tiles up to 4x4, at least 32 threads), against g:eval
local function gpu1(perf)
  if dev.arch == "host" then return perf end -- one thread per block there
  local mb, nb, kb = perf:match("^v1:(%d+),(%d+),(%d+),")
  mb, nb, kb = tonumber(mb), tonumber(nb), tonumber(kb)
  local mt, nt = math.min(4, mb), math.min(4, nb)
  while (mb // mt) * (nb // nt) < 32 and mt > 1 do mt = mt // 2 end
  while (mb // mt) * (nb // nt) < 32 and nt > 1 do nt = nt // 2 end
  return ("v1:%d,%d,%d,%d,%d,1"):format(mb, nb, math.max(kb, 2), mt, nt)
end
local nx1 = 0
for _, c in ipairs(CPA.cases()) do
  local perf = gpu1(c.host_perf)
  if amd_layout_case(c, "amd-lds-layout=xor", perf, "xor1", " " .. perf .. " xor1") then nx1 = nx1 + 1 end
end
print(("amdloop: %d GEMMs on the kpack-1 xor1 LDS tiles against g:eval"):format(nx1))
end
progress("before wgmma")
-- the Hopper wgmma path (sm_90a, the default on compute capability 9.0; spec/lua/wgmma_cases.lua): f16 / bf16 (and fp8 quant_dot / quant_conv
-- on the opt-in fp8 wgmma k32 e4m3 / e5m2: "exact" cases bit for bit, the others within the
-- measured accumulation rule's bound, each printed with its check) GEMMs and
-- convs, every transposition, odd sizes, batch, epilogues, v3 configs and the heuristic,
-- against g:eval, each named with its perf config; compute capability 9.0 devices only
if section("wgmma") then
do
  local W = require "wgmma_cases"
  W.extra = persist_extra
  if W.device_ok(dev) then
    for _, c in ipairs(W.cases()) do
      local ok, res, msg = pcall(W.run, c, dev)
      if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "wgmma: " .. c.name .. " " .. (c.perf or "wgmma=true") .. ": " .. tostring(res) end
      if ok and c.fp8 then print("wgmma: " .. c.name .. " " .. res .. ": " .. msg) end
    end
  end
end
end
progress("before tma")
-- run_cases(T, cases, prefix): each case by T.run on dev against g:eval, counted; a failure
-- named "<prefix>: <case> <config>: ..." (the tma, cluster and tma_split sections)
local function run_cases(T, cases, prefix)
  for _, c in ipairs(cases) do
    local ok, res = pcall(T.run, c, dev)
    if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = prefix .. ": " .. c.name .. " " .. (c.perf or "heuristic") .. ": " .. tostring(res) end
  end
end
-- tma_family(name, mod, list): section name runs the cases mod[list]() of the module mod
-- (tma_cases and the case files built on it) through run_cases, on compute capability 9.0
local function tma_family(name, mod, list)
  if section(name) then
    local T = require(mod)
    if T.device_ok(dev) then run_cases(T, T[list](), name) end
  end
end
-- TMA + mbarrier operand loads on the wgmma path (sm_90a, rock-gridwise-to-blockwise{tma=1};
-- spec/lua/tma_cases.lua): K-major operands through cp.async.bulk.tensor, transposes, odd
-- sizes, K 16..4096, batch, epilogues, KB 16..64, the heuristic, and the warp-specialized
-- loop (ws=1, T.ws_cases: K 16..16384), against g:eval; compute
-- capability 9.0 devices only; failures are named "tma: <case> <config>: ..."
if section("tma") then
  local T = require "tma_cases"
  T.extra = persist_extra
  if T.device_ok(dev) then
    run_cases(T, T.cases(), "tma")
    -- warp-specialized (ws=1: producer warpgroup, full / empty mbarriers, setmaxnreg; the
    -- epilogue behind the consumers' named barrier): "tma: <case> ws <config>: ..."
    run_cases(T, T.ws_cases(), "tma")
    -- persistent tiles (persistent=1, the TMA loop and ws=1; grid = min(tiles, SMs x resident
    -- workgroups): shapes of more tiles than a wave loop): "tma: <case> persistent[ ws] <config>: ..."
    run_cases(T, T.persist_cases(), "tma")
  end
end
-- thread-block clusters on the TMA K loop (sm_90a, rock-gridwise-to-blockwise{tma=1,cluster=C};
-- spec/lua/tma_cases.lua cluster_cases): C = 2 and 4 CTAs sharing one operand tile through TMA
-- multicast (cp.async.bulk.tensor .multicast::cluster, .reqnctapercluster C), stage reuse through
-- per-stage empty mbarriers with remote arrives (a register operand: a cluster barrier per K step),
-- also with ws=1 (the producer warpgroup multicasts); odd sizes, grids padded to a multiple of C,
-- batch, bf16, both operand layouts (MN-major shared tiles), a register operand, K 16384, the
-- bench's 1500x3840x1280, the seed conv's class and a 3x3 conv, against g:eval; each case's `cluster` attribute and PTX checked (tma_cases.compile);
-- compute capability 9.0 only; failures are named "cluster: <case> <config>: ..."
tma_family("cluster", "tma_cases", "cluster_cases")
-- TMA for split-K operands (sm_90a; spec/lua/tma_split_cases.lua): 3x3 NHWC convs split by
-- their input channels (the KYXC filter's slices through rank-4 tensor maps, cp.async.bulk.tensor.4d),
-- the ResNet-50 7x7x512 / 14x14x256 layers at batch 4 with the bench's tiles and the heuristic,
-- split dots (B [K, N] and [N, K]), against g:eval; compute capability 9.0 devices only;
-- failures are named "tma_split: <case> <config>: ..." (KILN_SUITE_ONLY=tma_split runs it alone)
tma_family("tma_split", "tma_split_cases", "cases")
-- TMA im2col mode for conv activations (sm_90a, rock-gridwise-to-blockwise{tma=1,tma-im2col=1};
-- spec/lua/tma_im2col_cases.lua): NHWC convs + residual + relu, 3x3 padding 1 stride 1 / 2, odd
-- H / W, tiles of pixels crossing rows and images, C 48..512, f16 / bf16, asymmetric padding and
-- dilation, split K (channel slices), the ResNet-50 3x3 layers at batch 2, against g:eval; each
-- case's `tma` (B(im2col)) and PTX (.im2col) checked; compute capability 9.0 devices only;
-- failures are named "tma_im2col: <case> <config>: ..." (KILN_SUITE_ONLY=tma_im2col runs it alone)
tma_family("tma_im2col", "tma_im2col_cases", "cases")
-- stmatrix epilogue stores (sm_90+: rock-output-swizzle's accumulator -> LDS store as
-- stmatrix.x4, .trans for outputs contiguous along M): the NHWC 1x1 conv + residual + relu
-- (32x256x14x14 -> 512: no split-K), f16 / bf16 dots (odd sizes, batch, A^T, residual + relu),
-- on sm_90a (wgmma) and sm_90 (mma.sync), each checked to have stmatrix in its PTX, and each
-- once with rock-output-swizzle{stmatrix=false}, against g:eval; compute capability 9.0
-- only; failures are named "stmatrix: <target> <case> [scalar]: ..."
if section("stmatrix") then
  if dev.kind == "cuda" and dev.cc == "9.0" then
    local function R(shape, dt, layout) return kiln.rand(shape, dt, { dist = "normal", layout = layout }) end
    local function scalar_pipeline()
      local pl = kiln.default_pipeline():gsub("rock%-output%-swizzle[^,]*,", "rock-output-swizzle{stmatrix=false},", 1)
      return pl
    end
    local cases = {}
    do
      local g = kiln.graph("stm_conv")
      local x = g:param("x", { 32, 256, 14, 14 }, "f16", { layout = "NHWC" })
      local w = g:param("w", { 512, 256, 1, 1 }, "f16", { layout = "KYXC" })
      local r = g:param("r", { 32, 512, 14, 14 }, "f16", { layout = "NHWC" })
      g:output((g:conv(x, w) + r):relu())
      cases[#cases + 1] = { "conv NHWC 32x256x14x14 -> 512 + add + relu", g, { x = R({ 32, 256, 14, 14 }, "f16", "NHWC"),
        w = R({ 512, 256, 1, 1 }, "f16", "KYXC"), r = R({ 32, 512, 14, 14 }, "f16", "NHWC") }, "f16", "trans" }
    end
    for _, dt in ipairs { "f16", "bf16" } do
      local g = kiln.graph("stm_dot")
      local a, b, res = g:param("a", { 1000, 520 }, dt), g:param("b", { 520, 1032 }, dt), g:param("c", { 1000, 1032 }, dt)
      g:output((g:dot(a, b) + res):relu())
      cases[#cases + 1] = { "dot 1000x1032x520 + residual + relu " .. dt, g,
        { a = R({ 1000, 520 }, dt), b = R({ 520, 1032 }, dt), c = R({ 1000, 1032 }, dt) }, dt, "plain" }
      local gb = kiln.graph("stm_bdot")
      local ab, bb = gb:param("a", { 3, 264, 200 }, dt), gb:param("b", { 3, 264, 136 }, dt)
      gb:output(gb:dot(ab:transpose { 0, 2, 1 }, bb))
      cases[#cases + 1] = { "batched dot 3x200x136x264 A^T " .. dt, gb,
        { a = R({ 3, 264, 200 }, dt), b = R({ 3, 264, 136 }, dt) }, dt, "plain" }
    end
    for _, target in ipairs { "sm_90a", "sm_90" } do
      for _, c in ipairs(cases) do
        for _, scalar in ipairs { false, true } do
          local ok, err = pcall(function()
            local p = kiln.compile(c[2], { target = target, cache = false, pipeline = scalar and scalar_pipeline() or nil })
            -- .trans: the wgmma conv's swizzle runs along M (sm_90's mma.sync tile takes N)
            local want = "stmatrix.sync.aligned.m8n8.x" .. (c[5] == "trans" and target == "sm_90a" and "4.trans" or "")
            local found = false
            for _, k in ipairs(p:kernels(target)) do
              local ptx = k.kind == "gemm" and p:disasm(k.name, target) or ""
              if ptx:find(scalar and "stmatrix" or want, 1, true) then found = true end
            end
            if found == scalar then error(scalar and "stmatrix with stmatrix=false" or "no " .. want .. " in the GEMM kernel", 0) end
            local got, want = table.pack(p:run(c[3], { device = dev })), table.pack(c[2]:eval(c[3]))
            for i = 1, want.n do
              local good, report = gen.check(got[i], want[i], c[4])
              if not good then error(("output %d: %s"):format(i, report.summary), 0) end
            end
          end)
          if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = ("stmatrix: %s %s%s: %s"):format(target, c[1], scalar and " scalar" or "", tostring(err)) end
        end
      end
    end
  end
end
-- converts fused into GEMM loads (spec/lua/input_cvt_cases.lua): f32 -> f16 / bf16 operands,
-- f16 scale prologues, fp8 quant_dot and fp8 -> f16 operands at sizes that are not tile
-- multiples, one kernel each, against g:eval (two 1024x1024x512 f32 converts: two kernels on
-- sm_90, where the input-fusion cost rule makes the convert a kernel of its own); and every
-- fp8 code converted to f16 on the device, exactly (sm_89+: f8e4m3fn pairs through cvt.rn.f16x2.e4m3x2; odd lengths scalar)
if section("cvtfuse") then
  local C = require "input_cvt_cases"
  for _, c in ipairs(C.cases()) do
    local ok, good, msg = pcall(C.run, c, { target = dev.arch, cache = false }, dev)
    if ok and good then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "input cvt: " .. c.name .. ": " .. tostring(ok and msg or good) end
  end
  for _, dt in ipairs(C.F8) do
    for _, len in ipairs { 1, 7, 8, 512, 4096 } do
      local ok, good, msg = pcall(function()
        local vals, xs = C.fp8_values(dt), {}
        for i = 0, len - 1 do xs[#xs + 1] = vals[(i * 37 + 11) % 256 + 1] end
        if len >= 256 then for i = 0, 255 do xs[i + 1] = vals[i + 1] end end
        local g = kiln.graph("f8_to_f16")
        g:output(g:param("x", { len }, dt):convert("f16"))
        local inputs = { x = kiln.tensor(xs, dt) }
        return C.exact(kiln.compile(g, { target = dev.arch, cache = false }):run(inputs, { device = dev }), g:eval(inputs))
      end)
      if ok and good then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = ("input cvt: %s -> f16 length %d: %s"):format(dt, len, tostring(ok and msg or good)) end
    end
  end
  progress("input-fusion converts")
end
-- the MIGraphX-dialect corpus (spec/migraphx/*.mlir, as `kiln migraphx --verify` runs it):
-- every function against g:eval with the kernel count of its file's KERNELS line (or of its
-- "KERNELS ON <arch>" line for the device's arch)
if section("migraphx") then
for _, file in ipairs { "conv_bias_relu_nhwc", "tensor_form", "dot_batch", "softmax_reduce", "views",
                        "elementwise_literals", "quant_nd_erf", "fp8", "multibroadcast_leading", "ui8", "mixed_precision",
                       "quantize_fp8", "floor_ceil", "unpack_int4", "rocmlir_test_forms", "call_harness" } do
  local path = "spec/migraphx/" .. file .. ".mlir"
  local ok, err = pcall(function()
    local fh = assert(io.open(path, "rb"))
    local text = fh:read("a")
    fh:close()
    local want = {}
    for fn, k in text:match("// KERNELS:([^\n]*)"):gmatch("([%w_]+)=(%d+)") do want[fn] = tonumber(k) end
    -- a target's own counts where its plan differs (split-K): "// KERNELS ON sm_90: f=2"
    for arch, rest in text:gmatch("// KERNELS ON ([%w_]+):([^\n]*)") do
      if arch == dev.arch then
        for fn, k in rest:gmatch("([%w_]+)=(%d+)") do want[fn] = tonumber(k) end
      end
    end
    for _, g in ipairs(kiln.migraphx(text, path)) do
      local gok, line, nk = kiln.migraphx_verify(g, { target = dev.kind })
      if gok and nk ~= want[g.name] then gok, line = false, line .. " (want kernels=" .. tostring(want[g.name]) .. ")" end
      if gok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = path .. ": " .. line end
    end
  end)
  if not ok then fail = fail + 1; failures[#failures + 1] = path .. ": " .. tostring(err) end
end
end
progress("before memory")
-- memory: 300 small GEMMs compiled and run on the device in one context, handles dropped;
-- the compile cache keeps 32 programs and frees the others (their IR, and their modules on
-- the device): RSS after kiln.collect() grows by less than 64 MiB, and the programs still
-- held (every 50th) compute what g:eval does afterwards
if section("memory") then
do
  local ok, err = pcall(function()
    local function rss()
      local f = assert(io.open("/proc/self/statm"))
      local n = tonumber(f:read("a"):match("^%d+%s+(%d+)"))
      f:close()
      return n * 4096 / 2 ^ 20
    end
    local function one(c)
      local g = kiln.graph("mem")
      local x, w = g:param("x", { 64, 32 }, "f16"), g:param("w", { 32, 64 }, "f16")
      g:output((g:dot(x, w) + c):relu())
      local inputs = { x = kiln.rand({ 64, 32 }, "f16"), w = kiln.rand({ 32, 64 }, "f16") }
      local p = kiln.compile(g, { target = dev.arch })
      p:run(inputs, { device = dev })
      return p, g, inputs
    end
    for i = 1, 10 do one(-i) end
    kiln.collect()
    local before, kept = rss(), {}
    for i = 1, 300 do
      local p, g, inputs = one(i * 0.25)
      if i % 50 == 0 then kept[#kept + 1] = { p, g, inputs } end
    end
    kiln.collect()
    local grew = rss() - before
    if grew > 64 then error(string.format("RSS grew by %.1f MiB over 300 compiles (bound 64)", grew), 0) end
    for _, k in ipairs(kept) do
      local r = kiln.compare(k[1]:run(k[3], { device = dev }), k[2]:eval(k[3]))
      if not r.ok then error("a held program after the cache let it go: " .. r.summary, 0) end
    end
    print(string.format("memory: 300 compiles + runs on %s grew RSS by %.1f MiB", dev.arch, grew))
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "memory: " .. tostring(err) end
end
end
section(nil)
for _, f in ipairs(failures) do print("FAIL " .. f) end
print(string.format("fused graphs, fusion shapes, integer contractions, element-wise pairs, reductions, plans, MIGraphX ops, vector accesses and the MIGraphX corpus on %s: %d passed, %d failed (%.1f s)", dev.arch, pass, fail, (kiln.clock_ms() - t0) / 1e3))
if fail > 0 then os.exit(1) end
