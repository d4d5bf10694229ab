-- examples/custom_pass.lua — a Lua pattern that rewrites the graph before compilation
-- (x * 1 -> x), a Lua pass, and a reordered pipeline with the IR printed after chosen passes.
local g = kiln.graph("custom")
local x = g:param("x", { 4, 8 }, "f32")
local one = g:constant(kiln.ones({ 4, 8 }, "f32"))
g:output((x * one):relu())

-- graph.mul(x, ones) -> x, written as a Lua pattern
local function all_ones(v)
  local op = v:defining_op()
  if not op or op.name ~= "graph.constant" then return false end
  for _, e in ipairs(op:attr("value")) do if e ~= 1 then return false end end
  return true
end
local fold_mul_one = kiln.pattern {
  root = "graph.mul", benefit = 2, name = "fold-mul-by-one",
  rewrite = function(op, rw)
    local a, b = op:operand(1), op:operand(2)
    if all_ones(b) and a.type == op:result(1).type then rw:replace(op, { a }); return true end
    if all_ones(a) and b.type == op:result(1).type then rw:replace(op, { b }); return true end
    return false
  end,
}
kiln.apply_patterns(g.module, { fold_mul_one })
print("graph after the Lua pattern:")
print(g:print())

-- a Lua pass in a reordered pipeline (dce before partitioning drops the dead constant)
local seen = {}
local count_ops = function(m) seen[#seen + 1] = #m:ops() end
local p = kiln.compile(g, {
  pipeline = "dce,graph-partition,graph-to-rock,rock-lower-loops,canonicalize,cse,dce",
  print_ir_after = { "graph-partition" },
  on_ir = function(pass, text) print("-- IR after " .. pass .. " --\n" .. text) end,
})
local input = kiln.rand { 4, 8 }
local got = p:run { x = input }
assert(kiln.allclose(got, g:eval { x = input }), "custom pipeline: wrong result")
kiln.run_pipeline(g.module, { "cse", count_ops, "dce", count_ops })
print(string.format("kernels: %d, ops after cse/dce: %d/%d, results match the reference", #p:kernels(), seen[1], seen[2]))
