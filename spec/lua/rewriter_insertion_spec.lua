-- rewriter_insertion_spec.lua — where a Lua pattern's rewriter inserts ops: the
-- insertion point set with rw:set_insertion_*, kept across moves made inside the pattern
-- (op:insert_before/after, block:append/prepend, rw:move_before) and moved past erased
-- ops. Pins the order users see (an "after op" point is re-applied after a move, so
-- later inserts go right after that op again).
local kiln = require "kiln"

local src = [[
func.func @f() {
  "t.a"() : () -> ()
  "t.root"() : () -> ()
  "t.b"() : () -> ()
  "t.z"() : () -> ()
  func.return
}
]]

-- Runs rewrite(op, rw, ops) once on "t.root" (ops: the t.* ops by name) and returns the
-- names of the ops of the function body in order.
local function run(rewrite)
  local m = kiln.parse(src, "ip.kir")
  local done = false
  local p = kiln.pattern{ root = "t.root", rewrite = function(op, rw)
    if done then return false end
    done = true
    local ops = {}
    for _, o in ipairs(op.block:ops()) do ops[o.name:sub(3)] = o end
    rewrite(op, rw, ops)
    return true
  end }
  assert.is_true(kiln.apply_patterns(m, { p }, { fold = false, remove_dead = false }))
  local names = {}
  for _, o in ipairs(m:find("t.root") and m:find("t.root").block:ops() or m:find("t.a").block:ops()) do
    names[#names + 1] = o.name
  end
  return table.concat(names, " ")
end
local function mk(rw, name) return rw:create{ name = name } end

describe("the Lua rewriter's insertion point", function()
  it("starts before the matched op", function()
    assert.are.equal("t.a x.1 x.2 t.root t.b t.z func.return",
      run(function(_, rw) mk(rw, "x.1"); mk(rw, "x.2") end))
  end)

  it("after an op: several inserts keep their order", function()
    assert.are.equal("t.a t.root x.1 x.2 x.3 t.b t.z func.return",
      run(function(_, rw, o) rw:set_insertion_after(o.root); mk(rw, "x.1"); mk(rw, "x.2"); mk(rw, "x.3") end))
  end)

  it("after an op: a move inside the pattern re-applies it (later inserts go right after the op)", function()
    assert.are.equal("t.a t.root x.2 x.1 t.b func.return t.z",
      run(function(_, rw, o)
        rw:set_insertion_after(o.root); mk(rw, "x.1")
        o.z:insert_after(o.z.block:terminator())
        mk(rw, "x.2")
      end))
    assert.are.equal("t.z t.a t.root x.2 x.1 t.b func.return",
      run(function(_, rw, o)
        rw:set_insertion_after(o.root); mk(rw, "x.1")
        o.z.block:prepend(o.z)
        mk(rw, "x.2")
      end))
    assert.are.equal("t.z t.a t.root x.2 x.1 t.b func.return",
      run(function(_, rw, o)
        rw:set_insertion_after(o.root); mk(rw, "x.1")
        rw:move_before(o.z, o.a)
        mk(rw, "x.2")
      end))
  end)

  it("before an op and at the end of a block are kept across a move", function()
    assert.are.equal("t.a t.root t.z x.1 x.2 t.b func.return",
      run(function(_, rw, o)
        rw:set_insertion_before(o.b); mk(rw, "x.1")
        o.z:insert_after(o.root)
        mk(rw, "x.2")
      end))
    assert.are.equal("t.a t.root t.z t.b func.return x.1 x.2",
      run(function(_, rw, o)
        rw:set_insertion_end(o.root.block); mk(rw, "x.1")
        o.z:insert_before(o.b)
        mk(rw, "x.2")
      end))
  end)

  it("inserting before a moved op follows the op", function()
    assert.are.equal("t.a t.root x.2 t.z t.b x.1 func.return",
      run(function(_, rw, o)
        rw:set_insertion_before(o.z); mk(rw, "x.1")
        o.z:insert_before(o.b)
        mk(rw, "x.2")
      end))
  end)

  it("moves past an erased op", function()
    assert.are.equal("t.a x.1 t.b t.z func.return",
      run(function(op, rw) rw:erase(op); mk(rw, "x.1") end))
    assert.are.equal("t.a t.root x.1 x.2 t.z func.return",
      run(function(_, rw, o) rw:set_insertion_before(o.b); rw:erase(o.b); mk(rw, "x.1")
        o.a:insert_before(o.root); mk(rw, "x.2") end))
  end)

  it("after an erased op: continues before the op that followed it", function()
    -- x.1 goes after t.root; erasing t.root re-anchors the point before x.1 (the op that
    -- followed it), which the next move re-applies; until then inserts go where they went.
    assert.are.equal("t.a x.3 x.1 x.2 t.b func.return t.z",
      run(function(op, rw, o)
        rw:set_insertion_after(op); mk(rw, "x.1")
        rw:erase(op)
        mk(rw, "x.2")
        o.z:insert_after(o.z.block:terminator())
        mk(rw, "x.3")
      end))
  end)
end)
