-- The benchmark helpers written in C (bench/*.c), built as bench_<name> beside the partrain
-- executable that runs the workload (CMakeLists.txt). Shared by the workloads that print a
-- machine reference next to their own figure.
local M = {}

-- the helper's path, or nil when this partrain has none beside it (e.g. run from plain lua5.4)
function M.path(name)
  local exe = arg and arg[-1]
  local dir = exe and exe:match("^(.*)/[^/]*$")
  if not dir then return nil end
  local path = dir .. "/bench_" .. name
  local f = io.open(path, "r")
  if not f then return nil end
  f:close()
  return path
end

-- runs helper `name` with the given arguments and returns the number of its line
-- `METRIC <metric> <value> ...`, or nil when the helper is missing or printed no such line
function M.metric(name, metric, ...)
  local path = M.path(name)
  if not path then return nil end
  local args = {string.format("%q", path)}
  for _, a in ipairs{...} do args[#args + 1] = string.format("%q", tostring(a)) end
  local p = io.popen(table.concat(args, " "))
  local out = p:read("a")
  p:close()
  return tonumber(out:match("METRIC " .. metric .. " (%S+)"))
end

return M
