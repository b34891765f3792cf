-- Convolutional layers for partrain.nn: Conv1d, Conv2d, ConvTranspose1d/2d, MaxPool1d/2d,
-- AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d, BatchNorm2d, GroupNorm,
-- InstanceNorm1d/2d, Dropout2d, and their nn.functional forms. The compute is fused C
-- (lib/conv.c); these classes hold parameters and options, with PyTorch's defaults. The 3-D layers
-- (Conv3d, the 3-D pools, BatchNorm3d, InstanceNorm3d) are in nn_conv3d.lua, over these kernels and
-- helpers (nn._conv_helpers).
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module, init = nn.Module, nn.init

local doc = pt._doc

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
  local dt = opts.dtype or pt.get_default_dtype()
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

local function pool_class(name, fn, is_max)
  local P = Module:extend(name)
  local allowed = is_max and {stride = true, padding = true, dilation = true, ceil_mode = true, return_indices = true}
    or {stride = true, padding = true, ceil_mode = true, count_include_pad = true, divisor_override = true}
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
      self.return_indices = opts.return_indices or false
    else
      self.count_include_pad = opts.count_include_pad ~= false
      local d = opts.divisor_override
      if d ~= nil and (math.type(d) ~= "integer" or d == 0) then
        require("partrain.tensor")._fail("%s: divisor_override must be a non-zero integer, got %s", name, tostring(d))
      end
      self.divisor_override = d
    end
  end
  -- the call's options; relu = true fuses a preceding ReLU into max pooling (Sequential's plan)
  function P:_pool_opts(relu)
    if is_max then
      return {stride = self.stride, padding = self.padding, dilation = self.dilation,
        ceil_mode = self.ceil_mode, relu = relu}
    end
    return {stride = self.stride, padding = self.padding, ceil_mode = self.ceil_mode,
      count_include_pad = self.count_include_pad, divisor_override = self.divisor_override}
  end
  function P:forward(x)
    local o = self:_pool_opts()
    if self.return_indices then o.return_indices = true end
    return fn(x, self.kernel_size, o)
  end
  function P:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s", fmt_pair(self.kernel_size),
      fmt_pair(self.stride), fmt_pair(self.padding))
  end
  return P
end

nn.MaxPool2d = pool_class("MaxPool2d", pt.max_pool2d, true)
doc(nn.MaxPool2d, "nn.MaxPool2d(kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}])\n"
  .. "  Max pooling of {N,C,H,W} or {C,H,W}; with return_indices the forward also returns each maximum's 1-based\n"
  .. "  position in its flattened H*W input plane (int64; PyTorch's count from 0), what nn.MaxUnpool2d takes.")
nn.AvgPool2d = pool_class("AvgPool2d", pt.avg_pool2d, false)
doc(nn.AvgPool2d, "nn.AvgPool2d(kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true,\n"
  .. "  divisor_override}]): average pooling of {N,C,H,W} or {C,H,W}; divisor_override (a non-zero integer) divides every\n"
  .. "  window's sum in place of its size (see help(pt.avg_pool2d)).")

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

-- ------------------------------------------------------------------ the rest of the family
-- Conv1d/ConvTranspose1d and the 1-D pools run the 2-D kernels on a unit height ({N,C,L} as
-- {N,C,1,L}); GroupNorm and InstanceNorm run batch_norm's kernel on {1, N*groups, ...}. Each
-- checks its input itself so that its errors speak of its own shapes.


local fmt = string.format

-- errors point at the nearest Lua frame outside partrain's own modules (as the C bindings do)
local fail = require("partrain.tensor")._fail

local function shp(t) return "{" .. table.concat(t:size(), ",") .. "}" end
local function floating(t) local d = t:dtype(); return d == "float32" or d == "float64" end

-- opts may only hold the keys of allowed (a list, printed in the message)
local function check_opts(name, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" or pt.is_tensor(opts) then fail("%s: options must be a table, got %s", name, type(opts)) end
  local set = {}
  for _, k in ipairs(allowed) do set[k] = true end
  for k in pairs(opts) do
    if not set[k] then
      fail("%s: unknown option '%s' (options: %s)", name, tostring(k), table.concat(allowed, ", "))
    end
  end
  return opts
end

-- an integer, or a list of n integers ({3} for 1-D, {3, 2} for 2-D)
local function tuple(name, what, v, n)
  if math.type(v) == "integer" then
    local t = {}
    for i = 1, n do t[i] = v end
    return t
  end
  if type(v) == "table" and not pt.is_tensor(v) and #v == n then
    local t, ok = {}, true
    for i = 1, n do
      if math.type(v[i]) ~= "integer" then ok = false end
      t[i] = v[i]
    end
    if ok then return t end
  end
  local forms = {" (or {n})", " or a pair {h, w}", " or a triple {d, h, w}"}
  fail("%s: %s must be an integer%s, got %s", name, what, forms[n], type(v) == "table" and "a table" or tostring(v))
end

local function check_tensor_arg(name, what, t, optional)
  if optional and t == nil then return end
  if not pt.is_tensor(t) then fail("%s: %s must be a Tensor, got %s", name, what, type(t)) end
end

local function fmt_tuple(p)
  for i = 2, #p do
    if p[i] ~= p[1] then return "{" .. table.concat(p, ", ") .. "}" end
  end
  return tostring(p[1])
end

local function all_eq(p, v)
  for i = 1, #p do if p[i] ~= v then return false end end
  return true
end

-- the input of a 1-D layer: {N,C,L} or {C,L}; returns C, L
local function check_1d_input(name, x)
  check_tensor_arg(name, "input", x)
  local nd = x:dim()
  if nd ~= 2 and nd ~= 3 then fail("%s: expected a 2-D {C,L} or 3-D {N,C,L} input, got shape %s", name, shp(x)) end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
  return x:size(nd - 1), x:size(nd)
end

-- {N,C,L} -> {N,C,1,L} and back
local function lift(x) return x:unsqueeze(x:dim()) end
local function drop(y) return y:squeeze(y:dim() - 1) end

-- "same"/"valid" padding: the {left, right} zero padding per spatial dim; stride must be 1 for same
local function string_padding(name, padding, kernel, dilation, stride)
  if padding == "valid" then
    local t = {}
    for i = 1, #kernel do t[i] = {0, 0} end
    return t
  end
  if padding ~= "same" then
    fail("%s: invalid padding string '%s', should be one of {'valid', 'same'}", name, tostring(padding))
  end
  if not all_eq(stride, 1) then fail("%s: padding='same' is not supported for strided convolutions", name) end
  local t = {}
  for i = 1, #kernel do
    local total = dilation[i] * (kernel[i] - 1)
    t[i] = {total // 2, total - total // 2}
  end
  return t
end

-- padding option of a convolution: an integer, a tuple or "same"/"valid" -> {{left, right}, ...}
local function conv_padding(name, padding, kernel, dilation, stride)
  if type(padding) == "string" then return string_padding(name, padding, kernel, dilation, stride) end
  local p = tuple(name, "padding", padding, #kernel)
  local t = {}
  for i = 1, #kernel do
    if p[i] < 0 then fail("%s: padding must be >= 0, got %d", name, p[i]) end
    t[i] = {p[i], p[i]}
  end
  return t
end

-- {{l, r}, ...} per spatial dim -> F.pad's list (last dim first) and whether it is symmetric
local function pad_list(pads)
  local list, sym = {}, true
  for i = #pads, 1, -1 do
    list[#list + 1] = pads[i][1]
    list[#list + 1] = pads[i][2]
    if pads[i][1] ~= pads[i][2] then sym = false end
  end
  return list, sym
end

local F_pad = require("partrain.tensor").pad

-- x padded as pads {{l, r}, ...} (one per spatial dim) and padding_mode mode ask; returns x and the
-- symmetric zero padding left for the kernel. Asymmetric zero padding (an odd "same") goes through
-- F.pad with the extra column on the right, as PyTorch; the other modes pad x wholly first.
local function apply_padding(x, pads, mode)
  local list, sym = pad_list(pads)
  local p = {}
  if mode == "zeros" then
    for i = 1, #pads do p[i] = pads[i][1] end
    if sym then return x, p end
    local extra = {}
    for i = #pads, 1, -1 do
      extra[#extra + 1] = 0
      extra[#extra + 1] = pads[i][2] - pads[i][1]
    end
    return F_pad(x, extra), p
  end
  for i = 1, #pads do p[i] = 0 end
  if x:dim() == #pads + 1 then return F_pad(x:unsqueeze(1), list, {mode = mode}):squeeze(1), p end
  return F_pad(x, list, {mode = mode}), p
end

-- shared checks of a convolution's weight and bias against its input (C channels)
local function check_conv_args(name, x, w, b, nd, groups, module_msg)
  check_tensor_arg(name, "weight", w)
  check_tensor_arg(name, "bias", b, true)
  local want = ({"3-D {out,in/groups,k}", "4-D {out,in/groups,kh,kw}", "5-D {out,in/groups,kd,kh,kw}"})[nd]
  if w:dim() ~= nd + 2 then fail("%s: weight must be %s, got shape %s", name, want, shp(w)) end
  if w:dtype() ~= x:dtype() then fail("%s: weight has dtype %s, input has %s", name, w:dtype(), x:dtype()) end
  if b and b:dtype() ~= x:dtype() then fail("%s: bias has dtype %s, input has %s", name, b:dtype(), x:dtype()) end
  if math.type(groups) ~= "integer" or groups < 1 then fail("%s: groups must be a positive integer, got %s", name, tostring(groups)) end
  local C, O = x:size(x:dim() - nd), w:size(1)
  if C % groups ~= 0 or O % groups ~= 0 then
    fail("%s: groups=%d must divide input channels %d and output channels %d", name, groups, C, O)
  end
  if w:size(2) * groups ~= C then
    if module_msg then fail("%s: input has %d channels, expected %d (input shape %s)", name, C, w:size(2) * groups, shp(x)) end
    fail("%s: input has %d channels, expected %d (input shape %s, weight shape %s)", name, C, w:size(2) * groups, shp(x), shp(w))
  end
  if b and (b:dim() ~= 1 or b:size(1) ~= O) then fail("%s: bias must have shape {%d}, got %s", name, O, shp(b)) end
end

local function positive_int(name, what, v)
  if math.type(v) ~= "integer" or v < 1 then fail("%s: %s must be a positive integer, got %s", name, what, tostring(v)) end
end

local function positive_tuple(name, what, v, n)
  local t = tuple(name, what, v, n)
  for i = 1, n do
    if t[i] < 1 then fail("%s: %s must be >= 1, got %d", name, what, t[i]) end
  end
  return t
end

-- an adaptive pool's output_size: 0 gives an empty output, as torch's
local function output_size_tuple(name, v, n)
  local t = tuple(name, "output_size", v, n)
  for i = 1, n do
    if t[i] < 0 then fail("%s: output_size must be >= 0, got %d", name, t[i]) end
  end
  return t
end

-- conv1d over conv2d; pads {{l, r}}; name for the messages
local function conv1d_run(name, x, w, b, stride, pads, dilation, groups, mode, module_msg)
  local _, L = check_1d_input(name, x)
  check_conv_args(name, x, w, b, 1, groups, module_msg)
  if L == 0 then fail("%s: only the batch or the channels may be empty, got input shape %s", name, shp(x)) end
  local span = dilation[1] * (w:size(3) - 1) + 1
  local padded = L + pads[1][1] + pads[1][2]
  if padded < span then
    fail("%s: kernel %d%s is larger than the padded input %d (input shape %s)", name, span,
      dilation[1] > 1 and " (dilated)" or "", padded, shp(x))
  end
  local xp, p = apply_padding(x, pads, mode)
  return drop(pt.conv2d(lift(xp), lift(w), b, {stride = {1, stride[1]}, padding = {0, p[1]},
    dilation = {1, dilation[1]}, groups = groups}))
end

-- nn.functional.conv1d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}])
local function conv1d(x, w, b, opts)
  if opts == nil and type(b) == "table" and not pt.is_tensor(b) then b, opts = nil, b end
  opts = check_opts("conv1d", opts, {"stride", "padding", "dilation", "groups"})
  check_tensor_arg("conv1d", "weight", w)
  local stride = positive_tuple("conv1d", "stride", opts.stride or 1, 1)
  local dilation = positive_tuple("conv1d", "dilation", opts.dilation or 1, 1)
  local pads = conv_padding("conv1d", opts.padding or 0, {w:dim() == 3 and w:size(3) or 1}, dilation, stride)
  return conv1d_run("conv1d", x, w, b, stride, pads, dilation, opts.groups or 1, "zeros")
end
nn.conv1d = doc(conv1d, [[nn.functional.conv1d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}]) -> Tensor
  1-D convolution of x {N,C,L} or {C,L}; weight {out, C/groups, k}, bias {out}. padding is n, "valid"
  (0) or "same" (output length L; stride 1). Runs conv2d's fused kernels on a unit height.]])

local PADDING_MODES = {zeros = true, reflect = true, replicate = true, circular = true}

-- shared constructor of Conv1d (nd = 1) and the transposed layers: sizes, options, parameters
local function conv_init(self, name, nd, transposed, in_channels, out_channels, kernel_size, opts)
  positive_int(name, "in_channels", in_channels)
  positive_int(name, "out_channels", out_channels)
  local allowed = {"stride", "padding", "dilation", "groups", "bias", "padding_mode", "dtype"}
  if transposed then allowed[#allowed + 1] = "output_padding" end
  opts = check_opts(name, opts, allowed)
  local groups = opts.groups or 1
  positive_int(name, "groups", groups)
  if in_channels % groups ~= 0 or out_channels % groups ~= 0 then
    fail("%s: groups=%d must divide in_channels %d and out_channels %d", name, groups, in_channels, out_channels)
  end
  self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
  self.kernel_size = positive_tuple(name, "kernel_size", kernel_size, nd)
  self.stride = positive_tuple(name, "stride", opts.stride or 1, nd)
  self.dilation = positive_tuple(name, "dilation", opts.dilation or 1, nd)
  self.padding_mode = opts.padding_mode or "zeros"
  if not PADDING_MODES[self.padding_mode] then
    fail("%s: padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', got '%s'", name,
      tostring(self.padding_mode))
  end
  if transposed then
    if self.padding_mode ~= "zeros" then fail("%s: only 'zeros' padding_mode is supported", name) end
    if type(opts.padding) == "string" then fail("%s: padding must be an integer, not '%s'", name, opts.padding) end
    self.padding = tuple(name, "padding", opts.padding or 0, nd)
    self.output_padding = tuple(name, "output_padding", opts.output_padding or 0, nd)
    for i = 1, nd do
      if self.padding[i] < 0 or self.output_padding[i] < 0 then
        fail("%s: padding and output_padding must be >= 0", name)
      end
      if self.output_padding[i] >= self.stride[i] and self.output_padding[i] >= self.dilation[i] then
        fail("%s: output_padding %s must be smaller than either stride %s or dilation %s", name,
          fmt_tuple(self.output_padding), fmt_tuple(self.stride), fmt_tuple(self.dilation))
      end
    end
  else
    local p = opts.padding or 0
    self._pads = conv_padding(name, p, self.kernel_size, self.dilation, self.stride)
    if type(p) == "string" then
      self.padding = p
    else
      self.padding = {}
      for i = 1, nd do self.padding[i] = self._pads[i][1] end
    end
  end
  local dt = opts.dtype or pt.get_default_dtype()
  local shape = transposed and {in_channels, out_channels // groups} or {out_channels, in_channels // groups}
  for i = 1, nd do shape[#shape + 1] = self.kernel_size[i] end
  self.weight = nn.Parameter(pt.empty(shape, {dtype = dt}))
  if opts.bias ~= false then self.bias = nn.Parameter(pt.empty(out_channels, {dtype = dt})) end
  self:reset_parameters()
end

-- PyTorch's _ConvNd.reset_parameters: kaiming_uniform(a=sqrt(5)) for the weight, U(+-1/sqrt(fan_in))
-- for the bias, fan_in = weight:size(2) * prod(kernel) (out/groups * prod(kernel) when transposed)
local function conv_reset(self)
  init.kaiming_uniform_(self.weight, {a = math.sqrt(5)})
  if self.bias then
    local fan_in = self.weight:size(2)
    for _, k in ipairs(self.kernel_size) do fan_in = fan_in * k end
    local bound = 1 / math.sqrt(fan_in)
    init.uniform_(self.bias, -bound, bound)
  end
end

local function conv_repr(self)
  local s = fmt("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
    fmt_tuple(self.kernel_size), fmt_tuple(self.stride))
  if type(self.padding) == "string" then s = s .. ", padding=" .. self.padding
  elseif not all_eq(self.padding, 0) then s = s .. ", padding=" .. fmt_tuple(self.padding) end
  if not all_eq(self.dilation, 1) then s = s .. ", dilation=" .. fmt_tuple(self.dilation) end
  if self.output_padding and not all_eq(self.output_padding, 0) then
    s = s .. ", output_padding=" .. fmt_tuple(self.output_padding)
  end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if not self.bias then s = s .. ", bias=false" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end

local RESET_DOC = "conv:reset_parameters(): draws weight and bias again, in place, as the constructor does:\n"
  .. "  kaiming_uniform_(a=sqrt(5)) for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias,\n"
  .. "  fan_in = weight:size(2) * the kernel's elements (in/groups, or out/groups when transposed)."

-- nn.Conv1d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true,
--   padding_mode="zeros"}])
local Conv1d = Module:extend("Conv1d")
nn.Conv1d = Conv1d
function Conv1d:__init(in_channels, out_channels, kernel_size, opts)
  conv_init(self, "Conv1d", 1, false, in_channels, out_channels, kernel_size, opts)
end
Conv1d.reset_parameters = doc(function(self) conv_reset(self) end, RESET_DOC)
function Conv1d:forward(x)
  local p = self._parameters
  return conv1d_run("Conv1d:forward", x, p.weight, p.bias, self.stride, self._pads, self.dilation, self.groups,
    self.padding_mode, true)
end
Conv1d.extra_repr = conv_repr
doc(Conv1d, [[nn.Conv1d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true,
  padding_mode="zeros", dtype="float32"}])
  1-D convolution of {N,C,L} (or {C,L}) inputs; weight {out, in/groups, k}. padding is n, "valid" or "same"
  (stride 1); padding_mode "zeros", "reflect", "replicate" or "circular". PyTorch's default init.
  Runs conv2d's fused C kernels on a unit height.]])

-- Conv2d: padding "same"/"valid" and the padding modes too (the kernel pads with zeros itself)
do
  local init2d = Conv2d.__init
  function Conv2d:__init(in_channels, out_channels, kernel_size, opts)
    opts = check_opts("Conv2d", opts, {"stride", "padding", "dilation", "groups", "bias", "padding_mode", "dtype"})
    local mode, padding = opts.padding_mode or "zeros", opts.padding
    if mode ~= "zeros" or type(padding) == "string" then
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.padding_mode, o.padding = nil, 0
      init2d(self, in_channels, out_channels, kernel_size, o)
      if not PADDING_MODES[mode] then
        fail("Conv2d: padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular', got '%s'", tostring(mode))
      end
      self.padding_mode = mode
      self._pads = conv_padding("Conv2d", padding or 0, self.kernel_size, self.dilation, self.stride)
      self.padding = type(padding) == "string" and padding or {self._pads[1][1], self._pads[2][1]}
    else
      init2d(self, in_channels, out_channels, kernel_size, opts)
    end
  end
  local forward2d = Conv2d.forward
  function Conv2d:forward(x) -- its errors stay conv2d's (spec/nn_spec.lua's example)
    if not self._pads then return forward2d(self, x) end
    local p = self._parameters
    local xp, pad = apply_padding(x, self._pads, self.padding_mode)
    return pt.conv2d(xp, p.weight, p.bias, {stride = self.stride, padding = pad, dilation = self.dilation,
      groups = self.groups})
  end
  local repr2d = Conv2d.extra_repr
  function Conv2d:extra_repr()
    if not self._pads then return repr2d(self) end
    return conv_repr(self)
  end
end
doc(Conv2d, [[nn.Conv2d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true,
  padding_mode="zeros"}])
  2-D convolution of {N,C,H,W} (or {C,H,W}) inputs; sizes are n or {h, w}; padding also "valid" or "same"
  (stride 1); padding_mode "zeros", "reflect", "replicate" or "circular". PyTorch's default init.]])

-- conv_transpose1d over conv_transpose2d
local function conv_transpose1d_run(name, x, w, b, stride, padding, output_padding, groups, dilation, module_msg)
  local C, L = check_1d_input(name, x)
  check_tensor_arg(name, "weight", w)
  check_tensor_arg(name, "bias", b, true)
  if w:dim() ~= 3 then fail("%s: weight must be 3-D {in,out/groups,k}, got shape %s", name, shp(w)) end
  if w:dtype() ~= x:dtype() then fail("%s: weight has dtype %s, input has %s", name, w:dtype(), x:dtype()) end
  if b and b:dtype() ~= x:dtype() then fail("%s: bias has dtype %s, input has %s", name, b:dtype(), x:dtype()) end
  if math.type(groups) ~= "integer" or groups < 1 or C % groups ~= 0 then
    fail("%s: groups=%s must divide input channels %d", name, tostring(groups), C)
  end
  if w:size(1) ~= C then
    if module_msg then fail("%s: input has %d channels, expected %d (input shape %s)", name, C, w:size(1), shp(x)) end
    fail("%s: input has %d channels, expected %d (input shape %s, weight shape %s)", name, C, w:size(1), shp(x), shp(w))
  end
  local O = w:size(2) * groups
  if b and (b:dim() ~= 1 or b:size(1) ~= O) then fail("%s: bias must have shape {%d}, got %s", name, O, shp(b)) end
  if L == 0 then fail("%s: only the batch or the channels may be empty, got input shape %s", name, shp(x)) end
  if padding[1] < 0 or output_padding[1] < 0 then fail("%s: padding and output_padding must be >= 0", name) end
  if output_padding[1] >= stride[1] and output_padding[1] >= dilation[1] then
    fail("%s: output_padding %d must be smaller than either stride %d or dilation %d", name, output_padding[1],
      stride[1], dilation[1])
  end
  local Lo = (L - 1) * stride[1] - 2 * padding[1] + dilation[1] * (w:size(3) - 1) + output_padding[1] + 1
  if Lo < 1 then
    fail("%s: output size %d is too small (input shape %s, weight shape %s)", name, Lo, shp(x), shp(w))
  end
  return drop(pt.conv_transpose2d(lift(x), lift(w), b, {stride = {1, stride[1]}, padding = {0, padding[1]},
    output_padding = {0, output_padding[1]}, groups = groups, dilation = {1, dilation[1]}}))
end

-- nn.functional.conv_transpose1d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}])
local function conv_transpose1d(x, w, b, opts)
  if opts == nil and type(b) == "table" and not pt.is_tensor(b) then b, opts = nil, b end
  local name = "conv_transpose1d"
  opts = check_opts(name, opts, {"stride", "padding", "output_padding", "groups", "dilation"})
  return conv_transpose1d_run(name, x, w, b, positive_tuple(name, "stride", opts.stride or 1, 1),
    tuple(name, "padding", opts.padding or 0, 1), tuple(name, "output_padding", opts.output_padding or 0, 1),
    opts.groups or 1, positive_tuple(name, "dilation", opts.dilation or 1, 1))
end
nn.conv_transpose1d = doc(conv_transpose1d, [[nn.functional.conv_transpose1d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}])
  The transpose of conv1d: x {N,C,L} or {C,L}; weight {C, out/groups, k}; output length
  (L-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1. Runs conv_transpose2d on a unit height.]])

-- output_size (the spatial sizes, or with batch and channels in front) -> output_padding
local function output_padding_for(name, self, x, output_size)
  local nd = #self.kernel_size
  if type(output_size) ~= "table" or pt.is_tensor(output_size) then
    fail("%s: output_size must be a list of integers, got %s", name, type(output_size))
  end
  local n = #output_size
  if n ~= nd and n ~= nd + 2 then
    fail("%s: output_size must have %d or %d elements (got %d)", name, nd, nd + 2, n)
  end
  local op = {}
  for i = 1, nd do
    local want = output_size[n - nd + i]
    local L = x:size(x:dim() - nd + i)
    local min = (L - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1
    local max = min + self.stride[i] - 1
    if math.type(want) ~= "integer" or want < min or want > max then
      fail("%s: requested an output size of %s, but valid sizes range from %d to %d (for an input of %d)", name,
        tostring(want), min, max, L)
    end
    op[i] = want - min
  end
  return op
end

local ConvTranspose1d = Module:extend("ConvTranspose1d")
nn.ConvTranspose1d = ConvTranspose1d
function ConvTranspose1d:__init(in_channels, out_channels, kernel_size, opts)
  conv_init(self, "ConvTranspose1d", 1, true, in_channels, out_channels, kernel_size, opts)
end
ConvTranspose1d.reset_parameters = doc(function(self) conv_reset(self) end, RESET_DOC)
function ConvTranspose1d:forward(x, output_size)
  local p, name = self._parameters, "ConvTranspose1d:forward"
  check_1d_input(name, x)
  local op = output_size and output_padding_for(name, self, x, output_size) or self.output_padding
  return conv_transpose1d_run(name, x, p.weight, p.bias, self.stride, self.padding, op, self.groups,
    self.dilation, true)
end
ConvTranspose1d.extra_repr = conv_repr
doc(ConvTranspose1d, [[nn.ConvTranspose1d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, output_padding=0,
  groups=1, bias=true, dilation=1, dtype="float32"}])
  The transpose (gradient) of Conv1d, for {N,C,L} or {C,L}; weight {in, out/groups, k} (PyTorch's layout
  and init). m(x[, output_size]): output_size {L} (or {N,C,L}) picks the output_padding.]])

local ConvTranspose2d = Module:extend("ConvTranspose2d")
nn.ConvTranspose2d = ConvTranspose2d
function ConvTranspose2d:__init(in_channels, out_channels, kernel_size, opts)
  conv_init(self, "ConvTranspose2d", 2, true, in_channels, out_channels, kernel_size, opts)
end
ConvTranspose2d.reset_parameters = doc(function(self) conv_reset(self) end, RESET_DOC)
function ConvTranspose2d:forward(x, output_size)
  local p, name = self._parameters, "ConvTranspose2d:forward"
  check_tensor_arg(name, "input", x)
  local nd = x:dim()
  if nd ~= 3 and nd ~= 4 then fail("%s: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape %s", name, shp(x)) end
  if x:size(nd - 2) ~= self.in_channels then
    fail("%s: input has %d channels, expected %d (input shape %s)", name, x:size(nd - 2), self.in_channels, shp(x))
  end
  local op = output_size and output_padding_for(name, self, x, output_size) or self.output_padding
  return pt.conv_transpose2d(x, p.weight, p.bias, {stride = self.stride, padding = self.padding,
    output_padding = op, groups = self.groups, dilation = self.dilation})
end
ConvTranspose2d.extra_repr = conv_repr
doc(ConvTranspose2d, [[nn.ConvTranspose2d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, output_padding=0,
  groups=1, bias=true, dilation=1, dtype="float32"}])
  The transpose (gradient) of Conv2d ("deconvolution"), for {N,C,H,W} or {C,H,W}; sizes are n or {h, w};
  weight {in, out/groups, kh, kw} (PyTorch's layout and init). Output size
  (H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1; m(x[, output_size]): output_size {h, w}
  (or {N,C,h,w}) picks the output_padding. Fused C (conv2d's im2col/col2im kernels).]])

-- ------------------------------------------------------------------ 1-D and adaptive pooling

-- checks of a 1-D pool's sizes; returns kernel, stride, padding, dilation as 1-element lists
local function pool1d_args(name, x, kernel_size, opts, is_max)
  local _, L = check_1d_input(name, x)
  if x:size(x:dim() - 1) == 0 or L == 0 then
    fail("%s: channels and length must be non-zero (only the batch may be empty), got input shape %s", name, shp(x))
  end
  local k = positive_tuple(name, "kernel_size", kernel_size, 1)
  local s = positive_tuple(name, "stride", opts.stride or k, 1)
  local p = tuple(name, "padding", opts.padding or 0, 1)
  local d = is_max and positive_tuple(name, "dilation", opts.dilation or 1, 1) or {1}
  if p[1] < 0 or 2 * p[1] > k[1] then
    fail("%s: padding %d should be >= 0 and at most half of kernel size %d", name, p[1], k[1])
  end
  local span = d[1] * (k[1] - 1) + 1
  if L + 2 * p[1] < span then
    fail("%s: kernel %d%s is larger than the padded input %d (input shape %s)", name, span,
      d[1] > 1 and " (dilated)" or "", L + 2 * p[1], shp(x))
  end
  return k, s, p, d
end

local function max_pool1d_run(name, x, kernel_size, opts)
  local k, s, p, d = pool1d_args(name, x, kernel_size, opts, true)
  local want = opts.return_indices or false
  local y, idx = pt.max_pool2d(lift(x), {1, k[1]}, {stride = {1, s[1]}, padding = {0, p[1]}, dilation = {1, d[1]},
    ceil_mode = opts.ceil_mode or false, return_indices = want})
  if want then return drop(y), drop(idx) end -- a 1 x L plane: the flat position is the one along L
  return drop(y)
end

local function avg_pool1d_run(name, x, kernel_size, opts)
  local k, s, p = pool1d_args(name, x, kernel_size, opts, false)
  return drop(pt.avg_pool2d(lift(x), {1, k[1]}, {stride = {1, s[1]}, padding = {0, p[1]},
    ceil_mode = opts.ceil_mode or false, count_include_pad = opts.count_include_pad ~= false}))
end

local MAX1D_OPTS = {"stride", "padding", "dilation", "ceil_mode", "return_indices"}
local AVG1D_OPTS = {"stride", "padding", "ceil_mode", "count_include_pad"}

local function max_pool1d(x, kernel_size, opts)
  return max_pool1d_run("max_pool1d", x, kernel_size, check_opts("max_pool1d", opts, MAX1D_OPTS))
end
nn.max_pool1d = doc(max_pool1d, "nn.functional.max_pool1d(x, kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false,\n"
  .. "  return_indices=false}]) -> Tensor[, indices]\n"
  .. "  Max pooling of x {N,C,L} or {C,L} (max_pool2d's kernels on a unit height); return_indices=true also returns\n"
  .. "  each maximum's 1-based position along L (int64; PyTorch's count from 0), what max_unpool1d takes.")
local function avg_pool1d(x, kernel_size, opts)
  return avg_pool1d_run("avg_pool1d", x, kernel_size, check_opts("avg_pool1d", opts, AVG1D_OPTS))
end
nn.avg_pool1d = doc(avg_pool1d, "nn.functional.avg_pool1d(x, kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true}])\n"
  .. "  Average pooling of x {N,C,L} or {C,L} (avg_pool2d's kernels on a unit height).")

local function pool1d_class(name, run, allowed, is_max)
  local P = Module:extend(name)
  function P:__init(kernel_size, opts)
    opts = check_opts(name, opts, allowed)
    self.kernel_size = positive_tuple(name, "kernel_size", kernel_size, 1)[1]
    self.stride = positive_tuple(name, "stride", opts.stride or self.kernel_size, 1)[1]
    self.padding = tuple(name, "padding", opts.padding or 0, 1)[1]
    self.ceil_mode = opts.ceil_mode or false
    if is_max then
      self.dilation = positive_tuple(name, "dilation", opts.dilation or 1, 1)[1]
      self.return_indices = opts.return_indices or false
    else
      self.count_include_pad = opts.count_include_pad ~= false
    end
  end
  function P:forward(x)
    return run(name .. ":forward", x, self.kernel_size, {stride = self.stride, padding = self.padding,
      dilation = self.dilation, ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad,
      return_indices = self.return_indices})
  end
  function P:extra_repr()
    local s = fmt("kernel_size=%d, stride=%d, padding=%d", self.kernel_size, self.stride, self.padding)
    if not is_max then return s end -- PyTorch's AvgPool1d shows these three
    return s .. fmt(", dilation=%d, ceil_mode=%s", self.dilation, tostring(self.ceil_mode))
  end
  return P
end

nn.MaxPool1d = doc(pool1d_class("MaxPool1d", max_pool1d_run, MAX1D_OPTS, true),
  "nn.MaxPool1d(kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}]): max pooling\n"
  .. "  of {N,C,L} or {C,L}; with return_indices the forward also returns each maximum's 1-based position along L (int64;\n"
  .. "  PyTorch's count from 0), what nn.MaxUnpool1d takes.")
nn.AvgPool1d = doc(pool1d_class("AvgPool1d", avg_pool1d_run, AVG1D_OPTS, false),
  "nn.AvgPool1d(kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true}]): average pooling of {N,C,L} or {C,L}.")

-- ------------------------------------------------------------------ power-average pooling

-- PyTorch's lp_pool1d/2d (nd = 1, 2): (sum of x^p over each window)^(1/p), computed as torch does, as
-- avg_pool of x^p (no padding) times the kernel's size, so that a ceil_mode window cut short at the edge
-- is scaled up as in PyTorch. A window whose sum is 0 gets a zero gradient (PyTorch's rule).
local function lp_pool_run(name, nd, x, norm_type, kernel_size, stride, ceil_mode)
  check_tensor_arg(name, "input", x)
  if type(norm_type) ~= "number" then fail("%s: norm_type must be a number, got %s", name, type(norm_type)) end
  local k = positive_tuple(name, "kernel_size", kernel_size, nd)
  local s = positive_tuple(name, "stride", stride or k, nd)
  local out, size
  if nd == 1 then
    pool1d_args(name, x, k, {stride = s}, false)
    out = drop(pt.avg_pool2d(lift(x:pow(norm_type)), {1, k[1]}, {stride = {1, s[1]}, ceil_mode = ceil_mode}))
    size = k[1]
  else
    local d = x:dim()
    if d ~= 3 and d ~= 4 then fail("%s: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape %s", name, shp(x)) end
    if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
    local C, H, W = x:size(d - 2), x:size(d - 1), x:size(d)
    if C == 0 or H == 0 or W == 0 then
      fail("%s: channels, height and width must be non-zero (only the batch may be empty), got input shape %s", name, shp(x))
    end
    if H < k[1] or W < k[2] then
      fail("%s: kernel %dx%d is larger than the input %dx%d (input shape %s)", name, k[1], k[2], H, W, shp(x))
    end
    out = pt.avg_pool2d(x:pow(norm_type), k, {stride = s, ceil_mode = ceil_mode})
    size = k[1] * k[2]
  end
  -- torch: (sign(out) * relu(|out|)) * size, to the 1/p; that product is out itself, and its
  -- gradient is zero where out is 0 (where (size * 0)^(1/p) has none)
  local nz = out:ne(0)
  local live = pt.where(nz, out, 1):mul(size):pow(1 / norm_type)
  return pt.where(nz, live, out:detach():mul(size):pow(1 / norm_type))
end

local LP_OPTS = {"stride", "ceil_mode"}

local function lp_pool1d(x, norm_type, kernel_size, opts)
  opts = check_opts("lp_pool1d", opts, LP_OPTS)
  return lp_pool_run("lp_pool1d", 1, x, norm_type, kernel_size, opts.stride, opts.ceil_mode or false)
end
nn.lp_pool1d = doc(lp_pool1d, [[nn.functional.lp_pool1d(x, norm_type, kernel_size[, {stride=kernel_size, ceil_mode=false}]) -> Tensor
  Power-average pooling of x {N,C,L} or {C,L}: (sum of x^norm_type over each window)^(1/norm_type), no
  padding. As PyTorch's: avg_pool1d of x^norm_type times kernel_size (a ceil_mode window cut short at the
  end is scaled up alike), a zero gradient where a window's sum is 0, NaN where that sum is negative and
  1/norm_type not an integer.]])

local function lp_pool2d(x, norm_type, kernel_size, opts)
  opts = check_opts("lp_pool2d", opts, LP_OPTS)
  return lp_pool_run("lp_pool2d", 2, x, norm_type, kernel_size, opts.stride, opts.ceil_mode or false)
end
nn.lp_pool2d = doc(lp_pool2d, [[nn.functional.lp_pool2d(x, norm_type, kernel_size[, {stride=kernel_size, ceil_mode=false}]) -> Tensor
  Power-average pooling of x {N,C,H,W} or {C,H,W}: (sum of x^norm_type over each window)^(1/norm_type), no
  padding; sizes are n or {h, w}. As PyTorch's: avg_pool2d of x^norm_type times kh*kw (a ceil_mode window
  cut short at the edge is scaled up alike), a zero gradient where a window's sum is 0, NaN where that sum
  is negative and 1/norm_type not an integer.]])

local function lp_class(name, nd)
  local P = Module:extend(name)
  function P:__init(norm_type, kernel_size, opts)
    opts = check_opts(name, opts, LP_OPTS)
    if type(norm_type) ~= "number" then fail("%s: norm_type must be a number, got %s", name, type(norm_type)) end
    self.norm_type = norm_type
    self.kernel_size = positive_tuple(name, "kernel_size", kernel_size, nd)
    self.stride = positive_tuple(name, "stride", opts.stride or self.kernel_size, nd)
    self.ceil_mode = opts.ceil_mode or false
  end
  function P:forward(x)
    return lp_pool_run(name .. ":forward", nd, x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)
  end
  function P:extra_repr()
    return fmt("norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s", tostring(self.norm_type),
      fmt_tuple(self.kernel_size), fmt_tuple(self.stride), tostring(self.ceil_mode))
  end
  return P
end

nn.LPPool1d = doc(lp_class("LPPool1d", 1), [[nn.LPPool1d(norm_type, kernel_size[, {stride=kernel_size, ceil_mode=false}])
  Power-average pooling of {N,C,L} or {C,L}: (sum of x^norm_type over each window)^(1/norm_type).
  See nn.functional.lp_pool1d.]])
nn.LPPool2d = doc(lp_class("LPPool2d", 2), [[nn.LPPool2d(norm_type, kernel_size[, {stride=kernel_size, ceil_mode=false}])
  Power-average pooling of {N,C,H,W} or {C,H,W}: (sum of x^norm_type over each window)^(1/norm_type); sizes
  are n or {h, w}. See nn.functional.lp_pool2d.]])

local function adaptive1d_args(name, x, output_size)
  check_1d_input(name, x)
  local n = output_size_tuple(name, output_size, 1)[1]
  if x:size(x:dim() - 1) == 0 or x:size(x:dim()) == 0 then
    fail("%s: channels and length must be non-zero (only the batch may be empty), got input shape %s", name, shp(x))
  end
  return n
end

local function adaptive_avg_pool1d_run(name, x, output_size)
  return drop(pt.adaptive_avg_pool2d(lift(x), {1, adaptive1d_args(name, x, output_size)}))
end

local function adaptive_max_pool1d_run(name, x, output_size, return_indices)
  local y, idx = pt.adaptive_max_pool2d(lift(x), {1, adaptive1d_args(name, x, output_size)},
    {return_indices = return_indices})
  if return_indices then return drop(y), drop(idx) end
  return drop(y)
end

local function adaptive_avg_pool1d(x, output_size) return adaptive_avg_pool1d_run("adaptive_avg_pool1d", x, output_size) end
nn.adaptive_avg_pool1d = doc(adaptive_avg_pool1d, "nn.functional.adaptive_avg_pool1d(x, output_size) -> x {N,C,L} or {C,L} averaged into output_size bins.")
local function adaptive_max_pool1d(x, output_size, opts)
  opts = check_opts("adaptive_max_pool1d", opts, {"return_indices"})
  return adaptive_max_pool1d_run("adaptive_max_pool1d", x, output_size, opts.return_indices or false)
end
nn.adaptive_max_pool1d = doc(adaptive_max_pool1d, "nn.functional.adaptive_max_pool1d(x, output_size[, {return_indices=false}]) -> Tensor[, indices]\n"
  .. "  The maximum of each of output_size bins of x {N,C,L} or {C,L}; indices: 1-based positions along L (int64).")

local AdaptiveAvgPool1d = Module:extend("AdaptiveAvgPool1d")
nn.AdaptiveAvgPool1d = AdaptiveAvgPool1d
function AdaptiveAvgPool1d:__init(output_size)
  self.output_size = output_size_tuple("AdaptiveAvgPool1d", output_size, 1)[1]
end
function AdaptiveAvgPool1d:forward(x) return adaptive_avg_pool1d_run("AdaptiveAvgPool1d:forward", x, self.output_size) end
function AdaptiveAvgPool1d:extra_repr() return "output_size=" .. self.output_size end
doc(AdaptiveAvgPool1d, "nn.AdaptiveAvgPool1d(output_size) -> averages {N,C,L} or {C,L} into output_size bins.")

local AdaptiveMaxPool1d = Module:extend("AdaptiveMaxPool1d")
nn.AdaptiveMaxPool1d = AdaptiveMaxPool1d
function AdaptiveMaxPool1d:__init(output_size, opts)
  opts = check_opts("AdaptiveMaxPool1d", opts, {"return_indices"})
  self.output_size = output_size_tuple("AdaptiveMaxPool1d", output_size, 1)[1]
  self.return_indices = opts.return_indices or false
end
function AdaptiveMaxPool1d:forward(x)
  return adaptive_max_pool1d_run("AdaptiveMaxPool1d:forward", x, self.output_size, self.return_indices)
end
function AdaptiveMaxPool1d:extra_repr() return "output_size=" .. self.output_size end
doc(AdaptiveMaxPool1d, "nn.AdaptiveMaxPool1d(output_size[, {return_indices=false}]) -> the maximum of each of output_size bins of {N,C,L}\n"
  .. "  or {C,L}; with return_indices the forward also returns the 1-based positions (int64).")

local AdaptiveMaxPool2d = Module:extend("AdaptiveMaxPool2d")
nn.AdaptiveMaxPool2d = AdaptiveMaxPool2d
function AdaptiveMaxPool2d:__init(output_size, opts)
  opts = check_opts("AdaptiveMaxPool2d", opts, {"return_indices"})
  self.output_size = output_size_tuple("AdaptiveMaxPool2d", output_size, 2)
  self.return_indices = opts.return_indices or false
end
function AdaptiveMaxPool2d:forward(x)
  return pt.adaptive_max_pool2d(x, self.output_size, {return_indices = self.return_indices})
end
function AdaptiveMaxPool2d:extra_repr() return "output_size=" .. fmt_tuple(self.output_size) end
doc(AdaptiveMaxPool2d, "nn.AdaptiveMaxPool2d(output_size[, {return_indices=false}]) -> the maximum of each of output_size (n or {h, w})\n"
  .. "  bins of {N,C,H,W} or {C,H,W}; with return_indices the forward also returns each maximum's 1-based position\n"
  .. "  in its flattened H*W plane (int64), as PyTorch's (0-based there).")

-- ------------------------------------------------------------------ max unpooling

local SPATIAL_NAMES = {{"length"}, {"height", "width"}, {"depth", "height", "width"}}

-- the output's spatial sizes, PyTorch's _unpool_output_size: (L-1)*stride + kernel - 2*padding per dim,
-- or output_size (nd sizes, or nd + 2 with batch and channels in front) within stride - 1 of that
local function unpool_size(name, x, k, s, p, output_size)
  local nd = #k
  local size = {}
  for i = 1, nd do size[i] = (x:size(x:dim() - nd + i) - 1) * s[i] + k[i] - 2 * p[i] end
  if output_size == nil then return size end
  if type(output_size) ~= "table" or pt.is_tensor(output_size) then
    fail("%s: output_size must be a list of integers, got %s", name, type(output_size))
  end
  local n = #output_size
  if n ~= nd and n ~= nd + 2 then fail("%s: output_size must have %d or %d elements, got %d", name, nd, nd + 2, n) end
  local out = {}
  for i = 1, nd do
    local v = output_size[n - nd + i]
    if math.type(v) ~= "integer" or v <= size[i] - s[i] or v >= size[i] + s[i] then
      fail("%s: output_size {%s}: the %s must be from %d to %d, got %s (input shape %s)", name,
        table.concat(output_size, ", "), SPATIAL_NAMES[nd][i], size[i] - s[i] + 1, size[i] + s[i] - 1, tostring(v), shp(x))
    end
    out[i] = v
  end
  return out
end

-- max_unpool1d (nd = 1, on a unit height), max_unpool2d and max_unpool3d (nd = 3, its volume as
-- one row: max_pool3d's indices are positions in the flattened volume); opts: stride, padding,
-- output_size
local function max_unpool_run(name, nd, x, indices, kernel_size, opts)
  check_tensor_arg(name, "input", x)
  check_tensor_arg(name, "indices", indices)
  if nd ~= 2 then
    if nd == 1 then
      check_1d_input(name, x)
    elseif x:dim() ~= 4 and x:dim() ~= 5 then
      fail("%s: expected a 4-D {C,D,H,W} or 5-D {N,C,D,H,W} input, got shape %s", name, shp(x))
    end
    -- the kernel would speak of the lifted shapes
    if shp(indices) ~= shp(x) then
      fail("%s: indices have shape %s, expected the input's shape %s", name, shp(indices), shp(x))
    end
  elseif x:dim() ~= 3 and x:dim() ~= 4 then
    fail("%s: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape %s", name, shp(x))
  end
  local k = positive_tuple(name, "kernel_size", kernel_size, nd)
  local s = positive_tuple(name, "stride", opts.stride or k, nd)
  local p = tuple(name, "padding", opts.padding or 0, nd)
  for i = 1, nd do
    if p[i] < 0 then fail("%s: padding must be >= 0, got %d", name, p[i]) end
  end
  local size = unpool_size(name, x, k, s, p, opts.output_size)
  if nd == 1 then return drop(pt._max_unpool2d(name, lift(x), lift(indices), 1, size[1])) end
  if nd == 3 then
    local lead = x:size()
    local n = #lead
    lead[n - 2], lead[n - 1], lead[n] = 1, lead[n - 2] * lead[n - 1] * lead[n], nil
    local y = pt._max_unpool2d(name, x:reshape(lead), indices:reshape(lead), 1, size[1] * size[2] * size[3])
    local out = x:size()
    out[n - 2], out[n - 1], out[n] = size[1], size[2], size[3]
    return y:reshape(out)
  end
  return pt._max_unpool2d(name, x, indices, size[1], size[2])
end

local UNPOOL_OPTS = {"stride", "padding", "output_size"}

local function max_unpool1d(x, indices, kernel_size, opts)
  return max_unpool_run("max_unpool1d", 1, x, indices, kernel_size, check_opts("max_unpool1d", opts, UNPOOL_OPTS))
end
nn.max_unpool1d = doc(max_unpool1d, [[nn.functional.max_unpool1d(x, indices, kernel_size[, {stride=kernel_size, padding=0, output_size}]) -> Tensor
  The inverse of max_pool1d: zeros of length (L-1)*stride + kernel_size - 2*padding (or output_size: {L'} or
  {N,C,L'}, within stride - 1 of that), with x {N,C,L} or {C,L} written at indices (int64, x's shape,
  1-based positions along L, as max_pool1d's return_indices gives them). Where indices repeat the last
  value wins; the gradient takes the output gradient at each index.]])

local function max_unpool3d(x, indices, kernel_size, opts)
  return max_unpool_run("max_unpool3d", 3, x, indices, kernel_size, check_opts("max_unpool3d", opts, UNPOOL_OPTS))
end
nn.max_unpool3d = doc(max_unpool3d, [[nn.functional.max_unpool3d(x, indices, kernel_size[, {stride=kernel_size, padding=0, output_size}]) -> Tensor
  The inverse of max_pool3d: zeros of spatial size (D-1)*stride + kernel_size - 2*padding per dim (or
  output_size: {d, h, w} or {N,C,d,h,w}, within stride - 1 of that), with x {N,C,D,H,W} or {C,D,H,W}
  written at indices (int64, x's shape, 1-based positions in the flattened output volume, as
  max_pool3d's return_indices gives them). Sizes are n or {d, h, w}. Where indices repeat the last
  value wins; the gradient takes the output gradient at each index.]])

local function max_unpool2d(x, indices, kernel_size, opts)
  return max_unpool_run("max_unpool2d", 2, x, indices, kernel_size, check_opts("max_unpool2d", opts, UNPOOL_OPTS))
end
nn.max_unpool2d = doc(max_unpool2d, [[nn.functional.max_unpool2d(x, indices, kernel_size[, {stride=kernel_size, padding=0, output_size}]) -> Tensor
  The inverse of max_pool2d: zeros of spatial size (H-1)*stride + kernel_size - 2*padding per dim (or
  output_size: {h, w} or {N,C,h,w}, within stride - 1 of that), with x {N,C,H,W} or {C,H,W} written at
  indices (int64, x's shape, 1-based positions in the flattened output plane, as max_pool2d's
  return_indices gives them). Sizes are n or {h, w}. Where indices repeat the last value wins; the
  gradient takes the output gradient at each index.]])

local function unpool_class(name, nd)
  local U = Module:extend(name)
  function U:__init(kernel_size, opts)
    opts = check_opts(name, opts, {"stride", "padding"})
    self.kernel_size = positive_tuple(name, "kernel_size", kernel_size, nd)
    self.stride = positive_tuple(name, "stride", opts.stride or self.kernel_size, nd)
    self.padding = tuple(name, "padding", opts.padding or 0, nd)
    for i = 1, nd do
      if self.padding[i] < 0 then fail("%s: padding must be >= 0, got %d", name, self.padding[i]) end
    end
  end
  function U:forward(x, indices, output_size)
    return max_unpool_run(name .. ":forward", nd, x, indices, self.kernel_size,
      {stride = self.stride, padding = self.padding, output_size = output_size})
  end
  function U:extra_repr()
    return fmt("kernel_size=%s, stride=%s, padding=%s", fmt_tuple(self.kernel_size), fmt_tuple(self.stride),
      fmt_tuple(self.padding))
  end
  return U
end

nn.MaxUnpool1d = doc(unpool_class("MaxUnpool1d", 1), [[nn.MaxUnpool1d(kernel_size[, {stride=kernel_size, padding=0}])
  The inverse of MaxPool1d: m(x, indices[, output_size]) writes x {N,C,L} or {C,L} at indices (1-based, as
  MaxPool1d's return_indices gives them) into zeros of length (L-1)*stride + kernel_size - 2*padding, or
  output_size ({L'} or {N,C,L'}, within stride - 1 of that). See nn.functional.max_unpool1d.]])
nn.MaxUnpool2d = doc(unpool_class("MaxUnpool2d", 2), [[nn.MaxUnpool2d(kernel_size[, {stride=kernel_size, padding=0}])
  The inverse of MaxPool2d: m(x, indices[, output_size]) writes x {N,C,H,W} or {C,H,W} at indices (1-based
  positions in the flattened output plane, as MaxPool2d's return_indices gives them) into zeros of spatial
  size (H-1)*stride + kernel_size - 2*padding per dim, or output_size ({h, w} or {N,C,h,w}, within
  stride - 1 of that). Sizes are n or {h, w}. See nn.functional.max_unpool2d.]])
nn.MaxUnpool3d = doc(unpool_class("MaxUnpool3d", 3), [[nn.MaxUnpool3d(kernel_size[, {stride=kernel_size, padding=0}])
  The inverse of MaxPool3d: m(x, indices[, output_size]) writes x {N,C,D,H,W} or {C,D,H,W} at indices
  (1-based positions in the flattened output volume, as MaxPool3d's return_indices gives them) into zeros
  of spatial size (D-1)*stride + kernel_size - 2*padding per dim, or output_size ({d, h, w} or
  {N,C,d,h,w}, within stride - 1 of that). See nn.functional.max_unpool3d.]])

-- ------------------------------------------------------------------ GroupNorm, InstanceNorm

-- weight {C} and bias {C} broadcast over {N,C,...}
local function affine(y, w, b)
  if not w and not b then return y end
  local shape = {}
  for i = 2, y:dim() do shape[#shape + 1] = 1 end
  shape[1] = -1
  if w then y = y * w:reshape(shape) end
  if b then y = y + b:reshape(shape) end
  return y
end

local function check_channel_param(name, what, t, C, x)
  if t == nil then return end
  check_tensor_arg(name, what, t)
  if t:dim() ~= 1 or t:size(1) ~= C then fail("%s: %s must have shape {%d}, got %s", name, what, C, shp(t)) end
  if t:dtype() ~= x:dtype() then fail("%s: %s has dtype %s, input has %s", name, what, t:dtype(), x:dtype()) end
end

local function group_norm_run(name, x, G, w, b, eps)
  check_tensor_arg(name, "input", x)
  if x:dim() < 2 then fail("%s: expected an input of at least 2 dimensions {N,C,...}, got shape %s", name, shp(x)) end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
  if math.type(G) ~= "integer" or G < 1 then fail("%s: num_groups must be a positive integer, got %s", name, tostring(G)) end
  local N, C = x:size(1), x:size(2)
  if C % G ~= 0 then
    fail("%s: input has %d channels, not divisible by num_groups=%d (input shape %s)", name, C, G, shp(x))
  end
  check_channel_param(name, "weight", w, C, x)
  check_channel_param(name, "bias", b, C, x)
  local M = x:numel() // math.max(N * G, 1)
  local y
  if M <= 1 or N == 0 then
    y = x * 0 -- one value per group: x - mean is 0
  else
    y = pt.batch_norm(x:reshape(1, N * G, M), nil, nil, {training = true, eps = eps}):reshape(x:size())
  end
  return affine(y, w, b)
end

-- nn.functional.group_norm(x, num_groups[, weight[, bias[, eps=1e-5]]])
local function group_norm(x, num_groups, w, b, eps)
  return group_norm_run("group_norm", x, num_groups, w, b, eps or 1e-5)
end
nn.group_norm = doc(group_norm, [==[nn.functional.group_norm(x, num_groups[, weight[, bias[, eps=1e-5]]]) -> Tensor
  Normalises x {N,C,...} over each sample's groups of C/num_groups channels (and all the other dims),
  then scales by weight {C} and shifts by bias {C}. batch_norm's fused kernel on {1, N*num_groups, ...}.]==])

local GroupNorm = Module:extend("GroupNorm")
nn.GroupNorm = GroupNorm
function GroupNorm:__init(num_groups, num_channels, opts)
  positive_int("GroupNorm", "num_groups", num_groups)
  positive_int("GroupNorm", "num_channels", num_channels)
  opts = check_opts("GroupNorm", opts, {"eps", "affine", "dtype"})
  if num_channels % num_groups ~= 0 then
    fail("GroupNorm: num_channels %d must be divisible by num_groups %d", num_channels, num_groups)
  end
  self.num_groups, self.num_channels = num_groups, num_channels
  self.eps = opts.eps or 1e-5
  self.affine = opts.affine ~= false
  if self.affine then
    local dt = opts.dtype or pt.get_default_dtype()
    self.weight = nn.Parameter(pt.ones(num_channels, {dtype = dt}))
    self.bias = nn.Parameter(pt.zeros(num_channels, {dtype = dt}))
  end
end
function GroupNorm:forward(x)
  local name = "GroupNorm:forward"
  check_tensor_arg(name, "input", x)
  if x:dim() >= 2 and x:size(2) ~= self.num_channels then
    fail("%s: input has %d channels, expected %d (input shape %s)", name, x:size(2), self.num_channels, shp(x))
  end
  local p = self._parameters
  return group_norm_run(name, x, self.num_groups, p.weight, p.bias, self.eps)
end
function GroupNorm:extra_repr()
  return fmt("%d, %d, eps=%g, affine=%s", self.num_groups, self.num_channels, self.eps, tostring(self.affine))
end
doc(GroupNorm, [[nn.GroupNorm(num_groups, num_channels[, {eps=1e-5, affine=true, dtype="float32"}])
  Group normalisation of {N,C,...}: statistics per sample over groups of C/num_groups channels; weight 1,
  bias 0 (per channel) when affine.]])

local function instance_norm_run(name, x, rmean, rvar, w, b, use_input_stats, momentum, eps)
  check_tensor_arg(name, "input", x)
  if x:dim() < 3 then fail("%s: expected an input of at least 3 dimensions {N,C,...}, got shape %s", name, shp(x)) end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
  local N, C = x:size(1), x:size(2)
  check_channel_param(name, "running_mean", rmean, C, x)
  check_channel_param(name, "running_var", rvar, C, x)
  check_channel_param(name, "weight", w, C, x)
  check_channel_param(name, "bias", b, C, x)
  if (rmean == nil) ~= (rvar == nil) then fail("%s: running_mean and running_var must be given together", name) end
  if not use_input_stats and not rmean then fail("%s: use_input_stats=false needs running_mean and running_var", name) end
  local S = 1
  for d = 3, x:dim() do S = S * x:size(d) end
  if use_input_stats and S <= 1 then
    fail("%s: expected more than 1 spatial element when training, got input shape %s", name, shp(x))
  end
  local rm, rv
  if rmean then rm, rv = rmean:detach():tile(N), rvar:detach():tile(N) end
  local y = pt.batch_norm(x:reshape(1, N * C, S), rm, rv, {training = use_input_stats, momentum = momentum, eps = eps})
  if rmean and use_input_stats and N > 0 then
    pt.no_grad(function()
      rmean:copy_(rm:view(N, C):mean(1))
      rvar:copy_(rv:view(N, C):mean(1))
    end)
  end
  return affine(y:reshape(x:size()), w, b)
end

-- nn.functional.instance_norm(x[, running_mean, running_var, weight, bias, use_input_stats=true, momentum=0.1, eps=1e-5])
local function instance_norm(x, running_mean, running_var, w, b, use_input_stats, momentum, eps)
  if use_input_stats == nil then use_input_stats = true end
  return instance_norm_run("instance_norm", x, running_mean, running_var, w, b, use_input_stats, momentum or 0.1,
    eps or 1e-5)
end
nn.instance_norm = doc(instance_norm, [[nn.functional.instance_norm(x[, running_mean, running_var, weight, bias, use_input_stats=true, momentum=0.1, eps=1e-5])
  PyTorch's F.instance_norm (positional): normalises each sample's channel of x {N,C,...} over the other
  dims; with running statistics use_input_stats=true updates them (the mean over the batch) in place,
  false normalises with them. weight {C}, bias {C}. batch_norm's fused kernel on {1, N*C, ...}.]])

local function instance_class(name, rank)
  local I = nn._BatchNorm:extend(name)
  function I:__init(num_features, opts)
    positive_int(name, "num_features", num_features)
    opts = check_opts(name, opts, {"eps", "momentum", "affine", "track_running_stats", "dtype"})
    nn._BatchNorm.__init(self, num_features, {eps = opts.eps, momentum = opts.momentum,
      affine = opts.affine == true, track_running_stats = opts.track_running_stats == true, dtype = opts.dtype})
  end
  function I:forward(x)
    local fname = name .. ":forward"
    check_tensor_arg(fname, "input", x)
    local nd = x:dim()
    if nd ~= rank + 1 and nd ~= rank + 2 then
      fail("%s: expected a %d-D or %d-D input, got shape %s", fname, rank + 1, rank + 2, shp(x))
    end
    local unbatched = nd == rank + 1
    if unbatched then x = x:unsqueeze(1) end
    if (self.affine or self.track_running_stats) and x:size(2) ~= self.num_features then
      fail("%s: input has %d channels, expected %d (input shape %s)", fname, x:size(2), self.num_features,
        shp(unbatched and x:squeeze(1) or x))
    end
    local p, bf = self._parameters, self._buffers
    local y = instance_norm_run(fname, x, bf.running_mean, bf.running_var, p.weight, p.bias,
      self.training or not self.track_running_stats, self.momentum or 0.1, self.eps)
    return unbatched and y:squeeze(1) or y
  end
  return I
end

nn.InstanceNorm1d = doc(instance_class("InstanceNorm1d", 1), [[nn.InstanceNorm1d(num_features[, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false}])
  Normalises each sample's channel of {N,C,L} (or {C,L}) over L. affine: weight 1, bias 0; track_running_stats:
  running statistics updated in training and used in eval.]])
nn.InstanceNorm2d = doc(instance_class("InstanceNorm2d", 2), [[nn.InstanceNorm2d(num_features[, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false}])
  Normalises each sample's channel of {N,C,H,W} (or {C,H,W}) over H and W. affine: weight 1, bias 0;
  track_running_stats: running statistics updated in training and used in eval.]])

-- nn.functional.conv2d: pt.conv2d, with padding "same"/"valid" too
local function conv2d(x, w, b, opts)
  local o = opts
  if o == nil and type(b) == "table" and not pt.is_tensor(b) then o = b end
  if type(o) ~= "table" or type(o.padding) ~= "string" then return pt.conv2d(x, w, b, opts) end
  check_tensor_arg("conv2d", "input", x)
  check_tensor_arg("conv2d", "weight", w)
  if w:dim() ~= 4 then fail("conv2d: weight must be 4-D {out,in/groups,kh,kw}, got shape %s", shp(w)) end
  local stride = positive_tuple("conv2d", "stride", o.stride or 1, 2)
  local dilation = positive_tuple("conv2d", "dilation", o.dilation or 1, 2)
  local pads = string_padding("conv2d", o.padding, {w:size(3), w:size(4)}, dilation, stride)
  local xp, p = apply_padding(x, pads, "zeros")
  local o2 = {}
  for k, v in pairs(o) do o2[k] = v end
  o2.padding = p
  if o == b then return pt.conv2d(xp, w, o2) end
  return pt.conv2d(xp, w, b, o2)
end
nn.conv2d = doc(conv2d, [[nn.functional.conv2d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}]) -> Tensor
  pt.conv2d, where padding may also be "valid" (0) or "same" (the input's size; stride 1; an odd total
  puts the extra row/column at the end, as PyTorch).]])

-- nn.functional.batch_norm (nn.lua's, whose kernel takes {N,C} or {N,C,L}) for any {N,C,...} as PyTorch's:
-- {N,C,H,W}, {N,C,D,H,W}, ... run that kernel on a {N,C,H*W...} view
do
  local batch_norm_nl = nn.batch_norm
  local function batch_norm(x, running_mean, running_var, w, b, training, momentum, eps)
    if not pt.is_tensor(x) or x:dim() <= 3 then
      return batch_norm_nl(x, running_mean, running_var, w, b, training, momentum, eps)
    end
    local size = x:size()
    local S = 1
    for i = 3, #size do S = S * size[i] end
    -- batch statistics with one value per channel: the kernel's message would name the view's shape
    if (training or not running_mean or not running_var) and size[1] * S <= 1 and floating(x) then
      fail("batch_norm: expected more than 1 value per channel when training, got input shape %s", shp(x))
    end
    return batch_norm_nl(x:reshape(size[1], size[2], S), running_mean, running_var, w, b, training, momentum,
      eps):reshape(size)
  end
  nn.batch_norm = doc(batch_norm, [[nn.batch_norm(x, running_mean, running_var[, weight, bias, training=false, momentum=0.1, eps=1e-5])
  PyTorch's F.batch_norm: positional arguments, and training defaults to FALSE: x is normalised
  with the running statistics (evaluation). training=true: with the batch statistics, updating
  the running ones in place (running = (1-momentum)*running + momentum*batch).
  x {N,C,...}: {N,C}, {N,C,L}, {N,C,H,W}, {N,C,D,H,W}, ... (per channel over every other dim; inputs of
  4 or more dims run the fused kernel on a {N,C,L} view); running_mean/running_var may be nil (then
  batch statistics are always used). pt.batch_norm (also nn.batch_norm2d) is the other form: an
  options table and training defaults to TRUE. nn.BatchNorm1d/2d/3d pass their mode explicitly.]])
  nn.functional.batch_norm = batch_norm
end

-- for nn_conv3d.lua (Conv3d, the 3-D pools, BatchNorm3d, InstanceNorm3d; loaded on first use by nn.lua's
-- load_extras): the checks and pieces the 1-D and 2-D layers use, so that the 3-D ones say the same
nn._conv_helpers = {fail = fail, shp = shp, floating = floating, check_opts = check_opts, tuple = tuple,
  positive_tuple = positive_tuple, output_size_tuple = output_size_tuple, positive_int = positive_int,
  check_tensor_arg = check_tensor_arg,
  fmt_tuple = fmt_tuple, all_eq = all_eq, conv_padding = conv_padding, apply_padding = apply_padding,
  check_conv_args = check_conv_args, conv_init = conv_init, conv_reset = conv_reset, conv_repr = conv_repr,
  RESET_DOC = RESET_DOC, instance_class = instance_class, output_padding_for = output_padding_for}

-- functional forms
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
  nn.batch_norm is the other form, PyTorch's F.batch_norm: positional arguments, and training
  defaults to FALSE. nn.BatchNorm2d and nn.BatchNorm3d pass their mode explicitly.]])
nn.dropout2d = pt.dropout2d
nn.upsample_nearest2d = pt.upsample_nearest2d
nn.conv_transpose2d = pt.conv_transpose2d
nn.adaptive_max_pool2d = pt.adaptive_max_pool2d
for _, k in ipairs {"conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
                    "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
                    "adaptive_max_pool2d", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d", "lp_pool2d", "group_norm", "instance_norm",
                    "dropout2d"} do
  if nn.functional[k] == nil then nn.functional[k] = nn[k] end
end

-- nn.DataParallel (partrain.data_parallel sets it; package.loaded["partrain.nn"] is already set)
require "partrain.data_parallel"

return nn
