-- amd_stats_spec.lua — the static cost report of AMDGPU kernels (driver/amdgpu_stats.h):
-- p:kernels(t)[i].amdgpu and `kiln opt --stats --target T`. The main loop's matrix
-- instruction count must equal what the perf config's block tile needs per K step
-- (MPerBlock * NPerBlock * KPerBlock / (instr m * n * k) over the waves of a workgroup),
-- (times LLVM's unroll factor), so the loop found is the K loop; the occupancy must follow the target's limits.
local kiln = require "kiln"
local helper = require "helper"

-- the matrix instruction kiln uses for the dtype on the target: m * n * k
local INSTR = {
  gfx942 = { f16 = 32 * 32 * 8, bf16 = 32 * 32 * 8, f32 = 32 * 32 * 2 },
  gfx90a = { f16 = 32 * 32 * 8, bf16 = 32 * 32 * 8, f32 = 32 * 32 * 2 },
  gfx1100 = { f16 = 16 * 16 * 16, bf16 = 16 * 16 * 16 },
}
local MAX_WAVES = { gfx90a = 8, gfx942 = 8, gfx1100 = 16, gfx1030 = 16 }
local LDS_POOL = { gfx90a = 65536, gfx942 = 65536, gfx1100 = 131072, gfx1030 = 131072 }

local function gemm(m, n, k, dt)
  local g = kiln.graph("st")
  g:output(g:dot(g:param("a", { m, k }, dt), g:param("b", { k, n }, dt)))
  return g
end

describe("AMDGPU kernel stats", function()
  for _, t in ipairs { "gfx942", "gfx90a", "gfx1100", "gfx1030" } do
    for _, dt in ipairs { "f16", "f32" } do
      it(t .. " gemm 1024^3 " .. dt .. ": registers, occupancy, loop mix", function()
        local p = kiln.compile(gemm(1024, 1024, 1024, dt), { targets = { t }, cache = false })
        local k = p:kernels(t)[1]
        local s = k.amdgpu
        assert.is_table(s, "amdgpu stats")
        assert.are.equal(k.code_object.vgpr, s.vgpr)
        assert.are.equal(k.code_object.scratch_bytes, s.scratch_bytes)
        assert.is_true(s.occupancy >= 1 and s.occupancy <= MAX_WAVES[t], "occupancy " .. s.occupancy)
        local lim = math.min(s.occupancy_by.vgpr, s.occupancy_by.sgpr, s.occupancy_by.lds, s.occupancy_by.max)
        assert.are.equal(lim, s.occupancy)
        assert.are.equal(s.occupancy, s.occupancy_by[s.occupancy_limit == "waves" and "max" or s.occupancy_limit])
        local waves = math.ceil(k.block / s.wave_size)
        if s.lds_bytes > 0 then
          assert.are.equal(math.min(MAX_WAVES[t], ((LDS_POOL[t] // s.lds_bytes) * waves + 3) // 4), s.occupancy_by.lds)
        end
        assert.is_true(s.loop.found, "the GEMM has a K loop")
        local bm, bn, bk = k.perf_config:match("^v%d:(%d+),(%d+),(%d+),")
        local instr = INSTR[t] and INSTR[t][dt]
        if instr then
          -- LLVM may unroll the K loop: the body holds 1, 2 or 4 K steps
          local want, got = tonumber(bm) * tonumber(bn) * tonumber(bk) // instr, (s.loop.mfma + s.loop.wmma) * waves
          local unroll = got // want
          assert.is_true(got % want == 0 and (unroll == 1 or unroll == 2 or unroll == 4),
            k.perf_config .. ": " .. got .. " matrix instructions per loop body, " .. want .. " per K step")
          assert.is_true(s.loop.global_load > 0 and s.loop.ds_write > 0 and s.loop.ds_read > 0)
          assert.is_true(s.loop.s_barrier >= 1)
        else
          assert.are.equal(0, s.loop.mfma + s.loop.wmma)
          assert.is_true(s.loop.valu_fma > 0, "the fallback loop does FMAs")
        end
      end)
    end
  end

  it("host and NVIDIA kernels have no amdgpu table", function()
    local p = kiln.compile(gemm(64, 64, 64, "f32"), { targets = { "host", "sm_90" }, cache = false })
    assert.is_nil(p:kernels("host")[1].amdgpu)
    assert.is_nil(p:kernels("sm_90")[1].amdgpu)
  end)
end)

describe("kiln opt --target T --stats", function()
  local kir = [[
func.func @mm() attributes {graph} {
  %a = "graph.param"() {name = "a"} : () -> tensor<2048x2048xf16>
  %b = "graph.param"() {name = "b"} : () -> tensor<2048x2048xf16>
  %d = "graph.dot"(%a, %b) : (tensor<2048x2048xf16>, tensor<2048x2048xf16>) -> tensor<2048x2048xf16>
  func.return %d : tensor<2048x2048xf16>
}
]]
  local q = helper.shell_quote
  it("runs the target's pipeline and reports what the compile API reports", function()
    local file = helper.write_temp(kir, ".kir")
    for _, t in ipairs { "gfx942", "gfx90a", "gfx1100", "gfx1030" } do
      local out, err, code = helper.run(q(helper.kiln_bin()) .. " opt " .. q(file) .. " --stats --target " .. t)
      assert.are.equal(0, code, err)
      assert.truthy(out:find("target = \"" .. t .. "\"", 1, true), "the module's target")
      local line = err:match("// mm_k0 %(" .. t .. "%): ([^\n]+)")
      assert.is_string(line, err)
      local g = kiln.graph("mm")
      g:output(g:dot(g:param("a", { 2048, 2048 }, "f16"), g:param("b", { 2048, 2048 }, "f16")))
      local s = kiln.compile(g, { targets = { t }, cache = false }):kernels(t)[1].amdgpu
      for _, f in ipairs { { "vgpr", s.vgpr }, { "agpr", s.agpr }, { "lds", s.lds_bytes },
        { "scratch", s.scratch_bytes }, { "occupancy", s.occupancy }, { "mfma", s.loop.mfma },
        { "wmma", s.loop.wmma }, { "global_load", s.loop.global_load }, { "s_barrier", s.loop.s_barrier } } do
        assert.are.equal(f[2], tonumber(line:match(" " .. f[1] .. "=(%d+)") or line:match("^" .. f[1] .. "=(%d+)")),
          t .. " " .. f[1] .. ": " .. line)
      end
    end
    -- llvm-mca's cycles per main-loop iteration (driver/amdgpu_mca.h) when the tool is on PATH;
    -- without it (an empty PATH) the line says why it was skipped
    local has_mca = helper.run("command -v llvm-mca-19 || command -v llvm-mca") ~= ""
    local out1, err1 = helper.run(q(helper.kiln_bin()) .. " opt " .. q(file) .. " --stats --target gfx942")
    local line = err1:match("// mm_k0 %(gfx942%): ([^\n]+)") or ""
    if has_mca then
      local c = tonumber(line:match(" mca_cycles=([%d.]+)"))
      assert.is_true(c ~= nil and c > 0, line)
    else
      assert.truthy(line:find("mca: skipped (llvm-mca-19 / llvm-mca not found on PATH)", 1, true), line)
    end
    local _, err2 = helper.run("PATH=/nonexistent " .. q(helper.kiln_bin()) .. " opt " .. q(file) .. " --stats --target gfx942")
    assert.truthy(err2:find("mca: skipped (llvm-mca-19 / llvm-mca not found on PATH)", 1, true), err2)
    assert.is_string(out1)
    local _, err, code = helper.run(q(helper.kiln_bin()) .. " opt " .. q(file) .. " --stats --target gfx9999")
    os.remove(file)
    assert.are_not.equal(0, code)
    assert.truthy(err:find("unknown target 'gfx9999'", 1, true), err)
  end)
end)
