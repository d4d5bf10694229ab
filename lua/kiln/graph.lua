-- kiln/graph.lua — the graph DSL (loaded by kiln/lib.lua; C core in lua/kiln_lua_graph.c).
--
--   local g = kiln.graph("name")                 -- a module holding one graph function
--   local x = g:param("x", {1, 7, 7, 8}, "f32", {layout = "NHWC"})
--   local w = g:param("w", {4, 8, 1, 1}, "f32")
--   local y = g:conv(x, w, {stride = 1, padding = 0}) + g:param("b", {1, 4, 1, 1}, "f32")
--   g:output(y:relu())
--   local out = g:eval{x = kiln.rand({1, 7, 7, 8}, "f32", {layout = "NHWC"}), w = ..., b = ...}
--
-- Values (the "kiln.value" IR handles of the graph ops' results) support + - * / ^ and
-- unary -, and methods (x:relu(), x:sum{1}, x:reshape{...}, ...); plain numbers mix in as
-- scalar constants of the other operand's dtype. Shapes are logical; axes, permutations
-- and slice bounds are 0-based (negative axes count from the end where the op allows).
-- Every op is built in C with shape inference; errors are Lua errors that name the op,
-- the operands' shapes and the Lua line that built it.
local G

local HELP = [[
kiln — tensors, graphs, devices, compile (indices, axes, perms are 0-based)
  t = kiln.tensor({{1, 2}, {3, 4}} [, "f32"] [, {layout="NHWC"} | {strides={...}} | {shape={...}}])
  kiln.zeros/ones(shape [, dtype] [, opts])  kiln.full(shape, v [, dtype] [, opts])
  kiln.rand(shape [, dtype] [, {seed=, dist="uniform"|"normal", layout=, strides=}])  (fresh seed per call)
  t.shape t.dtype t.strides t.layout t.device t.rank #t   t:totable() t:flat() t:get{i,j} t:set({i,j}, v)
  t:as_layout("NHWC") t:contiguous() t:astype("f16") t:clone() t:to(dev) tostring(t) t:tostring{threshold=}
  kiln.compare(a, ref [, {rtol=, atol=}]) -> {max_abs, max_rel, mismatches, first_index, summary, ok}
  kiln.allclose(a, ref [, {rtol=, atol=}]) -> bool, report        (tolerances default by dtype)
  g = kiln.graph("name")  g:param(name, shape, dtype [, {layout=}|{strides=}])  g:constant(t | n [, dtype])
  g:conv(x, w, {stride=, padding= n|{ph,pw}|{t,b,l,r}, dilation=, groups=})  g:dot(a, b, {transpose_a=, transpose_b=})
    (rank-3 / rank-5 x: 1-D / 3-D, stride= dilation= n|{per dim}, padding= n|{per dim}|{begin,end per dim})  g:quant_dot g:quant_conv (i8 or u8 -> i32, fp8 -> f32)
  g:quantize(x, scale [, zp]) (-> i8, u8 / fp8 with a u8 / fp8 zp; ties to even, saturating; fp8 not rounded)  g:dequantize(q, scale [, zp])
  g:greater/greater_equal(a, b) (1/0 in the operands' dtype)
  g:add/sub/mul/div/max/min/pow(a, b)  a + b  a * 2  -a  a ^ b   g:where(c, a, b)  g:concat({a, b}, axis)
  x:relu() exp log sqrt rsqrt tanh sigmoid neg abs erf recip round floor ceil  x:clip(lo, hi) x:convert("f16") x:max(y) x:min(y)
  x:reshape{...} x:transpose{...} x:broadcast{...} x:slice(begin, end [, step]) | x:slice(axis, b, e)
  x:sum(axes [, keepdims]) x:mean(..) x:reduce_max(..) x:softmax([axis=-1])   x.shape x.dtype x.rank
  g:map(function(x, y) return x * y + 1 end, a, b)  g:map("x * y + 1", a, b)
  g:output(v [, {layout=|strides=}], ...)  g:print()  tostring(g)  g:eval{x = t, ...} -> outputs...  g.module g.func g:params()
  dev = kiln.device("host"|"cuda"|"hip"|"auto")  dev.name dev.kind dev.arch dev:info()   kiln.targets()
  p = kiln.compile(g, {target="host" | targets={...}, perf_config=, pipeline=, print_ir_after="all"|{names},
                       on_ir=function(pass, text) end, cache=false, strict_fp=true, cache_dir=DIR|false,
                       tuning_db=PATH|false, tuning_device=)  (also g:compile{...})
  p:run{x = t, ...} [, {device = dev, timing = t}] -> outputs...   p:kernels() p:ir("after:pass") p:plan() p:plan_text() p:binary(k)
  p.compile_ms p.compile_phases p.from_cache p.disk_cache p.targets   kiln.cache_stats([dir]) kiln.cache_clear([dir])
  memory: the compile cache keeps the 32 most recently used programs; a program's IR goes with it
  kiln.compile_cache([ctx] [, max]) -> {entries=, max=}   kiln.collect([ctx]) -> n (drop the cache(s), collect now)
  g = kiln.graph(kiln.context(), "name")   a graph in a context of its own: its IR is freed with it and its programs
  kiln.tuning_space(g, {target=, level="quick"|"full"|"exhaustive", rejected=true}) -> configs [, {{config=, reason=}}]   p:code_object(k, "gfx942") p:disasm(k, target)  p:save(path) kiln.load(path)
  res = kiln.tune(g, {target=, device=, level="quick"|"full"|"exhaustive", jobs=, runs=, db=PATH|false, progress=true|fn,
                      shard="I/N", configs=})  -> {best={config=, ms=}, results={...}, total_ms=, profile={...}, ...}   kiln.tune_table(res)
  kiln.tuning_db_path() kiln.tuning_db_read(path) -> records, warnings  kiln.tuning_db_write(path, records)
  kiln.tuning_db_merge(path, {shard.db, ...})   p:kernels()[i].perf_config_source ("user"|"tuned (db)"|"heuristic")  (kiln tune --help)
  p:kernels("gfx942")[i].amdgpu -> {vgpr, agpr, sgpr, lds_bytes, scratch_bytes, occupancy (waves/SIMD), occupancy_limit, loop = {mfma, wmma, global_load, ds_read, ds_write, s_waitcnt, s_barrier, ...}}
  p:asm(k [, target]) p:llvm_opt(k [, target]) p:object(k [, target])   (command line: kiln compile --help)
  r = p:prepare(inputs, {device=, sets=})  r:launch() r:time{warmup=, reps=} r:outputs() r:free()   p:load_kernels{device=}
  kiln.clock_ms()
  v = kiln.view{shape={4, 6}, names={"a", "b"}}  v:pad{a={1,1}} :slice{..} :embed(..) :unmerge(..) :merge(..)
  :broadcast{..} :add_dim(..) :const_dim(..) :transpose{..} :reshape{..} :passthrough(..)
  v:eval{i, j} -> coords, valid  v:compose(w) v:invert() v:simplify() v:vector_len(dim, "f32")
  v.shape v.lower_shape tostring(v) kiln.view_parse(text) kiln.attr(v) attr.view kiln.conv_views{...}]]

return function(kiln)
  G = kiln._g
  local raise = G.raise
  local VMT = G.metatable("kiln.value")

  local function is_value(x) return getmetatable(x) == VMT end
  local function is_tensor(x) return kiln.is_tensor(x) end

  local function fmt(...) return string.format(...) end

  local function int(x, what, field)
    local i = math.tointeger(x)
    if i == nil then raise(fmt("%s: %s must be an integer, got %s", what, field, tostring(x))) end
    return i
  end
  local function ints(t, what, field)
    if type(t) == "number" then return { int(t, what, field) } end
    if type(t) ~= "table" then raise(fmt("%s: %s must be a list of integers, got a %s", what, field, type(t))) end
    local r = {}
    for i = 1, #t do r[i] = int(t[i], what, field) end
    return r
  end
  -- a number or a pair -> {a, b}
  local function pair(t, what, field)
    local r = ints(t, what, field)
    if #r == 1 then return { r[1], r[1] } end
    if #r ~= 2 then raise(fmt("%s: %s must be a number or {h, w}, got %d entries", what, field, #r)) end
    return r
  end
  -- unknown keys raise with the valid ones (the one helper: kiln._check_opts)
  local function check_opts(opts, what, known) return kiln._check_opts(opts, what, known) end

  -- The graph function a value belongs to.
  local function func_of(v, what)
    local f = G.graph_of(v)
    if not f then raise(fmt("%s: the value is not part of a graph", what)) end
    return f
  end

  -- Turns x into a value of graph func f: values pass, numbers become scalar
  -- constants of `dtype`, tensors and nested tables become constants.
  local function lift(f, x, dtype, what)
    if is_value(x) then return x end
    if type(x) == "number" or type(x) == "boolean" then
      if type(x) == "boolean" then x = x and 1 or 0 end
      return G.constant(f, x, dtype)
    end
    if is_tensor(x) then return G.constant(f, x) end
    if type(x) == "table" then return G.constant(f, kiln.tensor(x, dtype)) end
    raise(fmt("%s: expected a graph value, a number or a tensor, got a %s", what, type(x)))
  end

  local function build(f, name, operands, attrs, dtype)
    return G.build(f, name, operands, attrs, dtype)
  end

  -- Binary op on two operands, at least one a value (f may be nil: taken from them).
  local function binop(f, name, a, b)
    local va = is_value(a) and a or nil
    local vb = is_value(b) and b or nil
    local like = va or vb
    if not like then
      if f == nil then raise(fmt("%s: at least one operand must be a graph value", name)) end
      a, b = lift(f, a, nil, name), lift(f, b, nil, name)
      return build(f, name, { a, b })
    end
    f = f or func_of(like, name)
    a = lift(f, a, like.dtype, name)
    b = lift(f, b, like.dtype, name)
    return build(f, name, { a, b })
  end
  local function unop(f, name, x)
    if not is_value(x) then
      if f == nil then raise(fmt("%s: the operand must be a graph value, got a %s", name, type(x))) end
      x = lift(f, x, nil, name)
    end
    return build(f or func_of(x, name), name, { x })
  end

  -- Every op with the graph function first; Graph methods and value methods use these.
  local UNARY = { "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "erf", "recip", "round", "floor", "ceil" }
  local ops = {}
  for _, n in ipairs { "add", "sub", "mul", "div", "max", "min", "pow", "greater", "greater_equal" } do
    ops[n] = function(f, a, b) return binop(f, n, a, b) end
  end
  for _, n in ipairs(UNARY) do
    ops[n] = function(f, x) return unop(f, n, x) end
  end

  local CONV_OPTS = { stride = true, padding = true, dilation = true, groups = true }
  -- conv / quant_conv: 2-D (rank 4) as {h, w} pairs, padding {t, b, l, r}; 1-D (rank 3)
  -- and 3-D (rank 5): a number or one per spatial dim, padding also {begin, end} per dim
  local function conv_attrs(x, opts, what)
    opts = check_opts(opts, what, CONV_OPTS)
    local attrs = {}
    local sp = is_value(x) and x.rank - 2 or 2
    local function spatial(v, field)
      if sp == 2 then return pair(v, what, field) end
      local r = ints(v, what, field)
      if type(v) == "number" then for i = 2, sp do r[i] = r[1] end end
      return r
    end
    if opts.stride ~= nil then attrs.stride = spatial(opts.stride, "stride") end
    if opts.dilation ~= nil then attrs.dilation = spatial(opts.dilation, "dilation") end
    if opts.groups ~= nil then attrs.groups = int(opts.groups, what, "groups") end
    if opts.padding ~= nil then
      local p = ints(opts.padding, what, "padding")
      if sp ~= 2 then
        if type(opts.padding) == "number" then for i = 2, 2 * sp do p[i] = p[1] end end
      elseif #p == 1 then p = { p[1], p[1], p[1], p[1] }
      elseif #p == 2 then p = { p[1], p[1], p[2], p[2] }
      elseif #p ~= 4 then raise(fmt("%s: padding must be a number, {ph, pw} or {top, bottom, left, right}, got %d entries", what, #p)) end
      attrs.padding = p
    end
    return attrs
  end
  for _, name in ipairs { "conv", "quant_conv" } do
    ops[name] = function(f, x, w, opts)
      local attrs = conv_attrs(x, opts, name)
      f = f or func_of(x, name)
      return build(f, name, { lift(f, x, nil, name), lift(f, w, nil, name) }, attrs)
    end
  end
  -- quantize(x, scale [, zero_point]) -> i8 (u8 / fp8 with a u8 / fp8 zero_point tensor); dequantize(x, scale [, zero_point]) -> scale's dtype
  for _, name in ipairs { "quantize", "dequantize" } do
    ops[name] = function(f, x, scale, zp)
      local like = is_value(x) and x or scale
      f = f or func_of(like, name)
      local sdt = is_value(scale) and scale.dtype or (name == "quantize" and x.dtype) or nil
      local vals = { lift(f, x, nil, name), lift(f, scale, sdt, name) }
      if zp ~= nil then vals[3] = lift(f, zp, name == "quantize" and "i8" or x.dtype, name) end
      return build(f, name, vals)
    end
  end
  local DOT_OPTS = { transpose_a = true, transpose_b = true }
  for _, name in ipairs { "dot", "quant_dot" } do
    ops[name] = function(f, a, b, opts)
      opts = check_opts(opts, name, DOT_OPTS)
      f = f or func_of(is_value(a) and a or b, name)
      return build(f, name, { lift(f, a, nil, name), lift(f, b, nil, name) },
                   { transpose_a = opts.transpose_a and true or false, transpose_b = opts.transpose_b and true or false })
    end
  end
  function ops.clip(f, x, lo, hi)
    if type(lo) ~= "number" or type(hi) ~= "number" then
      raise(fmt("clip: bounds must be numbers, got %s and %s", type(lo), type(hi)))
    end
    return build(f or func_of(x, "clip"), "clip", { x }, { min = lo + 0.0, max = hi + 0.0 })
  end
  function ops.where(f, c, a, b)
    local like = is_value(a) and a or (is_value(b) and b) or nil
    f = f or func_of(like or c, "where")
    local dt = like and like.dtype or nil
    return build(f, "where", { lift(f, c, dt, "where"), lift(f, a, dt, "where"), lift(f, b, dt, "where") })
  end
  function ops.convert(f, x, dtype)
    if dtype == nil then raise("convert: a target dtype is required (e.g. x:convert(\"f16\"))") end
    return build(f or func_of(x, "convert"), "convert", { x }, nil, dtype)
  end
  function ops.broadcast(f, x, shape)
    return build(f or func_of(x, "broadcast"), "broadcast", { x }, { shape = ints(shape, "broadcast", "shape") })
  end
  function ops.transpose(f, x, perm)
    if perm == nil and x.rank == 2 then perm = { 1, 0 } end
    return build(f or func_of(x, "transpose"), "transpose", { x }, { perm = ints(perm, "transpose", "perm") })
  end
  function ops.reshape(f, x, shape)
    return build(f or func_of(x, "reshape"), "reshape", { x }, { shape = ints(shape, "reshape", "shape") })
  end
  -- slice(x, begin, end [, step]) with a list per dim, or slice(x, axis, b, e [, step]).
  function ops.slice(f, x, a, b, c, d)
    local rank = x.rank
    local begin, stop, step
    if type(a) == "number" then
      local axis = int(a, "slice", "axis")
      if axis < 0 then axis = axis + rank end
      if axis < 0 or axis >= rank then raise(fmt("slice: axis %d out of range for rank %d", a, rank)) end
      local shape = x.shape
      begin, stop, step = {}, {}, {}
      for i = 1, rank do begin[i], stop[i], step[i] = 0, shape[i], 1 end
      begin[axis + 1] = int(b, "slice", "begin")
      stop[axis + 1] = int(c, "slice", "end")
      step[axis + 1] = d and int(d, "slice", "step") or 1
    else
      begin, stop = ints(a, "slice", "begin"), ints(b, "slice", "end")
      if c ~= nil then step = ints(c, "slice", "step") end
    end
    return build(f or func_of(x, "slice"), "slice", { x }, { begin = begin, ["end"] = stop, step = step })
  end
  function ops.concat(f, list, axis)
    if type(list) ~= "table" or is_value(list) then raise("concat: expected a list of values") end
    if #list == 0 then raise("concat: expected at least one value") end
    local like
    for _, v in ipairs(list) do if is_value(v) then like = v; break end end
    f = f or (like and func_of(like, "concat"))
    if not f then raise("concat: at least one operand must be a graph value") end
    local vals = {}
    for i, v in ipairs(list) do vals[i] = lift(f, v, like and like.dtype, "concat") end
    return build(f, "concat", vals, { axis = int(axis or 0, "concat", "axis") })
  end
  local function reduce(name)
    return function(f, x, axes, keepdims)
      if type(axes) == "table" and (axes.axes ~= nil or axes.keepdims ~= nil) then
        axes, keepdims = axes.axes, axes.keepdims
      end
      if axes == nil then
        axes = {}
        for i = 1, x.rank do axes[i] = i - 1 end
      end
      return build(f or func_of(x, name), name, { x }, { axes = ints(axes, name, "axes"), keepdims = keepdims and true or false })
    end
  end
  ops.reduce_sum, ops.reduce_max, ops.reduce_mean = reduce("reduce_sum"), reduce("reduce_max"), reduce("reduce_mean")
  ops.sum, ops.mean = ops.reduce_sum, ops.reduce_mean
  function ops.softmax(f, x, axis)
    return build(f or func_of(x, "softmax"), "softmax", { x }, { axis = int(axis or -1, "softmax", "axis") })
  end
  kiln.graph_ops = ops

  -- ------------------------------------------------------------- Graph ------
  local Graph = {}
  Graph.__index = Graph
  kiln.Graph = Graph

  local function wrap(m, f, name)
    return setmetatable({ module = m, func = f, name = name }, Graph)
  end

  -- kiln.graph([ctx,] name) | kiln.graph(module_or_graph_func_op)
  function kiln.graph(a, b)
    if type(a) == "userdata" and getmetatable(a) == G.metatable("kiln.op") then
      local f = a
      if not (f.name == "func.func" and f:attr("graph") ~= nil) then
        f = nil
        for _, o in ipairs(a:body() and a:body():ops() or {}) do
          if o.name == "func.func" and o:attr("graph") ~= nil then f = o; break end
        end
        if not f then raise("kiln.graph: the op holds no graph function (func.func with the 'graph' attribute)") end
      end
      local m = f:parent() or f
      return wrap(m, f, f:attr("sym_name"))
    end
    local m, f
    if type(a) == "userdata" then m, f = G.new(a, b or "graph"); a = b
    else
      if a ~= nil and type(a) ~= "string" then raise(fmt("kiln.graph: the name must be a string, got a %s", type(a))) end
      m, f = G.new(a or "graph")
    end
    return wrap(m, f, a or "graph")
  end
  function kiln.is_graph(x) return getmetatable(x) == Graph end

  function Graph:param(name, shape, dtype, opts) return G.param(self.func, name, shape, dtype, opts) end
  function Graph:constant(x, dtype)
    if type(x) == "table" and not is_tensor(x) then x = kiln.tensor(x, dtype) end
    return G.constant(self.func, x, dtype)
  end
  for name, fn in pairs(ops) do
    Graph[name] = function(self, ...) return fn(self.func, ...) end
  end
  -- g:output(v1, v2, ...) or g:output({v1, v2, ...}); an options table after a value
  -- ({layout = "NHWC"} or {strides = {...}}) gives that output's memory layout.
  local function is_layout_opts(x)
    return type(x) == "table" and not is_value(x) and getmetatable(x) == nil and x[1] == nil
        and (x.layout ~= nil or x.strides ~= nil)
  end
  function Graph:output(...)
    local args = table.pack(...)
    if args.n == 1 and type(args[1]) == "table" and not is_value(args[1]) and not is_layout_opts(args[1]) then
      args = table.pack(table.unpack(args[1]))
    end
    local vals, opts = {}, {}
    for i = 1, args.n do
      local a = args[i]
      if is_value(a) then
        vals[#vals + 1] = a
      elseif (is_layout_opts(a) or (type(a) == "table" and not is_value(a) and next(a) ~= nil and a[1] == nil))
          and #vals > 0 and opts[#vals] == nil then
        opts[#vals] = a -- its keys are checked by G.output_strides
      elseif is_layout_opts(a) then
        raise(fmt("output: argument %d: a layout table must follow the value it lays out", i))
      else
        raise(fmt("output: output %d must be a graph value, got a %s", #vals + 1, type(a)))
      end
    end
    local strides = {}  -- checked before anything changes
    for i = 1, #vals do
      if opts[i] then strides[i] = G.output_strides(vals[i], i, opts[i]) end
    end
    G.output(self.func, table.unpack(vals))
    for i = 1, #vals do
      if strides[i] then G.output_layout(self.func, i, { strides = strides[i] }) end
    end
    return self
  end
  function Graph:hint(x, opts) return G.hint(self.func, x, opts) end
  function Graph:print(opts) return self.module:print(opts) end
  function Graph:verify() return self.module:verify() end
  function Graph:eval(inputs) return G.eval(self.func, inputs) end
  function Graph:params() return G.params(self.func) end
  function Graph:outputs()
    local ret = self.func:body():terminator()
    return ret and ret:operands() or {}
  end
  function Graph:ops() return self.func:body():ops() end
  function Graph:compile(opts) return kiln.compile(self, opts) end
  Graph.__tostring = function(self) return tostring(self.module) end

  -- Element-wise helper: calls fn with the values (tensors and tables become
  -- constants; numbers stay numbers); fn may be a Lua expression in x, y, z, w.
  local EXPR_ENV = setmetatable({}, { __index = _G })
  for _, n in ipairs(UNARY) do
    EXPR_ENV[n] = function(v) return ops[n](nil, v) end
  end
  EXPR_ENV.max = function(a, b) return ops.max(nil, a, b) end
  EXPR_ENV.min = function(a, b) return ops.min(nil, a, b) end
  EXPR_ENV.clip = function(v, lo, hi) return ops.clip(nil, v, lo, hi) end
  EXPR_ENV.where = function(c, a, b) return ops.where(nil, c, a, b) end
  EXPR_ENV.convert = function(v, dt) return ops.convert(nil, v, dt) end
  function Graph:map(fn, ...)
    if type(fn) == "string" then
      local src = "local x, y, z, w = ...; return " .. fn
      local chunk, err = load(src, "=map", "t", EXPR_ENV)
      if not chunk then raise(fmt("map: cannot compile the expression %q: %s", fn, err)) end
      fn = chunk
    elseif type(fn) ~= "function" then
      raise(fmt("map: expected a function or an expression string, got a %s", type(fn)))
    end
    local args = table.pack(...)
    local like
    for i = 1, args.n do if is_value(args[i]) then like = args[i]; break end end
    for i = 1, args.n do
      if type(args[i]) ~= "number" then args[i] = lift(self.func, args[i], like and like.dtype, "map") end
    end
    local res = table.pack(fn(table.unpack(args, 1, args.n)))
    if res.n == 0 then raise("map: the function returned nothing") end
    for i = 1, res.n do
      if type(res[i]) == "number" then res[i] = lift(self.func, res[i], like and like.dtype, "map")
      elseif not is_value(res[i]) then raise(fmt("map: result %d is a %s, not a graph value", i, type(res[i]))) end
    end
    return table.unpack(res, 1, res.n)
  end

  -- ------------------------------------------------------------ values ------
  VMT.__add = function(a, b) return binop(nil, "add", a, b) end
  VMT.__sub = function(a, b) return binop(nil, "sub", a, b) end
  VMT.__mul = function(a, b) return binop(nil, "mul", a, b) end
  VMT.__div = function(a, b) return binop(nil, "div", a, b) end
  VMT.__pow = function(a, b) return binop(nil, "pow", a, b) end
  VMT.__unm = function(a) return unop(nil, "neg", a) end

  local vm = kiln.methods.value
  local function value_method(n)
    if vm[n] == nil then vm[n] = function(self, ...) return ops[n](nil, self, ...) end end
  end
  for _, n in ipairs(UNARY) do value_method(n) end
  for _, n in ipairs { "greater", "greater_equal", "quantize", "dequantize",
                       "quant_dot", "quant_conv", "clip", "convert", "broadcast", "transpose", "reshape", "slice",
                       "sum", "mean", "reduce_sum", "reduce_max", "reduce_mean", "softmax",
                       "add", "sub", "mul", "div", "max", "min", "pow", "dot", "conv" } do
    value_method(n)
  end

  -- ------------------------------------------------------------ help --------
  local base_help = kiln.help
  function kiln.help(topic)
    if topic == nil or topic == "ir" then if base_help then base_help() end end
    if topic == nil or topic ~= "ir" then print(HELP) end
  end
end
