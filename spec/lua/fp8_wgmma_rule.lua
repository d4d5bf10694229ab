-- fp8_wgmma_rule.lua — the accumulation of Hopper's fp8 wgmma (wgmma.mma_async m64nNk32
-- .f32.e4m3 / .e5m2), as measured on an H100 and an H200 (2026-12-06, bench/fp8_accum_probe.lua:
-- C = A @ ones, rows of A built to show the kept bits; bench/RESULTS.md):
--   1 + 2^-s in one k32 instruction            exact for s <= 13, 2^-s dropped for s >= 14
--   [1 in step 1] + [2^-s in step 2]            the same: the f32 accumulator is an addend too
--   1 + 2^-s + 2^-(s+1)                         s = 13 gives 1 + 2^-13: truncated, not rounded
--   1 - 2^-s                                    s >= 14 gives exactly 1: each addend truncated
--                                               toward zero (the sum is not rounded down)
--   31 x 2^-14 + 1 in one instruction           exactly 1: per-addend truncation, no wide sum
-- The rule (M.instr): one k32 instruction has 33 addends, the f32 accumulator and its 32
-- products (exact: an fp8 product has at most 8 significant bits). emax = the largest
-- alignment exponent among the nonzero addends: the accumulator's own exponent
-- (floor(log2 |acc|)), a product's e_a + e_b, the sum of its operands' stored exponents
-- (M.align_exponent: one below the product's own exponent where the significands' product
-- m_a m_b is >= 2). Every addend is truncated toward zero to a multiple of q = 2^(emax - 13);
-- the truncated addends are summed exactly (33 multiples of q below 2^(emax + 2) in magnitude:
-- at most 21 significant bits, exact in f32), and that sum S is truncated toward zero to 14
-- significant bits (a multiple of 2^(floor(log2 |S|) - 13)): the new accumulator.
-- Measured on an H200 (2026-12-06, bench/fp8_promote_probe.lua: 64x64xK GEMMs, K 20 / 32 /
-- 64, e4m3fn and e5m2, both B layouts, with and without a residual, one and two levels, 4
-- trials of fresh random-normal inputs, 10656 sampled elements): this rule reproduces every
-- element bit for bit; the earlier form (the exact result's exponent counted in emax, a
-- product aligned at its own exponent) reproduced 9172 and lost up to 6.95x its bound. The
-- probe rows above cannot tell the two apart (their sums stay within the leading addend's
-- binade and their products' m_a m_b are < 2). The f16 path (fp8 -> f16, exact; f32 MMA
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
--                         for q' <= q), and the sum S's truncation to 14 bits less than
--                         2^(E' - 13) <= q, E' the exponent of |P + sum p_i| + err + the
--                         addends' losses (>= |S|)
--   M.ninstr(K, pc)       the number of k32 instructions of a GEMM of K with perf config pc
--   M.emulate / M.bound take opts {promote = k32 instructions per promotion interval (two
--                         levels: each interval from a zero accumulator, then an f32 add),
--                         ex = the products' alignment exponents (M.align_exponent: the
--                         stored-exponent model of subnormal operands)}
--   M.gemm_emulate(p, K, pc, opts), M.gemm_bound(p, K, pc, opts): the same over the config's
--                         K slices (split-K: M.slices; their results added in f32)
--   M.exact_set(K)        magnitudes (in both e4m3fn and e5m2) such that random signs and
--                         choices of them give a GEMM the fp8 wgmma computes exactly
--                         (every addend a multiple of the products' granularity g and
--                         K max|p| < 2^14 g, so emax - 13 <= log2 g: nothing is dropped)
local M = {}

M.KEEP = 13 -- bits kept below the leading bit of the largest addend and of the sum

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

-- x rounded to the nearest f32 (ties to even: C's conversion)
function M.f32(x) return (string.unpack("f", string.pack("f", x))) end

-- The alignment exponent of the product a * b of two fp8 values of format fmt ("f8e4m3fn",
-- "f8e5m2"), or nil when it is 0: e_a + e_b, each operand m 2^e with e its stored exponent,
-- a subnormal at the format's minimum normal exponent (e4m3fn -6, e5m2 -14) with m < 1, a
-- normal one with 1 <= m < 2. For normal operands that is floor(log2 |a b|), or one less
-- where m_a m_b >= 2 (the H200's random-normal elements: 10656 of 10656 with it); a subnormal
-- operand makes it larger than the product's own exponent (the e4m3fn probe rows, B = 2^-8
-- subnormal: two bits fewer).
M.EMIN = { f8e4m3fn = -6, f8e5m2 = -14 }
function M.align_exponent(a, b, fmt)
  if a == 0 or b == 0 then return nil end
  local emin = M.EMIN[fmt] or error("fp8_wgmma_rule: no format " .. tostring(fmt), 2)
  local function split(x)
    local e = M.exponent(x)
    if e < emin then e = emin end
    return e
  end
  return split(a) + split(b)
end

-- The emax of one instruction (nil: every addend 0): the largest alignment exponent among
-- the nonzero addends (the accumulator's own exponent, products at ex[i] when given:
-- M.align_exponent, else their own).
local function instr_emax(acc, p, i0, ex)
  local e = nil
  if acc ~= 0 then e = M.exponent(acc) end
  for i = i0, i0 + 31 do
    local v = p[i]
    if v and v ~= 0 then
      local x = ex and ex[i] or M.exponent(v)
      if not e or x > e then e = x end
    end
  end
  return e
end

-- One k32 instruction: the accumulator acc plus the products p[i0 .. i0 + 31] (nil = 0);
-- ex: the products' alignment exponents (nil: their own).
function M.instr(acc, p, i0, ex)
  local e = instr_emax(acc, p, i0, ex)
  if not e then return 0.0 end
  local q = 2.0 ^ (e - M.KEEP)
  local s = trunc(acc, q)
  for i = i0, i0 + 31 do
    local v = p[i]
    if v and v ~= 0 then s = s + trunc(v, q) end
  end
  if s == 0 then return 0.0 end
  return trunc(s, 2.0 ^ (M.exponent(s) - M.KEEP)) -- the sum to 14 significant bits
end

-- opts (optional): promote = k32 instructions per promotion interval (the kernel's
-- fp8_promote / 32; nil or 0: one level), ex = the products' alignment exponents.
-- Two-level: each interval of `promote` instructions runs the rule from a zero accumulator,
-- then main = f32(main + interval) (round to nearest), main starting at 0.
function M.emulate(p, ninstr, opts)
  local P, ex = opts and opts.promote or 0, opts and opts.ex
  if P <= 0 then P = ninstr end
  local main = 0.0
  for j0 = 0, ninstr - 1, P do
    local t = 0.0
    for j = j0, math.min(j0 + P, ninstr) - 1 do t = M.instr(t, p, 32 * j + 1, ex) end
    main = j0 == 0 and t or M.f32(main + t)
  end
  return main
end

-- the one-level bound over instructions [j0, j1) from a zero accumulator; returns the bound
-- and sum |p| over them
local function bound_range(p, j0, j1, ex)
  local P, err, A = 0.0, 0.0, 0.0
  for j = j0, j1 - 1 do
    local i0 = 32 * j + 1
    local R = math.abs(P) + err
    local big, emx = R, nil -- the largest the result can be: |acc| + sum |p_i| (>= every addend)
    for i = i0, i0 + 31 do
      local v = p[i]
      if v and v ~= 0 then
        big = big + math.abs(v)
        if ex and ex[i] and (not emx or ex[i] > emx) then emx = ex[i] end
      end
    end
    if big > 0 then
      local E = M.exponent(big)
      if emx and emx > E then E = emx end -- a product aligned above its own exponent
      local q = 2.0 ^ (E - M.KEEP)
      local loss = math.min(R, q) -- the accumulator
      for i = i0, i0 + 31 do
        local v = p[i]
        if v and v ~= 0 then
          loss = loss + math.abs(v) % q
          P = P + v
          A = A + math.abs(v)
        end
      end
      -- the sum's truncation to 14 bits: |S| <= |P| + err + loss (P now the exact partial sum
      -- after the instruction), so less than 2^(exponent of that - 13), and <= q
      local top = math.abs(P) + err + loss
      if top > 0 then loss = loss + math.min(q, 2.0 ^ (M.exponent(top) - M.KEEP)) end
      err = err + loss
    end
  end
  return err, A
end

function M.bound(p, ninstr, opts)
  local P, ex = opts and opts.promote or 0, opts and opts.ex
  if P <= 0 then P = ninstr end
  local err, A = 0.0, 0.0
  for j0 = 0, ninstr - 1, P do
    local e, a = bound_range(p, j0, math.min(j0 + P, ninstr), ex)
    err, A = err + e, A + a
    if j0 > 0 then err = err + 2 ^ -24 * (A + err) end -- the f32 add: |main + t| <= A + err
  end
  return err
end

-- The closed-form bound of the two-level accumulation (docs/ARCHITECTURE.md), normal
-- operands: K products, intervals of P (a multiple of 32), A = sum |p|, u = 2^-24. An
-- interval (A_j its sum |p|) has P products and P/32 - 1 accumulators as addends, each
-- truncated by less than q_j = 2^(emax - 13), and P/32 sums truncated to 14 bits, each by
-- less than q_j too, and emax <= log2 A_j (every addend, partial and result of the interval
-- is at most A_j in magnitude), so it loses less than c1 A_j, c1 = (P + P/16 - 1) 2^-13;
-- the n - 1 f32 adds (n = ceil(K/P)) round by at most
-- u (A + err) each. So |err| <= c A with c = (c1 + (n - 1) u) / (1 - (n - 1) u).
function M.bound_closed(K, P)
  local n, u = (K + P - 1) // P, 2 ^ -24
  local c1 = (P + P // 16 - 1) * 2 ^ -13
  return (c1 + (n - 1) * u) / (1 - (n - 1) * u)
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

-- The K slices of a GEMM of K with perf config pc, split-K included: {off, ninstr} per
-- slice (products p[off + 1 .. off + 32 ninstr], the slice padded to the config's
-- kPerBlock), as rock-gemm-to-gridwise splits: Kc = ceil(ceil(K / S) / kPerBlock) kPerBlock.
function M.slices(K, pc)
  local f = {}
  for v in tostring(pc):gmatch("%d+") do f[#f + 1] = tonumber(v) end
  local kpb, S = f[4], f[8] or 1
  if not kpb or kpb % 32 ~= 0 then error("fp8_wgmma_rule: no kPerBlock (a multiple of 32) in " .. tostring(pc), 2) end
  if S <= 1 then return { { 0, (K + kpb - 1) // kpb * kpb // 32 } } end
  local kc = ((K + S - 1) // S + kpb - 1) // kpb * kpb
  local r = {}
  for off = 0, K - 1, kc do r[#r + 1] = { off, kc // 32 } end
  return r
end

local function sub(t, off, n)
  if not t then return nil end
  local r = {}
  for i = 1, n do r[i] = t[off + i] end
  return r
end

-- The GEMM: each slice by M.emulate (opts: promote, ex), the slices' results added in f32 in
-- slice order (split-K's atomic adds onto the zero-filled output: exact for 2 slices, whose
-- one rounding commutes; more slices add in any order: M.gemm_bound covers them).
function M.gemm_emulate(p, K, pc, opts)
  local out = 0.0
  for j, sl in ipairs(M.slices(K, pc)) do
    local o = { promote = opts and opts.promote, ex = sub(opts and opts.ex, sl[1], 32 * sl[2]) }
    local v = M.emulate(sub(p, sl[1], 32 * sl[2]), sl[2], o)
    out = j == 1 and v or M.f32(out + v)
  end
  return out
end
function M.gemm_bound(p, K, pc, opts)
  local err, A = 0.0, 0.0
  for j, sl in ipairs(M.slices(K, pc)) do
    local q = sub(p, sl[1], 32 * sl[2])
    err = err + M.bound(q, sl[2], { promote = opts and opts.promote, ex = sub(opts and opts.ex, sl[1], 32 * sl[2]) })
    for i = 1, 32 * sl[2] do if q[i] then A = A + math.abs(q[i]) end end
    if j > 1 then err = err + 2 ^ -24 * (A + err) end
  end
  return err
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
