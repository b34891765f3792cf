-- partrain.help: help(x) prints the doc of a function, class, module or object.
--
-- Docs live in pt._docs, keyed by the documented value (a function, or a table for a class or
-- module): the C bindings fill it through lpt_add_docs, Lua modules assign pt._docs[f] = text
-- directly. The first line of a text is its summary (shown in listings); it starts with the
-- call's form, e.g. "pt.zeros(size...[, {dtype=}]) -> Tensor of zeros".
--
--   help()            how to use help
--   help(pt)          the module's functions with one-line summaries, its classes and submodules
--   help(pt.Tensor)   tensor methods and properties (help(t) for a tensor t does the same)
--   help(pt.nn)       a submodule's functions, classes and submodules (nn.init, nn.functional)
--   help(pt.nn.Linear) a class: its doc, its methods and the ones it inherits
--   help(model)       an object (a module, an optimizer, a DataHandler): its class's help
--   help(pt.zeros)    the doc of one function; help(t.add) for a method
--   help("zeros")     search by name in pt, its submodules (loaded first), classes' methods and
--                     the tensor methods and properties
--
-- Every help call first loads pt's lazily loaded submodules and functions (init.lua's lazy
-- tables), so that what it lists and finds does not depend on what the program touched before.
--
-- What is listed: entries whose name does not start with '_'. A class is a table that is the
-- metatable of its objects (a __name field, or __index pointing at itself); its methods are its
-- own function fields. A method without a doc of its own that overrides a documented one of a
-- parent class (forward, extra_repr) shows the parent's doc, as Python's inspect.getdoc does.
--
-- help.text(x) returns what help(x) prints. The module is callable: help(x) == help.print(x).
local pt = require "partrain"

local M = {}
local docs = rawget(pt, "_docs")
if docs == nil then
  docs = {}
  rawset(pt, "_docs", docs)
end

local SUMMARY_MAX = 100
local WIDTH = 100

local function shorten(line)
  if #line > SUMMARY_MAX then line = line:sub(1, SUMMARY_MAX - 3) .. "..." end
  return line
end

local function summary(text)
  return shorten(text:match("^[^\n]*"))
end

local function public(k) return type(k) == "string" and k:sub(1, 1) ~= "_" end

local function sorted_public_keys(tbl)
  local keys = {}
  for k in next, tbl do
    if public(k) then keys[#keys + 1] = k end
  end
  table.sort(keys)
  return keys
end

-- words joined by ", " after prefix, over lines of at most WIDTH columns (later ones start with indent)
local function wrap(prefix, words, indent)
  local lines, line = {}, prefix
  for i, w in ipairs(words) do
    local piece = w .. (i < #words and "," or "")
    if line ~= prefix and #line + 1 + #piece > WIDTH then
      lines[#lines + 1] = line
      line = indent .. piece
    else
      line = line .. " " .. piece
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

-- ------------------------------------------------------------------ tensor properties

-- Fields the tensor's __index provides besides its methods (host/l_tensor.c t_index, which
-- lists their names in the tensor metatable's __fields for the REPL's completion).
local TENSOR_PROPERTIES = {
  {"grad", "t.grad -> Tensor or nil: the gradient backward() accumulated into t (a leaf, or a\n"
    .. "  tensor that called retain_grad()); nil until then. Assignable: t.grad = nil or a tensor of t's shape."},
  {"requires_grad", "t.requires_grad -> boolean: whether autograd records the operations on t.\n"
    .. "  t.requires_grad = true on a floating leaf (or t:requires_grad_()); pt.tensor(v, {requires_grad=true})."},
  {"is_leaf", "t.is_leaf -> boolean: true when t was not produced by a recorded operation (no grad_fn);\n"
    .. "  backward() accumulates into the .grad of leaves that require grad."},
  {"grad_fn", "t.grad_fn -> string or nil: the name of the autograd node that produced t (e.g. \"MulBackward\");\n"
    .. "  nil for leaves and for results computed without grad."},
  {"shape", "t.shape -> {size...}: t's sizes as a new table (same as t:size())."},
  {"ndim", "t.ndim -> the number of dimensions (t:dim())."},
  {"data", "t.data -> t's storage and geometry without its history (requires_grad false), as torch's .data;\n"
    .. "  t.data = u gives t u's storage, shape and dtype (t stays the same object; a leaf only)."},
  {"is_cuda", "t.is_cuda -> whether t's storage is on a CUDA device."},
  {"T", "t.T -> t with all its dims reversed (a view; t:t() for matrices), as torch's Tensor.T."},
  {"mT", "t.mT -> t with its last two dims swapped (a view), for matrices and batches of them."},
  {"H", "t.H -> the conjugate transpose of a matrix: t.T for the real dtypes (2-D tensors only)."},
  {"mH", "t.mH -> the conjugate transpose of each matrix of a batch: t.mT for the real dtypes."},
}


-- ------------------------------------------------------------------ lazily loaded parts

-- pt's lazily loaded submodules (string values: module names) and functions (table values:
-- {module, field}), read from the tables pt's __index function holds (init.lua)
local function lazy_names()
  local subs, funcs = {}, {}
  local mt = getmetatable(pt)
  local index = type(mt) == "table" and rawget(mt, "__index")
  if type(index) == "function" and debug and debug.getupvalue then
    for i = 1, 255 do
      local name, val = debug.getupvalue(index, i)
      if name == nil then break end
      if name ~= "_ENV" and type(val) == "table" then
        for k, v in pairs(val) do
          if public(k) then
            if type(v) == "string" then subs[#subs + 1] = k
            elseif type(v) == "table" then funcs[#funcs + 1] = k end
          end
        end
      end
    end
  end
  table.sort(subs)
  table.sort(funcs)
  return subs, funcs
end

-- load every lazily loaded submodule and function (their modules register their docs)
local function load_all()
  local subs, funcs = lazy_names()
  for _, list in ipairs({subs, funcs}) do
    for _, k in ipairs(list) do
      if rawget(pt, k) == nil then pcall(function() return pt[k] end) end
    end
  end
  local nn = rawget(pt, "nn") -- and nn's layers that load on first use
  if type(nn) == "table" and type(rawget(nn, "_load_extras")) == "function" then nn._load_extras() end
  if type(rawget(pt, "_load_more")) == "function" then pt._load_more() end
  local _ = pt.autograd._load -- pt.autograd's Lua parts load on the first name it lacks
  local optim = rawget(pt, "optim")
  if type(optim) == "table" then _ = optim.swa_utils end -- loads on first use
  local data = rawget(pt, "data")
  if type(data) == "table" then
    _ = data.ImageFolder -- the image datasets load on first use, and so do torchvision's transforms
    local transforms = rawget(data, "transforms")
    if type(transforms) == "table" and type(rawget(transforms, "_load_more")) == "function" then
      transforms._load_more()
    end
  end
end

-- ------------------------------------------------------------------ what a value is

-- a class: the metatable of its objects (a __name, or __index pointing at itself)
local function is_class(v)
  return type(v) == "table" and (rawget(v, "__name") ~= nil or rawget(v, "__index") == v)
end

local function callable_table(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

local function has_public_entries(v)
  for k, e in next, v do
    if public(k) and (type(e) == "function" or is_class(e)) then return true end
  end
  return false
end

-- "function" | "class" | "module" | "type" (pt.Tensor) | nil
local function kind_of(v)
  local tv = type(v)
  if tv == "function" then return "function" end
  if tv ~= "table" or v == docs then return nil end
  if v == rawget(pt, "Tensor") then return "type" end
  if is_class(v) then return "class" end
  if docs[v] and callable_table(v) then return "function" end -- help itself
  if docs[v] or has_public_entries(v) then return "module" end
  return nil
end

-- the class cls inherits from (Module classes: the metatable's __index; optimizers too)
local function parent_of(cls)
  local mt = getmetatable(cls)
  local p = type(mt) == "table" and rawget(mt, "__index")
  if type(p) == "table" and p ~= cls then return p end
  local s = rawget(cls, "super")
  if type(s) == "table" and s ~= cls then return s end
  return nil
end

-- the class of an object x (a table or userdata whose metatable is a class), else nil
local function class_of(x)
  if type(x) ~= "table" or is_class(x) then return nil end
  local mt = getmetatable(x)
  if type(mt) == "table" and is_class(mt) then return mt end
  return nil
end

-- ------------------------------------------------------------------ catalogue

local PROPERTY = {} -- value of the catalogue entries of tensor properties

-- Every named value reachable from pt and the loaded partrain modules:
-- list of {name = "pt.zeros", short = "zeros", value = f[, owner = class][, doc = text]}
local function catalogue()
  local out, seen = {}, {}
  local function add(name, short, v, owner)
    out[#out + 1] = {name = name, short = short, value = v, owner = owner}
  end
  local function walk_class(cls, prefix)
    for _, k in ipairs(sorted_public_keys(cls)) do
      local v = rawget(cls, k)
      if type(v) == "function" then add(prefix .. "." .. k, k, v, cls) end
    end
  end
  local function walk(tbl, prefix, depth)
    if seen[tbl] then return end
    seen[tbl] = true
    for _, k in ipairs(sorted_public_keys(tbl)) do
      local v = rawget(tbl, k)
      local kind = kind_of(v)
      local name = prefix .. "." .. k
      if kind == "function" then
        add(name, k, v)
        if type(v) == "table" and depth < 4 then walk(v, name, depth + 1) end
      elseif kind == "class" then
        add(name, k, v)
        -- the class and its ancestors: an internal base under its name in the same module
        -- (nn._BatchNorm), else through super
        local cls, cname, n = v, name, 0
        while cls and not seen[cls] and n < 32 do
          seen[cls] = true
          if cls ~= v then
            for k2, v2 in next, tbl do
              if v2 == cls and type(k2) == "string" then cname = prefix .. "." .. k2 end
            end
            add(cname, cname:match("[^.]*$"), cls)
          end
          walk_class(cls, cname)
          cls, cname, n = parent_of(cls), cname .. ".super", n + 1
        end
      elseif kind == "module" and depth < 4 then
        add(name, k, v)
        walk(v, name, depth + 1)
      end
    end
  end
  local Tensor = rawget(pt, "Tensor")
  if type(Tensor) == "table" then
    seen[Tensor] = true
    for _, k in ipairs(sorted_public_keys(Tensor)) do
      local v = rawget(Tensor, k)
      if type(v) == "function" then add("t:" .. k, k, v) end
    end
  end
  for _, p in ipairs(TENSOR_PROPERTIES) do
    out[#out + 1] = {name = "t." .. p[1], short = p[1], value = PROPERTY, doc = p[2]}
  end
  walk(pt, "pt", 0)
  local loaded = {}
  for name, v in pairs(package.loaded) do
    local sub = type(name) == "string" and name:match("^partrain%.([%w_]+)$")
    if sub and sub ~= "core" and type(v) == "table" then loaded[#loaded + 1] = sub end
  end
  table.sort(loaded)
  for _, sub in ipairs(loaded) do walk(package.loaded["partrain." .. sub], sub, 1) end
  return out
end

-- where the word key first appears in the summary of v's doc (math.huge: nowhere); among the
-- names of a value (aliases), the one its doc names first is its own
local function named_at(v, key)
  local d = docs[v]
  if type(d) ~= "string" then return math.huge end
  return d:match("^[^\n]*"):find("%f[%w_]" .. key:gsub("%p", "%%%0") .. "%f[^%w_]") or math.huge
end

-- v's name: the one its doc names first, then the shortest (nil when v is not reachable)
local function name_of(v, cat)
  local best, best_at
  for _, e in ipairs(cat or catalogue()) do
    if e.value == v then
      local at = named_at(v, e.short)
      if best == nil or at < best_at or (at == best_at and (#e.name < #best or
          (#e.name == #best and e.name < best))) then
        best, best_at = e.name, at
      end
    end
  end
  return best
end

-- the class that owns method f, and the method's key
local function owner_of(f, cat)
  for _, e in ipairs(cat) do
    if e.value == f and e.owner then return e.owner, e.short end
  end
  return nil
end

-- the documented method key of an ancestor of cls: value, ancestor
local function inherited(cls, key)
  local p = parent_of(cls)
  local depth = 0
  while p and depth < 32 do
    local v = rawget(p, key)
    if type(v) == "function" and docs[v] then return v, p end
    p = parent_of(p)
    depth = depth + 1
  end
  return nil
end

local function class_display(cls, cat)
  local n = name_of(cls, cat)
  if n then return n end
  return tostring(rawget(cls, "__name") or rawget(cls, "name") or "(unnamed class)")
end

-- the doc of method key of cls: its own, or the one it overrides ("(as X.key) " prefix for rows)
local function method_doc(cls, key, cat)
  local v = rawget(cls, key)
  if docs[v] then return docs[v] end
  local pv, p = inherited(cls, key)
  if pv then return docs[pv], class_display(p, cat) .. "." .. key end
  return nil
end

-- ------------------------------------------------------------------ listings

-- rows "  key  summary" for keys of tbl; aliases (one value under several keys) point at the
-- key their doc names (else the longest); summary_of(k, v) -> text or nil
local function rows(tbl, keys, summary_of)
  local by_value, canonical = {}, {}
  for _, k in ipairs(keys) do
    local v = rawget(tbl, k)
    by_value[v] = by_value[v] or {}
    table.insert(by_value[v], k)
  end
  for v, ks in pairs(by_value) do
    if #ks > 1 then
      local best, best_at
      for _, k in ipairs(ks) do
        local at = named_at(v, k)
        if best == nil or at < best_at or (at == best_at and #k > #best) then best, best_at = k, at end
      end
      canonical[v] = best
    end
  end
  local width = 0
  for _, k in ipairs(keys) do width = math.max(width, #k) end
  local lines = {}
  for _, k in ipairs(keys) do
    local v = rawget(tbl, k)
    local text
    if canonical[v] and canonical[v] ~= k then
      text = "alias of " .. canonical[v]
    else
      text = summary_of(k, v) or "(no help)"
    end
    lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", k, text)
  end
  return lines
end

local function plural(n, word)
  return string.format("%d %s%s", n, word, n == 1 and "" or (word:sub(-1) == "s" and "es" or "s"))
end

local function doc_summary(_, v)
  local d = docs[v]
  return d and summary(d) or nil
end

-- the public entries of a module table by kind: functions, classes, submodules
local function entries(tbl)
  local funcs, classes, subs = {}, {}, {}
  for _, k in ipairs(sorted_public_keys(tbl)) do
    local kind = kind_of(rawget(tbl, k))
    if kind == "function" then funcs[#funcs + 1] = k
    elseif kind == "class" then classes[#classes + 1] = k
    elseif kind == "module" then subs[#subs + 1] = k end
  end
  return funcs, classes, subs
end

local function count_functions(tbl)
  local n = 0
  for k, v in next, tbl do
    if public(k) and type(v) == "function" then n = n + 1 end
  end
  return n
end

local function submodule_summary(_, v)
  if docs[v] then return summary(docs[v]) end
  local f, c, s = entries(v)
  local parts = {plural(#f, "function")}
  if #c > 0 then parts[#parts + 1] = plural(#c, "class") end
  if #s > 0 then parts[#parts + 1] = plural(#s, "submodule") end
  return table.concat(parts, ", ")
end

local function class_summary(_, v)
  if docs[v] then return summary(docs[v]) end
  return "(no help)"
end

-- help for a module table named name ("pt.nn")
local function module_help(tbl, name)
  local funcs, classes, subs = entries(tbl)
  local parts = {plural(#funcs, "function")}
  if #classes > 0 then parts[#parts + 1] = plural(#classes, "class") end
  if #subs > 0 then parts[#parts + 1] = plural(#subs, "submodule") end
  local lines = {}
  if docs[tbl] then lines[1] = docs[tbl] end
  lines[#lines + 1] = name .. ": " .. table.concat(parts, ", ")
  if #funcs > 0 then
    lines[#lines + 1] = "Functions:"
    for _, l in ipairs(rows(tbl, funcs, doc_summary)) do lines[#lines + 1] = l end
  end
  if #classes > 0 then
    lines[#lines + 1] = string.format("Classes (help(%s.<Class>) shows one with its methods):", name)
    for _, l in ipairs(rows(tbl, classes, class_summary)) do lines[#lines + 1] = l end
  end
  if #subs > 0 then
    lines[#lines + 1] = string.format("Submodules (help(%s.<name>) lists one):", name)
    for _, l in ipairs(rows(tbl, subs, submodule_summary)) do lines[#lines + 1] = l end
  end
  if #funcs + #classes + #subs == 0 then lines[#lines + 1] = "  (nothing documented)" end
  lines[#lines + 1] = string.format("help(%s.<name>) shows one in full.", name)
  return table.concat(lines, "\n")
end

local function pt_help()
  local funcs, classes, subs = entries(pt)
  local lines = {string.format("partrain module pt (%s): %s", rawget(pt, "_VERSION") or "partrain",
    plural(#funcs, "function"))}
  for _, l in ipairs(rows(pt, funcs, doc_summary)) do lines[#lines + 1] = l end
  if #classes > 0 then
    lines[#lines + 1] = "Classes:"
    for _, l in ipairs(rows(pt, classes, class_summary)) do lines[#lines + 1] = l end
  end
  lines[#lines + 1] = "help(pt.<name>) shows one in full."
  if #subs > 0 then
    lines[#lines + 1] = "Submodules (help(pt.<name>) lists one): " .. table.concat(subs, ", ")
  end
  lines[#lines + 1] = "Types: help(pt.Tensor) lists the tensor methods and properties."
  return table.concat(lines, "\n")
end

local function tensor_help(title)
  local Tensor = pt.Tensor
  local keys = {}
  for _, k in ipairs(sorted_public_keys(Tensor)) do
    if type(rawget(Tensor, k)) == "function" then keys[#keys + 1] = k end
  end
  local lines = {title}
  for _, l in ipairs(rows(Tensor, keys, doc_summary)) do lines[#lines + 1] = l end
  lines[#lines + 1] = "Properties (t.name; help(\"name\") shows one):"
  local width = 0
  for _, p in ipairs(TENSOR_PROPERTIES) do width = math.max(width, #p[1]) end
  for _, p in ipairs(TENSOR_PROPERTIES) do
    lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", p[1], summary(p[2]))
  end
  lines[#lines + 1] = "help(t.<name>) shows one in full."
  return table.concat(lines, "\n")
end

-- help for a class: its doc, its own methods, the names of the inherited ones
local function class_help(cls, cat)
  local name = class_display(cls, cat)
  local lines = {}
  if docs[cls] then
    lines[1] = docs[cls]
  else
    local p = parent_of(cls)
    lines[1] = string.format("class %s%s (no doc of its own)", name,
      p and (", a subclass of " .. class_display(p, cat)) or "")
  end
  local own = {}
  for _, k in ipairs(sorted_public_keys(cls)) do
    if type(rawget(cls, k)) == "function" then own[#own + 1] = k end
  end
  if #own > 0 then
    lines[#lines + 1] = "Methods:"
    for _, l in ipairs(rows(cls, own, function(k)
      local d, from = method_doc(cls, k, cat)
      if not d then return nil end
      return shorten((from and ("(from " .. from:gsub("%.[^.]*$", "") .. ") ") or "") .. d:match("^[^\n]*"))
    end)) do
      lines[#lines + 1] = l
    end
  end
  -- inherited: each ancestor's public methods not defined closer to cls
  local defined = {}
  for _, k in ipairs(own) do defined[k] = true end
  local p, depth = parent_of(cls), 0
  while p and depth < 32 do
    local names = {}
    for _, k in ipairs(sorted_public_keys(p)) do
      if type(rawget(p, k)) == "function" and not defined[k] then
        names[#names + 1] = k
        defined[k] = true
      end
    end
    if #names > 0 then
      lines[#lines + 1] = wrap("Inherited from " .. class_display(p, cat) .. ":", names, "  ")
    end
    p = parent_of(p)
    depth = depth + 1
  end
  if #own == 0 and #lines == 1 then lines[#lines + 1] = "(no methods)" end
  local n = name_of(cls, cat)
  lines[#lines + 1] = string.format("help(%s.<name>) shows one in full.", n or "<object>")
  return table.concat(lines, "\n")
end

local function overview()
  return table.concat({
    "partrain help",
    "  help(pt)          the module's functions with one-line summaries",
    "  help(pt.Tensor)   the tensor methods and properties (help(t) for a tensor t)",
    "  help(pt.nn)       a submodule's functions, classes and submodules",
    "  help(pt.nn.Linear) a class with its methods; help(model) for an object (module, optimizer, ...)",
    "  help(pt.zeros)    one function in full; help(t.add) for a method",
    "  help(\"zeros\")     search by name",
  }, "\n")
end

-- the help of a function that has no doc of its own: the one it overrides, if any
local function undocumented_function(f, cat)
  local owner, key = owner_of(f, cat)
  if owner then
    local pv, p = inherited(owner, key)
    if pv then
      local cname = class_display(owner, cat)
      return string.format("%s.%s overrides %s.%s, documented as:\n%s\nhelp(%s) says what %s does.", cname, key,
        class_display(p, cat), key, docs[pv], cname, (cname:gsub("^pt%.", "")))
    end
  end
  local name = name_of(f, cat)
  return name and ("no help for " .. name .. " (undocumented)") or "no help for this function"
end

local function search(name)
  local cat = catalogue()
  local exact, near, seen = {}, {}, {}
  for _, e in ipairs(cat) do
    local key = e.value == PROPERTY and e or e.value
    if e.short == name or e.name == name or e.name:gsub("^pt%.", "") == name then
      if not seen[key] then exact[#exact + 1] = e end
      seen[key] = true
    elseif e.short:find(name, 1, true) then
      near[#near + 1] = e.name
    end
  end
  local parts, undocumented = {}, {}
  for _, e in ipairs(exact) do
    local v = e.value
    if e.doc then
      parts[#parts + 1] = e.doc
    elseif is_class(v) then
      parts[#parts + 1] = class_help(v, cat)
    elseif type(v) == "table" and kind_of(v) == "module" then
      parts[#parts + 1] = module_help(v, e.name)
    elseif docs[v] then
      parts[#parts + 1] = docs[v]
    else
      undocumented[#undocumented + 1] = type(v) == "function" and undocumented_function(v, cat) or
        ("no help for " .. e.name .. " (undocumented)")
    end
  end
  if #parts == 0 then parts = undocumented end
  if #parts > 0 then return table.concat(parts, "\n\n") end
  local s = string.format("no help for '%s'", name)
  if #near > 0 then
    table.sort(near)
    local shown = {}
    for i = 1, math.min(#near, 10) do shown[i] = near[i] end
    s = s .. "; similar names: " .. table.concat(shown, ", ") .. (#near > 10 and ", ..." or "")
  end
  return s
end

--- help.text(x) -> the text help(x) prints.
function M.text(...)
  if select("#", ...) == 0 then return overview() end
  local x = ...
  local tx = type(x)
  if x == nil then return overview() end
  load_all()
  if tx == "string" then return search(x) end
  if x == pt then return pt_help() end
  if x == pt.Tensor then return tensor_help("Tensor methods (call as t:name(...)):") end
  if pt.is_tensor and pt.is_tensor(x) then
    local ok, shape = pcall(function() return table.concat(x:size(), ",") end)
    local ok2, dt = pcall(function() return x:dtype() end)
    return tensor_help(string.format("a Tensor (shape={%s}, dtype=%s); its methods:",
      ok and shape or "?", ok2 and dt or "?"))
  end
  local d = docs[x]
  if tx == "function" then
    if d then return d end
    return undocumented_function(x, catalogue())
  end
  if tx == "table" then
    local cat = catalogue()
    if is_class(x) then return class_help(x, cat) end
    local cls = class_of(x)
    if cls then
      local cname = class_display(cls, cat)
      return string.format("an object of class %s; help(%s):\n%s", cname, cname, class_help(cls, cat))
    end
    local kind = kind_of(x)
    local name = name_of(x, cat)
    if kind == "module" and name then return module_help(x, name) end
    if d then
      if count_functions(x) > 0 then
        local lines = {d, "Functions:"}
        local keys = {}
        for _, k in ipairs(sorted_public_keys(x)) do
          if type(rawget(x, k)) == "function" then keys[#keys + 1] = k end
        end
        for _, l in ipairs(rows(x, keys, doc_summary)) do lines[#lines + 1] = l end
        lines[#lines + 1] = string.format("help(%s.<name>) shows one in full.", name or "x")
        return table.concat(lines, "\n")
      end
      return d
    end
    if count_functions(x) > 0 then
      for _, v in next, x do
        if docs[v] then return (module_help(x, name or "x"):gsub("^x: ", "A table: ")) end
      end
    end
    return "no help for this table (not a documented module or type)"
  end
  return string.format("no help for a %s value", tx)
end

--- help.print(x): print help.text(x).
function M.print(...)
  io.write(M.text(...), "\n")
  io.flush()
end

setmetatable(M, {
  __call = function(_, ...) return M.print(...) end,
  __tostring = function() return "help: call help(x) for the doc of x, help() for how to use it" end,
})

docs[M] = "help(x): print the doc of a function or type x.\n" .. overview():gsub("^[^\n]*\n", "") ..
  "\n  help.text(x) returns the text instead of printing it."
docs[M.text] = "help.text(x) -> string: the text help(x) prints."
docs[M.print] = "help.print(x): same as help(x)."

if rawget(pt, "help") == nil then rawset(pt, "help", M) end

return M
