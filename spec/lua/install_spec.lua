-- install_spec.lua — `cmake --install` of the build the specs run with into a temp
-- prefix, then from another directory: stock lua5.4 requires the installed module and
-- checks a compiled graph against g:eval, the installed kiln finds only its installed
-- Lua files, and a C program built with `pkg-config --cflags --libs --static kiln`
-- parses, runs passes on and prints a module (and reports bad input with its location), and
-- the C example of README.md ("Embedding from C", extracted from the README's text) builds
-- against the installed include/kiln.h alone and prints relu(x + y) of its seeded inputs.
local helper = require "spec.lua.helper"
local q, run, has = helper.shell_quote, helper.run, helper.has

local function dirname(p) return (p:gsub("/[^/]*$", "")) end
local function exists(p) local f = io.open(p, "rb"); if f then f:close() end; return f ~= nil end

-- The build dir: KILN_BUILD_DIR, else the one holding the kiln.so this spec loaded
-- (busted --cpath=build/?.so), else the kiln executable's (KILN_BIN, default build/).
local function build_dir()
  local d = os.getenv("KILN_BUILD_DIR")
  if not d then
    local so = package.searchpath("kiln", package.cpath)
    d = so and dirname(so) or dirname(helper.kiln_bin())
  end
  if d:sub(1, 1) ~= "/" then d = helper.root .. "/" .. d end
  return d
end

local function sanitized(dir)
  local f = io.open(dir .. "/CMakeCache.txt", "rb")
  if not f then return false end
  local s = f:read("a"); f:close()
  -- KILN_FUZZ implies the sanitizers (the one sanitizer build scripts/test makes)
  return s:find("KILN_SANITIZE:BOOL=ON", 1, true) ~= nil or s:find("KILN_FUZZ:BOOL=ON", 1, true) ~= nil
end

local function sh(cmd)
  local out, err, code = run(cmd)
  assert.are.equal(0, code, cmd .. "\nstdout:\n" .. out .. "\nstderr:\n" .. err)
  return out, err
end

local c_program = [[
#include "core/context.h"
#include "core/parse.h"
#include "core/pass.h"
#include "passes/passes.h"
#include "core/print.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  char text[4096];
  FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
  if (!f) { fprintf(stderr, "usage: prog FILE.kir\n"); return 2; }
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  kl_op *m = kl_parse_module(ctx, text, n, argv[1]);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  int rc = !m || kl_pass_manager_add_pipeline(pm, "cse,canonicalize") != KL_OK || kl_pass_manager_run(pm, m) != KL_OK;
  char *out = rc ? kl_diag_take(ctx) : kl_print_op(m, 0);
  fputs(out, rc ? stderr : stdout);
  free(out);
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  return rc;
}
]]

local lua_check = [[
local kiln = require "kiln"
local g = kiln.graph("inst")
local x = g:param("x", { 3, 5 }, "f32")
local y = g:param("y", { 5 }, "f32")
g:output((x * y + 1):relu())
local inputs = { x = kiln.rand { 3, 5 }, y = kiln.rand { 5 } }
local r = kiln.compare(kiln.compile(g, { target = "host" }):run(inputs), g:eval(inputs))
assert(r.mismatches == 0, r.summary)
print("ok", package.searchpath("kiln", package.cpath), package.searchpath("kiln.lib", package.path))
]]

describe("cmake --install", function()
  local bdir = build_dir()
  if sanitized(bdir) then
    it("runs on the plain build", function()
      pending("the build " .. bdir .. " is sanitized (lua5.4 cannot load an ASan kiln.so): install_spec runs on the plain build")
    end)
    return
  end
  local prefix, work

  lazy_setup(function()
    prefix = os.tmpname(); os.remove(prefix)
    work = os.tmpname(); os.remove(work)
    sh("mkdir -p " .. q(prefix) .. " " .. q(work))
    sh("cmake --install " .. q(bdir) .. " --prefix " .. q(prefix))
  end)
  lazy_teardown(function()
    if prefix then run("rm -rf " .. q(prefix) .. " " .. q(work)) end
  end)

  it("lays out libraries, headers, kiln.pc, the executable and the Lua module", function()
    for _, f in ipairs { "lib/libkiln_core.a", "lib/libkiln_passes.a", "lib/libkiln_codegen.a", "lib/libkiln_runtime.a",
                         "lib/libkiln_client.a", "lib/libkiln_driver.a", "lib/libkiln_frontend.a", "lib/libkiln_lua.a", "lib/pkgconfig/kiln.pc", "bin/kiln",
                         "lib/lua/5.4/kiln.so", "share/lua/5.4/kiln/lib.lua", "share/lua/5.4/kiln/graph.lua",
                         "include/kiln.h", "include/kiln/core/ir.h", "include/kiln/driver/program.h",
                         "include/kiln/lua/kiln_lua.h" } do
      assert.is_true(exists(prefix .. "/" .. f), "not installed: " .. f)
    end
    assert.is_false(exists(prefix .. "/lib/lua/5.4/kiln_bench.so"), "the benchmarks' module is not installed")
  end)

  it("stock lua5.4 requires the installed module and runs a compiled graph", function()
    local env = "LUA_CPATH=" .. q(prefix .. "/lib/lua/5.4/?.so") .. " LUA_PATH=" ..
                q(prefix .. "/share/lua/5.4/?.lua;" .. prefix .. "/share/lua/5.4/?/init.lua")
    local out = sh("cd " .. q(work) .. " && " .. env .. " lua5.4 -e " .. q(lua_check))
    assert.are.equal(("ok\t%s/lib/lua/5.4/kiln.so\t%s/share/lua/5.4/kiln/lib.lua\n"):format(prefix, prefix), out)
  end)

  it("the installed kiln finds its Lua files under its prefix, from any directory", function()
    local bin = q(prefix .. "/bin/kiln")
    local out = sh("cd " .. q(work) .. " && " .. bin .. " -e " ..
                   q('print(package.searchpath("kiln.lib", package.path)); print(package.path:find(' ..
                     ("%q"):format(helper.root) .. ', 1, true))'))
    assert.are.equal(prefix .. "/share/lua/5.4/kiln/lib.lua\nnil\n", out)
    local script = work .. "/check.lua"
    local f = assert(io.open(script, "wb")); f:write((lua_check:gsub("^local kiln = require \"kiln\"\n", ""))); f:close()
    out = sh("cd / && " .. bin .. " " .. q(script))
    has(out, "ok\t")
  end)

  it("a C program builds with pkg-config --static kiln, runs passes and reports bad input", function()
    if select(3, run("command -v pkg-config")) ~= 0 then
      pending("pkg-config is not installed (Debian package pkg-config): the C embedding check is skipped")
      return
    end
    local src = work .. "/embed.c"
    local f = assert(io.open(src, "wb")); f:write(c_program); f:close()
    local pc = "PKG_CONFIG_PATH=" .. q(prefix .. "/lib/pkgconfig") .. " pkg-config --static"
    local cflags = sh(pc .. " --cflags kiln"):gsub("\n", "")
    local libs = sh(pc .. " --libs kiln"):gsub("\n", "")
    has(cflags, prefix .. "/lib/pkgconfig/../../include/kiln")
    sh("cd " .. q(work) .. " && cc -std=c11 -Wall -Werror " .. cflags .. " embed.c -o embed " .. libs)
    local kir = work .. "/m.kir"
    f = assert(io.open(kir, "wb")); f:write(helper.sample); f:close()
    local out = sh("cd / && " .. q(work .. "/embed") .. " " .. q(kir))
    local _, adds = out:gsub("arith%.addf", "")
    assert.are.equal(1, adds, out)                       -- cse merged the duplicate add
    has(out, "arith.constant 5 : i32")                    -- canonicalize folded 2 + 3
    f = assert(io.open(work .. "/bad.kir", "wb")); f:write('func.func @f() {\n  %0 = "x"(\n'); f:close()
    local _, err, code = run("cd " .. q(work) .. " && ./embed bad.kir")
    assert.are.equal(1, code)
    has(err, "bad.kir:")
    has(err, "error:")
  end)

  it("the C example of README.md builds against the installed kiln.h and prints relu(x + y)", function()
    if select(3, run("command -v pkg-config")) ~= 0 then
      pending("pkg-config is not installed (Debian package pkg-config): the README example is skipped")
      return
    end
    local f = assert(io.open(helper.root .. "/README.md", "rb"))
    local readme = f:read("a"); f:close()
    local section = readme:match("\n## Embedding from C\n(.-)\n## ")
    assert.is_truthy(section, "README.md has no section '## Embedding from C'")
    local code = section:match("```c\n(.-\n)```")
    assert.is_truthy(code, "the README's 'Embedding from C' section has no ```c block")
    assert.is_truthy(code:find("#include <kiln.h>", 1, true))
    assert.is_falsy(code:find('#include "', 1, true), "the example includes only <kiln.h> and the C library")
    local src = work .. "/readme_example.c"
    f = assert(io.open(src, "wb")); f:write(code); f:close()
    local pc = "PKG_CONFIG_PATH=" .. q(prefix .. "/lib/pkgconfig") .. " pkg-config --static"
    local cflags = sh(pc .. " --cflags kiln"):gsub("\n", "")
    local libs = sh(pc .. " --libs kiln"):gsub("\n", "")
    has(cflags, "-I" .. prefix .. "/lib/pkgconfig/../../include ")
    sh("cd " .. q(work) .. " && cc -std=c11 -Wall -Wextra -Werror " .. cflags .. " readme_example.c -o readme_example " .. libs)
    local out = sh("cd / && " .. q(work .. "/readme_example"))
    -- the example's inputs: kl_tensor_rand f32 [2, 3], uniform, seeds 1 and 2 (kiln.rand's
    -- generator); its output computed here in Lua
    local kiln = require "kiln"
    local x = kiln.rand({ 2, 3 }, "f32", { seed = 1 }):flat()
    local y = kiln.rand({ 2, 3 }, "f32", { seed = 2 }):flat()
    local got = {}
    for line in out:gmatch("[^\n]+") do got[#got + 1] = assert(tonumber(line), "not a number: " .. line) end
    assert.are.equal(6, #got, out)
    local positive = 0
    for i = 1, 6 do
      local want = math.max(0, x[i] + y[i])
      if want > 0 then positive = positive + 1 end
      assert(math.abs(got[i] - want) <= 1e-6 * math.max(1, math.abs(want)),
             ("element %d: the example printed %.9g, relu(%.9g + %.9g) = %.9g"):format(i, got[i], x[i], y[i], want))
    end
    assert(positive > 0 and positive < 6, "the seeds should give both signs: " .. out)
  end)
end)
