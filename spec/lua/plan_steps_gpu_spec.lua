-- plan_steps_gpu_spec.lua — host plans with prefill, copy and workspace steps run on a GPU
-- (tag gpu): the plan runs asynchronously on streams ordered by events made from its
-- tokens (driver/plan_exec.c); the results must match g:eval, with and without the
-- per-step timing (events around each step, the same schedule), and the timing records
-- must be ordered by the waits (spec/lua/plan_async_cases.lua). Without a CUDA or HIP device every case
-- is reported pending with the reason.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fg = require "fused_gen"

local kinds = fg.plan_kinds
local A = require "plan_async_cases"

describe("plans with prefill, copy and workspace steps on the GPU #gpu", function()
  local dev, why = helper.gpu_device()
  if not dev then
    pending("no CUDA or HIP device present: " .. why)
    return
  end
  local function check(g, inputs, want_kinds, pipeline)
    local p = kiln.compile(g, { target = dev.arch, cache = false, pipeline = pipeline })
    assert.are.equal(want_kinds, kinds(p:plan()))
    local want = table.pack(g:eval(inputs))
    local t = {}
    for _, opts in ipairs { { device = dev }, { device = dev, timing = t } } do
      local ok, msg = fg.check_outputs(table.pack(p:run(inputs, opts)), want)
      assert(ok, ("%s on %s"):format(msg, dev.arch))
    end
    assert(A.check_timing(p:plan(), t))
    return t
  end

  it("a dot with K = 0 (a prefill into a workspace), an empty reduce_max (-inf) and a copy", function()
    local g = kiln.graph("gpu_prefill")
    local a = g:param("a", { 64, 0 }, "f32")
    local b = g:param("b", { 0, 32 }, "f32")
    local x = g:param("x", { 64, 32 }, "f32")
    g:output((a:dot(b) + x):relu(), x)
    check(g, { a = kiln.rand({ 64, 0 }, "f32"), b = kiln.rand({ 0, 32 }, "f32"), x = kiln.rand({ 64, 32 }, "f32", { dist = "normal" }) },
          "alloc_workspace,prefill,launch,free,copy")
    local g2 = kiln.graph("gpu_rmax0")
    local e = g2:param("e", { 33, 0 }, "f32")
    local z = g2:param("z", { 33 }, "f32")
    g2:output(e:reduce_max({ 1 }):max(z))   -- max(-inf, z) = z: a wrong fill value shows
    check(g2, { e = kiln.rand({ 33, 0 }, "f32"), z = kiln.rand({ 33 }, "f32", { dist = "normal" }) }, "alloc_workspace,prefill,launch,free")
  end)

  it("independent chains run on different streams", function()
    local g, inputs = A.branches(1024, "f32")
    local t = check(g, inputs(), "alloc_workspace,launch,launch,free,alloc_workspace,launch,launch,free,launch",
                    A.no_producer_fusion())
    assert.are_not.equal(t[2].stream, t[6].stream)
    assert.are_not.equal(t[3].stream, t[7].stream)
  end)

  it("a chain of three kernels with two workspaces", function()
    local g = kiln.graph("gpu_chain3")
    local x = g:param("x", { 1, 16, 10, 10 }, "f32")
    local w = g:param("w", { 8, 16, 3, 3 }, "f32")
    g:output((g:conv(x, w):reduce_max({ 2, 3 }):softmax(-1) * 2):relu())
    check(g, { x = kiln.rand({ 1, 16, 10, 10 }, "f32", { dist = "normal" }), w = kiln.rand({ 8, 16, 3, 3 }, "f32", { dist = "normal" }) },
          "alloc_workspace,launch,alloc_workspace,launch,free,launch,free")
  end)
end)
