-- kiln/view.lua — Lua side of views (C core in lua/kiln_lua_view.c): kiln.attr accepts a
-- view object (-> a #view attribute), and a few conveniences on views.
return function(kiln)
  local CTX_MT = kiln._g and kiln._g.metatable("kiln.context")

  -- kiln.attr(view) / kiln.attr(ctx, view) / ctx:attr(view) -> #view attribute handle
  local raw_attr = kiln.attr
  function kiln.attr(a, ...)
    if kiln.is_view(a) then return kiln._view_attr(a) end
    if CTX_MT and getmetatable(a) == CTX_MT and kiln.is_view((...)) then return kiln._view_attr(a, (...)) end
    return raw_attr(a, ...)
  end
  local cm = kiln.methods.context
  if cm and cm.attr then
    local raw = cm.attr
    cm.attr = function(ctx, a, ...)
      if kiln.is_view(a) then return kiln._view_attr(ctx, a) end
      return raw(ctx, a, ...)
    end
  end

  local vm = kiln.methods.view
  -- Every upper coordinate of the view in row-major order (for small views):
  -- calls fn(coords, lower, valid) for each.
  function vm:each(fn)
    local shape, n = self.shape, self.numel
    local c = {}
    for i = 1, #shape do c[i] = 0 end
    for _ = 1, n do
      local lower, valid = self:eval(c)
      fn({ table.unpack(c) }, lower, valid)
      for d = #shape, 1, -1 do
        c[d] = c[d] + 1
        if c[d] < shape[d] then break end
        c[d] = 0
      end
    end
  end
end
