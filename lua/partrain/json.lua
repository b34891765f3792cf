-- partrain.json: the one JSON codec of partrain (checkpoint metadata, metrics logs), exact:
--   integers as integers ("3"), floats always with a '.' or an exponent ("1.0",
--   "0.30000000000000004", "1e+300"), the shortest of %.15g/%.16g/%.17g that reads back to the
--   same double; nan and +-inf as NaN / Infinity / -Infinity (what Python's json reads and
--   writes); sequences as arrays; other tables as objects whose integer keys are "#<n>" (a
--   string key starting with '#' or '\\' gets a '\\' in front). Strings must be valid UTF-8.
-- encode(v[, prefix]) and decode(s) raise messages without a position (error(msg, 0)), starting
-- with prefix ("save: meta 'x'"; "json" by default): callers raise them again at their caller.
local M = {}

local MAX_DEPTH = 64

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- a string for a message: control bytes (and with high, every byte >= 0x80) as \xNN
local function shown(s, high)
  return (s:gsub(high and "[%z\1-\31\127-\255]" or "[%z\1-\31\127]",
    function(c) return ("\\x%02x"):format(c:byte()) end))
end
M.shown = shown


local ESCAPE = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
                ["\r"] = "\\r", ["\t"] = "\\t"}
for c = 0, 31 do
  local ch = string.char(c)
  ESCAPE[ch] = ESCAPE[ch] or ("\\u%04x"):format(c)
end

local function at(path) return path == "" and "" or (" at '%s'"):format(path) end

local function enc_string(s, what, path, prefix)
  local ok, pos = utf8.len(s)
  if not ok then fail("%s: %s%s is not valid UTF-8 (byte %d)", prefix, what, at(path), pos) end
  return '"' .. s:gsub('[%z\1-\31"\\]', ESCAPE) .. '"'
end

local function enc_number(x)
  if math.type(x) == "integer" then return ("%d"):format(x) end
  if x ~= x then return "NaN" end
  if x == math.huge then return "Infinity" end
  if x == -math.huge then return "-Infinity" end
  local s
  for _, f in ipairs({"%.15g", "%.16g", "%.17g"}) do
    s = f:format(x):gsub(",", ".") -- whatever the C locale's decimal point
    if tonumber(s) == x then break end
  end
  if not s:find("[.eE]") then s = s .. ".0" end -- a float stays a float
  return s
end

local function encode(v, path, depth, prefix, out)
  local tv = type(v)
  if tv == "string" then
    out[#out + 1] = enc_string(v, "string", path, prefix)
  elseif tv == "number" then
    out[#out + 1] = enc_number(v)
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif tv == "nil" then
    out[#out + 1] = "null"
  elseif tv == "table" then
    if depth > MAX_DEPTH then fail("%s: table nested too deeply (a cycle?)%s", prefix, at(path)) end
    local n, count, seq = 0, 0, true
    for k in pairs(v) do
      count = count + 1
      if math.type(k) == "integer" and k >= 1 then
        if k > n then n = k end
      else
        seq = false
      end
    end
    local function sub(k) return path == "" and tostring(k) or path .. "." .. tostring(k) end
    if seq and count > 0 and n == count then
      out[#out + 1] = "["
      for i = 1, n do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], sub(i), depth + 1, prefix, out)
      end
      out[#out + 1] = "]"
      return
    end
    local keys, map = {}, {}
    for k in pairs(v) do
      local ek
      if type(k) == "string" then
        ek = (k:sub(1, 1) == "#" or k:sub(1, 1) == "\\") and "\\" .. k or k
      elseif math.type(k) == "integer" then
        ek = "#" .. k
      else
        fail("%s: cannot encode a %s key%s", prefix, math.type(k) or type(k), at(path))
      end
      keys[#keys + 1], map[ek] = ek, k
    end
    table.sort(keys)
    out[#out + 1] = "{"
    for i, ek in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      local k = map[ek]
      out[#out + 1] = enc_string(ek, ("key '%s'"):format(shown(tostring(k), true)), path, prefix)
      out[#out + 1] = ":"
      encode(v[k], sub(k), depth + 1, prefix, out)
    end
    out[#out + 1] = "}"
  else
    fail("%s: cannot encode a %s%s", prefix, tv, at(path))
  end
end

-- prefix starts every error message ("save: meta 'x'")
local function json_encode(v, prefix)
  local out = {}
  encode(v, "", 0, prefix or "json", out)
  return table.concat(out)
end

local UNESCAPE = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}

-- -> value, or raises "invalid JSON (...)"
local function json_decode(s)
  local pos = 1
  local function bad(what) error(("invalid JSON (%s at byte %d)"):format(what, pos), 0) end
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end

  local function str()
    local parts, i = {}, pos + 1
    while true do
      local a = s:find('[%z\1-\31"\\]', i)
      if not a then pos = #s + 1; bad("unterminated string") end
      parts[#parts + 1] = s:sub(i, a - 1)
      local c = s:sub(a, a)
      if c == '"' then
        pos = a + 1
        break
      elseif c == "\\" then
        local e = s:sub(a + 1, a + 1)
        if e == "u" then
          local h = s:match("^%x%x%x%x", a + 2)
          pos = a
          if not h then bad("a bad \\u escape") end
          local cp = tonumber(h, 16)
          i = a + 6
          if cp >= 0xD800 and cp <= 0xDBFF then
            local lo = s:match("^\\u(%x%x%x%x)", i)
            lo = lo and tonumber(lo, 16)
            if not lo or lo < 0xDC00 or lo > 0xDFFF then bad("a lone surrogate") end
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
            i = i + 6
          elseif cp >= 0xDC00 and cp <= 0xDFFF then
            bad("a lone surrogate")
          end
          parts[#parts + 1] = utf8.char(cp)
        else
          pos = a
          parts[#parts + 1] = UNESCAPE[e] or bad("a bad escape")
          i = a + 2
        end
      else
        pos = a
        bad("a control character in a string")
      end
    end
    local r = table.concat(parts)
    if not utf8.len(r) then bad("a string that is not valid UTF-8") end
    return r
  end

  local value
  local function number()
    local int = s:match("^-?0", pos) or s:match("^-?[1-9]%d*", pos)
    if not int then
      for tok, v in pairs({NaN = 0 / 0, Infinity = math.huge, ["-Infinity"] = -math.huge}) do
        if s:sub(pos, pos + #tok - 1) == tok then
          pos = pos + #tok
          return v
        end
      end
      bad("an unexpected character")
    end
    local j = pos + #int
    local frac = s:match("^%.%d+", j) or ""
    j = j + #frac
    local exp = s:match("^[eE][-+]?%d+", j) or ""
    j = j + #exp
    local v = tonumber(s:sub(pos, j - 1)) -- Lua's own rules: "12" integer, too big for one: float
    if (frac ~= "" or exp ~= "") and math.type(v) == "integer" then v = v + 0.0 end
    pos = j
    return v
  end

  function value(depth)
    ws()
    if depth > 2 * MAX_DEPTH then bad("nesting too deep") end
    local c = s:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local t = {}
      ws()
      if s:sub(pos, pos) == "}" then
        pos = pos + 1
        return t
      end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then bad("a missing key") end
        local k = str()
        local n = k:match("^#(-?%d+)$")
        if n and math.tointeger(tonumber(n)) then k = math.tointeger(tonumber(n))
        elseif k:sub(1, 1) == "\\" then k = k:sub(2) end
        ws()
        if s:sub(pos, pos) ~= ":" then bad("a missing ':'") end
        pos = pos + 1
        t[k] = value(depth + 1)
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "}" then return t end
        if c ~= "," then pos = pos - 1; bad("a missing ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local t, n = {}, 0
      ws()
      if s:sub(pos, pos) == "]" then
        pos = pos + 1
        return t
      end
      while true do
        n = n + 1
        t[n] = value(depth + 1)
        ws()
        c = s:sub(pos, pos)
        pos = pos + 1
        if c == "]" then return t end
        if c ~= "," then pos = pos - 1; bad("a missing ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    elseif s:find("^true", pos) then
      pos = pos + 4
      return true
    elseif s:find("^false", pos) then
      pos = pos + 5
      return false
    elseif s:find("^null", pos) then
      pos = pos + 4
      return nil
    end
    return number()
  end

  local v = value(0)
  ws()
  if pos <= #s then bad("trailing characters") end
  return v
end


M.encode, M.decode = json_encode, json_decode
return M
