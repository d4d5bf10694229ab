-- elementwise_pairs_spec.lua — every pair of element-wise ops (unary∘unary, unary∘binary and
-- binary∘unary with a constant) in f32, f16 and bf16, compiled for the host and compared with
-- the float64 reference evaluator on fresh random inputs plus NaN, ±0, ±inf and negatives;
-- also abs∘relu/clip/max in conv and dot epilogues and after a convert from f16/bf16.
-- The pairs, the inputs, the packing and the compare rule (bit for bit for a pair of exact
-- ops, the stated bound for the others) are spec/lua/elementwise_pairs_cases.lua, shared with
-- elementwise_pairs_gpu_spec.lua and scripts/gpu_suite.lua.
-- The host sweep packs 16 pairs into one kernel (where() with one-hot row masks). The pairs
-- f(abs(x)) and the epilogue / convert graphs are compiled for sm_90 and gfx942 too, and the
-- emitted code is checked for the miscompile of LLVM 19.1's InstCombine (fcmp on the fabs
-- operand, upstream PR 152913): f(|x|) is even in x, so no less/greater compare (float or
-- integer, ordered or not) may read the value abs was applied to; ==/!= 0 and NaN tests of
-- it are sign-blind and fine (ptx_sign_uses, amd_sign_uses).
local kiln = require "kiln"

local cases = require "elementwise_pairs_cases"

local DTYPES, UNARY, PAIRS, N = cases.DTYPES, cases.UNARY, cases.PAIRS, cases.N
local inputs, check = cases.inputs, cases.check

-- One kernel per case (for the emitted-code check): cases {name, build, exact}.
local function single_graph(dt, cases)
  local g = kiln.graph("pairs_" .. dt)
  local x = g:param("x", { N }, dt)
  local outs = {}
  for i, c in ipairs(cases) do outs[i] = c[2](x) end
  g:output(table.unpack(outs))
  return g
end

-- ---- the emitted-code check (sm_90 PTX, gfx942 ISA) ----

-- The check flags an ordered compare (lt gt le ge and their unordered negations) that reads
-- a pre-abs value; sign-blind compares (==, != 0, NaN tests) and arithmetic are fine.
local ORDERED = { lt = true, gt = true, le = true, ge = true, ltu = true, gtu = true, leu = true, geu = true,
                  nlt = true, ngt = true, nle = true, nge = true }

-- PTX (virtual registers, one def each): the pre-abs values are the registers read by abs.*
-- (or by and with the sign mask), and through exact copies and widening converts the ones
-- they came from — except a broadcast scalar loaded from a kernel argument's address as is
-- (the operand of max/min with a constant, whose sign the order key tests on purpose).
local function ptx_sign_uses(ptx)
  local lines, def = {}, {}
  for l in ptx:gmatch("[^\n]+") do
    local op, rest = l:match("^%s*([%a_][%w%._]*)%s+(.-);")
    if op then
      local regs = {}
      for r in rest:gmatch("%%[%a]+%d+") do regs[#regs + 1] = r end
      lines[#lines + 1] = { op = op, rest = rest, regs = regs, text = l }
      if regs[1] then def[regs[1]] = #lines end
    end
  end
  local function copy(d) return d.op:match("^mov%.b") or d.op:match("^cvt%.f32%.f16") or d.op:match("^cvt%.f32%.bf16") end
  local function broadcast(r)
    local d = def[r] and lines[def[r]]
    while d and copy(d) and d.regs[2] do d = def[d.regs[2]] and lines[def[d.regs[2]]] end
    local addr = d and d.op:match("^ld%.") and d.rest:match("%[(%%rd%d+)%]")
    local ad = addr and def[addr] and lines[def[addr]]
    return ad ~= nil and ad.op:match("^ld%.param") ~= nil
  end
  local raw, work = {}, {}
  local function mark(r) if r and not raw[r] and not broadcast(r) then raw[r] = true; work[#work + 1] = r end end
  for _, ins in ipairs(lines) do
    if ins.op:match("^abs%.") then mark(ins.regs[2]) end
    if ins.op:match("^and%.b32") and ins.rest:find("2147483647", 1, true) then mark(ins.regs[2]) end
    if ins.op:match("^and%.b16") and ins.rest:lower():find("0x7fff", 1, true) then mark(ins.regs[2]) end
  end
  while #work > 0 do
    local d = def[table.remove(work)]
    d = d and lines[d]
    if d and copy(d) then mark(d.regs[2]) end
  end
  local bad = {}
  for _, ins in ipairs(lines) do
    local cmp = ins.op:match("^setp%.(%a+)%.")
    if cmp and ORDERED[cmp] then
      for k = 2, #ins.regs do if raw[ins.regs[k]] then bad[#bad + 1] = ins.text; break end end
    end
  end
  return bad
end

-- gfx942 (registers reused): def-use of VGPRs in program order (element-wise kernels are
-- straight-line). A value read as |vN| (or by v_and_b32 with 0x7fffffff) is a pre-abs value,
-- and so is the source of the exact copy / widening that made it; an ordered v_cmp reading it
-- is the miscompile (`v_cmp_nge_f32 vcc, 0, v2` next to `v_cndmask_b32 v2, 0, |v2|, vcc`);
-- a broadcast scalar (the constant of max/min, whose sign the order key tests) and a value
-- that is already an abs (|v| on it again is a free modifier) are not.
local function vregs(s)
  local t = {}
  for a, b in s:gmatch("v%[(%d+):(%d+)%]") do for i = tonumber(a), tonumber(b) do t[#t + 1] = i end end
  for a in s:gsub("v%[%d+:%d+%]", ""):gmatch("%f[%w]v(%d+)") do t[#t + 1] = tonumber(a) end
  return t
end
local function amd_sign_uses(asm)
  local ins = {}
  for l in asm:gmatch("[^\n]+") do
    local op, rest = l:match("^%s*([a-z][%w_]+)%s*(.*)$")
    if op and (op:match("^v_") or op:match("^global_") or op:match("^buffer_") or op:match("^flat_")) then
      local dst, srcs = rest:match("^([^,]*),(.*)$")
      dst, srcs = dst or rest, srcs or ""
      local store, cmp = op:match("_store") ~= nil, op:match("^v_cmp") ~= nil
      ins[#ins + 1] = { op = op, text = l, writes = (store or cmp) and {} or vregs(dst),
                        reads = store and vregs(rest) or vregs(srcs), srcs = store and rest or srcs }
    end
  end
  local last = {}
  for i, x in ipairs(ins) do
    x.from = {}
    for _, r in ipairs(x.reads) do x.from[r] = last[r] or 0 end
    for _, r in ipairs(x.writes) do last[r] = i end
  end
  -- a broadcast scalar: loaded from a kernel argument (saddr) at voffset 0
  local function broadcast(x)
    if not (x and x.op:match("^global_load") and x.srcs:find("s%[")) then return false end
    local off = ins[x.from[x.reads[1]] or 0]
    return off ~= nil and off.op:match("^v_mov_b32") ~= nil and off.srcs:match("^%s*0%s*$") ~= nil
  end
  -- a value that is an abs already: |v| into a copy / widening, or an and (the sign mask,
  -- maybe from an SGPR or into the high half: bf16 -> f32)
  local function is_abs(x)
    return x ~= nil and ((x.srcs:find("|v", 1, true) and (x.op:match("^v_mov_b32") or x.op:match("^v_cvt_f32_b?f16"))) or
                         x.op:match("^v_and_b32")) ~= nil
  end
  local raw = {}
  local function mark(d, r)
    local k = d .. ":" .. r
    if raw[k] or broadcast(ins[d]) or is_abs(ins[d]) then return end
    raw[k] = true
    local x = ins[d]
    if x and (x.op:match("^v_mov_b32") or x.op:match("^v_cvt_f32_f16") or x.op:match("^v_cvt_f32_bf16")) and x.reads[1] then
      mark(x.from[x.reads[1]], x.reads[1])
    end
  end
  for _, x in ipairs(ins) do
    for r in x.srcs:gmatch("|v(%d+)|") do mark(x.from[tonumber(r)], tonumber(r)) end
    if x.op:match("^v_and_b32") and x.srcs:find("0x7fffffff", 1, true) then
      for _, r in ipairs(x.reads) do mark(x.from[r], r) end
    end
  end
  local bad = {}
  for _, x in ipairs(ins) do
    local cmp = x.op:match("^v_cmp_(%a+)_")
    if cmp and ORDERED[cmp] then
      for _, r in ipairs(x.reads) do
        if raw[x.from[r] .. ":" .. r] and not x.srcs:find("|v" .. r .. "|", 1, true) then bad[#bad + 1] = x.text; break end
      end
    end
  end
  return bad
end

local GPU = { "sm_90", "gfx942" }
local function assert_sign_blind(p, what)
  for _, t in ipairs(GPU) do
    for _, k in ipairs(p:kernels(t)) do
      local code = p:disasm(k.name, t)
      local bad = t == "sm_90" and ptx_sign_uses(code) or amd_sign_uses(code)
      assert(#bad == 0, string.format("%s %s (%s): the pre-abs value's sign is tested:\n%s\n--- code:\n%s", what, k.name, t,
                                      table.concat(bad, "\n"), code))
    end
  end
end

-- abs followed by the ops that compare (relu, max/min with a constant, clip), as epilogues
-- of a conv and a dot and after a convert (from f16/bf16 to f32, and back).
local function epilogue_graphs(dt)
  local list = {}
  local tails = {
    { "relu", function(y) return y:abs():relu() end },
    { "max0", function(y) return y:abs():max(0) end },
    { "clip", function(y) return y:abs():clip(0, 1.5) end },
  }
  for _, t in ipairs(tails) do
    local g = kiln.graph("conv_" .. t[1])
    local x, w = g:param("x", { 1, 4, 5, 5 }, dt), g:param("w", { 8, 4, 3, 3 }, dt)
    g:output(t[2](g:conv(x, w, { padding = 1 })))
    list[#list + 1] = { "conv " .. t[1], g, { x = kiln.rand({ 1, 4, 5, 5 }, dt, { dist = "normal" }), w = kiln.rand({ 8, 4, 3, 3 }, dt, { dist = "normal" }) } }
    g = kiln.graph("dot_" .. t[1])
    local a, b = g:param("a", { 9, 16 }, dt), g:param("b", { 16, 12 }, dt)
    g:output(t[2](g:dot(a, b)))
    list[#list + 1] = { "dot " .. t[1], g, { a = kiln.rand({ 9, 16 }, dt, { dist = "normal" }), b = kiln.rand({ 16, 12 }, dt, { dist = "normal" }) } }
    if dt ~= "f32" then
      g = kiln.graph("cvt_" .. t[1])
      local h = g:param("h", { N }, dt)
      g:output(t[2](h:convert("f32")), t[2](h:convert("f32")):convert(dt))
      list[#list + 1] = { "convert " .. t[1], g, { h = inputs(dt) }, true }
    end
  end
  return list
end

describe("element-wise op pairs against the reference", function()
  for _, dt in ipairs(DTYPES) do
    it(dt .. ": " .. #PAIRS .. " pairs on the host", function()
      local r = cases.sweep(dt, "host")
      assert.are.equal(r.want_kernels, r.kernels)
      assert.are.equal(#PAIRS, r.pairs)
      assert(#r.bad == 0, #r.bad .. " pairs differ from the reference:\n" .. table.concat(r.bad, "\n"))
    end)

    it(dt .. ": abs then relu/max/clip in conv and dot epilogues and after a convert, on the host", function()
      for _, e in ipairs(epilogue_graphs(dt)) do
        local name, g, ins, exact = e[1], e[2], e[3], e[4]
        local p = kiln.compile(g, { target = "host", cache = false })
        local got, want = { p:run(ins) }, { g:eval(ins) }
        for i = 1, #want do
          if exact then
            local msg = check(dt, name, true, ins.h:flat(), got[i]:flat(), want[i]:flat(), 1)
            assert(not msg, msg)
          else
            local scale = 0
            for _, v in ipairs(want[i]:flat()) do scale = math.max(scale, math.abs(v)) end
            local tol = dt == "f32" and 1e-5 or 1e-2
            local ok, rep = kiln.allclose(got[i], want[i], { rtol = tol, atol = tol * scale })
            assert(ok, dt .. " " .. name .. ": " .. tostring(rep and rep.summary))
          end
        end
      end
    end)

    it(dt .. ": sm_90 and gfx942 code of f(abs(x)) never tests the sign of x", function()
      local cases = {}
      for _, c in ipairs(PAIRS) do if c[1]:match("%(abs%)$") then cases[#cases + 1] = c end end
      assert.is_true(#cases >= #UNARY)
      assert_sign_blind(kiln.compile(single_graph(dt, cases), { targets = GPU, cache = false }), dt .. " pairs")
      for _, e in ipairs(epilogue_graphs(dt)) do
        assert_sign_blind(kiln.compile(e[2], { targets = GPU, cache = false }), dt .. " " .. e[1])
      end
    end)
  end

  it("the code check sees the miscompiled shapes (PTX and gfx942 ISA of LLVM 19.1.7)", function()
    local ptx = [[
	ld.global.nc.f32 	%f1, [%rd7];
	abs.f32 	%f2, %f1;
	setp.gtu.f32 	%p2, %f1, 0f00000000;
	selp.f32 	%f3, %f2, 0f00000000, %p2;
	st.global.f32 	[%rd8], %f3;]]
    assert.are.equal(1, #ptx_sign_uses(ptx))
    assert.are.equal(0, #ptx_sign_uses((ptx:gsub("setp%.gtu", "setp.neu"))))
    local asm = [[
	global_load_dword v2, v[2:3], off
	v_cmp_nge_f32_e32 vcc, 0, v2
	v_cndmask_b32_e64 v2, 0, |v2|, vcc
	global_store_dword v[0:1], v2, off]]
    assert.are.equal(1, #amd_sign_uses(asm))
    assert.are.equal(0, #amd_sign_uses((asm:gsub("v_cmp_nge", "v_cmp_neq"))))
  end)
end)
