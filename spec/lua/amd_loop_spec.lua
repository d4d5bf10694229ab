-- amd_loop_spec.lua — the AMDGPU K loop (passes/rock_gridwise_to_blockwise.c, amd_k_loop:
-- the next step's loads before the step's matrix instructions, consumed after the
-- back-edge; double-buffered LDS with one barrier per K step) and AMDGPU's bounds-masked
-- copies (passes/rock_lower_loops.c: 0 stored, then the load behind scf.if) run on the
-- host: rock-gridwise-to-blockwise{amd-k-loop=1|2} and
-- rock-lower-loops{host-copies=false masked-load-branch=true} force both on every GEMM of
-- cp_async_cases.lua (even K step counts, padded tiles, convs with padding, prologues,
-- f16 / bf16 / f32) and on odd K step counts; each must match g:eval on random inputs.
-- rock-gridwise-to-blockwise{amd-lds-layout=xor} puts the same cases' LDS tiles in the
-- unpadded xor layout (16-byte chunks of kpack 8 XOR-swizzled by the row: what the AMD
-- double-buffered loop takes for tiles whose skewed pair does not fit twice, e.g. gfx942's
-- 256x256x32) with kpack-8 host configs (K tiles of 16, 32 and 128: 1 and 4 panels), also
-- through the host's fused copies (lower_loops_host.c, which must see the XOR as non-linear:
-- it took the xor tiles' addresses as linear and got 64x64x16 wrong). On the kpack-1 host
-- configs, amd-lds-layout=xor gives the xor1 tiles of AMD's f32 MFMA and FMA-path GEMMs.
-- (On AMD targets the same code is checked statically by amd_suite_spec.lua. scripts/test's
-- sanitizer pass: every 5th case of cp_async_cases.lua, gemm_graphs.sample.)
local kiln = require "kiln"
local C = require "cp_async_cases"
local G = require "gemm_graphs"

local function pipeline(loop, lds, host_lowering)
  local p, n = kiln.default_pipeline():gsub("rock%-gridwise%-to%-blockwise[^,]*,",
    "rock-gridwise-to-blockwise{amd-k-loop=" .. loop .. (lds and (" amd-lds-layout=" .. lds) or "") .. "},", 1)
  if host_lowering then return p end -- the host's own copies (lower_loops_host.c) and loads
  local q, m = p:gsub("rock%-lower%-loops[^,]*,", "rock-lower-loops{host-copies=false masked-load-branch=true},", 1)
  assert(n == 1 and m == 1, "the default pipeline has rock-gridwise-to-blockwise and rock-lower-loops")
  return q
end

local function odd_cases()
  local L = {}
  for _, c in ipairs { { 33, 20, 17, "f32", "v1:16,16,8,16,16,1" }, { 45, 37, 40, "f16", "v1:32,32,8,32,32,1" },
    { 24, 70, 56, "bf16", "v1:32,64,8,32,64,1" } } do
    local m, n, k, dt = c[1], c[2], c[3], c[4]
    local g = G.dot(m, n, k, dt)
    L[#L + 1] = { name = ("%s %dx%dx%d (odd K steps)"):format(dt, m, n, k), g = g, dtype = dt, host_perf = c[5],
      inputs = { a = kiln.rand({ m, k }, dt, { seed = m + 11 }), b = kiln.rand({ k, n }, dt, { seed = n + 13 }) } }
  end
  return L
end

describe("AMDGPU K loop and bounds-masked copies on the host", function()
  local cases = G.sample(C.cases(), "amd_loop_spec: cp_async_cases") -- and the odd K step counts:
  for _, c in ipairs(odd_cases()) do cases[#cases + 1] = c end
  for _, loop in ipairs { 1, 2 } do
    for _, c in ipairs(cases) do
      it(("amd-k-loop=%d %s"):format(loop, c.name), function()
        local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = pipeline(loop), perf_config = c.host_perf })
        assert.is_true(C.run_check(p, c))
      end)
    end
  end

  -- the xor LDS layout: each host config with kpack 8 (K tile 8 -> 16: at least two chunks)
  local function kpack8(perf)
    local mb, nb, kb, mt, nt = perf:match("^v1:(%d+),(%d+),(%d+),(%d+),(%d+),1$")
    kb = math.max(16, tonumber(kb))
    if tonumber(mb) == 32 and tonumber(nb) == 32 and kb == 16 then kb = 32 end -- one 64-byte panel
    return ("v1:%s,%s,%d,%s,%s,8"):format(mb, nb, kb, mt, nt)
  end
  for _, v in ipairs { { 1 }, { 2 }, { 2, true } } do
    local loop = v[1]
    for _, c in ipairs(cases) do
      it(("amd-lds-layout=xor amd-k-loop=%d%s %s"):format(loop, v[2] and " (host copies)" or "", c.name), function()
        local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = pipeline(loop, "xor", v[2]),
                                      perf_config = kpack8(c.host_perf) })
        assert.is_truthy(p:ir("rock-gridwise-to-blockwise"):find('amd_lds_layout = "xor"', 1, true))
        assert.is_true(C.run_check(p, c))
      end)
    end
  end

  -- kpack-1 tiles under xor: the xor1 tiles (each K row's granules XOR'd inside its 128
  -- bytes: what AMD's f32 MFMA and FMA-path tiles take), the host configs as they are
  for _, v in ipairs { { 1 }, { 2, true } } do
    for _, c in ipairs(cases) do
      it(("amd-lds-layout=xor (kpack 1: xor1) amd-k-loop=%d%s %s"):format(v[1], v[2] and " (host copies)" or "",
        c.name), function()
        local p = kiln.compile(c.g, { target = "host", cache = false, pipeline = pipeline(v[1], "xor", v[2]),
                                      perf_config = c.host_perf })
        if c.host_perf and c.host_perf:match(",1$") then
          assert.is_truthy(p:ir("rock-gridwise-to-blockwise"):find('amd_lds_layout = "xor1"', 1, true))
        end
        assert.is_true(C.run_check(p, c))
      end)
    end
  end

  it("amd-lds-layout=xor on a tile it cannot describe, and a bad value, are errors", function()
    local c = odd_cases()[1]
    local ok, err = pcall(kiln.compile, c.g, { target = "host", cache = false, pipeline = pipeline(2, "xor"),
                                               perf_config = "v1:16,16,12,16,16,4" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("amd-lds-layout=xor needs kpack > 1", 1, true), tostring(err))
    ok, err = pcall(kiln.compile, c.g, { target = "host", cache = false, pipeline = pipeline(2, "rows") })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("amd-lds-layout must be auto, skew or xor, got rows", 1, true), tostring(err))
  end)

  it("the forms are used: two tile pairs, loads under scf.if", function()
    local c = odd_cases()[1]
    local p1 = kiln.compile(c.g, { target = "host", cache = false, pipeline = pipeline(1), perf_config = c.host_perf })
    local p2 = kiln.compile(c.g, { target = "host", cache = false, pipeline = pipeline(2), perf_config = c.host_perf })
    local function n(ir, pat) local k = 0 for _ in ir:gmatch(pat) do k = k + 1 end return k end
    local b1, b2 = p1:ir("rock-gridwise-to-blockwise"), p2:ir("rock-gridwise-to-blockwise")
    assert.are.equal(1, n(b1, "rock%.blockwise_gemm"))
    assert.are.equal(3, n(b2, "rock%.blockwise_gemm")) -- two in the loop, the odd step after it
    local ll = p1:ir("rock-lower-loops")
    assert.is_truthy(ll:find("scf%.if[^\n]*\n[^\n]*rock%.load"), "a load under scf.if")
  end)

  it("rejects amd-k-loop outside 0..2", function()
    local c = odd_cases()[1]
    local ok, err = pcall(kiln.compile, c.g, { target = "host", cache = false, pipeline = pipeline(3) })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("amd-k-loop must be 0, 1 or 2", 1, true))
  end)
end)
