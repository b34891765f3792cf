local pt = require "partrain"

-- functions init.lua loads with their Lua module on first use (not in pt until then)
local lazy_functions = {"inbatch_parallel", "args", "named", "any_action_failed", "save", "load",
  "load_into", "progress"}

-- adds to missing the public entries of t that documented(v) accepts but have no help text
local function undocumented(missing, t, prefix, documented)
  for k, v in pairs(t) do
    if documented(v) and not k:match("^_") and not pt._docs[v] then
      missing[#missing + 1] = prefix .. k
    end
  end
  return missing
end

local function is_function(v) return type(v) == "function" end
local function is_function_or_class(v)
  return type(v) == "function" or (type(v) == "table" and rawget(v, "__name") ~= nil)
end

describe("help texts", function()
  it("exist for every public function of pt and every Tensor method", function()
    for _, k in ipairs(lazy_functions) do
      assert.is_function(pt[k], k) -- loads it
    end
    local missing = undocumented({}, pt, "pt.", is_function)
    undocumented(missing, pt.Tensor, "Tensor:", is_function)
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("exist for every class and function of nn, optim and cuda", function()
    local missing = {}
    for _, m in ipairs {"nn", "optim", "cuda"} do
      undocumented(missing, pt[m], m .. ".", is_function_or_class)
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("exist for every DataHandler method", function()
    local h = pt.data.DataHandler({get = function() end, len = function() return 1 end})
    local mt = getmetatable(h)
    local class = type(mt.__index) == "table" and mt.__index or mt
    local missing = undocumented({}, class, "loader:", is_function)
    table.sort(missing)
    assert.are.same({}, missing)
  end)
end)
