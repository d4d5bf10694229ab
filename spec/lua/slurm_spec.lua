-- slurm_spec.lua — distributed tuning through a real Slurm job array (kiln tune --slurm,
-- lua/kiln/tune.lua): a one-node cluster on loopback is started inside the test (munged with
-- a key generated in a temporary directory, slurmctld and slurmd on ports of their own, no
-- cgroups), a 2-shard quick tuning of a tiny host GEMM is submitted, waited for (bounded),
-- merged, and the database must hold the fastest shard's config, which kiln.compile then
-- picks. The daemons are stopped at the end, also on failure. Pending (with the reason) only
-- where the slurm-wlm / munge packages are missing or slurmctld cannot start.
local kiln = require "kiln"
local helper = require "spec.lua.helper"

local q = helper.shell_quote

local function sh(cmd)
  local out, err, code = helper.run(cmd)
  return out, err, code
end

local function have(cmd) return select(3, sh("command -v " .. cmd .. " >/dev/null")) == 0 end

local function sleep(s) os.execute("sleep " .. s) end

-- Polls fn() every 0.5 s until it returns a truthy value or `limit` seconds pass.
local function wait_for(limit, fn)
  local t0 = os.time()
  repeat
    local v = fn()
    if v then return v end
    sleep(0.5)
  until os.time() - t0 > limit
  return nil
end

describe("kiln tune on Slurm #tune #slurm", function()
  local T, pids, env = nil, {}, ""

  local function start(name, cmd)
    local out = sh(("%s > %s/%s.out 2>&1 & echo $!"):format(cmd, T, name))
    pids[#pids + 1] = tonumber(out:match("%d+"))
  end

  local function stop_all()
    for i = #pids, 1, -1 do if pids[i] then os.execute("kill " .. pids[i] .. " 2>/dev/null") end end
    if T then
      local f = io.open(T .. "/munged.pid")
      if f then
        local pid = f:read("n")
        f:close()
        if pid then os.execute("kill " .. math.tointeger(pid) .. " 2>/dev/null") end
      end
    end
    pids = {}
  end

  local function tail(name)
    local f = io.open(T .. "/" .. name)
    if not f then return "(no " .. name .. ")" end
    local s = f:read("a")
    f:close()
    return s:sub(-1500)
  end

  it("tunes shards as a job array, merges them and compiles with the result", function()
    for _, c in ipairs { "munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo" } do
      if not have(c) then
        pending(c .. " is not installed (Debian packages slurm-wlm and munge: scripts/lib/setup.sh installs them)")
        return
      end
    end
    T = sh("mktemp -d"):gsub("\n$", "")
    os.execute("chmod 755 " .. q(T))
    finally(function()
      stop_all()
      os.execute("rm -rf " .. q(T))
    end)
    local user = sh("id -un"):gsub("\n$", "")
    -- munge with a key of its own
    assert.are.equal(0, select(3, sh(("dd if=/dev/urandom of=%s/munge.key bs=1024 count=1 2>/dev/null && chmod 400 " ..
      "%s/munge.key && mkdir -p %s/state %s/spool"):format(T, T, T, T))))
    local _, merr, mcode = sh(("munged -f --key-file=%s/munge.key --socket=%s/munge.sock --pid-file=%s/munged.pid " ..
      "--log-file=%s/munged.log --seed-file=%s/munged.seed"):format(T, T, T, T, T))
    assert.are.equal(0, mcode, "munged did not start: " .. merr .. tail("munged.log"))
    math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16))
    local port = 20000 + math.random(0, 9000) * 2
    local conf = T .. "/slurm.conf"
    local f = assert(io.open(conf, "w"))
    f:write(([[
ClusterName=kilntest
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%s/munge.sock
CredType=cred/munge
SlurmUser=%s
SlurmdUser=%s
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/slurmctld.log
SlurmdLogFile=%s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=kiln Nodes=localhost Default=YES MaxTime=INFINITE State=UP
]]):format(port, port + 1, T, user, user, T, T, T, T, T, T))
    f:close()
    env = "SLURM_CONF=" .. q(conf) .. " "
    start("slurmctld", env .. "slurmctld -D -f " .. q(conf))
    local up = wait_for(15, function() return select(3, sh(env .. "scontrol ping | grep -q UP")) == 0 end)
    if not up then
      pending("slurmctld could not start here: " .. tail("slurmctld.log") .. tail("slurmctld.out"))
      return
    end
    start("slurmd", env .. "slurmd -D -f " .. q(conf) .. " -N localhost")
    local idle = wait_for(20, function()
      local out = sh(env .. "sinfo -h -o %T")
      return out:match("idle") ~= nil
    end)
    assert.truthy(idle, "the node did not become idle:\n" .. tail("slurmd.log") .. tail("slurmd.out") ..
      tail("slurmctld.log"))

    -- the tuning problem and the job array
    local src = T .. "/mm.lua"
    f = assert(io.open(src, "w"))
    f:write([[
      local g = kiln.graph("slurm_mm")
      local a, b = g:param("a", {12, 10}, "f32"), g:param("b", {10, 14}, "f32")
      g:output((g:dot(a, b) + 1):relu())
      return g]])
    f:close()
    local bin = q(helper.kiln_bin())
    local job = T .. "/job"
    local out, err, code = sh(env .. bin .. " tune " .. q(src) .. " --slurm " .. q(job) ..
      " --shards 2 --partition kiln --level quick --runs 3 --submit")
    assert.are.equal(0, code, err .. out)
    helper.has(out, "sbatch " .. q(job .. "/tune.sbatch"))
    local id = out:match("Submitted batch job (%d+)")
    assert.truthy(id, out)
    local tasks = helper.read_file(job .. "/tasks.txt")
    helper.has(tasks, "0\tslurm_mm\t0/2\t")
    helper.has(tasks, "1\tslurm_mm\t1/2\t")
    helper.has(helper.read_file(job .. "/tune.sbatch"), "#SBATCH --array=0-1")
    local done = wait_for(45, function() return sh(env .. "squeue -h -j " .. id):match("%S") == nil end)
    assert.truthy(done, "the job array did not finish in 45 s:\n" .. sh(env .. "squeue") .. tail("slurmctld.log"))
    local states = sh(env .. "scontrol -o show job " .. id)
    local n = 0
    for st in states:gmatch("JobState=(%S+)") do
      n = n + 1
      assert.are.equal("COMPLETED", st, states .. tail("job/shard-0.log") .. tail("job/shard-1.log"))
    end
    assert.are.equal(2, n, states)

    -- merge: the fastest of the shards' bests
    local shards = { job .. "/shard-0.db", job .. "/shard-1.db" }
    local best
    for _, s in ipairs(shards) do
      local recs = kiln.tuning_db_read(s)
      assert.are.equal(1, #recs, s .. ":\n" .. tail("job/shard-0.log"))
      if not best or recs[1].ms < best.ms then best = recs[1] end
    end
    local db = T .. "/tuning.db"
    out, err, code = sh(bin .. " tune --merge " .. q(job) .. "/shard-*.db --db " .. q(db))
    assert.are.equal(0, code, err)
    helper.has(out, "merged 2 shards: 1 record into")
    local recs = kiln.tuning_db_read(db)
    assert.are.equal(1, #recs)
    assert.are.same({ best.config, best.ms, best.key }, { recs[1].config, recs[1].ms, recs[1].key })
    local g = kiln.graph("slurm_mm")
    local a, b = g:param("a", { 12, 10 }, "f32"), g:param("b", { 10, 14 }, "f32")
    g:output((g:dot(a, b) + 1):relu())
    local p = kiln.compile(g, { target = "host", tuning_db = db })
    assert.are.same({ best.config, "tuned (db)" }, { p:kernels()[1].perf_config, p:kernels()[1].perf_config_source })
    local ins = { a = kiln.rand({ 12, 10 }, "f32"), b = kiln.rand({ 10, 14 }, "f32") }
    local c = kiln.compare(p:run(ins), g:eval(ins), { rtol = 1e-4, atol = 1e-4 })
    assert.is_true(c.ok, c.summary)
  end)
end)
