-- output_swizzle_spec.lua — rock-output-swizzle: every case of
-- output_swizzle_cases.lua and every fusion shape of fusion_cases.lua with the swizzle
-- forced on, forced off and under the guard matches g:eval on fresh random inputs on the
-- host; the guard's decisions on gfx942 / gfx1100 / sm_90 (compiled, not run) and their
-- report in p:kernels(); the option's bad values; and the 16-byte epilogue stores of
-- the swizzled f16 GEMM and the seed conv in the AMDGPU code objects and the PTX.
local kiln = require "kiln"
local S = require "output_swizzle_cases"
local F = require "fusion_cases"

describe("rock-output-swizzle", function()
  describe("numerics on the host (force on / off / auto)", function()
    for _, c in ipairs(S.cases()) do
      for _, mode in ipairs(S.modes) do
        it(c.name .. " force=" .. mode, function()
          local p = S.run(c, mode, "host")
          local want = mode == "on" and "applied (forced)" or mode == "off" and "off (forced)" or nil
          if want then assert.are.equal(want, p:kernels()[1].output_swizzle) end
        end)
      end
    end
    -- (scripts/test's sanitizer pass: every third shape, gemm_graphs.sample)
    for _, c in ipairs(require("gemm_graphs").sample(F.cases(), "output_swizzle_spec: fusion shapes", 3)) do
      for _, mode in ipairs { "on", "off" } do
        it("fusion shape " .. c.name .. " force=" .. mode, function()
          local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = S.pipeline(mode) })
          assert.are.equal(c.kernels, #p:kernels())
          local got, want = table.pack(p:run(c.inputs)), table.pack(c.g:eval(c.inputs))
          for i = 1, want.n do
            local ok, rep = F.check(got[i], want[i], c.dtypes[i])
            assert(ok, c.name .. ": output " .. i .. ": " .. tostring(rep and rep.summary))
          end
        end)
      end
    end
  end)

  describe("the guard", function()
    local function decision(c, target)
      local p = kiln.compile(c.g, { target = target, cache = false })
      return p:kernels()[1].output_swizzle
    end
    local by = {}
    for _, c in ipairs(S.cases()) do by[c.name] = c end
    it("applies on gfx942 when the residual agrees with the row-major output", function()
      assert.are.equal("applied", decision(by["f16 128x96x40 dot + r (row-major, agrees), relu"], "gfx942"))
      assert.are.equal("applied", decision(by["f16 128x96x40 dot, row-major output"], "gfx942"))
      assert.are.equal("applied", decision(by["f16 NHWC 1x1 conv + r (NHWC), relu"], "gfx942"))
    end)
    it("refuses on gfx942 when the residual is contiguous along M, and says why", function()
      local d = decision(by["f16 128x96x40 dot + r^T (disagrees), relu"], "gfx942")
      assert.truthy(d:find("^refused: input in2 is contiguous along M"), d)
    end)
    it("refuses an NCHW residual of an NHWC output on sm_90 and gfx942 (lanes less coalesced swizzled)", function()
      -- the seed conv with its residual in NCHW: 7x7 rows give no vector in either
      -- layout, but the accumulator layout's lanes read neighbouring pixels of one channel
      -- and the swizzled lanes neighbouring channels of one pixel (49 elements apart)
      local g = kiln.graph("swz_rnchw")
      local x, w = g:param("x", { 64, 7, 7, 256 }, "f16"), g:param("w", { 128, 256, 1, 1 }, "f16")
      local r = g:param("r", { 64, 128, 7, 7 }, "f16")
      g:output(((g:conv(x:transpose { 0, 3, 1, 2 }, w) + r):relu()):transpose { 0, 2, 3, 1 })
      for _, t in ipairs { "sm_90", "gfx942" } do
        local d = kiln.compile(g, { target = t, cache = false }):kernels()[1].output_swizzle
        assert.truthy(d:find("^refused: input in2 is read less coalesced swizzled %(%d+ 32%-byte sectors"), t .. ": " .. d)
      end
      -- the same conv with an NHWC residual agrees
      local h = kiln.graph("swz_rnhwc")
      local x2, w2 = h:param("x", { 64, 7, 7, 256 }, "f16"), h:param("w", { 128, 256, 1, 1 }, "f16")
      local r2 = h:param("r", { 64, 7, 7, 128 }, "f16")
      h:output((h:conv(x2:transpose { 0, 3, 1, 2 }, w2):transpose { 0, 2, 3, 1 } + r2):relu())
      for _, t in ipairs { "sm_90", "gfx942" } do
        assert.are.equal("applied", kiln.compile(h, { target = t, cache = false }):kernels()[1].output_swizzle, t)
      end
    end)
    it("refuses when nothing widens (odd sizes; the host's FMA tile)", function()
      assert.are.equal("refused: nothing widens (no access is wider swizzled)",
        decision(by["f16 37x29x45 dot, row-major output"], "gfx942"))
      assert.truthy(decision(by["f32 128x96x40 dot, row-major output"], "host"):find("^refused: nothing widens"))
    end)
    it("swizzles along M for a transposed output", function()
      for _, t in ipairs { "gfx942", "gfx1100", "sm_90" } do
        assert.are.equal("applied", decision(by["f16 128x96x40 transposed output"], t), t)
      end
    end)
    it("never leaves the decision silent on a GEMM kernel", function()
      for _, c in ipairs(S.cases()) do
        for _, t in ipairs { "gfx942", "sm_90" } do
          local d = decision(c, t)
          assert.truthy(d:find("^applied") or d:find("^refused: .+"), c.name .. " " .. t .. ": " .. d)
        end
      end
    end)
    it("rejects a bad force value with the pass's message", function()
      local c = by["f32 37x29x45 dot, row-major output"]
      local ok, err = pcall(kiln.compile, c.g, { target = "host", cache = false, pipeline = S.pipeline("maybe") })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("force must be on, off or auto", 1, true), tostring(err))
    end)
  end)

  describe("16-byte epilogue stores in the code objects", function()
    local function count(s, pat)
      local n = 0
      for _ in s:gmatch(pat) do n = n + 1 end
      return n
    end
    local function graphs()
      local g = kiln.graph("swz_gemm_f16")
      local a, b, r = g:param("a", { 256, 64 }, "f16"), g:param("b", { 64, 256 }, "f16"), g:param("r", { 256, 256 }, "f16")
      g:output((g:dot(a, b) + r):relu())
      -- the seed: NHWC 1x1 conv 2048 -> 512 on 7x7, + add + relu, small batch
      local s = kiln.graph("swz_seed_conv")
      local x, w = s:param("x", { 2, 7, 7, 2048 }, "f16"), s:param("w", { 512, 2048, 1, 1 }, "f16")
      local res = s:param("r", { 2, 7, 7, 512 }, "f16")
      s:output((s:conv(x:transpose { 0, 3, 1, 2 }, w):transpose { 0, 2, 3, 1 } + res):relu())
      return { g, s }
    end
    for _, g in ipairs(graphs()) do
      it(g.name .. ": gfx942 global_store_dwordx4 (no global_store_short), gfx1100 global_store_b128, sm_90 st.global.v4", function()
        local targets = { "gfx942", "gfx1100", "sm_90" }
        -- unsplit (the seed's narrow conv would split K through a workspace, moving the
        -- epilogue into the sum kernel): the GEMM kernel's own epilogue stores
        local pipeline = kiln.default_pipeline():gsub("split%-k%-workspace,", "")
        local p = kiln.compile(g, { targets = targets, cache = false, pipeline = pipeline })
        for _, t in ipairs(targets) do
          local k = p:kernels(t)[1]
          assert.are.equal("applied", k.output_swizzle, t)
          local asm = p:disasm(k.name, t)
          if t == "gfx942" then
            assert.is_true(count(asm, "global_store_dwordx4") > 0, "gfx942: no global_store_dwordx4")
            assert.are.equal(0, count(asm, "global_store_short"), "gfx942: global_store_short in the epilogue")
          elseif t == "gfx1100" then
            assert.is_true(count(asm, "global_store_b128") > 0, "gfx1100: no global_store_b128")
            assert.are.equal(0, count(asm, "global_store_b16"), "gfx1100: global_store_b16 in the epilogue")
          else
            assert.is_true(count(asm, "st%.global%.v4") > 0, "sm_90: no st.global.v4")
          end
        end
        -- and without the swizzle the accumulator layout's narrower stores come back
        local off = kiln.compile(g, { target = "gfx942", cache = false, pipeline = S.pipeline("off") })
        assert.are.equal(0, count(off:disasm(off:kernels()[1].name, "gfx942"), "global_store_dwordx4"))
      end)
    end
    it("sm_90 default big tiles (f16 GEMM 4096^3, 1500x3840x1280, the seed conv at batch 512): applied, st.global.v4", function()
      local function gemm(m, n, k)
        local g = kiln.graph("swz_big_gemm")
        g:output(g:dot(g:param("a", { m, k }, "f16"), g:param("b", { k, n }, "f16")))
        return g
      end
      local s = kiln.graph("swz_seed_512")
      local x, w = s:param("x", { 512, 7, 7, 2048 }, "f16"), s:param("w", { 512, 2048, 1, 1 }, "f16")
      local res = s:param("r", { 512, 7, 7, 512 }, "f16")
      s:output((s:conv(x:transpose { 0, 3, 1, 2 }, w):transpose { 0, 2, 3, 1 } + res):relu())
      for _, g in ipairs { gemm(4096, 4096, 4096), gemm(1500, 3840, 1280), s } do
        local p = kiln.compile(g, { target = "sm_90", cache = false })
        local k = p:kernels()[1]
        -- the seed conv (both operands K-major: the cp.async pipeline) takes the async heuristic's 256x128x32
        assert.truthy(k.perf_config:find("^v2:128,128,") or k.perf_config:find("^v2:256,64,") or
                      (k.async_copy == "A,B" and k.perf_config:find("^v2:256,128,32,")), k.perf_config)
        assert.are.equal("applied", k.output_swizzle, k.perf_config)
        -- above 48 KiB only the pipeline's stages (dynamic shared memory)
        assert.is_true(k.lds_bytes <= 48 * 1024 or k.pipeline_stages >= 2, "LDS " .. k.lds_bytes)
        local ptx = p:disasm(k.name, "sm_90")
        assert.is_true(count(ptx, "st%.global%.v4") > 0, "no st.global.v4")
        assert.are.equal(0, count(ptx, "st%.global%.b16"), "st.global.b16 in the epilogue")
      end
    end)
    it("sm_90 with 32 accumulators per thread stores 8 halves at once (st.global.v4.b32)", function()
      local g = graphs()[1]
      local p = kiln.compile(g, { target = "sm_90", cache = false, perf_config = "v2:64,64,32,32,32,8" })
      local k = p:kernels()[1]
      assert.are.equal("applied", k.output_swizzle)
      local ptx = p:disasm(k.name, "sm_90")
      assert.is_true(count(ptx, "st%.global%.v4%.b32") > 0, "no st.global.v4.b32")
      assert.are.equal(0, count(ptx, "st%.global%.b16"), "st.global.b16 in the epilogue")
    end)
  end)
end)
