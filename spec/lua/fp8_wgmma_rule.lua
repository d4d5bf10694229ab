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

-- x rounded to the nearest f32 (ties to even: C's conversion)
function M.f32(x) return (string.unpack("f", string.pack("f", x))) end

-- The alignment exponent of the product a * b of two fp8 values of format fmt ("f8e4m3fn",
-- "f8e5m2"), or nil when it is 0. The stored-exponent model of subnormal operands (the
-- e4m3fn probe rows, B = 2^-8 subnormal: two bits fewer): each operand is m 2^e with e its
-- stored exponent, a subnormal at the format's minimum normal exponent (e4m3fn -6, e5m2 -14)
-- with m < 1, a normal one with 1 <= m < 2; the product aligns as
-- e_a + e_b + (1 if m_a m_b >= 2); for normal operands that is floor(log2 |a b|), the measured
-- rule; a subnormal operand makes it larger than the product's own exponent.
M.EMIN = { f8e4m3fn = -6, f8e5m2 = -14 }
function M.align_exponent(a, b, fmt)
  if a == 0 or b == 0 then return nil end
  local emin = M.EMIN[fmt] or error("fp8_wgmma_rule: no format " .. tostring(fmt), 2)
  local function split(x)
    local e = M.exponent(x)
    if e < emin then e = emin end
    return e, math.abs(x) / 2.0 ^ e
  end
  local ea, ma = split(a)
  local eb, mb = split(b)
  return ea + eb + (ma * mb >= 2 and 1 or 0)
end

-- The emax of one instruction (nil: every addend 0): the largest exponent among the nonzero
-- addends (products at ex[i] when given: M.align_exponent) and the exact result.
local function instr_emax(acc, p, i0, ex)
  local e, sum = nil, acc
  if acc ~= 0 then e = M.exponent(acc) end
  for i = i0, i0 + 31 do
    local v = p[i]
    if v and v ~= 0 then
      local x = ex and ex[i] or M.exponent(v)
      if not e or x > e then e = x end
      sum = sum + v
    end
  end
  if sum ~= 0 then
    local x = M.exponent(sum) -- the result's exponent counts too
    if not e or x > e then e = x end
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
  return s
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
      local loss = math.min(R, q)
      for i = i0, i0 + 31 do
        local v = p[i]
        if v and v ~= 0 then
          loss = loss + math.abs(v) % q
          P = P + v
          A = A + math.abs(v)
        end
      end
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
-- truncated by less than q_j = 2^(emax - 13), and emax <= log2 A_j (every addend, partial and
-- result of the interval is at most A_j in magnitude), so it loses less than c1 A_j,
-- c1 = (P + P/32 - 1) 2^-13; the n - 1 f32 adds (n = ceil(K/P)) round by at most
-- u (A + err) each. So |err| <= c A with c = (c1 + (n - 1) u) / (1 - (n - 1) u).
function M.bound_closed(K, P)
  local n, u = (K + P - 1) // P, 2 ^ -24
  local c1 = (P + P // 32 - 1) * 2 ^ -13
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
