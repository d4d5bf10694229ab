-- eval_spec.lua — the reference evaluator through g:eval: every graph op on small
-- hand-computed cases and identities, a naive Lua implementation cross-check on random
-- shapes (conv, dot, reductions, softmax, views), layouts, f16, and bad eval inputs.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local line, this_file, fails, has = helper.line, helper.this_file, helper.fails, helper.has

-- ---------------------------------------------------------------- helpers ----
local function numel(shape) local n = 1; for _, d in ipairs(shape) do n = n * d end; return n end
local function row_strides(shape)
  local s, acc = {}, 1
  for i = #shape, 1, -1 do s[i] = acc; acc = acc * shape[i] end
  return s
end
local each_index = helper.each_index   -- fn(idx (0-based, reused), k (1-based flat position))
local function at(flat, shape, idx) -- idx 0-based
  local s, f = row_strides(shape), 1
  for i = 1, #shape do f = f + idx[i] * s[i] end
  return flat[f]
end
-- flat lists close within rel/abs tolerance
local function assert_close(want, got, rtol, atol, what)
  rtol, atol = rtol or 1e-5, atol or 1e-5
  assert.are.equal(#want, #got, (what or "") .. ": lengths differ")
  for i = 1, #want do
    local w, g = want[i], got[i]
    if math.abs(w - g) > atol + rtol * math.abs(w) then
      error(("%s: element %d: want %.9g got %.9g"):format(what or "mismatch", i, w, g), 2)
    end
  end
end
local function eval1(build, inputs)
  local g = kiln.graph("t")
  local vals = {}
  for i, inp in ipairs(inputs) do vals[i] = g:param(inp.name, inp.t.shape, inp.t.dtype, { strides = inp.t.strides }) end
  g:output(build(g, table.unpack(vals)))
  local feed = {}
  for _, inp in ipairs(inputs) do feed[inp.name] = inp.t end
  return g:eval(feed)
end

-- Naive convolution over logical NCHW / KCYX flat lists.
local function naive_conv(x, w, p)
  local N, C, H, W = table.unpack(x.shape)
  local K, Cg, Y, X = table.unpack(w.shape)
  local sh, sw = p.stride[1], p.stride[2]
  local dh, dw = p.dil[1], p.dil[2]
  local pt, pb, pl, pr = table.unpack(p.pad)
  local G = p.groups
  local Ho = (H + pt + pb - dh * (Y - 1) - 1) // sh + 1
  local Wo = (W + pl + pr - dw * (X - 1) - 1) // sw + 1
  local xf, wf, out = x:flat(), w:flat(), {}
  local Kg = K // G
  for n = 0, N - 1 do
    for k = 0, K - 1 do
      local g = k // Kg
      for ho = 0, Ho - 1 do
        for wo = 0, Wo - 1 do
          local s = 0
          for c = 0, Cg - 1 do
            for y = 0, Y - 1 do
              local hi = ho * sh + y * dh - pt
              if hi >= 0 and hi < H then
                for xx = 0, X - 1 do
                  local wi = wo * sw + xx * dw - pl
                  if wi >= 0 and wi < W then
                    s = s + xf[((n * C + g * Cg + c) * H + hi) * W + wi + 1] * wf[((k * Cg + c) * Y + y) * X + xx + 1]
                  end
                end
              end
            end
          end
          out[#out + 1] = s
        end
      end
    end
  end
  return out, { N, K, Ho, Wo }
end

-- Naive batched matmul: a [Ba,M,K] (or [Ba,K,M] if ta), b [Bb,K,N] (or [Bb,N,K] if tb),
-- batch dims broadcast (Ba, Bb in {1, B}).
local function naive_dot(a, b, ta, tb)
  local af, bf = a:flat(), b:flat()
  local Ba, Bb = a.shape[1], b.shape[1]
  local M = ta and a.shape[3] or a.shape[2]
  local K = ta and a.shape[2] or a.shape[3]
  local N = tb and b.shape[2] or b.shape[3]
  local B = math.max(Ba, Bb)
  local out = {}
  for bi = 0, B - 1 do
    local ia, ib = Ba == 1 and 0 or bi, Bb == 1 and 0 or bi
    for m = 0, M - 1 do
      for n = 0, N - 1 do
        local s = 0
        for k = 0, K - 1 do
          local av = ta and at(af, a.shape, { ia, k, m }) or at(af, a.shape, { ia, m, k })
          local bv = tb and at(bf, b.shape, { ib, n, k }) or at(bf, b.shape, { ib, k, n })
          s = s + av * bv
        end
        out[#out + 1] = s
      end
    end
  end
  return out, { B, M, N }
end

-- Naive reduction over axes (0-based list), keepdims.
local function naive_reduce(t, axes, kind, keep)
  local shape, f = t.shape, t:flat()
  local red = {}
  for _, a in ipairs(axes) do red[a + 1] = true end
  local oshape = {}
  for i, d in ipairs(shape) do
    if not red[i] then oshape[#oshape + 1] = d elseif keep then oshape[#oshape + 1] = 1 end
  end
  local acc, cnt = {}, {}
  each_index(shape, function(idx, k)
    local oi = {}
    for i = 1, #shape do
      if not red[i] then oi[#oi + 1] = idx[i] elseif keep then oi[#oi + 1] = 0 end
    end
    local s, o = row_strides(oshape), 1
    for i = 1, #oshape do o = o + oi[i] * s[i] end
    local v = f[k]
    if acc[o] == nil then acc[o], cnt[o] = v, 1
    elseif kind == "max" then acc[o] = math.max(acc[o], v); cnt[o] = cnt[o] + 1
    else acc[o] = acc[o] + v; cnt[o] = cnt[o] + 1 end
  end)
  local out = {}
  for o = 1, numel(oshape) do out[o] = kind == "mean" and acc[o] / cnt[o] or acc[o] end
  return out, oshape
end

local seed = 1000
local function rand(shape, dtype, opts)
  seed = seed + 1
  local o = { seed = seed }
  for k, v in pairs(opts or {}) do o[k] = v end
  return kiln.rand(shape, dtype or "f32", o)
end
local rng = 12345
local function randint(lo, hi) -- deterministic LCG so failures reproduce
  rng = (rng * 1103515245 + 12345) % 2147483648
  return lo + rng % (hi - lo + 1)
end

-- ------------------------------------------------------------ element-wise ---
describe("element-wise ops (hand-computed)", function()
  local X = kiln.tensor { { 1, -2 }, { 3, -4 } }
  local Y = kiln.tensor { { 2, 2 }, { 0.5, -1 } }
  local function bin(op)
    return eval1(function(g, x, y) return g[op](g, x, y) end, { { name = "x", t = X }, { name = "y", t = Y } }):totable()
  end
  local function un(op, t)
    return eval1(function(g, x) return g[op](g, x) end, { { name = "x", t = t or X } })
  end

  it("binary ops", function()
    assert.are.same({ { 3, 0 }, { 3.5, -5 } }, bin("add"))
    assert.are.same({ { -1, -4 }, { 2.5, -3 } }, bin("sub"))
    assert.are.same({ { 2, -4 }, { 1.5, 4 } }, bin("mul"))
    assert.are.same({ { 0.5, -1 }, { 6, 4 } }, bin("div"))
    assert.are.same({ { 2, 2 }, { 3, -1 } }, bin("max"))
    assert.are.same({ { 1, -2 }, { 0.5, -4 } }, bin("min"))
    local p = eval1(function(g, x, y) return x ^ y end,
                    { { name = "x", t = kiln.tensor { 2, 9, 4 } }, { name = "y", t = kiln.tensor { 3, 0.5, -1 } } })
    assert.are.same({ 8, 3, 0.25 }, p:totable())
  end)

  it("unary ops", function()
    assert.are.same({ { -1, 2 }, { -3, 4 } }, un("neg"):totable())
    assert.are.same({ { 1, 2 }, { 3, 4 } }, un("abs"):totable())
    assert.are.same({ { 1, 0 }, { 3, 0 } }, un("relu"):totable())
    local P = kiln.tensor { 0.25, 1, 4, 9 }
    local fns = {
      exp = math.exp, log = math.log, sqrt = math.sqrt, rsqrt = function(v) return 1 / math.sqrt(v) end,
      tanh = function(v) return (math.exp(v) - math.exp(-v)) / (math.exp(v) + math.exp(-v)) end,
      sigmoid = function(v) return 1 / (1 + math.exp(-v)) end,
    }
    for op, f in pairs(fns) do
      local want = {}
      for i, v in ipairs(P:flat()) do want[i] = f(v) end
      assert_close(want, un(op, P):flat(), 1e-6, 1e-7, op)
    end
  end)

  it("clip, where and convert", function()
    local c = eval1(function(g, x) return x:clip(-1.5, 2) end, { { name = "x", t = X } })
    assert.are.same({ { 1, -1.5 }, { 2, -1.5 } }, c:totable())
    local C = kiln.tensor({ { 1, 0 }, { 0, 1 } }, "i8")
    local w = eval1(function(g, cond, x, y) return g:where(cond, x, y) end,
                    { { name = "c", t = C }, { name = "x", t = X }, { name = "y", t = Y } })
    assert.are.same({ { 1, 2 }, { 0.5, -4 } }, w:totable())
    local w2 = eval1(function(g, cond, x) return g:where(cond, x, 0) end, { { name = "c", t = C }, { name = "x", t = X } })
    assert.are.same({ { 1, 0 }, { 0, -4 } }, w2:totable())
    local F = kiln.tensor { 2.7, -2.7, 1 / 3 }
    local i = eval1(function(g, x) return x:convert("i32") end, { { name = "x", t = F } })
    assert.are.equal("i32", i.dtype)
    assert.are.same({ 2, -2, 0 }, i:totable())
    local h = eval1(function(g, x) return x:convert("f16") end, { { name = "x", t = F } })
    assert.are.equal("f16", h.dtype)
    assert.are.equal(0.333251953125, h:get(2))
  end)

  it("broadcasts numpy-style", function()
    local a = kiln.tensor { { 1 }, { 2 } }         -- [2,1]
    local b = kiln.tensor { { 10, 20, 30 } }       -- [1,3]
    local r = eval1(function(g, x, y) return x * y end, { { name = "a", t = a }, { name = "b", t = b } })
    assert.are.same({ { 10, 20, 30 }, { 20, 40, 60 } }, r:totable())
    local m = kiln.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    local v = kiln.tensor { 1, 0, -1 }
    assert.are.same({ { 2, 2, 2 }, { 5, 5, 5 } },
      eval1(function(g, x, y) return x + y end, { { name = "m", t = m }, { name = "v", t = v } }):totable())
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, eval1(function(g, x) return x - 1 end, { { name = "m", t = m } }):totable())
    assert.are.same({ { 1, 0.5, 1 / 3 }, { 0.25, 0.2, 1 / 6 } },
      (function()
        local r2 = eval1(function(g, x) return 1 / x end, { { name = "m", t = m:astype("f64") } })
        return r2:totable()
      end)())
    local p = rand { 4, 1, 3 }
    local q = rand { 2, 1 }
    local r3 = eval1(function(g, x, y) return x + y end, { { name = "p", t = p }, { name = "q", t = q } })
    assert.are.same({ 4, 2, 3 }, r3.shape)
    local want = {}
    each_index({ 4, 2, 3 }, function(idx, k)
      want[k] = p:get { idx[1], 0, idx[3] } + q:get { idx[2], 0 }
    end)
    assert_close(want, r3:flat(), 1e-6, 1e-6, "broadcast add")
  end)
end)

-- -------------------------------------------------------------------- conv ---
describe("conv", function()
  it("a one-hot filter reproduces a (strided, dilated, padded) slice", function()
    local x = rand { 1, 1, 6, 7 }
    for ky = 0, 2 do
      for kx = 0, 2 do
        local w = kiln.zeros { 1, 1, 3, 3 }
        w:set({ 0, 0, ky, kx }, 1)
        local r = eval1(function(g, a, b) return g:conv(a, b) end, { { name = "x", t = x }, { name = "w", t = w } })
        assert.are.same({ 1, 1, 4, 5 }, r.shape)
        for i = 0, 3 do for j = 0, 4 do
          assert.are.equal(x:get { 0, 0, i + ky, j + kx }, r:get { 0, 0, i, j })
        end end
        local s = eval1(function(g, a, b) return g:conv(a, b, { stride = 2, dilation = { 1, 2 } }) end,
                        { { name = "x", t = x }, { name = "w", t = w } })
        for i = 0, s.shape[3] - 1 do for j = 0, s.shape[4] - 1 do
          assert.are.equal(x:get { 0, 0, 2 * i + ky, 2 * j + 2 * kx }, s:get { 0, 0, i, j })
        end end
        local p = eval1(function(g, a, b) return g:conv(a, b, { padding = 1 }) end, { { name = "x", t = x }, { name = "w", t = w } })
        assert.are.same({ 1, 1, 6, 7 }, p.shape)
        for i = 0, 5 do for j = 0, 6 do
          local hi, wi = i + ky - 1, j + kx - 1
          local want = (hi >= 0 and hi < 6 and wi >= 0 and wi < 7) and x:get { 0, 0, hi, wi } or 0
          assert.are.equal(want, p:get { 0, 0, i, j })
        end end
      end
    end
  end)

  it("a permutation of channels as a 1x1 filter permutes channels", function()
    local x = rand { 2, 3, 4, 4 }
    local perm = { 2, 0, 1 }
    local w = kiln.zeros { 3, 3, 1, 1 }
    for k = 0, 2 do w:set({ k, perm[k + 1], 0, 0 }, 1) end
    local r = eval1(function(g, a, b) return g:conv(a, b) end, { { name = "x", t = x }, { name = "w", t = w } })
    each_index({ 2, 3, 4, 4 }, function(idx)
      assert.are.equal(x:get { idx[1], perm[idx[2] + 1], idx[3], idx[4] }, r:get(idx))
    end)
  end)

  it("matches a naive Lua convolution on random configurations, NCHW and NHWC alike", function()
    for trial = 1, 16 do
      local G = randint(1, 2)
      local C, K = G * randint(1, 3), G * randint(1, 3)
      local Y, X = randint(1, 3), randint(1, 3)
      local p = { stride = { randint(1, 2), randint(1, 2) }, dil = { randint(1, 2), randint(1, 2) },
                  pad = { randint(0, 2), randint(0, 1), randint(0, 1), randint(0, 2) }, groups = G }
      local H = randint(1, 6) + (Y - 1) * p.dil[1]
      local W = randint(1, 6) + (X - 1) * p.dil[2]
      local N = randint(1, 2)
      local x, w = rand { N, C, H, W }, rand { K, C // G, Y, X }
      local want, oshape = naive_conv(x, w, p)
      local opts = { stride = p.stride, dilation = p.dil, padding = p.pad, groups = G }
      local r = eval1(function(g, a, b) return g:conv(a, b, opts) end, { { name = "x", t = x }, { name = "w", t = w } })
      assert.are.same(oshape, r.shape)
      assert_close(want, r:flat(), 1e-5, 1e-5, "conv trial " .. trial)
      local xn = x:as_layout("NHWC")
      local rn = eval1(function(g, a, b) return g:conv(a, b, opts) end, { { name = "x", t = xn }, { name = "w", t = w } })
      local s = rn.shape
      if xn.layout == "NHWC" and s[1] > 1 and s[2] > 1 and s[3] * s[4] > 1 then assert.are.equal("NHWC", rn.layout) end
      assert_close(r:flat(), rn:flat(), 1e-6, 1e-6, "conv NHWC trial " .. trial)
    end
  end)
end)

-- --------------------------------------------------------------------- dot ---
describe("dot", function()
  it("hand-computed 2x2", function()
    local r = eval1(function(g, a, b) return g:dot(a, b) end,
                    { { name = "a", t = kiln.tensor { { 1, 2 }, { 3, 4 } } }, { name = "b", t = kiln.tensor { { 5, 6 }, { 7, 8 } } } })
    assert.are.same({ { 19, 22 }, { 43, 50 } }, r:totable())
  end)

  it("matches a naive Lua matmul on random shapes, transposes and batches", function()
    for trial = 1, 20 do
      local B, M, K, N = randint(1, 3), randint(1, 9), randint(1, 9), randint(1, 9)
      local ta, tb = randint(0, 1) == 1, randint(0, 1) == 1
      local Ba = randint(0, 2) == 0 and 1 or B
      local Bb = (Ba == 1 or randint(0, 2) == 0) and B or (randint(0, 1) == 0 and 1 or B)
      local a = rand(ta and { Ba, K, M } or { Ba, M, K })
      local b = rand(tb and { Bb, N, K } or { Bb, K, N })
      local want, oshape = naive_dot(a, b, ta, tb)
      local r = eval1(function(g, x, y) return g:dot(x, y, { transpose_a = ta, transpose_b = tb }) end,
                      { { name = "a", t = a }, { name = "b", t = b } })
      assert.are.same(oshape, r.shape)
      assert_close(want, r:flat(), 1e-5, 1e-5, "dot trial " .. trial)
    end
  end)
end)

-- -------------------------------------------------------- reduce / softmax ---
describe("reductions and softmax", function()
  it("hand-computed", function()
    local t = kiln.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
    local function red(f) return eval1(f, { { name = "t", t = t } }):totable() end
    assert.are.same({ 6, 15 }, red(function(g, x) return x:sum { 1 } end))
    assert.are.same({ 5, 7, 9 }, red(function(g, x) return x:sum { 0 } end))
    assert.are.same(21, red(function(g, x) return x:sum() end))
    assert.are.same({ { 3 }, { 6 } }, red(function(g, x) return x:reduce_max({ 1 }, true) end))
    assert.are.same({ 2.5, 3.5, 4.5 }, red(function(g, x) return x:mean { 0 } end))
  end)

  it("match a naive Lua reduction on random shapes and axes", function()
    for trial = 1, 12 do
      local rank = randint(1, 4)
      local shape = {}
      for i = 1, rank do shape[i] = randint(1, 5) end
      local axes = {}
      for i = 0, rank - 1 do if randint(0, 1) == 1 then axes[#axes + 1] = i end end
      if #axes == 0 then axes[1] = randint(0, rank - 1) end
      local keep = randint(0, 1) == 1
      local t = rand(shape)
      for _, kind in ipairs { "sum", "max", "mean" } do
        local want, oshape = naive_reduce(t, axes, kind, keep)
        local r = eval1(function(g, x) return g["reduce_" .. kind](g, x, axes, keep) end, { { name = "t", t = t } })
        assert.are.same(oshape, r.shape)
        assert_close(want, r:flat(), 1e-5, 1e-6, kind .. " trial " .. trial)
      end
    end
  end)

  it("softmax rows sum to 1 and match a naive softmax", function()
    local t = rand({ 5, 7 }, "f32", { dist = "normal" })
    local r = eval1(function(g, x) return x:softmax() end, { { name = "t", t = t } })
    local c = eval1(function(g, x) return x:softmax(0) end, { { name = "t", t = t } })
    for i = 0, 4 do
      local s, mx = 0, -math.huge
      for j = 0, 6 do mx = math.max(mx, t:get { i, j }) end
      local den = 0
      for j = 0, 6 do den = den + math.exp(t:get { i, j } - mx) end
      for j = 0, 6 do
        local v = r:get { i, j }
        s = s + v
        assert.is_true(math.abs(v - math.exp(t:get { i, j } - mx) / den) < 1e-6)
        assert.is_true(v > 0)
      end
      assert.is_true(math.abs(s - 1) < 1e-5)
    end
    for j = 0, 6 do
      local s = 0
      for i = 0, 4 do s = s + c:get { i, j } end
      assert.is_true(math.abs(s - 1) < 1e-5)
    end
  end)
end)

-- -------------------------------------------------------------- data movement --
describe("transpose, reshape, broadcast, slice, concat", function()
  it("match naive index arithmetic", function()
    local t = rand { 2, 3, 4 }
    local tr = eval1(function(g, x) return x:transpose { 2, 0, 1 } end, { { name = "t", t = t } })
    assert.are.same({ 4, 2, 3 }, tr.shape)
    each_index(tr.shape, function(i) assert.are.equal(t:get { i[2], i[3], i[1] }, tr:get(i)) end)
    local rs = eval1(function(g, x) return x:reshape { 4, 6 } end, { { name = "t", t = t } })
    assert.are.same(t:flat(), rs:flat())
    assert.are.same({ 4, 6 }, rs.shape)
    local b = eval1(function(g, x) return x:slice(1, 0, 1):broadcast { 5, 2, 3, 4 } end, { { name = "t", t = t } })
    assert.are.same({ 5, 2, 3, 4 }, b.shape)
    each_index(b.shape, function(i) assert.are.equal(t:get { i[2], 0, i[4] }, b:get(i)) end)
    local s = eval1(function(g, x) return x:slice({ 1, 0, 1 }, { 2, 3, 4 }, { 1, 2, 2 }) end, { { name = "t", t = t } })
    assert.are.same({ 1, 2, 2 }, s.shape)
    each_index(s.shape, function(i) assert.are.equal(t:get { 1 + i[1], 2 * i[2], 1 + 2 * i[3] }, s:get(i)) end)
    local u = rand { 2, 1, 4 }
    local c = eval1(function(g, x, y) return g:concat({ x, y, x }, 1) end, { { name = "t", t = t }, { name = "u", t = u } })
    assert.are.same({ 2, 7, 4 }, c.shape)
    each_index(c.shape, function(i)
      local want = i[2] < 3 and t:get { i[1], i[2], i[3] } or i[2] == 3 and u:get { i[1], 0, i[3] } or t:get { i[1], i[2] - 4, i[3] }
      assert.are.equal(want, c:get(i))
    end)
  end)
end)

-- --------------------------------------------------------- layouts and dtypes --
describe("layouts and dtypes", function()
  it("a graph over NHWC params gives the same logical result as over NCHW", function()
    local function build(layout)
      local g = kiln.graph("l")
      local x = g:param("x", { 2, 3, 5, 5 }, "f32", { layout = layout })
      local w = g:param("w", { 4, 3, 3, 3 }, "f32")
      local b = g:param("b", { 1, 4, 1, 1 }, "f32")
      g:output((g:conv(x, w, { padding = 1 }) + b):relu():sum { 1 })
      return g
    end
    local x, w, b = rand { 2, 3, 5, 5 }, rand { 4, 3, 3, 3 }, rand { 1, 4, 1, 1 }
    local r1 = build("NCHW"):eval { x = x, w = w, b = b }
    local r2 = build("NHWC"):eval { x = x:as_layout("NHWC"), w = w, b = b }
    assert_close(r1:flat(), r2:flat(), 1e-6, 1e-6, "NHWC vs NCHW")
  end)

  it("f16 graphs stay close to the f32 result", function()
    local a, b = rand { 8, 16 }, rand { 16, 8 }
    local r32 = eval1(function(g, x, y) return g:dot(x, y):tanh() end, { { name = "a", t = a }, { name = "b", t = b } })
    local r16 = eval1(function(g, x, y) return g:dot(x, y):tanh() end,
                      { { name = "a", t = a:astype("f16") }, { name = "b", t = b:astype("f16") } })
    assert.are.equal("f16", r16.dtype)
    assert.is_true((kiln.allclose(r16, r32:astype("f16"), { rtol = 1e-2, atol = 1e-2 })))
  end)
end)

-- ------------------------------------------------------------- bad inputs ---
describe("bad eval inputs", function()
  local g, pline
  before_each(function()
    g = kiln.graph("in")
    pline = line() + 1
    local x = g:param("x", { 2, 3, 4, 5 }, "f32", { layout = "NHWC" })
    g:output(x:relu())
  end)
  local good = function() return kiln.zeros({ 2, 3, 4, 5 }, "f32", { layout = "NHWC" }) end

  it("missing, unknown, duplicate-free names and non-tensors", function()
    local l = line() + 1
    local e = fails(function() g:eval {} end)
    has(e, this_file() .. ":" .. l .. ": error: eval:")
    has(e, "missing input 'x'")
    has(e, this_file() .. ":" .. pline .. ":")
    e = fails(function() g:eval { x = good(), y = good() } end)
    has(e, "eval: unknown input 'y' (params: x)")
    has(fails(function() g:eval { x = 1 } end), "input 'x' must be a kiln.tensor")
    has(fails(function() g:eval { good() } end), "given by param name")
    has(fails(function() g:eval(nil) end), "inputs must be a table")
    local g2 = kiln.graph("noout")
    g2:param("x", { 1 })
    has(fails(function() g2:eval { x = kiln.zeros { 1 } } end), "no outputs")
  end)

  it("wrong shape, dtype or layout (naming both layouts)", function()
    has(fails(function() g:eval { x = kiln.zeros({ 2, 3, 5, 4 }, "f32", { layout = "NHWC" }) } end), "has shape [2,3,5,4], the param expects [2,3,4,5]")
    has(fails(function() g:eval { x = kiln.zeros({ 2, 3, 4, 5 }, "f16", { layout = "NHWC" }) } end), "has dtype f16, the param expects f32")
    local e = fails(function() g:eval { x = kiln.zeros { 2, 3, 4, 5 } } end)
    has(e, "row_major")
    has(e, "strides=[60,1,15,3]")
    has(e, "graph.param")
    -- the right layout works
    local r = g:eval { x = good() }
    assert.are.same({ 2, 3, 4, 5 }, r.shape)
  end)
end)
