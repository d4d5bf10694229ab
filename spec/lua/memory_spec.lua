-- memory_spec.lua — memory stays bounded when one context compiles many graphs: the
-- compile cache keeps the most recent programs (LRU, kiln.compile_cache), a program's IR
-- is freed with the program, kiln.collect() drops the caches now.
-- The RSS bound (40 MiB over 1000 compiles) is about 10x what the code needs (about
-- 9 MiB: the cache's 32 programs and the graphs' IR); before the bound existed the same
-- loop grew by about 400 MiB (140 MiB with cache = false). Under AddressSanitizer (whose
-- quarantine keeps freed memory) the loop runs 100 times and RSS is not checked: there
-- it checks that nothing freed is used.
local kiln = require "kiln"

local SANITIZED = os.getenv("ASAN_OPTIONS") ~= nil

local function rss_mib()
  local f = assert(io.open("/proc/self/statm"))
  local s = f:read("a")
  f:close()
  local resident = tonumber(s:match("^%d+%s+(%d+)"))
  return resident * 4096 / 2 ^ 20
end

local function full_gc()
  for _ = 1, 3 do collectgarbage("collect") end
end

-- A small graph (a GEMM with a bias and ReLU); c makes each one a new compile.
local function small_graph(c, ctx)
  local g = ctx and kiln.graph(ctx, "mem") or kiln.graph("mem")
  local x = g:param("x", { 4, 8 }, "f32")
  local w = g:param("w", { 8, 16 }, "f32")
  g:output((g:dot(x, w) + c):relu())
  return g
end

local function check(p, g)
  local inputs = { x = kiln.rand({ 4, 8 }, "f32"), w = kiln.rand({ 8, 16 }, "f32") }
  local out = p:run(inputs)
  local ref = g:eval(inputs)
  local r = kiln.compare(out, ref)
  assert.is_true(r.ok, r.summary)
end

describe("memory", function()
  it("stays bounded over 1000 compiles of small graphs in one context", function()
    local n = SANITIZED and 100 or 1000
    for i = 1, 20 do small_graph(-i):compile() end -- warm up (code paths, interned names)
    kiln.collect()
    local before = rss_mib()
    for i = 1, n do
      local g = small_graph(i * 0.5)
      local p = kiln.compile(g)
      if i % 250 == 0 then check(p, g) end
    end
    kiln.collect()
    local growth = rss_mib() - before
    if not SANITIZED then
      assert.is_true(growth < 40, string.format("RSS grew by %.1f MiB over %d compiles (bound 40 MiB)", growth, n))
    end
    assert.are.equal(0, kiln.compile_cache().entries)
  end)

  it("keeps the most recently used programs in the compile cache", function()
    local old = kiln.compile_cache(3).max
    finally(function() kiln.compile_cache(old) end)
    kiln.collect()
    for i = 1, 5 do kiln.compile(small_graph(100 + i)) end
    assert.are.equal(3, kiln.compile_cache().entries)
    assert.is_true(kiln.compile(small_graph(105)).from_cache)
    assert.is_true(kiln.compile(small_graph(103)).from_cache) -- now the most recent
    assert.is_false(kiln.compile(small_graph(101)).from_cache) -- evicted; this drops 104
    assert.is_false(kiln.compile(small_graph(104)).from_cache)
    assert.is_true(kiln.compile(small_graph(101)).from_cache)
    assert.are.equal(3, kiln.compile_cache().entries)
    kiln.compile_cache(0)
    assert.are.equal(0, kiln.compile_cache().entries)
    assert.is_false(kiln.compile(small_graph(101)).from_cache)
    assert.are.equal(0, kiln.compile_cache().entries)
  end)

  it("keeps a program a handle holds after its cache entry goes", function()
    local g = small_graph(7.25)
    local p = kiln.compile(g)
    local text = p:ir("after:rock-lower-loops")
    assert.is_true(kiln.collect() >= 1)
    full_gc()
    for i = 1, 40 do kiln.compile(small_graph(200 + i)) end -- reuses the freed memory
    kiln.collect()
    check(p, g)
    assert.are.equal(text, p:ir("after:rock-lower-loops"))
    assert.is_truthy(p:kernels()[1].ir[1].text:find("func.func", 1, true))
  end)

  it("keeps IR that an on_ir callback builds during a compile after the program goes", function()
    local mods = {}
    do
      local p = kiln.compile(small_graph(9.5), { print_ir_after = "all",
                                                 on_ir = function(pass, text) mods[#mods + 1] = kiln.parse(text, pass) end })
      assert.is_true(#mods > 3)
      p = nil -- luacheck: ignore
    end
    kiln.collect()
    full_gc()
    for i = 1, 20 do kiln.compile(small_graph(300 + i)) end -- reuses freed memory
    for _, m in ipairs(mods) do
      assert.is_true(m:verify())
      assert.is_truthy(tostring(m):find("func.func", 1, true))
    end
  end)

  it("collects the cache of a given context only", function()
    local ctx = kiln.context()
    local g = small_graph(3, ctx)
    local p = kiln.compile(g)
    kiln.compile(small_graph(4))
    assert.are.equal(1, kiln.compile_cache(ctx).entries)
    assert.are.equal(1, kiln.collect(ctx))
    assert.are.equal(0, kiln.compile_cache(ctx).entries)
    assert.is_true(kiln.compile_cache().entries >= 1)
    check(p, g)
    assert.has_error(function() kiln.compile_cache(-1) end)
  end)

  it("is documented in kiln.help()", function()
    local out = {}
    local saved = _G.print
    _G.print = function(...) out[#out + 1] = table.concat({ ... }, "\t") end
    local ok, err = pcall(kiln.help)
    _G.print = saved
    assert(ok, err)
    local text = table.concat(out, "\n")
    for _, s in ipairs { "kiln.collect(", "kiln.compile_cache(", "kiln.graph(kiln.context()" } do
      assert.is_truthy(text:find(s, 1, true), s .. " is not in kiln.help()")
    end
  end)
end)
