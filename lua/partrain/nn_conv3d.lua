-- 3-D layers for partrain.nn, as PyTorch's: Conv3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d,
-- AdaptiveMaxPool3d, BatchNorm3d, InstanceNorm3d and the functional forms conv3d, max_pool3d,
-- avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d. Loaded by nn.lua's load_extras on first use
-- of a name nn does not have.
--
-- No kernels of their own: each runs the fused 2-D ones (lib/conv.c) and differentiable tensor ops,
-- so autograd needs nothing here.
--   conv3d: the kd depth taps each output depth reads are gathered (one index_select) into the
--     channels, {N*D_out, kd*C, H, W}; one conv2d with the weight as {out, kd*C/groups, kh, kw}
--     then sums over the taps in its GEMM. Depth padding: taps outside the input read a zero slice.
--   pooling: the 2-D pool over (H, W) of every depth slice ({N, C*D, H, W}), then each output
--     depth's window of those slices gathered ({N, C, D_out, k, H', W'}) and reduced: max (its
--     position tells the depth for return_indices), or sum / divisor (PyTorch's divisor is a product
--     over the three dims, so averaging the 2-D averages over depth gives it).
--   BatchNorm3d, InstanceNorm3d: batch_norm's fused kernel with D*H*W as the spatial size.
-- Sizes, checks and messages are those of the 1-D and 2-D layers (nn_conv.lua's helpers).
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local H = nn._conv_helpers
local fail, shp, floating, check_opts = H.fail, H.shp, H.floating, H.check_opts
local tuple, positive_tuple, positive_int = H.tuple, H.positive_tuple, H.positive_int
local output_size_tuple = H.output_size_tuple
local check_tensor_arg, fmt_tuple = H.check_tensor_arg, H.fmt_tuple
local fmt = string.format

local doc = pt._doc

-- the input of a 3-D layer: {N,C,D,H,W} or {C,D,H,W}
local function check_3d_input(name, x)
  check_tensor_arg(name, "input", x)
  local nd = x:dim()
  if nd ~= 4 and nd ~= 5 then
    fail("%s: expected a 4-D {C,D,H,W} or 5-D {N,C,D,H,W} input, got shape %s", name, shp(x))
  end
  if not floating(x) then fail("%s: input must be float32 or float64, got %s", name, x:dtype()) end
end

local function int64(list) return pt.tensor(list, {dtype = "int64"}) end

-- ------------------------------------------------------------------ convolution

-- conv3d over conv2d; pads {{l, r}, x3}; name for the messages
local function conv3d_run(name, x, w, b, stride, pads, dilation, groups, mode, module_msg)
  check_3d_input(name, x)
  H.check_conv_args(name, x, w, b, 3, groups, module_msg)
  local nd = x:dim()
  local ins = {x:size(nd - 2), x:size(nd - 1), x:size(nd)}
  if ins[1] == 0 or ins[2] == 0 or ins[3] == 0 then
    fail("%s: only the batch or the channels may be empty, got input shape %s", name, shp(x))
  end
  local k = {w:size(3), w:size(4), w:size(5)}
  local span, padded, dilated = {}, {}, false
  for i = 1, 3 do
    span[i] = dilation[i] * (k[i] - 1) + 1
    padded[i] = ins[i] + pads[i][1] + pads[i][2]
    if dilation[i] > 1 then dilated = true end
  end
  for i = 1, 3 do
    if padded[i] < span[i] then
      fail("%s: kernel %s%s is larger than the padded input %s (input shape %s)", name, table.concat(span, "x"),
        dilated and " (dilated)" or "", table.concat(padded, "x"), shp(x))
    end
  end
  local xp, p = H.apply_padding(nd == 4 and x:unsqueeze(1) or x, pads, mode)
  local N, C, D, Hi, Wi = table.unpack(xp:size())
  local O, Cg, kd = w:size(1), w:size(2), k[1]
  local Do = (D + 2 * p[1] - span[1]) // stride[1] + 1
  -- output depth o reads input depths o*stride - padding + z*dilation, z = 0..kd-1 (1-based here); one
  -- outside the input reads the zero slice appended as depth D+1
  local idx, zero_slice = {}, false
  for o = 0, Do - 1 do
    for z = 0, kd - 1 do
      local t = o * stride[1] - p[1] + z * dilation[1]
      if t < 0 or t >= D then
        idx[#idx + 1] = D + 1
        zero_slice = true
      else
        idx[#idx + 1] = t + 1
      end
    end
  end
  local xt = xp:permute(1, 3, 2, 4, 5) -- {N, D, C, H, W}: a depth's channels together
  if zero_slice then xt = pt.cat({xt, pt.zeros({N, 1, C, Hi, Wi}, {dtype = x:dtype()})}, 2) end
  local g = xt:index_select(2, int64(idx)) -- {N, Do*kd, C, H, W}
  -- conv2d's groups take contiguous channel blocks: {groups, kd, C/groups} per output depth
  if groups > 1 and kd > 1 then g = g:view(N * Do, kd, groups, Cg, Hi, Wi):permute(1, 3, 2, 4, 5, 6) end
  g = g:reshape(N * Do, kd * C, Hi, Wi)
  local w2 = w:permute(1, 3, 2, 4, 5):reshape(O, kd * Cg, k[2], k[3]) -- {out, kd, C/groups, kh, kw}
  local y = pt.conv2d(g, w2, b, {stride = {stride[2], stride[3]}, padding = {p[2], p[3]},
    dilation = {dilation[2], dilation[3]}, groups = groups})
  y = y:view(N, Do, O, y:size(3), y:size(4)):permute(1, 3, 2, 4, 5):contiguous()
  return nd == 4 and y:squeeze(1) or y
end

-- nn.functional.conv3d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}])
local function conv3d(x, w, b, opts)
  if opts == nil and type(b) == "table" and not pt.is_tensor(b) then b, opts = nil, b end
  opts = check_opts("conv3d", opts, {"stride", "padding", "dilation", "groups"})
  check_tensor_arg("conv3d", "weight", w)
  local stride = positive_tuple("conv3d", "stride", opts.stride or 1, 3)
  local dilation = positive_tuple("conv3d", "dilation", opts.dilation or 1, 3)
  local k = w:dim() == 5 and {w:size(3), w:size(4), w:size(5)} or {1, 1, 1}
  local pads = H.conv_padding("conv3d", opts.padding or 0, k, dilation, stride)
  return conv3d_run("conv3d", x, w, b, stride, pads, dilation, opts.groups or 1, "zeros")
end
nn.conv3d = doc(conv3d, [[nn.functional.conv3d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}]) -> Tensor
  3-D convolution of x {N,C,D,H,W} or {C,D,H,W}; weight {out, C/groups, kd, kh, kw}, bias {out}. Sizes
  are n or {d, h, w}; padding is also "valid" (0) or "same" (the input's size; stride 1; an odd total
  puts the extra slice at the end, as PyTorch). Computed as one conv2d (the fused kernel): the kd input
  depths each output depth reads are gathered into the channels, {N*D_out, kd*C, H, W}, and convolved
  with the weight as {out, kd*C/groups, kh, kw}; depth padding reads zero slices.]])

-- nn.Conv3d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true,
--   padding_mode="zeros", dtype="float32"}])
local Conv3d = Module:extend("Conv3d")
nn.Conv3d = Conv3d
function Conv3d:__init(in_channels, out_channels, kernel_size, opts)
  H.conv_init(self, "Conv3d", 3, false, in_channels, out_channels, kernel_size, opts)
end
Conv3d.reset_parameters = doc(function(self) H.conv_reset(self) end, H.RESET_DOC)
function Conv3d:forward(x)
  local p = self._parameters
  return conv3d_run("Conv3d:forward", x, p.weight, p.bias, self.stride, self._pads, self.dilation, self.groups,
    self.padding_mode, true)
end
Conv3d.extra_repr = H.conv_repr
doc(Conv3d, [[nn.Conv3d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, dilation=1, groups=1, bias=true,
  padding_mode="zeros", dtype="float32"}])
  3-D convolution of {N,C,D,H,W} (or {C,D,H,W}) inputs; sizes are n or {d, h, w}; weight {out, in/groups,
  kd, kh, kw} and bias {out} (PyTorch's names, layout and init). padding is also "valid" or "same"
  (stride 1); padding_mode "zeros", "reflect", "replicate" or "circular". Runs as one conv2d over the
  depth taps gathered into the channels (see nn.functional.conv3d).]])

-- nn.functional.conv_transpose3d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}])
-- is pt.conv_transpose3d (lib/conv.c), which checks its arguments and options
nn.conv_transpose3d = pt.conv_transpose3d

-- nn.ConvTranspose3d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, output_padding=0, groups=1,
--   bias=true, dilation=1, dtype="float32"}])
local ConvTranspose3d = Module:extend("ConvTranspose3d")
nn.ConvTranspose3d = ConvTranspose3d
function ConvTranspose3d:__init(in_channels, out_channels, kernel_size, opts)
  H.conv_init(self, "ConvTranspose3d", 3, true, in_channels, out_channels, kernel_size, opts)
end
ConvTranspose3d.reset_parameters = doc(function(self) H.conv_reset(self) end, H.RESET_DOC)
function ConvTranspose3d:forward(x, output_size)
  local p, name = self._parameters, "ConvTranspose3d:forward"
  check_3d_input(name, x)
  local nd = x:dim()
  if x:size(nd - 3) ~= self.in_channels then
    fail("%s: input has %d channels, expected %d (input shape %s)", name, x:size(nd - 3), self.in_channels, shp(x))
  end
  local op = output_size and H.output_padding_for(name, self, x, output_size) or self.output_padding
  return pt.conv_transpose3d(x, p.weight, p.bias, {stride = self.stride, padding = self.padding,
    output_padding = op, groups = self.groups, dilation = self.dilation})
end
ConvTranspose3d.extra_repr = H.conv_repr
doc(ConvTranspose3d, [[nn.ConvTranspose3d(in_channels, out_channels, kernel_size[, {stride=1, padding=0, output_padding=0,
  groups=1, bias=true, dilation=1, dtype="float32"}])
  The transpose (gradient) of Conv3d, for {N,C,D,H,W} or {C,D,H,W}; sizes are n or {d, h, w}; weight
  {in, out/groups, kd, kh, kw} (PyTorch's layout and init). m(x[, output_size]): output_size {d, h, w}
  (or {N,C,d,h,w}) picks the output_padding. Runs pt.conv_transpose3d.]])

-- ------------------------------------------------------------------ pooling

local function ceil_div(a, b) return (a + b - 1) // b end

-- checks of a 3-D pool's input and sizes; returns the input as {N,C,D,H,W} and kernel, stride, padding,
-- dilation and the output's D, H, W (lists of 3)
local function pool3d_args(name, x, kernel_size, opts, is_max)
  check_3d_input(name, x)
  local nd = x:dim()
  local ins = {x:size(nd - 2), x:size(nd - 1), x:size(nd)}
  if x:size(nd - 3) == 0 or ins[1] == 0 or ins[2] == 0 or ins[3] == 0 then
    fail("%s: channels, depth, height and width must be non-zero (only the batch may be empty), got input shape %s",
      name, shp(x))
  end
  local k = positive_tuple(name, "kernel_size", kernel_size, 3)
  local s = positive_tuple(name, "stride", opts.stride or k, 3)
  local p = tuple(name, "padding", opts.padding or 0, 3)
  local d = is_max and positive_tuple(name, "dilation", opts.dilation or 1, 3) or {1, 1, 1}
  for i = 1, 3 do
    if p[i] < 0 or 2 * p[i] > k[i] then
      fail("%s: padding %d should be >= 0 and at most half of kernel size %d", name, p[i], k[i])
    end
  end
  local span, padded, dilated = {}, {}, false
  for i = 1, 3 do
    span[i] = d[i] * (k[i] - 1) + 1
    padded[i] = ins[i] + 2 * p[i]
    if d[i] > 1 then dilated = true end
  end
  local out = {}
  for i = 1, 3 do
    if padded[i] < span[i] then
      fail("%s: kernel %s%s is larger than the padded input %s (input shape %s)", name, table.concat(span, "x"),
        dilated and " (dilated)" or "", table.concat(padded, "x"), shp(x))
    end
    local r = padded[i] - span[i]
    local n = (opts.ceil_mode and ceil_div(r, s[i]) or r // s[i]) + 1
    -- the last window must start inside the input or the left padding (PyTorch's rule)
    if opts.ceil_mode and (n - 1) * s[i] >= ins[i] + p[i] then n = n - 1 end
    out[i] = n
  end
  return nd == 4 and x:unsqueeze(1) or x, k, s, p, d, out
end

-- y {N, C, D, H', W'} (the 2-D pool of every depth slice). Window o (1..Do) holds the n[o] slices
-- first[o], first[o] + step, ... (0-based), n[o] <= K. Returns {N, C, Do, K, H', W'}: each window's
-- slices, then, where n[o] < K, repeats of its first slice (repeat_first: a max is unchanged and its
-- first position still wins) or fill() ({N, C, 1, H', W'}, appended as slice D+1).
local function gather_windows(y, first, n, K, step, repeat_first, fill)
  local N, C, D, Ho, Wo = table.unpack(y:size())
  local Do = #first
  local tiled = step == 1 or K == 1
  for o = 1, Do do
    if n[o] ~= K or first[o] ~= (o - 1) * K then
      tiled = false
      break
    end
  end
  -- windows side by side (stride = kernel, no padding): a view
  if tiled then return y:narrow(3, 1, Do * K):reshape(N, C, Do, K, Ho, Wo) end
  local idx, extra = {}, false
  for o = 1, Do do
    for z = 0, K - 1 do
      if z < n[o] then
        idx[#idx + 1] = first[o] + z * step + 1
      elseif repeat_first and n[o] > 0 then
        idx[#idx + 1] = first[o] + 1
      else
        idx[#idx + 1] = D + 1
        extra = true
      end
    end
  end
  if extra then y = pt.cat({y, fill(N, C, Ho, Wo)}, 3) end
  return y:index_select(3, int64(idx)):view(N, C, Do, K, Ho, Wo)
end

-- the max over each depth window of the 2-D pool's y (and its 1-based positions i2 in the H*W plane,
-- or nil): values and, with i2, 1-based positions in the D*H*W volume (PyTorch's flat index + 1).
-- base[o]: the depth window o's position counts from (its first slice; for a window with no slice in
-- the input, PyTorch's: the first tap at or after 0, with the value -inf and plane position fill_i2)
local function depth_max(y, i2, first, n, K, step, base, fill_i2, HW)
  local g = gather_windows(y, first, n, K, step, true, function(N, C, Ho, Wo)
    return pt.full({N, C, 1, Ho, Wo}, -math.huge, {dtype = y:dtype()})
  end)
  local v, at = g:max(4) -- the first maximum along the window, as PyTorch's scan order
  if not i2 then return v end
  local gi = gather_windows(i2, first, n, K, step, true, function(N, C, Ho, Wo)
    return fill_i2:view(1, 1, 1, Ho, Wo):expand(N, C, 1, Ho, Wo)
  end)
  local plane = gi:gather(4, at:unsqueeze(4)):squeeze(4)
  local depth = (at - 1) * step + int64(base):view(#base, 1, 1)
  return v, depth * HW + plane
end

-- window o's in-plane start as PyTorch's max pooling counts it (0-based, before the first tap at or
-- after 0): the index it reports for a window that holds no element of the input
local function first_tap(o, s, p, d)
  local t = o * s - p
  while t < 0 do t = t + d end
  return t
end

local function max_pool3d_run(name, x, kernel_size, opts)
  local x5, k, s, p, d, out = pool3d_args(name, x, kernel_size, opts, true)
  local N, C, D, Hi, Wi = table.unpack(x5:size())
  local want = opts.return_indices or false
  local y, i2 = pt.max_pool2d(x5:reshape(N, C * D, Hi, Wi), {k[2], k[3]}, {stride = {s[2], s[3]},
    padding = {p[2], p[3]}, dilation = {d[2], d[3]}, ceil_mode = opts.ceil_mode or false, return_indices = want})
  local Ho, Wo = y:size(3), y:size(4)
  y = y:view(N, C, D, Ho, Wo)
  if i2 then i2 = i2:view(N, C, D, Ho, Wo) end
  local first, n, base, empty = {}, {}, {}, false
  for o = 1, out[1] do
    local f, m = nil, 0
    for z = 0, k[1] - 1 do
      local t = (o - 1) * s[1] - p[1] + z * d[1]
      if t >= 0 and t < D then
        f = f or t
        m = m + 1
      end
    end
    first[o], n[o] = f or 0, m
    base[o] = f or first_tap(o - 1, s[1], p[1], d[1])
    if m == 0 then empty = true end
  end
  local fill_i2
  if want and empty then
    local list = {}
    for a = 0, Ho - 1 do
      for b = 0, Wo - 1 do
        list[#list + 1] = first_tap(a, s[2], p[2], d[2]) * Wi + first_tap(b, s[3], p[3], d[3]) + 1
      end
    end
    fill_i2 = int64(list):view(Ho, Wo)
  end
  local v, idx = depth_max(y, i2, first, n, k[1], d[1], base, fill_i2, Hi * Wi)
  if x:dim() == 4 then
    v = v:squeeze(1)
    if idx then idx = idx:squeeze(1) end
  end
  if want then return v, idx end
  return v
end

local function avg_pool3d_run(name, x, kernel_size, opts)
  local x5, k, s, p, _, out = pool3d_args(name, x, kernel_size, opts, false)
  local dov = opts.divisor_override
  if dov ~= nil and (math.type(dov) ~= "integer" or dov == 0) then
    fail("%s: divisor_override must be a non-zero integer, got %s", name, tostring(dov))
  end
  local N, C, D, Hi, Wi = table.unpack(x5:size())
  local cip = opts.count_include_pad ~= false
  -- with divisor_override the 2-D pool gives sums (its own divisor 1), divided once at the end
  local y = pt.avg_pool2d(x5:reshape(N, C * D, Hi, Wi), {k[2], k[3]}, {stride = {s[2], s[3]},
    padding = {p[2], p[3]}, ceil_mode = opts.ceil_mode or false, count_include_pad = cip,
    divisor_override = dov and 1 or nil})
  local Ho, Wo = y:size(3), y:size(4)
  -- PyTorch's divisor along depth: the window clipped to the padded input (count_include_pad), or to
  -- the input
  local first, n, div, uniform = {}, {}, {}, true
  for o = 1, out[1] do
    local t0 = (o - 1) * s[1] - p[1]
    local t1 = math.min(t0 + k[1], D + p[1])
    local a, b = math.max(t0, 0), math.min(t1, D)
    first[o], n[o] = a, b - a
    div[o] = dov or (cip and t1 - t0 or b - a)
    if div[o] ~= div[1] then uniform = false end
  end
  local g = gather_windows(y:view(N, C, D, Ho, Wo), first, n, k[1], 1, false, function(N_, C_, Ho_, Wo_)
    return pt.zeros({N_, C_, 1, Ho_, Wo_}, {dtype = y:dtype()})
  end)
  local v = g:sum(4)
  v = uniform and v / div[1] or v / pt.tensor(div, {dtype = y:dtype()}):view(#div, 1, 1)
  return x:dim() == 4 and v:squeeze(1) or v
end

local MAX3D_OPTS = {"stride", "padding", "dilation", "ceil_mode", "return_indices"}
local AVG3D_OPTS = {"stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"}

local function max_pool3d(x, kernel_size, opts)
  return max_pool3d_run("max_pool3d", x, kernel_size, check_opts("max_pool3d", opts, MAX3D_OPTS))
end
nn.max_pool3d = doc(max_pool3d, [[nn.functional.max_pool3d(x, kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false,
  return_indices=false}]) -> Tensor[, indices]
  Max pooling of x {N,C,D,H,W} or {C,D,H,W}; sizes are n or {d, h, w}. return_indices=true also returns each
  maximum's 1-based position in its flattened D*H*W input volume (int64; PyTorch's count from 0). Ties go
  to the first in (d, h, w) order, as PyTorch's. Computed as max_pool2d's fused kernel over (H, W) of every
  depth slice, then the maximum over each depth window of those slices (gathered, max along the window).]])

local function avg_pool3d(x, kernel_size, opts)
  return avg_pool3d_run("avg_pool3d", x, kernel_size, check_opts("avg_pool3d", opts, AVG3D_OPTS))
end
nn.avg_pool3d = doc(avg_pool3d, [[nn.functional.avg_pool3d(x, kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false,
  count_include_pad=true, divisor_override}]) -> Tensor
  Average pooling of x {N,C,D,H,W} or {C,D,H,W}; sizes are n or {d, h, w}. The divisor is PyTorch's: the
  window's size clipped to the padded input (count_include_pad=true) or to the input, or divisor_override
  (a non-zero integer). Computed as avg_pool2d's fused kernel over (H, W) of every depth slice, then each
  depth window's sum of those averages divided by its depth divisor (the divisor is a product over the
  dims, so that is the 3-D average).]])

local function pool3d_class(name, run, allowed, is_max)
  local P = Module:extend(name)
  function P:__init(kernel_size, opts)
    opts = check_opts(name, opts, allowed)
    self.kernel_size = positive_tuple(name, "kernel_size", kernel_size, 3)
    self.stride = positive_tuple(name, "stride", opts.stride or self.kernel_size, 3)
    self.padding = tuple(name, "padding", opts.padding or 0, 3)
    self.ceil_mode = opts.ceil_mode or false
    if is_max then
      self.dilation = positive_tuple(name, "dilation", opts.dilation or 1, 3)
      self.return_indices = opts.return_indices or false
    else
      self.count_include_pad = opts.count_include_pad ~= false
      local dov = opts.divisor_override
      if dov ~= nil and (math.type(dov) ~= "integer" or dov == 0) then
        fail("%s: divisor_override must be a non-zero integer, got %s", name, tostring(dov))
      end
      self.divisor_override = dov
    end
  end
  function P:forward(x)
    return run(name .. ":forward", x, self.kernel_size, {stride = self.stride, padding = self.padding,
      dilation = self.dilation, ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad,
      divisor_override = self.divisor_override, return_indices = self.return_indices})
  end
  function P:extra_repr()
    local s = fmt("kernel_size=%s, stride=%s, padding=%s", fmt_tuple(self.kernel_size), fmt_tuple(self.stride),
      fmt_tuple(self.padding))
    if not is_max then return s end -- PyTorch's AvgPool3d shows these three
    return s .. fmt(", dilation=%s, ceil_mode=%s", fmt_tuple(self.dilation), tostring(self.ceil_mode))
  end
  return P
end

nn.MaxPool3d = doc(pool3d_class("MaxPool3d", max_pool3d_run, MAX3D_OPTS, true),
  [[nn.MaxPool3d(kernel_size[, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}])
  Max pooling of {N,C,D,H,W} or {C,D,H,W}; sizes are n or {d, h, w}. With return_indices the forward also
  returns each maximum's 1-based position in its flattened D*H*W volume (int64; PyTorch's count from 0).
  max_pool2d's kernel over (H, W), then the maximum over depth windows (see nn.functional.max_pool3d).]])
nn.AvgPool3d = doc(pool3d_class("AvgPool3d", avg_pool3d_run, AVG3D_OPTS, false),
  [[nn.AvgPool3d(kernel_size[, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true, divisor_override}])
  Average pooling of {N,C,D,H,W} or {C,D,H,W}; sizes are n or {d, h, w}; divisor_override (a non-zero
  integer) divides every window's sum in place of its size. avg_pool2d's kernel over (H, W), then the
  average over depth windows (see nn.functional.avg_pool3d).]])

-- the adaptive windows of PyTorch along one dim: [floor(o*L/n), ceil((o+1)*L/n))
local function adaptive_windows(L, nout)
  local first, n, K = {}, {}, 0
  for o = 0, nout - 1 do
    local a, b = (o * L) // nout, ceil_div((o + 1) * L, nout)
    first[o + 1], n[o + 1] = a, b - a
    K = math.max(K, b - a)
  end
  return first, n, K
end

local function adaptive3d_args(name, x, output_size)
  check_3d_input(name, x)
  local size = output_size_tuple(name, output_size, 3)
  local nd = x:dim()
  if x:size(nd - 3) == 0 or x:size(nd - 2) == 0 or x:size(nd - 1) == 0 or x:size(nd) == 0 then
    fail("%s: channels, depth, height and width must be non-zero (only the batch may be empty), got input shape %s",
      name, shp(x))
  end
  local x5 = nd == 4 and x:unsqueeze(1) or x
  return x5, size, table.unpack(x5:size())
end

-- an output_size with a 0: the empty result, still a function of x (its gradient is zeros)
local function empty_result(x, size)
  local shape = x:size()
  for i = 1, 3 do shape[#shape - 3 + i] = size[i] end
  return x:reshape(-1):narrow(1, 1, 0):reshape(shape)
end
local function has_zero(size) return size[1] == 0 or size[2] == 0 or size[3] == 0 end

local function adaptive_avg_pool3d_run(name, x, output_size)
  local x5, size, N, C, D, Hi, Wi = adaptive3d_args(name, x, output_size)
  if has_zero(size) then return empty_result(x, size) end
  local y = pt.adaptive_avg_pool2d(x5:reshape(N, C * D, Hi, Wi), {size[2], size[3]})
  local first, n, K = adaptive_windows(D, size[1])
  local g = gather_windows(y:view(N, C, D, size[2], size[3]), first, n, K, 1, false, function(N_, C_, Ho, Wo)
    return pt.zeros({N_, C_, 1, Ho, Wo}, {dtype = y:dtype()})
  end)
  local uniform = true
  for o = 2, #n do if n[o] ~= n[1] then uniform = false end end
  local v = g:sum(4)
  v = uniform and v / n[1] or v / pt.tensor(n, {dtype = y:dtype()}):view(#n, 1, 1)
  return x:dim() == 4 and v:squeeze(1) or v
end

local function adaptive_max_pool3d_run(name, x, output_size, return_indices)
  local x5, size, N, C, D, Hi, Wi = adaptive3d_args(name, x, output_size)
  if has_zero(size) then
    local v = empty_result(x, size)
    if return_indices then return v, pt.zeros(v:size(), {dtype = "int64"}) end
    return v
  end
  local y, i2 = pt.adaptive_max_pool2d(x5:reshape(N, C * D, Hi, Wi), {size[2], size[3]},
    {return_indices = return_indices})
  y = y:view(N, C, D, size[2], size[3])
  if i2 then i2 = i2:view(N, C, D, size[2], size[3]) end
  local first, n, K = adaptive_windows(D, size[1])
  local v, idx = depth_max(y, i2, first, n, K, 1, first, nil, Hi * Wi)
  if x:dim() == 4 then
    v = v:squeeze(1)
    if idx then idx = idx:squeeze(1) end
  end
  if return_indices then return v, idx end
  return v
end

local function adaptive_avg_pool3d(x, output_size)
  return adaptive_avg_pool3d_run("adaptive_avg_pool3d", x, output_size)
end
nn.adaptive_avg_pool3d = doc(adaptive_avg_pool3d, [[nn.functional.adaptive_avg_pool3d(x, output_size) -> Tensor
  x {N,C,D,H,W} or {C,D,H,W} averaged into output_size (n or {d, h, w}) bins; bin o of a dim of length L
  covers [floor(o*L/n), ceil((o+1)*L/n)), as PyTorch's. adaptive_avg_pool2d's fused kernel over (H, W) of
  every depth slice, then the mean over each depth bin.]])

local function adaptive_max_pool3d(x, output_size, opts)
  opts = check_opts("adaptive_max_pool3d", opts, {"return_indices"})
  return adaptive_max_pool3d_run("adaptive_max_pool3d", x, output_size, opts.return_indices or false)
end
nn.adaptive_max_pool3d = doc(adaptive_max_pool3d, [[nn.functional.adaptive_max_pool3d(x, output_size[, {return_indices=false}]) -> Tensor[, indices]
  The maximum of each of output_size (n or {d, h, w}) bins of x {N,C,D,H,W} or {C,D,H,W} (PyTorch's bins,
  see adaptive_avg_pool3d); indices: 1-based positions in the flattened D*H*W volume (int64). Computed as
  adaptive_max_pool2d's fused kernel over (H, W) of every depth slice, then the maximum over depth bins.]])

local AdaptiveAvgPool3d = Module:extend("AdaptiveAvgPool3d")
nn.AdaptiveAvgPool3d = AdaptiveAvgPool3d
function AdaptiveAvgPool3d:__init(output_size)
  self.output_size = output_size_tuple("AdaptiveAvgPool3d", output_size, 3)
end
function AdaptiveAvgPool3d:forward(x)
  return adaptive_avg_pool3d_run("AdaptiveAvgPool3d:forward", x, self.output_size)
end
function AdaptiveAvgPool3d:extra_repr() return "output_size=" .. fmt_tuple(self.output_size) end
doc(AdaptiveAvgPool3d, [[nn.AdaptiveAvgPool3d(output_size) -> averages {N,C,D,H,W} or {C,D,H,W} into output_size (n or
  {d, h, w}) bins (see nn.functional.adaptive_avg_pool3d).]])

local AdaptiveMaxPool3d = Module:extend("AdaptiveMaxPool3d")
nn.AdaptiveMaxPool3d = AdaptiveMaxPool3d
function AdaptiveMaxPool3d:__init(output_size, opts)
  opts = check_opts("AdaptiveMaxPool3d", opts, {"return_indices"})
  self.output_size = output_size_tuple("AdaptiveMaxPool3d", output_size, 3)
  self.return_indices = opts.return_indices or false
end
function AdaptiveMaxPool3d:forward(x)
  return adaptive_max_pool3d_run("AdaptiveMaxPool3d:forward", x, self.output_size, self.return_indices)
end
function AdaptiveMaxPool3d:extra_repr() return "output_size=" .. fmt_tuple(self.output_size) end
doc(AdaptiveMaxPool3d, [[nn.AdaptiveMaxPool3d(output_size[, {return_indices=false}]) -> the maximum of each of output_size (n or
  {d, h, w}) bins of {N,C,D,H,W} or {C,D,H,W}; with return_indices the forward also returns each maximum's
  1-based position in its flattened D*H*W volume (int64). See nn.functional.adaptive_max_pool3d.]])

-- ------------------------------------------------------------------ normalisation

local BatchNorm3d = nn._BatchNorm:extend("BatchNorm3d")
nn.BatchNorm3d = BatchNorm3d
function BatchNorm3d:__init(num_features, opts)
  positive_int("BatchNorm3d", "num_features", num_features)
  opts = check_opts("BatchNorm3d", opts, {"eps", "momentum", "affine", "track_running_stats", "dtype"})
  nn._BatchNorm.__init(self, num_features, opts)
end
function BatchNorm3d:forward(x)
  local name = "BatchNorm3d:forward"
  check_tensor_arg(name, "input", x)
  if x:dim() ~= 5 then fail("%s: expected a 5-D input {N,C,D,H,W}, got shape %s", name, shp(x)) end
  if (self.affine or self.track_running_stats) and x:size(2) ~= self.num_features then
    fail("%s: input has %d channels, expected %d (input shape %s)", name, x:size(2), self.num_features, shp(x))
  end
  local p = self._parameters
  local mean, var, momentum = self:_running_stats()
  -- without running statistics batch statistics are used even in evaluation mode (BatchNorm2d's rule)
  return pt.batch_norm(x, mean, var, p.weight, p.bias,
    {training = self.training or mean == nil, momentum = momentum, eps = self.eps})
end
doc(BatchNorm3d, [[nn.BatchNorm3d(num_features[, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true, dtype="float32"}])
  Per-channel batch normalisation of {N,C,D,H,W}: batch statistics over N, D, H, W in training (running
  statistics updated; momentum=false: cumulative average), the running ones in eval. weight 1, bias 0,
  running_mean 0, running_var 1, num_batches_tracked (PyTorch's state_dict). batch_norm's fused kernel
  (BatchNorm2d's) with D*H*W as the spatial size.]])

nn.InstanceNorm3d = doc(H.instance_class("InstanceNorm3d", 3), [[nn.InstanceNorm3d(num_features[, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false, dtype="float32"}])
  Normalises each sample's channel of {N,C,D,H,W} (or {C,D,H,W}) over D, H and W. affine: weight 1, bias 0;
  track_running_stats: running statistics updated in training and used in eval. batch_norm's fused kernel
  on {1, N*C, D*H*W} (as InstanceNorm1d/2d).]])

for _, k in ipairs {"conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"} do
  nn.functional[k] = nn[k]
end

return nn
