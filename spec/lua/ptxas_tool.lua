-- ptxas_tool.lua — where the CUDA toolkit's ptxas is for the specs' static PTX checks:
-- $PTXAS, /usr/local/cuda/bin/ptxas, else the one on PATH; nil when absent (the caller skips).
return function()
  for _, p in ipairs { os.getenv("PTXAS") or "", "/usr/local/cuda/bin/ptxas" } do
    if p ~= "" and io.open(p, "r") then return p end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h:read("*l")
  h:close()
  return p ~= "" and p or nil
end
