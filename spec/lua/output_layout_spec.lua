-- output_layout_spec.lua — graph outputs in a declared memory layout
-- (g:output(v, {layout = ...} | {strides = ...})) on the host: every kernel kind and the
-- random fused graphs with a random layout per output (spec/lua/output_layout_cases.lua)
-- against the reference evaluator, the plan's output slots, and bad layouts.
local kiln = require "kiln"
local C = require "output_layout_cases"

local function run_case(c)
  local p = kiln.compile(c.g, { target = "host", cache = false })
  if c.kernels then assert.are.equal(c.kernels, #p:kernels(), c.name .. ": kernels") end
  local ok, msg = C.check(c, table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs)))
  assert(ok, c.name .. ": " .. tostring(msg))
  return p
end

describe("outputs with a declared layout #compile", function()
  for _, c in ipairs(C.cases()) do
    it(c.name, function() run_case(c) end)
  end
  for _, c in ipairs(C.random(tonumber(os.getenv("KILN_LAYOUT_COUNT") or "") or 60)) do
    it("random " .. c.name, function() run_case(c) end)
  end

  it("the plan's output slot and the run's tensor have the declared strides; gaps are not written", function()
    local g = kiln.graph("gap")
    local a = g:param("a", { 4, 6 }, "f32")
    local e = a:exp()
    g:output(e, { strides = { 1, 5 } }, e, { layout = "col_major" })
    local p = kiln.compile(g, { target = "host" })
    local plan = p:plan()
    local s1 = plan.slots[plan.outputs[1]]
    assert.are.equal("tensor<4x6xf32, strides=[1,5]>", s1.type)
    assert.are.equal((3 * 1 + 5 * 5 + 1) * 4, s1.bytes)
    assert.are.equal("tensor<4x6xf32, strides=[1,4]>", plan.slots[plan.outputs[2]].type)
    assert.are.equal(2, #p:kernels()) -- the element-wise kernel, then a copy into the second layout
    local x = kiln.rand({ 4, 6 }, "f32", { seed = 3 })
    local o1, o2 = p:run { a = x }
    assert.are.same({ 1, 5 }, o1.strides)
    assert.are.same({ 1, 4 }, o2.strides)
    local r1, r2 = g:eval { a = x }
    assert.are.same({ 1, 5 }, r1.strides)
    assert.is_true(kiln.compare(o1, r1).ok and kiln.compare(o2, r2).ok)
  end)

  it("a layout equal to the value's own changes nothing; g:output again drops the layouts", function()
    local g = kiln.graph("same")
    local a = g:param("a", { 3, 5 }, "f32", { layout = "col_major" })
    local e = a:exp()
    g:output(e, { layout = "col_major" })
    local p = kiln.compile(g, { target = "host" })
    assert.is_nil(p:ir("after:graph-partition"):find("result_strides", 1, true))
    g:output(e)
    assert.is_nil(tostring(g):find("output_strides", 1, true))
  end)

  it("bad layouts are located errors and leave the outputs as they were", function()
    local g = kiln.graph("bad")
    local a = g:param("a", { 4, 6, 8 }, "f32")
    g:output(a)
    local function err(...)
      local args = table.pack(...)
      local ok, e = pcall(function() g:output(table.unpack(args, 1, args.n)) end)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("output_layout_spec.lua:%d+: error: output 1: strides has 2 entries, the shape has rank 3",
      err(a:exp(), { strides = { 1, 2 } }))
    assert.matches("output 2: strides %[1,1,1%] overlap for shape %[4,6,8%]",
      err(a, a:exp(), { strides = { 1, 1, 1 } }))
    assert.matches("output 1: strides %[0,8,1%] overlap", err(a:exp(), { strides = { 0, 8, 1 } }))
    assert.matches("output 1: layout: \"NCHW\" does not fit a rank%-3 tensor", err(a:exp(), { layout = "NCHW" }))
    assert.matches("give either layout= or strides=, not both", err(a:exp(), { layout = "1,0,2", strides = { 1, 4, 24 } }))
    assert.matches("negative stride", err(a:exp(), { strides = { -1, 8, 1 } }))
    assert.matches("a layout table must follow the value it lays out", err({ layout = "1,0,2" }, a))
    assert.are.equal(1, #g:outputs())
    assert.are.equal(a, g:outputs()[1])
    assert.is_nil(tostring(g):find("output_strides", 1, true))
  end)

  it("the output layout survives a save / load of the program", function()
    local g = kiln.graph("saved")
    local a = g:param("a", { 5, 7 }, "f16")
    g:output((a * 2):relu(), { layout = "col_major" })
    local p = kiln.compile(g, { target = "host" })
    local path = os.tmpname()
    p:save(path)
    local q = kiln.load(path)
    os.remove(path)
    local x = kiln.rand({ 5, 7 }, "f16", { seed = 11 })
    local o = q:run { a = x }
    assert.are.same({ 1, 5 }, o.strides)
    assert.is_true(kiln.compare(o, g:eval { a = x }).ok)
  end)
end)
