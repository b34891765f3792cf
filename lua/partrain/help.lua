-- partrain.help: help(x) prints the doc of a function or type.
--
-- Docs live in pt._docs, keyed by the documented value (a function, or a table for a type or
-- class): the C bindings fill it through lpt_add_docs, Lua modules assign pt._docs[f] = text
-- directly. The first line of a text is its summary (shown in listings); it starts with the
-- call's form, e.g. "pt.zeros(size...[, {dtype=}]) -> Tensor of zeros".
--
--   help()            how to use help
--   help(pt)          the module's functions with one-line summaries, and its submodules
--   help(pt.Tensor)   tensor methods (help(t) for a tensor t does the same)
--   help(pt.nn)       a loaded submodule's functions and classes
--   help(pt.zeros)    the doc of one function; help(t.add) for a method
--   help("zeros")     search by name in pt, its loaded submodules and the tensor methods
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

local function summary(text)
  local line = text:match("^[^\n]*")
  if #line > SUMMARY_MAX then line = line:sub(1, SUMMARY_MAX - 3) .. "..." end
  return line
end

-- Names of pt's submodules: the ones already loaded and the ones the lazy loader knows.
local function submodule_names()
  local names, seen = {}, {}
  local function add(n)
    if not seen[n] then
      seen[n] = true
      names[#names + 1] = n
    end
  end
  for k, v in next, pt do
    if type(k) == "string" and type(v) == "table" and k ~= "_docs" and k ~= "Tensor" and
       v ~= M then
      add(k)
    end
  end
  for name, v in pairs(package.loaded) do
    local sub = type(name) == "string" and name:match("^partrain%.([%w_]+)$")
    if sub and type(v) == "table" and sub ~= "core" and v ~= M and rawget(pt, sub) == v then
      add(sub)
    end
  end
  -- lazily loaded ones: the tables held by pt's __index function (debug is standard Lua)
  local mt = getmetatable(pt)
  local index = type(mt) == "table" and rawget(mt, "__index")
  if type(index) == "function" and debug and debug.getupvalue then
    for i = 1, 255 do
      local name, val = debug.getupvalue(index, i)
      if name == nil then break end
      if name ~= "_ENV" and type(val) == "table" then
        for k in pairs(val) do
          if type(k) == "string" and k ~= "help" then add(k) end
        end
      end
    end
  end
  table.sort(names)
  return names
end

-- Every named value reachable from pt without loading anything:
-- list of {name = "pt.zeros", short = "zeros", value = f}
local function catalogue()
  local out, seen = {}, {}
  local function walk(tbl, prefix, sep, depth)
    if seen[tbl] then return end
    seen[tbl] = true
    local keys = {}
    for k in next, tbl do
      if type(k) == "string" and k:sub(1, 1) ~= "_" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = rawget(tbl, k)
      local tv = type(v)
      if tv == "function" or (tv == "table" and docs[v] ~= nil) then
        out[#out + 1] = { name = prefix .. sep .. k, short = k, value = v }
      end
      if tv == "table" and depth < 2 and v ~= pt.Tensor then
        walk(v, prefix .. sep .. k, ".", depth + 1)
      end
    end
  end
  walk(pt.Tensor, "t", ":", 2)
  walk(pt, "pt", ".", 0)
  for name, v in pairs(package.loaded) do
    local sub = type(name) == "string" and name:match("^partrain%.([%w_]+)$")
    if sub and sub ~= "core" and type(v) == "table" then walk(v, "pt." .. sub, ".", 1) end
  end
  return out
end

local function name_of(v)
  local best
  for _, e in ipairs(catalogue()) do
    if e.value == v and (best == nil or #e.name < #best) then best = e.name end
  end
  return best
end

local function listing(title, tbl, prefix, sep)
  local keys = {}
  for k, v in next, tbl do
    if type(k) == "string" and k:sub(1, 1) ~= "_" and
       (type(v) == "function" or (type(v) == "table" and docs[v] ~= nil)) then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys)
  local width = 0
  for _, k in ipairs(keys) do width = math.max(width, #k) end
  local lines = { title }
  for _, k in ipairs(keys) do
    local d = docs[rawget(tbl, k)]
    lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", k,
      d and summary(d) or "(no help)")
  end
  if #keys == 0 then lines[#lines + 1] = "  (nothing documented)" end
  lines[#lines + 1] = string.format("help(%s%s<name>) shows one in full.", prefix, sep)
  return table.concat(lines, "\n")
end

local function count_functions(tbl)
  local n = 0
  for k, v in next, tbl do
    if type(k) == "string" and type(v) == "function" and k:sub(1, 1) ~= "_" then n = n + 1 end
  end
  return n
end

local function module_help()
  local s = listing(string.format("partrain module pt (%s): %d functions",
    rawget(pt, "_VERSION") or "partrain", count_functions(pt)), pt, "pt", ".")
  local subs = submodule_names()
  if #subs > 0 then
    s = s .. "\nSubmodules (help(pt.<name>) lists one): " .. table.concat(subs, ", ")
  end
  return s .. "\nTypes: help(pt.Tensor) lists the tensor methods."
end

local function overview()
  return table.concat({
    "partrain help",
    "  help(pt)          the module's functions with one-line summaries",
    "  help(pt.Tensor)   the tensor methods (help(t) for a tensor t)",
    "  help(pt.nn)       a submodule's functions and classes",
    "  help(pt.zeros)    one function in full; help(t.add) for a method",
    "  help(\"zeros\")     search by name",
  }, "\n")
end

local function search(name)
  local exact, near = {}, {}
  local seen = {}
  for _, e in ipairs(catalogue()) do
    if not seen[e.value] or e.name == name then
      if e.short == name or e.name == name or e.name:gsub("^pt%.", "") == name then
        if not seen[e.value] then exact[#exact + 1] = e end
        seen[e.value] = true
      elseif e.short:find(name, 1, true) then
        near[#near + 1] = e.name
      end
    end
  end
  local parts = {}
  for _, e in ipairs(exact) do
    parts[#parts + 1] = docs[e.value] or ("no help for " .. e.name .. " (undocumented)")
  end
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
  if tx == "string" then return search(x) end
  if x == pt then return module_help() end
  if x == pt.Tensor then return listing("Tensor methods (call as t:name(...)):", pt.Tensor, "t", ".") end
  if pt.is_tensor and pt.is_tensor(x) then
    local ok, shape = pcall(function() return table.concat(x:size(), ",") end)
    local ok2, dt = pcall(function() return x:dtype() end)
    return listing(string.format("a Tensor (shape={%s}, dtype=%s); its methods:",
      ok and shape or "?", ok2 and dt or "?"), pt.Tensor, "t", ".")
  end
  local d = docs[x]
  if tx == "function" then
    if d then return d end
    local name = name_of(x)
    return name and ("no help for " .. name .. " (undocumented)") or "no help for this function"
  end
  if tx == "table" then
    for _, sub in ipairs(submodule_names()) do
      if rawget(pt, sub) == x then
        local s = listing(string.format("pt.%s: %d functions", sub, count_functions(x)), x,
          "pt." .. sub, ".")
        return d and (d .. "\n" .. s) or s
      end
    end
    if d then
      if count_functions(x) > 0 then
        local name = name_of(x) or "x"
        return d .. "\n" .. listing("Functions:", x, name, ".")
      end
      return d
    end
    if count_functions(x) > 0 then
      for _, v in next, x do
        if docs[v] then return listing("A table; its functions:", x, "x", ".") end
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
