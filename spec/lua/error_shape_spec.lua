-- error_shape_spec.lua — the binding's one error shape (lua/kiln_lua.h):
-- "<file>:<line>: error: <what>: <message>" at the user's Lua line, for misuse caught by
-- the shared checks (what = "kiln"), for misuse of a named call and for diagnostics (the
-- diagnostics text, with its own location, is the message; one that already begins at
-- the user's line stands as it is). Messages are never truncated.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fails, line, has = helper.fails, helper.line, helper.has
local FILE = helper.this_file()

-- The error must begin with "<this file>:<l>: error: <rest>".
local function starts(err, l, rest)
  local want = FILE .. ":" .. l .. ": error: " .. rest
  assert.are.equal(want, err:sub(1, #want), err)
end

describe("binding errors", function()
  it("the Lua-side library: kiln.parse_file of a missing file", function()
    local l = line() + 1
    local e = fails(function() local m = kiln.parse_file("/nonexistent/x.kir"); return m end)
    starts(e, l, "kiln.parse_file: /nonexistent/x.kir: No such file or directory")
  end)

  it("shared checks: a destroyed context, a wrong handle, a bad conversion", function()
    local ctx = kiln.context(); ctx:destroy()
    local l = line() + 1
    local e = fails(function() local m = ctx:module(); return m end)
    starts(e, l, "kiln: this context has been destroyed")
    local m = kiln.parse(helper.sample)
    l = line() + 1
    e = fails(function() local r = m:insert_before(42); return r end)
    starts(e, l, "kiln: expected a kiln.op, got a number")
    l = line() + 1
    e = fails(function() local r = m:set_attr("a", function() end); return r end)
    starts(e, l, "kiln: cannot convert a function to an attribute")
  end)

  it("named calls: kiln.pattern, kiln.attr, kiln.register_pass, apply_patterns inside a pattern", function()
    local l = line() + 1
    local e = fails(function() local p = kiln.pattern{ root = "a.b" }; return p end)
    starts(e, l, "kiln.pattern: 'rewrite' must be a function(op, rw)")
    l = line() + 1
    e = fails(function() local a = kiln.attr(1.5, "i32"); return a end)
    starts(e, l, "kiln.attr: an integer attribute needs an integer value")
    l = line() + 1
    e = fails(function() kiln.register_pass("error-shape-pass", function() end, { options = { 5 } }) end)
    starts(e, l, "kiln.register_pass: options[1] must be a table")
    local m = kiln.parse(helper.sample)
    local inner
    local p = kiln.pattern{ root = "arith.mulf", rewrite = function()
      inner = line() + 1
      local ok, err = pcall(function() kiln.apply_patterns(m, {}) end)
      assert.is_false(ok)
      starts(err, inner, "apply_patterns: cannot run inside a pattern of the same context")
      return false
    end }
    assert.is_true(kiln.apply_patterns(m, { p }))
    assert.truthy(inner)
  end)

  it("diagnostics: the Lua line and the call, then the diagnostics at their own location", function()
    local l = line() + 1
    local e = fails(function() local m = kiln.parse("func.func @f() {\n  %0 = arith.addf %u, %u : f32\n}\n", "shape.kir"); return m end)
    starts(e, l, "kiln.parse: shape.kir:2:")
    has(e, "error: use of undefined value '%u'")
    l = line() + 1
    e = fails(function() local t = kiln.type("tensor<2xq9>"); return t end)
    starts(e, l, "kiln: <type>:1:")
    l = line() + 1
    e = fails(function() local a = kiln.attr("[1,"); return a end)
    starts(e, l, "kiln.attr: <attribute>:1:")
    local bad = kiln.parse("func.func @f(%x: i32) {\n  %0 = arith.addf %x, %x : i32\n  func.return\n}\n", "bad.kir")
    l = line() + 1
    e = fails(function() return bad:verify() end)
    starts(e, l, "op:verify: bad.kir:2:3: error: 'arith.addf' expects float operands")
  end)

  it("diagnostics that already begin at the user's line stand as they are", function()
    local g = kiln.graph("shapes")
    local x, q = g:param("x", { 2, 3 }), g:param("q", { 4 })
    local l = line() + 1
    local e = fails(function() local r = x + q; return r end)
    starts(e, l, "add: shapes do not broadcast")
    local where = FILE .. ":" .. l .. ":"
    local _, count = e:gsub(where:gsub("%p", "%%%0"), "")
    assert.are.equal(1, count, e)
  end)

  it("a long message is not truncated", function()
    local long = ("x"):rep(5000) .. "END"
    local m = kiln.parse(helper.sample)
    local l = line() + 1
    local e = fails(function() kiln.run_pipeline(m, "cse", { on_ir = function() error(long) end }) end)
    starts(e, l, "run_pipeline: ")
    has(e, long)
    local g = kiln.graph("long")
    g:param("x", { 2 })
    l = line() + 1
    e = fails(function() local p = kiln.compile(g, { [long] = true }); return p end)
    starts(e, l, "compile: unknown option '" .. long .. "'")
  end)
end)
