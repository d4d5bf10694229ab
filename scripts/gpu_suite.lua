-- scripts/gpu_suite.lua — the GPU acceptance run without busted (the GPU machine has no
-- Lua installation: run it with a static build/kiln): the random fused-graph suite on
-- the CUDA (or HIP) device against the reference evaluator (every output, and one kernel
-- for each conv/dot graph), the fusion shapes of spec/lua/fusion_cases.lua, then the integer-contraction
-- cases of spec/lua/int8_cases.lua (exact), then the element-wise op pairs of
-- spec/lua/elementwise_pairs_cases.lua (one case per dtype, the rule of the host spec).
--   build/kiln scripts/gpu_suite.lua [count] [device]
package.path = "spec/lua/?.lua;" .. package.path
local gen = require "fused_gen"
local count = tonumber(arg and arg[1]) or 210
local dev = kiln.device(arg and arg[2] or "auto")
print(string.format("device: %s (%s), %s", dev.name, dev.arch, dev.kind))
if dev.kind == "host" then print("no GPU present: nothing to run"); return end
local pass, fail, t0 = 0, 0, kiln.clock_ms()
local failures = {}
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
-- the fusion shapes (spec/lua/fusion_cases.lua): kernel counts and every output against g:eval
local F = require "fusion_cases"
local shim = { are = {}, truthy = function(v, m) if not v then error(m or "expected a true value", 0) end end }
function shim.are.equal(a, b, m) if a ~= b then error((m or "") .. ": " .. tostring(b) .. " ~= " .. tostring(a), 0) end end
function shim.are.same(a, b, m)
  if table.concat(a, ",") ~= table.concat(b, ",") then error((m or "") .. ": {" .. table.concat(b, ",") .. "}", 0) end
end
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
-- integer contractions (spec/lua/int8_cases.lua): one kernel each, exact against g:eval
local i8 = require "int8_cases"
for _, c in ipairs(i8.gpu_cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= 1 then error(#p:kernels() .. " kernels, want 1", 0) end
    local good, msg = i8.exact(p:run(c.inputs, { device = dev }), c.g:eval(c.inputs))
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
-- element-wise op pairs (spec/lua/elementwise_pairs_cases.lua): one case per dtype, every
-- failing pair named with its input, got and the reference
local ew = require "elementwise_pairs_cases"
for _, dt in ipairs(ew.DTYPES) do
  local name = dt .. " element-wise pairs"
  local ok, err = pcall(function()
    local r = ew.sweep(dt, dev.arch, dev)
    if r.kernels ~= r.want_kernels then error(r.kernels .. " kernels, want " .. r.want_kernels, 0) end
    if #r.bad > 0 then error(#r.bad .. " of " .. r.pairs .. " pairs differ:\n  " .. table.concat(r.bad, "\n  "), 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
-- blockwise reductions and softmax (spec/lua/reduce_blockwise_cases.lua) against g:eval
local RB = require "reduce_blockwise_cases"
for _, c in ipairs(RB.cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    local good, msg = RB.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = c.name .. ": " .. tostring(err) end
end
-- multi-block reductions (spec/lua/reduce_split_cases.lua): forced splits, and the
-- heuristic's shapes on this device (two kernels through a workspace where it splits)
local RS = require "reduce_split_cases"
for _, c in ipairs(RS.cases()) do
  local ok, err = pcall(function()
    local p = kiln.compile(c.g, { target = dev.arch, cache = false })
    if #p:kernels() ~= c.kernels then error(#p:kernels() .. " kernels, want " .. c.kernels, 0) end
    local good, msg = RB.check(table.pack(p:run(c.inputs, { device = dev })), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
    if not good then error(msg, 0) end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = "split " .. c.name .. ": " .. tostring(err) end
end
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
-- host plans with prefill, copy and workspace steps on streams (spec/lua/plan_steps_gpu_spec.lua's cases)
local function plan_kinds(plan)
  local t = {}
  for _, st in ipairs(plan.steps) do t[#t + 1] = st.kind end
  return table.concat(t, ",")
end
local function plan_case(name, g, inputs, want_kinds)
  local ok, err = pcall(function()
    local p = kiln.compile(g, { target = dev.arch, cache = false })
    if plan_kinds(p:plan()) ~= want_kinds then error("steps " .. plan_kinds(p:plan()) .. ", want " .. want_kinds, 0) end
    local want = table.pack(g:eval(inputs))
    for _, opts in ipairs { { device = dev }, { device = dev, timing = {} } } do
      local got = table.pack(p:run(inputs, opts))
      for i = 1, want.n do
        local good, report = gen.check(got[i], want[i], want[i].dtype)
        if not good then error(("output %d%s: %s"):format(i, opts.timing and " (timed)" or "", report.summary), 0) end
      end
    end
  end)
  if ok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = name .. ": " .. tostring(err) end
end
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
  g3:output((g3:conv(x3, w3):reduce_max({ 2, 3 }) * 2):relu())
  plan_case("plan: three kernels, two workspaces", g3, { x = kiln.rand({ 1, 16, 10, 10 }, "f32", { dist = "normal" }),
            w = kiln.rand({ 8, 16, 3, 3 }, "f32", { dist = "normal" }) },
            "alloc_workspace,launch,alloc_workspace,launch,free,launch,free")
end
for _, f in ipairs(failures) do print("FAIL " .. f) end
print(string.format("fused graphs, fusion shapes, integer contractions, element-wise pairs, reductions and plans on %s: %d passed, %d failed (%.1f s)", dev.arch, pass, fail, (kiln.clock_ms() - t0) / 1e3))
if fail > 0 then os.exit(1) end
