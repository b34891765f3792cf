-- partrain: the Lua side of the module. The C core (partrain.core) holds tensors and ops;
-- submodules (nn, optim, data, ...) load on first use so start-up stays fast.
local core = require "partrain.core"

local pt = core
pt._VERSION = "partrain 0.1.0"

local lazy = {
  nn = "partrain.nn",
  optim = "partrain.optim",
  data = "partrain.data",
  metrics = "partrain.metrics",
  utils = "partrain.utils",
  help = "partrain.help",
}

setmetatable(pt, {
  __index = function(t, k)
    local name = lazy[k]
    if name then
      local m = require(name)
      rawset(t, k, m)
      return m
    end
    return nil
  end,
})

-- Lua-side extensions of the core (each file adds to pt and returns nothing)
for _, ext in ipairs { "partrain.tensor_ext" } do
  local ok, err = pcall(require, ext)
  if not ok and not tostring(err):find("module '" .. ext .. "' not found", 1, true) then
    error(err, 0)
  end
end

return pt
