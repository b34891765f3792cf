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

-- a value's type as messages name it ("Tensor" rather than "userdata")
local function type_name(v) return is_tensor(v) and "Tensor" or type(v) end
M._type_name = type_name

local function no_more(fname, n, ...)
  local extra = select("#", ...)
  if extra > 0 then fail("%s: unexpected argument #%d (%s)", fname, n + 1, type_name((...))) end
end

-- no argument n + 1 (x, which may be a nil the caller's signature filled in) nor after it
local function nothing_after(fname, n, x, ...)
  if x ~= nil then fail("%s: unexpected argument #%d (%s)", fname, n + 1, type_name(x)) end
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
  if not i then
    fail("%s: %s must be an integer, got %s", fname, what, mtype(v) and (v ~= v and "nan" or tostring(v)) or type(v))
  end
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
-- fail(msg, ...): the error at the user's line, for partrain's other Lua modules (nn_conv,
-- nn_extra, nn_rnn) too
M._fail = fail

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
      check_opts(fname, dim, {"dim", "keepdim"}) -- t:amax({dim = 2, keepdim = true}), torch's keywords
      nothing_after(fname, 2, keepdim, ...)
      keepdim, dim = dim.keepdim, dim.dim
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
  if t:dtype() == "bool" then t = t:to("int64") end -- torch.square(bool) is int64 (bool * bool is bool)
  return t * t
end, "t:square() -> t * t (integer tensors stay integer, bool gives int64 as torch). Also pt.square(t).")

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
  .. "  copied. A zero gradient, as floor and ceil (and PyTorch). Also pt.trunc(t).")

-- ------------------------------------------------------------------ shape helpers

local function shape_str(t)
  return "{" .. concat(type(t) == "table" and t or t:size(), ",") .. "}"
end

-- a list of integers (a table) or the numbers given as varargs (t:tile(2, 3) and t:tile({2, 3}))
local function int_list(fname, what, first, ...)
  local list = type(first) == "table" and first or {first, ...}
  if type(first) == "table" then no_more(fname, 2, ...) end
  local out = {}
  for i = 1, #list do out[i] = check_int(fname, what, list[i]) end
  return out
end

-- ------------------------------------------------------------------ movedim, swapaxes

local function movedim(fname)
  return function(t, src, dst, ...)
    check_tensor(fname, t); no_more(fname, 3, ...)
    if src == nil or dst == nil then fail("%s: source and destination expected (dimensions or lists of them)", fname) end
    local sl = type(src) == "table" and src or {src}
    local dl = type(dst) == "table" and dst or {dst}
    if #sl ~= #dl then
      fail("%s: source and destination must have the same number of dimensions, got %d and %d", fname, #sl, #dl)
    end
    local nd = t:dim()
    local s, d, used_s, used_d = {}, {}, {}, {}
    for i = 1, #sl do
      s[i], d[i] = check_dim(fname, sl[i], nd), check_dim(fname, dl[i], nd)
      if used_s[s[i]] then fail("%s: dimension %s appears more than once in source", fname, tostring(sl[i])) end
      if used_d[d[i]] then fail("%s: dimension %s appears more than once in destination", fname, tostring(dl[i])) end
      used_s[s[i]], used_d[d[i]] = true, true
    end
    if nd == 0 then return t:view({}) end
    -- order[dst] = src; the other dims keep their order in the free places
    local order = {}
    for i = 1, #s do order[d[i]] = s[i] end
    local rest = 1
    for pos = 1, nd do
      if not order[pos] then
        while used_s[rest] do rest = rest + 1 end
        order[pos] = rest
        rest = rest + 1
      end
    end
    return t:permute(order)
  end
end

local movedim_doc = "t:%s(source, destination) -> view with dims source moved to positions destination (numbers, or\n"
  .. "  lists of equal length; the other dims keep their order), as torch.%s. Also pt.%s(t, ...)."
add("movedim", movedim("movedim"), fmt(movedim_doc, "movedim", "movedim", "movedim"))
add("moveaxis", movedim("moveaxis"), fmt(movedim_doc, "moveaxis", "moveaxis (movedim's alias)", "moveaxis"))

-- aliases of transpose: the same functions, so help(t.swapaxes) shows transpose's text
for _, name in ipairs({"swapaxes", "swapdims"}) do
  if rawget(methods, name) == nil and rawget(pt, name) == nil then
    methods[name] = methods.transpose
    pt[name] = rawget(pt, "transpose") or methods.transpose
    M[name] = pt[name]
  else
    M._conflicts = M._conflicts or {}
    M._conflicts[#M._conflicts + 1] = name
  end
end

-- ------------------------------------------------------------------ repeat_interleave, tile

local function is_int_dtype(dt)
  return dt == "int64" or dt == "int32" or dt == "int16" or dt == "int8" or dt == "uint8"
end

-- 1-based positions 1..n repeated reps[i] times (reps: 1-D int64 tensor of n non-negative counts)
local function repeat_positions(reps)
  local n = reps:numel()
  local cum = reps:long():cumsum(1)
  local total = n > 0 and cum[n] or 0
  -- position p gets 1 + #{i : cum[i] < p}: count each cum[i] + 1, then a running sum
  local counts = pt.zeros(total + 1, {dtype = "int64"})
  if reps:device() ~= "cpu" then counts = counts:to(reps:device()) end
  if n > 0 then counts = counts:scatter_add(1, cum + 1, pt.ones_like(cum)) end
  return counts:narrow(1, 1, total):cumsum(1) + 1
end

add("repeat_interleave", function(t, repeats, dim, ...)
  local fname = "repeat_interleave"
  check_tensor(fname, t); no_more(fname, 3, ...)
  if type(dim) == "table" and not is_tensor(dim) then
    check_opts(fname, dim, {"dim"})
    dim = dim.dim
  end
  if repeats == nil then
    -- pt.repeat_interleave(counts): 1-based positions repeated
    if dim ~= nil then fail("%s: repeats expected (a number or a 1-D integer tensor)", fname) end
    if not is_int_dtype(t:dtype()) or t:dim() > 1 then
      fail("%s: with one argument, expects a 0-d or 1-D integer tensor of counts, got %s %s", fname,
           t:dtype(), shape_str(t))
    end
    local r = t:reshape(-1)
    if r:numel() > 0 and r:min():item() < 0 then fail("%s: repeats must be non-negative, got %d", fname, r:min():item()) end
    return repeat_positions(r)
  end
  local x = t
  local d
  if dim == nil then
    x, d = t:reshape(-1), 1
  else
    d = check_dim(fname, dim, t:dim())
    if t:dim() == 0 then x = t:reshape(1) end
  end
  local size = x:size(d)
  if is_tensor(repeats) then
    if not is_int_dtype(repeats:dtype()) then
      fail("%s: repeats must be an integer tensor, got %s", fname, repeats:dtype())
    end
    if repeats:dim() > 1 then
      fail("%s: repeats must be a number, a 0-d or a 1-D tensor, got shape %s", fname, shape_str(repeats))
    end
    local r = repeats:reshape(-1)
    if r:numel() > 0 and r:min():item() < 0 then fail("%s: repeats must be non-negative, got %d", fname, r:min():item()) end
    if r:numel() == 1 then
      repeats = r[1]
    else
      if r:numel() ~= size then
        fail("%s: repeats has %d entries but dimension %d of the input has size %d", fname, r:numel(), d, size)
      end
      return x:index_select(d, repeat_positions(r))
    end
  end
  local n = check_int(fname, "repeats", repeats)
  if n < 0 then fail("%s: repeats must be non-negative, got %d", fname, n) end
  if n == 0 then return x:narrow(d, 1, 0):clone() end
  -- a new dim of n copies after d, merged with d
  local shape, target = x:size(), x:size()
  table.insert(shape, d + 1, n)
  target[d] = target[d] * n
  return x:unsqueeze(d + 1):expand(shape):reshape(target)
end, "t:repeat_interleave(repeats[, dim]) -> copy of t with each element (each slice along dim) repeated\n"
  .. "  repeats times: a number, or a 1-D integer tensor with one count per slice (as torch.repeat_interleave).\n"
  .. "  Without dim t is flattened first. pt.repeat_interleave(counts) alone gives the 1-based positions\n"
  .. "  1..n repeated counts[i] times. Gradients flow back. Also pt.repeat_interleave(t, ...).")

add("tile", function(t, reps, ...)
  check_tensor("tile", t)
  if reps == nil then fail("tile: reps expected (a list of repeat counts)") end
  local r = int_list("tile", "a repeat count", reps, ...)
  for i = 1, #r do
    if r[i] < 0 then fail("tile: repeat counts must be non-negative, got %d", r[i]) end
  end
  local nd = t:dim()
  -- fewer reps than dims: leading 1s (torch.tile), more: new leading dims (repeat_tensor)
  while #r < nd do table.insert(r, 1, 1) end
  if #r == 0 then return t:clone() end
  return t:repeat_tensor(r)
end, "t:tile(reps) -> copy of t repeated reps[i] times along each dim (a list, or numbers t:tile(2, 3));\n"
  .. "  with fewer reps than dims the leading dims are repeated once, with more t gets new leading dims\n"
  .. "  (as torch.tile). Gradients flow back. Also pt.tile(t, reps).")

-- ------------------------------------------------------------------ diff

local diff_opts = {"n", "dim", "prepend", "append"}
add("diff", function(t, ...)
  local fname = "diff"
  check_tensor(fname, t)
  local args = {...}
  local nargs = select("#", ...)
  local opts = {}
  if nargs > 0 and type(args[nargs]) == "table" and not is_tensor(args[nargs]) then
    opts = args[nargs]
    check_opts(fname, opts, diff_opts)
    nargs = nargs - 1
  end
  if nargs > 2 then fail("%s: unexpected argument #%d (%s)", fname, 4, type_name(args[3])) end
  local n, dim
  if nargs >= 1 then n = args[1] end
  if nargs >= 2 then dim = args[2] end
  if opts.n ~= nil then n = opts.n end
  if opts.dim ~= nil then dim = opts.dim end
  n = n == nil and 1 or check_int(fname, "n", n)
  if n < 0 then fail("%s: n must be non-negative, got %d", fname, n) end
  local nd = t:dim()
  if nd == 0 then fail("%s: expects a tensor with at least 1 dimension", fname) end
  local d = check_dim(fname, dim == nil and -1 or dim, nd)
  local parts = {}
  for _, key in ipairs({"prepend", "append"}) do
    local e = opts[key]
    if e ~= nil then
      if not is_tensor(e) then fail("%s: %s must be a tensor, got %s", fname, key, type(e)) end
      if e:dim() ~= nd then
        fail("%s: %s must have as many dimensions as the input (%d), got %d", fname, key, nd, e:dim())
      end
      for k = 1, nd do
        if k ~= d and e:size(k) ~= t:size(k) then
          fail("%s: %s of shape %s must match the input's shape %s except in dimension %d", fname, key,
               shape_str(e), shape_str(t), d)
        end
      end
    end
  end
  if n == 0 then return t end
  local x = t
  if opts.prepend ~= nil or opts.append ~= nil then
    local list = {}
    if opts.prepend ~= nil then list[#list + 1] = opts.prepend end
    list[#list + 1] = t
    if opts.append ~= nil then list[#list + 1] = opts.append end
    x = pt.cat(list, d)
  end
  local is_bool = x:dtype() == "bool"
  for _ = 1, n do
    local len = x:size(d)
    if len == 0 then break end
    local hi, lo = x:narrow(d, 2, len - 1), x:narrow(d, 1, len - 1)
    x = is_bool and hi:ne(lo) or hi - lo
  end
  return x
end, "t:diff([n=1][, dim=-1][, {prepend=, append=}]) -> n-th forward difference along dim:\n"
  .. "  out[i] = t[i+1] - t[i], applied n times (size shrinks by n; bool tensors give t[i+1] ~= t[i]).\n"
  .. "  prepend/append: tensors joined before/after t along dim first (same shape except along dim).\n"
  .. "  n and dim may be options too. As torch.diff. Gradients flow back. Also pt.diff(t, ...).")

-- ------------------------------------------------------------------ cross

add("cross", function(a, b, dim, ...)
  local fname = "cross"
  check_tensor(fname, a); no_more(fname, 3, ...)
  if not is_tensor(b) then fail("%s: bad argument #2 (Tensor expected, got %s)", fname, type(b)) end
  if type(dim) == "table" then
    check_opts(fname, dim, {"dim"})
    dim = dim.dim
  end
  local nd = a:dim()
  if b:dim() ~= nd then
    fail("%s: inputs must have the same number of dimensions, got %s and %s", fname, shape_str(a), shape_str(b))
  end
  local shape = {}
  for k = 1, nd do
    local x, y = a:size(k), b:size(k)
    if x ~= y and x ~= 1 and y ~= 1 then
      fail("%s: shapes %s and %s cannot be broadcast", fname, shape_str(a), shape_str(b))
    end
    shape[k] = x == 1 and y or x
  end
  local d
  if dim == nil then
    -- torch.cross's default: the first dimension of size 3
    for k = 1, nd do
      if shape[k] == 3 then d = k; break end
    end
    if not d then fail("%s: no dimension of size 3 in the inputs (shapes %s and %s)", fname, shape_str(a), shape_str(b)) end
  else
    d = check_dim(fname, dim, nd)
  end
  if nd == 0 or a:size(d) ~= 3 or b:size(d) ~= 3 then
    fail("%s: dimension %d must have size 3 in both inputs, got shapes %s and %s", fname, d, shape_str(a), shape_str(b))
  end
  -- (a2 b3 - a3 b2, a3 b1 - a1 b3, a1 b2 - a2 b1)
  local function idx(t, list)
    local r = pt.tensor(list, {dtype = "int64"})
    if t:device() ~= "cpu" then r = r:to(t:device()) end
    return r
  end
  local a1, a2 = a:index_select(d, idx(a, {2, 3, 1})), a:index_select(d, idx(a, {3, 1, 2}))
  local b1, b2 = b:index_select(d, idx(b, {2, 3, 1})), b:index_select(d, idx(b, {3, 1, 2}))
  return a1 * b2 - a2 * b1
end, "pt.cross(a, b[, dim]) -> cross product of 3-element vectors along dim (a:cross(b) too); a and b\n"
  .. "  have the same number of dims and broadcast. Without dim, the first dimension of size 3 (torch.cross's\n"
  .. "  default; torch.linalg.cross uses -1). Gradients flow back.")

-- ------------------------------------------------------------------ einsum

-- one operand's subscripts -> list of labels (letters; "..." marks where the ellipsis dims go)
local function einsum_term(term, what)
  local labels, has_ell, i = {}, false, 1
  while i <= #term do
    local c = term:sub(i, i)
    if c == "." then
      if term:sub(i, i + 2) ~= "..." then
        fail("einsum: '.' in %s that is not part of an ellipsis '...'", what)
      end
      if has_ell then fail("einsum: more than one ellipsis '...' in %s", what) end
      has_ell = true
      labels[#labels + 1] = "..."
      i = i + 3
    elseif c:match("^[a-zA-Z]$") then
      labels[#labels + 1] = c
      i = i + 1
    else
      fail("einsum: invalid subscript '%s' in %s (subscripts are letters a-z, A-Z and one '...')", c, what)
    end
  end
  return labels, has_ell
end

-- the labels of t's dims after its repeated labels were reduced to diagonals (which go last)
local function einsum_diagonals(t, labels, k)
  local again = true
  while again do
    again = false
    for p = 1, #labels do
      for q = p + 1, #labels do
        if labels[p] == labels[q] then
          if t:size(p) ~= t:size(q) then
            fail("einsum: subscript '%s' is repeated in operand %d but its dimensions have sizes %d and %d",
                 labels[p], k, t:size(p), t:size(q))
          end
          local l = labels[p]
          t = t:diagonal(0, p, q)
          table.remove(labels, q); table.remove(labels, p)
          labels[#labels + 1] = l
          again = true
          break
        end
      end
      if again then break end
    end
  end
  return t, labels
end

-- sum t over the dims whose label keep[label] is false; returns t and its remaining labels
local function einsum_sum_out(t, labels, keep)
  local out = {}
  for p = #labels, 1, -1 do
    if not keep[labels[p]] then t = t:sum(p) end
  end
  for p = 1, #labels do
    if keep[labels[p]] then out[#out + 1] = labels[p] end
  end
  return t, out
end

-- contract a (labels la) with b (labels lb); labels in `needed` stay, shared ones not needed are summed
local function einsum_pair(a, la, b, lb, needed, sizes)
  local ina, inb = {}, {}
  for p, l in ipairs(la) do ina[l] = p end
  for p, l in ipairs(lb) do inb[l] = p end
  local batch, aonly, contr, bonly = {}, {}, {}, {}
  for _, l in ipairs(la) do
    if inb[l] then
      if needed[l] then batch[#batch + 1] = l else contr[#contr + 1] = l end
    else
      aonly[#aonly + 1] = l
    end
  end
  for _, l in ipairs(lb) do
    if not ina[l] then bonly[#bonly + 1] = l end
  end
  local function arrange(t, where, groups)
    local perm, shape, flat = {}, {}, {}
    for _, g in ipairs(groups) do
      local n = 1
      for _, l in ipairs(g) do
        perm[#perm + 1] = where[l]
        shape[#shape + 1] = sizes[l]
        n = n * sizes[l]
      end
      flat[#flat + 1] = n
    end
    if #perm > 0 then t = t:permute(perm) end
    return t:expand(shape):reshape(flat) -- size-1 dims broadcast
  end
  local da, db = a:dtype(), b:dtype()
  if not is_float(a) or not is_float(b) or da ~= db then
    fail("einsum: products of operands need float32 or float64 tensors of one dtype, got %s and %s (convert "
         .. "with float() or double())", da, db)
  end
  local am = arrange(a, ina, {batch, aonly, contr})
  local bm = arrange(b, inb, {batch, contr, bonly})
  local r = pt.bmm(am, bm)
  local shape, labels = {}, {}
  for _, g in ipairs({batch, aonly, bonly}) do
    for _, l in ipairs(g) do
      shape[#shape + 1] = sizes[l]
      labels[#labels + 1] = l
    end
  end
  return r:reshape(shape), labels
end

local function einsum(equation, ...)
  if type(equation) ~= "string" then
    fail("einsum: bad argument #1 (equation string expected, got %s)", is_tensor(equation) and "tensor" or type(equation))
  end
  local ops = {...}
  if select("#", ...) == 1 and type(ops[1]) == "table" and not is_tensor(ops[1]) then ops = ops[1] end
  local nops = #ops
  if nops == 0 then fail("einsum: expected at least one operand") end
  for k = 1, nops do
    if not is_tensor(ops[k]) then fail("einsum: operand %d is not a tensor (got %s)", k, type(ops[k])) end
  end
  local eq = equation:gsub("%s", "")
  local lhs, rhs = eq:match("^(.-)%->(.*)$")
  if not lhs then lhs = eq end
  if rhs and rhs:find("->", 1, true) then fail("einsum: more than one '->' in the equation") end
  local terms = {}
  for term in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = term end
  if #terms ~= nops then
    fail("einsum: the equation '%s' has %d operand%s but %d tensor%s given", equation, #terms,
         #terms == 1 and "" or "s", nops, nops == 1 and " was" or "s were")
  end
  -- labels per operand, the ellipsis expanded into labels "...1" .. "...E" (right-aligned)
  local parsed, n_ell = {}, 0
  for k = 1, nops do
    local labels, has_ell = einsum_term(terms[k], fmt("operand %d ('%s')", k, terms[k]))
    local named = #labels - (has_ell and 1 or 0)
    local nd = ops[k]:dim()
    if (has_ell and named > nd) or (not has_ell and named ~= nd) then
      fail("einsum: operand %d has %d dimensions but its subscripts '%s' name %d%s", k, nd, terms[k], named,
           has_ell and " (besides '...')" or "")
    end
    parsed[k] = {labels = labels, ell = has_ell and nd - named or 0}
    if has_ell then
      if nd - named > n_ell then n_ell = nd - named end
    end
  end
  local ell = {}
  for e = 1, n_ell do ell[e] = "..." .. e end
  local lists, sizes = {}, {}
  for k = 1, nops do
    local list = {}
    for _, l in ipairs(parsed[k].labels) do
      if l == "..." then
        for e = n_ell - parsed[k].ell + 1, n_ell do list[#list + 1] = ell[e] end
      else
        list[#list + 1] = l
      end
    end
    lists[k] = list
  end
  -- output labels
  local out, count = {}, {}
  for k = 1, nops do
    for _, l in ipairs(lists[k]) do count[l] = true end
  end
  if rhs then
    local labels = einsum_term(rhs, fmt("the output ('%s')", rhs))
    local used = {}
    for _, l in ipairs(labels) do
      if l == "..." then
        for e = 1, n_ell do out[#out + 1] = ell[e] end
      else
        if used[l] then fail("einsum: output subscript '%s' appears more than once", l) end
        if not count[l] then fail("einsum: output subscript '%s' does not appear in any operand", l) end
        used[l] = true
        out[#out + 1] = l
      end
    end
  else
    -- implicit output: the ellipsis dims, then the letters used once (in any operand, counting
    -- repeats within one), in alphabetical order (A-Z before a-z)
    for e = 1, n_ell do out[#out + 1] = ell[e] end
    local once = {}
    local occurrences = {}
    for k = 1, nops do
      for _, l in ipairs(parsed[k].labels) do
        if l ~= "..." then occurrences[l] = (occurrences[l] or 0) + 1 end
      end
    end
    for l, c in pairs(occurrences) do
      if c == 1 then once[#once + 1] = l end
    end
    sort(once)
    for _, l in ipairs(once) do out[#out + 1] = l end
  end
  -- diagonals of repeated labels, then the size of each label (size-1 dims broadcast)
  local ts = {}
  for k = 1, nops do
    local t, labels = einsum_diagonals(ops[k], {table.unpack(lists[k])}, k)
    for p, l in ipairs(labels) do
      local n = t:size(p)
      local prev = sizes[l]
      if prev == nil or prev == 1 then
        sizes[l] = n
      elseif n ~= prev and n ~= 1 then
        local name = l:sub(1, 3) == "..." and "'...'" or "'" .. l .. "'"
        fail("einsum: subscript %s has size %d in operand %d, which does not broadcast with size %d", name, n, k, prev)
      end
    end
    ts[k], lists[k] = t, labels
  end
  -- sum out what no other operand and not the output uses, then contract left to right
  local in_out = {}
  for _, l in ipairs(out) do in_out[l] = true end
  local function needed_after(k)
    local need = {}
    for l in pairs(in_out) do need[l] = true end
    for j = k + 1, nops do
      for _, l in ipairs(lists[j]) do need[l] = true end
    end
    return need
  end
  local function needed_besides(k)
    local need = needed_after(k)
    for j = 1, k - 1 do
      for _, l in ipairs(lists[j]) do need[l] = true end
    end
    return need
  end
  for k = 1, nops do ts[k], lists[k] = einsum_sum_out(ts[k], lists[k], needed_besides(k)) end
  local r, rl = ts[1], lists[1]
  for k = 2, nops do
    r, rl = einsum_pair(r, rl, ts[k], lists[k], needed_after(k), sizes)
  end
  -- labels left that the output does not keep (none, but a one-operand sum has been done above)
  r, rl = einsum_sum_out(r, rl, in_out)
  local where = {}
  for p, l in ipairs(rl) do where[l] = p end
  local perm, shape = {}, {}
  for i, l in ipairs(out) do
    perm[i] = where[l]
    shape[i] = sizes[l]
  end
  if #perm > 0 then r = r:permute(perm) end
  -- size-1 broadcast dims of a single operand reach their full size
  if #shape > 0 then r = r:expand(shape) end
  return r
end
docs[einsum] = "pt.einsum(equation, t1, t2, ...) (or a list of tensors) -> Einstein summation as torch.einsum:\n"
  .. "  'ij,jk->ik' (matrix product), 'bij,bjk->bik' (batched), 'ij->ji' (transpose), 'ii->i' (diagonal),\n"
  .. "  'ii' (trace), 'i,j->ij' (outer), 'ij->j' (sum over i), '...ij,...jk->...ik' (ellipsis broadcasts).\n"
  .. "  Subscripts are letters; without '->' the output is the letters used once, alphabetically.\n"
  .. "  Built on diagonal/sum/permute/bmm, so gradients flow back; a pure permutation ('ij->ji') is a view,\n"
  .. "  as in torch. The sublist form einsum(t, {0, 1}, ...) is not supported."
M.einsum = einsum
if rawget(pt, "einsum") == nil then
  pt.einsum = einsum -- a module function only: the equation comes first
else
  M._conflicts = M._conflicts or {}
  M._conflicts[#M._conflicts + 1] = "einsum"
end

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

-- ------------------------------------------------------------------ pad (nn.functional)

local pad_modes = {constant = true, reflect = true, replicate = true, circular = true}

function M.pad(t, pad, mode, value, ...)
  local fname = "pad"
  check_tensor(fname, t)
  if type(mode) == "table" then
    nothing_after(fname, 3, value, ...)
    check_opts(fname, mode, {"mode", "value"})
    mode, value = mode.mode, mode.value
  else
    no_more(fname, 4, ...)
  end
  if type(pad) ~= "table" or is_tensor(pad) then
    fail("%s: pad must be a list of integers (last dimension first), got %s", fname, is_tensor(pad) and "tensor" or type(pad))
  end
  local p = {}
  for i = 1, #pad do p[i] = check_int(fname, "a padding size", pad[i]) end
  if mode == nil then mode = "constant" end
  if type(mode) ~= "string" or not pad_modes[mode] then
    fail("%s: mode must be constant, reflect, replicate or circular, got %s", fname,
         type(mode) == "string" and "'" .. mode .. "'" or type(mode))
  end
  if value ~= nil and value ~= 0 and mode ~= "constant" then -- torch lets 0 through
    fail("%s: mode '%s' takes no value (only constant padding has one)", fname, mode)
  end
  if value ~= nil and type(value) ~= "number" and type(value) ~= "boolean" then
    fail("%s: value must be a number, got %s", fname, type(value))
  end
  if #p % 2 ~= 0 then fail("%s: the padding list must have an even length, got %d", fname, #p) end
  local nd, np = t:dim(), #p // 2
  if np > nd then
    fail("%s: %d padding sizes pad %d dimensions, but the input %s has %d", fname, #p, np, shape_str(t), nd)
  end
  if mode ~= "constant" then
    -- torch's rule: 2 sizes for a 2-D/3-D input, 4 for 3-D/4-D, 6 for 4-D/5-D
    if not ((#p == 2 or #p == 4 or #p == 6) and (nd == np + 1 or nd == np + 2)) then
      fail("%s: mode '%s' pads 2-D or 3-D inputs by 2 sizes, 3-D or 4-D inputs by 4 and 4-D or 5-D inputs "
           .. "by 6, got %d sizes for a %d-D input", fname, mode, #p, nd)
    end
    if mode == "circular" and #p ~= 2 * (nd - 2) then
      fail("%s: circular padding pads every dimension after the first two (batch and channel): expected %d "
           .. "sizes for a %d-D input, got %d", fname, 2 * (nd - 2), nd, #p)
    end
  end
  local x = t
  for i = 1, np do
    local d = nd - i + 1
    local l, r = p[2 * i - 1], p[2 * i]
    local n = x:size(d)
    if n + l + r < 0 or n + math.min(l, 0) + math.min(r, 0) < 0 then
      fail("%s: padding (%d, %d) leaves a negative size for dimension %d of size %d", fname, l, r, d, n)
    end
    if mode == "constant" then
      if l < 0 or r < 0 then
        local cl, cr = math.max(-l, 0), math.max(-r, 0)
        x = x:narrow(d, cl + 1, n - cl - cr)
      end
      if l > 0 or r > 0 then
        local parts = {}
        local function filler(k)
          local shape = x:size()
          shape[d] = k
          local f = pt.full(shape, value or 0, {dtype = x:dtype()})
          if x:device() ~= "cpu" then f = f:to(x:device()) end
          return f
        end
        if l > 0 then parts[#parts + 1] = filler(l) end
        parts[#parts + 1] = x
        if r > 0 then parts[#parts + 1] = filler(r) end
        x = pt.cat(parts, d)
      end
    elseif l ~= 0 or r ~= 0 then
      if mode ~= "circular" and n + l + r == 0 then
        fail("%s: padding (%d, %d) leaves dimension %d of size %d empty, which mode '%s' cannot do (input %s)",
             fname, l, r, d, n, mode, shape_str(t))
      end
      if mode == "circular" and (l < 0 or r < 0) then -- crop first, then wrap what is left (torch)
        local cl, cr = math.max(-l, 0), math.max(-r, 0)
        x = x:narrow(d, cl + 1, n - cl - cr)
        n, l, r = n - cl - cr, math.max(l, 0), math.max(r, 0)
      end
      if mode == "reflect" and (l >= n or r >= n) then
        fail("%s: reflect padding (%d, %d) must be smaller than the size %d of dimension %d (input %s)", fname,
             l, r, n, d, shape_str(t))
      end
      if mode == "circular" and (l > n or r > n) then
        fail("%s: circular padding (%d, %d) wraps around more than once: dimension %d has size %d", fname,
             l, r, d, n)
      end
      if n == 0 and l == 0 and r == 0 then goto continue end -- circular cropped to nothing: torch's empty result
      if n == 0 then fail("%s: mode '%s' cannot pad dimension %d of size 0", fname, mode, d) end
      -- 0-based source position of each output position j = -l .. n-1+r
      local j = positions(x, -l, n + r)
      local src
      if mode == "reflect" then
        local a = j:abs()
        src = pt.where(a:gt(n - 1), 2 * (n - 1) - a, a)
      elseif mode == "replicate" then
        src = j:clamp(0, n - 1)
      else
        src = pt.where(j:lt(0), j + n, pt.where(j:ge(n), j - n, j))
      end
      x = x:index_select(d, src + 1)
    end
    ::continue::
  end
  if x == t then x = t:clone() end
  return x
end
docs[M.pad] = "nn.functional.pad(t, pad[, {mode=\"constant\", value=0}]) (or pad(t, pad, mode, value)) -> t padded\n"
  .. "  as torch's F.pad: pad lists sizes for the last dimension first, {left, right, top, bottom, front,\n"
  .. "  back, ...}. constant fills with value (negative sizes crop); reflect mirrors without repeating the\n"
  .. "  edge (sizes < the dim's size); replicate repeats the edge; circular wraps around (sizes <= the dim's\n"
  .. "  size). The other modes pad 2-D/3-D inputs by 2 sizes, 3-D/4-D by 4, 4-D/5-D by 6 (circular: every\n"
  .. "  dim after batch and channel). Gradients flow back."

-- the argument checks, for partrain.tensor_more and partrain.resample (written the same way)
M._check = {no_more = no_more, opts = check_opts, int = check_int, dim = check_dim, is_float = is_float,
  nothing_after = nothing_after, tensor = check_tensor, shape_str = shape_str}

return M
