local pt = require "partrain"
local data = pt.data

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute("mkdir -p " .. tmpdir)
local function tmp(name) return tmpdir .. "/" .. name end

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
    assert.matches("meta 'bad': cannot encode NaN", err_of(pt.save, p, {}, {meta = {bad = 0 / 0}}))
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
    {"unsupported dtype", function() return st_file("t6", hdr('"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}'), f32) end,
     "unsupported dtype 'BF16'"},
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
