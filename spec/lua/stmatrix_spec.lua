-- The output swizzle's accumulator -> LDS store on sm_90+ (rock-output-swizzle's stmatrix
-- option, passes/lower_loops_ldmatrix.c): f16 / bf16 tiles go to LDS with
-- stmatrix.sync.aligned.m8n8.x4 (.trans where the LDS rows run along M: the NHWC seed
-- conv, whose output is contiguous along the GEMM's M) instead of scalar st.shared;
-- stmatrix=false keeps the scalar stores; sm_80 has no stmatrix. ptxas -arch=sm_90a (when
-- the toolkit is on the machine) reports 0 spill bytes (printed: registers). Numerics:
-- spec/c/test_accel.c (test_stmatrix: the interpreter executes stmatrix lane by lane) and
-- the gpu-tagged cases of scripts/gpu_suite.lua.
local kiln = require "kiln"
local G = require "gemm_graphs"
local count = G.count

local function swizzle_pipeline(opt)
  local pl, n = kiln.default_pipeline():gsub("rock%-output%-swizzle[^,]*,", "rock-output-swizzle{" .. opt .. "},", 1)
  assert(n == 1, "the default pipeline has no rock-output-swizzle")
  return pl
end
local function ptx_of(g, target, pipeline)
  local p = kiln.compile(g, { target = target, cache = false, pipeline = pipeline })
  local k = G.gemm_of(p, target)
  return p:disasm(k.name, target), k
end
local function shared_stores(ptx) return count(ptx, "st%.shared%.[bu]16") + count(ptx, "st%.shared%.v%d%.[bu]16") end

describe("stmatrix epilogue stores (sm_90a)", function()
  local cases = {
    { "seed conv n512", G.seed_conv, true },
    { "4096^3 f16", function() return G.dot(4096, 4096, 4096, "f16") end, false },
    { "4096^3 bf16 B^T", function() return G.dot(4096, 4096, 4096, "bf16", false, true) end, false },
    { "8192^3 f16", function() return G.dot(8192, 8192, 8192, "f16") end, false },
    { "odd 1000x1000x512 f16", function() return G.dot(1000, 1000, 512, "f16") end, false },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ": stmatrix" .. (c[3] and ".trans" or "") .. " x4, no scalar 16-bit shared stores", function()
      local ptx, k = ptx_of(c[2](), "sm_90a")
      assert.are.equal("applied", k.output_swizzle)
      local plain = count(ptx, "stmatrix%.sync%.aligned%.m8n8%.x4%.shared%.b16")
      local trans = count(ptx, "stmatrix%.sync%.aligned%.m8n8%.x4%.trans%.shared%.b16")
      if c[3] then
        assert.is_true(trans > 0 and plain == 0, ("stmatrix %d plain, %d .trans"):format(plain, trans))
      else
        assert.is_true(plain > 0 and trans == 0, ("stmatrix %d plain, %d .trans"):format(plain, trans))
      end
      assert.are.equal(0, shared_stores(ptx), "st.shared of 16-bit elements")
      assert.are.equal(0, count(ptx, "st%.shared%."), "st.shared (the epilogue's LDS store is all stmatrix)")
      local log = G.ptxas_v("sm_90a", ptx)
      if log then
        local regs = tonumber(log:match("Used (%d+) registers"))
        assert.is_truthy(regs, "ptxas: " .. log)
        assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
        print(("stmatrix_spec: sm_90a %s %s: %d stmatrix.x4%s, ptxas %d registers, 0 spill bytes"):format(
          c[1], k.perf_config, plain + trans, c[3] and ".trans" or "", regs))
      end
    end)
  end
  it("stmatrix=false keeps the scalar stores; sm_80 has none; a bad option value is an error", function()
    local ptx = ptx_of(G.seed_conv(), "sm_90a", swizzle_pipeline("stmatrix=false"))
    assert.are.equal(0, count(ptx, "stmatrix"))
    assert.is_true(shared_stores(ptx) > 0, "scalar 16-bit shared stores")
    ptx = ptx_of(G.dot(4096, 4096, 4096, "f16"), "sm_90a", swizzle_pipeline("stmatrix=false"))
    assert.are.equal(0, count(ptx, "stmatrix"))
    assert.is_true(count(ptx, "st%.shared%.") > 0, "scalar shared stores")
    ptx = ptx_of(G.dot(1024, 1024, 1024, "f16"), "sm_80")
    assert.are.equal(0, count(ptx, "stmatrix"))
    local ok, e = pcall(kiln.compile, G.dot(64, 64, 64, "f16"),
                        { target = "sm_90a", cache = false, pipeline = swizzle_pipeline("stmatrix=maybe") })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("stmatrix", 1, true), tostring(e))
  end)
end)
