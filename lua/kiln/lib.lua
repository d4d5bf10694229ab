-- kiln/lib.lua — the Lua part of the kiln module. The C module (luaopen_kiln, in
-- lua/kiln_lua*.c) builds the core API and then calls the function this file returns
-- with the module table; everything here is built on that core API. Files in this
-- directory are "library code": ops built from here get the location of the user's
-- calling line, not a line in these files.
-- Front-end extensions: each name in EXTENSIONS whose file lua/kiln/<name>.lua exists
-- is required after the core helpers; if it returns a function, that function is
-- called with the module table (it may also `require "kiln"` itself, which returns
-- the module being built). A missing file is skipped; an error in one is raised.
local pretty = require "kiln.pretty"

local EXTENSIONS = { "tensor", "graph", "view", "program", "device", "migraphx", "compile_cli", "cache", "tune" }

local HELP = [[
kiln — Lua API (handles print with tostring; ops print as IR)
  m = kiln.parse(text [, name])        module from .kir text (errors name name:line:col)
  m = kiln.parse_file(path)            same, from a file
  m:print{generic=, locs=}, tostring(m), m:verify(), m:walk(fn [, {order="post", name=}])
  m:ops([name]), m:find(name)          nested ops (all / first) with that name
  op.name op.loc op.block op:operands() op:results() op:result(i) op:attr(n) op:set_attr(n, v)
  op:attrs() op:regions() op:region(i) op:body() op:parent() op:erase() op:clone()
  op:insert_before(o) op:insert_after(o) op:replace_all_uses_with(x) op:replace_with(x)
  v.type v:users() v:uses() v:defining_op() v:replace_all_uses_with(w) v:set_name(s)
  b:ops() b:args() b:add_arg(t) b:append(op) b:prepend(op)   r:blocks() r:add_block{types}
  kiln.op{name=, operands=, results=, attrs=, regions=, loc=, names=}   detached op
  kiln.type("tensor<2x3xf32>")  kiln.attr("#view<...>") / kiln.attr(3, "i32")  kiln.block{types}
  kiln.pattern{root=, benefit=, name=, rewrite=function(op, rw) ... return true end}
  kiln.apply_patterns(m, {pat, "c-pattern-name", ...} [, {walk=true}])
    rw:create{...} rw:replace(op, vals|op) rw:erase(op) rw:set_attr(op, n, v)
    rw:set_operand(op, i, v) rw:replace_all_uses(a, b) rw:modify(op, fn) rw:fail(msg)
  ok, report = kiln.run_pipeline(m, "cse,canonicalize" | {"cse", function(m) ... end},
                                 {print_ir_after="all", on_ir=function(pass, text) end})
  kiln.register_pass(name, fn(m, opts) [, {summary=, options={{name=, kind=, default=}}}])
  kiln.passes(), kiln.patterns(), kiln.ops(), kiln.context(), kiln.pretty(v)]]

return function(kiln)
  kiln._set_libprefix(debug.getinfo(1, "S").source)
  kiln.pretty = pretty

  local op = kiln.methods.op

  -- All ops nested in self (self excluded), optionally only those named `name`.
  function op:ops(name)
    local list = {}
    self:walk(function(o)
      if o ~= self and (name == nil or o.name == name) then list[#list + 1] = o end
    end)
    return list
  end

  -- The first nested op named `name` (pre-order), or nil.
  function op:find(name)
    local found
    self:walk(function(o)
      if o ~= self and o.name == name then found = o; return "stop" end
    end)
    return found
  end

  function kiln.parse_file(path, ctx)
    local f, err = io.open(path, "rb")
    if not f then error("error: kiln.parse_file: " .. err, 2) end
    local text = f:read("a")
    f:close()
    if ctx then return ctx:parse(text, path) end
    return kiln.parse(text, path)
  end

  function kiln.help()
    print(HELP)
  end

  -- Timing report as text lines "name  ms" (from run_pipeline's second result).
  function kiln.format_timing(report)
    local lines = {}
    for _, p in ipairs(report.passes or {}) do
      lines[#lines + 1] = string.format("%-28s %9.3f ms", p.name, p.ms)
    end
    lines[#lines + 1] = string.format("%-28s %9.3f ms", "total", report.total_ms or 0)
    return table.concat(lines, "\n")
  end

  for _, name in ipairs(EXTENSIONS) do
    local mod = "kiln." .. name
    if package.searchpath(mod, package.path) then
      local ext = require(mod)
      if type(ext) == "function" then ext(kiln) end
    end
  end
end
