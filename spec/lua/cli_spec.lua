-- cli_spec.lua — the build/kiln executable as a process: --help, --version, -e, scripts
-- with arguments, the REPL on piped input, and `kiln opt`.
local helper = require "spec.lua.helper"
local q = helper.shell_quote

local bin = helper.kiln_bin()
local function kiln(args, stdin) return helper.run(q(bin) .. " " .. args, stdin) end

describe("kiln executable", function()
  it("prints help and version", function()
    local out, _, code = kiln("--help")
    assert.are.equal(0, code)
    assert.truthy(out:find("usage: kiln", 1, true), out)
    assert.truthy(out:find("kiln opt FILE.kir", 1, true), out)
    out, _, code = kiln("--version")
    assert.are.equal(0, code)
    assert.truthy(out:match("^kiln %d+%.%d+%.%d+ %(Lua 5%.4"), out)
    local _, err
    _, err, code = kiln("--bogus")
    assert.are_not.equal(0, code)
    assert.truthy(err:find("unknown option '--bogus'", 1, true), err)
  end)

  it("runs -e code with kiln preloaded", function()
    local out, err, code = kiln("-e " .. q('local m = kiln.parse(\'"a.b"() : () -> ()\'); print(m:find("a.b").name, kiln.version)'))
    assert.are.equal(0, code, err)
    assert.truthy(out:match("^a%.b\t%d+%.%d+%.%d+\n$"), out)
    out, err, code = kiln("-e " .. q("error('bad thing')"))
    assert.are.equal(1, code)
    assert.truthy(err:find("bad thing", 1, true), err)
    assert.truthy(err:find("stack traceback", 1, true), err)
  end)

  it("runs a script with arguments like lua5.4, from any directory", function()
    local script = helper.write_temp([[
print(select("#", ...), ...)
print(arg[0] ~= nil, arg[1], arg[2], arg[-1] ~= nil)
local m = kiln.parse(io.read("a"), "stdin.kir")
m:verify()
local ok, report = kiln.run_pipeline(m, {"cse", function(mod) print("lua pass", mod.name) end})
print(#report.passes)
]], ".lua")
    local out, err, code = helper.run("cd / && " .. q(bin) .. " " .. q(script) .. " one 'two words'", helper.sample)
    os.remove(script)
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("2\tone\ttwo words", lines[1])
    assert.are.equal("true\tone\ttwo words\ttrue", lines[2])
    assert.are.equal("lua pass\tbuiltin.module", lines[3])
    assert.are.equal("2", lines[4])
  end)

  it("reports script errors with a traceback and exit status 1", function()
    local script = helper.write_temp("local function f() kiln.parse('%0 = \"x\"(', 'oops.kir') end\nf()\n", ".lua")
    local _, err, code = kiln(q(script))
    os.remove(script)
    assert.are.equal(1, code)
    assert.truthy(err:find("oops.kir:1:", 1, true), err)
    assert.truthy(err:find("stack traceback", 1, true), err)
  end)

  it("REPL: evaluates lines, prints returned values, continues incomplete chunks", function()
    local input = table.concat({
      "x = 40 +",
      "2",
      "x",
      "kiln.type('tensor<2x3xf32>').shape",
      "error('nope')",
      "'after error'",
      "kiln.parse('\"a.b\"() : () -> ()'):find('a.b').name",
    }, "\n") .. "\n"
    local out, err, code = kiln("-i", input)
    assert.are.equal(0, code, err)
    assert.truthy(out:find("42\n", 1, true), out)
    assert.truthy(out:find("{2, 3}\n", 1, true), out)
    assert.truthy(out:find('> after error\n', 1, true), out) -- strings print raw, as in lua5.4
    assert.truthy(out:find('> a.b\n', 1, true), out)
    assert.truthy(err:find("nope", 1, true), err)
  end)

  describe("opt", function()
    local input = [[
func.func @f(%x: i32, %y: i32) {
  %0 = arith.addi %x, %y : i32
  %1 = arith.addi %x, %y : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %2 = arith.addi %c1, %c2 : i32
  "test.use"(%0, %1, %2) : (i32, i32, i32) -> ()
  func.return
}
]]
    local file
    before_each(function() file = helper.write_temp(input, ".kir") end)
    after_each(function() os.remove(file) end)

    it("parses, runs the pipeline and prints the module", function()
      local out, err, code = kiln("opt " .. q(file) .. ' --pipeline "cse,canonicalize"')
      assert.are.equal(0, code, err)
      assert.are.equal("", err)
      local _, n = out:gsub("arith.addi", "")
      assert.are.equal(1, n)
      assert.truthy(out:find("arith.constant 3 : i32", 1, true), out)
      assert.truthy(out:find('"test.use"(%0, %0, %', 1, true), out)
    end)

    it("reads stdin, prints generic form, IR after passes, timing and stats", function()
      local out, err, code = kiln("opt - --pipeline=cse --print-ir-after=all --generic --timing --stats", input)
      assert.are.equal(0, code, err)
      assert.truthy(out:find('"arith.addi"(%x, %y) : (i32, i32) -> i32', 1, true), out)
      assert.truthy(err:find("// -----// IR Dump After cse //----- //", 1, true), err)
      assert.truthy(err:find("(total)", 1, true), err)
      assert.truthy(err:find("builtin.module", 1, true), err)
      out = kiln("opt " .. q(file) .. " --locs")
      assert.truthy(out:find('loc("' .. file .. '":2:3)', 1, true), out)
    end)

    it("fails with located diagnostics on bad input, bad pipelines and failing verification", function()
      local bad = helper.write_temp("func.func @f() {\n  %0 = arith.addi %q, %q : i32\n}\n", ".kir")
      local out, err, code = kiln("opt " .. q(bad))
      os.remove(bad)
      assert.are_not.equal(0, code)
      assert.are.equal("", out)
      assert.truthy(err:find(bad .. ":2:", 1, true), err)
      out, err, code = kiln("opt " .. q(file) .. " --pipeline cse,nope")
      assert.are_not.equal(0, code)
      assert.are.equal("", out)
      assert.truthy(err:find("unknown pass 'nope'", 1, true), err)
      local unverifiable = helper.write_temp("func.func @f(%x: i32) {\n  %0 = arith.addf %x, %x : i32\n  func.return\n}\n", ".kir")
      out, err, code = kiln("opt " .. q(unverifiable))
      os.remove(unverifiable)
      assert.are_not.equal(0, code)
      assert.truthy(err:find(":2:3: error: 'arith.addf' expects float operands", 1, true), err)
      out, err, code = kiln("opt /nonexistent/x.kir")
      assert.are_not.equal(0, code)
      assert.truthy(err:find("cannot read", 1, true), err)
    end)

    it("rejects a misspelled --print-ir-after pass and warns once about KILN_PRINT_IR_AFTER / KILN_THREADS", function()
      local out, err, code = kiln("opt " .. q(file) .. " --pipeline cse,canonicalize --print-ir-after=csee")
      assert.are_not.equal(0, code)
      assert.are.equal("", out)
      assert.truthy(err:find("--print-ir-after: unknown pass 'csee' (did you mean 'cse'?; valid: all, cse, canonicalize)", 1, true), err)
      out, err, code = helper.run("KILN_PRINT_IR_AFTER=canonicalise " .. q(bin) .. " opt " .. q(file) .. " --pipeline cse")
      assert.are.equal(0, code, err)
      local _, n = err:gsub("warning: KILN_PRINT_IR_AFTER=canonicalise: unknown pass 'canonicalise' %(did you mean 'canonicalize'%?", "")
      assert.are.equal(1, n, err)
      out, err, code = helper.run("KILN_THREADS=two " .. q(bin) .. " -e " .. q('kiln.device("host"); kiln.device("host")'))
      assert.are.equal(0, code, err)
      _, n = err:gsub("warning: KILN_THREADS=two: not a thread count", "")
      assert.are.equal(1, n, err)
    end)

    it("runs Lua passes from --load scripts", function()
      local script = helper.write_temp([[
kiln.register_pass("tag-adds", function(m, o)
  for _, op in ipairs(m:ops("arith.addi")) do op:set_attr("tag", o.name) end
end, { options = { { name = "name", kind = "string", default = "t" } } })
]], ".lua")
      local out, err, code = kiln("opt " .. q(file) .. " --load " .. q(script) .. ' --pipeline "cse,tag-adds{name=hello}"')
      os.remove(script)
      assert.are.equal(0, code, err)
      assert.truthy(out:find('{tag = "hello"}', 1, true), out)
    end)

    it("lists passes", function()
      local out, _, code = kiln("opt --list-passes")
      assert.are.equal(0, code)
      assert.truthy(out:find("\ncse ", 1, true) or out:find("^cse "), out)
      assert.truthy(out:find("canonicalize", 1, true), out)
    end)
  end)

  describe("arguments", function()
    it("--help lists every environment variable the sources read, one line each", function()
      local help = kiln("--help")
      local p = assert(io.popen("cd " .. q(helper.root) .. " && grep -rhoE 'getenv\\(\"[A-Z_0-9]+\"\\)' " ..
                                "core passes codegen runtime driver frontend lua client include examples"))
      local seen = 0
      for name in p:read("a"):gmatch('getenv%("([A-Z_0-9]+)"%)') do
        seen = seen + 1
        assert.truthy(help:find("\n  " .. name .. "[= ]"), name .. " is read but not in kiln --help:\n" .. help)
      end
      p:close()
      assert.is_true(seen >= 5, "grep found " .. seen .. " getenv calls")
      for _, name in ipairs { "KILN_DEVICE", "KILN_THREADS", "KILN_DEBUG", "KILN_PRINT_IR_AFTER" } do
        helper.has(help, "  " .. name)
      end
    end)

    it("-v prints the version, the LLVM version and the targets", function()
      local out, _, code = kiln("-v")
      assert.are.equal(0, code)
      assert.truthy(out:match("^kiln %d+%.%d+%.%d+ %(Lua 5%.4[^\n]*\nLLVM %d+%.%d+%.%d+\ntargets: host"), out)
      helper.has(out, " gfx942")
      helper.has(out, " sm_90")
    end)

    it("-e CODE / -eCODE and -l in order, -- before a script named like an option", function()
      local out, err, code = kiln("-e 'x = 1' -l string -e'print(x + 1)'")
      assert.are.equal(0, code, err)
      assert.are.equal("2\n", out)
      local script = helper.write_temp("print(select('#', ...), ...)\n", ".lua")
      out, err, code = kiln("-- " .. q(script) .. " -e --x")
      os.remove(script)
      assert.are.equal(0, code, err)
      assert.are.equal("2\t-e\t--x\n", out)
    end)

    it("errors print the usage and exit 2, never crash", function()
      for _, args in ipairs { "--bogus", "-x", "-e", "-l", "--help=3", "opt --nope f.kir", "opt --pipeline",
                              "opt -p", "opt --verify-each=maybe f.kir", "opt a.kir b.kir", "opt -o",
                              "migraphx --target", "migraphx --bogus", "conv-config" } do
        local _, err, code = kiln(args)
        assert.are.equal(2, code, args .. ": " .. err)
        assert.truthy(err:find("usage", 1, true), args .. ": " .. err)
      end
    end)

    it("kiln opt takes --opt=value, --opt value and --", function()
      local file = helper.write_temp(helper.sample, ".kir")
      local a = kiln("opt --pipeline=cse -o " .. q(file .. ".1") .. " " .. q(file))
      local b, err, code = kiln("opt -p cse --verify-each=false -- " .. q(file))
      assert.are.equal(0, code, err)
      local f = assert(io.open(file .. ".1", "rb"))
      assert.are.equal(f:read("a"), b)
      f:close()
      assert.are.equal("", a)
      os.remove(file .. ".1")
      os.remove(file)
    end)
  end)
end)
