-- lifetime_spec.lua — handle identity (__eq), context lifetime and __gc.
local kiln = require "kiln"

local function full_gc()
  for _ = 1, 4 do collectgarbage("collect") end
end

describe("handles", function()
  it("are unique per IR object and compare with ==", function()
    local m = kiln.parse('"a.b"() : () -> ()')
    local x, y = m:find("a.b"), m:find("a.b")
    assert.is_true(rawequal(x, y))
    assert.are.equal(x, y)
    local seen = { [x] = true }     -- usable as table keys
    assert.is_true(seen[y])
    assert.are_not.equal(x, m)
    -- types and attributes compare by value, also across contexts
    local ctx = kiln.context()
    assert.are.equal(kiln.type("tensor<4xf32>"), ctx:type("tensor<4xf32>"))
    assert.are.equal(kiln.attr("[1, 2]"), ctx:attr("[1, 2]"))
    assert.are_not.equal(kiln.attr("1"), kiln.attr("1 : i32"))
  end)

  it("keep their context alive after the module and context handles are collected", function()
    local op
    do
      local ctx = kiln.context()
      local m = ctx:parse("func.func @f(%a: f32) {\n  %0 = arith.addf %a, %a : f32\n  func.return %0 : f32\n}\n", "life.kir")
      op = m:find("arith.addf")
    end
    full_gc()
    assert.are.equal("arith.addf", op.name)
    assert.are.equal("life.kir:2:3", op.loc)
    assert.are.equal("f32", tostring(op:result().type))
    local m = op:parent():parent()
    assert.are.equal("builtin.module", m.name)
    assert.is_true(m:verify())
    -- still usable for building and rewriting
    local neg = kiln.op{ name = "arith.mulf", operands = { op:result(), op:result() }, results = { "f32" } }
    neg:insert_after(op)
    op.block:terminator():set_operand(1, neg:result())
    assert.is_true(m:verify())
    assert.truthy(tostring(m):find("arith.mulf %0, %0", 1, true))
  end)

  it("let an unreferenced context be collected", function()
    local weak = setmetatable({}, { __mode = "v" })
    do
      local ctx = kiln.context()
      weak.ctx = ctx
      weak.op = ctx:parse('"a.b"() : () -> ()'):find("a.b")
      weak.type = ctx:type("f32")
    end
    full_gc()
    assert.is_nil(weak.op)
    assert.is_nil(weak.type)
    assert.is_nil(weak.ctx)
  end)

  it("context __gc is idempotent and later use of its handles is an error", function()
    local ctx = kiln.context()
    local m = ctx:parse('"a.b"() : () -> ()')
    local gc = getmetatable(ctx).__gc
    gc(ctx)
    gc(ctx)
    ctx:destroy()
    local ok, err = pcall(tostring, m)
    assert.is_false(ok)
    assert.truthy(err:find("destroyed", 1, true), err)
    ok, err = pcall(ctx.parse, ctx, "x")
    assert.is_false(ok)
    assert.truthy(err:find("destroyed", 1, true), err)
    assert.are.equal("kiln.context (destroyed)", tostring(ctx))
  end)

  it("a to-be-closed context is freed at the end of its scope", function()
    local escaped
    do
      local ctx <close> = kiln.context()
      escaped = ctx:parse('"a.b"() : () -> ()')
      assert.are.equal("builtin.module", escaped.name)
    end
    assert.has_error(function() return escaped.name end)
  end)

  it("IR from different contexts cannot be mixed", function()
    local m1 = kiln.parse('func.func @f(%a: f32) {\n  func.return\n}\n')
    local ctx = kiln.context()
    local other = ctx:op{ name = "x.y" }
    local ok, err = pcall(m1:body().append, m1:body(), other)
    assert.is_false(ok)
    assert.truthy(err:find("another kiln context", 1, true), err)
    local a = m1:find("func.func"):body():arg(1)
    ok, err = pcall(ctx.op, ctx, { name = "x.z", operands = { a } })
    assert.is_false(ok)
    assert.truthy(err:find("another kiln context", 1, true), err)
    -- kiln.op without ctx takes the operands' context
    local op = kiln.op{ name = "x.z", operands = { a } }
    assert.are.equal(m1.ctx, op.ctx)
  end)
end)

-- Teardown in any order of what the Lua API can end explicitly or by collection: the
-- context (ctx:destroy()), a prepared run (r:free()), the program and the device handle
-- (collected). What is still alive keeps working after each step.
describe("teardown", function()
  local function perms(a, k, out)
    k, out = k or 1, out or {}
    if k > #a then out[#out + 1] = { table.unpack(a) }; return out end
    for i = k, #a do
      a[k], a[i] = a[i], a[k]
      perms(a, k + 1, out)
      a[k], a[i] = a[i], a[k]
    end
    return out
  end

  for _, order in ipairs(perms{ "context", "prepared", "program", "device" }) do
    it("of " .. table.concat(order, ", "), function()
      local ctx = kiln.context()
      local g = kiln.graph(ctx, "teardown")
      local x = g:param("x", { 4, 8 }, "f32")
      local y = g:param("y", { 8 }, "f32")
      g:output((x * y + x):relu())
      local X, Y = kiln.rand({ 4, 8 }, "f32"), kiln.rand({ 8 }, "f32")
      local want = g:eval { x = X, y = Y }
      local dev = kiln.device("host")
      local p = kiln.compile(g, { target = "host", cache = true })
      assert.is_true(kiln.allclose(p:run({ x = X, y = Y }, { device = dev }), want))
      local r = p:prepare({ x = X, y = Y }, { device = dev, sets = 2 })
      r:launch(2)
      assert.is_true(kiln.allclose(r:outputs(2), want))
      local weak = setmetatable({ p = p, dev = dev }, { __mode = "v" })
      local alive = { context = true, prepared = true, program = true, device = true }
      for _, what in ipairs(order) do
        if what == "context" then ctx:destroy()
        elseif what == "prepared" then r:free()
        elseif what == "program" then p = nil
        else dev = nil end
        full_gc()
        alive[what] = false
        if alive.prepared then
          r:launch(1)
          assert.is_true(kiln.allclose(r:outputs(1), want))
        else
          assert.truthy(tostring(select(2, pcall(r.launch, r))):find("freed", 1, true))
        end
        if alive.program then
          if alive.context then
            assert.is_true(kiln.allclose(p:run({ x = X, y = Y }, { device = kiln.device("host") }), want))
          else
            local ok, err = pcall(p.run, p, { x = X, y = Y })
            assert.is_false(ok)
            assert.truthy(tostring(err):find("destroyed", 1, true), err)
          end
        end
      end
      r = nil
      full_gc()
      assert.is_nil(weak.p)
    end)
  end
end)
