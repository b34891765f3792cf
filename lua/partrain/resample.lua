-- partrain.resample: nn.functional.interpolate, affine_grid and grid_sample, written over the
-- core ops so that autograd runs through them; interpolate's separable modes compute their taps
-- here and run each dimension's pass in C (pt._taps_along, lib/ops_resample.c). nn loads it for its functional table; it is not
-- part of start-up. Errors go through tensor.lua's _fail, at the user's line.
local pt = require "partrain.core"
local T = require "partrain.tensor"
local fail, check = T._fail, T._check
local no_more, check_opts, check_int, is_float = check.no_more, check.opts, check.int, check.is_float
local nothing_after, check_tensor, shape_str = check.nothing_after, check.tensor, check.shape_str
local is_tensor, docs, concat = pt.is_tensor, pt._docs, table.concat

local M = {}

-- ------------------------------------------------------------------ interpolate (nn.functional)

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- float list of n entries -> tensor of dtype dt shaped to broadcast along dim d of an nd-D tensor
local function along(values, dt, d, nd, like)
  local shape = {}
  for k = 1, nd do shape[k] = 1 end
  shape[d] = #values
  local r = pt.tensor(values, {dtype = dt}):view(shape)
  if like:device() ~= "cpu" then r = r:to(like:device()) end
  return r
end

local function index_tensor(list, like)
  local r = pt.tensor(list, {dtype = "int64"})
  if like:device() ~= "cpu" then r = r:to(like:device()) end
  return r
end

-- sum over k of x:index_select(d, idx[:, k]) * w[:, k] for the K taps of m output positions along
-- dim d, given idx {m, K} (int64, 0-based positions) and w {m, K} (float64 weights). One C pass
-- (pt._taps_along) on the CPU, the products rounded to x's dtype and added in k order as the
-- composed ops would.
local function taps(x, d, idx, w)
  if x:device() == "cpu" then return pt._taps_along(x, d, idx, w) end
  local nd, dt, K = x:dim(), x:dtype(), idx:size(2)
  local shape = {}
  for k = 1, nd do shape[k] = 1 end
  shape[d] = idx:size(1)
  local r
  for k = 1, K do
    local term = x:index_select(d, (idx:select(2, k) + 1):to(x:device()))
      * w:select(2, k):to(dt):view(shape):to(x:device())
    r = r and r + term or term
  end
  return r
end

-- taps from Lua lists: fi[(i - 1) * K + k] the 0-based position and fw[(i - 1) * K + k] the weight
-- of tap k of output i
local function taps_lists(x, d, m, K, fi, fw)
  return taps(x, d, pt.tensor(fi, {dtype = "int64"}):view(m, K), pt.tensor(fw, {dtype = "float64"}):view(m, K))
end

-- torch's area_pixel_compute_source_index for output positions 0 .. out - 1, as a float64 tensor:
-- scale * i with align_corners, else scale * (i + 0.5) - 0.5, clamped at 0 unless cubic. For a
-- float32 input torch rounds the scale to float32 first (a downscale 5000 -> 37 with the float64
-- scale landed up to 4e-5 away from its values); the positions themselves are not rounded.
local function source_positions(out, scale, align_corners, cubic, dt)
  local pos = pt.arange(out, {dtype = "float64"})
  local sc = dt == "float32" and f32(scale) or scale
  if align_corners then return pos * sc end
  local src = (pos + 0.5) * sc - 0.5
  if not cubic then src = src:clamp(0) end
  return src
end

-- nearest along dim d: source floor(i * scale) (nearest-exact: floor((i + 0.5) * scale)) in float32
-- arithmetic, as torch's CPU kernel (with a scale_factor of 1.1 an output of the input's size is
-- not a copy there either)
local function nearest1(x, d, out, scale, exact)
  local n = x:size(d)
  -- tensor ops, not a Lua loop (4M positions: 2 s before, 0.14 s): the products i * scale and
  -- (i + 0.5) * scale of the float32 scale are exact in float64, then rounded once to float32
  -- as torch's float arithmetic gives them (for outputs below 2^23 positions); floor, clamp, 1-based
  local pos = pt.arange(out, {dtype = "float64"})
  if exact then pos = pos + 0.5 end
  local idx = (pos * f32(scale)):float():floor():clamp(0, n - 1):long() + 1
  if x:device() ~= "cpu" then idx = idx:to(x:device()) end
  return x:index_select(d, idx)
end

-- linear along dim d: out = x[i0] * (1 - w) + x[i1] * w (torch's area_pixel_compute_source_index);
-- a dim that keeps its size is copied, as torch's linear kernels do
local function linear1(x, d, out, scale, align_corners)
  local n = x:size(d)
  if out == n then return x end
  local src = source_positions(out, scale, align_corners, false, x:dtype())
  local a = src:floor()
  local b = (a + 1):clamp(nil, n - 1)
  local w1 = (src - a):clamp(0, 1)
  local w0 = 1 - w1
  return taps(x, d, pt.stack({a, b}, 2):long(), pt.stack({w0, w1}, 2))
end

-- Keys' cubic convolution with torch's A = -0.75: weights of the taps floor(src) - 1 .. + 2 for
-- the fraction t = src - floor(src) (get_cubic_upsample_coefficients); t may be a number or a tensor
local CUBIC_A = -0.75
local function cubic_near(t) return ((CUBIC_A + 2) * t - (CUBIC_A + 3)) * t * t + 1 end
local function cubic_far(t) return ((CUBIC_A * t - 5 * CUBIC_A) * t + 8 * CUBIC_A) * t - 4 * CUBIC_A end
local function cubic_weights(t) return {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)} end

-- bicubic along dim d: the source position is not clamped at 0 (unlike linear), the taps are
-- clamped to the border (torch's upsample_get_value_bounded)
local function cubic1(x, d, out, scale, align_corners)
  local n = x:size(d)
  local src = source_positions(out, scale, align_corners, true, x:dtype())
  local a = src:floor()
  local ws = cubic_weights(src - a)
  local idx = {}
  for k = 1, 4 do idx[k] = (a + (k - 2)):clamp(0, n - 1) end
  return taps(x, d, pt.stack(idx, 2):long(), pt.stack(ws, 2))
end

-- antialias (torch's _upsample_bilinear2d_aa / _upsample_bicubic2d_aa, PIL's resampling): the
-- filter (triangle, or Keys' cubic with A = -0.5 as PIL) is stretched by the scale when
-- downscaling, so that every input pixel contributes; each output's weights are normalised to sum
-- to 1. Outputs have different numbers of taps: the short ones are padded with zero weights.
local function aa_linear(v) v = math.abs(v) return v < 1 and 1 - v or 0 end
local AA_CUBIC_A = -0.5
local function aa_cubic(v)
  v = math.abs(v)
  if v < 1 then return ((AA_CUBIC_A + 2) * v - (AA_CUBIC_A + 3)) * v * v + 1 end
  if v < 2 then return ((AA_CUBIC_A * v - 5 * AA_CUBIC_A) * v + 8 * AA_CUBIC_A) * v - 4 * AA_CUBIC_A end
  return 0
end
local function antialias1(x, d, out, scale, cubic)
  local n = x:size(d)
  local filter, half = cubic and aa_cubic or aa_linear, cubic and 2 or 1
  local support = scale >= 1 and half * scale or half
  local invscale = scale >= 1 and 1 / scale or 1
  local starts, weights, K = {}, {}, 0
  for i = 0, out - 1 do
    local center = scale * (i + 0.5)
    local xmin = math.max(math.floor(center - support + 0.5), 0)
    local xsize = math.min(math.floor(center + support + 0.5), n) - xmin
    local ws, total = {}, 0
    for j = 0, xsize - 1 do
      ws[j + 1] = filter((j + xmin - center + 0.5) * invscale)
      total = total + ws[j + 1]
    end
    if total ~= 0 then for j = 1, xsize do ws[j] = ws[j] / total end end
    starts[i + 1], weights[i + 1] = xmin, ws
    if xsize > K then K = xsize end
  end
  local fi, fw = {}, {}
  for i = 1, out do
    local ws = weights[i]
    for k = 1, K do
      fi[(i - 1) * K + k] = k <= #ws and starts[i] + k - 1 or starts[i]
      fw[(i - 1) * K + k] = ws[k] or 0
    end
  end
  return taps_lists(x, d, out, K, fi, fw)
end

-- area: adaptive average pooling to outs (torch's adaptive_avg_pool1d/2d/3d windows
-- floor(i * n / out) .. ceil((i + 1) * n / out)), through pt.adaptive_avg_pool2d; averaging is
-- separable, so a 5-D input is pooled over (H, W), then over D
local function area(x, outs)
  local s = x:size()
  for k = 1, #outs do
    if outs[k] == 0 then -- torch's empty result, still a function of x (its gradient is zeros)
      for j = 1, #outs do s[j + 2] = outs[j] end
      return x:reshape(-1):narrow(1, 1, 0):reshape(s)
    end
  end
  if #s == 3 then
    return pt.adaptive_avg_pool2d(x:unsqueeze(3), {1, outs[1]}):squeeze(3)
  elseif #s == 4 then
    return pt.adaptive_avg_pool2d(x, {outs[1], outs[2]})
  end
  local n, c, dd = s[1], s[2], s[3]
  local y = pt.adaptive_avg_pool2d(x:reshape(n, c * dd, s[4], s[5]), {outs[2], outs[3]})
  local hw = outs[2] * outs[3]
  y = pt.adaptive_avg_pool2d(y:reshape(n, c, dd, hw), {outs[1], hw})
  return y:reshape(n, c, outs[1], outs[2], outs[3])
end

local interp_opts = {"size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias"}
-- the input rank a mode needs (false: 3-D, 4-D or 5-D)
local interp_modes = {nearest = false, ["nearest-exact"] = false, area = false, linear = 3, bilinear = 4,
                      bicubic = 4, trilinear = 5}
local interp_layout = {[3] = "(N, C, L)", [4] = "(N, C, H, W)", [5] = "(N, C, D, H, W)"}

-- an argument as an error message shows it: 2.5, '2' (a string), tensor, table
local function arg_repr(v)
  if type(v) == "number" then return v ~= v and "nan" or tostring(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  return is_tensor(v) and "tensor" or type(v)
end

local function shape_list_str(list)
  local parts = {}
  for i = 1, #list do parts[i] = string.format("%d", list[i]) end
  return "{" .. concat(parts, ",") .. "}"
end

-- refuses an output that cannot be allocated before any per-position work (the taps are Lua
-- lists of one entry per output position: an absurd size would exhaust the memory there instead
-- of failing cleanly), with pt.empty's reason ("tensor too large", "out of memory ...")
local function check_alloc(fname, what, shape, dt)
  local ok, err = pcall(pt.empty, shape, {dtype = dt})
  if not ok then
    fail("%s: the %s %s cannot be allocated: %s", fname, what, shape_list_str(shape),
         (tostring(err):gsub("^[^\n]-:%d+: ", "")))
  end
end

function M.interpolate(t, opts, ...)
  local fname = "interpolate"
  check_tensor(fname, t); no_more(fname, 2, ...)
  if type(opts) ~= "table" or is_tensor(opts) then
    fail("%s: options expected ({size= or scale_factor=, mode=, align_corners=}), got %s", fname,
         is_tensor(opts) and "tensor" or type(opts))
  end
  check_opts(fname, opts, interp_opts)
  local mode = opts.mode == nil and "nearest" or opts.mode
  if type(mode) ~= "string" or interp_modes[mode] == nil then
    fail("%s: mode must be nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area, got %s", fname,
         type(mode) == "string" and "'" .. mode .. "'" or type(mode))
  end
  local nd = t:dim()
  if nd < 3 or nd > 5 then
    fail("%s: expects a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got %d-D %s", fname, nd,
         shape_str(t))
  end
  local need = interp_modes[mode]
  if need and nd ~= need then
    fail("%s: mode '%s' needs a %d-D input %s, got %d-D", fname, mode, need, interp_layout[need], nd)
  end
  local nearest = mode == "nearest" or mode == "nearest-exact"
  local dt = t:dtype()
  if nearest and not (is_float(t) or dt == "uint8") then
    fail("%s: mode '%s' takes float32, float64 or uint8 inputs, got %s", fname, mode, dt)
  elseif not nearest and not is_float(t) then
    fail("%s: mode '%s' takes float32 or float64 inputs, got %s", fname, mode, dt)
  end
  local ac = opts.align_corners
  if ac ~= nil then
    if type(ac) ~= "boolean" then fail("%s: align_corners must be a boolean, got %s", fname, type(ac)) end
    if nearest or mode == "area" then
      fail("%s: align_corners can only be set with the interpolating modes linear, bilinear, bicubic and "
           .. "trilinear, not '%s'", fname, mode)
    end
  end
  local aa = opts.antialias
  if aa ~= nil then
    if type(aa) ~= "boolean" then fail("%s: antialias must be a boolean, got %s", fname, type(aa)) end
    if aa and mode ~= "bilinear" and mode ~= "bicubic" then
      fail("%s: antialias is only supported for the bilinear and bicubic modes, not '%s'", fname, mode)
    end
  end
  local recompute = opts.recompute_scale_factor
  if recompute ~= nil and type(recompute) ~= "boolean" then
    fail("%s: recompute_scale_factor must be a boolean, got %s", fname, type(recompute))
  end
  local size, sf = opts.size, opts.scale_factor
  if size == nil and sf == nil then fail("%s: either size or scale_factor must be given", fname) end
  if size ~= nil and sf ~= nil then fail("%s: only one of size or scale_factor can be given", fname) end
  if size ~= nil and recompute then
    fail("%s: recompute_scale_factor is not meaningful with an explicit size", fname)
  end
  -- area always works from the output size (torch recomputes the scale for it)
  if mode == "area" then recompute = true end
  local ns = nd - 2
  local function per_dim(v, what)
    local list = type(v) == "table" and v or {}
    if type(v) ~= "table" then for k = 1, ns do list[k] = v end end
    if #list ~= ns then
      fail("%s: %s must have %d entr%s for a %d-D input (one per spatial dimension), got %d", fname, what, ns,
           ns == 1 and "y" or "ies", nd, #list)
    end
    return list
  end
  local outs, scales = {}, {}
  if size ~= nil then
    local l = per_dim(size, "size")
    for k = 1, ns do
      if is_tensor(l[k]) then fail("%s: size must be an integer, got tensor", fname) end
      outs[k] = check_int(fname, "size", l[k])
      -- area (adaptive average pooling) gives an empty output for a size of 0, as torch's
      if outs[k] < (mode == "area" and 0 or 1) then
        fail("%s: output sizes must be %s, got %d", fname, mode == "area" and "non-negative" or "positive", outs[k])
      end
    end
  else
    local l = per_dim(sf, "scale_factor")
    for k = 1, ns do
      local f = l[k]
      if type(f) ~= "number" or f ~= f or f <= 0 or f == math.huge then
        fail("%s: scale_factor must be a positive number, got %s", fname, arg_repr(f))
      end
      outs[k] = math.floor(t:size(k + 2) * f)
      if math.type(outs[k]) ~= "integer" then -- beyond int64: floor gives a float
        fail("%s: scale_factor %s gives an output size too large for spatial dimension %d of size %d", fname,
             tostring(f), k, t:size(k + 2))
      end
      if outs[k] < 1 and mode ~= "area" then
        fail("%s: scale_factor %s gives an empty output for spatial dimension %d of size %d", fname, tostring(f), k,
             t:size(k + 2))
      end
      if not recompute then scales[k] = 1 / f end
    end
  end
  for k = 1, ns do
    if t:size(k + 2) == 0 then
      fail("%s: spatial dimension %d of the input %s is empty", fname, k, shape_str(t))
    end
  end
  -- torch's upsample kernels refuse an input with no channels (an empty batch is fine), and so does
  -- adaptive_avg_pool3d (area on a 5-D input; the 1-D and 2-D pools take one)
  if (mode ~= "area" or nd == 5) and t:size(2) == 0 then
    fail("%s: mode '%s' needs at least one channel (only the batch dimension may be empty), got %s", fname, mode,
         shape_str(t))
  end
  local out_shape = t:size()
  for k = 1, ns do out_shape[k + 2] = outs[k] end
  check_alloc(fname, "output", out_shape, dt)
  local x = t
  if mode == "area" then
    x = area(t, outs)
  else
    for k = 1, ns do
      local d, n, out = k + 2, t:size(k + 2), outs[k]
      if nearest then
        x = nearest1(x, d, out, scales[k] or n / out, mode == "nearest-exact")
      else
        local scale
        if ac then scale = out > 1 and (n - 1) / (out - 1) or 0 else scale = scales[k] or n / out end
        if aa then
          x = antialias1(x, d, out, scale, mode == "bicubic")
        elseif mode == "bicubic" then
          x = cubic1(x, d, out, scale, ac)
        else
          x = linear1(x, d, out, scale, ac)
        end
      end
    end
  end
  if x == t then x = t:clone() end
  return x
end
docs[M.interpolate] = "nn.functional.interpolate(t, {size= | scale_factor=, mode=\"nearest\", align_corners=,\n"
  .. "  recompute_scale_factor=, antialias=false}) -> t resized over its spatial dims as torch's F.interpolate. Modes:\n"
  .. "  nearest and nearest-exact (source floor(i / scale), floor((i + 0.5) / scale)) and area (adaptive\n"
  .. "  average pooling) for 3-D (N, C, L), 4-D (N, C, H, W) and 5-D (N, C, D, H, W) inputs; linear (3-D),\n"
  .. "  bilinear (4-D), bicubic (4-D; Keys' cubic with A = -0.75, taps clamped at the border) and\n"
  .. "  trilinear (5-D). size and scale_factor are a number or one entry per spatial dim; the output size\n"
  .. "  is floor(size * scale_factor), and the source positions use 1/scale_factor as torch does (unless\n"
  .. "  recompute_scale_factor; area always uses the sizes). align_corners (linear, bilinear, bicubic,\n"
  .. "  trilinear only) maps the corner pixels onto each other. antialias (bilinear, bicubic) stretches the\n"
  .. "  filter when downscaling so every input pixel counts, as torch's and PIL's (bicubic then uses A = -0.5).\n"
  .. "  Float inputs (the nearest modes take uint8\n"
  .. "  too); gradients flow back."

-- ------------------------------------------------------------------ affine_grid, grid_sample (nn.functional)

local function size_str(list)
  local parts = {}
  for i = 1, #list do parts[i] = tostring(list[i]) end
  return "{" .. concat(parts, ",") .. "}"
end

-- align_corners from a boolean or an options table {align_corners=}
local function ac_option(fname, opts)
  if type(opts) == "table" and not is_tensor(opts) then
    check_opts(fname, opts, {"align_corners"})
    opts = opts.align_corners
  end
  if opts ~= nil and type(opts) ~= "boolean" then
    fail("%s: align_corners must be a boolean, got %s", fname, is_tensor(opts) and "tensor" or type(opts))
  end
  return opts or false
end

-- n evenly spaced values over [-1, 1] (align_corners) or their pixel centres (n - 1) / n times
-- that; a single point is 0 (torch's linspace_from_neg_one)
local function grid_line(n, align_corners, dt, like)
  local v = {}
  for i = 0, n - 1 do
    if n == 1 then v[1] = 0
    elseif align_corners then v[i + 1] = -1 + 2 * i / (n - 1)
    else v[i + 1] = (2 * i + 1 - n) / n end
  end
  local r = pt.tensor(v, {dtype = dt})
  if like:device() ~= "cpu" then r = r:to(like:device()) end
  return r
end

function M.affine_grid(theta, size, opts, ...)
  local fname = "affine_grid"
  check_tensor(fname, theta); no_more(fname, 3, ...)
  local ac = ac_option(fname, opts)
  if not is_float(theta) then fail("%s: theta must be a float tensor, got %s", fname, theta:dtype()) end
  if type(size) ~= "table" or is_tensor(size) then
    fail("%s: size must be a list of integers ({N, C, H, W} or {N, C, D, H, W}), got %s", fname,
         is_tensor(size) and "tensor" or type(size))
  end
  local s = {}
  for i = 1, #size do s[i] = check_int(fname, "a size", size[i]) end
  if #s ~= 4 and #s ~= 5 then
    fail("%s: size must have 4 entries (N, C, H, W) or 5 (N, C, D, H, W), got %d", fname, #s)
  end
  local ns = #s - 2
  local ts = theta:size()
  if #ts ~= 3 or ts[2] ~= ns or ts[3] ~= ns + 1 then
    fail("%s: theta must be N x %d x %d for the %d-D size %s, got %s", fname, ns, ns + 1, #s, size_str(s),
         shape_str(theta))
  end
  for i = 1, #s do
    if s[i] < 1 then fail("%s: size must be positive, got %s", fname, size_str(s)) end
  end
  if ts[1] ~= s[1] then
    fail("%s: theta has a batch of %d matrices but size %s asks for %d", fname, ts[1], size_str(s), s[1])
  end
  do -- the grid (N, spatial..., ns) must be allocatable before its lines are built
    local gshape = {s[1]}
    for k = 1, ns do gshape[k + 1] = s[k + 2] end
    gshape[ns + 2] = ns
    check_alloc(fname, "grid", gshape, theta:dtype())
  end
  -- base grid (1, P, ns + 1): x (the last dim) first, then y (then z), then 1; grid = base @ theta^T
  local dt = theta:dtype()
  local spatial = {}
  for k = 1, ns do spatial[k] = s[k + 2] end
  local comps = {}
  for k = 1, ns do
    local d = ns - k + 1 -- coordinate k runs along spatial dim d
    local shape = {}
    for j = 1, ns do shape[j] = 1 end
    shape[d] = spatial[d]
    comps[k] = grid_line(spatial[d], ac, dt, theta):view(shape):expand(spatial)
  end
  comps[ns + 1] = pt.ones(spatial, {dtype = dt})
  if theta:device() ~= "cpu" then comps[ns + 1] = comps[ns + 1]:to(theta:device()) end
  local p = 1
  for k = 1, ns do p = p * spatial[k] end
  local base = pt.stack(comps, ns + 1):reshape(1, p, ns + 1)
  local grid = pt.matmul(base, theta:transpose(2, 3))
  local out = {s[1]}
  for k = 1, ns do out[k + 1] = spatial[k] end
  out[ns + 2] = ns
  return grid:reshape(out)
end
docs[M.affine_grid] = "nn.functional.affine_grid(theta, size[, {align_corners=false}]) -> grid as torch's\n"
  .. "  F.affine_grid: for size {N, C, H, W} and theta N x 2 x 3 a grid (N, H, W, 2) of the points\n"
  .. "  theta * (x, y, 1), where x runs over the width and y over the height in [-1, 1] (align_corners:\n"
  .. "  the corner pixels' centres; otherwise their outer edges, so the points are the pixel centres);\n"
  .. "  for size {N, C, D, H, W} and theta N x 3 x 4 a grid (N, D, H, W, 3) of (x, y, z). The input of\n"
  .. "  grid_sample. Gradients flow back to theta."

local gs_opts = {"mode", "padding_mode", "align_corners"}
local gs_modes = {bilinear = true, nearest = true, bicubic = true}
local gs_pads = {zeros = true, border = true, reflection = true}

-- grid coordinates in [-1, 1] -> pixel positions 0 .. n - 1 (torch's grid_sampler_unnormalize)
local function gs_unnormalize(c, n, ac)
  if ac then return (c + 1) * ((n - 1) / 2) end
  return ((c + 1) * n - 1) / 2
end

-- clamped into [0, n - 1]; the borders themselves pass no gradient (torch's
-- clip_coordinates_set_grad counts them as out of bounds)
local function gs_clip(c, n)
  return pt.where(c:le(0), 0, pt.where(c:ge(n - 1), n - 1, c))
end

-- mirrored at the borders (pixel centres with align_corners, else the pixels' outer edges) until
-- it falls inside (torch's reflect_coordinates), then clipped
local function gs_reflect(c, n, ac)
  local lo2, hi2 = -1, 2 * n - 1
  if ac then lo2, hi2 = 0, 2 * (n - 1) end
  if lo2 == hi2 then return pt.zeros_like(c) end
  local lo, span = lo2 / 2, (hi2 - lo2) / 2
  local a = (c - lo):abs()
  local extra = a:fmod(span)
  local even = (a / span):floor():fmod(2):eq(0)
  return gs_clip(pt.where(even, extra + lo, span - extra + lo), n)
end

local function gs_pad(c, n, padding, ac)
  if padding == "border" then return gs_clip(c, n) end
  if padding == "reflection" then return gs_reflect(c, n, ac) end
  return c
end

-- the taps along one spatial dim: positions (float tensors, no gradient) -> {valid, index} where
-- index is 0-based and 0 at invalid taps (so that it can be gathered safely)
local function gs_tap(pos, n)
  local valid = pos:ge(0):logical_and(pos:le(n - 1))
  return valid, pt.where(valid, pos, 0):long()
end

function M.grid_sample(input, grid, mode, padding_mode, align_corners, ...)
  local fname = "grid_sample"
  check_tensor(fname, input)
  if not is_tensor(grid) then fail("%s: bad argument #2 (Tensor expected, got %s)", fname, type(grid)) end
  if type(mode) == "table" then
    nothing_after(fname, 3, padding_mode)
    nothing_after(fname, 4, align_corners, ...)
    check_opts(fname, mode, gs_opts)
    mode, padding_mode, align_corners = mode.mode, mode.padding_mode, mode.align_corners
  else
    no_more(fname, 5, ...)
  end
  if mode == nil then mode = "bilinear" end
  if padding_mode == nil then padding_mode = "zeros" end
  if type(mode) ~= "string" or not gs_modes[mode] then
    fail("%s: mode must be bilinear, nearest or bicubic, got %s", fname,
         type(mode) == "string" and "'" .. mode .. "'" or type(mode))
  end
  if type(padding_mode) ~= "string" or not gs_pads[padding_mode] then
    fail("%s: padding_mode must be zeros, border or reflection, got %s", fname,
         type(padding_mode) == "string" and "'" .. padding_mode .. "'" or type(padding_mode))
  end
  if align_corners ~= nil and type(align_corners) ~= "boolean" then
    fail("%s: align_corners must be a boolean, got %s", fname, type(align_corners))
  end
  local ac = align_corners or false
  local nd = input:dim()
  if nd ~= 4 and nd ~= 5 then
    fail("%s: expects a 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got %d-D %s", fname, nd, shape_str(input))
  end
  local ns = nd - 2
  local gs = grid:size()
  if #gs ~= nd or gs[1] ~= input:size(1) or gs[nd] ~= ns then
    fail("%s: grid must be (N, %s, %d) for the input %s, got %s", fname,
         ns == 2 and "H_out, W_out" or "D_out, H_out, W_out", ns, shape_str(input), shape_str(grid))
  end
  if mode == "bicubic" and nd ~= 4 then
    fail("%s: mode 'bicubic' needs a 4-D input (N, C, H, W), got %d-D", fname, nd)
  end
  if not is_float(input) then fail("%s: input must be a float tensor, got %s", fname, input:dtype()) end
  if grid:dtype() ~= input:dtype() then
    fail("%s: input and grid must have the same dtype, got %s and %s", fname, input:dtype(), grid:dtype())
  end
  local s = input:size()
  for k = 3, nd do
    if s[k] == 0 then fail("%s: spatial dimension %d of the input %s is empty", fname, k - 2, shape_str(input)) end
  end
  local n, c = s[1], s[2]
  local p, flat_in = 1, 1
  for k = 2, nd - 1 do p = p * gs[k] end
  for k = 3, nd do flat_in = flat_in * s[k] end
  local x = input:reshape(n, c, flat_in)
  local g = grid:reshape(n, p, ns)
  -- per spatial dim k (input order): size, stride in the flattened input, pixel position (N, P)
  local size, stride, pos = {}, {}, {}
  local st = 1
  for k = ns, 1, -1 do
    size[k], stride[k] = s[k + 2], st
    st = st * s[k + 2]
    pos[k] = gs_unnormalize(g:select(3, ns - k + 1), size[k], ac) -- grid holds (x, y[, z]): last dim first
  end
  -- the taps, each a flat index into x (N, P) and a weight (N, P), 0 where it falls outside; all
  -- are gathered at once, so that the backward is one scatter-add into the input's gradient
  local lins, weights = {}, {}
  local function tap(index, valid, weight)
    local lin, ok
    for k = 1, ns do
      local term = stride[k] == 1 and index[k] or index[k] * stride[k]
      lin = lin and lin + term or term
      ok = ok and ok:logical_and(valid[k]) or valid[k]
    end
    lins[#lins + 1] = lin
    weights[#weights + 1] = weight and pt.where(ok, weight, 0) or ok:to(input:dtype())
  end
  if mode == "nearest" then
    local index, valid = {}, {}
    for k = 1, ns do
      local u = gs_pad(pos[k], size[k], padding_mode, ac):detach()
      local r = u:round() -- half to even, as torch's 4-D kernel; its 5-D kernel rounds half away from 0
      if ns == 3 then
        local tr = u:trunc()
        r = pt.where((u - tr):abs():eq(0.5), tr + u:sign(), r)
      end
      valid[k], index[k] = gs_tap(r, size[k])
    end
    tap(index, valid)
  elseif mode == "bilinear" then
    local lo, frac_lo, frac_hi = {}, {}, {}
    for k = 1, ns do
      local u = gs_pad(pos[k], size[k], padding_mode, ac)
      lo[k] = u:detach():floor()
      frac_lo[k], frac_hi[k] = (lo[k] + 1) - u, u - lo[k] -- weights of the lower and the upper tap
    end
    for corner = 0, (1 << ns) - 1 do
      local index, valid, weight = {}, {}, nil
      for k = 1, ns do
        local up = (corner >> (ns - k)) & 1 == 1
        valid[k], index[k] = gs_tap(up and lo[k] + 1 or lo[k], size[k])
        local wk = up and frac_hi[k] or frac_lo[k]
        weight = weight and weight * wk or wk
      end
      tap(index, valid, weight)
    end
  else -- bicubic: the 4 x 4 taps around the unpadded position, each tap padded on its own
    local taps, ws = {}, {}
    for k = 1, 2 do
      local lo = pos[k]:detach():floor()
      ws[k] = cubic_weights(pos[k] - lo)
      taps[k] = {}
      for j = 1, 4 do
        local v, i = gs_tap(gs_pad(lo + (j - 2), size[k], padding_mode, ac), size[k])
        taps[k][j] = {v, i}
      end
    end
    for a = 1, 4 do
      for b = 1, 4 do
        tap({taps[1][a][2], taps[2][b][2]}, {taps[1][a][1], taps[2][b][1]}, ws[1][a] * ws[2][b])
      end
    end
  end
  local nt = #lins
  local lin = nt == 1 and lins[1] or pt.cat(lins, 2)
  local w = nt == 1 and weights[1] or pt.cat(weights, 2)
  local out = x:gather(3, (lin + 1):unsqueeze(2):expand(n, c, nt * p)) * w:unsqueeze(2)
  if nt > 1 then out = out:view(n, c, nt, p):sum(3) end
  local shape = {n, c}
  for k = 2, nd - 1 do shape[k + 1] = gs[k] end
  return out:reshape(shape)
end
docs[M.grid_sample] = "nn.functional.grid_sample(input, grid[, {mode=\"bilinear\", padding_mode=\"zeros\",\n"
  .. "  align_corners=false}]) (or grid_sample(input, grid, mode, padding_mode, align_corners)) -> input\n"
  .. "  sampled at the points of grid as torch's F.grid_sample: input (N, C, H, W) and grid (N, H_out, W_out,\n"
  .. "  2) give (N, C, H_out, W_out); input (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3) give\n"
  .. "  (N, C, D_out, H_out, W_out). grid holds (x, y[, z]) in [-1, 1]: x runs over the width, -1 and 1 the\n"
  .. "  corner pixels' centres with align_corners, else their outer edges. mode bilinear (trilinear for\n"
  .. "  5-D), nearest (ties to even on 4-D inputs, away from 0 on 5-D, as torch's CPU kernels) or bicubic\n"
  .. "  (4-D; Keys' cubic, A = -0.75, each of the 4 x 4 taps padded). padding_mode for points outside:\n"
  .. "  zeros, border (the edge's value) or reflection (mirrored at the borders). Float inputs; gradients\n"
  .. "  flow back to input and to grid (zero for nearest; none through a clamped coordinate, as torch)."

return M
