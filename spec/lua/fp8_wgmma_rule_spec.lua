-- fp8_wgmma_rule_spec.lua — the host side of the fp8 wgmma checks (the GPU runs them in
-- scripts/gpu_suite.lua section wgmma): spec/lua/fp8_wgmma_rule.lua reproduces the H100
-- probe's rows exactly as measured (bench/fp8_accum_probe.lua, bench/RESULTS.md), its bound
-- holds for its emulation and can fail, its exact sets are exact under the rule; the fp8
-- cases of spec/lua/wgmma_cases.lua (products in the GEMM's K order) agree with g:eval, and
-- check_fp8_wgmma refuses a wrong output (the host runs of the exact cases: spec/lua/fp8_spec.lua;
-- their compile for sm_90a: spec/lua/nvidia_gemm_spec.lua).
local kiln = require "kiln"
local R = require "fp8_wgmma_rule"
local W = require "wgmma_cases"

describe("fp8 wgmma accumulation rule", function()
  local function run2(p) return R.emulate(p, 2) end -- a GEMM of K 64: two k32 instructions

  it("reproduces the H100 probe rows exactly", function()
    for s = 1, 16 do
      local keep = s <= 13
      -- 1 + 2^-s in one instruction
      assert.are.equal(keep and 1 + 2 ^ -s or 1, run2 { 1, 2 ^ -s }, "1+2^-" .. s)
      -- [1 in the first k32 step] + [2^-s in the second]: the accumulator is truncated too
      assert.are.equal(keep and 1 + 2 ^ -s or 1, run2 { [1] = 1, [33] = 2 ^ -s }, "[1] + [2^-" .. s .. "]")
      -- 1 - 2^-s: the small addend truncated toward zero, the sum not rounded down
      assert.are.equal(keep and 1 - 2 ^ -s or 1, run2 { 1, -(2 ^ -s) }, "1-2^-" .. s)
    end
    -- 1 + 2^-s + 2^-(s+1): s = 13 gives 1 + 2^-13 (truncation, not rounding to 1 + 2^-12)
    assert.are.equal(1 + 2 ^ -12 + 2 ^ -13, run2 { 1, 2 ^ -12, 2 ^ -13 })
    assert.are.equal(1 + 2 ^ -13, run2 { 1, 2 ^ -13, 2 ^ -14 })
    assert.are.equal(1, run2 { 1, 2 ^ -14, 2 ^ -15 })
    -- 31 copies of 2^-14 and 1 in one instruction: exactly 1 (no wide sum); 2^-13 ones are kept
    local p, p13 = {}, {}
    for k = 1, 31 do p[k], p13[k] = 2 ^ -14, 2 ^ -13 end
    p[32], p13[32] = 1, 1
    assert.are.equal(1, run2(p))
    assert.are.equal(1 + 31 * 2 ^ -13, run2(p13))
    -- exponent, ninstr
    assert.are.equal(-14, R.exponent(2 ^ -14))
    assert.are.equal(-15, R.exponent(2 ^ -14 - 2 ^ -40))
    assert.are.equal(3, R.exponent(-15.5))
    assert.are.equal(2, R.ninstr(20, "v3:64,64,64,64,64,16"))
    assert.are.equal(1, R.ninstr(20, "v3:64,128,32,64,64,16"))
    assert.are.equal(11, R.ninstr(333, "v3:64,64,32,64,64,16"))
    assert.are.equal(12, R.ninstr(333, "v3:64,64,64,64,64,16"))
    assert.has_error(function() R.ninstr(64, "v3:64,64,16,64,64,8") end)
  end)

  -- Three outputs of the GPU suite's random fp8 wgmma cases (H100, 2026-12-06) that a rule
  -- aligning to the largest addend alone got wrong (it predicted them exact): the products of
  -- the element in K order (one k32 instruction, K padded with zeros) and the device's dot
  -- (its output minus the fused f32 bias / residual, so within a few f32 ulps). The result's
  -- exponent sets the kept quantum: the emulation must give the device's value.
  it("reproduces three device outputs whose result outgrows the largest addend", function()
    local cases = {
      { { 0.64453125, 0.05712890625, 0.0238037109375, 0.068359375, -0.203125, -0.25, 0.75, -0.703125, 0.234375,
          -0.625, 1.5, 0.9375, 1.265625, -0.1611328125, 0.3046875, 1.75 }, 3.7100749 + 1.8831869363785 },
      { { 0.029296875, 0.3125, 0.1171875, 0.00390625, -0.02734375, -0.008544921875, -3.0625, -0.78125, -2.5,
          0.078125, -1.875, 0.2734375, -1.09375, -0.75, 2.625, -2.5 }, -10.441494 + 1.2832913398743 },
      { { 0.107421875, 0.46875, -0.5625, 0.7734375, -0.001708984375, -1.25, -1.171875, -0.1875, -0.25390625,
          -1.6875, -1.828125, 0.3828125, -0.21484375, -0.703125, -0.30078125, 0.330078125, 1.0546875, -1.40625,
          -0.546875, -1.75 }, -8.00871277 - 0.73835796117783 },
    }
    for i, c in ipairs(cases) do
      local exact = 0
      for _, v in ipairs(c[1]) do exact = exact + v end
      local e = R.emulate(c[1], 1)
      assert(math.abs(e - c[2]) <= 4 * 2 ^ -24 * math.abs(c[2]), ("case %d: emulation %.9g, device %.9g"):format(i, e, c[2]))
      assert(e ~= exact, ("case %d: the device lost bits, the emulation must too"):format(i))
      assert(math.abs(c[2] - exact) <= R.bound(c[1], 1) + 4 * 2 ^ -24 * math.abs(c[2]), ("case %d: outside the bound"):format(i))
    end
  end)

  it("the bound holds for the emulation, is not vacuous, and the exact sets drop nothing", function()
    local s = 12345
    local function rnd() s = (s * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff; return (s >> 11) / 2 ^ 52 end
    local vals = { 0.75, 1, 1.25, 1.5, 1.75, 2, 3, 0.5, 0.3125, 0.0625 } -- e4m3 values
    local worst, loose = 0, 0
    for trial = 1, 200 do
      local K = ({ 16, 64, 200, 1000 })[trial % 4 + 1]
      local p, exact = {}, 0
      for k = 1, K do
        p[k] = vals[1 + math.floor(rnd() * #vals)] * vals[1 + math.floor(rnd() * #vals)] * (rnd() < 0.5 and -1 or 1)
        exact = exact + p[k]
      end
      local n = (K + 63) // 64 * 2
      local err, b = math.abs(R.emulate(p, n) - exact), R.bound(p, n)
      assert.is_true(err <= b, ("K %d: emulation error %.3g > bound %.3g"):format(K, err, b))
      worst = math.max(worst, err / b)
      loose = math.max(loose, b / (math.abs(exact) + 1))
    end
    assert.is_true(worst > 0.05, "the bound is reached within 20x: " .. worst)
    assert.is_true(loose < 0.05, "the bound is small against the outputs: " .. loose)
    -- the exact sets: K max|p| below 2^14 g, and the emulation equals the sum
    for _, K in ipairs { 16, 83, 84, 455, 456, 1023, 1024, 4095, 4096, 8192 } do
      local set = R.exact_set(K)
      local p, exact = {}, 0
      for k = 1, K do
        p[k] = set[1 + math.floor(rnd() * #set)] * set[1 + math.floor(rnd() * #set)] * (rnd() < 0.5 and -1 or 1)
        exact = exact + p[k]
      end
      assert.are.equal(exact, R.emulate(p, (K + 127) // 128 * 4), "K " .. K)
      local allmax = {}
      for k = 1, K do allmax[k] = set[#set] * set[#set] end -- the worst case: every product the largest
      assert.are.equal(K * set[#set] ^ 2, R.emulate(allmax, (K + 127) // 128 * 4), "K " .. K .. " all max")
    end
  end)

  it("wgmma_cases fp8: products in K order match g:eval, the check refuses wrong outputs", function()
    local n, ne = 0, 0
    -- (scripts/test's sanitizer pass: every third case, gemm_graphs.sample, and as many in
    -- proportion below)
    local all = W.cases()
    local cases = require("gemm_graphs").sample(all, "fp8_wgmma_rule_spec: wgmma_cases", 3)
    for _, c in ipairs(cases) do
      if c.fp8 and not c.name:find("large", 1, true) and not c.name:find("1000x515", 1, true) then
        local want = c.g:eval(c.inputs)
        local wf = want:flat()
        if not c.fp8.epi then
          -- the products of sampled elements sum to g:eval's value
          for _, o in ipairs { 0, #wf - 1, #wf // 3, #wf // 2 + 1 } do
            local t, sum = c.fp8.terms(o), 0
            assert.are.equal(c.fp8.K, #t, c.name)
            for k = 1, #t do sum = sum + t[k] end
            -- (g:eval rounds the quant_dot result to f32 once)
            assert.is_true(math.abs(sum - wf[o + 1]) <= 2 ^ -24 * math.abs(wf[o + 1]) + 1e-30, c.name .. ": element " .. o)
          end
        end
        -- a wrong output (another element's values) fails the check, the right one passes
        local pc = c.perf or "v3:128,256,64,64,256,16"
        local shifted = {}
        for i = 1, #wf do shifted[i] = wf[i % #wf + 1] end
        local bad = kiln.tensor(shifted, "f32", { shape = want.shape })
        assert.is_false((W.check_fp8_wgmma(c, bad, want, pc, 16)), c.name)
        local ok, msg = W.check_fp8_wgmma(c, want, want, pc, 16)
        assert.is_true(ok, c.name .. ": " .. msg)
        if c.fp8.exact then ne = ne + 1 end
        n = n + 1
      end
    end
    assert.is_true(n >= 40 * #cases // #all and ne >= 20 * #cases // #all, ("cases %d, exact %d"):format(n, ne))
  end)
end)
