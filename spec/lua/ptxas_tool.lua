-- ptxas_tool.lua — where the CUDA toolkit's ptxas is for the specs' static PTX checks:
-- $PTXAS, $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas, else the one on PATH; nil when absent (the caller skips).
-- nil too under scripts/test's sanitizer pass (KILN_SPEC_SANITIZED; said once): ptxas is not
-- the sanitized code, its checks of the same PTX run in the plain pass.
local said = false
return function()
  if os.getenv("KILN_SPEC_SANITIZED") then
    if not said then print("ptxas_tool: the sanitizer pass leaves the ptxas checks to the plain pass") end
    said = true
    return nil
  end
  local home = os.getenv("CUDA_HOME")
  for _, p in ipairs { os.getenv("PTXAS") or "", home and (home .. "/bin/ptxas") or "", "/usr/local/cuda/bin/ptxas" } do
    if p ~= "" and io.open(p, "r") then return p end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h:read("*l")
  h:close()
  return p ~= "" and p or nil
end
