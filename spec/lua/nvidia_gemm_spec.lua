-- nvidia_gemm_spec.lua — static checks of the NVIDIA tensor-core GEMM code (no GPU needed):
-- the sm_80 and sm_90 PTX of f16 / bf16 GEMMs (4096^3, transposed operands, odd sizes) and
-- of the seed conv (NHWC 1x1 2048 -> 512 + add + relu, batch 512) reads its mma.sync
-- fragments with ldmatrix (x4; x2 for an odd count of 8-column B fragments: exactly
-- mRepeat + nRepeat/2 per mRepeat x nRepeat mma.sync) and keeps no 32-bit LDS loads; ptxas (when on the
-- machine, else skipped with a message) reports 0 spill bytes and no stack; the SASS
-- (cuobjdump, when present) has LDSM and fewer LDS than HMMA. With the cp.async pipeline
-- (rock-gridwise-to-blockwise{cp-async=S}, S = 2..4) the same kernels have cp.async, one
-- commit_group per prologue stage and per emitted K step, wait_group S-2 per step and one
-- wait_group 0, dynamic shared memory above 48 KiB, and the same resource checks (LDGSTS in
-- the SASS). (scripts/test's sanitizer pass: no ptxas, samples of the cp.async runs and of
-- the wgmma device cases, not the large-shape wgmma groups: gemm_graphs.sample / sanitized.)
local kiln = require "kiln"

local function find_tool(name)
  for _, dir in ipairs { os.getenv("CUDA_HOME") and (os.getenv("CUDA_HOME") .. "/bin") or nil, "/usr/local/cuda/bin" } do
    local f = io.open(dir .. "/" .. name, "rb")
    if f then f:close(); return dir .. "/" .. name end
  end
  local h = io.popen("command -v " .. name .. " 2>/dev/null")
  local p = h and h:read("l")
  if h then h:close() end
  return p ~= "" and p or nil
end
-- (no ptxas under scripts/test's sanitizer pass: ptxas_tool.lua)
local ptxas, cuobjdump = require "ptxas_tool"(), find_tool("cuobjdump")

local G = require "gemm_graphs"
local count, dot_graph, conv_graph = G.count, G.dot, G.seed_conv

local function ptxas_check(ptx, t, sass_check)
  if not ptxas then return end
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(ptx)
  f:close()
  local h = io.popen(("%s -arch=%s -v -o %s.cubin %s 2>&1"):format(ptxas, t, path, path))
  local log = h:read("a")
  h:close()
  local regs = tonumber(log:match("Used (%d+) registers"))
  assert.is_truthy(regs, "ptxas: " .. log)
  assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
  assert.is_truthy(log:find("0 bytes stack frame", 1, true), "stack: " .. log)
  if cuobjdump then
    local hs = io.popen(("%s -sass %s.cubin 2>&1"):format(cuobjdump, path))
    local sass = hs:read("a")
    hs:close()
    sass_check(sass)
  end
  os.remove(path .. ".cubin")
  os.remove(path)
end

local cases = {
  { "gemm 4096^3 f16", function() return dot_graph(4096, 4096, 4096, "f16") end },
  { "gemm 4096^3 bf16 A^T B^T", function() return dot_graph(4096, 4096, 4096, "bf16", true, true) end },
  { "gemm 1500x3840x1280 f16 B^T", function() return dot_graph(1500, 3840, 1280, "f16", false, true) end },
  { "gemm 37x29x45 bf16 A^T", function() return dot_graph(37, 29, 45, "bf16", true, false) end },
  { "seed conv n512 f16", conv_graph },
}

describe("NVIDIA tensor-core GEMMs: ldmatrix fragment loads", function()
  it("kpack 2 (no 16-byte K rows in LDS) keeps 32-bit loads; other targets have none", function()
    local p = kiln.compile(dot_graph(64, 64, 64, "f16"), { target = "sm_90", cache = false, perf_config = "v2:32,32,32,16,16,2" })
    local k = p:kernels()[1]
    assert.are.equal("lds", k.fragment_loads)
    assert.is_nil(p:disasm(k.name, "sm_90"):find("ldmatrix", 1, true))
    for _, t in ipairs { "gfx942", "host" } do
      assert.are.equal("", kiln.compile(dot_graph(64, 64, 64, "f16"), { target = t, cache = false }):kernels()[1].fragment_loads)
    end
  end)
  if not ptxas then print("nvidia_gemm_spec: ptxas not found: resource checks skipped") end
  if not cuobjdump then print("nvidia_gemm_spec: cuobjdump not found: SASS checks skipped") end
  for _, t in ipairs { "sm_80", "sm_90" } do
    for _, c in ipairs(cases) do
      it(t .. " " .. c[1], function()
        local p = kiln.compile(c[2](), { target = t, cache = false })
        local ks = p:kernels(t)
        local gemm
        for _, k in ipairs(ks) do if k.kind == "gemm" then gemm = k end end
        assert.is_truthy(gemm, "a GEMM kernel")
        assert.are.equal("ldmatrix", gemm.fragment_loads)
        local ptx = p:disasm(gemm.name, t)
        -- (.trans: the M / N-major cp.async stages of an M / N-contiguous operand)
        local nmma = count(ptx, "mma%.sync")
        local nldm = count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x[124]%.shared%.b16") +
            count(ptx, "ldmatrix%.sync%.aligned%.m8n8%.x[124]%.trans%.shared%.b16")
        local nlds = count(ptx, "ld%.shared%.[bu]32") + count(ptx, "ld%.shared%.v2%.[bu]32")
        assert.is_true(nmma > 0, "mma.sync")
        assert.is_true(nldm > 0, "ldmatrix in the PTX")
        -- per instruction K step: one x4 per 16 rows of the wave tile (A), one x4 per two
        -- 8-column instructions (B; x2 for an odd count), mRepeat * nRepeat mma.sync
        local mw, nw = gemm.perf_config:match("^v2:%d+,%d+,%d+,(%d+),(%d+)")
        local mrep, nrep = tonumber(mw) // 16, tonumber(nw) // 8
        local per = mrep + (nrep % 2 == 0 and nrep // 2 or nrep)
        assert.are.equal(nmma * per, nldm * mrep * nrep, ("%d ldmatrix for %d mma.sync (%s)"):format(nldm, nmma, gemm.perf_config))
        assert.are.equal(0, nlds, "32-bit LDS fragment loads left")
        ptxas_check(ptx, t, function(sass)
          local ldsm, lds, hmma = count(sass, "LDSM"), count(sass, "LDS[%. ]") , count(sass, "HMMA")
          assert.is_true(ldsm > 0, "LDSM in the SASS")
          assert.is_true(lds < hmma, ("%d LDS for %d HMMA"):format(lds, hmma))
        end)
      end)
    end
  end
end)

describe("NVIDIA tensor-core GEMMs: the cp.async pipeline", function()
  local C = require "cp_async_cases"
  local runs = {}
  for _, t in ipairs { "sm_80", "sm_90" } do
    for _, c in ipairs(cases) do
      for S = 2, 4 do runs[#runs + 1] = { t, c, S } end
    end
  end
  for _, r in ipairs(G.sample(runs, "nvidia_gemm_spec: the cp.async pipeline", 4)) do
    local t, c, S = r[1], r[2], r[3]
    it(("%s %s cp-async=%d"):format(t, c[1], S), function()
      local p = kiln.compile(c[2](), { target = t, cache = false, pipeline = C.pipeline(S) })
      local gemm
      for _, k in ipairs(p:kernels(t)) do if k.kind == "gemm" then gemm = k end end
      local ptx = p:disasm(gemm.name, t)
      local ncp, ncommit = count(ptx, "cp%.async%.c[ag]%.shared%.global"), count(ptx, "cp%.async%.commit_group")
      if gemm.pipeline_stages == 0 then -- 37x29x45: one K step, no 4/8/16-byte vectors
        assert.is_truthy(gemm.async_copy == "none" or gemm.async_copy == "", gemm.async_copy) -- or one K step
        assert.are.equal(0, ncp + ncommit)
        return
      end
      local st = gemm.pipeline_stages
      assert.is_true(st >= 2 and st <= S)
      if gemm.async_copy ~= "A,B" then assert.are.equal(2, st, "one operand on registers: S <= 2") end
      assert.are.equal("ldmatrix", gemm.fragment_loads)
      local kb = tonumber(gemm.perf_config:match("^v2:%d+,%d+,(%d+)"))
      local K = tonumber(c[1]:match("x(%d+) ") or c[1]:match("(%d+)%^3")) or 2048 -- the seed conv: C = 2048
      local nk = math.ceil(K / kb)
      local r = nk % st
      assert.is_true(ncp > 0, "cp.async in the PTX")
      assert.are.equal(st - 1 + st + r, ncommit, "commit_group: prologue + loop + tail steps")
      local nwait = count(ptx, "cp%.async%.wait_group " .. (st - 2) .. ";")
      local nwait0 = count(ptx, "cp%.async%.wait_group 0;")
      if st == 2 then
        assert.are.equal(st + r + 1, nwait0, "wait_group 0 per step and after the loop")
      else
        assert.are.equal(st + r, nwait, "wait_group S-2 per step")
        assert.are.equal(1, nwait0, "wait_group 0 after the loop")
      end
      local dyn = ptx:find(".extern .shared", 1, true) ~= nil
      assert.are.equal(gemm.lds_bytes > 48 * 1024, dyn, "dynamic shared memory exactly above 48 KiB")
      ptxas_check(ptx, t, function(sass)
        assert.is_true(count(sass, "LDGSTS") > 0, "LDGSTS in the SASS")
        assert.is_true(count(sass, "LDSM") > 0, "LDSM in the SASS")
      end)
    end)
  end
end)
-- Hopper wgmma (sm_90a, its default: the heuristic, or a v3 config; wgmma=false: mma.sync;
-- passes/rock_wgmma.h): the PTX targets sm_90a and has wgmma.mma_async between
-- wgmma.fence and commit_group / wait_group, fence.proxy.async before the K-loop barriers,
-- no mma.sync; ptxas -arch=sm_90a accepts it with 0 spill bytes and no stack; the SASS has
-- HGMMA (cuobjdump, when present). The ptxas registers are printed for the report. With
-- three or more K steps the K loop keeps one group in flight (3 LDS buffers): wait_group 1,
-- and LDS stores between each commit_group and the following wait (the next step's tiles
-- stored while the MMAs run); in the SASS, STS between an HGMMA and the
-- WARPGROUP.DEPBAR.LE gsb0, 0x1 that follows it (ptxas kept the overlap).
local wg_cases = {
  { "gemm 4096^3 f16", function() return dot_graph(4096, 4096, 4096, "f16") end, "v3:128,128,64,64,128,8" },
  { "gemm 4096^3 bf16 A^T B^T", function() return dot_graph(4096, 4096, 4096, "bf16", true, true) end, "v3:128,128,64,64,128,8" },
  { "gemm 1500x3840x1280 f16 B^T", function() return dot_graph(1500, 3840, 1280, "f16", false, true) end, "v3:128,256,32,64,256,8" },
  { "gemm 4096^3 f16 128x256", function() return dot_graph(4096, 4096, 4096, "f16") end, "v3:128,256,64,64,256,8" },
  { "gemm 4096^3 bf16 256x128 B^T", function() return dot_graph(4096, 4096, 4096, "bf16", false, true) end, "v3:256,128,64,128,128,8" },
  { "gemm 37x29x45 bf16 A^T", function() return dot_graph(37, 29, 45, "bf16", true, false) end, "v3:64,64,16,64,64,8" },
  { "seed conv n512 f16", conv_graph, "v3:128,128,64,64,128,8" },
  { "seed conv n512 f16 (heuristic)", conv_graph, nil },
}
-- (the register-staged K loop: tma=0; TMA, the default where the operands are plain boxes, is
-- tma_spec's)
local wg_pipeline = kiln.default_pipeline():gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{wgmma=true}", 1)
  :gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{tma=0},", 1)
local wg_reg_pipeline = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{tma=0},", 1)

describe("NVIDIA wgmma GEMMs (sm_90a)", function()
  it("sm_90a is a compile target with wgmma, its default for f16 GEMMs; sm_90 has none; wgmma=false keeps mma.sync", function()
    assert.is_true(kiln.target("sm_90a").wgmma)
    assert.is_false(kiln.target("sm_90").wgmma)
    local p = kiln.compile(dot_graph(64, 64, 64, "f16"), { target = "sm_90a", cache = false })
    local ptx = p:disasm(p:kernels()[1].name, "sm_90a")
    assert.is_truthy(ptx:find(".target sm_90a", 1, true))
    assert.is_truthy(ptx:find("wgmma.mma_async", 1, true))
    local off = kiln.default_pipeline():gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{wgmma=false}", 1)
    p = kiln.compile(dot_graph(64, 64, 64, "f16"), { target = "sm_90a", cache = false, pipeline = off })
    ptx = p:disasm(p:kernels()[1].name, "sm_90a")
    assert.is_nil(ptx:find("wgmma", 1, true))
    assert.is_truthy(ptx:find("mma.sync", 1, true))
    -- f32 GEMMs have no wgmma: FMA on sm_90a as on sm_90
    p = kiln.compile(dot_graph(64, 64, 64, "f32"), { target = "sm_90a", cache = false })
    assert.is_nil(p:disasm(p:kernels()[1].name, "sm_90a"):find("wgmma", 1, true))
  end)
  it("a v3 config on sm_90 or with f32 inputs is an error naming the reason", function()
    local ok, e = pcall(kiln.compile, dot_graph(64, 64, 64, "f16"), { target = "sm_90", cache = false, perf_config = "v3:64,64,16,64,64,8" })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("sm_90a", 1, true), tostring(e))
    ok, e = pcall(kiln.compile, dot_graph(64, 64, 64, "f32"), { target = "sm_90a", cache = false, perf_config = "v3:64,64,16,64,64,8" })
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("f16 or bf16", 1, true), tostring(e))
  end)
  for _, c in ipairs(wg_cases) do
    it("sm_90a " .. c[1] .. " " .. (c[3] or "wgmma=true"), function()
      local opts = { target = "sm_90a", cache = false }
      if c[3] then opts.perf_config, opts.pipeline = c[3], wg_reg_pipeline else opts.pipeline = wg_pipeline end
      local p = kiln.compile(c[2](), opts)
      local gemm
      for _, k in ipairs(p:kernels("sm_90a")) do if k.kind == "gemm" then gemm = k end end
      assert.is_truthy(gemm, "a GEMM kernel")
      assert.is_truthy(gemm.perf_config:match("^v3:"), gemm.perf_config)
      local ptx = p:disasm(gemm.name, "sm_90a")
      assert.is_truthy(ptx:find(".target sm_90a", 1, true))
      local v = tonumber(ptx:match("%.version (%d+%.%d+)"))
      assert.is_true(v >= 8.0, "PTX version " .. tostring(v))
      local nmma = count(ptx, "wgmma%.mma_async%.sync%.aligned%.m64n%d+k16%.f32%.b?f16%.b?f16")
      assert.is_true(nmma > 0, "wgmma.mma_async")
      assert.is_true(count(ptx, "wgmma%.fence%.sync%.aligned") > 0, "wgmma.fence")
      assert.is_true(count(ptx, "wgmma%.commit_group%.sync%.aligned") > 0, "commit_group")
      assert.is_true(count(ptx, "wgmma%.wait_group%.sync%.aligned 0") > 0, "wait_group 0")
      assert.is_true(count(ptx, "fence%.proxy%.async%.shared::cta") > 0, "fence.proxy.async")
      local pipelined = count(ptx, "wgmma%.wait_group%.sync%.aligned 1;") > 0
      assert.is_true(pipelined, "wait_group 1 (a group in flight across the K-loop barrier)")
      local overlapped = 0
      for between in ptx:gmatch("wgmma%.commit_group%.sync%.aligned;(.-)wgmma%.wait_group") do
        if between:find("st.shared", 1, true) then overlapped = overlapped + 1 end
      end
      assert.is_true(overlapped > 0, "LDS stores between commit_group and wait_group")
      assert.are.equal(0, count(ptx, "mma%.sync"), "no mma.sync")
      if ptxas then
        local path = os.tmpname()
        local f = assert(io.open(path, "wb"))
        f:write(ptx)
        f:close()
        local h = io.popen(("%s -arch=sm_90a -v -o %s.cubin %s 2>&1"):format(ptxas, path, path))
        local log = h:read("a")
        h:close()
        local regs = tonumber(log:match("Used (%d+) registers"))
        assert.is_truthy(regs, "ptxas: " .. log)
        assert.is_truthy(log:find("0 bytes spill stores, 0 bytes spill loads", 1, true), "spills: " .. log)
        assert.is_truthy(log:find("0 bytes stack frame", 1, true), "stack: " .. log)
        print(("nvidia_gemm_spec: sm_90a %s %s: %d wgmma, ptxas %d registers, 0 spills"):format(c[1], gemm.perf_config, nmma, regs))
        if cuobjdump then
          local hs = io.popen(("%s -sass %s.cubin 2>&1"):format(cuobjdump, path))
          local sass = hs:read("a")
          hs:close()
          assert.is_true(count(sass, "HGMMA") > 0, "HGMMA in the SASS")
          local sts_in_flight = 0
          for between in sass:gmatch("HGMMA[^\n]*gsb0 ;(.-)WARPGROUP%.DEPBAR%.LE gsb0, 0x1") do
            if not between:find("HGMMA", 1, true) and between:find("STS", 1, true) then sts_in_flight = sts_in_flight + 1 end
          end
          assert.is_true(sts_in_flight > 0, "STS between an HGMMA and its WARPGROUP.DEPBAR.LE gsb0, 0x1")
        end
        os.remove(path .. ".cubin")
        os.remove(path)
      end
    end)
  end
end)

-- every case of the device suite's wgmma section (spec/lua/wgmma_cases.lua) compiles for
-- sm_90a into a GEMM kernel with wgmma.mma_async (convs, odd sizes, batch, epilogues; the
-- fp8 cases with the opt-in fp8 wgmma, their configs readable by fp8_wgmma_rule.slices); the
-- heuristic picks the cases' expected large tiles (128x256x64, x32); ptxas: 0 spills for them
describe("wgmma device cases compile for sm_90a", function()
  local W = require "wgmma_cases"
  it("every case", function()
    local R = require "fp8_wgmma_rule"
    for _, c in ipairs(G.sample(W.cases(), "nvidia_gemm_spec: wgmma device cases")) do
      -- the suite's compile (fp8: gemm-operands=fp8, the k32 e4m3 / e5m2 wgmma checked there)
      local p, pc = W.compile(c)
      if c.fp8 then -- the rule's K slices (split-K included) cover K
        local ni = 0
        for _, sl in ipairs(R.slices(c.fp8.K, pc)) do ni = ni + sl[2] end
        assert.is_true(ni >= (c.fp8.K + 31) // 32, c.name .. " " .. pc)
      end
      local n = 0
      for _, k in ipairs(p:kernels()) do
        if k.kind == "gemm" then
          assert.is_truthy(k.perf_config:match("^v3:"), c.name .. ": " .. k.perf_config)
          local ptx = p:disasm(k.name, "sm_90a")
          n = n + count(ptx, "wgmma%.mma_async")
          if c.expect then assert.are.equal(c.expect, k.perf_config, c.name) end
          -- the heuristic's large tiles (up to 255 registers): 0 spill bytes with their
          -- epilogues too (forced large tiles on odd sizes spill: device numerics only)
          -- (and the fp8 promotion tiles: 128x128 with two accumulators)
          if not c.perf and (k.perf_config:match("^v3:128,256") or k.perf_config:match("^v3:256,128") or
                             (k.fp8_promote > 0 and k.perf_config:match("^v3:128,128"))) then
            ptxas_check(ptx, "sm_90a", function() end)
          end
        end
      end
      assert.is_true(n > 0, c.name .. ": no wgmma")
    end
  end)
end)

-- the sm_90a GEMM kernel of graph g has perf config want, and ptxas finds no spill in it
local function expect_pick(g, want)
  local p = kiln.compile(g, { target = "sm_90a", cache = false })
  local gemm
  for _, k in ipairs(p:kernels("sm_90a")) do if k.kind == "gemm" then gemm = k end end
  assert.is_truthy(gemm, "a GEMM kernel")
  assert.are.equal(want, gemm.perf_config)
  ptxas_check(p:disasm(gemm.name, "sm_90a"), "sm_90a", function() end)
end

-- the wgmma heuristic's configs for the benchmark's large unpadded shapes (bench/gpu_cases.txt):
-- 128x256x64 for the GEMMs, the scaled-A GEMM and the seed conv at batch 512, 128x256x32 where
-- an operand is converted from f32 (staged wider than its type: 412 spilled bytes at 64);
-- ptxas -arch=sm_90a: 0 spill bytes and no stack for each (skipped with a message without ptxas)
describe("wgmma heuristic on the benchmark's large shapes (sm_90a)", function()
  if G.sanitized("nvidia_gemm_spec: wgmma heuristic on the benchmark's large shapes (sm_90a)") then return end
  local X64, X32 = "v3:128,256,64,64,256,8", "v3:128,256,32,64,256,8"
  local function cvt_graph(M, N, K)
    local g = kiln.graph("gemm_cvt")
    g:output(g:dot(g:param("a", { M, K }, "f32"):convert("f16"), g:param("b", { K, N }, "f16")))
    return g
  end
  local function scale_graph(M, N, K)
    local g = kiln.graph("gemm_scale")
    g:output(g:dot(g:param("a", { M, K }, "f16") * g:param("s", { 1, K }, "f16"), g:param("b", { K, N }, "f16")))
    return g
  end
  local function conv_cvt_graph()
    local g = kiln.graph("conv_cvt")
    local x = g:param("x", { 512, 2048, 7, 7 }, "f32", { layout = "NHWC" })
    local w = g:param("w", { 512, 2048, 1, 1 }, "f16", { layout = "KYXC" })
    local r = g:param("r", { 512, 512, 7, 7 }, "f16", { layout = "NHWC" })
    g:output((g:conv(x:convert("f16"), w) + r):relu())
    return g
  end
  local cases = {
    { "gemm 4096^3 f16", function() return dot_graph(4096, 4096, 4096, "f16") end, X64 },
    { "gemm 4096^3 bf16", function() return dot_graph(4096, 4096, 4096, "bf16") end, X64 },
    { "gemm 8192^3 f16", function() return dot_graph(8192, 8192, 8192, "f16") end, X64 },
    { "gemm 8192^3 bf16", function() return dot_graph(8192, 8192, 8192, "bf16") end, X64 },
    { "gemm 8192^3 f16 A^T B^T", function() return dot_graph(8192, 8192, 8192, "f16", true, true) end, X64 },
    { "gemm_scale 4096^3 f16", function() return scale_graph(4096, 4096, 4096) end, X64 },
    { "gemm_cvt 4096^3 f16", function() return cvt_graph(4096, 4096, 4096) end, X32 },
    { "seed conv n512 f16", conv_graph, X64 },
    { "conv_cvt n512 f16", conv_cvt_graph, X32 },
  }
  if not ptxas then print("nvidia_gemm_spec: ptxas not found: the spill checks of the wgmma heuristic skipped") end
  for _, c in ipairs(cases) do it(c[1] .. " -> " .. c[3], function() expect_pick(c[2](), c[3]) end) end
end)

-- operands with loads narrower than 16 bytes (odd strides: no TMA, each element its own load,
-- address and bounds check, staged in registers) take the wgmma heuristic's kPerBlock down to
-- 16 (2-byte loads) or 32 (kl_wgmma_narrow_loads): at 64 ptxas -arch=sm_90a spilled 1596 bytes
-- for 16x129x129 with B [N, K], 592 for 1000x1000x999, 2168 for the 7x7 conv on 3 channels
-- (filter K = 147); 1000x1000x1002 (4-byte loads) 16 at 64; 0 spill bytes and no stack now
describe("wgmma heuristic on operands with narrow loads (sm_90a)", function()
  if G.sanitized("nvidia_gemm_spec: wgmma heuristic on operands with narrow loads (sm_90a)") then return end
  local function conv7()
    local g = kiln.graph("conv7x7_c3")
    g:output(g:conv(g:param("x", { 8, 3, 224, 224 }, "f16", { layout = "NHWC" }),
      g:param("w", { 64, 3, 7, 7 }, "f16", { layout = "KYXC" }), { stride = 2, padding = 3 }))
    return g
  end
  local cases = {
    { "16x129x129 f16 B [N, K]", function() return dot_graph(16, 129, 129, "f16", false, true) end, "v3:64,128,16,64,128,8" },
    { "1000x1000x1002 f16 B [N, K]", function() return dot_graph(1000, 1000, 1002, "f16", false, true) end, "v3:64,128,32,64,128,8" },
    { "conv 8x3x224x224 by 64x3x7x7 NHWC", conv7, "v3:64,128,16,64,128,8" },
  }
  for _, c in ipairs(cases) do it(c[1] .. " -> " .. c[3], function() expect_pick(c[2](), c[3]) end) end
end)

-- rock-gridwise-to-blockwise{wgmma-fence=early|late}: each K step's fence.proxy.async after its
-- LDS stores and before the next step's global loads (early, the default: the fence's
-- MEMBAR.ALL.CTA waits for the stores only), or after the loads (late); another value is an error
describe("wgmma K loop fence placement", function()
  local function step(fence)
    local pl = kiln.default_pipeline()
    pl = pl:gsub("rock%-gridwise%-to%-blockwise[^,]*,", "rock-gridwise-to-blockwise{tma=0" .. (fence and (",wgmma-fence=" .. fence) or "") .. "},", 1)
    local p = kiln.compile(dot_graph(512, 512, 1024, "f16"), { target = "sm_90a", cache = false, pipeline = pl, perf_config = "v3:128,256,64,64,256,8" })
    local ptx = p:disasm(p:kernels()[1].name, "sm_90a")
    -- the first K step inside the loop: from a commit_group to the next bar.sync
    return assert(ptx:match("wgmma%.commit_group%.sync%.aligned;(.-)bar%.sync"), "a K step")
  end
  it("early (default): the fence before the next global loads; late: after them", function()
    for _, f in ipairs { false, "early", "late" } do
      local s = step(f)
      local fence, load, st = s:find("fence.proxy.async", 1, true), s:find("ld.global", 1, true), s:find("st.shared", 1, true)
      assert.is_truthy(fence and load and st, tostring(f))
      assert.is_true(st < fence, "stores before the fence")
      if f == "late" then assert.is_true(load < fence, "late: loads before the fence")
      else assert.is_true(fence < load, tostring(f) .. ": the fence before the loads") end
    end
  end)
  it("another value is an error naming the option", function()
    local ok, e = pcall(step, "middle")
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("wgmma-fence must be early or late", 1, true), tostring(e))
  end)
end)

-- fp8 on sm_90a, opted in with fp8-compute{gemm-operands=fp8} (passes/fp8_compute.c keeps
-- f8e4m3fn / f8e5m2 operands of quant_dot / quant_conv; passes/rock_wgmma.h): the GEMM's
-- PTX has wgmma.mma_async m64nNk32 .e4m3 / .e5m2 (no conversion to f16, no mma.sync), LDS
-- tiles of fp8 codes (kpack 16); the heuristic's 8192^3 config is 128x256x64 (two
-- warpgroups of m64n256k32); ptxas -arch=sm_90a: 0 spill bytes, no stack (skipped with a
-- message without ptxas). The default (gemm-operands=auto) and gemm-operands=f16 keep the
-- f16 instructions on sm_90a and sm_90 (the fp8 wgmma's accumulation is not f32: the
-- measured rule is in spec/lua/fp8_wgmma_rule.lua).
describe("fp8 wgmma (sm_90a)", function()
  if G.sanitized("nvidia_gemm_spec: fp8 wgmma (sm_90a)") then return end
  local PT = { f8e4m3fn = "e4m3", f8e5m2 = "e5m2" }
  local FP8 = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=fp8}", 1)
  local function qdot(Mm, N, K, dt, bt)
    local g = kiln.graph("q8")
    local b = bt and g:param("b", { N, K }, dt):transpose { 1, 0 } or g:param("b", { K, N }, dt)
    g:output(g:quant_dot(g:param("a", { Mm, K }, dt), b))
    return g
  end
  local function qconv(dt)
    local g = kiln.graph("q8c")
    local x = g:param("x", { 64, 256, 14, 14 }, dt, { layout = "NHWC" })
    local w = g:param("w", { 256, 256, 3, 3 }, dt, { layout = "KYXC" })
    g:output(g:quant_conv(x, w, { padding = { 1, 1, 1, 1 } }))
    return g
  end
  if not ptxas then print("nvidia_gemm_spec: fp8 wgmma: ptxas not found, the register / spill checks are skipped") end
  -- two-level accumulation (fp8-promote=128, two accumulators: 128x128x64 tiles) and the
  -- default, one level (fp8-promote=0: the 128x256x64 tiles)
  local FP8_1L = FP8
  local FP8_2L = FP8:gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=128}", 1)
  for _, dt in ipairs { "f8e4m3fn", "f8e5m2" } do
    local cases = {
      { "8192^3", function() return qdot(8192, 8192, 8192, dt) end, "v3:128,128,64,64,128,16", 128 },
      { "8192^3 B^T", function() return qdot(8192, 8192, 8192, dt, true) end, "v3:128,128,64,64,128,16", 128 },
      { "8192^3 one level", function() return qdot(8192, 8192, 8192, dt) end, "v3:128,256,64,64,256,16", 0 },
      { "8192^3 B^T one level", function() return qdot(8192, 8192, 8192, dt, true) end, "v3:128,256,64,64,256,16", 0 },
      { "1500x3840x1280", function() return qdot(1500, 3840, 1280, dt) end, nil, 128 },
      { "1500x3840x1280 one level", function() return qdot(1500, 3840, 1280, dt) end, nil, 0 },
      { "37x29x45", function() return qdot(37, 29, 45, dt) end, nil, 128 },
      { "conv 3x3 NHWC 64x256x14x14", function() return qconv(dt) end, nil, 128 },
      { "conv 3x3 NHWC 64x256x14x14 one level", function() return qconv(dt) end, nil, 0 },
    }
    for _, c in ipairs(cases) do
      it(dt .. " quant_" .. c[1], function()
        local p = kiln.compile(c[2](), { target = "sm_90a", cache = false, pipeline = c[4] == 0 and FP8_1L or FP8_2L })
        local gemm
        for _, k in ipairs(p:kernels()) do if k.kind == "gemm" then gemm = k end end
        assert.is_truthy(gemm, "a GEMM kernel")
        if c[3] then assert.are.equal(c[3], gemm.perf_config) end
        assert.are.equal(c[4], gemm.fp8_promote, "the kernel's promotion interval")
        -- promotion: nPerWave <= 128 (two accumulators), kPerBlock <= 64 dividing 128
        local f = {}
        for v in gemm.perf_config:gmatch("%d+") do f[#f + 1] = tonumber(v) end
        if c[4] > 0 then assert.is_true(f[6] <= 128 and f[4] <= 64 and 128 % f[4] == 0, gemm.perf_config) end
        assert.truthy(gemm.perf_config:match("^v3:.*,16$") or gemm.perf_config:match("^v3:.*,16,%d+$"), gemm.perf_config)
        local ptx = p:disasm(gemm.name, "sm_90a")
        local pat = "wgmma%.mma_async%.sync%.aligned%.m64n%d+k32%.f32%." .. PT[dt] .. "%." .. PT[dt] .. " "
        local n = count(ptx, pat)
        assert.is_true(n > 0, "no " .. pat)
        assert.are.equal(n, count(ptx, "wgmma%.mma_async"), "every wgmma is fp8")
        assert.are.equal(0, count(ptx, "mma%.sync"), "no mma.sync")
        assert.are.equal(0, count(ptx, "cvt%.rn%.f16x2%.e4m3x2"), "no conversion to f16")
        assert.are.equal(0, count(ptx, "%.f16"), "no f16 values")
        ptxas_check(ptx, "sm_90a", function(sass) assert.is_true(count(sass, "HGMMA") > 0, "HGMMA") end)
      end)
    end
  end
  it("fp8-promote: bad values and a K tile that does not divide the interval are errors", function()
    for _, v in ipairs { "48", "-32" } do
      local ok, err = pcall(kiln.compile, qdot(128, 128, 256, "f8e4m3fn"), { target = "sm_90a", cache = false,
        pipeline = FP8:gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=" .. v .. "}", 1) })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("fp8-promote must be 0 (off) or a positive multiple of 32", 1, true), tostring(err))
    end
    local ok, err = pcall(kiln.compile, qdot(128, 128, 256, "f8e5m2"), { target = "sm_90a", cache = false,
      perf_config = "v3:128,128,128,64,128,16",
      pipeline = FP8:gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=64}", 1) })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("fp8-promote 64 is not a multiple of the perf config's kPerBlock (128)", 1, true),
                  tostring(err))
    -- f16 GEMMs ignore it
    local g = kiln.graph("h")
    g:output(g:dot(g:param("a", { 128, 256 }, "f16"), g:param("b", { 256, 128 }, "f16")))
    local p = kiln.compile(g, { target = "sm_90a", cache = false,
      pipeline = kiln.default_pipeline():gsub("rock%-gemm%-to%-gridwise", "rock-gemm-to-gridwise{fp8-promote=64}", 1) })
    assert.are.equal(0, p:kernels()[1].fp8_promote)
  end)
  it("the default (auto) and gemm-operands=f16 keep the f16 instructions on sm_90a and sm_90", function()
    local p = kiln.compile(qdot(256, 256, 256, "f8e4m3fn"), { target = "sm_90", cache = false })
    assert.truthy(p:disasm(p:kernels()[1].name, "sm_90"):find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1, true))
    local pl = kiln.default_pipeline():gsub("fp8%-compute", "fp8-compute{gemm-operands=f16}", 1)
    for _, c in ipairs { { "f8e5m2", nil, "e5m2" }, { "f8e4m3fn", nil, "e4m3" }, { "f8e5m2", pl, "e5m2" } } do
      p = kiln.compile(qdot(256, 256, 256, c[1]), { target = "sm_90a", cache = false, pipeline = c[2] })
      local gemm
      for _, k in ipairs(p:kernels()) do if k.kind == "gemm" then gemm = k end end
      local ptx = p:disasm(gemm.name, "sm_90a")
      assert.truthy(ptx:find("wgmma%.mma_async%.sync%.aligned%.m64n%d+k16%.f32%.f16%.f16"), c[1] .. ": f16 wgmma")
      assert.falsy(ptx:find("k32", 1, true), c[1] .. ": no fp8 wgmma")
      assert.falsy(ptx:find("wgmma[^\n]*" .. c[3]), c[1] .. ": no fp8 wgmma")
    end
  end)
end)
