-- typo_spec.lua — no silent typos: every option table and every name-taking argument of
-- the Lua API rejects an unknown name at the caller's line with the valid ones (one
-- helper: kl_lua__unknown_name / kiln._check_opts), and an environment variable with an
-- unknown value warns once.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local function fixture()
  local g = kiln.graph("typo")
  local x = g:param("x", { 2, 3 }, "f32")
  g:output(x:relu())
  local p = kiln.compile(g)
  return g, x, p
end

-- name, function, the expected message (after "file:line: error: ")
local CASES = {
  { "kiln.rand", function() kiln.rand({ 2 }, "f32", { sed = 3 }) end,
    "kiln.rand: unknown option 'sed' (did you mean 'seed'? options: seed, dist, layout, strides)" },
  { "kiln.tensor", function() kiln.tensor({ 1, 2 }, "f32", { layot = "C" }) end,
    "kiln.tensor: unknown option 'layot' (did you mean 'layout'? options: shape, layout, strides)" },
  { "kiln.zeros", function() kiln.zeros({ 2 }, "f32", { stride = { 1 } }) end,
    "kiln.zeros: unknown option 'stride' (did you mean 'strides'? options: layout, strides)" },
  { "kiln.full", function() kiln.full({ 2 }, 1, "f32", { seed = 1 }) end,
    "kiln.full: unknown option 'seed' (options: layout, strides)" },
  { "t:tostring", function() kiln.rand({ 2 }):tostring { treshold = 1 } end,
    "tensor:tostring: unknown option 'treshold' (did you mean 'threshold'? options: threshold, edge, precision)" },
  { "kiln.compare", function() kiln.compare(kiln.rand({ 2 }), kiln.rand({ 2 }), { rtl = 1 }) end,
    "kiln.compare: unknown option 'rtl' (did you mean 'rtol'? options: rtol, atol)" },
  { "kiln.compile", function(g) kiln.compile(g, { targt = "host" }) end,
    "compile: unknown option 'targt' (did you mean 'target'? options: target, targets, perf_config, pipeline, " ..
    "print_ir_after, on_ir, cache, strict_fp, cache_dir, tuning_db, tuning_device)" },
  { "print_ir_after", function(g) kiln.compile(g, { print_ir_after = { "typo" } }) end,
    "compile: unknown print_ir_after pass 'typo' (passes: fp8-compute, reduce-split, split-k-workspace, graph-partition, " },
  { "print_ir_after near", function(g) kiln.compile(g, { print_ir_after = "cs" }) end,
    "compile: unknown print_ir_after pass 'cs' (did you mean 'cse'? passes: " },
  { "p:ir", function(_, _, p) return p:ir("after:typo") end,
    "program:ir: unknown pass 'typo' (passes: fp8-compute, reduce-split, " },
  { "p:ir near", function(_, _, p) return p:ir("rock-lower-loop") end,
    "program:ir: unknown pass 'rock-lower-loop' (did you mean 'rock-lower-loops'? passes: " },
  { "p:run options", function(_, _, p) p:run({ x = kiln.rand({ 2, 3 }) }, { devce = "host" }) end,
    "run: unknown option 'devce' (did you mean 'device'? options: device, timing)" },
  { "p:run inputs", function(_, _, p) p:run { xx = kiln.rand({ 2, 3 }) } end,
    "run: unknown input 'xx' (did you mean 'x'? params: x)" },
  { "g:eval inputs", function(g) g:eval { y = kiln.rand({ 2, 3 }) } end, "eval: unknown input 'y' (params: x)" },
  { "p:prepare", function(_, _, p) p:prepare({ x = kiln.rand({ 2, 3 }) }, { set = 2 }) end,
    "prepare: unknown option 'set' (did you mean 'sets'? options: device, max_sets, poison, rotate_bytes, sets)" },
  { "r:time", function(_, _, p) p:prepare { x = kiln.rand({ 2, 3 }) }:time { rep = 2 } end,
    "time: unknown option 'rep' (did you mean 'reps'? options: reps, warmup)" },
  { "p:load_kernels", function(_, _, p) p:load_kernels { devic = "host" } end,
    "load_kernels: unknown option 'devic' (did you mean 'device'? options: device)" },
  { "p:binary kernel", function(_, _, p) p:binary("typo_k1") end,
    "binary: unknown kernel 'typo_k1' (did you mean 'typo_k0'? kernels: typo_k0)" },
  { "p:asm target", function(_, _, p) p:asm(p:kernels()[1].name, "hots") end,
    "asm: unknown target 'hots' (did you mean 'host'? the program's targets: host)" },
  { "kiln.tuning_space", function(g) kiln.tuning_space(g, { levl = "quick" }) end,
    "tuning_space: unknown option 'levl' (did you mean 'level'? options: target, level, rejected)" },
  { "g:param", function(g) g:param("y", { 2 }, "f32", { layuot = "C" }) end,
    "param: unknown option 'layuot' (did you mean 'layout'? options: layout, strides)" },
  { "g:output", function(g, x) g:output(x, { layot = "C" }) end,
    "output: unknown option 'layot' (did you mean 'layout'? options: layout, strides)" },
  { "g:conv", function(g)
      local a = g:param("a", { 1, 2, 4, 4 }, "f32")
      local r = g:conv(a, g:param("w", { 2, 2, 1, 1 }, "f32"), { strid = 1 }) -- not a tail call: the line is here
      return r
    end, "conv: unknown option 'strid' (did you mean 'stride'? options: dilation, groups, padding, stride)" },
  { "g:dot", function(g)
      local a = g:param("a", { 2, 2 }, "f32")
      local r = g:dot(a, a, { transpose_c = true })
      return r
    end, "dot: unknown option 'transpose_c' (did you mean 'transpose_a'? options: transpose_a, transpose_b)" },
  { "g:hint", function(g, x) g:hint(x, { primry = true }) end,
    "hint: unknown option 'primry' (did you mean 'primary'? options: primary, split)" },
  { "m:print", function(g) g.module:print { generc = true } end,
    "print: unknown option 'generc' (did you mean 'generic'? options: generic, locs)" },
  { "m:walk", function(g) g.module:walk(function() end, { ordr = "post" }) end,
    "walk: unknown option 'ordr' (did you mean 'order'? options: order, name)" },
  { "kiln.op", function() kiln.op { nam = "a.b" } end,
    "kiln.op: unknown option 'nam' (did you mean 'name'? options: name, operands, results, attrs, regions, loc, names, ctx)" },
  { "kiln.run_pipeline", function(g) kiln.run_pipeline(g.module, "cse", { verfy = true }) end,
    "run_pipeline: unknown option 'verfy' (did you mean 'verify'? options: on_ir, verify, verify_each, print_ir_after)" },
  { "kiln.register_pass", function() kiln.register_pass("typo-pass", function() end, { sumary = "x" }) end,
    "kiln.register_pass: unknown option 'sumary' (did you mean 'summary'? options: summary, options)" },
  { "register_pass options", function()
      kiln.register_pass("typo-pass", function() end, { options = { { name = "n", knd = "int" } } })
    end, "kiln.register_pass: unknown option 'knd' (did you mean 'kind'? options: name, kind, default, help)" },
  { "kiln.pattern", function() kiln.pattern { rot = "a.b", rewrite = function() end } end,
    "kiln.pattern: unknown option 'rot' (did you mean 'root'? options: root, benefit, name, rewrite)" },
  { "kiln.apply_patterns", function(g) kiln.apply_patterns(g.module, {}, { wlk = true }) end,
    "apply_patterns: unknown option 'wlk' (did you mean 'walk'? options: walk, max_iterations, max_rewrites, fold, " ..
    "remove_dead)" },
  { "kiln.view", function() kiln.view { shape = { 4 }, nmes = { "a" } } end,
    "kiln.view: unknown option 'nmes' (did you mean 'names'? options: shape, names)" },
  { "kiln.conv_views", function() kiln.conv_views { n = 1, c = 1, h = 1, w = 1, k = 1, y = 1, x = 1, strde = 1 } end,
    "kiln.conv_views: unknown option 'strde' (did you mean 'stride'? options: n, c, h, hi, w, wi, k, y, x, groups, " },
  { "not a string key", function() kiln.rand({ 2 }, "f32", { 7 }) end,
    "kiln.rand: unknown option '1' (options: seed, dist, layout, strides)" },
}

describe("no silent typos", function()
  for _, c in ipairs(CASES) do
    it(c[1], function()
      local g, x, p = fixture()
      local line = debug.getinfo(c[2], "S").linedefined
      local ok, err = pcall(c[2], g, x, p)
      assert.is_false(ok, c[1] .. " accepted the typo")
      err = tostring(err)
      local at = err:match("^(.-): error: ")
      assert.is_truthy(at, "no location in: " .. err)
      -- the caller's line: this spec file, the line of the function that made the call
      local file, l = at:match("^(.*):(%d+)$")
      assert.is_truthy(file and file:find("typo_spec.lua", 1, true), "not at the caller's file: " .. err)
      assert.is_true(tonumber(l) >= line and tonumber(l) <= line + 4, "not at the caller's line: " .. err)
      local msg = err:sub(#at + #": error: " + 1)
      assert.are.equal(c[3], msg:sub(1, #c[3]))
    end)
  end

  it("kiln._check_opts: the Lua side of the helper (list or set, nil -> {})", function()
    assert.are.same({}, kiln._check_opts(nil, "mine", { "a" }))
    local t = { alpha = 1 }
    assert.are.equal(t, kiln._check_opts(t, "mine", { alpha = true, beta = true }))
    local ok, err = pcall(kiln._check_opts, { alpah = 1 }, "mine", { alpha = true, beta = true })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("mine: unknown option 'alpah' (did you mean 'alpha'? options: alpha, beta)", 1,
                                        true), err)
    ok, err = pcall(kiln._unknown_name, "mine", "colour", "colours", "gren", { "red", "green" })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("mine: unknown colour 'gren' (did you mean 'green'? colours: green, red)", 1,
                                        true), err)
  end)

  it("environment variables with an unknown value warn once", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local kiln = require "kiln"
for i = 1, 3 do
  local g = kiln.graph("e")
  local x = g:param("x", { 2, 3 }, "f32")
  g:output(x + i)
  local p = kiln.compile(g)
  p:run { x = kiln.rand({ 2, 3 }) }
end
print("done")
]])
    f:close()
    local function run(env)
      local h = io.popen(env .. " " .. helper.kiln_bin() .. " " .. script .. " 2>&1")
      local out = h:read("a")
      h:close()
      return out
    end
    local cache_dir = os.tmpname() .. ".d"
    finally(function() os.execute("rm -rf '" .. cache_dir .. "'") end)
    local cases = {
      { "KILN_DEBUG=rewrit", "kiln: warning: KILN_DEBUG=rewrit: unknown topic 'rewrit' (did you mean 'rewrite'?)" },
      { "KILN_THREADS=two", "kiln: warning: KILN_THREADS=two: not a thread count" },
      { "KILN_PRINT_IR_AFTER=cs", "kiln: warning: KILN_PRINT_IR_AFTER=cs: " },
      { "KILN_CACHE_DIR=" .. cache_dir .. " KILN_CACHE_MAX_MB=lots",
        "kiln: warning: KILN_CACHE_MAX_MB=lots: not a size in MiB" },
    }
    for _, c in ipairs(cases) do
      local out = run(c[1])
      assert.is_truthy(out:find("done", 1, true), c[1] .. ": " .. out)
      local first = out:find(c[2], 1, true)
      assert.is_truthy(first, c[1] .. " did not warn: " .. out)
      local var = c[2]:match("warning: ([A-Z_]+)=")
      local n = select(2, out:gsub("warning: " .. var .. "=", ""))
      assert.are.equal(1, n, c[1] .. " warned " .. n .. " times: " .. out)
    end
    os.remove(script)
  end)
end)
