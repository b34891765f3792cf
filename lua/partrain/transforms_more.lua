-- partrain.data.transforms, continued: torchvision's image transforms (crops, resize, pad,
-- rotations and affine maps, colour jitter, grayscale, blur, erasing, random_apply/choice) and
-- their functional forms in data.transforms.functional. Loaded by data.lua on the first name
-- data.transforms lacks (start-up and data's own users do not parse it).
--
-- Images are {C, H, W} or batches {N, C, H, W}; float (any range; the colour adjustments clamp to
-- [0, 1] as torchvision does) or uint8 ([0, 255]; ops that interpolate work in float32 and round
-- back). Random transforms draw from pt's generator, each image of a batch its own parameters;
-- inside a DataHandler that generator is seeded per batch from (seed, epoch, batch number), so
-- runs repeat and workers = n gives the batches of workers = 0.
local pt = require "partrain"
local fail = require("partrain.tensor")._fail -- an error at the user's line

local floor, sqrt, exp, log, rad = math.floor, math.sqrt, math.exp, math.log, math.rad
local cos, sin, tan = math.cos, math.sin, math.tan

local M = {} -- the transforms (copied into data.transforms)
local Fn = {} -- data.transforms.functional

-- ------------------------------------------------------------------ helpers

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

-- Python's round(): halves to even (torchvision's int(round(...)) everywhere)
local function round_even(v)
  local f = floor(v)
  local d = v - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then return f + 1 end
  return f
end

local function is_int(v) return math.type(v) == "integer" end
local function is_num(v) return type(v) == "number" and v == v end

-- x as a batch {N, C, H, W}, and whether it was one image {C, H, W}
local function as_batch(fname, x)
  if not pt.is_tensor(x) then
    fail("%s: expected an image tensor {C,H,W} or a batch {N,C,H,W}, got %s", fname, type(x))
  end
  local d = x:dim()
  if d == 4 then return x, false end
  if d == 3 then return x:unsqueeze(1), true end
  fail("%s: expected an image {C,H,W} or a batch {N,C,H,W}, got %d-D (shape %s)", fname, d, shape_str(x))
end

local function back(x, single) return single and x:squeeze(1) or x end

-- float32 work copy of an integer image (torchvision's _cast_squeeze_in) and the way back
local function to_work(x, dt)
  if x:is_floating_point() then return x end
  return x:to(dt or "float32")
end
local function from_work(y, dtype)
  if y:dtype() == dtype then return y end
  if dtype == "uint8" then y = y:clamp(0, 255) end
  return y:round():to(dtype)
end

-- the largest value of an image's dtype (torchvision's _max_value for uint8 and floats)
local function max_value(x)
  if x:is_floating_point() then return 1.0 end
  if x:dtype() == "uint8" then return 255 end
  fail("color adjustments take float or uint8 images, got %s", x:dtype())
end

-- size: n -> {n, n}; {n} -> {n, n}; {h, w}
local function size2(fname, what, size)
  if is_int(size) then size = {size, size} end
  if type(size) == "table" and not pt.is_tensor(size) and #size == 1 then size = {size[1], size[1]} end
  if type(size) ~= "table" or pt.is_tensor(size) or #size ~= 2 or not is_int(size[1]) or not is_int(size[2])
     or size[1] < 1 or size[2] < 1 then
    fail("%s: %s must be a positive integer or a list {h, w} of them", fname, what)
  end
  return size[1], size[2]
end

local function check_opts(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" or pt.is_tensor(opts) then fail("%s: options must be a table, got %s", fname, type(opts)) end
  local ok = {}
  for _, k in ipairs(allowed) do ok[k] = true end
  for k in pairs(opts) do
    if not ok[k] then fail("%s: unknown option '%s'", fname, tostring(k)) end
  end
  return opts
end

local function check_prob(fname, p, default)
  if p == nil then return default end
  if not is_num(p) or p < 0 or p > 1 then fail("%s: p must be a number in [0, 1], got %s", fname, tostring(p)) end
  return p
end

-- a range {lo, hi} with lo <= hi (a number v -> {-v, v} when symmetric, else fname's error)
local function range2(fname, what, v, symmetric)
  if is_num(v) and symmetric then
    if v < 0 then fail("%s: %s must be non-negative when a single number, got %s", fname, what, tostring(v)) end
    return {-v, v}
  end
  if type(v) ~= "table" or pt.is_tensor(v) or #v ~= 2 or not is_num(v[1]) or not is_num(v[2]) or v[1] > v[2] then
    fail("%s: %s must be %sa list {min, max} with min <= max", fname, what, symmetric and "a number or " or "")
  end
  return {v[1], v[2]}
end

local function uniform(lo, hi) return lo + (hi - lo) * pt.rand(1, {dtype = "float64"}):item() end
local function randint(lo, hi) return pt.randint(lo, hi + 1, {1}):item() end -- lo..hi inclusive

-- fill: a number, or one value per channel (torchvision's fill); -> list of C values
local function fill_list(fname, fill, C)
  if fill == nil then fill = 0 end
  if is_num(fill) then
    local l = {}
    for c = 1, C do l[c] = fill end
    return l
  end
  if type(fill) ~= "table" or pt.is_tensor(fill) then fail("%s: fill must be a number or a list of numbers", fname) end
  for _, v in ipairs(fill) do if not is_num(v) then fail("%s: fill must be a number or a list of numbers", fname) end end
  if #fill == 1 then return fill_list(fname, fill[1], C) end
  if #fill ~= C then fail("%s: fill has %d values for an image of %d channels", fname, #fill, C) end
  return fill
end

-- applies fn(image batch) -> image batch to x of a transform's call (x, y, ...)
local function transform_of(fn)
  return function(x, ...) return fn(x), ... end
end

-- ------------------------------------------------------------------ crops, flips, pad

--- functional.crop(img, top, left, height, width): the window at 1-based (top, left);
-- parts outside the image are zeros (torchvision pads them).
function Fn.crop(img, top, left, height, width)
  local x, single = as_batch("crop", img)
  if not (is_int(top) and is_int(left)) then fail("crop: top and left must be integers") end
  if not (is_int(height) and is_int(width)) or height < 1 or width < 1 then
    fail("crop: height and width must be positive integers")
  end
  local H, W = x:size(3), x:size(4)
  local t0, l0 = top - 1, left - 1
  local r
  if t0 >= 0 and l0 >= 0 and t0 + height <= H and l0 + width <= W then
    r = x:narrow(3, top, height):narrow(4, left, width):contiguous()
  else
    r = pt.zeros(x:size(1), x:size(2), height, width, {dtype = x:dtype()})
    local y0, y1 = math.max(t0, 0), math.min(t0 + height, H)
    local x0, x1 = math.max(l0, 0), math.min(l0 + width, W)
    if y1 > y0 and x1 > x0 then
      r:narrow(3, y0 - t0 + 1, y1 - y0):narrow(4, x0 - l0 + 1, x1 - x0)
       :copy_(x:narrow(3, y0 + 1, y1 - y0):narrow(4, x0 + 1, x1 - x0))
    end
  end
  return back(r, single)
end

--- functional.center_crop(img, size): the central window (zero padded when larger than the image).
function Fn.center_crop(img, size)
  local x, single = as_batch("center_crop", img)
  local ch, cw = size2("center_crop", "size", size)
  local H, W = x:size(3), x:size(4)
  -- torchvision: pad symmetrically (the extra pixel right/bottom), then int(round((H - ch) / 2))
  local pt0 = ch > H and (ch - H) // 2 or 0
  local pl0 = cw > W and (cw - W) // 2 or 0
  local top = round_even(((H + (ch > H and ch - H or 0)) - ch) / 2) - pt0
  local left = round_even(((W + (cw > W and cw - W or 0)) - cw) / 2) - pl0
  return back(Fn.crop(x, top + 1, left + 1, ch, cw), single)
end

--- functional.hflip(img) / vflip(img): mirror left-right / top-bottom.
function Fn.hflip(img)
  local x, single = as_batch("hflip", img)
  return back(x:flip(4), single)
end
function Fn.vflip(img)
  local x, single = as_batch("vflip", img)
  return back(x:flip(3), single)
end

-- 0-based source positions of a padded line: n values, l before, r after
local function pad_index(n, l, r, mode)
  local idx = {}
  for i = -l, n + r - 1 do
    local j = i
    if mode == "edge" then
      j = math.min(math.max(i, 0), n - 1)
    elseif mode == "reflect" then
      if i < 0 then j = -i elseif i >= n then j = 2 * n - 2 - i end
    else -- symmetric
      if i < 0 then j = -i - 1 elseif i >= n then j = 2 * n - 1 - i end
    end
    idx[#idx + 1] = j + 1
  end
  return pt.tensor(idx, {dtype = "int64"})
end

local pad_modes = {constant = true, edge = true, reflect = true, symmetric = true}

local function parse_padding(fname, padding)
  local p
  if is_int(padding) then p = {padding, padding, padding, padding}
  elseif type(padding) == "table" and not pt.is_tensor(padding) then
    for _, v in ipairs(padding) do if not is_int(v) then p = false end end
    if p ~= false then
      if #padding == 1 then p = {padding[1], padding[1], padding[1], padding[1]}
      elseif #padding == 2 then p = {padding[1], padding[2], padding[1], padding[2]}
      elseif #padding == 4 then p = {padding[1], padding[2], padding[3], padding[4]} end
    end
  end
  if not p then fail("%s: padding must be an integer or a list of 1, 2 or 4 integers ({left, top, right, bottom})", fname) end
  return p -- left, top, right, bottom
end

--- functional.pad(img, padding[, {fill=0, padding_mode="constant"}]): padding n (every side),
-- {lr, tb} or {left, top, right, bottom}; negative values crop. padding_mode constant (fill),
-- edge, reflect (without the edge pixel), symmetric (with it).
function Fn.pad(img, padding, opts)
  local x, single = as_batch("pad", img)
  local p = parse_padding("pad", padding)
  opts = check_opts("pad", opts, {"fill", "padding_mode"})
  local mode = opts.padding_mode or "constant"
  if type(mode) ~= "string" or not pad_modes[mode] then
    fail("pad: padding_mode must be constant, edge, reflect or symmetric, got %s", tostring(mode))
  end
  local fill = opts.fill or 0
  if not is_num(fill) then fail("pad: fill must be a number, got %s", type(fill)) end
  -- negative padding crops first (torchvision)
  local l, t, r, b = p[1], p[2], p[3], p[4]
  local H, W = x:size(3), x:size(4)
  local cl, ct, cr, cb = math.max(-l, 0), math.max(-t, 0), math.max(-r, 0), math.max(-b, 0)
  if cl + cr >= W or ct + cb >= H then fail("pad: negative padding leaves nothing of the %dx%d image", H, W) end
  if cl + ct + cr + cb > 0 then
    x = x:narrow(3, ct + 1, H - ct - cb):narrow(4, cl + 1, W - cl - cr)
    H, W = x:size(3), x:size(4)
  end
  l, t, r, b = math.max(l, 0), math.max(t, 0), math.max(r, 0), math.max(b, 0)
  local y
  if mode == "constant" then
    y = pt.full({x:size(1), x:size(2), H + t + b, W + l + r}, fill, {dtype = x:dtype()})
    y:narrow(3, t + 1, H):narrow(4, l + 1, W):copy_(x)
  else
    local limit = mode == "reflect" and 1 or 0
    if math.max(t, b) > H - limit or math.max(l, r) > W - limit then
      fail("pad: %s padding {%d,%d,%d,%d} (left, top, right, bottom) must be %s the image's %dx%d", mode, l, t, r, b,
           mode == "reflect" and "smaller than" or "at most", H, W)
    end
    y = x:index_select(3, pad_index(H, t, b, mode)):index_select(4, pad_index(W, l, r, mode))
  end
  return back(y:contiguous(), single)
end

-- ------------------------------------------------------------------ resize

local interp_modes = {nearest = true, bilinear = true, bicubic = true}

-- torchvision's _compute_resized_output_size: n matches the smaller edge
local function resized_size(fname, H, W, size, max_size)
  if is_int(size) or (type(size) == "table" and #size == 1) then
    local s = is_int(size) and size or size[1]
    if not is_int(s) or s < 1 then fail("%s: size must be a positive integer or a list {h, w} of them", fname) end
    local short, long = math.min(H, W), math.max(H, W)
    local new_short, new_long = s, floor(s * long / short)
    if max_size ~= nil then
      if not is_int(max_size) or max_size <= s then
        fail("%s: max_size (%s) must be an integer larger than size (%d)", fname, tostring(max_size), s)
      end
      if new_long > max_size then new_short, new_long = floor(max_size * new_short / new_long), max_size end
    end
    if W <= H then return new_long, new_short end
    return new_short, new_long
  end
  if max_size ~= nil then fail("%s: max_size is only allowed when size is a single integer", fname) end
  return size2(fname, "size", size)
end

local function resize_batch(fname, x, oh, ow, mode, antialias)
  local dtype = x:dtype()
  if x:size(3) == oh and x:size(4) == ow then return x end
  local xf = to_work(x)
  local o = {size = {oh, ow}, mode = mode}
  if mode ~= "nearest" then o.align_corners = false; o.antialias = antialias end
  local y = pt.nn.functional.interpolate(xf, o)
  if mode == "bicubic" and dtype == "uint8" then y = y:clamp(0, 255) end
  return from_work(y, dtype)
end

local function resize_opts(fname, opts, extra)
  local allowed = {"interpolation", "antialias"}
  for _, k in ipairs(extra or {}) do allowed[#allowed + 1] = k end
  opts = check_opts(fname, opts, allowed)
  local mode = opts.interpolation or "bilinear"
  if type(mode) ~= "string" or not interp_modes[mode] then
    fail("%s: interpolation must be nearest, bilinear or bicubic, got %s", fname, tostring(mode))
  end
  local aa = opts.antialias
  if aa == nil then aa = true end
  if type(aa) ~= "boolean" then fail("%s: antialias must be a boolean, got %s", fname, type(aa)) end
  return mode, aa, opts
end

--- functional.resize(img, size[, {interpolation="bilinear", antialias=true, max_size}]): size n
-- scales the smaller edge to n (keeping the aspect ratio, the other edge truncated), {h, w} exactly.
function Fn.resize(img, size, opts)
  local x, single = as_batch("resize", img)
  local mode, aa, o = resize_opts("resize", opts, {"max_size"})
  local oh, ow = resized_size("resize", x:size(3), x:size(4), size, o.max_size)
  return back(resize_batch("resize", x, oh, ow, mode, aa), single)
end

--- functional.resized_crop(img, top, left, height, width, size[, {interpolation, antialias}])
function Fn.resized_crop(img, top, left, height, width, size, opts)
  local x, single = as_batch("resized_crop", img)
  local mode, aa = resize_opts("resized_crop", opts)
  local oh, ow = size2("resized_crop", "size", size)
  return back(resize_batch("resized_crop", Fn.crop(x, top, left, height, width), oh, ow, mode, aa), single)
end

-- ------------------------------------------------------------------ affine maps

-- torchvision's _get_inverse_affine_matrix (angles in degrees, center relative to the middle)
local function inverse_affine(cx, cy, angle, tx, ty, scale, shx, shy)
  local r, sx, sy = rad(angle), rad(shx), rad(shy)
  local a = cos(r - sy) / cos(sy)
  local b = -cos(r - sy) * tan(sx) / cos(sy) - sin(r)
  local c = sin(r - sy) / cos(sy)
  local d = -sin(r - sy) * tan(sx) / cos(sy) + cos(r)
  local m = {d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0}
  m[3] = m[3] + m[1] * (-cx - tx) + m[2] * (-cy - ty)
  m[6] = m[6] + m[4] * (-cx - tx) + m[5] * (-cy - ty)
  m[3] = m[3] + cx
  m[6] = m[6] + cy
  return m
end

-- torchvision's _compute_affine_output_size (float32 as there): w, h that hold the whole image
local function affine_output_size(m, w, h)
  local pts = pt.tensor({{-0.5 * w, -0.5 * h, 1.0}, {-0.5 * w, 0.5 * h, 1.0}, {0.5 * w, 0.5 * h, 1.0},
                         {0.5 * w, -0.5 * h, 1.0}})
  local theta = pt.tensor(m):reshape(2, 3)
  local new = pts:matmul(theta:t())
  local half = pt.tensor({w * 0.5, h * 0.5})
  local mn, mx = new:amin(1) + half, new:amax(1) + half
  local tol = 1e-4
  local cmax = ((mx / tol):trunc() * tol):ceil()
  local cmin = ((mn / tol):trunc() * tol):floor()
  local size = (cmax - cmin):tolist()
  return floor(size[1]), floor(size[2])
end

-- x {N, C, H, W} through the inverse maps ms (one per image, or one for all) onto oh x ow, as
-- torchvision's _gen_affine_grid + _apply_grid_transform (fill: list of C values or nil)
local function warp(x, ms, oh, ow, mode, fill)
  local dtype = x:dtype()
  local xf = to_work(x)
  local wdt = xf:dtype()
  local N, C, H, W = xf:size(1), xf:size(2), xf:size(3), xf:size(4)
  local rows = {}
  for i = 1, N do rows[i] = ms[i] or ms[1] end
  local theta = pt.tensor(rows, {dtype = wdt}):reshape(N, 2, 3)
  local xs = pt.linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, ow, {dtype = wdt})
  local ys = pt.linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, oh, {dtype = wdt})
  local base = pt.stack({xs:reshape(1, ow):expand(oh, ow), ys:reshape(oh, 1):expand(oh, ow),
                         pt.ones(oh, ow, {dtype = wdt})}, 3):reshape(1, oh * ow, 3)
  local rescaled = theta:transpose(2, 3) / pt.tensor({0.5 * W, 0.5 * H}, {dtype = wdt})
  local grid = base:expand(N, oh * ow, 3):bmm(rescaled):reshape(N, oh, ow, 2)
  if fill then xf = pt.cat({xf, pt.ones(N, 1, H, W, {dtype = wdt})}, 2) end
  local y = pt.nn.functional.grid_sample(xf, grid, {mode = mode, padding_mode = "zeros", align_corners = false})
  if fill then
    local mask = y:narrow(2, C + 1, 1)
    y = y:narrow(2, 1, C)
    local fimg = pt.tensor(fill, {dtype = wdt}):reshape(1, C, 1, 1)
    if mode == "nearest" then
      y = pt.where(mask:lt(0.5), fimg, y)
    else
      y = y * mask + (1.0 - mask) * fimg
    end
  end
  return from_work(y:contiguous(), dtype)
end

local warp_modes = {nearest = true, bilinear = true}

local function warp_opts(fname, opts, extra)
  local allowed = {"interpolation", "fill", "center"}
  for _, k in ipairs(extra or {}) do allowed[#allowed + 1] = k end
  opts = check_opts(fname, opts, allowed)
  local mode = opts.interpolation or "nearest"
  if type(mode) ~= "string" or not warp_modes[mode] then
    fail("%s: interpolation must be nearest or bilinear, got %s", fname, tostring(mode))
  end
  local center = opts.center
  if center ~= nil and (type(center) ~= "table" or not is_num(center[1]) or not is_num(center[2]) or #center ~= 2) then
    fail("%s: center must be a list {x, y} (pixel coordinates, 0-based as torchvision's)", fname)
  end
  return mode, opts
end

-- torchvision's center_f: the center relative to the image's middle
local function center_f(center, H, W)
  if not center then return 0.0, 0.0 end
  return center[1] - W * 0.5, center[2] - H * 0.5
end

--- functional.rotate(img, angle[, {interpolation="nearest", expand=false, center, fill}]): rotate
-- counter-clockwise by angle degrees about the middle (or center {x, y}); expand grows the output
-- to hold the whole image; fill (number or per channel) the area outside, as torchvision.
function Fn.rotate(img, angle, opts)
  local x, single = as_batch("rotate", img)
  if not is_num(angle) then fail("rotate: angle must be a number, got %s", type(angle)) end
  local mode, o = warp_opts("rotate", opts, {"expand"})
  if o.expand ~= nil and type(o.expand) ~= "boolean" then fail("rotate: expand must be a boolean") end
  local H, W = x:size(3), x:size(4)
  local cx, cy = center_f(o.center, H, W)
  local m = inverse_affine(cx, cy, -angle, 0.0, 0.0, 1.0, 0.0, 0.0)
  local ow, oh = W, H
  if o.expand then ow, oh = affine_output_size(m, W, H) end
  local fill = o.fill ~= nil and fill_list("rotate", o.fill, x:size(2)) or nil
  return back(warp(x, {m}, oh, ow, mode, fill), single)
end

local function shear2(fname, shear)
  if shear == nil then return 0.0, 0.0 end
  if is_num(shear) then return shear, 0.0 end
  if type(shear) == "table" and #shear == 1 and is_num(shear[1]) then return shear[1], shear[1] end
  if type(shear) == "table" and #shear == 2 and is_num(shear[1]) and is_num(shear[2]) then return shear[1], shear[2] end
  fail("%s: shear must be a number or a list {sx, sy}", fname)
end

--- functional.affine(img, angle, translate, scale, shear[, {interpolation="nearest", center, fill}]):
-- rotation by angle degrees (clockwise, as torchvision's affine), translation {tx, ty} pixels,
-- scale, shear degrees (a number: x only, {sx, sy}), about the middle or center {x, y}.
function Fn.affine(img, angle, translate, scale, shear, opts)
  local x, single = as_batch("affine", img)
  if not is_num(angle) then fail("affine: angle must be a number, got %s", type(angle)) end
  if type(translate) ~= "table" or #translate ~= 2 or not is_num(translate[1]) or not is_num(translate[2]) then
    fail("affine: translate must be a list {tx, ty} of numbers")
  end
  if not is_num(scale) or scale <= 0 then fail("affine: scale must be a positive number, got %s", tostring(scale)) end
  local shx, shy = shear2("affine", shear)
  local mode, o = warp_opts("affine", opts)
  local H, W = x:size(3), x:size(4)
  local cx, cy = center_f(o.center, H, W)
  local m = inverse_affine(cx, cy, angle, translate[1], translate[2], scale, shx, shy)
  local fill = o.fill ~= nil and fill_list("affine", o.fill, x:size(2)) or nil
  return back(warp(x, {m}, H, W, mode, fill), single)
end

-- ------------------------------------------------------------------ colour

local function check_channels(fname, x, allowed3only)
  local C = x:size(2)
  if C ~= 3 and (allowed3only or C ~= 1) then
    fail("%s: expects %s images, got %d channels (shape %s)", fname, allowed3only and "3-channel (RGB)" or
         "1- or 3-channel", C, shape_str(x))
  end
  return C
end

-- torchvision's rgb_to_grayscale on a batch: 0.2989 r + 0.587 g + 0.114 b, in the image's dtype
local function gray_of(x)
  local r, g, b = x:select(2, 1), x:select(2, 2), x:select(2, 3)
  if not x:is_floating_point() then r, g, b = r:float(), g:float(), b:float() end
  local l = r * 0.2989 + g * 0.587 + b * 0.114
  if not x:is_floating_point() then l = l:to(x:dtype()) end
  return l:unsqueeze(2)
end

--- functional.rgb_to_grayscale(img[, num_output_channels=1]): luma of an RGB image (torchvision's
-- weights 0.2989, 0.587, 0.114), repeated to num_output_channels (1 or 3); 1-channel images pass.
function Fn.rgb_to_grayscale(img, num_output_channels)
  local x, single = as_batch("rgb_to_grayscale", img)
  num_output_channels = num_output_channels or 1
  if num_output_channels ~= 1 and num_output_channels ~= 3 then
    fail("rgb_to_grayscale: num_output_channels must be 1 or 3, got %s", tostring(num_output_channels))
  end
  local C = check_channels("rgb_to_grayscale", x)
  local l = C == 3 and gray_of(x) or x:clone()
  if num_output_channels == 3 then l = l:expand(x:size(1), 3, x:size(3), x:size(4)):contiguous() end
  return back(l, single)
end

-- torchvision's _blend: ratio * a + (1 - ratio) * b, clamped to the dtype's range
local function blend(a, b, ratio)
  local bound = max_value(a)
  local dtype = a:dtype()
  local af = to_work(a)
  local r = (af * ratio + b * (1.0 - ratio)):clamp(0, bound)
  if r:dtype() ~= dtype then r = r:to(dtype) end
  return r
end

local function check_factor(fname, f)
  if not is_num(f) or f < 0 then fail("%s: factor must be a non-negative number, got %s", fname, tostring(f)) end
end

--- functional.adjust_brightness(img, factor): img * factor, clamped ([0, 1] or [0, 255]).
function Fn.adjust_brightness(img, factor)
  local x, single = as_batch("adjust_brightness", img)
  check_factor("adjust_brightness", factor)
  check_channels("adjust_brightness", x)
  return back(blend(x, pt.zeros(1, {dtype = to_work(x):dtype()}), factor), single)
end

--- functional.adjust_contrast(img, factor): blend with each image's mean gray level.
function Fn.adjust_contrast(img, factor)
  local x, single = as_batch("adjust_contrast", img)
  check_factor("adjust_contrast", factor)
  local C = check_channels("adjust_contrast", x)
  local wdt = to_work(x):dtype()
  local g = C == 3 and gray_of(x) or x
  local mean = g:to(wdt):mean({2, 3, 4}, true)
  return back(blend(x, mean, factor), single)
end

--- functional.adjust_saturation(img, factor): blend with the image's grayscale (0: gray, 1: same).
function Fn.adjust_saturation(img, factor)
  local x, single = as_batch("adjust_saturation", img)
  check_factor("adjust_saturation", factor)
  if check_channels("adjust_saturation", x) == 1 then return img end
  return back(blend(x, to_work(gray_of(x)), factor), single)
end

-- torchvision's _rgb2hsv and _hsv2rgb on {N, 3, H, W}
local function rgb2hsv(x)
  local r, g, b = x:select(2, 1), x:select(2, 2), x:select(2, 3)
  local maxc, minc = x:amax(2), x:amin(2)
  local eqc = maxc:eq(minc)
  local cr = maxc - minc
  local ones = pt.ones_like(maxc)
  local s = cr / pt.where(eqc, ones, maxc)
  local crd = pt.where(eqc, ones, cr)
  local rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
  local hr = maxc:eq(r):to(x:dtype()) * (bc - gc)
  local hg = maxc:eq(g):logical_and(maxc:ne(r)):to(x:dtype()) * (rc + 2.0 - bc)
  local hb = maxc:ne(g):logical_and(maxc:ne(r)):to(x:dtype()) * (gc + 4.0 - rc)
  local h = hr + hg + hb
  h = (h / 6.0 + 1.0):fmod(1.0)
  return h, s, maxc
end

local function hsv2rgb(h, s, v)
  local i = (h * 6.0):floor()
  local f = h * 6.0 - i
  local p = (v * (1.0 - s)):clamp(0.0, 1.0)
  local q = (v * (1.0 - s * f)):clamp(0.0, 1.0)
  local t = (v * (1.0 - s * (1.0 - f))):clamp(0.0, 1.0)
  local k = i:to("int32"):remainder(6)
  -- torchvision picks by a one-hot mask (einsum); a select gives the same values
  local function pick(vals)
    local r = vals[6]
    for j = 5, 1, -1 do r = pt.where(k:eq(j - 1), vals[j], r) end
    return r
  end
  return pt.stack({pick({v, q, p, p, t, v}), pick({t, v, v, q, p, p}), pick({p, p, t, v, v, q})}, 2)
end

--- functional.adjust_hue(img, hue_factor): shift the hue by hue_factor in [-0.5, 0.5] (a fraction
-- of the colour wheel) through HSV, as torchvision.
function Fn.adjust_hue(img, hue_factor)
  local x, single = as_batch("adjust_hue", img)
  if not is_num(hue_factor) or hue_factor < -0.5 or hue_factor > 0.5 then
    fail("adjust_hue: hue_factor must be in [-0.5, 0.5], got %s", tostring(hue_factor))
  end
  if check_channels("adjust_hue", x) == 1 then return img end
  local dtype = x:dtype()
  local xf = x
  if not x:is_floating_point() then xf = x:float() / 255.0 end
  local h, s, v = rgb2hsv(xf)
  h = (h + hue_factor):remainder(1.0)
  local y = hsv2rgb(h, s, v)
  if not x:is_floating_point() then y = (y * 255.0):to(dtype) end
  return back(y, single)
end

-- ------------------------------------------------------------------ blur, erase

-- torchvision's _get_gaussian_kernel1d (float32 as there)
local function kernel1d(k, sigma)
  local half = (k - 1) * 0.5
  local xs = pt.linspace(-half, half, k)
  local pdf = ((xs / sigma):pow(2) * -0.5):exp()
  return pdf / pdf:sum()
end

local function blur_batch(x, kx, ky, sigmas)
  local dtype = x:dtype()
  local xf = to_work(x)
  local wdt = xf:dtype()
  local N, C, H, W = xf:size(1), xf:size(2), xf:size(3), xf:size(4)
  local ks = {}
  for i = 1, N do
    local s = sigmas[i] or sigmas[1]
    local k2 = kernel1d(ky, s[2]):to(wdt):reshape(ky, 1):mm(kernel1d(kx, s[1]):to(wdt):reshape(1, kx))
    ks[i] = k2:reshape(1, 1, ky, kx):expand(1, C, ky, kx)
  end
  local kernel = pt.cat(ks, 1):reshape(N * C, 1, ky, kx)
  local padded = pt.nn.functional.pad(xf, {kx // 2, kx // 2, ky // 2, ky // 2}, "reflect")
  local y = pt.conv2d(padded:reshape(1, N * C, H + ky - 1, W + kx - 1), kernel, nil, {groups = N * C})
  return from_work(y:reshape(N, C, H, W), dtype)
end

local function blur_args(fname, x, kernel_size)
  local kx, ky
  if is_int(kernel_size) then kx, ky = kernel_size, kernel_size
  elseif type(kernel_size) == "table" and #kernel_size == 2 and is_int(kernel_size[1]) and is_int(kernel_size[2]) then
    kx, ky = kernel_size[1], kernel_size[2]
  end
  if not kx or kx < 1 or ky < 1 or kx % 2 == 0 or ky % 2 == 0 then
    fail("%s: kernel_size must be an odd positive integer or a list {kx, ky} of them", fname)
  end
  if x and (kx // 2 >= x:size(4) or ky // 2 >= x:size(3)) then
    fail("%s: kernel %dx%d too large for a %dx%d image (reflect padding needs kernel_size // 2 < the side)", fname,
         kx, ky, x:size(3), x:size(4))
  end
  return kx, ky
end

--- functional.gaussian_blur(img, kernel_size[, sigma]): Gaussian blur with reflect padding;
-- kernel_size odd n or {kx, ky}; sigma s or {sx, sy} (default torchvision's 0.3*((k-1)*0.5-1)+0.8).
function Fn.gaussian_blur(img, kernel_size, sigma)
  local x, single = as_batch("gaussian_blur", img)
  local kx, ky = blur_args("gaussian_blur", x, kernel_size)
  local sx, sy
  if sigma == nil then
    sx, sy = 0.3 * ((kx - 1) * 0.5 - 1) + 0.8, 0.3 * ((ky - 1) * 0.5 - 1) + 0.8
  elseif is_num(sigma) then sx, sy = sigma, sigma
  elseif type(sigma) == "table" and #sigma == 2 and is_num(sigma[1]) and is_num(sigma[2]) then sx, sy = sigma[1], sigma[2]
  end
  if not sx or sx <= 0 or sy <= 0 then fail("gaussian_blur: sigma must be a positive number or a list {sx, sy} of them") end
  return back(blur_batch(x, kx, ky, {{sx, sy}}), single)
end

--- functional.erase(img, top, left, height, width, value): a copy with that window (1-based top,
-- left) set to value (a number, one per channel, or a tensor broadcasting to {C, height, width}).
function Fn.erase(img, top, left, height, width, value)
  local x, single = as_batch("erase", img)
  if not (is_int(top) and is_int(left) and is_int(height) and is_int(width)) or top < 1 or left < 1
     or height < 0 or width < 0 or top + height - 1 > x:size(3) or left + width - 1 > x:size(4) then
    fail("erase: the window must be integers inside the %dx%d image", x:size(3), x:size(4))
  end
  local y = x:clone()
  if height == 0 or width == 0 then return back(y, single) end
  local win = y:narrow(3, top, height):narrow(4, left, width)
  local C = x:size(2)
  if pt.is_tensor(value) then
    win:copy_(value:to(x:dtype()):expand_as(win))
  else
    local fl = fill_list("erase", value, C)
    win:copy_(pt.tensor(fl):reshape(1, C, 1, 1):to(x:dtype()):expand_as(win))
  end
  return back(y, single)
end

-- ------------------------------------------------------------------ the transforms

-- per image of the batch: fn(image {1, C, H, W}, i) -> image; the results concatenated
local function per_image(x, fn)
  local out = {}
  for i = 1, x:size(1) do out[i] = fn(x:narrow(1, i, 1), i) end
  if #out == 1 then return out[1] end
  return pt.cat(out, 1)
end

--- functional.convert_image_dtype(img[, dtype="float32"]): torchvision's: uint8 [0, 255] to a
-- float dtype in [0, 1] (x / 255), a float image in [0, 1] to uint8 (x * 255.999, truncated, as
-- torchvision's, which maps [0, 1] evenly onto the 256 values), float to float as a cast.
local image_dtypes = {uint8 = true, float32 = true, float64 = true}
function Fn.convert_image_dtype(img, dtype)
  if not pt.is_tensor(img) then fail("convert_image_dtype: expected an image tensor, got %s", type(img)) end
  dtype = dtype or "float32"
  if not image_dtypes[dtype] then
    fail("convert_image_dtype: dtype must be uint8, float32 or float64, got %s", tostring(dtype))
  end
  local from = img:dtype()
  if not image_dtypes[from] then
    fail("convert_image_dtype: expected a uint8, float32 or float64 image, got %s", from)
  end
  if from == dtype then return img end
  if from == "uint8" then return img:to(dtype) / 255 end
  if dtype == "uint8" then return (img * 255.999):clamp(0, 255):floor():to("uint8") end
  return img:to(dtype)
end

--- transforms.convert_image_dtype([dtype="float32"])
function M.convert_image_dtype(dtype)
  if dtype ~= nil and not image_dtypes[dtype] then
    fail("convert_image_dtype: dtype must be uint8, float32 or float64, got %s", tostring(dtype))
  end
  return transform_of(function(x) return Fn.convert_image_dtype(x, dtype) end)
end
M.to_float = function() return M.convert_image_dtype("float32") end

--- transforms.center_crop(size)
function M.center_crop(size)
  size2("center_crop", "size", size)
  return transform_of(function(x) return Fn.center_crop(x, size) end)
end

--- transforms.resize(size[, {interpolation, antialias, max_size}])
function M.resize(size, opts)
  local _, _, o = resize_opts("resize", opts, {"max_size"})
  if not is_int(size) or (type(size) == "table" and #size == 1) then size2("resize", "size", size) end
  resized_size("resize", 1, 1, size, o.max_size) -- the argument checks
  return transform_of(function(x) return Fn.resize(x, size, opts) end)
end

--- transforms.pad(padding[, {fill, padding_mode}])
function M.pad(padding, opts)
  parse_padding("pad", padding)
  opts = check_opts("pad", opts, {"fill", "padding_mode"})
  if opts.padding_mode ~= nil and not pad_modes[opts.padding_mode] then
    fail("pad: padding_mode must be constant, edge, reflect or symmetric, got %s", tostring(opts.padding_mode))
  end
  if opts.fill ~= nil and not is_num(opts.fill) then fail("pad: fill must be a number, got %s", type(opts.fill)) end
  return transform_of(function(x) return Fn.pad(x, padding, opts) end)
end

--- transforms.grayscale([num_output_channels=1])
function M.grayscale(num_output_channels)
  num_output_channels = num_output_channels or 1
  if num_output_channels ~= 1 and num_output_channels ~= 3 then
    fail("grayscale: num_output_channels must be 1 or 3, got %s", tostring(num_output_channels))
  end
  return transform_of(function(x) return Fn.rgb_to_grayscale(x, num_output_channels) end)
end

-- draws: a {N} float64 tensor of uniforms (one per image), as a list
local function draws(n) return pt.rand(n, {dtype = "float64"}):tolist() end

-- the images of x for which pick[i] is true replaced by fn(those images)
local function where_images(x, pick, fn)
  local sel = {}
  for i, v in ipairs(pick) do if v then sel[#sel + 1] = i end end
  if #sel == 0 then return x end
  local idx = pt.tensor(sel, {dtype = "int64"})
  return x:clone():index_copy_(1, idx, fn(x:index_select(1, idx)))
end

local function random_flip_of(fname, p, flip)
  p = check_prob(fname, p, 0.5)
  return transform_of(function(img)
    local x, single = as_batch(fname, img)
    local u = draws(x:size(1))
    local pick = {}
    for i = 1, #u do pick[i] = u[i] < p end
    return back(where_images(x, pick, flip), single)
  end)
end

--- transforms.random_horizontal_flip([p=0.5]) / random_vertical_flip([p=0.5])
function M.random_horizontal_flip(p) return random_flip_of("random_horizontal_flip", p, Fn.hflip) end
function M.random_vertical_flip(p) return random_flip_of("random_vertical_flip", p, Fn.vflip) end

--- transforms.random_grayscale([p=0.1]): grayscale with probability p, keeping the channel count
function M.random_grayscale(p)
  p = check_prob("random_grayscale", p, 0.1)
  return transform_of(function(img)
    local x, single = as_batch("random_grayscale", img)
    local u = draws(x:size(1))
    local pick = {}
    for i = 1, #u do pick[i] = u[i] < p end
    local C = x:size(2)
    return back(where_images(x, pick, function(s) return Fn.rgb_to_grayscale(s, C) end), single)
  end)
end

-- torchvision's RandomResizedCrop.get_params (0-based top, left)
local function rrc_params(H, W, scale, ratio)
  local area = H * W
  local lr0, lr1 = log(ratio[1]), log(ratio[2])
  for _ = 1, 10 do
    local target = area * uniform(scale[1], scale[2])
    local ar = exp(uniform(lr0, lr1))
    local w = round_even(sqrt(target * ar))
    local h = round_even(sqrt(target / ar))
    if 0 < w and w <= W and 0 < h and h <= H then
      return randint(0, H - h), randint(0, W - w), h, w
    end
  end
  local in_ratio = W / H
  local w, h
  if in_ratio < math.min(ratio[1], ratio[2]) then
    w = W; h = round_even(w / math.min(ratio[1], ratio[2]))
  elseif in_ratio > math.max(ratio[1], ratio[2]) then
    h = H; w = round_even(h * math.max(ratio[1], ratio[2]))
  else
    w, h = W, H
  end
  return (H - h) // 2, (W - w) // 2, h, w
end

--- transforms.random_resized_crop(size[, {scale={0.08,1}, ratio={3/4,4/3}, interpolation, antialias}])
function M.random_resized_crop(size, opts)
  local oh, ow = size2("random_resized_crop", "size", size)
  local mode, aa, o = resize_opts("random_resized_crop", opts, {"scale", "ratio"})
  local scale = range2("random_resized_crop", "scale", o.scale or {0.08, 1.0})
  local ratio = range2("random_resized_crop", "ratio", o.ratio or {3 / 4, 4 / 3})
  if scale[1] < 0 or ratio[1] <= 0 then fail("random_resized_crop: scale must be >= 0 and ratio > 0") end
  return transform_of(function(img)
    local x, single = as_batch("random_resized_crop", img)
    local H, W = x:size(3), x:size(4)
    return back(per_image(x, function(s)
      local top, left, h, w = rrc_params(H, W, scale, ratio)
      return resize_batch("random_resized_crop", s:narrow(3, top + 1, h):narrow(4, left + 1, w), oh, ow, mode, aa)
    end), single)
  end)
end

--- transforms.random_rotation(degrees[, {interpolation="nearest", expand=false, center, fill=0}])
function M.random_rotation(degrees, opts)
  local deg = range2("random_rotation", "degrees", degrees, true)
  local mode, o = warp_opts("random_rotation", opts, {"expand"})
  if o.expand ~= nil and type(o.expand) ~= "boolean" then fail("random_rotation: expand must be a boolean") end
  if o.fill ~= nil then fill_list("random_rotation", o.fill, type(o.fill) == "table" and #o.fill or 1) end
  return transform_of(function(img)
    local x, single = as_batch("random_rotation", img)
    local N, H, W = x:size(1), x:size(3), x:size(4)
    local fill = fill_list("random_rotation", o.fill or 0, x:size(2))
    local cx, cy = center_f(o.center, H, W)
    local ms = {}
    for i = 1, N do ms[i] = inverse_affine(cx, cy, -uniform(deg[1], deg[2]), 0.0, 0.0, 1.0, 0.0, 0.0) end
    if o.expand then
      if N > 1 then
        fail("random_rotation: expand=true gives each image its own size; apply it to single images {C,H,W}")
      end
      local ow, oh = affine_output_size(ms[1], W, H)
      return back(warp(x, ms, oh, ow, mode, fill), single)
    end
    return back(warp(x, ms, H, W, mode, fill), single)
  end)
end

--- transforms.random_affine(degrees[, {translate, scale, shear, interpolation="nearest", center, fill=0}])
function M.random_affine(degrees, opts)
  local deg = range2("random_affine", "degrees", degrees, true)
  local mode, o = warp_opts("random_affine", opts, {"translate", "scale", "shear"})
  local tr = o.translate
  if tr ~= nil and (type(tr) ~= "table" or #tr ~= 2 or not is_num(tr[1]) or not is_num(tr[2])
                    or tr[1] < 0 or tr[1] > 1 or tr[2] < 0 or tr[2] > 1) then
    fail("random_affine: translate must be a list {fx, fy} of fractions in [0, 1]")
  end
  local sc = o.scale and range2("random_affine", "scale", o.scale)
  if sc and sc[1] <= 0 then fail("random_affine: scale values must be positive") end
  local sh
  if o.shear ~= nil then
    if is_num(o.shear) then sh = range2("random_affine", "shear", o.shear, true)
    elseif type(o.shear) == "table" and (#o.shear == 2 or #o.shear == 4) then
      sh = range2("random_affine", "shear", {o.shear[1], o.shear[2]})
      if #o.shear == 4 then
        local y = range2("random_affine", "shear", {o.shear[3], o.shear[4]})
        sh[3], sh[4] = y[1], y[2]
      end
    else
      fail("random_affine: shear must be a number, a list {min, max} or {xmin, xmax, ymin, ymax}")
    end
  end
  return transform_of(function(img)
    local x, single = as_batch("random_affine", img)
    local N, H, W = x:size(1), x:size(3), x:size(4)
    local fill = fill_list("random_affine", o.fill or 0, x:size(2))
    local cx, cy = center_f(o.center, H, W)
    local ms = {}
    for i = 1, N do -- torchvision's RandomAffine.get_params, in its order
      local angle = uniform(deg[1], deg[2])
      local tx, ty = 0, 0
      if tr then
        local mx, my = tr[1] * W, tr[2] * H
        tx, ty = round_even(uniform(-mx, mx)), round_even(uniform(-my, my))
      end
      local s = sc and uniform(sc[1], sc[2]) or 1.0
      local shx, shy = 0.0, 0.0
      if sh then
        shx = uniform(sh[1], sh[2])
        if sh[3] then shy = uniform(sh[3], sh[4]) end
      end
      ms[i] = inverse_affine(cx, cy, angle, tx, ty, s, shx, shy)
    end
    return back(warp(x, ms, H, W, mode, fill), single)
  end)
end

-- ColorJitter's _check_input: nil (no change) or {lo, hi}
local function jitter_range(name, v, center, bound, clip)
  if v == nil then return nil end
  local r
  if is_num(v) then
    if v < 0 then fail("color_jitter: %s must be non-negative when a single number, got %s", name, tostring(v)) end
    r = {center - v, center + v}
    if clip then r[1] = math.max(r[1], 0.0) end
  elseif type(v) == "table" and #v == 2 and is_num(v[1]) and is_num(v[2]) then
    r = {v[1], v[2]}
  else
    fail("color_jitter: %s must be a number or a list {min, max}", name)
  end
  if not (bound[1] <= r[1] and r[1] <= r[2] and r[2] <= bound[2]) then
    fail("color_jitter: %s values must be within [%s, %s] with min <= max, got {%s, %s}", name,
         tostring(bound[1]), tostring(bound[2]), tostring(r[1]), tostring(r[2]))
  end
  if r[1] == center and r[2] == center then return nil end
  return r
end

--- transforms.color_jitter({brightness, contrast, saturation, hue})
function M.color_jitter(opts)
  opts = check_opts("color_jitter", opts, {"brightness", "contrast", "saturation", "hue"})
  local inf = math.huge
  local ranges = {jitter_range("brightness", opts.brightness, 1, {0, inf}, true),
                  jitter_range("contrast", opts.contrast, 1, {0, inf}, true),
                  jitter_range("saturation", opts.saturation, 1, {0, inf}, true),
                  jitter_range("hue", opts.hue, 0, {-0.5, 0.5}, false)}
  local fns = {Fn.adjust_brightness, Fn.adjust_contrast, Fn.adjust_saturation, Fn.adjust_hue}
  return transform_of(function(img)
    local x, single = as_batch("color_jitter", img)
    check_channels("color_jitter", x)
    return back(per_image(x, function(s)
      -- torchvision's ColorJitter.get_params: a random order, then the factors
      local order = pt.randperm(4):tolist()
      local f = {}
      for k = 1, 4 do if ranges[k] then f[k] = uniform(ranges[k][1], ranges[k][2]) end end
      for _, k in ipairs(order) do if f[k] then s = fns[k](s, f[k]) end end
      return s
    end), single)
  end)
end

--- transforms.gaussian_blur(kernel_size[, sigma={0.1, 2.0}])
function M.gaussian_blur(kernel_size, sigma)
  blur_args("gaussian_blur", nil, kernel_size)
  local sr
  if sigma == nil then sr = {0.1, 2.0}
  elseif is_num(sigma) then sr = {sigma, sigma}
  else sr = range2("gaussian_blur", "sigma", sigma) end
  if sr[1] <= 0 then fail("gaussian_blur: sigma must be positive, got %s", tostring(sr[1])) end
  return transform_of(function(img)
    local x, single = as_batch("gaussian_blur", img)
    local kx, ky = blur_args("gaussian_blur", x, kernel_size)
    local sig = {}
    for i = 1, x:size(1) do local s = uniform(sr[1], sr[2]); sig[i] = {s, s} end
    return back(blur_batch(x, kx, ky, sig), single)
  end)
end

--- transforms.random_erasing([{p=0.5, scale={0.02,0.33}, ratio={0.3,3.3}, value=0}])
function M.random_erasing(opts)
  opts = check_opts("random_erasing", opts, {"p", "scale", "ratio", "value"})
  local p = check_prob("random_erasing", opts.p, 0.5)
  local scale = range2("random_erasing", "scale", opts.scale or {0.02, 0.33})
  local ratio = range2("random_erasing", "ratio", opts.ratio or {0.3, 3.3})
  if scale[1] < 0 or scale[2] > 1 then fail("random_erasing: scale must be within [0, 1]") end
  if ratio[1] <= 0 then fail("random_erasing: ratio must be positive") end
  local value = opts.value or 0
  if value ~= "random" and not is_num(value) then
    if type(value) ~= "table" or #value == 0 then
      fail("random_erasing: value must be a number, a list of numbers (one per channel) or \"random\"")
    end
    fill_list("random_erasing", value, #value)
  end
  return transform_of(function(img)
    local x, single = as_batch("random_erasing", img)
    local C, H, W = x:size(2), x:size(3), x:size(4)
    if type(value) == "table" and #value ~= 1 and #value ~= C then
      fail("random_erasing: value has %d entries for images of %d channels", #value, C)
    end
    local lr0, lr1 = log(ratio[1]), log(ratio[2])
    return back(per_image(x, function(s)
      if not (pt.rand(1, {dtype = "float64"}):item() < p) then return s end
      for _ = 1, 10 do -- torchvision's RandomErasing.get_params
        local ea = H * W * uniform(scale[1], scale[2])
        local ar = exp(uniform(lr0, lr1))
        local h, w = round_even(sqrt(ea * ar)), round_even(sqrt(ea / ar))
        if h < H and w < W then
          local v = value
          if v == "random" then v = pt.randn(1, C, h, w) end
          local top, left = randint(0, H - h), randint(0, W - w)
          return Fn.erase(s, top + 1, left + 1, h, w, v)
        end
      end
      return s
    end), single)
  end)
end

local function check_list(fname, list)
  if type(list) ~= "table" or pt.is_tensor(list) or #list == 0 then
    fail("%s: expected a non-empty list of transforms", fname)
  end
  for k, t in ipairs(list) do
    if type(t) ~= "function" then fail("%s: transform %d is not a function", fname, k) end
  end
end

-- the images of x grouped by groups[i] (a transform index, 0: unchanged) through list[g]
local function apply_groups(fname, x, groups, list)
  local by = {}
  for i, g in ipairs(groups) do
    by[g] = by[g] or {}
    table.insert(by[g], i)
  end
  local parts, shape, dtype = {}, nil, nil
  for g = 0, #list do -- in a fixed order: the transforms draw from pt's generator
    local sel = by[g]
    if sel then
      local idx = pt.tensor(sel, {dtype = "int64"})
      local sub = x:index_select(1, idx)
      local y = sub
      if g > 0 then for _, t in ipairs(list[g]) do y = t(y) end end
      if not pt.is_tensor(y) or y:dim() ~= 4 then fail("%s: a transform did not return a batch of images", fname) end
      local s = y:size()
      s[1] = x:size(1)
      if shape and table.concat(s, ",") ~= table.concat(shape, ",") then
        fail("%s: the transforms gave images of different shapes ({%s} and {%s}); a batch needs one shape", fname,
             table.concat(shape, ",", 2), table.concat(s, ",", 2))
      end
      shape, dtype = shape or s, dtype or y:dtype()
      parts[#parts + 1] = {idx, y}
    end
  end
  local out = pt.empty(shape, {dtype = dtype})
  for _, pr in ipairs(parts) do out:index_copy_(1, pr[1], pr[2]:to(dtype)) end
  return out
end

--- transforms.random_apply(list[, p=0.5]): the transforms of list in order, to each image with probability p
function M.random_apply(list, p)
  if type(list) == "function" then list = {list} end
  check_list("random_apply", list)
  p = check_prob("random_apply", p, 0.5)
  return transform_of(function(img)
    local x, single = as_batch("random_apply", img)
    local u = draws(x:size(1))
    local groups = {}
    for i = 1, #u do groups[i] = (p < u[i]) and 0 or 1 end -- torchvision: skip when p < rand
    return back(apply_groups("random_apply", x, groups, {list}), single)
  end)
end

--- transforms.random_choice(list[, weights]): one transform of list per image (weights: relative)
function M.random_choice(list, weights)
  check_list("random_choice", list)
  if weights ~= nil and (type(weights) ~= "table" or pt.is_tensor(weights) or #weights ~= #list) then
    fail("random_choice: weights must be a list of %d numbers (one per transform)", #list)
  end
  local cum, total = {}, 0
  for k = 1, #list do
    local w = weights and weights[k] or 1
    if not is_num(w) or w < 0 then fail("random_choice: weights must be non-negative numbers") end
    total = total + w
    cum[k] = total
  end
  if total <= 0 then fail("random_choice: the weights sum to 0") end
  local singles = {}
  for k, t in ipairs(list) do singles[k] = {t} end
  return transform_of(function(img)
    local x, single = as_batch("random_choice", img)
    local u = draws(x:size(1))
    local groups = {}
    for i = 1, #u do
      local v, g = u[i] * total, #list
      for k = 1, #list do if v < cum[k] then g = k; break end end
      groups[i] = g
    end
    return back(apply_groups("random_choice", x, groups, singles), single)
  end)
end

M.functional = Fn

-- ------------------------------------------------------------------ help texts

local docs = rawget(pt, "_docs")
if docs then
  local T = "data.transforms."
  local RND = "\n  Each image of a batch draws its own parameters from pt's generator (in a DataHandler seeded per batch)."
  local D = {
    [Fn] = "data.transforms.functional: the deterministic image operations behind data.transforms (torchvision's\n"
      .. "  transforms.functional) on {C,H,W} images or {N,C,H,W} batches, float or uint8.",
    [Fn.crop] = T .. "functional.crop(img, top, left, height, width) -> the window at 1-based (top, left); outside is 0.",
    [Fn.center_crop] = T .. "functional.center_crop(img, size) -> central size ({h,w} or n) window, zero padded if larger.",
    [Fn.hflip] = T .. "functional.hflip(img) -> mirrored left-right.",
    [Fn.vflip] = T .. "functional.vflip(img) -> mirrored top-bottom.",
    [Fn.pad] = T .. "functional.pad(img, padding[, {fill=0, padding_mode=\"constant\"}]) -> padded image.\n"
      .. "  padding n, {left/right, top/bottom} or {left, top, right, bottom} (negative crops);\n"
      .. "  padding_mode constant (fill), edge, reflect or symmetric, as torchvision.",
    [Fn.resize] = T .. "functional.resize(img, size[, {interpolation=\"bilinear\", antialias=true, max_size}]) -> resized.\n"
      .. "  size n matches the smaller edge (aspect kept), {h,w} exact; nearest, bilinear or bicubic (nn.functional.interpolate).",
    [Fn.resized_crop] = T .. "functional.resized_crop(img, top, left, height, width, size[, {interpolation, antialias}])\n"
      .. "  -> crop (1-based top, left) then resize to size.",
    [Fn.rotate] = T .. "functional.rotate(img, angle[, {interpolation=\"nearest\", expand=false, center={x,y}, fill}])\n"
      .. "  -> rotated counter-clockwise by angle degrees (affine_grid/grid_sample as torchvision; fill outside).",
    [Fn.affine] = T .. "functional.affine(img, angle, {tx,ty}, scale, shear[, {interpolation=\"nearest\", center, fill}])\n"
      .. "  -> torchvision's affine: rotation (degrees, clockwise), translation (pixels), scale, shear (degrees, n or {sx,sy}).",
    [Fn.rgb_to_grayscale] = T .. "functional.rgb_to_grayscale(img[, num_output_channels=1]) -> 0.2989 R + 0.587 G + 0.114 B.",
    [Fn.adjust_brightness] = T .. "functional.adjust_brightness(img, factor) -> img * factor clamped to [0,1] (uint8 [0,255]).",
    [Fn.adjust_contrast] = T .. "functional.adjust_contrast(img, factor) -> blend with the image's mean gray level, clamped.",
    [Fn.adjust_saturation] = T .. "functional.adjust_saturation(img, factor) -> blend with the grayscale image, clamped.",
    [Fn.adjust_hue] = T .. "functional.adjust_hue(img, hue_factor) -> hue shifted by hue_factor in [-0.5, 0.5] (via HSV).",
    [Fn.gaussian_blur] = T .. "functional.gaussian_blur(img, kernel_size[, sigma]) -> blurred (odd kernel n or {kx,ky},\n"
      .. "  sigma s or {sx,sy}, reflect padding).",
    [Fn.erase] = T .. "functional.erase(img, top, left, height, width, value) -> copy with that window (1-based) set to value.",
    [M.center_crop] = T .. "center_crop(size) -> transform: the central size (n or {h,w}) window of each image.",
    [Fn.convert_image_dtype] = T .. "functional.convert_image_dtype(img[, dtype=\"float32\"]) -> torchvision's: uint8 [0,255]\n"
      .. "  to float [0,1] (x / 255), float [0,1] to uint8 (x * 255.999 truncated), float to float a cast.",
    [M.convert_image_dtype] = T .. "convert_image_dtype([dtype=\"float32\"]) -> transform (functional.convert_image_dtype):\n"
      .. "  what torchvision's ToTensor / ConvertImageDtype do to uint8 images (from pt.image or ImageFolder).",
    [M.to_float] = T .. "to_float() -> convert_image_dtype(\"float32\"): uint8 images to float32 in [0, 1].",
    [M.resize] = T .. "resize(size[, {interpolation=\"bilinear\", antialias=true, max_size}]) -> transform (functional.resize).",
    [M.pad] = T .. "pad(padding[, {fill=0, padding_mode=\"constant\"}]) -> transform (functional.pad).",
    [M.grayscale] = T .. "grayscale([num_output_channels=1]) -> transform: RGB images to gray.",
    [M.random_horizontal_flip] = T .. "random_horizontal_flip([p=0.5]) -> transform: mirror left-right with probability p." .. RND,
    [M.random_vertical_flip] = T .. "random_vertical_flip([p=0.5]) -> transform: mirror top-bottom with probability p." .. RND,
    [M.random_grayscale] = T .. "random_grayscale([p=0.1]) -> transform: grayscale (same channel count) with probability p." .. RND,
    [M.random_resized_crop] = T .. "random_resized_crop(size[, {scale={0.08,1}, ratio={3/4,4/3}, interpolation=\"bilinear\",\n"
      .. "  antialias=true}]) -> transform: a random area fraction and aspect ratio, resized to size." .. RND,
    [M.random_rotation] = T .. "random_rotation(degrees[, {interpolation=\"nearest\", expand=false, center, fill=0}])\n"
      .. "  -> transform: rotate by uniform(-d, d) (or {min,max}) degrees; expand only for single images." .. RND,
    [M.random_affine] = T .. "random_affine(degrees[, {translate={fx,fy}, scale={min,max}, shear, interpolation=\"nearest\",\n"
      .. "  center, fill=0}]) -> transform: torchvision's RandomAffine." .. RND,
    [M.color_jitter] = T .. "color_jitter({brightness, contrast, saturation, hue}) -> transform: the four adjustments in a\n"
      .. "  random order with factors uniform in [1-v, 1+v] (or {min,max}); hue in [-h, h], h <= 0.5." .. RND,
    [M.gaussian_blur] = T .. "gaussian_blur(kernel_size[, sigma={0.1,2.0}]) -> transform: blur with sigma uniform in the range." .. RND,
    [M.random_erasing] = T .. "random_erasing([{p=0.5, scale={0.02,0.33}, ratio={0.3,3.3}, value=0}]) -> transform: erase a\n"
      .. "  random rectangle with probability p; value a number, one per channel or \"random\" (normal noise)." .. RND,
    [M.random_apply] = T .. "random_apply(list[, p=0.5]) -> transform: list's transforms in order to each image with\n"
      .. "  probability p (they get the chosen images as a batch)." .. RND,
    [M.random_choice] = T .. "random_choice(list[, weights]) -> transform: one transform of list per image (weights relative;\n"
      .. "  the results must share one shape)." .. RND,
  }
  for f, text in pairs(D) do docs[f] = text end
end

-- installs the transforms into data.transforms
return function(transforms)
  for k, v in pairs(M) do transforms[k] = v end
end
