-- kiln/pretty.lua — kiln.pretty(value [, opts]): a readable rendering of Lua values and
-- kiln handles, used by the REPL to print results. Handles print through their
-- __tostring (an op prints its IR); tables print as constructors with sorted keys, up
-- to opts.depth levels (default 3) and opts.items entries per table (default 40);
-- cycles print as <cycle>. Returns a string; never raises for plain data.

local function is_ident(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local function render(v, opts, depth, seen, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif t ~= "table" then
    out[#out + 1] = tostring(v)
  elseif seen[v] then
    out[#out + 1] = "<cycle>"
  elseif getmetatable(v) and getmetatable(v).__tostring then
    out[#out + 1] = tostring(v)
  elseif depth >= opts.depth then
    out[#out + 1] = "{...}"
  else
    seen[v] = true
    local n = #v
    local keys = {}
    for k in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
    end
    table.sort(keys, key_order)
    out[#out + 1] = "{"
    local count = 0
    local function sep()
      if count > 0 then out[#out + 1] = ", " end
      count = count + 1
      return count <= opts.items
    end
    for i = 1, n do
      if not sep() then out[#out + 1] = "..." break end
      render(v[i], opts, depth + 1, seen, out)
    end
    if count <= opts.items then
      for _, k in ipairs(keys) do
        if not sep() then out[#out + 1] = "..." break end
        if is_ident(k) then out[#out + 1] = k
        else
          out[#out + 1] = "["
          render(k, opts, depth + 1, seen, out)
          out[#out + 1] = "]"
        end
        out[#out + 1] = " = "
        render(v[k], opts, depth + 1, seen, out)
      end
    end
    out[#out + 1] = "}"
    seen[v] = nil
  end
end

return function(v, opts)
  opts = opts or {}
  local o = { depth = opts.depth or 3, items = opts.items or 40 }
  local out = {}
  render(v, o, 0, {}, out)
  return table.concat(out)
end
