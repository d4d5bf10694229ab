-- tuning_db_spec.lua — the tuning database (driver/tuning_db.h) and its use by kiln.compile:
-- records round-trip, files merge by concatenation (the last record of a key wins), a corrupt
-- line is skipped with its file:line, a stale format version is ignored with one notice,
-- kiln.compile picks a tuned config (p:kernels()[i].perf_config_source) and it computes the
-- same result as the heuristic's, several writers at once keep every record.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local function dot_graph(name, M, K, N)
  local g = kiln.graph(name)
  local a, b = g:param("a", { M, K }, "f32"), g:param("b", { K, N }, "f32")
  g:output((g:dot(a, b) * 2):relu())
  return g
end

local function tmpdb()
  local p = os.tmpname()
  os.remove(p)
  return p .. ".db"
end

local function rec(key, config, ms, extra)
  local r = { target = "host", device = "cpu0", key = key, problem = "gemm test", config = config, ms = ms,
              runners = { ms + 1, ms + 2 } }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local K1, K2 = "0123456789abcdef", "fedcba9876543210"

describe("tuning database #tune", function()
  it("round-trips records, replacing those of the same identity", function()
    local db = tmpdb()
    kiln.tuning_db_write(db, { rec(K1, "v1:16,16,8,16,16,1", 0.25), rec(K2, "v1:32,32,8,32,32,1", 1.5) })
    kiln.tuning_db_write(db, { rec(K1, "v1:8,8,4,8,8,1", 0.125) })
    local recs, warn = kiln.tuning_db_read(db)
    assert.are.same({}, warn)
    assert.are.equal(2, #recs)
    local by = {}
    for _, r in ipairs(recs) do by[r.key] = r end
    assert.are.equal("v1:8,8,4,8,8,1", by[K1].config)
    assert.are.equal(0.125, by[K1].ms)
    assert.are.same({ 1.125, 2.125 }, by[K1].runners)
    assert.are.equal("cpu0", by[K1].device)
    assert.are.equal(1, by[K1].format)
    assert.truthy(by[K1].date:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
    assert.are.equal("v1:32,32,8,32,32,1", by[K2].config)
    -- human-readable: a comment header, one tab-separated line per record
    local text = helper.read_file(db)
    assert.truthy(text:match("^# kiln tuning database"))
    helper.has(text, "1\thost\tcpu0\t" .. K2 .. "\tgemm test\tv1:32,32,8,32,32,1\t1.5\t2.5,3.5\t")
    os.remove(db)
  end)

  it("merges by concatenation: the last record of a key wins (kiln.compile too)", function()
    local g = dot_graph("db_cat", 19, 23, 29)
    local key = kiln.compile(g, { target = "host", tuning_db = false }):kernels()[1].problem_key
    assert.truthy(key:match("^%x+$") and #key == 16)
    local a, b = tmpdb(), tmpdb()
    kiln.tuning_db_write(a, { rec(key, "v1:8,8,4,8,8,1", 0.5), rec(K2, "v1:16,16,8,16,16,1", 1) })
    kiln.tuning_db_write(b, { rec(key, "v1:16,8,8,16,8,1", 0.25) })
    local cat = tmpdb()
    local f = assert(io.open(cat, "wb"))
    f:write(helper.read_file(a) .. helper.read_file(b))
    f:close()
    local recs, warn = kiln.tuning_db_read(cat)
    assert.are.same({}, warn)
    assert.are.equal(3, #recs)
    local p = kiln.compile(g, { target = "host", tuning_db = cat })
    assert.are.equal("v1:16,8,8,16,8,1", p:kernels()[1].perf_config)
    assert.are.equal("tuned (db)", p:kernels()[1].perf_config_source)
    -- rewriting the concatenation keeps one record per key
    kiln.tuning_db_write(cat, { rec(K1, "v1:8,8,8,8,8,1", 2) })
    recs = kiln.tuning_db_read(cat)
    local n = 0
    for _, r in ipairs(recs) do if r.key == key then n = n + 1 end end
    assert.are.equal(2, n) -- untouched keys keep their lines (the later one still wins)
    for _, x in ipairs { a, b, cat } do os.remove(x) end
  end)

  it("skips a corrupt line with a clear message naming file:line", function()
    local db = tmpdb()
    kiln.tuning_db_write(db, { rec(K1, "v1:8,8,4,8,8,1", 0.5) })
    local f = assert(io.open(db, "ab"))
    f:write("1\thost\tcpu0\tnot-a-key\tp\tv1:8,8,4,8,8,1\t0.1\t-\td\n")
    f:write("1\thost\tcpu0\t" .. K2 .. "\tp\tv1:8,8,4,8,8,1\tfast\t-\td\n")
    f:write("just words\n")
    f:close()
    local recs, warn = kiln.tuning_db_read(db)
    assert.are.equal(1, #recs)
    assert.are.equal(3, #warn)
    helper.has(warn[1], db .. ":3: corrupt tuning record skipped: key 'not-a-key' is not 16 hex digits")
    helper.has(warn[2], db .. ":4: corrupt tuning record skipped: time 'fast' is not")
    helper.has(warn[3], db .. ":5: corrupt tuning record skipped: expected 9 tab-separated fields")
    -- a compile still works and says so once on stderr
    local src = helper.write_temp(([[
      local g = kiln.graph("c")
      local a, b = g:param("a", {5, 6}, "f32"), g:param("b", {6, 7}, "f32")
      g:output(g:dot(a, b))
      kiln.compile(g, {tuning_db = %q})
      kiln.compile(g, {tuning_db = %q, cache = false})
      print("ok")]]):format(db, db), ".lua")
    local out, err, code = helper.run(helper.shell_quote(helper.kiln_bin()) .. " " .. src)
    assert.are.equal(0, code, err)
    assert.are.equal("ok\n", out)
    local _, n = err:gsub(":5: corrupt tuning record skipped", "")
    assert.are.equal(1, n, err)
    os.remove(db)
    os.remove(src)
  end)

  it("ignores records of another format version with one notice", function()
    local g = dot_graph("db_stale", 11, 13, 17)
    local key = kiln.compile(g, { target = "host", tuning_db = false }):kernels()[1].problem_key
    local db = tmpdb()
    kiln.tuning_db_write(db, { rec(key, "v1:8,8,4,8,8,1", 0.5, { format = 99 }), rec(K1, "v1:8,8,4,8,8,1", 1,
      { format = 99 }) })
    local recs, warn = kiln.tuning_db_read(db)
    assert.are.equal(2, #recs)
    assert.are.same({ db .. ": 2 records of tuning-db format version 99 ignored (this kiln reads version 1)" }, warn)
    local k = kiln.compile(g, { target = "host", tuning_db = db }):kernels()[1]
    assert.are.equal("heuristic", k.perf_config_source)
    os.remove(db)
  end)

  it("a tuned config is used only without perf_config and tuning_db=false, and computes the same", function()
    local g = dot_graph("db_pick", 37, 41, 43)
    local heur = kiln.compile(g, { target = "host", tuning_db = false })
    local k = heur:kernels()[1]
    assert.are.equal("heuristic", k.perf_config_source)
    local tuned = "v1:8,16,4,8,16,1"
    assert.are_not.equal(tuned, k.perf_config)
    local db = tmpdb()
    kiln.tuning_db_write(db, { rec(k.problem_key, tuned, 0.1, { device = "any cpu" }) })
    local p = kiln.compile(g, { target = "host", tuning_db = db })
    assert.are.equal(tuned, p:kernels()[1].perf_config)
    assert.are.equal("tuned (db)", p:kernels()[1].perf_config_source)
    local inputs = { a = kiln.rand({ 37, 41 }, "f32"), b = kiln.rand({ 41, 43 }, "f32") }
    local c = kiln.compare(p:run(inputs), g:eval(inputs), { rtol = 1e-4, atol = 1e-4 })
    assert.is_true(c.ok, c.summary)
    -- a device filter that does not match, the user's config and tuning_db=false win
    assert.are.equal("heuristic",
      kiln.compile(g, { target = "host", tuning_db = db, tuning_device = "other" }):kernels()[1].perf_config_source)
    assert.are.equal("tuned (db)",
      kiln.compile(g, { target = "host", tuning_db = db, tuning_device = "any cpu" }):kernels()[1].perf_config_source)
    local u = kiln.compile(g, { target = "host", tuning_db = db, perf_config = "v1:16,16,4,16,16,1" }):kernels()[1]
    assert.are.same({ "v1:16,16,4,16,16,1", "user" }, { u.perf_config, u.perf_config_source })
    assert.are.equal("heuristic", kiln.compile(g, { target = "host", tuning_db = false }):kernels()[1].perf_config_source)
    -- records of another target are not used
    kiln.tuning_db_write(db, { rec(k.problem_key, "v1:64,64,16,8,8,1", 0.1, { target = "sm_90" }) })
    assert.are.equal(tuned, kiln.compile(g, { target = "host", tuning_db = db }):kernels()[1].perf_config)
    os.remove(db)
  end)

  it("the problem key ignores the kernel's name and sees shapes, dtypes and epilogues", function()
    local function key(g) return kiln.compile(g, { target = "host", tuning_db = false }):kernels()[1].problem_key end
    local k1, k2 = key(dot_graph("name_one", 9, 10, 11)), key(dot_graph("other_name", 9, 10, 11))
    assert.are.equal(k1, k2)
    assert.are_not.equal(k1, key(dot_graph("name_one", 9, 10, 12)))
    local g = kiln.graph("name_one")
    local a, b = g:param("a", { 9, 10 }, "f32"), g:param("b", { 10, 11 }, "f32")
    g:output(g:dot(a, b):relu())
    assert.are_not.equal(k1, key(g))
    local k = kiln.compile(dot_graph("desc", 9, 10, 11), { target = "host", tuning_db = false }):kernels()[1]
    helper.has(k.problem, "gemm G=1 M=9 N=11 K=10 f32,f32->f32")
  end)

  it("several processes writing at once keep every record", function()
    local db = tmpdb()
    local script = helper.write_temp(([[
      local i = tonumber(arg[1])
      for j = 1, 5 do
        kiln.tuning_db_write(%q, {{target = "host", key = string.format("%%016x", i * 100 + j),
                                   config = "v1:8,8,4,8,8,1", ms = i + j / 10}})
      end]]):format(db), ".lua")
    local bin = helper.shell_quote(helper.kiln_bin())
    local cmd = {}
    for i = 1, 4 do cmd[#cmd + 1] = bin .. " " .. script .. " " .. i .. " &" end
    cmd[#cmd + 1] = "wait"
    local _, err, code = helper.run(table.concat(cmd, " "))
    assert.are.equal(0, code, err)
    local recs, warn = kiln.tuning_db_read(db)
    assert.are.same({}, warn)
    assert.are.equal(20, #recs)
    os.remove(db)
    os.remove(script)
  end)

  it("the default path follows KILN_TUNING_DB, then XDG_CACHE_HOME, then HOME", function()
    local bin = helper.shell_quote(helper.kiln_bin())
    local function path(env)
      local out = helper.run("env -u KILN_TUNING_DB -u XDG_CACHE_HOME " .. env .. " " .. bin ..
        " -e 'print(kiln.tuning_db_path())'")
      return (out:gsub("\n$", ""))
    end
    assert.are.equal("/tmp/x.db", path("KILN_TUNING_DB=/tmp/x.db HOME=/h"))
    assert.are.equal("/xdg/kiln/tuning.db", path("XDG_CACHE_HOME=/xdg HOME=/h"))
    assert.are.equal("/h/.cache/kiln/tuning.db", path("HOME=/h"))
  end)
end)
