-- More of torch.nn for partrain.nn: the margin losses MultiMarginLoss and MultiLabelMarginLoss,
-- the channel dropouts Dropout1d and Dropout3d, F.gumbel_softmax, F.pdist, the upsampling layers
-- Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (with F.upsample_nearest and F.upsample_bilinear),
-- and LazyLinear. Loaded by nn.lua with its other extras on the first use of a name it does not
-- have.
--
-- Everything is composed of the differentiable tensor ops, so autograd (second derivatives
-- included) comes for free. The formulas, defaults and edge cases are PyTorch 1.13's. As in
-- nn_extra.lua, settings are taken positionally in PyTorch's order (its deprecated size_average
-- and reduce left out) or as a trailing options table, dims are 1-based (negative from the end)
-- and class indices are 1-based. The argument helpers are nn_extra.lua's (nn._arg_helpers).
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local F = nn.functional

local doc = pt._doc

-- errors at the nearest caller outside partrain's own Lua files (the user's line)
local fail = require("partrain.tensor")._fail

-- ------------------------------------------------------------------ arguments

-- the argument helpers nn_extra.lua (loaded first) shares
local H = nn._arg_helpers
local shape_str, type_of, num_repr, number, boolean = H.shape_str, H.type_of, H.num_repr, H.number, H.boolean
local dim_arg, tensor_arg, reduction_arg, nonneg, dtype_arg = H.dim_arg, H.tensor_arg, H.reduction_arg, H.nonneg,
  H.dtype_arg
local parse, check_input, reduce, norm_dim = H.parse, H.check_input, H.reduce, H.norm_dim

local function value_repr(v)
  if type(v) == "number" then return num_repr(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) == "table" then
    local s = {}
    for i, e in ipairs(v) do s[i] = value_repr(e) end
    return "{" .. table.concat(s, ", ") .. "}"
  end
  return tostring(v)
end

-- PyTorch's message for a dropout probability
local function dropout_p(name, k, v)
  number(name, k, v)
  if not (v >= 0 and v <= 1) then
    fail("%s: dropout probability has to be between 0 and 1, but got %s", name, num_repr(v))
  end
  return v
end
local function margin_p(name, k, v)
  if v ~= 1 and v ~= 2 then
    fail("%s: only p == 1 and p == 2 supported, got %s", name,
      type(v) == "number" and num_repr(v) or type_of(v))
  end
  return math.tointeger(v)
end
local function natural(name, k, v)
  if math.type(v) ~= "integer" or v < 0 then
    fail("%s: %s must be a non-negative integer, got %s", name, k,
      type(v) == "number" and num_repr(v) or type_of(v))
  end
  return v
end

local REQUIRED = H.REQUIRED -- the marker parse knows

local function settings_repr(keys)
  return function(self)
    local parts = {}
    for _, k in ipairs(keys) do
      local v = self[k]
      if k == "inplace" then
        if v then parts[#parts + 1] = "inplace=true" end
      elseif v ~= nil and not pt.is_tensor(v) then
        parts[#parts + 1] = k .. "=" .. value_repr(v)
      end
    end
    return table.concat(parts, ", ")
  end
end

-- def = {cls =, fname =, args = specs (the class's), fargs = specs (the function's; default
-- args), n_in = 1 | 2, fn = function(inputs..., settings, name), check = function(name,
-- inputs...) -> inputs, repr = {keys shown}, buffers = {keys kept as buffers}, doc =, fdoc =}
-- Makes nn[cls] (settings as fields: m.p) and nn.functional[fname] (also nn[fname]).
local function define(def)
  local n_in = def.n_in or 1
  local cls_name, fname = def.cls, def.fname
  local cls = Module:extend(cls_name)
  nn[cls_name] = cls
  local buffers = {}
  for _, k in ipairs(def.buffers or {}) do buffers[k] = true end
  function cls:__init(...)
    local s = parse(cls_name, def.args, ...)
    for _, spec in ipairs(def.args) do
      local k = spec[1]
      -- a tensor setting (a class weight) is a buffer, as PyTorch's register_buffer
      if buffers[k] then self:register_buffer(k, s[k]) else self[k] = s[k] end
    end
  end
  local fwd = cls_name .. ":forward"
  if n_in == 1 then
    function cls:forward(x, ...)
      if select("#", ...) > 0 then fail("%s: expected 1 input, got %d", fwd, 1 + select("#", ...)) end
      return def.fn(def.check(fwd, x), self, fwd)
    end
  else
    function cls:forward(a, b, ...)
      if select("#", ...) > 0 then fail("%s: expected 2 inputs, got %d", fwd, 2 + select("#", ...)) end
      a, b = def.check(fwd, a, b)
      return def.fn(a, b, self, fwd)
    end
  end
  cls.extra_repr = settings_repr(def.repr or {})
  doc(cls, def.doc)
  local fargs = def.fargs or def.args
  local f
  if n_in == 1 then
    f = function(x, ...) return def.fn(def.check(fname, x), parse(fname, fargs, ...), fname) end
  else
    f = function(a, b, ...)
      a, b = def.check(fname, a, b)
      return def.fn(a, b, parse(fname, fargs, ...), fname)
    end
  end
  F[fname] = f
  if rawget(nn, fname) == nil then nn[fname] = f end
  doc(f, def.fdoc)
  return cls
end

-- ------------------------------------------------------------------ margin losses

-- the integer values of target (any numeric dtype, as cross_entropy takes them), checked to lie in
-- lo..C; returns them as an int64 tensor of target's shape
local function class_indices(name, target, lo, C, note)
  if target:dtype() == "bool" then fail("%s: target must hold class indices, got dtype bool", name) end
  local v = target:detach()
  if v:dtype() == "float32" or v:dtype() == "float64" then
    local bad = v:ne(v:floor())
    if bad:any():item() then
      fail("%s: target %s is not a class index", name, num_repr(v:masked_select(bad):_get_flat(1)))
    end
  end
  v = v:to("int64")
  local out = v:lt(lo):logical_or(v:gt(C))
  if out:any():item() then
    fail("%s: target %d out of range for %d classes%s", name, v:masked_select(out):_get_flat(1), C, note)
  end
  return v
end

-- input {N,C}, {C} or {} (one class) as {N,C} rows, with N and C
local function margin_rows(name, x)
  local nd = x:dim()
  if nd > 2 then fail("%s: input must be {N,C} or {C}, got shape %s", name, shape_str(x)) end
  local C = nd == 0 and 1 or x:size(nd)
  if C == 0 then
    fail("%s: input must have at least one class (a non-empty last dim), got shape %s", name, shape_str(x))
  end
  local N = nd == 2 and x:size(1) or 1
  return x:reshape(N, C), N, C
end

local function check_scores_target(name, x, y)
  check_input(name, x)
  if not pt.is_tensor(y) then fail("%s: target must be a tensor, got %s", name, type_of(y)) end
  return x, y
end

-- sum over i ~= y of max(0, margin - x[y] + x[i])^p / C, times weight[y]
local function multi_margin(x, y, s, name)
  -- a module's settings are fields that may have changed since the constructor checked them
  margin_p(name, "p", s.p)
  number(name, "margin", s.margin)
  reduction_arg(name, "reduction", s.reduction)
  local rows, N, C = margin_rows(name, x)
  if not (y:dim() <= 1 and y:numel() == N) then
    fail("%s: target shape %s does not match input shape %s (expected %s)", name, shape_str(y),
      shape_str(x), x:dim() == 2 and "one class index per row" or "a single class index")
  end
  local idx = class_indices(name, y, 1, C, " (class indices are 1-based)"):reshape(N, 1)
  local w = s.weight
  if w ~= nil then
    if w:dim() ~= 1 or w:size(1) ~= C then
      fail("%s: weight must have shape {%d} (one per class), got %s", name, C, shape_str(w))
    end
    if w:dtype() ~= x:dtype() then w = w:to(x:dtype()) end
  end
  local z = nn.relu(rows - rows:gather(2, idx) + s.margin)
  if s.p == 2 then z = z * z end
  -- the target's own term is dropped (its margin term is constant: no gradient lost)
  local others = pt.ones(N, C, {dtype = x:dtype()}):scatter(2, idx, 0.0)
  local l = (z * others):sum(2) / C
  if w ~= nil then l = l * w:index_select(1, idx:reshape(N)) end
  return reduce(l:reshape(y:size()), s.reduction)
end

local MM_ARGS = {{"p", margin_p, 1}, {"margin", number, 1.0}, {"weight", tensor_arg, nil},
  {"reduction", reduction_arg, "mean"}}
define {
  cls = "MultiMarginLoss", fname = "multi_margin_loss", n_in = 2,
  args = MM_ARGS, buffers = {"weight"}, repr = {"p", "margin", "reduction"},
  check = check_scores_target,
  fn = multi_margin,
  doc = [==[nn.MultiMarginLoss([p=1[, margin=1.0[, weight=nil[, reduction="mean"]]]]): forward(scores, target) -> multi-class hinge loss.
  scores {N,C} (or {C}), target {N} (or {} / {1}) of 1-based class indices (any numeric dtype
  holding integers, as cross_entropy's). Per sample: sum over classes i ~= y of
  max(0, margin - x[y] + x[i])^p / C, times weight[y] when weight {C} (a buffer) is given;
  p is 1 or 2. reduction "mean" (over samples), "sum" or "none". Also as options:
  nn.MultiMarginLoss({p=, margin=, weight=, reduction=}).]==],
  fdoc = "F.multi_margin_loss(input, target[, p=1[, margin=1.0[, weight=nil[, reduction=\"mean\"]]]]) (also as options);\n"
    .. "  see help(nn.MultiMarginLoss).",
}

-- sum over the listed targets j and the classes i not listed of max(0, 1 - (x[j] - x[i])) / C
local function multilabel_margin(x, y, s, name)
  reduction_arg(name, "reduction", s.reduction)
  local rows, N, C = margin_rows(name, x)
  if shape_str(y) ~= shape_str(x) then
    fail("%s: target shape %s does not match input shape %s (expected the input's shape: class indices, "
      .. "each sample's list ended by 0)", name, shape_str(y), shape_str(x))
  end
  local t = class_indices(name, y, 0, C, " (class indices are 1-based; 0 ends a sample's list)"):reshape(N, C)
  -- the entries before each row's first 0
  local listed = t:ne(0):to("int64"):cumprod(2)
  local L = N > 0 and listed:sum(2):max():item() or 0
  local l
  if L == 0 then
    l = (rows * 0):sum(2)
  else
    listed = listed:narrow(2, 1, L)
    local tl = t:narrow(2, 1, L)
    local safe = pt.where(listed:eq(1), tl, 1) -- 1 stands in for the unlisted
    -- how often each class is listed (a class listed twice counts twice, as PyTorch's loop)
    local counts = pt.zeros(N, C + 1, {dtype = x:dtype()})
      :scatter_add(2, pt.where(listed:eq(1), tl, C + 1), pt.ones(N, L, {dtype = x:dtype()}))
      :narrow(2, 1, C)
    local others = counts:eq(0):to(x:dtype()):reshape(N, 1, C)
    local xt = rows:gather(2, safe):reshape(N, L, 1)
    local z = nn.relu(rows:reshape(N, 1, C) - xt + 1) * others * listed:to(x:dtype()):reshape(N, L, 1)
    l = z:sum(3):sum(2)
  end
  l = l / C
  if x:dim() < 2 then l = l:reshape({}) end
  return reduce(l, s.reduction)
end

define {
  cls = "MultiLabelMarginLoss", fname = "multilabel_margin_loss", n_in = 2,
  args = {{"reduction", reduction_arg, "mean"}}, repr = {"reduction"},
  check = check_scores_target,
  fn = multilabel_margin,
  doc = [==[nn.MultiLabelMarginLoss([reduction="mean"]): forward(scores, target) -> multi-label hinge loss.
  scores {N,C} (or {C}); target of the same shape holding each sample's 1-based target classes
  first, ended by the first 0 (PyTorch's -1: indices are shifted by one, so its -1 padding is 0
  here; the entries after it are ignored but must be in 0..C). Per sample: sum over the listed
  classes j and the classes i not listed of max(0, 1 - (x[j] - x[i])) / C (a class listed twice
  counts twice, as PyTorch). reduction "mean" (over samples), "sum" or "none". Also
  nn.MultiLabelMarginLoss({reduction=}).]==],
  fdoc = "F.multilabel_margin_loss(input, target[, reduction=\"mean\"]) (also {reduction=}); see help(nn.MultiLabelMarginLoss).",
}

-- ------------------------------------------------------------------ Dropout1d, Dropout3d

-- ATen's feature dropout: one draw per {N,C} plane, kept planes scaled by 1/(1-p); the input
-- itself in evaluation mode or with p = 0, as PyTorch returns it
local function feature_dropout(x, s, name, batched)
  local p = dropout_p(name, "p", s.p)
  if p == 0 or not s.training or x:numel() == 0 then return x end
  local grad = x.requires_grad and pt.is_grad_enabled()
  if s.inplace and grad and x.is_leaf then
    fail("%s: inplace=true on a leaf tensor that requires grad (its gradient would be lost; PyTorch refuses it too)", name)
  end
  -- in place under autograd: y from a copy (x's old values stay for the backward), then copied
  local src = (s.inplace and grad) and x:clone() or x
  local y
  if p == 1 then
    y = src * 0
  else
    local shape = x:size()
    for d = batched and 3 or 2, #shape do shape[d] = 1 end
    y = src * pt.empty(shape, {dtype = x:dtype()}):bernoulli_(1 - p):div_(1 - p)
  end
  if s.inplace then
    x:copy_(y)
    return x
  end
  return y
end

for _, kind in ipairs({{"Dropout1d", "dropout1d", 2, "{C,L}", "{N,C,L}"},
                       {"Dropout3d", "dropout3d", 4, "{C,D,H,W}", "{N,C,D,H,W}"}}) do
  local cls, fname, rank, unbatched, batched = kind[1], kind[2], kind[3], kind[4], kind[5]
  define {
    cls = cls, fname = fname,
    args = {{"p", dropout_p, 0.5}, {"inplace", boolean, false}}, repr = {"p", "inplace"},
    fargs = {{"p", dropout_p, 0.5}, {"training", boolean, true}, {"inplace", boolean, false}},
    check = check_input,
    fn = function(x, s, name)
      local nd = x:dim()
      if nd ~= rank and nd ~= rank + 1 then
        fail("%s: expected a %d-D %s or %d-D %s input, got shape %s", name, rank, unbatched, rank + 1, batched,
          shape_str(x))
      end
      return feature_dropout(x, s, name, nd == rank + 1)
    end,
    doc = string.format([==[nn.%s([p=0.5[, inplace=false]]): channel dropout for %s or unbatched %s inputs.
  In training mode each channel (a whole {N,C} plane) is zeroed with probability p and the kept
  ones are scaled by 1/(1-p); identity in evaluation mode. Masks come from pt's generator
  (pt.manual_seed). inplace writes the result into the input. Also nn.%s({p=, inplace=}).%s]==],
      cls, batched, unbatched, cls,
      rank == 4 and "\n  Other ranks are an error (PyTorch 1.13 warns that they are deprecated and treats them as unbatched)." or ""),
    fdoc = string.format("F.%s(x[, p=0.5[, training=true[, inplace=false]]]): see help(nn.%s); training defaults to true,\n"
      .. "  as PyTorch's.", fname, cls),
  }
end

-- ------------------------------------------------------------------ gumbel_softmax

function F.gumbel_softmax(logits, ...)
  local name = "gumbel_softmax"
  check_input(name, logits, "logits")
  local s = parse(name, {{"tau", number, 1}, {"hard", boolean, false}, {"eps", number, 1e-10},
    {"dim", dim_arg, -1}}, ...)
  if logits:dim() == 0 then fail("%s: logits must have at least one dimension, got a 0-dimensional tensor", name) end
  local d = norm_dim(name, s.dim, logits:dim())
  -- -log(Exp(1)) is Gumbel(0, 1), as PyTorch draws it
  local gumbels = pt.empty(logits:size(), {dtype = logits:dtype()}):exponential_():log():neg_()
  local y_soft = nn.softmax((logits + gumbels) / s.tau, d)
  if not s.hard then return y_soft end
  local _, index = y_soft:max(d, true)
  local y_hard = pt.zeros(logits:size(), {dtype = logits:dtype()}):scatter(d, index, 1.0)
  -- straight through: the one-hot values, the soft sample's gradient
  return y_hard - y_soft:detach() + y_soft
end
if rawget(nn, "gumbel_softmax") == nil then nn.gumbel_softmax = F.gumbel_softmax end
doc(F.gumbel_softmax, [==[F.gumbel_softmax(logits[, tau=1[, hard=false[, eps=1e-10[, dim=-1]]]]) -> a sample of the Gumbel-softmax distribution.
  softmax((logits + g) / tau) along dim, g drawn from Gumbel(0, 1) (-log of an Exp(1) draw, pt's
  generator: pt.manual_seed makes it repeatable). hard=true returns the one-hot of its argmax with
  the soft sample's gradient (straight-through: y_hard - y_soft:detach() + y_soft). eps is unused
  (deprecated in PyTorch, kept for its argument order). Also as options: {tau=, hard=, dim=}.]==])

-- ------------------------------------------------------------------ pdist

function F.pdist(x, ...)
  local name = "pdist"
  check_input(name, x)
  local s = parse(name, {{"p", nonneg, 2}}, ...)
  if x:dim() ~= 2 then fail("%s: expected a 2-D input {N,M}, got shape %s", name, shape_str(x)) end
  local n = x:size(1)
  if n < 2 then return x:reshape(-1):narrow(1, 1, 0) end -- no pairs (still on x's graph)
  local ij = pt.triu_indices(n, n, 1)
  local diff = x:index_select(1, ij[1]) - x:index_select(1, ij[2])
  return diff:norm(s.p, 2)
end
if rawget(nn, "pdist") == nil then nn.pdist = F.pdist end
doc(F.pdist, [==[F.pdist(x[, p=2]) -> the p-norm distances between the rows of x {N,M}, one per pair i < j.
  A {N*(N-1)/2} tensor in the order (1,2), (1,3), ..., (1,N), (2,3), ... (the upper triangle of
  pt.cdist(x, x), row by row). p >= 0 (0 counts the differing entries, math.huge is the largest
  difference). The gradient at a zero distance is 0, as PyTorch's.]==])

-- ------------------------------------------------------------------ UpsamplingNearest2d, UpsamplingBilinear2d

local function size_arg(name, k, v)
  if math.type(v) == "integer" and v >= 1 then return v end
  if type(v) == "table" and #v == 2 and math.type(v[1]) == "integer" and math.type(v[2]) == "integer"
     and v[1] >= 1 and v[2] >= 1 then
    return {v[1], v[2]}
  end
  fail("%s: %s must be a positive integer or a list of 2, got %s", name, k, value_repr(v))
end
local function factor_arg(name, k, v)
  local function ok(f) return type(f) == "number" and f > 0 and f < math.huge end
  if ok(v) then return v + 0.0 end -- PyTorch keeps float(scale_factor)
  if type(v) == "table" and #v == 2 and ok(v[1]) and ok(v[2]) then return {v[1] + 0.0, v[2] + 0.0} end
  fail("%s: %s must be a positive number or a list of 2, got %s", name, k, value_repr(v))
end
local UP_ARGS = {{"size", size_arg, nil}, {"scale_factor", factor_arg, nil}}

local function resize_opts(name, s, mode)
  if s.size == nil and s.scale_factor == nil then fail("%s: either size or scale_factor must be given", name) end
  if s.size ~= nil and s.scale_factor ~= nil then fail("%s: only one of size or scale_factor can be given", name) end
  return {size = s.size, scale_factor = s.scale_factor, mode = mode,
    align_corners = mode == "bilinear" and true or nil}
end

for _, kind in ipairs({{"UpsamplingNearest2d", "nearest", "upsample_nearest"},
                       {"UpsamplingBilinear2d", "bilinear", "upsample_bilinear"}}) do
  local cls_name, mode, fname = kind[1], kind[2], kind[3]
  local cls = Module:extend(cls_name)
  nn[cls_name] = cls
  function cls:__init(...)
    local s = parse(cls_name, UP_ARGS, ...)
    resize_opts(cls_name, s, mode)
    self.size, self.scale_factor, self.mode = s.size, s.scale_factor, mode
  end
  function cls:forward(x, ...)
    local fwd = cls_name .. ":forward"
    if select("#", ...) > 0 then fail("%s: expected 1 input, got %d", fwd, 1 + select("#", ...)) end
    if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", fwd, type_of(x)) end
    return F.interpolate(x, resize_opts(fwd, self, mode))
  end
  function cls:extra_repr()
    local info = self.scale_factor ~= nil and "scale_factor=" .. value_repr(self.scale_factor)
      or "size=" .. value_repr(self.size)
    return info .. ", mode=" .. mode
  end
  local corners = mode == "bilinear" and " with align_corners=true (the corner pixels map onto each other)" or ""
  doc(cls, string.format([==[nn.%s([size=nil[, scale_factor=nil]]): %s upsampling%s.
  F.interpolate(x, {size=, scale_factor=, mode="%s"%s}) of an {N,C,H,W} input: exactly one of
  size (an integer or {H,W}) and scale_factor (a number or {sh,sw}; the output is floor(size *
  factor)). Also nn.%s({size=, scale_factor=}).]==], cls_name, mode, corners, mode,
    mode == "bilinear" and ", align_corners=true" or "", cls_name))
  local f = function(x, ...)
    if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", fname, type_of(x)) end
    return F.interpolate(x, resize_opts(fname, parse(fname, UP_ARGS, ...), mode))
  end
  F[fname] = f
  if rawget(nn, fname) == nil then nn[fname] = f end
  doc(f, string.format("F.%s(x[, size=nil[, scale_factor=nil]]) -> nn.%s's result (PyTorch's deprecated form of\n"
    .. "  F.interpolate with mode=\"%s\"%s); also {size=, scale_factor=}.", fname, cls_name, mode,
    mode == "bilinear" and ", align_corners=true" or ""))
end

-- ------------------------------------------------------------------ Upsample
-- nn.Upsample is F.interpolate with its settings kept: size or scale_factor (a number or one entry per
-- spatial dim), any of interpolate's modes, align_corners and recompute_scale_factor. Unlike torch,
-- which only looks at them in forward, the settings that do not depend on the input are checked here.

local UPSAMPLE_MODES = {nearest = true, ["nearest-exact"] = true, linear = true, bilinear = true,
  bicubic = true, trilinear = true, area = true}
local function up_list(name, k, v, ok, what)
  if ok(v) then return v end
  if type(v) == "table" and #v >= 1 and #v <= 3 then
    local l = {}
    for i = 1, #v do
      if not ok(v[i]) then break end
      l[i] = v[i]
    end
    if #l == #v then return l end
  end
  fail("%s: %s must be %s or a list of 1 to 3 of them (one per spatial dim), got %s", name, k, what, value_repr(v))
end
local function up_size(name, k, v)
  return up_list(name, k, v, function(e) return math.type(e) == "integer" and e >= 1 end, "a positive integer")
end
local function up_factor(name, k, v)
  local l = up_list(name, k, v, function(e) return type(e) == "number" and e > 0 and e < math.huge end,
    "a positive number")
  -- torch keeps float(scale_factor)
  if type(l) == "number" then return l + 0.0 end
  for i = 1, #l do l[i] = l[i] + 0.0 end
  return l
end
local function up_mode(name, k, v)
  if type(v) ~= "string" or not UPSAMPLE_MODES[v] then
    fail("%s: %s must be nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area, got %s", name, k,
      value_repr(v))
  end
  return v
end
local UPSAMPLE_ARGS = {{"size", up_size, nil}, {"scale_factor", up_factor, nil}, {"mode", up_mode, "nearest"},
  {"align_corners", boolean, nil}, {"recompute_scale_factor", boolean, nil}}

local Upsample = Module:extend("Upsample")
nn.Upsample = Upsample
function Upsample:__init(...)
  local s = parse("Upsample", UPSAMPLE_ARGS, ...)
  resize_opts("Upsample", s, s.mode)
  if s.align_corners ~= nil and (s.mode == "nearest" or s.mode == "nearest-exact" or s.mode == "area") then
    fail("Upsample: align_corners can only be set with the interpolating modes linear, bilinear, bicubic and "
      .. "trilinear, not '%s'", s.mode)
  end
  if s.size ~= nil and s.recompute_scale_factor then
    fail("Upsample: recompute_scale_factor is not meaningful with an explicit size")
  end
  self.size, self.scale_factor, self.mode = s.size, s.scale_factor, s.mode
  self.align_corners, self.recompute_scale_factor = s.align_corners, s.recompute_scale_factor
end
function Upsample:forward(x, ...)
  if select("#", ...) > 0 then fail("Upsample:forward: expected 1 input, got %d", 1 + select("#", ...)) end
  if not pt.is_tensor(x) then fail("Upsample:forward: input must be a tensor, got %s", type_of(x)) end
  return F.interpolate(x, {size = self.size, scale_factor = self.scale_factor, mode = self.mode,
    align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor})
end
function Upsample:extra_repr()
  local info = self.scale_factor ~= nil and "scale_factor=" .. value_repr(self.scale_factor)
    or "size=" .. value_repr(self.size)
  return info .. ", mode=" .. self.mode
end
doc(Upsample, [==[nn.Upsample([size[, scale_factor[, mode="nearest"[, align_corners[, recompute_scale_factor]]]]])
  -> F.interpolate(x, {size=, scale_factor=, mode=, align_corners=, recompute_scale_factor=}) with these
  settings, for 3-D (N,C,L), 4-D (N,C,H,W) and 5-D (N,C,D,H,W) inputs. Exactly one of size (an integer or
  one per spatial dim) and scale_factor (a number or one per spatial dim; the output is floor(size *
  factor)). mode: nearest, nearest-exact, linear (3-D), bilinear (4-D), bicubic (4-D), trilinear (5-D)
  or area. Also nn.Upsample({scale_factor=2, mode="bilinear", align_corners=false}).]==])

-- ------------------------------------------------------------------ LazyLinear

-- nn.Linear whose in_features comes from the first input. Until then weight (and bias) are
-- empty placeholders of shape {0}; the first forward gives these same tensors their data (as
-- PyTorch's UninitializedParameter.materialize), draws them as Linear does and the module
-- becomes an nn.Linear.
local LazyLinear = nn.Linear:extend("LazyLinear")
nn.LazyLinear = LazyLinear
function LazyLinear:__init(...)
  local s = parse("LazyLinear", {{"out_features", natural, REQUIRED}, {"bias", boolean, true},
    {"dtype", dtype_arg, nil}}, ...)
  self.in_features, self.out_features = 0, s.out_features
  self._uninitialized = true
  self.weight = nn.Parameter(pt.empty(0, {dtype = s.dtype}))
  if s.bias then self.bias = nn.Parameter(pt.empty(0, {dtype = s.dtype})) end
end

function LazyLinear:has_uninitialized_params()
  return rawget(self, "_uninitialized") == true
end
doc(LazyLinear.has_uninitialized_params, "lazy:has_uninitialized_params() -> true until the first forward (or initialize_parameters) gave\n"
  .. "  weight and bias their shapes.")

function LazyLinear:reset_parameters()
  if not self:has_uninitialized_params() and self.in_features ~= 0 then nn.Linear.reset_parameters(self) end
end

function LazyLinear:initialize_parameters(x)
  if not self:has_uninitialized_params() then return end
  local name = "LazyLinear:initialize_parameters"
  if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", name, type_of(x)) end
  if x:dim() == 0 then
    fail("%s: input must have at least one dimension (its last is in_features), got a 0-dimensional tensor", name)
  end
  local n_in, n_out = x:size(x:dim()), self.out_features
  pt.no_grad(function()
    local w, b = self._parameters.weight, self._parameters.bias
    pt._nn_set_data_(w, pt.empty(n_out, n_in, {dtype = w:dtype()}))
    if b then pt._nn_set_data_(b, pt.empty(n_out, {dtype = b:dtype()})) end
  end)
  self.in_features = n_in
  self._uninitialized = nil
  self:reset_parameters()
  -- PyTorch's cls_to_become (a subclass of LazyLinear keeps its own class)
  if getmetatable(self) == LazyLinear then setmetatable(self, nn.Linear) end
end
doc(LazyLinear.initialize_parameters, "lazy:initialize_parameters(x): what the first forward does: in_features = x's last size, weight\n"
  .. "  {out,in} and bias {out} get their data (the same tensor objects) and are drawn as nn.Linear's, and the\n"
  .. "  module becomes an nn.Linear. Nothing once initialized.")

function LazyLinear:forward(x)
  if self:has_uninitialized_params() then
    if not pt.is_tensor(x) then fail("LazyLinear:forward: input must be a tensor, got %s", type_of(x)) end
    if x:dim() == 0 then
      fail("LazyLinear:forward: input must have at least one dimension (its last is in_features), got a "
        .. "0-dimensional tensor")
    end
    self:initialize_parameters(x)
  end
  return nn.Linear.forward(self, x)
end

doc(LazyLinear, [==[nn.LazyLinear(out_features[, bias=true[, dtype="float32"]]): an nn.Linear whose in_features is the last size of its first input.
  Until the first forward in_features is 0 and weight and bias are empty placeholders (shape {0});
  that forward gives these same tensors their shapes ({out,in}, {out}), draws them as nn.Linear's
  and turns the module into an nn.Linear. As PyTorch's documentation says: convert the model
  (m:double()) before that first "dry run", and build the optimizer and load a state_dict after it
  (load_state_dict sees the placeholders' shape {0} before). An optimizer built before holds the
  same tensors, so its steps do reach them once they have data (as PyTorch's SGD and Adam; every
  partrain optimizer makes its state at the first step); parameters() and num_parameters() count
  only the placeholders until then. Also
  nn.LazyLinear(out_features, {bias=, dtype=}).]==])

return nn
