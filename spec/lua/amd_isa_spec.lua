-- amd_isa_spec.lua — static checks on AMDGPU code objects without a GPU (gfx90a, gfx942,
-- gfx1100, gfx1030, gfx908), on the kinds of kernel kiln makes: GEMMs (4096^3 f16 / bf16 / f32, a
-- split-K f32 GEMM with atomic adds, one with a fused epilogue through the output
-- swizzle), a 3x3 conv, row / column reductions and softmax (LDS partials).
--  * Barriers: every rock.barrier orders LDS only, so no kernel has a cache write-back or
--    invalidate (buffer_wbl2 / buffer_inv / buffer_invl2 / buffer_wbinvl1 /
--    buffer_gl0_inv / buffer_gl1_inv; the split-K atomics are agent-scope monotonic and
--    need none either), the LLVM IR has no fence without a syncscope, and no s_barrier
--    waits for the global loads in flight (its wait is s_waitcnt lgkmcnt(0), on every
--    target: gfx908 and gfx1100 issue it as inline assembly, passes/lower_barrier.h), and
--    in the main loop of the GEMMs and the conv no s_waitcnt vmcnt(0) sits between a
--    global load and the next s_barrier (amd_isa.loads_to_barrier; the kpack-1 f32 GEMMs
--    included) and the loop is software-pipelined (amd_isa.pipelining).
-- Each check is also run on the pattern the old lowering produced (system-scope fences
-- around s_barrier), which it must report.
local kiln = require "kiln"
local isa = require "amd_isa"

local TARGETS = { "gfx90a", "gfx942", "gfx1100", "gfx1030", "gfx908" }

local function gemm(name, m, n, k, dt, epi)
  local g = kiln.graph(name)
  local a, b = g:param("a", { m, k }, dt), g:param("b", { k, n }, dt)
  local c = g:dot(a, b)
  if epi then c = (c + g:param("r", { m, n }, dt)):relu() end
  g:output(c)
  return g
end
local function unary(name, shape, dt, f)
  local g = kiln.graph(name)
  g:output(f(g:param("x", shape, dt)))
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
  { "gemm 4096^3 f16", function() return gemm("gemm_f16", 4096, 4096, 4096, "f16") end },
  { "gemm 4096^3 bf16", function() return gemm("gemm_bf16", 4096, 4096, 4096, "bf16") end },
  { "gemm 4096^3 f32", function() return gemm("gemm_f32", 4096, 4096, 4096, "f32") end },
  { "gemm 128x128x8192 f32 (split-K, atomic adds)", function() return gemm("gemm_sk", 128, 128, 8192, "f32") end },
  { "gemm 512x384x256 f16 + residual + relu", function() return gemm("gemm_epi", 512, 384, 256, "f16", true) end },
  { "conv 3x3 64->64 56x56 f16", conv3x3 },
  { "sum rows 64x8192 f32", function() return unary("sum_rows", { 64, 8192 }, "f32", function(x) return x:sum { 1 } end) end },
  { "mean cols 4096x512 bf16", function() return unary("mean_cols", { 4096, 512 }, "bf16", function(x) return x:mean { 0 } end) end },
  { "softmax rows 512x8192 f16", function() return unary("sm_rows", { 512, 8192 }, "f16", function(x) return x:softmax(-1) end) end },
}

-- findings: the wait right before an s_barrier (the instructions between the last
-- non-wait instruction and the barrier) when it waits for vector memory: the barrier
-- itself drains the global loads in flight (LLVM 19 does that before every s_barrier on
-- chips without a back-off barrier, gfx908 and gfx11, unless the barrier is inline
-- assembly).
local function barrier_waits(asm)
  local out, waits = {}, {}
  for _, l in ipairs(isa.lines(asm)) do
    local m = isa.mnemonic(l)
    if m == "s_barrier" then
      for _, w in ipairs(waits) do
        if w:find("vmcnt%(0%)") then out[#out + 1] = w:gsub("^%s+", "") end
      end
      waits = {}
    elseif m == "s_waitcnt" or m == "s_waitcnt_vmcnt" then waits[#waits + 1] = l
    elseif m and m ~= "s_nop" then waits = {} end
  end
  return out
end

-- what the old lowering made of a barrier (fence release; s.barrier; fence acquire at
-- system scope): gfx942 and gfx1100 code and the LLVM IR as LLVM 19 printed them
local OLD_GFX942 = "\tglobal_load_dwordx4 v[34:37], v92, s[6:7]\n\tbuffer_wbl2 sc0 sc1\n\ts_waitcnt vmcnt(0)\n" ..
  "\ts_barrier\n\tbuffer_inv sc0 sc1\n\tv_mfma_f32_32x32x8_f16 a[0:15], v[84:85], v[86:87], a[0:15]\n"
local OLD_GFX1100 = "\tds_store_b128 v1, v[2:5]\n\ts_waitcnt lgkmcnt(0)\n\ts_barrier\n\tbuffer_gl1_inv\n" ..
  "\tbuffer_gl0_inv\n\tds_load_b64 v[2:3], v49\n"
-- the gfx1100 K loop with llvm.amdgcn.s.barrier (LLVM 19 waits for every counter before it):
-- the next step's loads, issued after the second barrier, drained at the back-edge barrier
local OLD_GFX1100_LOOP = ".L1898:\n\ts_waitcnt vmcnt(0) lgkmcnt(0)\n\ts_barrier\n\tds_store_b128 v68, v[41:44]\n" ..
  "\ts_waitcnt lgkmcnt(0)\n\ts_barrier\n\tglobal_load_b128 v[41:44], v41, s[4:5]\n" ..
  "\tv_wmma_f32_16x16x16_f16 v[25:32], v[75:82], v[107:114], v[25:32]\n\ts_cbranch_scc1 65340 ; .L1898\n"
local OLD_IR = "  store float %5, ptr addrspace(3) %6, align 4\n  fence release\n" ..
  "  call void @llvm.amdgcn.s.barrier()\n  fence acquire\n"

describe("AMDGPU barriers: the checks find the old pattern", function()
  it("cache maintenance, unscoped fences, vmcnt(0) before s_barrier", function()
    assert.are.same({ "1 x buffer_wbl2", "1 x buffer_inv" }, isa.cache_ops(OLD_GFX942))
    assert.are.same({ "1 x buffer_gl0_inv", "1 x buffer_gl1_inv" }, isa.cache_ops(OLD_GFX1100))
    assert.are.same({ "fence release", "fence acquire" }, isa.unscoped_fences(OLD_IR))
    assert.are.equal(1, #barrier_waits(OLD_GFX942))
    assert.are.equal(1, #barrier_waits(OLD_GFX1100_LOOP))
    assert.are.equal(1, #isa.loads_to_barrier(OLD_GFX1100_LOOP))
    local fixed = OLD_GFX1100_LOOP:gsub("vmcnt%(0%) ", "")
    assert.are.same({}, isa.loads_to_barrier(fixed))
    assert.are.same({}, barrier_waits(fixed))
    assert.are.same({}, isa.unscoped_fences("  fence syncscope(\"workgroup\") release, !mmra !0\n"))
  end)
end)

describe("AMDGPU barriers are workgroup-scope and LDS-only", function()
  for _, c in ipairs(CASES) do
    it(c[1], function()
      local p = kiln.compile(c[2](), { targets = TARGETS, cache = false })
      local barriers = 0
      for _, t in ipairs(TARGETS) do
        for _, k in ipairs(p:kernels(t)) do
          local asm, where = p:disasm(k.name, t), t .. " " .. k.name .. ": "
          assert.are.same({}, isa.cache_ops(asm), where .. "cache maintenance")
          assert.is_string(k.llvm_ir, where .. "LLVM IR")
          assert.are.same({}, isa.unscoped_fences(k.llvm_ir), where .. "fences without a scope")
          assert.are.same({}, barrier_waits(asm), where .. "vmcnt(0) before s_barrier")
          assert.are.same({}, isa.loads_to_barrier(asm), where .. "vmcnt(0) between a load and the next s_barrier")
          assert.are.same({}, isa.pipelining(asm), where .. "pipelining")
          for _ in asm:gmatch("s_barrier") do barriers = barriers + 1 end
        end
      end
      assert.is_true(barriers > 0, "the case has barriers")
    end)
  end
end)
