-- fp8_wgmma_rule.lua — the accumulation of Hopper's fp8 wgmma (wgmma.mma_async m64nNk32
-- .f32.e4m3 / .e5m2), as measured on an H100 (2026-12-06, bench/fp8_accum_probe.lua:
-- C = A @ ones, rows of A built to show the kept bits; bench/RESULTS.md):
--   1 + 2^-s in one k32 instruction            exact for s <= 13, 2^-s dropped for s >= 14
--   [1 in step 1] + [2^-s in step 2]            the same: the f32 accumulator is an addend too
--   1 + 2^-s + 2^-(s+1)                         s = 13 gives 1 + 2^-13: truncated, not rounded
--   1 - 2^-s                                    s >= 14 gives exactly 1: each addend truncated
--                                               toward zero (the sum is not rounded down)
--   31 x 2^-14 + 1 in one instruction           exactly 1: per-addend truncation, no wide sum
-- The rule (M.instr): one k32 instruction has 33 addends, the f32 accumulator and its 32
-- products (exact: an fp8 product has at most 8 significant bits). emax = the largest
-- exponent (floor(log2 |x|)) among the nonzero addends and the instruction's exact result
-- (the GPU suite's random cases showed it: 257x129x16 e4m3fn, products up to 1.75, result
-- 5.59: 3 x 2^-13 lost, exactly the remainders below 2^(2 - 13); e5m2, products up to 3.06,
-- result -9.16: 0.75 x 2^-10 lost, 2^(3 - 13)); every addend is truncated toward
-- zero to a multiple of q = 2^(emax - 13); the truncated addends are summed exactly (the
-- sum of 33 multiples of q below 2^(emax + 1) in magnitude has at most 20 significant bits:
-- exact in f32) and that is the new accumulator. The f16 path (fp8 -> f16, exact; f32 MMA
-- accumulation) is within the f32 summation bound; this is why fp8-compute's
-- gemm-operands=auto takes f16 and the fp8 wgmma is the opt-in gemm-operands=fp8.
--
-- For the device checks of the fp8 wgmma (spec/lua/wgmma_cases.lua):
--   M.emulate(p, ninstr)  the rule applied to the products p[1..K] (the GEMM's K order), in
--                         ninstr instructions of 32 (products past K are zero: the K padding
--                         to the kernel's kPerBlock): the value the model predicts
--   M.bound(p, ninstr)    a bound on |accumulator - sum p| that holds whatever the exact
--                         alignment exponent is, as long as it is at most that of the largest
--                         value the result can reach: per instruction, q <= 2^(E - 13) with E
--                         the exponent of |P| + err + sum |p_i| (P the exact partial sum before it, err
--                         the bound so far); the accumulator loses < min(|P| + err, q), each
--                         product loses (|p| mod q) (exactly that for the true q; the true q
--                         is a power of two <= the bound's, and (|p| mod q') <= (|p| mod q)
--                         for q' <= q)
--   M.ninstr(K, pc)       the number of k32 instructions of a GEMM of K with perf config pc
--   M.exact_set(K)        magnitudes (in both e4m3fn and e5m2) such that random signs and
--                         choices of them give a GEMM the fp8 wgmma computes exactly
--                         (every addend a multiple of the products' granularity g and
--                         K max|p| < 2^14 g, so emax - 13 <= log2 g: nothing is dropped)
local M = {}

M.KEEP = 13 -- bits kept below the leading bit of the largest addend or of the result

-- floor(log2 |x|) of a nonzero finite x, exact
function M.exponent(x)
  x = math.abs(x)
  local e = math.floor(math.log(x, 2))
  while 2.0 ^ e > x do e = e - 1 end
  while 2.0 ^ (e + 1) <= x do e = e + 1 end
  return e
end

local function trunc(x, q)
  local t = math.floor(math.abs(x) / q) * q
  return x < 0 and -t or t
end

-- One k32 instruction: the accumulator acc plus the products p[i0 .. i0 + 31] (nil = 0).
function M.instr(acc, p, i0)
  local big, sum = math.abs(acc), acc
  for i = i0, i0 + 31 do
    local v = p[i]
    if v then
      if math.abs(v) > big then big = math.abs(v) end
      sum = sum + v
    end
  end
  if math.abs(sum) > big then big = math.abs(sum) end -- the result's exponent counts too
  if big == 0 then return 0.0 end
  local q = 2.0 ^ (M.exponent(big) - M.KEEP)
  local s = trunc(acc, q)
  for i = i0, i0 + 31 do
    local v = p[i]
    if v and v ~= 0 then s = s + trunc(v, q) end
  end
  return s
end

function M.emulate(p, ninstr)
  local acc = 0.0
  for j = 0, ninstr - 1 do acc = M.instr(acc, p, 32 * j + 1) end
  return acc
end

function M.bound(p, ninstr)
  local P, err = 0.0, 0.0
  for j = 0, ninstr - 1 do
    local i0 = 32 * j + 1
    local R = math.abs(P) + err
    local big = R -- the largest the result can be: |acc| + sum |p_i| (>= every addend)
    for i = i0, i0 + 31 do
      local v = p[i]
      if v then big = big + math.abs(v) end
    end
    if big > 0 then
      local q = 2.0 ^ (M.exponent(big) - M.KEEP)
      local loss = math.min(R, q)
      for i = i0, i0 + 31 do
        local v = p[i]
        if v and v ~= 0 then
          loss = loss + math.abs(v) % q
          P = P + v
        end
      end
      err = err + loss
    end
  end
  return err
end

-- K padded to the config's kPerBlock (v3:mPerBlock,nPerBlock,kPerBlock,...), in k32 steps.
function M.ninstr(K, pc)
  local f = {}
  for v in tostring(pc):gmatch("%d+") do f[#f + 1] = tonumber(v) end
  local kpb = f[4] -- "v3" is f[1]
  if not kpb or kpb % 32 ~= 0 then error("fp8_wgmma_rule: no kPerBlock (a multiple of 32) in " .. tostring(pc), 2) end
  if f[8] and f[8] > 1 then error("fp8_wgmma_rule: split-K (" .. pc .. ") is not modelled", 2) end
  return (K + kpb - 1) // kpb * kpb // 32
end

-- {magnitudes}, the products' granularity: the largest set of this list whose K max|p| is
-- below 2^14 g (all values multiples of a power of two, so the products are multiples of g)
local SETS = {
  { { 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5 }, 1 / 16 },
  { { 1, 1.5, 2, 3 }, 1 / 4 },
  { { 1, 2, 4 }, 1 },
  { { 1, 2 }, 1 },
  { { 1 }, 1 },
}
function M.exact_set(K)
  for _, s in ipairs(SETS) do
    local m = s[1][#s[1]]
    if K * m * m < 2 ^ 14 * s[2] then return s[1] end
  end
  error("fp8_wgmma_rule: no exact set for K " .. K, 2)
end

return M
