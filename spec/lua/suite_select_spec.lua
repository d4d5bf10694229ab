-- suite_select_spec.lua — the section selection of scripts/gpu_suite.lua on the host:
-- KILN_SUITE_SKIP / KILN_SUITE_ONLY parsing (scripts/lib/suite_select.lua), the per-section
-- lines, the Hopper target helpers, the suite's section list against its section() calls,
-- and the suite itself run as a process without a GPU (it says so and runs nothing) and on
-- the host device with one section chosen.
local helper = require "spec.lua.helper"
local q = helper.shell_quote
package.path = "scripts/lib/?.lua;" .. package.path
local SEL = require "suite_select"

local NAMES = { "fused", "fusion", "cp.async", "tune", "memory" }

describe("gpu suite sections", function()
  it("parses comma / space separated names and rejects unknown ones with the list", function()
    assert.are.same({ "a", "b", "c.d" }, SEL.names(" a,b  c.d ,"))
    assert.are.same({}, SEL.names(nil))
    local sel = assert(SEL.new(NAMES, "tune, memory", nil))
    local run, skipped = sel:lists()
    assert.are.same({ "fused", "fusion", "cp.async" }, run)
    assert.are.same({ "tune", "memory" }, skipped)
    sel = assert(SEL.new(NAMES, "", "cp.async,fused"))
    run = sel:lists()
    assert.are.same({ "fused", "cp.async" }, run)
    sel = assert(SEL.new(NAMES, "fused", "cp.async fused")) -- only minus skip
    run = sel:lists()
    assert.are.same({ "cp.async" }, run)
    local none, err = SEL.new(NAMES, "cp", nil) -- no substring matches: "cp" is not "cp.async"
    assert.is_nil(none)
    assert.truthy(err:find("KILN_SUITE_SKIP: unknown section 'cp' (sections: fused, fusion, cp.async, tune, memory)", 1, true), err)
    none, err = SEL.new(NAMES, nil, "fused,bogus")
    assert.is_nil(none)
    assert.truthy(err:find("KILN_SUITE_ONLY: unknown section 'bogus'", 1, true), err)
    none, err = SEL.new({ "a", "a" })
    assert.is_nil(none)
    assert.truthy(err:find("listed twice", 1, true), err)
  end)

  it("prints a line per section that ran, with its cases and seconds", function()
    local sel = assert(SEL.new(NAMES, "fusion", nil))
    local lines = {}
    sel.print = function(l) lines[#lines + 1] = l end
    assert.are.same({ "sections (names for KILN_SUITE_SKIP / KILN_SUITE_ONLY): fused, fusion, cp.async, tune, memory",
                      "running 4 of 5 sections; skipped: fusion" }, sel:header())
    assert.is_true(sel:enter("fused", 1000, 0, 0))
    assert.is_false(sel:enter("fusion", 3500, 7, 1))
    assert.is_true(sel:enter("cp.async", 3500, 7, 1))
    assert.is_false(sel:enter(nil, 4000, 9, 1))
    assert.are.same({ "== section fused: 7 passed, 1 failed, 2.5 s", "== section cp.async: 2 passed, 0 failed, 0.5 s" }, lines)
    assert.has_error(function() sel:enter("bogus", 0, 0, 0) end)
  end)

  it("names the Hopper targets once", function()
    assert.is_true(SEL.hopper("sm_90"))
    assert.is_true(SEL.hopper("sm_90a"))
    assert.is_false(SEL.hopper("sm_80"))
    assert.is_false(SEL.hopper("gfx942"))
    assert.are.equal("sm_90", SEL.mma_sync_target("sm_90a"))
    assert.are.equal("sm_90", SEL.mma_sync_target("sm_90"))
    assert.are.equal("gfx942", SEL.mma_sync_target("gfx942"))
  end)

  it("lists every section of the suite, in the order it runs them", function()
    local f = assert(io.open("scripts/gpu_suite.lua", "rb"))
    local src = f:read("a")
    f:close()
    local list = {}
    for n in src:match("local SECTIONS = (%b{})"):gmatch('"([^"]+)"') do list[#list + 1] = n end
    -- the section() calls and the TMA family's sections (tma_family("name", ...)), by position
    local at = {}
    for pos, n in src:gmatch('()if section%("([^"]+)"%) then') do at[#at + 1] = { pos, n } end
    for pos, n in src:gmatch('()\ntma_family%("([^"]+)"') do at[#at + 1] = { pos, n } end
    table.sort(at, function(a, b) return a[1] < b[1] end)
    local calls = {}
    for _, x in ipairs(at) do calls[#calls + 1] = x[2] end
    assert.are.same(list, calls)
    assert.truthy(#list >= 20)
    assert.is_nil(src:find("want%("), "a section still uses the old want()")
  end)

  it("runs as a script: no GPU runs nothing, device host runs the chosen sections, bad names fail", function()
    local bin = q(helper.kiln_bin())
    local out, err, code = helper.run(bin .. " scripts/gpu_suite.lua 2 auto")
    assert.are.equal(0, code, err)
    local n = assert(out:match("running (%d+) of %d+ sections"), out)
    assert.truthy(out:find(("running %s of %s sections"):format(n, n), 1, true), out)
    assert.truthy(out:find("no GPU present: nothing to run", 1, true), out)
    out, err, code = helper.run("KILN_SUITE_ONLY=fused,memory KILN_SUITE_SKIP=memory " .. bin .. " scripts/gpu_suite.lua 2 host")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:find(("running 1 of %s sections; skipped: fusion,"):format(n), 1, true), out)
    assert.truthy(out:match("== section fused: 2 passed, 0 failed, [%d.]+ s"), out)
    assert.is_nil(out:find("== section memory", 1, true), out)
    assert.truthy(out:find("on host: 2 passed, 0 failed", 1, true), out)
    out, err, code = helper.run("KILN_SUITE_SKIP=cpasync " .. bin .. " scripts/gpu_suite.lua 2 host")
    assert.are.equal(2, code)
    assert.truthy(err:find("KILN_SUITE_SKIP: unknown section 'cpasync' (sections: fused,", 1, true), err)
  end)
end)
