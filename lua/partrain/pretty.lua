-- partrain.pretty: readable forms of Lua values, used by the REPL to print results.
--
--   pretty.format(v[, opts]) -> string
--   pretty.print(...)        -- writes each value formatted, tab-separated, then a newline
--
-- Tables print as Lua constructors: the sequence part first, then the other keys sorted
-- (numbers, then strings, then the rest), `name = v` for identifier keys and `[k] = v` for
-- others. A table fits on one line when it can (opts.width, default 80 columns); otherwise
-- one entry per line, indented by two spaces per level. Bounds: opts.depth levels (default 4;
-- deeper tables print as `{...}`), opts.items entries per table (default 50; then
-- `... (N more)`). A table that contains itself (directly or through its children) prints
-- `<cycle>` where it comes back. Values with a __tostring metamethod (tensors, modules) print
-- through it, their later lines indented to the entry's column. Strings are quoted inside
-- tables and raw at the top level (as Lua's print shows them).
local M = {}

local DEFAULTS = { depth = 4, items = 50, width = 80 }

local keywords = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do
  keywords[w] = true
end

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not keywords[s]
end

local escapes = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r", ["\\"] = "\\\\", ['"'] = '\\"' }

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return escapes[c] or string.format("\\%03d", c:byte())
  end) .. '"'
end

-- tostring through __tostring, never raising
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == "string" then return s end
  return "<" .. type(v) .. ": __tostring failed: " .. tostring(s) .. ">"
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__tostring") ~= nil
end

-- indent every line after the first by n spaces
local function reindent(s, n)
  if n == 0 then return s end
  return (s:gsub("\n", "\n" .. string.rep(" ", n)))
end

local type_order = { number = 1, string = 2, boolean = 3 }

local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    return (type_order[ta] or 4) < (type_order[tb] or 4) or
           ((type_order[ta] or 4) == (type_order[tb] or 4) and ta < tb)
  end
  if ta == "number" or ta == "string" then return a < b end
  return safe_tostring(a) < safe_tostring(b)
end

local format_value

local function format_key(k, opts, path, level)
  if is_identifier(k) then return k end
  return "[" .. format_value(k, opts, path, level, 0, 0) .. "]"
end

local function format_table(t, opts, path, level, column)
  if path[t] then return "<cycle>" end
  if level >= opts.depth then return next(t) == nil and "{}" or "{...}" end
  -- entries: sequence first, then the other keys sorted
  local n = rawlen(t)
  while n > 0 and rawget(t, n) == nil do n = n - 1 end
  local keys = {}
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  if n == 0 and #keys == 0 then return "{}" end
  table.sort(keys, key_less)
  local total = n + #keys
  local shown = math.min(total, opts.items)
  path[t] = true
  local parts = {}
  for i = 1, shown do
    if i <= n then
      parts[i] = { nil, rawget(t, i) }
    else
      local k = keys[i - n]
      parts[i] = { k, rawget(t, k) }
    end
  end
  -- one line?
  local flat, fits = {}, true
  local len = column + 2
  for i, p in ipairs(parts) do
    local ks = p[1] ~= nil and (format_key(p[1], opts, path, level + 1) .. " = ") or ""
    local vs = format_value(p[2], opts, path, level + 1, column + 2, len + #ks)
    flat[i] = ks .. vs
    len = len + #flat[i] + 2
    if vs:find("\n", 1, true) or len > opts.width then
      fits = false
      break
    end
  end
  local more = total > shown and string.format("... (%d more)", total - shown) or nil
  local out
  if fits then
    if more then flat[#flat + 1] = more end
    out = "{" .. table.concat(flat, ", ") .. "}"
  else
    local pad = string.rep(" ", column + 2)
    local lines = {}
    for i, p in ipairs(parts) do
      local ks = p[1] ~= nil and (format_key(p[1], opts, path, level + 1) .. " = ") or ""
      lines[i] = pad .. ks .. format_value(p[2], opts, path, level + 1, column + 2, column + 2 + #ks)
    end
    if more then lines[#lines + 1] = pad .. more end
    out = "{\n" .. table.concat(lines, ",\n") .. "\n" .. string.rep(" ", column) .. "}"
  end
  path[t] = nil
  return out
end

-- indent: indentation of the line the value starts on (nested tables indent from it);
-- column: where the value itself starts (later lines of a __tostring form align under it)
function format_value(v, opts, path, level, indent, column)
  local tv = type(v)
  if tv == "string" then
    return quote(v)
  elseif tv == "table" and not has_tostring(v) then
    return format_table(v, opts, path, level, indent)
  elseif tv == "number" or tv == "boolean" or tv == "nil" then
    return tostring(v)
  end
  return reindent(safe_tostring(v), column)
end

local function options(opts)
  if opts == nil then return DEFAULTS end
  if type(opts) ~= "table" then
    error("pretty.format: options must be a table, got " .. type(opts), 3)
  end
  local o = {}
  for k, d in pairs(DEFAULTS) do
    local v = opts[k]
    if v == nil then
      v = d
    elseif math.type(v) ~= "integer" or v < 0 then
      error(string.format("pretty.format: option '%s' must be a non-negative integer, got %s",
        k, tostring(v)), 3)
    end
    o[k] = v
  end
  return o
end

--- pretty.format(v[, {depth=, items=, width=}]) -> the readable form of v.
function M.format(v, opts)
  return format_value(v, options(opts), {}, 0, 0, 0)
end

--- pretty.print(...): what the REPL shows for a line's results.
function M.print(...)
  local n = select("#", ...)
  local out = {}
  for i = 1, n do
    local v = select(i, ...)
    out[i] = type(v) == "string" and v or format_value(v, DEFAULTS, {}, 0, 0, 0)
  end
  io.write(table.concat(out, "\t"), "\n")
  io.flush()
end

local ok, pt = pcall(require, "partrain")
if ok and type(pt) == "table" and type(rawget(pt, "_docs")) == "table" then
  local docs = rawget(pt, "_docs")
  docs[M.format] = "pretty.format(v[, {depth=4, items=50, width=80}]) -> string\n" ..
    "  Readable form of any value: tables as Lua constructors (nested, sorted keys, cycles\n" ..
    "  shown as <cycle>, at most `depth` levels and `items` entries per table), tensors and\n" ..
    "  other objects through __tostring."
  docs[M.print] = "pretty.print(...): write each value's readable form, tab-separated, and a\n" ..
    "  newline (what the REPL shows for results). Strings print raw at the top level."
end

return M
