-- reduce_codegen_spec.lua — code objects of the blockwise reduction / softmax kernels
-- without a GPU: compiled for sm_80, sm_90 (PTX), gfx90a, gfx942, gfx1100 (HSACO). Row
-- kernels use the cross-lane shuffles (shfl.sync.bfly / ds_bpermute) and barriers;
-- AMDGPU code objects have no scratch, VGPRs and LDS within the chip's limits; with the
-- CUDA toolkit's ptxas present (else skipped with a message), `ptxas -v` assembles every
-- PTX with no spills and at most 255 registers. The fused cases (reductions with their
-- element-wise producers and consumers) hold the same.
local kiln = require "kiln"
local helper = require "helper"

local AMD = { gfx90a = 512, gfx942 = 512, gfx1100 = 256 }
local targets = { "sm_80", "sm_90", "gfx90a", "gfx942", "gfx1100" }

local ptxas = require "ptxas_tool"

local function graph(name, shape, dtype, build)
  local g = kiln.graph(name)
  g:output(build(g:param("x", shape, dtype)))
  return g
end
-- { name, graph, row mapping (shuffles), barrier (LDS across waves / thread rows) }
local CASES = {
  { "sum rows 64x8192 f32", graph("sum_rows", { 64, 8192 }, "f32", function(x) return x:sum { 1 } end), true, true },
  { "max rows 4096x33 f16 (a wave per row at most: no barrier)",
    graph("max_rows", { 4096, 33 }, "f16", function(x) return x:reduce_max { 1 } end), true, false },
  { "mean cols 4096x512 bf16", graph("mean_cols", { 4096, 512 }, "bf16", function(x) return x:mean { 0 } end), false,
    true },
  { "softmax rows 512x8192 f16", graph("sm_rows", { 512, 8192 }, "f16", function(x) return x:softmax(-1) end), true,
    true },
  { "softmax rows 128x262144 f32", graph("sm_long", { 128, 262144 }, "f32", function(x) return x:softmax(-1) end), true,
    true },
  { "softmax cols 1000x300 f32", graph("sm_cols", { 1000, 300 }, "f32", function(x) return x:softmax(0) end), false,
    true },
  -- fused with producers and consumers (reduce_fusion_cases.lua): one kernel each
  { "fused RMS norm rows 8192x8192 f16", graph("rms_rows", { 8192, 8192 }, "f16", function(x)
    return x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt()
  end), true, true },
  { "fused RMS norm rows 256x65536 f32 (two-pass rows)", graph("rms_long", { 256, 65536 }, "f32", function(x)
    return x * ((x * x):mean({ 1 }, true) + 1e-5):rsqrt()
  end), true, true },
  { "fused softmax(x * scale + 1) rows 8192x8192 f16", graph("sm_fused", { 8192, 8192 }, "f16", function(x)
    return (x * 0.125 + 1):softmax(-1)
  end), true, true },
  { "fused log(sum(exp(x))) rows 8192x8192 f16", graph("lse_rows", { 8192, 8192 }, "f16", function(x)
    return x:exp():sum({ 1 }):log()
  end), true, true },
  { "fused x * rsqrt(mean(x * x)) cols 4096x512 bf16", graph("rms_cols", { 4096, 512 }, "bf16", function(x)
    return x * ((x * x):mean({ 0 }, true) + 1e-5):rsqrt()
  end), false, true },
}

describe("GPU code objects of blockwise reductions and softmax", function()
  local pa = ptxas()
  for _, c in ipairs(CASES) do
    local name, g, row, bar = c[1], c[2], c[3], c[4]
    it(name, function()
      local p = kiln.compile(g, { targets = targets, cache = false })
      for _, t in ipairs(targets) do
        local ks = p:kernels(t)
        assert.are.equal(1, #ks, t .. ": one kernel")
        local k = ks[1]
        local code = p:disasm(k.name, t)
        if AMD[t] then
          local co = p:code_object(k.name, t)
          assert.are.equal(0, co.scratch_bytes, t .. ": scratch")
          assert.is_true(co.vgpr >= 0 and co.vgpr <= AMD[t], t .. ": VGPRs within the limit")
          assert.is_true(co.lds_bytes >= 0 and co.lds_bytes <= 65536, t .. ": LDS within the limit")
          assert.are.equal(row, code:find("ds_bpermute_b32", 1, true) ~= nil, t .. ": ds_bpermute presence")
          assert.are.equal(bar, code:find("s_barrier", 1, true) ~= nil, t .. ": s_barrier presence")
        else
          assert.are.equal(row, code:find("shfl.sync.bfly.b32", 1, true) ~= nil, t .. ": shfl.sync.bfly presence")
          local has_bar = code:find("bar.sync", 1, true) or code:find("barrier.sync", 1, true)
          assert.are.equal(bar, has_bar ~= nil, t .. ": barrier presence")
          if pa then
            local f = helper.write_temp(code, ".ptx")
            local o, e = helper.run(("%s -arch=%s -v %s -o /dev/null"):format(pa, t, f))
            local out = (o or "") .. (e or "")
            os.remove(f)
            local regs = tonumber(out:match("Used (%d+) registers"))
            assert(regs and regs <= 255, t .. ": ptxas -v: " .. out)
            assert.is_falsy(out:find("[1-9]%d* bytes spill"), t .. ": spills: " .. out)
          end
        end
      end
    end)
  end
  if not pa then pending("ptxas not found (CUDA toolkit absent): PTX not assembled") end
end)
