-- amd_isa.lua — static checks on AMDGPU code objects and their LLVM IR, for the specs
-- (amd_isa_spec.lua). Each check returns a list of findings (empty = passes), so a spec
-- can assert it both on kiln's output and on a text that has the bad pattern.
local M = {}

-- Cache write-back / invalidate instructions: what a system- or agent-scope fence (or a
-- workgroup fence in gfx10+ WGP mode) becomes; a kernel that synchronizes only within its
-- workgroup needs none of them.
M.CACHE_OPS = { "buffer_wbl2", "buffer_inv", "buffer_invl2", "buffer_wbinvl1", "buffer_wbinvl1_vol", "buffer_gl0_inv",
  "buffer_gl1_inv" }

local function lines(s)
  local t = {}
  for l in (s or ""):gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end
M.lines = lines

-- the mnemonic of a disassembly line ("\tv_mfma_f32_32x32x8_f16 a[0:15], ..." ->
-- "v_mfma_f32_32x32x8_f16"), or nil
function M.mnemonic(l)
  return l:match("^%s*([%a_][%w_]*)")
end

-- findings: "N x buffer_wbl2" for every cache maintenance instruction of the disassembly
function M.cache_ops(asm)
  local want, n = {}, {}
  for _, w in ipairs(M.CACHE_OPS) do want[w] = true end
  for _, l in ipairs(lines(asm)) do
    local m = M.mnemonic(l)
    if m and want[m] then n[m] = (n[m] or 0) + 1 end
  end
  local out = {}
  for _, w in ipairs(M.CACHE_OPS) do if n[w] then out[#out + 1] = n[w] .. " x " .. w end end
  return out
end

-- findings: every `fence` instruction of the LLVM IR text without a syncscope
function M.unscoped_fences(ir)
  local out = {}
  for _, l in ipairs(lines(ir)) do
    if l:match("^%s*fence%s") and not l:match("syncscope%(") then out[#out + 1] = l:gsub("^%s+", "") end
  end
  return out
end

-- the number of fences (scoped or not) in the LLVM IR text
function M.fences(ir)
  local n = 0
  for _, l in ipairs(lines(ir)) do if l:match("^%s*fence%s") then n = n + 1 end end
  return n
end

-- The loops of a disassembly (p:disasm labels every branch target ".L<addr>:" and ends a
-- branch with "; .L<addr>"): one {head =, back =, order =} per loop head (the target of
-- backward branches; back = the last of them), the line numbers of the head label and of
-- the branch; innermost = no other loop inside. order lists the loop's lines in one
-- iteration's order: LLVM rotates a loop whose body has branches (the bounds-masked loads
-- behind exec-mask branches) so that the code is entered in its middle (a branch from
-- before the loop to a label inside it) and the back-edge is the fall-through into that
-- entry; order then starts at the entry and wraps around.
function M.loops(asm)
  local ls, at, out, by = lines(asm), {}, {}, {}
  for i, l in ipairs(ls) do
    local lab = l:match("^(%.L%x+):$")
    if lab then at[lab] = i end
    local to = l:match(";%s*(%.L%x+)%s*$")
    if to and at[to] then
      local h = at[to]
      if by[h] then by[h].back = i
      else by[h] = { head = h, back = i }; out[#out + 1] = by[h] end
    end
  end
  for _, a in ipairs(out) do
    a.innermost = true
    for _, b in ipairs(out) do
      if b ~= a and b.head > a.head and b.back < a.back then a.innermost = false end
    end
    local entry
    for i, l in ipairs(ls) do
      local to = l:match(";%s*(%.L%x+)%s*$")
      if to and at[to] and at[to] > a.head and at[to] <= a.back and (i < a.head or i > a.back) then entry = at[to] end
    end
    a.order = {}
    for i = entry or a.head, a.back do a.order[#a.order + 1] = i end
    if entry then for i = a.head, entry - 1 do a.order[#a.order + 1] = i end end
    a.entry = entry
  end
  return out, ls
end

-- the instructions of a line: one, or the two halves of a gfx11 dual issue ("X :: Y")
local function halves(l)
  local a, b = l:match("^%s*(.-)%s*::%s*(.-)%s*$")
  if a then return { a, b } end
  return { (l:gsub("^%s+", "")) }
end
M.halves = halves

-- multiply-adds done by fused instructions in lines [i, j] of ls: v_fma* / v_fmac* /
-- v_fma_mix* / v_mad* / v_mac* one each, v_dot2* and v_pk_fma* two each
function M.fused_madds(ls, i, j)
  local n = 0
  for k = i or 1, j or #ls do
    for _, h in ipairs(halves(ls[k])) do
      local m = M.mnemonic(h) or ""
      m = m:gsub("^v_dual_", "v_")
      if m:match("^v_dot2") or m:match("^v_pk_fma_f") then n = n + 2
      elseif m:match("^v_fmac?_") or m:match("^v_fma_mix") or m:match("^v_mac_f") or m:match("^v_mad_f") or
        m:match("^v_mad_mix") or m:match("^v_fma_legacy") or m:match("^v_fmac_legacy") then n = n + 1 end
    end
  end
  return n
end

-- the VGPRs an instruction writes (its first operand) and reads (the others): "v5",
-- "v[2:3]" -> v2, v3
local function regs(op)
  local t = {}
  local lo, hi = op:match("^v%[(%d+):(%d+)%]")
  if lo then for r = tonumber(lo), tonumber(hi) do t[#t + 1] = r end
  else local r = op:match("^v(%d+)$"); if r then t[1] = tonumber(r) end end
  return t
end
local function operands(h)
  local rest = h:match("^%s*[%w_]+%s+(.*)$") or ""
  local t = {}
  for o in rest:gmatch("[^,]+") do t[#t + 1] = (o:gsub("^%s+", ""):gsub("%s.*$", ""):gsub("^[-|]+", ""):gsub("|$", "")) end
  return t
end

-- findings: every v_mul_f32 whose result a v_add_f32 / v_sub_f32 / v_subrev_f32 reads
-- before it is written again (a multiply-add left unfused), in lines [i, j] of ls
function M.mul_feeding_add(ls, i, j)
  local from, out = {}, {}
  for k = i or 1, j or #ls do
    local written = {}
    for _, h in ipairs(halves(ls[k])) do
      local m = (M.mnemonic(h) or ""):gsub("^v_dual_", "v_")
      local ops = operands(h)
      if m:match("^v_add_f32") or m:match("^v_sub_f32") or m:match("^v_subrev_f32") then
        for a = 2, #ops do
          for _, r in ipairs(regs(ops[a])) do
            if from[r] then out[#out + 1] = from[r] .. " -> " .. h; from[r] = nil end
          end
        end
      end
      for _, r in ipairs(regs(ops[1] or "")) do written[r] = m:match("^v_mul_f32") and h or false end
    end
    for r, w in pairs(written) do from[r] = w or nil end
  end
  return out
end

-- The main loop of a disassembly: the innermost loop with the most matrix instructions
-- (v_mfma / v_wmma), as {head =, back =} line numbers of M.loops, or nil without one.
function M.main_loop(asm)
  local loops, ls = M.loops(asm)
  local best, bn
  for _, l in ipairs(loops) do
    if l.innermost then
      local n = 0
      for i = l.head, l.back do
        local m = M.mnemonic(ls[i]) or ""
        if m:match("^v_mfma") or m:match("^v_wmma") then n = n + 1 end
      end
      if n > 0 and (not best or n > bn) then best, bn = l, n end
    end
  end
  return best, ls
end

-- findings on the main loop's software pipelining: the first global_load must come
-- before the first v_mfma / v_wmma (the next tile's loads are in flight while the matrix
-- instructions run), and no s_waitcnt vmcnt(0) may sit between the last global_load and
-- the back-edge (the loads stay in flight across it), nor, following the loop across the
-- back-edge, between the loop's entry and its first s_barrier (the loads stay in flight up
-- to the barrier: waited for by their LDS stores after it). {} when the kernel has no main
-- loop.
function M.pipelining(asm)
  local l, ls = M.main_loop(asm)
  if not l then return {} end
  local first_load, first_mma, last_load
  for k, i in ipairs(l.order) do
    local m = M.mnemonic(ls[i]) or ""
    if m:match("^global_load") or m:match("^buffer_load") then
      first_load = first_load or k
      last_load = k
    elseif (m:match("^v_mfma") or m:match("^v_wmma")) and not first_mma then
      first_mma = k
    end
  end
  local out = {}
  if not first_load then
    out[#out + 1] = "no global_load in the main loop"
  elseif first_load > first_mma then
    out[#out + 1] = ("first global_load (line %d) after the first matrix instruction (line %d)"):format(
      l.order[first_load], l.order[first_mma])
  end
  local function wait0(i)
    local m = M.mnemonic(ls[i]) or ""
    return (m == "s_waitcnt" or m == "s_waitcnt_vmcnt") and ls[i]:find("vmcnt%(0%)")
  end
  for k = (last_load or #l.order) + 1, #l.order do
    local i = l.order[k]
    if wait0(i) then out[#out + 1] = "s_waitcnt vmcnt(0) after the last global_load: " .. ls[i]:gsub("^%s+", "") end
  end
  for k = 1, (first_load or 1) - 1 do -- across the back-edge: the next iteration up to its first s_barrier
    local i = l.order[k]
    if (M.mnemonic(ls[i]) or "") == "s_barrier" then break end
    if wait0(i) then
      out[#out + 1] = "s_waitcnt vmcnt(0) across the back-edge before the s_barrier: " .. ls[i]:gsub("^%s+", "")
    end
  end
  return out
end

-- findings on the main loop's barriers (the innermost loop with the most v_mfma / v_wmma,
-- M.main_loop): from every
-- global_load, in one iteration's order and across the back-edge, no s_waitcnt vmcnt(0)
-- may come before the next s_barrier: the loads of the next K step stay in flight across
-- the matrix instructions and the barrier, and are waited for only by their LDS stores,
-- after it (LLVM 19 puts vmcnt(0) before every s_barrier on gfx908 / gfx11 unless the
-- barrier is inline assembly, passes/lower_barrier.h). {} when there is no such loop.
function M.loads_to_barrier(asm)
  local l, ls = M.main_loop(asm)
  if not l then return {} end
  local o, n, out, seen = l.order, #l.order, {}, {}
  for k = 1, n do
    local m = M.mnemonic(ls[o[k]]) or ""
    if m:match("^global_load") or m:match("^buffer_load") then
      for j = 1, n - 1 do
        local i = o[(k + j - 1) % n + 1]
        local mj = M.mnemonic(ls[i]) or ""
        if mj == "s_barrier" then break end
        if (mj == "s_waitcnt" or mj == "s_waitcnt_vmcnt") and ls[i]:find("vmcnt%(0%)") and not seen[i] then
          seen[i] = true
          out[#out + 1] = ("s_waitcnt vmcnt(0) between the global_load at line %d and the next s_barrier: %s"):format(
            o[k], (ls[i]:gsub("^%s+", "")))
        end
      end
    end
  end
  return out
end

-- The main loop's s_barrier count and its K steps (its matrix instructions over
-- mma_per_step, the matrix instructions of one K step of a wave: LLVM may unroll the
-- loop, and a double-buffered loop holds two steps): barriers, steps; nil without a loop.
function M.barriers_per_step(asm, mma_per_step)
  local l, ls = M.main_loop(asm)
  if not l then return nil end
  local nb, nm = 0, 0
  for _, i in ipairs(l.order) do
    local m = M.mnemonic(ls[i]) or ""
    if m == "s_barrier" then nb = nb + 1 end
    if m:match("^v_mfma") or m:match("^v_wmma") then nm = nm + 1 end
  end
  return nb, nm / mma_per_step
end

-- The matrix instructions of one K step of one wave of a GEMM kernel: the block tile
-- (perf config "vN:MB,NB,KB,...") over the instruction's MxNxK (its mnemonic in the
-- disassembly) and the workgroup's waves; nil without a matrix instruction.
function M.mma_per_step(asm, perf_config, waves)
  local shape
  for _, l in ipairs(lines(asm)) do
    local m = M.mnemonic(l) or ""
    if m:match("^v_mfma") or m:match("^v_wmma") then shape = m; break end
  end
  local mb, nb, kb = (perf_config or ""):match("^v%d:(%d+),(%d+),(%d+)")
  if not shape or not mb then return nil end
  local a, b, c = shape:match("(%d+)x(%d+)x(%d+)")
  return mb * nb * kb / (a * b * c) / waves
end

-- findings: 2-byte and 1-byte LDS stores in the main loop (a transposed copy written one
-- element at a time)
function M.narrow_lds_stores(asm)
  local l, ls = M.main_loop(asm)
  local out = {}
  if not l then return out end
  for i = l.head, l.back do
    local m = M.mnemonic(ls[i]) or ""
    if m:match("^ds_write_b8") or m:match("^ds_write_b16") or m:match("^ds_store_b8") or m:match("^ds_store_b16") then
      out[#out + 1] = (ls[i]:gsub("^%s+", ""))
    end
  end
  return out
end

-- findings on a no-matrix (FMA path) GEMM kernel's disassembly, tile = mPerThread x
-- nPerThread: in every innermost loop that multiplies floats the fused multiply-adds are a
-- positive multiple of tile (one K step, or several where LLVM unrolled) with no v_mul_f32,
-- and in the whole kernel no v_mul_f32 feeds a v_add_f32 / v_sub_f32 (amd_fma_spec.lua)
function M.fma_findings(asm, tile)
  local out = {}
  local loops, ls = M.loops(asm)
  local spans = {}
  for _, l in ipairs(loops) do if l.innermost then spans[#spans + 1] = l end end
  if #spans == 0 then spans[1] = { head = 1, back = #ls } end -- fully unrolled
  local checked = 0
  for _, l in ipairs(spans) do
    local fused, muls = M.fused_madds(ls, l.head, l.back), 0
    for k = l.head, l.back do
      for _, h in ipairs(M.halves(ls[k])) do
        if ((M.mnemonic(h) or ""):gsub("^v_dual_", "v_")):match("^v_mul_f32") then muls = muls + 1 end
      end
    end
    if fused + muls > 0 then
      checked = checked + 1
      local where = "loop at line " .. l.head .. ": "
      if fused == 0 or fused % tile ~= 0 then
        out[#out + 1] = where .. fused .. " fused multiply-adds, not a multiple of " .. tile
      end
      if muls > 0 then out[#out + 1] = where .. muls .. " x v_mul_f32" end
    end
  end
  if checked == 0 then out[#out + 1] = "no loop multiplies floats" end
  for _, f in ipairs(M.mul_feeding_add(ls)) do out[#out + 1] = "unfused: " .. f end
  return out
end

return M
