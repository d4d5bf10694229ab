-- view_spec.lua — kiln.view from Lua: builders (each hand-checked by evaluation),
-- compose / invert / simplify properties on seeded random view stacks, vector lengths
-- checked by brute force, the text form and #view attributes, kiln.conv_views against a
-- direct convolution, and bad input.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local line, this_file, fails, has = helper.line, helper.this_file, helper.fails, helper.has

local rng = 4242
local function randint(lo, hi)
  rng = (rng * 1103515245 + 12345) % 2147483648
  return lo + (rng >> 4) % (hi - lo + 1)
end

-- every upper coordinate of v (row-major), fn(coords copy)
local function each_coord(v, fn)
  helper.each_index(v.shape, function(c) fn({ table.unpack(c) }) end)
end

describe("kiln.view builders", function()
  local v
  before_each(function() v = kiln.view { shape = { 4, 6 }, names = { "a", "b" } } end)

  it("identity", function()
    assert.are.same({ 4, 6 }, v.shape)
    assert.are.same({ 4, 6 }, v.lower_shape)
    assert.are.same({ "a", "b" }, v.names)
    assert.are.equal(2, v.rank)
    assert.are.equal(24, v.numel)
    local lo, ok = v:eval { 3, 5 }
    assert.are.same({ 3, 5 }, lo)
    assert.is_true(ok)
    assert.are.same({ "d0", "d1" }, kiln.view({ 2, 3 }).names)
  end)

  it("pad and slice", function()
    local p = v:pad { a = { 1, 2 } }
    assert.are.same({ 7, 6 }, p.shape)
    local lo, ok = p:eval { 1, 2 }
    assert.are.same({ 0, 2 }, lo); assert.is_true(ok)
    local _, ok0 = p:eval { 0, 2 }
    assert.is_false(ok0)
    local _, ok6 = p:eval { 5, 0 }
    assert.is_false(ok6)
    assert.are.same({ "a" }, p:invalid_dims())
    local p2 = v:pad({ "a", "b" }, { 0, 0, 1, 1 })
    assert.are.same({ 4, 8 }, p2.shape)
    local s = v:slice { b = { 1, 4 } }
    assert.are.same({ 4, 3 }, s.shape)
    lo = s:eval { 2, 2 }
    assert.are.same({ 2, 3 }, lo)
    assert.are.same({}, s:invalid_dims())
  end)

  it("unmerge, merge, reshape", function()
    local u = v:unmerge("b", { "b0", "b1" }, { 2, 3 })
    assert.are.same({ 4, 2, 3 }, u.shape)
    assert.are.same({ "a", "b0", "b1" }, u.names)
    assert.are.same({ 1, 5 }, (u:eval { 1, 1, 2 }))
    local m = v:merge("m", { "a", "b" })
    assert.are.same({ 24 }, m.shape)
    assert.are.same({ 3, 1 }, (m:eval { 19 }))
    local m2 = v:merge { name = "m", from = { "b", "a" } } -- b major
    assert.are.same({ 1, 3 }, (m2:eval { 13 }))           -- 13 = 3*4 + 1 -> b=3, a=1
    local r = v:reshape { 3, 8 }
    assert.are.same({ 3, 8 }, r.shape)
    each_coord(r, function(c)
      local flat = c[1] * 8 + c[2]
      assert.are.same({ flat // 6, flat % 6 }, (r:eval(c)))
    end)
    assert.are.same({ "x", "y" }, v:reshape({ 2, 12 }, { "x", "y" }).names)
  end)

  it("embed (the conv window), broadcast, add_dim, const_dim", function()
    local e = kiln.view({ shape = { 10 }, names = { "hi" } }):embed("hi", { "y", "ho" }, { 3, 4 }, { 2, 3 })
    assert.are.same({ 3, 4 }, e.shape)
    each_coord(e, function(c)
      local lo, ok = e:eval(c)
      local want = 2 * c[1] + 3 * c[2]
      assert.are.equal(want < 10, ok)
      if ok then assert.are.same({ want }, lo) end
    end)
    local e2 = kiln.view({ shape = { 5 }, names = { "h" } }):embed { dim = "h", names = { "y", "o" }, sizes = { 3, 5 }, coeffs = { 1, 1 } }
    local _, okneg = e2:eval { 2, 4 }
    assert.is_false(okneg)
    local b = kiln.view({ shape = { 1, 6 }, names = { "a", "b" } }):broadcast { a = 5 }
    assert.are.same({ 5, 6 }, b.shape)
    assert.are.same({ 0, 4 }, (b:eval { 3, 4 }))
    local ad = v:add_dim("z", 3, 1)
    assert.are.same({ 4, 3, 6 }, ad.shape)
    assert.are.same({ "a", "z", "b" }, ad.names)
    assert.are.same({ 2, 5 }, (ad:eval { 2, 1, 5 }))
    assert.are.same({ 4, 6, 2 }, v:add_dim { name = "z", size = 2 }.shape)
    local cd = v:const_dim("a", 2)
    assert.are.same({ 6 }, cd.shape)
    assert.are.same({ 2, 4 }, (cd:eval { 4 }))
  end)

  it("transpose and passthrough", function()
    local t = v:transpose { 1, 0 }
    assert.are.same({ 6, 4 }, t.shape)
    assert.are.same({ "b", "a" }, t.names)
    assert.are.same({ 3, 5 }, (t:eval { 5, 3 }))
    assert.are.same(t.shape, v:transpose { "b", "a" }.shape)
    local p = v:passthrough({ "x", "y" }, { "b", "a" })
    assert.are.same({ "x", "y" }, p.names)
    assert.are.same({ 6, 4 }, p.shape)
    assert.are.same({ 1, 2 }, (p:eval { 2, 1 }))
  end)

  it("chains builders into a stack of maps and lists them", function()
    local s = v:pad { a = { 1, 1 } }:merge("m", { "a", "b" }):unmerge("m", { "p", "q" }, { 3, 12 })
    assert.are.same({ 3, 12 }, s.shape)
    assert.are.equal(4, s.nmaps)
    local maps = s:maps()
    assert.are.equal(4, #maps)
    assert.are.equal("Unmerge", maps[1].transforms[1].kind)
    assert.are.same({ 3, 12 }, maps[1].transforms[1].params)
    assert.are.same({ 4, 6 }, maps[4].lower_sizes)
    local lo, ok = s:eval { 1, 0 }          -- m = 12 -> a = 2 (padded 1) -> 1, b = 0
    assert.are.same({ 1, 0 }, lo)
    assert.is_true(ok)
    local n = 0
    s:each(function() n = n + 1 end)
    assert.are.equal(36, n)
  end)
end)

describe("view algebra", function()
  it("compose equals evaluating a then b; invert round-trips; simplify keeps evaluation", function()
    local a = kiln.view { shape = { 4, 6 }, names = { "a", "b" } }:transpose { 1, 0 }
    local b = kiln.view({ shape = { 24 }, names = { "f" } }):unmerge("f", { "a", "b" }, { 4, 6 })
    local c = a:compose(b)
    assert.are.same({ 6, 4 }, c.shape)
    assert.are.same({ 24 }, c.lower_shape)
    assert.are.same({ 3 * 6 + 5 }, (c:eval { 5, 3 }))
    local m = kiln.view({ shape = { 4, 6 } }):merge("m", { "d0", "d1" })
    local mi = m:invert()
    assert.are.same({ 4, 6 }, mi.shape)
    assert.are.same({ 9 }, (mi:eval { 1, 3 }))
    local p, msg = kiln.view({ shape = { 4 } }):pad { d0 = { 1, 0 } }:invert()
    assert.is_nil(p)
    has(msg, "Pad")
    has(msg, "not invertible")
    local e, emsg = kiln.view({ shape = { 9 } }):embed("d0", { "y", "o" }, { 3, 3 }, { 1, 3 }):invert()
    assert.is_nil(e)
    has(emsg, "Embed")
  end)

  local function random_view(base)
    local names = {}
    for i = 1, #base do names[i] = "d" .. i end
    local v = kiln.view { shape = base, names = names }
    local k = 0
    local function fresh() k = k + 1; return "n" .. k end
    for _ = 1, randint(1, 4) do
      if v.numel > 400 then break end
      local r, sh, nm = v.rank, v.shape, v.names
      local d = randint(1, r)
      local kind = randint(1, 9)
      if kind == 1 then v = v:pad { [nm[d]] = { randint(0, 2), randint(0, 2) } }
      elseif kind == 2 and sh[d] > 1 then
        local b = randint(0, sh[d] - 1)
        v = v:slice { [nm[d]] = { b, randint(b + 1, sh[d]) } }
      elseif kind == 3 and sh[d] > 1 then
        local f = 1
        for c = 2, sh[d] do if sh[d] % c == 0 then f = c; break end end
        v = v:unmerge(nm[d], { fresh(), fresh() }, { f, sh[d] // f })
      elseif kind == 4 and r >= 2 then
        if d == r then d = r - 1 end
        v = v:merge(fresh(), { nm[d], nm[d + 1] })
      elseif kind == 5 and r >= 2 then
        local perm = {}
        for i = 1, r do perm[i] = i - 1 end
        for i = r, 2, -1 do local j = randint(1, i); perm[i], perm[j] = perm[j], perm[i] end
        v = v:transpose(perm)
      elseif kind == 6 and sh[d] == 1 then v = v:broadcast { [nm[d]] = randint(1, 4) }
      elseif kind == 7 and r < 4 then v = v:add_dim(fresh(), randint(1, 3), randint(0, r))
      elseif kind == 8 and r > 1 then v = v:const_dim(nm[d], randint(0, sh[d] - 1))
      elseif kind == 9 then
        v = v:embed(nm[d], { fresh(), fresh() }, { randint(1, 3), randint(1, 3) }, { randint(-1, 2), randint(1, 2) })
      end
    end
    return v
  end
  local function random_shape()
    local s = {}
    for i = 1, randint(1, 3) do s[i] = randint(1, 4) end
    return s
  end

  it("hold on 200 seeded random view stacks (every kind), with text round trips", function()
    local composed, inverted, not_invertible = 0, 0, 0
    for _ = 1, 200 do
      local b = random_view(random_shape())
      local a = random_view(b.shape)
      -- text round trip
      for _, v in ipairs { a, b } do
        local t = tostring(v)
        local back = kiln.view_parse(t)
        assert.are.equal(t, tostring(back))
        assert.is_true(back == v)
      end
      -- compose(a, b) = a then b
      local c = a:compose(b)
      composed = composed + 1
      each_coord(a, function(co)
        local mid, ok1 = a:eval(co)
        local lo, ok = c:eval(co)
        if ok1 then
          local lo2, ok2 = b:eval(mid)
          assert.are.equal(ok2, ok, "validity of " .. tostring(c))
          if ok then assert.are.same(lo2, lo) end
        else
          assert.is_false(ok)
        end
      end)
      -- simplify keeps every valid coordinate and the validity
      local s = c:simplify()
      assert.is_true(s.nmaps <= c.nmaps)
      each_coord(c, function(co)
        local lo, ok = c:eval(co)
        local lo2, ok2 = s:eval(co)
        assert.are.equal(ok, ok2)
        if ok then assert.are.same(lo, lo2) end
      end)
      -- invert(v) after v is the identity where invert succeeds
      local inv, msg = a:invert()
      if inv then
        inverted = inverted + 1
        each_coord(a, function(co)
          local lo, ok = a:eval(co)
          if ok then assert.are.same(co, (inv:eval(lo))) end
        end)
      else
        not_invertible = not_invertible + 1
        assert.is_string(msg)
        assert.truthy(msg:find("not invertible", 1, true) or msg:find("invert", 1, true), msg)
      end
    end
    assert.are.equal(200, composed)
    assert.is_true(inverted > 10 and not_invertible > 10, ("inverted %d, not %d"):format(inverted, not_invertible))
  end)

  it("vector lengths are confirmed by brute force", function()
    local function check(v, dim, dtype, strides)
      local L = v:vector_len(dim, dtype, strides)
      assert.is_true(L >= 1)
      local d = type(dim) == "number" and dim + 1 or nil
      if not d then for i, n in ipairs(v.names) do if n == dim then d = i end end end
      assert.are.equal(0, v.shape[d] % L)
      each_coord(v, function(co)
        if co[d] % L ~= 0 then return end
        local a0, ok0 = v:addr(co, strides)
        for i = 1, L - 1 do
          local c2 = { table.unpack(co) }
          c2[d] = c2[d] + i
          local a, ok = v:addr(c2, strides)
          assert.are.equal(ok0, ok, "validity differs inside a vector of " .. L)
          if ok0 then assert.are.equal(a0 + i, a, "addresses not consecutive") end
        end
        if ok0 then assert.are.equal(0, a0 % L, "unaligned vector start") end
      end)
      return L
    end
    local v = kiln.view { shape = { 4, 8 }, names = { "a", "b" } }
    assert.are.equal(4, check(v, "b", "f32"))
    assert.are.equal(8, check(v, "b", "f16"))
    assert.are.equal(1, check(v, "a", "f32"))
    assert.are.equal(4, check(v, "a", "f32", { 1, 4 }))     -- column-major buffer
    local vt = v:transpose { 1, 0 }   -- upper (b, a)
    assert.are.equal(4, check(vt, 0, "f32"))
    assert.are.equal(1, check(vt, 1, "f32"))
    assert.are.equal(4, check(vt, 1, "f32", { 1, 4 }))
    assert.are.equal(8, check(v:merge("m", { "a", "b" }), "m", "f16"))
    assert.are.equal(2, check(v:pad { b = { 2, 2 } }, "b", "f32"))
    assert.are.equal(16, check(v:merge("m", { "a", "b" }), "m", 16))
    assert.are.equal(32, check(v:merge("m", { "a", "b" }), "m"))
    -- every claim on random stacks holds (check brute-forces each one)
    for _ = 1, 60 do
      local r = random_view(random_shape())
      for d = 0, r.rank - 1 do check(r, d, "i8") end
    end
  end)
end)

describe("view text and attributes", function()
  it("round-trips text and converts to and from #view attributes", function()
    local v = kiln.view { shape = { 4, 6 }, names = { "a", "b" } }:pad { a = { 1, 1 } }:merge("m", { "a", "b" })
    local t = tostring(v)
    assert.are.equal(t, v.text)
    has(t, "Merge{6,6}")
    local w = kiln.view_parse(t)
    assert.is_true(w == v)
    assert.is_true(kiln.view(t) == v)
    local a = kiln.attr(v)
    assert.are.equal("ext", a.kind)
    assert.are.equal("#view<" .. t .. ">", tostring(a))
    assert.is_true(a.view == v)
    assert.is_true(kiln.view(a) == v)
    local parsed = kiln.attr("#view<" .. t .. ">")
    assert.is_true(parsed.view == v)
    local ctx = kiln.context()
    assert.is_true(ctx:attr(v).view == v)
    assert.is_true(kiln.attr(ctx, v).view == v)
    assert.is_nil(kiln.attr(3).view)
    local op = kiln.op { name = "test.viewed", attrs = { view = kiln.attr(v) } }
    assert.is_true(op:attribute("view").view == v)
    assert.is_true(kiln.is_view(v))
    assert.is_false(kiln.is_view({}))
  end)

  it("reports malformed text with line:col and the Lua line", function()
    local l = line() + 1
    local e = fails(function() local v = kiln.view_parse("[Bogus [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]"); return v end)
    has(e, this_file() .. ":" .. l .. ": error: kiln.view_parse: view text:1:")
    has(e, "Bogus")
    has(fails(kiln.view_parse, "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2] -> [3]"), "view text:")
    has(fails(kiln.view, "nonsense"), "view text:")
  end)
end)

describe("kiln.conv_views", function()
  -- direct convolution vs C[g,m,n] = sum_k A[g,k,m] * B[g,k,n] through the three views
  local function check(d)
    local cv = kiln.conv_views(d)
    local G = d.groups or 1
    local nhwc = d.layout == "NHWC"
    local x = kiln.rand({ d.n, d.c, d.h, d.w }, "f64", { seed = randint(1, 1e6) })
    local w = kiln.rand({ d.k, d.c // G, d.y, d.x }, "f64", { seed = randint(1, 1e6) })
    local g = kiln.graph("conv")
    local xp = g:param("x", x.shape, "f64")
    local wp = g:param("w", w.shape, "f64")
    g:output(g:conv(xp, wp, { stride = d.stride, padding = d.padding, dilation = d.dilation, groups = G }))
    local ref = g:eval { x = x, w = w }
    assert.are.same({ d.n, d.k, cv.ho, cv.wo }, ref.shape)
    local out = kiln.zeros(ref.shape, "f64")
    -- logical (NCHW / KCYX / NKHW) index of a buffer coordinate in the view's layout
    local function in_idx(b) if nhwc then return { b[1], b[4], b[2], b[3] } end return b end
    local function f_idx(f) if nhwc then return { f[1], f[4], f[2], f[3] } end return f end
    local function o_idx(o) if nhwc then return { o[1], o[4], o[2], o[3] } end return o end
    for gi = 0, cv.g - 1 do
      for m = 0, cv.gemm_m - 1 do
        for n = 0, cv.gemm_n - 1 do
          local s = 0
          for k = 0, cv.gemm_k - 1 do
            local fa, oka = cv.a:eval { gi, k, m }
            local ib, okb = cv.b:eval { gi, k, n }
            assert.is_true(oka)
            if okb then s = s + w:get(f_idx(fa)) * x:get(in_idx(ib)) end
          end
          local oc, okc = cv.c:eval { gi, m, n }
          assert.is_true(okc)
          out:set(o_idx(oc), s)
        end
      end
    end
    local r = kiln.compare(out, ref, { rtol = 1e-12, atol = 1e-12 })
    assert.are.equal(0, r.mismatches, r.summary)
  end

  it("reproduce direct convolution on random configurations, both layouts", function()
    for _ = 1, 24 do
      local G = randint(1, 2)
      local d = { n = randint(1, 2), c = G * randint(1, 2), k = G * randint(1, 2), y = randint(1, 3), x = randint(1, 3),
                  groups = G, stride = { randint(1, 2), randint(1, 2) }, dilation = { randint(1, 2), randint(1, 2) },
                  padding = { randint(0, 1), randint(0, 1), randint(0, 1), randint(0, 1) },
                  layout = randint(0, 1) == 1 and "NHWC" or "NCHW" }
      d.h = randint(1, 4) + (d.y - 1) * d.dilation[1]
      d.w = randint(1, 4) + (d.x - 1) * d.dilation[2]
      check(d)
    end
  end)

  it("describe the GEMM sizes and buffer shapes", function()
    local cv = kiln.conv_views { n = 2, c = 4, h = 5, w = 5, k = 6, y = 3, x = 3, padding = 1, layout = "NHWC" }
    assert.are.equal(1, cv.g)
    assert.are.equal(36, cv.gemm_k)
    assert.are.equal(6, cv.gemm_m)
    assert.are.equal(50, cv.gemm_n)
    assert.are.same({ 2, 5, 5, 4 }, cv.input_shape)
    assert.are.same({ 6, 3, 3, 4 }, cv.filter_shape)
    assert.are.same({ 2, 5, 5, 6 }, cv.output_shape)
    assert.are.same({ 1, 36, 6 }, cv.a.shape)
    assert.are.same({ 1, 36, 50 }, cv.b.shape)
    assert.are.same({ 1, 6, 50 }, cv.c.shape)
    assert.is_true(cv.filter == cv.a)
    has(fails(kiln.conv_views, { n = 1, c = 3, h = 4, w = 4, k = 2, y = 1, x = 1, groups = 2 }), "kiln.conv_views")
    has(fails(kiln.conv_views, { n = 1, c = 2, h = 4, w = 4, k = 2, y = 1 }), "'x' is required")
    has(fails(kiln.conv_views, { n = 1, c = 2, h = 4, w = 4, k = 2, y = 1, x = 1, layout = "CHWN" }), "layout")
  end)
end)

describe("bad view input", function()
  it("raises Lua errors naming the builder and the Lua line", function()
    local v = kiln.view { shape = { 4, 6 }, names = { "a", "b" } }
    local l = line() + 1
    local e = fails(function() local r = v:pad { q = { 1, 1 } }; return r end)
    has(e, this_file() .. ":" .. l .. ": error: view:pad: 'q' is not a dim of the view")
    has(fails(function() local r = v:slice { b = { 3, 9 } }; return r end), "view:slice")
    has(fails(function() local r = v:unmerge("b", { "x", "y" }, { 4, 2 }); return r end), "view:unmerge")
    has(fails(function() local r = v:merge("m", { "a", "zz" }); return r end), "zz")
    has(fails(function() local r = v:const_dim("zz", 0); return r end), "no dim named 'zz' (dims: a, b)")
    has(fails(function() local r = v:transpose { 0, 0 }; return r end), "view:transpose")
    has(fails(function() local r = v:reshape { 5, 5 }; return r end), "view:reshape")
    has(fails(function() local r = v:eval { 1 }; return r end), "the coordinate has 1 entries, the view has rank 2")
    has(fails(function() local r = v:vector_len(5, "f32"); return r end), "out of range")
    has(fails(function() local r = v:vector_len("b", "f77"); return r end), "unknown dtype")
    has(fails(function() local r = v:compose(v:transpose { 1, 0 }); return r end), "view:compose")
    has(fails(function() local r = kiln.view { shape = { 4, -1 } }; return r end), "kiln.view")
    has(fails(function() local r = kiln.view { shape = { 4 }, names = { "a", "b" } }; return r end), "names has 2 entries")
    has(fails(function() local r = kiln.view(kiln.attr(3)); return r end), "not a #view")
  end)
end)
