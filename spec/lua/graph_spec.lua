-- graph_spec.lua — the graph DSL: kiln.graph, params, constants, ops as graph methods,
-- value methods and operators, map, print / parse round trip, and bad input (Lua errors
-- that name the op, the shapes and the Lua line).
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local line, this_file, fails, has = helper.line, helper.this_file, helper.fails, helper.has

local function body_names(g)
  local names = {}
  for _, op in ipairs(g.func:body():ops()) do names[#names + 1] = op.name end
  return names
end

describe("kiln.graph", function()
  it("holds a module and a graph function", function()
    local g = kiln.graph("net")
    assert.are.equal("builtin.module", g.module.name)
    assert.are.equal("func.func", g.func.name)
    assert.are.equal("net", g.func:attr("sym_name"))
    assert.is_true(kiln.is_graph(g))
    assert.are.same({ "func.return" }, body_names(g))
  end)

  it("params carry shape, dtype and layout (strides)", function()
    local g = kiln.graph("p")
    local x = g:param("x", { 1, 3, 4, 5 }, "f16", { layout = "NHWC" })
    assert.are.same({ 1, 3, 4, 5 }, x.shape)
    assert.are.equal("f16", x.dtype)
    assert.are.equal(4, x.rank)
    assert.are.same({ 60, 1, 15, 3 }, x.type.strides)
    local y = g:param("y", { 2, 3 }, "f32", { strides = { 1, 2 } })
    assert.are.same({ 1, 2 }, y.type.strides)
    local z = g:param("z", { 7 })
    assert.are.equal("f32", z.dtype)
    local ps = g:params()
    assert.are.equal(3, #ps)
    assert.are.equal("x", ps[1].name)
    assert.are.equal(x, ps[1].value)
    assert.are.equal("tensor<7xf32>", ps[3].type)
  end)

  it("builds every op as a graph method with inferred types", function()
    local g = kiln.graph("all")
    local x = g:param("x", { 1, 4, 6, 6 }, "f32")
    local w = g:param("w", { 8, 4, 3, 3 }, "f32")
    local a = g:param("a", { 2, 3, 4 }, "f32")
    local b = g:param("b", { 2, 4, 5 }, "f32")
    local c = g:conv(x, w, { stride = 2, padding = 1, dilation = 1, groups = 1 })
    assert.are.same({ 1, 8, 3, 3 }, c.shape)
    assert.are.same({ 2, 3, 5 }, g:dot(a, b).shape)
    assert.are.same({ 2, 4, 4 }, g:dot(a, a, { transpose_a = true }).shape)
    assert.are.same({ 2, 3, 3 }, g:dot(a, a, { transpose_b = true }).shape)
    for _, op in ipairs { "add", "sub", "mul", "div", "max", "min", "pow" } do
      assert.are.same({ 2, 3, 4 }, g[op](g, a, a).shape, op)
    end
    for _, op in ipairs { "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu" } do
      assert.are.same({ 2, 3, 4 }, g[op](g, a).shape, op)
    end
    assert.are.same({ 2, 3, 4 }, g:clip(a, -1, 1).shape)
    assert.are.equal("f16", g:convert(a, "f16").dtype)
    assert.are.same({ 2, 3, 4 }, g:where(a, a, g:neg(a)).shape)
    assert.are.same({ 5, 2, 3, 4 }, g:broadcast(a, { 5, 2, 3, 4 }).shape)
    assert.are.same({ 4, 2, 3 }, g:transpose(a, { 2, 0, 1 }).shape)
    assert.are.same({ 6, 4 }, g:reshape(a, { 6, 4 }).shape)
    assert.are.same({ 3, 8 }, g:reshape(a, { 3, -1 }).shape)
    assert.are.same({ 2, 2, 2 }, g:slice(a, { 0, 1, 0 }, { 2, 3, 4 }, { 1, 1, 2 }).shape)
    assert.are.same({ 2, 3, 2 }, g:slice(a, 2, 1, 3).shape)
    assert.are.same({ 4, 3, 4 }, g:concat({ a, a }, 0).shape)
    assert.are.same({ 2, 4 }, g:reduce_sum(a, { 1 }).shape)
    assert.are.same({ 2, 1, 4 }, g:reduce_max(a, { 1 }, true).shape)
    assert.are.same({}, g:reduce_mean(a).shape)
    assert.are.same({ 2, 3, 4 }, g:softmax(a).shape)
    local ops = {}
    for _, n in ipairs(body_names(g)) do ops[n] = true end
    for _, n in ipairs { "graph.conv", "graph.dot", "graph.add", "graph.where", "graph.convert", "graph.broadcast",
                         "graph.transpose", "graph.reshape", "graph.slice", "graph.concat", "graph.reduce_sum",
                         "graph.reduce_max", "graph.reduce_mean", "graph.softmax", "graph.clip", "graph.rsqrt" } do
      assert.is_true(ops[n], n)
    end
  end)

  it("normalizes conv options into attributes", function()
    local g = kiln.graph("c")
    local x = g:param("x", { 1, 4, 9, 9 }, "f32")
    local w = g:param("w", { 4, 2, 3, 3 }, "f32")
    local c = g:conv(x, w, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = 2, groups = 2 })
    local op = c:defining_op()
    assert.are.same({ 2, 1 }, op:attr("stride"))
    assert.are.same({ 1, 1, 2, 2 }, op:attr("padding"))
    assert.are.same({ 2, 2 }, op:attr("dilation"))
    assert.are.equal(2, op:attr("groups"))
    local c4 = g:conv(x, w, { padding = { 0, 1, 2, 3 }, groups = 2 })
    assert.are.same({ 0, 1, 2, 3 }, c4:defining_op():attr("padding"))
  end)

  it("conv keeps the input's layout for its result", function()
    local g = kiln.graph("c")
    local x = g:param("x", { 2, 4, 5, 5 }, "f32", { layout = "NHWC" })
    local w = g:param("w", { 6, 4, 1, 1 }, "f32")
    local c = g:conv(x, w)
    assert.are.same({ 2, 6, 5, 5 }, c.shape)
    assert.are.same({ 150, 1, 30, 6 }, c.type.strides)
  end)
end)

describe("values", function()
  it("support operators and methods, numbers mixing in as constants of the dtype", function()
    local g = kiln.graph("ops")
    local x = g:param("x", { 2, 3 }, "f16")
    local y = g:param("y", { 3 }, "f16")
    local r = -((x + y) * 2 - 1) / x ^ y
    assert.are.same({ 2, 3 }, r.shape)
    assert.are.equal("f16", r.dtype)
    local consts = 0
    for _, op in ipairs(g.func:body():ops()) do
      if op.name == "graph.constant" then
        consts = consts + 1
        assert.are.equal("tensor<f16>", tostring(op:result().type))
      end
    end
    assert.are.equal(2, consts)
    local s = (2 + x):relu():exp():log():sqrt():rsqrt():tanh():sigmoid():abs():neg()
    assert.are.same({ 2, 3 }, s.shape)
    assert.are.same({ 2, 3 }, x:max(y).shape)
    assert.are.same({ 2, 3 }, x:min(0).shape)
    assert.are.same({ 2, 3 }, x:pow(2).shape)
    assert.are.same({ 2 }, x:sum(1).shape)
    assert.are.same({ 2, 1 }, x:mean({ 1 }, true).shape)
    assert.are.same({ 3 }, x:reduce_max { 0 }.shape)
    assert.are.same({ 2, 3 }, x:softmax(0).shape)
    assert.are.same({ 3, 2 }, x:transpose().shape)
    assert.are.same({ 6 }, x:reshape { 6 }.shape)
    assert.are.same({ 4, 2, 3 }, x:broadcast { 4, 2, 3 }.shape)
    assert.are.same({ 2, 1 }, x:slice(1, 2, 3).shape)
    assert.are.equal("i32", x:convert("i32").dtype)
    assert.are.same({ 2, 3 }, x:clip(0, 1).shape)
    assert.are.same({ 2, 2 }, x:dot(x, { transpose_b = true }).shape)
  end)

  it("g:constant takes tensors, nested tables and numbers", function()
    local g = kiln.graph("k")
    local a = g:constant(kiln.tensor({ { 1, 2 }, { 3, 4 } }, "i32"))
    assert.are.same({ 2, 2 }, a.shape)
    assert.are.equal("i32", a.dtype)
    local b = g:constant({ 1.5, 2.5 }, "f16")
    assert.are.equal("f16", b.dtype)
    local c = g:constant(3)
    assert.are.same({}, c.shape)
    assert.are.equal("f32", c.dtype)
    g:output(a, b, c)
    local ra, rb, rc = g:eval {}
    assert.are.same({ { 1, 2 }, { 3, 4 } }, ra:totable())
    assert.are.same({ 1.5, 2.5 }, rb:totable())
    assert.are.equal(3, rc:totable())
  end)

  it("g:map builds the same ops from a function or an expression", function()
    local g = kiln.graph("m")
    local a = g:param("a", { 2, 3 }, "f32")
    local b = g:param("b", { 2, 3 }, "f32")
    local f1 = g:map(function(x, y) return x * y + 1 end, a, b)
    local f2 = g:map("x * y + 1", a, b)
    local f3 = g:map("relu(x) - max(x, y)", a, b)
    local f4 = g:map(function(x, k) return x * k end, a, kiln.tensor({ 1, 2, 3 }))
    local f5, f6 = g:map(function(x) return x:exp(), 2 end, a)
    g:output(f1, f2, f3, f4, f5, f6)
    local ta, tb = kiln.rand({ 2, 3 }), kiln.rand({ 2, 3 })
    local r1, r2, r3, r4, r5, r6 = g:eval { a = ta, b = tb }
    for i = 0, 1 do
      for j = 0, 2 do
        local x, y = ta:get { i, j }, tb:get { i, j }
        local want = x * y + 1
        assert.is_true(math.abs(r1:get { i, j } - want) < 1e-5)
        assert.is_true(math.abs(r2:get { i, j } - want) < 1e-5)
        assert.is_true(math.abs(r3:get { i, j } - (math.max(x, 0) - math.max(x, y))) < 1e-6)
        assert.is_true(math.abs(r4:get { i, j } - x * (j + 1)) < 1e-6)
        assert.is_true(math.abs(r5:get { i, j } - math.exp(x)) < 1e-5)
      end
    end
    assert.are.equal(2, r6:totable())
  end)
end)

describe("printing", function()
  it("g:print() is IR text that kiln.parse reads back into an equivalent graph", function()
    local g = kiln.graph("rt")
    local x = g:param("x", { 2, 3 }, "f32", { layout = "col_major" })
    local w = g:param("w", { 3, 4 }, "f32")
    g:output((g:dot(x, w) + 1):relu():softmax(1))
    local text = g:print()
    has(text, "graph.param")
    has(text, "graph.dot")
    has(text, "graph.softmax")
    assert.are.equal(text, tostring(g) .. "\n")
    local m = kiln.parse(text, "rt.kir")
    assert.are.equal(text, m:print())
    local g2 = kiln.graph(m)
    assert.are.equal("rt", g2.name)
    local tx, tw = kiln.rand({ 2, 3 }, "f32", { layout = "col_major" }), kiln.rand({ 3, 4 })
    local r1 = g:eval { x = tx, w = tw }
    local r2 = g2:eval { x = tx, w = tw }
    assert.are.same(r1:totable(), r2:totable())
    assert.is_true(g:verify())
  end)
end)

describe("bad graph input", function()
  local g, x, h, img, w
  before_each(function()
    g = kiln.graph("bad")
    x = g:param("x", { 2, 3 }, "f32")
    h = g:param("h", { 2, 3 }, "f16")
    img = g:param("img", { 1, 3, 8, 8 }, "f32")
    w = g:param("w", { 4, 5, 3, 3 }, "f32")
  end)

  it("shape mismatches name the op, both shapes and the Lua line", function()
    local q = g:param("q", { 4 }, "f32")
    local l = line() + 1
    local e = fails(function() local r = x + q; return r end)
    has(e, this_file() .. ":" .. l .. ": error: add:")
    has(e, "[2,3]")
    has(e, "[4]")
    l = line() + 1
    e = fails(function() local r = g:conv(img, w); return r end)
    has(e, this_file() .. ":" .. l .. ": error: conv")
    has(e, "[1,3,8,8]")
    has(e, "[4,5,3,3]")
    e = fails(function() local r = g:dot(x, x); return r end)
    has(e, "dot")
    has(e, "[2,3]")
    has(fails(function() local r = x + h; return r end), "element types differ")
    has(fails(function() local r = x:reshape { 5 }; return r end), "reshape")
    has(fails(function() local r = x:transpose { 0, 0 }; return r end), "transpose")
    has(fails(function() local r = x:slice({ 0, 0 }, { 5, 3 }); return r end), "slice")
    has(fails(function() local r = x:sum { 3 }; return r end), "reduce_sum")
    has(fails(function() local r = x:broadcast { 4, 3 }; return r end), "broadcast")
    has(fails(function() local r = g:concat({ x, g:param("c", { 2, 4 }, "f32") }, 0); return r end), "concat")
    has(fails(function() local r = g:where(x, x, h); return r end), "where")
    has(fails(function() local r = x:clip(2, 1); return r end), "clip: min 2 is greater than max 1")
    has(fails(function() local r = g:param("i", { 2 }, "i32"):softmax(); return r end), "softmax: needs a float tensor")
  end)

  it("bad params: unknown dtype, negative sizes, duplicate names", function()
    local l = line() + 1
    local e = fails(function() local r = g:param("z", { 2 }, "q8"); return r end)
    has(e, this_file() .. ":" .. l .. ": error: param: unknown dtype 'q8'")
    has(fails(function() local r = g:param("z", { 2, -1 }, "f32"); return r end), "negative size -1")
    has(fails(function() local r = g:param("x", { 2 }, "f32"); return r end), "a parameter named 'x' already exists")
    has(fails(function() local r = g:param("", { 2 }); return r end), "name")
    has(fails(function() local r = g:param("z", { 2, 3 }, "f32", { layout = "NHWC" }); return r end), "layout")
    has(fails(function() local r = g:param("z", { 2, 3 }, "f32", { strides = { 1, 1 } }); return r end), "overlap")
  end)

  it("bad options and operands", function()
    has(fails(function() local r = g:conv(img, w, { strid = 1 }); return r end), "unknown option 'strid'")
    has(fails(function() local r = g:conv(img, w, { padding = { 1, 2, 3 } }); return r end), "padding")
    has(fails(function() local r = g:dot(x, x, { transpose = true }); return r end), "unknown option")
    has(fails(function() local r = x:convert(); return r end), "target dtype")
    has(fails(function() local r = x:convert("f99"); return r end), "unknown dtype")
    has(fails(function() local r = x + "a"; return r end), "expected a graph value")
    has(fails(function() g:output(3) end), "output 1 must be a graph value")
    has(fails(function() local r = g:map(42, x); return r end), "map")
    has(fails(function() local r = g:map("x +* y", x, x); return r end), "cannot compile")
    local other = kiln.graph("other"):param("y", { 2, 3 }, "f32")
    has(fails(function() local r = x + other; return r end), "operand 2 is a value of graph @other, not of graph @bad")
  end)

  it("never leaves the process in a bad state", function()
    for _ = 1, 50 do pcall(function() local r = x + g:param("q", { 4 }, "f32"); return r end) end
    g:output(x)
    local r = g:eval { x = kiln.ones { 2, 3 }, h = kiln.ones({ 2, 3 }, "f16"), img = kiln.ones { 1, 3, 8, 8 },
                       w = kiln.ones { 4, 5, 3, 3 }, q = kiln.ones { 4 } }
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, r:totable())
  end)
end)
