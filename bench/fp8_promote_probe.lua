-- bench/fp8_promote_probe.lua — the fp8 wgmma (sm_90a) on one small GEMM class, element by element
-- against the accumulation rule (spec/lua/fp8_wgmma_rule.lua): 64x64xK, f8e4m3fn / f8e5m2, B [N,K]
-- or [K,N], with and without a fused f32 residual, one level (fp8-promote=0) and two
-- (fp8-promote=256), the heuristic's perf config; each variant on fresh random-normal inputs
-- for T trials. Per variant: the worst |got - want| / the rule's bound over the sampled
-- elements (the GPU suite's check, spec/lua/wgmma_cases.lua), and on how many sampled elements
-- the device equals the rule's emulation bit for bit (with a residual: f32(emulation + r), the
-- epilogue's one f32 add). The GPU suite once saw "fp8 promoted 64x64x20 f8e5m2 B^T + residual
-- fp8-promote=256" lose 2.99x the bound: what to look at is which variants leave the
-- emulation (K 20 vs 32 vs 64, residual or not, promote or not, B^T or not).
--   build/kiln bench/fp8_promote_probe.lua [T]        (on `cuda`, compute capability 9.0; with
--                                                      KILN_DEVICE=host it only compiles the variants)
package.path = "spec/lua/?.lua;" .. package.path
local W = require "wgmma_cases"
local RULE = require "fp8_wgmma_rule"
local dev = kiln.device(os.getenv("KILN_DEVICE") or "cuda")
local T = tonumber(arg and arg[1]) or 8
print(("device: %s (%s), %d trials per variant"):format(dev.name, dev.arch, T))
print("variant | pc | worst x bound | equal to the rule | elements off the rule (trial: element got / rule)")

local variants = {}
for _, K in ipairs { 20, 32, 64 } do
  for _, dt in ipairs { "f8e5m2", "f8e4m3fn" } do
    for _, bt in ipairs { true, false } do
      for _, epi in ipairs { "residual", false } do
        for _, P in ipairs { 256, 0 } do
          if K == 20 or (dt == "f8e5m2" and bt) then variants[#variants + 1] = { K, dt, bt, epi, P } end
        end
      end
    end
  end
end

-- KILN_PROBE_DUMP=FILE: every sampled element (variant, trial, element, got, the rule's value,
-- the residual, then the K products' operand pairs a*b) as a TSV line, for offline fits
local dump = os.getenv("KILN_PROBE_DUMP") and assert(io.open(os.getenv("KILN_PROBE_DUMP"), "w"))
for vi, v in ipairs(variants) do
  local K, dt, bt, epi, P = table.unpack(v)
  local function case() return W.qdot("probe", 64, 64, K, dt, false, bt, epi or nil, nil, nil, false, 1, P) end
  local c = case()
  local ok, p, pc, promote = pcall(W.compile, c)
  if not ok then
    print(("%s | error: %s"):format(c.name, p))
  elseif dev.kind ~= "cuda" then
    print(("%s | %s | compiled (fp8_promote %s)"):format(c.name, pc, tostring(promote)))
  else
    local worst, same, cmp, offs = 0, 0, 0, {}
    for t = 1, T do
      local ct = t == 1 and c or case() -- fresh inputs (and their terms) per trial, the same program
      local ins = ct.inputs
      local got, want = p:run(ins, { device = dev }), ct.g:eval(ins)
      local _, msg = W.check_fp8_wgmma(ct, got, want, pc, 256, promote)
      local r = tonumber(msg:match("([%d%.e%-%+]+) x the fp8 wgmma rule's bound")) or 0
      if r > worst then worst = r end
      local gf, rf = got:flat(), epi and ins.r:flat()
      local Af, Bf = ins.a:flat(), ins.b:flat()
      local Pn = (promote or 0) // 32
      for i = 1, #gf, 37 do
        local pt, ex = ct.fp8.terms(i - 1)
        local e = RULE.gemm_emulate(pt, K, pc, { promote = Pn, ex = ex })
        if rf then e = RULE.f32(e + rf[i]) end
        cmp = cmp + 1
        if gf[i] == e then same = same + 1 elseif #offs < 3 then offs[#offs + 1] = ("%d: %d %.9g / %.9g"):format(t, i, gf[i], e) end
        if dump then
          local j, row = (i - 1) % 64, (i - 1) // 64
          local ops = {}
          for k = 0, K - 1 do
            local a = Af[row * K + k + 1]
            local b = bt and Bf[j * K + k + 1] or Bf[k * 64 + j + 1]
            ops[#ops + 1] = ("%.17g*%.17g"):format(a, b)
          end
          dump:write(("%d\t%s\t%d\t%d\t%.17g\t%.17g\t%.17g\t%s\n"):format(vi, c.name, t, i, gf[i], e,
                                                                      rf and rf[i] or 0, table.concat(ops, " ")))
        end
      end
    end
    print(("%s | %s | %.3g | %d of %d | %s"):format(c.name, pc, worst, same, cmp, table.concat(offs, "; ")))
  end
end
if dump then dump:close() end
