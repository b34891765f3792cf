-- partrain.tensor: everyday PyTorch tensor functions written in Lua over the core ops, so that
-- autograd runs through them (isnan, argsort, flip, tril/triu, amax/amin, roll, ...). Loaded by
-- init.lua at start-up; each function is both a method (t:flip(1)) and pt.flip(t, 1), and
-- never replaces one that already exists (M._conflicts lists any that were left out).
local pt = require "partrain.core"

local M = {}
local methods, docs = pt.Tensor, pt._docs
local is_tensor, getinfo, mtype, toint = pt.is_tensor, debug.getinfo, math.type, math.tointeger
local fmt, concat, sort = string.format, table.concat, table.sort

-- errors point at the nearest Lua frame outside partrain's own modules (as the C bindings do)
local own_dir = getinfo(1, "S").source:match("^@(.*/)[^/]*$") or "\0"
local function fail(msg, ...)
  if select("#", ...) > 0 then msg = fmt(msg, ...) end
  local level = 2
  while true do
    local info = getinfo(level, "S")
    if not info then return error(msg, 0) end
    if info.what ~= "C" and info.source:sub(1, #own_dir + 1) ~= "@" .. own_dir then
      return error(msg, level)
    end
    level = level + 1
  end
end

local function check_tensor(fname, t)
  if not is_tensor(t) then fail("%s: bad argument #1 (Tensor expected, got %s)", fname, type(t)) end
end

local function no_more(fname, n, ...)
  local extra = select("#", ...)
  if extra > 0 then fail("%s: unexpected argument #%d (%s)", fname, n + 1, type((...))) end
end

-- no argument n + 1 (x, which may be a nil the caller's signature filled in) nor after it
local function nothing_after(fname, n, x, ...)
  if x ~= nil then fail("%s: unexpected argument #%d (%s)", fname, n + 1, type(x)) end
  no_more(fname, n + 1, ...)
end

-- opts with only the keys of names (a list), as lpt_check_options
local function check_opts(fname, opts, names)
  for k in pairs(opts) do
    local known = false
    for _, n in ipairs(names) do known = known or k == n end
    if not known then fail("%s: unknown option '%s' (options: %s)", fname, tostring(k), concat(names, ", ")) end
  end
end

local function check_int(fname, what, v)
  local i = mtype(v) and toint(v)
  if not i then fail("%s: %s must be an integer, got %s", fname, what, mtype(v) and tostring(v) or type(v)) end
  return i
end

-- 1-based dim, negative from the end; a 0-d tensor takes 1 and -1 (as lpt_check_dim)
local function check_dim(fname, d, ndim)
  d = check_int(fname, "dimension", d)
  local n = ndim > 0 and ndim or 1
  local r = d < 0 and d + n + 1 or d
  if r < 1 or r > n then fail("%s: dimension %d out of range (tensor has %d dimensions)", fname, d, ndim) end
  return r
end

-- a dim or a list of dims -> list of normalised dims, each once
local function check_dims(fname, dims, ndim)
  local list = type(dims) == "table" and dims or {dims}
  local out, seen = {}, {}
  for i = 1, #list do
    local d = check_dim(fname, list[i], ndim)
    if seen[d] then fail("%s: dimension %s appears more than once in the list of dimensions", fname, tostring(list[i])) end
    seen[d] = true
    out[i] = d
  end
  return out
end

local function is_float(t)
  local dt = t:dtype()
  return dt == "float32" or dt == "float64"
end

-- 1-D int64 arange on t's device
local function positions(t, a, b, step)
  local r = pt.arange(a, b, step or 1)
  local dev = t:device()
  if dev ~= "cpu" then r = r:to(dev) end
  return r
end

local function add(name, f, text)
  docs[f] = text
  M[name] = f
  if rawget(methods, name) == nil and rawget(pt, name) == nil then
    methods[name] = f
    pt[name] = f
  else
    M._conflicts = M._conflicts or {}
    M._conflicts[#M._conflicts + 1] = name
  end
end
M._conflicts = nil

-- ------------------------------------------------------------------ tests of values

add("isnan", function(t, ...)
  check_tensor("isnan", t); no_more("isnan", 1, ...)
  t = t:detach()
  return t:ne(t)
end, "t:isnan() -> bool tensor, true where t is NaN (integer tensors: all false). Also pt.isnan(t).\n"
  .. "  No gradient (as PyTorch).")

add("isinf", function(t, ...)
  check_tensor("isinf", t); no_more("isinf", 1, ...)
  if not is_float(t) then return pt.zeros_like(t, {dtype = "bool"}) end
  return t:detach():abs():eq(math.huge)
end, "t:isinf() -> bool tensor, true where t is +inf or -inf (integer tensors: all false). Also pt.isinf(t).\n"
  .. "  No gradient (as PyTorch).")

add("isfinite", function(t, ...)
  check_tensor("isfinite", t); no_more("isfinite", 1, ...)
  if not is_float(t) then return pt.ones_like(t, {dtype = "bool"}) end
  return t:detach():abs():lt(math.huge)
end, "t:isfinite() -> bool tensor, true where t is neither NaN nor +-inf (integer tensors: all true).\n"
  .. "  Also pt.isfinite(t). No gradient (as PyTorch).")

-- ------------------------------------------------------------------ argsort

local argsort_opts = {"dim", "descending", "stable"}
add("argsort", function(t, dim, descending, ...)
  check_tensor("argsort", t)
  local opts
  if type(dim) == "table" then
    opts, dim = dim, nil
    nothing_after("argsort", 2, descending, ...)
  elseif type(descending) == "table" then
    opts, descending = descending, nil
    no_more("argsort", 3, ...)
  else
    no_more("argsort", 3, ...)
  end
  if opts then
    check_opts("argsort", opts, argsort_opts)
    if opts.dim ~= nil then dim = opts.dim end
    if opts.descending ~= nil then descending = opts.descending end
  end
  if descending ~= nil and type(descending) ~= "boolean" then
    fail("argsort: descending must be a boolean, got %s", type(descending))
  end
  local d = dim == nil and -1 or dim
  d = check_dim("argsort", d, t:dim())
  local _, idx = t:detach():sort(d, descending == true)
  return idx
end, "t:argsort([dim=-1][, descending | {dim=-1, descending=false, stable=}]) -> int64 1-based indices that\n"
  .. "  sort t along dim: the indices of t:sort(). Stable (equal values keep their order; stable= is\n"
  .. "  accepted for PyTorch's spelling); NaN sorts as the largest. Also pt.argsort(t, ...). No gradient.")

-- ------------------------------------------------------------------ flip, roll

add("flip", function(t, dims, ...)
  check_tensor("flip", t)
  if dims == nil then fail("flip: dims expected (a dimension or a list of dimensions)") end
  if type(dims) == "table" then
    no_more("flip", 2, ...)
  elseif select("#", ...) > 0 then
    dims = {dims, ...}
  end
  local nd = t:dim()
  dims = check_dims("flip", dims, nd)
  local out = t
  if nd > 0 then
    for _, d in ipairs(dims) do
      local n = t:size(d)
      if n > 1 then out = out:index_select(d, positions(t, n, 0, -1)) end
    end
  end
  if out == t then out = t:clone() end
  return out
end, "t:flip(dims) -> copy of t with the order of elements reversed along dims (a dimension or a\n"
  .. "  list of them; t:flip(1, 2) too), as torch.flip. Gradients flow back. Also pt.flip(t, dims).")

-- t rolled by shift along dim d: cat of the last `s` elements and the rest
local function roll1(t, shift, d)
  local n = t:size(d)
  if n == 0 then return t end
  local s = shift % n
  if s == 0 then return t end
  return pt.cat({t:narrow(d, n - s + 1, s), t:narrow(d, 1, n - s)}, d)
end

add("roll", function(t, shifts, dims, ...)
  check_tensor("roll", t); no_more("roll", 3, ...)
  if shifts == nil then fail("roll: shifts expected (a number or a list of numbers)") end
  local sl = {}
  if type(shifts) ~= "table" then shifts = {shifts} end
  for i = 1, #shifts do sl[i] = check_int("roll", "shift", shifts[i]) end
  local nd = t:dim()
  local out = t
  if dims == nil then
    if #sl ~= 1 then fail("roll: without dims, shifts must be one number (got %d)", #sl) end
    if nd == 0 then return t:clone() end
    out = roll1(t:reshape(-1), sl[1], 1):reshape(t:size())
  else
    local dl = type(dims) == "table" and dims or {dims}
    if #dl ~= #sl then fail("roll: shifts and dims must have the same length (got %d and %d)", #sl, #dl) end
    for i = 1, #dl do
      local d = check_dim("roll", dl[i], nd)
      if nd > 0 then out = roll1(out, sl[i], d) end
    end
  end
  if out == t or out:is_same_storage(t) then out = out:clone() end
  return out
end, "t:roll(shifts[, dims]) -> copy of t with its elements shifted circularly by shifts along dims\n"
  .. "  (numbers, or lists of equal length; a positive shift moves elements to higher indices); without\n"
  .. "  dims over the flattened tensor, shape kept (as torch.roll). Gradients flow back. Also pt.roll(t, ...).")

-- ------------------------------------------------------------------ tril, triu

local function triangle(fname, keep_lower)
  return function(t, diagonal, ...)
    check_tensor(fname, t); no_more(fname, 2, ...)
    if type(diagonal) == "table" then
      check_opts(fname, diagonal, {"diagonal"})
      diagonal = diagonal.diagonal
    end
    local k = diagonal == nil and 0 or check_int(fname, "diagonal", diagonal)
    local nd = t:dim()
    if nd < 2 then fail("%s: input must have at least 2 dimensions, got %d", fname, nd) end
    local r, c = t:size(nd - 1), t:size(nd)
    -- col - row, {r, c}: tril zeroes col - row > k, triu zeroes col - row < k
    local off = positions(t, 1, c + 1):view(1, c) - positions(t, 1, r + 1):view(r, 1)
    return t:masked_fill(keep_lower and off:gt(k) or off:lt(k), 0)
  end
end

add("tril", triangle("tril", true),
  "t:tril([diagonal=0]) -> copy of t with the elements above the diagonal-th diagonal set to 0, over\n"
  .. "  the last two dims (batched). diagonal > 0 keeps more diagonals above the main one, < 0 fewer\n"
  .. "  (as torch.tril); also {diagonal=}. Gradients flow back. Also pt.tril(t, ...).")
add("triu", triangle("triu", false),
  "t:triu([diagonal=0]) -> copy of t with the elements below the diagonal-th diagonal set to 0, over\n"
  .. "  the last two dims (batched). diagonal > 0 drops diagonals above the main one too, < 0 keeps some\n"
  .. "  below (as torch.triu); also {diagonal=}. Gradients flow back. Also pt.triu(t, ...).")

-- ------------------------------------------------------------------ amax, amin

local function extreme(fname, op)
  local fop = op == "max" and pt.max or pt.min
  return function(t, dim, keepdim, ...)
    check_tensor(fname, t)
    if type(keepdim) == "table" then
      check_opts(fname, keepdim, {"keepdim"})
      keepdim = keepdim.keepdim
      no_more(fname, 3, ...)
    elseif type(dim) == "table" and dim[1] == nil and next(dim) ~= nil then
      check_opts(fname, dim, {"keepdim"}) -- t:amax({keepdim = true}): every dim
      nothing_after(fname, 2, keepdim, ...)
      keepdim, dim = dim.keepdim, nil
    else
      no_more(fname, 3, ...)
    end
    if keepdim ~= nil and type(keepdim) ~= "boolean" then
      fail("%s: keepdim must be a boolean, got %s", fname, type(keepdim))
    end
    local nd = t:dim()
    local dims
    if dim == nil then
      dims = {}
      for d = 1, nd do dims[d] = d end
    else
      dims = check_dims(fname, dim, nd)
      if #dims == 0 then for d = 1, nd do dims[d] = d end end
    end
    if nd == 0 then return t:clone() end
    sort(dims, function(a, b) return a > b end)
    for _, d in ipairs(dims) do
      if t:size(d) == 0 then
        fail("%s: cannot reduce over an empty dimension (shape {%s})", fname, concat(t:size(), ","))
      end
    end
    local m = t:detach()
    for _, d in ipairs(dims) do m = fop(m, d, true) end
    local out = m
    if t.requires_grad and is_float(t) and pt.is_grad_enabled() then
      -- m plus a term that is 0 (inf, NaN where m is) and sends the gradient evenly to the
      -- elements equal to m, as PyTorch's amax/amin backward
      local mask = t:eq(m)
      local c = pt.where(m:abs():lt(math.huge), m, 0)
      local s, count = pt.where(mask, t - c, 0), mask
      for _, d in ipairs(dims) do
        s = s:sum(d, true)
        count = count:sum(d, true)
      end
      out = m + s / count:to(t:dtype())
    end
    if not keepdim then
      for _, d in ipairs(dims) do out = out:squeeze(d) end
    end
    return out
  end
end

add("amax", extreme("amax", "max"),
  "t:amax([dim][, keepdim=false]) -> the largest values along dim (a dimension or a list, e.g. {1, 3};\n"
  .. "  every dim without one), values only (torch.amax); NaN if a slice has one. {keepdim=} too.\n"
  .. "  The gradient is shared evenly between equal largest elements (as PyTorch). Also pt.amax(t, ...).")
add("amin", extreme("amin", "min"),
  "t:amin([dim][, keepdim=false]) -> the smallest values along dim (a dimension or a list, e.g. {1, 3};\n"
  .. "  every dim without one), values only (torch.amin); NaN if a slice has one. {keepdim=} too.\n"
  .. "  The gradient is shared evenly between equal smallest elements (as PyTorch). Also pt.amin(t, ...).")

-- ------------------------------------------------------------------ elementwise

local clamp = rawget(methods, "clamp")
if clamp then
  -- an alias: the same function, so help(t.clip) shows clamp's text
  if rawget(methods, "clip") == nil and rawget(pt, "clip") == nil then
    methods.clip = clamp
    pt.clip = rawget(pt, "clamp") or clamp
    M.clip = pt.clip
  else
    M._conflicts = M._conflicts or {}
    M._conflicts[#M._conflicts + 1] = "clip"
  end
end

add("square", function(t, ...)
  check_tensor("square", t); no_more("square", 1, ...)
  return t * t
end, "t:square() -> t * t (integer tensors stay integer). Also pt.square(t).")

add("reciprocal", function(t, ...)
  check_tensor("reciprocal", t); no_more("reciprocal", 1, ...)
  return 1 / t
end, "t:reciprocal() -> 1 / t (integer tensors give float32; 1/0 = inf). Also pt.reciprocal(t).")

add("rsqrt", function(t, ...)
  check_tensor("rsqrt", t); no_more("rsqrt", 1, ...)
  return 1 / t:sqrt()
end, "t:rsqrt() -> 1 / sqrt(t) (inf at 0, NaN below; integer tensors give float32). Also pt.rsqrt(t).")

add("trunc", function(t, ...)
  check_tensor("trunc", t); no_more("trunc", 1, ...)
  if not is_float(t) then return t:clone() end
  return pt.where(t:lt(0), t:ceil(), t:floor())
end, "t:trunc() -> rounded toward zero (-1.7 -> -1, -0.5 -> -0); NaN and +-inf kept, integer tensors\n"
  .. "  copied. No gradient, as floor and ceil (PyTorch's is zero everywhere). Also pt.trunc(t).")

-- ------------------------------------------------------------------ one_hot (nn.functional)

function M.one_hot(indices, num_classes, ...)
  check_tensor("one_hot", indices); no_more("one_hot", 2, ...)
  local dt = indices:dtype()
  if dt == "float32" or dt == "float64" or dt == "bool" then
    fail("one_hot: indices must be an integer tensor, got %s", dt)
  end
  if type(num_classes) == "table" then
    check_opts("one_hot", num_classes, {"num_classes"})
    num_classes = num_classes.num_classes
  end
  local n = indices:numel()
  local c = num_classes == nil and -1 or check_int("one_hot", "num_classes", num_classes)
  if c < -1 then fail("one_hot: num_classes must be -1 (infer) or at least 0, got %d", c) end
  if n > 0 then
    local lo, hi = indices:min():item(), indices:max():item()
    if c == -1 then c = hi end
    if lo < 1 then fail("one_hot: class %d out of range 1..%d", lo, c) end
    if hi > c then fail("one_hot: class %d out of range 1..%d", hi, c) end
  elseif c == -1 then
    fail("one_hot: cannot infer the number of classes from an empty tensor (pass num_classes)")
  end
  return indices:unsqueeze(-1):eq(positions(indices, 1, c + 1)):long()
end
docs[M.one_hot] = "nn.functional.one_hot(indices[, num_classes | {num_classes=}]) -> int64 tensor {..., C}: 1 at the\n"
  .. "  1-based class index of each element of the integer tensor indices, 0 elsewhere. C defaults to the\n"
  .. "  largest index; indices outside 1..C are an error. No gradient (as PyTorch)."

return M
