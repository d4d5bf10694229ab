-- vector_codegen_spec.lua — the wide instructions of element-wise kernels and reductions,
-- checked in the code objects without a GPU: 16-byte accesses are global_load_dwordx4 /
-- global_store_dwordx4 on gfx942, global_load_b128 / global_store_b128 on gfx1100 and
-- ld.global(.nc).v4 / st.global.v4 on sm_90. A size that is a multiple of a workgroup's
-- vectors has no branch at all (no per-element bounds check); with a partial last
-- workgroup only that one checks, at most once per vector of a thread (4), while the
-- full workgroups' accesses stay wide; odd sizes keep a correct, checked tail of scalars.
-- Row and column reductions and softmax load (and columns store) 16 bytes.
local kiln = require "kiln"

local function add_graph(n, dt)
  local g = kiln.graph("ew")
  local x, y = g:param("x", { n }, dt), g:param("y", { n }, dt)
  g:output(x + y)
  return g
end
local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end
local function code(g, t)
  local p = kiln.compile(g, { targets = { t }, cache = false })
  local ks = p:kernels(t)
  assert.are.equal(1, #ks)
  return p:disasm(ks[1].name, t), ks[1]
end

-- per target: the wide load / store, the narrow (one-element) forms that must not appear
-- in a wide kernel, and a pattern counting divergent (per-thread) branches
local T = {
  gfx942 = { load = "global_load_dwordx4", store = "global_store_dwordx4", narrow = { "global_load_dword%s",
    "global_store_dword%s", "global_load_ushort", "global_store_short" }, check = "s_and_saveexec" },
  gfx1100 = { load = "global_load_b128", store = "global_store_b128", narrow = { "global_load_b32", "global_store_b32",
    "global_load_u16", "global_store_b16" }, check = "s_cbranch_execz" },
  sm_90 = { load = "ld%.global[%.%w]-%.v4%.[fub]32", store = "st%.global%.v4%.[fb]32", narrow = { "ld%.global%.nc%.f32",
    "st%.global%.f32", "ld%.global%.nc%.[ub]16", "st%.global%.b16" }, check = "@%%p%d+ bra" },
}

describe("wide global accesses in element-wise code objects", function()
  for _, t in ipairs { "gfx942", "gfx1100", "sm_90" } do
    local w = T[t]
    for _, dt in ipairs { "f32", "f16" } do
      it(t .. " " .. dt .. " add of 2^20 elements: only 16-byte accesses, no branch", function()
        local asm, k = code(add_graph(1048576, dt), t)
        assert.is_true(count(asm, w.load) >= 2, "wide loads")
        assert.is_true(count(asm, w.store) >= 1, "wide stores")
        for _, n in ipairs(w.narrow) do assert.are.equal(0, count(asm, n), n) end
        assert.are.equal(0, count(asm, w.check), "a bounds branch in a kernel without a tail")
        if t ~= "sm_90" then assert.are.equal(0, count(asm, "s_cbranch"), "branches") end
        for _, a in ipairs(k.accesses) do assert.are.equal(16, a.bytes, a.arg) end
      end)
    end
    it(t .. " f32 add with a partial last workgroup: wide everywhere, at most 4 checks", function()
      local asm = code(add_graph(1048576 + 4 * 300, "f32"), t)
      assert.is_true(count(asm, w.load) >= 8, "the full workgroups' 4 vectors of both inputs are wide")
      for _, n in ipairs(w.narrow) do assert.are.equal(0, count(asm, n), n) end
      local c = count(asm, w.check)
      assert.is_true(c >= 1 and c <= 4, "per-vector checks of the tail: " .. c)
    end)
    it(t .. " f32 add of an odd size: scalar accesses behind a checked tail", function()
      local asm, k = code(add_graph(1000003, "f32"), t)
      assert.are.equal(0, count(asm, w.load), "no wide load of an odd size")
      assert.is_true(count(asm, w.check) >= 1, "the tail is checked")
      assert.are.equal(math.ceil(1000003 / 1024), k.grid)
      for _, a in ipairs(k.accesses) do assert.are.equal(4, a.bytes, a.arg) end
    end)
    it(t .. " row reductions and softmax load 16 bytes", function()
      local g = kiln.graph("r")
      g:output(g:param("x", { 64, 8192 }, "f32"):sum { 1 })
      assert.is_true(count(code(g, t), w.load) >= 1, "sum rows f32")
      g = kiln.graph("s")
      g:output(g:param("x", { 512, 8192 }, "f16"):softmax(-1))
      local asm = code(g, t)
      assert.is_true(count(asm, w.load) >= 1 and count(asm, w.store) >= 1, "softmax rows f16")
    end)
    it(t .. " column reductions load and store 16 bytes", function()
      local g = kiln.graph("c")
      g:output(g:param("x", { 4096, 512 }, "bf16"):mean { 0 })
      local asm, k = code(g, t)
      assert.is_true(count(asm, w.load) >= 1 and count(asm, w.store) >= 1, "mean cols bf16")
      for _, n in ipairs(w.narrow) do assert.are.equal(0, count(asm, n), n) end
      for _, a in ipairs(k.accesses) do assert.are.equal(16, a.bytes, a.kind) end
    end)
  end
end)
