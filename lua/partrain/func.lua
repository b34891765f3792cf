-- partrain.func: torch.func (functorch) for partrain: functional_call, the function transforms
-- grad, grad_and_value, vjp, jacrev, jacfwd, hessian and vmap, and stack_module_state, written in
-- Lua over the ordinary autograd (pt.autograd.grad with create_graph) and
-- pt.autograd.functional.jacobian (partrain/autograd_functional.lua), not over functorch's
-- levels of wrapped tensors. init.lua loads it on the first use of pt.func.
--
-- How composition works without levels: a transform differentiates fn(...) by running it on
-- fresh inputs (a detached copy that requires grad, or, when the argument requires grad itself,
-- a view of it so gradients flow on) and calling pt.autograd.grad. While fn runs, `depth` counts
-- the transforms around it: a transform inside another one (grad(grad(f)), jacrev(jacrev(f)))
-- asks for create_graph, so its results carry the graph the outer transform differentiates.
-- Outside every transform, create_graph is used only when an argument requires grad (the result
-- then stays differentiable with respect to it, as torch.func's results are for outer autograd).
--
-- vmap loops: it calls fn once per sample (a select along each mapped dim) and stacks the
-- results; there is no batching rule per op.
--
-- Lua lists stand for Python's tuples and string-keyed tables for dicts; argnums, in_dims and
-- out_dims are 1-based, as everywhere in partrain.
local pt = require "partrain.core"
local tensor_lua = require "partrain.tensor"
require "partrain.autograd_functional" -- pt.autograd.functional.jacobian
local fail, check = tensor_lua._fail, tensor_lua._check

local autograd = pt.autograd
local ag_grad = rawget(autograd, "grad")
local jacobian = autograd.functional.jacobian
local is_tensor, fmt, concat, unpack, pack = pt.is_tensor, string.format, table.concat, table.unpack, table.pack
local mtype, sort = math.type, table.sort
local check_opts, shape_str, is_float = check.opts, check.shape_str, check.is_float

local func = {}

local doc = pt._doc

-- the number of pt.func autograd transforms whose function is running now (this state's)
local depth = 0

-- ------------------------------------------------------------------ helpers

local function is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

local function check_fn(fname, f)
  if not is_callable(f) then fail("%s: expected a function as argument 1, got %s", fname, type(f)) end
end

local function type_name(v)
  if is_tensor(v) then return "Tensor" end
  return type(v)
end

-- the largest positive integer key of a table (a list with holes still counts its nils)
local function list_len(t)
  local n = #t
  for k in pairs(t) do
    if mtype(k) == "integer" and k > n then n = k end
  end
  return n
end

-- a table of named options: not a tensor, no metatable, no list part, only string keys
local function is_opts(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil or v[1] ~= nil then return false end
  for k in pairs(v) do
    if type(k) ~= "string" then return false end
  end
  return true
end

-- fn(...) with the transform depth raised by one, put back even when fn raises
local function run_inside(fn, ...)
  depth = depth + 1
  local r = pack(pcall(pt.enable_grad, fn, ...))
  depth = depth - 1
  if not r[1] then error(r[2], 0) end
  return pack(unpack(r, 2, r.n))
end

-- ------------------------------------------------------------------ trees
-- A tree is a tensor (a leaf), a container (a table without a metatable, or a state_dict, whose
-- metatable has __keys) of trees, or any other value (kept as it is). Container keys are visited
-- in a fixed order: 1..n first, then the other keys sorted as strings.

local function is_container(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  return mt == nil or (type(mt) == "table" and rawget(mt, "__keys") ~= nil)
end

local function tree_keys(t)
  local n = list_len(t)
  local keys, others = {}, {}
  for i = 1, n do keys[i] = i end
  for k in pairs(t) do
    if not (mtype(k) == "integer" and k >= 1 and k <= n) then others[#others + 1] = k end
  end
  sort(others, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(others) do keys[#keys + 1] = k end
  return keys, n
end

local LEAF = {}

-- the structure of tree (a spec) with its tensors appended to leaves
local function flatten(tree, leaves)
  if is_tensor(tree) then
    leaves[#leaves + 1] = tree
    return LEAF
  end
  if is_container(tree) then
    local keys, n = tree_keys(tree)
    local kids = {}
    for i, k in ipairs(keys) do kids[i] = flatten(tree[k], leaves) end
    return {keys = keys, kids = kids, n = n}
  end
  return {const = true, value = tree}
end

-- the tree of spec with its tensors taken from leaves[pos], leaves[pos + 1], ...; returns the
-- tree and the next position
local function unflatten(spec, leaves, pos)
  pos = pos or 1
  if spec == LEAF then return leaves[pos], pos + 1 end
  if spec.const then return spec.value, pos end
  local t = {}
  for i, k in ipairs(spec.keys) do t[k], pos = unflatten(spec.kids[i], leaves, pos) end
  return t, pos
end

-- the tree with f(t) for each tensor t
local function tree_map(tree, f)
  local leaves = {}
  local spec = flatten(tree, leaves)
  for i, t in ipairs(leaves) do leaves[i] = f(t, i) end
  return (unflatten(spec, leaves))
end

-- a spec as text for messages: T for a tensor, the type of any other value, {...} for tables
local function spec_str(spec)
  if spec == LEAF then return "T" end
  if spec.const then return spec.value == nil and "nil" or type(spec.value) end
  local parts = {}
  for i, k in ipairs(spec.keys) do
    local s = spec_str(spec.kids[i])
    parts[i] = (i <= spec.n) and s or fmt("%s=%s", tostring(k), s)
  end
  return "{" .. concat(parts, ", ") .. "}"
end

local function any_requires_grad(list)
  for _, t in ipairs(list) do
    if t.requires_grad then return true end
  end
  return false
end

-- whether a transform's gradients must carry a graph: inside another transform, or when a tensor
-- it differentiates requires grad (outer autograd may go on through the result); never when grad
-- mode is off around the transform (as torch.func, which ignores an outer no_grad only inside)
local function needs_graph(tensors)
  if not pt.is_grad_enabled() then return false end
  return depth > 0 or any_requires_grad(tensors)
end

-- every tensor of the arguments (the ones not differentiated too: a graph through them is kept)
local function all_tensors(args)
  local list = {}
  for i = 1, args.n do flatten(args[i], list) end
  return list
end

local function detach_tree(tree)
  return tree_map(tree, function(t) return t:detach() end)
end

-- ------------------------------------------------------------------ argnums

-- argnums (an integer or a list of integers, 1-based, negative from the end) checked where a
-- transform is made
local function check_argnums_type(fname, argnums)
  if mtype(argnums) == "integer" then return end
  if type(argnums) == "table" and not is_tensor(argnums) and getmetatable(argnums) == nil then
    local n = list_len(argnums)
    if n == 0 then fail("%s: argnums must be non-empty", fname) end
    for i = 1, n do
      if mtype(argnums[i]) ~= "integer" then
        fail("%s: argnums must be an integer or a list of integers, got %s at index %d", fname,
             type_name(argnums[i]), i)
      end
    end
    return
  end
  fail("%s: argnums must be an integer or a list of integers, got %s", fname,
       mtype(argnums) == "float" and tostring(argnums) or type_name(argnums))
end

-- the 1-based positions argnums names among nargs arguments, and whether argnums is a list
local function argnum_positions(api, argnums, nargs)
  local function one(a)
    local p = a < 0 and nargs + 1 + a or a
    if a == 0 or p < 1 or p > nargs then
      fail("%s: got argnums=%d, but only %d positional inputs (argnums are 1-based)", api, a, nargs)
    end
    return p
  end
  if mtype(argnums) == "integer" then return {one(argnums)}, false end
  local pos, seen = {}, {}
  for i = 1, list_len(argnums) do
    local p = one(argnums[i])
    if seen[p] then
      local s = {}
      for j = 1, list_len(argnums) do s[j] = tostring(argnums[j]) end
      fail("%s: argnums elements must be unique, got {%s}", api, concat(s, ", "))
    end
    seen[p] = true
    pos[i] = p
  end
  return pos, true
end

-- transform options: (fn, opts) or (fn, argnums[, opts]); returns argnums and the options table
local function transform_opts(fname, a, b, names)
  local argnums, o
  if mtype(a) == "integer" or (type(a) == "table" and not is_tensor(a) and a[1] ~= nil) then
    argnums = a
    if b ~= nil and not is_opts(b) then
      fail("%s: expected an options table as argument 3, got %s", fname, type_name(b))
    end
    o = b or {}
    if o.argnums ~= nil then fail("%s: argnums given twice (as argument 2 and as an option)", fname) end
  else
    if a ~= nil and not is_opts(a) then
      fail("%s: expected argnums or an options table as argument 2, got %s", fname,
           mtype(a) == "float" and tostring(a) or type_name(a))
    end
    if b ~= nil then fail("%s: unexpected argument #3 (%s)", fname, type_name(b)) end
    o = a or {}
    argnums = o.argnums
  end
  check_opts(fname, o, names)
  if argnums == nil then argnums = 1 end
  check_argnums_type(fname, argnums)
  if o.has_aux ~= nil and type(o.has_aux) ~= "boolean" then
    fail("%s: has_aux must be a boolean, got %s", fname, type_name(o.has_aux))
  end
  return argnums, o
end

-- the arguments to differentiate (positions pos of args) as fresh tensors: a view of an
-- argument that requires grad when graph (its gradients flow on), else a detached copy that
-- requires grad. Returns the new argument list, the flat list of fresh tensors and per position
-- the spec of its tree.
local function prepare_args(api, args, pos, graph)
  local new = {}
  for i = 1, args.n do new[i] = args[i] end
  local leaves, specs = {}, {}
  for j, p in ipairs(pos) do
    local mine = {}
    local spec = flatten(args[p], mine)
    if #mine == 0 then
      fail("%s: argument %d must be a tensor or a (nested) table of tensors to be differentiated, got %s", api, p,
           spec_str(spec))
    end
    -- every leaf must be a tensor (a number there has no gradient)
    local function no_consts(s)
      if s == LEAF then return end
      if s.const then
        fail("%s: argument %d must be a tensor or a (nested) table of tensors to be differentiated, found a %s in it",
             api, p, s.value == nil and "nil" or type(s.value))
      end
      for _, k in ipairs(s.kids) do no_consts(k) end
    end
    no_consts(spec)
    for k, t in ipairs(mine) do
      if not is_float(t) then
        fail("%s: argument %d: only floating point tensors can be differentiated, got %s", api, p, t:dtype())
      end
      if graph and t.requires_grad then mine[k] = t:view_as(t) else mine[k] = t:detach():requires_grad_() end
      leaves[#leaves + 1] = mine[k]
    end
    new[p] = unflatten(spec, mine)
    specs[j] = spec
  end
  return new, leaves, specs
end

-- per position the tree of spec with the tensors of flat (in order), as one tree (argnums an
-- integer) or a list of them
local function restructure(specs, flat, is_list)
  local res, pos = {}, 1
  for j, spec in ipairs(specs) do res[j], pos = unflatten(spec, flat, pos) end
  if is_list then return res end
  return res[1]
end

-- the gradients of outputs (a list) with respect to inputs, zeros for the ones they do not reach
local function gradients(outputs, grad_outputs, inputs, graph)
  local outs, gos = {}, {}
  for i, o in ipairs(outputs) do
    if o.requires_grad then
      outs[#outs + 1] = o
      gos[#outs] = grad_outputs and grad_outputs[i]
    end
  end
  local g = {}
  if #outs > 0 then
    g = ag_grad(outs, inputs, {grad_outputs = grad_outputs and gos or nil, create_graph = graph, retain_graph = true,
                               allow_unused = true})
  end
  local res = {}
  for i, t in ipairs(inputs) do
    local gi = g[i]
    if gi == nil then gi = pt.zeros_like(t) elseif not graph then gi = gi:detach() end
    res[i] = gi
  end
  return res
end

-- fn's results: out and, with has_aux, aux
local function call_results(api, fn, args, has_aux, what)
  local r = run_inside(fn, unpack(args, 1, args.n))
  if has_aux then
    if r.n ~= 2 then
      fail("%s: with has_aux=true, %s must return two values: output, aux (got %d)", api, what, r.n)
    end
    return r[1], r[2]
  end
  if r.n ~= 1 then
    fail("%s: expected %s to return one value, got %d (has_aux=true takes output, aux)", api, what, r.n)
  end
  return r[1]
end

-- ------------------------------------------------------------------ grad, grad_and_value

local GRAD_OPTS = {"argnums", "has_aux"}

local function make_grad_and_value(fname, api, fn, a, b)
  check_fn(fname, fn)
  local argnums, o = transform_opts(fname, a, b, GRAD_OPTS)
  local has_aux = o.has_aux == true
  return function(...)
    local args = pack(...)
    local pos, is_list = argnum_positions(api, argnums, args.n)
    local graph = needs_graph(all_tensors(args))
    local new, leaves, specs = prepare_args(api, args, pos, graph)
    local out, aux = call_results(api, fn, new, has_aux, "f(...)")
    if not is_tensor(out) then fail("%s: expected f(...) to return a Tensor, got %s", api, type_name(out)) end
    if out:dim() ~= 0 then
      fail("%s: expected f(...) to return a scalar Tensor, got tensor with %d dims. Maybe you wanted to use the vjp " ..
           "or jacrev APIs instead?", api, out:dim())
    end
    local g = restructure(specs, gradients({out}, nil, leaves, graph), is_list)
    if not graph then
      out = out:detach()
      if has_aux then aux = detach_tree(aux) end
    end
    return g, out, aux
  end
end

function func.grad(fn, a, b)
  local gv = make_grad_and_value("func.grad", "grad(f)(...)", fn, a, b)
  local has_aux = (is_opts(a) and a or is_opts(b) and b or {}).has_aux == true
  return function(...)
    local g, _, aux = gv(...)
    if has_aux then return g, aux end
    return g
  end
end

function func.grad_and_value(fn, a, b)
  local gv = make_grad_and_value("func.grad_and_value", "grad_and_value(f)(...)", fn, a, b)
  local has_aux = (is_opts(a) and a or is_opts(b) and b or {}).has_aux == true
  return function(...)
    local g, out, aux = gv(...)
    if has_aux then return g, out, aux end
    return g, out
  end
end

-- ------------------------------------------------------------------ vjp

local function output_leaves(api, out, what)
  local leaves = {}
  local spec = flatten(out, leaves)
  if #leaves == 0 then fail("%s: expected f to be a function that has non-empty output (got %s)", api, spec_str(spec)) end
  local function only_tensors(s)
    if s == LEAF then return end
    if s.const then
      fail("%s: expected %s to return only tensors, got unsupported type %s", api, what,
           s.value == nil and "nil" or type(s.value))
    end
    for _, k in ipairs(s.kids) do only_tensors(k) end
  end
  only_tensors(spec)
  return leaves, spec
end

function func.vjp(fn, ...)
  local fname = "func.vjp"
  check_fn(fname, fn)
  local primals = pack(...)
  local has_aux = false
  local last = primals[primals.n]
  if primals.n > 0 and is_opts(last) and next(last) == "has_aux" and next(last, "has_aux") == nil then
    check_opts(fname, last, {"has_aux"})
    if type(last.has_aux) ~= "boolean" then fail("%s: has_aux must be a boolean, got %s", fname, type_name(last.has_aux)) end
    has_aux = last.has_aux
    primals[primals.n] = nil
    primals.n = primals.n - 1
  end
  local api = "vjp(f, ...)"
  if primals.n == 0 then fail("%s: expected at least one primal to differentiate f with respect to", api) end
  local pos = {}
  for i = 1, primals.n do pos[i] = i end
  local graph = needs_graph(all_tensors(primals))
  local new, leaves, specs = prepare_args(api, primals, pos, graph)
  local out, aux = call_results(api, fn, new, has_aux, "f(...)")
  local outs, out_spec = output_leaves(api, out, "f(...)")
  for _, o in ipairs(outs) do
    if not is_float(o) then
      fail("%s: all outputs of f must be floating point tensors, got a tensor with dtype %s", api, o:dtype())
    end
  end

  local function vjp_fn(cotangents, ...)
    local vname = "vjp_fn"
    if select("#", ...) > 0 then
      fail("%s: expected one cotangent argument (a tensor or a table shaped as f's output), got %d arguments", vname,
           select("#", ...) + 1)
    end
    local cts = {}
    local ct_spec = flatten(cotangents, cts)
    if spec_str(ct_spec) ~= spec_str(out_spec) then
      fail("%s: expected the structure of the cotangents to be the same as the structure of the outputs of the " ..
           "function. cotangents: %s, primal output: %s", vname, spec_str(ct_spec), spec_str(out_spec))
    end
    for i, c in ipairs(cts) do
      if shape_str(c) ~= shape_str(outs[i]) then
        fail("%s: mismatch in shape: cotangent %d has a shape of %s and output %d has a shape of %s", vname, i,
             shape_str(c), i, shape_str(outs[i]))
      end
    end
    local g = pt.enable_grad(gradients, outs, cts, leaves,
                             graph or needs_graph(cts) or (pt.is_grad_enabled() and depth > 0))
    local res = {}
    local pos2 = 1
    for j, spec in ipairs(specs) do res[j], pos2 = unflatten(spec, g, pos2) end
    return unpack(res, 1, #specs)
  end
  doc(vjp_fn, "vjp_fn(cotangents) -> one gradient per primal (a tree shaped as that primal): cotangents^T J,\n" ..
      "  cotangents shaped as f's output (a tensor, or a table of them). Callable any number of times.")

  if not graph then
    out = detach_tree(out)
    if has_aux then aux = detach_tree(aux) end
  end
  if has_aux then return out, vjp_fn, aux end
  return out, vjp_fn
end

-- ------------------------------------------------------------------ jacrev, jacfwd, hessian

local JAC_OPTS = {"argnums", "has_aux"}

-- the Jacobian of fn's output (a tensor or a tree of them) with respect to the arguments at
-- argnums, through pt.autograd.functional.jacobian over the flat list of their tensors;
-- strategy "forward-mode" is its double backward trick
local function make_jac(fname, api, fn, a, b, strategy)
  check_fn(fname, fn)
  local argnums, o = transform_opts(fname, a, b, JAC_OPTS)
  local has_aux = o.has_aux == true
  return function(...)
    local args = pack(...)
    local pos, is_list = argnum_positions(api, argnums, args.n)
    local all = {}
    for _, p in ipairs(pos) do flatten(args[p], all) end
    local graph = needs_graph(all_tensors(args))
    local _, _, specs = prepare_args(api, args, pos, false) -- checks the arguments
    local out_spec, aux
    local function flat_fn(...)
      local inputs = {...}
      local new = {n = args.n}
      for i = 1, args.n do new[i] = args[i] end
      local k = 1
      for j, p in ipairs(pos) do new[p], k = unflatten(specs[j], inputs, k) end
      local out
      out, aux = call_results(api, fn, new, has_aux, "f(...)")
      local outs
      outs, out_spec = output_leaves(api, out, "f(...)")
      return outs
    end
    -- the forward-mode trick needs a first graph of its own: nested, the reverse mode (same values)
    local strat = (strategy == "forward-mode" and graph) and "reverse-mode" or strategy
    local jac = jacobian(flat_fn, all, {create_graph = graph, strategy = strat,
                                           vectorize = strat == "forward-mode"})
    -- jac[i][k]: output leaf i, input leaf k -> per output leaf the argnums' trees
    local per_out = {}
    for i, row in ipairs(jac) do per_out[i] = restructure(specs, row, is_list) end
    local res = unflatten(out_spec, per_out)
    if has_aux then
      if not graph then aux = detach_tree(aux) end
      return res, aux
    end
    return res
  end
end

function func.jacrev(fn, a, b)
  return make_jac("func.jacrev", "jacrev(f)(...)", fn, a, b, "reverse-mode")
end

function func.jacfwd(fn, a, b)
  return make_jac("func.jacfwd", "jacfwd(f)(...)", fn, a, b, "forward-mode")
end

function func.hessian(fn, a, b)
  local fname = "func.hessian"
  check_fn(fname, fn)
  local argnums = transform_opts(fname, a, b, {"argnums"})
  local inner = make_jac(fname, "hessian(f)(...)", fn, argnums, nil, "reverse-mode")
  return make_jac(fname, "hessian(f)(...)", inner, argnums, nil, "reverse-mode")
end

-- ------------------------------------------------------------------ vmap

local VMAP_OPTS = {"in_dims", "out_dims", "randomness", "chunk_size"}
local RANDOMNESS = {error = true, different = true, same = true}

local function dim_str(d)
  if d == nil or d == false then return "nil" end
  if is_tensor(d) then return "Tensor" end
  if type(d) == "table" then
    local parts = {}
    for i, k in ipairs((tree_keys(d))) do
      local s = dim_str(d[k])
      parts[i] = mtype(k) == "integer" and s or fmt("%s=%s", tostring(k), s)
    end
    return "{" .. concat(parts, ", ") .. "}"
  end
  return tostring(d)
end

-- dims (an integer, nil/false, or a table shaped as a prefix of spec's tree) as one dim per
-- leaf of spec (tensors and other values alike, in flatten's order); nil when they do not fit
local function broadcast_dims(dims, spec, out)
  if dims == false then dims = nil end
  if dims == nil or type(dims) ~= "table" or is_tensor(dims) then
    local function fill(s)
      if s == LEAF or s.const then
        out[#out + 1] = {dim = dims, spec = s}
        return
      end
      for _, k in ipairs(s.kids) do fill(k) end
    end
    fill(spec)
    return out
  end
  if spec == LEAF or spec.const then return nil end
  local index = {}
  for i, k in ipairs(spec.keys) do index[k] = i end
  for k in pairs(dims) do
    if index[k] == nil then return nil end
  end
  for i, k in ipairs(spec.keys) do
    if broadcast_dims(dims[k], spec.kids[i], out) == nil then return nil end
  end
  return out
end

-- the args' tensors as one flat list and each its in_dim (0-based), the spec of all args, the
-- batch size
local function vmap_inputs(in_dims, args)
  local head = fmt("vmap(f, in_dims=%s, ...)(...)", dim_str(in_dims))
  if args.n == 0 then
    fail("vmap(f)(...): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over a function " ..
         "with no inputs. The latter is unsupported")
  end
  local tuple = {}
  for i = 1, args.n do tuple[i] = args[i] end
  local leaves = {}
  local spec = flatten(tuple, leaves)
  spec.n = args.n -- trailing nil arguments still count
  if spec.keys then
    for i = #spec.keys + 1, args.n do spec.keys[i], spec.kids[i] = i, {const = true} end
  end
  if not (in_dims == nil or in_dims == false or mtype(in_dims) == "integer" or is_container(in_dims)) then
    fail("%s: expected in_dims to be an integer or a (nested) table matching the structure of the inputs, got %s",
         head, mtype(in_dims) == "float" and tostring(in_dims) or type_name(in_dims))
  end
  if type(in_dims) == "table" and list_len(in_dims) > args.n then
    fail("%s: in_dims is not compatible with the structure of the inputs: in_dims has %d entries but there are " ..
         "%d inputs", head, list_len(in_dims), args.n)
  end
  local flat = broadcast_dims(in_dims, spec, {})
  if flat == nil then
    fail("%s: in_dims is not compatible with the structure of the inputs. in_dims has structure %s but the inputs " ..
         "have structure %s", head, dim_str(in_dims), spec_str(spec))
  end
  local dims, sizes, k = {}, {}, 0
  for _, e in ipairs(flat) do
    local d, s = e.dim, e.spec
    if d ~= nil and mtype(d) ~= "integer" then
      fail("%s: got in_dim=%s for an input but in_dim must be either an integer dimension or nil", head,
           mtype(d) == "float" and tostring(d) or type_name(d))
    end
    if s ~= LEAF then
      if d ~= nil then
        fail("%s: got in_dim=%d for an input but the input is of type %s. We cannot vmap over non-Tensor arguments, " ..
             "please use nil as the respective in_dim", head, d, s.value == nil and "nil" or type(s.value))
      end
    else
      k = k + 1
      local t = leaves[k]
      if d ~= nil then
        local nd = t:dim()
        if d == 0 or d < -nd or d > nd then
          fail("%s: got in_dim=%d for some input, but that input is a Tensor of dimensionality %d so expected in_dim " ..
               "to satisfy -%d <= in_dim <= %d and in_dim ~= 0 (dims are 1-based)", head, d, nd, nd, nd)
        end
        if d < 0 then d = nd + 1 + d end
        sizes[#sizes + 1] = t:size(d)
      end
      dims[k] = d or false
    end
  end
  if #sizes == 0 then fail("vmap: expected at least one Tensor to vmap over") end
  for _, s in ipairs(sizes) do
    if s ~= sizes[1] then
      local ss = {}
      for i, v in ipairs(sizes) do ss[i] = tostring(v) end
      fail("vmap: expected all tensors to have the same size in the mapped dimension, got sizes {%s} for the mapped " ..
           "dimension", concat(ss, ", "))
    end
  end
  if sizes[1] == 0 then
    fail("vmap: the mapped dimension has size 0; partrain's vmap calls f once per sample, so it cannot make the " ..
         "outputs of an empty batch")
  end
  return leaves, dims, spec, sizes[1]
end

-- flatten with every leaf's value (tensors and other values) appended to vals; a tuple of n
-- values (n > 1) keeps its trailing nils
local function flatten_values(tree, vals, n)
  local spec = flatten(tree, {})
  if n and n > 1 then
    for i = #spec.keys + 1, n do spec.keys[i], spec.kids[i] = i, {const = true} end
    spec.n = n
  end
  local function walk(s, v)
    if s == LEAF or s.const then
      vals[#vals + 1] = v
      return
    end
    for i, k in ipairs(s.keys) do walk(s.kids[i], v[k]) end
  end
  walk(spec, tree)
  return spec
end

local function same_value(a, b)
  if is_tensor(a) and is_tensor(b) then
    return a:dtype() == b:dtype() and shape_str(a) == shape_str(b) and pt.equal(a, b)
  end
  return rawequal(a, b)
end

-- the outputs of the batch's calls (results[i]: a packed list per sample) stacked at out_dims
local function vmap_outputs(out_dims, results)
  local head = fmt("vmap(f, ..., out_dims=%s)", dim_str(out_dims))
  local first = results[1]
  local n = first.n
  -- one return value is the output itself; several are a tuple of them, as Python's
  local function top(r)
    if n == 1 then return r[1] end
    local t = {}
    for i = 1, n do t[i] = r[i] end
    return t
  end
  local spec = flatten_values(top(first), {}, n)
  if not (out_dims == nil or out_dims == false or mtype(out_dims) == "integer" or is_container(out_dims)) then
    fail("%s: out_dims must be an integer or a (nested) table of integers representing where in the outputs the " ..
         "vmapped dimension should appear, got %s", head, mtype(out_dims) == "float" and tostring(out_dims)
         or type_name(out_dims))
  end
  local flat
  if spec == LEAF and type(out_dims) == "table" and list_len(out_dims) == 1 and next(out_dims, next(out_dims)) == nil then
    flat = {{dim = out_dims[1], spec = LEAF}} -- a tensor with out_dims={d}, as torch's edge case
  else
    flat = broadcast_dims(out_dims, spec, {})
  end
  if flat == nil then
    fail("%s: out_dims is not compatible with the structure of the outputs. out_dims has structure %s but the " ..
         "outputs have structure %s", head, dim_str(out_dims), spec_str(spec))
  end
  -- every sample's outputs in the first one's structure
  local per = {}
  for b, r in ipairs(results) do
    if r.n ~= n then
      fail("vmap: f returned %d values for sample 1 but %d for sample %d", n, r.n, b)
    end
    local vals = {}
    local s = flatten_values(top(r), vals, n)
    if spec_str(s) ~= spec_str(spec) then
      fail("vmap: f returned outputs of structure %s for sample 1 but %s for sample %d", spec_str(spec), spec_str(s), b)
    end
    per[b] = vals
  end
  local out = {}
  for j, e in ipairs(flat) do
    local d = e.dim
    if d == false then d = nil end
    if d ~= nil and mtype(d) ~= "integer" then
      fail("%s: out_dims must be an integer or a (nested) table of integers representing where in the outputs the " ..
           "vmapped dimension should appear, got %s", head, mtype(d) == "float" and tostring(d) or type_name(d))
    end
    local v1 = per[1][j]
    if d == nil then
      for b = 2, #per do
        if not same_value(v1, per[b][j]) then
          fail("vmap: f returned different values for samples 1 and %d at output %d, whose out_dim is nil (such an " ..
               "output must not depend on the mapped inputs)", b, j)
        end
      end
      out[j] = v1
    else
      if not is_tensor(v1) then
        fail("vmap: f must only return Tensors, got type %s as a return. Did you mean to set out_dims to nil for " ..
             "that output?", v1 == nil and "nil" or type(v1))
      end
      local nd = v1:dim() + 1
      if d == 0 or d < -nd or d > nd then
        fail("%s: out_dim=%d is out of range for an output of %d dims with the mapped dim (expected -%d <= out_dim <= " ..
             "%d and out_dim ~= 0)", head, d, nd, nd, nd)
      end
      local list = {}
      for b = 1, #per do
        local v = per[b][j]
        if shape_str(v) ~= shape_str(v1) then
          fail("vmap: f returned a tensor of shape %s for sample 1 but %s for sample %d at output %d (the samples' " ..
               "outputs are stacked)", shape_str(v1), shape_str(v), b, j)
        end
        list[b] = v
      end
      out[j] = pt.stack(list, d)
    end
  end
  -- rebuild with the stacked values in place of the leaves (tensors and other values alike)
  local k = 0
  local function rebuild(s)
    if s == LEAF or s.const then
      k = k + 1
      return out[k]
    end
    local t = {}
    for i, key in ipairs(s.keys) do t[key] = rebuild(s.kids[i]) end
    return t
  end
  local res = rebuild(spec)
  if n == 1 then return res end
  return unpack(res, 1, n)
end

function func.vmap(fn, opts, ...)
  local fname = "func.vmap"
  check_fn(fname, fn)
  if opts ~= nil and not is_opts(opts) then
    fail("%s: expected an options table as argument 2, got %s", fname, type_name(opts))
  end
  if select("#", ...) > 0 then fail("%s: unexpected argument #3 (%s)", fname, type_name((...))) end
  local o = opts or {}
  check_opts(fname, o, VMAP_OPTS)
  local randomness = o.randomness
  if randomness == nil then randomness = "error" end
  if not RANDOMNESS[randomness] then
    fail("%s: only allowed values for randomness are \"error\", \"different\", or \"same\", got %s", fname,
         type(randomness) == "string" and fmt("%q", randomness) or type_name(randomness))
  end
  local chunk = o.chunk_size
  if chunk ~= nil and not (mtype(chunk) == "integer" and chunk > 0) then
    fail("%s: chunk_size should be nil or an integer greater than 0, got %s", fname, tostring(chunk))
  end
  local in_dims, out_dims = o.in_dims, o.out_dims
  if in_dims == nil then in_dims = 1 end
  if out_dims == nil then out_dims = 1 end
  return function(...)
    local args = pack(...)
    local leaves, dims, spec, batch = vmap_inputs(in_dims, args)
    local rng0 = randomness ~= "different" and pt.get_rng_state() or nil
    local results = {}
    for b = 1, batch do
      if randomness == "same" then pt.set_rng_state(rng0) end
      local sl = {}
      for k, t in ipairs(leaves) do sl[k] = dims[k] and t:select(dims[k], b) or t end
      local sargs = unflatten(spec, sl)
      results[b] = pack(fn(unpack(sargs, 1, args.n)))
      if randomness == "error" and not pt.equal(rng0, pt.get_rng_state()) then
        fail("vmap: called a random operation while in randomness error mode. Please either use the \"same\" or " ..
             "\"different\" randomness flags on vmap or perform the randomness operation out of vmap")
      end
    end
    return vmap_outputs(out_dims, results)
  end
end

-- ------------------------------------------------------------------ functional_call

local function is_module(m)
  return pt.nn.is_module(m)
end

local function class_name(m)
  local mt = getmetatable(m)
  return type(mt) == "table" and rawget(mt, "__name") or "Module"
end

-- every parameter and buffer slot of module by dotted name, shared ones under each of their
-- names (torch's remove_duplicate=False): name -> {store table, key, tensor}, and the names in
-- registration order
local function named_slots(module)
  local slots, order, active = {}, {}, {}
  local function walk(m, prefix)
    if active[m] then return end -- a module inside itself
    active[m] = true
    for _, kind in ipairs({{"_param_names", "_parameters"}, {"_buffer_names", "_buffers"}}) do
      local store = rawget(m, kind[2])
      for _, n in ipairs(rawget(m, kind[1])) do
        local t = store[n]
        if t ~= nil then
          local name = prefix .. n
          if slots[name] == nil then order[#order + 1] = name end
          slots[name] = {store, n, t}
        end
      end
    end
    local mods = rawget(m, "_modules")
    for _, cn in ipairs(rawget(m, "_module_names")) do walk(mods[cn], prefix .. cn .. ".") end
    active[m] = nil
  end
  walk(module, "")
  return slots, order
end

local function quoted_list(names)
  local q = {}
  for i, n in ipairs(names) do q[i] = fmt("'%s'", n) end
  return concat(q, ", ")
end

-- the dicts (one table name -> tensor or a list of them) merged: name -> tensor, name -> the
-- table it came from
local function merge_dicts(fname, dicts)
  if type(dicts) ~= "table" or is_tensor(dicts) then
    fail("%s: expected parameters_and_buffers to be a table name -> tensor, or a list of such tables, got %s", fname,
         type_name(dicts))
  end
  local list = dicts
  if dicts[1] == nil then list = {dicts} end
  local merged, from, repeated = {}, {}, {}
  for i = 1, list_len(list) do
    local d = list[i]
    if type(d) ~= "table" or is_tensor(d) then
      fail("%s: expected all elements of parameters_and_buffers to be tables name -> tensor, got %s at index %d", fname,
           type_name(d), i)
    end
    for k, v in pairs(d) do
      if type(k) ~= "string" then
        fail("%s: parameter and buffer names must be strings (dotted paths as in state_dict()), got %s", fname,
             type(k))
      end
      if not is_tensor(v) then fail("%s: the value for '%s' is a %s, not a tensor", fname, k, type(v)) end
      if merged[k] ~= nil then repeated[#repeated + 1] = k end
      merged[k], from[k] = v, d
    end
  end
  if #repeated > 0 then
    sort(repeated)
    fail("%s: %s appeared in multiple tables; the behavior of functional_call is ambiguous", fname,
         quoted_list(repeated))
  end
  return merged, from
end

local FCALL_OPTS = {"tie_weights", "strict"}

function func.functional_call(module, dicts, args, kwargs, opts, ...)
  local fname = "func.functional_call"
  if not is_module(module) then fail("%s: expected an nn.Module as argument 1, got %s", fname, type_name(module)) end
  if select("#", ...) > 0 then fail("%s: unexpected argument #6 (%s)", fname, type_name((...))) end
  if opts ~= nil and not is_opts(opts) then
    fail("%s: expected an options table as argument 5, got %s", fname, type_name(opts))
  end
  local o = opts or {}
  check_opts(fname, o, FCALL_OPTS)
  for _, k in ipairs(FCALL_OPTS) do
    if o[k] ~= nil and type(o[k]) ~= "boolean" then fail("%s: %s must be a boolean, got %s", fname, k, type_name(o[k])) end
  end
  local tie, strict = o.tie_weights ~= false, o.strict == true
  local given, from = merge_dicts(fname, dicts)
  local slots, order = named_slots(module)

  local unexpected, missing = {}, {}
  for k in pairs(given) do
    if slots[k] == nil then unexpected[#unexpected + 1] = k end
  end
  if strict then
    for _, n in ipairs(order) do
      if given[n] == nil then missing[#missing + 1] = n end
    end
  end
  if #unexpected + #missing > 0 then
    sort(unexpected)
    sort(missing)
    local msgs = {}
    if #unexpected > 0 then msgs[#msgs + 1] = fmt("Unexpected key(s): %s.", quoted_list(unexpected)) end
    if #missing > 0 then msgs[#msgs + 1] = fmt("Missing key(s): %s.", quoted_list(missing)) end
    fail("%s: error(s) in reparametrizing for %s:\n\t%s", fname, class_name(module), concat(msgs, "\n\t"))
  end

  -- tied weights: a tensor the module holds under several names takes the value given for any
  -- of them under all of them
  local use = {}
  for k, v in pairs(given) do use[k] = v end
  if tie then
    local by_tensor = {}
    for _, n in ipairs(order) do
      local t = slots[n][3]
      by_tensor[t] = by_tensor[t] or {}
      local g = by_tensor[t]
      g[#g + 1] = n
    end
    for _, group in pairs(by_tensor) do
      if #group > 1 then
        local value, values_differ = nil, false
        for _, n in ipairs(group) do
          local v = given[n]
          if v ~= nil then
            if value ~= nil and not rawequal(value, v) then values_differ = true end
            value = value or v
          end
        end
        if values_differ then
          local names = {}
          for i, n in ipairs(group) do names[i] = n end
          sort(names)
          fail("%s: got multiple values for keys %s, which are tied. Consider using tie_weights=false", fname,
               quoted_list(names))
        end
        if value ~= nil then
          for _, n in ipairs(group) do use[n] = value end
        end
      end
    end
  end

  -- swap, call, swap back (also on error); a value the module assigned to a given name during
  -- the call goes back into the table it came from, as torch's
  local swapped = {}
  for _, n in ipairs(order) do
    local v = use[n]
    if v ~= nil then
      local s = slots[n]
      swapped[#swapped + 1] = {n, s[1], s[2], s[1][s[2]], v}
      s[1][s[2]] = v
    end
  end
  local call_args
  if is_tensor(args) or not is_container(args) then
    call_args = {n = args == nil and 0 or 1, args}
  else
    call_args = {n = list_len(args)}
    for i = 1, call_args.n do call_args[i] = args[i] end
  end
  if kwargs ~= nil then
    call_args.n = call_args.n + 1
    call_args[call_args.n] = kwargs
  end
  local r = pack(pcall(module, unpack(call_args, 1, call_args.n)))
  for i = #swapped, 1, -1 do
    local e = swapped[i]
    local now = e[2][e[3]]
    if now ~= e[5] and from[e[1]] ~= nil then from[e[1]][e[1]] = now end
    e[2][e[3]] = e[4]
  end
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- ------------------------------------------------------------------ stack_module_state

function func.stack_module_state(models, ...)
  local fname = "func.stack_module_state"
  if select("#", ...) > 0 then fail("%s: unexpected argument #2 (%s)", fname, type_name((...))) end
  if type(models) ~= "table" or is_tensor(models) then
    fail("%s: expected a list of modules, got %s", fname, type_name(models))
  end
  local list = {}
  for i = 1, #models do
    local m = models[i]
    if not is_module(m) then fail("%s: expected a list of modules, got %s at index %d", fname, type_name(m), i) end
    list[i] = m
  end
  if #list == 0 then fail("%s: expected at least one model, got 0", fname) end
  local training = list[1].training
  for _, m in ipairs(list) do
    if m.training ~= training then fail("%s: expected all models to have the same training/eval mode", fname) end
  end
  local class = getmetatable(list[1])
  for _, m in ipairs(list) do
    if getmetatable(m) ~= class then fail("%s: expected all models to be of the same class", fname) end
  end
  local function stacked(kind, what)
    local per = {}
    for i, m in ipairs(list) do
      local d = {}
      for name, t in m[kind](m) do d[name] = t end
      per[i] = d
    end
    local res, names = {}, {}
    for name in list[1][kind](list[1]) do names[#names + 1] = name end
    for _, name in ipairs(names) do
      local ts = {}
      local rg = per[1][name].requires_grad
      for i, d in ipairs(per) do
        local t = d[name]
        if t == nil then fail("%s: model %d has no %s '%s' (model 1 has)", fname, i, what, name) end
        if shape_str(t) ~= shape_str(per[1][name]) then
          fail("%s: %s '%s' has shape %s in model 1 but %s in model %d", fname, what, name, shape_str(per[1][name]),
               shape_str(t), i)
        end
        if t.requires_grad ~= rg then
          fail("%s: expected %s from each model to have the same requires_grad", fname, name)
        end
        ts[i] = t
      end
      local s = pt.no_grad(pt.stack, ts, 1)
      if rg then s = s:detach():requires_grad_() end
      res[name] = s
    end
    return res
  end
  return stacked("named_parameters", "parameter"), stacked("named_buffers", "buffer")
end

-- ------------------------------------------------------------------ help

doc(func, "pt.func: torch.func (functorch) for partrain: functional_call, grad, grad_and_value, vjp, jacrev,\n" ..
  "jacfwd, hessian, vmap (a loop) and stack_module_state, over the ordinary autograd.")

doc(func.functional_call, [[func.functional_call(module, params_and_buffers, args[, kwargs][, {tie_weights=true,
  strict=false}]) -> module(args...) run with the given tensors in place of its parameters/buffers.
  params_and_buffers: a table name -> tensor with state_dict()'s dotted names ("0.weight",
  "bn.running_mean"), or a list of such tables (merged; a name in two of them is an error). Names
  not given keep the module's own tensors; a name the module does not have is an error
  ("Unexpected key(s)", as torch's strict check; strict=true also refuses missing names). The
  module's own tensors are put back afterwards, also when the call raises. Gradients flow to the
  given tensors. args: a tensor (one argument) or a list of arguments {x, y} (wrap a table
  argument: {{a, b}}); kwargs, when given, is passed as one more (last) argument. tie_weights:
  a tensor the module holds under several names (tied weights) takes the value given for any of
  them under all of them (different values for them are an error). A tensor the module assigns
  to a given name during the call goes back into the table it came from.
  Example (per-sample gradients): params = {}; for n, p in model:named_parameters() do
  params[n] = p:detach() end; loss = function(p, x, y) return nn.functional.mse_loss(
  func.functional_call(model, p, {x}), y) end.]])

doc(func.grad, [[func.grad(fn[, argnums][, {argnums=1, has_aux=false}]) -> g: g(...) is the gradient of fn(...)
  (a 0-d tensor) with respect to the argument(s) at argnums (1-based; an integer, negative from the
  end, or a list of them, which gives a list of gradients). An argument may be a tensor or a nested
  table of tensors (a params dict); its gradient has the same structure. Inputs fn's output does
  not reach get zeros. has_aux: fn returns output, aux and g returns gradient, aux (aux detached).
  Composes: func.grad(func.grad(f)) is the second derivative (a transform inside another one
  records its gradients with create_graph), func.vmap(func.grad(f)) gives per-sample gradients.
  Outside any transform the gradient carries a graph only when a differentiated argument
  requires grad (tensors fn captures from outside do not count: compose with another transform,
  or pass them as arguments, to differentiate through them). Differentiating twice needs every
  op's create_graph formula (pt.autograd.grad). As torch, grad ignores an outer pt.no_grad for
  fn's own computation.]])

doc(func.grad_and_value, [[func.grad_and_value(fn[, argnums][, {argnums=1, has_aux=false}]) -> g: g(...) returns
  grad, value (with has_aux: grad, value, aux), as func.grad (same options) plus fn's value.]])

doc(func.vjp, [[func.vjp(fn, primals...[, {has_aux=false}]) -> output, vjp_fn (with has_aux: output, vjp_fn, aux)
  output = fn(primals...); vjp_fn(cotangents) returns one value per primal (a tree shaped as the
  primal): cotangents^T J. cotangents has output's structure (a tensor, or a table of them) and
  shapes. Every primal is differentiated (tensors or nested tables of tensors); vjp_fn may be
  called several times; its gradients carry a graph inside another transform or when a primal or
  a cotangent requires grad (so it composes as func.grad does).]])

doc(func.jacrev, [[func.jacrev(fn[, argnums][, {argnums=1, has_aux=false}]) -> j: j(...) is the Jacobian of fn's
  output with respect to the argument(s) at argnums, by reverse mode (one vector-Jacobian product
  per output element, through pt.autograd.functional.jacobian). For an output of shape O and an
  input of shape I the Jacobian has shape O..I. Output trees and input trees nest: the result has
  the output's structure, each leaf the argument's structure (a list of them for a list argnums).
  has_aux: fn returns output, aux; j returns jacobian, aux.]])

doc(func.jacfwd, [[func.jacfwd(fn[, argnums][, {argnums=1, has_aux=false}]) -> j: the Jacobian as func.jacrev (same
  shapes and structure), "forward mode": partrain has no forward-mode AD, so each column J v is
  computed with the double backward trick (pt.autograd.functional.jacobian's strategy="forward-
  mode": the gradient of a vector-Jacobian product with respect to its zero cotangent), which
  needs the create_graph formula of every op fn uses. Inside another transform (where the result
  must carry a graph) it uses reverse mode instead: same values.]])

doc(func.hessian, [[func.hessian(fn[, argnums][, {argnums=1}]) -> h: h(...) is the Hessian of fn (a 0-d output)
  with respect to the argument(s) at argnums: shape I..I for an input of shape I (nested as
  func.jacrev's results for trees and lists of argnums). Computed as jacrev(jacrev(fn)) (torch
  uses jacfwd(jacrev(fn)); the values are the same); needs create_graph formulas for fn's ops.]])

doc(func.vmap, [[func.vmap(fn[, {in_dims=1, out_dims=1, randomness="error", chunk_size=nil}]) -> the batched fn
  It LOOPS: fn is called once per sample, on each mapped argument's select along its in_dim, and
  the results are stacked at out_dims (no vectorisation: use it for per-sample computations, not
  for speed). in_dims: an integer (1-based, negative from the end) or nil/false (not mapped) for
  every argument, or a list with one entry per argument (entries left out are nil), each an
  integer, nil/false or a table shaped as that argument (a nested table of tensors). Mapped
  tensors must agree on the batch size; at least one tensor must be mapped; a non-tensor can't be.
  fn may return a tensor, a table of them or several values (out_dims: an integer, or a list per
  return value / a table shaped as the output); an output with out_dim nil must be the same for
  every sample (it is returned once). Nested vmap works, and vmap(func.grad(f)) gives per-sample
  gradients. randomness: "error" raises when fn draws from the generator (detected by a change of
  pt.get_rng_state(); a pt.Generator of fn's own is not seen), "different" lets each sample draw
  its own numbers, "same" gives every sample the same draws (the generator restarts from the same
  state for each). chunk_size is checked and otherwise has no effect (the loop is one sample per
  call already). An empty batch is an error (fn's output shape is unknown without a call).]])

doc(func.stack_module_state, [[func.stack_module_state(models) -> params, buffers: tables name -> the models'
  tensors of that name stacked along a new first dim (parameters detached and requiring grad
  again, as torch), for ensembling with func.vmap and func.functional_call:
  func.vmap(function(p, b, x) return func.functional_call(base, {p, b}, {x}) end,
  {in_dims = {1, 1, nil}})(params, buffers, x). The models must be of the same class, in the same
  training/eval mode, with the same names and shapes.]])

return func
