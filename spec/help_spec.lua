local pt = require "partrain"

-- C forwarders that load their Lua module on first use; their docs belong to the Lua versions
local forwarders = {inbatch_parallel = true, args = true, named = true, any_action_failed = true,
  save = true, load = true, load_into = true, progress = true, Runner = true}

describe("help texts", function()
  it("exist for every public function of pt and every Tensor method", function()
    local missing = {}
    for k, v in pairs(pt) do
      if type(v) == "function" and not k:match("^_") and not forwarders[k] and not pt._docs[v] then
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
end)
