-- Shared by the specs that start programs (require "spec.support").

local M = {}

-- The partrain executable: the interpreter running this spec (build/partrain /usr/bin/busted
-- spec), else $PARTRAIN, else the interpreter named in arg, else build/partrain.
local function exe_path()
  local f = io.open("/proc/self/stat")
  if f then
    local pid = f:read("*l"):match("^(%d+)")
    f:close()
    local p = io.popen("readlink -f /proc/" .. pid .. "/exe")
    local path = p:read("*l")
    p:close()
    if path and path:match("partrain$") then return path end
  end
  local i, a = -1, nil
  while arg and arg[i] do
    a = arg[i]
    i = i - 1
  end
  return os.getenv("PARTRAIN") or a or "build/partrain"
end

M.exe = exe_path()

-- s as one single-quoted shell word
function M.quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

return M
