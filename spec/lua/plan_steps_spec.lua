-- plan_steps_spec.lua — host plans as token-connected steps (p:plan, p:plan_text, p:run
-- with timing, bundles): a dot with K = 0 inside a bigger graph is a prefill step, not a
-- launch; an output that is an input is a copy step; the intermediates of a chain of three
-- kernels (conv -> reduce_max -> element-wise) get workspace allocation / free steps; an
-- empty reduce_max prefills -inf. Each plan runs on the host and matches g:eval on fresh
-- random inputs; a saved bundle keeps the steps; a bundle whose plan was edited by hand
-- (a launch that no longer waits on the writer of its input) is refused.
local kiln = require "kiln"
local helper = require "spec.lua.helper"
local fg = require "fused_gen"

-- ---- bundles (driver/bundle.h) ----
local function fnv(s, i, j)
  local h = -3750763034362895579          -- 0xcbf29ce484222325 as a Lua integer
  for k = i, j do h = (h ~ s:byte(k)) * 0x100000001b3 end
  return h
end
local function put(s, off, b) return s:sub(1, off) .. b .. s:sub(off + #b + 1) end
-- Recomputes every checksum, as a tool that edits bundles would.
local function reseal(bytes)
  local n = string.unpack("<I4", bytes, 17)
  for i = 0, n - 1 do
    local e = 48 + 40 * i
    local off, size = string.unpack("<i8i8", bytes, e + 17)
    bytes = put(bytes, e + 32, string.pack("<i8", fnv(bytes, off + 1, off + size)))
  end
  bytes = put(bytes, 32, string.pack("<i8", fnv(bytes, 49, 48 + 40 * n)))
  return put(bytes, 40, string.pack("<i8", fnv(bytes, 1, 40)))
end
-- The bundle as a format version 2 writer would have written it: plan steps without
-- tokens and waits, launches only (workspace steps dropped; prefill or copy steps: error).
local function to_v2(bytes)
  local n = string.unpack("<I4", bytes, 17)
  local secs = {}
  for i = 0, n - 1 do
    local e = 48 + 40 * i
    local kind, target, index = string.unpack("<I4I4I4", bytes, e + 1)
    local off, size = string.unpack("<i8i8", bytes, e + 17)
    secs[#secs + 1] = { kind = kind, target = target, index = index, data = bytes:sub(off + 1, off + size) }
  end
  for _, sec in ipairs(secs) do
    if sec.kind == 2 then
      local d, pos = sec.data, 1
      local function u32() local v = string.unpack("<I4", d, pos); pos = pos + 4; return v end
      local function str() local len = u32(); pos = pos + len end
      local function tensor() str(); str(); u32(); local r = u32(); pos = pos + 16 * r end
      str(); str(); str()
      for _ = 1, u32() do str(); str(); str(); pos = pos + 56; local na = u32(); u32(); for _ = 1, na do str(); tensor() end end
      for _ = 1, u32() do u32(); str(); tensor() end
      local head, steps = d:sub(1, pos - 1), {}
      for _ = 1, u32() do
        local kind = u32(); u32(); local w = u32(); pos = pos + 4 * w
        if kind == 0 then
          local k, na = u32(), u32()
          local args = {}
          for a = 1, na do args[a] = u32() end
          steps[#steps + 1] = string.pack("<I4I4I4", 0, k, na) .. (na > 0 and string.pack("<" .. ("I4"):rep(na), table.unpack(args)) or "")
        elseif kind == 3 then pos = pos + 12
        elseif kind == 4 then pos = pos + 4
        else error("a step a version 2 plan cannot hold: kind " .. kind) end
      end
      sec.data = head .. string.pack("<I4", #steps) .. table.concat(steps) .. d:sub(pos)
    end
  end
  local pos, layout = 48 + 40 * #secs, {}
  for i, sec in ipairs(secs) do
    pos = (pos + 7) // 8 * 8
    layout[i] = pos
    pos = pos + #sec.data
  end
  local out = { string.pack("<c8I4I4I4I4i8i8i8", "KILNBNDL", 2, 48, #secs, 0, pos, 0, 0) }
  for i, sec in ipairs(secs) do out[#out + 1] = string.pack("<I4I4I4I4i8i8i8", sec.kind, sec.target, sec.index, 0, layout[i], #sec.data, 0) end
  local body = table.concat(out)
  for i, sec in ipairs(secs) do body = body .. ("\0"):rep(layout[i] - #body) .. sec.data end
  return reseal(body)
end
local function slurp(path) local f = assert(io.open(path, "rb")); local s = f:read("a"); f:close(); return s end
local function spit(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end

local kinds = fg.plan_kinds

local function check_outputs(p, g, inputs, opts)
  assert(fg.check_outputs(table.pack(p:run(inputs, opts)), table.pack(g:eval(inputs))))
end

-- Every wait names an earlier step's token; each slot a step reads is written by a step it
-- (transitively) waits on, params and constants excepted.
local function check_dag(plan)
  local index, before = {}, {}
  for i, s in ipairs(plan.steps) do
    before[i] = {}
    for _, w in ipairs(s.waits) do
      local j = index[w]
      assert(j and j < i, ("step %d waits on token %s of no earlier step"):format(i, tostring(w)))
      before[i][j] = true
      for k in pairs(before[j]) do before[i][k] = true end
    end
    index[s.token] = i
  end
  local writer = {}
  for i, s in ipairs(plan.steps) do
    local reads, writes = {}, {}
    if s.kind == "launch" then
      for a, slot in ipairs(s.args) do if a <= s.ninputs then reads[#reads + 1] = slot else writes[#writes + 1] = slot end end
    elseif s.kind == "copy" then reads[1], writes[1] = s.src, s.dst
    elseif s.kind == "prefill" then writes[1] = s.slot end
    for _, slot in ipairs(reads) do
      if plan.slots[slot].kind == "result" then
        assert(writer[slot] and before[i][writer[slot]], ("step %d reads slot %d without waiting on its writer"):format(i, slot))
      end
    end
    for _, slot in ipairs(writes) do writer[slot] = i end
  end
end

describe("host plans as steps", function()
  it("a dot with K = 0 inside a bigger graph is a prefill step, not a launch", function()
    local g = kiln.graph("k0dot")
    local a = g:param("a", { 6, 0 }, "f32")
    local b = g:param("b", { 0, 5 }, "f32")
    local x = g:param("x", { 6, 5 }, "f32")
    g:output((a:dot(b) + x):relu())
    local p = kiln.compile(g)
    local plan = p:plan()
    assert.are.equal("alloc_workspace,prefill,launch,free", kinds(plan))
    local pf = plan.steps[2]
    assert.are.equal(0, pf.value)
    assert.are.equal("result", plan.slots[pf.slot].kind)
    assert.are.same({ plan.steps[1].token }, pf.waits)
    check_dag(plan)
    local gemm
    for _, k in ipairs(p:kernels()) do if k.kind == "gemm" then gemm = k.name end end
    assert.is_string(gemm)   -- the kernel is still compiled (a launch would fill the same) ...
    for _, s in ipairs(plan.steps) do assert.are_not.equal(gemm, s.kernel) end   -- ... but not launched
    check_outputs(p, g, { a = kiln.rand({ 6, 0 }, "f32"), b = kiln.rand({ 0, 5 }, "f32"), x = kiln.rand({ 6, 5 }, "f32", { dist = "normal" }) })
  end)

  it("an empty reduce_max prefills -inf", function()
    local g = kiln.graph("rmax0")
    local e = g:param("e", { 3, 0 }, "f32")
    local z = g:param("z", { 3 }, "f32")
    g:output(e:reduce_max({ 1 }):max(z))   -- max(-inf, z) = z: a wrong fill value shows
    local p = kiln.compile(g)
    local plan = p:plan()
    assert.are.equal("alloc_workspace,prefill,launch,free", kinds(plan))
    assert.are.equal(-math.huge, plan.steps[2].value)
    helper.has(p:plan_text(), "%t1 = prefill %s2 value(-inf) waits(%t0)")
    check_outputs(p, g, { e = kiln.rand({ 3, 0 }, "f32"), z = kiln.rand({ 3 }, "f32", { dist = "normal" }) })
  end)

  it("an output that is an input is a copy step", function()
    local g = kiln.graph("passthru")
    local x = g:param("x", { 4, 7 }, "f32")
    local y = g:param("y", { 4, 7 }, "f32")
    g:output(x + y, x)
    local p = kiln.compile(g)
    local plan = p:plan()
    assert.are.equal("launch,copy", kinds(plan))
    local c = plan.steps[2]
    assert.are.equal("x", plan.slots[c.src].name)
    assert.are.equal(plan.outputs[2], c.dst)
    assert.are.equal(4 * 7 * 4, c.bytes)
    assert.are.same({}, c.waits)   -- independent of the launch
    check_outputs(p, g, { x = kiln.rand({ 4, 7 }, "f32"), y = kiln.rand({ 4, 7 }, "f32") })
  end)

  local function chain()
    local g = kiln.graph("chain3")
    local x = g:param("x", { 1, 8, 6, 6 }, "f32")
    local w = g:param("w", { 4, 8, 3, 3 }, "f32")
    g:output((g:conv(x, w):reduce_max({ 2, 3 }):softmax(-1) * 2):relu()) -- a softmax of a reduction: a kernel of its own
    local inputs = function() return { x = kiln.rand({ 1, 8, 6, 6 }, "f32", { dist = "normal" }), w = kiln.rand({ 4, 8, 3, 3 }, "f32", { dist = "normal" }) } end
    return g, inputs
  end

  it("a chain of three kernels: workspaces live from their first writer to their last reader", function()
    local g, inputs = chain()
    local p = kiln.compile(g)
    local plan = p:plan()
    assert.are.equal("alloc_workspace,launch,alloc_workspace,launch,free,launch,free", kinds(plan))
    check_dag(plan)
    local s = plan.steps
    assert.are.equal(s[1].slot, s[5].slot)
    assert.are.equal(s[3].slot, s[7].slot)
    assert.are.equal(plan.slots[s[1].slot].bytes, s[1].bytes)
    assert.are.equal(1 * 4 * 4 * 4 * 4, s[1].bytes)
    assert.are.same({ s[2].token, s[4].token }, s[5].waits)   -- freed after its writer and its reader
    assert.are.same({ s[4].token }, s[6].waits)
    local text = p:plan_text()
    helper.has(text, "%t0 = alloc_workspace %s2 (256 bytes)\n")
    helper.has(text, "%t3 = launch chain3_k1(grid=[1,1,1], block=[1,1,1], lds=0) args(%s2 -> %s3) waits(%t1, %t2)\n")
    helper.has(text, "%t4 = free %s2 waits(%t1, %t3)\n")
    helper.has(text, "return %s4\n")   -- (the constant 2 is an immediate in chain3_k2: no slot)
    local timing = {}
    check_outputs(p, g, inputs(), { timing = timing })
    assert.are.equal(#plan.steps, #timing)
    for i, t in ipairs(timing) do
      assert.are.equal(plan.steps[i].kind, t.kind)
      assert.are.equal(plan.steps[i].token, t.token)
      assert.is_true(t.ms >= 0)
    end
    helper.has(select(2, pcall(p.run, p, inputs(), { timing = true })), "timing must be a table")
    -- prepared runs execute the same steps
    local r = p:prepare(inputs())
    assert.are.equal(3, r.launches)
  end)

  it("a saved bundle keeps the steps; a hand-edited plan is refused", function()
    local g, inputs = chain()
    local p = kiln.compile(g)
    local path = os.tmpname()
    p:save(path)
    local q = kiln.load(path)
    assert.are.same(p:plan(), q:plan())
    assert.are.equal(p:plan_text(), q:plan_text())
    check_outputs(q, g, inputs())
    -- the launch of chain3_k1 (token 3) waits on tokens 1 and 2: make it wait on 0 and 2
    local bytes = slurp(path)
    local step = string.pack("<I4I4I4I4I4", 0, 3, 2, 1, 2)
    local at = assert(bytes:find(step, 1, true), "the step's bytes")
    assert.is_nil(bytes:find(step, at + 1, true))
    bytes = bytes:sub(1, at - 1) .. string.pack("<I4I4I4I4I4", 0, 3, 2, 0, 2) .. bytes:sub(at + #step)
    spit(path, reseal(bytes))
    local ok, err = pcall(kiln.load, path)
    os.remove(path)
    assert.is_false(ok)
    helper.has(tostring(err), "step 3 (launch, token 3): reads slot 2 but does not wait (directly or through its waits) on step 1, which writes it")
  end)

  it("a format version 2 bundle (launches only) still loads and runs", function()
    local g, inputs = chain()
    local p = kiln.compile(g)
    local path = os.tmpname()
    p:save(path)
    local v2 = to_v2(slurp(path))
    assert.are.equal(2, (string.unpack("<I4", v2, 9)))
    assert.is_true(#v2 < #slurp(path))   -- no tokens, no workspace steps
    spit(path, v2)
    local q = kiln.load(path)
    os.remove(path)
    -- the plan is rebuilt from the IR: the launches of the file, plus the workspace steps
    assert.are.same(p:plan(), q:plan())
    check_outputs(q, g, inputs())
  end)

  it("a bundle runs the plan of the device present; without one it names the bundle's targets", function()
    local g, inputs = chain()
    local path = os.tmpname()
    kiln.compile(g, { targets = { "gfx942", "host" } }):save(path)
    local q = kiln.load(path)
    assert.are.same({ "gfx942", "host" }, q.targets)
    assert.are.equal("gfx942", q:plan("gfx942").target)
    assert.are.equal(q:plan("host").target, "host")
    check_outputs(q, g, inputs())   -- the host's plan and binaries
    kiln.compile(g, { targets = { "gfx942" } }):save(path)
    local only = kiln.load(path)
    os.remove(path)
    local ok, err = pcall(only.run, only, inputs())
    assert.is_false(ok)
    helper.has(tostring(err), "has no binary for device host")
    helper.has(tostring(err), "compiled for: gfx942")
  end)
end)
