-- scripts/lib/suite_select.lua — the section selection of scripts/gpu_suite.lua, a plain Lua
-- module (no kiln calls) so that spec/lua/suite_select_spec.lua tests it on the host.
--
--   local SEL = require "suite_select"
--   local sel = SEL.new(sections, os.getenv("KILN_SUITE_SKIP"), os.getenv("KILN_SUITE_ONLY"))
--   if sel:enter("name", clock_ms, passed, failed) then ... end   -- per section, in order
--   sel:enter(nil, clock_ms, passed, failed)                     -- closes the last one
--
-- sections: the suite's section names in run order. KILN_SUITE_SKIP leaves the named
-- sections out, KILN_SUITE_ONLY runs just the named ones (both: ONLY's minus SKIP's);
-- names are separated by commas and / or spaces; an unknown name is an error naming the
-- valid ones (SEL.new returns nil and the message). enter() closes the open section with
-- one line (its name, the cases it passed and failed, its seconds; header() lists the
-- skipped ones) and returns whether the section runs; a name not in the list is an error
-- (the list and the suite's section() calls must agree).
-- SEL.hopper(arch): the NVIDIA Hopper targets (sm_90 and sm_90a, the latter what a compute
-- capability 9.0 device compiles for); SEL.mma_sync_target(arch): the target whose GEMMs take
-- mma.sync on that device (sm_90 for sm_90a, whose default is wgmma; else arch itself).
local M = {}

function M.names(s)
  local out = {}
  for n in tostring(s or ""):gmatch("[^,%s]+") do out[#out + 1] = n end
  return out
end

function M.hopper(arch) return arch == "sm_90" or arch == "sm_90a" end
function M.mma_sync_target(arch) return arch == "sm_90a" and "sm_90" or arch end

local Sel = {}
Sel.__index = Sel

function M.new(sections, skip, only)
  local known = {}
  for i, n in ipairs(sections) do
    if known[n] then return nil, "suite_select: section '" .. n .. "' is listed twice" end
    known[n] = i
  end
  local function parse(var, s)
    local set, any = {}, false
    for _, n in ipairs(M.names(s)) do
      if not known[n] then
        return nil, ("%s: unknown section '%s' (sections: %s)"):format(var, n, table.concat(sections, ", "))
      end
      set[n], any = true, true
    end
    return set, any
  end
  local sk, err = parse("KILN_SUITE_SKIP", skip)
  if not sk then return nil, err end
  local on, any_only = parse("KILN_SUITE_ONLY", only)
  if not on then return nil, any_only end
  local sel = setmetatable({ sections = sections, runs = {}, known = known, open = nil }, Sel)
  for _, n in ipairs(sections) do sel.runs[n] = not sk[n] and (not any_only or on[n] == true) end
  sel.print = function(line) print(line); io.stdout:flush() end
  return sel
end

-- The names that run and those that are skipped, in order.
function Sel:lists()
  local run, skipped = {}, {}
  for _, n in ipairs(self.sections) do
    if self.runs[n] then run[#run + 1] = n else skipped[#skipped + 1] = n end
  end
  return run, skipped
end

-- The lines printed at the start: every name, then what runs and what is skipped.
function Sel:header()
  local run, skipped = self:lists()
  return {
    "sections (names for KILN_SUITE_SKIP / KILN_SUITE_ONLY): " .. table.concat(self.sections, ", "),
    ("running %d of %d sections%s"):format(#run, #self.sections,
                                           #skipped > 0 and ("; skipped: " .. table.concat(skipped, ", ")) or ""),
  }
end

function Sel:enter(name, now_ms, passed, failed)
  if name ~= nil and not self.known[name] then
    error("suite_select: section '" .. tostring(name) .. "' is not in the suite's list", 2)
  end
  local o = self.open
  if o then
    self.print(("== section %s: %d passed, %d failed, %.1f s"):format(o.name, passed - o.passed, failed - o.failed,
                                                                    (now_ms - o.t0) / 1e3))
    self.open = nil
  end
  if name == nil then return false end
  if not self.runs[name] then return false end -- the header listed it as skipped
  self.open = { name = name, t0 = now_ms, passed = passed, failed = failed }
  return true
end

return M
