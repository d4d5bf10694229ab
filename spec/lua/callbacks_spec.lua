-- callbacks_spec.lua — Lua code that C calls back while it works on a context (Lua
-- passes, pipeline functions, patterns, on_ir, op:walk, metamethods of argument
-- tables) cannot pull the context out from under it: ctx:destroy(), <close> and the
-- collector are refused or impossible there, with the Lua line of the offending call.
-- Also: the compile cache and Lua passes, and located errors of tensors/pipelines.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fails, has, line, this_file = helper.fails, helper.has, helper.line, helper.this_file

local SAMPLE = "func.func @f(%a: f32) {\n  %0 = arith.addf %a, %a : f32\n  func.return %0 : f32\n}\n"
local BUSY = "ctx:destroy() inside a callback that runs on this context"

-- A fresh context with the sample module; returns ctx, module.
local function fresh()
  local ctx = kiln.context()
  return ctx, ctx:parse(SAMPLE, "cb.kir")
end

-- e is the busy error, located at line l of this file.
local function refused(e, l)
  has(e, BUSY)
  has(e, this_file() .. ":" .. l .. ":")
end

-- The context still works after a refused destroy: parse, run a pipeline, print.
local function still_usable(ctx, m)
  assert.is_true(m:verify())
  assert.is_true(kiln.run_pipeline(m, "cse,dce"))
  has(tostring(ctx:parse(SAMPLE)), "arith.addf")
end

-- A graph y = x * c in context ctx (default context if nil).
local function scale_graph(name, c, ctx)
  local g = ctx and kiln.graph(ctx, name) or kiln.graph(name)
  g:output(g:param("x", { 4 }, "f32") * c)
  return g
end

describe("ctx:destroy() inside a callback", function()
  it("is refused in a registered Lua pass (run_pipeline), with the Lua line", function()
    local ctx, m = fresh()
    local l
    kiln.register_pass("spec-cb-destroyer", function()
      l = line() + 1
      ctx:destroy()
    end)
    local e = fails(kiln.run_pipeline, m, "cse,spec-cb-destroyer,dce")
    refused(e, l)
    has(e, "Lua pass 'spec-cb-destroyer'")
    kiln.register_pass("spec-cb-destroyer", function() end)
    still_usable(ctx, m)
    ctx:destroy()   -- outside every callback: fine
    assert.are.equal("kiln.context (destroyed)", tostring(ctx))
  end)

  it("is refused in a pipeline function and in run_pipeline's on_ir", function()
    local ctx, m = fresh()
    local l1
    local e = fails(kiln.run_pipeline, m, { "cse", function() l1 = line(); ctx:destroy() end, "dce" })
    refused(e, l1)
    still_usable(ctx, m)
    local l2
    e = fails(kiln.run_pipeline, m, "cse", { on_ir = function() l2 = line(); ctx:destroy() end })
    refused(e, l2)
    still_usable(ctx, m)
  end)

  it("is refused in a Lua pattern and in rw:modify", function()
    local ctx, m = fresh()
    local l1
    local pat = kiln.pattern{ root = "arith.addf", rewrite = function() l1 = line(); ctx:destroy() end }
    local e = fails(kiln.apply_patterns, m, { pat })
    refused(e, l1)
    still_usable(ctx, m)
    local l2
    local pat2 = kiln.pattern{ root = "arith.addf", rewrite = function(op, rw)
      rw:modify(op, function() l2 = line(); ctx:destroy() end)
    end }
    e = fails(kiln.apply_patterns, m, { pat2 })
    refused(e, l2)
    still_usable(ctx, m)
  end)

  it("is refused in compile's on_ir and in a Lua pass of a compile pipeline", function()
    local ctx = kiln.context()
    local g = scale_graph("cb_onir", 2.0, ctx)
    local l1
    local e = fails(kiln.compile, g, { pipeline = "graph-partition", on_ir = function() l1 = line(); ctx:destroy() end })
    refused(e, l1)
    local l2
    kiln.register_pass("spec-cb-destroyer2", function() l2 = line(); ctx:destroy() end)
    e = fails(kiln.compile, g, { pipeline = "spec-cb-destroyer2," .. kiln.default_pipeline() })
    refused(e, l2)
    -- the context and the graph still compile and run correctly
    local p = kiln.compile(g)
    local x = kiln.rand({ 4 }, "f32")
    local inputs = { x = x }
    assert.is_true(kiln.allclose(p:run(inputs), g:eval(inputs)))
    ctx:destroy()
  end)

  it("is refused in op:walk", function()
    local ctx, m = fresh()
    local l
    local e = fails(function() m:walk(function() l = line(); ctx:destroy() end) end)
    refused(e, l)
    still_usable(ctx, m)
  end)

  it("covers <close> and an explicit __gc call", function()
    local ctx, m = fresh()
    local l1
    local e = fails(kiln.run_pipeline, m, { function()
      l1 = line() + 1
      do local c <close> = ctx end
    end })
    refused(e, l1)
    local gc = getmetatable(ctx).__gc
    e = fails(kiln.run_pipeline, m, { function() gc(ctx) end })
    has(e, BUSY)
    still_usable(ctx, m)
  end)

  it("covers metamethods of argument tables that the C side reads", function()
    local ctx, m = fresh()
    local l
    local pipeline = setmetatable({}, { __len = function() l = line(); ctx:destroy(); return 0 end })
    local e = fails(kiln.run_pipeline, m, pipeline)
    refused(e, l)
    local patterns = setmetatable({}, { __len = function() ctx:destroy(); return 0 end })
    has(fails(kiln.apply_patterns, m, patterns), BUSY)
    still_usable(ctx, m)
  end)

  it("covers p:run's option table", function()
    local ctx = kiln.context()
    local g = scale_graph("cb_run", 2.0, ctx)
    local p = kiln.compile(g)
    local inputs = { x = kiln.rand({ 4 }, "f32") }
    local l
    local opts = setmetatable({}, { __index = function() l = line(); ctx:destroy() end })
    local e = fails(p.run, p, inputs, opts)
    refused(e, l)
    assert.is_true(kiln.allclose(p:run(inputs), g:eval(inputs)))
    ctx:destroy()
  end)

  it("covers a graph op builder's argument tables (g:param's shape)", function()
    local ctx = kiln.context()
    local g = kiln.graph(ctx, "cb_param")
    local l
    local shape = setmetatable({}, { __len = function() l = line(); ctx:destroy(); return 1 end,
                                     __index = function() return 4 end })
    local e = fails(g.param, g, "x", shape, "f32")
    refused(e, l)
    has(e, "g:param")
    g:output(g:param("x", { 4 }, "f32") * 2.0)
    local inputs = { x = kiln.rand({ 4 }, "f32") }
    assert.is_true(kiln.allclose(kiln.compile(g):run(inputs), g:eval(inputs)))
    ctx:destroy()
  end)

  it("covers kiln.op's table", function()
    local ctx = kiln.context()
    local l
    local spec = setmetatable({ ctx = ctx, name = "test.cb_op" }, { __index = function(_, k)
      if k == "loc" then l = line(); ctx:destroy() end
    end })
    local e = fails(kiln.op, spec)
    refused(e, l)
    assert.are.equal("test.cb_op", kiln.op{ ctx = ctx, name = "test.cb_op" }.name)
    ctx:destroy()
  end)

  it("covers a finalizer that runs while g:eval reads its inputs", function()
    local ctx = kiln.context()
    local g = scale_graph("cb_eval", 3.0, ctx)
    local inputs = { x = kiln.rand({ 4 }, "f32") }
    local want = g:eval(inputs)
    local eval, err, l = kiln._g.eval, nil, nil
    -- a finalizer that re-arms itself and destroys ctx when it runs inside g:eval's C code
    local function arm()
      setmetatable({}, { __gc = function()
        if err then return end
        if debug.getinfo(2, "f").func == eval then
          l = line() + 1
          local ok, e = pcall(ctx.destroy, ctx)
          err = ok and "destroyed" or e
        else arm() end
      end })
    end
    collectgarbage("incremental", 10, 1000)
    arm()
    local ok, e
    for _ = 1, 20000 do
      if err then break end
      ok, e = pcall(g.eval, g, inputs)
      if not ok then break end
    end
    collectgarbage("incremental", 200, 100)
    assert.is_string(err)
    if err == "destroyed" then
      -- it ran before g:eval held anything (while its guard was made): the call fails, located
      assert.is_false(ok)
      has(e, "has been destroyed")
      return
    end
    assert.is_true(ok, e)
    has(err, BUSY)
    has(err, this_file() .. ":" .. l .. ":")
    has(err, "g:eval")
    assert.is_true(kiln.allclose(g:eval(inputs), want))
    ctx:destroy()
  end)
  it("a busy context is never collected: dropping every reference in a callback is safe", function()
    local weak = setmetatable({}, { __mode = "v" })
    local result
    do
      local ctx = kiln.context()
      local m = ctx:parse(SAMPLE)
      weak.ctx = ctx
      ctx = nil   -- luacheck: ignore
      result = kiln.run_pipeline(m, { function(mod)
        m = nil   -- luacheck: ignore
        for _ = 1, 3 do collectgarbage("collect") end
        assert.are.equal("builtin.module", mod.name)
      end, "cse" })
    end
    assert.is_true(result)
    for _ = 1, 4 do collectgarbage("collect") end
    assert.is_nil(weak.ctx)
  end)

  it("another context may be destroyed inside a callback", function()
    local ctx, m = fresh()
    local other = kiln.context()
    other:parse(SAMPLE)
    assert.is_true(kiln.run_pipeline(m, { function() other:destroy() end }))
    assert.are.equal("kiln.context (destroyed)", tostring(other))
    still_usable(ctx, m)
  end)
end)

describe("the compile cache and Lua passes", function()
  local inputs
  before_each(function() inputs = { x = kiln.rand({ 4 }, "f32") } end)

  -- The float64 reference of x * c.
  local function ref(c) return scale_graph("cb_ref", c):eval(inputs) end
  local function close(out, c) return kiln.allclose(out, ref(c)) end

  -- Registers spec-cb-scale: sets every graph.constant to f.
  local function register_scale(f)
    kiln.register_pass("spec-cb-scale", function(m)
      m:walk(function(op) if op.name == "graph.constant" then op:set_attr("value", { f }) end end)
    end)
  end
  local PIPE = "spec-cb-scale," .. kiln.default_pipeline()

  it("re-registering a Lua pass under the same name never returns the old program", function()
    local g = scale_graph("cb_cache", 1.0)
    register_scale(2.0)
    local p1 = kiln.compile(g, { pipeline = PIPE })
    assert.is_true(close(p1:run(inputs), 2.0))
    register_scale(3.0)
    local p2 = kiln.compile(g, { pipeline = PIPE })
    assert.is_false(p2.from_cache)
    assert.is_true(close(p2:run(inputs), 3.0))
    assert.is_true(close(kiln.compile(g, { pipeline = PIPE, cache = false }):run(inputs), 3.0))
  end)

  it("a Lua pass that reads changed state is not served from the cache", function()
    local g = scale_graph("cb_cache_upvalue", 1.0)
    local factor = 2.0
    kiln.register_pass("spec-cb-upvalue", function(m)
      m:walk(function(op) if op.name == "graph.constant" then op:set_attr("value", { factor }) end end)
    end)
    local pipe = "spec-cb-upvalue," .. kiln.default_pipeline()
    assert.is_true(close(kiln.compile(g, { pipeline = pipe }):run(inputs), 2.0))
    factor = 5.0
    local p = kiln.compile(g, { pipeline = pipe })
    assert.is_false(p.from_cache)
    assert.is_true(close(p:run(inputs), 5.0))
  end)

  it("cache = true opts a Lua pipeline in, keyed by each pass's registration", function()
    local g = scale_graph("cb_cache_optin", 1.0)
    register_scale(2.0)
    local p1 = kiln.compile(g, { pipeline = PIPE, cache = true })
    assert.is_false(p1.from_cache)
    local p2 = kiln.compile(g, { pipeline = PIPE, cache = true })
    assert.is_true(p2.from_cache)
    assert.is_true(close(p2:run(inputs), 2.0))
    register_scale(4.0)
    local p3 = kiln.compile(g, { pipeline = PIPE, cache = true })
    assert.is_false(p3.from_cache)
    assert.is_true(close(p3:run(inputs), 4.0))
  end)

  it("a quoted option value may hold ',', '{', '}' and '\\\"' (split as core/pass.c parses it)", function()
    local g = scale_graph("cb_quoted", 1.0)
    local seen
    kiln.register_pass("spec-cb-quoted", function(m, opts)
      seen = opts.label
      local f = tonumber(opts.label:match("[%d.]+"))
      m:walk(function(op) if op.name == "graph.constant" then op:set_attr("value", { f }) end end)
    end, { options = { { name = "label", kind = "string", default = "1" } } })
    local pipe = 'spec-cb-quoted{label = "a,{2.5}\\"}"},' .. kiln.default_pipeline()
    local p = kiln.compile(g, { pipeline = pipe })
    assert.are.equal('a,{2.5}"}', seen)
    assert.is_true(close(p:run(inputs), 2.5))
    assert.is_string(p:ir("after:spec-cb-quoted"))
    has(p:ir("after:graph-partition"), "graph.launch")   -- each pass after it still has its own snapshot
    assert.are_not.equal(p:ir("after:spec-cb-quoted"), p:ir("after:dce"))
    assert.is_false(kiln.compile(g, { pipeline = pipe }).from_cache)   -- still seen as a Lua pipeline
  end)

  it("pipelines of C passes only are still cached", function()
    local g = scale_graph("cb_cache_c", 2.0)
    kiln.compile(g)
    local p = kiln.compile(g)
    assert.is_true(p.from_cache)
    assert.is_true(close(p:run(inputs), 2.0))
  end)
end)

describe("located errors", function()
  it("t:to() rejects an unknown device name", function()
    local t = kiln.rand({ 2 }, "f32")
    local l = line() + 1
    local e = fails(function() return t:to("tpu") end)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "tensor:to")
    has(e, "tpu")
    assert.are.equal("host", t:to("host").device)
  end)

  it("run_pipeline errors carry the Lua line of the call", function()
    local _, m = fresh()
    local l = line() + 1
    local e = fails(function() return kiln.run_pipeline(m, "cse,no-such-pass") end)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "unknown pass 'no-such-pass'")
    kiln.register_pass("spec-cb-fail", function() return false, "nope" end)
    l = line() + 1
    e = fails(function() return kiln.run_pipeline(m, "spec-cb-fail") end)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "nope")
  end)

  it("a released tensor's properties and methods name the Lua line", function()
    local t = kiln.rand({ 2 }, "f32")
    t:release()
    local l = line() + 1
    local e = fails(function() return t.shape end)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "has been released")
    l = line() + 1
    e = fails(function() return t:get(0) end)
    has(e, this_file() .. ":" .. l .. ":")
    assert.are.equal("kiln.tensor (released)", tostring(t))
  end)
end)

describe("releasing a tensor or a view that a kiln call is reading", function()
  local RELEASED = "release it after that call returns"

  it("is refused in a view builder's argument table, with the Lua line", function()
    local v = kiln.view{ shape = { 2, 3 }, names = { "a", "b" } }
    local l
    local perm = setmetatable({}, { __len = function() l = line(); do local c <close> = v end; return 2 end,
                                    __index = function(_, i) return 2 - i end })
    local e = fails(v.transpose, v, perm)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "view:transpose")
    has(e, RELEASED)
    assert.are.same({ 3, 2 }, v:transpose{ 1, 0 }.shape)
  end)

  it("is refused in kiln.tensor's options table while it copies a tensor", function()
    local src = kiln.rand({ 2, 3 }, "f32")
    local l
    local opts = setmetatable({}, { __index = function() l = line(); src:release() end })
    local e = fails(kiln.tensor, src, "f32", opts)
    has(e, this_file() .. ":" .. l .. ":")
    has(e, "kiln.tensor")
    has(e, RELEASED)
    assert.is_true(kiln.allclose(kiln.tensor(src, "f32", {}), src))
  end)

  it("is refused in t:get's index table and kiln.compare's options", function()
    local t = kiln.rand({ 2, 3 }, "f32")
    local ref = t:clone()
    local l1
    local idx = setmetatable({}, { __len = function() l1 = line(); t:release(); return 2 end,
                                   __index = function(_, i) return i - 1 end })
    local e = fails(t.get, t, idx)
    has(e, this_file() .. ":" .. l1 .. ":")
    has(e, "tensor:get")
    has(e, RELEASED)
    assert.are.equal(ref:get(1, 1), t:get{ 1, 1 })
    local l2
    local tol = setmetatable({}, { __index = function() l2 = line(); t:release() end })
    e = fails(kiln.compare, t, ref, tol)
    has(e, this_file() .. ":" .. l2 .. ":")
    has(e, "kiln.compare")
    has(e, RELEASED)
    assert.is_true(kiln.compare(t, ref).ok)
    t:release()
    assert.are.equal("kiln.tensor (released)", tostring(t))
  end)
end)

describe("strings that an argument table's __index builds", function()
  -- Each entry is a fresh long string that nothing but the C side references, and every
  -- read collects: a pointer kept after popping the value would dangle (ASan reports it).
  local function built(names)
    return setmetatable({}, {
      __len = function() return #names end,
      __index = function(_, i)
        local s = names[i] and string.rep(names[i], 48) .. "_" .. i
        collectgarbage(); collectgarbage()
        return s
      end })
  end
  local function want(names) local r = {}; for i, n in ipairs(names) do r[i] = string.rep(n, 48) .. "_" .. i end; return r end

  it("stay alive while view builders read dim names", function()
    local v = kiln.view { shape = { 2, 3, 4 }, names = built { "a", "b", "c" } }
    assert.are.same(want { "a", "b", "c" }, v.names)
    local w = v:passthrough(built { "x", "y", "z" }, { 2, 0, 1 })
    assert.are.same(want { "x", "y", "z" }, w.names)
    assert.are.same({ 4, 2, 3 }, w.shape)
    local u = v:unmerge(0, built { "p", "q" }, { 1, 2 })
    assert.are.same({ want { "p", "q" }[1], want { "p", "q" }[2], v.names[2], v.names[3] }, u.names)
  end)

  it("stay alive while kiln.conv_views reads its layouts (and names a bad one)", function()
    local base = { n = 1, c = 4, h = 8, w = 8, k = 4, y = 3, x = 3 }
    local function opts(k0)
      return setmetatable({}, { __index = function(_, k)
        if base[k] then return base[k] end
        local s = k == k0 and string.rep("N", 48) .. "X" or nil
        collectgarbage(); collectgarbage()
        return s
      end })
    end
    for _, k in ipairs { "layout", "filter_layout", "output_layout" } do
      local l = line() + 1
      local e = fails(function() return kiln.conv_views(opts(k)) end)
      has(e, this_file() .. ":" .. l .. ":")
      has(e, k .. " must be")
      has(e, 'got "' .. string.rep("N", 48) .. 'X"')
    end
    assert.are.same({ 1, 4, 36 }, kiln.conv_views(base).output.shape)   -- n, k, ho*wo
  end)
end)
