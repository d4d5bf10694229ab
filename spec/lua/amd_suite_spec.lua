-- amd_suite_spec.lua — static checks on the benchmark suite's kernels (spec/lua/amd_cases.lua:
-- GEMM 4096^3 f16 / bf16 / f32, 8192x320x1280, 384x2304x768, the seed 1x1 conv at batch 1
-- and 512, ResNet-50's 3x3 convs; all with the heuristic's perf config) on gfx90a, gfx942,
-- gfx1100 and gfx1030, read from the code objects (p:kernels(t)[i].amdgpu,
-- driver/amdgpu_stats.h):
--  * no scratch and no spills at any heuristic choice;
--  * gfx942, M, N, K >= 2048: block tile at least 256x128.
-- Each check also runs on a kernel built to break it (a perf config given on purpose).
local kiln = require "kiln"
local C = require "amd_cases"

local compiled = {}
local function compile(c)
  if not compiled[c[1]] then compiled[c[1]] = kiln.compile(c[3](kiln), { targets = C.TARGETS, cache = false }) end
  return compiled[c[1]]
end

-- findings: "<kernel>: scratch N" / "spills v/s" for a kernel's amdgpu stats
local function spills(k)
  local s, out = k.amdgpu, {}
  if s.scratch_bytes ~= 0 then out[#out + 1] = k.name .. ": scratch " .. s.scratch_bytes end
  if s.vgpr_spills ~= 0 or s.sgpr_spills ~= 0 then
    out[#out + 1] = k.name .. ": spills " .. s.vgpr_spills .. "/" .. s.sgpr_spills
  end
  return out
end

-- findings: the block tile of a GEMM kernel when smaller than 256x128 (either way round)
local function small_tile(k)
  local mb, nb = k.perf_config:match("^v%d:(%d+),(%d+),")
  mb, nb = tonumber(mb), tonumber(nb)
  if not mb then return { k.name .. ": no perf config" } end
  if (mb >= 256 and nb >= 128) or (mb >= 128 and nb >= 256) then return {} end
  return { ("%s: block tile %dx%d (%s)"):format(k.name, mb, nb, k.perf_config) }
end

describe("AMDGPU static checks find the bad patterns", function()
  it("a 256-AGPR tile spills on gfx942; a 256x32 tile is below 256x128", function()
    local g = kiln.graph("bad_spill")
    g:output(g:dot(g:param("a", { 512, 512 }, "f16"), g:param("b", { 512, 512 }, "f16")))
    local p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:256,256,32,128,128,8", cache = false })
    local k = p:kernels("gfx942")[1]
    assert.is_true(#spills(k) > 0, "the spill check reports the bad config")
    p = kiln.compile(g, { targets = { "gfx942" }, perf_config = "v2:256,32,64,64,32,4", cache = false })
    assert.are.equal(1, #small_tile(p:kernels("gfx942")[1]))
  end)
end)

describe("AMDGPU suite: no scratch, no spills at every heuristic choice", function()
  for _, c in ipairs(C.GEMMS) do
    it(c[1], function()
      local p = compile(c)
      for _, t in ipairs(C.TARGETS) do
        for _, k in ipairs(p:kernels(t)) do
          assert.are.same({}, spills(k), t)
        end
      end
    end)
  end
end)

describe("AMDGPU suite: gfx942 GEMMs with M, N, K >= 2048 take block tiles of at least 256x128", function()
  for _, c in ipairs(C.GEMMS) do
    if c.big then
      it(c[1], function()
        for _, k in ipairs(compile(c):kernels("gfx942")) do
          if k.kind == "gemm" then assert.are.same({}, small_tile(k)) end
        end
      end)
    end
  end
end)
