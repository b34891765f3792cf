local pt = require "partrain"
local data = pt.data

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

-- 4 samples; the "model" returns logits that are the features themselves (3 classes)
local x = pt.tensor({{0, 5, 1}, {9, 0, 0}, {0, 0, 2}, {1, 3, 2}})
local y = pt.tensor({2, 1, 2, 3}, {dtype = "int64"}) -- predictions are 2, 1, 3, 2
local ds = data.TensorDataset(x, y)

-- a module-like table recording its mode and the grad mode it ran under
local function fake_model()
  local m = {training = true, calls = 0}
  function m:eval() self.training = false; return self end
  function m:train(mode) self.training = mode ~= false; return self end
  setmetatable(m, {__call = function(self, input)
    self.calls = self.calls + 1
    self.saw_training, self.saw_grad = self.training, pt.is_grad_enabled()
    return input
  end})
  return m
end

describe("pt.metrics.accuracy", function()
  it("counts argmax predictions against 1-based labels", function()
    local m = fake_model()
    assert.are.equal(0.5, pt.metrics.accuracy(m, ds, {batch = 3}))
    assert.are.equal(2, m.calls) -- batches of 3 and 1
  end)

  it("runs in eval mode without gradients and restores train mode", function()
    local m = fake_model()
    pt.metrics.accuracy(m, ds)
    assert.is_false(m.saw_training)
    assert.is_false(m.saw_grad)
    assert.is_true(m.training)
    assert.is_true(pt.is_grad_enabled())
    local e = fake_model():eval()
    pt.metrics.accuracy(e, ds)
    assert.is_false(e.training) -- a model in eval mode stays there
  end)

  it("accepts a DataHandler without advancing its epochs, and plain functions", function()
    local h = data.DataHandler(ds, {batch = 2, shuffle = true, progress = false})
    assert.are.equal(0.5, pt.metrics.accuracy(function(input) return input end, h))
    assert.are.equal(0, h.epoch)
  end)

  it("frees each big batch before the next one (a 10k-sample evaluation piled up ~30 MB)", function()
    -- 3 batches of 512 x 600 = 307,200 elements, above the 2^18 threshold; outputs are fresh
    local n, f = 1536, 600
    local bx = pt.zeros(n, f)
    local by = pt.ones(n):long()
    local seen = setmetatable({}, {__mode = "k"})
    local alive_at_next = {}
    local calls = 0
    local function model(input)
      calls = calls + 1
      local count = 0
      for _ in pairs(seen) do count = count + 1 end
      alive_at_next[calls] = count
      seen[input] = true
      return input:narrow(2, 1, 3) + 1
    end
    assert.are.equal(1, pt.metrics.accuracy(model, data.TensorDataset(bx, by), {batch = 512}))
    assert.are.same({0, 0, 0}, alive_at_next)
    -- small batches are left to the collector (a full collection per batch would cost more than
    -- it frees); the result is the same
    assert.are.equal(1, pt.metrics.accuracy(model, data.TensorDataset(bx:narrow(1, 1, 8), by:narrow(1, 1, 8)), {batch = 4}))
  end)

  it("restores train mode when the model fails", function()
    local m = fake_model()
    getmetatable(m).__call = function() error("boom", 0) end
    assert.matches("boom", err_of(pt.metrics.accuracy, m, ds))
    assert.is_true(m.training)
  end)

  it("names bad arguments and shapes", function()
    assert.matches("model must be callable", err_of(pt.metrics.accuracy, 3, ds))
    assert.matches("expected a dataset or a DataHandler", err_of(pt.metrics.accuracy, fake_model(), 3))
    local wrong = function(input) return pt.zeros(input:size(1) + 1, 3) end
    assert.matches("count_correct: 5 score rows but 4 labels", err_of(pt.metrics.accuracy, wrong, ds, {batch = 4}))
    local unlabeled = data.TensorDataset(x)
    assert.matches("accuracy: the dataset has no labels", err_of(pt.metrics.accuracy, fake_model(), unlabeled))
  end)
end)

describe("pt.metrics.accuracy checks and transforms", function()
  local identity = function(input) return input end
  local scores = pt.tensor({{0.9, 0.1}, {0.2, 0.8}, {0.6, 0.4}})

  it("rejects labels outside 1..C like confusion_matrix", function()
    local zero_based = data.TensorDataset(scores, pt.tensor({0, 1, 0}, {dtype = "int64"}))
    assert.are.equal("accuracy: label 0 out of range 1..2", (err_of(pt.metrics.accuracy, identity, zero_based):gsub("^[^:]*:%d+: ", "")))
    assert.are.equal("confusion_matrix: label 0 out of range 1..2",
                     err_of(pt.metrics.confusion_matrix, identity, zero_based, 2):gsub("^[^:]*:%d+: ", ""))
    local too_big = data.TensorDataset(scores, pt.tensor({1, 3, 2}, {dtype = "int64"}))
    assert.are.equal("accuracy: label 3 out of range 1..2", (err_of(pt.metrics.accuracy, identity, too_big):gsub("^[^:]*:%d+: ", "")))
    local fractional = data.TensorDataset(scores, pt.tensor({1, 1.5, 2}))
    assert.are.equal("accuracy: label 1.5 out of range 1..2", (err_of(pt.metrics.accuracy, identity, fractional):gsub("^[^:]*:%d+: ", "")))
    -- raised at the caller's line
    local ok, e = pcall(function()
      local a = pt.metrics.accuracy(identity, zero_based)
      return a
    end)
    assert.is_false(ok)
    assert.matches("^spec/metrics_spec%.lua:%d+: accuracy: label 0 out of range 1%.%.2$", e)
    -- float labels that are class indices count
    assert.are.equal(1, pt.metrics.accuracy(identity, data.TensorDataset(scores, pt.tensor({1, 2, 1}))))
  end)

  it("applies a DataHandler's per-batch transform, as its batches() do", function()
    local feats = pt.tensor({{1, 0}, {0, 1}, {1, 0}})
    local labels = pt.tensor({2, 1, 2}, {dtype = "int64"})
    local swap = function(xb, yb) return pt.stack({xb[{{}, 2}], xb[{{}, 1}]}, 2), yb end
    local h = data.DataHandler(data.TensorDataset(feats, labels), {batch = 2, transform = swap, progress = false})
    local correct, total = 0, 0
    for xb, yb in h:batches() do
      local c, n = pt._data_count_correct(identity(xb), yb)
      correct, total = correct + c, total + n
    end
    assert.are.equal(1, correct / total)
    assert.are.equal(1, pt.metrics.accuracy(identity, h))
    assert.are.same({{1, 0}, {0, 2}}, pt.metrics.confusion_matrix(identity, h, 2):tolist())
    -- the bare dataset has no transform; an explicit transform replaces the handler's
    assert.are.equal(0, pt.metrics.accuracy(identity, h.dataset))
    assert.are.same({{0, 1}, {2, 0}}, pt.metrics.confusion_matrix(identity, h.dataset, 2):tolist())
    assert.are.equal(0, pt.metrics.accuracy(identity, h, {transform = function(a, b) return a, b end}))
    assert.are.equal(0, pt.metrics.accuracy(identity, h, {transform = false}))
    assert.are.same({{0, 1}, {2, 0}}, pt.metrics.confusion_matrix(identity, h, 2, {transform = false}):tolist())
  end)
end)

describe("pt.metrics.confusion_matrix", function()
  it("returns int64 {C,C} with rows = true class, columns = predicted", function()
    local cm = pt.metrics.confusion_matrix(fake_model(), ds, 3, {batch = 2})
    assert.are.equal("int64", cm:dtype())
    assert.are.same({{1, 0, 0}, {0, 1, 1}, {0, 1, 0}}, cm:tolist())
  end)

  it("checks labels and num_classes", function()
    assert.matches("num_classes must be a positive integer", err_of(pt.metrics.confusion_matrix, fake_model(), ds, 0))
    assert.matches("label 3 out of range 1..2", err_of(pt.metrics.confusion_matrix, function(i) return pt.zeros(i:size(1), 2) end, ds, 2))
  end)
end)

describe("pt.metrics.log", function()
  it("appends JSON lines", function()
    local p = os.tmpname()
    pt.metrics.log(p, {epoch = 1, accuracy = 0.5})
    pt.metrics.log(p, {epoch = 2, accuracy = 0.75})
    local lines = {}
    for l in io.lines(p) do lines[#lines + 1] = pt._json_decode(l) end
    os.remove(p)
    assert.are.same({{epoch = 1, accuracy = 0.5}, {epoch = 2, accuracy = 0.75}}, lines)
    assert.matches("record must be a table", err_of(pt.metrics.log, p, 3))
  end)

  it("logs NaN and infinities (a diverging run) and one-element tensors as numbers", function()
    local p = os.tmpname()
    pt.metrics.log(p, {loss = 0 / 0, grad_norm = 1 / 0, acc = pt.tensor(0.5), nested = {t = pt.tensor({2})}})
    local f = assert(io.open(p))
    local line = f:read("l")
    f:close()
    assert.are.equal('{"acc":0.5,"grad_norm":Infinity,"loss":NaN,"nested":{"t":2.0}}', line)
    local rec = pt._json_decode(line)
    assert.is_true(rec.loss ~= rec.loss)
    assert.are.equal(math.huge, rec.grad_norm)
    local ok, e = pcall(pt.metrics.log, p, {w = pt.ones(3)})
    assert.is_false(ok)
    assert.matches("log: 'w' is a tensor of 3 elements %(log numbers or one%-element tensors%)$", e)
    os.remove(p)
    -- and a DataHandler's per-epoch log keeps going when the loss is NaN
    local log = os.tmpname()
    local loader = pt.data.DataHandler(pt.data.TensorDataset(pt.randn(8, 2), pt.ones(8)),
      {batch = 4, log = log, progress = false})
    for _ in loader:batches() do loader:report(0 / 0) end
    local n = 0
    for l in io.lines(log) do
      n = n + 1
      assert.matches('"loss":NaN', l, 1, true)
    end
    assert.are.equal(1, n)
    os.remove(log)
  end)
end)

describe("pt.progress over a plain iterator", function()
  it("counts iterations (it/s), or samples when told how many a step holds", function()
    local function run(opts)
      local text = {}
      local stream = {write = function(_, ...) for _, v in ipairs({...}) do text[#text + 1] = v end end,
                      flush = function() end}
      opts.mode, opts.stream, opts.total = "plain", stream, 3
      for _ in pt.progress(opts, ipairs({1, 2, 3})) do end
      return table.concat(text)
    end
    assert.matches(" it/s", run({}))
    assert.is_nil(run({}):find("samples/s", 1, true))
    assert.matches(" samples/s", run({samples = 64}))
  end)
end)

describe("pt.metrics with nn", function()
  it("evaluates an nn model and restores its training mode", function()
    local nn = pt.nn
    local m = nn.Linear(3, 3)
    m:load_state_dict({weight = pt.eye(3), bias = pt.zeros(3)}) -- logits = features
    m:train()
    assert.are.equal(0.5, pt.metrics.accuracy(m, ds))
    assert.is_true(m.training)
    assert.are.same({{1, 0, 0}, {0, 1, 1}, {0, 1, 0}}, pt.metrics.confusion_matrix(m, ds, 3):tolist())
  end)
end)
