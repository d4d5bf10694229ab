-- kiln/migraphx.lua — the MIGraphX-dialect front end from Lua and the verifying drivers
-- (loaded by kiln/lib.lua; the parser and op mapping are C: frontend/).
--
--   local gs = kiln.migraphx(text [, name])   -- one kiln.graph per func.func: gs[1], gs.test
--   local gs = kiln.migraphx_file(path [, {func = NAME}])  -- func: only that one (others unread)
--   gs[1]:params()   -- {name=, shape=, dtype=, strides=, ...}: what each input must be
--   kiln.migraphx_main(args)    -- `kiln migraphx FILE.mlir [options]`; returns the exit code
--   kiln.conv_config_main(args) -- `kiln conv-config "<MIOpenDriver conv args>" [--layout L]`
--   kiln.migraphx_verify(g [, opts]) -> ok, line, kernels   -- one function, as the driver does
--   kiln.conv_config(spec) -> the parsed fields; kiln.conv_config_graph(fields [, layout]) -> graph
--
-- The drivers compile each function, run it on a device with random inputs (or ones),
-- compare every output with the float64 reference evaluator (g:eval) at the dtype's rtol
-- with an atol of rtol x max|reference| (integers exact; a float output computed through a
-- narrower float intermediate, say f32 from an f16 dot, at that dtype's tolerance), and
-- print one line per function:
--   NAME: PASS (kernels=K, max_rel=R)   or   NAME: FAIL (reason)
return function(kiln)
  local fmt = string.format

  local function wrap_module(m)
    local list = {}
    for _, f in ipairs(m:body():ops()) do
      if f.name == "func.func" and f:attr("graph") ~= nil then
        local g = kiln.graph(f)
        list[#list + 1] = g
        list[g.name] = g
      end
    end
    return list
  end

  -- opts.func: build only that function (the others are skipped unread)
  function kiln.migraphx(text, name, opts)
    if type(text) ~= "string" then error("kiln.migraphx: the text must be a string", 2) end
    return wrap_module(kiln.migraphx_module(text, name or "<string>", opts and opts.func or nil))
  end
  function kiln.migraphx_file(path, opts)
    local f, err = io.open(path, "rb")
    if not f then error(fmt("kiln.migraphx_file: cannot read '%s': %s", path, err), 2) end
    local text = f:read("a")
    f:close()
    return kiln.migraphx(text, path, opts)
  end

  -- ------------------------------------------------------------ inputs ------
  local function make_inputs(g, rand, seed)
    local inputs = {}
    for i, p in ipairs(g:params()) do
      local opts = { strides = p.strides }
      if rand == "ones" then
        inputs[p.name] = kiln.ones(p.shape, p.dtype, opts)
      else
        if seed then opts.seed = seed + i end
        inputs[p.name] = kiln.rand(p.shape, p.dtype, opts)
      end
    end
    return inputs
  end

  -- rocMLIR's printMemref style: a header, then the values nested by rank.
  local function print_memref(t)
    local shape, flat = t.shape, t:contiguous():flat()
    local strides, acc = {}, 1
    for i = #shape, 1, -1 do strides[i] = acc; acc = acc * shape[i] end
    print(fmt("Unranked Memref base@ = 0x0 rank = %d offset = 0 sizes = [%s] strides = [%s] data = ", #shape,
      table.concat(shape, ", "), table.concat(strides, ", ")))
    local function num(v)
      if v == math.floor(v) and math.abs(v) < 1e15 then return fmt("%d", v) end
      return fmt("%.6g", v)
    end
    local function rec(dim, off, indent)
      if dim > #shape then return num(flat[off + 1]) end
      local parts = {}
      for k = 0, shape[dim] - 1 do parts[#parts + 1] = rec(dim + 1, off + k * strides[dim], indent .. " ") end
      local sep = dim == #shape and ",   " or ", \n" .. indent .. " "
      return "[" .. table.concat(parts, sep) .. "]"
    end
    print(#shape == 0 and "[" .. num(flat[1]) .. "]" or rec(1, 0, ""))
  end

  -- The house rule for outputs of accumulations (spec/lua/fused_gen.lua's check): the
  -- dtype's rtol, and an atol of rtol times the largest |reference| (a sum of K terms loses
  -- absolute, not relative, precision where it cancels to near zero); integers exact.
  local RTOL = { f32 = { 1e-5, 1e-6 }, f16 = { 1e-2, 1e-3 }, bf16 = { 2e-2, 1e-2 }, f64 = { 1e-12, 1e-12 } }
  local function tolerance(ref, dtype)
    local t = RTOL[dtype]
    if not t then return nil end
    local scale = 0
    for _, v in ipairs(ref:flat()) do
      local a = math.abs(v)
      if a > scale and a < math.huge then scale = a end
    end
    return { rtol = t[1], atol = math.max(t[2], t[1] * scale) }
  end

  -- The dtype whose tolerance output i of g is checked at: the loosest of its own dtype
  -- and the float dtypes of the computed values it depends on. A value the function rounds
  -- to a narrow dtype (an f16 dot feeding an f32 log-sum-exp) can land one unit of that
  -- dtype from the reference's rounding of the exact value, and that difference carries
  -- into the output. Params, constants, views of them (view ops) and converts of exact
  -- values are exact on both sides and add nothing.
  local function loosest(a, b)
    if not (a and RTOL[a]) then return b end
    if not (b and RTOL[b]) then return a end
    return RTOL[a][1] >= RTOL[b][1] and a or b
  end
  local function check_dtypes(g)
    local prec, outs = {}, {}
    g.func:walk(function(op)
      if op.name == "func.return" then
        for i, v in ipairs(op:operands()) do outs[i] = loosest(v.dtype, prec[v]) end
        return
      end
      if op.name == "func.func" then return end
      local p
      for _, v in ipairs(op:operands()) do p = loosest(p, prec[v]) end
      local exact = op.name == "graph.param" or op.name == "graph.constant" or op:has_trait("view") or
          (op.name == "graph.convert" and not p)
      for _, r in ipairs(op:results()) do prec[r] = exact and p or loosest(p, r.dtype) end
    end)
    return outs
  end

  -- Compiles, runs and verifies graph g; returns ok, the line to print.
  -- --target: a device kind (host, cuda, hip, auto: its own arch) or a target name (sm_90,
  -- gfx942, ...: run on the best device, which must be of that arch).
  local KINDS = { host = true, cuda = true, hip = true, auto = true }
  local function device_and_target(t)
    local dev = kiln.device(KINDS[t] and t or "auto")
    if not KINDS[t] then return dev, t end
    return dev, dev.kind == "host" and "host" or dev.arch
  end
  local function verify_graph(g, o)
    local dok, dev, target = pcall(device_and_target, o.target or "auto")
    if not dok then return false, fmt("%s: FAIL (device: %s)", g.name, tostring(dev)) end
    local ok, p = pcall(kiln.compile, g, { target = target })
    if not ok then return false, fmt("%s: FAIL (compile: %s)", g.name, tostring(p)) end
    local inputs = make_inputs(g, o.rand, o.seed)
    local outs = table.pack(pcall(p.run, p, inputs, { device = dev }))
    if not outs[1] then return false, fmt("%s: FAIL (run: %s)", g.name, tostring(outs[2])) end
    local nk = #p:kernels()
    local line_extra = ""
    if o.time then
      local r = p:prepare(inputs, { device = dev })
      local tm = r:time { warmup = 2, reps = 10 } -- ms per rep: the median is printed
      r:free()
      table.sort(tm)
      line_extra = fmt(", median_ms=%.4g", tm[(#tm + 1) // 2])
    end
    if o.print_results then
      for i = 2, outs.n do print_memref(outs[i]) end
    end
    if not o.verify then return true, fmt("%s: RAN (kernels=%d%s)", g.name, nk, line_extra) end
    local refs = table.pack(pcall(g.eval, g, inputs))
    if not refs[1] then return false, fmt("%s: FAIL (reference: %s)", g.name, tostring(refs[2])) end
    local worst, tol_dt = 0, check_dtypes(g)
    for i = 2, outs.n do
      local dt = outs[i].dtype
      if RTOL[dt] then dt = tol_dt[i - 1] or dt end -- integer outputs stay exact
      local c = kiln.compare(outs[i], refs[i], tolerance(refs[i], dt))
      if not c.ok then return false, fmt("%s: FAIL (output %d: %s)", g.name, i - 1, c.summary) end
      if c.max_rel > worst then worst = c.max_rel end
    end
    return true, fmt("%s: PASS (kernels=%d, max_rel=%.3g%s)", g.name, nk, worst, line_extra), nk
  end
  -- kiln.migraphx_verify(g [, {target=, rand=, seed=, time=}]) -> ok, line, kernels: one
  -- function as `kiln migraphx --verify` checks it (the GPU suite runs the corpus with it).
  function kiln.migraphx_verify(g, o)
    local opts = { rand = "uniform", verify = true }
    for k, v in pairs(o or {}) do opts[k] = v end
    return verify_graph(g, opts)
  end

  local USAGE = [[
usage: kiln migraphx FILE.mlir [--target T] [--func NAME] [--rand uniform|ones|seed=N]
                     [--verify] [--print-results] [--time]
  parse FILE (MIGraphX-dialect MLIR), compile each function (or NAME), run it on the best
  device (or T, or $KILN_DEVICE) with random inputs (or ones), and with --verify compare
  each output with the float64 reference evaluator: one line per function, exit 1 if any fails]]

  local function parse_common(args, o, i)
    local a = args[i]
    local function val()
      local v = a:match("^[^=]+=(.*)$")
      if v then return v, i end
      if args[i + 1] == nil then error(fmt("%s needs a value", a), 0) end
      return args[i + 1], i + 1
    end
    local key = a:match("^(%-%-[%w%-]+)")
    if key == "--target" then o.target, i = val()
    elseif key == "--rand" then
      local v
      v, i = val()
      if v == "ones" or v == "uniform" then o.rand = v
      elseif v:match("^seed=%d+$") then o.seed = tonumber(v:match("%d+")); o.rand = "uniform"
      else error(fmt("--rand: expected uniform, ones or seed=N, got '%s'", v), 0) end
    elseif key == "--verify" then o.verify = true
    elseif key == "--print-results" then o.print_results = true
    elseif key == "--time" then o.time = true
    else return nil end
    return i
  end

  local function default_target()
    local env = os.getenv("KILN_DEVICE")
    if env and env ~= "" then return env end
    return "auto"
  end

  function kiln.migraphx_main(args)
    local o, file = { rand = "uniform" }, nil
    local ok, err = pcall(function()
      local i = 1
      while i <= #args do
        local a = args[i]
        if a == "--" then
          for k = i + 1, #args do
            if file then error(fmt("one input file only (got '%s' and '%s')", file, args[k]), 0) end
            file = args[k]
          end
          break
        end
        if a == "-h" or a == "--help" then print(USAGE); o.help = true; return end
        local ni = parse_common(args, o, i)
        if ni then i = ni
        elseif a:match("^%-%-func") then
          local v = a:match("^%-%-func=(.*)$")
          if not v then i = i + 1; v = args[i] end
          if not v then error("--func needs a value", 0) end
          o.func = v
        elseif a:sub(1, 1) == "-" and a ~= "-" then error(fmt("unknown option '%s'", a), 0)
        elseif file then error(fmt("one input file only (got '%s' and '%s')", file, a), 0)
        else file = a end
        i = i + 1
      end
      if not file then error("no input file", 0) end
    end)
    if not ok then
      io.stderr:write("kiln migraphx: ", tostring(err), "\n", USAGE, "\n")
      return 2
    end
    if o.help then return 0 end
    local text
    if file == "-" then text = io.read("a") else
      local f, ferr = io.open(file, "rb")
      if not f then io.stderr:write(fmt("kiln migraphx: cannot read '%s': %s\n", file, ferr)); return 1 end
      text = f:read("a"); f:close()
    end
    local pok, graphs = pcall(kiln.migraphx, text, file, { func = o.func })
    if not pok then
      local msg = tostring(graphs):gsub("^.-kiln%.migraphx: ", ""):gsub("\n$", "")
      io.stderr:write(msg, "\n")
      return 1
    end
    o.target = o.target or default_target()
    local selected = {}
    for _, g in ipairs(graphs) do
      if not o.func or g.name == o.func then selected[#selected + 1] = g end
    end
    if #selected == 0 then io.stderr:write(fmt("kiln migraphx: no function @%s in %s\n", o.func, file)); return 1 end
    local failed = 0
    for _, g in ipairs(selected) do
      local gok, line = verify_graph(g, o)
      print(line)
      if not gok then failed = failed + 1 end
    end
    return failed == 0 and 0 or 1
  end

  -- --------------------------------------------------------- conv-config ----
  -- MIOpenDriver's conv arguments: -n batch -c channels -H -W -k filters -y -x (filter
  -- height, width) -p -q (padding h, w) -u -v (stride h, w) -l -j (dilation h, w) -g groups
  -- -t data type (f32 fp32 f16 fp16 bf16 i8 int8) -F direction (1 = forward only).
  local CONV_FLAGS = { n = "n", c = "c", H = "H", W = "W", k = "k", y = "y", x = "x", p = "p", q = "q", u = "u",
    v = "v", l = "l", j = "j", g = "g", t = "t", F = "F", m = "m", _ = "_", i = "i", V = "V", w = "w", s = "s",
    b = "b", S = "S", P = "P", z = "z" }
  local IGNORED = { m = true, _ = true, i = true, V = true, w = true, s = true, b = true, S = true, P = true,
    z = true }
  local DT = { f32 = "f32", fp32 = "f32", f16 = "f16", fp16 = "f16", bf16 = "bf16", i8 = "i8", int8 = "i8",
    int8x4 = nil }
  function kiln.conv_config(spec)
    local c = { n = 1, c = 1, H = 1, W = 1, k = 1, y = 1, x = 1, p = 0, q = 0, u = 1, v = 1, l = 1, j = 1, g = 1,
      t = "f32", F = 1 }
    local toks = {}
    for w in spec:gmatch("%S+") do toks[#toks + 1] = w end
    local i = 1
    while i <= #toks do
      local flag = toks[i]:match("^%-(%a_?)$") or toks[i]:match("^%-(_)$")
      if not flag or not CONV_FLAGS[flag] then error(fmt("conv-config: unknown flag '%s'", toks[i]), 0) end
      local val = toks[i + 1]
      if val == nil then error(fmt("conv-config: -%s needs a value", flag), 0) end
      if flag == "t" then
        if not DT[val] then error(fmt("conv-config: -t %s is not supported (f32 f16 bf16 i8)", val), 0) end
        c.t = DT[val]
      elseif not IGNORED[flag] then
        local nv = math.tointeger(tonumber(val))
        if not nv then error(fmt("conv-config: -%s needs an integer, got '%s'", flag, val), 0) end
        c[flag] = nv
      end
      i = i + 2
    end
    if c.F ~= 1 then
      error(fmt("conv-config: -F %d is not supported (only -F 1, forward convolution; kiln has no backward passes)",
        c.F), 0)
    end
    if c.c % c.g ~= 0 or c.k % c.g ~= 0 then
      error(fmt("conv-config: -c %d and -k %d must be multiples of -g %d", c.c, c.k, c.g), 0)
    end
    return c
  end
  function kiln.conv_config_graph(c, layout)
    layout = layout or "NCHW"
    if layout ~= "NCHW" and layout ~= "NHWC" then error(fmt("conv-config: --layout %s (NCHW or NHWC)", layout), 0) end
    local g = kiln.graph("conv")
    local x = g:param("x", { c.n, c.c, c.H, c.W }, c.t, { layout = layout })
    local w = g:param("w", { c.k, c.c // c.g, c.y, c.x }, c.t, { layout = layout == "NHWC" and "KYXC" or nil })
    g:output(g:conv(x, w, { stride = { c.u, c.v }, padding = { c.p, c.q }, dilation = { c.l, c.j }, groups = c.g }))
    return g
  end

  local CUSAGE = [[
usage: kiln conv-config "-n N -c C -H H -W W -k K -y Y -x X -p P -q Q -u U -v V -l L -j J -g G -t T -F 1"
                        [--layout NCHW|NHWC] [--target T] [--rand uniform|ones|seed=N] [--print-results]
  builds the forward convolution of MIOpenDriver's arguments, verifies it against the
  reference evaluator and times it]]
  function kiln.conv_config_main(args)
    local o, spec, layout = { rand = "uniform", verify = true, time = true }, nil, nil
    local ok, err = pcall(function()
      local i = 1
      while i <= #args do
        local a = args[i]
        if a == "--" then
          for k = i + 1, #args do
            if spec then error(fmt("one conv spec only (quote it): got '%s' too", args[k]), 0) end
            spec = args[k]
          end
          break
        end
        if a == "-h" or a == "--help" then print(CUSAGE); o.help = true; return end
        local ni = parse_common(args, o, i)
        if ni then i = ni
        elseif a:match("^%-%-layout") then
          layout = a:match("^%-%-layout=(.*)$")
          if not layout then i = i + 1; layout = args[i] end
          if not layout then error("--layout needs a value", 0) end
        elseif spec then error(fmt("one conv spec only (quote it): got '%s' too", a), 0)
        else spec = a end
        i = i + 1
      end
      if not spec then error("no conv spec", 0) end
    end)
    if not ok then io.stderr:write("kiln conv-config: ", tostring(err), "\n", CUSAGE, "\n"); return 2 end
    if o.help then return 0 end
    local gok, g = pcall(function() return kiln.conv_config_graph(kiln.conv_config(spec), layout) end)
    if not gok then io.stderr:write("kiln ", tostring(g), "\n"); return 1 end
    o.target = o.target or default_target()
    local vok, line = verify_graph(g, o)
    print(line)
    return vok and 0 or 1
  end
end
