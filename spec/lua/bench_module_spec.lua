-- bench_module_spec.lua — the benchmarks' Lua C module (bench/kiln_bench.c, kiln_bench.so next
-- to the kiln executable): the shipped kiln module carries no benchmark helpers (kiln.bench is
-- gone); kiln_bench.cblas_sgemm writes a @ b into c in place (checked against g:eval of a dot
-- on random inputs) and rejects what is not a live row-major 2-D f32 tensor with an argument
-- error. The sgemm case is pending when no BLAS with cblas_sgemm is installed.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local function dirname(p) return (p:gsub("/[^/]*$", "")) end

describe("kiln_bench (bench/kiln_bench.c)", function()
  it("is not part of the kiln module", function()
    assert.is_nil(kiln.bench)
    assert.is_nil(package.loaded.kiln.bench)
  end)

  local ok, kb = pcall(function()
    package.cpath = dirname(helper.kiln_bin()) .. "/?.so;" .. package.cpath
    return require "kiln_bench"
  end)
  it("loads with require \"kiln_bench\"", function()
    assert(ok, tostring(kb))
    assert.are.equal("function", type(kb.cblas_sgemm))
  end)
  if not ok then return end

  it("cblas_sgemm writes a @ b into c", function()
    local A, B = kiln.rand({ 5, 7 }, "f32", { seed = 3 }), kiln.rand({ 7, 4 }, "f32", { seed = 4 })
    local C = kiln.full({ 5, 4 }, 99, "f32")
    local done, err = pcall(kb.cblas_sgemm, A, B, C, 1)
    if not done and tostring(err):find("no BLAS library", 1, true) then
      pending(tostring(err))
      return
    end
    assert(done, tostring(err))
    local g = kiln.graph("mm")
    g:output(g:dot(g:param("a", { 5, 7 }, "f32"), g:param("b", { 7, 4 }, "f32")))
    local r = kiln.compare(C, g:eval { a = A, b = B }, { rtol = 1e-5, atol = 1e-5 })
    assert(r.mismatches == 0, r.summary)
  end)

  it("rejects other arguments", function()
    local C = kiln.zeros({ 2, 2 }, "f32")
    local released = kiln.zeros({ 2, 2 }, "f32")
    released:release()
    local cases = {
      { { kiln.zeros({ 2, 2 }, "f16"), C, C }, "expected a row-major 2-D f32 tensor" },
      { { kiln.zeros({ 2, 2, 1 }, "f32"), C, C }, "expected a row-major 2-D f32 tensor" },
      { { C, kiln.zeros({ 2, 2 }, "f32", { layout = "col_major" }), C }, "expected a row-major 2-D f32 tensor" },
      { { released, C, C }, "the tensor has been released" },
      { { {}, C, C }, "expected a kiln.tensor" },
      { { C, kiln.zeros({ 3, 2 }, "f32"), C }, "do not agree" },
    }
    for i, c in ipairs(cases) do
      local done, err = pcall(kb.cblas_sgemm, table.unpack(c[1]))
      assert.is_false(done, "case " .. i)
      if not tostring(err):find("no BLAS library", 1, true) then
        assert(tostring(err):find(c[2], 1, true), "case " .. i .. ": " .. tostring(err))
      end
    end
  end)
end)
