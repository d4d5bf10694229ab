-- amd_fma_spec.lua — the no-matrix GEMM path on AMD (gfx1030 every dtype, gfx1100 f32)
-- fuses its multiply-adds (the contraction rule of passes/lower_to_llvm.c), checked
-- statically on the code objects:
--  * in every innermost loop that multiplies floats, the fused multiply-adds
--    (v_fmac / v_fma_mix / v_dot2 ..., amd_isa.fused_madds) are a positive multiple of the
--    thread tile's multiply-adds per K step (mPerThread x nPerThread: one K step, or
--    several where LLVM unrolled), with no v_mul_f32 left in the loop;
--  * in the whole kernel, no v_mul_f32 result feeds a v_add_f32 / v_sub_f32.
-- The same checks run on the strict_fp compile of each case (every multiply and add
-- rounded on its own, which is what the lowering emitted before), which they must reject.
-- Numerics: contracted and strict host results both within the dtype tolerance of the
-- float64 evaluator (an FMA rounds once where the pair rounds twice: each step's error is
-- at most the pair's, so tolerances that bound the strict error bound the fused one).
local kiln = require "kiln"
local isa = require "amd_isa"

local function gemm(name, m, n, k, dt, epi)
  local g = kiln.graph(name)
  local a, b = g:param("a", { m, k }, dt), g:param("b", { k, n }, dt)
  local c = g:dot(a, b)
  if epi then c = (c * g:param("s", { m, n }, dt) + g:param("r", { m, n }, dt)):relu() end
  g:output(c)
  return g
end
local function conv3x3()
  local g = kiln.graph("conv3x3")
  local x = g:param("x", { 1, 64, 56, 56 }, "f16", { layout = "NHWC" })
  local w = g:param("w", { 64, 64, 3, 3 }, "f16", { layout = "KYXC" })
  g:output(g:conv(x, w, { padding = { 1, 1, 1, 1 } }))
  return g
end

local CASES = {
  { "gemm 4096^3 f32", "gfx1030", function() return gemm("gemm_f32", 4096, 4096, 4096, "f32") end },
  { "gemm 4096^3 f16", "gfx1030", function() return gemm("gemm_f16", 4096, 4096, 4096, "f16") end },
  { "gemm 4096^3 bf16", "gfx1030", function() return gemm("gemm_bf16", 4096, 4096, 4096, "bf16") end },
  { "conv 3x3 64->64 56x56 f16", "gfx1030", conv3x3 },
  { "gemm 512x384x256 f16 * s + r, relu", "gfx1030", function() return gemm("gemm_epi", 512, 384, 256, "f16", true) end },
  { "gemm 4096^3 f32", "gfx1100", function() return gemm("gemm_f32", 4096, 4096, 4096, "f32") end },
  { "gemm 512x384x256 f32 * s + r, relu", "gfx1100", function() return gemm("gemm_epi", 512, 384, 256, "f32", true) end },
  { "gemm 100x37x59 f32", "gfx1100", function() return gemm("gemm_odd", 100, 37, 59, "f32") end },
}

local fma_findings = isa.fma_findings

local function thread_tile(k)
  local mt, nt = k.perf_config:match("^v%d:%d+,%d+,%d+,(%d+),(%d+)")
  return tonumber(mt) * tonumber(nt)
end

describe("AMD fallback GEMMs: the checks find unfused multiply-adds", function()
  it("on a hand-written loop and on the pair-free one", function()
    local bad = ".L10:\n\tv_mul_f32_e32 v79, v85, v92\n\tv_add_f32_e32 v9, v9, v79\n\ts_cbranch_scc1 65533 ; .L10\n"
    local f = fma_findings(bad, 1)
    assert.are.equal(3, #f, table.concat(f, "\n"))
    local good = ".L10:\n\tv_dual_fmac_f32 v1, v2, v3 :: v_dual_fmac_f32 v4, v5, v6\n" ..
      "\tv_fma_mix_f32 v7, v8, v9, v7 op_sel_hi:[1,1,0]\n\tv_dot2_f32_f16 v10, v11, v12, v10\n" ..
      "\ts_cbranch_scc1 65533 ; .L10\n"
    assert.are.same({}, fma_findings(good, 5))
    assert.are.equal(1, #fma_findings(good, 2)) -- 5 is not a multiple of 2
  end)
end)

describe("AMD fallback GEMMs fuse their multiply-adds", function()
  for _, c in ipairs(CASES) do
    it(c[2] .. " " .. c[1], function()
      local g = c[3]()
      local p = kiln.compile(g, { target = c[2], cache = false })
      local strict = kiln.compile(g, { target = c[2], cache = false, strict_fp = true })
      local n = 0
      for i, k in ipairs(p:kernels(c[2])) do
        if k.kind == "gemm" then
          n = n + 1
          local where = c[2] .. " " .. k.name .. " (" .. k.perf_config .. "): "
          assert.is_nil(p:disasm(k.name, c[2]):find("v_wmma"), where .. "the no-matrix path")
          assert.are.same({}, fma_findings(p:disasm(k.name, c[2]), thread_tile(k)), where)
          assert.is_truthy(k.llvm_ir:find("contract", 1, true), where .. "contract flags in the LLVM IR")
          local sk = strict:kernels(c[2])[i]
          assert.are.equal(k.perf_config, sk.perf_config)
          assert.is_true(#fma_findings(strict:disasm(sk.name, c[2]), thread_tile(sk)) > 0, where .. "strict_fp is unfused")
          assert.is_nil(sk.llvm_ir:find("contract", 1, true), where .. "strict_fp: no contract flag")
        end
      end
      assert.is_true(n > 0, "the case has a GEMM kernel")
    end)
  end
end)

describe("contraction on the host", function()
  local function check(dt, m, n, k)
    local g = gemm("h_" .. dt, m, n, k, dt, true)
    local ins = {}
    for _, name in ipairs { "a", "b", "s", "r" } do
      local shape = name == "a" and { m, k } or name == "b" and { k, n } or { m, n }
      ins[name] = kiln.rand(shape, dt) -- fresh inputs each run
    end
    local ref = g:eval(ins)
    for _, strict in ipairs { false, true } do
      local p = kiln.compile(g, { target = "host", cache = false, strict_fp = strict })
      local ir = p:kernels()[1].llvm_ir
      assert.are.equal(not strict, ir:find("contract", 1, true) ~= nil or ir:find("fmuladd", 1, true) ~= nil)
      local r = kiln.compare(p:run(ins), ref)
      assert.is_true(r.ok, dt .. (strict and " strict: " or " contracted: ") .. r.summary)
    end
  end
  it("f32 and f16 GEMM + epilogue, contracted and strict, match the evaluator", function()
    check("f32", 67, 45, 130)
    check("f16", 33, 70, 96)
  end)
  it("strict_fp must be a boolean", function()
    local ok, err = pcall(kiln.compile, gemm("e", 4, 4, 4, "f32"), { strict_fp = "yes" })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("strict_fp must be a boolean", 1, true))
  end)
end)
