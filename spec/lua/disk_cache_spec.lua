-- disk_cache_spec.lua — the on-disk kernel cache (driver/disk_cache.h): four kiln
-- processes compiling overlapping graph sets into one directory, twice (the second round
-- all hits), then with corrupted, truncated and foreign entries (rejected, recompiled,
-- never loaded); every result against the reference evaluator on random inputs. Also
-- eviction under a size bound, cache=false, Lua-pass pipelines, kiln.cache_clear and
-- `kiln cache`.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

-- One worker: compiles graphs first..first+2 (so sets 1..4 overlap), runs each on the
-- host against g:eval, prints "g<i> <p.disk_cache> <ok> <max_rel>" and the counters.
local WORKER = [[
local kiln = require "kiln"
local dir, first = arg[1], tonumber(arg[2])
local function build(i)
  local g = kiln.graph("g" .. i)
  if i % 3 == 0 then
    local a = g:param("a", {5 + i, 7 + i % 2}, "f32")
    local b = g:param("b", {7 + i % 2, 3 + i}, "f32")
    g:output(g:dot(a, b):relu())
  elseif i % 3 == 1 then
    local a = g:param("a", {3, 5 + i, 7}, "f32")
    local b = g:param("b", {3, 5 + i, 7}, "f32")
    g:output((a * b + a):tanh())
  else
    local a = g:param("a", {9, 4 + i}, "f16")
    g:output(a:exp() + a)
  end
  return g
end
for i = first, first + 2 do
  local g = build(i)
  local p = kiln.compile(g, {cache_dir = dir})
  local ins = {}
  for _, pr in ipairs(g:params()) do ins[pr.name] = kiln.rand(pr.shape, pr.dtype) end
  local tol = g:params()[1].dtype == "f16" and {rtol = 2e-3, atol = 2e-3} or {rtol = 1e-4, atol = 1e-5}
  local c = kiln.compare(p:run(ins), g:eval(ins), tol)
  print(("g%d|%s|%s|%s"):format(i, p.disk_cache, tostring(c.ok), c.summary))
end
local s = kiln.cache_stats(dir)
print(("stats %d %d %d %d"):format(s.hits, s.misses, s.stores, s.rejected))
]]

local worker = helper.write_temp(WORKER, ".lua")
local bin = helper.kiln_bin()
local q = helper.shell_quote

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

-- Runs the four workers at once; returns {g<i> = {status...}}, {stats per worker}.
local function round(dir, env)
  local outs, cmd = {}, {}
  for w = 1, 4 do
    outs[w] = os.tmpname()
    cmd[#cmd + 1] = ("%s %s %s %s %d > %s 2>&1 &"):format(env or "", q(bin), q(worker), q(dir), w, q(outs[w]))
  end
  local _, err, code = helper.run(table.concat(cmd, " ") .. " wait")
  assert.are.equal(0, code, err)
  local res, stats = {}, {}
  for w = 1, 4 do
    local f = assert(io.open(outs[w]))
    local text = f:read("a")
    f:close()
    os.remove(outs[w])
    local n = 0
    for line in text:gmatch("[^\n]+") do
      local g, st, ok, summary = line:match("^(g%d+)|(.-)|(%a+)|(.*)$")
      if g then
        n = n + 1
        assert.are.equal("true", ok, ("worker %d %s: %s"):format(w, g, summary))
        res[g] = res[g] or {}
        table.insert(res[g], st)
      else
        local h, m, s, r = line:match("^stats (%d+) (%d+) (%d+) (%d+)$")
        assert.truthy(h, ("worker %d printed: %s"):format(w, text))
        stats[w] = { hits = tonumber(h), misses = tonumber(m), stores = tonumber(s), rejected = tonumber(r) }
      end
    end
    assert.are.equal(3, n, text)
  end
  return res, stats
end

local function entries(dir)
  local out = helper.run("ls " .. q(dir) .. " 2>/dev/null | grep '\\.kce$'")
  local list = {}
  for name in out:gmatch("[^\n]+") do list[#list + 1] = dir .. "/" .. name end
  table.sort(list)
  return list
end

local function rewrite(path, fn)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  f = assert(io.open(path, "wb"))
  f:write(fn(s))
  f:close()
end

describe("disk cache #compile", function()
  it("four processes, twice, then corrupted entries: results match, second round all hits", function()
    local dir = tmpdir()
    local res = round(dir)
    local n = 0
    for g, sts in pairs(res) do
      n = n + 1
      for _, st in ipairs(sts) do assert.truthy(st == "stored" or st == "hit", g .. ": " .. st) end
    end
    assert.are.equal(6, n) -- graphs g1..g6
    assert.are.equal(6, #entries(dir))

    local res2, stats2 = round(dir)
    for g, sts in pairs(res2) do
      for _, st in ipairs(sts) do assert.are.equal("hit", st, g) end
    end
    for w = 1, 4 do
      assert.are.same({ hits = 3, misses = 0, stores = 0, rejected = 0 }, stats2[w])
    end

    -- damage three entries: a flipped byte in the bundle, a truncation, another file's bytes
    local es = entries(dir)
    rewrite(es[1], function(s)
      local i = #s - 40
      return s:sub(1, i - 1) .. string.char((s:byte(i) + 1) % 256) .. s:sub(i + 1)
    end)
    rewrite(es[2], function(s) return s:sub(1, #s // 2) end)
    local f = assert(io.open(es[4], "rb"))
    local other = f:read("a")
    f:close()
    rewrite(es[3], function() return other end)
    local res3, stats3 = round(dir)
    local rejected, hits = 0, 0
    for _, sts in pairs(res3) do
      for _, st in ipairs(sts) do
        if st == "hit" then
          hits = hits + 1
        else
          assert.truthy(st:find("rejected", 1, true) or st == "stored", st)
        end
      end
    end
    for w = 1, 4 do rejected = rejected + stats3[w].rejected end
    assert.truthy(rejected >= 3, "rejected " .. rejected)
    assert.truthy(hits < 12, "hits " .. hits)
    assert.are.equal(6, #entries(dir))
    -- repaired: a fourth round is all hits again
    local res4 = round(dir)
    for g, sts in pairs(res4) do
      for _, st in ipairs(sts) do assert.are.equal("hit", st, g) end
    end
    assert.are.equal(6, kiln.cache_clear(dir))
    assert.are.equal(0, #entries(dir))
    os.remove(dir)
  end)

  it("evicts least recently used entries beyond KILN_CACHE_MAX_MB", function()
    local dir = tmpdir()
    local out, err, code = helper.run(("KILN_CACHE_MAX_MB=0.02 %s %s %s 1"):format(q(bin), q(worker), q(dir)))
    assert.are.equal(0, code, out .. err)
    local total, list = 0, entries(dir)
    for _, e in ipairs(list) do
      local f = assert(io.open(e, "rb"))
      total = total + f:seek("end")
      f:close()
    end
    assert.truthy(#list < 3, "entries: " .. #list)
    assert.truthy(#list == 1 or total <= 0.02 * 1024 * 1024, "bytes " .. total)
    kiln.cache_clear(dir)
    os.remove(dir)
  end)

  -- (a graph per test: the in-memory cache, consulted first, would answer a repeat)
  local function small(cols)
    local g = kiln.graph("dc_small")
    local a = g:param("a", { 3, cols }, "f32")
    g:output((a + a):relu())
    return g, { a = kiln.rand({ 3, cols }, "f32") }
  end

  it("cache=false, cache_dir=false and Lua-pass pipelines do not touch the directory", function()
    local dir = tmpdir()
    local g, ins = small(11)
    local p = kiln.compile(g, { cache_dir = dir, cache = false })
    assert.is_nil(p.disk_cache)
    assert.is_true(kiln.compare(p:run(ins), g:eval(ins)).ok)
    assert.is_nil(kiln.compile(g, { cache_dir = false }).disk_cache)
    local n = 0
    kiln.register_pass("dc-count", function() n = n + 1 end)
    local p2 = kiln.compile(g, { cache_dir = dir, pipeline = kiln.default_pipeline() .. ",dc-count" })
    assert.is_nil(p2.disk_cache)
    assert.are.equal(1, n)
    assert.are.equal(0, #entries(dir))
    local p3 = kiln.compile(g, { cache_dir = dir, strict_fp = true })
    assert.are.equal("stored", p3.disk_cache)
    assert.is_true(kiln.compare(p3:run(ins), g:eval(ins)).ok)
    assert.are.equal(1, #entries(dir))
    kiln.cache_clear(dir)
    os.remove(dir)
  end)

  it("an unusable directory still compiles, saying why nothing was stored", function()
    local g, ins = small(13)
    local p = kiln.compile(g, { cache_dir = "/proc/kiln-no-such/cache" })
    local st = p.disk_cache
    assert.truthy(st and st:find("not stored", 1, true), tostring(st))
    assert.is_true(kiln.compare(p:run(ins), g:eval(ins)).ok)
    helper.has(helper.fails(kiln.compile, g, { cache_dir = 3 }), "cache_dir must be a directory name or false")
  end)

  it("kiln cache lists and clears", function()
    local dir = tmpdir()
    assert.are.equal("stored", kiln.compile(small(17), { cache_dir = dir }).disk_cache)
    local out, _, code = helper.run(q(bin) .. " cache --dir " .. q(dir))
    assert.are.equal(0, code)
    helper.has(out, "1 entries")
    out, _, code = helper.run("KILN_CACHE_DIR=" .. q(dir) .. " " .. q(bin) .. " cache --clear")
    assert.are.equal(0, code)
    helper.has(out, "removed 1 entries from " .. dir)
    local _, err, code2 = helper.run(q(bin) .. " cache --frob")
    assert.are.equal(2, code2)
    helper.has(err, "unknown argument '--frob'")
    os.remove(dir)
  end)
end)
