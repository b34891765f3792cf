-- partrain: the Lua side of the module. The C core (partrain.core) holds tensors and ops;
-- submodules (nn, optim, data, ...) load on first use so start-up stays fast.
local core = require "partrain.core"

local pt = core
pt._VERSION = "partrain 0.1.0"

-- dtypes are their names ({dtype = "int64"}); pt.int64 and torch's aliases (pt.long, pt.float,
-- ...) name them too, so that {dtype = pt.int64} is not a nil key that means "the default"
for _, name in ipairs {"float32", "float64", "int64", "int32", "uint8", "bool"} do pt[name] = name end
pt.float, pt.double, pt.long, pt.int, pt.byte = "float32", "float64", "int64", "int32", "uint8"

-- doc(obj, text) -> obj: files text as obj's help (pt._docs, read by partrain.help); what every
-- Lua module uses to document its functions and classes
function pt._doc(obj, text)
  pt._docs[obj] = text
  return obj
end

local lazy = {
  nn = "partrain.nn",
  optim = "partrain.optim",
  data = "partrain.data",
  metrics = "partrain.metrics",
  help = "partrain.help",
  par = "partrain.par",
  distributions = "partrain.distributions",
  utils = "partrain.utils",
  profiler = "partrain.profiler",
  func = "partrain.func",
}

-- functions that live in Lua modules, loaded with their module on first use; reaching them
-- through here (not a C forwarder) keeps error levels right on the first call too
local lazy_functions = {
  save = {"partrain.checkpoint", "save"},
  load = {"partrain.checkpoint", "load"},
  load_into = {"partrain.checkpoint", "load_into"},
  load_torch = {"partrain.torch_load", "load"},
  progress = {"partrain.progress", "wrap"},
  inbatch_parallel = {"partrain.inbatch", "inbatch_parallel"},
  args = {"partrain.inbatch", "args"},
  named = {"partrain.inbatch", "named"},
  any_action_failed = {"partrain.inbatch", "any_action_failed"},
  _json_encode = {"partrain.json", "encode"},
  _json_decode = {"partrain.json", "decode"},
}
-- torch.* names of nn.functional's ops whose torch.* form takes the same arguments (torch.conv1d is
-- F.conv1d; the ones whose torch.* signature differs, as torch.dropout or torch.kl_div, are left out)
for _, name in ipairs({"conv1d", "conv3d", "conv_transpose1d", "conv_transpose3d", "pixel_shuffle",
                       "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "pdist", "cosine_similarity",
                       "pairwise_distance", "prelu", "selu", "celu", "rrelu", "hardshrink", "threshold", "bilinear",
                       "avg_pool1d", "max_pool1d", "max_pool3d", "max_pool1d_with_indices",
                       "adaptive_avg_pool1d"}) do
  lazy_functions[name] = {"partrain.nn", "functional", name}
end

setmetatable(pt, {
  __index = function(t, k)
    local name = lazy[k]
    if name then
      local m = require(name)
      rawset(t, k, m)
      return m
    end
    local f = lazy_functions[k]
    if f then
      local v = require(f[1])[f[2]]
      if f[3] then v = v[f[3]] end
      rawset(t, k, v)
      return v
    end
    if k ~= "_load_more" and pt._load_more() then return rawget(t, k) end
    return nil
  end,
})

-- pt.autograd's Lua parts (Function, the functional helpers, gradcheck) load on the first name
-- pt.autograd (grad, from C) does not have; each module adds its names to pt.autograd
local autograd_modules = {"partrain.autograd_function", "partrain.autograd_functional"}
local autograd_loaded = false
setmetatable(pt.autograd, {
  __index = function(t, k)
    if autograd_loaded then return nil end
    autograd_loaded = true
    for _, m in ipairs(autograd_modules) do require(m) end
    return rawget(t, k)
  end,
})

require "partrain.tensor" -- isnan, argsort, flip, tril, amax, roll, ... as methods and pt.* functions

-- partrain.tensor_more (meshgrid, kron, tensordot, cdist, quantile, cov, ...) loads on the first
-- name that is neither a pt.* function nor a Tensor method yet (its ~1,400 lines were a third of
-- the start-up): pt.kron here, t:kron(...) through the Tensor index (host/l_tensor.c), help().
-- Returns true when it loaded them now.
local more_loaded = false
function pt._load_more()
  if more_loaded then return false end
  more_loaded = true
  require "partrain.tensor_more"
  return true
end
debug.getregistry()["partrain.lazy_methods"] = pt._load_more
-- pt.linalg's functions written in Lua (matrix_exp) live in tensor_more too
setmetatable(pt.linalg, {__index = function(t, k)
  if pt._load_more() then return rawget(t, k) end
  return nil
end})

return pt
