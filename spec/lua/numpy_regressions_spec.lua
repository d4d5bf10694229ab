-- numpy_regressions_spec.lua — minimized random graphs that an independent float64 (numpy)
-- model of the ops found compiling wrongly or not at all on the host; each case compiles
-- the graph and compares the result with the reference evaluator (g:eval) on fresh
-- random inputs.
local kiln = require "kiln"

-- Compiles g for the host, runs it on inputs and checks every output against g:eval.
local function check(g, inputs)
  local p = kiln.compile(g, { target = "host" })
  local got = table.pack(p:run(inputs))
  local ref = table.pack(g:eval(inputs))
  assert.are.equal(ref.n, got.n)
  for i = 1, ref.n do
    local ok, report = kiln.allclose(got[i], ref[i])
    assert.is_true(ok, ("output %d: %s"):format(i, report.summary))
  end
end

describe("graphs from the numpy cross-check", function()
  it("an element-wise value feeding both a dot and the dot's epilogue", function()
    -- graph-partition took a * 2 into the gemm group as a side input of the epilogue,
    -- but it is also the dot's operand, which must be a kernel input:
    -- "graph-to-rock: value is not a kernel input"
    local g = kiln.graph("dot_operand_in_epilogue")
    local a = g:param("a", { 2, 3 }, "f32")
    local b = g:param("b", { 3, 5 }, "f32")
    local s = a * 2
    g:output(g:dot(s, b) * s:slice(1, 0, 1))
    check(g, { a = kiln.rand({ 2, 3 }), b = kiln.rand({ 3, 5 }) })
  end)

  it("the same through a transposed operand, a chain of producers and a conv", function()
    local g = kiln.graph("dot_operand_chain")
    local a = g:param("a", { 1, 2 }, "f32")
    local b = g:param("b", { 3, 9, 1 }, "f32")
    local s = (a * 2):abs()
    local t = s + 1
    g:output(g:dot(t, b, { transpose_a = true, transpose_b = true }) * t:transpose{ 1, 0 } + s:transpose{ 1, 0 })
    check(g, { a = kiln.rand({ 1, 2 }), b = kiln.rand({ 3, 9, 1 }) })

    local h = kiln.graph("conv_operand_in_epilogue")
    local x = h:param("x", { 1, 2, 4, 4 }, "f32", { layout = "NHWC" })
    local w = h:param("w", { 2, 2, 1, 1 }, "f32")
    local xs = x:tanh()
    h:output(h:conv(xs, w) + xs)
    check(h, { x = kiln.rand({ 1, 2, 4, 4 }, "f32", { layout = "NHWC" }), w = kiln.rand({ 2, 2, 1, 1 }) })
  end)

  it("views of a rank-0 value (transpose{}, broadcast{}, reshape{}, slice({}, {}))", function()
    -- rock-lower-loops: "a view of a rank-0 buffer is not supported"
    local g = kiln.graph("rank0_views")
    local p = g:param("p", {}, "f32")
    local q = g:param("q", { 1, 1 }, "f32")
    local a = p:abs()
    g:output(a:broadcast{} + 0.5, p:transpose{}, p:reshape{}:slice({}, {}) * 3, q:reshape{} - a)
    check(g, { p = kiln.rand({}), q = kiln.rand({ 1, 1 }) })
  end)

  it("reductions of a rank-0 value (no axes)", function()
    -- rock-lower-loops: "in and out must be buffers of one rank >= 1"
    for _, dt in ipairs{ "f32", "i32" } do
      local g = kiln.graph("rank0_reduce_" .. dt)
      local p = g:param("p", {}, dt)
      g:output(p:sum{}, p:reduce_max({}, true), p:mean{} * 2)
      local t = dt == "i32" and kiln.tensor(-7, "i32") or kiln.rand({}, dt)
      check(g, { p = t })
    end
  end)

  it("g:eval's conv multiplies padded taps by the weight (0 * inf is NaN) as the compiled kernel does", function()
    -- the reference skipped padded taps, so an inf weight gave 0 at the border in g:eval
    -- but NaN in the compiled kernel (and in numpy's zero-padded convolution)
    for _, lay in ipairs{ "NCHW", "NHWC" } do
      local g = kiln.graph("conv_pad_inf_" .. lay)
      local x = g:param("x", { 1, 2, 3, 3 }, "f32", { layout = lay })
      local w = g:param("w", { 2, 2, 2, 2 }, "f32")
      g:output(g:conv(x, w, { padding = { 1, 0, 2, 1 }, stride = 2 }))
      local wt = kiln.rand({ 2, 2, 2, 2 })
      wt:set({ 1, 0, 0, 1 }, math.huge)
      wt:set({ 0, 1, 1, 0 }, 0 / 0)
      local inputs = { x = kiln.rand({ 1, 2, 3, 3 }, "f32", { layout = lay }), w = wt }
      check(g, inputs)
      local ref = g:eval(inputs)
      assert.is_true(ref:get{ 0, 1, 0, 0 } ~= ref:get{ 0, 1, 0, 0 })   -- a padded tap meets the inf weight: NaN
    end
  end)

  it("a dot or conv with an empty reduction (K = 0) followed by an epilogue", function()
    -- the fused epilogue read a rock.alloc intermediate that the fill wrote: "kernels
    -- cannot allocate global intermediates"
    local g = kiln.graph("dot_k0_epilogue")
    local a = g:param("a", { 2, 0 }, "f32")
    local b = g:param("b", { 0, 3 }, "f32")
    local c = g:param("c", { 2, 3 }, "f32")
    g:output((g:dot(a, b) + c):relu())
    check(g, { a = kiln.rand({ 2, 0 }), b = kiln.rand({ 0, 3 }), c = kiln.rand({ 2, 3 }) })

    local h = kiln.graph("conv_c0_epilogue")
    local x = h:param("x", { 1, 0, 3, 3 }, "f32", { layout = "NHWC" })
    local w = h:param("w", { 2, 0, 1, 1 }, "f32")
    h:output(h:conv(x, w) + 1.5)
    check(h, { x = kiln.rand({ 1, 0, 3, 3 }, "f32", { layout = "NHWC" }), w = kiln.rand({ 2, 0, 1, 1 }) })
  end)

  it("a reduction of an empty tensor to a rank-0 result", function()
    -- rock-lower-loops: "'rock.fill': needs a buffer of rank >= 1"
    for _, dt in ipairs{ "f32", "i32" } do
      local g = kiln.graph("empty_to_rank0_" .. dt)
      local p = g:param("p", { 0, 3 }, dt)
      g:output(p:sum(), p:reduce_max{ 0, 1 }, p:mean())
      check(g, { p = kiln.zeros({ 0, 3 }, dt) })
    end
  end)

  it("a concat with a one-element piece in a vectorized element-wise kernel", function()
    -- the one-element piece was taken for a broadcast scalar: loaded once per vector and
    -- splat, so the lane of the vector where it belongs read it at the vector's first index
    -- (invalid there: 0) -- concat({a[7], b[1], c[2]}) gave 0 at index 7
    local g = kiln.graph("concat_one_element_piece")
    local a, b, c = g:param("a", { 7 }, "f32"), g:param("b", { 1 }, "f32"), g:param("c", { 2 }, "f32")
    local d = g:param("d", { 3, 1 }, "f32")
    local e = g:param("e", { 3, 2 }, "f16")
    g:output(g:concat({ a, b, c }, 0), (g:concat({ d, e:convert("f32"), d * 2 }, 1) + 1):relu())
    check(g, { a = kiln.rand({ 7 }), b = kiln.rand({ 1 }), c = kiln.rand({ 2 }), d = kiln.rand({ 3, 1 }),
               e = kiln.rand({ 3, 2 }, "f16") })
  end)
end)
