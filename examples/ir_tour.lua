-- examples/ir_tour.lua — the IR from Lua: parse text IR, rewrite an op with a Lua
-- pattern, run a pipeline that mixes C passes and a Lua pass, print the IR after each.
local m = kiln.parse([[
func.func @f(%x: i32, %y: i32) {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %a = arith.addi %x, %c0 : i32
  %b = arith.muli %a, %c2 : i32
  %c = arith.muli %a, %c2 : i32
  %d = arith.addi %b, %c : i32
  func.return %d : i32
}
]], "tour.kir")
m:verify()

-- x * 2 -> x + x, as a Lua pattern on the same greedy driver as the C patterns
local mul2 = kiln.pattern {
  root = "arith.muli", benefit = 1, name = "mul-by-two",
  rewrite = function(op, rw)
    local c = op:operand(2):defining_op()
    if not (c and c.name == "arith.constant" and c:attr("value") == 2) then return false end
    local x = op:operand(1)
    local add = rw:create { name = "arith.addi", operands = { x, x }, results = { x.type } }
    rw:replace(op, add)
    return true
  end,
}
kiln.apply_patterns(m, { mul2 })

-- a Lua pass that counts ops, between C passes; the IR is printed after every pass
local function count(mod) print(string.format("-- %d ops", #mod:ops())) end
local ok, report = kiln.run_pipeline(m, { "canonicalize", count, "cse", "dce", count }, {
  print_ir_after = "all",
  on_ir = function(pass, text) print("-- after " .. pass .. ":\n" .. text) end,
})
print(report.text)
