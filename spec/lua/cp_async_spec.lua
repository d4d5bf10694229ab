-- cp_async_spec.lua — the multi-stage (cp.async) K-loop pipeline on the host: every case of
-- cp_async_cases.lua with rock-gridwise-to-blockwise{cp-async=S}, S = 1..4, runs the same
-- pipelined loop (plain copies) and matches g:eval on random inputs; the kernel reports the
-- stages (min(S, K steps) where an operand is copied asynchronously) and never copies an
-- operand with an input-fusion prologue asynchronously. Structure: the loop-level IR has
-- S - 1 + K-steps commits and the wait counts; bad option values are located errors.
-- cp-async-layout=krow (static, sm_90 / sm_80, interpreting the PTX of one warp with
-- spec/lua/ptx_addr.lua): ldmatrix fragment loads stay conflict-free, and the lanes reading
-- one 128-byte global line write one or two 128-byte LDS rows ((line, LDS row) pieces per
-- 512-byte cp.async: 11 (sm_90 tiles) / 18 (sm_80) instead of the kgroup layout's 32);
-- ptxas: no spills in the sm_90 bench GEMM. M / N-contiguous operands (B stored [K, N], A
-- stored [K, M]): the M / N-major xor stages on the host against g:eval (kpack-8 configs), and
-- on the PTX ldmatrix.trans, conflict-free copies and reads, whole sectors, no spills, auto on.
-- (scripts/test's sanitizer pass: a sample of the cases and no 4096^3 / 2048^2 kernels,
-- gemm_graphs.sample / sanitized.)
local kiln = require "kiln"
local C = require "cp_async_cases"
local G = require "gemm_graphs"

local function gemm_kernel(p)
  for _, k in ipairs(p:kernels()) do if k.kind == "gemm" then return k end end
end

describe("cp.async pipeline (host: the same loop with plain copies)", function()
  local all = C.cases()
  local cases = G.sample(all, "cp_async_spec: host cases")
  local piped = {}
  for _, c in ipairs(cases) do
    for _, S in ipairs(C.stages) do
      it(("S=%d %s"):format(S, c.name), function()
        local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = C.pipeline(S), perf_config = c.host_perf })
        local k = gemm_kernel(p)
        assert.is_truthy(k, "a GEMM kernel")
        if S == 1 then
          assert.are.equal("", k.async_copy)
          assert.are.equal(0, k.pipeline_stages)
        elseif k.async_copy ~= "none" then
          assert.is_true(k.pipeline_stages >= 2 and k.pipeline_stages <= S, "stages " .. k.pipeline_stages)
          piped[S] = (piped[S] or 0) + 1
        end
        if c.prologue then assert.is_nil(k.async_copy:find(c.prologue, 1, true), "the prologue operand is not async") end
        assert.is_true(C.run_check(p, c))
      end)
    end
  end
  it("pipelines most cases for every S >= 2", function()
    local least = 20 * #cases // #all -- 20 of the 57 cases (of a sample: as many in proportion)
    for S = 2, 4 do
      assert.is_true((piped[S] or 0) >= least, ("S=%d: %d of %d cases pipelined"):format(S, piped[S] or 0, #cases))
    end
  end)

  it("cp-async-layout=xor on the host (kpack-8 f16 / bf16 configs): K- and M / N-major stages match g:eval", function()
    -- the xor stages' index arithmetic (xor_tile_view; M / N-major: rows of K, 16-byte chunks of
    -- M / N swizzled by the row, what ldmatrix.trans reads on NVIDIA) with plain copies: A stored
    -- [K, M] and / or B stored [K, N], odd sizes (padded tiles), K = 16 (one K step: no pipeline)
    -- and long K, batch, a fused bias + relu; sizes that are not multiples of 8 keep the
    -- register path
    local pl = function(S) return C.pipeline(S, "xor") end
    local n = 0
    for _, c in ipairs {
      { 64, 64, 64, "v1:32,32,16,32,32,8", false, false, "f16", "xor:A,B" },
      { 96, 72, 200, "v1:32,64,32,32,64,8", false, true, "f16", "xor:A,B" },
      { 104, 56, 1000, "v1:32,32,32,32,32,8", true, false, "bf16", "xor:A,B" },
      { 40, 48, 2048, "v1:32,32,16,32,32,8", false, false, "f16", "xor:A,B", 3 },
      { 128, 64, 16, "v1:32,32,16,32,32,8", false, false, "f16", nil },
      { 37, 29, 45, "v1:32,32,16,32,32,8", false, false, "f16", nil },
      { 64, 96, 96, "v1:64,32,32,64,32,8", false, false, "bf16", "xor:A,B", 2, true },
    } do
      local M, N, K, perf, at, bt, dt, want, batch, epi = table.unpack(c)
      local g = kiln.graph("g")
      local pre = batch and { batch } or {}
      local function shp(x, y) local t = { table.unpack(pre) } t[#t + 1] = x t[#t + 1] = y return t end
      local perm = batch and { 0, 2, 1 } or { 1, 0 }
      local a = at and g:param("a", shp(M, K), dt) or g:param("a", shp(K, M), dt):transpose(perm)
      local b = bt and g:param("b", shp(N, K), dt):transpose(perm) or g:param("b", shp(K, N), dt)
      local y = g:dot(a, b)
      if epi then y = (y + g:param("bias", shp(1, N), dt)):relu() end
      g:output(y)
      local inputs = { a = kiln.rand(at and shp(M, K) or shp(K, M), dt), b = kiln.rand(bt and shp(N, K) or shp(K, N), dt) }
      if epi then inputs.bias = kiln.rand(shp(1, N), dt) end
      for _, S in ipairs { 2, 3, 4 } do
        local p = kiln.compile(g, { target = "host", cache = false, pipeline = pl(S), perf_config = perf })
        local k = gemm_kernel(p)
        local what = ("%dx%dx%d %s S=%d"):format(M, N, K, perf, S)
        if want then
          assert.are.equal(want, k.async_lds_layout, what)
          assert.are.equal("A,B", k.async_copy, what)
          n = n + 1
        else
          assert.are.equal(0, k.pipeline_stages, what)
        end
        local got, ref = p:run(inputs), g:eval(inputs)
        local ok, rep = C.check(got[1] or got, ref[1] or ref, dt)
        assert.is_true(ok, what .. ": " .. tostring(rep and rep.summary or rep))
      end
    end
    assert.is_true(n >= 15, n)
  end)

  it("loop-level structure: S - 1 prologue commits, one commit and one wait_group S-2 per K step", function()
    -- 64x64x256 f32 (A^T, so both host LDS tiles take 16-byte vectors) with kPerBlock 16:
    -- 16 K steps; the main loop is S unrolled steps, the tail 16 mod S
    for S = 2, 4 do
      local g = G.dot(64, 64, 256, "f32", true)
      local p = kiln.compile(g, { target = "host", cache = false, pipeline = C.pipeline(S), perf_config = "v1:32,32,16,32,32,1" })
      local k = gemm_kernel(p)
      assert.are.equal("A,B", k.async_copy)
      assert.are.equal(S, k.pipeline_stages)
      local ir = p:ir("rock-lower-loops")
      local function n(pat) local c = 0 for _ in ir:gmatch(pat) do c = c + 1 end return c end
      local bodies = S + 16 % S                   -- unrolled steps in the loop + the tail steps
      assert.are.equal(S - 1 + bodies, n("rock%.async_commit"))
      assert.are.equal(bodies, n("rock%.async_wait[^\n]*pending = " .. (S - 2)) - (S == 2 and 1 or 0))
      assert.are.equal(1, n("rock%.async_wait[^\n]*pending = 0") - (S == 2 and bodies or 0))
      assert.is_true(n("rock%.async_copy") > 0)
      assert.is_truthy(ir:find("scf.for", 1, true))
      local inputs = { a = kiln.rand({ 256, 64 }, "f32", { seed = 1 }), b = kiln.rand({ 256, 64 }, "f32", { seed = 2 }) }
      local got, want = p:run(inputs), g:eval(inputs)
      assert.is_true(C.check(got[1] or got, want[1] or want, "f32"))
    end
  end)

  it("the larger GPU cases pipeline on sm_80 and sm_90 (static: compile only)", function()
    for _, c in ipairs(G.sample(C.gpu_cases(), "cp_async_spec: the larger GPU cases")) do
      for _, t in ipairs { "sm_80", "sm_90" } do
        local p = kiln.compile(c.g, { target = t, cache = false, pipeline = C.pipeline(3), perf_config = c.gpu_perf })
        local k
        for _, x in ipairs(p:kernels(t)) do if x.kind == "gemm" then k = x end end
        if c.piped or c.piped_xor then
          assert.is_true(k.pipeline_stages >= 2, t .. " " .. c.name .. ": " .. k.async_copy .. " " .. k.perf_config)
          local ptx = p:disasm(k.name, t)
          assert.is_truthy(ptx:find("cp.async.cg.shared.global", 1, true), t .. " " .. c.name)
          -- the M / N-major operands: in xor stages, read with ldmatrix.trans
          if c.mn then
            assert.is_truthy(k.async_lds_layout:find("xor", 1, true), t .. " " .. c.name .. ": " .. k.async_lds_layout)
            assert.is_truthy(ptx:find("ldmatrix.sync.aligned.m8n8.x4.trans", 1, true), t .. " " .. c.name)
          end
        end
        if c.prologue then assert.is_nil(k.async_copy:find(c.prologue, 1, true)) end
      end
    end
  end)

  it("auto (-1) pipelines only with both operands async, >= 3 stages and two blocks' LDS (static)", function()
    if G.sanitized("cp_async_spec: auto's choices at 4096^3") then return end
    -- two stages measured slower than the register-staged loop on an H200 (docs/ARCHITECTURE.md)
    local function stages(t, bt, K, N, M)
      local p = kiln.compile(G.dot(M or 4096, N or 4096, K, "f16", false, bt), { target = t, cache = false, pipeline = C.pipeline(-1) })
      local k = p:kernels(t)[1]
      return k.pipeline_stages, k.async_copy, k.lds_bytes, k.perf_config
    end
    local st, async, lds = stages("sm_90", true, 4096)
    assert.are.equal(3, st) -- 32 x 32 block tiles: 3 stages (H100 353 vs 347 TFLOP/s at 4)
    assert.are.equal("A,B", async)
    assert.is_true(2 * lds <= 227 * 1024, lds)
    for _, t in ipairs { "sm_80", "sm_90" } do
      -- a narrow grid (N = 256: at most 4 block tiles along N): 4 stages (the seed conv 327 vs 321)
      local st4, async4, lds4, pc = stages(t, true, 4096, 256, 16384)
      local nb = tonumber(pc:match("^v2:%d+,(%d+)"))
      assert.is_true(256 // nb <= 4, pc)
      assert.are.equal(4, st4, t .. " " .. pc)
      assert.are.equal("A,B", async4)
      assert.is_true(2 * lds4 <= (t == "sm_80" and 163 or 227) * 1024, lds4)
    end
    -- B stored [K, N] (N-contiguous): both operands async too (B in the M / N-major xor stages)
    local stn, asyncn = stages("sm_90", false, 4096)
    assert.are.equal(3, stn)
    assert.are.equal("A,B", asyncn)
    assert.are.equal(0, (stages("sm_90", true, 64)))    -- 2 K steps: 2 stages at most: off
    assert.are.equal(0, (stages("gfx942", true, 4096))) -- not mma.sync
  end)

  it("cp-async-layout=krow: contiguous fills, conflict-free ldmatrix, no spills (static)", function()
    if G.sanitized("cp_async_spec: krow / xor at 4096^3") then return end
    local PA = require "ptx_addr"
    local function analyse(t, layout, bt, a_km)
      local g = G.dot(4096, 4096, 4096, "f16", a_km, bt)
      local pl = C.pipeline(3):gsub("cp%-async=3", "cp-async=3,cp-async-layout=" .. layout)
      -- the tiles of the heuristic before the async-tile rule (kl_accel_config_heuristic_async):
      -- sm_90 128x128x32, sm_80 128x128x64
      local perf = t == "sm_80" and "v2:128,128,64,64,64,8" or "v2:128,128,32,64,64,8"
      local p = kiln.compile(g, { target = t, cache = false, pipeline = pl, perf_config = perf })
      local k = p:kernels(t)[1]
      local ptx = p:disasm(k.name, t)
      local reqs, order, occ, dst = {}, {}, {}, {}
      local threads = {}
      for l = 0, 31 do threads[l] = true end
      -- the prologue and the first loop iterations of warp 0 (the cut-off is reported, not an error)
      PA.check(ptx, { params = { 1 << 25, 1 << 25, 1 << 25 }, grid = k.grid, block = k.block, blocks = { 0 },
        threads = threads, dynamic_shared = k.lds_bytes > 48 * 1024 and k.lds_bytes or 0, max_steps = 3000, limit = 64,
        trace = function(tid, inst, space, addr, bytes, what)
          if what == "cp.async destination" then dst[tid] = addr return end
          if what ~= "cp.async source" and what ~= "ldmatrix row" then return end
          local key = inst.text .. what
          occ[tid] = occ[tid] or {}
          occ[tid][key] = (occ[tid][key] or 0) + 1
          local rk = key .. occ[tid][key]
          if not reqs[rk] then reqs[rk] = { what = what, lanes = {} }; order[#order + 1] = rk end
          reqs[rk].lanes[#reqs[rk].lanes + 1] = { lane = tid, addr = addr, dst = dst[tid] }
        end })
      local pieces, ncp, worst_ldm, sectors, worst_cp = 0, 0, 0, 0, 0
      for _, rk in ipairs(order) do
        local r = reqs[rk]
        if r.what == "cp.async source" then
          local set, n, sec, ns, phases = {}, 0, {}, 0, {}
          for _, x in ipairs(r.lanes) do
            local key = (x.addr // 128) .. ":" .. (x.dst // 128)
            if not set[key] then set[key], n = true, n + 1 end
            for b = x.dst // 32, (x.dst + 15) // 32 do -- the LDS side's 32-byte sectors (16-byte copies)
              if not sec[b] then sec[b], ns = true, ns + 1 end
            end
            local ph = x.lane // 8 -- the destination's 128-byte phases: 8 lanes of 16 bytes
            phases[ph] = phases[ph] or {}
            phases[ph][x.dst // 16 % 8] = (phases[ph][x.dst // 16 % 8] or 0) + 1
          end
          for _, groups in pairs(phases) do for _, c in pairs(groups) do worst_cp = math.max(worst_cp, c) end end
          pieces, ncp, sectors = pieces + n, ncp + 1, sectors + ns
        else -- ldmatrix: each 8-lane phase (one 8x8 matrix) must cover 8 distinct 16-byte bank groups
          local phases = {}
          for _, x in ipairs(r.lanes) do
            local ph = x.lane // 8
            phases[ph] = phases[ph] or {}
            local grp = x.addr // 16 % 8
            phases[ph][grp] = (phases[ph][grp] or 0) + 1
          end
          for _, groups in pairs(phases) do for _, c in pairs(groups) do worst_ldm = math.max(worst_ldm, c) end end
        end
      end
      return k, pieces / ncp, worst_ldm, ptx, sectors / ncp, worst_cp
    end
    local function spills(t, ptx)
      local out = G.ptxas_v(t, ptx)
      return out:find("0 bytes spill stores, 0 bytes spill loads", 1, true) ~= nil, out
    end
    local has_ptxas = require("ptxas_tool")() ~= nil
    if not has_ptxas then print("cp_async_spec: ptxas not found, the spill checks are skipped") end
    for _, t in ipairs { "sm_90", "sm_80" } do
      local k, per, ldm, ptx, seck = analyse(t, "krow", true)
      assert.are.equal("ldmatrix", k.fragment_loads)
      assert.are.equal(3, k.pipeline_stages)
      local kb = tonumber(k.perf_config:match("^v2:%d+,%d+,(%d+)")) -- sm_90 32, sm_80 64
      assert.are.equal(3 * 2 * 128 * (kb + 8) * 2, k.lds_bytes) -- per stage 2 x 128 rows x (KB + 8) f16
      assert.are.equal(1, ldm, t .. " krow ldmatrix bank-group conflicts")
      local kg, perg, ldmg = analyse(t, "kgroup", true)
      assert.are.equal(kb == 32 and 56000 or 111360, kg.lds_bytes)
      assert.are.equal(32, perg, t .. " kgroup pieces per cp.async") -- every lane its own piece
      -- sm_90 (K tile 32: 64-byte rows at an 80-byte pitch): 11; sm_80 (K tile 64): 18
      assert.is_true(per <= (kb == 32 and 11 or 18), t .. " krow pieces per cp.async " .. per)
      assert.are.equal(1, ldmg)
      -- xor: [rows, 64 bytes] panels, 16-byte chunks XOR-swizzled by the row: each row's 64-byte
      -- segments fill whole LDS sectors (16 per 512-byte cp.async, krow 20), one piece per
      -- segment (8), every 128-byte phase of the copies and of ldmatrix on 8 distinct 16-byte slots
      local kx, perx, ldmx, ptxx, secx, cpx = analyse(t, "xor", true)
      assert.are.equal("xor:A,B", kx.async_lds_layout)
      assert.are.equal("ldmatrix", kx.fragment_loads)
      assert.are.equal(3, kx.pipeline_stages)
      -- K 32: [128 rows, 64 bytes]; K 64: two panels of [129 rows (one pad row), 64 bytes]
      assert.are.equal(3 * 2 * (kb == 32 and 128 * 64 or 2 * 129 * 64), kx.lds_bytes)
      assert.are.equal(1, ldmx, t .. " xor ldmatrix bank-group conflicts")
      assert.are.equal(1, cpx, t .. " xor cp.async destination bank-group conflicts")
      assert.are.equal(16, secx, t .. " xor LDS sectors per cp.async")
      assert.are.equal(8, perx, t .. " xor pieces per cp.async") -- a 64-byte row segment each
      assert.are.equal(kb == 32 and 20 or 24, seck, t .. " krow LDS sectors per cp.async")
      local ka = analyse(t, "krow", false) -- B row-major: A async (krow), B through registers (kgroup)
      assert.are.equal("A", ka.async_copy)
      assert.are.equal("ldmatrix", ka.fragment_loads)
      -- M / N-major operands (A stored [K, M], B stored [K, N]) in xor: the M / N-major stages (rows
      -- of K, 16-byte chunks of M / N swizzled by the row) read with ldmatrix.trans: every copy and
      -- ldmatrix phase on the 8 16-byte slots, whole sectors (16 per 512-byte cp.async), a 64-byte
      -- panel row per piece (8)
      for _, v in ipairs { { false, true }, { false, false } } do
        local km, perm_, ldmm, ptxm, secm, cpm = analyse(t, "xor", v[1], v[2])
        local what = t .. (v[2] and " A [K, M]" or "") .. " B [K, N] xor"
        assert.are.equal("xor:A,B", km.async_lds_layout, what)
        assert.are.equal("A,B", km.async_copy, what)
        assert.are.equal("ldmatrix", km.fragment_loads, what)
        assert.is_truthy(ptxm:find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 1, true), what)
        assert.are.equal(1, ldmm, what .. ": ldmatrix bank-group conflicts")
        assert.are.equal(1, cpm, what .. ": cp.async destination bank-group conflicts")
        assert.are.equal(16, secm, what .. ": LDS sectors per cp.async")
        assert.are.equal(8, perm_, what .. ": pieces per cp.async")
      end
      -- the GPU experiment's kernel (sm_90 tiles) has no spills; with krow the sm_80 tiles (K 64)
      -- and the seed conv at S = 3 spill 20-48 bytes at 255 registers (docs/ARCHITECTURE.md)
      if t == "sm_90" and has_ptxas then
        assert.is_true(spills(t, ptx))
        assert.is_true(spills(t, ptxx))
      end
    end
    local ok, err = pcall(kiln.compile, G.dot(8, 8, 8, "f32"), { target = "host", cache = false,
      pipeline = C.pipeline(2):gsub("cp%-async=2", "cp-async=2,cp-async-layout=rows") })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("cp-async-layout must be auto, xor, krow or kgroup, got rows", 1, true), tostring(err))
  end)

  it("xor: the async path's configs (auto, 128x128x32 / 128x256x32, the seed conv) have no spills (static)", function()
    if G.sanitized("cp_async_spec: xor spills at 4096^3 and the seed conv") then return end
    -- ptxas -v on sm_80 and sm_90: 128x128x32 at auto (-1: S = 3, 32 x 32 block tiles) and
    -- S = 3 / 4, 128x256x32 (8 warps) at S = 3 / 4 and auto, 256x128x32 at auto, the seed conv
    -- (512x2048x7x7 NHWC -> 512, + r, relu; 196 x 4 block tiles: S = 4) at auto with
    -- 128x128x32, and both at the default (auto, the heuristic's async tiles: 256x128x32, S = 3
    -- for the GEMM, 4 for the conv); every kernel both operands async in the xor layout, ldmatrix
    -- fragments, 0 spill bytes (sm_80's heuristic tiles, K 64, spill 72 bytes at S = 3)
    local ptxas = G.ptxas_v
    if not require("ptxas_tool")() then
      print("cp_async_spec: ptxas not found, the xor spill check is skipped")
      return
    end
    -- gemm: B stored [N, K]; gemm_kn: B stored [K, N] (the M / N-major xor stages, ldmatrix.trans);
    -- gemm_mn: A stored [K, M] too
    local function gemm() return G.dot(4096, 4096, 4096, "f16", false, true) end
    local function gemm_kn() return G.dot(4096, 4096, 4096, "f16") end
    local function gemm_mn() return G.dot(4096, 4096, 4096, "f16", true) end
    local conv = G.seed_conv
    for _, t in ipairs { "sm_80", "sm_90" } do
      for _, v in ipairs { { gemm, -1, "v2:128,128,32,64,64,8", 3 }, { gemm, 4, "v2:128,128,32,64,64,8", 4 },
                           { gemm, 3, "v2:128,256,32,64,64,8", 3 }, { gemm, 4, "v2:128,256,32,64,64,8", 4 },
                           { gemm, -1, "v2:256,128,32,64,64,8", 3 }, { conv, -1, "v2:128,128,32,64,64,8", 4 },
                           { gemm, -1, nil, 3, "v2:256,128,32,64,64,8" }, { conv, -1, nil, 4, "v2:256,128,32,64,64,8" },
                           { gemm_kn, -1, nil, 3, "v2:256,128,32,64,64,8" }, { gemm_mn, -1, nil, 3, "v2:256,128,32,64,64,8" },
                           { gemm_kn, 4, "v2:128,128,32,64,64,8", 4 }, { gemm_kn, 3, "v2:128,256,32,64,64,8", 3 } } do
        local p = kiln.compile(v[1](), { target = t, cache = false, pipeline = C.pipeline(v[2]), perf_config = v[3] })
        local k
        for _, x in ipairs(p:kernels(t)) do if x.kind == "gemm" then k = x end end
        local what = ("%s %s cp-async=%d"):format(t, v[3] or "heuristic", v[2])
        assert.are.equal(v[4], k.pipeline_stages, what)
        if v[5] then assert.are.equal(v[5], k.perf_config, what) end -- the heuristic's async tiles
        assert.are.equal("xor:A,B", k.async_lds_layout, what)
        assert.are.equal("ldmatrix", k.fragment_loads, what)
        local out = ptxas(t, p:disasm(k.name, t))
        assert.is_truthy(out:find("0 bytes spill stores, 0 bytes spill loads", 1, true), what .. "\n" .. out)
      end
    end
  end)

  it("is the default on sm_80 / sm_90 (mma.sync): cp.async + ldmatrix where both operands are K-major (static)", function()
    if G.sanitized("cp_async_spec: the default's kernels at 2048x2048x1024") then return end
    -- the default pipeline (KL_CP_ASYNC_DEFAULT = -1, auto): a GEMM with B stored [N, K], one with
    -- B stored [K, N] (the M / N-major xor stages, ldmatrix.trans), one with A stored [K, M] too,
    -- and an NHWC conv take cp.async (xor stages) and ldmatrix; with K = 1020 (A's rows: 8-byte
    -- vectors, not an async operand of the plan) auto keeps the register-staged loop
    -- (grids of more 128x128 tiles than SMs: few-block grids keep the plain heuristic's pick,
    -- whose K 64 tiles auto leaves unpipelined)
    for _, t in ipairs { "sm_80", "sm_90" } do
      for _, v in ipairs { { "gemm B^T", G.dot(2048, 2048, 1024, "f16", false, true), true },
                           { "conv NHWC 1x1", G.conv(32, 256, 128, 28), true },
                           { "gemm B [K, N]", G.dot(2048, 2048, 1024, "f16"), true, true },
                           { "gemm A [K, M] B [K, N]", G.dot(2048, 2048, 1024, "f16", true), true, true },
                           { "gemm K 1020", G.dot(2048, 2048, 1020, "f16"), false } } do
        local p = kiln.compile(v[2], { target = t, cache = false })
        local k
        for _, x in ipairs(p:kernels(t)) do if x.kind == "gemm" then k = x end end
        local ptx, what = p:disasm(k.name, t), t .. " " .. v[1] .. " " .. k.perf_config
        assert.is_truthy(ptx:find("ldmatrix", 1, true), what)
        if v[3] then
          assert.are.equal("A,B", k.async_copy, what)
          assert.are.equal("xor:A,B", k.async_lds_layout, what)
          assert.is_true(k.pipeline_stages >= 3, what)
          assert.is_truthy(ptx:find("cp.async.cg.shared.global", 1, true), what)
          assert.is_truthy(ptx:find("cp.async.wait_group", 1, true), what)
          assert.are.equal(v[4] or false, ptx:find("ldmatrix.sync.aligned.m8n8.x4.trans", 1, true) ~= nil, what)
        else
          assert.are.equal(0, k.pipeline_stages, what)
          assert.is_nil(ptx:find("cp.async", 1, true), what)
          -- and exactly the kernel of cp-async=1: the copy layouts are not ranked for xor
          -- stages that auto will not take (they were, and the register loop's B copies
          -- ran sm_90 4096^3 f16 at 208 TFLOP/s against 302 on an H100)
          local off = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
                                                   "rock-gridwise-to-blockwise{cp-async=1},", 1)
          local q = kiln.compile(v[2], { target = t, cache = false, pipeline = off, perf_config = k.perf_config })
          local kq
          for _, x in ipairs(q:kernels(t)) do if x.kind == "gemm" then kq = x end end
          assert.are.equal(q:disasm(kq.name, t), ptx, what .. ": the PTX of cp-async=1")
        end
      end
    end
  end)

  it("rejects cp-async outside -1..4 with the pass's message", function()
    local g = G.dot(8, 8, 8, "f32")
    for _, v in ipairs { "5", "-2" } do
      local ok, err = pcall(kiln.compile, g, { target = "host", cache = false, pipeline = C.pipeline(v) })
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find("cp-async must be -1 (auto), 0 or 1 (off) or 2..4 (stages), got " .. v, 1, true),
        tostring(err))
    end
  end)
end)
