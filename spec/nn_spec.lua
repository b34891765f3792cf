local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local ref = dofile("spec/fixtures/mlp_reference.lua")

local F64 = {dtype = "float64"}

local support = require "spec.support"
local flat, assert_close = support.flat, support.assert_close_with(1e-10)

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e)
end

local function assert_err(pattern, f, ...)
  local msg = err_of(f, ...)
  if not msg:find(pattern, 1, true) then
    error(string.format("expected error containing %q, got %q", pattern, msg), 2)
  end
end

local function long(t) return pt.tensor(t, {dtype = "int64"}) end

local function fixture_mlp()
  local m = nn.Sequential(nn.Linear(4, 5, F64), nn.ReLU(), nn.Linear(5, 3, F64))
  m:load_state_dict({
    ["1.weight"] = pt.tensor(ref.w1, F64), ["1.bias"] = pt.tensor(ref.b1, F64),
    ["3.weight"] = pt.tensor(ref.w2, F64), ["3.bias"] = pt.tensor(ref.b2, F64),
  })
  return m
end

describe("nn against PyTorch fixtures (float64)", function()
  it("MLP 4-5-3 cross-entropy loss and gradients match to 1e-10", function()
    local m = fixture_mlp()
    local loss = nn.cross_entropy(m(pt.tensor(ref.x, F64)), long(ref.y))
    loss:backward()
    assert_close(loss:item(), ref.loss)
    assert_close(m[1].weight.grad, ref.grad_w1)
    assert_close(m[1].bias.grad, ref.grad_b1)
    assert_close(m[3].weight.grad, ref.grad_w2)
    assert_close(m[3].bias.grad, ref.grad_b2)
  end)

  it("class weights and label smoothing match", function()
    local m = fixture_mlp()
    local loss = nn.CrossEntropyLoss({weight = pt.tensor(ref.class_weight, F64), label_smoothing = 0.1})(
      m(pt.tensor(ref.x, F64)), long(ref.y))
    loss:backward()
    assert_close(loss:item(), ref.loss_ls)
    assert_close(m[1].weight.grad, ref.grad_w1_ls)
    assert_close(m[3].bias.grad, ref.grad_b2_ls)
  end)

  it("unfused layers give the same values as the fused Sequential", function()
    local m = fixture_mlp()
    local x = pt.tensor(ref.x, F64)
    local h = nn.relu(nn.linear(x, m[1].weight, m[1].bias))
    local loss = nn.cross_entropy(nn.linear(h, m[3].weight, m[3].bias), long(ref.y))
    assert_close(loss:item(), ref.loss)
  end)
end)

describe("gradchecks (float64)", function()
  local function r(...) return pt.randn({...}, F64) end
  before_each(function() pt.manual_seed(11) end)

  it("in-place ops on views of an intermediate (CopySlices)", function()
    gradcheck(function(a, b)
      local h = a * 1
      h:narrow(2, 2, 2):mul_(b) -- h[:, 2:3] *= b, through a strided view
      h:select(1, 1):add_(b:select(1, 1):sum())
      return h:exp()
    end, {r(3, 4), r(3, 2)})
  end)

  it("linear: 2-D, 1-D and 3-D inputs, with and without bias, fused relu", function()
    gradcheck(nn.linear, {r(3, 4), r(2, 4), r(2)})
    gradcheck(nn.linear, {r(4), r(2, 4), r(2)})
    gradcheck(nn.linear, {r(2, 3, 4), r(5, 4), r(5)})
    gradcheck(function(x, w) return nn.linear(x, w) end, {r(3, 4), r(2, 4)})
    gradcheck(function(x, w, b) return pt._nn_linear(x, w, b, "f", "relu") end, {r(5, 4), r(3, 4), r(3)})
  end)

  it("activations", function()
    local x = r(3, 5)
    gradcheck(nn.relu, {x})
    gradcheck(function(v) return nn.leaky_relu(v, 0.2) end, {x})
    gradcheck(nn.gelu, {x})
    gradcheck(function(v) return nn.gelu(v, {approximate = "tanh"}) end, {x})
    gradcheck(nn.tanh, {x})
    gradcheck(nn.sigmoid, {x})
    gradcheck(nn.silu, {x})
  end)

  it("softmax and log_softmax along any dim", function()
    local x = r(2, 3, 4)
    for _, d in ipairs({1, 2, 3, -1}) do
      gradcheck(function(v) return nn.softmax(v, d) end, {x})
      gradcheck(function(v) return nn.log_softmax(v, d) end, {x})
    end
  end)

  it("cross_entropy: reductions, weights, smoothing, ignore_index, 1-D input", function()
    local x, y, w = r(4, 3), long({1, 3, 2, 3}), pt.tensor({0.5, 2, 1}, F64)
    for _, red in ipairs({"mean", "sum", "none"}) do
      gradcheck(function(v) return nn.cross_entropy(v, y, {reduction = red}) end, {x})
      gradcheck(function(v) return nn.cross_entropy(v, y, {reduction = red, weight = w, label_smoothing = 0.2}) end, {x})
    end
    gradcheck(function(v) return nn.cross_entropy(v, y, {ignore_index = 3}) end, {x})
    gradcheck(function(v) return nn.cross_entropy(v, long(2)) end, {r(3)})
  end)

  it("cross_entropy and nll_loss over {N,C,d1,...} inputs, and with class probabilities", function()
    local x, y = r(2, 3, 2, 2), long({{{1, 2}, {3, 3}}, {{2, 1}, {1, 3}}})
    local w = pt.tensor({0.5, 2, 1}, F64)
    for _, red in ipairs({"mean", "sum", "none"}) do
      gradcheck(function(v) return nn.cross_entropy(v, y, {reduction = red, weight = w, ignore_index = 2}) end, {x})
      gradcheck(function(v) return nn.nll_loss(v, y, {reduction = red, weight = w}) end, {x})
    end
    assert.are.same({2, 2, 2}, nn.cross_entropy(x, y, {reduction = "none"}):size())
    local p = nn.softmax(r(4, 3), 2)
    for _, red in ipairs({"mean", "sum", "none"}) do
      gradcheck(function(v, q) return nn.cross_entropy(v, q, {reduction = red, weight = w, label_smoothing = 0.1}) end,
        {r(4, 3), p})
    end
    gradcheck(function(v, q) return nn.cross_entropy(v, q) end, {r(2, 3, 2), nn.softmax(r(2, 3, 2), 2)})
    -- the modules take the same paths
    assert.is_true(pt.equal(nn.CrossEntropyLoss({weight = w})(x, y), nn.cross_entropy(x, y, {weight = w})))
    local x2, q = r(2, 3), nn.softmax(r(2, 3), 2)
    assert.is_true(pt.equal(nn.CrossEntropyLoss({reduction = "sum"})(x2, q),
      nn.cross_entropy(x2, q, {reduction = "sum"})))
    assert.is_true(pt.equal(nn.NLLLoss({reduction = "none"})(x, y), nn.nll_loss(x, y, {reduction = "none"})))
  end)

  it("nll_loss", function()
    local y = long({2, 1, 3})
    gradcheck(function(v) return nn.nll_loss(v, y) end, {r(3, 3)})
    gradcheck(function(v) return nn.nll_loss(v, y, {weight = pt.tensor({1, 2, 3}, F64), reduction = "none"}) end, {r(3, 3)})
  end)

  it("pointwise losses (input and target gradients)", function()
    local a, b = r(3, 4), r(3, 4)
    for _, red in ipairs({"mean", "sum", "none"}) do
      gradcheck(function(u, v) return nn.mse_loss(u, v, {reduction = red}) end, {a, b})
      gradcheck(function(u, v) return nn.l1_loss(u, v, {reduction = red}) end, {a, b})
      gradcheck(function(u, v) return nn.smooth_l1_loss(u, v, {beta = 0.7, reduction = red}) end, {a, b})
      gradcheck(function(u, v) return nn.bce_with_logits(u, v, {reduction = red}) end, {a, pt.rand(3, 4, F64)})
    end
    gradcheck(function(u, v) return nn.bce_with_logits(u, v, {pos_weight = pt.tensor({1, 2, 0.5, 3}, F64)}) end,
      {a, pt.rand(3, 4, F64)})
    local p = pt.rand(3, 4, F64)
    for i = 1, p:numel() do p:_set_flat(i, 0.1 + 0.8 * p:_get_flat(i)) end
    gradcheck(function(u, v) return nn.bce(u, v) end, {p, pt.rand(3, 4, F64)})
  end)

  it("dropout (fixed seed per call)", function()
    gradcheck(function(v) pt.manual_seed(5); return nn.dropout(v, 0.4, true) end, {r(4, 5)})
  end)

  it("layer_norm with and without affine", function()
    gradcheck(function(x, w, b) return nn.layer_norm(x, {4}, w, b) end, {r(3, 4), r(4), r(4)})
    gradcheck(function(x) return nn.layer_norm(x, {2, 3}) end, {r(2, 2, 3)})
  end)

  it("batch_norm in training (2-D and 3-D) and eval", function()
    gradcheck(function(x, w, b) return nn.batch_norm(x, nil, nil, w, b, true) end, {r(5, 3), r(3), r(3)})
    gradcheck(function(x, w, b) return nn.batch_norm(x, nil, nil, w, b, true) end, {r(2, 3, 4), r(3), r(3)})
    local rm, rv = r(3), pt.rand(3, F64)
    gradcheck(function(x, w, b) return nn.batch_norm(x, rm, rv, w, b, false) end, {r(4, 3), r(3), r(3)})
  end)

  it("embedding and flatten", function()
    local idx = long({{1, 3}, {3, 2}})
    gradcheck(function(w) return nn.embedding(idx, w) end, {r(4, 3)})
    gradcheck(function(w) return nn.embedding(idx, w, {padding_idx = 4}) end, {r(4, 3)})
    -- the padding row gets no gradient (as PyTorch), the others do
    local w = r(4, 3)
    w.requires_grad = true
    nn.embedding(idx, w, {padding_idx = 3}):backward(pt.ones(2, 2, 3, F64))
    assert.are.same({{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}}, w.grad:tolist())
    local fl = nn.Flatten()
    gradcheck(function(x) return fl(x) end, {r(2, 3, 2)})
  end)
end)

describe("cross_entropy against PyTorch (float64)", function()
  -- inputs from pt.manual_seed(3); the expected values are torch 1.13's F.cross_entropy on the
  -- same numbers (0-based classes there)
  it("{N,C,d1,d2} inputs with class indices, and {N,C} class probabilities", function()
    pt.manual_seed(3)
    local x = pt.randn({2, 4, 3, 2}, F64)
    local t = long({{{1, 2}, {3, 4}, {2, 2}}, {{4, 4}, {1, 1}, {3, 2}}})
    local w = pt.tensor({1, 2, 0.5, 1.5}, F64)
    local function v(l) return l:item() end
    assert.is_true(math.abs(v(nn.cross_entropy(x, t)) - 1.959082170938) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x, t, {weight = w})) - 2.075127009072) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x, t, {ignore_index = 2})) - 1.798502843218) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x, t, {label_smoothing = 0.1, weight = w})) - 2.019075167628) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x, t, {reduction = "sum"})) - 23.508986051256) < 1e-10)
    local p = nn.softmax(pt.randn({5, 4}, F64), 2)
    local x2 = pt.randn({5, 4}, F64)
    assert.is_true(math.abs(v(nn.cross_entropy(x2, p)) - 1.974061644509) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x2, p, {weight = w})) - 2.387092695539) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x2, p, {label_smoothing = 0.2})) - 1.914550248387) < 1e-11)
    assert.is_true(math.abs(v(nn.cross_entropy(x2, p, {reduction = "sum"})) - 9.870308222546) < 1e-11)
    local function err(...)
      local ok, e = pcall(...)
      assert.is_false(ok)
      return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
    end
    assert.are.equal("cross_entropy: probability target shape {5,3} does not match input shape {5,4}",
      err(nn.cross_entropy, x2, pt.randn({5, 3}, F64)))
    assert.are.equal("cross_entropy: target shape {2,3} does not match input shape {2,4,3,2} (expected "
      .. "{N,d1,...} class indices or {N,C,d1,...} probabilities)", err(nn.cross_entropy, x, long({{1, 1, 1}, {1, 1, 1}})))
  end)
end)

describe("layer values", function()
  it("dropout: identity in eval, zeros with probability p and scales by 1/(1-p) in training", function()
    local d = nn.Dropout(0.25)
    local x = pt.ones(4000)
    d:eval()
    assert.are.equal(x, d(x))
    d:train()
    pt.manual_seed(3)
    local y = d(x):tolist()
    local zeros = 0
    for _, v in ipairs(y) do
      if v == 0 then zeros = zeros + 1 else assert.is_true(math.abs(v - 4 / 3) < 1e-6) end
    end
    assert.is_true(zeros > 850 and zeros < 1150)
    pt.manual_seed(3)
    assert.are.same(y, d(x):tolist())
  end)

  it("batch_norm updates running statistics (unbiased variance) and uses them in eval", function()
    local bn = nn.BatchNorm1d(2, {dtype = "float64"})
    local x = pt.tensor({{1, 10}, {3, 14}}, F64)
    bn(x)
    assert_close(bn.running_mean, {0.2, 1.2})
    assert_close(bn.running_var, {0.9 + 0.1 * 2, 0.9 + 0.1 * 8})
    assert.are.equal(1, bn.num_batches_tracked:item())
    bn:eval()
    local y = bn(pt.tensor({{0.2, 1.2}}, F64))
    assert_close(y, {0, 0}, 1e-12)
  end)

  it("layer_norm normalises each row", function()
    local y = nn.LayerNorm(3, {dtype = "float64"})(pt.tensor({{1, 2, 3}}, F64))
    local s = math.sqrt(2 / 3 + 1e-5)
    assert_close(y, {-1 / s, 0, 1 / s}, 1e-12)
  end)

  it("softmax rows sum to one; log_softmax is its log", function()
    local x = pt.randn(3, 5, F64)
    local p, lp = nn.softmax(x), nn.log_softmax(x)
    for i = 1, 3 do
      local s = 0
      for j = 1, 5 do
        s = s + p:_get_flat((i - 1) * 5 + j)
        assert.is_true(math.abs(math.log(p:_get_flat((i - 1) * 5 + j)) - lp:_get_flat((i - 1) * 5 + j)) < 1e-12)
      end
      assert.is_true(math.abs(s - 1) < 1e-12)
    end
  end)

  it("embedding picks 1-based rows", function()
    local e = nn.Embedding(3, 2)
    local w = e.weight:tolist()
    assert.are.same({{w[3], w[1]}}, e(long({{3, 1}})):tolist())
  end)
end)

describe("initialisation", function()
  it("Linear uses U(-1/sqrt(in), 1/sqrt(in)) and pt.manual_seed makes it reproducible", function()
    pt.manual_seed(42)
    local a = nn.Linear(100, 50)
    pt.manual_seed(42)
    local b = nn.Linear(100, 50)
    assert.are.same(a.weight:tolist(), b.weight:tolist())
    local maxabs = 0
    for _, v in ipairs(flat(a.weight:tolist())) do maxabs = math.max(maxabs, math.abs(v)) end
    for _, v in ipairs(flat(a.bias:tolist())) do maxabs = math.max(maxabs, math.abs(v)) end
    assert.is_true(maxabs <= 0.1 and maxabs > 0.09)
  end)

  it("kaiming and xavier bounds", function()
    local t = pt.empty(64, 32)
    nn.init.kaiming_uniform_(t, {nonlinearity = "relu"})
    local b = math.sqrt(2) * math.sqrt(3 / 32)
    for _, v in ipairs(flat(t:tolist())) do assert.is_true(math.abs(v) <= b) end
    nn.init.xavier_uniform_(t)
    b = math.sqrt(6 / 96)
    for _, v in ipairs(flat(t:tolist())) do assert.is_true(math.abs(v) <= b) end
    nn.init.zeros_(t)
    assert.are.equal(0, t:_get_flat(7))
    nn.init.ones_(t)
    assert.are.equal(1, t:_get_flat(7))
    assert.are.equal(math.sqrt(2), nn.init.calculate_gain("relu"))
    -- on parameters (leaves that require grad), as PyTorch's initialisers, without a graph
    local lin = nn.Linear(3, 2)
    nn.init.zeros_(lin.bias)
    nn.init.constant_(lin.weight, 0.5)
    nn.init.ones_(lin.bias)
    assert.are.same({1, 1}, lin.bias:tolist())
    assert.are.same({0.5, 0.5, 0.5}, lin.weight:tolist()[1])
    assert.is_true(lin.weight.is_leaf and lin.weight.requires_grad)
    assert.is_nil(lin.weight.grad_fn)
  end)

  it("fans of a 1-D tensor raise", function()
    assert_err("fan in and fan out can not be computed for a tensor with fewer than 2 dimensions",
      nn.init.kaiming_uniform_, pt.empty(3))
  end)
end)

describe("Module", function()
  local Net = nn.Module:extend("Net")
  function Net:__init(n)
    self.fc1 = nn.Linear(n, 3)
    self.scale = nn.Parameter(pt.ones(1))
    self.blocks = nn.ModuleList({nn.Linear(3, 3), nn.Tanh()})
    self.head = nn.Sequential(nn.Linear(3, 2))
    self.note = "plain field"
  end
  function Net:forward(x)
    local h = self.fc1(x)
    for _, b in ipairs(self.blocks) do h = b(h) end
    return self.head(h)
  end

  it("registers parameters and children in assignment order with dotted names", function()
    local net = Net(4)
    local names = {}
    for n, p in net:named_parameters() do names[#names + 1] = n end
    assert.are.same({"scale", "fc1.weight", "fc1.bias", "blocks.1.weight", "blocks.1.bias",
      "head.1.weight", "head.1.bias"}, names)
    assert.are.equal(7, #net:parameters())
    assert.are.equal(3, #net:children())
    assert.are.equal("plain field", net.note)
    assert.are.same({2, 2}, net(pt.randn(2, 4)):size())
  end)

  it("shared parameters appear once; reassigning and nil unregister", function()
    local net = Net(3)
    net.tied = net.fc1.weight
    assert.are.equal(7, #net:parameters())
    net.scale = nil
    assert.are.equal(6, #net:parameters())
    net.head = nil
    assert.are.equal(2, #net:children())
    local h = nn.linear(pt.randn(1, 3), net.fc1.weight) -- not a leaf: stays a plain field
    net.cache = h
    assert.are.equal(4, #net:parameters())
  end)

  it("train/eval propagate; apply visits children first; zero_grad zeroes", function()
    local net = Net(4)
    net:eval()
    assert.is_false(net.blocks[1].training)
    net:train()
    assert.is_true(net.head[1].training)
    local seen = {}
    net:apply(function(m) seen[#seen + 1] = getmetatable(m).__name end)
    assert.are.equal("Net", seen[#seen])
    assert.are.equal("Linear", seen[1])
    nn.cross_entropy(net(pt.randn(3, 4)), long({1, 2, 1})):backward()
    assert.is_true(net.fc1.weight.grad ~= nil)
    net:zero_grad()
    assert.are.same(0, math.abs(net.fc1.weight.grad:_get_flat(1)))
    net:zero_grad({set_to_none = true})
    assert.is_nil(net.fc1.weight.grad)
  end)

  it("prints a tree", function()
    local s = tostring(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.1))))
    assert.are.equal([[Sequential(
  (1): Linear(in_features=2, out_features=3, bias=true)
  (2): ReLU()
  (3): Sequential(
    (1): Dropout(p=0.1)
  )
)]], s)
  end)

  it("state_dict is ordered and round-trips through load_state_dict", function()
    local a, b = Net(4), Net(4)
    local keys = {}
    for k in pairs(a:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({"scale", "fc1.weight", "fc1.bias", "blocks.1.weight", "blocks.1.bias",
      "head.1.weight", "head.1.bias"}, keys)
    local r = b:load_state_dict(a:state_dict())
    assert.are.same({}, r.missing_keys)
    local x = pt.randn(2, 4)
    assert.are.same(a(x):tolist(), b(x):tolist())
    local bn = nn.BatchNorm1d(3)
    local bk = {}
    for k in pairs(bn:state_dict()) do bk[#bk + 1] = k end
    assert.are.same({"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}, bk)
  end)

  it("state_dict tables iterate the keys set or removed after they were made", function()
    -- pairs walked only the keys of the moment state_dict() ran: an added key was missed by
    -- pt.save and by load_state_dict's strict check, a removed one came back as nil
    local m = nn.Linear(2, 2)
    local sd = m:state_dict()
    sd.step = pt.tensor({7})
    local keys = {}
    for k in pairs(sd) do keys[#keys + 1] = k end
    assert.are.same({"weight", "bias", "step"}, keys)
    assert_err("unexpected keys: step", m.load_state_dict, m, sd)
    sd.step, sd.bias = nil, nil
    keys = {}
    for k, v in pairs(sd) do keys[#keys + 1] = k; assert.is_not_nil(v) end
    assert.are.same({"weight"}, keys)
  end)

  it("load_state_dict reports shape mismatches, missing and unexpected keys", function()
    local m = nn.Sequential(nn.Linear(2, 3))
    assert_err("load_state_dict: size mismatch for 1.weight: copying a param with shape {3,4} from "
      .. "checkpoint, the shape in current model is {3,2}", m.load_state_dict, m,
      {["1.weight"] = pt.zeros(3, 4), ["1.bias"] = pt.zeros(3)})
    assert_err("missing keys: 1.bias; unexpected keys: extra", m.load_state_dict, m,
      {["1.weight"] = pt.zeros(3, 2), extra = pt.zeros(1)})
    local before = m[1].weight:tolist()
    pcall(m.load_state_dict, m, {["1.weight"] = pt.zeros(3, 2)})
    assert.are.same(before, m[1].weight:tolist()) -- strict failure copies nothing
    local r = m:load_state_dict({["1.weight"] = pt.zeros(3, 2), extra = pt.zeros(1)}, {strict = false})
    assert.are.same({"1.bias"}, r.missing_keys)
    assert.are.same({"extra"}, r.unexpected_keys)
    assert.are.equal(0, m[1].weight:_get_flat(1))
    assert_err("load_state_dict: value for '1.bias' is a string, not a tensor", m.load_state_dict, m,
      {["1.weight"] = pt.zeros(3, 2), ["1.bias"] = "x"})
  end)

  it("ModuleDict keeps insertion order; Module:to converts dtype", function()
    local d = nn.ModuleDict({{"b", nn.Linear(1, 1)}, {"a", nn.ReLU()}})
    assert.are.same({"b", "a"}, d:keys())
    local names = {}
    for k in pairs(d) do names[#names + 1] = k end
    assert.are.same({"b", "a"}, names)
    local m = nn.Linear(2, 2):double()
    assert.are.equal("float64", m.weight:dtype())
    assert.is_true(m.weight.requires_grad)
  end)

  it("Sequential fuses only modules whose forward is their class's own, checked at every call", function()
    local seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    local x = pt.randn(2, 3)
    seq(x) -- the plan is made: Linear+ReLU fused
    local calls = 0
    seq[2].forward = function(_, v) calls = calls + 1; return v * 0 end
    assert.is_true(pt.equal(seq(x), seq[3](pt.zeros(2, 4))))
    assert.are.equal(1, calls)
    seq[2].forward = nil
    local own = nn.ReLU.forward
    nn.ReLU.forward = function(self, v) calls = calls + 10; return own(self, v) end
    local ok, err = pcall(function()
      nn.Sequential(nn.Linear(3, 4), nn.ReLU())(x)
      nn.Sequential(nn.ReLU(), nn.MaxPool2d(2))(pt.randn(1, 1, 4, 4))
    end)
    nn.ReLU.forward = own
    assert(ok, err)
    assert.are.equal(21, calls)
  end)

  it("Module:to keeps its parameters' identity: optimizers and tied weights follow", function()
    local m = nn.Linear(2, 1)
    local w = m.weight
    local opt = pt.optim.SGD(m:parameters(), {lr = 0.1})
    m(pt.ones(1, 2)):sum():backward()
    m:double()
    assert.is_true(rawequal(w, m.weight))
    assert.are.equal("float64", w:dtype())
    assert.are.equal("float64", w.grad:dtype()) -- the gradient is converted too
    local before = w:clone()
    opt:zero_grad()
    m(pt.ones(3, 2, {dtype = "float64"})):sum():backward()
    opt:step()
    assert.is_false(pt.equal(before, w)) -- the optimizer made before :double() steps it
    local enc, dec = nn.Linear(3, 3), nn.Linear(3, 3)
    dec.weight = enc.weight
    local s = nn.Sequential(enc, dec):double():float():double()
    assert.is_true(rawequal(enc.weight, dec.weight))
    assert.are.equal(3, #s:parameters())
    local bn = nn.BatchNorm1d(3):double()
    assert.are.equal("float64", bn.running_var:dtype())
    assert.are.equal("int64", bn.num_batches_tracked:dtype()) -- integer buffers stay
  end)

  it("documents every public function and class", function()
    for _, name in ipairs({"Linear", "Embedding", "Dropout", "LayerNorm", "BatchNorm1d", "Flatten",
      "Identity", "ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "MSELoss",
      "L1Loss", "SmoothL1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
      "Sequential", "ModuleList", "ModuleDict", "cross_entropy", "mse_loss", "linear", "Parameter"}) do
      assert.is_string(pt._docs[nn[name]], name)
    end
    for _, f in pairs(nn.init) do
      if type(f) == "function" and f ~= nn.init._calculate_fan_in_and_fan_out then
        assert.is_string(pt._docs[f])
      end
    end
    assert.are.equal(nn.MSELoss, nn.MSE)
  end)
end)

describe("error messages", function()
  it("point at the user's line, not at partrain's modules (README's example)", function()
    local function line_of(f)
      local ok, e = pcall(f)
      assert.is_false(ok)
      return tostring(e)
    end
    local here = debug.getinfo(1, "S").short_src
    local e = line_of(function() local y = nn.Linear(784, 10)(pt.zeros(64, 783)); return y end)
    assert.are.equal(here .. ":" .. (debug.getinfo(1, "l").currentline - 1)
      .. ": Linear:forward: input has 783 features, expected 784 (input shape {64,783})", e)
    e = line_of(function() local y = nn.Conv2d(3, 4, 3)(pt.ones(1, 2, 5, 5)); return y end)
    assert.are.equal(here .. ":" .. (debug.getinfo(1, "l").currentline - 1)
      .. ": conv2d: input has 2 channels, expected 3 (input shape {1,2,5,5}, weight shape {4,3,3,3})", e)
    e = line_of(function() local l = nn.cross_entropy(pt.ones(2, 3), long({1, 5})); return l end)
    assert.are.equal(here .. ":" .. (debug.getinfo(1, "l").currentline - 1)
      .. ": cross_entropy: target class 5 out of range for 3 classes", e)
  end)

  it("Linear and class-index losses", function()
    assert_err("Linear:forward: input has 783 features, expected 784 (input shape {64,783})",
      nn.Linear(784, 10), pt.zeros(64, 783))
    local x = pt.zeros(2, 10)
    assert_err("cross_entropy: target class 11 out of range for 10 classes", nn.cross_entropy, x, long({1, 11}))
    assert_err("cross_entropy: target class 0 out of range for 10 classes (class indices are 1-based)",
      nn.cross_entropy, x, long({0, 1}))
    assert_err("cross_entropy: target shape {3} does not match input shape {2,10}", nn.cross_entropy, x,
      long({1, 2, 3}))
    assert_err("cross_entropy: target 1.5 is not a class index", nn.cross_entropy, x, pt.tensor({1.5, 1}))
    assert_err("cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'", nn.cross_entropy, x,
      long({1, 2}), {reduction = "avg"})
    assert_err("cross_entropy: label_smoothing must be between 0 and 1, got 2", nn.cross_entropy, x,
      long({1, 2}), {label_smoothing = 2})
    assert_err("cross_entropy: weight must have shape {10} (one per class), got {3}", nn.cross_entropy, x,
      long({1, 2}), {weight = pt.ones(3)})
    assert_err("nll_loss: target shape {2} does not match input shape {2,3,4} (expected {N,d1,...} class indices)",
      nn.nll_loss, pt.zeros(2, 3, 4), long({1, 2}))
    local p = pt.full({2, 10}, 0.1)
    assert_err("cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'", nn.cross_entropy, x, p,
      {reduction = "avg"})
    assert_err("cross_entropy: label_smoothing must be between 0 and 1, got 2", nn.cross_entropy, x, p,
      {label_smoothing = 2})
    assert_err("cross_entropy: weight must have shape {10} (one per class), got {3}", nn.cross_entropy, x, p,
      {weight = pt.ones(3)})
    assert_err("linear: input dtype float64 does not match weight dtype float32", nn.linear,
      pt.zeros(2, 3, F64), pt.zeros(4, 3))
  end)

  it("pointwise losses, dropout, norms, embedding", function()
    assert_err("mse_loss: input shape {3} and target shape {4} differ", nn.mse_loss, pt.zeros(3), pt.zeros(4))
    -- checked before the target is converted (a reference to it leaked), in the public name
    assert_err("mse_loss: reduction must be 'mean', 'sum' or 'none', got table", nn.mse_loss, pt.zeros(3),
      pt.zeros(3), {reduction = {}})
    assert_err("l1_loss: reduction must be 'mean', 'sum' or 'none', got boolean", nn.l1_loss, pt.zeros(3), 1.5,
      {reduction = true})
    assert_err("nll_loss: reduction must be 'mean', 'sum' or 'none', got number", nn.nll_loss, pt.zeros(2, 3),
      pt.tensor({1, 2}), {reduction = 3})
    assert_err("binary_cross_entropy: input values must be probabilities in [0, 1], got 2", nn.bce,
      pt.tensor({2}), pt.tensor({1}))
    assert_err("smooth_l1_loss: beta must be non-negative, got -1", nn.smooth_l1_loss, pt.zeros(2),
      pt.zeros(2), {beta = -1})
    assert_err("dropout: probability has to be between 0 and 1, but got 1.5", nn.dropout, pt.zeros(2), 1.5)
    assert_err("Dropout: probability has to be between 0 and 1, but got 2", nn.Dropout, 2)
    assert_err("layer_norm: input shape {2,5} does not end with normalized shape {4}", nn.LayerNorm(4), pt.zeros(2, 5))
    assert_err("batch_norm: expected more than 1 value per channel when training, got input shape {1,4}",
      nn.BatchNorm1d(4), pt.zeros(1, 4))
    assert_err("batch_norm: expected input {N,C} or {N,C,L}, got shape {4}", nn.BatchNorm1d(4), pt.zeros(4))
    assert_err("embedding: index 11 out of range for 10 embeddings", nn.Embedding(10, 2), long({11}))
    assert_err("embedding: indices must be integers, got dtype float32", nn.Embedding(10, 2), pt.tensor({1}))
    assert_err("Flatten:forward: shape", function() return pt._nn_view(pt.zeros(2, 3), {4}, "Flatten:forward") end)
    assert_err("gelu: approximate must be 'none' or 'tanh', got 'fast'", nn.gelu, pt.zeros(1), {approximate = "fast"})
  end)

  it("module construction and use", function()
    local M = nn.Module:extend("Empty")
    assert_err("Empty:forward is not implemented", function() return M()(pt.zeros(1)) end)
    assert_err("Sequential: argument 2 is not a Module (got number)", nn.Sequential, nn.ReLU(), 3)
    assert_err("Module:extend: expected a class name (string), got nil", nn.Module.extend, nn.Module)
    assert_err("Linear: out_features must be a non-negative integer, got nil", nn.Linear, 3)
    assert_err("ModuleList:forward: a ModuleList has no forward", function() return nn.ModuleList()(1) end)
    -- ModuleList:extend appends a list; with a name it subclasses, as every class's extend does
    local MyList = nn.ModuleList:extend("MyList")
    local ml = MyList({nn.Linear(2, 2)})
    assert.are.equal(1, #ml)
    assert.is_truthy(tostring(ml):find("^MyList%("))
    ml:extend({nn.ReLU()}):extend(nn.ModuleList({nn.Tanh()}))
    assert.are.equal(3, #ml)
    assert.are.equal(3, #nn.ModuleList():extend(ml))
    assert_err("ModuleList:extend: expected a list of modules (or a class name to subclass), got a Linear",
      ml.extend, ml, nn.Linear(2, 2))
    assert_err("ModuleList:extend: expected a list of modules (or a class name to subclass), got number", ml.extend, ml, 5)
    assert_err("ModuleList:extend: call it on a list (nn.ModuleList({...}):extend(t)); nn.ModuleList:extend(\"Name\") "
      .. "makes a subclass", nn.ModuleList.extend, nn.ModuleList, {nn.ReLU()})
    assert_err("Module:extend: call it on a class (nn.Linear:extend(\"X\")), not on a module", nn.Linear(2, 2).extend,
      nn.Linear(2, 2), "X")
    local m = nn.Linear(2, 2)
    assert_err("Linear: cannot assign a tensor without requires_grad to parameter 'weight'", function()
      m.weight = pt.zeros(2, 2)
    end)
    assert_err("add_module: 'x' is not a Module (got number)", m.add_module, m, "x", 1)
    assert_err("MSELoss: reduction must be 'mean', 'sum' or 'none', got 'avg'", nn.MSELoss, {reduction = "avg"})
  end)
end)

describe("saved tensors modified in place", function()
  local function errmsg(f)
    local ok, err = pcall(f)
    assert.is_false(ok)
    return err
  end

  it("are caught through another view of the same storage", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local h = x * 1
    local y = h * h
    pt.no_grad(function() h:narrow(1, 1, 1):add_(1) end) -- a view: the counter is the storage's
    assert.matches("MulBackward: one of the variables needed for gradient computation has been "
                   .. "modified by an inplace operation", errmsg(function() y:sum():backward() end), 1, true)
  end)

  it("carry in-place ops on a view into its base's gradient (CopySlices)", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local h = x * 1
    h:narrow(1, 1, 1):mul_(2)
    h:sum():backward()
    assert.are.same({2, 1}, x.grad:tolist())
    -- in place on the tensor itself, several times over
    local x2 = pt.tensor({1, 2}, {requires_grad = true})
    local h2 = x2 * 1
    h2:mul_(2)
    h2:add_(1)
    h2:sum():backward()
    assert.are.same({2, 2}, x2.grad:tolist())
  end)

  it("follow PyTorch at the edges: ReLU at NaN, backward(nil, opts), a leaf turned off", function()
    -- relu keeps NaN and passes its gradient (torch's threshold: x <= 0 -> 0), fused or not
    local x = pt.tensor({0 / 0, -1, 2, 0}, {requires_grad = true})
    local y = nn.relu(x)
    assert.is_true(y[1] ~= y[1])
    y:sum():backward()
    assert.are.same({1, 0, 1, 0}, x.grad:tolist())
    local x2 = pt.tensor({0 / 0, -1, 2, 0}, {requires_grad = true})
    x2:relu():sum():backward()
    assert.are.same({1, 0, 1, 0}, x2.grad:tolist())
    local z = pt.tensor({{{{0 / 0, 1}, {2, 3}}}}, {requires_grad = true})
    local p = pt.max_pool2d(z, 2, {relu = true})
    assert.is_true(p:item() ~= p:item())
    p:sum():backward()
    assert.are.same({{{{1, 0}, {0, 0}}}}, z.grad:tolist())
    -- backward(nil, {retain_graph = true}) keeps the graph; a misspelled option is an error
    local a = pt.tensor({1, 2}, {requires_grad = true})
    local s = (a * a):sum()
    s:backward(nil, {retain_graph = true})
    s:backward()
    assert.are.same({4, 8}, a.grad:tolist())
    assert.has_error(function() (a * 2):sum():backward(nil, {retain_grahp = true}) end,
      "backward: unknown option 'retain_grahp' (options: retain_graph, create_graph, inputs)")
    -- a leaf whose requires_grad was turned off after the forward gets no gradient
    local b = pt.tensor({1, 2}, {dtype = "float64", requires_grad = true})
    local c = pt.tensor({3}, {dtype = "float64", requires_grad = true})
    local out = (b * 3):sum() + c
    b:requires_grad_(false)
    out:backward()
    assert.is_nil(b.grad)
    assert.are.same({1}, c.grad:tolist())
  end)

  it("free a graph as long as a training run without running out of stack", function()
    -- a loss summed over many steps without item(): one chain of 300k nodes, freed at once
    local a = pt.tensor({0.5}, {requires_grad = true})
    local c = a
    for _ = 1, 300000 do c = c + 1e-6 end
    c = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    local b = pt.tensor({1.0}, {requires_grad = true})
    local d = b
    for _ = 1, 300000 do d = d * 1 end
    d:backward()
    assert.are.same({1}, b.grad:tolist())
  end)

  it("resolve long chains of views, before and after an in-place op on them", function()
    local x = pt.tensor({1, 2, 3, 4, 5, 6}, {dtype = "float64", requires_grad = true})
    local rest, toks = x * 1, {}
    for i = 1, 5 do -- consume one element at a time, as a tokenizer loop
      toks[i] = rest:select(1, 1)
      rest = rest:narrow(1, 2, rest:size(1) - 1)
    end
    rest:mul_(10) -- in place on the innermost view: its history and its base's change
    local loss = rest:sum()
    for i = 1, 5 do loss = loss + toks[i] * i end
    loss:backward()
    assert.are.same({1, 2, 3, 4, 5, 10}, x.grad:tolist())
    local v = pt.tensor({1, 2}, {dtype = "float64", requires_grad = true})
    local w = v * 1
    for _ = 1, 20000 do w = w:view(2) end
    w:mul_(3)
    w:sum():backward()
    assert.are.same({3, 3}, v.grad:tolist())
  end)

  it("give a view used after its base changed in place the base's new history (as PyTorch)", function()
    -- values from torch 1.13: the view's grad_fn is regenerated over the base's (AsStrided)
    local function A() return pt.tensor({1, 2, 3, 4}, {dtype = "float64", requires_grad = true}) end
    local a = A()
    local base = a * 1
    local v = base:narrow(1, 2, 2)
    base:mul_(3)
    ;(v * 1):sum():backward()
    assert.are.same({0, 3, 3, 0}, a.grad:tolist())
    a = A() -- a view of a view, the middle one changed
    base = a * 1
    v = base:narrow(1, 1, 3)
    local v2 = v:narrow(1, 2, 2)
    v:mul_(2)
    ;(v2 * 5):sum():backward()
    assert.are.same({0, 10, 10, 0}, a.grad:tolist())
    a = A() -- zero strides: the expanded copies' gradients add up
    base = a * 1
    local e = base:view(4, 1):expand(4, 3)
    base:mul_(2)
    e:sum():backward()
    assert.are.same({6, 6, 6, 6}, a.grad:tolist())
  end)

  it("read back the slices of an output buffer written step by step (an RNN's outputs)", function()
    -- each out:select(1, t) after the copies is a view regenerated over out's history; values
    -- from torch 1.13 (the same loop)
    local x = pt.tensor({{1, 2}, {3, 4}, {5, 6}}, {dtype = "float64", requires_grad = true})
    local out = pt.zeros(3, 2, {dtype = "float64"})
    local h = pt.zeros(2, {dtype = "float64"})
    for t = 1, 3 do
      h = pt.tanh(x[t] + h * 0.5)
      out:select(1, t):copy_(h)
    end
    local loss = 0
    for t = 1, 3 do loss = loss + (out:select(1, t) * t):sum() end
    loss:backward()
    local want = {{0.421914230342, 0.070686969281}, {0.009238129740, 0.001023184865},
                  {0.000200877610, 0.000027130770}}
    local got = x.grad:tolist()
    for i = 1, 3 do
      for j = 1, 2 do assert.is_true(math.abs(got[i][j] - want[i][j]) < 1e-11) end
    end
  end)

  it("retain_grad whenever it is called before the backward, and through in-place ops", function()
    local a = pt.tensor({1, 2, 3, 4}, {dtype = "float64", requires_grad = true})
    local h = a * 2
    local out = (h * h):sum()
    h:retain_grad() -- after h was used: torch gives it its gradient too
    out:backward()
    assert.are.same({4, 8, 12, 16}, h.grad:tolist())
    a = pt.tensor({1, 2, 3, 4}, {dtype = "float64", requires_grad = true})
    h = a * 2
    h:retain_grad()
    h:mul_(3) -- the gradient of its last version (torch)
    ;(h * 1):sum():backward()
    assert.are.same({1, 1, 1, 1}, h.grad:tolist())
    assert.are.same({6, 6, 6, 6}, a.grad:tolist())
  end)

  it("free the graphs of in-place ops that reach back to their own tensor without a backward", function()
    -- t:mul_(t:exp()) and an in-place op on a view made reference cycles (the tensor's new
    -- history held the tensor, or the base's held the view, which holds the base): every 4 MB
    -- tensor of these loops stayed until the process ended (1.5 GB and more here)
    local function rss_mb()
      return tonumber(io.open("/proc/self/status"):read("a"):match("VmRSS:%s*(%d+)")) / 1024
    end
    local a = pt.randn(1024, 1024):requires_grad_()
    collectgarbage()
    local before = rss_mb()
    for _ = 1, 150 do
      local t = a * 2
      t:mul_(t:exp())
      local b = a * 2
      b:narrow(1, 1, 10):mul_(3)
      local c = a * 2
      local cv = c:narrow(1, 1, 512)
      cv:add_(cv * 2)
    end
    collectgarbage()
    collectgarbage()
    assert.is_true(rss_mb() - before < 400, string.format("RSS grew by %.0f MB", rss_mb() - before))
  end)

  it("give the right gradient when an in-place op's argument is another view of its output", function()
    local function grad(f)
      local a = pt.tensor({{1, 2}, {3, 4}}, {dtype = "float64", requires_grad = true})
      local c = a * 1
      f(c)
      c:sum():backward()
      return a.grad:reshape(-1):tolist()
    end
    -- as the out-of-place c * v with v a view of c before the op
    assert.are.same({2, 4, 6, 8}, grad(function(c) c:mul_(c:view(2, 2)) end))
    assert.are.same({0, 0, 0, 0}, grad(function(c) c:div_(c:view(2, 2)) end))
    assert.are.same({2, 2, 2, 2}, grad(function(c) c:add_(c:view(2, 2)) end))
    assert.are.same({2, 6, 4, 8}, grad(function(c) c:mul_(c:t()) end))
    assert.are.same({2, 4, 6, 8}, grad(function(c) c:t():mul_(c:t()) end))
    assert.are.same({3, 4, 2, 3}, grad(function(c) c[1]:mul_(c[2]) end)) -- rows: no overlap
  end)

  it("cast a backward gradient of another dtype to the output's, and read any layout", function()
    local a = pt.tensor({{1, 2}, {3, 4}}, {requires_grad = true})
    a:mm(pt.eye(2)):backward(pt.ones(2, 2, {dtype = "float64"}))
    assert.are.same({{1, 1}, {1, 1}}, a.grad:tolist())
    local b = pt.tensor({{1, 2}, {3, 4}}, {dtype = "float64", requires_grad = true})
    pt.max_pool2d(b:view(1, 1, 2, 2), 2):backward(pt.ones(1, 1, 1, 1))
    assert.are.same({{0, 0}, {0, 1}}, b.grad:tolist())
    local c = pt.tensor({{1, 2}, {3, 4}}, {requires_grad = true})
    c:mm(pt.eye(2)):backward(pt.tensor({{1, 2}}):expand(2, 2)) -- zero strides
    assert.are.same({{1, 2}, {1, 2}}, c.grad:tolist())
  end)

  it("include the outputs of exp, tanh and sigmoid, whose backward reads them (as PyTorch)", function()
    for _, name in ipairs({"exp", "tanh", "sigmoid"}) do
      local x = pt.tensor({0.5, -1}, {dtype = "float64", requires_grad = true})
      local y = x[name](x)
      y:mul_(2)
      local ok, err = pcall(function() y:sum():backward() end)
      assert.is_false(ok)
      assert.matches("one of the variables needed for gradient computation has been modified by an inplace operation", err)
      -- untouched, the gradient is the derivative from the output
      local x2 = pt.tensor({0.5, -1}, {dtype = "float64", requires_grad = true})
      local y2 = x2[name](x2)
      y2:sum():backward()
      local v = y2:tolist()
      local want = {}
      for i = 1, 2 do
        want[i] = name == "exp" and v[i] or (name == "tanh" and 1 - v[i] * v[i] or v[i] * (1 - v[i]))
      end
      assert.are.same(want, x2.grad:tolist())
    end
  end)

  it("are caught in fused layers (a weight changed between forward and backward)", function()
    local lin = nn.Linear(3, 2)
    local out = lin(pt.ones(4, 3))
    pt.no_grad(function() lin.weight:mul_(2) end)
    assert.matches("LinearBackward: one of the variables needed for gradient computation has been "
                   .. "modified by an inplace operation (saved tensor 2 of shape {2,3}",
                   errmsg(function() out:sum():backward() end), 1, true)
  end)

  it("are caught after an optimizer step, as in PyTorch", function()
    local lin = nn.Linear(3, 2)
    local opt = pt.optim.SGD(lin:parameters(), {lr = 0.1})
    local loss = lin(pt.ones(4, 3):requires_grad_()):sum()
    loss:backward({retain_graph = true})
    opt:step()
    assert.matches("LinearBackward: one of the variables", errmsg(function() loss:backward() end), 1, true)
  end)

  it("do not stop a backward when an unrelated tensor changed", function()
    local lin = nn.Linear(3, 2)
    local x = pt.ones(4, 3)
    local out = lin(x:clone())
    x:add_(1) -- not the saved copy
    out:sum():backward()
    assert.are.same({2}, lin.bias.grad:size())
  end)

  -- the graph follows what each op was computed from, as PyTorch: edges are taken when an op is
  -- recorded, and a view used after its base changed in place sees the base's new history
  local function grad_of(f)
    local x = pt.tensor({1, 2}, {requires_grad = true})
    f(x)
    return x.grad:tolist()
  end

  it("keep an op's input history when the input changes in place afterwards", function()
    assert.are.same({1, 1}, grad_of(function(x)
      local h = x * 1
      local z = h + 1 -- computed before the change: dz/dx = 1
      h:mul_(2)
      z:sum():backward()
    end))
    assert.are.same({1, 0}, grad_of(function(x)
      local h = x * 1
      local z = h:narrow(1, 1, 1) + 1
      h:mul_(3)
      z:sum():backward()
    end))
  end)

  it("give a view used after its base changed in place the base's new history", function()
    assert.are.same({3, 0}, grad_of(function(x)
      local h = x * 1
      local v = h:narrow(1, 1, 1)
      h:mul_(3)
      v:sum():backward()
    end))
    assert.are.same({3, 0}, grad_of(function(x)
      local h = x * 1
      local v = h:narrow(1, 1, 1)
      h:mul_(3)
      v:backward(pt.ones(1)) -- the view itself as the root
    end))
    assert.are.same({6, 0}, grad_of(function(x)
      local h = x * 1
      local v = h:view(2):narrow(1, 1, 1) -- a view of a view
      h:mul_(2)
      h:mul_(3)
      v:sum():backward()
    end))
  end)

  it("take a view of the tensor changed in place as the operand's old value", function()
    -- h += h[1]: h[1] = 2 x1, h[2] = x2 + x1
    assert.are.same({3, 1}, grad_of(function(x)
      local h = x * 1
      h:add_(h:narrow(1, 1, 1))
      h:sum():backward()
    end))
  end)

  it("fill a buffer that does not require grad from tensors that do, through views", function()
    assert.are.same({2, 2}, grad_of(function(x)
      local buf = pt.zeros(3)
      buf:narrow(1, 1, 2):copy_(x * 2)
      buf:sum():backward()
    end))
  end)

  it("cut the gradient of elements overwritten with constants, and square through a view", function()
    assert.are.same({0, 1}, grad_of(function(x)
      local h = x * 1
      h:narrow(1, 1, 1):fill_(0)
      h:sum():backward()
    end))
    assert.are.same({1, 4}, grad_of(function(x)
      local h = x * 1
      local v = h:narrow(1, 2, 1)
      v:mul_(v) -- h[2] = x2^2
      h:sum():backward()
    end))
  end)

  it("give a tensor overwritten with constants zero gradients for its old history, as PyTorch", function()
    for _, overwrite in ipairs {function(h) h:fill_(7) end, function(h) h:copy_(pt.ones(2)) end,
                                function(h) h:zero_() end} do
      assert.are.same({0, 0}, grad_of(function(x)
        local h = x * 1
        overwrite(h)
        assert.are.equal(true, h.requires_grad)
        h:sum():backward()
      end))
    end
  end)

  it("refuse in-place ops on a view of a leaf that requires grad, as PyTorch", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    assert.matches("mul_: a view of a leaf tensor that requires grad is used in an in-place operation",
                   errmsg(function() x:narrow(1, 1, 1):mul_(2) end), 1, true)
  end)
end)

describe("Module member names", function()
  local pt = require "partrain"
  local support = require "spec.support"
  it("refuses what a dotted path could not reach, as torch", function()
    local m = pt.nn.Module()
    support.assert_error('add_module: module name can\'t contain ".", got: a.b',
      function() m:add_module("a.b", pt.nn.Identity()) end)
    support.assert_error('add_module: module name can\'t be empty string ""', -- register_module is its alias
      function() m:register_module("", pt.nn.Identity()) end)
    support.assert_error("add_module: module name should be a string, got number",
      function() m:add_module(1, pt.nn.Identity()) end)
    support.assert_error('register_buffer: buffer name can\'t contain ".", got: x.y',
      function() m:register_buffer("x.y", pt.zeros(1)) end)
    support.assert_error('register_parameter: parameter name can\'t be empty string ""',
      function() m:register_parameter("", pt.zeros(1, {requires_grad = true})) end)
    m:add_module("ok", pt.nn.Identity())
    assert.is_true(m:get_submodule("ok") == m.ok)
  end)
end)

describe("loss options", function()
  local pt = require "partrain"
  local support = require "spec.support"
  it("are checked by name in the functions and the loss classes", function()
    local x = pt.randn(2, 3)
    support.assert_error("mse_loss: unknown option 'reductio' (options: reduction)",
      function() pt.nn.mse_loss(x, x, {reductio = "sum"}) end)
    support.assert_error("cross_entropy: unknown option 'wieght' (options: weight, label_smoothing, ignore_index, reduction)",
      function() pt.nn.cross_entropy(x, pt.tensor({1, 2}, {dtype = "int64"}), {wieght = pt.ones(3)}) end)
    support.assert_error("smooth_l1_loss: unknown option 'delta' (options: beta, reduction)",
      function() pt.nn.smooth_l1_loss(x, x, {delta = 1}) end)
    support.assert_error("NLLLoss: unknown option 'weights' (options: weight, ignore_index, reduction)",
      function() pt.nn.NLLLoss({weights = 1}) end)
    support.assert_error("binary_cross_entropy_with_logits: unknown option 'posweight' (options: weight, pos_weight, "
      .. "reduction)", function() pt.nn.bce_with_logits(x, x, {posweight = 1}) end)
    support.assert_error("l1_loss: expected an options table, got string", function() pt.nn.l1_loss(x, x, "sum") end)
  end)

  it("BCE takes torch's rescaling weight (broadcast to the input), with and without logits", function()
    local p = pt.tensor({{0.2, 0.7}, {0.9, 0.4}}, {dtype = "float64", requires_grad = true})
    local y = pt.tensor({{0, 1}, {1, 0}}, {dtype = "float64"})
    local w = pt.tensor({2, 0.5}, {dtype = "float64"})
    local l = pt.nn.binary_cross_entropy(p, y, {weight = w})
    l:backward()
    -- torch 1.13: F.binary_cross_entropy(p, y, weight=w) and its gradient
    assert.is_true(math.abs(l:item() - 0.2726896044491084) < 1e-12)
    local g = p.grad:reshape(-1):tolist()
    local tg = {0.6249999999999999, -0.17857142857142858, -0.5555555555555556, 0.20833333333333334}
    for i = 1, 4 do assert.is_true(math.abs(g[i] - tg[i]) < 1e-12) end
    local z = pt.tensor({{0.3, -1.2}, {2.0, 0.1}}, {dtype = "float64", requires_grad = true})
    local loss = pt.nn.BCEWithLogitsLoss({weight = w, pos_weight = pt.tensor({3, 1}, {dtype = "float64"}),
      reduction = "sum"})
    local l2 = loss(z, y)
    l2:backward()
    -- torch 1.13: F.binary_cross_entropy_with_logits(z, y, weight=w, pos_weight=[3, 1], reduction='sum')
    assert.is_true(math.abs(l2:item() - 3.574118118900691) < 1e-12)
    local zg = z.grad:reshape(-1):tolist()
    local tz = {1.148885033623318, -0.3842623917495088, -0.7152175321327059, 0.26248959373947}
    for i = 1, 4 do assert.is_true(math.abs(zg[i] - tz[i]) < 1e-12) end
    local none = pt.nn.BCELoss({weight = w, reduction = "none"})(p:detach(), y):reshape(-1):tolist()
    local tn = {0.4462871026284194, 0.17833747196936622, 0.21072103131565256, 0.25541281188299536}
    for i = 1, 4 do assert.is_true(math.abs(none[i] - tn[i]) < 1e-12) end
    support.assert_error("binary_cross_entropy: weight of shape {3} does not broadcast to the input's shape {2,2}",
      function() pt.nn.binary_cross_entropy(p, y, {weight = pt.ones(3, {dtype = "float64"})}) end)
  end)
end)

describe("layer, clip_grad_norm and save options", function()
  local pt = require "partrain"
  local support = require "spec.support"
  it("are checked by name (a misspelled one is an error, never ignored)", function()
    support.assert_error("Linear: unknown option 'bais' (options: bias, dtype)", function() pt.nn.Linear(3, 2, {bais = false}) end)
    support.assert_error("Embedding: unknown option 'padding' (options: padding_idx, max_norm, norm_type, dtype)",
      function() pt.nn.Embedding(3, 4, {padding = 1}) end)
    support.assert_error("LayerNorm: unknown option 'elementwise' (options: eps, elementwise_affine, bias, dtype)",
      function() pt.nn.LayerNorm(3, {elementwise = false}) end)
    support.assert_error("BatchNorm2d: unknown option 'momentun' (options: eps, momentum, affine, track_running_stats, "
      .. "dtype)", function() pt.nn.BatchNorm2d(3, {momentun = 0.1}) end)
    support.assert_error("clip_grad_norm: unknown option 'norm' (options: norm_type, error_if_nonfinite, foreach)",
      function() pt.optim.clip_grad_norm(pt.nn.Linear(2, 2):parameters(), 1, {norm = 2}) end)
    assert.matches("save: unknown option 'metaa' %(options: dtype, index_base, loader, meta, optimizer, rng%)",
      support.errmsg(function() pt.save(os.tmpname(), {a = pt.ones(1)}, {metaa = {}}) end))
    -- the right ones still work
    assert.is_nil(pt.nn.Linear(3, 2, {bias = false}).bias)
    assert.are.equal(false, pt.nn.LayerNorm(3, {elementwise_affine = false}).elementwise_affine)
  end)
end)
