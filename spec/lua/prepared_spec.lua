-- prepared_spec.lua — p:prepare (device-resident inputs for benchmarks): r:launch,
-- r:time, r:outputs, buffer-set rotation, poisoned results, p:load_kernels, errors. Runs
-- on the host device (the same code path as a GPU: device buffers, copies, events).
local kiln = require "kiln"

local function fails(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end
local function has(s, sub) assert.truthy(s:find(sub, 1, true), ("%q not found in:\n%s"):format(sub, s)) end
local function is_nan(v) return v ~= v end

local function ew_graph()
  local g = kiln.graph("prep_ew")
  local x = g:param("x", { 3, 5 }, "f32")
  local y = g:param("y", { 5 }, "f32")
  g:output((x * y + 1):relu())
  return g
end

-- two kernels (a GEMM, then a softmax over its result): an intermediate slot
local function two_kernel_graph()
  local g = kiln.graph("prep_two")
  local a = g:param("a", { 24, 16 }, "f32")
  local b = g:param("b", { 16, 20 }, "f32")
  g:output(g:dot(a, b):softmax())
  return g
end

local host = kiln.device("host")

describe("p:prepare", function()
  it("runs the plan on device-resident inputs and matches g:eval", function()
    local g = ew_graph()
    local p = kiln.compile(g, { target = "host" })
    local X, Y = kiln.rand({ 3, 5 }, "f32"), kiln.rand({ 5 }, "f32")
    local r = p:prepare({ x = X, y = Y }, { device = host })
    assert.are.equal(1, r.sets)
    assert.are.equal(1, r.launches)
    -- every slot of the plan: x, y and the result (the constant 1 is an immediate in the kernel)
    assert.are.equal(3, #p:plan().slots)
    assert.are.equal((15 + 5 + 15) * 4, r.set_bytes)
    r:launch()
    local got = r:outputs()
    assert.is_true(kiln.allclose(got, g:eval { x = X, y = Y }))
    assert.are.same({ 3, 5 }, got.shape)
    has(tostring(r), "1 buffer set of 140 bytes, 1 launch")
  end)

  it("uploads the inputs once: later changes to the host tensors do not reach it", function()
    local g = ew_graph()
    local p = kiln.compile(g, { target = "host" })
    local X, Y = kiln.rand({ 3, 5 }, "f32"), kiln.rand({ 5 }, "f32")
    local want = g:eval { x = X, y = Y }
    local r = p:prepare { x = X, y = Y }
    X:set({ 0, 0 }, 100); Y:set({ 0 }, 100)
    r:launch()
    assert.is_true(kiln.allclose(r:outputs(), want))
    assert.is_false(kiln.allclose(p:run { x = X, y = Y }, want))
  end)

  it("poisons the results (NaN) until a launch writes them, and again on r:poison()", function()
    local g = ew_graph()
    local p = kiln.compile(g, { target = "host" })
    local X, Y = kiln.rand({ 3, 5 }, "f32"), kiln.rand({ 5 }, "f32")
    local r = p:prepare { x = X, y = Y }
    local before = r:outputs()
    for i = 0, 2 do for j = 0, 4 do assert.is_true(is_nan(before:get { i, j })) end end
    r:launch()
    local after = r:outputs()
    for i = 0, 2 do for j = 0, 4 do assert.is_false(is_nan(after:get { i, j })) end end
    r:poison()
    assert.is_true(is_nan(r:outputs():get { 1, 2 }))
    -- without poison the buffers are whatever the allocator returned: just not required NaN
    local r2 = p:prepare({ x = X, y = Y }, { poison = false })
    r2:launch()
    assert.is_true(kiln.allclose(r2:outputs(), g:eval { x = X, y = Y }))
  end)

  it("rotates among buffer sets that each hold the same inputs", function()
    local g = two_kernel_graph()
    local p = kiln.compile(g, { target = "host" })
    assert.are.equal(2, #p:kernels())
    local A, B = kiln.rand({ 24, 16 }, "f32"), kiln.rand({ 16, 20 }, "f32")
    local want = g:eval { a = A, b = B }
    local r = p:prepare({ a = A, b = B }, { sets = 3 })
    assert.are.equal(3, r.sets)
    assert.are.equal(2, r.launches)
    for s = 1, 3 do assert.is_true(is_nan(r:outputs(s):get { 0, 0 })) end
    r:launch(2)
    assert.is_true(kiln.allclose(r:outputs(2), want))
    assert.is_true(is_nan(r:outputs(1):get { 0, 0 }))
    assert.is_true(is_nan(r:outputs(3):get { 0, 0 }))
    -- r:time launches every set in turn: afterwards all are written
    local ms = r:time { warmup = 0, reps = 3 }
    assert.are.equal(3, #ms)
    for s = 1, 3 do assert.is_true(kiln.allclose(r:outputs(s), want)) end
  end)

  it("derives the number of sets from rotate_bytes, capped by max_sets", function()
    local g = ew_graph()
    local p = kiln.compile(g, { target = "host" })
    local inputs = { x = kiln.rand({ 3, 5 }, "f32"), y = kiln.rand({ 5 }, "f32") }
    local one = p:prepare(inputs)
    local bytes = one.set_bytes
    assert.are.equal(4, p:prepare(inputs, { rotate_bytes = 4 * bytes }).sets)
    assert.are.equal(5, p:prepare(inputs, { rotate_bytes = 4 * bytes + 1 }).sets)
    assert.are.equal(1, p:prepare(inputs, { rotate_bytes = 1 }).sets)
    assert.are.equal(64, p:prepare(inputs, { rotate_bytes = 1000 * bytes }).sets)
    assert.are.equal(7, p:prepare(inputs, { rotate_bytes = 1000 * bytes, max_sets = 7 }).sets)
    assert.are.equal(2, p:prepare(inputs, { sets = 2, rotate_bytes = 1000 * bytes }).sets)
  end)

  it("r:time returns one positive duration per rep", function()
    local g = two_kernel_graph()
    local p = kiln.compile(g, { target = "host" })
    local r = p:prepare { a = kiln.rand({ 24, 16 }, "f32"), b = kiln.rand({ 16, 20 }, "f32") }
    local ms = r:time { warmup = 2, reps = 7 }
    assert.are.equal(7, #ms)
    for _, t in ipairs(ms) do assert.is_true(t > 0 and t < 1000) end
    assert.are.equal(10, #r:time())
  end)

  it("keeps working after the program handle is collected", function()
    local g = ew_graph()
    local X, Y = kiln.rand({ 3, 5 }, "f32"), kiln.rand({ 5 }, "f32")
    local r = kiln.compile(g, { target = "host", cache = false }):prepare { x = X, y = Y }
    collectgarbage(); collectgarbage()
    r:launch()
    assert.is_true(kiln.allclose(r:outputs(), g:eval { x = X, y = Y }))
    r:free()
    has(fails(function() r:launch() end), "freed")
    r:free()   -- twice is fine
    has(tostring(r), "freed")
  end)

  it("reports errors with the caller's line", function()
    local g = ew_graph()
    local p = kiln.compile(g, { target = "host" })
    local X, Y = kiln.rand({ 3, 5 }, "f32"), kiln.rand({ 5 }, "f32")
    has(fails(function() p:prepare { x = X } end), "missing input 'y'")
    has(fails(function() p:prepare { x = X, y = Y, z = Y } end), "prepare: unknown input 'z' (params: x, y)")
    has(fails(function() p:prepare { x = Y, y = Y } end), "prepare")
    has(fails(function() p:prepare({ x = X, y = Y }, { set = 2 }) end), "unknown option 'set'")
    has(fails(function() p:prepare({ x = X, y = Y }, { sets = 1.5 }) end), "sets must be an integer")
    has(fails(function() p:prepare({ x = X, y = 3 }) end), "must be a kiln.tensor")
    local r = p:prepare({ x = X, y = Y }, { sets = 2 })
    has(fails(function() r:launch(3) end), "buffer set 3 out of range (1..2)")
    has(fails(function() r:outputs(0) end), "out of range")
    has(fails(function() r:time { reps = 0 } end), "reps")
    has(fails(function() r:time { rep = 3 } end), "unknown option 'rep'")
    local msg = fails(function() p:prepare { x = X } end)
    has(msg, "prepared_spec.lua:")
    local gpu = kiln.compile(g, { target = "sm_90" })
    has(fails(function() gpu:prepare({ x = X, y = Y }, { device = host }) end), "no binary for device")
    has(fails(function() gpu:load_kernels { device = host } end), "no binary for device")
  end)
end)

describe("p:load_kernels", function()
  it("loads the kernels now and returns the program", function()
    local g = two_kernel_graph()
    local p = kiln.compile(g, { target = "host", cache = false })
    assert.are.equal(p, p:load_kernels { device = host })
    assert.are.equal(p, p:load_kernels())   -- a second load is a no-op
    local A, B = kiln.rand({ 24, 16 }, "f32"), kiln.rand({ 16, 20 }, "f32")
    assert.is_true(kiln.allclose(p:run { a = A, b = B }, g:eval { a = A, b = B }))
    has(fails(function() p:load_kernels { devic = host } end), "unknown option 'devic'")
  end)
end)
