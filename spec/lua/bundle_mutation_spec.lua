-- bundle_mutation_spec.lua — damaged and crafted bundles through kiln.load: truncation at
-- every section boundary, byte changes in every section with the checksums recomputed
-- (the helper below re-seals a bundle as bundle.h specifies), edited grid / block / LDS
-- sizes, huge declared sizes and a quick random mutation loop. Each must be a Lua error
-- naming the bundle file, never a crash, and the context must load and run the
-- undamaged bundle afterwards.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

-- ---- the container (driver/bundle.h) ----
local function fnv(s, i, j)
  local h = -3750763034362895579          -- 0xcbf29ce484222325 as a Lua integer
  for k = i or 1, j or #s do h = (h ~ s:byte(k)) * 0x100000001b3 end
  return h
end
local function u32(s, off) return (string.unpack("<I4", s, off + 1)) end
local function u64(s, off) return (string.unpack("<i8", s, off + 1)) end
local function put(s, off, bytes) return s:sub(1, off) .. bytes .. s:sub(off + #bytes + 1) end

-- The sections of bundle b: {kind, target, index, off, size, entry} (offsets 0-based).
local function sections(b)
  local t = {}
  for i = 0, u32(b, 16) - 1 do
    local e = 48 + 40 * i
    if e + 40 > #b then break end   -- a count larger than the table (huge declared sizes)
    t[#t + 1] = { kind = u32(b, e), target = u32(b, e + 4), index = u32(b, e + 8), off = u64(b, e + 16), size = u64(b, e + 24), entry = e }
  end
  return t
end
local KIND = { "meta", "plan", "IR", "binary", "constant" }

-- Recomputes the checksums (of section `only`, else of every section; then the table's
-- and the header's), as a tool that edits bundles would.
local function reseal(b, only)
  local n = u32(b, 16)
  for _, s in ipairs(only and { only } or sections(b)) do
    if s.off >= 0 and s.size >= 0 and s.off + s.size <= #b then b = put(b, s.entry + 32, string.pack("<i8", fnv(b, s.off + 1, s.off + s.size))) end
  end
  b = put(b, 32, string.pack("<i8", fnv(b, 49, math.min(#b, 48 + 40 * n))))
  return put(b, 40, string.pack("<i8", fnv(b, 1, 40)))
end

-- Offset of kernel k's grid[0] in the plan section at `off` (plan: 3 strings, u32 count,
-- then per kernel 3 strings, grid[3], block[3], LDS, u32 nargs, u32 ninputs, args...).
local function grid_offset(b, off)
  local pos = off
  local function str() pos = pos + 4 + u32(b, pos) end
  str(); str(); str()
  pos = pos + 4
  str(); str(); str()
  return pos
end

-- ---- the programs ----
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. helper.shell_quote(dir))
local function path(name) return dir .. "/" .. name end
local function write(p, bytes) local f = assert(io.open(p, "wb")); f:write(bytes); f:close() end
local function read(p) local f = assert(io.open(p, "rb")); local s = f:read("a"); f:close(); return s end

local g = kiln.graph("mut")
local a = g:param("a", { 64, 32 }, "f32")
local w = g:param("w", { 32, 48 }, "f32")
local bias = g:param("bias", { 48 }, "f32")
g:output((a:dot(w) + bias):relu(), a * 2)
local prog = kiln.compile(g)
prog:save(path("good.klb"))
local good = read(path("good.klb"))
local function inputs() return { a = kiln.rand({ 64, 32 }, "f32"), w = kiln.rand({ 32, 48 }, "f32"), bias = kiln.rand({ 48 }, "f32") } end

-- kiln.load of bytes must fail with a message naming the file; returns the message.
local function refused(ctx, bytes, what)
  local p = path("mut.klb")
  write(p, bytes)
  local ok, err = pcall(kiln.load, ctx, p)
  assert(not ok, what .. ": loaded")
  err = tostring(err)
  helper.has(err, p)
  helper.has(err, "load: ")
  return err
end
-- The context still loads and runs the undamaged bundle, matching the evaluator.
local function still_usable(ctx)
  local p = path("good-again.klb")
  write(p, good)
  local q = kiln.load(ctx, p)
  local x = inputs()
  local got, ref = table.pack(q:run(x)), table.pack(g:eval(x))
  assert.are.equal(2, got.n)
  for i = 1, 2 do
    local c = kiln.compare(got[i], ref[i])
    assert.are.equal(0, c.mismatches, ("output %d: max abs err %g"):format(i, c.max_abs_err or -1))
  end
end

describe("crafted bundles", function()
  local secs = sections(good)

  it("truncated at every section boundary: a clean error", function()
    local ctx = kiln.context()
    local cuts = { 0, 7, 8, 47, 48, 48 + 40 * #secs - 1 }
    for _, s in ipairs(secs) do cuts[#cuts + 1] = s.off; cuts[#cuts + 1] = s.off + s.size - 1 end
    for _, cut in ipairs(cuts) do
      local err = refused(ctx, good:sub(1, cut), "cut at " .. cut)
      assert(err:find("truncated", 1, true) or err:find("not a kiln bundle", 1, true), err)
    end
    still_usable(ctx)
  end)

  it("a changed byte in every section, checksums recomputed: a clean error", function()
    local ctx = kiln.context()
    local n = 0
    for i, s in ipairs(secs) do
      -- the target count, every other byte of the plan, some of the others (a changed host
      -- binary costs a lowering of its kernel to be refused); the IR's
      -- text may stay valid IR (a changed location or constant is another program, which
      -- checksums cannot tell), so the IR is changed where its structure is
      local at = {}
      if s.kind == 1 then at = { 0, 1, 2, 3 }
      elseif s.kind == 2 then for k = 0, s.size - 1, 2 do at[#at + 1] = k end
      elseif s.kind == 3 then at = { 0, 1, s.size - 2 }
      else for k = 0, s.size - 1, s.kind == 4 and 211 or 13 do at[#at + 1] = k end end
      for _, k in ipairs(at) do
        local o = s.off + k
        local bytes = reseal(put(good, o, string.char(good:byte(o + 1) ~ 0x01)), s)
        local err = refused(ctx, bytes, ("section %d (%s) byte %d"):format(i - 1, KIND[s.kind], k))
        assert(err:find("section", 1, true) or err:find("target", 1, true) or err:find("kernel", 1, true), err)
        n = n + 1
      end
    end
    assert(n > 400, "only " .. n .. " changes")
    still_usable(ctx)
  end)

  it("edited grid, block and LDS sizes: refused, the plan must carry the IR's", function()
    local ctx = kiln.context()
    local plan = secs[2]
    assert.are.equal(2, plan.kind)
    local gpos = grid_offset(good, plan.off)
    local fields = { grid = gpos, ["grid[1]"] = gpos + 8, block = gpos + 24, ["block[2]"] = gpos + 40, lds = gpos + 48 }
    for name, off in pairs(fields) do
      for _, v in ipairs({ 6, 64, 100000, 1025, 65537, 0x7fffffff, 0, -1 }) do
        if v ~= u64(good, off) then
          local err = refused(ctx, reseal(put(good, off, string.pack("<i8", v)), plan), name .. " = " .. v)
          assert(err:find("disagrees with the IR", 1, true) or err:find("bad launch dims", 1, true) or err:find("bad LDS size", 1, true), err)
        end
      end
    end
    still_usable(ctx)
  end)

  it("huge declared sizes: refused before anything is allocated", function()
    local ctx = kiln.context()
    local plan = secs[2]
    local cases = {
      { put(good, plan.off, string.pack("<I4", 0xffffffff)), "truncated" },                       -- a string length
      { put(good, plan.entry + 24, string.pack("<i8", 1 << 62)), "run past the end" },           -- a section size
      { put(good, 16, string.pack("<I4", 0x7fffffff)), "do not fit" },                           -- the section count
      { put(good, 24, string.pack("<i8", 1 << 40)), "truncated" },                               -- the file size
    }
    for i, c in ipairs(cases) do helper.has(refused(ctx, reseal(c[1]), "case " .. i), c[2]) end
    still_usable(ctx)
  end)

  it("a quick random mutation loop: errors or loads, never a crash", function()
    local ctx = kiln.context()
    local seed = 12345
    local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
    local loaded = 0
    for _ = 1, 150 do
      local s = secs[1 + rnd(#secs)]
      local b = good
      for _ = 1, 1 + rnd(3) do
        local o = s.off + rnd(s.size)
        b = put(b, o, string.char(({ 0, 255, good:byte(o + 1) ~ (1 + rnd(255)) })[1 + rnd(3)]))
      end
      if b ~= good then
        local p = path("rand.klb")
        write(p, reseal(b, s))
        local ok, err = pcall(kiln.load, ctx, p)
        if ok then
          loaded = loaded + 1
          assert(s.kind == 3 or s.kind == 1, "a change in a " .. KIND[s.kind] .. " section loaded")
        else
          helper.has(tostring(err), p)
        end
      end
    end
    still_usable(ctx)
  end)
end)
