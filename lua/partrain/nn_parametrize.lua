-- nn.utils.parametrizations.weight_norm (PyTorch 2.0's) for partrain.nn: loaded by nn.lua with its
-- extras, after nn_lazy.lua (nn.utils.parametrize, orthogonal, spectral_norm).
local nn = require "partrain.nn"
return rawget(rawget(nn, "utils"), "parametrizations")
