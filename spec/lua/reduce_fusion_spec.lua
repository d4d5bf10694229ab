-- reduce_fusion_spec.lua — reductions and softmax fused with their element-wise producers
-- and consumers (reduce_fusion_cases.lua), on the host against g:eval on fresh random
-- inputs, with the number of kernels each graph compiles to; the fused kernels compile
-- for sm_90 and gfx942 without spills (scripts/gpu_suite.lua runs them on a device).
local kiln = require "kiln"
local RF = require "reduce_fusion_cases"

describe("reduction fusion on the host", function()
  for _, c in ipairs(RF.cases()) do
    it(c.name, function()
      local p = kiln.compile(c.g, { target = "host", cache = false })
      assert.are.equal(c.kernels, #p:kernels(), c.name)
      local ok, msg = RF.check(table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs)), c.dtype, c.k)
      assert(ok, c.name .. ": " .. tostring(msg))
    end)
  end
end)

describe("reduction fusion on GPU targets (compiled, not run)", function()
  for _, c in ipairs(RF.gpu_cases()) do
    it(c.name .. ": kernel count on sm_90 and gfx942", function()
      for _, t in ipairs { "sm_90", "gfx942" } do
        local p = kiln.compile(c.g, { target = t, cache = false })
        assert.are.equal(c.kernels, #p:kernels(), t)
      end
    end)
  end
end)

describe("fused loads and stores are vectors", function()
  local function widths(p)
    local w = {}
    for _, a in ipairs(p:kernels()[1].accesses) do
      local k = a.arg .. " " .. a.kind
      w[k] = math.max(w[k] or 0, a.bytes)
    end
    return w
  end
  it("sum(exp(x - c)) with c a per-row column: x in 16-byte loads, c one value per row (sm_90, gfx942)", function()
    local g = kiln.graph("vec_sumexp")
    local x, c = g:param("x", { 4096, 4096 }, "f32"), g:param("c", { 4096, 1 }, "f32")
    g:output((x - c):exp():sum({ 1 }))
    for _, t in ipairs { "sm_90", "gfx942" } do
      local w = widths(kiln.compile(g, { target = t, cache = false }))
      assert.are.equal(16, w["in0 load"], t)
      assert.are.equal(4, w["in1 load"], t)
    end
  end)
  it("RMS norm 8192x8192 f16: 16-byte loads and stores, the row read once (sm_90)", function()
    local g = kiln.graph("vec_rms")
    local x = g:param("x", { 8192, 8192 }, "f16")
    g:output(x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt())
    local p = kiln.compile(g, { target = "sm_90", cache = false })
    local w = widths(p)
    assert.are.equal(16, w["in0 load"])
    assert.are.equal(16, w["out0 store"])
    -- the write pass's loads are the reduction pass's (kept in registers by the compiler):
    -- the PTX loads x as many times as it stores the output
    local code = p:disasm(p:kernels()[1].name, "sm_90")
    local _, loads = code:gsub("ld%.global", "")
    local _, stores = code:gsub("st%.global", "")
    assert.is_true(stores > 0)
    assert.are.equal(stores, loads, "as many loads of x as stores: one read")
  end)
end)
