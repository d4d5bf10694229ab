-- compile_spec.lua — devices, targets, kiln.compile options and errors, and (tagged
-- #compile) end-to-end compiled programs checked against g:eval on fresh random inputs:
-- p:run, p:kernels, p:plan, p:ir, p:binary, on_ir, the compile cache.
-- Run without the end-to-end part: busted --exclude-tags=compile ...
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local line, this_file, fails, has = helper.line, helper.this_file, helper.fails, helper.has

local function ew_graph(name)
  local g = kiln.graph(name or "ew")
  local x = g:param("x", { 3, 5 }, "f32")
  local y = g:param("y", { 5 }, "f32")
  g:output((x * y + 1):relu())
  return g
end

describe("devices and targets", function()
  it("kiln.device(\"host\") describes the host and is one object per name", function()
    local d = kiln.device("host")
    assert.are.equal("host", d.kind)
    assert.are.equal("host", d.arch)
    assert.are.equal("host", d.id)
    assert.is_string(d.name)
    assert.is_true(d.compute_units >= 1)
    assert.are.equal(1, d.wave_size)
    assert.is_true(d == kiln.device("host"))
    local info = d:info()
    assert.are.equal("host", info.kind)
    assert.are.equal(d.name, info.name)
    has(tostring(d), "kiln.device host")
    d:synchronize()
  end)

  it("\"auto\" always gives a device; unknown names are clear errors", function()
    local a = kiln.device("auto")
    assert.truthy(({ host = true, cuda = true, hip = true })[a.kind])
    assert.is_true(a == kiln.device(a.id))   -- one object per device, whatever name opened it
    assert.is_true(kiln.device() == a)
    local l = line() + 1
    local e = fails(function() local d = kiln.device("tpu"); return d end)
    has(e, this_file() .. ":" .. l .. ": error: kiln.device: cannot open device 'tpu'")
    local backends = kiln.device_backends()
    local set = {}
    for _, b in ipairs(backends) do set[b] = true end
    assert.is_true(set.host and set.cuda and set.hip)
  end)

  it("GPU devices are optional: opening them either works or says why", function()
    for _, name in ipairs { "cuda", "hip" } do
      local ok, d = pcall(kiln.device, name)
      if ok then
        assert.are.equal(name, d.kind)
        assert.is_string(d.arch)
      else
        has(tostring(d), "kiln.device: cannot open device '" .. name .. "'")
      end
    end
  end)

  it("kiln.targets() lists the target table", function()
    local ts = kiln.targets()
    local by = {}
    for _, t in ipairs(ts) do by[t.name] = t end
    assert.truthy(by.host)
    assert.are.equal("host", by.host.arch)
    assert.are.equal(1, by.host.wave_size)
    assert.are.equal("none", by.host.accel)
    assert.truthy(by.gfx942)
    assert.are.equal("amdgpu", by.gfx942.arch)
    assert.are.equal(64, by.gfx942.wave_size)
    assert.are.equal("mfma", by.gfx942.accel)
    assert.is_true(by.gfx942.lds_bytes >= 65536)
    assert.is_true(#by.gfx942.instrs > 0)
    assert.truthy(by.sm_90)
    assert.are.equal("nvptx", by.sm_90.arch)
    assert.are.equal(32, by.sm_90.wave_size)
    assert.are.same(by.gfx942, kiln.target("gfx942"))
    assert.is_nil(kiln.target("nope"))
    assert.is_string(kiln.default_pipeline())
  end)
end)

describe("kiln.compile options and errors", function()
  it("rejects bad graphs and options before compiling, naming the Lua line", function()
    local g = kiln.graph("noout")
    g:param("x", { 2 })
    local l = line() + 1
    local e = fails(function() local p = kiln.compile(g); return p end)
    has(e, this_file() .. ":" .. l .. ": error: compile:")
    has(e, "no outputs")
    local ok = ew_graph()
    has(fails(kiln.compile, ok, { target = "gfx9999" }), "unknown target 'gfx9999'")
    has(fails(kiln.compile, ok, { targts = { "host" } }), "unknown option 'targts'")
    has(fails(kiln.compile, ok, { target = "host", targets = { "host" } }), "not both")
    has(fails(kiln.compile, ok, { targets = { "host", "host" } }), "given twice")
    has(fails(kiln.compile, ok, { targets = {} }), "targets")
    has(fails(kiln.compile, ok, { pipeline = { "cse", function() end } }), "register it with kiln.register_pass")
    has(fails(kiln.compile, ok, { on_ir = "yes" }), "on_ir must be a function")
    has(fails(kiln.compile, ok, { perf_config = 3 }), "perf_config must be a string")
    has(fails(kiln.compile, ok, 5), "options must be a table")
    has(fails(kiln.compile, 42), "expected a graph")
    has(fails(kiln.compile, kiln.parse("func.func @f() {\n  func.return\n}\n")), "no graph function")
    has(fails(kiln.compile, ok, { pipeline = "no-such-pass" }), "no-such-pass")
  end)

  it("an on_ir callback that raises becomes a compile error", function()
    local e = fails(kiln.compile, ew_graph("onir_err"), { pipeline = "cse", on_ir = function() error("boom") end })
    has(e, "on_ir callback failed")
    has(e, "boom")
  end)
end)

-- ------------------------------------------------------------- end to end ----
describe("compiled programs #compile", function()
  local function check_against_eval(g, inputs, opts, tol)
    local p = kiln.compile(g, opts)
    local got = table.pack(p:run(inputs))
    local want = table.pack(g:eval(inputs))
    assert.are.equal(want.n, got.n)
    for i = 1, want.n do
      assert.are.same(want[i].shape, got[i].shape)
      assert.are.equal(want[i].dtype, got[i].dtype)
      local r = kiln.compare(got[i], want[i], tol)
      assert.are.equal(0, r.mismatches, "output " .. i .. ": " .. r.summary)
    end
    return p, got
  end

  it("runs an element-wise graph and a reduction on the host", function()
    local g = kiln.graph("ew2")
    local x = g:param("x", { 3, 5 }, "f32")
    local y = g:param("y", { 5 }, "f32")
    local z = (x * y + 1):relu()
    g:output(z, z:sum { 1 })
    check_against_eval(g, { x = kiln.rand { 3, 5 }, y = kiln.rand { 5 } })
  end)

  it("conv + add + relu (NHWC) compiles into one fused kernel and matches g:eval", function()
    local g = kiln.graph("conv_add_relu")
    local x = g:param("x", { 1, 16, 7, 7 }, "f32", { layout = "NHWC" })
    local w = g:param("w", { 8, 16, 1, 1 }, "f32")
    local b = g:param("b", { 1, 8, 7, 7 }, "f32", { layout = "NHWC" })
    g:output((g:conv(x, w) + b):relu())
    local p = check_against_eval(g, { x = kiln.rand({ 1, 16, 7, 7 }, "f32", { layout = "NHWC" }), w = kiln.rand { 8, 16, 1, 1 },
                                      b = kiln.rand({ 1, 8, 7, 7 }, "f32", { layout = "NHWC" }) })
    assert.are.equal(1, #p:kernels())
  end)

  it("conv with padding, stride and odd sizes (NCHW) and f16", function()
    local g = kiln.graph("conv_pad")
    local x = g:param("x", { 2, 3, 9, 7 }, "f32")
    local w = g:param("w", { 5, 3, 3, 3 }, "f32")
    g:output(g:conv(x, w, { stride = 2, padding = 1 }))
    check_against_eval(g, { x = kiln.rand { 2, 3, 9, 7 }, w = kiln.rand { 5, 3, 3, 3 } })
    local h = kiln.graph("conv_f16")
    local xh = h:param("x", { 1, 4, 5, 5 }, "f16", { layout = "NHWC" })
    local wh = h:param("w", { 3, 4, 3, 3 }, "f16")
    h:output(h:conv(xh, wh, { padding = 1 }):relu())
    check_against_eval(h, { x = kiln.rand({ 1, 4, 5, 5 }, "f16", { layout = "NHWC" }), w = kiln.rand({ 3, 4, 3, 3 }, "f16") },
                       nil, { rtol = 1e-2, atol = 1e-2 })
  end)

  it("dot with transposes and a bias epilogue", function()
    local g = kiln.graph("gemm")
    local a = g:param("a", { 17, 33 }, "f32")
    local b = g:param("b", { 7, 33 }, "f32")
    local c = g:param("c", { 7 }, "f32")
    g:output((g:dot(a, b, { transpose_b = true }) + c):tanh())
    check_against_eval(g, { a = kiln.rand { 17, 33 }, b = kiln.rand { 7, 33 }, c = kiln.rand { 7 } })
  end)

  it("introspection: kernels, plan, ir, binary, timings", function()
    local g = ew_graph("intro")
    local p = kiln.compile(g, { cache = false })
    assert.are.same({ "host" }, p.targets)
    assert.is_true(p.compile_ms >= 0)
    assert.is_false(p.from_cache)
    -- where compile_ms went: every phase there, none negative, together at most the whole
    local sum = 0
    for _, ph in ipairs { "passes", "plan", "llvm_ir", "llvm_opt", "llvm_codegen" } do
      assert.is_number(p.compile_phases[ph], ph)
      assert.is_true(p.compile_phases[ph] >= 0, ph)
      sum = sum + p.compile_phases[ph]
    end
    assert.is_true(sum <= p.compile_ms + 1e-6)
    assert.is_true(p.compile_phases.llvm_codegen > 0 and p.compile_phases.passes > 0)
    local ks = p:kernels()
    assert.is_true(#ks >= 1)
    for _, k in ipairs(ks) do
      assert.is_string(k.name)
      assert.is_string(k.kind)
      assert.is_true(k.grid >= 1 and k.block >= 1 and k.lds_bytes >= 0)
      assert.is_string(k.perf_config)
      assert.is_true(#k.args >= 2)
      assert.is_string(k.args[1].name)
      has(k.args[1].type, "buffer<")
      assert.is_true(#k.ir >= 1)
      assert.is_string(k.ir[1].pass)
      assert.is_string(k.llvm_ir) -- printed when read (from the compile's bitcode), the same text each time
      has(k.llvm_ir, "define void @" .. k.name)
      assert.are.equal(k.llvm_ir, p:kernels()[1].llvm_ir)
      has(k.llvm_ir, "; ModuleID = '")
      assert.is_true(#p:binary(k.name) > 0)
      assert.are.equal(p:binary(k.name), p:binary(k.name, "host"))
    end
    has(fails(p.binary, p, "nope"), "binary: unknown kernel 'nope' (kernels: intro_k0)")
    has(fails(p.kernels, p, "gfx942"), "unknown target 'gfx942' (the program's targets: host)")
    local plan = p:plan()
    assert.are.equal("host", plan.target)
    local params = {}
    for _, s in ipairs(plan.slots) do if s.kind == "param" then params[s.name] = true end end
    assert.is_true(params.x and params.y)
    for _, st in ipairs(plan.steps) do
      assert.are.equal("launch", st.kind)
      for _, a in ipairs(st.args) do assert.truthy(plan.slots[a]) end
    end
    assert.are.equal(1, #plan.outputs)
    assert.truthy(plan.slots[plan.outputs[1]])
    assert.is_string(p:ir("after:graph-partition"))
    assert.are.equal(p:ir("after:graph-partition"), p:ir("graph-partition"))
    has(fails(p.ir, p, "after:no-such-pass"), "program:ir: unknown pass 'no-such-pass' (passes: fp8-compute, reduce-split, ")
    has(tostring(p), "kiln.program (host:")
  end)

  it("on_ir and print_ir_after see the passes; the cache returns the same program", function()
    local seen = {}
    local g = ew_graph("irs")
    kiln.compile(g, { on_ir = function(pass, text) seen[#seen + 1] = pass; assert.is_string(text) end })
    assert.is_true(#seen >= 3)
    local only = {}
    kiln.compile(g, { print_ir_after = { "graph-partition" }, on_ir = function(pass) only[#only + 1] = pass end })
    assert.are.same({ "graph-partition" }, only)
    local p1 = kiln.compile(g)
    local p2 = kiln.compile(g)
    assert.is_true(p2.from_cache)
    local p3 = kiln.compile(g, { cache = false })
    assert.is_false(p3.from_cache)
    local inputs = { x = kiln.rand { 3, 5 }, y = kiln.rand { 5 } }
    assert.are.same(p1:run(inputs):totable(), p2:run(inputs):totable())
  end)

  it("run checks its inputs (names, shapes, layouts) and takes a device", function()
    local g = kiln.graph("runin")
    local x = g:param("x", { 2, 3, 4, 5 }, "f32", { layout = "NHWC" })
    g:output(x:relu())
    local p = kiln.compile(g)
    local good = kiln.rand({ 2, 3, 4, 5 }, "f32", { layout = "NHWC" })
    local r = p:run({ x = good }, { device = kiln.device("host") })
    assert.are.same(g:eval { x = good }:totable(), r:totable())
    local r2 = p:run({ x = good }, { device = "host" })
    assert.are.same(r:totable(), r2:totable())
    local l = line() + 1
    local e = fails(function() local o = p:run {}; return o end)
    has(e, this_file() .. ":" .. l .. ": error: run:")
    has(e, "missing input 'x'")
    has(fails(function() local o = p:run { x = good, y = good }; return o end), "unknown input 'y' (params: x)")
    local e2 = fails(function() local o = p:run { x = kiln.rand { 2, 3, 4, 5 } }; return o end)
    has(e2, "row_major")
    has(e2, "strides=")
    has(fails(function() local o = p:run { x = 3 }; return o end), "must be a kiln.tensor")
    has(fails(function() local o = p:run({ x = good }, { device = "tpu" }); return o end), "cannot open device")
  end)

  it("programs and devices survive garbage collection in any order", function()
    for i = 1, 5 do
      local g = ew_graph("gc" .. i)
      local p = kiln.compile(g, { cache = i % 2 == 0 })
      p:run { x = kiln.rand { 3, 5 }, y = kiln.rand { 5 } }
    end
    collectgarbage()
    collectgarbage()
    local ctx = kiln.context()
    local g = kiln.graph(ctx, "own_ctx")
    local x = g:param("x", { 4 })
    g:output(x:exp())
    local p = kiln.compile(g)
    p:run { x = kiln.rand { 4 } }
    ctx:destroy()
    has(fails(function() local o = p:run { x = kiln.rand { 4 } }; return o end), "context of this program has been destroyed")
    p = nil
    collectgarbage()
  end)
end)
