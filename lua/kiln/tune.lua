-- kiln/tune.lua — tuning GEMM perf configs (loaded by kiln/lib.lua): kiln.tune and the
-- `kiln tune` command (kiln.tune_main), local, sharded, on Slurm, and shard merging.
--
--   res = kiln.tune(g, {target=, device=, level="quick"|"full"|"exhaustive", jobs=, runs=,
--                       warmup=, budget_ms=, db=, progress=, shard=, configs=})
-- The candidates are kiln.tuning_space(g, {target=, level=}) (plus the heuristic itself,
-- "" below, unless sharded); kiln._tune_run (driver/tune.h) compiles them on a thread pool
-- (one IR context per thread) and times them one by one on the device (warm-up, rotating
-- buffer sets, median of the runs left after dropping outliers beyond 1.5 IQR), checking each
-- one's outputs against the first candidate's. The fastest config is written to the tuning
-- database (db: a path, default kiln.tuning_db_path(); false: none) for every GEMM kernel of
-- the graph, keyed by target, device name and problem key (driver/tuning_db.h), so that
-- kiln.compile picks it from then on. When the heuristic itself is fastest and no listed
-- config gives the same binary, nothing is written (the heuristic stays).
-- runs (default 20) timed launches per candidate, fewer (at least 5) when they would take more
-- than budget_ms (default 2000); warmup launches before (default 3).
-- configs = {...}: these candidates instead of the tuning space (tests, repeat runs).
-- _corrupt = CONFIG (tests only): that candidate's outputs are made wrong before the check.
-- shard = {I, N} (or "I/N", I from 0): only candidates j (from 0) with j % N == I, no
-- heuristic row: the piece of a distributed run (kiln tune --shard / --slurm; the shard
-- databases are folded with kiln.tuning_db_merge, which keeps the fastest per key).
-- progress: a function(t) ({phase=, done=, total=, config=, ms=, best_config=, best_ms=,
-- elapsed_ms=}) or true (a bar on stderr when it is a terminal, else plain lines).
-- res: {graph=, target=, device=, level=, results={ {config=, median_ms=, q1_ms=, q3_ms=,
-- runs=, dropped=, compile_ms=, error=, heuristic=}, ... } (fastest first, failures last),
-- best={config=, ms=}, heuristic_ms=, speedup= (heuristic / best), problems={{kernel=, key=,
-- problem=}}, ncandidates=, nfailed=, wall_ms= (compile_wall_ms + measure_wall_ms),
-- compile_wall_ms=, measure_wall_ms= (of which load_ms loading binaries on the device), jobs=,
-- runs=, db=, recorded=, total_ms= (kiln.tune end to end), profile={inputs_ms= (kiln.rand on the
-- host), compile_ms=, load_ms=, prepare_ms= (device buffers, uploads), run_ms= (launches),
-- check_ms= (downloading and checking every output element), record_ms= (the best config's
-- compile and the database), other_ms=}: where total_ms went (the table's "time" line)}.
return function(kiln)
  local fmt = string.format

  local function graph_name(g)
    if g.name then return g.name end
    local f = g.func or g
    local ok, n = pcall(function() return f:attr("sym_name") end)
    return ok and tostring(n) or "graph"
  end

  local function params_of(g)
    if g.params then return g:params() end
    return kiln._g.params(g)
  end

  local function parse_shard(s)
    if s == nil then return nil end
    local i, n
    if type(s) == "table" then
      i, n = s[1], s[2]
    else
      i, n = tostring(s):match("^(%d+)/(%d+)$")
      i, n = tonumber(i), tonumber(n)
    end
    if not (math.type(i) == "integer" and math.type(n) == "integer" and n >= 1 and i >= 0 and i < n) then
      error(fmt("shard must be I/N with 0 <= I < N, got %s", tostring(type(s) == "table" and (tostring(s[1]) .. "/" ..
        tostring(s[2])) or s)), 0)
    end
    return { i, n }
  end

  local function fmt_ms(ms)
    if not ms then return "-" end
    if ms >= 100 then return fmt("%.1f", ms) end
    if ms >= 1 then return fmt("%.3f", ms) end
    return fmt("%.4g", ms)
  end

  local function fmt_s(ms)
    local s = ms / 1000
    if s >= 60 then return fmt("%dm%02ds", s // 60, math.floor(s % 60)) end
    return fmt("%.1fs", s)
  end

  -- A progress printer: a bar redrawn in place on a terminal, plain lines otherwise.
  function kiln.tune_progress_printer(out, tty, label)
    out = out or io.stderr
    label = label and (label .. " ") or ""
    local phase, phase_start = nil, 0
    return function(p)
      if p.phase ~= phase then phase, phase_start = p.phase, p.elapsed_ms end
      local done = (p.phase == "compile" and p.done or p.total + p.done)
      local total = 2 * p.total
      local frac = done / total
      -- the rest of this phase at this phase's pace (the measure phase's length is unknown
      -- while compiling)
      local eta = p.done > 0 and (p.elapsed_ms - phase_start) / p.done * (p.total - p.done) or 0
      local best = p.best_config and fmt("best %s %s ms", p.best_config == "" and "(heuristic)" or p.best_config,
        fmt_ms(p.best_ms)) or "best -"
      if tty then
        local width = 24
        local fill = math.floor(frac * width + 0.5)
        out:write(fmt("\r\27[K%s[%s%s] %s %d/%d  %s  %s %s", label, ("#"):rep(fill), ("."):rep(width - fill), p.phase,
          p.done, p.total, best, p.phase == "compile" and "compile ETA" or "ETA", fmt_s(eta)))
        if done == total then out:write("\n") end
        out:flush()
      else
        -- plain lines: every measurement, and the compile phase in tenths
        local step = math.max(1, p.total // 10)
        if p.phase == "measure" or p.done == p.total or p.done % step == 0 then
          local what = p.phase == "measure" and fmt("%s %s", p.config == "" and "(heuristic)" or p.config,
            p.ms and (fmt_ms(p.ms) .. " ms") or "failed") or "compiled"
          out:write(fmt("%s%s %d/%d %s; %s; elapsed %s, %s %s\n", label, p.phase, p.done, p.total, what, best,
            fmt_s(p.elapsed_ms), p.phase == "compile" and "compile ETA" or "ETA", fmt_s(eta)))
          out:flush()
        end
      end
    end
  end

  local OPTS = { target = true, device = true, level = true, jobs = true, runs = true, warmup = true, db = true,
    progress = true, shard = true, budget_ms = true, configs = true, _corrupt = true }

  function kiln.tune(g, o)
    o = o or {}
    if type(o) ~= "table" then error("kiln.tune: options must be a table", 2) end
    for k in pairs(o) do
      if not OPTS[k] then error(fmt("kiln.tune: unknown option '%s'", tostring(k)), 2) end
    end
    local level = o.level or "quick"
    local shard = parse_shard(o.shard)
    local dev = o.device
    if type(dev) == "string" then dev = kiln.device(dev) end
    local target = o.target
    if not dev then
      if target == "host" then dev = kiln.device("host")
      elseif target == nil then dev = kiln.device(os.getenv("KILN_DEVICE") or "auto")
      else dev = kiln.device("auto") end
    end
    target = target or dev.arch
    local wall0, t0 = os.time(), kiln.clock_ms()
    local space = o.configs or kiln.tuning_space(g, { target = target, level = level })
    if #space == 0 then
      error(fmt("kiln.tune: %s has no GEMM to tune on %s (only GEMM/convolution kernels take a perf config)",
        graph_name(g), target), 2)
    end
    local configs = {}
    if not shard then configs[1] = "" end
    for j, c in ipairs(space) do
      if not shard or (j - 1) % shard[2] == shard[1] then configs[#configs + 1] = c end
    end
    local inputs = {}
    local ti = kiln.clock_ms()
    for _, p in ipairs(params_of(g)) do
      inputs[p.name] = kiln.rand(p.shape, p.dtype, p.strides and { strides = p.strides } or nil)
    end
    local inputs_ms = kiln.clock_ms() - ti
    local progress = o.progress
    if progress == true then progress = kiln.tune_progress_printer(io.stderr, kiln._isatty(2), graph_name(g)) end
    local res = {
      graph = graph_name(g), target = target, device = dev.name, level = level, ncandidates = #configs,
      shard = shard and fmt("%d/%d", shard[1], shard[2]) or nil,
    }
    local r = #configs > 0 and kiln._tune_run(g, {
      device = dev, target = target, configs = configs, inputs = inputs, jobs = o.jobs, runs = o.runs,
      warmup = o.warmup, budget_ms = o.budget_ms, progress = progress or nil, corrupt = o._corrupt,
    }) or { compile_wall_ms = 0, measure_wall_ms = 0, jobs = 0 }
    local tf = kiln.clock_ms()
    res.compile_wall_ms, res.measure_wall_ms, res.jobs = r.compile_wall_ms, r.measure_wall_ms, r.jobs
    res.wall_ms = r.compile_wall_ms + r.measure_wall_ms
    -- where the time went (the measure phase's parts summed over the candidates)
    local prof = { inputs_ms = inputs_ms, compile_ms = r.compile_wall_ms, load_ms = 0, prepare_ms = 0, run_ms = 0,
      check_ms = 0 }
    for _, x in ipairs(r) do
      for _, k in ipairs { "load_ms", "prepare_ms", "run_ms", "check_ms" } do prof[k] = prof[k] + (x[k] or 0) end
    end
    res.load_ms = prof.load_ms -- binaries loaded on the device (in the measure phase)
    res.profile = prof
    local ok, bad, heur = {}, {}, nil
    for _, x in ipairs(r) do
      x.heuristic = x.config == "" or nil
      if x.error then bad[#bad + 1] = x else ok[#ok + 1] = x end
      if x.heuristic then heur = x end
    end
    table.sort(ok, function(a, b) return a.median_ms < b.median_ms end)
    res.results = {}
    for _, x in ipairs(ok) do res.results[#res.results + 1] = x end
    for _, x in ipairs(bad) do res.results[#res.results + 1] = x end
    res.nfailed = #bad
    res.runs = ok[1] and ok[1].runs or 0
    res.heuristic_ms = heur and heur.median_ms
    -- the best listed config (the heuristic row counts as the listed config with its binary)
    local best
    for _, x in ipairs(ok) do
      if not x.heuristic then best = x; break end
      for _, y in ipairs(ok) do
        if not y.heuristic and y.binary_hash == x.binary_hash then best = { config = y.config, median_ms = x.median_ms }
          break
        end
      end
      if best then break end
      res.heuristic_best = true
      break
    end
    if best then
      res.best = { config = best.config, ms = best.median_ms }
      if res.heuristic_ms then res.speedup = res.heuristic_ms / best.median_ms end
      local p = kiln.compile(g, { target = target, perf_config = best.config, tuning_db = false })
      res.problems = {}
      for _, k in ipairs(p:kernels(target)) do
        if k.problem_key ~= "" then
          res.problems[#res.problems + 1] = { kernel = k.name, key = k.problem_key, problem = k.problem }
        end
      end
      local db = o.db
      if db == nil then db = kiln.tuning_db_path() end
      if db then
        local runners = {}
        for _, x in ipairs(ok) do
          if #runners < 3 and x.config ~= best.config and not x.heuristic then runners[#runners + 1] = x.median_ms end
        end
        local recs = {}
        for _, pr in ipairs(res.problems) do
          recs[#recs + 1] = { target = target, device = dev.name, key = pr.key, problem = pr.problem,
            config = best.config, ms = best.median_ms, runners = runners }
        end
        kiln.tuning_db_write(db, recs)
        res.db, res.recorded = db, #recs
      end
    end
    res.date = os.date("!%Y-%m-%dT%H:%M:%SZ", wall0)
    local t1 = kiln.clock_ms()
    prof.record_ms = t1 - tf
    res.total_ms = t1 - t0
    prof.other_ms = math.max(0, res.total_ms - (prof.inputs_ms + prof.compile_ms + prof.load_ms + prof.prepare_ms +
      prof.run_ms + prof.check_ms + prof.record_ms))
    return res
  end

  -- The final table of one tuning run, as text.
  function kiln.tune_table(res, top)
    top = top or 10
    local lines = {}
    lines[#lines + 1] = fmt("%s on %s (%s), level %s%s: %d candidates, %d failed; compile %s on %d thread%s, " ..
      "measure %s (%d runs each, median after dropping outliers)", res.graph, res.target, res.device, res.level,
      res.shard and (", shard " .. res.shard) or "", res.ncandidates, res.nfailed, fmt_s(res.compile_wall_ms),
      res.jobs, res.jobs == 1 and "" or "s", fmt_s(res.measure_wall_ms), res.runs)
    local p = res.profile
    if p then
      lines[#lines + 1] = fmt("  time %s end to end: inputs %s, compile %s, load on the device %s, buffers and " ..
        "upload %s, timed runs %s, output checks %s, record %s, other %s", fmt_s(res.total_ms), fmt_s(p.inputs_ms),
        fmt_s(p.compile_ms), fmt_s(p.load_ms), fmt_s(p.prepare_ms), fmt_s(p.run_ms), fmt_s(p.check_ms),
        fmt_s(p.record_ms), fmt_s(p.other_ms))
    end
    lines[#lines + 1] = fmt("  %-4s %-28s %12s %12s %9s %11s", "rank", "config", "median ms", "IQR ms", "dropped",
      "compile ms")
    local shown = 0
    for i, x in ipairs(res.results) do
      if x.error then break end
      if shown < top or x.heuristic then
        lines[#lines + 1] = fmt("  %-4d %-28s %12s %12s %9s %11.0f", i, x.heuristic and "(heuristic)" or x.config,
          fmt_ms(x.median_ms), fmt_ms(x.q3_ms - x.q1_ms), fmt("%d/%d", x.dropped, x.runs), x.compile_ms)
        shown = shown + 1
      end
    end
    for _, x in ipairs(res.results) do
      if x.error then
        lines[#lines + 1] = fmt("  fail %-28s %s", x.heuristic and "(heuristic)" or x.config,
          (x.error:gsub("\n.*", "")))
      end
    end
    if res.best then
      lines[#lines + 1] = fmt("best %s: %s ms%s%s", res.best.config, fmt_ms(res.best.ms),
        res.speedup and fmt(" (heuristic %s ms: %.2fx)", fmt_ms(res.heuristic_ms), res.speedup) or "",
        res.db and fmt("; %d record%s written to %s", res.recorded, res.recorded == 1 and "" or "s", res.db) or "")
    elseif res.heuristic_best then
      lines[#lines + 1] = fmt("best: the heuristic (%s ms); no record written", fmt_ms(res.heuristic_ms))
    else
      lines[#lines + 1] = "no candidate ran"
    end
    return table.concat(lines, "\n")
  end

  ---------------------------------------------------------------- kiln tune (CLI)
  local USAGE = [[
usage: kiln tune FILE.lua|FILE.kir|FILE.mlir [--level L] [--target T] [--jobs N] [--runs N] [--db PATH]
       kiln tune FILE --shard I/N --db OUT [options]       tune shard I (0..N-1) of the candidates only
       kiln tune FILE --slurm DIR [--shards N] [--partition P] [--submit] [options]
       kiln tune --merge SHARD.db... [--db PATH]           fold shard databases into the database
  FILE.lua returns a graph or a list of graphs; FILE.kir holds graph functions; FILE.mlir
  MIGraphX-dialect functions. Each graph's GEMM perf configs (kiln.tuning_space) are compiled
  in parallel and timed on the device; the fastest goes to the tuning database, which
  kiln.compile then uses.
  --level quick|full|exhaustive   the candidate list (default quick: at most 30 + the heuristic)
  --target T     compile target (default: the device's; host, sm_90, gfx942 ...)
  --device D     host, cuda, hip or auto (default: host for --target host, else $KILN_DEVICE
                 or auto; the target defaults to the device's)
  --jobs N       compile threads (default: the online CPUs)
  --runs N       timed launches per candidate (default 20; fewer for slow ones)
  --db PATH      the tuning database (default $KILN_TUNING_DB, else ~/.cache/kiln/tuning.db)
  --no-db        write no database
  --shard I/N    only candidates j with j % N == I (no heuristic row); with --db OUT
  --slurm DIR    write DIR/tasks.txt and DIR/tune.sbatch (a job array of --shards tasks,
                 default 4, each writing DIR/shard-$SLURM_ARRAY_TASK_ID.db) and print the
                 sbatch command; --submit runs it; --partition P picks the partition
  --merge        the other arguments are shard databases: keep the fastest record per key
  Values go as --opt=value or --opt value; -- ends the options. A progress bar goes to
  stderr on a terminal (plain lines otherwise); the final table to stdout.]]

  local TAKES = { ["--level"] = "level", ["--target"] = "target", ["--jobs"] = "jobs", ["--runs"] = "runs",
    ["--db"] = "db", ["--shard"] = "shard", ["--slurm"] = "slurm", ["--shards"] = "shards",
    ["--partition"] = "partition", ["--device"] = "device" }
  local FLAGS = { ["--merge"] = "merge", ["--submit"] = "submit", ["--no-db"] = "no_db" }

  local function parse(args)
    local o, files = {}, {}
    local i = 1
    while i <= #args do
      local a = args[i]
      if a == "--" then
        for k = i + 1, #args do files[#files + 1] = args[k] end
        break
      elseif a == "-h" or a == "--help" then
        o.help = true
        return o
      elseif a:match("^%-%-") then
        local name, v = a:match("^(%-%-[^=]+)=(.*)$")
        name = name or a
        if FLAGS[name] and v == nil then
          o[FLAGS[name]] = true
        else
          local key = TAKES[name]
          if not key then error(fmt("unknown option '%s'", a), 0) end
          if v == nil then
            i = i + 1
            v = args[i]
            if v == nil then error(fmt("'%s' needs an argument", name), 0) end
          end
          o[key] = v
        end
      elseif a:match("^%-.") then
        error(fmt("unknown option '%s'", a), 0)
      else
        files[#files + 1] = a
      end
      i = i + 1
    end
    o.files = files
    if o.merge then
      if #files == 0 then error("--merge needs shard databases", 0) end
      return o
    end
    if #files ~= 1 then error(#files == 0 and "no input file" or "one input file only", 0) end
    o.file = files[1]
    if o.level and not (o.level == "quick" or o.level == "full" or o.level == "exhaustive") then
      error(fmt("--level %s: expected quick, full or exhaustive", o.level), 0)
    end
    for _, k in ipairs { "jobs", "runs", "shards" } do
      if o[k] then
        local n = tonumber(o[k])
        if not n or math.type(n) ~= "integer" or n < 1 then error(fmt("--%s %s: expected a positive integer", k, o[k]), 0) end
        o[k] = n
      end
    end
    if o.shard then o.shard = parse_shard(o.shard) end
    if o.shard and not o.db and not o.no_db then error("--shard needs --db OUT (the shard's database)", 0) end
    if o.slurm and o.shard then error("give --slurm or --shard, not both", 0) end
    if (o.shards or o.partition or o.submit) and not o.slurm then error("--shards, --partition and --submit go with --slurm", 0) end
    return o
  end

  local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

  local function abspath(p)
    if p:sub(1, 1) == "/" then return p end
    local h = io.popen("pwd")
    local d = h:read("l")
    h:close()
    return d .. "/" .. p
  end

  -- kiln tune FILE --slurm DIR: the task list and the job-array script
  local function write_slurm(o, graphs)
    local dir = abspath(o.slurm)
    os.execute("mkdir -p " .. sh_quote(dir))
    local n = o.shards or 4
    local target = o.target or "host"
    local lines = { "# kiln tune task list: task (= SLURM_ARRAY_TASK_ID), graph, shard, problem, candidates",
      fmt("# file %s, level %s, target %s, %d shards", abspath(o.file), o.level or "quick", target, n) }
    for _, g in ipairs(graphs) do
      local space = kiln.tuning_space(g, { target = target, level = o.level or "quick" })
      local problem = "-"
      if space[1] then
        local p = kiln.compile(g, { target = target, perf_config = space[1], tuning_db = false })
        for _, k in ipairs(p:kernels(target)) do
          if k.problem_key ~= "" then problem = k.problem_key .. " " .. k.problem; break end
        end
      end
      for t = 0, n - 1 do
        local mine = {}
        for j, c in ipairs(space) do if (j - 1) % n == t then mine[#mine + 1] = c end end
        lines[#lines + 1] = fmt("%d\t%s\t%d/%d\t%s\t%s", t, graph_name(g), t, n, problem,
          #mine > 0 and table.concat(mine, " ") or "-")
      end
    end
    local f = assert(io.open(dir .. "/tasks.txt", "wb"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    local exe = kiln._exe_path() or "kiln"
    local args = { sh_quote(exe), "tune", sh_quote(abspath(o.file)), "--shard", '"$SLURM_ARRAY_TASK_ID/' .. n .. '"',
      "--db", '"' .. dir .. '/shard-$SLURM_ARRAY_TASK_ID.db"', "--level", o.level or "quick", "--target", target }
    if o.device then args[#args + 1] = "--device " .. sh_quote(o.device) end
    if o.jobs then args[#args + 1] = "--jobs " .. o.jobs end
    if o.runs then args[#args + 1] = "--runs " .. o.runs end
    local sb = { "#!/bin/bash", "# kiln tune job array: one task per shard of the candidates (tasks.txt)",
      "#SBATCH --job-name=kiln-tune", fmt("#SBATCH --array=0-%d", n - 1), "#SBATCH --ntasks=1",
      fmt("#SBATCH --output=%s/shard-%%a.log", dir) }
    if o.partition then sb[#sb + 1] = "#SBATCH --partition=" .. o.partition end
    if target ~= "host" then sb[#sb + 1] = "#SBATCH --gres=gpu:1" end
    sb[#sb + 1] = "set -e"
    sb[#sb + 1] = "exec " .. table.concat(args, " ")
    f = assert(io.open(dir .. "/tune.sbatch", "wb"))
    f:write(table.concat(sb, "\n"), "\n")
    f:close()
    local cmd = "sbatch " .. sh_quote(dir .. "/tune.sbatch")
    print(fmt("wrote %s/tasks.txt (%d graph%s x %d shards) and %s/tune.sbatch", dir, #graphs,
      #graphs == 1 and "" or "s", n, dir))
    print(cmd)
    print(fmt("then: %s tune --merge %s/shard-*.db%s", exe, dir, o.db and (" --db " .. o.db) or ""))
    if o.submit then
      local h = io.popen(cmd .. " 2>&1")
      local out = h:read("a")
      local okc = h:close()
      io.write(out)
      if not okc then error("sbatch failed", 0) end
    end
  end

  function kiln.tune_main(args)
    local pok, o = pcall(parse, args)
    if not pok then
      io.stderr:write("kiln tune: ", tostring(o), "\n", USAGE, "\n")
      return 2
    end
    if o.help then
      print(USAGE)
      return 0
    end
    local ok, err = pcall(function()
      if o.merge then
        local db = o.db or kiln.tuning_db_path()
        if not db then error("no database: give --db PATH", 0) end
        local n, warn = kiln.tuning_db_merge(db, o.files)
        for _, w in ipairs(warn) do io.stderr:write("kiln tune: warning: ", w, "\n") end
        print(fmt("merged %d shard%s: %d record%s into %s", #o.files, #o.files == 1 and "" or "s", n,
          n == 1 and "" or "s", db))
        return
      end
      local graphs = kiln._load_graphs(o.file)
      if o.slurm then return write_slurm(o, graphs) end
      local db = o.db
      if o.no_db then db = false end
      local tty = kiln._isatty(2)
      local tuned = 0
      for _, g in ipairs(graphs) do
        local okt, res = pcall(kiln.tune, g, { target = o.target, device = o.device, level = o.level, jobs = o.jobs,
          runs = o.runs, db = db, shard = o.shard,
          progress = kiln.tune_progress_printer(io.stderr, tty, graph_name(g)) })
        if okt then
          print(kiln.tune_table(res))
          tuned = tuned + 1
        elseif tostring(res):find("has no GEMM to tune", 1, true) then
          print(fmt("%s: no GEMM to tune", graph_name(g)))
        else
          error(res, 0)
        end
      end
      if tuned == 0 then error(fmt("%s: no graph with a GEMM to tune", o.file), 0) end
    end)
    if not ok then
      io.stderr:write("kiln tune: ", tostring(err):gsub("\n$", ""), "\n")
      return 1
    end
    return 0
  end
end
