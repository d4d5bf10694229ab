-- scripts/gpu_suite.lua — the GPU acceptance run without busted (the GPU machine has no
-- Lua installation: run it with a static build/kiln): the random fused-graph suite on
-- the CUDA (or HIP) device against the reference evaluator (every output, and one kernel
-- for each conv/dot graph), the fusion shapes of spec/lua/fusion_cases.lua, then the integer-contraction
-- cases of spec/lua/int8_cases.lua (exact), then the element-wise op pairs of
-- spec/lua/elementwise_pairs_cases.lua (one case per dtype, the rule of the host spec), then
-- the MIGraphX-dialect corpus of spec/migraphx (every function verified, its kernel count).
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
-- the MIGraphX-dialect corpus (spec/migraphx/*.mlir, as `kiln migraphx --verify` runs it):
-- every function against g:eval with the kernel count of its file's KERNELS line
for _, file in ipairs { "conv_bias_relu_nhwc", "tensor_form", "dot_batch", "softmax_reduce", "views",
                        "elementwise_literals" } do
  local path = "spec/migraphx/" .. file .. ".mlir"
  local ok, err = pcall(function()
    local fh = assert(io.open(path, "rb"))
    local text = fh:read("a")
    fh:close()
    local want = {}
    for fn, k in text:match("// KERNELS:([^\n]*)"):gmatch("([%w_]+)=(%d+)") do want[fn] = tonumber(k) end
    for _, g in ipairs(kiln.migraphx(text, path)) do
      local gok, line, nk = kiln.migraphx_verify(g, { target = dev.kind })
      if gok and nk ~= want[g.name] then gok, line = false, line .. " (want kernels=" .. tostring(want[g.name]) .. ")" end
      if gok then pass = pass + 1 else fail = fail + 1; failures[#failures + 1] = path .. ": " .. line end
    end
  end)
  if not ok then fail = fail + 1; failures[#failures + 1] = path .. ": " .. tostring(err) end
end
for _, f in ipairs(failures) do print("FAIL " .. f) end
print(string.format("fused graphs, fusion shapes, integer contractions, element-wise pairs, reductions, plans and the MIGraphX corpus on %s: %d passed, %d failed (%.1f s)", dev.arch, pass, fail, (kiln.clock_ms() - t0) / 1e3))
if fail > 0 then os.exit(1) end
