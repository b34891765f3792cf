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
  help = "partrain.help",
  par = "partrain.par",
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

return pt
