-- input_cvt_spec.lua — GEMMs whose operand is converted in the GEMM's loads (input fusion
-- of graph.convert f32 -> f16 / bf16, f16 scale prologues, the fp8 operand converts of
-- quant_dot and explicit fp8 -> f16 converts; spec/lua/input_cvt_cases.lua) at sizes that are
-- not tile multiples: one kernel each, every output against g:eval on fresh random inputs
-- (host); every fp8 code converted to f16 exactly (host: the shift / bits + multiply forms
-- of passes/lower_fp8.h); the code for the GPUs: sm_90 converts f8e4m3fn pairs with
-- cvt.rn.f16x2.e4m3x2 (PTX 7.8) and has no per-element f32 detour, sm_80 (PTX 7.0) does not
-- use it, ptxas (when on the machine) accepts both, and gfx942 kernels use no scratch.
local kiln = require "kiln"
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
    for _, c in ipairs(C.cases()) do
      local g = c.build()
      local p = kiln.compile(g, { target = "gfx942", cache = false })
      assert.are.equal(c.kernels, #p:kernels("gfx942"), c.name)
      for _, k in ipairs(p:kernels("gfx942")) do
        assert.are.equal(0, k.amdgpu.scratch_bytes, c.name .. ": scratch")
      end
    end
  end)
end)
