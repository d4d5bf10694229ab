-- input_cvt_spec.lua — GEMMs whose operand is converted in the GEMM's loads (input fusion
-- of graph.convert f32 -> f16 / bf16, f16 scale prologues, the fp8 operand converts of
-- quant_dot and explicit fp8 -> f16 converts; spec/lua/input_cvt_cases.lua) at sizes that are
-- not tile multiples: one kernel each, every output against g:eval on fresh random inputs
-- (host); every fp8 code converted to f16 exactly (host: the shift / bits + multiply forms
-- of passes/lower_fp8.h); the code for the GPUs: sm_90 converts f8e4m3fn pairs with
-- cvt.rn.f16x2.e4m3x2 (PTX 7.8) and has no per-element f32 detour, sm_80 (PTX 7.0) does not
-- use it, ptxas (when on the machine) accepts both, and gfx942 kernels use no scratch.
-- The input-fusion cost rule (passes/input_fusion_cost.h) both ways on sm_90: the measured
-- gemm_cvt 4096^3 gets a convert kernel, conv_cvt N = 512 and small GEMMs stay fused; the
-- options force it either way; other targets and chains that read no more stay fused.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local C = require "input_cvt_cases"

local function find_ptxas()
  for _, p in ipairs { os.getenv("CUDA_HOME") and (os.getenv("CUDA_HOME") .. "/bin/ptxas") or nil,
                       "/usr/local/cuda/bin/ptxas" } do
    local f = io.open(p, "rb")
    if f then f:close(); return p end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h and h:read("l")
  if h then h:close() end
  return p ~= "" and p or nil
end
local ptxas = find_ptxas()
local function ptxas_log(ptx, arch)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(ptx)
  f:close()
  local h = io.popen(("%s -arch=%s -v -o %s.cubin %s 2>&1"):format(ptxas, arch, path, path))
  local log = h:read("a")
  local ok = h:close()
  os.remove(path .. ".cubin")
  os.remove(path)
  return ok, log
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

describe("input fusion of converts into GEMM loads", function()
  for _, c in ipairs(C.cases()) do
    it("host: " .. c.name, function()
      local ok, msg = C.run(c, { target = "host", cache = false })
      assert.is_true(ok, c.name .. ": " .. tostring(msg))
    end)
  end

  it("host: every fp8 code converts to f16 exactly (lengths 1..9 and 512)", function()
    for _, dt in ipairs(C.F8) do
      local vals = C.fp8_values(dt)
      for _, len in ipairs { 1, 2, 3, 4, 5, 6, 7, 8, 9, 512 } do
        local start = math.random(0, 255)
        local xs = {}
        for i = 0, len - 1 do xs[#xs + 1] = vals[(start + i) % 256 + 1] end
        local g = kiln.graph("f8_to_f16")
        g:output(g:param("x", { len }, dt):convert("f16"))
        local inputs = { x = kiln.tensor(xs, dt) }
        local got = kiln.compile(g, { target = "host", cache = false }):run(inputs)
        local ok, msg = C.exact(got, g:eval(inputs))
        assert.is_true(ok, dt .. " length " .. len .. ": " .. tostring(msg))
      end
    end
  end)

  it("sm_90 / sm_80: fp8 operands convert in pairs on sm_90 only; ptxas accepts both", function()
    for _, dt in ipairs { "f8e4m3fn", "f8e5m2" } do
      local g = kiln.graph("q")
      g:output(g:quant_dot(g:param("a", { 77, 333 }, dt), g:param("b", { 333, 130 }, dt)))
      local p = kiln.compile(g, { targets = { "sm_90", "sm_80" }, cache = false })
      for _, t in ipairs { "sm_90", "sm_80" } do
        local ks = p:kernels(t)
        assert.are.equal(1, #ks, t)
        local ptx = p:binary(ks[1].name, t)
        local pairs_cvt = count(ptx, "cvt%.rn%.f16x2%.e4m3x2")
        if dt == "f8e4m3fn" and t == "sm_90" then
          assert.is_true(pairs_cvt > 0, "sm_90 " .. dt .. ": no cvt.rn.f16x2.e4m3x2")
        else
          assert.are.equal(0, pairs_cvt, t .. " " .. dt)
        end
        -- no fp8 -> f32 -> f16 detour: the f16 values come without f32 subnormal products
        assert.are.equal(0, count(ptx, "cvt%.rn%.f32%.u32"), t .. " " .. dt .. ": fp8 through f32")
        if ptxas then
          local ok, log = ptxas_log(ptx, t)
          assert.is_truthy(ok and log:find("Used %d+ registers"), t .. " " .. dt .. " ptxas: " .. log)
        end
      end
    end
    if not ptxas then print("input_cvt_spec: ptxas not found: PTX not assembled") end
  end)

  it("gfx942: the fused-convert GEMMs compile without scratch", function()
    -- (scripts/test's sanitizer pass: every third case, gemm_graphs.sample)
    for _, c in ipairs(require("gemm_graphs").sample(C.cases(), "input_cvt_spec: gfx942 compiles", 3)) do
      local g = c.build()
      local p = kiln.compile(g, { target = "gfx942", cache = false })
      assert.are.equal(c.kernels_on and c.kernels_on.gfx942 or c.kernels, #p:kernels("gfx942"), c.name)
      for _, k in ipairs(p:kernels("gfx942")) do
        assert.are.equal(0, k.amdgpu.scratch_bytes, c.name .. ": scratch")
      end
    end
  end)
end)

describe("the input-fusion cost rule (passes/input_fusion_cost.h)", function()
  local function with(opt) return (kiln.default_pipeline():gsub("graph%-partition,", "graph-partition{" .. opt .. "},", 1)) end
  local function gemm_cvt(m, n, k, from)
    local g = kiln.graph("gemm_cvt")
    local a = g:param("a", { m, k }, from or "f32")
    g:output(g:dot(a:convert("f16"), g:param("b", { k, n }, "f16")))
    return g
  end
  local function conv_cvt(nb, c, h, w, k)
    local g = kiln.graph("conv_cvt")
    local x = g:param("x", { nb, c, h, w }, "f32", { layout = "NHWC" })
    local wt = g:param("w", { k, c, 1, 1 }, "f16", { layout = "KYXC" })
    g:output((g:conv(x:convert("f16"), wt) + g:param("r", { nb, k, h, w }, "f16", { layout = "NHWC" })):relu())
    return g
  end
  local function kinds(g, opts)
    opts.cache = false
    local t = {}
    for _, k in ipairs(kiln.compile(g, opts):kernels()) do t[#t + 1] = k.kind end
    return table.concat(t, ",")
  end

  it("sm_90 (mma.sync): gemm_cvt 4096^3 and conv_cvt N = 512 get a convert kernel; a small GEMM stays fused", function()
    assert.are.equal("elementwise,gemm", kinds(gemm_cvt(4096, 4096, 4096), { target = "sm_90" }))
    -- the convert walks NHWC x in memory order (6 bytes an element) against x re-read by 4 blocks
    assert.are.equal("elementwise,gemm", kinds(conv_cvt(512, 2048, 7, 7, 512), { target = "sm_90" }))
    assert.are.equal("gemm", kinds(gemm_cvt(1000, 515, 257), { target = "sm_90" }))
    -- one column block re-reads A once: fused (59.8k cycles against 93.7k); split-K: the GEMM
    -- with its fused convert, then the partials' sum
    assert.are.equal("gemm,elementwise", kinds(gemm_cvt(16384, 128, 2048), { target = "sm_90" }))
  end)

  it("sm_90a: a wgmma GEMM keeps its prologue fused (measured faster fused)", function()
    for _, g in ipairs { gemm_cvt(4096, 4096, 4096), conv_cvt(512, 2048, 7, 7, 512) } do
      assert.are.equal("gemm", kinds(g, { target = "sm_90a" }))
    end
  end)

  it("the options force it: input-fusion-cost=false fuses every prologue, input-fusion=false none", function()
    assert.are.equal("gemm", kinds(gemm_cvt(4096, 4096, 4096), { target = "sm_90", pipeline = with("input-fusion-cost=false") }))
    assert.are.equal("elementwise,gemm", kinds(conv_cvt(512, 2048, 7, 7, 512), { target = "sm_90", pipeline = with("input-fusion=false") }))
    -- the declined form is the unfused partition
    assert.are.equal(kinds(gemm_cvt(4096, 4096, 4096), { target = "sm_90", pipeline = with("input-fusion=false") }),
                     kinds(gemm_cvt(4096, 4096, 4096), { target = "sm_90" }))
  end)

  it("targets without measured rates, and chains that read no more than the operand, stay fused", function()
    for _, t in ipairs { "sm_80", "gfx942", "host" } do
      assert.are.equal("gemm", kinds(gemm_cvt(4096, 4096, 4096), { target = t }), t)
    end
    -- fp8 -> f16 (1 byte into 2) and an f16 scale (2 bytes into 2): free in the loads
    assert.are.equal("gemm", kinds(gemm_cvt(4096, 4096, 4096, "f8e4m3fn"), { target = "sm_90" }))
    local g = kiln.graph("gemm_scale")
    g:output(g:dot(g:param("a", { 4096, 4096 }, "f16") * g:param("s", { 1, 4096 }, "f16"), g:param("b", { 4096, 4096 }, "f16")))
    assert.are.equal("gemm", kinds(g, { target = "sm_90" }))
  end)

  it("KILN_DEBUG prints the decision with the rule's numbers", function()
    local path = helper.write_temp([[
local kiln = require "kiln"
local g = kiln.graph("gc")
g:output(g:dot(g:param("a", { 4096, 4096 }, "f32"):convert("f16"), g:param("b", { 4096, 4096 }, "f16")))
kiln.compile(g, { target = "sm_90", cache = false })
local h = kiln.graph("cc")
local xx = h:param("x", { 512, 2048, 7, 7 }, "f32", { layout = "NHWC" })
h:output(h:conv(xx:convert("f16"), h:param("w", { 512, 2048, 1, 1 }, "f16", { layout = "KYXC" })))
kiln.compile(h, { target = "sm_90", cache = false })
]], ".lua")
    local out, err, code = helper.run("KILN_DEBUG=fusion " .. helper.shell_quote(helper.kiln_bin()) .. " " .. helper.shell_quote(path))
    os.remove(path)
    assert.are.equal(0, code, out .. err)
    helper.has(err, "operand 0's graph.convert left as a kernel of its own (input fusion cost: 4.0 -> 2.0 bytes an " ..
      "element, read by 32 blocks: fused 956989 cycles, a kernel of its own 48859)")
    helper.has(err, "operand 0's graph.convert left as a kernel of its own (input fusion cost: 4.0 -> 2.0 bytes an " ..
      "element, read by 4 blocks: fused 366347 cycles, a kernel of its own 141380)")
  end)
end)
