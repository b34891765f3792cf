-- (being written)
local pt = require "partrain.core"
return pt.autograd
