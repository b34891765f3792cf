-- Convolutional layers for partrain.nn: Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
-- BatchNorm2d, Dropout2d, Upsample. The compute is fused C (lib/conv.c); these classes hold
-- parameters and options, with PyTorch's defaults.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module, init = nn.Module, nn.init
local docs = pt._docs

local function doc(obj, text)
  docs[obj] = text
  return obj
end

local function pair(name, what, v)
  if math.type(v) == "integer" then return {v, v} end
  if type(v) == "table" and math.type(v[1]) == "integer" and math.type(v[2]) == "integer" then
    return {v[1], v[2]}
  end
  error(string.format("%s: %s must be an integer or a pair {h, w}, got %s", name, what,
    type(v) == "table" and "a table" or tostring(v)), 4)
end

local function positive(name, what, v)
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer, got %s", name, what, tostring(v)), 4)
  end
end

local function fmt_pair(p) return p[1] == p[2] and tostring(p[1]) or string.format("{%d, %d}", p[1], p[2]) end

-- nn.Conv2d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true}])
local Conv2d = Module:extend("Conv2d")
nn.Conv2d = Conv2d
function Conv2d:__init(in_channels, out_channels, kernel_size, opts)
  positive("Conv2d", "in_channels", in_channels)
  positive("Conv2d", "out_channels", out_channels)
  opts = opts or {}
  local groups = opts.groups or 1
  positive("Conv2d", "groups", groups)
  if in_channels % groups ~= 0 or out_channels % groups ~= 0 then
    error(string.format("Conv2d: groups=%d must divide in_channels %d and out_channels %d", groups,
      in_channels, out_channels), 3)
  end
  self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
  self.kernel_size = pair("Conv2d", "kernel_size", kernel_size)
  self.stride = pair("Conv2d", "stride", opts.stride or 1)
  self.padding = pair("Conv2d", "padding", opts.padding or 0)
  self.dilation = pair("Conv2d", "dilation", opts.dilation or 1)
  local dt = opts.dtype or "float32"
  self.weight = nn.Parameter(pt.empty(out_channels, in_channels // groups, self.kernel_size[1],
    self.kernel_size[2], {dtype = dt}))
  if opts.bias ~= false then self.bias = nn.Parameter(pt.empty(out_channels, {dtype = dt})) end
  self:reset_parameters()
end
function Conv2d:reset_parameters()
  -- PyTorch: kaiming_uniform(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for bias
  init.kaiming_uniform_(self.weight, {a = math.sqrt(5)})
  if self.bias then
    local fan_in = (self.in_channels // self.groups) * self.kernel_size[1] * self.kernel_size[2]
    local bound = 1 / math.sqrt(fan_in)
    init.uniform_(self.bias, -bound, bound)
  end
end
doc(Conv2d.reset_parameters, "conv:reset_parameters(): draws weight and bias again, in place, as the constructor does:\n"
  .. "  U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels/groups * kh * kw (kaiming_uniform_, a=sqrt(5)).")
function Conv2d:forward(x)
  local p = self._parameters
  return pt.conv2d(x, p.weight, p.bias, {stride = self.stride, padding = self.padding,
    dilation = self.dilation, groups = self.groups})
end
function Conv2d:extra_repr()
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
    fmt_pair(self.kernel_size), fmt_pair(self.stride))
  if self.padding[1] ~= 0 or self.padding[2] ~= 0 then s = s .. ", padding=" .. fmt_pair(self.padding) end
  if self.dilation[1] ~= 1 or self.dilation[2] ~= 1 then s = s .. ", dilation=" .. fmt_pair(self.dilation) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if not self.bias then s = s .. ", bias=false" end
  return s
end
doc(Conv2d, [[nn.Conv2d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true}])
  2-D convolution of {N,C,H,W} (or {C,H,W}) inputs; sizes are n or {h, w}. PyTorch's default init.]])

local function pool_class(name, fn, is_max)
  local P = Module:extend(name)
  local allowed = is_max and {stride = true, padding = true, dilation = true, ceil_mode = true}
    or {stride = true, padding = true, ceil_mode = true, count_include_pad = true}
  function P:__init(kernel_size, opts)
    opts = opts or {}
    for k in pairs(opts) do
      if not allowed[k] then error(("%s: unknown option '%s'"):format(name, tostring(k)), 3) end
    end
    self.kernel_size = pair(name, "kernel_size", kernel_size)
    self.stride = pair(name, "stride", opts.stride or self.kernel_size)
    self.padding = pair(name, "padding", opts.padding or 0)
    self.ceil_mode = opts.ceil_mode or false
    if is_max then
      self.dilation = pair(name, "dilation", opts.dilation or 1)
    else
      self.count_include_pad = opts.count_include_pad ~= false
    end
  end
  -- the call's options; relu = true fuses a preceding ReLU into max pooling (Sequential's plan)
  function P:_pool_opts(relu)
    if is_max then
      return {stride = self.stride, padding = self.padding, dilation = self.dilation,
        ceil_mode = self.ceil_mode, relu = relu}
    end
    return {stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode,
      count_include_pad = self.count_include_pad}
  end
  function P:forward(x) return fn(x, self.kernel_size, self:_pool_opts()) end
  function P:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s", fmt_pair(self.kernel_size),
      fmt_pair(self.stride), fmt_pair(self.padding))
  end
  return P
end

nn.MaxPool2d = pool_class("MaxPool2d", pt.max_pool2d, true)
doc(nn.MaxPool2d, "nn.MaxPool2d(kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false}])")
nn.AvgPool2d = pool_class("AvgPool2d", pt.avg_pool2d, false)
doc(nn.AvgPool2d, "nn.AvgPool2d(kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true}])")

local AdaptiveAvgPool2d = Module:extend("AdaptiveAvgPool2d")
nn.AdaptiveAvgPool2d = AdaptiveAvgPool2d
function AdaptiveAvgPool2d:__init(output_size)
  self.output_size = pair("AdaptiveAvgPool2d", "output_size", output_size)
end
function AdaptiveAvgPool2d:forward(x) return pt.adaptive_avg_pool2d(x, self.output_size) end
function AdaptiveAvgPool2d:extra_repr() return "output_size=" .. fmt_pair(self.output_size) end
doc(AdaptiveAvgPool2d, "nn.AdaptiveAvgPool2d(output_size) -> averages into output_size (n or {h, w}) bins.")

local BatchNorm2d = nn._BatchNorm:extend("BatchNorm2d")
nn.BatchNorm2d = BatchNorm2d
function BatchNorm2d:__init(num_features, opts)
  positive("BatchNorm2d", "num_features", num_features)
  BatchNorm2d.super.__init(self, num_features, opts)
end
function BatchNorm2d:forward(x)
  if x:dim() ~= 4 then
    error(string.format("BatchNorm2d:forward: expected a 4-D input {N,C,H,W}, got shape {%s}",
      table.concat(x:size(), ",")), 2)
  end
  local p = self._parameters
  local mean, var, momentum = self:_running_stats()
  -- without running statistics (track_running_stats=false, or a DataParallel replica 2..n)
  -- batch statistics are used even in evaluation mode, as BatchNorm1d's kernel does
  return pt.batch_norm(x, mean, var, p.weight, p.bias,
    {training = self.training or mean == nil, momentum = momentum, eps = self.eps})
end
doc(BatchNorm2d, [[nn.BatchNorm2d(num_features[, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true}])
  Per-channel batch normalisation of {N,C,H,W}; running statistics in training, used in eval.]])

local Dropout2d = Module:extend("Dropout2d")
nn.Dropout2d = Dropout2d
function Dropout2d:__init(p)
  p = p or 0.5
  if type(p) ~= "number" or p < 0 or p > 1 then
    error("Dropout2d: probability must be in [0, 1], got " .. tostring(p), 3)
  end
  self.p = p
end
function Dropout2d:forward(x) return pt.dropout2d(x, self.p, self.training) end
function Dropout2d:extra_repr() return "p=" .. self.p end
doc(Dropout2d, "nn.Dropout2d([p=0.5]) -> zeroes whole channels in training, identity in eval.")

local Upsample = Module:extend("Upsample")
nn.Upsample = Upsample
function Upsample:__init(opts)
  opts = opts or {}
  if (opts.mode or "nearest") ~= "nearest" then
    error("Upsample: only mode=\"nearest\" is supported, got " .. tostring(opts.mode), 3)
  end
  self.scale_factor = pair("Upsample", "scale_factor", opts.scale_factor or 2)
end
function Upsample:forward(x) return pt.upsample_nearest2d(x, self.scale_factor) end
function Upsample:extra_repr() return "scale_factor=" .. fmt_pair(self.scale_factor) .. ", mode=nearest" end
doc(Upsample, "nn.Upsample({scale_factor=2, mode=\"nearest\"}) -> nearest-neighbour upsampling by integer factors.")

-- functional forms
nn.conv2d = pt.conv2d
nn.max_pool2d = pt.max_pool2d
nn.avg_pool2d = pt.avg_pool2d
nn.adaptive_avg_pool2d = pt.adaptive_avg_pool2d
nn.batch_norm2d = pt.batch_norm
-- the C text (host/l_conv.c) does not say how this form differs from nn.batch_norm
doc(pt.batch_norm, [[pt.batch_norm(x, mean, var[, w, b][, {training=true, momentum=0.1, eps=1e-5}]), also nn.batch_norm2d
  pt.batch_norm(x, running_mean, running_var[, weight, bias][, {training=true, momentum=0.1, eps=1e-5}])
  Per-channel normalisation of x {N,C,...} (any rank >= 2). Options in a table, and training
  defaults to TRUE: batch statistics, updating running_mean/running_var in place (momentum);
  {training=false}: the running statistics (evaluation). Running statistics may be nil.
  nn.batch_norm is the other form, PyTorch's F.batch_norm: positional arguments, {N,C} or
  {N,C,L} inputs, and training defaults to FALSE. nn.BatchNorm2d passes its mode explicitly.]])
nn.dropout2d = pt.dropout2d
nn.upsample_nearest2d = pt.upsample_nearest2d

-- nn.DataParallel (partrain.data_parallel sets it; package.loaded["partrain.nn"] is already set)
require "partrain.data_parallel"

return nn
