-- nn_more.lua (MultiMarginLoss, MultiLabelMarginLoss, Dropout1d/3d, gumbel_softmax, pdist, the
-- upsampling layers, LazyLinear), the Module methods requires_grad_, get_submodule,
-- get_parameter, get_buffer, register_module, type, cpu, half, bfloat16 (nn.lua), and
-- pt.optim.swa_utils (optim_swa.lua).
--
-- Reference values were computed once with /usr/bin/python3 and torch 1.13.0a0 (the scripts are
-- not run at test time); the class indices of the torch scripts are 0-based (target 3 there is
-- 4 here) and torch's -1 list terminator of multilabel_margin_loss is 0 here:
--[==[
import torch, torch.nn.functional as F, torch.nn as nn
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
d = torch.float64
X = torch.tensor([[0.1, 0.2, 0.4, 0.8], [0.3, -0.5, 1.2, 0.0], [-1.1, 0.7, 0.05, 0.6]], dtype=d)
Y = torch.tensor([3, 0, 1]); W = torch.tensor([0.5, 2.0, 1.5, 0.25], dtype=d)
for p in (1, 2):
  for margin in (1.0, 0.5):
    for w in (None, W):
      for red in ('none', 'mean', 'sum'):
        print(F.multi_margin_loss(X, Y, p=p, margin=margin, weight=w, reduction=red).tolist())
F.multi_margin_loss(X[1], torch.tensor(2), reduction='none')            # and with torch.tensor([2])
x = X.clone().requires_grad_(); F.multi_margin_loss(x, Y, p=2, margin=0.7, weight=W).backward(); x.grad
T = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [0, 0, 2, -1]])
F.multilabel_margin_loss(X, T, reduction=...)                           # none, mean, sum; and its gradient
F.multilabel_margin_loss(X[0], torch.tensor([2, 1, -1, 0]), reduction='none')
F.multilabel_margin_loss(X, torch.tensor([[-1, 0, 1, 2], [0, 1, 2, 3], [3, -1, 2, 2]]), reduction='none')
P = torch.tensor([[0.5, -1.2, 2.0], [1.5, 0.25, -0.75], [0.5, -1.2, 2.0], [0.0, 3.0, -0.2]], dtype=d)
F.pdist(P, p) for p in (2, 1, 0, 3, 0.5, inf); x = P.clone().requires_grad_(); F.pdist(x).sum().backward()
I = torch.arange(1., 13., dtype=d).reshape(1, 2, 2, 3)
nn.UpsamplingBilinear2d(scale_factor=2)(I); nn.UpsamplingBilinear2d(size=(3, 4))(I)
nn.UpsamplingNearest2d(size=(3, 5))(I); nn.UpsamplingNearest2d(scale_factor=(1.5, 2))(I)
a = nn.Parameter(torch.zeros(2)); b = nn.Parameter(torch.zeros(2))
o = torch.optim.SGD([{'params': [a], 'lr': 0.1}, {'params': [b], 'lr': 0.5}], lr=0.1)
s = SWALR(o, swa_lr=[0.05, 0.01], anneal_epochs=3, anneal_strategy='cos')   # lrs after 0..5 steps
o = torch.optim.SGD([a], lr=0.1); s = SWALR(o, swa_lr=0.02, anneal_epochs=0, anneal_strategy='linear')
o = torch.optim.SGD([a], lr=0.1); c = torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10)
for _ in range(3): o.step(); c.step()
s = SWALR(o, swa_lr=0.01, anneal_epochs=2, anneal_strategy='linear')         # then 3 steps
m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)) with weight/bias set; swa = AveragedModel(m)
three update_parameters with the weights below; swa.eval(); update_bn(data, swa) (the data below)
ema = AveragedModel(m, avg_fn=lambda a, p, n: 0.9 * a + 0.1 * p, use_buffers=True), two updates below
]==]
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local optim = pt.optim
local swa = optim.swa_utils
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)
local assert_error = support.assert_error
local help = require "partrain.help"

local F64 = {dtype = "float64"}
local X = pt.tensor({{0.1, 0.2, 0.4, 0.8}, {0.3, -0.5, 1.2, 0.0}, {-1.1, 0.7, 0.05, 0.6}}, F64)
local Y = pt.tensor({4, 1, 2})
local W = pt.tensor({0.5, 2.0, 1.5, 0.25}, F64)

describe("nn.MultiMarginLoss / F.multi_margin_loss", function()
  -- torch 1.13, in the order p, margin, weight, reduction of the script's loops
  local REF = {
    [1] = {[1.0] = {[false] = {{0.32499999999999996, 0.7, 0.3125}, 0.4458333333333333, 1.3375},
                    [true] = {{0.08124999999999999, 0.35, 0.625}, 0.3520833333333333, 1.05625}},
           [0.5] = {[false] = {{0.024999999999999994, 0.39999999999999997, 0.1}, 0.17499999999999996, 0.5249999999999999},
                    [true] = {{0.006249999999999999, 0.19999999999999998, 0.2}, 0.13541666666666666, 0.40625}}},
    [2] = {[1.0] = {[false] = {{0.15249999999999997, 1.035, 0.23312500000000003}, 0.4735416666666667, 1.420625},
                    [true] = {{0.03812499999999999, 0.5175, 0.46625000000000005}, 0.340625, 1.021875}},
           [0.5] = {[false] = {{0.0024999999999999988, 0.49999999999999994, 0.04000000000000001}, 0.18083333333333332, 0.5425},
                    [true] = {{0.0006249999999999997, 0.24999999999999997, 0.08000000000000002}, 0.11020833333333334, 0.330625}}},
  }

  it("matches PyTorch for p 1 and 2, margins, weights and every reduction", function()
    for _, p in ipairs({1, 2}) do
      for _, margin in ipairs({1.0, 0.5}) do
        for _, weighted in ipairs({false, true}) do
          local ref = REF[p][margin][weighted]
          local w = weighted and W or nil
          for k, red in ipairs({"none", "mean", "sum"}) do
            assert_close(F.multi_margin_loss(X, Y, {p = p, margin = margin, weight = w, reduction = red}), ref[k])
            assert_close(F.multi_margin_loss(X, Y, p, margin, w, red), ref[k])
            assert_close(nn.MultiMarginLoss(p, margin, w, red)(X, Y), ref[k])
          end
        end
      end
    end
  end)

  it("takes {C} scores with a {} or {1} target, integer or float targets, float32", function()
    local none = F.multi_margin_loss(X[2], pt.tensor(3), {reduction = "none"})
    assert.are.same({}, none:size())
    assert_close(none, 0.02500000000000001)
    local one = F.multi_margin_loss(X[2], pt.tensor({3}), {reduction = "none"})
    assert.are.same({1}, one:size())
    assert_close(F.multi_margin_loss(X, pt.tensor({4, 1, 2}, {dtype = "int64"})), 0.4458333333333333)
    local l32 = F.multi_margin_loss(X:float(), Y)
    assert.are.equal("float32", l32:dtype())
    assert.is_true(math.abs(l32:item() - 0.4458333333333333) < 1e-6)
    -- a 0-d input is one class: no other class, no loss (as PyTorch)
    assert.are.equal(0, F.multi_margin_loss(pt.tensor(0.3, F64), pt.tensor(1)):item())
    -- an empty batch: nothing summed
    assert.are.equal(0, F.multi_margin_loss(pt.zeros(0, 3, F64), pt.zeros(0), {reduction = "sum"}):item())
    assert.are.same({0}, F.multi_margin_loss(pt.zeros(0, 3, F64), pt.zeros(0), {reduction = "none"}):size())
  end)

  it("has PyTorch's gradient and passes gradcheck", function()
    local x = X:clone()
    x.requires_grad = true
    F.multi_margin_loss(x, Y, {p = 2, margin = 0.7, weight = W}):backward()
    assert_close(x.grad, {{0.0, 0.004166666666666663, 0.012499999999999997, -0.01666666666666666},
      {-0.16666666666666663, 0.0, 0.1333333333333333, 0.033333333333333326},
      {0.0, -0.21666666666666665, 0.016666666666666666, 0.19999999999999998}})
    for _, p in ipairs({1, 2}) do
      -- margins that put no pair on the hinge's kink (0.7 would: 0.7 - 0.8 + 0.1 = 0)
      gradcheck(function(a, w) return F.multi_margin_loss(a, Y, {p = p, margin = 0.63, weight = w, reduction = "none"}) end,
        {X, W})
      gradcheck(function(a) return F.multi_margin_loss(a, Y, p, 1.3, nil, "sum") end, {X})
    end
  end)

  it("keeps weight as a buffer and prints its settings", function()
    local m = nn.MultiMarginLoss({p = 2, margin = 0.5, weight = W})
    assert.are.equal(W, m:get_buffer("weight"))
    assert.are.same({}, m:parameters())
    assert.are.equal("MultiMarginLoss(p=2, margin=0.5, reduction='mean')", tostring(m))
    assert.are.equal("MultiMarginLoss(p=1, margin=1.0, reduction='mean')", tostring(nn.MultiMarginLoss()))
  end)

  it("reports bad settings and inputs", function()
    assert_error("multi_margin_loss: only p == 1 and p == 2 supported, got 3", F.multi_margin_loss, X, Y, 3)
    assert_error("MultiMarginLoss: only p == 1 and p == 2 supported, got 1.5", nn.MultiMarginLoss, {p = 1.5})
    assert_error("multi_margin_loss: margin must be a number, got string", F.multi_margin_loss, X, Y, 1, "1")
    assert_error("multi_margin_loss: weight must be a tensor, got table", F.multi_margin_loss, X, Y, {weight = {1, 2}})
    assert_error("multi_margin_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'",
      F.multi_margin_loss, X, Y, {reduction = "avg"})
    assert_error("multi_margin_loss: unknown option 'margn'", F.multi_margin_loss, X, Y, {margn = 1})
    assert_error("multi_margin_loss: input must be a tensor, got number", F.multi_margin_loss, 1, Y)
    assert_error("multi_margin_loss: input must be float32 or float64, got int64",
      F.multi_margin_loss, pt.tensor({{1, 2}}, {dtype = "int64"}), pt.tensor({1}))
    assert_error("multi_margin_loss: target must be a tensor, got table", F.multi_margin_loss, X, {4, 1, 2})
    assert_error("multi_margin_loss: input must be {N,C} or {C}, got shape {2,3,4}",
      F.multi_margin_loss, pt.zeros(2, 3, 4), pt.tensor({1, 1}))
    assert_error("multi_margin_loss: input must have at least one class (a non-empty last dim), got shape {2,0}",
      F.multi_margin_loss, pt.zeros(2, 0), pt.tensor({1, 1}))
    assert_error("multi_margin_loss: target shape {3,1} does not match input shape {3,4} (expected one class index per row)",
      F.multi_margin_loss, X, Y:reshape(3, 1))
    assert_error("multi_margin_loss: target shape {2} does not match input shape {4} (expected a single class index)",
      F.multi_margin_loss, X[1], pt.tensor({1, 2}))
    assert_error("multi_margin_loss: target 5 out of range for 4 classes (class indices are 1-based)",
      F.multi_margin_loss, X, pt.tensor({4, 5, 1}))
    assert_error("multi_margin_loss: target 0 out of range for 4 classes (class indices are 1-based)",
      F.multi_margin_loss, X, pt.tensor({4, 0, 1}))
    assert_error("multi_margin_loss: target 1.5 is not a class index", F.multi_margin_loss, X, pt.tensor({4, 1.5, 1}))
    assert_error("multi_margin_loss: target must hold class indices, got dtype bool",
      F.multi_margin_loss, X, pt.tensor({true, false, true}))
    assert_error("multi_margin_loss: weight must have shape {4} (one per class), got {3}",
      F.multi_margin_loss, X, Y, {weight = pt.ones(3)})
    assert_error("MultiMarginLoss:forward: expected 2 inputs, got 3", function() nn.MultiMarginLoss()(X, Y, Y) end)
    local m = nn.MultiMarginLoss()
    m.p = 3 -- settings are fields, checked when used
    assert_error("MultiMarginLoss:forward: only p == 1 and p == 2 supported, got 3", function() m(X, Y) end)
    assert_error("MultiMarginLoss:forward: target 7 out of range for 4 classes (class indices are 1-based)",
      function() nn.MultiMarginLoss()(X, pt.tensor({7, 1, 1})) end)
  end)
end)

describe("nn.MultiLabelMarginLoss / F.multilabel_margin_loss", function()
  -- torch's [[3, 0, -1, 1], [1, 2, 3, -1], [0, 0, 2, -1]] (a repeated class counts twice)
  local T = pt.tensor({{4, 1, 0, 2}, {2, 3, 4, 0}, {1, 1, 3, 0}})

  it("matches PyTorch, the list ended by the first 0", function()
    assert_close(F.multilabel_margin_loss(X, T, {reduction = "none"}), {0.8500000000000001, 0.8, 3.55})
    assert_close(F.multilabel_margin_loss(X, T), 1.7333333333333334)
    assert_close(F.multilabel_margin_loss(X, T, "sum"), 5.2)
    assert_close(nn.MultiLabelMarginLoss("none")(X, T), {0.8500000000000001, 0.8, 3.55})
    assert_close(nn.MultiLabelMarginLoss({reduction = "sum"})(X, T), 5.2)
    -- an empty list, a full one, and entries after the terminator ignored
    assert_close(F.multilabel_margin_loss(X, pt.tensor({{0, 1, 2, 3}, {1, 2, 3, 4}, {4, 0, 3, 3}}), "none"),
      {0.0, 0.0, 0.3875})
    local one = F.multilabel_margin_loss(X[1], pt.tensor({3, 2, 0, 1}), "none")
    assert.are.same({}, one:size())
    assert_close(one, 1.15)
    assert_close(F.multilabel_margin_loss(X, T:to("int64"), "sum"), 5.2)
    assert.are.equal(0, F.multilabel_margin_loss(pt.zeros(0, 3, F64), pt.zeros(0, 3), "sum"):item())
  end)

  it("has PyTorch's gradient and passes gradcheck", function()
    local x = X:clone()
    x.requires_grad = true
    F.multilabel_margin_loss(x, T):backward()
    assert_close(x.grad, {{-0.16666666666666666, 0.16666666666666666, 0.16666666666666666, -0.16666666666666666},
      {0.25, -0.08333333333333333, -0.08333333333333333, -0.08333333333333333},
      {-0.3333333333333333, 0.25, -0.16666666666666666, 0.25}})
    gradcheck(function(a) return F.multilabel_margin_loss(a, T, "none") end, {X})
    gradcheck(function(a) return F.multilabel_margin_loss(a, pt.tensor({2, 4, 0, 0})) end, {X[3]})
  end)

  it("reports bad targets", function()
    assert_error("multilabel_margin_loss: target shape {3} does not match input shape {3,4} (expected the input's "
      .. "shape: class indices, each sample's list ended by 0)", F.multilabel_margin_loss, X, Y)
    assert_error("multilabel_margin_loss: target 5 out of range for 4 classes (class indices are 1-based; 0 ends a "
      .. "sample's list)", F.multilabel_margin_loss, X, pt.tensor({{4, 5, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}}))
    -- checked after the terminator too, as PyTorch
    assert_error("multilabel_margin_loss: target -1 out of range for 4 classes (class indices are 1-based; 0 ends a "
      .. "sample's list)", F.multilabel_margin_loss, X, pt.tensor({{4, 0, -1, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}}))
    assert_error("multilabel_margin_loss: target 0.5 is not a class index",
      F.multilabel_margin_loss, X, pt.tensor({{0.5, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}}))
    assert_error("multilabel_margin_loss: input must be {N,C} or {C}, got shape {1,3,4}",
      F.multilabel_margin_loss, X:reshape(1, 3, 4), T:reshape(1, 3, 4))
    assert_error("multilabel_margin_loss: too many arguments (1 settings at most, got 2)",
      F.multilabel_margin_loss, X, T, "sum", "mean")
    assert_error("MultiLabelMarginLoss: reduction must be 'mean', 'sum' or 'none', got 'batchmean'",
      nn.MultiLabelMarginLoss, "batchmean")
  end)
end)

describe("F.gumbel_softmax", function()
  local L = pt.tensor({{1.0, 0.5, -0.2, 2.0}, {0.3, 0.3, 0.3, 0.3}}, F64)

  it("is softmax((logits + g) / tau) with g = -log(Exp(1)) from pt's generator", function()
    pt.manual_seed(7)
    local y = F.gumbel_softmax(L, {tau = 0.5})
    pt.manual_seed(7)
    local g = -pt.empty(2, 4, F64):exponential_():log()
    assert_close(y, nn.softmax((L + g) / 0.5, -1))
    pt.manual_seed(7)
    assert_close(F.gumbel_softmax(L, 0.5), y)
    assert_close(y:sum(2), {1, 1})
    pt.manual_seed(3)
    local y1 = F.gumbel_softmax(L:t(), {dim = 1})
    pt.manual_seed(3)
    local g1 = -pt.empty(4, 2, F64):exponential_():log()
    assert_close(y1, nn.softmax(L:t() + g1, 1))
  end)

  it("hard: one-hot values with the soft sample's gradient (straight through)", function()
    local w = pt.tensor({{0.3, -1.0, 0.5, 2.0}, {1.5, 0.2, -0.7, 0.1}}, F64)
    local a, b = L:clone(), L:clone()
    a.requires_grad, b.requires_grad = true, true
    pt.manual_seed(11)
    local hard = F.gumbel_softmax(a, {tau = 0.8, hard = true})
    pt.manual_seed(11)
    local soft = F.gumbel_softmax(b, {tau = 0.8})
    local _, at = soft:max(2, true)
    assert_close(hard, pt.zeros(2, 4, F64):scatter(2, at, 1.0))
    assert_close(hard:sum(2), {1, 1})
    local lh, ls = (hard * w):sum(), (soft * w):sum()
    lh:backward()
    ls:backward()
    assert_close(a.grad, b.grad)
  end)

  it("draws class k with probability softmax(logits)[k] (the Gumbel-max trick)", function()
    pt.manual_seed(2024)
    local logits = pt.tensor({1.0, 0.0, -1.0, 0.5}, F64)
    local n = 4000
    local samples = F.gumbel_softmax(logits:reshape(1, 4):expand(n, 4), {hard = true})
    local freq = samples:sum(1) / n
    local p = nn.softmax(logits, 1)
    for k = 1, 4 do
      -- 4 standard deviations of a binomial frequency
      local sd = math.sqrt(p[k] * (1 - p[k]) / n)
      assert.is_true(math.abs(freq[k] - p[k]) < 4 * sd)
    end
  end)

  -- (hard's straight-through gradient is by design not the derivative of its one-hot values: the
  -- spec above checks it is the soft sample's)
  it("passes gradcheck", function()
    gradcheck(function(x)
      pt.manual_seed(5)
      return F.gumbel_softmax(x, {tau = 0.7})
    end, {L})
    gradcheck(function(x)
      pt.manual_seed(6)
      return F.gumbel_softmax(x, 1.5, false, 1e-10, 1)
    end, {L})
  end)

  it("reports bad arguments", function()
    assert_error("gumbel_softmax: logits must be a tensor, got number", F.gumbel_softmax, 1)
    assert_error("gumbel_softmax: logits must be float32 or float64, got int64",
      F.gumbel_softmax, pt.tensor({1, 2}, {dtype = "int64"}))
    assert_error("gumbel_softmax: hard must be a boolean, got number", F.gumbel_softmax, L, {hard = 1})
    assert_error("gumbel_softmax: tau must be a number, got string", F.gumbel_softmax, L, "1")
    assert_error("gumbel_softmax: dim 3 out of range for a 2-dimensional input", F.gumbel_softmax, L, {dim = 3})
    assert_error("gumbel_softmax: dim must be a non-zero integer (1-based, negative from the end), got 0",
      F.gumbel_softmax, L, {dim = 0})
    assert_error("gumbel_softmax: logits must have at least one dimension, got a 0-dimensional tensor",
      F.gumbel_softmax, pt.tensor(1.0))
    assert_error("gumbel_softmax: unknown option 'temperature'", F.gumbel_softmax, L, {temperature = 2})
  end)
end)

describe("nn.Dropout1d / nn.Dropout3d", function()
  -- every {n,c} plane of y is all 0 or all scale (x is ones); returns the fraction dropped
  local function check_planes(y, planes, scale)
    local flat = y:reshape(planes, -1)
    local dropped = 0
    for i = 1, planes do
      local row = flat[i]
      local v = row[1]
      assert.is_true(v == 0 or math.abs(v - scale) < 1e-12)
      assert.are.equal(0, (row - v):abs():max():item())
      if v == 0 then dropped = dropped + 1 end
    end
    return dropped / planes
  end

  it("zero whole channels with probability p and scale the rest by 1/(1-p)", function()
    pt.manual_seed(1)
    local y = F.dropout1d(pt.ones(40, 50, 3, F64), 0.3)
    local frac = check_planes(y, 2000, 1 / 0.7)
    assert.is_true(math.abs(frac - 0.3) < 4 * math.sqrt(0.3 * 0.7 / 2000))
    local y3 = F.dropout3d(pt.ones(20, 30, 2, 2, 3, F64), {p = 0.6})
    frac = check_planes(y3, 600, 1 / 0.4)
    assert.is_true(math.abs(frac - 0.6) < 4 * math.sqrt(0.6 * 0.4 / 600))
    -- unbatched: {C,L} and {C,D,H,W}, the channels are dim 1
    check_planes(F.dropout1d(pt.ones(30, 4, F64)), 30, 2)
    check_planes(F.dropout3d(pt.ones(30, 2, 2, 2, F64)), 30, 2)
    local m = nn.Dropout1d(0.5)
    check_planes(m(pt.ones(3, 10, 4, F64)), 30, 2)
  end)

  it("are the identity in evaluation mode and with p = 0, zero with p = 1", function()
    local x = pt.randn(2, 3, 4)
    assert.are.equal(x, F.dropout1d(x, 0.5, false))
    assert.are.equal(x, F.dropout1d(x, 0))
    local m = nn.Dropout3d():eval()
    local x5 = pt.randn(1, 2, 2, 2, 2)
    assert.are.equal(x5, m(x5))
    assert.are.equal(0, F.dropout3d(x5, 1):abs():sum():item())
    assert.are.equal(0, F.dropout1d(x, {p = 1}):abs():sum():item())
  end)

  it("inplace writes into the input (and refuses a leaf that requires grad)", function()
    local x = pt.ones(4, 6, 2, F64)
    pt.manual_seed(9)
    local y = F.dropout1d(x, 0.5, true, true)
    assert.are.equal(x, y)
    check_planes(x, 24, 2)
    local leaf = pt.ones(2, 3, 4, F64)
    leaf.requires_grad = true
    assert_error("dropout1d: inplace=true on a leaf tensor that requires grad (its gradient would be lost; PyTorch "
      .. "refuses it too)", F.dropout1d, leaf, {inplace = true})
    -- a non-leaf: the gradient goes through the mask
    local a = pt.ones(2, 3, 4, F64)
    a.requires_grad = true
    local h = a * 3
    pt.manual_seed(4)
    local out = nn.Dropout1d(0.5, true)(h)
    assert.are.equal(h, out)
    out:sum():backward()
    pt.manual_seed(4)
    local mask = F.dropout1d(pt.ones(2, 3, 4, F64), 0.5)
    assert_close(a.grad, mask * 3)
  end)

  it("pass gradcheck with a fixed seed", function()
    local x = pt.randn(2, 3, 4, F64)
    gradcheck(function(t) pt.manual_seed(3); return F.dropout1d(t, 0.4) end, {x})
    gradcheck(function(t) pt.manual_seed(3); return F.dropout3d(t, 0.4) end, {pt.randn(2, 2, 1, 2, 2, F64)})
  end)

  it("print and check their settings and inputs", function()
    assert.are.equal("Dropout1d(p=0.5)", tostring(nn.Dropout1d()))
    assert.are.equal("Dropout3d(p=0.2, inplace=true)", tostring(nn.Dropout3d({p = 0.2, inplace = true})))
    assert_error("Dropout1d: dropout probability has to be between 0 and 1, but got 1.5", nn.Dropout1d, 1.5)
    assert_error("dropout3d: dropout probability has to be between 0 and 1, but got -0.1",
      F.dropout3d, pt.ones(1, 1, 1, 1, 1), -0.1)
    assert_error("dropout1d: training must be a boolean, got number", F.dropout1d, pt.ones(2, 3), 0.5, 1)
    local m = nn.Dropout1d()
    m.p = 2
    assert_error("Dropout1d:forward: dropout probability has to be between 0 and 1, but got 2",
      function() m(pt.ones(2, 3)) end)
    assert_error("dropout1d: expected a 2-D {C,L} or 3-D {N,C,L} input, got shape {2}", F.dropout1d, pt.ones(2))
    assert_error("Dropout1d:forward: expected a 2-D {C,L} or 3-D {N,C,L} input, got shape {2,3,4,5}",
      function() nn.Dropout1d()(pt.ones(2, 3, 4, 5)) end)
    assert_error("dropout3d: expected a 4-D {C,D,H,W} or 5-D {N,C,D,H,W} input, got shape {2,3,4}",
      F.dropout3d, pt.ones(2, 3, 4))
    assert_error("dropout1d: input must be float32 or float64, got int64",
      F.dropout1d, pt.ones(2, 3, {dtype = "int64"}))
    assert.is_not_nil(nn.Dropout2d) -- the 2-D one is nn_conv's (C)
  end)
end)

describe("F.pdist", function()
  local P = pt.tensor({{0.5, -1.2, 2.0}, {1.5, 0.25, -0.75}, {0.5, -1.2, 2.0}, {0.0, 3.0, -0.2}}, F64)

  it("matches PyTorch for p = 2, 1, 0, 3, 0.5 and inf", function()
    assert_close(F.pdist(P), {3.2657311585615862, 0.0, 4.767598976424087, 3.2657311585615862, 3.18040877875785, 4.767598976424087})
    assert_close(F.pdist(P, 1), {5.2, 0.0, 6.9, 5.2, 4.8, 6.9})
    assert_close(F.pdist(P, 0), {3.0, 0.0, 3.0, 3.0, 3.0, 3.0})
    assert_close(F.pdist(P, {p = 3}), {2.9179818105321123, 0.0, 4.3944316612986976, 2.9179818105321123, 2.8979871089219342, 4.3944316612986976})
    assert_close(F.pdist(P, 0.5), {14.91868881565703, 0.0, 17.975366707006454, 14.91868881565703, 13.138284190026242, 17.975366707006454})
    assert_close(F.pdist(P, math.huge), {2.75, 0.0, 4.2, 2.75, 2.75, 4.2})
    assert.are.same({0}, F.pdist(P:narrow(1, 1, 1)):size())
    assert.are.same({0}, F.pdist(pt.zeros(0, 3)):size())
    assert_close(F.pdist(pt.zeros(2, 0, F64)), {0.0})
  end)

  it("has PyTorch's gradient (0 at a zero distance) and passes gradcheck", function()
    local x = P:clone()
    x.requires_grad = true
    F.pdist(x):sum():backward()
    assert_close(x.grad, {{-0.20133554891952393, -1.3249512823560385, 1.3035260961198087},
      {1.084057768627308, 0.02334068636996134, -1.857089522740489},
      {-0.20133554891952393, -1.3249512823560385, 1.3035260961198087},
      {-0.6813866707882602, 2.626561878342116, -0.7499626694991285}})
    local D = pt.tensor({{0.5, -1.2, 2.0}, {1.5, 0.25, -0.75}, {-0.3, 0.8, 1.1}, {0.0, 3.0, -0.2}}, F64)
    for _, p in ipairs({2, 1, 3, 0.5}) do gradcheck(function(t) return F.pdist(t, p) end, {D}) end
  end)

  it("reports bad inputs", function()
    assert_error("pdist: expected a 2-D input {N,M}, got shape {3}", F.pdist, pt.zeros(3))
    assert_error("pdist: expected a 2-D input {N,M}, got shape {2,2,2}", F.pdist, pt.zeros(2, 2, 2))
    assert_error("pdist: p must be non-negative, got -1", F.pdist, P, -1)
    assert_error("pdist: input must be float32 or float64, got int64", F.pdist, pt.zeros(2, 2, {dtype = "int64"}))
  end)
end)

describe("nn.UpsamplingNearest2d / nn.UpsamplingBilinear2d", function()
  local I = pt.arange(1, 13):reshape(1, 2, 2, 3):double()

  it("match PyTorch (bilinear with align_corners=true)", function()
    local bil = {{{{1.0, 1.4, 1.8, 2.2, 2.6, 3.0}, {2.0, 2.4000000000000004, 2.8, 3.2, 3.6, 4.0},
      {3.0, 3.4000000000000004, 3.8, 4.2, 4.6, 5.0}, {4.0, 4.4, 4.8, 5.2, 5.6, 6.0}},
      {{7.0, 7.4, 7.8, 8.2, 8.6, 9.0}, {8.0, 8.4, 8.8, 9.2, 9.6, 10.0}, {9.0, 9.4, 9.8, 10.2, 10.6, 11.0},
      {10.0, 10.4, 10.8, 11.2, 11.6, 12.0}}}}
    assert_close(nn.UpsamplingBilinear2d({scale_factor = 2})(I), bil)
    assert_close(nn.UpsamplingBilinear2d(nil, 2)(I), bil)
    assert_close(F.upsample_bilinear(I, {scale_factor = 2}), bil)
    assert_close(nn.UpsamplingBilinear2d({3, 4})(I), {{{{1.0, 1.6666666666666665, 2.333333333333333, 3.0},
      {2.5, 3.166666666666666, 3.833333333333333, 4.5}, {4.0, 4.666666666666666, 5.333333333333333, 6.0}},
      {{7.0, 7.666666666666667, 8.333333333333332, 9.0}, {8.5, 9.166666666666666, 9.833333333333332, 10.5},
      {10.0, 10.666666666666666, 11.333333333333334, 12.0}}}})
    local near = {{{{1.0, 1.0, 2.0, 2.0, 3.0}, {1.0, 1.0, 2.0, 2.0, 3.0}, {4.0, 4.0, 5.0, 5.0, 6.0}},
      {{7.0, 7.0, 8.0, 8.0, 9.0}, {7.0, 7.0, 8.0, 8.0, 9.0}, {10.0, 10.0, 11.0, 11.0, 12.0}}}}
    assert_close(nn.UpsamplingNearest2d({size = {3, 5}})(I), near)
    assert_close(F.upsample_nearest(I, {3, 5}), near)
    assert_close(nn.UpsamplingNearest2d({scale_factor = {1.5, 2}})(I),
      {{{{1.0, 1.0, 2.0, 2.0, 3.0, 3.0}, {1.0, 1.0, 2.0, 2.0, 3.0, 3.0}, {4.0, 4.0, 5.0, 5.0, 6.0, 6.0}},
      {{7.0, 7.0, 8.0, 8.0, 9.0, 9.0}, {7.0, 7.0, 8.0, 8.0, 9.0, 9.0}, {10.0, 10.0, 11.0, 11.0, 12.0, 12.0}}}})
  end)

  it("pass gradcheck", function()
    local x = pt.randn(1, 2, 2, 3, F64)
    gradcheck(function(t) return nn.UpsamplingBilinear2d({size = {3, 4}})(t) end, {x})
    gradcheck(function(t) return F.upsample_nearest(t, {scale_factor = 2}) end, {x})
  end)

  it("print as PyTorch's and check their settings", function()
    assert.are.equal("UpsamplingBilinear2d(scale_factor=2.0, mode=bilinear)",
      tostring(nn.UpsamplingBilinear2d({scale_factor = 2})))
    assert.are.equal("UpsamplingNearest2d(size={3, 4}, mode=nearest)", tostring(nn.UpsamplingNearest2d({3, 4})))
    assert.are.equal("UpsamplingNearest2d(size=3, mode=nearest)", tostring(nn.UpsamplingNearest2d(3)))
    assert_error("UpsamplingNearest2d: either size or scale_factor must be given", nn.UpsamplingNearest2d)
    assert_error("UpsamplingBilinear2d: only one of size or scale_factor can be given", nn.UpsamplingBilinear2d, 4, 2)
    assert_error("UpsamplingNearest2d: size must be a positive integer or a list of 2, got 0", nn.UpsamplingNearest2d, 0)
    assert_error("UpsamplingBilinear2d: scale_factor must be a positive number or a list of 2, got {1, 2, 3}",
      nn.UpsamplingBilinear2d, {scale_factor = {1, 2, 3}})
    assert_error("upsample_bilinear: either size or scale_factor must be given", F.upsample_bilinear, I)
    assert_error("UpsamplingBilinear2d:forward: input must be a tensor, got number",
      function() nn.UpsamplingBilinear2d(2)(5) end)
    -- the input's rank is interpolate's to check (as PyTorch's)
    assert_error("interpolate: mode 'bilinear' needs a 4-D input (N, C, H, W), got 3-D",
      function() nn.UpsamplingBilinear2d(2)(pt.ones(1, 2, 3)) end)
  end)
end)

describe("nn.LazyLinear", function()
  it("infers in_features at the first forward and becomes an nn.Linear", function()
    local m = nn.LazyLinear(3)
    assert.are.equal("LazyLinear(in_features=0, out_features=3, bias=true)", tostring(m))
    assert.is_true(m:has_uninitialized_params())
    local w, b = m.weight, m.bias
    assert.are.same({0}, w:size())
    pt.manual_seed(21)
    local x = pt.randn(2, 5)
    local y = m(x)
    assert.are.equal(nn.Linear, getmetatable(m))
    assert.are.equal("Linear(in_features=5, out_features=3, bias=true)", tostring(m))
    assert.are.equal(5, m.in_features)
    -- the same tensor objects, with data now
    assert.are.equal(w, m.weight)
    assert.are.equal(b, m.bias)
    assert.are.same({3, 5}, w:size())
    assert.is_true(w.requires_grad and w.is_leaf)
    -- drawn as nn.Linear draws them
    pt.manual_seed(8)
    local lazy = nn.LazyLinear({out_features = 3})
    lazy(x)
    pt.manual_seed(8)
    local ref = nn.Linear(5, 3)
    assert_close(lazy.weight, ref.weight)
    assert_close(lazy.bias, ref.bias)
    assert_close(y, nn.linear(x, w, b), 1e-6)
  end)

  it("an optimizer built before holds the same tensors (as PyTorch's in-place materialize)", function()
    local m = nn.LazyLinear(2, false)
    assert.is_nil(m.bias)
    local opt = optim.SGD(m:parameters(), 0.1)
    m(pt.ones(3, 4)):sum():backward()
    local before = m.weight:clone()
    opt:step()
    assert_close(m.weight, before - 0.3, 1e-6)
  end)

  it("takes the dtype given, or converted before the first forward; reset_parameters waits", function()
    local m = nn.LazyLinear(2, {dtype = "float64"})
    m:reset_parameters()
    assert.are.same({0}, m.weight:size())
    m(pt.ones(1, 3, F64))
    assert.are.equal("float64", m.weight:dtype())
    local c = nn.LazyLinear(2):double()
    c(pt.ones(1, 3, F64))
    assert.are.equal("float64", c.bias:dtype())
    -- a subclass keeps its class
    local Sub = nn.LazyLinear:extend("SubLazy")
    local s = Sub(2)
    s(pt.ones(4, 6))
    assert.are.equal(Sub, getmetatable(s))
    assert.is_false(s:has_uninitialized_params())
    s:initialize_parameters(pt.ones(2, 9)) -- nothing once initialized
    assert.are.same({2, 6}, s.weight:size())
  end)

  it("reports bad arguments and inputs", function()
    assert_error("LazyLinear: missing argument 'out_features'", nn.LazyLinear)
    assert_error("LazyLinear: out_features must be a non-negative integer, got 2.5", nn.LazyLinear, 2.5)
    assert_error("LazyLinear: bias must be a boolean, got number", nn.LazyLinear, 2, 1)
    assert_error("LazyLinear: dtype must be \"float32\" or \"float64\", got 'int64'", nn.LazyLinear, 2, {dtype = "int64"})
    assert_error("LazyLinear:forward: input must have at least one dimension (its last is in_features), got a "
      .. "0-dimensional tensor", function() nn.LazyLinear(2)(pt.tensor(1.0)) end)
    assert_error("LazyLinear:forward: input must be a tensor, got string", function() nn.LazyLinear(2)("x") end)
    assert_error("LazyLinear:initialize_parameters: input must be a tensor, got nil",
      function() nn.LazyLinear(2):initialize_parameters() end)
    -- PyTorch's documented order: load a state_dict after the dry run
    local src = nn.Linear(4, 2):state_dict()
    assert_error("load_state_dict: size mismatch for weight: copying a param with shape {2,4} from checkpoint, the "
      .. "shape in current model is {0}", function() nn.LazyLinear(2):load_state_dict(src) end)
  end)
end)

describe("nn.Identity, nn.Softmax2d, F.normalize", function()
  it("Identity takes and ignores arguments, as PyTorch's", function()
    local m = nn.Identity(54, {unused_argument1 = 0.1})
    local x = pt.randn(2, 3)
    assert.are.equal(x, m(x))
    assert.are.equal("Identity()", tostring(m))
  end)

  it("Softmax2d and F.normalize are there", function()
    assert.is_not_nil(nn.Softmax2d)
    assert.is_function(F.normalize)
  end)
end)

describe("Module methods", function()
  local function net()
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
  end

  it("requires_grad_ sets every parameter's flag", function()
    local m = net()
    assert.are.equal(m, m:requires_grad_(false))
    for _, p in ipairs(m:parameters()) do assert.is_false(p.requires_grad) end
    assert.are.equal(6, #m:parameters())
    m[3]:requires_grad_()
    assert.is_true(m[3][2].weight.requires_grad)
    assert.is_false(m[1].weight.requires_grad)
    m(pt.randn(4, 2)):sum():backward()
    assert.is_nil(m[1].weight.grad)
    assert.is_not_nil(m[3][2].weight.grad)
    assert_error("Sequential:requires_grad_: expected a boolean, got number", function() m:requires_grad_(1) end)
  end)

  it("get_submodule, get_parameter and get_buffer follow dotted paths", function()
    local m = net()
    assert.are.equal(m, m:get_submodule(""))
    assert.are.equal(m[3][2], m:get_submodule("3.2"))
    assert.are.equal(m[2], m:get_submodule(2))
    assert.are.equal(m[3][2].bias, m:get_parameter("3.2.bias"))
    assert.are.equal(m[2].running_var, m:get_buffer("2.running_var"))
    local b = nn.Module()
    b:register_buffer("k", pt.ones(1))
    assert.are.equal(b.k, b:get_buffer("k"))
  end)

  it("name the path component that fails, as PyTorch's", function()
    local m = net()
    assert_error("Sequential:get_submodule: Linear has no attribute `foo`", function() m:get_submodule("1.foo") end)
    assert_error("Sequential:get_submodule: Sequential has no attribute `4`", function() m:get_submodule("4") end)
    assert_error("Sequential:get_submodule: `weight` is not an nn.Module", function() m:get_submodule("1.weight") end)
    assert_error("Sequential:get_submodule: Sequential has no attribute ``", function() m:get_submodule("3..1") end)
    assert_error("Sequential:get_parameter: Linear has no attribute `foo`", function() m:get_parameter("3.2.foo") end)
    assert_error("Sequential:get_parameter: `running_mean` is not an nn.Parameter",
      function() m:get_parameter("2.running_mean") end)
    assert_error("Sequential:get_parameter: Sequential has no attribute `weight`", function() m:get_parameter("weight") end)
    assert_error("Sequential:get_parameter: ReLU has no attribute `1`", function() m:get_parameter("3.1.1.weight") end)
    assert_error("Sequential:get_buffer: `weight` is not a buffer", function() m:get_buffer("2.weight") end)
    assert_error("Sequential:get_buffer: BatchNorm1d has no attribute `nope`", function() m:get_buffer("2.nope") end)
    assert_error("Sequential:get_buffer: `forward` is not a buffer", function() m:get_buffer("1.forward") end)
    assert_error("Sequential:get_buffer: expected a dotted path (a string such as \"1.weight\"), got table",
      function() m:get_buffer({}) end)
  end)

  it("register_module is add_module", function()
    local m = nn.Module()
    assert.are.equal(nn.Module.add_module, nn.Module.register_module)
    assert.are.equal(m, m:register_module("fc", nn.Linear(2, 2)))
    assert.are.equal(m.fc, m:get_submodule("fc"))
    assert_error("add_module: 'x' is not a Module (got number)", function() m:register_module("x", 1) end)
  end)

  it("type converts every parameter and buffer, integer buffers too", function()
    local m = net()
    local w = m[1].weight
    assert.are.equal(m, m:type("float64"))
    assert.are.equal(w, m[1].weight)
    assert.are.equal("float64", w:dtype())
    assert.are.equal("float64", m[2].num_batches_tracked:dtype())
    m(pt.randn(4, 2, F64)) -- the batch norm still counts its batches
    assert.are.equal(1, m[2].num_batches_tracked:item())
    m:type("float")
    assert.are.equal("float32", m[2].running_mean:dtype())
    local b = nn.Module()
    b:register_buffer("k", pt.tensor({1.5, 2.5}))
    b:type("int64")
    assert.are.same({1, 2}, b.k:tolist())
    assert_error("Sequential:type: cannot convert the parameters to int64 (tensors that require gradients must be "
      .. "floating point); nothing was converted", function() m:type("long") end)
    assert.are.equal("float32", m[1].weight:dtype())
    assert_error("Sequential:type: expected a dtype name (\"float32\", \"float64\", \"int64\", ...), got 'complex64'",
      function() m:type("complex64") end)
    assert_error("Sequential:type: expected a dtype name (\"float32\", \"float64\", \"int64\", ...), got nil",
      function() m:type() end)
    assert_error("Sequential:type: partrain has no 16-bit floating point dtypes (float16, bfloat16); keep float32 "
      .. "(m:float()) or use float64 (m:double())", function() m:type("float16") end)
  end)

  it("cpu is the module itself; half and bfloat16 are errors", function()
    local m = nn.Linear(2, 2)
    assert.are.equal(m, m:cpu())
    assert_error("Linear:half: partrain has no 16-bit floating point dtypes (float16, bfloat16); keep float32 "
      .. "(m:float()) or use float64 (m:double())", function() m:half() end)
    assert_error("Linear:bfloat16: partrain has no 16-bit floating point dtypes (float16, bfloat16); keep float32 "
      .. "(m:float()) or use float64 (m:double())", function() m:bfloat16() end)
    assert.are.equal("float32", m.weight:dtype())
  end)
end)

describe("optim.swa_utils.SWALR", function()
  local function lrs(o)
    local t = {}
    for i, g in ipairs(o.param_groups) do t[i] = g.lr end
    return t
  end
  local function two_groups()
    return optim.SGD({{params = {nn.Parameter(pt.zeros(2))}, lr = 0.1}, {params = {nn.Parameter(pt.zeros(2))}, lr = 0.5}},
      {lr = 0.1})
  end

  it("anneals each group to its swa_lr as PyTorch's (cos)", function()
    local o = two_groups()
    local s = swa.SWALR(o, {0.05, 0.01}, {anneal_epochs = 3, anneal_strategy = "cos"})
    local ref = {{0.1, 0.5}, {0.08750000000000001, 0.3775}, {0.06250000000000001, 0.13250000000000006},
      {0.05, 0.01}, {0.05, 0.01}, {0.05, 0.01}}
    assert_close(lrs(o), ref[1])
    for k = 2, 6 do
      s:step()
      assert_close(lrs(o), ref[k])
      assert_close(s:get_last_lr(), ref[k])
    end
    assert.are.equal(5, s.last_epoch)
    assert.are.equal(0.01, o.param_groups[2].swa_lr)
    assert.are.equal("SWALR(swa_lr={0.05, 0.01}, anneal_epochs=3, anneal_strategy='cos', last_epoch=5)", tostring(s))
  end)

  it("anneal_epochs = 0 sets swa_lr at once; it takes over from another scheduler's lr", function()
    local o = optim.SGD({nn.Parameter(pt.zeros(2))}, 0.1)
    local s = swa.SWALR(o, {swa_lr = 0.02, anneal_epochs = 0, anneal_strategy = "linear"})
    assert_close(lrs(o), {0.02})
    s:step()
    assert_close(lrs(o), {0.02})
    local o2 = optim.SGD({nn.Parameter(pt.zeros(2))}, 0.1)
    local c = optim.CosineAnnealingLR(o2, {T_max = 10})
    local ref = {{0.09755282581475769}, {0.09045084971874738}, {0.07938926261462367}}
    for k = 1, 3 do
      c:step()
      assert_close(lrs(o2), ref[k])
    end
    local s2 = swa.SWALR(o2, 0.01, {anneal_epochs = 2, anneal_strategy = "linear"})
    assert_close(lrs(o2), {0.07938926261462367})
    for _, v in ipairs({0.044694631307311834, 0.01, 0.01}) do
      s2:step()
      assert_close(lrs(o2), {v})
    end
  end)

  it("saves and loads its state; the groups' lrs stay on load (as PyTorch's)", function()
    local o = two_groups()
    local s = swa.SWALR(o, {swa_lr = 0.05, anneal_epochs = 3})
    s:step()
    local sd = s:state_dict()
    assert.are.same({last_epoch = 1, base_lrs = {0.1, 0.5}, swa_lr = 0.05, anneal_epochs = 3, anneal_strategy = "cos"}, sd)
    -- a scheduler made later on the same optimizer, loading that state, goes on as s would
    local o2 = two_groups()
    local t = swa.SWALR(o2, {swa_lr = 0.05, anneal_epochs = 3})
    t:step()
    local s2 = swa.SWALR(o2, {swa_lr = 0.3})
    s2:load_state_dict(sd)
    assert_close(lrs(o2), lrs(o))
    assert.are.equal(0.05, o2.param_groups[1].swa_lr)
    s:step()
    s2:step()
    assert_close(lrs(o2), lrs(o))
    assert_error("SWALR:load_state_dict: anneal_strategy must be 'cos' or 'linear', got 'exp'", function()
      s2:load_state_dict({last_epoch = 1, anneal_strategy = "exp"})
    end)
  end)

  it("reports bad settings", function()
    local o = two_groups()
    assert_error("SWALR: expected an optimizer as the first argument, got 1", swa.SWALR, 1, 0.1)
    assert_error("SWALR: swa_lr is required (optim.swa_utils.SWALR(opt, swa_lr) or SWALR(opt, {swa_lr=}))", swa.SWALR, o)
    assert_error("SWALR: expected 2 values for swa_lr (one per parameter group), got 3", swa.SWALR, o, {0.1, 0.2, 0.3})
    assert_error("SWALR: swa_lr[2] must be a number, got 'x'", swa.SWALR, o, {0.1, "x"})
    assert_error("SWALR: swa_lr must be a number or a list of one per parameter group, got 'x'", swa.SWALR, o, "x")
    assert_error("SWALR: anneal_epochs must be a non-negative integer, got -1", swa.SWALR, o, 0.1, {anneal_epochs = -1})
    assert_error("SWALR: anneal_epochs must be a non-negative integer, got 2.5", swa.SWALR, o, {swa_lr = 0.1, anneal_epochs = 2.5})
    assert_error("SWALR: anneal_strategy must be 'cos' or 'linear', got 'exp'", swa.SWALR, o, 0.1, {anneal_strategy = "exp"})
    assert_error("SWALR: unknown option 'anneal_epoch' (options: anneal_epochs, anneal_strategy, swa_lr)",
      swa.SWALR, o, 0.1, {anneal_epoch = 3})
    assert_error("SWALR: swa_lr given twice (as an argument and as an option)", swa.SWALR, o, 0.1, {swa_lr = 0.2})
    local s = swa.SWALR(o, 0.1)
    s.anneal_epochs = -2
    assert_error("SWALR:step: anneal_epochs must be a non-negative integer, got -2", function() s:step() end)
  end)
end)

describe("optim.swa_utils.AveragedModel and update_bn", function()
  local function make()
    local m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    pt.no_grad(function()
      m[1].weight:copy_(pt.tensor({{0.1, -0.2, 0.3}, {0.4, 0.5, -0.6}}))
      m[1].bias:copy_(pt.tensor({0.05, -0.1}))
    end)
    return m
  end
  local function set(m, w, b)
    pt.no_grad(function()
      m[1].weight:copy_(pt.tensor(w))
      m[1].bias:copy_(pt.tensor(b))
    end)
  end
  local STEPS = {{{{1, 2, 3}, {4, 5, 6}}, {1, 2}}, {{{0.5, 0, -1}, {2, 2, 2}}, {0, 1}}, {{{3, 3, 3}, {-3, 0, 3}}, {-1, 0}}}
  local DATA = {pt.tensor({{0.5, -1.0, 2.0}, {1.5, 0.2, -0.3}, {0.0, 1.0, 1.0}}),
    {pt.tensor({{2.0, 2.0, -1.0}, {-0.5, 0.5, 0.25}}), pt.tensor({1, 2})},
    pt.tensor({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}})}
  local tol = 1e-6 -- torch's float32

  local function averaged()
    local m = make()
    local sm = swa.AveragedModel(m)
    for _, s in ipairs(STEPS) do
      set(m, s[1], s[2])
      sm:update_parameters(m)
    end
    return sm, m
  end

  it("averages the parameters as PyTorch's (the first update copies)", function()
    local sm, m = averaged()
    assert_close(sm.module[1].weight, {{1.5, 1.6666667461395264, 1.6666667461395264}, {1.0, 2.3333334922790527, 3.6666667461395264}}, tol)
    assert_close(sm.module[1].bias, {0.0, 1.0}, tol)
    assert.are.equal(3, sm.n_averaged:item())
    assert.are.equal("int64", sm.n_averaged:dtype())
    assert.are_not.equal(m[1].weight, sm.module[1].weight)
    local keys = {}
    for k in pairs(sm:state_dict()) do keys[#keys + 1] = k end
    assert.are.same({"n_averaged", "module.1.weight", "module.1.bias", "module.2.weight", "module.2.bias",
      "module.2.running_mean", "module.2.running_var", "module.2.num_batches_tracked"}, keys)
    -- forward runs the copy
    local x = pt.randn(4, 3)
    sm:eval()
    assert_close(sm(x), sm.module(x))
    -- no graph is recorded
    assert.is_nil(sm.module[1].weight.grad_fn)
    assert.is_true(sm.module[1].weight.is_leaf)
  end)

  it("update_bn recomputes the running statistics as PyTorch's", function()
    local sm = averaged()
    sm:eval()
    local bn = sm.module[2]
    local running_mean = bn.running_mean
    swa.update_bn(DATA, sm)
    assert_close(bn.running_mean, {2.537036895751953, 4.304629325866699}, tol)
    assert_close(bn.running_var, {3.900463581085205, 5.214860916137695}, tol)
    assert.are.equal(running_mean, bn.running_mean)
    assert.are.equal(3, bn.num_batches_tracked:item())
    assert.are.equal(0.1, bn.momentum)
    assert.is_false(sm.training)
    -- an iterator function and a data loader give the same
    local sm2 = averaged()
    local i = 0
    swa.update_bn(function() i = i + 1; return DATA[i] end, sm2)
    assert_close(sm2.module[2].running_mean, bn.running_mean, 1e-12)
    local xs = pt.cat({DATA[1], DATA[3]:narrow(1, 1, 3)}, 1)
    local h = pt.data.DataHandler(pt.data.TensorDataset(xs, pt.zeros(6)), {batch = 3, progress = false})
    local sm3, sm4 = averaged(), averaged()
    swa.update_bn(h, sm3)
    swa.update_bn({DATA[1], DATA[3]:narrow(1, 1, 3)}, sm4)
    assert_close(sm3.module[2].running_var, sm4.module[2].running_var, 1e-12)
  end)

  it("update_bn leaves a model without BatchNorm alone and restores the settings after an error", function()
    local called = false
    swa.update_bn(function() called = true end, nn.Sequential(nn.Linear(3, 2), nn.InstanceNorm1d(2, {track_running_stats = true})))
    assert.is_false(called)
    local m = make()
    m:eval()
    m[2].momentum = 0.3
    assert_error("update_bn: batch 2 is a table without a tensor at [1] (expected a tensor, or a list whose first "
      .. "element is the input tensor)", swa.update_bn, {DATA[1], {x = DATA[1]}}, m)
    assert.are.equal(0.3, m[2].momentum)
    assert.is_false(m.training)
    assert_error("update_bn: batch 1 is a number (expected a tensor, or a list whose first element is the input tensor)",
      swa.update_bn, {5}, m)
    assert_error("update_bn: loader must be a data loader (with :batches()), an iterator function or a list of batches, "
      .. "got number", swa.update_bn, 5, m)
    assert_error("update_bn: model must be a Module, got table", swa.update_bn, DATA, {})
    assert_error("update_bn: device must be \"cpu\" (partrain's tensors live on the CPU), got 'cuda'",
      swa.update_bn, DATA, m, "cuda")
  end)

  it("avg_fn with use_buffers averages the buffers too, as PyTorch's", function()
    local m = make()
    local ema = swa.AveragedModel(m, {avg_fn = function(a, p) return a * 0.9 + p * 0.1 end, use_buffers = true})
    pt.no_grad(function()
      m[1].weight:fill_(1); m[1].bias:fill_(-1); m[2].running_mean:fill_(2); m[2].num_batches_tracked:fill_(7)
    end)
    ema:update_parameters(m)
    pt.no_grad(function()
      m[1].weight:fill_(2); m[2].running_mean:fill_(4); m[2].num_batches_tracked:fill_(10)
    end)
    ema:update_parameters(m)
    assert_close(ema.module[1].weight, {{1.1, 1.1, 1.1}, {1.1, 1.1, 1.1}}, tol)
    assert_close(ema.module[1].bias, {-1, -1}, tol)
    assert_close(ema.module[2].running_mean, {2.2, 2.2}, tol)
    assert.are.equal(7, ema.module[2].num_batches_tracked:item()) -- 7.3 into an int64 buffer
    -- without use_buffers the buffers stay as copied
    local plain = swa.AveragedModel(m)
    pt.no_grad(function() m[2].running_mean:fill_(9) end)
    plain:update_parameters(m)
    assert_close(plain.module[2].running_mean, {4, 4})
  end)

  it("multi_avg_fn updates the lists in place (PyTorch 2's)", function()
    local m = make()
    local seen
    local sm = swa.AveragedModel(m, {multi_avg_fn = function(avg, cur, n)
      seen = n:item()
      for i = 1, #avg do avg[i]:add_(cur[i]) end
    end})
    sm:update_parameters(m)
    assert.is_nil(seen) -- the first update copies
    sm:update_parameters(m)
    assert.are.equal(1, seen)
    assert_close(sm.module[1].weight, m[1].weight * 2, 1e-7)
  end)

  it("reports bad arguments", function()
    local m = make()
    assert_error("AveragedModel: model must be a Module, got number", swa.AveragedModel, 1)
    assert_error("AveragedModel: avg_fn must be a function, got number", swa.AveragedModel, m, {avg_fn = 1})
    assert_error("AveragedModel: use_buffers must be a boolean, got string", swa.AveragedModel, m, {use_buffers = "yes"})
    assert_error("AveragedModel: unknown option 'use_buffer' (options: avg_fn, device, multi_avg_fn, use_buffers)",
      swa.AveragedModel, m, {use_buffer = true})
    assert_error("AveragedModel: device must be \"cpu\" (partrain's tensors live on the CPU), got 'cuda'",
      swa.AveragedModel, m, {device = "cuda"})
    local sm = swa.AveragedModel(m)
    assert_error("AveragedModel:update_parameters: model must be a Module, got nil", function() sm:update_parameters() end)
    assert_error("AveragedModel:update_parameters: the averaged model has 4 parameters, the model 1 (it averages "
      .. "copies of the model it was made from)", function() sm:update_parameters(nn.Linear(3, 2, {bias = false})) end)
    assert_error("AveragedModel:update_parameters: parameter 1 has shape {2,4} in the model and {2,3} in the "
      .. "averaged model", function() sm:update_parameters(nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2))) end)
  end)
end)

describe("help texts of nn_more and swa_utils", function()
  it("exist for every new class, function and method", function()
    local items = {nn.MultiMarginLoss, nn.MultiLabelMarginLoss, nn.Dropout1d, nn.Dropout3d, nn.UpsamplingNearest2d,
      nn.UpsamplingBilinear2d, nn.LazyLinear, nn.LazyLinear.has_uninitialized_params,
      nn.LazyLinear.initialize_parameters, F.multi_margin_loss, F.multilabel_margin_loss, F.dropout1d, F.dropout3d,
      F.gumbel_softmax, F.pdist, F.upsample_nearest, F.upsample_bilinear, nn.Module.requires_grad_,
      nn.Module.get_submodule, nn.Module.get_parameter, nn.Module.get_buffer, nn.Module.register_module,
      nn.Module.type, nn.Module.cpu, nn.Module.half, nn.Module.bfloat16, swa, swa.AveragedModel,
      swa.AveragedModel.update_parameters, swa.SWALR, swa.SWALR.load_state_dict, swa.update_bn}
    for i, v in ipairs(items) do
      local text = help.text(v)
      assert(not text:match("^no help") and not text:match("%(no doc of its own%)"), "item " .. i .. ": " .. text)
    end
    assert.are.equal(nn.multi_margin_loss, F.multi_margin_loss)
    assert.are.equal(nn.gumbel_softmax, F.gumbel_softmax)
  end)
end)
