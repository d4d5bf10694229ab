-- pattern_spec.lua — Lua patterns on the C greedy/walk drivers, mixed with registered
-- C patterns; rewriter methods; errors inside patterns.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

-- mulf(x, x) -> "x.square"(x)
local create_line
local square = kiln.pattern{
  root = "arith.mulf", name = "square", benefit = 2,
  rewrite = function(op, rw)
    local a, b = op:operand(1), op:operand(2)
    if a ~= b then return rw:no_match("operands differ") end
    create_line = helper.line(); local new = rw:create{ name = "x.square", operands = { a }, results = { a.type } }
    rw:replace(op, new)
    return true
  end,
}

describe("kiln.pattern", function()
  it("describes itself", function()
    assert.are.equal("square", square.name)
    assert.are.equal("arith.mulf", square.root)
    assert.are.equal(2, square.benefit)
    assert.are.equal("kiln.pattern(square, root=arith.mulf, benefit=2)", tostring(square))
    local anon = kiln.pattern{ rewrite = function() return false end }
    assert.is_nil(anon.root)
    assert.are.equal(1, anon.benefit)
    assert.truthy(anon.name:find("^lua@"))
    assert.has_error(function() kiln.pattern{ root = "a.b" } end)
  end)

  it("rewrites an op; the new op carries the Lua location", function()
    local m = kiln.parse(helper.sample, "sample.kir")
    assert.is_true(kiln.apply_patterns(m, { square }))
    assert.is_nil(m:find("arith.mulf"))
    local sq = m:find("x.square")
    assert.truthy(sq)
    assert.are.equal(m:find("arith.addf"):result(), sq:operand(1))
    assert.are.equal(helper.this_file() .. ":" .. create_line, sq.loc)
    assert.is_true(m:verify())
    -- the constant adds were folded by the driver (fold is on by default)
    assert.truthy(tostring(m):find("arith.constant 5 : i32", 1, true), tostring(m))
  end)

  it("runs with C canonical patterns on the same driver to a fixed point", function()
    -- "x.double"(%c) -> arith.addi %c, %c ; the C side then folds the constant add and
    -- the Lua pattern's output is canonicalized in the same apply_patterns call.
    local m = kiln.parse([[
func.func @g() {
  %c = arith.constant 21 : i32
  %d = "x.double"(%c) : (i32) -> i32
  %x = arith.xori %d, %d : i32
  "test.use"(%d, %x) : (i32, i32) -> ()
  func.return
}
]], "double.kir")
    local applied = 0
    local double = kiln.pattern{ root = "x.double", rewrite = function(op, rw)
      applied = applied + 1
      local c = op:operand(1)
      rw:replace(op, rw:create{ name = "arith.addi", operands = { c, c }, results = { c.type } })
      return true
    end }
    kiln.apply_patterns(m, { double, "canonical.*" })
    assert.are.equal(1, applied)
    local text = tostring(m)
    assert.truthy(text:find("arith.constant 42 : i32", 1, true), text)       -- folded by C
    assert.truthy(text:find("arith.constant 0 : i32", 1, true), text)        -- canonical.arith.xori-self
    assert.is_nil(m:find("arith.addi"))
    assert.is_nil(m:find("arith.xori"))
    assert.is_true(m:verify())
  end)

  it("accepts plain functions and named C patterns; unknown names are errors", function()
    local m = kiln.parse(helper.sample)
    local seen = {}
    kiln.apply_patterns(m, { function(op) seen[op.name] = true; return false end, "canonical.arith.xori-self" })
    assert.is_true(seen["arith.addf"])
    assert.is_true(seen["func.return"])
    local ok, err = pcall(kiln.apply_patterns, m, { "no.such.pattern" })
    assert.is_false(ok)
    assert.truthy(err:find("unknown pattern 'no.such.pattern'", 1, true), err)
    local names = {}
    for _, p in ipairs(kiln.patterns()) do names[p.name] = true end
    assert.is_true(names["canonical.arith.xori-self"])
  end)

  it("routes direct mutations inside a pattern through the rewriter", function()
    local m = kiln.parse(helper.sample)
    local tag = kiln.pattern{ root = "arith.addf", rewrite = function(op, rw)
      if op:attr("seen") then return false end
      op:set_attr("seen", true)                 -- same as rw:set_attr(op, "seen", true)
      local c = kiln.op{ name = "test.marker" }  -- detached, then inserted through rw
      rw:insert(c)
      return true
    end }
    kiln.apply_patterns(m, { tag }, { fold = false })
    assert.are.equal(2, #m:ops("test.marker"))
    for _, a in ipairs(m:ops("arith.addf")) do assert.is_true(a:attr("seen")) end
    -- markers sit right before each add (default insertion point)
    for _, a in ipairs(m:ops("arith.addf")) do assert.are.equal("test.marker", a.prev.name) end
    assert.is_true(m:verify())
  end)

  it("walk mode applies patterns once per op", function()
    local m = kiln.parse(helper.sample)
    local count = 0
    local grow = kiln.pattern{ root = "arith.addf", rewrite = function(op, rw)
      count = count + 1
      rw:set_attr(op, "n", count)
      return true
    end }
    kiln.apply_patterns(m, { grow }, { walk = true })
    assert.are.equal(2, count)
    -- the greedy driver would loop on it: non-convergence is an error
    local ok, err = pcall(kiln.apply_patterns, m, { grow }, { max_iterations = 3 })
    assert.is_false(ok)
    assert.truthy(err:find("did not converge", 1, true), err)
  end)

  it("rw:fail stops the driver with a located error", function()
    local m = kiln.parse(helper.sample, "sample.kir")
    local p = kiln.pattern{ root = "arith.mulf", rewrite = function(op, rw) return rw:fail("cannot handle this square") end }
    local ok, err = pcall(kiln.apply_patterns, m, { p })
    assert.is_false(ok)
    assert.truthy(err:find("sample.kir:3:3: error: cannot handle this square", 1, true), err)
    assert.is_true(m:verify())
  end)

  it("a Lua error inside a pattern carries the traceback and leaves the module valid", function()
    local m = kiln.parse(helper.sample, "sample.kir")
    local before = m:print()
    local function helper_that_fails(x) return x.field.missing end
    local p = kiln.pattern{ name = "broken", root = "arith.mulf", rewrite = function(op, rw)
      -- a partial rewrite first: the created op stays, unused
      rw:create{ name = "x.partial", operands = { op:operand(1) }, results = { "f32" } }
      local v = helper_that_fails({})   -- not a tail call: keeps the frame in the traceback
      return v
    end }
    local ok, err = pcall(kiln.apply_patterns, m, { p })
    assert.is_false(ok)
    assert.truthy(err:find("sample.kir:3:3: error: Lua pattern 'broken' raised an error:", 1, true), err)
    assert.truthy(err:find("attempt to index a nil value", 1, true), err)
    assert.truthy(err:find("stack traceback:", 1, true), err)
    assert.truthy(err:find("helper_that_fails", 1, true), err)
    assert.truthy(err:find("while applying pattern 'broken'", 1, true), err)
    assert.is_true(m:verify())
    assert.truthy(m:find("x.partial"))
    assert.truthy(m:find("arith.mulf"))
    assert.are_not.equal(before, m:print())
    -- the context is usable afterwards, also for more patterns
    assert.is_true(kiln.apply_patterns(m, { square }))
    assert.is_nil(m:find("arith.mulf"))
    assert.is_true(m:verify())
  end)

  it("the rewriter is only valid inside its rewrite function", function()
    local m = kiln.parse(helper.sample)
    local kept
    kiln.apply_patterns(m, { kiln.pattern{ root = "arith.mulf", rewrite = function(op, rw) kept = rw; return false end } })
    assert.truthy(kept)
    local ok, err = pcall(kept.erase, kept, m:find("arith.mulf"))
    assert.is_false(ok)
    assert.truthy(err:find("only valid inside", 1, true), err)
    -- nested apply_patterns on the same context from inside a pattern is refused
    local p = kiln.pattern{ root = "arith.mulf", rewrite = function(op) kiln.apply_patterns(m, { square }) end }
    ok, err = pcall(kiln.apply_patterns, m, { p })
    assert.is_false(ok)
    assert.truthy(err:find("cannot run inside a pattern", 1, true), err)
    assert.is_true(m:verify())
  end)

  it("rw methods: replace with values, set_operand, replace_all_uses, modify, erase", function()
    local m = kiln.parse(helper.sample)
    local p = kiln.pattern{ root = "test.use", rewrite = function(op, rw)
      if op:attr("done") then return false end
      local add1 = m:ops("arith.addf")[1]
      local add2 = m:ops("arith.addf")[2]
      rw:replace_all_uses(add2:result(), add1:result())
      rw:erase(add2)
      local third = op:operand(3)
      rw:set_operand(op, 3, add1:operand(1))
      assert(op:operand(3) == add1:operand(1))
      rw:set_operand(op, 3, third)
      rw:modify(op, function(o) o:set_attr("done", true) end)
      return true
    end }
    local ok, err = pcall(kiln.apply_patterns, m, { p }, { fold = false })
    assert.is_true(ok, err)
    assert.are.equal(1, #m:ops("arith.addf"))
    assert.is_true(m:find("test.use"):attr("done"))
    assert.is_true(m:verify())
  end)
end)
