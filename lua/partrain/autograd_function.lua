-- pt.autograd.Function: operations with a forward and a backward written in Lua, as PyTorch's
-- torch.autograd.Function.
--
--   local Exp = pt.autograd.Function:extend("Exp")
--   function Exp.forward(ctx, x) local y = x:exp(); ctx:save_for_backward(y); return y end
--   function Exp.backward(ctx, gy) local y = table.unpack(ctx.saved_tensors); return gy * y end
--   local y = Exp.apply(x)        -- or Exp(x)
--
-- forward runs with gradient recording off; when an argument requires grad, the differentiable
-- outputs get one node (host/l_autograd.c, "autograd.Function") whose backward calls the class's
-- backward once per pass with the gradient of every output, in this state. Under create_graph
-- the backward runs with recording on, so that a backward written with differentiable ops gives
-- second derivatives (saved outputs then come back with the node's history, as torch's).
local pt = require "partrain.core"
local autograd = pt.autograd
local fail = require("partrain.tensor")._fail

local doc = pt._doc

local function is_float(t)
  local dt = t:dtype()
  return dt == "float32" or dt == "float64"
end

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

-- ------------------------------------------------------------------ the ctx object

local Ctx = {__name = "FunctionCtx"}
local ctx_methods = {}

-- saved_tensors: the tensors given to save_for_backward, checked against in-place changes since;
-- in a backward a saved output carries the node's history
local function saved_tensors(ctx)
  local record = rawget(ctx, "_record")
  if record and record.released then
    error(string.format("%s: trying to backward through the graph a second time (or to read saved tensors after "
      .. "they were freed): a backward frees them; pass retain_graph = true to the first one to keep them",
      record.name), 2)
  end
  local saved = rawget(ctx, "_saved")
  if not saved then return {} end
  local out = {}
  for i = 1, saved.n do
    local t = saved[i]
    if t ~= nil then
      local v = pt._tensor_version(t)
      if v ~= saved.versions[i] then
        error(string.format("%s: one of the variables needed for gradient computation has been modified by an "
          .. "inplace operation: saved tensor %d of shape %s is at version %d; expected version %d",
          record and record.name or "autograd.Function", i, shape_str(t), v, saved.versions[i]), 2)
      end
      local j = record and record.in_backward and record.out_index[t]
      if j then t = pt._fn_saved_output(record, t, record.offsets[j], record.total) end
    end
    out[i] = t
  end
  out.n = saved.n
  return out
end

Ctx.__index = function(ctx, k)
  if k == "saved_tensors" then return saved_tensors(ctx) end
  return ctx_methods[k]
end
Ctx.__tostring = function(ctx)
  local record = rawget(ctx, "_record")
  return "FunctionCtx(" .. (record and record.name or rawget(ctx, "_name") or "?") .. ")"
end

function ctx_methods.save_for_backward(ctx, ...)
  local n = select("#", ...)
  local saved = {n = n, versions = {}}
  for i = 1, n do
    local t = select(i, ...)
    if t ~= nil and not pt.is_tensor(t) then
      fail(string.format("save_for_backward: argument %d is a %s; only tensors (or nil) can be saved "
        .. "(keep other values as fields of ctx)", i, type(t)))
    end
    saved[i] = t
    saved.versions[i] = t ~= nil and pt._tensor_version(t) or nil
  end
  rawset(ctx, "_saved", saved)
end
doc(ctx_methods.save_for_backward, [[ctx:save_for_backward(t1, t2, ...): keep tensors for the backward, where
  ctx.saved_tensors gives them back as a list (nil entries kept). A saved tensor changed in place
  after it was saved makes reading saved_tensors an error, as in torch. Other values: plain
  fields of ctx (ctx.k = 3).]])

function ctx_methods.mark_non_differentiable(ctx, ...)
  local set = rawget(ctx, "_nondiff")
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if not pt.is_tensor(t) then
      fail(string.format("mark_non_differentiable: argument %d is a %s, not a tensor", i, type(t)))
    end
    set[t] = true
  end
end
doc(ctx_methods.mark_non_differentiable, [[ctx:mark_non_differentiable(t, ...): these outputs of the forward get no
  gradient (they do not require grad; the backward receives zeros for them), e.g. the indices of a sort.]])

function ctx_methods.mark_dirty(ctx, ...)
  local set = rawget(ctx, "_dirty")
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if not pt.is_tensor(t) then fail(string.format("mark_dirty: argument %d is a %s, not a tensor", i, type(t))) end
    set[t] = true
  end
end
doc(ctx_methods.mark_dirty, [[ctx:mark_dirty(t, ...): the forward changed these inputs in place and returns them: they
  come back as the same tensors with this function as their history (torch's mark_dirty). A leaf
  that requires grad, or a view, cannot be marked (an error).]])

function ctx_methods.set_materialize_grads(ctx, flag)
  rawset(ctx, "_materialize", flag and true or false)
end
doc(ctx_methods.set_materialize_grads, [[ctx:set_materialize_grads(flag): with false, the backward receives nil instead of
  zeros for outputs that are not differentiable tensors (default true, as torch). Differentiable
  outputs that got no gradient in a pass still arrive as zeros when the function has several
  (their gradients travel together).]])

-- ------------------------------------------------------------------ apply and backward

local function grad_name(cls) return rawget(cls, "__name") .. "Backward" end

-- the backward's gradients of the node's inputs (in the node's order), from the class's backward
local function run_backward(record, gout)
  local ctx = record.ctx
  local grads = {}
  if #record.outs == 1 then
    grads[1] = gout
  else
    for j, o in ipairs(record.outs) do
      local g = gout:narrow(1, record.offsets[j] + 1, o:numel()):view(o:size())
      if g:dtype() ~= o:dtype() then g = g:to(o:dtype()) end
      grads[j] = g
    end
  end
  local materialize = rawget(ctx, "_materialize") ~= false
  local gl = {}
  for pos = 1, record.n_results do
    local r = record.results[pos]
    if record.diff_at[pos] then
      gl[pos] = grads[record.diff_at[pos]]
    elseif materialize and pt.is_tensor(r) then
      gl[pos] = pt.zeros_like(r)
    end
  end
  record.in_backward = true
  local res = table.pack(record.cls.backward(ctx, table.unpack(gl, 1, record.n_results)))
  record.in_backward = false
  if res.n < record.nargs then
    error(string.format("function %s returned an incorrect number of gradients (expected %d, got %d)",
      record.name, record.nargs, res.n), 0)
  end
  for i = record.nargs + 1, res.n do
    if res[i] ~= nil then
      error(string.format("function %s returned an incorrect number of gradients (expected %d, got %d)",
        record.name, record.nargs, res.n), 0)
    end
  end
  for i = 1, record.nargs do
    local g = res[i]
    if g ~= nil and not pt.is_tensor(g) then
      error(string.format("function %s returned a %s as the gradient of argument %d (expected a tensor or nil)",
        record.name, type(g), i), 0)
    end
    if g ~= nil and not record.arg_is_tensor[i] then
      error(string.format("function %s returned a gradient different than nil at position %d, but the "
        .. "corresponding forward input was not a tensor", record.name, i), 0)
    end
  end
  local out = {}
  for d, pos in ipairs(record.diff_pos) do out[d] = res[pos] end
  return out
end

local function apply(cls, ...)
  local forward, backward = cls.forward, cls.backward
  local name = rawget(cls, "__name")
  if type(forward) ~= "function" then fail(string.format("%s.apply: the class has no forward(ctx, ...)", name)) end
  if type(backward) ~= "function" then fail(string.format("%s.apply: the class has no backward(ctx, ...)", name)) end
  local args = table.pack(...)
  local grad_on = pt.is_grad_enabled()
  local needs, diff_pos, diff_in, arg_is_tensor = {}, {}, {}, {}
  for i = 1, args.n do
    local a = args[i]
    local is_t = pt.is_tensor(a)
    arg_is_tensor[i] = is_t
    local need = grad_on and is_t and a.requires_grad or false
    needs[i] = need
    if need then
      diff_pos[#diff_pos + 1] = i
      diff_in[#diff_in + 1] = a
    end
  end
  local ctx = setmetatable({needs_input_grad = needs, _nondiff = {}, _dirty = {}, _name = name}, Ctx)
  local results = table.pack(pt.no_grad(forward, ctx, ...))
  if #diff_in == 0 then return table.unpack(results, 1, results.n) end
  local nondiff, dirty = rawget(ctx, "_nondiff"), rawget(ctx, "_dirty")
  for t in pairs(dirty) do
    local found = false
    for i = 1, args.n do if rawequal(args[i], t) then found = true end end
    if not found then fail(string.format("%s.apply: mark_dirty got a tensor that is not an argument of forward", name)) end
  end
  local outs, diff_at, dirty_flags, out_index, offsets = {}, {}, {}, {}, {}
  local total = 0
  for pos = 1, results.n do
    local r = results[pos]
    if pt.is_tensor(r) and is_float(r) and not nondiff[r] then
      if out_index[r] then
        fail(string.format("%s.apply: forward returned the same tensor twice (outputs %d and %d)", name,
          out_index[r], #outs + 1))
      end
      outs[#outs + 1] = r
      diff_at[pos] = #outs
      dirty_flags[#outs] = dirty[r] or false
      out_index[r] = #outs
      offsets[#outs] = total
      total = total + r:numel()
    elseif pt.is_tensor(r) and dirty[r] then
      fail(string.format("%s.apply: output %d was marked dirty but is not differentiable", name, pos))
    end
  end
  if #outs == 0 then return table.unpack(results, 1, results.n) end
  local record = {ctx = ctx, cls = cls, name = grad_name(cls), nargs = args.n, diff_pos = diff_pos,
                  arg_is_tensor = arg_is_tensor, results = results, n_results = results.n, outs = outs,
                  diff_at = diff_at, out_index = out_index, offsets = offsets, total = total,
                  run = run_backward}
  rawset(ctx, "_record", record)
  local with_history = pt._fn_record(record, record.name, diff_in, outs, dirty_flags)
  local ret = {}
  for pos = 1, results.n do
    local j = diff_at[pos]
    -- a dirty output is the argument's own handle (its tensor has the new history now)
    if j and not dirty_flags[j] then ret[pos] = with_history[j] else ret[pos] = results[pos] end
  end
  return table.unpack(ret, 1, results.n)
end

-- ------------------------------------------------------------------ the class

local Function = {__name = "Function"}
local class_mt = {
  __call = function(cls, ...) return cls.apply(...) end,
  __tostring = function(cls) return "class " .. rawget(cls, "__name") end,
}

function Function.extend(base, name)
  if type(base) ~= "table" or rawget(base, "__is_function_class") == nil then
    fail("Function.extend: call it as pt.autograd.Function:extend(\"Name\")")
  end
  if type(name) ~= "string" then
    fail("Function:extend: expected a class name (string), got " .. type(name))
  end
  local cls = {__name = name, __is_function_class = true, super = base}
  cls.apply = function(...) return apply(cls, ...) end
  return setmetatable(cls, {__index = base, __call = class_mt.__call, __tostring = class_mt.__tostring})
end
Function.__is_function_class = true
setmetatable(Function, {__tostring = class_mt.__tostring})

function Function.forward()
  error("autograd.Function: forward is not defined (define Class.forward(ctx, ...))", 2)
end
function Function.backward()
  error("autograd.Function: backward is not defined (define Class.backward(ctx, grad, ...))", 2)
end
function Function.apply()
  error("autograd.Function.apply: extend the class first (local F = pt.autograd.Function:extend(\"F\"))", 2)
end

doc(Function, [[pt.autograd.Function: a differentiable operation written in Lua, as torch.autograd.Function.
  local Exp = pt.autograd.Function:extend("Exp")
  function Exp.forward(ctx, x)          -- runs with recording off; any arguments
    local y = x:exp()
    ctx:save_for_backward(y)            -- tensors for the backward; other values: ctx.k = ...
    return y                            -- one or more results
  end
  function Exp.backward(ctx, gy)        -- one gradient per result of forward
    local y = ctx.saved_tensors[1]
    return gy * y                       -- one gradient (or nil) per argument of forward
  end
  local y = Exp.apply(x)                -- or Exp(x); y.grad_fn is "ExpBackward"
ctx.needs_input_grad[i] says whether argument i needs a gradient. ctx:mark_non_differentiable,
ctx:mark_dirty and ctx:set_materialize_grads as in torch. A gradient of a broadcast shape is
summed back to its argument's shape and converted to its dtype. The backward runs once per pass
with the gradients of all results; under create_graph with recording on, so a backward written
with differentiable ops can be differentiated again (a saved result then carries the function's
history). Any number of arguments may require grad. The backward runs in the Lua state of the
forward (an error in a DataParallel replica, whose backward runs on other threads).]])
doc(Function.extend, [[pt.autograd.Function:extend(name) -> a new function class: define Class.forward(ctx, ...)
  and Class.backward(ctx, grad, ...), then call Class.apply(...) or Class(...).]])
doc(Function.forward, "Class.forward(ctx, ...) -> results: define it in your class (runs with recording off).")
doc(Function.backward, "Class.backward(ctx, grad, ...) -> one gradient (or nil) per argument of forward: define it in your class.")
doc(Function.apply, "Class.apply(...) -> forward's results, recorded for autograd (Class(...) is the same).")

autograd.Function = Function
return autograd
