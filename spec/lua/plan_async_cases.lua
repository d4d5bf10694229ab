-- plan_async_cases.lua — the asynchronous executor's cases, shared by
-- spec/lua/plan_async_spec.lua (host) and scripts/gpu_suite.lua (GPU): graphs whose plans
-- have independent branches, and the check of a run's timing records against its plan.
local kiln = require "kiln"
local M = {}

-- Two independent chains (exp -> row sum, scale -> row max, each a workspace and two
-- launches) joined by a product: waves alloc | launch | launch | free + join.
function M.branches(N, dt)
  dt = dt or "f32"
  local g = kiln.graph("branches")
  local a = g:param("a", { N, N }, dt)
  local c = g:param("c", { N, N }, dt)
  local y1, y2 = a:exp():reduce_sum({ 1 }), (c * 2):reduce_max({ 1 })
  g:output(y1, y2, y1 * y2)
  local inputs = function()
    return { a = kiln.rand({ N, N }, dt, { dist = "normal" }), c = kiln.rand({ N, N }, dt, { dist = "normal" }) }
  end
  return g, inputs
end

-- The default pipeline with graph-partition{input-fusion=false}: the branches' exp and
-- scale stay kernels of their own (each chain: a workspace and two launches).
function M.no_producer_fusion()
  return (kiln.default_pipeline():gsub("graph%-partition", "graph-partition{input-fusion=false}", 1))
end

-- Two independent dots with different epilogues (one wave of two launches).
function M.two_dots(M_, N, K, dt)
  dt = dt or "f32"
  local g = kiln.graph("two_dots")
  local a, b = g:param("a", { M_, K }, dt), g:param("b", { K, N }, dt)
  local c, d = g:param("c", { M_, K }, dt), g:param("d", { K, N }, dt)
  g:output(a:dot(b):relu(), c:dot(d) * 2)
  local inputs = function()
    local R = function(s) return kiln.rand(s, dt, { dist = "normal" }) end
    return { a = R({ M_, K }), b = R({ K, N }), c = R({ M_, K }), d = R({ K, N }) }
  end
  return g, inputs
end

-- The timing records of one run against its plan: one record per step (kind, token);
-- end >= start >= 0; every step starts no earlier than each step it waits on ended
-- (events / the clock are monotonic). Returns ok, message, and the pairs of launches
-- with no dependency path between them whose intervals overlap (ran concurrently).
function M.check_timing(plan, timing)
  if #timing ~= #plan.steps then return false, ("%d timing records for %d steps"):format(#timing, #plan.steps) end
  local index, before = {}, {}
  for i, s in ipairs(plan.steps) do
    local t = timing[i]
    if t.kind ~= s.kind or t.token ~= s.token then return false, ("record %d is %s %s, step is %s %s"):format(i, t.kind, t.token, s.kind, s.token) end
    if not (t.start_ms >= 0 and t.end_ms >= t.start_ms and math.abs(t.ms - (t.end_ms - t.start_ms)) < 1e-9) then
      return false, ("step %d: interval [%s, %s] ms %s"):format(i, t.start_ms, t.end_ms, t.ms)
    end
    before[i] = {}
    for _, w in ipairs(s.waits) do
      local j = index[w]
      before[i][j] = true
      for k in pairs(before[j]) do before[i][k] = true end
      if t.start_ms < timing[j].end_ms then
        return false, ("step %d started at %.4f ms, before step %d it waits on ended (%.4f ms)"):format(i, t.start_ms, j, timing[j].end_ms)
      end
    end
    index[s.token] = i
  end
  local overlaps = {}
  for i, s in ipairs(plan.steps) do
    for j = 1, i - 1 do
      if s.kind == "launch" and plan.steps[j].kind == "launch" and not before[i][j]
         and timing[i].start_ms < timing[j].end_ms and timing[j].start_ms < timing[i].end_ms then
        overlaps[#overlaps + 1] = { j, i }
      end
    end
  end
  return true, "", overlaps
end

return M
