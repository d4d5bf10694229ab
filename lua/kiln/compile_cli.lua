-- kiln/compile_cli.lua — `kiln compile`: one stage of compiling a graph, from the command
-- line (loaded by kiln/lib.lua; lua/main.c calls kiln.compile_main with the arguments after
-- the subcommand and exits with its result).
--
--   kiln compile FILE.lua|FILE.kir --emit WHAT [--target T] [--kernel K] [-o OUT]
--
-- FILE.lua is run (with `arg` empty) and returns a graph or a list of graphs; FILE.kir is
-- parsed and its graph functions (func.func with the `graph` attribute) are compiled.
-- WHAT: ir-after:PASS (the module after PASS of the pipeline), llvm (each kernel's LLVM IR
-- as handed to code generation), llvm-opt (after LLVM's optimisation pipeline), asm (the
-- target's assembly: host x86-64 ..., AMDGPU ISA, PTX), ptx (NVIDIA targets), sass-stats
-- (ptxas -v of the PTX: registers, spills, shared memory; needs the CUDA toolkit's ptxas),
-- hsaco (AMD code objects), obj (relocatable objects: host, AMDGPU before linking).
-- Text goes to stdout unless -o is given; hsaco and obj need -o (with several kernels,
-- OUT.ext becomes OUT.<kernel>.ext). Exit status: 0, 1 on a failed compile or stage, 2 on
-- bad arguments (with the usage).
return function(kiln)
  local fmt = string.format

  local USAGE = [[
usage: kiln compile FILE.lua|FILE.kir --emit WHAT [--target T] [--kernel K] [-o OUT]
  FILE.lua returns a graph or a list of graphs; FILE.kir holds graph functions
  --emit ir-after:PASS   the module after pass PASS of the pipeline (kiln.default_pipeline())
         llvm            each kernel's LLVM IR, as handed to LLVM
         llvm-opt        the LLVM IR after LLVM's optimisation pipeline (O3)
         asm             the target's assembly (host: x86-64/host ISA, gfx*: ISA, sm_*: PTX)
         ptx             PTX (NVIDIA targets)
         sass-stats      ptxas -v of the PTX: registers, spills, shared memory (CUDA toolkit)
         hsaco           the code object (AMD targets; needs -o)
         obj             relocatable ELF objects (host, AMD before linking; needs -o)
  --target T             host (default), gfx908 gfx90a gfx942 gfx1030 gfx1100, sm_80 sm_90 sm_90a
  --kernel K             only kernel K (default: every kernel)
  -o OUT                 write to OUT (default: stdout for text)
  Values go as --opt=value or --opt value; -- ends the options.]]

  local EMITS = { llvm = true, ["llvm-opt"] = true, asm = true, ptx = true, ["sass-stats"] = true, hsaco = true,
    obj = true }
  local BINARY = { hsaco = true, obj = true }

  -- getopt-style parsing: --name=value, --name value, -o value, -ovalue, --
  local function parse(args)
    local o, files = {}, {}
    local takes = { ["--emit"] = "emit", ["--target"] = "target", ["--kernel"] = "kernel", ["-o"] = "out" }
    local i = 1
    while i <= #args do
      local a = args[i]
      if a == "--" then
        for k = i + 1, #args do files[#files + 1] = args[k] end
        break
      elseif a == "-h" or a == "--help" then
        o.help = true
        return o
      elseif a:match("^%-%-") or a:match("^%-o") then
        local name, v = a:match("^(%-%-[^=]+)=(.*)$")
        if not name and a:match("^%-o.") then name, v = "-o", a:sub(3) end
        name = name or a
        local key = takes[name]
        if not key then error(fmt("unknown option '%s'", a), 0) end
        if v == nil then
          i = i + 1
          v = args[i]
          if v == nil then error(fmt("'%s' needs an argument", name), 0) end
        end
        o[key] = v
      elseif a:match("^%-.") then
        error(fmt("unknown option '%s'", a), 0)
      else
        files[#files + 1] = a
      end
      i = i + 1
    end
    if #files ~= 1 then error(#files == 0 and "no input file" or "one input file only", 0) end
    o.file = files[1]
    if not o.emit then error("--emit is required", 0) end
    if not (EMITS[o.emit] or o.emit:match("^ir%-after:.")) then
      error(fmt("--emit %s: expected ir-after:PASS, llvm, llvm-opt, ptx, sass-stats, asm, hsaco or obj", o.emit), 0)
    end
    o.target = o.target or "host"
    return o
  end

  -- the graphs of the input file (also kiln tune's: lua/kiln/tune.lua): FILE.kir graph
  -- functions, FILE.mlir (MIGraphX dialect) functions, or what FILE.lua returns
  local function load_graphs(file)
    if file:match("%.mlir$") then
      local gs = kiln.migraphx_file(file)
      local list = {}
      for i = 1, #gs do list[i] = gs[i] end
      if #list == 0 then error(fmt("%s holds no function", file), 0) end
      return list
    end
    if file:match("%.kir$") then
      local f, ferr = io.open(file, "rb")
      if not f then error(ferr, 0) end
      local m = kiln.parse(f:read("a"), file)
      f:close()
      local gs = {}
      for _, op in ipairs(m:ops("func.func")) do
        if op:attr("graph") ~= nil then gs[#gs + 1] = op end
      end
      if #gs == 0 then error(fmt("%s holds no graph function (func.func with the 'graph' attribute)", file), 0) end
      return gs, m
    end
    local chunk, lerr = loadfile(file)
    if not chunk then error(lerr, 0) end
    local saved = arg
    arg = { [0] = file }
    local ok, r = pcall(chunk)
    arg = saved
    if not ok then error(r, 0) end
    if type(r) == "table" and r.func then return { r } end
    if type(r) == "table" and #r > 0 then return r end
    error(fmt("%s must return a graph or a list of graphs (kiln.graph(...)), got %s", file,
      type(r) == "table" and "an empty table" or type(r)), 0)
  end

  kiln._load_graphs = load_graphs

  local function find_ptxas()
    for _, p in ipairs { "ptxas", "/usr/local/cuda/bin/ptxas" } do
      local h = io.popen("command -v " .. p .. " 2>/dev/null")
      local found = h:read("l")
      h:close()
      if found and found ~= "" then return found end
    end
  end

  local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

  -- ptxas -v of one kernel's PTX: its report lines, or an error
  function kiln.sass_stats(ptx, arch)
    local ptxas = find_ptxas()
    if not ptxas then error("sass-stats needs ptxas (the CUDA toolkit); it is not on PATH or in /usr/local/cuda/bin", 0) end
    local src = os.tmpname()
    local f = assert(io.open(src, "wb"))
    f:write(ptx)
    f:close()
    local h = io.popen(fmt("%s -v -arch=%s -o /dev/null %s 2>&1", sh_quote(ptxas), sh_quote(arch), sh_quote(src)))
    local out = h:read("a")
    local ok = h:close()
    os.remove(src)
    if not ok then error("ptxas failed:\n" .. out, 0) end
    return (out:gsub(src:gsub("%p", "%%%0"), "kernel.ptx"))
  end

  local function emit_kernel(p, k, o)
    local t = o.target
    if o.emit == "llvm" then
      for _, ki in ipairs(p:kernels(t)) do
        if ki.name == k then return ki.llvm_ir end
      end
    elseif o.emit == "llvm-opt" then return p:llvm_opt(k, t)
    elseif o.emit == "asm" then return p:asm(k, t)
    elseif o.emit == "obj" then return p:object(k, t)
    elseif o.emit == "ptx" or o.emit == "sass-stats" then
      if not t:match("^sm_") then error(fmt("--emit %s needs an NVIDIA target (sm_80, sm_90, sm_90a), not %s", o.emit, t), 0) end
      local ptx = p:binary(k, t)
      return o.emit == "ptx" and ptx or kiln.sass_stats(ptx, t)
    elseif o.emit == "hsaco" then
      if not t:match("^gfx") then error(fmt("--emit hsaco needs an AMD target (gfx942 ...), not %s", t), 0) end
      return p:binary(k, t)
    end
  end

  local function write(path, data)
    local f, ferr = io.open(path, "wb")
    if not f then error(ferr, 0) end
    f:write(data)
    f:close()
  end

  local function comment(o)
    if o.emit == "ptx" or (o.emit == "asm" and o.target:match("^sm_")) or o.emit == "sass-stats" then return "//" end
    if o.emit == "asm" and o.target == "host" then return "#" end
    return ";"
  end

  function kiln.compile_main(args)
    local pok, o = pcall(parse, args)
    if not pok then
      io.stderr:write("kiln compile: ", tostring(o), "\n", USAGE, "\n")
      return 2
    end
    if o.help then
      print(USAGE)
      return 0
    end
    if BINARY[o.emit] and not o.out then
      io.stderr:write(fmt("kiln compile: --emit %s writes a binary: give -o OUT\n", o.emit), USAGE, "\n")
      return 2
    end
    local ok, err = pcall(function()
      local graphs = load_graphs(o.file)
      local texts = {}
      local nk = 0
      for _, g in ipairs(graphs) do
        local p = kiln.compile(g, { target = o.target })
        if o.emit:match("^ir%-after:") then
          local pass = o.emit:sub(10)
          local text = p:ir("after:" .. pass)
          if not text then
            error(fmt("pass '%s' did not run; the pipeline is %s", pass, kiln.default_pipeline()), 0)
          end
          texts[#texts + 1] = text
        else
          for _, ki in ipairs(p:kernels(o.target)) do
            if not o.kernel or ki.name == o.kernel then
              nk = nk + 1
              local data = emit_kernel(p, ki.name, o)
              texts[#texts + 1] = { name = ki.name, data = data }
            end
          end
        end
      end
      if o.emit:match("^ir%-after:") then
        local text = table.concat(texts, "\n")
        if o.out then write(o.out, text) else io.write(text) end
        return
      end
      if nk == 0 then
        error(o.kernel and fmt("no kernel named '%s'", o.kernel) or "the graphs compiled to no kernels", 0)
      end
      if BINARY[o.emit] then
        for _, t in ipairs(texts) do
          local path = o.out
          if #texts > 1 then
            local stem, ext = o.out:match("^(.-)(%.[^./]*)$")
            path = stem and (stem .. "." .. t.name .. ext) or (o.out .. "." .. t.name)
          end
          write(path, t.data)
        end
        return
      end
      local parts = {}
      for _, t in ipairs(texts) do
        parts[#parts + 1] = fmt("%s ---- kernel %s (%s, %s)\n", comment(o), t.name, o.target, o.emit)
        parts[#parts + 1] = t.data
        if t.data:sub(-1) ~= "\n" then parts[#parts + 1] = "\n" end
      end
      local text = table.concat(parts)
      if o.out then write(o.out, text) else io.write(text) end
    end)
    if not ok then
      io.stderr:write("kiln compile: ", tostring(err):gsub("\n$", ""), "\n")
      return 1
    end
    return 0
  end
end
