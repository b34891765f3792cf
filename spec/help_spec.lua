local pt = require "partrain"

-- functions init.lua loads with their Lua module on first use (not in pt until then)
local lazy_functions = {"inbatch_parallel", "args", "named", "any_action_failed", "save", "load",
  "load_into", "progress"}

describe("help texts", function()
  it("exist for every public function of pt and every Tensor method", function()
    local missing = {}
    for _, k in ipairs(lazy_functions) do
      assert.is_function(pt[k], k) -- loads it
    end
    for k, v in pairs(pt) do
      if type(v) == "function" and not k:match("^_") and not pt._docs[v] then
        missing[#missing + 1] = "pt." .. k
      end
    end
    for k, v in pairs(pt.Tensor) do
      if type(v) == "function" and not k:match("^_") and not pt._docs[v] then
        missing[#missing + 1] = "Tensor:" .. k
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("exist for every class and function of nn, optim and cuda", function()
    local missing = {}
    for _, m in ipairs {"nn", "optim", "cuda"} do
      for k, v in pairs(pt[m]) do
        if (type(v) == "function" or (type(v) == "table" and rawget(v, "__name"))) and not k:match("^_")
            and not pt._docs[v] then
          missing[#missing + 1] = m .. "." .. k
        end
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("exist for every DataHandler method", function()
    local h = pt.data.DataHandler({get = function() end, len = function() return 1 end})
    local mt = getmetatable(h)
    local class = type(mt.__index) == "table" and mt.__index or mt
    local missing = {}
    for k, v in pairs(class) do
      if type(v) == "function" and not k:match("^_") and not pt._docs[v] then
        missing[#missing + 1] = "loader:" .. k
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)
end)
