local pt = require "partrain"
local help = require "partrain.help"
local support = require "spec.support"
local EXE, q = support.exe, support.quote

-- stdout of `partrain -e chunk`: a fresh state, where nothing lazily loaded was touched yet
local function fresh(chunk)
  local p = io.popen(q(EXE) .. " -e " .. q(chunk) .. " 2>&1")
  local out = p:read("a")
  p:close()
  return out
end

local function is_class(v)
  return type(v) == "table" and (rawget(v, "__name") ~= nil or rawget(v, "__index") == v)
end

local function public(k) return type(k) == "string" and not k:match("^_") end

local function has_help(v)
  local text = help.text(v)
  return not text:match("^no help") and not text:match("^class .* %(no doc of its own%)")
end

-- Every public function, class and method reachable from the public tables (pt, pt.nn,
-- pt.nn.init, pt.nn.functional, pt.optim and its schedulers, pt.data, pt.data.transforms,
-- pt.metrics, pt.par, pt.async, pt.cuda, pt.ffi, classes' methods, pt.Tensor's methods) without
-- a doc: a method counts as documented when it has its own doc or overrides a documented one
-- (help shows the parent's, as Python's inspect.getdoc does).
local function undocumented()
  help.text(pt) -- loads every lazily loaded submodule and function
  local missing, seen = {}, {}
  local function walk(t, prefix, depth)
    if seen[t] or depth > 5 then return end
    seen[t] = true
    for k, v in pairs(t) do
      if public(k) then
        local name = prefix .. k
        if type(v) == "function" then
          if not has_help(v) then missing[#missing + 1] = name end
        elseif type(v) == "table" and v ~= pt._docs then
          if is_class(v) and not has_help(v) then missing[#missing + 1] = name .. " (class)" end
          walk(v, name .. ".", depth + 1)
        end
      end
    end
  end
  walk(pt.Tensor, "Tensor:", 0)
  walk(pt, "pt.", 0)
  table.sort(missing)
  return missing, seen
end

describe("help texts", function()
  it("exist for every public function, class and method reachable from pt", function()
    local missing, seen = undocumented()
    assert.are.same({}, missing)
    -- the walk reached the tables the review named
    for _, t in ipairs {pt.nn, pt.nn.init, pt.nn.functional, pt.optim, pt.optim.LRScheduler,
                        pt.optim.StepLR, pt.data, pt.data.transforms, pt.metrics, pt.par,
                        pt.data.DataHandler_class, pt.nn.Linear, pt.ActionError} do
      assert.is_true(seen[t] == true)
    end
  end)

  it("exist for the methods the review found undocumented", function()
    local nn = pt.nn
    for _, f in ipairs {nn.Module.forward, nn.Module.extra_repr, nn.Module.new,
                        nn.Linear.reset_parameters, nn.Conv2d.reset_parameters,
                        nn.Sequential.add, nn.ModuleList.append, nn.ModuleList.extend,
                        nn.ModuleDict.keys, pt.optim.LRScheduler.get_lr,
                        pt.optim.LRScheduler.load_state_dict, pt.par.par_by_sample,
                        pt.data.TensorDataset_class.get, pt.data.TensorDataset_class.len} do
      assert.is_string(pt._docs[f])
    end
    assert.matches("^m:forward%(%.%.%.%) %-> output", pt._docs[nn.Module.forward])
    assert.matches("^linear:reset_parameters%(%)", pt._docs[nn.Linear.reset_parameters])
    assert.matches("^sched:get_lr%(i, base_lr, epoch%)", pt._docs[pt.optim.LRScheduler.get_lr])
  end)

  it("exist for every DataHandler method", function()
    local h = pt.data.DataHandler({get = function() end, len = function() return 1 end})
    local mt = getmetatable(h)
    local class = type(mt.__index) == "table" and mt.__index or mt
    local missing = {}
    for k, v in pairs(class) do
      if type(v) == "function" and public(k) and not pt._docs[v] then missing[#missing + 1] = k end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("a method without its own doc shows the one it overrides", function()
    local text = help.text(pt.nn.Linear.forward)
    assert.matches("^pt%.nn%.Linear%.forward overrides pt%.nn%.Module%.forward, documented as:\nm:forward%(", text)
    assert.matches("\nhelp%(pt%.nn%.Linear%) says what nn%.Linear does%.$", text)
  end)

  it("hide internals: SGD's validate, classes' super", function()
    assert.is_nil(rawget(pt.optim.SGD, "validate"))
    local text = help.text(pt.optim.SGD)
    assert.is_nil(text:find("validate", 1, true))
    assert.matches("\nInherited from pt%.optim%.Optimizer: add_param_group, load_state_dict, state_dict, step, zero_grad\n",
      text)
    local lin = help.text(pt.nn.Linear)
    assert.is_nil(lin:find("super", 1, true))
    assert.matches("\nMethods:\n  extra_repr +%(from pt%.nn%.Module%) m:extra_repr%(%)", lin)
    assert.matches("\n  reset_parameters +linear:reset_parameters%(%)", lin)
    assert.matches("\nInherited from pt%.nn%.Module: add_module, apply,", lin)
  end)
end)

describe("help by name", function()
  it("finds what lazily loaded modules define, in a fresh state", function()
    local out = fresh("for _, n in ipairs {'Linear', 'cross_entropy', 'save', 'clip_grad_norm', 'StepLR', " ..
      "'DataHandler'} do io.write(pt.help.text(n):match('^[^\\n]*'), '\\n') end")
    assert.are.equal(table.concat({
      'nn.Linear(in_features, out_features[, {bias=true, dtype="float32"}])',
      'nn.cross_entropy(logits, target[, {weight=, label_smoothing=0, ignore_index=, reduction="mean"}])',
      'pt.save(path, model_or_tensors[, {optimizer = opt, meta = {...}, loader = handler, rng = true}])',
      'optim.clip_grad_norm(params, max_norm[, {norm_type=2, error_if_nonfinite=false}]) -> total norm of all',
      'optim.StepLR(opt, {step_size=, gamma=0.1}): lr = base * gamma^floor(epoch/step_size).',
      'data.DataHandler(dataset[, {batch=128, shuffle=false, seed=42, drop_last=false, transform=fn, sampler=, progress=, log=,',
    }, "\n") .. "\n", out)
  end)

  it("finds tensor properties", function()
    assert.matches("^t%.grad %-> Tensor or nil", help.text("grad"))
    assert.matches("^t%.requires_grad %-> boolean", help.text("requires_grad"))
    assert.matches("^t%.grad_fn %-> string or nil", help.text("grad_fn"))
  end)
end)

-- the rows of section `title` (up to the next line not indented) of a listing
local function section(text, title)
  local rows = {}
  local inside = false
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if inside then
      if not line:match("^  ") then break end
      rows[#rows + 1] = line:match("^  (%S+)")
    elseif line == title or line:sub(1, #title) == title then
      inside = true
    end
  end
  return rows
end

describe("help(pt)", function()
  local text = fresh("io.write(pt.help.text(pt))")

  it("lists pt.save, pt.load and the other lazily loaded functions among the functions", function()
    local n, first = text:match("^partrain module pt %(partrain [%d.]+%): (%d+) functions\n()")
    assert.is_not_nil(n)
    local rows = {}
    for line in text:sub(first):gmatch("(.-)\n") do
      if not line:match("^  ") then break end
      rows[#rows + 1] = line:match("^  (%S+)")
    end
    assert.are.equal(tonumber(n), #rows)
    local listed = {}
    for _, k in ipairs(rows) do listed[k] = true end
    for _, k in ipairs {"save", "load", "load_into", "progress", "inbatch_parallel", "args", "named",
                        "any_action_failed", "zeros", "help"} do
      assert.is_true(listed[k], k)
    end
  end)

  it("lists only modules as submodules, and ActionError as a class", function()
    assert.matches("\nSubmodules %(help%(pt%.<name>%) lists one%): async, autograd, cuda, data, distributions, ffi, func, image, linalg, metrics, nn, optim, par, profiler, special, utils\n",
      text)
    assert.are.same({"ActionError"}, section(text, "Classes:"))
    assert.matches("\n  ActionError  pt%.ActionError: the metatable of the error values", text)
  end)
end)

describe("help of a submodule", function()
  -- "pt.nn: 31 functions, 35 classes, 3 submodules" -> {31, 35, 3} and the rows of each section
  local function counts(text, name)
    local header = text:match("\n(" .. name:gsub("%.", "%%.") .. ": [^\n]*)\n") or text:match("^(" .. name:gsub("%.", "%%.") .. ": [^\n]*)\n")
    assert.is_not_nil(header, text)
    local c = {function_ = 0, class = 0, submodule = 0}
    local key = {["function"] = "function_", functions = "function_", class = "class", classes = "class",
                 submodule = "submodule", submodules = "submodule"}
    for n, what in header:gmatch("(%d+) (%a+)") do c[key[what]] = tonumber(n) end
    return c
  end

  it("counts what it lists, in sections of functions, classes and submodules", function()
    for _, name in ipairs {"nn", "optim", "data", "metrics", "par", "async", "cuda", "ffi"} do
      local text = help.text(pt[name])
      local c = counts(text, "pt." .. name)
      assert.are.equal(c.function_, #section(text, "Functions:"), name)
      assert.are.equal(c.class, #section(text, "Classes ("), name)
      assert.are.equal(c.submodule, #section(text, "Submodules ("), name)
    end
  end)

  it("lists nn.init, nn.functional (nn.F), data.transforms and optim.LRScheduler", function()
    local nn = help.text(pt.nn)
    assert.are.same({"F", "functional", "grad", "init", "utils"}, section(nn, "Submodules ("))
    assert.matches("\n  F           alias of functional\n", nn)
    assert.matches("\n  MSE +alias of MSELoss\n", nn)
    assert.are.same({"transforms"}, section(help.text(pt.data), "Submodules ("))
    local classes = section(help.text(pt.optim), "Classes (")
    assert.is_true(table.concat(classes, " "):find("LRScheduler", 1, true) ~= nil)
    -- 15 initialisers and torch's 9 deprecated names without the underscore, listed as aliases
    local init_text = help.text(pt.nn.init):match("\n(pt%.nn%.init:.*)$")
    assert.matches("^pt%.nn%.init: 24 functions\n", init_text)
    assert.matches("\n  normal +alias of normal_\n", init_text)
  end)

  it("shows pool_map under its own name and documents pt.par's functions", function()
    local text = help.text(pt.par)
    assert.matches("\n  pool_map +par%.pool_map%(fn, arglists", text)
    assert.matches("\n  par_by_sample +par%.par_by_sample%(handler, model, n, fn", text)
  end)

  it("says what pt.ActionError is", function()
    local text = help.text(pt.ActionError)
    assert.matches("^pt%.ActionError: the metatable of the error values", text)
    assert.is_nil(text:find("0 functions", 1, true))
  end)
end)

describe("help of an object", function()
  it("shows its class's help for a module, an optimizer, a scheduler and a DataHandler", function()
    local m = pt.nn.Linear(2, 3)
    assert.are.equal("an object of class pt.nn.Linear; help(pt.nn.Linear):\n" .. help.text(pt.nn.Linear), help.text(m))
    local opt = pt.optim.SGD(m:parameters(), 0.1)
    assert.are.equal("an object of class pt.optim.SGD; help(pt.optim.SGD):\n" .. help.text(pt.optim.SGD), help.text(opt))
    assert.matches("^an object of class pt%.optim%.StepLR; help%(pt%.optim%.StepLR%):\noptim%.StepLR",
      help.text(pt.optim.StepLR(opt, {step_size = 2})))
    local h = pt.data.DataHandler(pt.data.TensorDataset(pt.ones(4)))
    assert.matches("^an object of class pt%.data%.DataHandler_class; .*\n  batches +loader:batches", help.text(h))
  end)

  it("for a class of the user's own, names its parent", function()
    local Net = pt.nn.Module:extend("HelpSpecNet")
    function Net:forward(x) return x end
    local text = help.text(Net())
    assert.matches("^an object of class HelpSpecNet; help%(HelpSpecNet%):\nclass HelpSpecNet, a subclass of pt%.nn%.Module " ..
      "%(no doc of its own%)\nMethods:\n  forward  %(from pt%.nn%.Module%) m:forward", text)
  end)
end)

describe("batch norm docs", function()
  it("say which form defaults to training and which does not", function()
    local nn_doc, pt_doc = pt._docs[pt.nn.batch_norm], pt._docs[pt.batch_norm]
    assert.matches("^nn%.batch_norm%(x, running_mean, running_var%[, weight, bias, training=false,", nn_doc)
    assert.matches("PyTorch's F%.batch_norm: positional arguments, and training defaults to FALSE", nn_doc)
    assert.matches("pt%.batch_norm %(also nn%.batch_norm2d%) is the other form", nn_doc)
    assert.matches("^pt%.batch_norm%(x, mean, var%[, w, b%]%[, {training=true, [^\n]*%), also nn%.batch_norm2d\n", pt_doc)
    assert.matches("training\n  defaults to TRUE", pt_doc)
    assert.matches("\n  batch_norm2d +pt%.batch_norm%(.*also nn%.batch_norm2d\n", help.text(pt.nn))
  end)
end)

describe("help(pt.Tensor)", function()
  it("lists the properties, and the tensor metatable names them for completion", function()
    local text = help.text(pt.Tensor)
    local props = {"grad", "requires_grad", "is_leaf", "grad_fn", "shape", "ndim", "data", "is_cuda", "T", "mT", "H",
                   "mH"}
    assert.are.same(props, section(text, "Properties (t.name; help(\"name\") shows one):"))
    assert.are.same(props, getmetatable(pt.zeros(1)).__fields)
  end)
end)
