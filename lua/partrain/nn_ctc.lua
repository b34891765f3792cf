-- (being written)
local nn = require "partrain.nn"
return nn
