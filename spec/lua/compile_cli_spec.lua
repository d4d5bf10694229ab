-- compile_cli_spec.lua — `kiln compile FILE --emit WHAT`: every emit option from a Lua
-- file and a .kir file, for host, AMD and NVIDIA targets, the files it writes, its errors;
-- and p:asm / p:llvm_opt / p:object from Lua (the host object is byte for byte the binary
-- the program runs). sass-stats is pending without the CUDA toolkit's ptxas.
local helper = require "spec.lua.helper"
local q = helper.shell_quote
local bin = helper.kiln_bin()
local function kiln_cli(args) return helper.run(q(bin) .. " " .. args) end
local kiln = require "kiln"

local graph_lua = helper.write_temp([[
local g = kiln.graph("cli")
local x = g:param("x", {4, 64}, "f32")
local y = g:param("y", {4, 64}, "f32")
g:output((x * y + x):relu(), x:reduce_sum({1}))
return g
]], ".lua")
local kir = helper.root .. "/spec/ir/graph-partition/conv_add_relu.kir"

local read = helper.read_file
local function elf(s, etype, machine)
  assert.are.equal("\127ELF", s:sub(1, 4))
  assert.are.equal(etype, s:byte(17) + 256 * s:byte(18))
  assert.are.equal(machine, s:byte(19) + 256 * s:byte(20))
end
local function ok(args)
  local out, err, code = kiln_cli("compile " .. args)
  assert(code == 0, args .. ": exit " .. tostring(code) .. "\n" .. err)
  return out
end

describe("kiln compile", function()
  it("--emit llvm / llvm-opt: the LLVM IR before and after LLVM's passes, every kernel", function()
    local before = ok(q(graph_lua) .. " --emit llvm")
    local after = ok("--emit=llvm-opt " .. q(graph_lua))
    for _, k in ipairs { "cli_k0", "cli_k1" } do
      helper.has(before, "; ---- kernel " .. k .. " (host, llvm)")
      helper.has(after, "; ---- kernel " .. k .. " (host, llvm-opt)")
    end
    helper.has(before, "define ")
    helper.has(after, "define ")
    assert.are_not.equal(before:gsub("llvm%)", ""), after:gsub("llvm%-opt%)", ""))
    assert.truthy(after:find("<%d+ x float>"), "the optimised host IR is vectorised:\n" .. after)
  end)

  it("--emit asm: host assembly, AMD ISA, PTX", function()
    local host = ok(q(graph_lua) .. " --emit asm --target host")
    helper.has(host, "# ---- kernel cli_k0 (host, asm)")
    helper.has(host, ".globl\tcli_k0")
    assert.truthy(host:find("\n%s+ret"), host)
    local amd = ok(q(graph_lua) .. " --emit asm --target=gfx942 --kernel cli_k0")
    helper.has(amd, "s_endpgm")
    assert.is_nil(amd:find("cli_k1", 1, true))
    helper.has(ok(q(graph_lua) .. " --emit asm --target sm_90"), ".entry cli_k0")
  end)

  it("--emit ptx and ir-after:PASS, from a .kir file", function()
    local ptx = ok(q(kir) .. " --emit ptx --target sm_90")
    helper.has(ptx, ".target sm_90")
    helper.has(ptx, ".entry car_k0")
    local ir = ok(q(kir) .. " --emit ir-after:rock-lower-loops")
    helper.has(ir, "func.func @car_k0")
    assert.is_nil(ir:find("graph.conv", 1, true))
    local partitioned = ok("--emit ir-after:graph-partition -- " .. q(kir))
    helper.has(partitioned, "graph.launch")
  end)

  it("--emit hsaco / obj write ELF files, one per kernel", function()
    local out = os.tmpname()
    ok(q(graph_lua) .. " --emit hsaco --target gfx942 --kernel cli_k0 -o " .. q(out .. ".hsaco"))
    elf(read(out .. ".hsaco"), 3, 224) -- DYN, AMDGPU
    ok(q(graph_lua) .. " --emit obj -o" .. q(out .. ".o"))
    for _, k in ipairs { "cli_k0", "cli_k1" } do
      local o = read(out .. "." .. k .. ".o")
      elf(o, 1, 62) -- REL, x86-64
      os.remove(out .. "." .. k .. ".o")
    end
    ok(q(graph_lua) .. " --emit obj --target gfx942 --kernel cli_k1 -o " .. q(out .. ".o"))
    elf(read(out .. ".o"), 1, 224)
    os.remove(out .. ".o")
    os.remove(out .. ".hsaco")
    os.remove(out)
  end)

  it("--emit sass-stats runs ptxas on the PTX", function()
    local _, _, has = helper.run("command -v ptxas >/dev/null || test -x /usr/local/cuda/bin/ptxas")
    if has ~= 0 then
      pending("ptxas (CUDA toolkit) is not installed: sass-stats is skipped")
      return
    end
    local out = ok(q(graph_lua) .. " --emit sass-stats --target sm_90")
    helper.has(out, "// ---- kernel cli_k1 (sm_90, sass-stats)")
    assert.truthy(out:find("Used %d+ registers"), out)
  end)

  it("rejects bad arguments with the usage (exit 2) and failed stages with a message (exit 1)", function()
    for _, args in ipairs { "", "--emit llvm", q(graph_lua), q(graph_lua) .. " --emit bogus",
                            q(graph_lua) .. " --emit", q(graph_lua) .. " --emit llvm --nope",
                            q(graph_lua) .. " --emit hsaco --target gfx942", q(graph_lua) .. " x.lua --emit llvm" } do
      local _, err, code = kiln_cli("compile " .. args)
      assert.are.equal(2, code, args .. ": " .. err)
      helper.has(err, "usage: kiln compile")
    end
    for _, case in ipairs {
      { q(graph_lua) .. " --emit ptx --target gfx942", "needs an NVIDIA target" },
      { q(graph_lua) .. " --emit obj --target sm_90 -o /dev/null", "kiln emits PTX for NVIDIA targets" },
      { q(graph_lua) .. " --emit llvm --kernel nope", "no kernel named 'nope'" },
      { q(graph_lua) .. " --emit ir-after:no-such-pass", "no-such-pass" },
      { q(graph_lua) .. " --emit llvm --target gfx1", "gfx1" },
      { "/nonexistent.lua --emit llvm", "nonexistent" },
    } do
      local _, err, code = kiln_cli("compile " .. case[1])
      assert.are.equal(1, code, case[1] .. ": " .. err)
      helper.has(err, case[2])
    end
  end)

  it("p:asm, p:llvm_opt and p:object from Lua; the host object is the binary that runs", function()
    local g = kiln.graph("fromlua")
    local x = g:param("x", { 256 }, "f32")
    g:output(x:exp() * x)
    local p = kiln.compile(g, { targets = { "host", "gfx942", "sm_90" } })
    local k = p:kernels()[1].name
    assert.are.equal(p:binary(k, "host"), p:object(k, "host"))
    elf(p:object(k, "gfx942"), 1, 224)
    helper.has(p:asm(k, "host"), ".globl\t" .. k)
    helper.has(p:asm(k, "gfx942"), "s_endpgm")
    helper.has(p:asm(k, "sm_90"), ".entry " .. k)
    helper.has(p:llvm_opt(k, "gfx942"), "amdgpu_kernel")
    assert.has_error(function() p:asm("nope") end)
    assert.has_error(function() p:asm(k, "gfx1100") end)
    -- a fresh seed of its own: the per-state stream the later specs draw from stays as it was
    local inputs = { x = kiln.rand({ 256 }, "f32", { seed = os.time() }) }
    assert.is_true(kiln.compare(p:run(inputs), g:eval(inputs)).ok)
  end)
end)
