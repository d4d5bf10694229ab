-- pipeline_spec.lua — kiln.run_pipeline mixing C passes and Lua functions, IR
-- snapshots, timing, kiln.register_pass / kiln.passes, pipeline errors.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

describe("kiln.run_pipeline", function()
  it("mixes C passes and Lua functions and shows the IR after each pass", function()
    local m = kiln.parse(helper.sample, "sample.kir")
    local snapshots, order = {}, {}
    local function tag_squares(mod)
      for _, op in ipairs(mod:ops("arith.mulf")) do op:set_attr("lua_was_here", true) end
    end
    local ok, report = kiln.run_pipeline(m, { "cse", tag_squares, "canonicalize" }, {
      on_ir = function(pass, text) order[#order + 1] = pass; snapshots[pass] = text end,
    })
    assert.is_true(ok)
    assert.are.equal(3, #order)
    assert.are.equal("cse", order[1])
    assert.truthy(order[2]:find("^lua@.*pipeline_spec.lua:%d+$"), order[2])
    assert.are.equal("canonicalize", order[3])
    -- after cse: the duplicate add is gone, constants not folded yet
    local _, adds = snapshots.cse:gsub("arith.addf", "")
    assert.are.equal(1, adds)
    assert.truthy(snapshots.cse:find("arith.addi", 1, true))
    assert.is_nil(snapshots.cse:find("lua_was_here", 1, true))
    -- after the Lua function: the attribute is there
    assert.truthy(snapshots[order[2]]:find("lua_was_here", 1, true))
    -- after canonicalize: constants folded
    assert.is_nil(snapshots.canonicalize:find("arith.addi", 1, true))
    assert.truthy(snapshots.canonicalize:find("arith.constant 5 : i32", 1, true))
    assert.are.equal(snapshots.canonicalize, m:print())
    -- timing report
    assert.are.equal(3, #report.passes)
    assert.are.equal("cse", report.passes[1].name)
    assert.are.equal(order[2], report.passes[2].name)
    for _, p in ipairs(report.passes) do assert.is_true(p.ms >= 0) end
    assert.is_true(report.total_ms >= report.passes[1].ms)
    assert.truthy(report.text:find("canonicalize", 1, true))
    assert.truthy(kiln.format_timing(report):find("total", 1, true))
  end)

  it("takes pipeline strings with options and prints only the named passes", function()
    local m = kiln.parse(helper.sample)
    local seen = {}
    kiln.run_pipeline(m, "cse,canonicalize{max-iterations=5},dce", {
      print_ir_after = { "dce", "cse" },
      on_ir = function(pass) seen[#seen + 1] = pass end,
    })
    assert.are.same({ "cse", "dce" }, seen)
    assert.is_true(m:verify())
  end)

  it("named Lua functions and Lua passes registered by name", function()
    local calls = {}
    kiln.register_pass("spec-scale", function(mod, opts)
      calls[#calls + 1] = opts
      for _, op in ipairs(mod:ops("arith.mulf")) do op:set_attr("factor", opts.factor) end
    end, { summary = "tags squares with a factor", options = {
      { name = "factor", kind = "int", default = 2, help = "the factor" },
      { name = "label", kind = "string", default = "none" },
    } })
    local found
    for _, p in ipairs(kiln.passes()) do if p.name == "spec-scale" then found = p end end
    assert.truthy(found)
    assert.are.equal("tags squares with a factor", found.summary)
    assert.is_true(found.lua)
    assert.are.equal("factor", found.options[1].name)
    assert.are.equal("int", found.options[1].kind)
    assert.are.equal("2", found.options[1].default)
    -- builtin passes are listed too
    local names = {}
    for _, p in ipairs(kiln.passes()) do names[p.name] = p.lua end
    assert.is_false(names.cse)
    assert.is_false(names.canonicalize)

    local m = kiln.parse(helper.sample)
    local named = 0
    kiln.run_pipeline(m, { "spec-scale{factor=3,label=x}", { name = "count", run = function() named = named + 1 end }, "spec-scale" })
    assert.are.equal(1, named)
    assert.are.equal(2, #calls)
    assert.are.same({ factor = 3, label = "x" }, calls[1])
    assert.are.same({ factor = 2, label = "none" }, calls[2])
    assert.are.equal(2, m:find("arith.mulf"):attr("factor"))
    -- registered passes reach contexts created later
    local ctx = kiln.context()
    local m2 = ctx:parse(helper.sample)
    kiln.run_pipeline(m2, "spec-scale{factor=7}")
    assert.are.equal(7, m2:find("arith.mulf"):attr("factor"))
    -- bad option values are pipeline errors
    local ok, err = pcall(kiln.run_pipeline, m, "spec-scale{factor=abc}")
    assert.is_false(ok)
    assert.truthy(err:find("error:", 1, true), err)
  end)

  it("an unknown pass is an error naming it", function()
    local m = kiln.parse(helper.sample)
    local ok, err = pcall(kiln.run_pipeline, m, "cse,no-such-pass")
    assert.is_false(ok)
    assert.truthy(err:find("<pipeline>:1:5: error: unknown pass 'no-such-pass'", 1, true), err)
    ok, err = pcall(kiln.run_pipeline, m, { "cse", 42 })
    assert.is_false(ok)
    assert.truthy(err:find("pipeline[2]", 1, true), err)
  end)

  it("a Lua error in a pipeline function carries the traceback; the module stays valid", function()
    local m = kiln.parse(helper.sample, "sample.kir")
    local function inner(mod) error("pass exploded on " .. mod.name) end
    local ok, err = pcall(kiln.run_pipeline, m, { "cse", function(mod) inner(mod); return true end, "dce" })
    assert.is_false(ok)
    assert.truthy(err:find("pass exploded on builtin.module", 1, true), err)
    assert.truthy(err:find("stack traceback:", 1, true), err)
    assert.truthy(err:find("inner", 1, true), err)
    assert.truthy(err:match("pipeline_spec%.lua:%d+: error: Lua pass 'lua@"), err)
    assert.is_true(m:verify())
    -- a registered Lua pass that fails, and one that returns false, "reason"
    kiln.register_pass("spec-fail", function() return false, "not today" end)
    ok, err = pcall(kiln.run_pipeline, m, "spec-fail")
    assert.is_false(ok)
    assert.truthy(err:find("Lua pass 'spec-fail' failed: not today", 1, true), err)
    assert.truthy(err:find("pass 'spec-fail' failed", 1, true), err)
  end)

  it("verifies after each pass and names the pass that broke the IR", function()
    local m = kiln.parse(helper.sample)
    local function breaker(mod)
      local ret = mod:find("func.return")
      ret.block:append(kiln.op{ name = "test.after_terminator" })
    end
    local ok, err = pcall(kiln.run_pipeline, m, { { name = "breaker", run = breaker } })
    assert.is_false(ok)
    assert.truthy(err:find("after pass 'breaker'", 1, true), err)
    -- without verification it runs through
    local m2 = kiln.parse(helper.sample)
    assert.is_true((kiln.run_pipeline(m2, { { name = "breaker", run = breaker } }, { verify = false })))
  end)

  it("runs Lua passes and patterns on the calling coroutine", function()
    local ran_on
    kiln.register_pass("spec-co", function() ran_on = coroutine.running() end)
    local co = coroutine.create(function()
      local m = kiln.parse(helper.sample)
      kiln.run_pipeline(m, "cse,spec-co")
      local pat_on
      kiln.apply_patterns(m, { function() pat_on = coroutine.running(); return false end })
      coroutine.yield(pat_on)
      -- yielding from inside a pattern is not possible (C driver below): a clean error
      return pcall(kiln.apply_patterns, m, { function() coroutine.yield() end })
    end)
    local ok, pat_on = coroutine.resume(co)
    assert.is_true(ok, pat_on)
    assert.are.equal(co, ran_on)
    assert.are.equal(co, pat_on)
    local ok2, pok, err = coroutine.resume(co)
    assert.is_true(ok2)
    assert.is_false(pok)
    assert.truthy(err:find("yield across a C-call boundary", 1, true), err)
  end)

  it("an error in on_ir is raised after the pipeline", function()
    local m = kiln.parse(helper.sample)
    local ok, err = pcall(kiln.run_pipeline, m, "cse", { on_ir = function() error("snapshot failed") end })
    assert.is_false(ok)
    assert.truthy(err:find("on_ir callback raised an error", 1, true), err)
    assert.truthy(err:find("snapshot failed", 1, true), err)
  end)
end)
