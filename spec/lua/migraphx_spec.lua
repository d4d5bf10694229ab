-- migraphx_spec.lua — the MIGraphX-dialect front end: the corpus of spec/migraphx/*.mlir
-- through `kiln migraphx --verify` on the host (every function PASS against the reference
-- evaluator on random inputs, with the kernel counts the files' KERNELS lines give), the
-- malformed inputs of spec/migraphx/bad/ (each file's ERROR line is the located message),
-- the Lua API (kiln.migraphx, g:params with strides), literal parsing checked on ones
-- inputs, --print-results, and `kiln conv-config`.
local helper = require "spec.lua.helper"
local kiln = require "kiln"
local q = helper.shell_quote

local bin = helper.kiln_bin()
local dir = helper.root .. "/spec/migraphx/"
local function kiln_run(args) return helper.run(q(bin) .. " " .. args) end
local read = helper.read_file
local function list(pattern)
  local p = io.popen("ls " .. pattern .. " 2>/dev/null")
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

describe("kiln migraphx: the corpus on the host", function()
  local files = list(dir .. "*.mlir")
  it("has the corpus", function() assert.truthy(#files >= 6) end)
  for _, path in ipairs(files) do
    local name = path:match("[^/]+$")
    it(name .. " verifies with the expected kernel counts", function()
      local want = {}
      local n = 0
      for fn, k in read(path):match("// KERNELS:([^\n]*)"):gmatch("([%w_]+)=(%d+)") do
        want[fn] = tonumber(k)
        n = n + 1
      end
      assert.truthy(n > 0, "no KERNELS line")
      local out, err, code = kiln_run("migraphx " .. q(path) .. " --verify --target host --rand seed=7")
      assert.are.equal(0, code, out .. err)
      local seen = 0
      for line in out:gmatch("[^\n]+") do
        local fn, k = line:match("^([%w_]+): PASS %(kernels=(%d+), max_rel=")
        assert.truthy(fn, line)
        assert.are.equal(want[fn], tonumber(k), line)
        seen = seen + 1
      end
      assert.are.equal(n, seen, out)
    end)
  end
end)

describe("kiln migraphx: the corpus's per-target kernel counts", function()
  -- a "// KERNELS ON <arch>: f=n" line gives a target's own count where its plan differs
  -- (split-K): compiled here for that target (no device needed), the GPU suite runs it
  for _, path in ipairs(list(dir .. "*.mlir")) do
    local text = read(path)
    for arch, rest in text:gmatch("// KERNELS ON ([%w_]+):([^\n]*)") do
      it(path:match("[^/]+$") .. " on " .. arch, function()
        local graphs = {}
        for _, g in ipairs(kiln.migraphx(text, path)) do graphs[g.name] = g end
        for fn, k in rest:gmatch("([%w_]+)=(%d+)") do
          assert.truthy(graphs[fn], fn)
          local p = kiln.compile(graphs[fn], { target = arch, cache = false })
          assert.are.equal(tonumber(k), #p:kernels(), fn .. " on " .. arch)
        end
      end)
    end
  end
end)

describe("kiln migraphx: malformed inputs", function()
  for _, path in ipairs(list(dir .. "bad/*.mlir")) do
    local name = path:match("[^/]+$")
    it(name .. " gives its located error", function()
      local want = read(path):match("^// ERROR: ([^\n]*)")
      assert.truthy(want, "no ERROR line")
      local out, err, code = kiln_run("migraphx " .. q(path) .. " --verify --target host")
      assert.are.equal(1, code, out .. err)
      helper.has(err, path .. ":" .. want)
      assert.falsy(err:find("stack traceback", 1, true), err)
    end)
  end
  it("--func builds only that function; a whole test file builds the kernels its harness launches", function()
    local path = helper.write_temp([[
module {
  func.func private @k(%a: !migraphx.shaped<2x3xf32, 3x1> {mhal.read_access}) -> (!migraphx.shaped<2x3xf32, 3x1> {mhal.write_access}) {
    %0 = migraphx.exp %a : <2x3xf32, 3x1> -> <2x3xf32, 3x1>
    return %0 : !migraphx.shaped<2x3xf32, 3x1>
  }
  func.func @k_wrapper(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {
    %token, %results = mhal.launch @k (%a) : (!migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1>
    mhal.await %token : !mhal.token
    return %results : !migraphx.shaped<2x3xf32, 3x1>
  }
  module @inner attributes {mhal.module} {
    func.func private @k(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> attributes {kernel} {
      %0 = migraphx.exp %a : <2x3xf32, 3x1> -> <2x3xf32, 3x1>
      return %0 : !migraphx.shaped<2x3xf32, 3x1>
    }
  }
}]], ".mlir")
    local out, err, code = kiln_run("migraphx " .. q(path) .. " --func k --verify --target host")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:match("^k: PASS %(kernels=1, "), out)
    out, err, code = kiln_run("migraphx " .. q(path) .. " --verify --target host")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:match("^k: PASS %(kernels=1, "), out)
    assert.falsy(out:find("k_wrapper", 1, true), out)
    -- an mhal op in a function no harness launches from is still an error
    local bad = helper.write_temp([[
func.func @f(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {
  mhal.await %a : !mhal.token
  return %a : !migraphx.shaped<2xf32, 1>
}]], ".mlir")
    _, err, code = kiln_run("migraphx " .. q(bad) .. " --verify --target host")
    assert.are.equal(1, code)
    helper.has(err, ":2:3: error: mhal.await is not supported")
  end)
  it("reports usage errors", function()
    local _, err, code = kiln_run("migraphx")
    assert.are.equal(2, code)
    helper.has(err, "no input file")
    _, err, code = kiln_run("migraphx x.mlir --bogus")
    assert.are.equal(2, code)
    helper.has(err, "unknown option '--bogus'")
    _, err, code = kiln_run("migraphx " .. q(dir .. "views.mlir") .. " --func nope")
    assert.are.equal(1, code)
    helper.has(err, "no function @nope")
  end)
end)

describe("kiln.migraphx from Lua", function()
  it("returns one graph per function, by position and by name", function()
    local gs = kiln.migraphx_file(dir .. "views.mlir")
    assert.are.equal(5, #gs)
    assert.are.equal("transpose_reshape", gs[1].name)
    assert.are.equal(gs[3], gs.sliced_arg)
  end)
  it("g:params gives what each input must be: a sliced buffer, a layout, a broadcast source", function()
    local gs = kiln.migraphx_file(dir .. "views.mlir")
    local p = gs.sliced_arg:params()[1]
    assert.are.same({ 4, 10 }, p.shape) -- the whole 4x10 buffer; the graph slices 4x6 from it
    assert.are.same({ 10, 1 }, p.strides)
    assert.are.equal("f32", p.dtype)
    p = gs.colmajor_arg:params()[1]
    assert.are.same({ 3, 7 }, p.shape)
    assert.are.same({ 1, 3 }, p.strides)
    local c = kiln.migraphx_file(dir .. "conv_bias_relu_nhwc.mlir")[1]:params()
    assert.are.same({ 1, 2048, 7, 7 }, c[1].shape)
    assert.are.same({ 100352, 1, 14336, 2048 }, c[1].strides)
    assert.are.same({ 1, 512, 1, 1 }, c[3].shape) -- stride-0 dims: a broadcast of a 512-vector
    assert.are.equal("f16", c[3].dtype)
  end)
  it("reads literals (nested lists, hex floats, hex blobs, splats) exactly", function()
    local g = kiln.migraphx_file(dir .. "elementwise_literals.mlir").literals
    local x = kiln.rand({ 2, 3 }, "f32")
    local out = g:eval { x = x }
    -- x * [[3, -2.5, 0.1], [4, 0.25, -1]] + [[1, -2, 3], [0, -1, 0.5]] - 3
    local c = { { 3, -2.5, 0.1 }, { 4, 0.25, -1 } }
    local h = { { 1, -2, 3 }, { 0, -1, 0.5 } }
    for i = 1, 2 do
      for j = 1, 3 do
        local xv = x:get { i - 1, j - 1 }
        local want = xv * c[i][j] + h[i][j] - 3
        assert.is_true(math.abs(out:get { i - 1, j - 1 } - want) < 1e-5, ("%d,%d"):format(i, j))
      end
    end
  end)
  it("reads hex integers in float literals as bit patterns, as MLIR does", function()
    local g = kiln.migraphx([[
func.func @f(%x: !migraphx.shaped<3xf16, 1>) -> !migraphx.shaped<3xf16, 1> {
  %c = migraphx.literal(dense<[0x3C00, 0xC000, 0xFC00]> : tensor<3xf16>) : <3xf16, 1>
  %0 = migraphx.add %x, %c : <3xf16, 1>, <3xf16, 1> -> <3xf16, 1>
  return %0 : !migraphx.shaped<3xf16, 1>
}]])[1]
    local out = g:eval { x = kiln.tensor({ 0.5, 4, 1 }, "f16") }
    assert.are.same({ 1.5, 2, -math.huge }, out:flat())
  end)
  it("maps recip and clip onto graph ops with their semantics", function()
    local gs = kiln.migraphx([[
func.func @r(%x: !migraphx.shaped<5xf32, 1>, %lo: !migraphx.shaped<5xf32, 1>, %hi: !migraphx.shaped<5xf32, 1>) -> (!migraphx.shaped<5xf32, 1>, !migraphx.shaped<5xf32, 1>) {
  %0 = migraphx.recip %x : <5xf32, 1> -> <5xf32, 1>
  %1 = migraphx.clip %x, %lo, %hi : <5xf32, 1>, <5xf32, 1>, <5xf32, 1> -> <5xf32, 1>
  return %0, %1 : !migraphx.shaped<5xf32, 1>, !migraphx.shaped<5xf32, 1>
}]], "inline.mlir")
    local x = kiln.tensor({ 2, -4, 0.5, 8, -1 }, "f32")
    local lo = kiln.tensor({ 0, 0, 0, 0, -3 }, "f32")
    local hi = kiln.tensor({ 1, 1, 1, 5, -2 }, "f32")
    local r, c = gs.r:eval { x = x, lo = lo, hi = hi }
    assert.are.same({ 0.5, -0.25, 2, 0.125, -1 }, r:flat())
    assert.are.same({ 1, 0, 0.5, 5, -2 }, c:flat())
    local e = helper.fails(kiln.migraphx, "func.func @s(%x: !migraphx.shaped<2x3xf32, 7x2>) -> !migraphx.shaped<2x3xf32, 3x1> {", "strided.mlir")
    helper.has(e, "strided.mlir:1:18: error: argument %x: stride 7 of dimension 0 is not a multiple of stride 2 of dimension 1")
  end)
  it("quantizelinear: fp8 saturates x / scale (+ zp) and converts (no integer rounding); an integer x is converted", function()
    local gs = kiln.migraphx([[
func.func @q(%x: !migraphx.shaped<5xf32, 1>, %s: !migraphx.shaped<5xf32, 1>) -> !migraphx.shaped<5xf8E4M3FN, 1> {
  %0 = migraphx.quantizelinear %x, %s : <5xf32, 1>, <5xf32, 1> -> <5xf8E4M3FN, 1>
  return %0 : !migraphx.shaped<5xf8E4M3FN, 1>
}
func.func @z(%x: !migraphx.shaped<5xf32, 1>, %s: !migraphx.shaped<5xf32, 1>, %z: !migraphx.shaped<5xf8E5M2, 1>) -> !migraphx.shaped<5xf8E5M2, 1> {
  %0 = migraphx.quantizelinear %x, %s, %z : <5xf32, 1>, <5xf32, 1>, !migraphx.shaped<5xf8E5M2, 1> -> <5xf8E5M2, 1>
  return %0 : !migraphx.shaped<5xf8E5M2, 1>
}
func.func @i(%x: !migraphx.shaped<5xi32, 1>, %s: !migraphx.shaped<5xf32, 1>) -> !migraphx.shaped<5xi8, 1> {
  %0 = migraphx.quantizelinear %x, %s : <5xi32, 1>, <5xf32, 1> -> <5xi8, 1>
  return %0 : !migraphx.shaped<5xi8, 1>
}]], "inline.mlir")
    local half = kiln.tensor({ 0.5, 0.5, 0.5, 0.5, 0.5 }, "f32")
    -- x / 0.5 = 1.3 -2.6 1000 -1000 0.7: e4m3fn's nearest 1.25 -2.5, +-448 saturated, 0.6875
    local r = gs.q:eval { x = kiln.tensor({ 0.65, -1.3, 500, -500, 0.35 }, "f32"), s = half }
    assert.are.equal("f8e4m3fn", r.dtype)
    assert.are.same({ 1.25, -2.5, 448, -448, 0.6875 }, r:flat())
    -- + 0.5 = 1.8 -2.1 1e5 -1e5 1.2: e5m2's 1.75 -2, +-57344 (saturated, not inf), 1.25
    local z = gs.z:eval { x = kiln.tensor({ 0.65, -1.3, 5e4, -5e4, 0.35 }, "f32"), s = half, z = kiln.tensor({ 0.5, 0.5, 0.5, 0.5, 0.5 }, "f8e5m2") }
    assert.are.same({ 1.75, -2, 57344, -57344, 1.25 }, z:flat())
    -- i32 x: 1.5 -2.5 500 -500 8 -> ties to even 2 -2, saturated 127 -128, 8
    local i = gs.i:eval { x = kiln.tensor({ 3, -5, 1000, -1000, 4 }, "i32"), s = kiln.tensor({ 2, 2, 2, 2, 0.5 }, "f32") }
    assert.are.same({ 2, -2, 127, -128, 8 }, i:flat())
  end)
  it("unpack: the low nibble first, sign-extended unless isUnsigned (or a ui8 result)", function()
    local gs = kiln.migraphx([[
func.func @s(%x: !migraphx.shaped<2x3xi8, 3x1>) -> !migraphx.shaped<2x6xi8, 6x1> {
  %y = migraphx.unpack %x {axis = 1 : i64, isUnsigned = false} : <2x3xi8, 3x1> -> <2x6xi8, 6x1>
  func.return %y : !migraphx.shaped<2x6xi8, 6x1>
}
func.func @u(%x: !migraphx.shaped<2x3xui8, 3x1>) -> !migraphx.shaped<4x3xui8, 3x1> {
  %y = migraphx.unpack %x {axis = 0 : i64} : <2x3xui8, 3x1> -> <4x3xui8, 3x1>
  func.return %y : !migraphx.shaped<4x3xui8, 3x1>
}]], "inline.mlir")
    -- bytes 0x7F 0x80 0xA5 / 0x0F 0xF0 0x3C
    local s = gs.s:eval { x = kiln.tensor({ 127, -128, -91, 15, -16, 60 }, "i8", { shape = { 2, 3 } }) }
    assert.are.same({ -1, 7, 0, -8, 5, -6, -1, 0, 0, -1, -4, 3 }, s:flat())
    local u = gs.u:eval { x = kiln.tensor({ 127, 128, 165, 15, 240, 60 }, "u8", { shape = { 2, 3 } }) }
    assert.are.same({ 15, 0, 5, 7, 8, 10, 15, 0, 12, 0, 15, 3 }, u:flat())
  end)
  it("an innermost stride > 1 reads every s-th element of a buffer with a trailing dim of s", function()
    local gs = kiln.migraphx([[
func.func @s(%x: !migraphx.shaped<2x3xf32, 8x2>, %y: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {
  %0 = migraphx.add %x, %y : <2x3xf32, 8x2>, <2x3xf32, 3x1> -> <2x3xf32, 3x1>
  return %0 : !migraphx.shaped<2x3xf32, 3x1>
}]], "inline.mlir")
    local ps = gs.s:params()
    assert.are.same({ 2, 4, 2 }, ps[1].shape) -- x(i, j) at 8 i + 2 j: [2][4][2], element 0 of the last
    assert.are.same({ 8, 2, 1 }, ps[1].strides)
    local xb = {}
    for i = 0, 15 do xb[i + 1] = i end
    local y = kiln.tensor({ 0, 100, 200, 300, 400, 500 }, "f32", { shape = { 2, 3 } })
    local r = gs.s:eval { x = kiln.tensor(xb, "f32", { shape = { 2, 4, 2 } }), y = y }
    assert.are.same({ 0, 102, 204, 308, 410, 512 }, r:flat())
  end)
  it("errors are Lua errors with the file location", function()
    local e = helper.fails(kiln.migraphx, "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = migraphx.sin(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}", "sin.mlir")
    helper.has(e, "sin.mlir:2:8: error: migraphx.sin is not supported (supported: add")
  end)
end)

describe("kiln migraphx --print-results and kiln conv-config", function()
  it("prints outputs as rocMLIR's memref printer does", function()
    local out, err, code = kiln_run("migraphx " .. q(dir .. "views.mlir") .. " --func slice_add --rand ones --print-results --target host")
    assert.are.equal(0, code, err)
    helper.has(out, "Unranked Memref base@ = 0x0 rank = 2 offset = 0 sizes = [3, 4] strides = [4, 1] data = \n[[2,   2,   2,   2], \n [2,   2,   2,   2], \n [2,   2,   2,   2]]\n")
    helper.has(out, "slice_add: RAN (kernels=1)")
  end)
  it("builds, verifies and times an MIOpenDriver conv spec", function()
    local out, err, code = kiln_run("conv-config " .. q("-n 2 -c 8 -H 9 -W 7 -k 4 -y 3 -x 3 -p 1 -q 0 -u 2 -v 1 -l 1 -j 1 -g 2 -t f16 -F 1") .. " --layout NHWC --target host")
    assert.are.equal(0, code, out .. err)
    assert.truthy(out:match("^conv: PASS %(kernels=1, max_rel=[^,]+, median_ms=[%d.e+-]+%)\n$"), out)
    local _, e2, c2 = kiln_run("conv-config " .. q("-n 1 -c 4 -H 5 -W 5 -k 4 -y 1 -x 1 -F 2"))
    assert.are.equal(1, c2)
    helper.has(e2, "-F 2 is not supported (only -F 1")
    _, e2, c2 = kiln_run("conv-config " .. q("-n 1 -Z 3"))
    assert.are.equal(1, c2)
    helper.has(e2, "unknown flag '-Z'")
    _, e2, c2 = kiln_run("conv-config " .. q("-n 1 -c 3 -g 2"))
    assert.are.equal(1, c2)
    helper.has(e2, "must be multiples of -g 2")
  end)
end)
