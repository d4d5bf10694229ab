-- bad_input_spec.lua — bad input at every entry point that takes a shape, a size or an
-- option from a user: g:param, the tensor constructors, graph ops (mismatched operands,
-- shape attributes, axes, conv attributes), views and conv views, compile options (perf
-- configs, pipelines, targets), runs, released objects and the .kir parser. Every case
-- asserts that a Lua error is raised, that it names the problem and carries the location
-- (this file's line that made the call, or file:line:col in the .kir text), and that the
-- context stays usable afterwards: the graph the case failed in still builds, verifies
-- and evaluates, and a fresh graph evaluates correctly against a direct computation.
-- Each case is one line, so the line that registers it is the line that makes the call
-- (the calls are parenthesized: a tail call would drop the case's line from the stack).
-- scripts/test also runs this spec inside the ASan + UBSan kiln.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local FILE = helper.this_file()
local BIG = 1 << 62            -- 2^62
local DIM = 1 << 40            -- the largest size the IR accepts
local NAN, INF = 0 / 0, math.huge
local MININT, MAXINT = math.mininteger, math.maxinteger

-- cases[i] = {name, fn(g, f), want (message fragment), line, loc (a .kir location) | nil}
local cases = {}
local function case(name, fn, want, loc)
  cases[#cases + 1] = { name = name, fn = fn, want = want, line = debug.getinfo(2, "l").currentline, loc = loc }
end

-- Values every case may use: f32 {2,3} and {4,5}, f16 and i32 {2,3}, an NCHW input and a
-- filter, a rank-1 value, host tensors, a compiled program, a view.
local program
local function fixtures(g)
  local f = {}
  f.x = g:param("x", { 2, 3 })
  f.y = g:param("y", { 4, 5 })
  f.h = g:param("h", { 2, 3 }, "f16")
  f.i = g:param("i", { 2, 3 }, "i32")
  f.n = g:param("n", { 1, 4, 8, 8 })
  f.w = g:param("w", { 4, 4, 3, 3 })
  f.v = g:param("v", { 6 })
  f.t = kiln.rand({ 2, 3 })
  f.view = kiln.view { shape = { 4, 6 }, names = { "a", "b" } }
  f.p = program
  return f
end
local released_tensor = function() local t = kiln.rand({ 2, 3 }); t:release(); return t end
local closed_view = function() local keep; do local v <close> = kiln.view { shape = { 4 } }; keep = v end; return keep end
local other_graph_value = function() return kiln.graph("other"):param("z", { 2, 3 }) end

-- ---------------------------------------------------------------- g:param ----
case("param 2^62 (float)", function(g) return (g:param("a", { 2 ^ 62 })) end, "size 4611686018427387904 of dim 0")
case("param 2^62", function(g) return (g:param("a", { BIG })) end, "dimension out of range")
case("param {2^62, 4}", function(g) return (g:param("a", { BIG, 4 })) end, "size 4611686018427387904 of dim 0 in shape [4611686018427387904,4]")
case("param {4, 2^62}", function(g) return (g:param("a", { 4, BIG })) end, "of dim 1")
case("param 2^40 + 1", function(g) return (g:param("a", { DIM + 1 })) end, "sizes are 0 to 2^40")
case("param {0, 2^62}", function(g) return (g:param("a", { 0, BIG })) end, "dimension out of range")
case("param 2^27 x 2^27", function(g) return (g:param("a", { 1 << 27, 1 << 27 })) end, "more than 2^53 elements")
case("param 2^40 x 2^40", function(g) return (g:param("a", { DIM, DIM })) end, "shape too large")
case("param maxint", function(g) return (g:param("a", { MAXINT })) end, "dimension out of range")
case("param negative size", function(g) return (g:param("a", { 2, -3 })) end, "negative size -3")
case("param minint", function(g) return (g:param("a", { MININT })) end, "negative size")
case("param 1.5", function(g) return (g:param("a", { 1.5 })) end, "must be an integer, got 1.5")
case("param NaN", function(g) return (g:param("a", { NAN })) end, "must be an integer")
case("param inf", function(g) return (g:param("a", { INF })) end, "must be an integer")
case("param 1e300", function(g) return (g:param("a", { 1e300 })) end, "must be an integer")
case("param string dim", function(g) return (g:param("a", { "four" })) end, "shape entry 1 must be an integer")
case("param table dim", function(g) return (g:param("a", { {} })) end, "shape entry 1 must be an integer")
case("param nil shape", function(g) return (g:param("a", nil)) end, "a shape (a list of sizes) is required")
case("param string shape", function(g) return (g:param("a", "2x3")) end, "shape must be a list of integers")
case("param boolean shape", function(g) return (g:param("a", true)) end, "shape must be a list of integers")
case("param rank 9", function(g) return (g:param("a", { 1, 1, 1, 1, 1, 1, 1, 1, 1 })) end, "at most 8")
case("param no name", function(g) return (g:param(nil, { 2 })) end, "the param's name")
case("param empty name", function(g) return (g:param("", { 2 })) end, "non-empty string")
case("param number name", function(g) return (g:param(5, { 2 })) end, "the param's name")
case("param duplicate name", function(g) return (g:param("x", { 2 })) end, "a parameter named 'x' already exists")
case("param unknown dtype", function(g) return (g:param("a", { 2 }, "f33")) end, "unknown dtype 'f33'")
case("param number dtype", function(g) return (g:param("a", { 2 }, 32)) end, "dtype must be a string")
case("param unknown layout", function(g) return (g:param("a", { 1, 2, 3, 4 }, "f32", { layout = "NXYZ" })) end, "NXYZ")
case("param layout for rank 2", function(g) return (g:param("a", { 2, 3 }, "f32", { layout = "NHWC" })) end, "NHWC")
case("param layout not a string", function(g) return (g:param("a", { 2, 3 }, "f32", { layout = 4 })) end, "layout must be a string")
case("param options not a table", function(g) return (g:param("a", { 2, 3 }, "f32", 5)) end, "options must be a table")
case("param layout and strides", function(g) return (g:param("a", { 2, 3 }, "f32", { layout = "NC", strides = { 3, 1 } })) end, "not both")
case("param strides count", function(g) return (g:param("a", { 2, 3 }, "f32", { strides = { 1 } })) end, "strides has 1 entries, the shape has rank 2")
case("param negative stride", function(g) return (g:param("a", { 2, 3 }, "f32", { strides = { -3, 1 } })) end, "negative stride -3")
case("param overlapping strides", function(g) return (g:param("a", { 2, 3 }, "f32", { strides = { 1, 1 } })) end, "overlap")
case("param stride 2^62", function(g) return (g:param("a", { 2, 3 }, "f32", { strides = { BIG, 1 } })) end, "stride 4611686018427387904 of dim 0")
case("param strides past 2^53", function(g) return (g:param("a", { 4, 3 }, "f32", { strides = { 1 << 52, 1 } })) end, "reach past 2^53 elements")
case("param stride 1.5", function(g) return (g:param("a", { 2, 3 }, "f32", { strides = { 1.5, 1 } })) end, "strides entry 1 must be an integer")

-- ------------------------------------------------------- tensor constructors ----
case("zeros 2^62", function() return (kiln.zeros({ BIG })) end, "kiln.zeros: dimension out of range")
case("zeros {2^62, 4}", function() return (kiln.zeros({ BIG, 4 })) end, "in shape [4611686018427387904,4]")
case("zeros {0, 2^62}", function() return (kiln.zeros({ 0, BIG })) end, "dimension out of range")
case("ones 2^40 x 2^40", function() return (kiln.ones({ DIM, DIM })) end, "more than 2^53 elements")
case("full {2^62, 4}", function() return (kiln.full({ BIG, 4 }, 1)) end, "kiln.full: dimension out of range")
case("full value not a number", function() return (kiln.full({ 2 }, "one")) end, "the fill value must be a number")
case("rand {2^62, 4}", function() return (kiln.rand({ BIG, 4 })) end, "kiln.rand: dimension out of range")
case("rand NaN dim", function() return (kiln.rand({ 2, NAN })) end, "must be an integer")
case("rand negative dim", function() return (kiln.rand({ -1 })) end, "negative size -1")
case("rand unknown dtype", function() return (kiln.rand({ 2 }, "float")) end, "unknown dtype 'float'")
case("rand nil shape", function() return (kiln.rand()) end, "a shape (a list of sizes) is required")
case("rand option typo", function() return (kiln.rand({ 2 }, "f32", { dtpye = "f16" })) end, "kiln.rand: unknown option 'dtpye' (options: seed, dist, layout, strides)")
case("rand numeric option key", function() return (kiln.rand({ 2 }, "f32", { 7 })) end, "unknown option '1' (options: seed")
case("zeros option typo", function() return (kiln.zeros({ 2 }, "f32", { layuot = "C" })) end, "kiln.zeros: unknown option 'layuot' (did you mean 'layout'? options: layout, strides)")
case("full option typo", function() return (kiln.full({ 2 }, 1, "f32", { seed = 1 })) end, "kiln.full: unknown option 'seed'")
case("tensor option typo", function() return (kiln.tensor({ 1, 2 }, "f32", { shpae = { 2 } })) end, "kiln.tensor: unknown option 'shpae' (did you mean 'shape'? options: shape, layout, strides)")
case("tensor copy option typo", function(g, f) return (kiln.tensor(f.t, "f16", { shape = { 3, 2 } })) end, "unknown option 'shape' (options: layout, strides)")
case("tensor shape {0, 2^62}", function() return (kiln.tensor({}, "f32", { shape = { 0, BIG } })) end, "dimension out of range")
case("tensor shape {2^62, 4}", function() return (kiln.tensor({ 1, 2 }, "f32", { shape = { BIG, 4 } })) end, "dimension out of range")
case("tensor shape count", function() return (kiln.tensor({ 1, 2, 3 }, "f32", { shape = { 2, 2 } })) end, "has 4 elements, the table has 3")
case("tensor ragged", function() return (kiln.tensor({ { 1, 2 }, { 3 } })) end, "ragged nested table")
case("tensor non-number element", function() return (kiln.tensor({ 1, "x" })) end, "element [2] must be a number")
case("tensor of a function", function() return (kiln.tensor(print)) end, "expected a nested table of numbers")
case("tensor unknown dtype", function() return (kiln.tensor({ 1 }, "f8")) end, "unknown dtype 'f8'")

case("tensor __len 2^62", function() return (kiln.tensor(setmetatable({}, { __len = function() return BIG end, __index = function() return 1 end }))) end, "nested table: dimension out of range")
case("tensor __len -5", function() return (kiln.tensor(setmetatable({}, { __len = function() return -5 end }))) end, "nested table: dimension out of range: negative size -5")
case("tensor nested 2^31 x 2^31", function() return (kiln.tensor(setmetatable({}, { __len = function() return 1 << 31 end, __index = function() return setmetatable({}, { __len = function() return 1 << 31 end, __index = function() return 1 end }) end }))) end, "nested table: shape too large")
case("tensor nested too deep", function() local v = 1; for _ = 1, 20 do v = { v } end; return (kiln.tensor(v)) end, "nested deeper than 8 levels")
case("tensor stride 2^62", function() return (kiln.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, "f32", { strides = { BIG, 1 } })) end, "kiln.tensor: stride 4611686018427387904 of dim 0")
case("zeros strides past 2^53", function() return (kiln.zeros({ 4, 3 }, "f32", { strides = { 1 << 52, 1 } })) end, "kiln.zeros: strides [4503599627370496,1] for shape [4,3] reach past 2^53")
case("as_layout stride 2^62", function(g, f) return (f.t:as_layout { strides = { BIG, 1 } }) end, "stride 4611686018427387904 of dim 0")
case("layout_strides 2^62", function() return (kiln.layout_strides("NHWC", { BIG, 4, 4, 4 })) end, "kiln.layout_strides: dimension out of range")
case("param shape __len 2^62", function(g) return (g:param("a", setmetatable({}, { __len = function() return BIG end }))) end, "shape has 4611686018427387904 entries (at most 8)")
case("param shape __index 2^62", function(g) return (g:param("a", setmetatable({}, { __len = function() return 2 end, __index = function() return BIG end }))) end, "dimension out of range")
case("get on an index of 2^62", function(g, f) return (f.t:set({ BIG, 0 }, 1)) end, "out of bounds for shape [2,3]")
case("set a string", function(g, f) return (f.t:set({ 0, 0 }, "x")) end, "the value must be a number")
case("kiln.device unknown", function() return (kiln.device("nope")) end, "unknown device 'nope'")
case("to an unknown device", function(g, f) return (f.t:to("nope")) end, "unknown device 'nope'")

-- ------------------------------------------------ mismatched binary operands ----
for _, op in ipairs { "add", "sub", "mul", "div", "max", "min", "pow" } do
  case(op .. " shapes [2,3] vs [4,5]", function(g, f) return (g[op](g, f.x, f.y)) end, "[2,3]")
  case(op .. " f32 vs f16", function(g, f) return (g[op](g, f.x, f.h)) end, "element types differ")
end
case("operator + shapes", function(g, f) return (f.x + f.y) end, "add")
case("operator * dtypes", function(g, f) return (f.x * f.i) end, "element types differ")
case("add a string", function(g, f) return (g:add(f.x, "two")) end, "expected a graph value, a number or a tensor")
case("add nil", function(g, f) return (g:add(f.x, nil)) end, "expected a graph value, a number or a tensor")
case("add a value of another graph", function(g, f) return (g:add(f.x, other_graph_value())) end, "not of graph @bad")
case("where shapes", function(g, f) return (g:where(f.x, f.x, f.y)) end, "where")
case("where branch dtypes", function(g, f) return (g:where(f.x, f.x, f.h)) end, "branch element types differ")
case("dot inner sizes", function(g, f) return (g:dot(f.x, f.x)) end, "dot")
case("dot dtypes", function(g, f) return (g:dot(f.x, f.h)) end, "element types differ")
case("dot unknown option", function(g, f) return (g:dot(f.x, f.x, { transpose = true })) end, "unknown option 'transpose'")
case("conv rank 2 input", function(g, f) return (g:conv(f.x, f.w)) end, "conv")
case("conv channel mismatch", function(g, f) return (g:conv(f.n, g:param("w2", { 4, 3, 3, 3 }))) end, "conv")
case("conv dtypes", function(g, f) return (g:conv(f.n, g:param("w2", { 4, 4, 3, 3 }, "f16"))) end, "element types differ")
case("concat shapes", function(g, f) return (g:concat({ f.x, f.y }, 0)) end, "concat")
case("concat dtypes", function(g, f) return (g:concat({ f.x, f.h }, 0)) end, "has element type f16, expected f32")
case("concat empty list", function(g) return (g:concat({}, 0)) end, "at least one value")
case("concat not a list", function(g, f) return (g:concat(f.x, 0)) end, "expected a list of values")

case("conv with one operand", function(g, f) return (g:conv(f.n)) end, "conv: expected a graph value, a number or a tensor, got a nil")
case("dot with one operand", function(g, f) return (g:dot(f.x)) end, "dot: expected a graph value, a number or a tensor, got a nil")
case("where with one operand", function(g, f) return (g:where(f.x)) end, "where: expected a graph value")
case("clip without bounds", function(g, f) return (f.x:clip()) end, "bounds must be numbers, got nil and nil")
case("slice without bounds", function(g, f) return (f.x:slice()) end, "slice: begin must be a list of integers, got a nil")
case("concat without arguments", function(g) return (g:concat()) end, "concat: expected a list of values")
case("param without arguments", function(g) return (g:param()) end, "the param's name")
case("unary op on a number", function() return (kiln.graph_ops.exp(nil, 2)) end, "the operand must be a graph value, got a number")
case("binary op on two numbers", function() return (kiln.graph_ops.add(nil, 1, 2)) end, "at least one operand must be a graph value")

-- ------------------------------------------------- shape attributes and axes ----
case("reshape 2^62", function(g, f) return (f.x:reshape { BIG }) end, "reshape")
case("reshape {2^62, 4}", function(g, f) return (f.x:reshape { BIG, 4 }) end, "too large")
case("reshape two -1", function(g, f) return (f.x:reshape { -1, -1 }) end, "at most one -1")
case("reshape element count", function(g, f) return (f.x:reshape { 4, 2 }) end, "cannot reshape [2,3]")
case("reshape 1.5", function(g, f) return (f.x:reshape { 1.5, 4 }) end, "shape must be an integer, got 1.5")
case("reshape NaN", function(g, f) return (f.x:reshape { NAN }) end, "shape must be an integer")
case("reshape string", function(g, f) return (f.x:reshape "6") end, "shape must be a list of integers")
case("broadcast 2^62", function(g, f) return (f.x:broadcast { BIG, 3 }) end, "cannot broadcast [2,3]")
case("broadcast {2^62, 2, 3}", function(g, f) return (f.x:broadcast { BIG, 2, 3 }) end, "result dimension out of range")
case("broadcast 2^40 x 2^40", function(g, f) return (f.x:broadcast { DIM, DIM, 2, 3 }) end, "result shape too large")
case("broadcast incompatible", function(g, f) return (f.x:broadcast { 4, 3 }) end, "cannot broadcast")
case("broadcast lower rank", function(g, f) return (f.x:broadcast { 3 }) end, "broadcast")
case("transpose out of range", function(g, f) return (f.x:transpose { 0, 5 }) end, "perm entry 5 out of range")
case("transpose 2^32", function(g, f) return (f.x:transpose { 1 << 32, 0 }) end, "perm entry 4294967296 out of range")
case("transpose minint", function(g, f) return (f.x:transpose { MININT, 0 }) end, "perm entry -9223372036854775808")
case("transpose duplicate", function(g, f) return (f.x:transpose { 0, 0 }) end, "is not a permutation")
case("transpose short", function(g, f) return (f.x:transpose { 0 }) end, "transpose")
case("slice end 2^62", function(g, f) return (f.x:slice({ 0, 0 }, { BIG, 3 })) end, "end 4611686018427387904 out of range")
case("slice step 2^62", function(g, f) return (f.x:slice({ 0, 0 }, { 2, 3 }, { BIG, 1 })) end, "step 4611686018427387904 out of range")
case("slice step maxint", function(g, f) return (f.x:slice({ 0, 0 }, { 2, 3 }, { MAXINT, 1 })) end, "step 9223372036854775807")
case("slice begin minint", function(g, f) return (f.x:slice({ MININT, 0 }, { 2, 3 })) end, "begin -9223372036854775808")
case("slice step 0", function(g, f) return (f.x:slice({ 0, 0 }, { 2, 3 }, { 0, 1 })) end, "step 0 out of range")
case("slice past the end", function(g, f) return (f.x:slice({ 0, 0 }, { 3, 3 })) end, "out of bounds on axis 0")
case("slice axis out of range", function(g, f) return (f.x:slice(5, 0, 1)) end, "axis 5 out of range for rank 2")
case("slice bound count", function(g, f) return (f.x:slice({ 0 }, { 2 })) end, "must be a list of 2 integers")
case("slice NaN bound", function(g, f) return (f.x:slice(0, NAN, 1)) end, "begin must be an integer")
case("sum axis 2^32", function(g, f) return (f.x:sum { 1 << 32 }) end, "axis 4294967296 out of range")
case("sum axis 5", function(g, f) return (f.x:sum { 5 }) end, "reduce_sum")
case("reduce_max axis -9", function(g, f) return (f.x:reduce_max { -9 }) end, "reduce_max")
case("mean axis 0.5", function(g, f) return (f.x:mean { 0.5 }) end, "axes must be an integer, got 0.5")
case("softmax axis 2^32", function(g, f) return (f.x:softmax(1 << 32)) end, "softmax: axis 4294967296 out of range")
case("softmax axis 7", function(g, f) return (f.x:softmax(7)) end, "softmax")
case("softmax of an integer tensor", function(g, f) return (f.i:softmax()) end, "needs a float tensor")
case("concat axis 2^32", function(g, f) return (g:concat({ f.x, f.x }, 1 << 32)) end, "concat: axis 4294967296 out of range")
case("concat axis minint", function(g, f) return (g:concat({ f.x, f.x }, MININT)) end, "axis -9223372036854775808")
case("concat axis 5", function(g, f) return (g:concat({ f.x, f.x }, 5)) end, "concat")

case("concat of 65 values", function(g, f) local l = {}; for i = 1, 65 do l[i] = f.x end; return (g:concat(l, 0)) end, "too many operands (65)")
case("output of 300 values", function(g, f) local l = {}; for i = 1, 300 do l[i] = f.x end; return (g:output(table.unpack(l))) end, "too many outputs")

-- ------------------------------------------------------------ conv attributes ----
case("conv stride 0", function(g, f) return (g:conv(f.n, f.w, { stride = 0 })) end, "conv: stride 0 out of range (1 to 2^40)")
case("conv stride -1", function(g, f) return (g:conv(f.n, f.w, { stride = -1 })) end, "stride -1 out of range")
case("conv stride 2^62", function(g, f) return (g:conv(f.n, f.w, { stride = BIG })) end, "stride 4611686018427387904 out of range")
case("conv stride three entries", function(g, f) return (g:conv(f.n, f.w, { stride = { 1, 1, 1 } })) end, "stride must be a number or {h, w}")
case("conv padding -5", function(g, f) return (g:conv(f.n, f.w, { padding = -5 })) end, "padding -5 out of range (0 to 2^40)")
case("conv padding 2^62", function(g, f) return (g:conv(f.n, f.w, { padding = BIG })) end, "padding 4611686018427387904 out of range")
case("conv padding maxint", function(g, f) return (g:conv(f.n, f.w, { padding = { 0, 0, 0, MAXINT } })) end, "padding 9223372036854775807 out of range")
case("conv padding three entries", function(g, f) return (g:conv(f.n, f.w, { padding = { 1, 1, 1 } })) end, "got 3 entries")
case("conv padding too large for the filter", function(g, f) return (g:conv(f.n, g:param("w9", { 4, 4, 99, 99 }))) end, "conv")
case("conv dilation 0", function(g, f) return (g:conv(f.n, f.w, { dilation = 0 })) end, "dilation 0 out of range")
case("conv dilation 2^62", function(g, f) return (g:conv(f.n, f.w, { dilation = BIG })) end, "dilation 4611686018427387904 out of range")
case("conv groups 0", function(g, f) return (g:conv(f.n, f.w, { groups = 0 })) end, "groups 0 out of range")
case("conv groups -1", function(g, f) return (g:conv(f.n, f.w, { groups = -1 })) end, "groups -1 out of range")
case("conv groups 2^62", function(g, f) return (g:conv(f.n, f.w, { groups = BIG })) end, "groups 4611686018427387904 out of range")
case("conv groups not dividing", function(g, f) return (g:conv(f.n, f.w, { groups = 3 })) end, "groups")
case("conv groups 1.5", function(g, f) return (g:conv(f.n, f.w, { groups = 1.5 })) end, "groups must be an integer, got 1.5")
case("conv unknown option", function(g, f) return (g:conv(f.n, f.w, { pad = 1 })) end, "unknown option 'pad'")
case("conv options not a table", function(g, f) return (g:conv(f.n, f.w, 1)) end, "options must be a table")
case("conv result past 2^53", function(g) return (g:conv(g:param("b", { 1, 4, 1 << 20, 1 << 20 }), g:param("k", { 1 << 20, 4, 1, 1 }))) end, "conv: result shape too large")

-- --------------------------------------------------------- other graph ops ----
case("exp of an integer tensor", function(g, f) return (f.i:exp()) end, "exp: needs a float tensor")
case("clip min > max", function(g, f) return (f.x:clip(2, 1)) end, "min 2 is greater than max 1")
case("clip non-number", function(g, f) return (f.x:clip("a", 1)) end, "bounds must be numbers")
case("convert without a dtype", function(g, f) return (f.x:convert()) end, "a target dtype is required")
case("convert unknown dtype", function(g, f) return (f.x:convert("f99")) end, "unknown dtype 'f99'")
case("constant string", function(g) return (g:constant("pi")) end, "expected a tensor or a number")
case("constant unknown dtype", function(g) return (g:constant(1, "q8")) end, "unknown dtype 'q8'")
case("constant released tensor", function(g) return (g:constant(released_tensor())) end, "released")
case("graph name not a string", function() return (kiln.graph(5)) end, "the name must be a string")
case("graph empty name", function() return (kiln.graph("")) end, "must not be empty")
case("output nothing", function(g) return (g:output()) end, "at least one value")
case("output a string", function(g) return (g:output("x")) end, "output 1 must be a graph value")
case("map not a function", function(g, f) return (g:map(5, f.x)) end, "expected a function or an expression string")
case("map bad expression", function(g, f) return (g:map("x +* y", f.x, f.x)) end, "cannot compile the expression")
case("map returns nothing", function(g, f) return (g:map(function() end, f.x)) end, "the function returned nothing")

-- ------------------------------------------------------------------ g:eval ----
case("eval nil inputs", function(g) return (g:eval(nil)) end, "inputs must be a table")
case("eval a number input", function(g) return (g:eval { x = 5 }) end, "input 'x' must be a kiln.tensor")
case("eval a list", function(g, f) return (g:eval { f.t }) end, "inputs are given by param name")
case("eval missing input", function(g, f) return (g:eval { x = f.t }) end, "eval")
case("eval wrong shape", function(g, f) return (g:eval { x = kiln.rand({ 3, 2 }) }) end, "eval")
case("eval released input", function(g) return (g:eval { x = released_tensor() }) end, "released")

-- ------------------------------------------------------------------- views ----
case("view 2^62", function() return (kiln.view { shape = { BIG } }) end, "size 4611686018427387904 outside [1, 2^40]")
case("view size 0", function() return (kiln.view { shape = { 4, 0 } }) end, "outside [1, 2^40]")
case("view negative size", function() return (kiln.view { shape = { -4 } }) end, "outside [1, 2^40]")
case("view NaN size", function() return (kiln.view { shape = { NAN } }) end, "must be an integer")
case("view names count", function() return (kiln.view { shape = { 4, 6 }, names = { "a" } }) end, "names has 1 entries, shape has 2")
case("view duplicate names", function() return (kiln.view { shape = { 4, 6 }, names = { "a", "a" } }) end, "the same name")
case("view bad name", function() return (kiln.view { shape = { 4 }, names = { "a b" } }) end, "bad name")
case("view of a number", function() return (kiln.view(5)) end, "expected {shape = {...}")
case("view without shape", function() return (kiln.view { names = { "a" } }) end, "shape = {...} is required")
case("view reshape 2^62", function(g, f) return (f.view:reshape { BIG }) end, "bad size 4611686018427387904")
case("view reshape count", function(g, f) return (f.view:reshape { 5, 5 }) end, "24 elements cannot become 25")
case("view reshape of 2^80 elements", function() return (kiln.view { shape = { DIM, DIM } }:reshape { 4 }) end, "cannot become 4")
case("view pad 2^62", function(g, f) return (f.view:pad { a = { BIG, 0 } }) end, "outside [1, 2^40]")
case("view pad maxint", function(g, f) return (f.view:pad { a = { MAXINT, MAXINT } }) end, "Pad amounts must be in [0, 2^40]")
case("view pad negative", function(g, f) return (f.view:pad { a = { -1, 0 } }) end, "view:pad")
case("view pad unknown dim", function(g, f) return (f.view:pad { z = { 1, 1 } }) end, "'z' is not a dim of the view")
case("view slice past the end", function(g, f) return (f.view:slice { a = { 0, 9 } }) end, "view:slice")
case("view add_dim 2^62", function(g, f) return (f.view:add_dim("z", BIG)) end, "size 4611686018427387904 outside [1, 2^40]")
case("view add_dim without a name", function(g, f) return (f.view:add_dim(nil, 4)) end, "the new dim needs a name")
case("view unmerge 2^62", function(g, f) return (f.view:unmerge("a", { "p", "q" }, { BIG, 4 })) end, "outside [1, 2^40]")
case("view unmerge product", function(g, f) return (f.view:unmerge("a", { "p", "q" }, { 3, 3 })) end, "view:unmerge")
case("view embed overflow", function(g, f) return (f.view:embed("a", { "p", "q" }, { DIM, DIM }, { DIM, DIM })) end, "overflows")
case("view broadcast 2^62", function() return (kiln.view { shape = { 1, 6 }, names = { "a", "b" } }:broadcast { a = BIG }) end, "outside [1, 2^40]")
case("view transpose unknown dim", function(g, f) return (f.view:transpose { "a", "z" }) end, "no dim named 'z'")
case("view transpose position 7", function(g, f) return (f.view:transpose { 0, 7 }) end, "dim 7 out of range")
case("view const_dim out of range", function(g, f) return (f.view:const_dim("a", 9)) end, "view:const_dim")
case("view eval arity", function(g, f) return (f.view:eval { 1 }) end, "the coordinate has 1 entries, the view has rank 2")
case("view addr stride 2^62", function(g, f) return (f.view:addr({ 3, 5 }, { BIG, BIG })) end, "view:addr: buffer stride 4611686018427387904")
case("view addr strides past 2^53", function(g, f) return (f.view:addr({ 3, 5 }, { 1 << 52, 1 << 51 })) end, "reach past 2^53 elements")
case("view addr negative stride", function(g, f) return (f.view:addr({ 3, 5 }, { -6, 1 })) end, "stride -6 of dim 0")
case("view vector_len stride 2^62", function(g, f) return (f.view:vector_len(1, nil, { BIG, BIG })) end, "view:vector_len: buffer stride")
case("view vector_len max_len 0", function(g, f) return (f.view:vector_len(1, 0)) end, "max_len must be >= 1")
case("view closed", function() return (closed_view():pad { d0 = { 1, 1 } }) end, "error: this view has been released")
case("view_parse bad text", function() return (kiln.view_parse("[PassThrough")) end, "view text:")
case("conv_views n 2^62", function() return (kiln.conv_views { n = BIG, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3 }) end, "must be in [1, 2^30]")
case("conv_views stride 0", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, stride = 0 }) end, "must be in [1, 2^30]")
case("conv_views padding 2^62", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, padding = BIG }) end, "padding must be in [0, 2^30]")
case("conv_views groups 0", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, groups = 0 }) end, "must be in [1, 2^30]")
case("conv_views missing field", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3 }) end, "field 'x' is required")
case("conv_views bad layout", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, layout = "CHWN" }) end, "layout must be")
case("conv_views padding three", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, padding = { 1, 1, 1 } }) end, "padding must be a number")

case("view add_dim pos 2^62", function(g, f) return (f.view:add_dim("z", 4, BIG)) end, "pos 4611686018427387904 outside [0, 2]")
case("view add_dim pos 2^32", function(g, f) return (f.view:add_dim("z", 4, 1 << 32)) end, "pos 4294967296 outside [0, 2]")
case("view add_dim pos -1", function(g, f) return (f.view:add_dim("z", 4, -1)) end, "outside [0, 2]")
case("view 17 dims", function() return (kiln.view { shape = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 } }) end, "shape has 17 entries (at most 16)")
case("view unmerge size 0", function(g, f) return (f.view:unmerge("a", { "p", "q" }, { 0, 4 })) end, "size 0 outside [1, 2^40]")
case("view embed coefficient minint", function(g, f) return (f.view:embed("a", { "p" }, { 4 }, { MININT })) end, "Embed coefficient -9223372036854775808 out of range")
case("view const_dim 2^62", function(g, f) return (f.view:const_dim("a", BIG)) end, "ConstDim value 4611686018427387904 outside [0, 4)")
case("view slice minint", function(g, f) return (f.view:slice { a = { MININT, 2 } }) end, "Slice needs 0 <= begin < end")
case("view slice maxint", function(g, f) return (f.view:slice { a = { -2, MAXINT } }) end, "Slice needs 0 <= begin < end")
case("view merge unknown dim", function(g, f) return (f.view:merge("m", { "x", "y" })) end, "no upper dim named \"x\"")
case("view compose mismatch", function(g, f) return (f.view:compose(kiln.view { shape = { 5 } })) end, "upper shape of the second view != lower shape of the first")
case("view_parse size 2^62", function() return (kiln.view_parse('[PassThrough ["a"] at [0] -> ["a"] at [0]] bounds=[4611686018427387904] -> [4611686018427387904]')) end, "view text:1:44")
case("view_parse integer too large", function() return (kiln.view_parse('[PassThrough ["a"] at [0] -> ["a"] at [0]] bounds=[99999999999999999999999] -> [4]')) end, "integer too large")
case("conv_views padding minint", function() return (kiln.conv_views { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3, padding = MININT }) end, "padding must be in [0, 2^30]")
case("conv_views product overflow", function() return (kiln.conv_views { n = 1 << 30, c = 1 << 30, h = 1 << 30, w = 1 << 30, k = 1 << 30, y = 1, x = 1 }) end, "overflows")
case("conv_views filter larger than input", function() return (kiln.conv_views { n = 1, c = 4, h = 2, w = 2, k = 4, y = 3, x = 3 }) end, "the dilated filter is larger than the padded input")

-- ------------------------------------------------ compile, perf configs, runs ----
local function small(g, f) g:output(g:dot(f.x, g:param("q", { 3, 4 }))); return g end   -- a GEMM: perf configs apply
case("perf_config a number", function(g, f) return (kiln.compile(small(g, f), { perf_config = 3 })) end, "perf_config must be a string")
case("perf_config garbage", function(g, f) return (kiln.compile(small(g, f), { perf_config = "fast" })) end, "perf")
case("perf_config zeros", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v1:0,0,0,0,0,0" })) end, "perf")
case("perf_config negative", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v1:-64,64,16,4,4,4" })) end, "perf")
case("perf_config huge", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v1:99999999999999999999,64,16,4,4,4" })) end, "perf")
case("perf_config 2^62", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v1:4611686018427387904,64,16,4,4,4" })) end, "perf")
case("perf_config short", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v1:64,64" })) end, "perf")
case("perf_config unknown version", function(g, f) return (kiln.compile(small(g, f), { perf_config = "v9:64,64,16,4,4,4" })) end, "perf")
case("pipeline unknown pass", function(g, f) return (kiln.compile(small(g, f), { pipeline = "cse,no-such-pass" })) end, "no-such-pass")
case("pipeline a number", function(g, f) return (kiln.compile(small(g, f), { pipeline = 5 })) end, "pipeline must be a string or a list of strings")
case("pipeline a function entry", function(g, f) return (kiln.compile(small(g, f), { pipeline = { "cse", print } })) end, "register it with kiln.register_pass")
case("compile unknown target", function(g, f) return (kiln.compile(small(g, f), { target = "z80" })) end, "z80")
case("compile empty targets", function(g, f) return (kiln.compile(small(g, f), { targets = {} })) end, "between 1 and 64 target names")
case("compile unknown option", function(g, f) return (kiln.compile(small(g, f), { opt_level = 3 })) end, "unknown option 'opt_level'")
case("compile on_ir not a function", function(g, f) return (kiln.compile(small(g, f), { on_ir = "print" })) end, "on_ir must be a function")
case("compile a number", function() return (kiln.compile(5)) end, "expected a graph")
case("compile print_ir_after unknown pass", function(g, f) return (kiln.compile(small(g, f), { print_ir_after = { "cse", "no-such-pass" } })) end, "compile: unknown print_ir_after pass 'no-such-pass' (passes: fp8-compute, reduce-split, split-k-workspace, graph-partition, ")
case("compile print_ir_after typo", function(g, f) return (kiln.compile(small(g, f), { print_ir_after = "graph-partiton" })) end, "unknown print_ir_after pass 'graph-partiton' (did you mean 'graph-partition'? passes: fp8-compute, reduce-split, ")
case("program ir unknown pass", function(g, f) return (f.p:ir("after:nope")) end, "program:ir: unknown pass 'nope' (passes: fp8-compute, reduce-split, split-k-workspace, graph-partition, ")
case("run nil inputs", function(g, f) return (f.p:run(nil)) end, "inputs must be a table")
case("run wrong shape", function(g, f) return (f.p:run { a = kiln.rand({ 3, 2 }) }) end, "run")
case("run wrong dtype", function(g, f) return (f.p:run { a = kiln.rand({ 2, 3 }, "f16") }) end, "run")
case("run missing input", function(g, f) return (f.p:run {}) end, "run")
case("run a number input", function(g, f) return (f.p:run { a = 1 }) end, "input 'a' must be a kiln.tensor")
case("run released input", function(g, f) return (f.p:run { a = released_tensor() }) end, "released")
case("run bad options", function(g, f) return (f.p:run({ a = f.t }, 5)) end, "options must be a table")
case("run option typo", function(g, f) return (f.p:run({ a = f.t }, { devcie = "host" })) end, "run: unknown option 'devcie' (did you mean 'device'? options: device, timing)")
case("binary of an unknown kernel", function(g, f) return (f.p:binary("nokernel")) end, "binary: unknown kernel 'nokernel' (kernels: prog_k0)")

case("pipeline syntax", function(g, f) return (kiln.compile(small(g, f), { pipeline = "cse(" })) end, "<pipeline>:1:4: error: expected ',' between passes")
case("pipeline without partitioning", function(g, f) return (kiln.compile(small(g, f), { pipeline = "cse,dce" })) end, "graph-partition must run")
case("pipeline empty entry", function(g, f) return (kiln.compile(small(g, f), { pipeline = "cse,,dce" })) end, "<pipeline>:1:5: error: expected a pass name, found ','")
case("compile without outputs", function(g) return (kiln.compile(g)) end, "the graph has no outputs")
case("prepare sets 2^62", function(g, f) return (f.p:prepare({ a = f.t }, { sets = BIG })) end, "sets must be between 0 and 4096")
case("prepare sets -1", function(g, f) return (f.p:prepare({ a = f.t }, { sets = -1 })) end, "sets must be between 0 and 4096")
case("time reps 2^62", function(g, f) return (f.p:prepare({ a = f.t }):time { reps = BIG }) end, "1 <= reps <= 1e6")
case("time reps 1.5", function(g, f) return (f.p:prepare({ a = f.t }):time { reps = 1.5 }) end, "reps must be an integer")
case("launch a freed run", function(g, f) local r = f.p:prepare({ a = f.t }); r:free(); return (r:launch()) end, "this prepared run has been freed")
case("save to a missing directory", function(g, f) return (f.p:save("/nonexistent-kiln-dir/x.kb")) end, "cannot write '/nonexistent-kiln-dir/x.kb'")
case("load a missing bundle", function() return (kiln.load("/nonexistent-kiln-dir/x.kb")) end, "cannot open '/nonexistent-kiln-dir/x.kb'")

-- ------------------------------------------------------- released tensors ----
case("get on a released tensor", function() return (released_tensor():get { 0, 0 }) end, "released")
case("compare a released tensor", function(g, f) return (kiln.compare(released_tensor(), f.t)) end, "released")
case("compare negative rtol", function(g, f) return (kiln.compare(f.t, f.t, { rtol = -1e-3 })) end, "kiln.compare: rtol must be a non-negative number, got -0.001")
case("compare NaN atol", function(g, f) return (kiln.compare(f.t, f.t, { atol = NAN })) end, "kiln.compare: atol must be a non-negative number")
case("allclose NaN rtol", function(g, f) return (kiln.allclose(f.t, f.t, { rtol = NAN, atol = 1e-6 })) end, "kiln.allclose: rtol must be a non-negative number")
case("allclose negative atol", function(g, f) return (kiln.allclose(f.t, f.t, { atol = -1 })) end, "atol must be a non-negative number, got -1")
case("compare option typo", function(g, f) return (kiln.compare(f.t, f.t, { rtoll = 1e-3 })) end, "kiln.compare: unknown option 'rtoll' (did you mean 'rtol'? options: rtol, atol)")
case("get out of range", function(g, f) return (f.t:get { 5, 0 }) end, "get")
case("get 2^62", function(g, f) return (f.t:get { BIG, 0 }) end, "get")
case("as_layout unknown", function(g, f) return (f.t:as_layout("XY")) end, "XY")
case("astype unknown", function(g, f) return (f.t:astype("f7")) end, "unknown dtype 'f7'")

case("tensor closed by <close>", function() local keep; do local t <close> = kiln.rand({ 2 }); keep = t end; return (keep.shape) end, "this tensor has been released")
case("graph of a destroyed context", function() local ctx = kiln.context(); ctx:destroy(); return (kiln.graph(ctx, "x")) end, "this context has been destroyed")
case("param in a destroyed context", function() local ctx = kiln.context(); local g2 = kiln.graph(ctx, "x"); ctx:destroy(); return (g2:param("v", { 2 })) end, "has been destroyed")
case("op on a value of a destroyed context", function() local ctx = kiln.context(); local v = kiln.graph(ctx, "x"):param("v", { 2 }); ctx:destroy(); return (v + 1) end, "has been destroyed")
case("operands of two contexts", function(g, f) return (f.x + kiln.graph(kiln.context(), "x"):param("v", { 2, 3 })) end, "operand 2 belongs to another kiln context")

-- ----------------------------------------------------------- the .kir parser ----
local function kir(t) return kiln.parse("func.func @f(%a: " .. t .. ") {\n  func.return\n}\n", "bad.kir") end
case("kir 2^62", function() return (kir("tensor<4611686018427387904xf32>")) end, "dimension out of range", "bad.kir:1:")
case("kir 2^40 x 2^40", function() return (kir("tensor<1099511627776x1099511627776xf32>")) end, "shape too large", "bad.kir:1:18")
case("kir 2^62 x 4", function() return (kir("tensor<4611686018427387904x4xf32>")) end, "dimension out of range", "bad.kir:1:")
case("kir negative stride", function() return (kir("tensor<4x4xf32, strides=[-1,1]>")) end, "stride -1 of dim 0", "bad.kir:1:18")
case("kir stride 2^62", function() return (kir("tensor<4x4xf32, strides=[4611686018427387904,1]>")) end, "stride 4611686018427387904 of dim 0", "bad.kir:1:18")
case("kir strides past 2^53", function() return (kir("tensor<1099511627776x2xf32, strides=[16384,1]>")) end, "reach past 2^53", "bad.kir:1:18")
case("kir buffer stride 2^62", function() return (kir("buffer<4x4xf32, strides=[4611686018427387904,1]>")) end, "stride 4611686018427387904", "bad.kir:1:18")
case("kir strides count", function() return (kir("tensor<4x4xf32, strides=[1]>")) end, "1 strides given for a rank-2 type", "bad.kir:1:")
case("kir vector of 0", function() return (kir("vector<0xf32>")) end, "a vector type needs one dimension", "bad.kir:1:")
case("kir rank 17", function() return (kir("tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>")) end, "too many dimensions", "bad.kir:1:")
case("kiln.type 2^40 x 2^40", function() return (kiln.type("tensor<1099511627776x1099511627776xf32>")) end, "shape too large", "<type>:1:1")

-- graph ops in text: m:verify() runs the same inference and attribute checks
local function graph_kir(op, ty)
  return kiln.parse("func.func @g() attributes {graph} {\n  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<1x4x8x8xf32>\n  " ..
                    op .. " : (tensor<1x4x8x8xf32>" .. (op:find("%%x, %%x") and ", tensor<1x4x8x8xf32>" or "") .. ") -> " .. (ty or "tensor<1x4x8x8xf32>") .. "\n  func.return\n}\n", "g.kir"):verify()
end
case("kir broadcast 2^62", function() return (graph_kir('%y = "graph.broadcast"(%x) {shape = [4611686018427387904, 1, 4, 8, 8]}')) end, "result dimension out of range", "g.kir:3:3")
case("kir transpose 2^32", function() return (graph_kir('%y = "graph.transpose"(%x) {perm = [4294967296, 0, 1, 2]}')) end, "perm entry 4294967296 out of range", "g.kir:3:3")
case("kir reduce axis 2^32", function() return (graph_kir('%y = "graph.reduce_sum"(%x) {axes = [4294967296], keepdims = true}')) end, "axis 4294967296 out of range", "g.kir:3:3")
case("kir softmax axis minint", function() return (graph_kir('%y = "graph.softmax"(%x) {axis = -9223372036854775808}')) end, "axis -9223372036854775808 out of range", "g.kir:3:3")
case("kir slice step maxint", function() return (graph_kir('%y = "graph.slice"(%x) {begin = [0, 0, 0, 0], end = [1, 4, 8, 8], step = [1, 1, 1, 9223372036854775807]}')) end, "step 9223372036854775807 out of range", "g.kir:3:3")
case("kir conv padding maxint", function() return (graph_kir('%y = "graph.conv"(%x, %x) {padding = [9223372036854775807, 0, 0, 0]}')) end, "padding 9223372036854775807 out of range", "g.kir:3:3")
case("kir conv stride 0", function() return (graph_kir('%y = "graph.conv"(%x, %x) {stride = [0, 1]}')) end, "stride 0 out of range", "g.kir:3:3")
case("kir result type mismatch", function() return (graph_kir('%y = "graph.relu"(%x)', "tensor<4xf32>")) end, "does not match the inferred", "g.kir:3:3")
case("kiln.op result 2^62", function() return (kiln.op { name = "t.a", results = { "tensor<4611686018427387904xf32>" } }) end, "dimension out of range", "<type>:1:8")
case("attribute nested too deep", function() return (kiln.attr(string.rep("[", 300) .. string.rep("]", 300))) end, "attributes nested too deeply", "<attribute>:1:257")

-- ------------------------------------------------------------------ runner ----
-- The context still works after the failure: the graph the case failed in still takes
-- ops, verifies and (when its params are small) evaluates, and a fresh graph evaluates;
-- both against the same function computed here from the inputs, on fresh random inputs.
local function expect(t, fn)
  local rows = t:totable()
  for i = 1, #rows do for j = 1, #rows[i] do rows[i][j] = fn(rows[i][j]) end end
  return kiln.tensor(rows, "f32")
end
local function check_usable(g)
  local x = g:params()[1].value
  g:output(x + 1)
  assert.is_true(g:verify())
  local inputs, small_enough = {}, true
  for _, p in ipairs(g:params()) do
    local shape, n = {}, 1
    for d in p.type:gmatch("(%d+)x") do shape[#shape + 1] = tonumber(d); n = n * tonumber(d) end
    if n > 4096 then small_enough = false; break end
    inputs[p.name] = kiln.rand(shape, p.type:match("x(%a%w*)>$"))
  end
  if small_enough then
    local out = g:eval(inputs)
    assert.is_true(kiln.allclose(out, expect(inputs.x, function(v) return v + 1 end)))
  end
  local g2 = kiln.graph("fresh")
  local a = g2:param("a", { 2, 3 })
  g2:output((a * 2 + 1):relu())
  local ta = kiln.rand({ 2, 3 }, "f32", { dist = "normal" })
  assert.is_true(kiln.allclose(g2:eval { a = ta }, expect(ta, function(v) return math.max(2 * v + 1, 0) end)))
end

describe("bad input", function()
  setup(function()
    local g = kiln.graph("prog")
    local a = g:param("a", { 2, 3 })
    g:output(a * 3)
    program = kiln.compile(g, { target = "host" })
  end)

  it("has more than 100 cases", function() assert.is_true(#cases > 100, #cases .. " cases") end)

  -- Views only bound each size (2^40); products past int64 saturate or are refused
  -- instead of overflowing (UBSan aborted here before).
  it("handles views whose element count or offsets pass int64", function()
    local v = kiln.view { shape = { DIM, DIM } }
    assert.are.equal(MAXINT, v.numel)
    local w = kiln.view { shape = { DIM, DIM, DIM, 4 } }
    assert.are.equal(1, w:vector_len(3, "f32"))   -- row-major offsets do not fit: no vector access claimed
    assert.are.equal(4, kiln.view { shape = { DIM, 4 } }:vector_len(1, "f32"))
  end)

  -- In a kiln process of its own (the default context stays alive here): each located
  -- error keeps its message and its line, and a new context still evaluates correctly.
  it("keeps located errors after the default context is destroyed", function()
    local script = helper.write_temp([[
local kiln = require "kiln"
kiln.default_context():destroy()
local function show(fn) print((select(2, pcall(fn)))) end
show(function() return (kiln.rand({ 2 }, "f33")) end)
show(function() return (kiln.view { shape = { -1 } }) end)
show(function() return (kiln.tensor({ 1, 2 }, "f99")) end)
local ctx = kiln.context()
local g = kiln.graph(ctx, "g")
show(function() return (g:param("a", { 2 }, "f33")) end)
local a = g:param("a", { 3 })
g:output(a * 2 + 1)
local x = { 0.25, -1.5, 3.125 }
local out = g:eval { a = kiln.tensor(x, "f32") }:totable()
for i = 1, 3 do print(out[i] == x[i] * 2 + 1) end
]], ".lua")
    local out, err, code = helper.run(helper.shell_quote(helper.kiln_bin()) .. " " .. helper.shell_quote(script))
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    for i, want in ipairs { ":4: error: kiln.rand: unknown dtype 'f33'", ":5: error: kiln.view:", ":6: error: kiln.tensor", ":9: error: param: unknown dtype 'f33'" } do
      helper.has(lines[i] or "", script .. want)
    end
    assert.are.same({ "true", "true", "true" }, { lines[5], lines[6], lines[7] })
    os.remove(script)
  end)

  for _, c in ipairs(cases) do
    it(c.name, function()
      local g = kiln.graph("bad")
      local f = fixtures(g)
      local ok, err = pcall(c.fn, g, f)
      assert.is_false(ok, "expected an error, got " .. tostring(err))
      err = tostring(err)
      helper.has(err, c.want)
      helper.has(err, c.loc or (FILE .. ":" .. c.line .. ":"))
      check_usable(g)
    end)
  end
end)
