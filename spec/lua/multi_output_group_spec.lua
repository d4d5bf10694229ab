-- multi_output_group_spec.lua — a gemm kernel_group with two results (func.return with two
-- operands, the form graph-partition will produce), given as graph-level .kir text and
-- compiled through graph-to-rock (the GEMM emitted once, one rock.elementwise per result),
-- rock-regularize (the views between the GEMM result and the epilogues move onto the
-- epilogues' other operands) and output fusion, then run on the host and compared with
-- the float64 reference g:eval of the same graph built with the Lua DSL, on fresh random
-- inputs (f32: 1e-5, f16: 1e-2 relative, as fused_spec).
local kiln = require "kiln"
local gen = require "fused_gen"

-- relu(a @ b + bias) and sigmoid(transpose(a @ b + bias)) * c, M x K @ K x N.
local function kir(M, K, N, dt)
  local t = function(...) return "tensor<" .. table.concat({ ... }, "x") .. "x" .. dt .. ">" end
  return string.format([[
func.func @two_out() attributes {graph} {
  %%a = "graph.param"() {name = "a"} : () -> %s
  %%b = "graph.param"() {name = "b"} : () -> %s
  %%bias = "graph.param"() {name = "bias"} : () -> %s
  %%c = "graph.param"() {name = "c"} : () -> %s
  %%r:2 = "graph.launch"(%%a, %%b, %%bias, %%c) {callee = @two_out_k0} : (%s, %s, %s, %s) -> (%s, %s)
  func.return %%r#0, %%r#1 : %s, %s
}
func.func @two_out_k0(%%a: %s, %%b: %s, %%bias: %s, %%c: %s) attributes {kernel_group, kind = "gemm"} {
  %%d = "graph.dot"(%%a, %%b) : (%s, %s) -> %s
  %%e = "graph.add"(%%d, %%bias) : (%s, %s) -> %s
  %%r = "graph.relu"(%%e) : (%s) -> %s
  %%t = "graph.transpose"(%%e) {perm = [1, 0]} : (%s) -> %s
  %%s = "graph.sigmoid"(%%t) : (%s) -> %s
  %%m = "graph.mul"(%%s, %%c) : (%s, %s) -> %s
  func.return %%r, %%m : %s, %s
}
]], t(M, K), t(K, N), t(N), t(N, M), t(M, K), t(K, N), t(N), t(N, M), t(M, N), t(N, M), t(M, N), t(N, M),
    t(M, K), t(K, N), t(N), t(N, M),
    t(M, K), t(K, N), t(M, N),
    t(M, N), t(N), t(M, N),
    t(M, N), t(M, N),
    t(M, N), t(N, M),
    t(N, M), t(N, M),
    t(N, M), t(N, M), t(N, M),
    t(M, N), t(N, M))
end

-- The same computation with the DSL (its g:eval is the reference).
local function dsl(M, K, N, dt)
  local g = kiln.graph("two_out")
  local a, b = g:param("a", { M, K }, dt), g:param("b", { K, N }, dt)
  local bias, c = g:param("bias", { N }, dt), g:param("c", { N, M }, dt)
  local e = g:dot(a, b) + bias
  g:output(e:relu(), e:transpose { 1, 0 }:sigmoid() * c)
  return g
end

-- A Lua pass in place of graph-partition: the graph's body becomes the .kir module's
-- (params, one two-result graph.launch) and its kernel_group function joins the module.
local function install(text, name)
  kiln.register_pass("spec-two-output-group", function(m)
    local parsed = kiln.parse(text, name .. ".kir")
    local src, dst = parsed:lookup(name), m:lookup(name)
    local body = dst:body()
    while body:last() do body:last():erase() end
    while src:body():first() do body:append(src:body():first():detach()) end
    m:body():append(parsed:lookup(name .. "_k0"):detach())
  end)
end

describe("a two-output gemm kernel_group #compile", function()
  local pipeline = "spec-two-output-group," .. kiln.default_pipeline():gsub("graph%-partition,", "")
  for _, case in ipairs { { 37, 19, 23, "f32" }, { 64, 32, 48, "f32" }, { 16, 40, 24, "f16" } } do
    local M, K, N, dt = table.unpack(case)
    it(string.format("%dx%d @ %dx%d %s: both results match g:eval, one kernel, the GEMM once", M, K, K, N, dt), function()
      install(kir(M, K, N, dt), "two_out")
      local seen = {}
      local p = kiln.compile(dsl(M, K, N, dt), {
        target = "host", cache = false, pipeline = pipeline,
        print_ir_after = { "graph-to-rock", "rock-align-tiling" },
        on_ir = function(pass, text) seen[pass] = text end,
      })
      -- graph-to-rock: one rock.gemm for both results, two rock.elementwise (plain form)
      local _, ngemm = seen["graph-to-rock"]:gsub('"rock.gemm"', "")
      local _, new = seen["graph-to-rock"]:gsub('"rock.elementwise"', "")
      assert.are.equal(1, ngemm)
      assert.are.equal(2, new)
      -- output fusion took both epilogues: no global intermediate left
      assert.is_nil(seen["rock-align-tiling"]:find('"rock.alloc"%(%) : %(%) %-> buffer<%d+x%d+x' .. dt .. '>'))
      assert.are.equal(1, #p:kernels())
      local g = dsl(M, K, N, dt)
      local inputs = { a = kiln.rand({ M, K }, dt), b = kiln.rand({ K, N }, dt), bias = kiln.rand({ N }, dt),
                       c = kiln.rand({ N, M }, dt) }
      local got = { p:run(inputs) }
      local want = { g:eval(inputs) }
      assert.are.equal(2, #got)
      for i = 1, 2 do
        local ok, report = gen.check(got[i], want[i], dt)
        assert(ok, string.format("result %d: %s", i, tostring(report and report.summary or report)))
      end
    end)
  end
end)

-- An epilogue behind a slice of the GEMM result: rock-regularize moves the Slice off the
-- read (its partial inverse is a Pad), so the fused epilogue runs over the whole tile,
-- reads x as 0 and skips the write outside the slice. Both results against g:eval.
local SLICE = [[
func.func @sl() attributes {graph} {
  %a = "graph.param"() {name = "a"} : () -> tensor<37x19xf32>
  %b = "graph.param"() {name = "b"} : () -> tensor<19x23xf32>
  %x = "graph.param"() {name = "x"} : () -> tensor<27x21xf32>
  %r:2 = "graph.launch"(%a, %b, %x) {callee = @sl_k0} : (tensor<37x19xf32>, tensor<19x23xf32>, tensor<27x21xf32>) -> (tensor<27x21xf32>, tensor<37x23xf32>)
  func.return %r#0, %r#1 : tensor<27x21xf32>, tensor<37x23xf32>
}
func.func @sl_k0(%a: tensor<37x19xf32>, %b: tensor<19x23xf32>, %x: tensor<27x21xf32>) attributes {kernel_group, kind = "gemm"} {
  %d = "graph.dot"(%a, %b) : (tensor<37x19xf32>, tensor<19x23xf32>) -> tensor<37x23xf32>
  %s = "graph.slice"(%d) {begin = [3, 2], end = [30, 23]} : (tensor<37x23xf32>) -> tensor<27x21xf32>
  %m = "graph.mul"(%s, %x) : (tensor<27x21xf32>, tensor<27x21xf32>) -> tensor<27x21xf32>
  %r = "graph.relu"(%d) : (tensor<37x23xf32>) -> tensor<37x23xf32>
  func.return %m, %r : tensor<27x21xf32>, tensor<37x23xf32>
}
]]

describe("an epilogue through a slice of the GEMM result #compile", function()
  local pipeline = "spec-two-output-group," .. kiln.default_pipeline():gsub("graph%-partition,", "")
  for _, dt in ipairs { "f32", "f16" } do
    it(dt .. ": invalid points are read as 0 and never written; both results match g:eval", function()
      install((SLICE:gsub("f32", dt)), "sl")
      local seen = {}
      local p = kiln.compile((function()
        local g = kiln.graph("sl")
        local a, b, x = g:param("a", { 37, 19 }, dt), g:param("b", { 19, 23 }, dt), g:param("x", { 27, 21 }, dt)
        local d = g:dot(a, b)
        g:output(d:slice({ 3, 2 }, { 30, 23 }) * x, d:relu())
        return g
      end)(), { target = "host", cache = false, pipeline = pipeline, print_ir_after = { "rock-regularize", "rock-align-tiling" },
                on_ir = function(pass, text) seen[pass] = text end })
      assert.truthy(seen["rock-regularize"]:find("Pad{3,7} [\"d0\"]", 1, true) and seen["rock-regularize"]:find("Pad{2,0} [\"d1\"]", 1, true), "the slice's inverse on the other operands")
      assert.is_nil(seen["rock-align-tiling"]:find('"rock.alloc"%(%) : %(%) %-> buffer<37x23x' .. dt .. '>'))
      local g = kiln.graph("sl")
      local a, b, x = g:param("a", { 37, 19 }, dt), g:param("b", { 19, 23 }, dt), g:param("x", { 27, 21 }, dt)
      local d = g:dot(a, b)
      g:output(d:slice({ 3, 2 }, { 30, 23 }) * x, d:relu())
      local inputs = { a = kiln.rand({ 37, 19 }, dt), b = kiln.rand({ 19, 23 }, dt), x = kiln.rand({ 27, 21 }, dt) }
      local got, want = { p:run(inputs) }, { g:eval(inputs) }
      assert.are.equal(2, #got)
      for i = 1, 2 do
        local ok, report = gen.check(got[i], want[i], dt)
        assert(ok, string.format("result %d: %s", i, tostring(report and report.summary or report)))
      end
    end)
  end
end)
