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

return M
