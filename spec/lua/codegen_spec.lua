-- codegen_spec.lua — GPU code objects without a GPU: a fixed subset of the random
-- fused-graph suite compiled for gfx90a, gfx942, gfx1100 (HSACO) and sm_80, sm_90 (PTX);
-- every AMDGPU code object is a DYN ELF for machine AMDGPU with the kernel symbol and its
-- descriptor, metadata parsed, no scratch, VGPRs and LDS within the chip's limits; GEMM
-- kernels use MFMA (gfx9) / WMMA (gfx11) / mma.sync (NVIDIA) where the dtype has them.
local kiln = require "kiln"
local gen = require "fused_gen"

local AMD = { gfx90a = { vgpr = 512, mfma = true }, gfx942 = { vgpr = 512, mfma = true }, gfx1100 = { vgpr = 256, wmma = true } }
local NV = { "sm_80", "sm_90" }
local targets = { "gfx90a", "gfx942", "gfx1100", "sm_80", "sm_90" }

describe("GPU code objects for the fused-graph suite", function()
  local count = tonumber(os.getenv("KILN_CODEGEN_COUNT") or "") or 28
  for seed = 1, count do
    local case = gen.gen(seed)
    it(case.name, function()
      local p = kiln.compile(case.g, { targets = targets, cache = false })
      for _, t in ipairs(targets) do
        for _, k in ipairs(p:kernels(t)) do
          local gemm = k.kind == "gemm"
          if AMD[t] then
            local co = p:code_object(k.name, t)
            assert.are.equal("DYN", co.elf_type)
            assert.are.equal(224, co.machine)
            assert.are.equal(t, co.chip)
            assert.is_true(co.has_symbol, "kernel symbol")
            assert.is_true(co.has_descriptor, "kernel descriptor")
            assert.are.equal(0, co.scratch_bytes, t .. " " .. k.name .. ": scratch")
            assert.is_true(co.vgpr >= 0 and co.vgpr + math.max(co.agpr, 0) <= AMD[t].vgpr, "VGPRs within the limit")
            assert.is_true(co.lds_bytes >= 0 and co.lds_bytes <= 65536, "LDS within the limit")
            assert.is_true(co.kernarg_size > 0)
            if gemm then
              local asm = p:disasm(k.name, t)
              local has_mfma, has_wmma = asm:find("v_mfma") ~= nil, asm:find("v_wmma") ~= nil
              if AMD[t].mfma then assert.is_true(has_mfma, t .. ": GEMM without v_mfma") end
              if AMD[t].wmma then
                local want = case.in_dtype ~= "f32"   -- gfx11 has no f32 WMMA: FMA path
                assert.are.equal(want, has_wmma, t .. ": v_wmma presence")
              end
            end
          else
            local ptx = p:disasm(k.name, t)
            assert.is_truthy(ptx:find(".entry " .. k.name, 1, true), "PTX entry")
            assert.is_truthy(ptx:find(".target " .. t, 1, true), "PTX target")
            if gemm then
              local want = case.in_dtype ~= "f32"   -- mma.sync takes f16/bf16/i8
              assert.are.equal(want, ptx:find("mma.sync", 1, true) ~= nil, t .. ": mma.sync presence")
            end
          end
        end
      end
    end)
  end
end)
