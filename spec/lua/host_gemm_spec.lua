-- host_gemm_spec.lua — the host GEMM lowering (passes/lower_loops_host.c): register-
-- blocked micro-kernels and fused global -> LDS copies, under every SIMD model (AVX-512,
-- AVX2, SSE/NEON-sized vectors, whatever this CPU is), with row and column tails, f16
-- inputs, transposes, batches, padding (sizes that are not tile multiples) and a fused
-- epilogue; each kernel is compared with the reference evaluator on random inputs and
-- checked to have taken the micro-kernel path (math.fma in the lowered IR).
local kiln = require "kiln"
local gen = require "fused_gen"

local base = "graph-partition,graph-to-rock,rock-conv-to-gemm,rock-gemm-to-gridwise,rock-gridwise-to-blockwise,"
  .. "rock-blockwise-to-threadwise,rock-align-tiling,%s,canonicalize,cse,dce"

local function lowered_ir(p)
  for _, s in ipairs(p:kernels()[1].ir) do
    if s.pass == "rock-lower-loops" then return s.text end
  end
  error("no IR snapshot after rock-lower-loops")
end

-- { M, N, K, perf config (nil: the heuristic), dtype, transpose_a, transpose_b, batch, epilogue }
local cases = {
  { 64, 64, 64, nil, "f32" },
  { 129, 200, 77, nil, "f32", false, true },
  { 16, 40, 8, "v1:16,40,8,16,40,1", "f32" },                 -- a 32-column group and an 8-column tail
  { 37, 53, 29, "v1:24,40,12,24,40,1", "f32", true, false },   -- row tails, column tails 8+... , padding
  { 7, 3, 5, "v1:8,4,4,8,4,1", "f32", false, false, 2 },       -- tiny, batched
  { 100, 100, 100, "v1:64,128,32,64,128,1", "f16" },
  { 33, 65, 17, "v1:3,5,7,3,5,1", "f16", true, true },          -- odd tiles: scalar columns
  { 70, 90, 130, "v1:32,64,16,32,64,1", "f32", false, false, nil, true },
}
local models = { "auto", "64x32", "32x16", "16x16" }

describe("host GEMM micro-kernels #compile", function()
  for ci, c in ipairs(cases) do
    for _, model in ipairs(models) do
      local M, N, K, perf, dt, ta, tb, batch, epi = table.unpack(c, 1, 9)
      local name = string.format("%dx%dx%d %s %s%s%s%s simd %s", M, N, K, perf or "heuristic", dt, ta and " A^T" or "",
                                 tb and " B^T" or "", batch and (" batch " .. batch) or "", model)
      it(name, function()
        local g = kiln.graph("hg" .. ci)
        local as = ta and { K, M } or { M, K }
        local bs = tb and { N, K } or { K, N }
        if batch then table.insert(as, 1, batch); table.insert(bs, 1, batch) end
        local a, b = g:param("a", as, dt), g:param("b", bs, dt)
        local y = g:dot(a, b, { transpose_a = ta, transpose_b = tb })
        local inputs = { a = kiln.rand(as, dt, { seed = ci }), b = kiln.rand(bs, dt, { seed = ci + 50 }) }
        if epi then
          local bias = g:param("bias", { N }, dt)
          inputs.bias = kiln.rand({ N }, dt, { seed = ci + 99 })
          y = (y + bias):relu()
        end
        g:output(y)
        local ll = model == "auto" and "rock-lower-loops" or ("rock-lower-loops{host-simd=" .. model .. "}")
        local p = kiln.compile(g, { target = "host", perf_config = perf, cache = false, pipeline = base:format(ll) })
        local ir = lowered_ir(p)
        assert.truthy(ir:find('"math.fma"', 1, true), "the micro-kernel was not used")
        assert.falsy(ir:find("rock.threadwise", 1, true))
        local got, want = p:run(inputs), g:eval(inputs)
        local ok, report = gen.check(got, want, dt)
        assert(ok, name .. ": " .. tostring(report and report.summary or report))
      end)
    end
  end

  it("kpack > 1 falls back to the generic lowering (and stays correct)", function()
    local g = kiln.graph("hgk")
    local a, b = g:param("a", { 33, 20 }, "f32"), g:param("b", { 20, 17 }, "f32")
    g:output(g:dot(a, b))
    local p = kiln.compile(g, { target = "host", perf_config = "v1:16,16,8,16,16,4", cache = false })
    local inputs = { a = kiln.rand({ 33, 20 }, "f32", { seed = 7 }), b = kiln.rand({ 20, 17 }, "f32", { seed = 8 }) }
    local ok, report = gen.check(p:run(inputs), g:eval(inputs), "f32")
    assert(ok, tostring(report and report.summary or report))
  end)

  it("rejects bad host-simd / host-tile options", function()
    local g = kiln.graph("hgo")
    local a, b = g:param("a", { 8, 8 }, "f32"), g:param("b", { 8, 8 }, "f32")
    g:output(g:dot(a, b))
    local ok, err = pcall(kiln.compile, g, { target = "host", cache = false, pipeline = base:format("rock-lower-loops{host-simd=64}") })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("host-simd", 1, true), tostring(err))
    ok, err = pcall(kiln.compile, g, { target = "host", cache = false, pipeline = base:format("rock-lower-loops{host-tile=20x4}") })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("host-tile", 1, true), tostring(err))
  end)
end)
