local pt = require "partrain"
local data = pt.data

local support = require "spec.support"
local tmpdir, tmp = support.tmpdir()

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

-- a safetensors file from a JSON header and raw data
local function st_file(name, header, bytes, len_override)
  local p = tmp(name)
  local f = assert(io.open(p, "wb"))
  f:write(string.pack("<I8", len_override or #header), header, bytes or "")
  f:close()
  return p
end

local function copy(t)
  local c = pt.zeros(t:size(), {dtype = t:dtype()})
  for i = 1, t:numel() do c:_set_flat(i, t:_get_flat(i)) end
  return c
end

local function flat(t)
  local out = {}
  for i = 1, t:numel() do out[i] = t:_get_flat(i) end
  return out
end

describe("pt.save / pt.load", function()
  it("round-trips every dtype, shapes and metadata", function()
    local p = tmp("a.safetensors")
    local tensors = {
      w = pt.tensor({{1.5, -2}, {3, 4}}),
      d = pt.tensor({1 / 3}, {dtype = "float64"}),
      i = pt.tensor({-7, 2 ^ 40}, {dtype = "int64"}),
      j = pt.tensor({5}, {dtype = "int32"}),
      u = pt.tensor({255, 0}, {dtype = "uint8"}),
      b = pt.tensor({true, false}, {dtype = "bool"}),
      s = pt.tensor(2.5),
    }
    pt.save(p, tensors, {meta = {epoch = 3, note = "hello", acc = 0.875, tags = {"a", "b"}}})
    local back, meta = pt.load(p)
    for name, t in pairs(tensors) do
      assert.are.equal(t:dtype(), back[name]:dtype())
      assert.are.same(t:size(), back[name]:size())
      assert.are.same(flat(t), flat(back[name]))
    end
    assert.are.same({}, back.s:size())
    assert.are.same({epoch = 3, note = "hello", acc = 0.875, tags = {"a", "b"}}, meta)
    -- .tmp was renamed away
    assert.is_nil(io.open(p .. ".tmp"))
  end)

  it("saves a model's state_dict", function()
    local model = {w = pt.ones(2, 2)}
    function model:state_dict() return {["0.weight"] = self.w} end
    local p = tmp("m.safetensors")
    pt.save(p, model)
    local back = pt.load(p)
    assert.are.same({{1, 1}, {1, 1}}, back["0.weight"]:tolist())
  end)

  it("saves non-contiguous tensors by value", function()
    local t = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    local tt = t:t()
    local p = tmp("nc.safetensors")
    pt.save(p, {x = tt})
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, pt.load(p).x:tolist())
  end)

  it("is readable with plain python3 + json + numpy", function()
    local p = tmp("py.safetensors")
    pt.save(p, {["layer.weight"] = pt.tensor({{0.5, 1}, {2, 3}}), steps = pt.tensor({7}, {dtype = "int64"})},
            {meta = {epoch = 1}})
    local h = io.popen("/usr/bin/python3 scripts/read_checkpoint.py " .. p .. " --values 2>&1")
    local out = h:read("a")
    h:close()
    assert.matches("layer.weight\tfloat32\t%[2, 2%]\t0.5 1.0 2.0 3.0", out)
    assert.matches("steps\tint64\t%[1%]\t7", out)
    assert.matches("meta epoch = 1", out)
    assert.matches("meta partrain.format = 1", out)
  end)

  it("keeps the previous file when a save fails", function()
    local p = tmp("keep.safetensors")
    pt.save(p, {a = pt.tensor({1})})
    os.execute("mkdir -p '" .. p .. ".tmp'") -- the temporary file cannot be created
    assert.matches("cannot create '.-keep.safetensors.tmp'", err_of(pt.save, p, {a = pt.tensor({2})}))
    assert.are.same({1}, pt.load(p).a:tolist())
    os.remove(p .. ".tmp")
  end)

  it("names the problem in what it cannot save", function()
    local p = tmp("bad.safetensors")
    assert.matches("entry 'x' is a number, not a tensor", err_of(pt.save, p, {x = 3}))
    assert.matches("tensor names must be strings", err_of(pt.save, p, {pt.tensor({1})}))
    assert.matches("expected a model", err_of(pt.save, p, 42))
    assert.matches("path must be a string", err_of(pt.save, nil, {}))
    assert.matches("meta key 'partrain.x' is reserved", err_of(pt.save, p, {}, {meta = {["partrain.x"] = 1}}))
    assert.matches("meta 'bad': cannot encode a boolean key", err_of(pt.save, p, {}, {meta = {bad = {[true] = 1}}}))
    assert.matches("meta 'f': cannot encode a function", err_of(pt.save, p, {}, {meta = {f = print}}))
    assert.matches("optimizer must have a state_dict", err_of(pt.save, p, {}, {optimizer = {}}))
    assert.matches("'__metadata__' cannot be a tensor name", err_of(pt.save, p, {__metadata__ = pt.tensor({1})}))
  end)
end)

describe("pt.load on malformed files", function()
  local f32 = string.pack("<ff", 1, 2)
  local function hdr(entries) return "{" .. entries .. "}" end
  local good = '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'

  it("loads a hand-written valid file", function()
    local t = pt.load(st_file("ok", hdr(good), f32))
    assert.are.same({1, 2}, t.a:tolist())
  end)

  local cases = {
    {"truncated before the header length", function() local p = tmp("t0"); local f = io.open(p, "wb"); f:write("abc"); f:close(); return p end,
     "truncated file %(3 bytes"},
    {"header length larger than the file", function() return st_file("t1", hdr(good), f32, 1000) end,
     "header length 1000 is larger than the file"},
    {"absurd header length", function() return st_file("t2", hdr(good), f32, 200 * 1024 * 1024) end,
     "header length 209715200 is absurd"},
    {"invalid JSON", function() return st_file("t3", '{"a":{', "") end, "invalid JSON in the header"},
    {"a header that is not an object", function() return st_file("t4", "[]", "") end, "not a JSON object"},
    {"unknown dtype", function() return st_file("t5", hdr('"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}'), f32) end,
     "tensor 'a': unknown dtype 'Q9'"},
    {"unsupported dtype", function() return st_file("t6", hdr('"a":{"dtype":"F8_E5M2","shape":[8],"data_offsets":[0,8]}'), f32) end,
     "unsupported dtype 'F8_E5M2'"},
    {"shape/offset mismatch", function() return st_file("t7", hdr('"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}'), f32) end,
     "shape {3} of F32 needs 12 bytes but data_offsets %[0, 8%] hold 8"},
    {"offsets out of range", function() return st_file("t8", hdr(good), "1234") end,
     "data_offsets %[0, 8%] out of range %(the data section has 4 bytes%)"},
    {"overlapping offsets", function()
      return st_file("t9", hdr(good .. ',"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}'), f32) end,
     "overlap tensor 'a'"},
    {"a gap between tensors", function()
      return st_file("t10", hdr('"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}'), f32) end,
     "bytes 4 to 6 of the data section belong to no tensor"},
    {"bytes after the last tensor", function() return st_file("t11", hdr(good), f32 .. "xx") end,
     "bytes 8 to 10 of the data section belong to no tensor %(after the last one%)"},
    {"non-string metadata", function() return st_file("t12", hdr('"__metadata__":{"k":5}'), "") end,
     "__metadata__ value of 'k' is not a string"},
    {"negative shape", function() return st_file("t13", hdr('"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}'), f32) end,
     "shape entry 1 is not a non%-negative integer"},
    {"missing data_offsets", function() return st_file("t14", hdr('"a":{"dtype":"F32","shape":[2]}'), f32) end,
     "missing or non%-array data_offsets"},
    {"junk after the JSON", function() return st_file("t15", hdr(good) .. "zz", f32) end,
     "unexpected bytes after the JSON header"},
    {"a missing file", function() return tmp("does-not-exist") end, "cannot open"},
    {"a directory", function() return tmpdir end, "is not a regular file"},
  }
  for _, c in ipairs(cases) do
    it("rejects " .. c[1], function()
      local p = c[2]()
      local err = err_of(pt.load, p)
      assert.matches(c[3], err)
      if c[1] ~= "a missing file" then assert.matches(p, err, 1, true) end
    end)
  end
end)

-- A tiny hand-written model and momentum SGD (pure Lua over flat element access), so the resume
-- machinery (state_dict with tensors + numbers + nested tables, loader epoch) is tested on its own.
local function fake_model()
  local m = {w = pt.zeros(2), b = pt.zeros(1)}
  function m:state_dict() return {weight = self.w, bias = self.b} end
  function m:load_state_dict(sd)
    self.w, self.b = copy(sd.weight), copy(sd.bias)
  end
  function m:params() return {self.w, self.b} end
  return m
end

local function fake_sgd(model, lr, momentum)
  local o = {model = model, lr = lr, momentum = momentum, steps = 0, state = {}}
  function o:step(grads)
    self.steps = self.steps + 1
    for k, p in ipairs(self.model:params()) do
      local st = self.state[k]
      if not st then st = {momentum_buffer = pt.zeros(p:size())}; self.state[k] = st end
      local buf = st.momentum_buffer
      for i = 1, p:numel() do
        local v = self.momentum * buf:_get_flat(i) + grads[k][i]
        buf:_set_flat(i, v)
        p:_set_flat(i, p:_get_flat(i) - self.lr * v)
      end
    end
  end
  function o:state_dict()
    local st = {}
    for k, s in pairs(self.state) do st[k] = {momentum_buffer = s.momentum_buffer} end
    return {state = st, param_groups = {{lr = self.lr, momentum = self.momentum, nesterov = false}},
            steps = self.steps}
  end
  function o:load_state_dict(sd)
    self.lr, self.momentum, self.steps = sd.param_groups[1].lr, sd.param_groups[1].momentum, sd.steps
    self.state = {}
    for k, s in pairs(sd.state) do self.state[k] = {momentum_buffer = copy(s.momentum_buffer)} end
  end
  return o
end

-- y = 2 x1 - x2 + 0.5, squared loss, gradients by hand
local function train_epoch(model, opt, loader)
  for x, y in loader:batches() do
    local xs, ys = x:tolist(), y:tolist()
    local gw, gb = {0, 0}, {0}
    for r = 1, #ys do
      local pred = model.w:_get_flat(1) * xs[r][1] + model.w:_get_flat(2) * xs[r][2] + model.b:_get_flat(1)
      local e = (pred - ys[r]) / #ys
      gw[1], gw[2], gb[1] = gw[1] + e * xs[r][1], gw[2] + e * xs[r][2], gb[1] + e
    end
    opt:step({gw, gb})
  end
end

local function regression_data()
  pt.manual_seed(5)
  local x = pt.rand(13, 2)
  local y = pt.zeros(13)
  for i = 1, 13 do y:_set_flat(i, 2 * x:_get_flat(2 * i - 1) - x:_get_flat(2 * i) + 0.5) end
  return data.TensorDataset(x, y)
end

describe("exact resume", function()
  it("train 2 epochs == train 1 + save + load + train 1 (fake model and momentum SGD)", function()
    local ds = regression_data()
    local m1 = fake_model()
    local o1 = fake_sgd(m1, 0.3, 0.9)
    local l1 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    train_epoch(m1, o1, l1)
    train_epoch(m1, o1, l1)

    local m2 = fake_model()
    local o2 = fake_sgd(m2, 0.3, 0.9)
    local l2 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    train_epoch(m2, o2, l2)
    local p = tmp("resume.safetensors")
    pt.save(p, m2, {optimizer = o2, loader = l2, meta = {epoch = 1}})

    local _, meta, state = pt.load(p)
    assert.are.equal(1, meta.epoch)
    assert.are.equal(1, state.loader_epoch)
    assert.are.equal(o2.steps, state.optimizer.steps)
    assert.is_false(state.optimizer.param_groups[1].nesterov)

    local m3 = fake_model()
    local o3 = fake_sgd(m3, 0.01, 0)
    local l3 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    assert.are.same({epoch = 1}, pt.load_into(p, m3, {optimizer = o3, loader = l3}))
    assert.are.equal(0.3, o3.lr)
    train_epoch(m3, o3, l3)
    assert.are.same(flat(m1.w), flat(m3.w))
    assert.are.same(flat(m1.b), flat(m3.b))
    assert.are.same(flat(o1.state[1].momentum_buffer), flat(o3.state[1].momentum_buffer))
  end)

  it("stores optimizer tensors under optimizer.* names, readable by other tools", function()
    local m = fake_model()
    local o = fake_sgd(m, 0.1, 0.9)
    o:step({{1, 2}, {3}})
    local p = tmp("opt.safetensors")
    pt.save(p, m, {optimizer = o})
    local tensors, _, state = pt.load(p)
    assert.is_nil(tensors["optimizer.state.1.momentum_buffer"]) -- moved into state.optimizer
    assert.are.same({1, 2}, flat(state.optimizer.state[1].momentum_buffer))
    assert.are.same({"bias", "optimizer.state.1.momentum_buffer", "optimizer.state.2.momentum_buffer", "weight"},
                    (function() local n = {table.unpack(state.names)}; table.sort(n); return n end)())
  end)

  it("load_into names what is missing", function()
    local p = tmp("plain.safetensors")
    pt.save(p, fake_model())
    assert.matches("holds no optimizer state", err_of(pt.load_into, p, fake_model(), {optimizer = fake_sgd(fake_model(), 1, 0)}))
    assert.matches("holds no loader epoch",
                   err_of(pt.load_into, p, fake_model(), {loader = data.DataHandler(regression_data())}))
    assert.matches("model must be a Module or a table of tensors", err_of(pt.load_into, p, 3))
  end)

  it("train 2 epochs == 1 + save + load + 1 with nn and optim (SGD momentum, Adam)", function()
    local nn, optim = pt.nn, pt.optim
    local ds = regression_data()
    for _, make_opt in ipairs({
      function(m) return optim.SGD(m:parameters(), {lr = 0.1, momentum = 0.9}) end,
      function(m) return optim.Adam(m:parameters(), {lr = 0.01}) end,
    }) do
      local function run(model, opt, loader)
        for x, y in loader:batches() do
          opt:zero_grad()
          local loss = nn.mse_loss(model(x):view(-1), y)
          loss:backward()
          opt:step()
        end
      end
      pt.manual_seed(1)
      local m1 = nn.Linear(2, 1)
      local o1 = make_opt(m1)
      local l1 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
      pt.manual_seed(1)
      local m2 = nn.Linear(2, 1)
      local o2 = make_opt(m2)
      local l2 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
      run(m1, o1, l1); run(m1, o1, l1)
      run(m2, o2, l2)
      local p = tmp("nn.safetensors")
      pt.save(p, m2, {optimizer = o2, loader = l2})
      pt.manual_seed(99)
      local m3 = nn.Linear(2, 1)
      local o3 = make_opt(m3)
      local l3 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
      pt.load_into(p, m3, {optimizer = o3, loader = l3})
      run(m3, o3, l3)
      local a, b = m1:state_dict(), m3:state_dict()
      for name, t in pairs(a) do assert.are.same(flat(t), flat(b[name])) end
    end
  end)
end)

describe("the random generator in a checkpoint", function()
  local nn, optim = pt.nn, pt.optim
  it("get_rng_state / set_rng_state replay the same numbers, and refuse what is not a state", function()
    local s = pt.get_rng_state()
    assert.are.equal("uint8", s:dtype())
    local a = pt.randn(5) -- randn keeps a spare normal: it is part of the state
    pt.set_rng_state(s)
    assert.is_true(pt.equal(a, pt.randn(5)))
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
    end
    assert.are.equal("set_rng_state: expected the 1-D uint8 tensor of get_rng_state(), got float32 of 1 dimensions",
      err(pt.set_rng_state, pt.zeros(42)))
    assert.are.equal("set_rng_state: expected the 42 bytes of get_rng_state(), got 3",
      err(pt.set_rng_state, pt.zeros(3, {dtype = "uint8"})))
    assert.are.equal("set_rng_state: not a state from get_rng_state() (format byte 0)",
      err(pt.set_rng_state, pt.zeros(42, {dtype = "uint8"})))
  end)

  it("rng = true makes a resume with dropout exact; load_into restores it unless rng = false", function()
    local x = pt.randn(16, 4)
    local function setup()
      pt.manual_seed(5)
      local m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 1))
      return m, optim.SGD(m:parameters(), {lr = 0.1, momentum = 0.9})
    end
    local function steps(m, o, n)
      for _ = 1, n do
        o:zero_grad()
        m(x):pow(2):mean():backward()
        o:step()
      end
    end
    local m1, o1 = setup()
    steps(m1, o1, 4)
    local m2, o2 = setup()
    steps(m2, o2, 2)
    local p = tmp("rng.safetensors")
    pt.save(p, m2, {optimizer = o2, rng = true})
    local tensors, _, state = pt.load(p)
    assert.is_nil(tensors["partrain.rng_state"]) -- not one of the model's tensors
    assert.are.same({42}, state.rng:size())
    local m3, o3 = setup()
    pt.manual_seed(99)
    pt.load_into(p, m3, {optimizer = o3})
    steps(m3, o3, 2)
    for name, t in pairs(m1:state_dict()) do assert.is_true(pt.equal(t, m3:state_dict()[name]), name) end
    local m4, o4 = setup()
    pt.manual_seed(99)
    pt.load_into(p, m4, {optimizer = o4, rng = false})
    steps(m4, o4, 2)
    assert.is_false(pt.equal(m1[3].weight, m4[3].weight)) -- other dropout masks
    assert.has_error(function() pt.save(p, {["partrain.rng_state"] = pt.zeros(1)}) end,
      "save: tensor name 'partrain.rng_state' is reserved")
  end)
end)

describe("JSON helpers", function()
  it("round-trip nested tables with integer keys, escapes and booleans", function()
    local v = {state = {[1] = {step = 3}, [3] = {step = 4}}, list = {1, 2.5, "x"}, flag = false,
               ["#odd"] = 1, ["\\b"] = 2, big = 2 ^ 60 // 1}
    assert.are.same(v, pt._json_decode(pt._json_encode(v)))
    assert.matches("cannot encode a boolean key", err_of(pt._json_encode, {[true] = 1}))
    assert.matches("nested too deeply", err_of(pt._json_encode, (function() local t = {}; t.t = t; return t end)()))
    assert.matches("invalid JSON", err_of(pt._json_decode, "{"))
  end)
end)

-- the message without a position, checking that any position is this file's
local SPEC = debug.getinfo(1, "S").short_src
local function msg_of(fn, ...)
  local err = err_of(fn, ...)
  local src, rest = err:match("^([^\n]-):%d+: (.*)$")
  if src then
    assert.are.equal(SPEC, src)
    return rest
  end
  return err
end

-- same value and same math.type (nan equals nan; -0.0 differs from 0.0)
local function assert_same_number(want, got, what)
  local ok = math.type(want) == math.type(got)
    and ((want ~= want and got ~= got) or (want == got and (want ~= 0 or 1 / want == 1 / got)))
  if not ok then
    error(("%s: wanted %s %s, got %s %s"):format(what, math.type(want), string.format("%.17g", want),
      tostring(math.type(got)), type(got) == "number" and string.format("%.17g", got) or tostring(got)), 2)
  end
end

describe("numbers in checkpoint metadata", function()
  local function numbers()
    local decayed, lr = {}, 0.1 + 0.2
    for k = 1, 12 do lr = lr * 0.7; decayed[k] = lr end
    return {
      sum = 0.1 + 0.2, third = 1 / 3, tiny = 1e-300, denormal = 5e-324, huge = 1.7976931348623157e308,
      two53 = 2.0 ^ 53, two53i = (1 << 53) + 1, two63 = 2.0 ^ 63,
      maxint = math.maxinteger, minint = math.mininteger, one = 1.0, onei = 1, zero = 0.0, negzero = -0.0,
      inf = math.huge, ninf = -math.huge, nan = 0 / 0, e20 = 1e20, decayed = decayed,
      nested = {x = {0.1 + 0.2, 1.0, 3, {deep = -2.5e-7}}},
    }
  end

  local function check_all(want, got, path)
    for k, v in pairs(want) do
      if type(v) == "table" then
        assert.are.equal("table", type(got[k]), path .. k)
        check_all(v, got[k], path .. tostring(k) .. ".")
      else
        assert_same_number(v, got[k], path .. tostring(k))
      end
    end
  end

  it("round-trip exactly, integers as integers and floats as floats (nan and inf too)", function()
    local p = tmp("numbers.safetensors")
    local want = numbers()
    pt.save(p, {}, {meta = want})
    local _, meta = pt.load(p)
    check_all(want, meta, "meta.")
  end)

  it("are written in their shortest exact form, a float always with '.' or an exponent", function()
    local enc = require("partrain.json").encode
    local cases = {
      {0.1 + 0.2, "0.30000000000000004"}, {0.1, "0.1"}, {1.0, "1.0"}, {1, "1"}, {-0.0, "-0.0"},
      {2.0 ^ 53, "9007199254740992.0"}, {(1 << 53) + 1, "9007199254740993"},
      {math.maxinteger, "9223372036854775807"}, {math.mininteger, "-9223372036854775808"},
      {1e300, "1e+300"}, {1 / 3, "0.3333333333333333"}, {5e-324, "4.94065645841247e-324"},
      {0 / 0, "NaN"}, {math.huge, "Infinity"}, {-math.huge, "-Infinity"},
      {{1, 2.5, "a\0b\n\"\\"}, [==[[1,2.5,"a\u0000b\n\"\\"]]==]},
      {{[3] = 1, x = 2, ["#y"] = 3, ["\\z"] = 4}, [==[{"#3":1,"\\#y":3,"\\\\z":4,"x":2}]==]},
      {{}, "{}"},
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], enc(c[1], "test")) end
  end)

  it("decode with Lua's integer/float rules and refuse malformed JSON", function()
    local dec = require("partrain.json").decode
    local v = dec('[1, 1.0, 1e2, -0, 9223372036854775807, 9223372036854775808, 0.30000000000000004, '
      .. 'NaN, -Infinity, "caf\\u00e9 \\ud83d\\ude00", {"#2": true, "\\\\#3": null, "x": [] }]')
    assert_same_number(1, v[1], "1")
    assert_same_number(1.0, v[2], "2")
    assert_same_number(100.0, v[3], "3")
    assert_same_number(0, v[4], "4")
    assert_same_number(math.maxinteger, v[5], "5")
    assert_same_number(2.0 ^ 63, v[6], "6")
    assert_same_number(0.1 + 0.2, v[7], "7")
    assert_same_number(0 / 0, v[8], "8")
    assert_same_number(-math.huge, v[9], "9")
    assert.are.equal("caf\u{e9} \u{1F600}", v[10])
    assert.are.same({[2] = true, x = {}}, v[11])
    for text, why in pairs({
      ['{"a":1'] = "invalid JSON %(a missing ',' or '}' at byte 7%)",
      ['"\\ud800"'] = "invalid JSON %(a lone surrogate at byte 2%)",
      ['"\255"'] = "invalid JSON %(a string that is not valid UTF%-8",
      ['[1] x'] = "invalid JSON %(trailing characters at byte 5%)",
      ['01'] = "invalid JSON %(trailing characters at byte 2%)",
      [string.rep("[", 1000)] = "nesting too deep",
    }) do
      assert.matches(why, err_of(dec, text))
    end
  end)

  it("read the same with plain python3 json (numbers exact, nan and inf as Python writes them)", function()
    local p = tmp("numbers_py.safetensors")
    pt.save(p, {w = pt.tensor({1.5})}, {meta = {sum = 0.1 + 0.2, one = 1.0, maxint = math.maxinteger,
      inf = math.huge, nan = 0 / 0, list = {0.1 + 0.2, 2}, note = "caf\u{e9}"}})
    local h = io.popen("/usr/bin/python3 scripts/read_checkpoint.py " .. p .. " 2>&1")
    local out = h:read("a")
    h:close()
    assert.matches("meta sum = 0.30000000000000004\n", out, 1, true)
    assert.matches("meta one = 1.0\n", out, 1, true)
    assert.matches("meta maxint = 9223372036854775807\n", out, 1, true)
    assert.matches("meta note = caf\u{e9}\n", out, 1, true)
    local script = "import json,sys; sys.path.insert(0, 'scripts'); import read_checkpoint as r; "
      .. "t, m = r.read(sys.argv[1]); ks = json.loads(m['partrain.json_keys']); "
      .. "print(' '.join(f'{k}={json.loads(m[k])!r}' for k in sorted(ks)))"
    h = io.popen("/usr/bin/python3 -c \"" .. script .. "\" " .. p .. " 2>&1")
    out = h:read("a")
    h:close()
    assert.are.equal("inf=inf list=[0.30000000000000004, 2] maxint=9223372036854775807 nan=nan one=1.0 "
      .. "sum=0.30000000000000004\n", out)
  end)

  it("refuse partrain metadata that is not what partrain writes, naming the key", function()
    local function file(meta)
      return st_file("badmeta.safetensors", '{"__metadata__":{' .. meta .. '}}')
    end
    for _, c in ipairs({
      {'"partrain.loader_epoch":"abc"', "invalid partrain.loader_epoch metadata 'abc' (expected a non-negative integer)"},
      {'"partrain.loader_epoch":"-1"', "invalid partrain.loader_epoch metadata '-1' (expected a non-negative integer)"},
      {'"partrain.loader_epoch":"1.5"', "invalid partrain.loader_epoch metadata '1.5' (expected a non-negative integer)"},
      {'"partrain.loader_epoch":"99999999999999999999"', "invalid partrain.loader_epoch metadata '99999999999999999999' (expected a non-negative integer)"},
      {'"partrain.format":"2"', "partrain.format is '2'; this partrain reads format 1 (a file of a newer partrain?)"},
      {'"partrain.json_keys":"{\\"a\\":1}","a":"1"', "invalid partrain.json_keys metadata (expected a list of key names)"},
      {'"partrain.json_keys":"[1]"', "invalid partrain.json_keys metadata (entry 1 is a number, not a key name)"},
    }) do
      local p = file(c[1])
      assert.are.equal("load: '" .. p .. "': " .. c[2], msg_of(pt.load, p))
    end
    -- files of other tools (no partrain keys) and partrain's own still load
    assert.are.same({a = "1"}, select(2, pt.load(file('"a":"1"'))))
    assert.are.equal(0, select(3, pt.load(file('"partrain.loader_epoch":"0","partrain.format":"1"'))).loader_epoch)
  end)

  it("still load metadata written by earlier versions (cJSON's numbers)", function()
    local opt = '{"param_groups":[{"lr":0.3,"momentum":0.9,"nesterov":false,"params":[1,2]}],'
      .. '"state":{"#1":{"momentum_buffer":{"__tensor__":"optimizer.state.1.momentum_buffer"}}},"steps":4}'
    local function js(x) return '"' .. x:gsub('["\\]', "\\%0") .. '"' end
    local header = '{"__metadata__":{"partrain.optimizer":' .. js(opt) .. ',"partrain.json_keys":'
      .. js('["epoch","tags"]') .. ',"epoch":"3","tags":' .. js('["a","\\\\#b"]') .. ',"note":"x",'
      .. '"partrain.loader_epoch":"2","partrain.format":"1"},'
      .. '"optimizer.state.1.momentum_buffer":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    local tensors, meta, state = pt.load(st_file("old.safetensors", header, string.pack("<ff", 1, 2)))
    assert.is_nil(next(tensors))
    assert.are.same({epoch = 3, tags = {"a", "\\#b"}, note = "x"}, meta)
    assert.are.equal(2, state.loader_epoch)
    assert.are.equal(4, state.optimizer.steps)
    assert.are.same({1, 2}, state.optimizer.state[1].momentum_buffer:tolist())
    assert.are.same({lr = 0.3, momentum = 0.9, nesterov = false, params = {1, 2}}, state.optimizer.param_groups[1])
  end)
end)

describe("exact resume with inexact hyperparameters", function()
  it("train 2 epochs == 1 + save + load + 1, fake momentum SGD, lr = 0.1 + 0.2 decayed by 0.7: bitwise equal", function()
    local ds = regression_data()
    local function epoch(m, o, l)
      train_epoch(m, o, l)
      o.lr = o.lr * 0.7
    end
    local m1 = fake_model()
    local o1 = fake_sgd(m1, 0.1 + 0.2, 0.9)
    local l1 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    epoch(m1, o1, l1)
    epoch(m1, o1, l1)

    local m2 = fake_model()
    local o2 = fake_sgd(m2, 0.1 + 0.2, 0.9)
    local l2 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    epoch(m2, o2, l2)
    local p = tmp("resume_lr.safetensors")
    pt.save(p, m2, {optimizer = o2, loader = l2, meta = {lr = o2.lr}})

    local m3 = fake_model()
    local o3 = fake_sgd(m3, 0.01, 0)
    local l3 = data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
    local meta = pt.load_into(p, m3, {optimizer = o3, loader = l3})
    assert_same_number(o2.lr, meta.lr, "meta.lr")
    assert_same_number(o2.lr, o3.lr, "lr")
    epoch(m3, o3, l3)
    assert_same_number(o1.lr, o3.lr, "lr after the resumed epoch")
    assert.are.same(flat(m1.w), flat(m3.w))
    assert.are.same(flat(m1.b), flat(m3.b))
  end)

  it("train 2 epochs == 1 + save + load + 1, nn.Linear (float64), SGD momentum and Adam, lr = 0.1 + 0.2 decayed by 0.7: bitwise equal", function()
    local nn, optim = pt.nn, pt.optim
    local ds = regression_data()
    for _, make_opt in ipairs({
      function(m) return optim.SGD(m:parameters(), {lr = 0.1 + 0.2, momentum = 0.9}) end,
      function(m) return optim.Adam(m:parameters(), {lr = 0.1 + 0.2, betas = {0.9, 0.99}, eps = 1e-8 / 3}) end,
    }) do
      local function epoch(model, opt, loader)
        for x, y in loader:batches() do
          opt:zero_grad()
          nn.mse_loss(model(x:to("float64")):view(-1), y:to("float64")):backward()
          opt:step()
        end
        for _, g in ipairs(opt.param_groups) do g.lr = g.lr * 0.7 end
      end
      local function setup(seed)
        pt.manual_seed(seed)
        local m = nn.Linear(2, 1, {dtype = "float64"})
        return m, make_opt(m), data.DataHandler(ds, {batch = 4, shuffle = true, progress = false})
      end
      local m1, o1, l1 = setup(1)
      epoch(m1, o1, l1); epoch(m1, o1, l1)
      local m2, o2, l2 = setup(1)
      epoch(m2, o2, l2)
      local p = tmp("resume_nn_lr.safetensors")
      pt.save(p, m2, {optimizer = o2, loader = l2})
      local m3, o3, l3 = setup(99)
      pt.load_into(p, m3, {optimizer = o3, loader = l3})
      assert_same_number(o2.param_groups[1].lr, o3.param_groups[1].lr, "lr")
      for k, v in pairs(o2.param_groups[1]) do
        if type(v) == "number" then assert_same_number(v, o3.param_groups[1][k], k) end
      end
      epoch(m3, o3, l3)
      local a, b = m1:state_dict(), m3:state_dict()
      for name, t in pairs(a) do assert.are.same(flat(t), flat(b[name])) end
    end
  end)
end)

describe("pt.load_into a plain table of tensors", function()
  it("copies into leaves that require grad, without recording a graph", function()
    local p = tmp("leaf.safetensors")
    pt.save(p, {w = pt.tensor({1.5, -2, 3}), b = pt.tensor({0.25})})
    local w, b = pt.zeros(3, {requires_grad = true}), pt.zeros(1, {requires_grad = true})
    pt.load_into(p, {w = w, b = b})
    assert.are.same({1.5, -2, 3}, w:tolist())
    assert.are.same({0.25}, b:tolist())
    assert.is_true(w.requires_grad and w.is_leaf)
    assert.is_nil(w.grad_fn)
    assert.is_true(pt.is_grad_enabled())
    ;(w * w):sum():backward()
    assert.are.same({3, -4, 6}, w.grad:tolist())
  end)

  it("refuses a tensor of another shape, naming the key and both shapes, and changes nothing", function()
    local p = tmp("shape.safetensors")
    pt.save(p, {a = pt.tensor({7}), w = pt.tensor({7})})
    local a, w = pt.zeros(1), pt.zeros(3)
    assert.are.equal("load_into: size mismatch for w: copying a tensor with shape {1} from checkpoint, "
      .. "the shape in the target is {3}", msg_of(pt.load_into, p, {a = a, w = w}))
    assert.are.same({0}, a:tolist()) -- nothing copied: all shapes are checked first
    assert.are.same({0, 0, 0}, w:tolist())
    assert.are.equal("load_into: size mismatch for w: copying a tensor with shape {1} from checkpoint, "
      .. "the shape in the target is {}", msg_of(pt.load_into, p, {w = pt.tensor(0)}))
    assert.are.equal(("load_into: '%s' has no tensor 'x'"):format(p), msg_of(pt.load_into, p, {x = pt.zeros(1)}))
    assert.are.equal("load_into: entry 'a' of the target is a number, not a tensor", msg_of(pt.load_into, p, {a = 1}))
  end)
end)

describe("header strings", function()
  local p
  before_each(function() p = tmp("strings.safetensors") end)

  it("refuses names, meta keys and meta strings that are not valid UTF-8, naming the key", function()
    local one = pt.tensor({1})
    assert.are.equal("save: tensor name 'w\\xff' is not valid UTF-8 (byte 2)", msg_of(pt.save, p, {["w\xff"] = one}))
    assert.are.equal("save: optimizer state: key '\\xc3x' at 'state' is not valid UTF-8 (byte 1)",
      msg_of(pt.save, p, {}, {optimizer = {state_dict = function() return {state = {["\xc3x"] = {b = one}}} end}}))
    assert.are.equal("save: meta key 'k\\xfe' is not valid UTF-8 (byte 2)", msg_of(pt.save, p, {}, {meta = {["k\xfe"] = 1}}))
    assert.are.equal("save: meta 'note': string is not valid UTF-8 (byte 4)",
      msg_of(pt.save, p, {}, {meta = {note = "abc\xed\xa0\x80"}}))
    assert.are.equal("save: meta 'tags': string at '2' is not valid UTF-8 (byte 1)",
      msg_of(pt.save, p, {}, {meta = {tags = {"ok", "\xc0\xaf"}}}))
    assert.are.equal("save: meta 'm': key '\\xff' is not valid UTF-8 (byte 1)",
      msg_of(pt.save, p, {}, {meta = {m = {["\xff"] = 1}}}))
    assert.are.equal("save: optimizer state: string at 'param_groups.1.name' is not valid UTF-8 (byte 1)",
      msg_of(pt.save, p, {}, {optimizer = {state_dict = function() return {param_groups = {{name = "\x80"}}} end}}))
    assert.is_nil(io.open(p)) -- nothing was written
    -- valid UTF-8 goes through, and python's json reads it
    pt.save(p, {["poids.\u{e9}"] = one}, {meta = {["cl\u{e9}"] = "\u{1F600}", l = {"\u{e9}"}}})
    local t, meta = pt.load(p)
    assert.are.same({1}, t["poids.\u{e9}"]:tolist())
    assert.are.same({["cl\u{e9}"] = "\u{1F600}", l = {"\u{e9}"}}, meta)
    local h = io.popen("/usr/bin/python3 scripts/read_checkpoint.py " .. p .. " 2>&1")
    local out = h:read("a")
    h:close()
    assert.matches("poids.\u{e9}\tfloat32\t[1]\n", out, 1, true)
    assert.matches("meta cl\u{e9} = \u{1F600}\n", out, 1, true)
  end)

  it("refuses NUL bytes in names and meta keys, and keeps them in meta strings", function()
    assert.are.equal("save: tensor name 'a\\x00b' contains a NUL byte (names and keys cannot hold one)",
      msg_of(pt.save, p, {["a\0b"] = pt.tensor({1}), a = pt.tensor({2})}))
    assert.are.equal("save: meta key 'k\\x00' contains a NUL byte (names and keys cannot hold one)",
      msg_of(pt.save, p, {}, {meta = {["k\0"] = 1}}))
    assert.are.equal("save: path 'x\\x00y' contains a NUL byte", msg_of(pt.save, "x\0y", {}))
    assert.are.equal("load: path 'x\\x00y' contains a NUL byte", msg_of(pt.load, "x\0y"))
    pt.save(p, {}, {meta = {s = "x\0y", t = {"\0", ["a\0"] = "\0b"}, plain = "xy"}})
    local _, meta = pt.load(p)
    assert.are.same({s = "x\0y", t = {"\0", ["a\0"] = "\0b"}, plain = "xy"}, meta)
  end)

  it("rejects a hand-made header with invalid UTF-8 or \\u0000, naming the key", function()
    local f32 = string.pack("<f", 1)
    local a = '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    for _, c in ipairs({
      {'{"a\255":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', "tensor name 'a\\xff' is not valid UTF-8"},
      {'{"__metadata__":{"k":"\254"},' .. a .. '}', "__metadata__ value of 'k' is not valid UTF-8"},
      {'{"__metadata__":{"k\192\175":"v"},' .. a .. '}', "__metadata__ key 'k\\xc0\\xaf' is not valid UTF-8"},
      {'{"a\\u0000b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
       "tensor name 'a\\u0000...' holds a NUL character (\\u0000), which partrain does not accept"},
      {'{' .. a .. ',"__metadata__":{"k":"x\\u0000"}}',
       "__metadata__ value of 'k' holds a NUL character (\\u0000), which partrain does not accept"},
    }) do
      local path = st_file("bad_string", c[1], f32)
      assert.are.equal(("load: '%s': %s"):format(path, c[2]), msg_of(pt.load, path))
    end
    -- an escaped backslash before u0000 is no NUL
    local t = pt.load(st_file("ok_string", '{"a\\\\u0000":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32))
    assert.are.same({1}, t["a\\u0000"]:tolist())
  end)
end)

describe("checkpoint errors point at the caller", function()
  local function at_line(fn)
    local ok, err = pcall(fn)
    assert.is_false(ok)
    return err
  end

  it("for errors raised by what pt.load_into calls, and by pt.load inside it", function()
    local p = tmp("lines.safetensors")
    pt.save(p, {weight = pt.ones(1), bias = pt.ones(1)})
    local m = pt.nn.Linear(1, 3)
    local err = at_line(function() pt.load_into(p, m) end) local line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: load_state_dict: size mismatch for weight: copying a param with shape {1} "
      .. "from checkpoint, the shape in current model is {3,1}"):format(SPEC, line), err)
    local missing = tmp("missing.safetensors")
    err = at_line(function() pt.load_into(missing, m) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: load: cannot open '%s': No such file or directory"):format(SPEC, line, missing), err)
    err = at_line(function() pt.load(missing) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: load: cannot open '%s': No such file or directory"):format(SPEC, line, missing), err)
    pt.save(p, m, {optimizer = pt.optim.SGD(m:parameters(), {lr = 0.1})})
    local o = pt.optim.SGD({m.weight}, {lr = 0.1})
    err = at_line(function() pt.load_into(p, m, {optimizer = o}) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: SGD:load_state_dict: parameter group 1 has 2 parameters in the state dict, "
      .. "1 in the optimizer"):format(SPEC, line), err)
    err = at_line(function() pt.load_into(p, {weight = pt.zeros(2)}) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: load_into: size mismatch for weight: copying a tensor with shape {3,1} from "
      .. "checkpoint, the shape in the target is {2}"):format(SPEC, line), err)
  end)

  it("for pt.save's own checks and the C writer's", function()
    local p = tmp("lines2.safetensors")
    local err = at_line(function() pt.save(p, {x = 3}) end) local line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: save: entry 'x' is a number, not a tensor"):format(SPEC, line), err)
    err = at_line(function() pt.save(p, {}, {meta = {f = print}}) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: save: meta 'f': cannot encode a function"):format(SPEC, line), err)
    err = at_line(function() pt.save("/nonexistent-dir/x", {}) end) line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: save: cannot create '/nonexistent-dir/x.tmp': No such file or directory"):format(SPEC, line), err)
  end)

  it("keeps the position of an error raised in the user's own code, and non-string errors", function()
    local p = tmp("lines3.safetensors")
    local model = {}
    function model:state_dict() error("my state_dict broke") end local line = debug.getinfo(1, "l").currentline
    assert.are.equal(("%s:%d: my state_dict broke"):format(SPEC, line), at_line(function() pt.save(p, model) end))
    local obj = {}
    function model:state_dict() error(obj) end
    assert.are.equal(obj, at_line(function() pt.save(p, model) end))
  end)
end)

describe("PyTorch's names of children (0-based container indices)", function()
  local nn = pt.nn
  -- torch.manual_seed(0); nn.Sequential(Flatten(), Linear(3, 4), ReLU(), Linear(4, 2)); its
  -- state_dict as torch names it, an input and torch's output (PyTorch 1.13)
  local torch_sd = {
    ["1.weight"] = {{-0.004322517663240433, 0.3097158372402191, -0.4751853346824646},
      {-0.4248946011066437, -0.2223689705133438, 0.15482072532176971},
      {-0.011439144611358643, 0.45777493715286255, -0.05123639851808548},
      {0.1527741253376007, -0.1744827926158905, -0.11348707973957062}},
    ["1.bias"] = {-0.55157071352005, -0.3823687434196472, -0.2379971146583557, 0.021387115120887756},
    ["3.weight"] = {{0.19766759872436523, 0.30001139640808105, -0.3389705419540405, -0.21773141622543335},
      {0.18160855770111084, 0.41519397497177124, -0.10290008783340454, 0.3741558790206909}},
    ["3.bias"] = {-0.08059167861938477, 0.05290704965591431},
  }
  local x = pt.tensor({{-0.8264687061309814, -0.7949366569519043, -0.9528351426124573},
    {0.37172138690948486, 0.40871575474739075, 1.4214179515838623}})
  local torch_y = {{-0.11150112003087997, 0.10602271556854248}, {-0.08059167861938477, 0.05290704965591431}}
  local function model() return nn.Sequential(nn.Flatten(), nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)) end
  local function tensors(sd)
    local out = {}
    for k, v in pairs(sd) do out[k] = pt.tensor(v) end
    return out
  end
  local function keys(sd)
    local out = {}
    for k in pairs(sd) do out[#out + 1] = k end
    table.sort(out)
    return out
  end

  it("a PyTorch state_dict loads as it is and gives torch's output", function()
    local m = model()
    local r = m:load_state_dict(tensors(torch_sd))
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.is_true(pt.allclose(m(x), pt.tensor(torch_y), {atol = 1e-6}))
    -- said explicitly, the same; our own names still load as they are
    local m2 = model()
    m2:load_state_dict(tensors(torch_sd), {index_base = 0})
    assert.is_true(m2[2].weight:equal(m[2].weight))
    local m3 = model()
    m3:load_state_dict(m:state_dict())
    assert.is_true(m3[4].bias:equal(m[4].bias))
  end)

  it("state_dict{index_base = 0} and pt.save{index_base = 0} name them as torch does; load_into reads either", function()
    local m = model()
    m:load_state_dict(tensors(torch_sd))
    assert.are.same({"2.bias", "2.weight", "4.bias", "4.weight"}, keys(m:state_dict()))
    assert.are.same({"1.bias", "1.weight", "3.bias", "3.weight"}, keys(m:state_dict({index_base = 0})))
    local p = tmp("torch_names.safetensors")
    pt.save(p, m, {index_base = 0})
    assert.are.same({"1.bias", "1.weight", "3.bias", "3.weight"}, keys((pt.load(p))))
    local m2 = model()
    pt.load_into(p, m2)
    assert.is_true(pt.allclose(m2(x), pt.tensor(torch_y), {atol = 1e-6}))
    -- nested containers: a TransformerEncoder's layers (a ModuleList) and a ParameterList
    local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}), 2)
    local sd0 = enc:state_dict({index_base = 0})
    assert.is_not_nil(sd0["layers.0.linear1.weight"])
    assert.is_not_nil(sd0["layers.1.norm2.bias"])
    assert.is_nil(sd0["layers.2.norm2.bias"])
    local enc2 = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}), 2)
    enc2:load_state_dict(sd0)
    assert.is_true(enc2.layers[2].linear1.weight:equal(enc.layers[2].linear1.weight))
    local pl = nn.ParameterList({pt.zeros(2), pt.ones(3)})
    assert.are.same({"0", "1"}, keys(pl:state_dict({index_base = 0})))
  end)

  it("errors: a bad index_base, and torch's names read as ours", function()
    local m = model()
    assert.are.equal("state_dict: index_base must be 0 or 1, got 2", err_of(function() m:state_dict({index_base = 2}) end):match("state_dict: .*"))
    assert.are.equal("state_dict: options must be a table, got number", err_of(function() m:state_dict(0) end):match("state_dict: .*"))
    assert.are.equal('load_state_dict: index_base must be 0, 1 or "auto", got yes',
      err_of(function() m:load_state_dict({}, {index_base = "yes"}) end):match("load_state_dict: .*"))
    assert.are.equal("load_state_dict: error(s) loading state_dict for Sequential: missing keys: 2.weight, "
      .. "2.bias, 4.weight, 4.bias; unexpected keys: 1.bias, 1.weight, 3.bias, 3.weight",
      err_of(function() m:load_state_dict(tensors(torch_sd), {index_base = 1}) end):match("load_state_dict: .*"))
    assert.are.equal("save: index_base must be 0 or 1, got -1",
      err_of(function() pt.save(tmp("bad.safetensors"), m, {index_base = -1}) end):match("save: .*"))
  end)
end)
