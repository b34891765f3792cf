-- pt.utils: activation checkpointing, as torch.utils.checkpoint (its reentrant form).
--
-- checkpoint(fn, ...) runs fn(...) without keeping its intermediate results; the backward runs fn
-- again from the saved arguments (with the random generator as it was, so dropout draws the same
-- mask) and backpropagates through that recomputation. It trades compute for memory: a deep
-- network's activations are kept only at the checkpoints. Built on pt.autograd.Function.
local pt = require "partrain.core"
local fail = require("partrain.tensor")._fail

local doc = pt._doc

local utils = {}

local Checkpoint = pt.autograd.Function:extend("Checkpoint")

local function call_fn(ctx, ...)
  if ctx.standin then return ctx.fn(select(2, ...)) end
  return ctx.fn(...)
end

function Checkpoint.forward(ctx, opts, fn, ...)
  ctx.fn = fn
  ctx.standin = opts.standin
  -- the tensors through save_for_backward (freed with the pass, as torch's), the rest as they are
  local args, tensors = table.pack(...), {}
  for i = 1, args.n do
    if pt.is_tensor(args[i]) then
      tensors[#tensors + 1] = args[i]
      args[i] = #tensors
    else
      args[i] = {value = args[i]}
    end
  end
  ctx.args = args
  ctx:save_for_backward(table.unpack(tensors))
  if opts.preserve_rng_state then ctx.rng = pt.get_rng_state() end
  local results = table.pack(call_fn(ctx, ...))
  -- the outputs the backward will receive gradients for, in order
  ctx.n_results = results.n
  return table.unpack(results, 1, results.n)
end

function Checkpoint.backward(ctx, ...)
  if pt.is_grad_enabled() then
    error("checkpoint: create_graph is not supported through a checkpoint (as torch's reentrant checkpoint)", 0)
  end
  if pt._in_autograd_grad() then
    error("checkpoint: not compatible with autograd.grad (its backward accumulates into .grad); use backward()", 0)
  end
  local grads = table.pack(...)
  local args, saved = ctx.args, ctx.saved_tensors
  -- the arguments again, detached, with their own gradients
  local inputs = {}
  for i = 1, args.n do
    local a = type(args[i]) == "table" and args[i].value or saved[args[i]]
    if pt.is_tensor(a) then
      local d = a:detach()
      d.requires_grad = a.requires_grad
      inputs[i] = d
    else
      inputs[i] = a
    end
  end
  local current
  if ctx.rng then
    current = pt.get_rng_state()
    pt.set_rng_state(ctx.rng)
  end
  -- recompute with recording on and backpropagate through it: sum_j <out_j, grad_j>
  local ok, err = pcall(function()
    local surrogate = pt.enable_grad(function()
      local outs = table.pack(call_fn(ctx, table.unpack(inputs, 1, args.n)))
      local total
      for j = 1, outs.n do
        local o, g = outs[j], grads[j]
        if pt.is_tensor(o) and o.requires_grad and g ~= nil then
          local term = (o * g):sum()
          total = total and total + term or term
        end
      end
      return total
    end)
    if surrogate then surrogate:backward() end
  end)
  if current then pt.set_rng_state(current) end
  if not ok then error(err, 0) end
  local res = {nil, nil} -- opts and fn get none
  for i = 1, args.n do
    local x = inputs[i]
    res[i + 2] = pt.is_tensor(x) and x.grad or nil
  end
  return table.unpack(res, 1, args.n + 2)
end

local option_names = {preserve_rng_state = true, use_reentrant = true}

function utils.checkpoint(first, ...)
  local opts, fn, n, args = {}, first, select("#", ...), table.pack(...)
  if type(first) == "table" and not (getmetatable(first) or {}).__call then
    opts = first
    for k in pairs(opts) do
      if not option_names[k] then fail(string.format("checkpoint: unknown option '%s'", tostring(k))) end
    end
    if opts.use_reentrant == false then
      fail("checkpoint: use_reentrant = false is not supported (partrain's checkpoint is the reentrant one)")
    end
    fn = args[1]
    args = table.pack(select(2, ...))
    n = args.n
  end
  if type(fn) ~= "function" and not (type(fn) == "table" and (getmetatable(fn) or {}).__call) then
    fail(string.format("checkpoint: expected a function (or a module) to run, got %s", type(fn)))
  end
  local resolved = {preserve_rng_state = opts.preserve_rng_state ~= false}
  -- with no argument that requires grad the function would record nothing, and the parameters fn
  -- uses would get no gradient (torch's reentrant checkpoint only warns): a stand-in argument
  -- that requires grad keeps the node
  local any = false
  for i = 1, n do
    local a = args[i]
    if pt.is_tensor(a) and a.requires_grad then any = true end
  end
  if not any and pt.is_grad_enabled() then
    resolved.standin = true
    return Checkpoint.apply(resolved, fn, pt.zeros(1, {requires_grad = true}), table.unpack(args, 1, n))
  end
  return Checkpoint.apply(resolved, fn, table.unpack(args, 1, n))
end
doc(utils.checkpoint, [[pt.utils.checkpoint([opts,] fn, ...) -> fn(...)'s results, without keeping fn's intermediate
  results for the backward: the backward runs fn again from the saved arguments and
  backpropagates through that (torch.utils.checkpoint.checkpoint, reentrant). Parameters fn uses
  get their .grad as without the checkpoint. opts: {preserve_rng_state = true} (the generator is
  set back to its state at the forward for the recomputation, so dropout draws the same mask).
  fn may return several results and take any arguments. As torch's
  reentrant form it does not work with autograd.grad or create_graph (an error says so).]])

function utils.checkpoint_sequential(functions, segments, input, opts)
  local list = {}
  if type(functions) == "table" and rawget(functions, "_module_names") ~= nil then
    for i, m in ipairs(functions:children()) do list[i] = m end
  elseif type(functions) == "table" then
    for i, f in ipairs(functions) do list[i] = f end
  else
    fail(string.format("checkpoint_sequential: expected a Sequential or a list of functions, got %s", type(functions)))
  end
  if math.type(segments) ~= "integer" or segments < 1 then
    fail(string.format("checkpoint_sequential: segments must be a positive integer, got %s", tostring(segments)))
  end
  if not pt.is_tensor(input) then
    fail(string.format("checkpoint_sequential: input must be a tensor, got %s", type(input)))
  end
  local n = #list
  if n == 0 then return input end
  local size = n // segments
  if size < 1 then size = 1 end
  local function run_range(a, b)
    return function(x)
      for i = a, b do x = list[i](x) end
      return x
    end
  end
  local x, last = input, 0
  -- every segment but the last under a checkpoint, as torch
  for start = 1, n - size, size do
    local stop = math.min(start + size - 1, n)
    if stop >= n then break end
    x = utils.checkpoint(opts or {}, run_range(start, stop), x)
    last = stop
  end
  return run_range(last + 1, n)(x)
end
doc(utils.checkpoint_sequential, [[pt.utils.checkpoint_sequential(functions, segments, input[, opts]) -> the output of
  running functions (a Sequential's children, or a list of modules/functions) in order on input,
  with every segment of about #functions/segments of them but the last under checkpoint()
  (torch.utils.checkpoint.checkpoint_sequential).]])

doc(utils, "pt.utils: checkpoint and checkpoint_sequential (activation checkpointing).")
return utils
