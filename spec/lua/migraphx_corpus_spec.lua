-- migraphx_corpus_spec.lua — scripts/migraphx_corpus over a folder tree of its own: one
-- passing file, one failing file in a subfolder; the per-file lines, the pass-rate table by
-- folder, the failure classes and the exit status.
local helper = require "spec.lua.helper"
local q = helper.shell_quote

describe("scripts/migraphx_corpus", function()
  it("runs kiln migraphx --verify on every file and tabulates by folder", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. q(dir .. "/sub")))
    local function put(path, text)
      local f = assert(io.open(dir .. "/" .. path, "w"))
      f:write(text)
      f:close()
    end
    put("ok.mlir", [[
func.func @f(%a: !migraphx.shaped<4x5xf8E4M3FNUZ, 5x1>, %b: !migraphx.shaped<5x3xf8E4M3FNUZ, 3x1>) -> !migraphx.shaped<4x3xf32, 3x1> {
  %0 = migraphx.quant_dot %a, %b : <4x5xf8E4M3FNUZ, 5x1>, <5x3xf8E4M3FNUZ, 3x1> -> <4x3xf32, 3x1>
  return %0 : !migraphx.shaped<4x3xf32, 3x1>
}
]])
    put("sub/bad.mlir", [[
func.func @g(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.frobnicate %x : <4xf32, 1> -> <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}
]])
    local root = helper.kiln_bin():gsub("/build[^/]*/kiln$", "")
    local out, err, code = helper.run(q(root .. "/scripts/migraphx_corpus") .. " " .. q(dir) .. " --kiln " ..
      q(helper.kiln_bin()))
    os.execute("rm -rf " .. q(dir))
    assert.are.equal(1, code, err)
    helper.has(out, "PASS    ok.mlir")
    helper.has(out, "FAIL    sub/bad.mlir: " .. dir .. "/sub/bad.mlir:2:8: error: migraphx.frobnicate is not supported")
    assert.truthy(out:find("\n%.%s+1%s+1%s+0%s+100%.0%%"), out)
    assert.truthy(out:find("\nsub%s+1%s+0%s+1%s+0%.0%%"), out)
    assert.truthy(out:find("\ntotal%s+2%s+1%s+1%s+50%.0%%"), out)
    helper.has(out, "1 FAIL: error: migraphx.frobnicate is not supported\n")
  end)
end)
