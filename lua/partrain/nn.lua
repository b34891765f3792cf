-- partrain.nn: modules, layers, losses and initialisers.
--
-- Defining a module (the one idiom):
--   local MyNet = nn.Module:extend("MyNet")
--   function MyNet:__init(n_in, n_out)        -- no super call needed for a direct Module subclass
--     self.fc1 = nn.Linear(n_in, 32)           -- sub-modules register as children, in order
--     self.fc2 = nn.Linear(32, n_out)
--     self.scale = nn.Parameter(pt.ones(1))   -- leaf tensors with requires_grad register as parameters
--   end
--   function MyNet:forward(x) return self.fc2(nn.relu(self.fc1(x))) end
--   local net = MyNet(784, 10)                 -- calling the class constructs; net(x) runs forward
-- A subclass of a concrete layer calls its parent's initialiser: MyNet.super.__init(self, ...).
--
-- The heavy lifting is fused C (pt._nn_*): one pass forward and one pass backward per layer or
-- loss, recorded as a single autograd node. Class indices are 1-based (as Torch7).
local pt = require "partrain"

local nn = {}
local C = pt
-- errors at the user's line (not in this file), as the host's
local fail = require("partrain.tensor")._fail

local doc = pt._doc

local function shape_str(t)
  return "{" .. table.concat(t:size(), ",") .. "}"
end

local function class_name(m)
  local mt = getmetatable(m)
  return type(mt) == "table" and rawget(mt, "__name") or "Module"
end
nn._class_name = class_name -- shared with the nn_* files (nn._arg_helpers.class_name)

local function is_module(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  return mt ~= nil and type(mt) == "table" and rawget(mt, "__is_module") == true and mt ~= v
end
nn.is_module = doc(is_module, "nn.is_module(x) -> true when x is a Module instance.")

-- ------------------------------------------------------------------ Module

local Module = {__name = "Module", __is_module = true}
nn.Module = Module

-- Instance lookup: methods of the class chain, then parameters, buffers and children.
local function module_index(self, k)
  local v = getmetatable(self)[k]
  if v ~= nil then return v end
  v = rawget(self, "_parameters")[k]
  if v ~= nil then return v end
  v = rawget(self, "_buffers")[k]
  if v ~= nil then return v end
  local mods = rawget(self, "_modules")
  v = mods[k]
  if v == nil and math.type(k) == "integer" then v = mods[tostring(k)] end
  return v
end

local function remove_name(list, name)
  for i = 1, #list do
    if list[i] == name then
      table.remove(list, i)
      return
    end
  end
end

local function unregister(self, k)
  local p, b, m = rawget(self, "_parameters"), rawget(self, "_buffers"), rawget(self, "_modules")
  if p[k] ~= nil then p[k] = nil; remove_name(self._param_names, k) end
  if b[k] ~= nil then b[k] = nil; remove_name(self._buffer_names, k) end
  if m[k] ~= nil then m[k] = nil; remove_name(self._module_names, k); rawset(self, "_plan", nil) end
end

local function module_newindex(self, k, v)
  if math.type(k) == "integer" and is_module(v) then k = tostring(k) end
  if pt.is_tensor(v) and v.requires_grad and v.is_leaf then
    if rawget(self, "_parameters")[k] == nil then
      unregister(self, k)
      table.insert(self._param_names, k)
    end
    self._parameters[k] = v
  elseif is_module(v) then
    if rawget(self, "_modules")[k] == nil then
      unregister(self, k)
      table.insert(self._module_names, k)
    end
    self._modules[k] = v
    rawset(self, "_plan", nil)
  elseif rawget(self, "_buffers")[k] ~= nil and (v == nil or pt.is_tensor(v)) then
    if v == nil then unregister(self, k) else self._buffers[k] = v end
  elseif rawget(self, "_parameters")[k] ~= nil then
    if v ~= nil then
      fail(string.format("%s: cannot assign %s to parameter '%s' (a parameter must be a leaf "
        .. "tensor with requires_grad; use nn.Parameter(t))", class_name(self),
        pt.is_tensor(v) and "a tensor without requires_grad" or type(v), tostring(k)))
    end
    unregister(self, k)
  else
    if v == nil then unregister(self, k) end
    rawset(self, k, v)
  end
end

-- ------------------------------------------------------------------ hooks
-- A module with hooks has m._hooks = {pre = {...}, fwd = {...}, bwd = {...}} (lists of {fn = f},
-- in registration order), only while one is registered: a module without hooks calls forward
-- directly, with nothing allocated (module_call below).
local HookHandle = {__name = "RemovableHandle"}
HookHandle.__index = HookHandle
function HookHandle:remove()
  local list = self._list
  for i = 1, #list do
    if list[i] == self._entry then
      table.remove(list, i)
      break
    end
  end
  local h = self._hooks
  if rawget(self._module, "_hooks") == h and #h.pre + #h.fwd + #h.bwd == 0 then
    rawset(self._module, "_hooks", nil)
  end
end
doc(HookHandle.remove, "handle:remove(): the hook it was returned for does not run any more (again: nothing).")

local function callable(fn)
  if type(fn) == "function" then return true end
  local mt = getmetatable(fn)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

local function add_hook(self, kind, fn, what)
  if not callable(fn) then fail(string.format("%s: expected a function, got %s", what, type(fn))) end
  local h = rawget(self, "_hooks")
  if h == nil then
    h = {pre = {}, fwd = {}, bwd = {}}
    rawset(self, "_hooks", h)
  end
  local entry, list = {fn = fn}, h[kind]
  list[#list + 1] = entry
  return setmetatable({_module = self, _hooks = h, _list = list, _entry = entry}, HookHandle)
end

local function snapshot(list) -- a hook may remove hooks (itself too) while they run
  return table.move(list, 1, #list, 1, {})
end

-- Full backward hooks, through tensor hooks: the module's tensor inputs and outputs that require
-- grad are wrapped in identity nodes of their own (BackwardHookFunctionBackward, as PyTorch's);
-- the outputs' hooks collect grad_output, the inputs' hooks grad_input, and the module's hooks
-- run once every input's gradient is there (or, with no input that requires grad, every
-- output's).
local function run_backward_hooks(st, last)
  local gin = table.move(st.gin, 1, st.gin.n, 1, {n = st.gin.n})
  local before = table.move(gin, 1, gin.n, 1, {})
  local gout = table.move(st.gout, 1, st.n_out, 1, {n = st.n_out})
  st.got, st.got_out, st.gin, st.gout = 0, 0, {n = st.gin.n}, {} -- ready for another pass
  local h = rawget(st.module, "_hooks")
  for _, e in ipairs(h and snapshot(h.bwd) or {}) do
    local r = e.fn(st.module, gin, gout)
    if r ~= nil then
      if type(r) ~= "table" or pt.is_tensor(r) then
        fail(string.format("%s: a full backward hook must return nil or a list of gradients (grad_input), got %s",
          class_name(st.module), pt.is_tensor(r) and "a tensor" or type(r)))
      end
      for i = 1, gin.n do
        if r[i] ~= nil then gin[i] = r[i] end
      end
    end
  end
  for i = 1, last and gin.n or 0 do
    if i ~= last and not rawequal(gin[i], before[i]) then
      fail(string.format("%s: a full backward hook replaced grad_input[%d], which had already gone on "
        .. "(with %d inputs that require grad, only the gradient computed last, grad_input[%d], can be "
        .. "replaced)", class_name(st.module), i, st.n_in, last))
    end
  end
  if last then return gin[last] end
end

local function input_grad_hook(st, i)
  return function(g)
    st.gin[i] = g
    st.got = st.got + 1
    if st.got == st.n_in then return run_backward_hooks(st, i) end
  end
end

local function output_grad_hook(st, k)
  return function(g)
    st.gout[k] = g
    st.got_out = st.got_out + 1
    if st.n_in == 0 and st.got_out == st.n_out then run_backward_hooks(st, nil) end
  end
end

local function hooked_call(self, ...)
  local h = rawget(self, "_hooks")
  local args = table.pack(...)
  for _, e in ipairs(snapshot(h.pre)) do
    local r = e.fn(self, args)
    if r ~= nil then
      if type(r) == "table" and not pt.is_tensor(r) then
        args = table.move(r, 1, r.n or #r, 1, {n = r.n or #r})
      else
        args = {r, n = 1}
      end
    end
  end
  local st
  if #h.bwd > 0 then
    st = {module = self, n_in = 0, got = 0, gin = {n = args.n}, n_out = 0, got_out = 0, gout = {}}
    local wrapped = {n = args.n}
    for i = 1, args.n do
      local a = args[i]
      if pt.is_tensor(a) and a.requires_grad then
        a = C._hook_identity(a)
        if a.requires_grad then -- grad mode on
          st.n_in = st.n_in + 1
          a:register_hook(input_grad_hook(st, i))
        end
      end
      wrapped[i] = a
    end
    args = wrapped
  end
  local res = table.pack(self:forward(table.unpack(args, 1, args.n)))
  for _, e in ipairs(snapshot(h.fwd)) do
    local r = e.fn(self, args, res[1])
    if r ~= nil then res[1] = r end
  end
  if st then
    for i = 1, res.n do
      local o = res[i]
      if pt.is_tensor(o) and o.requires_grad then
        o = C._hook_identity(o)
        st.n_out = st.n_out + 1
        o:register_hook(output_grad_hook(st, st.n_out))
        res[i] = o
      end
    end
  end
  return table.unpack(res, 1, res.n)
end

local function module_call(self, ...)
  if rawget(self, "_hooks") == nil then return self:forward(...) end
  return hooked_call(self, ...)
end

local function module_len(self)
  return #rawget(self, "_module_names")
end

local function module_tostring(self)
  local name = class_name(self)
  local lines = {}
  local extra = self:extra_repr()
  if extra ~= "" then
    for line in (extra .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  end
  for _, cname in ipairs(self._module_names) do
    local child = tostring(self._modules[cname]):gsub("\n", "\n  ")
    lines[#lines + 1] = "(" .. cname .. "): " .. child
  end
  if #lines == 0 then return name .. "()" end
  if #lines == 1 and extra ~= "" and not extra:find("\n") then return name .. "(" .. extra .. ")" end
  return name .. "(\n  " .. table.concat(lines, "\n  ") .. "\n)"
end

local METAMETHODS = {
  __index = module_index, __newindex = module_newindex, __call = module_call,
  __len = module_len, __tostring = module_tostring,
}
for k, v in pairs(METAMETHODS) do Module[k] = v end
-- metamethods must be raw fields of each class: extend() copies these from the parent
local INHERITED_METAMETHODS = {"__index", "__newindex", "__call", "__len", "__tostring", "__pairs",
  "__close", "__eq", "__concat", "__unm", "__add", "__sub", "__mul", "__div"}

local class_mt = {
  __call = function(cls, ...) return cls:new(...) end,
  __tostring = function(cls) return "class " .. rawget(cls, "__name") end,
}
setmetatable(Module, class_mt)

function Module:extend(name)
  if type(name) ~= "string" then
    fail("Module:extend: expected a class name (string), got " .. type(name))
  end
  if rawget(self, "_module_names") ~= nil then -- an instance: its class is what extends
    fail(string.format("Module:extend: call it on a class (nn.%s:extend(\"%s\")), not on a module", class_name(self), name))
  end
  local cls = {__name = name, __is_module = true, super = self}
  for _, k in ipairs(INHERITED_METAMETHODS) do cls[k] = rawget(self, k) end
  return setmetatable(cls, {__index = self, __call = class_mt.__call, __tostring = class_mt.__tostring})
end
doc(Module.extend, [[nn.Module:extend(name) -> a new module class.
  local MyNet = nn.Module:extend("MyNet")
  function MyNet:__init(...) self.fc = nn.Linear(4, 2) end
  function MyNet:forward(x) return self.fc(x) end
  local net = MyNet(...)          -- net(x) calls forward
Any class extends further: local Special = MyNet:extend("Special"), whose __init calls
Special.super.__init(self, ...).]])

function Module:new(...)
  local self = setmetatable({
    _parameters = {}, _param_names = {}, _buffers = {}, _buffer_names = {},
    _modules = {}, _module_names = {}, training = true,
  }, self)
  self:__init(...)
  return self
end
doc(Module.new, [[Class:new(...) -> a new instance; Class(...) calls it.
  Sets up the instance's registries of parameters, buffers and children, then runs
  Class.__init(self, ...) (define __init in a class; a subclass of a concrete layer calls
  Class.super.__init(self, ...)). Override __init, not new.]])

function Module:__init() end

function Module:forward()
  fail(class_name(self) .. ":forward is not implemented (define function "
    .. class_name(self) .. ":forward(...))")
end
doc(Module.forward, [[m:forward(...) -> output: the module's computation; m(...) calls it.
  Every layer defines its own (help(nn.<Layer>) says what it computes); a class made with
  nn.Module:extend defines function MyNet:forward(x) ... end. nn.Module's own raises
  "MyNet:forward is not implemented".]])

function Module:register_forward_pre_hook(fn)
  return add_hook(self, "pre", fn, "register_forward_pre_hook")
end
doc(Module.register_forward_pre_hook, [[m:register_forward_pre_hook(fn) -> handle: fn(m, inputs) runs before every m(...)
  (inputs: the list of arguments, inputs.n of them). It returns nil or new inputs: a list
  (a table), or one value that becomes the only argument. Hooks run in registration order,
  each seeing what the previous one returned; handle:remove() unregisters one. m:forward(...)
  called directly runs no hooks (as PyTorch's).]])

function Module:register_forward_hook(fn)
  return add_hook(self, "fwd", fn, "register_forward_hook")
end
doc(Module.register_forward_hook, [[m:register_forward_hook(fn) -> handle: fn(m, inputs, output) runs after every m(...)
  (output: forward's first result; further results pass unchanged). It returns nil or a new
  output. Hooks run in registration order; handle:remove() unregisters one.]])

function Module:register_full_backward_hook(fn)
  return add_hook(self, "bwd", fn, "register_full_backward_hook")
end
doc(Module.register_full_backward_hook, [[m:register_full_backward_hook(fn) -> handle: fn(m, grad_input, grad_output) runs when
  the gradients with respect to the inputs of a call m(...) are computed, as PyTorch's:
  grad_input[i] is the gradient of argument i (nil for arguments that are not tensors requiring
  grad; grad_input.n = the number of arguments), grad_output[k] the gradient of the k-th tensor
  result that requires grad. With no input that requires grad it runs once the outputs'
  gradients are there, with an empty grad_input. fn returns nil or a list whose non-nil entries
  replace grad_input's (a module with several inputs requiring grad can replace only the one
  computed last: the others have already gone on). The inputs and outputs of the call are
  wrapped in identity nodes (BackwardHookFunctionBackward) while such a hook is registered.
  Hooks run in registration order; handle:remove() unregisters one.]])

function Module:extra_repr() return "" end
doc(Module.extra_repr, [[m:extra_repr() -> string: the settings shown in m's printed form, inside the parentheses:
  Linear(in_features=4, out_features=2, bias=true). Define it in a class to show its own
  (nn.Module's returns ""); the children are printed after it, one per line.]])

-- torch's checks of a name a module registers (a dotted path could not reach it)
local function check_member_name(fname, kind, name)
  if type(name) ~= "string" then fail(string.format("%s: %s name should be a string, got %s", fname, kind, type(name))) end
  if name:find(".", 1, true) then fail(string.format("%s: %s name can't contain \".\", got: %s", fname, kind, name)) end
  if name == "" then fail(string.format("%s: %s name can't be empty string \"\"", fname, kind)) end
end

function Module:register_parameter(name, t)
  check_member_name("register_parameter", "parameter", name)
  if t ~= nil and not (pt.is_tensor(t) and t.is_leaf) then
    fail("register_parameter: '" .. tostring(name) .. "' must be a leaf tensor")
  end
  if t ~= nil and not t.requires_grad then t.requires_grad = true end
  module_newindex(self, name, t)
end
doc(Module.register_parameter, "m:register_parameter(name, tensor): adds a parameter (sets requires_grad).")

function Module:register_buffer(name, t)
  check_member_name("register_buffer", "buffer", name)
  if t ~= nil and not pt.is_tensor(t) then
    fail("register_buffer: '" .. tostring(name) .. "' must be a tensor")
  end
  unregister(self, name)
  rawset(self, name, nil)
  if t ~= nil then
    table.insert(self._buffer_names, name)
    self._buffers[name] = t
  end
end
doc(Module.register_buffer, "m:register_buffer(name, tensor): state saved in state_dict() that is not a parameter (e.g. running_mean).")

function Module:add_module(name, m)
  check_member_name("add_module", "module", name)
  if not is_module(m) then
    fail("add_module: '" .. tostring(name) .. "' is not a Module (got " .. type(m) .. ")")
  end
  module_newindex(self, name, m)
  return self
end
Module.register_module = Module.add_module -- PyTorch's alias
doc(Module.add_module, "m:add_module(name, module) -> m; registers a child under name. m:register_module(name, module)\n"
  .. "  is the same function (PyTorch's alias).")

local function walk(self, prefix, fn, seen)
  seen = seen or {}
  if seen[self] then return end
  seen[self] = true
  fn(self, prefix)
  for _, cname in ipairs(self._module_names) do
    walk(self._modules[cname], prefix .. cname .. ".", fn, seen)
  end
end

local function named_list(self, kind)
  local out, seen = {}, {}
  local names_key = kind == "param" and "_param_names" or "_buffer_names"
  local store_key = kind == "param" and "_parameters" or "_buffers"
  walk(self, "", function(m, prefix)
    local store = rawget(m, store_key)
    for _, n in ipairs(rawget(m, names_key)) do
      local t = store[n]
      if not seen[t] then
        seen[t] = true
        out[#out + 1] = {prefix .. n, t}
      end
    end
  end)
  return out
end

local function list_iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

function Module:parameters()
  local out = {}
  for i, e in ipairs(named_list(self, "param")) do out[i] = e[2] end
  return out
end
doc(Module.parameters, "m:parameters() -> list of parameter tensors (recursive, registration order, shared ones once).")

function Module:named_parameters()
  return list_iter(named_list(self, "param"))
end
doc(Module.named_parameters, "m:named_parameters() -> iterator of name, tensor: for name, p in m:named_parameters() do ... end\n  Names are dotted paths: \"fc1.weight\", \"1.bias\" (Sequential children are numbered from 1).")

function Module:buffers()
  local out = {}
  for i, e in ipairs(named_list(self, "buffer")) do out[i] = e[2] end
  return out
end
doc(Module.buffers, "m:buffers() -> list of buffer tensors (recursive).")

function Module:named_buffers()
  return list_iter(named_list(self, "buffer"))
end
doc(Module.named_buffers, "m:named_buffers() -> iterator of name, tensor over buffers.")

function Module:share_memory()
  for _, p in ipairs(self:parameters()) do
    p:share_memory_()
    if p.grad then p.grad:share_memory_() end
  end
  for _, b in ipairs(self:buffers()) do b:share_memory_() end
  return self
end
doc(Module.share_memory, "m:share_memory() -> m, its parameters (and gradients present) and buffers moved into shared\n"
  .. "  memory (t:share_memory_()): process workers forked afterwards (inbatch_parallel's process target)\n"
  .. "  update the caller's model in place, as PyTorch's Hogwild training.")

function Module:children()
  local out = {}
  for i, n in ipairs(self._module_names) do out[i] = self._modules[n] end
  return out
end
doc(Module.children, "m:children() -> list of direct sub-modules in registration order.")

function Module:named_children()
  local list = {}
  for i, n in ipairs(self._module_names) do list[i] = {n, self._modules[n]} end
  return list_iter(list)
end
doc(Module.named_children, "m:named_children() -> iterator of name, module over direct children.")

function Module:modules()
  local out = {}
  walk(self, "", function(m) out[#out + 1] = m end)
  return out
end
doc(Module.modules, "m:modules() -> list of m and all its descendants (pre-order).")

function Module:named_modules()
  local list = {}
  walk(self, "", function(m, prefix) list[#list + 1] = {prefix:sub(1, -2), m} end)
  return list_iter(list)
end
doc(Module.named_modules, "m:named_modules() -> iterator of name, module (m itself is \"\").")

function Module:apply(fn)
  for _, c in ipairs(self:children()) do c:apply(fn) end
  fn(self)
  return self
end
doc(Module.apply, "m:apply(fn) -> m; calls fn(module) on every child (recursively) and then on m.")

function Module:train(mode)
  if mode == nil then mode = true end
  self.training = mode and true or false
  for _, c in ipairs(self:children()) do c:train(mode) end
  return self
end
doc(Module.train, "m:train([mode=true]) -> m; training mode (dropout active, batch norm uses batch statistics).")

function Module:eval()
  return self:train(false)
end
doc(Module.eval, "m:eval() -> m; evaluation mode (same as m:train(false)).")

function Module:zero_grad(opts)
  C._nn_zero_grads(self:parameters(), opts and opts.set_to_none)
end
doc(Module.zero_grad, "m:zero_grad([{set_to_none=false}]): zeroes every parameter's .grad in place\n  (keeps the buffers; set_to_none=true drops them instead).")

-- As PyTorch's Module._apply: every parameter and buffer keeps its identity and takes converted
-- data, so an optimizer made before, weights tied between modules and views held elsewhere of
-- the module's tensors all follow; a parameter's .grad is converted too. Only the floating
-- tensors change, except with every (m:type(dtype), as PyTorch's Module.type: integer buffers too).
local function convert(self, dtype, every)
  local function floating(t) return t:dtype() == "float32" or t:dtype() == "float64" end
  pt.no_grad(function()
    local done = {}
    for _, m in ipairs(self:modules()) do
      for _, group in ipairs({{m._param_names, m._parameters}, {m._buffer_names, m._buffers}}) do
        for _, n in ipairs(group[1]) do
          local t = group[2][n]
          if pt.is_tensor(t) and not done[t] and (every or floating(t)) and t:dtype() ~= dtype then
            done[t] = true
            local g = t.grad
            C._nn_set_data_(t, t:detach():to(dtype))
            if g and floating(g) and g:dtype() ~= dtype then t.grad = g:to(dtype) end
          end
        end
      end
    end
  end)
  return self
end

function Module:to(what)
  if what == "float32" or what == "float" or what == "float64" or what == "double" then
    return convert(self, (what == "float" or what == "float32") and "float32" or "float64")
  end
  if what == "cpu" then return self end
  fail(class_name(self) .. ":to: unsupported target '" .. tostring(what) .. "'")
end
doc(Module.to, "m:to(dtype) -> m with floating parameters and buffers converted (\"float32\"/\"float64\"); m:to(\"cpu\") is m.")
function Module:double() return self:to("float64") end
doc(Module.double, "m:double() -> m with float64 parameters.")
function Module:float() return self:to("float32") end
doc(Module.float, "m:float() -> m with float32 parameters.")

-- dtype names as pt.tensor takes them -> the dtype (16-bit floats: false, partrain has none)
local DTYPES = {float32 = "float32", float = "float32", float64 = "float64", double = "float64",
  int64 = "int64", long = "int64", int32 = "int32", int = "int32", uint8 = "uint8", byte = "uint8",
  bool = "bool", float16 = false, half = false, bfloat16 = false}

local function no_16bit(self, what)
  fail(string.format("%s:%s: partrain has no 16-bit floating point dtypes (float16, bfloat16); keep float32 "
    .. "(m:float()) or use float64 (m:double())", class_name(self), what))
end

function Module:type(dtype)
  local dt = DTYPES[dtype]
  if dt == false then no_16bit(self, "type") end
  if dt == nil then
    fail(string.format("%s:type: expected a dtype name (\"float32\", \"float64\", \"int64\", ...), got %s",
      class_name(self), type(dtype) == "string" and "'" .. dtype .. "'" or type(dtype)))
  end
  if dt ~= "float32" and dt ~= "float64" and #self:parameters() > 0 then
    fail(string.format("%s:type: cannot convert the parameters to %s (tensors that require gradients must "
      .. "be floating point); nothing was converted", class_name(self), dt))
  end
  return convert(self, dt, true)
end
doc(Module.type, [[m:type(dtype) -> m with every parameter and buffer converted to dtype, as PyTorch's Module.type:
  integer buffers too (m:type("float64") makes BatchNorm's num_batches_tracked float64; m:to and
  m:double() convert only the floating ones). Tensors keep their identity (as m:to). A dtype that
  is not floating is an error when m has parameters; "float16"/"half"/"bfloat16" are errors
  (partrain has no 16-bit floats).]])

function Module:cpu() return self end
doc(Module.cpu, "m:cpu() -> m: partrain's modules live on the CPU (m:to(\"cpu\") is the same).")

function Module:half() no_16bit(self, "half") end
doc(Module.half, "m:half(): an error: partrain has no float16 dtype (PyTorch's converts to float16); use m:float() or m:double().")
function Module:bfloat16() no_16bit(self, "bfloat16") end
doc(Module.bfloat16, "m:bfloat16(): an error: partrain has no bfloat16 dtype (PyTorch's converts to bfloat16); use m:float() or m:double().")

function Module:requires_grad_(flag)
  if flag == nil then flag = true end
  if type(flag) ~= "boolean" then
    fail(string.format("%s:requires_grad_: expected a boolean, got %s", class_name(self),
      pt.is_tensor(flag) and "tensor" or type(flag)))
  end
  for _, p in ipairs(self:parameters()) do p.requires_grad = flag end
  return self
end
doc(Module.requires_grad_, [[m:requires_grad_([flag=true]) -> m with requires_grad = flag on every parameter (recursive).
  m:requires_grad_(false) freezes m (e.g. a pretrained part while fine-tuning the rest): its
  parameters stay registered (parameters(), state_dict()) but backward computes no gradient
  for them.]])

-- PyTorch's path lookups: each component must exist (a parameter, buffer, child, method or field)
-- and lead to a module; messages as its AttributeErrors
local function path_string(self, what, target)
  if math.type(target) == "integer" then return tostring(target) end
  if type(target) ~= "string" then
    fail(string.format("%s:%s: expected a dotted path (a string such as \"1.weight\"), got %s", class_name(self),
      what, pt.is_tensor(target) and "tensor" or type(target)))
  end
  return target
end

local function has_attribute(m, name)
  return rawget(m, name) ~= nil or module_index(m, name) ~= nil
end

local function submodule(self, what, path)
  local mod = self
  if path == "" then return mod end
  for item in (path .. "."):gmatch("(.-)%.") do
    if not has_attribute(mod, item) then
      fail(string.format("%s:%s: %s has no attribute `%s`", class_name(self), what, class_name(mod), item))
    end
    mod = mod[item]
    if not is_module(mod) then
      fail(string.format("%s:%s: `%s` is not an nn.Module", class_name(self), what, item))
    end
  end
  return mod
end

function Module:get_submodule(target)
  return submodule(self, "get_submodule", path_string(self, "get_submodule", target))
end
doc(Module.get_submodule, [[m:get_submodule(path) -> the module at the dotted path: net:get_submodule("encoder.1.fc")
  ("" is m itself; Sequential children are "1", "2", ...). A missing component is an error that names
  it ("Linear has no attribute `foo`"), and so is one that is not a module ("`weight` is not an nn.Module").]])

-- the module holding the last component of path, and that component
local function holder(self, what, target)
  local path = path_string(self, what, target)
  local mod_path, name = path:match("^(.*)%.([^.]*)$")
  if not mod_path then mod_path, name = "", path end
  local mod = submodule(self, what, mod_path)
  if not has_attribute(mod, name) then
    fail(string.format("%s:%s: %s has no attribute `%s`", class_name(self), what, class_name(mod), name))
  end
  return mod, name
end

function Module:get_parameter(target)
  local mod, name = holder(self, "get_parameter", target)
  local p = rawget(mod, "_parameters")[name]
  if p == nil then fail(string.format("%s:get_parameter: `%s` is not an nn.Parameter", class_name(self), name)) end
  return p
end
doc(Module.get_parameter, [[m:get_parameter(path) -> the parameter at the dotted path: net:get_parameter("1.weight").
  Errors name the component: "Linear has no attribute `foo`", "`running_mean` is not an nn.Parameter".]])

function Module:get_buffer(target)
  local mod, name = holder(self, "get_buffer", target)
  local b = rawget(mod, "_buffers")[name]
  if b == nil then fail(string.format("%s:get_buffer: `%s` is not a buffer", class_name(self), name)) end
  return b
end
doc(Module.get_buffer, [[m:get_buffer(path) -> the buffer at the dotted path: net:get_buffer("2.running_mean").
  Errors name the component: "BatchNorm1d has no attribute `foo`", "`weight` is not a buffer".]])

-- A state dict: pairs() gives its keys in the order they were made (PyTorch's OrderedDict),
-- then the keys set since, and skips the keys set to nil since (they were yielded with nil
-- values, and pt.save and load_state_dict's strict check missed the added ones).
local function ordered_table(keys, map)
  return setmetatable(map, {
    __keys = keys,
    __pairs = function(t)
      local i, listed, k2 = 0, nil, nil
      return function()
        while i < #keys do
          i = i + 1
          local k = keys[i]
          local v = rawget(t, k)
          if v ~= nil then return k, v end
        end
        if not listed then
          listed = {}
          for _, k in ipairs(keys) do listed[k] = true end
        end
        repeat k2 = next(t, k2) until k2 == nil or not listed[k2]
        if k2 ~= nil then return k2, rawget(t, k2) end
      end, t, nil
    end,
  })
end

-- A key with each whole-number component (the index of a child of Sequential, ModuleList,
-- ParameterList) moved by delta: -1 gives PyTorch's 0-based name of one of ours, +1 back.
local function shift_key(name, delta)
  if type(name) ~= "string" or not name:find("%d") then return name end
  local parts = {}
  for part in (name .. "."):gmatch("(.-)%.") do
    local n = part:match("^%d+$") and math.tointeger(tonumber(part))
    parts[#parts + 1] = n and tostring(n + delta) or part
  end
  return table.concat(parts, ".")
end

local function index_base_opt(fname, opts, allowed)
  local base = opts and opts.index_base
  if base ~= nil and not allowed[base] then
    fail(string.format("%s: index_base must be %s, got %s", fname, allowed.text, tostring(base)))
  end
  return base
end

function Module:state_dict(opts)
  if opts ~= nil and type(opts) ~= "table" then
    fail("state_dict: options must be a table, got " .. type(opts))
  end
  local base = index_base_opt("state_dict", opts, {[0] = true, [1] = true, text = "0 or 1"}) or 1
  local keys, map = {}, {}
  local function add(name, t)
    if base == 0 then name = shift_key(name, -1) end
    if map[name] == nil then keys[#keys + 1] = name end
    map[name] = t:detach()
  end
  -- parameters and buffers of each module together, as PyTorch orders them
  walk(self, "", function(m, prefix)
    for _, n in ipairs(m._param_names) do add(prefix .. n, m._parameters[n]) end
    for _, n in ipairs(m._buffer_names) do add(prefix .. n, m._buffers[n]) end
  end)
  return ordered_table(keys, map)
end
doc(Module.state_dict, [[m:state_dict([{index_base = 1}]) -> table name -> tensor (parameters and buffers, sharing
  storage); pairs(sd) iterates in registration order. Children of Sequential, ModuleList and
  ParameterList are named by their 1-based index ("1.weight"); index_base = 0 gives PyTorch's
  names ("0.weight"), so that torch's load_state_dict takes them (also pt.save's index_base).]])

function Module:load_state_dict(sd, opts)
  if type(sd) ~= "table" then fail("load_state_dict: expected a table of tensors, got " .. type(sd)) end
  if opts ~= nil and type(opts) ~= "table" then
    fail("load_state_dict: options must be a table, got " .. type(opts))
  end
  local strict = not (opts and opts.strict == false)
  local base = index_base_opt("load_state_dict", opts,
    {[0] = true, [1] = true, auto = true, text = '0, 1 or "auto"'}) or "auto"
  local own = self:state_dict()
  if base == "auto" then -- a PyTorch state_dict (0-based): more of its keys are ours shifted
    local exact, shifted = 0, 0
    for k in pairs(sd) do
      if own[k] ~= nil then exact = exact + 1 end
      if own[shift_key(k, 1)] ~= nil then shifted = shifted + 1 end
    end
    base = shifted > exact and 0 or 1
  end
  if base == 0 then
    local renamed = {}
    for k, v in pairs(sd) do renamed[shift_key(k, 1)] = v end
    sd = renamed
  end
  local missing, unexpected, todo = {}, {}, {}
  for name, dst in pairs(own) do
    local src = sd[name]
    if src == nil then
      missing[#missing + 1] = name
    elseif not pt.is_tensor(src) then
      fail(string.format("load_state_dict: value for '%s' is a %s, not a tensor", name, type(src)))
    elseif shape_str(src) ~= shape_str(dst) then
      fail(string.format("load_state_dict: size mismatch for %s: copying a param with shape %s "
        .. "from checkpoint, the shape in current model is %s", name, shape_str(src), shape_str(dst)))
    else
      todo[#todo + 1] = {dst, src}
    end
  end
  for k in pairs(sd) do
    if own[k] == nil then unexpected[#unexpected + 1] = tostring(k) end
  end
  table.sort(unexpected)
  if strict and (#missing > 0 or #unexpected > 0) then
    local parts = {}
    if #missing > 0 then parts[#parts + 1] = "missing keys: " .. table.concat(missing, ", ") end
    if #unexpected > 0 then parts[#parts + 1] = "unexpected keys: " .. table.concat(unexpected, ", ") end
    fail("load_state_dict: error(s) loading state_dict for " .. class_name(self) .. ": "
      .. table.concat(parts, "; "))
  end
  for _, e in ipairs(todo) do C._nn_copy_(e[1], e[2]) end
  return {missing_keys = missing, unexpected_keys = unexpected}
end
doc(Module.load_state_dict, [[m:load_state_dict(sd[, {strict=true, index_base="auto"}]) -> {missing_keys=, unexpected_keys=}
  Copies values into the existing tensors. Shapes must match; with strict (default) the key
  sets must match exactly. Nothing is copied when an error is raised. A PyTorch state_dict loads
  as it is: its children of Sequential, ModuleList and ParameterList count from 0 ("0.weight" is
  our "1.weight"), and with index_base "auto" the keys are read that way when more of them match
  so; index_base = 0 or 1 says which. Keys in messages are ours (1-based).]])

function Module:num_parameters()
  local n = 0
  for _, p in ipairs(self:parameters()) do n = n + p:numel() end
  return n
end
doc(Module.num_parameters, "m:num_parameters() -> total number of parameter elements.")

doc(Module, "nn.Module: base class of layers and models. Subclass with nn.Module:extend(name); see help(nn.Module.extend).")

function nn.Parameter(t)
  if not pt.is_tensor(t) then fail("Parameter: expected a tensor, got " .. type(t)) end
  if not t.is_leaf then t = t:detach() end
  t.requires_grad = true
  return t
end
doc(nn.Parameter, "nn.Parameter(t) -> t as a leaf with requires_grad = true (registers when assigned to a module field).")

-- ------------------------------------------------------------------ init

local init = {}
nn.init = init
doc(init, "nn.init: parameter initialisers as PyTorch's torch.nn.init (in place, seeded by pt.manual_seed): uniform_, kaiming_uniform_, ...")

local function check_tensor(fname, t)
  if not pt.is_tensor(t) then fail(fname .. ": expected a tensor, got " .. type(t)) end
end

function init.calculate_gain(nonlinearity, param)
  nonlinearity = nonlinearity or "leaky_relu"
  if nonlinearity == "linear" or nonlinearity == "sigmoid" or nonlinearity:match("^conv") then return 1 end
  if nonlinearity == "tanh" then return 5 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2) end
  if nonlinearity == "leaky_relu" then
    local slope = param or 0.01
    return math.sqrt(2 / (1 + slope * slope))
  end
  if nonlinearity == "selu" then return 3 / 4 end
  fail("calculate_gain: unsupported nonlinearity '" .. tostring(nonlinearity) .. "'")
end
doc(init.calculate_gain, "nn.init.calculate_gain(nonlinearity[, param]) -> gain as PyTorch (relu sqrt(2), tanh 5/3, leaky_relu sqrt(2/(1+a^2)), ...).")

local function fans(fname, t)
  local d = t:dim()
  if d < 2 then
    fail(fname .. ": fan in and fan out can not be computed for a tensor with fewer than 2 "
      .. "dimensions (shape " .. shape_str(t) .. ")")
  end
  local rf = 1
  for i = 3, d do rf = rf * t:size(i) end
  return t:size(2) * rf, t:size(1) * rf
end
init._calculate_fan_in_and_fan_out = function(t) return fans("init", t) end

-- an initialiser's settings, positional in PyTorch's order or as a trailing options table (or
-- both: positional first): spec = {{name, kind ("number", "integer" or "string"), default}, ...}
local function init_args(fname, spec, ...)
  local n, args = select("#", ...), {...}
  local opts
  local last = args[n]
  if n > 0 and type(last) == "table" and not pt.is_tensor(last) then
    opts, n = last, n - 1
  end
  if n > #spec then fail(string.format("%s: too many arguments (%d settings at most, got %d)", fname, #spec, n)) end
  local out = {}
  for i = 1, n do out[spec[i][1]] = args[i] end
  if opts then
    local names = {}
    for i, sp in ipairs(spec) do names[i] = sp[1] end
    for k, v in pairs(opts) do
      local known = false
      for _, sp in ipairs(spec) do known = known or sp[1] == k end
      if not known then
        fail(string.format("%s: unknown option '%s' (options: %s)", fname, tostring(k), table.concat(names, ", ")))
      end
      if out[k] ~= nil then fail(string.format("%s: %s given twice (as an argument and as an option)", fname, k)) end
      out[k] = v
    end
  end
  for _, sp in ipairs(spec) do
    local k, kind, default = sp[1], sp[2], sp[3]
    local v = out[k]
    if v == nil then
      out[k] = default
    elseif (kind == "number" and type(v) ~= "number") or (kind == "integer" and math.type(v) ~= "integer")
        or (kind == "string" and type(v) ~= "string") then
      fail(string.format("%s: %s must be %s, got %s", fname, k, kind == "integer" and "an integer" or "a " .. kind,
        pt.is_tensor(v) and "a tensor" or type(v)))
    end
  end
  return out
end

function init.uniform_(t, ...)
  check_tensor("uniform_", t)
  local o = init_args("uniform_", {{"a", "number", 0}, {"b", "number", 1}}, ...)
  return C._nn_uniform_(t, o.a, o.b)
end
doc(init.uniform_, "nn.init.uniform_(t[, a=0, b=1]) -> t filled from U(a, b) (seeded by pt.manual_seed). Every initialiser takes its\n"
  .. "  settings positionally in PyTorch's order or as an options table: uniform_(t, -1, 1) or uniform_(t, {a=-1, b=1}).")

function init.normal_(t, ...)
  check_tensor("normal_", t)
  local o = init_args("normal_", {{"mean", "number", 0}, {"std", "number", 1}}, ...)
  return C._nn_normal_(t, o.mean, o.std)
end
doc(init.normal_, "nn.init.normal_(t[, mean=0, std=1]) -> t filled from N(mean, std^2).")

-- without recording, as every initialiser (a parameter is a leaf that requires grad)
local function filled(t, v)
  pt.no_grad(function() t:fill_(v) end)
  return t
end
function init.constant_(t, ...)
  check_tensor("constant_", t)
  local o = init_args("constant_", {{"val", "number", nil}}, ...)
  if o.val == nil then fail("constant_: missing argument 'val'") end
  return filled(t, o.val)
end
doc(init.constant_, "nn.init.constant_(t, val) (or {val=}) -> t filled with val.")
function init.zeros_(t) check_tensor("zeros_", t); return filled(t, 0) end
doc(init.zeros_, "nn.init.zeros_(t) -> t filled with 0.")
function init.ones_(t) check_tensor("ones_", t); return filled(t, 1) end
doc(init.ones_, "nn.init.ones_(t) -> t filled with 1.")

function init.xavier_uniform_(t, ...)
  check_tensor("xavier_uniform_", t)
  local fan_in, fan_out = fans("xavier_uniform_", t)
  local gain = init_args("xavier_uniform_", {{"gain", "number", 1}}, ...).gain
  local a = gain * math.sqrt(6 / (fan_in + fan_out))
  return C._nn_uniform_(t, -a, a)
end
doc(init.xavier_uniform_, "nn.init.xavier_uniform_(t[, gain=1]) (or {gain=}) -> t from U(-a, a), a = gain*sqrt(6/(fan_in+fan_out)).")

function init.xavier_normal_(t, ...)
  check_tensor("xavier_normal_", t)
  local fan_in, fan_out = fans("xavier_normal_", t)
  local gain = init_args("xavier_normal_", {{"gain", "number", 1}}, ...).gain
  return C._nn_normal_(t, 0, gain * math.sqrt(2 / (fan_in + fan_out)))
end
doc(init.xavier_normal_, "nn.init.xavier_normal_(t[, gain=1]) (or {gain=}) -> t from N(0, std^2), std = gain*sqrt(2/(fan_in+fan_out)).")

local function kaiming_std(fname, t, ...)
  local opts = init_args(fname, {{"a", "number", 0}, {"mode", "string", "fan_in"},
    {"nonlinearity", "string", "leaky_relu"}}, ...)
  local fan_in, fan_out = fans(fname, t)
  local mode = opts.mode or "fan_in"
  if mode ~= "fan_in" and mode ~= "fan_out" then
    fail(fname .. ": mode must be 'fan_in' or 'fan_out', got '" .. tostring(mode) .. "'")
  end
  local fan = mode == "fan_in" and fan_in or fan_out
  local gain = init.calculate_gain(opts.nonlinearity, opts.a)
  return gain / math.sqrt(fan)
end

function init.kaiming_uniform_(t, ...)
  check_tensor("kaiming_uniform_", t)
  local bound = math.sqrt(3) * kaiming_std("kaiming_uniform_", t, ...)
  return C._nn_uniform_(t, -bound, bound)
end
doc(init.kaiming_uniform_, "nn.init.kaiming_uniform_(t[, a=0, mode=\"fan_in\", nonlinearity=\"leaky_relu\"]) (or {a=, mode=, nonlinearity=}) -> t from U(-b, b),\n  b = gain*sqrt(3/fan). nn.Linear uses a=sqrt(5), i.e. U(-1/sqrt(in), 1/sqrt(in)).")

function init.kaiming_normal_(t, ...)
  check_tensor("kaiming_normal_", t)
  return C._nn_normal_(t, 0, kaiming_std("kaiming_normal_", t, ...))
end
doc(init.kaiming_normal_, "nn.init.kaiming_normal_(t[, a=0, mode=\"fan_in\", nonlinearity=\"leaky_relu\"]) (or {a=, mode=, nonlinearity=}) -> t from N(0, (gain/sqrt(fan))^2).")

-- PyTorch's trunc_normal_: the inverse CDF of N(mean, std^2) over U(cdf(a), cdf(b)), then clamped
-- (against the last ulp of erfinv)
function init.trunc_normal_(t, ...)
  check_tensor("trunc_normal_", t)
  local o = init_args("trunc_normal_", {{"mean", "number", 0}, {"std", "number", 1}, {"a", "number", -2},
    {"b", "number", 2}}, ...)
  local mean, std, a, b = o.mean, o.std, o.a, o.b
  if not (std > 0) then fail("trunc_normal_: std must be positive, got " .. tostring(std)) end
  if not (a < b) then fail(string.format("trunc_normal_: expected a < b, got a = %s, b = %s", tostring(a), tostring(b))) end
  local function cdf(x) return (1 + C.erf(pt.tensor(x / math.sqrt(2), {dtype = "float64"})):item()) / 2 end
  local lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
  pt.no_grad(function()
    t:uniform_(2 * lo - 1, 2 * hi - 1)
    t:copy_(t:erfinv() * (std * math.sqrt(2)) + mean)
    t:clamp_(a, b)
  end)
  return t
end
doc(init.trunc_normal_, "nn.init.trunc_normal_(t[, mean=0, std=1, a=-2, b=2]) (or {mean=, std=, a=, b=}) -> t from N(mean, std^2) truncated to [a, b]\n"
  .. "  (PyTorch's inverse-CDF method; a and b are absolute bounds).")

function init.orthogonal_(t, ...)
  check_tensor("orthogonal_", t)
  local gain = init_args("orthogonal_", {{"gain", "number", 1}}, ...).gain
  if t:dim() < 2 then
    fail("orthogonal_: only tensors with 2 or more dimensions are supported (shape " .. shape_str(t) .. ")")
  end
  local rows = t:size(1)
  local cols = t:numel() // math.max(rows, 1)
  if t:numel() == 0 then return t end
  pt.no_grad(function()
    local flat = pt.randn(rows, cols, {dtype = t:dtype()})
    if rows < cols then flat = flat:t() end
    local q, r = pt.linalg.qr(flat)
    -- signs of R's diagonal make the draw uniform over orthogonal matrices (Mezzadri)
    q = q * pt.diagonal(r):sign()
    if rows < cols then q = q:t() end
    t:copy_((q * gain):reshape(t:size()))
  end)
  return t
end
doc(init.orthogonal_, "nn.init.orthogonal_(t[, gain=1]) -> t filled with a (semi-)orthogonal matrix times gain (trailing\n"
  .. "  dims flattened), from the QR decomposition of a normal draw, as PyTorch's.")

function init.eye_(t)
  check_tensor("eye_", t)
  if t:dim() ~= 2 then fail("eye_: only 2-D tensors are supported (shape " .. shape_str(t) .. ")") end
  pt.no_grad(function() t:copy_(pt.eye(t:size(1), t:size(2), {dtype = t:dtype()})) end)
  return t
end
doc(init.eye_, "nn.init.eye_(t) -> the 2-D t set to the identity (ones on the diagonal, zeros elsewhere).")

function init.dirac_(t, ...)
  check_tensor("dirac_", t)
  local groups = init_args("dirac_", {{"groups", "integer", 1}}, ...).groups
  local d = t:dim()
  if d < 3 or d > 5 then fail("dirac_: only 3, 4 and 5-D tensors are supported (shape " .. shape_str(t) .. ")") end
  if math.type(groups) ~= "integer" or groups < 1 or t:size(1) % groups ~= 0 then
    fail(string.format("dirac_: out channels (%d) must be divisible by groups (%s)", t:size(1), tostring(groups)))
  end
  local out_per = t:size(1) // groups
  local min_dim = math.min(out_per, t:size(2))
  pt.no_grad(function()
    t:zero_()
    for g = 0, groups - 1 do
      for k = 1, min_dim do
        local idx = {g * out_per + k, k}
        for j = 3, d do idx[j] = t:size(j) // 2 + 1 end
        t[idx] = 1
      end
    end
  end)
  return t
end
doc(init.dirac_, "nn.init.dirac_(t[, groups=1]) -> the 3-5-D conv weight t set to the Dirac delta (a convolution\n"
  .. "  with it keeps the input's channels; per group).")

function init.sparse_(t, ...)
  check_tensor("sparse_", t)
  local o = init_args("sparse_", {{"sparsity", "number", nil}, {"std", "number", 0.01}}, ...)
  local sparsity, std = o.sparsity, o.std
  if t:dim() ~= 2 then fail("sparse_: only 2-D tensors are supported (shape " .. shape_str(t) .. ")") end
  if type(sparsity) ~= "number" or not (sparsity >= 0 and sparsity <= 1) then
    fail("sparse_: sparsity must be a number in [0, 1], got " .. tostring(sparsity))
  end
  local rows, cols = t:size(1), t:size(2)
  local zeros = math.ceil(sparsity * rows)
  pt.no_grad(function()
    t:normal_(0, std)
    for c = 1, cols do
      local perm = pt.randperm(rows)
      for i = 1, zeros do t[{perm[i], c}] = 0 end
    end
  end)
  return t
end
doc(init.sparse_, "nn.init.sparse_(t, sparsity[, std=0.01]) -> the 2-D t from N(0, std^2) with ceil(sparsity * rows)\n"
  .. "  zeros in every column (rows chosen at random).")

-- torch's deprecated names without the trailing underscore (nn.init.normal, ...): the same functions
-- (help lists them as aliases)
for _, name in ipairs({"uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                       "kaiming_normal", "orthogonal", "sparse"}) do
  init[name] = init[name .. "_"]
end

-- ------------------------------------------------------------------ functional

local function reduction_of(opts)
  return opts and opts.reduction or "mean"
end

-- the options a loss takes: a misspelled one is an error, never ignored
local LOSS_OPTIONS = {
  cross_entropy = {"weight", "label_smoothing", "ignore_index", "reduction"},
  nll_loss = {"weight", "ignore_index", "reduction"},
  mse_loss = {"reduction"}, l1_loss = {"reduction"}, smooth_l1_loss = {"beta", "reduction"},
  binary_cross_entropy = {"weight", "reduction"},
  binary_cross_entropy_with_logits = {"weight", "pos_weight", "reduction"},
}
LOSS_OPTIONS.CrossEntropyLoss, LOSS_OPTIONS.NLLLoss = LOSS_OPTIONS.cross_entropy, LOSS_OPTIONS.nll_loss
LOSS_OPTIONS.MSELoss, LOSS_OPTIONS.L1Loss, LOSS_OPTIONS.SmoothL1Loss =
  LOSS_OPTIONS.mse_loss, LOSS_OPTIONS.l1_loss, LOSS_OPTIONS.smooth_l1_loss
LOSS_OPTIONS.BCELoss, LOSS_OPTIONS.BCEWithLogitsLoss =
  LOSS_OPTIONS.binary_cross_entropy, LOSS_OPTIONS.binary_cross_entropy_with_logits

local function check_named_options(fname, opts, names)
  if opts == nil then return end
  if type(opts) ~= "table" or pt.is_tensor(opts) then
    fail(string.format("%s: expected an options table, got %s", fname, pt.is_tensor(opts) and "a tensor" or type(opts)))
  end
  for k in pairs(opts) do
    local known = false
    for _, n in ipairs(names) do if n == k then known = true end end
    if not known then
      fail(string.format("%s: unknown option '%s' (options: %s)", fname, tostring(k), table.concat(names, ", ")))
    end
  end
end

local function check_loss_options(fname, opts) check_named_options(fname, opts, LOSS_OPTIONS[fname]) end

-- a BCE loss per element times weight (broadcast to it, as torch's rescaling weight), reduced
local function weighted_loss(fname, per_element, weight, reduction)
  if not pt.is_tensor(weight) then
    fail(string.format("%s: weight must be a tensor, got %s", fname, type(weight)))
  end
  local ws, ls = weight:size(), per_element:size()
  local fits = #ws <= #ls
  for k = 1, #ws do
    local wd, ld = ws[#ws - k + 1], ls[#ls - k + 1]
    if fits and wd ~= 1 and wd ~= ld then fits = false end
  end
  if not fits then
    fail(string.format("%s: weight of shape {%s} does not broadcast to the input's shape {%s}", fname,
      table.concat(ws, ","), table.concat(ls, ",")))
  end
  local l = per_element * weight
  if reduction == "mean" then return l:mean() elseif reduction == "sum" then return l:sum() end
  return l
end

function nn.linear(x, w, b) return C._nn_linear(x, w, b, "linear") end
doc(nn.linear, "nn.linear(x, weight[, bias]) -> x * weight^T + bias (weight {out,in}); fused C over one GEMM (oneDNN or OpenBLAS, see pt.sgemm_backend).")
function nn.relu(x) return C._nn_relu(x) end
doc(nn.relu, "nn.relu(x) -> max(x, 0).")
function nn.leaky_relu(x, slope) return C._nn_leaky_relu(x, slope or 0.01) end
doc(nn.leaky_relu, "nn.leaky_relu(x[, negative_slope=0.01]).")
function nn.gelu(x, opts)
  local approximate = opts -- F.gelu(x, "tanh") or F.gelu(x, {approximate = "tanh"})
  if type(opts) == "table" then
    check_named_options("gelu", opts, {"approximate"})
    approximate = opts.approximate
  end
  return C._nn_gelu(x, approximate or "none")
end
doc(nn.gelu, "nn.gelu(x[, {approximate=\"none\"|\"tanh\"}]): x * Phi(x) (exact with erf by default).")
function nn.tanh(x) return C._nn_tanh(x) end
doc(nn.tanh, "nn.tanh(x).")
function nn.sigmoid(x) return C._nn_sigmoid(x) end
doc(nn.sigmoid, "nn.sigmoid(x) -> 1 / (1 + exp(-x)).")
function nn.silu(x) return C._nn_silu(x) end
doc(nn.silu, "nn.silu(x) -> x * sigmoid(x).")
function nn.softmax(x, dim, opts)
  check_named_options("softmax", opts, {"dtype"})
  if opts and opts.dtype then x = x:to(opts.dtype) end
  return C._nn_softmax(x, dim or -1)
end
doc(nn.softmax, "nn.softmax(x[, dim=-1]) -> softmax along dim (1-based, negative from the end).")
function nn.log_softmax(x, dim, opts)
  check_named_options("log_softmax", opts, {"dtype"})
  if opts and opts.dtype then x = x:to(opts.dtype) end
  return C._nn_log_softmax(x, dim or -1)
end
doc(nn.log_softmax, "nn.log_softmax(x[, dim=-1]) -> log(softmax(x)), computed stably.")
function nn.dropout(x, p, training)
  if training == nil then training = true end
  return C._nn_dropout(x, p or 0.5, training)
end
doc(nn.dropout, "nn.dropout(x[, p=0.5[, training=true]]): zeroes elements with probability p and scales the rest by 1/(1-p).")
function nn.layer_norm(x, normalized_shape, w, b, eps)
  return C._nn_layer_norm(x, normalized_shape, w, b, eps or 1e-5)
end
doc(nn.layer_norm, "nn.layer_norm(x, normalized_shape[, weight[, bias[, eps=1e-5]]]): normalises over the trailing dims.")
function nn.batch_norm(x, running_mean, running_var, w, b, training, momentum, eps)
  return C._nn_batch_norm(x, running_mean, running_var, w, b, training and true or false,
    momentum or 0.1, eps or 1e-5)
end
doc(nn.batch_norm, [[nn.batch_norm(x, running_mean, running_var[, weight, bias, training=false, momentum=0.1, eps=1e-5])
  PyTorch's F.batch_norm: positional arguments, and training defaults to FALSE: x is normalised
  with the running statistics (evaluation). training=true: with the batch statistics, updating
  the running ones in place (running = (1-momentum)*running + momentum*batch).
  x {N,C} or {N,C,L}; running_mean/running_var may be nil (then batch statistics are always used).
  pt.batch_norm (also nn.batch_norm2d) is the other form: an options table, any {N,C,...} input,
  and training defaults to TRUE. nn.BatchNorm1d/BatchNorm2d pass their mode explicitly.]])
function nn.embedding(indices, weight, opts)
  check_named_options("embedding", opts, {"padding_idx", "max_norm", "norm_type"})
  return C._nn_embedding(weight, indices, opts and opts.padding_idx or 0, opts and opts.max_norm,
    opts and opts.norm_type)
end
doc(nn.embedding, "nn.embedding(indices, weight[, {padding_idx=}]) -> rows of weight at 1-based integer indices.")

local function shape_text(t) return "{" .. table.concat(t:size(), ",") .. "}" end

-- {N,C,d1,...} scores and {N,d1,...} class indices as the {N*d1*..., C} rows and {N*d1*...}
-- targets of the fused kernels (classes moved last); unflatten(loss) shapes a "none" result back
local function rows_of_classes(name, input, target)
  local isz, tsz = input:size(), target:size()
  local ok = #tsz == #isz - 1 and tsz[1] == isz[1]
  for d = 3, #isz do ok = ok and tsz[d - 1] == isz[d] end
  if not ok then
    fail(("%s: target shape %s does not match input shape %s (expected {N,d1,...} class indices%s)")
      :format(name, shape_text(target), shape_text(input),
        name == "cross_entropy" and " or {N,C,d1,...} probabilities" or ""))
  end
  local perm = {1}
  for d = 3, #isz do perm[#perm + 1] = d end
  perm[#perm + 1] = 2
  local rows = input:permute(table.unpack(perm)):reshape(-1, isz[2])
  return rows, target:reshape(-1), function(loss) return loss:reshape(tsz) end
end

local function is_probabilities(input, target)
  local dt = pt.is_tensor(target) and target:dtype()
  return (dt == "float32" or dt == "float64") and target:dim() == input:dim() and input:dim() >= 1
end

-- PyTorch's cross entropy with class probabilities: -sum_c w_c p_c log_softmax(x)_c per sample,
-- the targets smoothed first; "mean" divides by the number of samples
local function soft_cross_entropy(input, target, opts)
  if shape_text(target) ~= shape_text(input) then
    fail(("cross_entropy: probability target shape %s does not match input shape %s")
      :format(shape_text(target), shape_text(input)))
  end
  local cdim = input:dim() == 1 and 1 or 2
  local ncls = input:size()[cdim]
  local red = reduction_of(opts)
  if red ~= "mean" and red ~= "sum" and red ~= "none" then
    fail(("cross_entropy: reduction must be 'mean', 'sum' or 'none', got '%s'"):format(tostring(red)))
  end
  local eps = opts and opts.label_smoothing or 0
  if type(eps) ~= "number" or eps < 0 or eps > 1 then
    fail(("cross_entropy: label_smoothing must be between 0 and 1, got %s"):format(tostring(eps)))
  end
  local w = opts and opts.weight
  if w ~= nil and (not pt.is_tensor(w) or shape_text(w) ~= "{" .. ncls .. "}") then
    fail(("cross_entropy: weight must have shape {%d} (one per class), got %s")
      :format(ncls, pt.is_tensor(w) and shape_text(w) or type(w)))
  end
  local logp = nn.log_softmax(input, cdim)
  if eps > 0 then target = target * (1 - eps) + eps / ncls end
  if w ~= nil then
    local shape = {}
    for d = 1, input:dim() do shape[d] = d == cdim and ncls or 1 end
    logp = logp * w:reshape(shape)
  end
  local loss = -(logp * target):sum(cdim)
  if red == "mean" then return loss:mean() elseif red == "sum" then return loss:sum() end
  return loss
end

function nn.cross_entropy(input, target, opts)
  check_loss_options("cross_entropy", opts)
  if opts == nil then
    local loss = C._nn_cross_entropy_plain(input, target)
    if loss then return loss end
  end
  if is_probabilities(input, target) then return soft_cross_entropy(input, target, opts) end
  opts = opts or {}
  local unflatten
  if input:dim() > 2 then input, target, unflatten = rows_of_classes("cross_entropy", input, target) end
  local loss = C._nn_cross_entropy(input, target, opts.weight, opts.label_smoothing or 0,
    opts.ignore_index, reduction_of(opts))
  if unflatten and reduction_of(opts) == "none" then loss = unflatten(loss) end
  return loss
end
doc(nn.cross_entropy, [[nn.cross_entropy(logits, target[, {weight=, label_smoothing=0, ignore_index=, reduction="mean"}])
  Fused log-softmax + NLL. logits {N,C} (or {C}, or {N,C,d1,...}); target {N} (or {N,d1,...}) of
  1-based class indices (1..C), or class probabilities of the logits' shape (a float tensor).
  weight: per-class weights {C}; reduction "mean" (weighted mean; with probabilities the mean over
  samples), "sum" or "none".]])

function nn.nll_loss(input, target, opts)
  check_loss_options("nll_loss", opts)
  opts = opts or {}
  local unflatten
  if input:dim() > 2 then input, target, unflatten = rows_of_classes("nll_loss", input, target) end
  local loss = C._nn_nll_loss(input, target, opts.weight, opts.ignore_index, reduction_of(opts))
  if unflatten and reduction_of(opts) == "none" then loss = unflatten(loss) end
  return loss
end
doc(nn.nll_loss, "nn.nll_loss(log_probs, target[, {weight=, ignore_index=, reduction=\"mean\"}]) -> -log_probs[target] (1-based classes;\n  log_probs {N,C}, {C} or {N,C,d1,...} with target {N,d1,...}).")

function nn.mse_loss(input, target, opts)
  check_loss_options("mse_loss", opts)
  return C._nn_mse_loss(input, target, reduction_of(opts))
end
doc(nn.mse_loss, "nn.mse_loss(input, target[, {reduction=\"mean\"}]) -> mean((input - target)^2); shapes must match.")
function nn.l1_loss(input, target, opts)
  check_loss_options("l1_loss", opts)
  return C._nn_l1_loss(input, target, reduction_of(opts))
end
doc(nn.l1_loss, "nn.l1_loss(input, target[, {reduction=\"mean\"}]) -> mean(|input - target|).")
function nn.smooth_l1_loss(input, target, opts)
  check_loss_options("smooth_l1_loss", opts)
  return C._nn_smooth_l1_loss(input, target, opts and opts.beta or 1.0, reduction_of(opts))
end
doc(nn.smooth_l1_loss, "nn.smooth_l1_loss(input, target[, {beta=1, reduction=\"mean\"}]): 0.5 d^2/beta when |d| < beta, else |d| - beta/2.")
function nn.binary_cross_entropy(input, target, opts)
  check_loss_options("binary_cross_entropy", opts)
  if opts and opts.weight ~= nil then
    return weighted_loss("binary_cross_entropy", C._nn_bce(input, target, "none"), opts.weight, reduction_of(opts))
  end
  return C._nn_bce(input, target, reduction_of(opts))
end
doc(nn.binary_cross_entropy, "nn.binary_cross_entropy(probs, target[, {weight=, reduction=\"mean\"}]): -(y log p + (1-y) log(1-p)), logs\n"
  .. "  clamped at -100; weight (broadcast to the input) rescales each element's loss before the reduction, as torch's.")
nn.bce = nn.binary_cross_entropy
function nn.binary_cross_entropy_with_logits(input, target, opts)
  check_loss_options("binary_cross_entropy_with_logits", opts)
  if opts and opts.weight ~= nil then
    return weighted_loss("binary_cross_entropy_with_logits", C._nn_bce_with_logits(input, target, opts.pos_weight,
      "none"), opts.weight, reduction_of(opts))
  end
  return C._nn_bce_with_logits(input, target, opts and opts.pos_weight, reduction_of(opts))
end
doc(nn.binary_cross_entropy_with_logits, "nn.binary_cross_entropy_with_logits(logits, target[, {weight=, pos_weight=, reduction=\"mean\"}]):\n"
  .. "  sigmoid + BCE, numerically stable; weight rescales each element's loss, pos_weight the positives' (per class).")
nn.bce_with_logits = nn.binary_cross_entropy_with_logits

nn.functional = {
  linear = nn.linear, relu = nn.relu, leaky_relu = nn.leaky_relu, gelu = nn.gelu, tanh = nn.tanh,
  sigmoid = nn.sigmoid, silu = nn.silu, softmax = nn.softmax, log_softmax = nn.log_softmax,
  dropout = nn.dropout, layer_norm = nn.layer_norm, batch_norm = nn.batch_norm,
  embedding = nn.embedding, cross_entropy = nn.cross_entropy, nll_loss = nn.nll_loss,
  mse_loss = nn.mse_loss, l1_loss = nn.l1_loss, smooth_l1_loss = nn.smooth_l1_loss,
  binary_cross_entropy = nn.binary_cross_entropy, bce = nn.bce,
  binary_cross_entropy_with_logits = nn.binary_cross_entropy_with_logits,
  bce_with_logits = nn.bce_with_logits,
  one_hot = require("partrain.tensor").one_hot,
  pad = require("partrain.tensor").pad,
  interpolate = require("partrain.resample").interpolate,
  affine_grid = require("partrain.resample").affine_grid,
  grid_sample = require("partrain.resample").grid_sample,
}
nn.F = nn.functional
doc(nn.functional, "nn.functional (also nn.F): the functional forms (PyTorch's torch.nn.functional): F.relu(x), F.cross_entropy(z, y), ...\n"
  .. "  The same functions as nn.relu, nn.cross_entropy, ...; help(nn.functional.<name>) shows one.")

-- ------------------------------------------------------------------ layers

local function check_size(cls, what, v)
  if math.type(v) ~= "integer" or v < 0 then
    fail(string.format("%s: %s must be a non-negative integer, got %s", cls, what, tostring(v)))
  end
end

local Linear = Module:extend("Linear")
nn.Linear = Linear
function Linear:__init(in_features, out_features, opts)
  check_size("Linear", "in_features", in_features)
  check_size("Linear", "out_features", out_features)
  check_named_options("Linear", opts, {"bias", "dtype"})
  opts = opts or {}
  self.in_features, self.out_features = in_features, out_features
  local dt = opts.dtype or pt.get_default_dtype()
  self.weight = nn.Parameter(pt.empty(out_features, in_features, {dtype = dt}))
  if opts.bias ~= false then self.bias = nn.Parameter(pt.empty(out_features, {dtype = dt})) end
  self:reset_parameters()
end
function Linear:reset_parameters()
  init.kaiming_uniform_(self.weight, {a = math.sqrt(5)})
  local b = self.bias
  if b then
    local bound = self.in_features > 0 and 1 / math.sqrt(self.in_features) or 0
    init.uniform_(b, -bound, bound)
  end
end
doc(Linear.reset_parameters, "linear:reset_parameters(): draws weight and bias again, in place, as the constructor does:\n"
  .. "  U(-1/sqrt(in_features), 1/sqrt(in_features)) for both (kaiming_uniform_ with a=sqrt(5) for the weight).")
function Linear:forward(x)
  return C._nn_linear(x, self._parameters.weight, self._parameters.bias, "Linear:forward")
end
function Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features,
    self.out_features, tostring(self.bias ~= nil))
end
doc(Linear, [[nn.Linear(in_features, out_features[, {bias=true, dtype="float32"}])
  y = x W^T + b with W {out,in}, x {..., in}. Init as PyTorch: W and b from U(-1/sqrt(in), 1/sqrt(in)).]])

local Embedding = Module:extend("Embedding")
nn.Embedding = Embedding
function Embedding:__init(num_embeddings, embedding_dim, opts)
  check_size("Embedding", "num_embeddings", num_embeddings)
  check_size("Embedding", "embedding_dim", embedding_dim)
  check_named_options("Embedding", opts, {"padding_idx", "max_norm", "norm_type", "dtype"})
  opts = opts or {}
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.padding_idx = opts.padding_idx
  if self.padding_idx and self.padding_idx < 0 then self.padding_idx = self.padding_idx + num_embeddings + 1 end
  self.max_norm, self.norm_type = opts.max_norm, opts.norm_type
  if self.padding_idx and (self.padding_idx < 1 or self.padding_idx > num_embeddings) then
    fail(string.format("Embedding: padding_idx %s out of range 1..%d", tostring(self.padding_idx),
      num_embeddings))
  end
  self.weight = nn.Parameter(pt.empty(num_embeddings, embedding_dim, {dtype = opts.dtype or pt.get_default_dtype()}))
  init.normal_(self.weight)
  if self.padding_idx then
    for j = 1, embedding_dim do
      self.weight:_set_flat((self.padding_idx - 1) * embedding_dim + j, 0)
    end
  end
end
-- PyTorch's Embedding.from_pretrained: the module's weight is a Parameter over embeddings' data
-- (no copy; the padding row is left as given), frozen (requires_grad=false) unless freeze=false
function Embedding.from_pretrained(embeddings, opts)
  local fname = "Embedding.from_pretrained"
  check_named_options(fname, opts, {"freeze", "padding_idx", "max_norm", "norm_type"})
  opts = opts or {}
  if not pt.is_tensor(embeddings) or embeddings:dim() ~= 2 then
    fail(string.format("%s: embeddings must be a 2-D tensor {num_embeddings, embedding_dim}, got %s", fname,
      pt.is_tensor(embeddings) and ("shape {" .. table.concat(embeddings:size(), ",") .. "}") or type(embeddings)))
  end
  local m = Embedding(embeddings:size(1), embeddings:size(2), {padding_idx = opts.padding_idx,
    max_norm = opts.max_norm, norm_type = opts.norm_type, dtype = embeddings:dtype()})
  m.weight = nn.Parameter(embeddings)
  m.weight.requires_grad = opts.freeze == false
  return m
end
doc(Embedding.from_pretrained, [[nn.Embedding.from_pretrained(embeddings[, {freeze=true, padding_idx=, max_norm=, norm_type=2}])
  -> an Embedding whose weight is the 2-D tensor embeddings itself (no copy), frozen (requires_grad false)
  unless freeze=false, as PyTorch's.]])
function Embedding:forward(idx)
  return C._nn_embedding(self._parameters.weight, idx, self.padding_idx or 0, self.max_norm, self.norm_type)
end
function Embedding:extra_repr()
  return string.format("%d, %d%s", self.num_embeddings, self.embedding_dim,
    self.padding_idx and (", padding_idx=" .. self.padding_idx) or "")
end
doc(Embedding, "nn.Embedding(num_embeddings, dim[, {padding_idx=, dtype=}]): lookup table; forward(indices) with 1-based integer indices. Init N(0,1).")

local Dropout = Module:extend("Dropout")
nn.Dropout = Dropout
function Dropout:__init(p)
  p = p or 0.5
  if type(p) ~= "number" or p < 0 or p > 1 then
    fail("Dropout: probability has to be between 0 and 1, but got " .. tostring(p))
  end
  self.p = p
end
function Dropout:forward(x) return C._nn_dropout(x, self.p, self.training) end
function Dropout:extra_repr() return "p=" .. self.p end
doc(Dropout, "nn.Dropout([p=0.5]): in training mode zeroes elements with probability p (scaling by 1/(1-p)); identity in eval mode.")

local LayerNorm = Module:extend("LayerNorm")
nn.LayerNorm = LayerNorm
function LayerNorm:__init(normalized_shape, opts)
  check_named_options("LayerNorm", opts, {"eps", "elementwise_affine", "bias", "dtype"})
  opts = opts or {}
  if math.type(normalized_shape) == "integer" then normalized_shape = {normalized_shape} end
  if type(normalized_shape) ~= "table" or #normalized_shape == 0 then
    fail("LayerNorm: normalized_shape must be an integer or a table of integers")
  end
  self.normalized_shape = normalized_shape
  self.eps = opts.eps or 1e-5
  self.elementwise_affine = opts.elementwise_affine ~= false
  local dt = opts.dtype or pt.get_default_dtype()
  if self.elementwise_affine then
    self.weight = nn.Parameter(pt.ones(normalized_shape, {dtype = dt}))
    if opts.bias ~= false then self.bias = nn.Parameter(pt.zeros(normalized_shape, {dtype = dt})) end
  end
end
function LayerNorm:forward(x)
  local p = self._parameters
  return C._nn_layer_norm(x, self.normalized_shape, p.weight, p.bias, self.eps)
end
function LayerNorm:extra_repr()
  return string.format("{%s}, eps=%g, elementwise_affine=%s", table.concat(self.normalized_shape, ","),
    self.eps, tostring(self.elementwise_affine))
end
doc(LayerNorm, "nn.LayerNorm(normalized_shape[, {eps=1e-5, elementwise_affine=true, bias=true}]): normalises the trailing dims; weight 1, bias 0.")

-- Shared by BatchNorm1d and BatchNorm2d (nn_conv.lua): parameters, buffers, printing and the
-- running-statistics bookkeeping; each class checks its input rank and calls its kernel.
local BatchNorm = Module:extend("_BatchNorm")
nn._BatchNorm = BatchNorm
doc(BatchNorm, "nn._BatchNorm: the base BatchNorm1d and BatchNorm2d share (parameters, running statistics, printing);\n"
  .. "  internal: use nn.BatchNorm1d or nn.BatchNorm2d.")
function BatchNorm:__init(num_features, opts)
  check_size(class_name(self), "num_features", num_features)
  check_named_options(class_name(self), opts, {"eps", "momentum", "affine", "track_running_stats", "dtype"})
  opts = opts or {}
  self.num_features = num_features
  self.eps = opts.eps or 1e-5
  if opts.momentum == false then self.momentum = false else self.momentum = opts.momentum or 0.1 end
  self.affine = opts.affine ~= false
  self.track_running_stats = opts.track_running_stats ~= false
  local dt = opts.dtype or pt.get_default_dtype()
  if self.affine then
    self.weight = nn.Parameter(pt.ones(num_features, {dtype = dt}))
    self.bias = nn.Parameter(pt.zeros(num_features, {dtype = dt}))
  end
  if self.track_running_stats then
    self:register_buffer("running_mean", pt.zeros(num_features, {dtype = dt}))
    self:register_buffer("running_var", pt.ones(num_features, {dtype = dt}))
    self:register_buffer("num_batches_tracked", pt.zeros({}, {dtype = "int64"}))
  end
end
-- running_mean, running_var and momentum for this call; nil statistics mean batch statistics
-- that update nothing
function BatchNorm:_running_stats()
  -- nn.DataParallel: replicas 2..n normalise with their own batch statistics and leave the
  -- shared running statistics alone (PyTorch: only the first replica updates them)
  local dp = package.loaded["partrain.data_parallel"]
  if self.training and dp and dp.secondary_replica then return nil, nil, 0 end
  local b = self._buffers
  local momentum = self.momentum or 0
  -- par_by_sample: the update waits for the window's end, applied there in sample order (the
  -- workers would otherwise update the shared buffers in whatever order they come)
  if self.training and self.track_running_stats and C._par_bn_defer(b.num_batches_tracked, self.momentum) then
    return b.running_mean, b.running_var, momentum
  end
  if self.training and self.track_running_stats then
    local n = b.num_batches_tracked:item() + 1
    b.num_batches_tracked:fill_(n)
    if not self.momentum then momentum = 1 / n end -- cumulative moving average
  end
  return b.running_mean, b.running_var, momentum
end
function BatchNorm:extra_repr()
  return string.format("%d, eps=%g, momentum=%s, affine=%s, track_running_stats=%s", self.num_features,
    self.eps, tostring(self.momentum), tostring(self.affine), tostring(self.track_running_stats))
end

local BatchNorm1d = BatchNorm:extend("BatchNorm1d")
nn.BatchNorm1d = BatchNorm1d
function BatchNorm1d:forward(x)
  local p = self._parameters
  local mean, var, momentum = self:_running_stats()
  return C._nn_batch_norm(x, mean, var, p.weight, p.bias, self.training, momentum, self.eps)
end
doc(BatchNorm1d, [[nn.BatchNorm1d(num_features[, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true}])
  Input {N,C} or {N,C,L}. Training: batch statistics, running stats updated (momentum=false: cumulative
  average). Eval: running statistics.]])

local Flatten = Module:extend("Flatten")
nn.Flatten = Flatten
function Flatten:__init(start_dim, end_dim)
  self.start_dim, self.end_dim = start_dim or 2, end_dim or -1
end
function Flatten:forward(x)
  local size, n = x:size(), x:dim()
  local s = self.start_dim < 0 and n + 1 + self.start_dim or self.start_dim
  local e = self.end_dim < 0 and n + 1 + self.end_dim or self.end_dim
  if n == 0 then return C._nn_view(x, {1}, "Flatten:forward") end
  if s < 1 or s > n or e < 1 or e > n or s > e then
    fail(string.format("Flatten:forward: dims %d..%d out of range for input shape %s",
      self.start_dim, self.end_dim, shape_str(x)))
  end
  local shape, m = {}, 1
  for i = 1, s - 1 do shape[#shape + 1] = size[i] end
  for i = s, e do m = m * size[i] end
  shape[#shape + 1] = m
  for i = e + 1, n do shape[#shape + 1] = size[i] end
  return C._nn_view(x, shape, "Flatten:forward")
end
function Flatten:extra_repr() return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim) end
doc(Flatten, "nn.Flatten([start_dim=2[, end_dim=-1]]): merges dims start..end (1-based), e.g. {N,1,28,28} -> {N,784}.")

local Identity = Module:extend("Identity")
nn.Identity = Identity
function Identity:__init() end
function Identity:forward(x) return x end
doc(Identity, "nn.Identity(): returns its input.")

local function activation(name, fn, init_fn, repr)
  local cls = Module:extend(name)
  nn[name] = cls
  cls.__init = init_fn or function() end
  cls.forward = fn
  if repr then cls.extra_repr = repr end
  return cls
end

local ReLU = activation("ReLU", function(_, x) return C._nn_relu(x) end)
doc(ReLU, "nn.ReLU(): max(x, 0).")
doc(activation("LeakyReLU", function(self, x) return C._nn_leaky_relu(x, self.negative_slope) end,
  function(self, slope) self.negative_slope = slope or 0.01 end,
  function(self) return "negative_slope=" .. self.negative_slope end),
  "nn.LeakyReLU([negative_slope=0.01]).")
doc(activation("GELU", function(self, x) return C._nn_gelu(x, self.approximate) end,
  function(self, opts) self.approximate = opts and opts.approximate or "none" end,
  function(self) return "approximate='" .. self.approximate .. "'" end),
  "nn.GELU([{approximate=\"none\"|\"tanh\"}]).")
doc(activation("Tanh", function(_, x) return C._nn_tanh(x) end), "nn.Tanh().")
doc(activation("Sigmoid", function(_, x) return C._nn_sigmoid(x) end), "nn.Sigmoid().")
doc(activation("SiLU", function(_, x) return C._nn_silu(x) end), "nn.SiLU(): x * sigmoid(x).")
doc(activation("Softmax", function(self, x) return C._nn_softmax(x, self.dim) end,
  function(self, dim) self.dim = dim or -1 end, function(self) return "dim=" .. self.dim end),
  "nn.Softmax([dim=-1]).")
doc(activation("LogSoftmax", function(self, x) return C._nn_log_softmax(x, self.dim) end,
  function(self, dim) self.dim = dim or -1 end, function(self) return "dim=" .. self.dim end),
  "nn.LogSoftmax([dim=-1]).")

-- ------------------------------------------------------------------ losses

local function loss_class(name, fn, text, extra)
  local cls = Module:extend(name)
  nn[name] = cls
  function cls:__init(opts)
    check_loss_options(name, opts)
    opts = opts or {}
    self.reduction = opts.reduction or "mean"
    if self.reduction ~= "mean" and self.reduction ~= "sum" and self.reduction ~= "none" then
      fail(name .. ": reduction must be 'mean', 'sum' or 'none', got '" .. tostring(self.reduction) .. "'")
    end
    self.opts = opts
    if extra then extra(self, opts) end
  end
  cls.forward = fn
  function cls:extra_repr() return "reduction='" .. self.reduction .. "'" end
  doc(cls, text)
  return cls
end

loss_class("MSELoss", function(self, x, y) return C._nn_mse_loss(x, y, self.reduction) end,
  "nn.MSELoss([{reduction=\"mean\"}]): forward(input, target) -> mean squared error. Alias nn.MSE.")
nn.MSE = nn.MSELoss
loss_class("L1Loss", function(self, x, y) return C._nn_l1_loss(x, y, self.reduction) end,
  "nn.L1Loss([{reduction=\"mean\"}]): mean absolute error.")
loss_class("SmoothL1Loss", function(self, x, y)
  return C._nn_smooth_l1_loss(x, y, self.beta, self.reduction)
end, "nn.SmoothL1Loss([{beta=1, reduction=\"mean\"}]).", function(self, o) self.beta = o.beta or 1.0 end)
local function loss_opts(self)
  local o = self.opts
  return {weight = o.weight, label_smoothing = o.label_smoothing, ignore_index = o.ignore_index,
    reduction = self.reduction}
end
loss_class("CrossEntropyLoss", function(self, x, y)
  local o = self.opts
  if x:dim() > 2 or is_probabilities(x, y) then return nn.cross_entropy(x, y, loss_opts(self)) end
  return C._nn_cross_entropy(x, y, o.weight, o.label_smoothing or 0, o.ignore_index, self.reduction)
end, "nn.CrossEntropyLoss([{weight=, label_smoothing=0, ignore_index=, reduction=\"mean\"}]): forward(logits, target) with 1-based class indices\n  or class probabilities; see help(nn.cross_entropy).")
loss_class("NLLLoss", function(self, x, y)
  local o = self.opts
  if x:dim() > 2 then return nn.nll_loss(x, y, loss_opts(self)) end
  return C._nn_nll_loss(x, y, o.weight, o.ignore_index, self.reduction)
end, "nn.NLLLoss([{weight=, ignore_index=, reduction=\"mean\"}]): forward(log_probs, target).")
loss_class("BCELoss", function(self, x, y)
  if self.opts.weight ~= nil then return nn.binary_cross_entropy(x, y, {weight = self.opts.weight, reduction = self.reduction}) end
  return C._nn_bce(x, y, self.reduction)
end, "nn.BCELoss([{weight=, reduction=\"mean\"}]): binary cross entropy on probabilities (see nn.binary_cross_entropy).")
loss_class("BCEWithLogitsLoss", function(self, x, y)
  if self.opts.weight ~= nil then
    return nn.binary_cross_entropy_with_logits(x, y, {weight = self.opts.weight, pos_weight = self.opts.pos_weight,
      reduction = self.reduction})
  end
  return C._nn_bce_with_logits(x, y, self.opts.pos_weight, self.reduction)
end, "nn.BCEWithLogitsLoss([{weight=, pos_weight=, reduction=\"mean\"}]): sigmoid + binary cross entropy, stable.")

-- ------------------------------------------------------------------ containers

local Sequential = Module:extend("Sequential")
nn.Sequential = Sequential
function Sequential:__init(...)
  local mods = {...}
  if #mods == 1 and not is_module(mods[1]) and type(mods[1]) == "table" then mods = mods[1] end
  for i = 1, select("#", ...) > 1 and select("#", ...) or #mods do
    local m = mods[i]
    if not is_module(m) then
      fail(string.format("Sequential: argument %d is not a Module (got %s)", i, type(m)))
    end
    self:add(m)
  end
end
function Sequential:add(m)
  if not is_module(m) then fail("Sequential:add: expected a Module, got " .. type(m)) end
  self:add_module(tostring(#self._module_names + 1), m)
  return self
end
Sequential.append = Sequential.add
doc(Sequential.add, "seq:add(m) -> seq: appends module m as child \"#seq+1\" (seq:append(m) is the same).")

-- The forward plan fuses pairs into one C call (one node, no extra tensor): Linear followed by
-- ReLU, and ReLU followed by MaxPool2d (pooling then rectifying gives the same values: ReLU is
-- monotonic). Only modules of exactly those classes whose forward is still the class's own
-- (no override on the instance or the class) fuse; the plan is checked at every call, so an
-- override made after the first call takes effect.
local own_forward = {} -- class -> the forward it was defined with (set where the classes are)
local function plain(m, class)
  return m ~= nil and getmetatable(m) == class and m.forward == own_forward[class]
    and rawget(m, "_hooks") == nil -- a module with hooks is called, not fused
end

local function build_plan(self)
  local plan, mods, names = {}, self._modules, self._module_names
  local i = 1
  while i <= #names do
    local m, nxt = mods[names[i]], mods[names[i + 1]]
    if plain(m, Linear) and plain(nxt, ReLU) then
      plan[#plan + 1] = {m, "linear_relu", nxt}
      i = i + 2
    elseif nn.MaxPool2d and plain(m, ReLU) and plain(nxt, nn.MaxPool2d) then
      plan[#plan + 1] = {nxt, "relu_max_pool", m}
      i = i + 2
    else
      -- step[4]: m has hooks now (the plan is made again once they are gone: m may fuse then)
      plan[#plan + 1] = {m, false, nil, rawget(m, "_hooks") ~= nil}
      i = i + 1
    end
  end
  rawset(self, "_plan", plan)
  return plan
end

-- whether the plan still stands: its fused pairs may still fuse (no forward overridden, no hook
-- registered since it was made), and no module kept apart for its hooks has lost them
local function plan_holds(plan)
  for i = 1, #plan do
    local step = plan[i]
    if step[2] then
      if step[1].forward ~= own_forward[getmetatable(step[1])] or rawget(step[1], "_hooks")
         or (step[3] and (step[3].forward ~= own_forward[getmetatable(step[3])] or rawget(step[3], "_hooks"))) then
        return false
      end
    elseif step[4] and rawget(step[1], "_hooks") == nil then
      return false
    end
  end
  return true
end

function Sequential:forward(x)
  local plan = rawget(self, "_plan")
  if not plan or not plan_holds(plan) then plan = build_plan(self) end
  for i = 1, #plan do
    local step = plan[i]
    local m, fused = step[1], step[2]
    if fused == "linear_relu" then
      local p = m._parameters
      x = C._nn_linear(x, p.weight, p.bias, "Linear:forward", "relu")
    elseif fused == "relu_max_pool" then
      x = pt.max_pool2d(x, m.kernel_size, m:_pool_opts(true))
    else
      x = m(x)
    end
  end
  return x
end
doc(Sequential, [[nn.Sequential(m1, m2, ...) or nn.Sequential({m1, m2, ...}): applies modules in order.
  seq[i] is the i-th module, #seq their count, seq:add(m) appends. Children are named "1", "2", ...
  A Linear directly followed by a ReLU runs as one fused kernel, and so does a ReLU directly
  followed by a MaxPool2d.]])

local ModuleList = Module:extend("ModuleList")
nn.ModuleList = ModuleList
function ModuleList:__init(list)
  for _, m in ipairs(list or {}) do self:append(m) end
end
function ModuleList:append(m)
  if not is_module(m) then fail("ModuleList:append: expected a Module, got " .. type(m)) end
  self:add_module(tostring(#self._module_names + 1), m)
  return self
end
doc(ModuleList.append, "list:append(m) -> list: adds module m at the end (child \"#list+1\").")
function ModuleList:extend(list)
  -- nn.ModuleList:extend("MyList") subclasses, as every class's extend(name) does
  if type(list) == "string" then return Module.extend(self, list) end
  if rawget(self, "_module_names") == nil then
    fail("ModuleList:extend: call it on a list (nn.ModuleList({...}):extend(t)); nn.ModuleList:extend(\"Name\") "
      .. "makes a subclass")
  end
  if type(list) ~= "table" or is_module(list) and list.append ~= ModuleList.append then -- a ModuleList (or subclass) is fine
    fail("ModuleList:extend: expected a list of modules (or a class name to subclass), got "
      .. (is_module(list) and "a " .. class_name(list) or type(list)))
  end
  for _, m in ipairs(list) do self:append(m) end
  return self
end
doc(ModuleList.extend, "list:extend({m1, m2, ...}) -> list: appends each module in order (or another ModuleList's).\n"
  .. "  nn.ModuleList:extend(\"Name\") makes a subclass, as Module:extend(name).")
function ModuleList:forward()
  fail("ModuleList:forward: a ModuleList has no forward; iterate over it (for i, m in ipairs(list))")
end
doc(ModuleList.forward, "list:forward(): an error: a ModuleList has no forward; iterate over it (for i, m in ipairs(list)).")
doc(ModuleList, "nn.ModuleList([{m1, m2, ...}]): a registered list of modules; list[i], #list, ipairs(list), list:append(m), list:extend(t).")

local ModuleDict = Module:extend("ModuleDict")
nn.ModuleDict = ModuleDict
function ModuleDict:__init(tbl)
  tbl = tbl or {}
  if #tbl > 0 then -- a list of {name, module} pairs keeps its order
    for _, e in ipairs(tbl) do self:add_module(e[1], e[2]) end
  else -- a map: sorted keys for a deterministic order
    local keys = {}
    for k in pairs(tbl) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do self:add_module(k, tbl[k]) end
  end
end
function ModuleDict:keys()
  local out = {}
  for i, n in ipairs(self._module_names) do out[i] = n end
  return out
end
doc(ModuleDict.keys, "d:keys() -> list of the names in insertion order.")
function ModuleDict:values() return self:children() end
doc(ModuleDict.values, "d:values() -> list of the modules in insertion order.")
function ModuleDict:items() return self:named_children() end
doc(ModuleDict.items, "d:items() -> iterator of name, module in insertion order (as pairs(d)).")
function ModuleDict:forward()
  fail("ModuleDict:forward: a ModuleDict has no forward; index it by name")
end
doc(ModuleDict.forward, "d:forward(): an error: a ModuleDict has no forward; index it by name (d.name, d[name]).")
ModuleDict.__pairs = function(self) return self:named_children() end
doc(ModuleDict, "nn.ModuleDict([{name = m, ...} or {{name, m}, ...}]): registered modules by name; d.name, d[name] = m,\n  d:keys(), d:values(), d:items() / pairs(d) in insertion order (a map argument is added in sorted key order).")

-- convolutional layers live in their own file; it extends this table
package.loaded["partrain.nn"] = nn
require "partrain.nn_conv"
-- More layers load on first use of a name nn (or nn.functional) does not have: they are half of
-- nn's code, and every state (each worker's too) would otherwise carry them, which made the
-- collector's work per per-sample step 10% larger (W2, instruction counts).
local extras_loaded = false
local function load_extras()
  if extras_loaded then return end
  extras_loaded = true
  -- into this nn table (the files require "partrain.nn"), even when package.loaded holds another
  -- one by now or an earlier one loaded them (busted insulates spec files; pt.nn stays)
  local current = package.loaded["partrain.nn"]
  package.loaded["partrain.nn"] = nn
  for _, m in ipairs({"partrain.nn_extra", -- more activations, losses, distances
                      "partrain.nn_conv3d", -- Conv3d, the 3-D pools, BatchNorm3d, InstanceNorm3d
                      "partrain.nn_rnn", -- RNN, LSTM, GRU and their cells, attention, Transformer
                      "partrain.nn_more", -- more losses, dropouts, upsampling layers, gumbel_softmax
                      "partrain.nn_ctc", -- CTCLoss
                      "partrain.nn_lazy", -- lazy conv/norm layers, SyncBatchNorm, fractional pools, ...
                      "partrain.nn_prune", -- nn.utils.prune
                      "partrain.nn_parametrize"}) do -- nn.utils.parametrizations.weight_norm
    package.loaded[m] = nil
    require(m)
  end
  package.loaded["partrain.nn"] = current or nn
end
nn._load_extras = load_extras
for _, t in ipairs({nn, nn.functional}) do
  setmetatable(t, {__index = function(tbl, k)
    if extras_loaded then return nil end
    load_extras()
    return rawget(tbl, k)
  end})
end
own_forward[Linear], own_forward[ReLU] = Linear.forward, ReLU.forward
own_forward[nn.MaxPool2d] = nn.MaxPool2d.forward

return nn
