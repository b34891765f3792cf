-- More of torch.nn (PyTorch 1.13) for partrain.nn: the lazy convolutions and normalisations
-- (LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d, LazyInstanceNorm1d/2d/3d),
-- nn.utils.fusion (conv/linear + batch norm folding), nn.utils.skip_init, nn.utils.stateless,
-- nn.utils.convert_parameters, nn.SyncBatchNorm (one process), FractionalMaxPool2d/3d with
-- F.fractional_max_pool2d/3d (and *_with_indices), AdaptiveLogSoftmaxWithLoss, and the legacy names
-- CrossMapLRN2d, NLLLoss2d and F.conv_tbc, nn.utils.parametrize and nn.utils.parametrizations
-- (orthogonal, spectral_norm). Loaded by nn.lua with its other extras on the first use
-- of a name it does not have.
--
-- Everything is composed of the existing layers and differentiable tensor ops, so autograd comes
-- for free. Dims, class indices and pooling indices are 1-based; settings follow the layers this
-- file extends (a trailing options table).
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local F = nn.functional

local doc = pt._doc

local H = nn._conv_helpers
local fail, shp, floating, check_opts = H.fail, H.shp, H.floating, H.check_opts
local positive_int, positive_tuple, fmt_tuple = H.positive_int, H.positive_tuple, H.fmt_tuple
local A = nn._arg_helpers
local type_of, num_repr = A.type_of, A.num_repr
local fmt = string.format

local class_name = A.class_name

-- ------------------------------------------------------------------ lazy modules

-- The placeholders: parameters (and buffers) of shape {0} until the first input; the same tensor
-- objects get their data then (PyTorch's UninitializedParameter.materialize).
local function placeholder_param(self, key)
  local p = self._parameters[key]
  if p then self[key] = nn.Parameter(pt.empty(0, {dtype = p:dtype()})) end
end
local function placeholder_buffer(self, key)
  local b = self._buffers[key]
  if b then self[key] = pt.empty(0, {dtype = b:dtype()}) end
end
local function materialize(t, shape)
  if t then pt.no_grad(function() pt._nn_set_data_(t, pt.empty(shape, {dtype = t:dtype()})) end) end
end

local LAZY_DOC = {
  has = "lazy:has_uninitialized_params() -> true until the first forward (or initialize_parameters, or a\n"
    .. "  load_state_dict on it) gave the parameters their shapes.",
}

-- the methods every lazy class shares; spec: {name=, base=, infer(self, x, fname) -> n, shapes(self, n),
-- finish(self, n), check(self, x, fname)}
local function lazy_class(spec)
  local L = spec.base:extend(spec.name)
  local name, base = spec.name, spec.base
  function L:has_uninitialized_params() return rawget(self, "_uninitialized") == true end
  doc(L.has_uninitialized_params, LAZY_DOC.has)
  if base.reset_parameters then
    function L:reset_parameters()
      if self:has_uninitialized_params() then return end
      return base.reset_parameters(self)
    end
    doc(L.reset_parameters, "lazy:reset_parameters(): nothing until the parameters have their shapes; then "
      .. spec.base_name .. "'s.")
  end
  -- gives every placeholder its shape for n channels (features); draws nothing
  local function make(self, n)
    for key, shape in pairs(spec.shapes(self, n)) do
      materialize(self._parameters[key] or self._buffers[key], shape)
    end
    spec.finish(self, n)
    self._uninitialized = nil
    if getmetatable(self) == L then setmetatable(self, base) end -- PyTorch's cls_to_become
  end
  local function init_from(self, x, fname)
    if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", fname, type_of(x)) end
    spec.check(self, x, fname)
    local n = spec.infer(self, x, fname)
    make(self, n)
    -- drawn as the ordinary class draws them (a subclass's own reset_parameters if it has one)
    if self.reset_parameters then self:reset_parameters() end
  end
  function L:initialize_parameters(x)
    if not self:has_uninitialized_params() then return end
    init_from(self, x, name .. ":initialize_parameters")
  end
  doc(L.initialize_parameters, "lazy:initialize_parameters(x): what the first forward does: " .. spec.what
    .. " comes from x,\n  the placeholders get their data (the same tensor objects), are drawn as " .. spec.base_name
    .. "'s and the module\n  becomes an nn." .. spec.base_name .. ". Nothing once initialized.")
  function L:forward(x, ...)
    if self:has_uninitialized_params() then init_from(self, x, name .. ":forward") end
    return base.forward(self, x, ...)
  end
  -- a state_dict loaded into an uninitialized module gives the placeholders its shapes first
  -- (PyTorch's lazy load hook); a lazy module inside another one loads after its dry run
  function L:load_state_dict(sd, opts)
    if self:has_uninitialized_params() and type(sd) == "table" then
      local n = spec.from_state(self, sd)
      if n then make(self, n) end
    end
    return Module.load_state_dict(self, sd, opts)
  end
  doc(L.load_state_dict, "lazy:load_state_dict(sd[, opts]): as nn.Module's; while uninitialized the placeholders first take the\n"
    .. "  shapes sd's tensors have (" .. spec.what .. " from them, and the module becomes an nn." .. spec.base_name .. ").")
  nn[name] = L
  return L
end

-- the channel count of a conv's input {N,C,...} or {C,...}
local function conv_lazy(name, base_name, nd, transposed)
  local base = nn[base_name]
  local L = lazy_class {
    name = name, base = base, base_name = base_name, what = "in_channels",
    check = function(_, x, _)
      if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
        fail("%s: expected a %d-D (unbatched) or %d-D (batched) input, got shape %s", name, nd + 1, nd + 2, shp(x))
      end
    end,
    infer = function(self, x, fname)
      local c = x:size(x:dim() == nd + 2 and 2 or 1)
      if c % self.groups ~= 0 then
        fail("%s: in_channels must be divisible by groups: the input has %d channels, groups=%d", fname, c, self.groups)
      end
      return c
    end,
    shapes = function(self, c)
      local w = transposed and {c, self.out_channels // self.groups} or {self.out_channels, c // self.groups}
      for i = 1, nd do w[#w + 1] = self.kernel_size[i] end
      return {weight = w, bias = {self.out_channels}}
    end,
    finish = function(self, c) self.in_channels = c end,
    from_state = function(self, sd)
      local w = sd.weight
      if not pt.is_tensor(w) or w:dim() ~= nd + 2 then return nil end
      return transposed and w:size(1) or w:size(2) * self.groups
    end,
  }
  function L:__init(out_channels, kernel_size, opts)
    if opts ~= nil and type(opts) ~= "table" then fail("%s: options must be a table, got %s", name, type_of(opts)) end
    local groups = opts and opts.groups or 1
    positive_int(name, "out_channels", out_channels)
    positive_int(name, "groups", groups)
    self._uninitialized = true -- reset_parameters draws nothing
    if nd == 2 and not transposed then
      H.conv_init(self, name, 2, false, groups, out_channels, kernel_size, opts)
      -- as an ordinary Conv2d: its own forward unless padding is a string or the mode is not zeros
      if type(self.padding) ~= "string" and self.padding_mode == "zeros" then
        self._pads, self.padding_mode = nil, nil
      end
    else
      H.conv_init(self, name, nd, transposed, groups, out_channels, kernel_size, opts)
    end
    self.in_channels = 0
    placeholder_param(self, "weight")
    placeholder_param(self, "bias")
  end
  local ins = ({"{N,C,L} or {C,L}", "{N,C,H,W} or {C,H,W}", "{N,C,D,H,W} or {C,D,H,W}"})[nd]
  doc(L, fmt([==[nn.%s(out_channels, kernel_size[, {stride=1, padding=0,%s dilation=1, groups=1, bias=true,%s dtype=}]):
  an nn.%s whose in_channels is the channel count of its first input (%s).
  Until then in_channels is 0 and weight and bias are placeholders of shape {0}; the first forward (or
  lazy:initialize_parameters(x)) gives these same tensors their shapes, draws them as nn.%s's
  (the same seed gives the same values) and turns the module into an nn.%s (a subclass keeps its
  class). Convert the model (m:double()) before that dry run, and build optimizers after it (one built
  before holds the same tensors). load_state_dict on the module itself takes the shapes from the
  state_dict (PyTorch's lazy load hook); a lazy child of another module loads after the dry run.]==],
    name, transposed and " output_padding=0," or "", transposed and "" or " padding_mode=\"zeros\",", base_name,
    ins, base_name, base_name))
  return L
end

conv_lazy("LazyConv1d", "Conv1d", 1, false)
conv_lazy("LazyConv2d", "Conv2d", 2, false)
conv_lazy("LazyConv3d", "Conv3d", 3, false)
conv_lazy("LazyConvTranspose1d", "ConvTranspose1d", 1, true)
conv_lazy("LazyConvTranspose2d", "ConvTranspose2d", 2, true)
conv_lazy("LazyConvTranspose3d", "ConvTranspose3d", 3, true)

-- normalisations: num_features is the input's dim 2 (dim 1 for an unbatched instance norm input)
local function norm_lazy(name, base_name, ranks, instance)
  local base = nn[base_name]
  local L = lazy_class {
    name = name, base = base, base_name = base_name, what = "num_features",
    check = function(_, x, fname)
      local ok = false
      for _, r in ipairs(ranks) do if x:dim() == r then ok = true end end
      if not ok then
        fail("%s: expected a %s-D input, got shape %s", fname, table.concat(ranks, "-D or "), shp(x))
      end
    end,
    infer = function(_, x)
      -- PyTorch 1.13 reads dim 2 also for an unbatched instance norm input (then fails); this the channels
      if instance and x:dim() == ranks[1] then return x:size(1) end
      return x:size(2)
    end,
    shapes = function(_, c)
      return {weight = {c}, bias = {c}, running_mean = {c}, running_var = {c}}
    end,
    finish = function(self, c)
      self.num_features = c
      pt.no_grad(function()
        local p, b = self._parameters, self._buffers
        if p.weight then p.weight:fill_(1); p.bias:fill_(0) end
        if b.running_mean then b.running_mean:fill_(0); b.running_var:fill_(1) end
      end)
    end,
    from_state = function(_, sd)
      local t = sd.weight or sd.running_mean
      if not pt.is_tensor(t) or t:dim() ~= 1 then return nil end
      return t:size(1)
    end,
  }
  function L:__init(opts)
    opts = check_opts(name, opts, {"eps", "momentum", "affine", "track_running_stats", "dtype"})
    self._uninitialized = true
    local o = {eps = opts.eps, momentum = opts.momentum, dtype = opts.dtype, affine = opts.affine,
      track_running_stats = opts.track_running_stats}
    if instance then
      o.affine, o.track_running_stats = opts.affine == true, opts.track_running_stats == true
    end
    nn._BatchNorm.__init(self, 1, o)
    self.num_features = 0
    placeholder_param(self, "weight")
    placeholder_param(self, "bias")
    placeholder_buffer(self, "running_mean")
    placeholder_buffer(self, "running_var")
  end
  doc(L, fmt([==[nn.%s([{eps=1e-5, momentum=0.1, affine=%s, track_running_stats=%s, dtype=}]):
  an nn.%s whose num_features is the channel count of its first input (%s-D).
  Until then num_features is 0 and weight, bias, running_mean and running_var are placeholders of
  shape {0} (num_batches_tracked is there); the first forward (or lazy:initialize_parameters(x))
  gives these same tensors their shapes and values (weight 1, bias 0, mean 0, var 1) and turns the
  module into an nn.%s (a subclass keeps its class). load_state_dict on the module itself takes the
  shapes from the state_dict.]==], name, tostring(not instance), tostring(not instance), base_name,
    table.concat(ranks, "-D or "), base_name))
  return L
end

norm_lazy("LazyBatchNorm1d", "BatchNorm1d", {2, 3}, false)
norm_lazy("LazyBatchNorm2d", "BatchNorm2d", {4}, false)
norm_lazy("LazyBatchNorm3d", "BatchNorm3d", {5}, false)
norm_lazy("LazyInstanceNorm1d", "InstanceNorm1d", {2, 3}, true)
norm_lazy("LazyInstanceNorm2d", "InstanceNorm2d", {3, 4}, true)
norm_lazy("LazyInstanceNorm3d", "InstanceNorm3d", {4, 5}, true)

-- ------------------------------------------------------------------ nn.utils additions

local utils = rawget(nn, "utils")
if utils == nil then
  utils = {}
  nn.utils = utils
end

local function tensor_or_nil(name, what, t)
  if t ~= nil and not pt.is_tensor(t) then fail("%s: %s must be a tensor or nil, got %s", name, what, type_of(t)) end
end
local function need_tensor(name, what, t)
  if not pt.is_tensor(t) then fail("%s: %s must be a tensor, got %s", name, what, type_of(t)) end
end

local fusion = {}
utils.fusion = fusion
doc(fusion, "nn.utils.fusion: PyTorch's torch.nn.utils.fusion: fuse_conv_bn_eval, fuse_conv_bn_weights,\n"
  .. "  fuse_linear_bn_eval, fuse_linear_bn_weights (fold an evaluation-mode batch norm into the layer before it).")

function fusion.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose)
  local name = "fuse_conv_bn_weights"
  need_tensor(name, "conv_w", conv_w)
  tensor_or_nil(name, "conv_b", conv_b)
  need_tensor(name, "bn_rm", bn_rm)
  need_tensor(name, "bn_rv", bn_rv)
  if type(bn_eps) ~= "number" then fail("%s: bn_eps must be a number, got %s", name, type_of(bn_eps)) end
  tensor_or_nil(name, "bn_w", bn_w)
  tensor_or_nil(name, "bn_b", bn_b)
  if conv_w:dim() < 2 then fail("%s: conv_w must have at least 2 dimensions, got shape %s", name, shp(conv_w)) end
  conv_b = conv_b or pt.zeros_like(bn_rm)
  bn_w = bn_w or pt.ones_like(bn_rm)
  bn_b = bn_b or pt.zeros_like(bn_rm)
  local rsqrt = pt.rsqrt(bn_rv + bn_eps)
  local shape = transpose and {1, -1} or {-1, 1}
  for _ = 3, conv_w:dim() do shape[#shape + 1] = 1 end
  local w = conv_w * (bn_w * rsqrt):reshape(shape)
  local b = (conv_b - bn_rm) * rsqrt * bn_w + bn_b
  return nn.Parameter(w:detach()), nn.Parameter(b:detach())
end
doc(fusion.fuse_conv_bn_weights, [==[nn.utils.fusion.fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b[, transpose=false])
  -> fused_w, fused_b (new Parameters): w * (bn_w / sqrt(bn_rv + eps)) per output channel (dim 1; dim 2
  when transpose, a ConvTranspose weight) and (conv_b - bn_rm) * bn_w / sqrt(bn_rv + eps) + bn_b.
  conv_b, bn_w, bn_b may be nil (0, 1, 0).]==])

function fusion.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  local name = "fuse_linear_bn_weights"
  need_tensor(name, "linear_w", linear_w)
  tensor_or_nil(name, "linear_b", linear_b)
  need_tensor(name, "bn_rm", bn_rm)
  need_tensor(name, "bn_rv", bn_rv)
  if type(bn_eps) ~= "number" then fail("%s: bn_eps must be a number, got %s", name, type_of(bn_eps)) end
  need_tensor(name, "bn_w", bn_w)
  need_tensor(name, "bn_b", bn_b)
  linear_b = linear_b or pt.zeros_like(bn_rm)
  local scale = bn_w * pt.rsqrt(bn_rv + bn_eps)
  local w = linear_w * scale:unsqueeze(-1)
  local b = (linear_b - bn_rm) * scale + bn_b
  return nn.Parameter(w:detach()), nn.Parameter(b:detach())
end
doc(fusion.fuse_linear_bn_weights, [==[nn.utils.fusion.fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
  -> fused_w, fused_b (new Parameters): linear_w * scale per output row and (linear_b - bn_rm) * scale + bn_b,
  scale = bn_w / sqrt(bn_rv + eps). linear_b may be nil (0); bn_w and bn_b are needed (as PyTorch's).]==])

local function check_eval_pair(name, a, what, bn)
  if not nn.is_module(a) then fail("%s: %s must be a module, got %s", name, what, type_of(a)) end
  if not nn.is_module(bn) then fail("%s: bn must be a module, got %s", name, type_of(bn)) end
  if not pt.is_tensor(bn.running_mean) or not pt.is_tensor(bn.running_var) then
    fail("%s: bn must have running statistics (track_running_stats=true)", name)
  end
  if a.training or bn.training then fail("%s: Fusion only for eval! (call :eval() on both modules)", name) end
end

function fusion.fuse_conv_bn_eval(conv, bn, transpose)
  check_eval_pair("fuse_conv_bn_eval", conv, "conv", bn)
  local fused = nn._deepcopy_module(conv)
  local w, b = fusion.fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias, transpose)
  fused.weight, fused.bias = w, b
  return fused
end
doc(fusion.fuse_conv_bn_eval, [==[nn.utils.fusion.fuse_conv_bn_eval(conv, bn[, transpose=false]) -> a copy of conv computing bn(conv(x))
  Both modules in eval mode; bn's running statistics, eps and affine weight/bias folded into the copy's
  weight and bias (fuse_conv_bn_weights; transpose=true for a ConvTranspose). conv is left as it is.]==])

function fusion.fuse_linear_bn_eval(linear, bn)
  check_eval_pair("fuse_linear_bn_eval", linear, "linear", bn)
  local fused = nn._deepcopy_module(linear)
  local w, b = fusion.fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias)
  fused.weight, fused.bias = w, b
  return fused
end
doc(fusion.fuse_linear_bn_eval, [==[nn.utils.fusion.fuse_linear_bn_eval(linear, bn) -> a copy of linear computing bn(linear(x))
  Both modules in eval mode; bn (affine, with running statistics) folded into the copy's weight and bias
  (fuse_linear_bn_weights). linear is left as it is.]==])

-- PyTorch builds the module on the meta device and gives it uninitialized memory; here it is built
-- as usual, but the random generator is put back: nothing is drawn as far as the rest of the program sees
function utils.skip_init(module_cls, ...)
  if nn.is_module(module_cls) then
    fail("skip_init: expected a Module class, got a %s module", class_name(module_cls))
  end
  if type(module_cls) ~= "table" or not rawget(module_cls, "__is_module") or rawget(module_cls, "_module_names") then
    fail("skip_init: expected a Module class, got %s", type_of(module_cls))
  end
  local saved = pt.get_rng_state()
  local ok, m = pcall(module_cls, ...)
  pt.set_rng_state(saved)
  if not ok then error(m, 0) end
  return m
end
doc(utils.skip_init, [==[nn.utils.skip_init(module_cls, ...) -> module_cls(...) whose parameters are to be initialized by the caller.
  PyTorch's skip_init: the random generator's state is the same afterwards as before (nothing drawn, as
  far as the rest of the program sees); the parameters' values are unspecified (here: what the
  constructor drew), so fill them yourself (nn.init.*, copy_).]==])

local stateless = {}
utils.stateless = stateless
doc(stateless, "nn.utils.stateless: PyTorch 1.13's torch.nn.utils.stateless: functional_call (pt.func.functional_call).")
function stateless.functional_call(...)
  return require("partrain.func").functional_call(...)
end
doc(stateless.functional_call, [==[nn.utils.stateless.functional_call(module, parameters_and_buffers, args[, kwargs][, {tie_weights=true, strict=false}])
  -> module(args...) with the given tensors in place of its parameters and buffers: pt.func.functional_call
  (see its help; its error messages name it).]==])

local convert_parameters = {parameters_to_vector = utils.parameters_to_vector,
  vector_to_parameters = utils.vector_to_parameters}
utils.convert_parameters = convert_parameters
doc(convert_parameters, "nn.utils.convert_parameters: PyTorch's torch.nn.utils.convert_parameters: parameters_to_vector and\n"
  .. "  vector_to_parameters (the same functions as nn.utils.parameters_to_vector / vector_to_parameters).")

-- ------------------------------------------------------------------ SyncBatchNorm

local SyncBatchNorm = nn._BatchNorm:extend("SyncBatchNorm")
nn.SyncBatchNorm = SyncBatchNorm
function SyncBatchNorm:__init(num_features, opts)
  positive_int("SyncBatchNorm", "num_features", num_features)
  opts = check_opts("SyncBatchNorm", opts, {"eps", "momentum", "affine", "track_running_stats", "process_group", "dtype"})
  self.process_group = opts.process_group
  nn._BatchNorm.__init(self, num_features, {eps = opts.eps, momentum = opts.momentum, affine = opts.affine,
    track_running_stats = opts.track_running_stats, dtype = opts.dtype})
end
function SyncBatchNorm:forward(x)
  local name = "SyncBatchNorm:forward"
  H.check_tensor_arg(name, "input", x)
  if x:dim() < 2 then fail("%s: expected at least 2D input (got %dD input)", name, x:dim()) end
  if x:size(2) == 0 then fail("%s: SyncBatchNorm number of input channels should be non-zero", name) end
  if (self.affine or self.track_running_stats) and x:size(2) ~= self.num_features then
    fail("%s: input has %d channels, expected %d (input shape %s)", name, x:size(2), self.num_features, shp(x))
  end
  local p = self._parameters
  local mean, var, momentum = self:_running_stats()
  return F.batch_norm(x, mean, var, p.weight, p.bias, self.training or mean == nil, momentum, self.eps)
end
doc(SyncBatchNorm, [==[nn.SyncBatchNorm(num_features[, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true, process_group, dtype=}])
  Batch normalisation of any {N,C,...} input (at least 2-D) over every dim but C, as PyTorch's
  SyncBatchNorm on one process (there is no process group to synchronise with: the statistics are this
  batch's; process_group is kept and unused). Running statistics updated in training, used in eval.
  nn.SyncBatchNorm.convert_sync_batchnorm(module) turns BatchNorm*d layers into SyncBatchNorm.]==])

local function is_batchnorm(m)
  local c = getmetatable(m)
  while type(c) == "table" do
    if c == nn.BatchNorm1d or c == nn.BatchNorm2d or c == nn.BatchNorm3d or c == SyncBatchNorm then return true end
    c = rawget(c, "super")
  end
  return false
end

local function convert(module, process_group)
  local out = module
  if is_batchnorm(module) then
    if rawget(module, "_uninitialized") then
      fail("convert_sync_batchnorm: %s has uninitialized parameters (run a forward first)", class_name(module))
    end
    out = SyncBatchNorm(module.num_features, {eps = module.eps, momentum = module.momentum, affine = module.affine,
      track_running_stats = module.track_running_stats, dtype = module.running_mean and module.running_mean:dtype()
      or module.weight and module.weight:dtype(), process_group = process_group})
    if module.affine then out.weight, out.bias = module.weight, module.bias end
    out.running_mean, out.running_var = module.running_mean, module.running_var
    out.num_batches_tracked = module.num_batches_tracked
  end
  for _, cname in ipairs(module._module_names) do
    out:add_module(cname, convert(module._modules[cname], process_group))
  end
  return out
end

function SyncBatchNorm.convert_sync_batchnorm(module, process_group)
  if not nn.is_module(module) then
    fail("convert_sync_batchnorm: module must be a Module, got %s", type_of(module))
  end
  return convert(module, process_group)
end
doc(SyncBatchNorm.convert_sync_batchnorm, [==[nn.SyncBatchNorm.convert_sync_batchnorm(module[, process_group]) -> module with every BatchNorm1d/2d/3d replaced
  Recursively, as PyTorch's: each BatchNorm*d (module itself or a descendant) becomes a SyncBatchNorm
  with its settings and the SAME weight, bias, running_mean, running_var and num_batches_tracked
  tensors (in training mode, as PyTorch's new module); children are replaced in place in their
  parents. Returns the new module when module itself was a batch norm, else module.]==])

-- ------------------------------------------------------------------ fractional max pooling

-- float32 arithmetic (PyTorch computes the intervals in the input's scalar type)
local function f32(v) return (string.unpack("f", string.pack("f", v))) end
local function ident(v) return v end

-- PyTorch's generate_intervals: the 0-based window starts of one dim of one plane
local function intervals(r, sample, n_in, n_out, k)
  local seq = {}
  if n_out > 1 then
    local alpha = r(r(n_in - k) / r(n_out - 1))
    local base = math.tointeger(math.floor(r(sample * alpha)))
    for i = 0, n_out - 2 do
      seq[i + 1] = math.tointeger(math.floor(r(r(i + sample) * alpha))) - base
    end
  end
  if n_out > 0 then seq[n_out] = n_in - k end
  return seq
end

local SPATIAL = {[2] = {"height", "width"}, [3] = {"time", "height", "width"}}

local function ratio_tuple(name, v, n)
  local t = type(v) == "number" and {} or v
  if type(v) == "number" then for i = 1, n do t[i] = v end end
  if type(t) ~= "table" or #t ~= n then
    fail("%s: output_ratio must be a number or a list of %d numbers, got %s", name, n, type_of(v))
  end
  for i = 1, n do
    if type(t[i]) ~= "number" then fail("%s: output_ratio must be a number or a list of %d numbers", name, n) end
  end
  return t
end

local function frac_pool_run(name, nd, x, kernel_size, output_size, output_ratio, return_indices, samples)
  H.check_tensor_arg(name, "input", x)
  if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
    fail("%s: expected a %d-D or %d-D input, got shape %s", name, nd + 1, nd + 2, shp(x))
  end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
  local unbatched = x:dim() == nd + 1
  local xb = unbatched and x:unsqueeze(1) or x
  local N, C = xb:size(1), xb:size(2)
  local ins = {}
  for d = 1, nd do ins[d] = xb:size(2 + d) end
  for d = 1, nd + 1 do
    if xb:size(1 + d) == 0 then
      fail("%s: expected input to have non-zero size for non-batch dimensions, got shape %s", name, shp(x))
    end
  end
  local k = positive_tuple(name, "kernel_size", kernel_size, nd)
  local out
  if output_size ~= nil then
    out = positive_tuple(name, "output_size", output_size, nd)
  elseif output_ratio ~= nil then
    local r = ratio_tuple(name, output_ratio, nd)
    out = {}
    for d = 1, nd do out[d] = math.tointeger(math.floor(ins[d] * r[d])) end
  else
    fail("%s requires specifying either an output_size or an output_ratio", name)
  end
  for d = 1, nd do
    if out[d] + k[d] - 1 > ins[d] then
      fail("%s: pool %s %d too large relative to input %s %d (output %s %d)", name, SPATIAL[nd][d], k[d], SPATIAL[nd][d],
        ins[d], SPATIAL[nd][d], out[d])
    end
  end
  if samples == nil then
    samples = pt.rand(N, C, nd, {dtype = x:dtype()})
  else
    H.check_tensor_arg(name, "_random_samples", samples)
    if samples:dim() ~= 3 or samples:size(1) ~= N or samples:size(2) ~= C or samples:size(3) ~= nd then
      fail("%s: _random_samples must have shape {%d,%d,%d} (batch, channels, %d), got %s", name, N, C, nd, nd,
        shp(samples))
    end
    if not floating(samples) then fail("%s: _random_samples must be float32 or float64, got %s", name, samples:dtype()) end
  end
  local r = x:dtype() == "float32" and f32 or ident
  local sv = samples:detach():to(x:dtype()):contiguous():reshape(N * C * nd):tolist()
  -- which sample each spatial dim takes: 2-D {w, h} (PyTorch's order), 3-D {t, h, w}
  local which = nd == 2 and {2, 1} or {1, 2, 3}
  local P, K, S = 1, 1, 1
  for d = 1, nd do P, K, S = P * out[d], K * k[d], S * ins[d] end
  -- the flat (1-based) plane index of every window element: {N, C, out..., k...}
  local idx
  local stride = S
  for d = 1, nd do
    stride = stride // ins[d]
    local starts = {}
    for plane = 0, N * C - 1 do
      local seq = intervals(r, sv[plane * nd + which[d]], ins[d], out[d], k[d])
      for i = 1, out[d] do starts[#starts + 1] = seq[i] end
    end
    local shape_s, shape_o = {N, C}, {}
    for e = 1, nd do shape_s[2 + e] = e == d and out[d] or 1 end
    for e = 1, nd do shape_s[2 + nd + e] = 1 end
    for e = 1, 2 + 2 * nd do shape_o[e] = 1 end
    shape_o[2 + nd + d] = k[d]
    local st = pt.tensor(starts, {dtype = "int64"}):reshape(shape_s)
    local off = pt.arange(0, k[d], {dtype = "int64"}):reshape(shape_o)
    local term = (st + off) * stride
    idx = idx and idx + term or term
  end
  idx = (idx + 1):expand(table.unpack((function()
    local full = {N, C}
    for d = 1, nd do full[2 + d], full[2 + nd + d] = out[d], k[d] end
    return full
  end)())):contiguous():reshape(N, C, P, K)
  local flat = xb:reshape(N, C, S)
  local vals = flat:detach():gather(3, idx:reshape(N, C, P * K)):reshape(N, C, P, K)
  local _, am = vals:max(4)
  local indices = idx:gather(4, am:unsqueeze(4)):reshape(N, C, P)
  local y = flat:gather(3, indices)
  local oshape = {N, C}
  for d = 1, nd do oshape[2 + d] = out[d] end
  y, indices = y:reshape(oshape), indices:reshape(oshape)
  if unbatched then y, indices = y:squeeze(1), indices:squeeze(1) end
  if return_indices then return y, indices end
  return y
end

local function any_arg(_, _, v) return v end
local function boolean_arg(name, k, v)
  if type(v) ~= "boolean" then fail("%s: %s must be a boolean, got %s", name, k, type_of(v)) end
  return v
end
local function frac_specs()
  return {{"kernel_size", any_arg, A.REQUIRED}, {"output_size", any_arg, nil}, {"output_ratio", any_arg, nil},
    {"return_indices", boolean_arg, false}, {"_random_samples", any_arg, nil}}
end

local function frac_functional(fname, nd)
  local f = function(x, ...)
    local s = A.parse(fname, frac_specs(), ...)
    return frac_pool_run(fname, nd, x, s.kernel_size, s.output_size, s.output_ratio, s.return_indices,
      s._random_samples)
  end
  nn[fname] = f
  F[fname] = f
  local shape = nd == 2 and "{N,C,H,W} or {C,H,W}" or "{N,C,T,H,W} or {C,T,H,W}"
  local order = nd == 2 and "{w, h}" or "{t, h, w}"
  doc(f, fmt([==[nn.functional.%s(x, kernel_size[, output_size[, output_ratio[, return_indices=false[, _random_samples]]]])
  -> Tensor[, indices]  (or the settings as an options table)
  Fractional max pooling (Graham, 2014) of x %s, as PyTorch's: the maximum of each kernel_size window,
  the windows' starts pseudo-random per plane so that the output has output_size (n or one per dim) or
  floor(input size * output_ratio) (output_size wins when both are given). _random_samples {N,C,%d} in
  [0,1) (one per spatial dim, in PyTorch's order %s) fixes the windows, else pt.rand draws them.
  indices: 1-based positions in the flattened input plane, as max_pool%dd's. Differentiable in x.]==],
    fname, shape, nd, order, nd))
  return f
end
local frac2 = frac_functional("fractional_max_pool2d", 2)
local frac3 = frac_functional("fractional_max_pool3d", 3)

local function frac_class(name, nd, fn)
  local P = Module:extend(name)
  function P:__init(...)
    local s = A.parse(name, frac_specs(), ...)
    self.kernel_size = positive_tuple(name, "kernel_size", s.kernel_size, nd)
    self.return_indices = s.return_indices
    if s._random_samples ~= nil then
      H.check_tensor_arg(name, "_random_samples", s._random_samples)
      self:register_buffer("_random_samples", s._random_samples)
    end
    if s.output_size == nil and s.output_ratio == nil then
      fail("%s requires specifying either an output size, or a pooling ratio", name)
    end
    if s.output_size ~= nil and s.output_ratio ~= nil then
      fail("%s: only one of output_size and output_ratio may be specified", name)
    end
    if s.output_size ~= nil then self.output_size = positive_tuple(name, "output_size", s.output_size, nd) end
    if s.output_ratio ~= nil then
      local r = ratio_tuple(name, s.output_ratio, nd)
      for d = 1, nd do
        if not (r[d] > 0 and r[d] < 1) then
          fail("%s: output_ratio must be between 0 and 1 (got %s)", name,
            type(s.output_ratio) == "number" and num_repr(s.output_ratio) or fmt_tuple(r))
        end
      end
      self.output_ratio = r
    end
  end
  function P:forward(x)
    return fn(x, self.kernel_size, {output_size = self.output_size, output_ratio = self.output_ratio,
      return_indices = self.return_indices, _random_samples = self._buffers._random_samples})
  end
  function P:extra_repr()
    local s = "kernel_size=" .. fmt_tuple(self.kernel_size)
    if self.output_size then s = s .. ", output_size=" .. fmt_tuple(self.output_size) end
    if self.output_ratio then s = s .. ", output_ratio=" .. fmt_tuple(self.output_ratio) end
    if self.return_indices then s = s .. ", return_indices=true" end
    return s
  end
  nn[name] = P
  doc(P, fmt([==[nn.%s(kernel_size[, output_size[, output_ratio[, return_indices=false[, _random_samples]]]])  (or an options table)
  Fractional max pooling of %s; exactly one of output_size (n or one per dim) and output_ratio (in (0, 1),
  one number or one per dim). _random_samples (a buffer, as PyTorch's) fixes the windows; without it each
  call draws new ones. m(x) -> y[, indices] (1-based, as nn.functional.%s's, which see).]==],
    name, nd == 2 and "{N,C,H,W} or {C,H,W}" or "{N,C,T,H,W} or {C,T,H,W}", "fractional_max_pool" .. nd .. "d"))
  return P
end
frac_class("FractionalMaxPool2d", 2, frac2)
frac_class("FractionalMaxPool3d", 3, frac3)

-- ------------------------------------------------------------------ AdaptiveLogSoftmaxWithLoss

local ALS = Module:extend("AdaptiveLogSoftmaxWithLoss")
nn.AdaptiveLogSoftmaxWithLoss = ALS
local CUTOFF_MSG = "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where "
  .. "each value is between 1 and n_classes-1"

function ALS:__init(...)
  local name = "AdaptiveLogSoftmaxWithLoss"
  local s = A.parse(name, {{"in_features", any_arg, A.REQUIRED}, {"n_classes", any_arg, A.REQUIRED},
    {"cutoffs", any_arg, A.REQUIRED}, {"div_value", A.number, 4.0}, {"head_bias", boolean_arg, false},
    {"dtype", A.dtype_arg, nil}}, ...)
  positive_int(name, "in_features", s.in_features)
  positive_int(name, "n_classes", s.n_classes)
  local c = s.cutoffs
  if type(c) ~= "table" or #c == 0 then fail("%s: %s", name, CUTOFF_MSG) end
  local cut = {}
  for i, v in ipairs(c) do
    if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v)) then fail("%s: %s", name, CUTOFF_MSG) end
    v = math.tointeger(v)
    if v <= 0 or v > s.n_classes - 1 or (i > 1 and v <= cut[i - 1]) then fail("%s: %s", name, CUTOFF_MSG) end
    cut[i] = v
  end
  self.in_features, self.n_classes, self.div_value, self.head_bias = s.in_features, s.n_classes, s.div_value, s.head_bias
  cut[#cut + 1] = s.n_classes
  self.cutoffs = cut
  self.shortlist_size = cut[1]
  self.n_clusters = #cut - 1
  self.head_size = self.shortlist_size + self.n_clusters
  self.head = nn.Linear(s.in_features, self.head_size, {bias = s.head_bias, dtype = s.dtype})
  self.tail = nn.ModuleList()
  for i = 1, self.n_clusters do
    local hsz = math.tointeger(math.floor(s.in_features / s.div_value ^ i))
    if hsz < 1 then
      fail("%s: cluster %d's projection size in_features / div_value^%d = %d must be at least 1", name, i, i, hsz)
    end
    local osz = cut[i + 1] - cut[i]
    self.tail:append(nn.Sequential(nn.Linear(s.in_features, hsz, {bias = false, dtype = s.dtype}),
      nn.Linear(hsz, osz, {bias = false, dtype = s.dtype})))
  end
end
function ALS:reset_parameters()
  self.head:reset_parameters()
  for i = 1, self.n_clusters do
    self.tail[i][1]:reset_parameters()
    self.tail[i][2]:reset_parameters()
  end
end
doc(ALS.reset_parameters, "als:reset_parameters(): draws head and the tail projections again, as the constructor does.")

local function als_input(self, name, x)
  H.check_tensor_arg(name, "input", x)
  if x:dim() ~= 2 then fail("%s: input must be 2-D {N, in_features}, got shape %s", name, shp(x)) end
  if x:size(2) ~= self.in_features then
    fail("%s: input has %d features, expected %d (input shape %s)", name, x:size(2), self.in_features, shp(x))
  end
end

function ALS:forward(input, target)
  local name = "AdaptiveLogSoftmaxWithLoss:forward"
  H.check_tensor_arg(name, "input", input)
  H.check_tensor_arg(name, "target", target)
  local td = target:dim()
  if td == 1 then
    if input:dim() ~= 2 then
      fail("%s: 1D target tensor expects 2D input tensors, but found inputs with size %s", name, shp(input))
    end
    if input:size(1) ~= target:size(1) then
      fail("%s: Input and target should have the same size in the batch dimension (input %s, target %s)", name,
        shp(input), shp(target))
    end
  elseif td == 0 then
    if input:dim() ~= 1 then
      fail("%s: 0D target tensor expects 1D input tensors, but found inputs with size %s", name, shp(input))
    end
  else
    fail("%s: 0D or 1D target tensor expected, multi-target not supported", name)
  end
  local batched = td > 0
  local x = batched and input or input:unsqueeze(1)
  als_input(self, name, x)
  local tv = (batched and target or target:unsqueeze(1)):to("int64"):tolist()
  local B = #tv
  local lo, hi
  local gather, rows, rel = {}, {}, {}
  for i = 1, self.n_clusters do rows[i], rel[i] = {}, {} end
  for b, t in ipairs(tv) do
    lo = lo and math.min(lo, t) or t
    hi = hi and math.max(hi, t) or t
    if t >= 1 and t <= self.shortlist_size then
      gather[b] = t
    else
      for i = 1, self.n_clusters do
        if t > self.cutoffs[i] and t <= self.cutoffs[i + 1] then
          gather[b] = self.shortlist_size + i
          rows[i][#rows[i] + 1] = b
          rel[i][#rel[i] + 1] = t - self.cutoffs[i]
        end
      end
    end
  end
  if B > 0 and (lo < 1 or hi > self.n_classes) then
    fail("%s: Target values should be in [1, %d], but values in range [%d, %d] were found", name, self.n_classes,
      lo, hi)
  end
  local output = pt.zeros(B, {dtype = x:dtype()})
  for i = 1, self.n_clusters do
    if #rows[i] > 0 then
      local r = pt.tensor(rows[i], {dtype = "int64"})
      local co = self.tail[i](x:index_select(1, r))
      local lp = F.log_softmax(co, 2)
      local loc = lp:gather(2, pt.tensor(rel[i], {dtype = "int64"}):unsqueeze(2)):squeeze(2)
      output = output:index_add(1, r, loc)
    end
  end
  local head_lp = F.log_softmax(self.head(x), 2)
  if B > 0 then
    output = output + head_lp:gather(2, pt.tensor(gather, {dtype = "int64"}):unsqueeze(2)):squeeze(2)
  end
  local loss = (-output):mean()
  if not batched then output = output:squeeze(1) end
  return {output = output, loss = loss, output, loss}
end
doc(ALS.forward, [==[als(input, target) -> {output=, loss=} (also [1], [2]; PyTorch's _ASMoutput named tuple)
  input {N, in_features} with target {N}, or input {in_features} with a 0-D target; targets are 1-based
  classes in [1, n_classes]. output: each target's log-probability; loss: mean of -output.]==])

local function full_log_prob(self, x, head_output)
  local head_lp = F.log_softmax(head_output, 2)
  local parts = {head_lp:narrow(2, 1, self.shortlist_size)}
  for i = 1, self.n_clusters do
    local lp = F.log_softmax(self.tail[i](x), 2)
    parts[#parts + 1] = lp + head_lp:narrow(2, self.shortlist_size + i, 1)
  end
  return pt.cat(parts, 2)
end

function ALS:log_prob(input)
  als_input(self, "AdaptiveLogSoftmaxWithLoss:log_prob", input)
  return full_log_prob(self, input, self.head(input))
end
doc(ALS.log_prob, "als:log_prob(input {N, in_features}) -> {N, n_classes}: the log-probability of every class (column c is class c).")

function ALS:predict(input)
  als_input(self, "AdaptiveLogSoftmaxWithLoss:predict", input)
  local head_output = self.head(input)
  local out = head_output:argmax(2)
  local far = out:gt(self.shortlist_size)
  if not far:any():item() then return out end
  local full = full_log_prob(self, input, head_output):argmax(2)
  return pt.where(far, full, out)
end
doc(ALS.predict, "als:predict(input {N, in_features}) -> int64 {N}: the most probable class (1-based) of each row,\n"
  .. "  log_prob(input):argmax(2), computing the tail clusters only when a row's head picks a cluster.")

function ALS:extra_repr()
  return fmt("in_features=%d, n_classes=%d, cutoffs={%s}, div_value=%s, head_bias=%s", self.in_features, self.n_classes,
    table.concat(self.cutoffs, ", ", 1, #self.cutoffs - 1), num_repr(self.div_value), tostring(self.head_bias))
end
doc(ALS, [==[nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs[, div_value=4.0[, head_bias=false]])  (or an options table, also dtype=)
  Efficient softmax approximation (Grave et al., 2016), as PyTorch's: classes 1..cutoffs[1] form the head's
  shortlist; cluster i holds classes cutoffs[i]+1 .. cutoffs[i+1] (the last up to n_classes) and is scored
  by head column shortlist + i times tail[i] (Linear(in, floor(in / div_value^i)) then Linear(that, size),
  no biases). cutoffs: increasing integers in [1, n_classes-1]. head: Linear(in, shortlist + clusters,
  bias=head_bias). m(input, target) -> {output=, loss=}; m:log_prob(input); m:predict(input).]==])

-- ------------------------------------------------------------------ smaller names torch.nn has

-- torch.nn.utils exports these two of the fusion functions itself
utils.fuse_conv_bn_eval = fusion.fuse_conv_bn_eval
utils.fuse_conv_bn_weights = fusion.fuse_conv_bn_weights

-- F.fractional_max_pool2d/3d_with_indices: always the indices too
for _, nd in ipairs {2, 3} do
  local fname = "fractional_max_pool" .. nd .. "d_with_indices"
  local f = function(x, ...)
    local s = A.parse(fname, frac_specs(), ...)
    return frac_pool_run(fname, nd, x, s.kernel_size, s.output_size, s.output_ratio, true, s._random_samples)
  end
  nn[fname], F[fname] = f, f
  doc(f, fmt("nn.functional.%s(x, kernel_size[, output_size[, output_ratio[, return_indices[, _random_samples]]]])\n"
    .. "  -> output, indices: nn.functional.fractional_max_pool%dd with the indices whatever return_indices says.", fname, nd))
end

-- nn.NLLLoss2d: PyTorch's deprecated alias of NLLLoss (any {N,C,...} input)
local NLLLoss2d = nn.NLLLoss:extend("NLLLoss2d")
nn.NLLLoss2d = NLLLoss2d
doc(NLLLoss2d, "nn.NLLLoss2d([{weight=, ignore_index=, reduction=\"mean\"}]): PyTorch's deprecated alias of nn.NLLLoss (which takes\n"
  .. "  {N,C,H,W} log-probabilities with {N,H,W} targets too); see help(nn.NLLLoss).")

-- F.conv_tbc: a conv1d over time of {time, batch, channels} inputs
local function conv_tbc(x, weight, bias, pad)
  local name = "conv_tbc"
  H.check_tensor_arg(name, "input", x)
  H.check_tensor_arg(name, "weight", weight)
  H.check_tensor_arg(name, "bias", bias)
  pad = pad or 0
  if math.type(pad) ~= "integer" or pad < 0 then fail("%s: pad must be a non-negative integer, got %s", name, tostring(pad)) end
  if x:dim() ~= 3 then fail("%s: input must have 3 dims {time, batch, channels}, got shape %s", name, shp(x)) end
  if weight:dim() ~= 3 then fail("%s: weight must have 3 dims {kernel_width, in_channels, out_channels}, got shape %s", name, shp(weight)) end
  if bias:dim() ~= 1 then fail("%s: bias must have 1 dim, got shape %s", name, shp(bias)) end
  if x:size(3) ~= weight:size(2) then
    fail("%s: input has %d channels, weight expects %d (input shape %s, weight shape %s)", name, x:size(3), weight:size(2),
      shp(x), shp(weight))
  end
  if bias:size(1) ~= weight:size(3) then
    fail("%s: bias has %d elements, weight has %d output channels", name, bias:size(1), weight:size(3))
  end
  local y = F.conv1d(x:permute(2, 3, 1), weight:permute(3, 2, 1), bias, {padding = pad})
  return y:permute(3, 1, 2)
end
nn.conv_tbc, F.conv_tbc = conv_tbc, conv_tbc
doc(conv_tbc, [==[nn.functional.conv_tbc(input, weight, bias[, pad=0]) -> Tensor: PyTorch's 1-D convolution of time-batch-channel data:
  input {T, B, C_in}, weight {k, C_in, C_out}, bias {C_out}; output {T + 2*pad - k + 1, B, C_out} (F.conv1d on the
  permuted tensors; differentiable).]==])

-- nn.CrossMapLRN2d: PyTorch's legacy cross-channel normalisation (its own channel windows: the first
-- channel stays in every later window, a quirk of its running-sum loop; the window is 2*floor((size-1)/2 + 1) - 1
-- channels); x * (k + alpha/size * sum of x^2 over the window)^-beta
local CrossMapLRN2d = Module:extend("CrossMapLRN2d")
nn.CrossMapLRN2d = CrossMapLRN2d
function CrossMapLRN2d:__init(...)
  local name = "CrossMapLRN2d"
  local s = A.parse(name, {{"size", any_arg, A.REQUIRED}, {"alpha", A.number, 1e-4}, {"beta", A.number, 0.75},
    {"k", A.number, 1}}, ...)
  positive_int(name, "size", s.size)
  self.size, self.alpha, self.beta, self.k = s.size, s.alpha, s.beta, s.k
end
function CrossMapLRN2d:forward(x)
  local name = "CrossMapLRN2d:forward"
  H.check_tensor_arg(name, "input", x)
  if x:dim() ~= 4 then fail("%s: expected a 4-D input {N,C,H,W}, got shape %s", name, shp(x)) end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
  local C = x:size(2)
  local pp = (self.size - 1) // 2 + 1
  local m = {}
  for c = 0, C - 1 do
    local row = {}
    local lo, hi = c <= pp and 0 or c - pp + 1, math.min(C - 1, c + pp - 1)
    for j = 0, C - 1 do row[j + 1] = ((j >= lo and j <= hi) or (j == 0 and c > pp)) and 1 or 0 end
    m[c + 1] = row
  end
  local M = pt.tensor(m, {dtype = x:dtype()})
  -- scale[n, c, h, w] = sum_j M[c, j] * x[n, j, h, w]^2
  local sq = (x * x):permute(1, 3, 4, 2)
  local scale = pt.matmul(sq, M:t()):permute(1, 4, 2, 3) * (self.alpha / self.size) + self.k
  return x * scale:pow(-self.beta)
end
function CrossMapLRN2d:extra_repr()
  return fmt("%d, alpha=%s, beta=%s, k=%s", self.size, num_repr(self.alpha), num_repr(self.beta), num_repr(self.k))
end
doc(CrossMapLRN2d, [==[nn.CrossMapLRN2d(size[, alpha=1e-4[, beta=0.75[, k=1]]])  (or an options table)
  PyTorch's legacy cross-channel local response normalisation of {N,C,H,W}: x * (k + alpha/size * s)^-beta, s the
  sum of x^2 over a window of channels, with PyTorch's own windows (which differ from nn.LocalResponseNorm's:
  channel 1 stays in every later window). The values are PyTorch's; the gradient is this forward's exact one
  (PyTorch's hand-written backward assumes plain windows).]==])

-- ------------------------------------------------------------------ nn.utils.parametrize

local parametrize = {}
utils.parametrize = parametrize
doc(parametrize, "nn.utils.parametrize: PyTorch's torch.nn.utils.parametrize: register_parametrization,\n"
  .. "  remove_parametrizations, is_parametrized, type_before_parametrizations, cached, ParametrizationList.")

local cache_depth, cache = 0, {}

local function same_shape(a, b) return shp(a) == shp(b) end
-- original.set_(new): the same tensor object takes new's value (and shape)
local function maybe_set(original, new)
  pt.no_grad(function()
    if same_shape(original, new) then original:copy_(new)
    else pt._nn_set_data_(original, new:detach():clone()) end
  end)
end

-- a ModuleList of parametrizations (children "1", "2", ...) and the original tensor ("original")
local PList = Module.extend(nn.ModuleList, "ParametrizationList")
parametrize.ParametrizationList = PList
function PList:__init(modules, original, unsafe)
  local name = "ParametrizationList"
  if #modules == 0 then fail("%s: ParametrizationList requires one or more modules", name) end
  for _, m in ipairs(modules) do self:append(m) end
  self.unsafe = unsafe == true
  local shape0, dtype0 = shp(original), original:dtype()
  local new = original
  pt.no_grad(function()
    for i = #modules, 1, -1 do
      local m = modules[i]
      if m.right_inverse and not (m._right_inverse_unavailable and m:_right_inverse_unavailable()) then
        new = m:right_inverse(new)
      end
    end
  end)
  if not pt.is_tensor(new) then
    fail("%s: 'right_inverse' must return a tensor, got %s (several original tensors are not supported)", name,
      type_of(new))
  end
  if new:dtype() ~= dtype0 then
    fail("%s: when `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: %s\n"
      .. "right_inverse(original).dtype: %s", name, dtype0, new:dtype())
  end
  if new ~= original then maybe_set(original, new) end
  if original.requires_grad and original.is_leaf then
    self.original = original
  else
    self:register_buffer("original", original)
  end
  if not self.unsafe then
    local z = self:forward()
    if not pt.is_tensor(z) then fail("%s: a parametrization must return a tensor, got %s", name, type_of(z)) end
    if z:dtype() ~= dtype0 then
      fail("Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\n"
        .. "unparametrized dtype: %s\nparametrized dtype: %s", dtype0, z:dtype())
    end
    if shp(z) ~= shape0 then
      fail("Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
        .. "unparametrized shape: %s\nparametrized shape: %s", shape0, shp(z))
    end
  end
end
function PList:forward()
  local orig = self._parameters.original or self._buffers.original
  local x = self._modules["1"](orig)
  for i = 2, #self._module_names do x = self._modules[tostring(i)](x) end
  return x
end
doc(PList.forward, "plist() -> the parametrized tensor: the parametrizations applied in order to plist.original.")
function PList:right_inverse(value)
  pt.no_grad(function()
    for i = #self._module_names, 1, -1 do
      local m = self._modules[tostring(i)]
      if not m.right_inverse then
        fail("parametrization %s does not implement right_inverse.", class_name(m))
      end
      value = m:right_inverse(value)
    end
  end)
  local orig = self._parameters.original or self._buffers.original
  if not pt.is_tensor(value) then fail("`right_inverse` should return a tensor, got %s", type_of(value)) end
  if value:dtype() ~= orig:dtype() then
    fail("The tensor returned by `right_inverse` has dtype %s while `original` has dtype %s", value:dtype(), orig:dtype())
  end
  maybe_set(orig, value)
end
doc(PList.right_inverse, "plist:right_inverse(value): assigns value to the parametrized tensor: the parametrizations' right_inverse\n"
  .. "  in reverse order give original its new value (in place; an error when one has no right_inverse).")
doc(PList, [==[nn.utils.parametrize.ParametrizationList(modules, original[, unsafe=false]): what register_parametrization keeps
  under module.parametrizations[name]: the parametrizations as children 1, 2, ... and the tensor as "original"
  (a parameter, or a buffer). plist() computes the parametrized tensor; plist:right_inverse(value) sets it.]==])

local function plist_of(module, name)
  local ps = rawget(module, "_modules").parametrizations
  if ps == nil or rawget(module, "_original_class") == nil then return nil end
  return rawget(ps, "_modules")[name]
end

local function value_of(module, name, pl)
  if cache_depth > 0 then
    local per = cache[module]
    if per == nil then per = {}; cache[module] = per end
    local v = per[name]
    if v == nil then v = pl(); per[name] = v end
    return v
  end
  return pl()
end

-- the class a module turns into at its first parametrization: Parametrized<Class>
local function inject_class(module)
  local orig = getmetatable(module)
  local cls = Module.extend(orig, "Parametrized" .. (rawget(orig, "__name") or "Module"))
  local orig_index, orig_newindex = rawget(orig, "__index"), rawget(orig, "__newindex")
  cls.__index = function(self, k)
    local pl = plist_of(self, k)
    if pl then
      -- inside a forward the values are in place already
      local tmp = rawget(self, "_parameters")[k] or rawget(self, "_buffers")[k]
      if tmp ~= nil then return tmp end
      return value_of(self, k, pl)
    end
    if type(orig_index) == "function" then return orig_index(self, k) end
    return orig_index[k]
  end
  cls.__newindex = function(self, k, v)
    local pl = plist_of(self, k)
    if pl and pt.is_tensor(v) then return pl:right_inverse(v) end
    return orig_newindex(self, k, v)
  end
  -- the layer's own forward reads its tensors from its stores: they hold the parametrized values
  -- during the call
  local orig_forward = orig.forward
  function cls:forward(...)
    local ps = rawget(self, "_modules").parametrizations
    local placed = {}
    for _, name in ipairs(ps._module_names) do
      local pl = ps._modules[name]
      local store = pl._parameters.original and rawget(self, "_parameters") or rawget(self, "_buffers")
      store[name] = value_of(self, name, pl)
      placed[#placed + 1] = {store, name}
    end
    local r = table.pack(pcall(orig_forward, self, ...))
    for _, e in ipairs(placed) do e[1][e[2]] = nil end
    if not r[1] then error(r[2], 0) end
    return table.unpack(r, 2, r.n)
  end
  rawset(module, "_original_class", orig)
  setmetatable(module, cls)
end

function parametrize.is_parametrized(module, tensor_name)
  if not nn.is_module(module) then fail("is_parametrized: module must be a Module, got %s", type_of(module)) end
  local ps = rawget(module, "_modules").parametrizations
  if ps == nil or rawget(module, "_original_class") == nil then return false end
  if tensor_name == nil then return #ps._module_names > 0 end
  return rawget(ps, "_modules")[tensor_name] ~= nil
end
doc(parametrize.is_parametrized, "nn.utils.parametrize.is_parametrized(module[, tensor_name]) -> true when module has a parametrization\n"
  .. "  (on tensor_name, when given).")

function parametrize.type_before_parametrizations(module)
  if not nn.is_module(module) then
    fail("type_before_parametrizations: module must be a Module, got %s", type_of(module))
  end
  return rawget(module, "_original_class") or getmetatable(module)
end
doc(parametrize.type_before_parametrizations, "nn.utils.parametrize.type_before_parametrizations(module) -> module's class before its parametrizations\n"
  .. "  (its class when it has none).")

function parametrize.register_parametrization(module, tensor_name, parametrization, opts)
  local name = "register_parametrization"
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", name, type_of(module)) end
  if type(tensor_name) ~= "string" then fail("%s: tensor_name must be a string, got %s", name, type_of(tensor_name)) end
  if not nn.is_module(parametrization) then
    fail("%s: parametrization must be a Module (with forward and optionally right_inverse), got %s", name,
      type_of(parametrization))
  end
  opts = check_opts(name, opts, {"unsafe"})
  local unsafe = opts.unsafe == true
  parametrization:train(module.training)
  if parametrize.is_parametrized(module, tensor_name) then
    local pl = plist_of(module, tensor_name)
    if not unsafe then
      local y = module[tensor_name]
      local x = parametrization(y)
      if not pt.is_tensor(x) then fail("%s: a parametrization must return a tensor, got %s", name, type_of(x)) end
      if x:dtype() ~= y:dtype() then
        fail("Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\n"
          .. "module.%s.dtype: %s\nparametrization(module.%s).dtype: %s", tensor_name, y:dtype(), tensor_name, x:dtype())
      end
      if shp(x) ~= shp(y) then
        fail("Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
          .. "module.%s.shape: %s\nparametrization(module.%s).shape: %s", tensor_name, shp(y), tensor_name, shp(x))
      end
      if parametrization.right_inverse then
        local z = parametrization:right_inverse(x)
        if not pt.is_tensor(z) then fail("%s: parametrization.right_inverse must return a tensor, got %s", name, type_of(z)) end
        if z:dtype() ~= y:dtype() or shp(z) ~= shp(y) then
          fail("%s: the tensor returned by parametrization.right_inverse must have the dtype %s and shape %s of module.%s, "
            .. "got %s %s", name, y:dtype(), shp(y), tensor_name, z:dtype(), shp(z))
        end
      end
    end
    pl:append(parametrization)
    pl.unsafe = pl.unsafe or unsafe
  else
    local p, b = rawget(module, "_parameters")[tensor_name], rawget(module, "_buffers")[tensor_name]
    local original = p or b
    if original == nil then
      fail("%s: Module '%s' does not have a parameter, a buffer, or a parametrized element with name '%s'", name,
        class_name(module), tensor_name)
    end
    local pl = PList({parametrization}, original, unsafe)
    module[tensor_name] = nil
    if rawget(module, "_original_class") == nil then
      inject_class(module)
      module.parametrizations = nn.ModuleDict()
    end
    module.parametrizations:add_module(tensor_name, pl)
  end
  return module
end
doc(parametrize.register_parametrization, [==[nn.utils.parametrize.register_parametrization(module, tensor_name, parametrization[, {unsafe=false}]) -> module
  As PyTorch's: module[tensor_name] (a parameter or buffer) becomes parametrization(original): the tensor moves
  to module.parametrizations[tensor_name].original (the same object; parametrization:right_inverse, when it
  has one, gives it its value first), and reading module[tensor_name] computes the parametrizations in
  order; assigning a tensor to it runs their right_inverse. The module's class becomes
  Parametrized<Class> (type_before_parametrizations gives the old one); its forward sees the
  parametrized tensors. A second registration on the same name chains after the first. Without unsafe
  a parametrization may not change the tensor's dtype or shape. state_dict keys:
  parametrizations.<name>.original and the parametrizations' own.]==])

function parametrize.remove_parametrizations(module, tensor_name, leave_parametrized)
  local name = "remove_parametrizations"
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", name, type_of(module)) end
  if type(leave_parametrized) == "table" then leave_parametrized = leave_parametrized.leave_parametrized end
  if leave_parametrized == nil then leave_parametrized = true end
  if not parametrize.is_parametrized(module, tensor_name) then
    fail("%s: Module %s does not have a parametrization on %s", name, class_name(module), tostring(tensor_name))
  end
  local pl = plist_of(module, tensor_name)
  local is_param = pl._parameters.original ~= nil
  local original = pl._parameters.original or pl._buffers.original
  if leave_parametrized then
    local t = module[tensor_name]
    maybe_set(original, t)
  end
  module.parametrizations[tensor_name] = nil
  if is_param then
    rawget(module, "_parameters")[tensor_name] = nil
    module[tensor_name] = original
  else
    module:register_buffer(tensor_name, original)
  end
  if not parametrize.is_parametrized(module) then
    local orig = rawget(module, "_original_class")
    module.parametrizations = nil
    rawset(module, "_original_class", nil)
    setmetatable(module, orig)
  end
  return module
end
doc(parametrize.remove_parametrizations, [==[nn.utils.parametrize.remove_parametrizations(module, tensor_name[, leave_parametrized=true]) -> module
  Undoes register_parametrization for tensor_name: the original tensor object comes back as module[tensor_name],
  holding the parametrized value when leave_parametrized (else its unparametrized one). With no
  parametrizations left the module gets its class back and loses module.parametrizations.]==])

function parametrize.transfer_parametrizations_and_params(from_module, to_module, tensor_name)
  local name = "transfer_parametrizations_and_params"
  if not nn.is_module(from_module) then fail("%s: from_module must be a Module, got %s", name, type_of(from_module)) end
  if not nn.is_module(to_module) then fail("%s: to_module must be a Module, got %s", name, type_of(to_module)) end
  if not parametrize.is_parametrized(from_module) then return to_module end
  local ps = from_module.parametrizations
  local names = tensor_name ~= nil and {tensor_name} or {table.unpack(ps._module_names)}
  for _, pname in ipairs(names) do
    local from_pl = plist_of(from_module, pname)
    if from_pl == nil then
      fail("%s: Module %s does not have a parametrization on %s", name, class_name(from_module), tostring(pname))
    end
    if to_module[pname] == nil then
      to_module[pname] = nn.Parameter(from_module[pname]:detach():clone())
    end
    for _, cname in ipairs(from_pl._module_names) do
      parametrize.register_parametrization(to_module, pname, from_pl._modules[cname])
    end
    local to_pl = plist_of(to_module, pname)
    local orig = from_pl._parameters.original
    if orig then
      rawget(to_pl, "_buffers").original = nil
      to_pl.original = orig
    else
      to_pl:register_buffer("original", from_pl._buffers.original)
    end
  end
  return to_module
end
doc(parametrize.transfer_parametrizations_and_params, [==[nn.utils.parametrize.transfer_parametrizations_and_params(from_module, to_module[, tensor_name]) -> to_module
  As PyTorch's: every parametrization of from_module (or tensor_name's) is registered on to_module too (the same
  parametrization modules, in order; a name to_module lacks is first made a Parameter holding from_module's
  parametrized value), and to_module's original becomes from_module's original tensor (shared).]==])

function parametrize.cached(fn, ...)
  if type(fn) ~= "function" then fail("cached: expected a function to run, got %s", type_of(fn)) end
  cache_depth = cache_depth + 1
  local r = table.pack(pcall(fn, ...))
  cache_depth = cache_depth - 1
  if cache_depth == 0 then cache = {} end
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end
doc(parametrize.cached, [==[nn.utils.parametrize.cached(fn, ...) -> fn(...)'s results: PyTorch's `with parametrize.cached():` as a call.
  While fn runs, each parametrized tensor is computed once (per module and name) and reused; the cache is
  dropped when the outermost cached call returns.]==])

-- ------------------------------------------------------------------ nn.utils.parametrizations

local parametrizations = {}
utils.parametrizations = parametrizations
doc(parametrizations, "nn.utils.parametrizations: PyTorch 1.13's torch.nn.utils.parametrizations: orthogonal, spectral_norm\n"
  .. "  (parametrizations registered with nn.utils.parametrize).")

local function mT(x) return x:transpose(-2, -1) end

-- LAPACK's geqrf of one n x k matrix (Lua numbers): the reflectors below the diagonal, R on and
-- above it, and tau
local function geqrf_2d(a, n, k)
  local tau = {}
  for j = 1, math.min(n, k) do
    local alpha, xn = a[j][j], 0
    for i = j + 1, n do xn = xn + a[i][j] ^ 2 end
    xn = math.sqrt(xn)
    if xn == 0 then
      tau[j] = 0
    else
      local beta = -(alpha >= 0 and 1 or -1) * math.sqrt(alpha * alpha + xn * xn)
      tau[j] = (beta - alpha) / beta
      local scale = 1 / (alpha - beta)
      for i = j + 1, n do a[i][j] = a[i][j] * scale end
      a[j][j] = beta
      -- apply H = I - tau v v^T (v = [1, a[j+1.., j]]) to the columns right of j
      for c = j + 1, k do
        local dot = a[j][c]
        for i = j + 1, n do dot = dot + a[i][j] * a[i][c] end
        dot = dot * tau[j]
        a[j][c] = a[j][c] - dot
        for i = j + 1, n do a[i][c] = a[i][c] - dot * a[i][j] end
      end
    end
  end
  return a, tau
end

-- torch.geqrf over the leading (batch) dims: A, tau
local function geqrf(Q)
  local size = Q:size()
  local n, k = size[#size - 1], size[#size]
  local flat = Q:detach():contiguous():reshape(-1, n, k):tolist()
  local taus = {}
  for b, m in ipairs(flat) do
    local _, t = geqrf_2d(m, n, k)
    taus[b] = t
  end
  local tshape = {}
  for i = 1, #size - 2 do tshape[i] = size[i] end
  tshape[#tshape + 1] = math.min(n, k)
  return pt.tensor(flat, {dtype = Q:dtype()}):reshape(size), pt.tensor(taus, {dtype = Q:dtype()}):reshape(tshape)
end

-- torch.linalg.householder_product(A {..., n, k}, tau {..., k}) -> {..., n, k}; differentiable
local function householder_product(A, tau)
  local size = A:size()
  local n, k = size[#size - 1], size[#size]
  local V = A:tril(-1) + pt.eye(n, k, {dtype = A:dtype()})
  local Q = pt.eye(n, {dtype = A:dtype()})
  for i = 1, tau:size(tau:dim()) do
    local v = V:narrow(-1, i, 1)
    local t = tau:narrow(-1, i, 1):unsqueeze(-1)
    Q = Q - pt.matmul(pt.matmul(Q, v) * t, mT(v))
  end
  return Q:narrow(-1, 1, k)
end

-- the Q of A's QR decomposition with diag(R) > 0 (PyTorch's _make_orthogonal)
local function make_orthogonal(A)
  local q, r = pt.linalg.qr(A)
  return q * r:diagonal(0, -2, -1):sign():unsqueeze(-2)
end

local function is_orthogonal(Q)
  local n, k = Q:size(Q:dim() - 1), Q:size(Q:dim())
  local eps = 10 * n * (Q:dtype() == "float64" and 2.220446049250313e-16 or 1.1920928955078125e-07)
  return ((pt.matmul(mT(Q), Q) - pt.eye(k, {dtype = Q:dtype()})):abs():max():item() <= eps)
end

local MAPS = {matrix_exp = true, cayley = true, householder = true}
local Orthogonal = Module:extend("_Orthogonal")
parametrizations._Orthogonal = Orthogonal
function Orthogonal:__init(weight, map, use_trivialization)
  self.shape = weight:size()
  self.orthogonal_map = map
  self._trivialization = use_trivialization
end
-- PyTorch's NotImplementedError: at registration the identity, on assignment an error
function Orthogonal:_right_inverse_unavailable()
  return not self._trivialization and self.orthogonal_map ~= "householder"
end
function Orthogonal:forward(X)
  local n, k = X:size(X:dim() - 1), X:size(X:dim())
  local transposed = n < k
  if transposed then X = mT(X); n, k = k, n end
  local Q
  if self.orthogonal_map == "matrix_exp" or self.orthogonal_map == "cayley" then
    X = X:tril()
    if n ~= k then
      local zshape = X:size()
      zshape[#zshape] = n - k
      X = pt.cat({X, pt.zeros(zshape, {dtype = X:dtype()})}, -1)
    end
    local A = X - mT(X)
    if self.orthogonal_map == "matrix_exp" then
      Q = pt.matrix_exp(A)
    else
      local Id = pt.eye(n, {dtype = A:dtype()})
      Q = pt.linalg.solve(Id - A * 0.5, Id + A * 0.5)
    end
    if n ~= k then Q = Q:narrow(-1, 1, k) end
  else
    local A = X:tril(-1)
    local tau = 2 / ((A * A):sum(-2) + 1)
    Q = householder_product(A, tau)
    Q = Q * X:detach():diagonal(0, -2, -1):trunc():unsqueeze(-2)
  end
  local base = self._buffers.base
  if base then Q = pt.matmul(base, Q) end
  if transposed then Q = mT(Q) end
  return Q
end
function Orthogonal:right_inverse(Q)
  if shp(Q) ~= "{" .. table.concat(self.shape, ",") .. "}" then
    fail("orthogonal: expected a matrix or batch of matrices of shape {%s}, got %s", table.concat(self.shape, ","), shp(Q))
  end
  local Q_init = Q
  local n, k = Q:size(Q:dim() - 1), Q:size(Q:dim())
  local transpose = n < k
  if transpose then Q = mT(Q); n, k = k, n end
  if not self._trivialization then
    if self.orthogonal_map ~= "householder" then
      fail("orthogonal: it is not possible to assign to the matrix exponential or the Cayley parametrizations when "
        .. "use_trivialization=false")
    end
    local A, tau = geqrf(Q)
    -- diag(A) := sign(diag(A)), flipped where tau == 0
    local d = A:diagonal(0, -2, -1):sign()
    d = pt.where(tau:eq(0), -d, d)
    local eye = pt.eye(n, k, {dtype = A:dtype()})
    A = A * (1 - eye) + eye * d:unsqueeze(-2)
    return transpose and mT(A) or A
  end
  if n == k then
    Q = is_orthogonal(Q) and Q:clone() or make_orthogonal(Q)
  else
    local nshape = Q:size()
    nshape[#nshape] = n - k
    Q = make_orthogonal(pt.cat({Q, pt.randn(nshape, {dtype = Q:dtype()})}, -1))
  end
  self:register_buffer("base", Q:detach())
  local neg = pt.zeros_like(Q_init)
  local e = pt.eye(Q_init:size(Q_init:dim() - 1), Q_init:size(Q_init:dim()), {dtype = neg:dtype()})
  return neg - e
end
doc(Orthogonal, "parametrizations._Orthogonal: the parametrization nn.utils.parametrizations.orthogonal registers (internal).")

function parametrizations.orthogonal(module, name, orthogonal_map, opts)
  local fname = "orthogonal"
  if type(name) == "table" and opts == nil then name, opts = nil, name end
  if type(orthogonal_map) == "table" and opts == nil then orthogonal_map, opts = nil, orthogonal_map end
  opts = check_opts(fname, opts, {"name", "orthogonal_map", "use_trivialization"})
  name = name or opts.name or "weight"
  orthogonal_map = orthogonal_map or opts.orthogonal_map
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  local weight = module[name]
  if not pt.is_tensor(weight) then
    fail("%s: Module '%s' has no parameter or buffer with name '%s'", fname, class_name(module), tostring(name))
  end
  if weight:dim() < 2 then
    fail("%s: Expected a matrix or batch of matrices. Got a tensor of %d dimensions.", fname, weight:dim())
  end
  local n, k = weight:size(weight:dim() - 1), weight:size(weight:dim())
  if orthogonal_map == nil then orthogonal_map = n == k and "matrix_exp" or "householder" end
  if not MAPS[orthogonal_map] then
    fail("%s: orthogonal_map has to be one of \"matrix_exp\", \"cayley\", \"householder\". Got: %s", fname,
      tostring(orthogonal_map))
  end
  local orth = Orthogonal(weight, orthogonal_map, opts.use_trivialization ~= false)
  parametrize.register_parametrization(module, name, orth, {unsafe = true})
  return module
end
doc(parametrizations.orthogonal, [==[nn.utils.parametrizations.orthogonal(module[, name="weight"[, orthogonal_map]][, {use_trivialization=true}]) -> module
  As PyTorch's: module[name] (a matrix or a batch of them) becomes orthogonal (orthonormal columns or rows):
  orthogonal_map "matrix_exp" (default for square), "cayley" or "householder" (default otherwise) of the
  parametrization's original. With use_trivialization (default) the tensor's value at registration is kept
  (made orthogonal by QR: the base buffer) and original starts at -I; assigning module[name] = Q does the
  same again (a non-square Q is completed with pt.randn columns, as PyTorch does).]==])

local SpectralNorm = Module:extend("_SpectralNorm")
parametrizations._SpectralNorm = SpectralNorm
function SpectralNorm:__init(weight, n_power_iterations, dim, eps)
  local nd = weight:dim()
  if dim >= nd or dim < -nd then
    fail("spectral_norm: Dimension out of range (expected to be in range of [%d, %d] but got %d)", -nd, nd - 1, dim)
  end
  if math.type(n_power_iterations) ~= "integer" or n_power_iterations <= 0 then
    fail("spectral_norm: Expected n_power_iterations to be positive, but got n_power_iterations=%s",
      tostring(n_power_iterations))
  end
  self.dim = dim >= 0 and dim or dim + nd
  self.eps = eps
  if nd > 1 then
    self.n_power_iterations = n_power_iterations
    local wm = self:_reshape_weight_to_matrix(weight)
    local h, w = wm:size(1), wm:size(2)
    local u = pt.randn(h, {dtype = wm:dtype()})
    local v = pt.randn(w, {dtype = wm:dtype()})
    self:register_buffer("_u", F.normalize(u, {dim = 1, eps = eps}))
    self:register_buffer("_v", F.normalize(v, {dim = 1, eps = eps}))
    self:_power_method(wm, 15)
  end
end
function SpectralNorm:_reshape_weight_to_matrix(weight)
  if self.dim ~= 0 then
    local perm = {self.dim + 1}
    for d = 1, weight:dim() do if d ~= self.dim + 1 then perm[#perm + 1] = d end end
    weight = weight:permute(table.unpack(perm))
  end
  return weight:reshape(weight:size(1), -1)
end
function SpectralNorm:_power_method(wm, n)
  pt.no_grad(function()
    local w = wm:detach()
    for _ = 1, n do
      self._buffers._u:copy_(F.normalize(pt.mv(w, self._buffers._v), {dim = 1, eps = self.eps}))
      self._buffers._v:copy_(F.normalize(pt.mv(w:t(), self._buffers._u), {dim = 1, eps = self.eps}))
    end
  end)
end
function SpectralNorm:forward(weight)
  if weight:dim() == 1 then return F.normalize(weight, {dim = 1, eps = self.eps}) end
  local wm = self:_reshape_weight_to_matrix(weight)
  if self.training then self:_power_method(wm, self.n_power_iterations) end
  local u, v = self._buffers._u:clone(), self._buffers._v:clone()
  local sigma = pt.dot(u, pt.mv(wm, v))
  return weight / sigma
end
function SpectralNorm:right_inverse(value) return value end
doc(SpectralNorm, "parametrizations._SpectralNorm: the parametrization nn.utils.parametrizations.spectral_norm registers (internal).")

function parametrizations.spectral_norm(module, name, n_power_iterations, eps, dim)
  local fname = "spectral_norm"
  if type(name) == "table" then
    local o = check_opts(fname, name, {"name", "n_power_iterations", "eps", "dim"})
    name, n_power_iterations, eps, dim = o.name, o.n_power_iterations, o.eps, o.dim
  end
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  name = name or "weight"
  local weight = module[name]
  if not pt.is_tensor(weight) then
    fail("%s: Module '%s' has no parameter or buffer with name '%s'", fname, class_name(module), tostring(name))
  end
  local pdim
  if dim == nil then
    local mt = parametrize.type_before_parametrizations(module)
    local transposed = false
    local c = mt
    while type(c) == "table" do
      if c == nn.ConvTranspose1d or c == nn.ConvTranspose2d or c == nn.ConvTranspose3d then transposed = true end
      c = rawget(c, "super")
    end
    pdim = transposed and 1 or 0
  else
    if math.type(dim) ~= "integer" then fail("%s: dim must be an integer, got %s", fname, type_of(dim)) end
    pdim = dim > 0 and dim - 1 or dim -- 1-based (negative from the end) to PyTorch's
  end
  parametrize.register_parametrization(module, name,
    SpectralNorm(weight, n_power_iterations or 1, pdim, eps or 1e-12))
  return module
end
doc(parametrizations.spectral_norm, [==[nn.utils.parametrizations.spectral_norm(module[, name="weight"[, n_power_iterations=1[, eps=1e-12[, dim]]]])  (or an options table)
  -> module, as PyTorch's parametrization (not the older nn.utils.spectral_norm): module[name] reads as
  weight / sigma, sigma its largest singular value estimated by power iteration on the weight as a matrix
  (dim, 1-based, first; default 1, 2 for ConvTranspose*d); buffers _u, _v drawn with pt.randn and 15
  iterations at registration, n_power_iterations more at each read in training mode. 1-D: weight / norm.]==])

-- ------------------------------------------------------------------ nn.grad

-- nn.grad: the gradients of the convolutions with respect to their input and weight
local grad = {}
nn.grad = grad
doc(grad, "nn.grad: PyTorch's torch.nn.grad: conv1d_input, conv1d_weight, conv2d_input, conv2d_weight, conv3d_input,\n"
  .. "  conv3d_weight (the gradients of F.conv1d/2d/3d with respect to the input and the weight).")

local function conv_settings(name, nd, stride, padding, dilation, groups)
  local o = {stride = positive_tuple(name, "stride", stride or 1, nd), padding = H.tuple(name, "padding", padding or 0, nd),
    dilation = positive_tuple(name, "dilation", dilation or 1, nd), groups = groups or 1}
  positive_int(name, "groups", o.groups)
  return o
end
local function size_list(name, what, v)
  if pt.is_tensor(v) then v = v:tolist() end
  if type(v) ~= "table" then fail("%s: %s must be a list of sizes, got %s", name, what, type_of(v)) end
  for _, e in ipairs(v) do
    if math.type(e) ~= "integer" or e < 0 then fail("%s: %s must be a list of non-negative integers", name, what) end
  end
  return v
end

for nd = 1, 3 do
  local conv = F["conv" .. nd .. "d"]
  local convT = F["conv_transpose" .. nd .. "d"]
  local iname, wname = "conv" .. nd .. "d_input", "conv" .. nd .. "d_weight"
  grad[iname] = function(input_size, weight, grad_output, stride, padding, dilation, groups)
    input_size = size_list(iname, "input_size", input_size)
    H.check_tensor_arg(iname, "weight", weight)
    H.check_tensor_arg(iname, "grad_output", grad_output)
    local o = conv_settings(iname, nd, stride, padding, dilation, groups)
    local n = #input_size
    if n ~= nd + 2 and n ~= nd + 1 then
      fail("%s: input_size must have %d or %d sizes, got %d", iname, nd + 1, nd + 2, n)
    end
    if grad_output:dim() ~= n then
      fail("%s: grad_output must have %d dims (as input_size), got shape %s", iname, n, shp(grad_output))
    end
    -- PyTorch's _grad_input_padding: the output_padding that gives input_size back
    local op = {}
    for d = 1, nd do
      local k = weight:size(2 + d)
      local min = (grad_output:size(n - nd + d) - 1) * o.stride[d] - 2 * o.padding[d] + o.dilation[d] * (k - 1) + 1
      op[d] = input_size[n - nd + d] - min
      if op[d] < 0 or op[d] >= math.max(o.stride[d], o.dilation[d]) then
        fail("%s: input_size %s does not fit grad_output shape %s (input sizes between %d and %d in spatial dim %d)", iname,
          "{" .. table.concat(input_size, ",") .. "}", shp(grad_output), min, min + math.max(o.stride[d], o.dilation[d]) - 1, d)
      end
    end
    return convT(grad_output, weight, nil, {stride = o.stride, padding = o.padding, output_padding = op,
      groups = o.groups, dilation = o.dilation})
  end
  doc(grad[iname], fmt([==[nn.grad.%s(input_size, weight, grad_output[, stride=1[, padding=0[, dilation=1[, groups=1]]]])
  -> the gradient of F.conv%dd(input, weight, nil, settings) with respect to an input of size input_size, given
  the output's gradient grad_output: F.conv_transpose%dd of grad_output (output_padding from input_size), as PyTorch's;
  differentiable.]==], iname, nd, nd))

  grad[wname] = function(input, weight_size, grad_output, stride, padding, dilation, groups)
    H.check_tensor_arg(wname, "input", input)
    weight_size = size_list(wname, "weight_size", weight_size)
    H.check_tensor_arg(wname, "grad_output", grad_output)
    local o = conv_settings(wname, nd, stride, padding, dilation, groups)
    if #weight_size ~= nd + 2 then fail("%s: weight_size must have %d sizes, got %d", wname, nd + 2, #weight_size) end
    local w = pt.zeros(weight_size, {dtype = input:dtype()}):requires_grad_()
    local y = conv(input:detach(), w, nil, o)
    if shp(y) ~= shp(grad_output) then
      fail("%s: grad_output has shape %s, the convolution's output has %s", wname, shp(grad_output), shp(y))
    end
    return pt.autograd.grad(y, w, {grad_outputs = grad_output:detach()})
  end
  doc(grad[wname], fmt([==[nn.grad.%s(input, weight_size, grad_output[, stride=1[, padding=0[, dilation=1[, groups=1]]]])
  -> the gradient of F.conv%dd(input, weight, nil, settings) with respect to a weight of size weight_size, given the
  output's gradient grad_output (computed by autograd through F.conv%dd; the result has no graph).]==], wname, nd, nd))
end

return nn
