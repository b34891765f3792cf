-- partrain.autograd_functional: torch.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp)
-- and the user-facing gradient checks (pt.autograd.gradcheck, gradgradcheck), written in Lua over
-- pt.autograd.grad as torch 1.13 writes them in Python over torch.autograd.grad. init.lua
-- requires this module the first time a name is missing from pt.autograd; it adds its names
-- there.
--
-- Lua lists stand for Python's tuples: inputs, v and a function's outputs are one tensor or a list
-- of tensors, and the results nest the same way (a tensor for tensor in and out, else lists).
-- The indices in messages are 1-based, as everywhere in partrain (torch's are 0-based).
local pt = require "partrain.core"
local tensor_lua = require "partrain.tensor"
local fail, check = tensor_lua._fail, tensor_lua._check

local autograd, docs = pt.autograd, pt._docs
local grad = rawget(autograd, "grad")
local is_tensor, fmt, concat, unpack, pack = pt.is_tensor, string.format, table.concat, table.unpack, table.pack
local check_opts, shape_str, no_more, is_float = check.opts, check.shape_str, check.no_more, check.is_float

-- ------------------------------------------------------------------ argument helpers

local function is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

local function check_func(fname, f, what)
  if not is_callable(f) then fail("%s: %s must be a function, got %s", fname, what or "func", type(f)) end
end

-- a plain table of named options (not a tensor, no list part)
local function is_opts(v)
  return type(v) == "table" and not is_tensor(v) and v[1] == nil
end

-- the options table opts (nil: none) with only the keys of names
local function get_opts(fname, opts, names, n)
  if opts == nil then return {} end
  if not is_opts(opts) then
    fail("%s: expected an options table as argument %d, got %s", fname, n, is_tensor(opts) and "Tensor" or type(opts))
  end
  check_opts(fname, opts, names)
  return opts
end

local function opt_bool(fname, opts, key, default)
  local v = opts[key]
  if v == nil then return default end
  if type(v) ~= "boolean" then fail("%s: %s must be a boolean, got %s", fname, key, type(v)) end
  return v
end

local function opt_number(fname, opts, key, default)
  local v = opts[key]
  if v == nil then return default end
  if type(v) ~= "number" then fail("%s: %s must be a number, got %s", fname, key, type(v)) end
  return v
end

-- the largest positive integer key of a table (a list with holes still counts its nils)
local function list_len(t)
  local n = #t
  for k in pairs(t) do
    if math.type(k) == "integer" and k > n then n = k end
  end
  return n
end

-- x (a tensor or a list of tensors) as a list: is_tuple, list (torch's _as_tuple)
local function as_tuple(fname, x, what)
  if is_tensor(x) then return false, {x} end
  if type(x) ~= "table" then
    fail("%s: %s must be a tensor or a list of tensors, got %s", fname, what, type(x))
  end
  local list = {}
  for i = 1, list_len(x) do
    local e = x[i]
    if not is_tensor(e) then
      fail("%s: %s must be a tensor or a list of tensors, but the value at index %d has type %s", fname, what, i,
           type(e))
    end
    list[i] = e
  end
  return true, list
end

-- func(inputs...): its one result (a Lua function could return several values: torch's tuple
-- is one list here)
local function call_func(fname, func, args, n)
  local r = pack(func(unpack(args, 1, n or #args)))
  if r.n ~= 1 then
    fail("%s: the user-provided function returned %d values; return a tensor or a list of tensors", fname, r.n)
  end
  return r[1]
end

-- the inputs as new tensors (torch's _grad_preprocess): with create_graph, an input that requires
-- grad becomes a view of itself (gradients flow on to its history); else a detached copy that
-- requires grad when need_graph. A new tensor, so that tensors func captures are not the inputs.
local function grad_preprocess(fname, list, create_graph, need_graph, what)
  local res = {}
  for i, t in ipairs(list) do
    if create_graph and t.requires_grad then
      res[i] = t:view_as(t)
    else
      local d = t:detach()
      if need_graph then
        if not is_float(t) then
          fail("%s: %s[%d] must be a floating point tensor to be differentiated, got %s", fname, what, i, t:dtype())
        end
        d:requires_grad_()
      end
      res[i] = d
    end
  end
  return res
end

-- detach every tensor of a (nested) list unless create_graph (torch's _grad_postprocess)
local function grad_postprocess(list, create_graph)
  if create_graph then return list end
  local res = {}
  for i, e in ipairs(list) do
    if is_tensor(e) then res[i] = e:detach() else res[i] = grad_postprocess(e, false) end
  end
  return res
end

-- undo as_tuple (torch's _tuple_postprocess): a list that was not a tuple becomes its one
-- element; with unpack_inner (a nested list), the inner lists first, then the outer one
local function tuple_postprocess(res, unpack_outer, unpack_inner)
  if unpack_inner ~= nil then
    if not unpack_inner then
      local r = {}
      for i, e in ipairs(res) do r[i] = e[1] end
      res = r
    end
    if not unpack_outer then res = res[1] end
    return res
  end
  if not unpack_outer then return res[1] end
  return res
end

local function validate_v(fname, v, other, is_other_tuple)
  if #other ~= #v then
    if is_other_tuple then
      fail("%s: v is a list of invalid length: should be %d but got %d", fname, #other, #v)
    end
    fail("%s: the given v should contain a single tensor", fname)
  end
  for i = 1, #v do
    local sv, so = shape_str(v[i]), shape_str(other[i])
    if sv ~= so then
      fail("%s: %sv has invalid size: should be %s but got %s", fname, is_other_tuple and fmt("entry %d in ", i) or "",
           so, sv)
    end
  end
end

local function requires_grad_error(fname, input_type, i)
  if input_type == "hessian" then
    fail("%s: the hessian of the user-provided function with respect to input %d is independent of the input. " ..
         "This is not allowed in strict mode. You should ensure that your function is thrice differentiable and " ..
         "that the hessian depends on the inputs", fname, i)
  elseif input_type == "jacobian" then
    fail("%s: while computing the hessian, found that the jacobian of the user-provided function with respect to " ..
         "input %d is independent of the input. This is not allowed in strict mode. You should ensure that your " ..
         "function is twice differentiable and that the jacobian depends on the inputs (this would be violated by " ..
         "a linear function for example)", fname, i)
  elseif input_type == "grad_inputs" then
    fail("%s: the gradient with respect to input %d is independent of the inputs of the user-provided function. " ..
         "This is not allowed in strict mode", fname, i)
  end
  fail("%s: output %d of the user-provided function does not require gradients. The outputs must be computed in " ..
       "a differentiable manner from the input when running in strict mode", fname, i)
end

-- strict mode: every entry of list (n of them, nil allowed) exists and requires grad
local function check_requires_grad(fname, list, n, input_type, strict)
  if not strict then return end
  for i = 1, n do
    local t = list[i]
    if t == nil then -- only for grad_inputs and jacobian, which come from autograd.grad
      fail("%s: the output of the user-provided function is independent of input %d. This is not allowed in " ..
           "strict mode", fname, i)
    end
    if not t.requires_grad then requires_grad_error(fname, input_type, i) end
  end
end

-- pt.autograd.grad over the outputs (n of them) that exist and require grad, nil for every input
-- when none does (torch's _autograd_grad); the result is a list with a nil for an unused input
local function autograd_grad(outputs, n, inputs, grad_outputs, create_graph, retain_graph)
  local outs, gos = {}, {}
  for i = 1, n do
    local o = outputs[i]
    if o ~= nil and o.requires_grad then
      outs[#outs + 1] = o
      gos[#outs] = grad_outputs and grad_outputs[i]
    end
  end
  if #outs == 0 then return {} end
  return grad(outs, inputs, {grad_outputs = gos, create_graph = create_graph, retain_graph = retain_graph,
                             allow_unused = true})
end

local STAGE_MESSAGES = {
  back = "the output of the user-provided function is independent of input %d. This is not allowed in strict mode",
  back_trick = "the gradient with respect to the input is independent of entry %d in the grad_outputs when using " ..
               "the double backward trick to compute forward mode gradients. This is not allowed in strict mode",
  double_back = "the jacobian of the user-provided function is independent of input %d. This is not allowed in " ..
                "strict mode",
  double_back_trick = "the hessian of the user-provided function is independent of entry %d in the grad_jacobian. " ..
                      "This is not allowed in strict mode as it prevents from using the double backward trick to " ..
                      "replace forward mode AD",
}

-- nil gradients become zeros shaped as refs[i] (strict: an error; torch's _fill_in_zeros)
local function fill_in_zeros(fname, grads, refs, strict, create_graph, stage)
  local res = {}
  for i, ref in ipairs(refs) do
    local g = grads[i]
    if g == nil then
      if strict then fail("%s: " .. STAGE_MESSAGES[stage], fname, i) end
      g = pt.zeros_like(ref)
    elseif strict and create_graph and not g.requires_grad then
      fail("%s: the %s of the user-provided function is independent of input %d. This is not allowed in strict " ..
           "mode when create_graph=true", fname, stage:find("double", 1, true) and "hessian" or "jacobian", i)
    end
    res[i] = g
  end
  return res
end

local function concat_shape(a, b)
  local s = {}
  for _, d in ipairs(a) do s[#s + 1] = d end
  for _, d in ipairs(b) do s[#s + 1] = d end
  return s
end

-- ------------------------------------------------------------------ jacobian, hessian

local STRATEGIES = {["forward-mode"] = true, ["reverse-mode"] = true}

-- the Jacobian with "forward-mode": partrain has no forward-mode AD, so each column is a
-- Jacobian-vector product by the double backward trick (as jvp), one per input element; the
-- result has each output's dtype, as torch's forward mode
local function jacfwd(fname, func, inputs_arg, strict, vectorize)
  if strict then
    fail('%s: strict=true and strategy="forward-mode" are not supported together (yet). Please either set ' ..
         'strict=false or strategy="reverse-mode"', fname)
  end
  local is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
  if not vectorize then
    fail('%s: computing the Jacobian with strategy="forward-mode" is only implemented for vectorize=true', fname)
  end
  return pt.enable_grad(function()
    inputs = grad_preprocess(fname, inputs, false, true, "inputs")
    local is_outputs_tuple, outputs = as_tuple(fname, call_func(fname, func, inputs),
                                               "outputs of the user-provided function")
    -- zero grad_outputs that require grad: the gradient of the inputs' gradient with respect to them is J v
    local gos, go_of = {}, {}
    for i, o in ipairs(outputs) do
      if o.requires_grad then
        gos[#gos + 1] = pt.zeros_like(o):requires_grad_()
        go_of[i] = #gos
      end
    end
    local gos_by_out = {}
    for i in ipairs(outputs) do gos_by_out[i] = go_of[i] and gos[go_of[i]] end
    local grad_inputs = autograd_grad(outputs, #outputs, inputs, gos_by_out, true)
    local jac = {}
    for i = 1, #outputs do jac[i] = {} end
    for k, inp in ipairs(inputs) do
      local cols = {}
      for i = 1, #outputs do cols[i] = {} end
      local gi = grad_inputs[k]
      for e = 1, inp:numel() do
        local res = {}
        if gi ~= nil and gi.requires_grad then
          local basis = pt.zeros_like(inp)
          basis:_set_flat(e, 1)
          res = grad(gi, gos, {grad_outputs = basis, retain_graph = true, allow_unused = true})
        end
        for i, o in ipairs(outputs) do
          local col = go_of[i] and res[go_of[i]]
          cols[i][e] = col or pt.zeros_like(o)
        end
      end
      for i, o in ipairs(outputs) do
        local shape = concat_shape(o:size(), inp:size())
        if inp:numel() == 0 then jac[i][k] = o:new_zeros(shape)
        else jac[i][k] = pt.stack(cols[i], -1):reshape(shape) end
      end
    end
    return tuple_postprocess(grad_postprocess(jac, false), is_outputs_tuple, is_inputs_tuple)
  end)
end

local function jacobian_impl(fname, func, inputs_arg, create_graph, strict, vectorize, strategy)
  if not STRATEGIES[strategy] then
    fail('%s: expected strategy to be either "forward-mode" or "reverse-mode", got %s. Hint: if your function has ' ..
         'more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use ' ..
         '"reverse-mode"', fname, type(strategy) == "string" and fmt("%q", strategy) or type(strategy))
  end
  if strategy == "forward-mode" then
    if create_graph then
      fail('%s: create_graph=true and strategy="forward-mode" are not supported together (yet). Please either ' ..
           'set create_graph=false or strategy="reverse-mode"', fname)
    end
    return jacfwd(fname, func, inputs_arg, strict, vectorize)
  end
  return pt.enable_grad(function()
    local is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
    inputs = grad_preprocess(fname, inputs, create_graph, true, "inputs")
    local is_outputs_tuple, outputs = as_tuple(fname, call_func(fname, func, inputs),
                                               "outputs of the user-provided function")
    check_requires_grad(fname, outputs, #outputs, "outputs", strict)
    if vectorize and strict then
      fail("%s: strict=true and vectorize=true are not supported together. Please either set strict=false or " ..
           "vectorize=false", fname)
    end
    -- one row of every output's Jacobian per autograd.grad call (vectorize=true computes the
    -- same rows: partrain has no vmap to batch them)
    local jac = {}
    for i, out in ipairs(outputs) do
      local rows = {}
      for k = 1, #inputs do rows[k] = {} end
      local flat = out:reshape(-1)
      for j = 1, out:numel() do
        local vj = autograd_grad({flat:select(1, j)}, 1, inputs, nil, create_graph, true)
        for k, inp in ipairs(inputs) do
          local g = vj[k]
          if g ~= nil then
            if strict and create_graph and not g.requires_grad then
              fail("%s: the jacobian of the user-provided function is independent of input %d. This is not " ..
                   "allowed in strict mode when create_graph=true", fname, k)
            end
            rows[k][j] = g
          else
            if strict then
              fail("%s: output %d of the user-provided function is independent of input %d. This is not allowed " ..
                   "in strict mode", fname, i, k)
            end
            rows[k][j] = pt.zeros_like(inp)
          end
        end
      end
      local jac_i = {}
      for k, inp in ipairs(inputs) do
        local shape = concat_shape(out:size(), inp:size())
        if out:numel() == 0 then jac_i[k] = inp:new_zeros(shape)
        else jac_i[k] = pt.stack(rows[k], 1):reshape(shape) end
      end
      jac[i] = jac_i
    end
    return tuple_postprocess(grad_postprocess(jac, create_graph), is_outputs_tuple, is_inputs_tuple)
  end)
end

local JACOBIAN_OPTS = {"create_graph", "strict", "vectorize", "strategy"}

local function jacobian(func, inputs, opts, ...)
  local fname = "autograd.functional.jacobian"
  no_more(fname, 3, ...)
  check_func(fname, func)
  local o = get_opts(fname, opts, JACOBIAN_OPTS, 3)
  local strategy = o.strategy
  if strategy == nil then strategy = "reverse-mode" end
  return jacobian_impl(fname, func, inputs, opt_bool(fname, o, "create_graph", false),
                       opt_bool(fname, o, "strict", false), opt_bool(fname, o, "vectorize", false), strategy)
end

local HESSIAN_OPTS = {"create_graph", "strict", "vectorize", "outer_jacobian_strategy"}

local function hessian(func, inputs_arg, opts, ...)
  local fname = "autograd.functional.hessian"
  no_more(fname, 3, ...)
  check_func(fname, func)
  local o = get_opts(fname, opts, HESSIAN_OPTS, 3)
  local create_graph, strict = opt_bool(fname, o, "create_graph", false), opt_bool(fname, o, "strict", false)
  local vectorize = opt_bool(fname, o, "vectorize", false)
  local strategy = o.outer_jacobian_strategy
  if strategy == nil then strategy = "reverse-mode" end
  local is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
  if not STRATEGIES[strategy] then
    fail('%s: expected outer_jacobian_strategy to be either "forward-mode" or "reverse-mode", got %s', fname,
         type(strategy) == "string" and fmt("%q", strategy) or type(strategy))
  end

  local function ensure_single_output_function(...)
    local out = call_func(fname, func, pack(...), select("#", ...))
    local is_out_tuple, t_out = as_tuple(fname, out, "outputs of the user-provided function")
    check_requires_grad(fname, t_out, #t_out, "outputs", strict)
    if is_out_tuple then fail("%s: the function given to hessian should return a single tensor", fname) end
    if out:numel() ~= 1 then
      fail("%s: the tensor returned by the function given to hessian should contain a single element", fname)
    end
    return out:squeeze()
  end

  local function jac_func(...)
    local jac = jacobian_impl(fname, ensure_single_output_function, {...}, true, false, false, "reverse-mode")
    check_requires_grad(fname, jac, #jac, "jacobian", strict)
    return jac
  end

  local res = jacobian_impl(fname, jac_func, inputs, create_graph, strict, vectorize, strategy)
  return tuple_postprocess(res, is_inputs_tuple, is_inputs_tuple)
end

-- ------------------------------------------------------------------ vjp, jvp, vhp, hvp

local PRODUCT_OPTS = {"create_graph", "strict"}

-- (func, inputs[, v][, opts]): v, create_graph, strict
local function product_args(fname, func, v, opts, ...)
  no_more(fname, 4, ...)
  check_func(fname, func)
  if opts == nil and is_opts(v) then v, opts = nil, v end
  local o = get_opts(fname, opts, PRODUCT_OPTS, 4)
  return v, opt_bool(fname, o, "create_graph", false), opt_bool(fname, o, "strict", false)
end

-- the result part that runs with grad mode as torch sets it: on with create_graph, else as it is
local function with_graph(create_graph, f)
  if create_graph then return pt.enable_grad(f) end
  return f()
end

local function vjp(func, inputs_arg, v_arg, opts, ...)
  local fname = "autograd.functional.vjp"
  local v, create_graph, strict = product_args(fname, func, v_arg, opts, ...)
  local is_inputs_tuple, inputs, is_outputs_tuple, outputs
  pt.enable_grad(function()
    is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
    inputs = grad_preprocess(fname, inputs, create_graph, true, "inputs")
    is_outputs_tuple, outputs = as_tuple(fname, call_func(fname, func, inputs), "outputs of the user-provided function")
    check_requires_grad(fname, outputs, #outputs, "outputs", strict)
    if v ~= nil then
      local _
      _, v = as_tuple(fname, v, "v")
      v = grad_preprocess(fname, v, create_graph, false, "v")
      validate_v(fname, v, outputs, is_outputs_tuple)
    elseif #outputs ~= 1 or outputs[1]:numel() ~= 1 then
      fail("%s: the vector v can only be nil if the user-provided function returns a single tensor with a single " ..
           "element", fname)
    end
  end)
  local res = with_graph(create_graph, function()
    local grad_res = autograd_grad(outputs, #outputs, inputs, v, create_graph)
    return fill_in_zeros(fname, grad_res, inputs, strict, create_graph, "back")
  end)
  return tuple_postprocess(grad_postprocess(outputs, create_graph), is_outputs_tuple),
         tuple_postprocess(grad_postprocess(res, create_graph), is_inputs_tuple)
end

-- v checked against the inputs (jvp, vhp, hvp), or nil for a single one-element input
local function input_v(fname, v, inputs, is_inputs_tuple, create_graph)
  if v ~= nil then
    local _
    _, v = as_tuple(fname, v, "v")
    v = grad_preprocess(fname, v, create_graph, false, "v")
    validate_v(fname, v, inputs, is_inputs_tuple)
  elseif #inputs ~= 1 or inputs[1]:numel() ~= 1 then
    fail("%s: the vector v can only be nil if the input to the user-provided function is a single tensor with a " ..
         "single element", fname)
  end
  return v
end

local function jvp(func, inputs_arg, v_arg, opts, ...)
  local fname = "autograd.functional.jvp"
  local v, create_graph, strict = product_args(fname, func, v_arg, opts, ...)
  local is_inputs_tuple, inputs, is_outputs_tuple, outputs, grad_inputs, gos, go_of
  pt.enable_grad(function()
    is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
    inputs = grad_preprocess(fname, inputs, create_graph, true, "inputs")
    v = input_v(fname, v, inputs, is_inputs_tuple, create_graph)
    is_outputs_tuple, outputs = as_tuple(fname, call_func(fname, func, inputs), "outputs of the user-provided function")
    check_requires_grad(fname, outputs, #outputs, "outputs", strict)
    -- the backward is linear in grad_outputs, so their value (zeros) does not appear in the
    -- double backward graph; they only need to require grad (an output that does not gets none)
    gos, go_of = {}, {}
    local by_out = {}
    for i, o in ipairs(outputs) do
      if o.requires_grad then
        gos[#gos + 1] = pt.zeros_like(o):requires_grad_()
        go_of[i], by_out[i] = #gos, gos[#gos]
      end
    end
    grad_inputs = autograd_grad(outputs, #outputs, inputs, by_out, true)
    check_requires_grad(fname, grad_inputs, #inputs, "grad_inputs", strict)
  end)
  local res = with_graph(create_graph, function()
    local grad_res = {}
    if #gos > 0 then
      local r = autograd_grad(grad_inputs, #inputs, gos, v, create_graph)
      for i in ipairs(outputs) do grad_res[i] = go_of[i] and r[go_of[i]] end
    end
    return fill_in_zeros(fname, grad_res, outputs, strict, create_graph, "back_trick")
  end)
  return tuple_postprocess(grad_postprocess(outputs, create_graph), is_outputs_tuple),
         tuple_postprocess(grad_postprocess(res, create_graph), is_outputs_tuple)
end

-- the forward part of vhp and hvp: inputs, v, output and its gradient with create_graph
local function scalar_grad(fname, func, inputs_arg, v, create_graph, strict, name)
  local is_inputs_tuple, inputs = as_tuple(fname, inputs_arg, "inputs")
  inputs = grad_preprocess(fname, inputs, create_graph, true, "inputs")
  v = input_v(fname, v, inputs, is_inputs_tuple, create_graph)
  local is_outputs_tuple, outputs = as_tuple(fname, call_func(fname, func, inputs),
                                             "outputs of the user-provided function")
  check_requires_grad(fname, outputs, #outputs, "outputs", strict)
  if is_outputs_tuple then fail("%s: the function given to %s should return a single tensor", fname, name) end
  if outputs[1]:numel() ~= 1 then
    fail("%s: the tensor returned by the function given to %s should contain a single element", fname, name)
  end
  local jac = autograd_grad(outputs, 1, inputs, nil, true)
  check_requires_grad(fname, jac, #inputs, "jacobian", strict)
  return is_inputs_tuple, inputs, v, outputs, jac
end

local function vhp(func, inputs_arg, v_arg, opts, ...)
  local fname = "autograd.functional.vhp"
  local v, create_graph, strict = product_args(fname, func, v_arg, opts, ...)
  local is_inputs_tuple, inputs, outputs, jac
  pt.enable_grad(function()
    is_inputs_tuple, inputs, v, outputs, jac = scalar_grad(fname, func, inputs_arg, v, create_graph, strict, "vhp")
  end)
  local res = with_graph(create_graph, function()
    local grad_res = autograd_grad(jac, #inputs, inputs, v, create_graph)
    return fill_in_zeros(fname, grad_res, inputs, strict, create_graph, "double_back")
  end)
  return grad_postprocess(outputs, create_graph)[1], tuple_postprocess(grad_postprocess(res, create_graph), is_inputs_tuple)
end

local function hvp(func, inputs_arg, v_arg, opts, ...)
  local fname = "autograd.functional.hvp"
  local v, create_graph, strict = product_args(fname, func, v_arg, opts, ...)
  local is_inputs_tuple, inputs, outputs, double_back, grad_jac
  pt.enable_grad(function()
    local jac
    is_inputs_tuple, inputs, v, outputs, jac = scalar_grad(fname, func, inputs_arg, v, create_graph, strict, "hvp")
    grad_jac = {}
    for i, inp in ipairs(inputs) do grad_jac[i] = pt.zeros_like(inp):requires_grad_() end
    double_back = autograd_grad(jac, #inputs, inputs, grad_jac, true)
  end)
  local res = with_graph(create_graph, function()
    local grad_res = autograd_grad(double_back, #inputs, grad_jac, v, create_graph)
    return fill_in_zeros(fname, grad_res, inputs, strict, create_graph, "double_back_trick")
  end)
  return grad_postprocess(outputs, create_graph)[1], tuple_postprocess(grad_postprocess(res, create_graph), is_inputs_tuple)
end

autograd.functional = {jacobian = jacobian, hessian = hessian, vjp = vjp, jvp = jvp, vhp = vhp, hvp = hvp}

-- ------------------------------------------------------------------ gradcheck, gradgradcheck

-- a warning goes to stderr once per state and text (Python shows a warning once per place)
local warned = {}
local function warn_once(text)
  if warned[text] then return end
  warned[text] = true
  io.stderr:write(text, "\n")
end

-- t's elements in order, as Lua numbers
local function numbers(t)
  if t:numel() == 0 then return {} end
  return t:reshape(-1):tolist()
end

-- the 1-based index {i, j, ...} of flat position e (1-based) in shape
local function index_str(shape, e)
  local idx, r = {}, e - 1
  for d = #shape, 1, -1 do
    idx[d] = r % shape[d] + 1
    r = r // shape[d]
  end
  return "{" .. concat(idx, ",") .. "}"
end

-- nil when a and n agree as torch.allclose(a, n, rtol, atol) (NaN agrees with nothing); else the
-- flat position of the element furthest beyond its tolerance, and the largest difference
local function mismatch(a, n, rtol, atol)
  local av, nv = numbers(a), numbers(n)
  local worst, excess, maxdiff = nil, -math.huge, 0
  for e = 1, #av do
    local d = math.abs(av[e] - nv[e])
    local tol = atol + rtol * math.abs(nv[e])
    if d ~= d then d = math.huge end
    if d > maxdiff then maxdiff = d end
    if not (d <= tol) and d - tol > excess then worst, excess = e, d - tol end
  end
  return worst, maxdiff, av, nv
end

-- the outputs of fn(args) (a tensor or a list of tensors) as a list
local function outputs_of(fname, func, args, n)
  local _, outs = as_tuple(fname, call_func(fname, func, args, n), "outputs of fn")
  return outs
end

local function eps_str(eps) return fmt("%.10g", eps) end

-- the perturbed outputs: same count, shapes and dtypes as the unperturbed ones (torch asserts)
local function check_perturbed(fname, ref, got, where, eps)
  if #got ~= #ref then
    fail("%s: expected fn to return the same number of outputs when inputs are perturbed %sby %s, but got %d and %d",
         fname, where, eps_str(eps), #ref, #got)
  end
  for i, o in ipairs(ref) do
    if shape_str(o) ~= shape_str(got[i]) then
      fail("%s: expected fn to return outputs with the same shape when inputs are perturbed %sby %s, but got shapes " ..
           "%s and %s", fname, where, eps_str(eps), shape_str(o), shape_str(got[i]))
    end
    if o:dtype() ~= got[i]:dtype() then
      fail("%s: expected fn to return outputs with the same dtype when inputs are perturbed %sby %s, but got dtypes " ..
           "%s and %s", fname, where, eps_str(eps), o:dtype(), got[i]:dtype())
    end
  end
end

-- a private copy of args[p] to perturb (the caller's tensors and graphs never change): a leaf
-- that requires grad as args[p] does
local function perturbable(args, n, p)
  local x = args[p]:detach():clone()
  if args[p].requires_grad then x:requires_grad_() end
  local a = {unpack(args, 1, n)}
  a[p] = x
  return x, a
end

-- the numerical Jacobians of the outputs at positions outs_at with respect to args[p] by central
-- differences: per output a tensor (numel of args[p], numel of the output) in the output's dtype
-- copies of a call's tensor outputs, taken at once: fn may return (an alias of) its argument,
-- which the next perturbation changes
local function snapshot(outs)
  local c = {}
  for k, v in pairs(outs) do c[k] = is_tensor(v) and v:detach():clone() or v end
  return c
end

local function numerical_jacobians(fname, func, args, n, p, ref, outs_at, eps)
  local x, a = perturbable(args, n, p)
  local rows = {}
  for _, i in ipairs(outs_at) do rows[i] = {} end
  for e = 1, x:numel() do
    local v0 = x:_get_flat(e)
    x:_set_flat(e, v0 - eps)
    local outa = snapshot(outputs_of(fname, func, a, n))
    x:_set_flat(e, v0 + eps)
    local outb = snapshot(outputs_of(fname, func, a, n))
    x:_set_flat(e, v0)
    local where = "on index " .. index_str(x:size(), e) .. " of input " .. p .. " "
    check_perturbed(fname, ref, outa, where, eps)
    check_perturbed(fname, ref, outb, where, eps)
    for _, i in ipairs(outs_at) do rows[i][e] = ((outb[i] - outa[i]) / (2 * eps)):reshape(-1) end
  end
  local jac = {}
  for _, i in ipairs(outs_at) do
    if x:numel() == 0 then jac[i] = ref[i]:new_zeros({0, ref[i]:numel()})
    else jac[i] = pt.stack(rows[i], 1) end
  end
  return jac
end

-- the analytical Jacobians of output o with respect to the tensors din: per input a tensor
-- (numel of the input, numel of o), one autograd.grad per element of o; and whether the
-- gradients had their input's size and dtype
local function analytical_jacobians(o, din)
  local cols, sizes_ok, types_ok = {}, true, true
  for k = 1, #din do cols[k] = {} end
  for j = 1, o:numel() do
    local go = pt.zeros_like(o)
    go:_set_flat(j, 1)
    local g = grad(o, din, {grad_outputs = go, retain_graph = true, allow_unused = true})
    for k, x in ipairs(din) do
      local gk = g[k]
      if gk == nil then
        gk = x:new_zeros({x:numel()})
      elseif shape_str(gk) ~= shape_str(x) then
        sizes_ok = false
        gk = x:new_zeros({x:numel()})
      else
        if gk:dtype() ~= x:dtype() then types_ok = false end
        gk = gk:detach():to(x:dtype()):reshape(-1)
      end
      cols[k][j] = gk
    end
  end
  local jac = {}
  for k, x in ipairs(din) do
    if o:numel() == 0 then jac[k] = x:new_zeros({x:numel(), 0})
    else jac[k] = pt.stack(cols[k], 2) end
  end
  return jac, sizes_ok, types_ok
end

local function max_abs_diff(a, b)
  if a:numel() == 0 then return 0 end
  return (a - b):abs():max():item()
end

local function reentrant_message(fname, nondet_tol)
  return fmt("%s: backward is not reentrant, i.e., running backward with the same input and grad_output " ..
             "several times gives different values, although the analytical gradient matches the numerical " ..
             "gradient. The tolerance for nondeterminism was %s", fname, eps_str(nondet_tol))
end

-- the analytical Jacobians of o, computed twice (a nondeterministic backward shows as two
-- results further apart than nondet_tol); nil and the message of a failed check
local function checked_analytical(fname, o, din, nondet_tol, check_grad_dtypes)
  local j1, sizes_ok, types_ok = analytical_jacobians(o, din)
  local j2 = analytical_jacobians(o, din)
  local reentrant = true
  for k = 1, #din do
    local d = max_abs_diff(j1[k], j2[k])
    if not (d <= nondet_tol) then reentrant = false end
  end
  if not types_ok and check_grad_dtypes then return nil, fname .. ": gradient has dtype mismatch" end
  if not sizes_ok then return nil, fname .. ": analytical gradient has incorrect size" end
  if not reentrant then return nil, reentrant_message(fname, nondet_tol) end
  return j1
end

local function mismatch_message(fname, out_pos, in_pos, o, x, a, n, worst, av, nv)
  local n_out = math.max(o:numel(), 1)
  local row, col = (worst - 1) // n_out + 1, (worst - 1) % n_out + 1
  return fmt("%s: Jacobian mismatch for output %d with respect to input %d,\n" ..
             "worst at output element %s and input element %s: numerical %.10g, analytical %.10g\n" ..
             "numerical (a row per input element, a column per output element):\n%s\nanalytical:\n%s",
             fname, out_pos, in_pos, index_str(o:size(), col), index_str(x:size(), row), nv[worst], av[worst],
             tostring(n), tostring(a))
end

-- a failed check, else nil: the slow mode compares every element of every Jacobian
local function slow_check(fname, func, args, n, outs, dout_at, din_at, o)
  local din = {}
  for k, p in ipairs(din_at) do din[k] = args[p] end
  if #dout_at == 0 then
    -- no differentiable output: every numerical gradient must be zero
    local float_at = {}
    for i, t in ipairs(outs) do if is_float(t) then float_at[#float_at + 1] = i end end
    for _, p in ipairs(din_at) do
      local jac = numerical_jacobians(fname, func, args, n, p, outs, float_at, o.eps)
      for _, i in ipairs(float_at) do
        for _, v in ipairs(numbers(jac[i])) do
          if v ~= 0 then return fname .. ": numerical gradient for function expected to be zero" end
        end
      end
    end
    return nil
  end
  local numerical = {}
  for k, p in ipairs(din_at) do numerical[k] = numerical_jacobians(fname, func, args, n, p, outs, dout_at, o.eps) end
  for _, i in ipairs(dout_at) do
    local analytical, msg = checked_analytical(fname, outs[i], din, o.nondet_tol, o.check_grad_dtypes)
    if not analytical then return msg end
    for k, p in ipairs(din_at) do
      local a, nj = analytical[k], numerical[k][i]
      local worst, _, av, nv = mismatch(a, nj, o.rtol, o.atol)
      if worst then return mismatch_message(fname, i, p, outs[i], args[p], a, nj, worst, av, nv) end
    end
  end
  return nil
end

-- a deterministic vector of random numbers in [0, 1) with t's numel and dtype, of norm 1 (its
-- own generator, as torch's: the caller's random state does not move)
local function random_unit(gen, t)
  local m = t:numel()
  if m == 0 then return t:new_zeros({0}) end
  local vals = {}
  for e = 1, m do
    gen.s = (gen.s * 1103515245 + 12345) % 2147483648
    vals[e] = gen.s / 2147483648
  end
  local v = pt.tensor(vals, {dtype = t:dtype()})
  if t:device() ~= "cpu" then v = v:to(t:device()) end
  return v / v:norm()
end

local function dot(a, b)
  if a:numel() == 0 then return 0 end
  return (a:reshape(-1):to("float64") * b:reshape(-1):to("float64")):sum():item()
end

-- J u for each output at outs_at by central differences along u (args[p] moved by +-eps u)
local function numerical_jvps(fname, func, args, n, p, ref, outs_at, u, eps)
  local base = args[p]:detach()
  local function at(sign)
    local x = (base + u:view_as(base) * (sign * eps)):detach()
    if args[p].requires_grad then x:requires_grad_() end
    local a = {unpack(args, 1, n)}
    a[p] = x
    local outs = outputs_of(fname, func, a, n)
    check_perturbed(fname, ref, outs, "along a random direction of input " .. p .. " ", eps)
    return outs
  end
  local outa, outb = at(-1), at(1)
  local jvps = {}
  for _, i in ipairs(outs_at) do
    jvps[i] = ((outb[i]:detach() - outa[i]:detach()) / (2 * eps)):reshape(-1)
  end
  return jvps
end

-- fast mode: v^T J u for random unit vectors u (per input) and v (per output), numerically and
-- analytically; a mismatch is explained with the slow mode's Jacobians of that pair
local function fast_check(fname, func, args, n, outs, dout_at, din_at, o)
  local din = {}
  for k, p in ipairs(din_at) do din[k] = args[p] end
  local gen = {s = 20210302}
  local all_u, all_v = {}, {}
  for k, x in ipairs(din) do all_u[k] = random_unit(gen, x) end
  if #dout_at == 0 then
    local float_at = {}
    for i, t in ipairs(outs) do if is_float(t) then float_at[#float_at + 1] = i end end
    for k, p in ipairs(din_at) do
      local jvps = numerical_jvps(fname, func, args, n, p, outs, float_at, all_u[k], o.eps)
      for _, i in ipairs(float_at) do
        if jvps[i]:numel() > 0 and not (jvps[i]:abs():max():item() <= o.nondet_tol) then
          return fname .. ": numerical gradient for function expected to be zero"
        end
      end
    end
    return nil
  end
  for _, i in ipairs(dout_at) do all_v[i] = random_unit(gen, outs[i]) end
  local numerical = {}
  for k, p in ipairs(din_at) do
    local jvps = numerical_jvps(fname, func, args, n, p, outs, dout_at, all_u[k], o.eps)
    numerical[k] = {}
    for _, i in ipairs(dout_at) do numerical[k][i] = dot(all_v[i], jvps[i]) end
  end
  for _, i in ipairs(dout_at) do
    local out = outs[i]
    local function vJ()
      local g = grad(out, din, {grad_outputs = all_v[i]:view_as(out), retain_graph = true, allow_unused = true})
      local r = {}
      for k, x in ipairs(din) do
        local gk = g[k] or x:new_zeros(x:size())
        if shape_str(gk) ~= shape_str(x) then return nil, fname .. ": analytical gradient has incorrect size" end
        if gk:dtype() ~= x:dtype() and o.check_grad_dtypes then return nil, fname .. ": gradient has dtype mismatch" end
        r[k] = gk:detach()
      end
      return r
    end
    local r1, msg = vJ()
    if not r1 then return msg end
    local r2 = vJ()
    for k = 1, #din do
      if not (max_abs_diff(r1[k]:to("float64"), r2[k]:to("float64")) <= o.nondet_tol) then
        return reentrant_message(fname, o.nondet_tol)
      end
    end
    for k, p in ipairs(din_at) do
      local a, nv = dot(r1[k], all_u[k]), numerical[k][i]
      -- the element-wise atol summed over the entries v^T J u mixes
      local atol = o.atol * all_u[k]:to("float64"):sum():item() * all_v[i]:to("float64"):sum():item()
      if not (math.abs(a - nv) <= atol + o.rtol * math.abs(nv)) then
        local nj = numerical_jacobians(fname, func, args, n, p, outs, {i}, o.eps)[i]
        local aj = analytical_jacobians(out, {args[p]})[1]
        local worst, maxdiff, avs, nvs = mismatch(aj, nj, o.rtol, o.atol)
        local msg = fmt("%s: Jacobian mismatch for output %d with respect to input %d,\nnumerical:%.10g\n" ..
                        "analytical:%.10g\n(fast mode: v^T J u for random unit vectors u and v.) In slow mode, " ..
                        "the max per-element difference is %.10g", fname, i, p, nv, a, maxdiff)
        if worst then
          local n_out = math.max(out:numel(), 1)
          local row, col = (worst - 1) // n_out + 1, (worst - 1) % n_out + 1
          msg = msg .. fmt(", worst at output element %s and input element %s: numerical %.10g, analytical %.10g",
                           index_str(out:size(), col), index_str(args[p]:size(), row), nvs[worst], avs[worst])
        else
          msg = msg .. "; the slow mode would pass: try fast_mode=false"
        end
        return msg
      end
    end
  end
  return nil
end

-- the gradients of the differentiable outputs with zero grad_outputs are zero (or nil), with
-- their input's dtype and size
local function zero_grad_check(fname, dout, din)
  local zeros = {}
  for i, t in ipairs(dout) do zeros[i] = pt.zeros_like(t) end
  local g = grad(dout, din, {grad_outputs = zeros, allow_unused = true})
  for k, x in ipairs(din) do
    local gk = g[k]
    if gk ~= nil then
      if shape_str(gk) == shape_str(x) and gk:numel() > 0 and gk:ne(0):any():item() then
        return fname .. ": backward not multiplied by grad_output"
      end
      if gk:dtype() ~= x:dtype() then return fname .. ": grad is incorrect type" end
      if shape_str(gk) ~= shape_str(x) then return fname .. ": grad is incorrect size" end
    end
  end
  return nil
end

-- torch checks that a backward handles outputs whose gradient is undefined; partrain has no
-- undefined gradients, but an output left out of autograd.grad sends none: with two or more
-- differentiable outputs, each is left out in turn (the others get zeros) and the gradients of
-- the inputs must be nil or zero
local function undefined_grad_check(fname, func, args, n, din)
  local first = outputs_of(fname, func, args, n)
  local count = 0
  for _, t in ipairs(first) do if t.requires_grad then count = count + 1 end end
  if count < 2 then return nil end
  for skip = 1, count do
    local outs, zeros, seen = {}, {}, 0
    for _, t in ipairs(outputs_of(fname, func, args, n)) do
      if t.requires_grad then
        seen = seen + 1
        if seen ~= skip then
          outs[#outs + 1] = t
          zeros[#outs] = pt.zeros_like(t)
        end
      end
    end
    local ok, g = pcall(grad, outs, din, {grad_outputs = zeros, allow_unused = true})
    if not ok then
      return fmt("%s: expected the backward to handle outputs that get no gradient (differentiable output %d left " ..
                 "out): %s", fname, skip, tostring(g))
    end
    for k = 1, #din do
      local gk = g[k]
      if gk ~= nil and gk:numel() > 0 and gk:ne(0):any():item() then
        return fmt("%s: expected all input gradients to be nil or zero when the outputs get zero or no gradient " ..
                   "(differentiable output %d left out)", fname, skip)
      end
    end
  end
  return nil
end

local GRADCHECK_OPTS = {"eps", "atol", "rtol", "raise_exception", "nondet_tol", "check_undefined_grad",
                        "check_grad_dtypes", "fast_mode"}

local function gradcheck_options(fname, o)
  return {eps = opt_number(fname, o, "eps", 1e-6), atol = opt_number(fname, o, "atol", 1e-5),
          rtol = opt_number(fname, o, "rtol", 1e-3), raise_exception = opt_bool(fname, o, "raise_exception", true),
          nondet_tol = opt_number(fname, o, "nondet_tol", 0.0),
          check_undefined_grad = opt_bool(fname, o, "check_undefined_grad", true),
          check_grad_dtypes = opt_bool(fname, o, "check_grad_dtypes", false),
          fast_mode = opt_bool(fname, o, "fast_mode", false)}
end

-- inputs: a tensor or a list (entries that are not tensors are passed to fn as they are)
local function input_list(fname, inputs)
  if is_tensor(inputs) then return {inputs}, 1 end
  if type(inputs) ~= "table" then fail("%s: inputs must be a tensor or a list, got %s", fname, type(inputs)) end
  local n = list_len(inputs)
  return {unpack(inputs, 1, n)}, n
end

-- true, or false (raise_exception=false) / an error naming the failed check
local function gradcheck_run(fname, func, args, n, o)
  local any = false
  for i = 1, n do
    local a = args[i]
    if is_tensor(a) and a.requires_grad then
      if a:dtype() ~= "float64" then
        warn_once(fmt("%s: warning: input %d requires gradient and is not a double precision floating point tensor " ..
                      "(%s); this check will likely fail if the inputs are not float64", fname, i, a:dtype()))
      end
      local size, stride = a:size(), a:stride()
      for d = 1, #size do
        if stride[d] == 0 and size[d] > 1 then
          fail("%s: input %d has a dimension with stride 0. gradcheck only supports inputs that are " ..
               "non-overlapping to be able to compute the numerical gradients correctly. You should call " ..
               ":contiguous() on the input before passing it to gradcheck", fname, i)
        end
      end
      any = true
    end
  end
  if not any then
    fail("%s: expects at least one input tensor to require gradient, but none of them have requires_grad=true", fname)
  end
  local outs = outputs_of(fname, func, args, n)
  local dout_at, din_at, dout, din = {}, {}, {}, {}
  for i, t in ipairs(outs) do
    if t.requires_grad then dout_at[#dout_at + 1], dout[#dout + 1] = i, t end
  end
  for i = 1, n do
    if is_tensor(args[i]) and args[i].requires_grad then din_at[#din_at + 1], din[#din + 1] = i, args[i] end
  end
  local msg = (o.fast_mode and fast_check or slow_check)(fname, func, args, n, outs, dout_at, din_at, o)
  if not msg and #dout > 0 then
    msg = zero_grad_check(fname, dout, din)
    if not msg and o.check_undefined_grad then msg = undefined_grad_check(fname, func, args, n, din) end
  end
  if not msg then return true end
  if o.raise_exception then fail("%s", msg) end
  return false
end

local function gradcheck(func, inputs, opts, ...)
  local fname = "autograd.gradcheck"
  no_more(fname, 3, ...)
  check_func(fname, func, "fn")
  local o = gradcheck_options(fname, get_opts(fname, opts, GRADCHECK_OPTS, 3))
  local args, n = input_list(fname, inputs)
  return gradcheck_run(fname, func, args, n, o)
end

local GRADGRADCHECK_OPTS = {"eps", "atol", "rtol", "gen_non_contig_grad_outputs", "raise_exception", "nondet_tol",
                            "check_undefined_grad", "check_grad_dtypes", "fast_mode"}

local function gradgradcheck(func, inputs, grad_outputs, opts, ...)
  local fname = "autograd.gradgradcheck"
  no_more(fname, 4, ...)
  check_func(fname, func, "fn")
  if opts == nil and is_opts(grad_outputs) then grad_outputs, opts = nil, grad_outputs end
  local oo = get_opts(fname, opts, GRADGRADCHECK_OPTS, 4)
  local non_contig = opt_bool(fname, oo, "gen_non_contig_grad_outputs", false)
  local o = gradcheck_options(fname, oo)
  local args, n = input_list(fname, inputs)
  local gos
  if grad_outputs == nil then
    -- random grad_outputs in [-1, 1) that require grad, one per differentiable output (from the
    -- global generator, as torch's make_tensor)
    gos = {}
    for _, t in ipairs(outputs_of(fname, func, args, n)) do
      if t.requires_grad then
        local g = pt.rand(t:size(), {dtype = is_float(t) and t:dtype() or "float64"}) * 2 - 1
        if t:device() ~= "cpu" then g = g:to(t:device()) end
        if non_contig and g:numel() > 1 then g = pt.stack({g, g}, -1):select(-1, 1) end
        gos[#gos + 1] = g:requires_grad_()
      end
    end
  else
    local _
    _, gos = as_tuple(fname, grad_outputs, "grad_outputs")
  end
  local all = {unpack(args, 1, n)}
  for k, g in ipairs(gos) do all[n + k] = g end
  -- the gradients of fn's differentiable outputs with respect to its differentiable inputs,
  -- given the grad_outputs: checking it checks the second derivatives
  local function new_func(...)
    local a = pack(...)
    local outs, diff_in, go = {}, {}, {}
    for _, t in ipairs(outputs_of(fname, func, a, n)) do
      if t.requires_grad then outs[#outs + 1] = t end
    end
    for i = 1, n do
      if is_tensor(a[i]) and a[i].requires_grad then diff_in[#diff_in + 1] = a[i] end
    end
    for k = 1, #gos do go[k] = a[n + k] end
    local g = grad(outs, diff_in, {grad_outputs = go, create_graph = true, allow_unused = true})
    local res = {}
    for k = 1, #diff_in do
      if g[k] ~= nil then res[#res + 1] = g[k] end
    end
    return res
  end
  return gradcheck_run(fname, new_func, all, n + #gos, o)
end

autograd.gradcheck, autograd.gradgradcheck = gradcheck, gradgradcheck

-- ------------------------------------------------------------------ help texts

docs[autograd.functional] = "pt.autograd.functional: Jacobians, Hessians and vector products of a function, as\n"
  .. "  torch.autograd.functional (torch 1.13): jacobian, hessian, vjp, jvp, vhp, hvp. Lua lists stand for\n"
  .. "  torch's tuples. Written over pt.autograd.grad: hessian, jvp, vhp and hvp need second derivatives\n"
  .. "  (create_graph), so the function must use only the ops help(pt.autograd.grad) lists."

docs[jacobian] = "functional.jacobian(func, inputs[, {create_graph=false, strict=false, vectorize=false,\n"
  .. "    strategy=\"reverse-mode\"}]) -> the Jacobian of func at inputs, as torch.autograd.functional.jacobian.\n"
  .. "  inputs: a tensor or a list of tensors (floating point), passed to func as arguments; func returns a\n"
  .. "  tensor or a list of tensors. The Jacobian of output i with respect to input j has the shape\n"
  .. "  output_i.shape .. input_j.shape and input j's dtype; the result is a tensor for a tensor input and\n"
  .. "  output, a list J[j] (or J[i]) when one of them is a list, a list of lists J[i][j] when both are.\n"
  .. "  One autograd.grad per output element. create_graph=true: the result is differentiable (its graph\n"
  .. "  reaches the inputs). strict=true: an output that does not require grad, or that does not depend on\n"
  .. "  an input, is an error instead of zeros. vectorize=true computes the same rows (partrain has no vmap)\n"
  .. "  and, as torch, refuses strict=true. strategy=\"forward-mode\" (needs vectorize=true, refuses\n"
  .. "  create_graph and strict, as torch) computes the columns, one per input element, by the double\n"
  .. "  backward trick (partrain has no forward-mode AD), in the outputs' dtype."

docs[hessian] = "functional.hessian(func, inputs[, {create_graph=false, strict=false, vectorize=false,\n"
  .. "    outer_jacobian_strategy=\"reverse-mode\"}]) -> the Hessian of func at inputs, as\n"
  .. "  torch.autograd.functional.hessian. func returns a tensor with a single element. A tensor input gives\n"
  .. "  a tensor of shape input.shape .. input.shape; a list of inputs a list of lists H[i][j] of shape\n"
  .. "  input_i.shape .. input_j.shape. Computed as the Jacobian of the gradient (jacobian with\n"
  .. "  create_graph inside); the options are jacobian's (outer_jacobian_strategy is its strategy for the\n"
  .. "  outer Jacobian). strict=true: an input the gradient does not depend on is an error."

docs[vjp] = "functional.vjp(func, inputs[, v][, {create_graph=false, strict=false}]) -> func(inputs), v^T J\n"
  .. "  as torch.autograd.functional.vjp: the product of v (shaped as func's outputs: a tensor or a list)\n"
  .. "  with the Jacobian, shaped as the inputs. v may be left out when func returns one tensor of one\n"
  .. "  element. create_graph=true: both results are differentiable. strict=true: an output that does not\n"
  .. "  require grad, or an input no output depends on, is an error instead of zeros."

docs[jvp] = "functional.jvp(func, inputs[, v][, {create_graph=false, strict=false}]) -> func(inputs), J v\n"
  .. "  as torch.autograd.functional.jvp: the product of the Jacobian with v (shaped as the inputs), shaped\n"
  .. "  as the outputs. v may be left out for a single one-element input. Computed by the double backward\n"
  .. "  trick (the gradient of the inputs' gradient with respect to zero grad_outputs), as torch, so func\n"
  .. "  must be twice differentiable in partrain's create_graph sense. Options as vjp's."

docs[vhp] = "functional.vhp(func, inputs[, v][, {create_graph=false, strict=false}]) -> func(inputs), v^T H\n"
  .. "  as torch.autograd.functional.vhp: func returns a tensor with a single element; the product of v\n"
  .. "  (shaped as the inputs; optional for a single one-element input) with its Hessian, shaped as the\n"
  .. "  inputs. Options as vjp's."

docs[hvp] = "functional.hvp(func, inputs[, v][, {create_graph=false, strict=false}]) -> func(inputs), H v\n"
  .. "  as torch.autograd.functional.hvp: as vhp, with the Hessian on the left (the double backward trick:\n"
  .. "  one more backward pass than vhp; equal to vhp for twice continuously differentiable functions)."

docs[gradcheck] = "pt.autograd.gradcheck(fn, inputs[, {eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=true,\n"
  .. "    nondet_tol=0, check_undefined_grad=true, check_grad_dtypes=false, fast_mode=false}]) -> true, as\n"
  .. "  torch.autograd.gradcheck: compares the gradients autograd computes for fn with central differences\n"
  .. "  (f(x + eps) - f(x - eps)) / 2 eps, for the inputs that are tensors requiring grad (at least one).\n"
  .. "  inputs: a tensor or a list (other values are passed to fn as they are); fn returns a tensor or a\n"
  .. "  list of tensors. Slow mode builds every Jacobian, numerical column by column (each input element\n"
  .. "  perturbed in a private copy: the caller's tensors never change) and analytical row by row (one\n"
  .. "  autograd.grad per output element, twice: results further apart than nondet_tol are a\n"
  .. "  nondeterministic backward), and requires |analytical - numerical| <= atol + rtol |numerical| in\n"
  .. "  every element. A failure raises \"autograd.gradcheck: Jacobian mismatch for output i with respect\n"
  .. "  to input j\" (1-based positions in fn's outputs and in inputs) with the worst element and both\n"
  .. "  Jacobians (a row per input element), or returns false with raise_exception=false. Then zero\n"
  .. "  grad_outputs must give zero gradients, and with check_undefined_grad each of several outputs is\n"
  .. "  left out of autograd.grad in turn (partrain's form of torch's undefined gradients). fast_mode=true\n"
  .. "  compares v^T J u for random unit vectors instead (a mismatch reports the slow mode's worst element).\n"
  .. "  Inputs that require grad and are not float64 get a warning on stderr (once), as torch warns; an input\n"
  .. "  with a stride-0 dimension (expand) is an error. fn must compute from its arguments."

docs[gradgradcheck] = "pt.autograd.gradgradcheck(fn, inputs[, grad_outputs][, {eps=1e-6, atol=1e-5, rtol=1e-3,\n"
  .. "    gen_non_contig_grad_outputs=false, raise_exception=true, nondet_tol=0, check_undefined_grad=true,\n"
  .. "    check_grad_dtypes=false, fast_mode=false}]) -> true, as torch.autograd.gradgradcheck: gradcheck of\n"
  .. "  the function (inputs, grad_outputs) -> autograd.grad(fn's differentiable outputs, its differentiable\n"
  .. "  inputs, {grad_outputs=, create_graph=true}), which checks the second derivatives (create_graph).\n"
  .. "  grad_outputs: one tensor per differentiable output (a tensor or a list); left out, random values in\n"
  .. "  [-1, 1) that require grad (from the global generator, as torch; gen_non_contig_grad_outputs=true\n"
  .. "  makes them non-contiguous). In messages, input #inputs + k is grad_outputs[k] and output k the\n"
  .. "  gradient of the k-th differentiable input."


return autograd
