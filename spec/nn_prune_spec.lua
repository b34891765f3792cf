-- nn_prune.lua: nn.utils.prune. Expected masks and values were computed once with /usr/bin/python3
-- and torch 1.13 on the same inputs (torch dims 0, 1, -1 are 1, 2, -1 here); random_* can't match
-- torch's generator, so their counts and structure are checked.
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-6)
local assert_error = support.assert_error

local W = {{0.5, -1.2, 0.3, 2.0}, {-0.1, 0.7, -1.5, 0.25}, {1.1, -0.05, 0.9, -0.6}}
local WC = {{{{0.1, 0.2}, {0.3, 0.4}}, {{-0.5, 0.6}, {0.7, -0.8}}},
  {{{0.9, -1.0}, {0.05, 0.02}}, {{0.3, 0.3}, {-0.2, 0.1}}},
  {{{-0.4, 0.45}, {0.5, -0.55}}, {{0.6, 0.65}, {-0.7, 0.75}}}}

local function linear(w, b)
  local m = nn.Linear(#w[1], #w)
  pt.no_grad(function()
    m.weight:copy_(pt.tensor(w))
    if b then m.bias:copy_(pt.tensor(b)) end
  end)
  return m
end

local function conv()
  local c = nn.Conv2d(2, 3, 2)
  pt.no_grad(function() c.weight:copy_(pt.tensor(WC)) end)
  return c
end

local keys, flat = support.state_dict_keys, support.flat

describe("nn.utils.prune", function()
  local prune = nn.utils.prune

  it("l1_unstructured: orig, mask, the masked weight, forward and gradients as torch", function()
    local m = linear(W, {0.1, -0.2, 0.3})
    assert.is_false(prune.is_pruned(m))
    assert.are.equal(m, prune.l1_unstructured(m, "weight", 0.25))
    assert.is_true(prune.is_pruned(m))
    assert.are.same({"bias", "weight_orig", "weight_mask"}, keys(m))
    assert_close({{1, 1, 1, 1}, {0, 1, 1, 0}, {1, 0, 1, 1}}, m.weight_mask)
    assert_close({{0.5, -1.2, 0.3, 2.0}, {0, 0.7, -1.5, 0}, {1.1, 0, 0.9, -0.6}}, m.weight)
    assert.is_nil(m._parameters.weight)
    local y = m(pt.tensor({{1, 2, 3, 4}, {-1, 0.5, 2, -3}}))
    assert_close({{7.1, -3.3, 1.7}, {-6.4, -2.85, 2.8}}, y)
    y:sum():backward()
    assert_close({{0, 2.5, 5, 1}, {0, 2.5, 5, 0}, {0, 0, 5, 1}}, m.weight_orig.grad)
  end)

  it("repeated pruning prunes among the entries left (PruningContainer), counts and fractions", function()
    local m = linear(W)
    prune.l1_unstructured(m, "weight", 0.25)
    prune.l1_unstructured(m, "weight", 2)
    assert_close({{0, 1, 0, 1}, {0, 1, 1, 0}, {1, 0, 1, 1}}, m.weight_mask)
    prune.ln_structured(m, "weight", 1, 2, 1)
    assert_close({{0, 1, 0, 1}, {0, 1, 1, 0}, {0, 0, 0, 0}}, m.weight_mask)
    -- 0.5 of 5 entries rounds half to even (2), then 0.5 of the 3 left (2)
    local m3 = linear({{5, 4, 3, 2, 1}})
    prune.l1_unstructured(m3, "weight", 0.5)
    assert_close({{1, 1, 1, 0, 0}}, m3.weight_mask)
    prune.l1_unstructured(m3, "weight", 0.5)
    assert_close({{1, 0, 0, 0, 0}}, m3.weight_mask)
  end)

  it("l1_unstructured with importance_scores (positional or as an option)", function()
    local scores = pt.arange(12):flip(1):reshape(3, 4)
    local m = linear(W)
    prune.l1_unstructured(m, "weight", 3, scores)
    assert_close({{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 0, 0, 0}}, m.weight_mask)
    local m2 = linear(W)
    prune.l1_unstructured(m2, "weight", {amount = 3, importance_scores = scores})
    assert_close(m.weight_mask, m2.weight_mask)
  end)

  it("ln_structured: the channels kept per n and dim as torch (kept entries per slice)", function()
    local cases = {
      {1, 1, {8, 0, 8}}, {1, 2, {0, 12}}, {1, -1, {0, 12}},
      {2, 1, {0, 8, 8}}, {2, 2, {0, 12}}, {"fro", -1, {0, 12}},
      {math.huge, 1, {8, 8, 0}}, {math.huge, 2, {12, 0}}, {math.huge, -1, {0, 12}},
      {-math.huge, 1, {8, 0, 8}}, {-math.huge, 2, {0, 12}}, {-math.huge, -1, {12, 0}},
    }
    for _, c in ipairs(cases) do
      local m = conv()
      prune.ln_structured(m, "weight", 1, c[1], c[2])
      local d = c[2] < 0 and 4 + 1 + c[2] or c[2]
      local per = m.weight_mask:movedim(d, 1):reshape(m.weight_mask:size(d), -1):sum(2)
      assert_close(c[3], per)
    end
  end)

  it("ln_structured with importance_scores; global_unstructured with RandomUnstructured counts", function()
    local m = linear(W)
    prune.ln_structured(m, "weight", 2, 1, -1, pt.tensor({{1, 0, 3, 0}, {1, 0, 3, 5}, {1, 0, 3, 0}}))
    assert_close({0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}, flat(m.weight_mask))
    pt.manual_seed(5)
    local a, b = nn.Linear(10, 6), nn.Linear(5, 4)
    prune.global_unstructured({{a, "weight"}, {b, "weight"}}, prune.RandomUnstructured, {amount = 0.25})
    assert.are.equal(60, a.weight_mask:sum():item() + b.weight_mask:sum():item())
  end)

  it("structured after unstructured: only the channels left are considered", function()
    local m = conv()
    prune.l1_unstructured(m, "weight", 0.25)
    prune.ln_structured(m, "weight", 0.34, 1, 1)
    assert_close({0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, flat(m.weight_mask))
    prune.ln_structured(m, "weight", {amount = 1, n = 2, dim = 1})
    local expect = {}
    for i = 1, 24 do expect[i] = i > 16 and 1 or 0 end
    assert_close(expect, flat(m.weight_mask))
  end)

  it("global_unstructured over several modules, twice", function()
    local a = linear(W)
    local b = linear({{0.15, -2.5}, {0.4, -0.02}})
    prune.global_unstructured({{a, "weight"}, {b, "weight"}}, prune.L1Unstructured, {amount = 0.4})
    assert_close({1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1}, flat(a.weight_mask))
    assert_close({0, 1, 1, 0}, flat(b.weight_mask))
    prune.global_unstructured({{a, "weight"}, {b, "weight"}}, prune.L1Unstructured, {amount = 3})
    assert_close({0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0}, flat(a.weight_mask))
    assert_close({0, 1, 0, 0}, flat(b.weight_mask))
    -- importance_scores: a list, one per entry
    local c = linear({{1, 2}, {3, 4}})
    prune.global_unstructured({{c, "weight"}}, prune.L1Unstructured,
      {amount = 1, importance_scores = {pt.tensor({{4, 3}, {2, 1}})}})
    assert_close({1, 1, 1, 0}, flat(c.weight_mask))
  end)

  it("custom_from_mask, then l1 among the rest; remove makes it permanent", function()
    local d = linear(W)
    prune.custom_from_mask(d, "weight", pt.tensor({{1, 0, 1, 1}, {1, 1, 1, 1}, {0, 1, 1, 1}}))
    prune.l1_unstructured(d, "weight", 2)
    assert_close({1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1}, flat(d.weight_mask))
    local orig = d.weight_orig
    assert.are.equal(d, prune.remove(d, "weight"))
    assert.are.same({"bias", "weight"}, keys(d))
    assert.are.equal(orig, d.weight)
    assert.are.equal(orig, d._parameters.weight)
    assert.is_true(d.weight.requires_grad)
    assert_close({0.5, 0, 0.3, 2.0, 0, 0.7, -1.5, 0.25, 0, 0, 0.9, -0.6}, flat(d.weight))
    assert.is_false(prune.is_pruned(d))
    assert.is_nil(rawget(d, "forward"))
  end)

  it("identity, is_pruned on a container, the state_dict round trip", function()
    local net = nn.Sequential(linear(W), nn.ReLU(), linear({{1, 2, 3}}))
    assert.is_false(prune.is_pruned(net))
    prune.identity(net[3], "weight")
    assert.is_true(prune.is_pruned(net))
    assert_close({{1, 1, 1}}, net[3].weight_mask)
    prune.l1_unstructured(net[1], "bias", 1)
    local sd = net:state_dict()
    assert.is_not_nil(sd["1.bias_orig"])
    assert.is_not_nil(sd["1.bias_mask"])
    assert.is_not_nil(sd["3.weight_orig"])
    local net2 = nn.Sequential(linear(W), nn.ReLU(), linear({{1, 2, 3}}))
    prune.identity(net2[3], "weight")
    prune.identity(net2[1], "bias")
    net2:load_state_dict(sd)
    local x = pt.tensor({{1, -2, 0.5, 3}})
    assert_close(net(x), net2(x))
    -- a Sequential does not fuse a pruned layer away from its mask
    local l = linear(W, {0.5, 0.5, 0.5})
    local seq = nn.Sequential(l, nn.ReLU())
    assert_close({{9.55, 0, 0.35}}, seq(x))
    prune.l1_unstructured(l, "weight", 1.0)
    prune.l1_unstructured(l, "bias", 1.0)
    assert_close({{0, 0, 0}}, seq(x))
  end)

  it("random_unstructured and random_structured: counts and structure", function()
    pt.manual_seed(3)
    local m = nn.Linear(10, 6)
    prune.random_unstructured(m, "weight", 0.3)
    assert.are.equal(42, m.weight_mask:sum():item())
    prune.random_unstructured(m, "weight", 10)
    assert.are.equal(32, m.weight_mask:sum():item())
    local c = nn.Conv2d(4, 6, 3)
    prune.random_structured(c, "weight", 2, 1)
    local per = c.weight_mask:reshape(6, -1):sum(2):tolist()
    local zeros = 0
    for _, s in ipairs(per) do
      assert.is_true(s == 0 or s == 36)
      if s == 0 then zeros = zeros + 1 end
    end
    assert.are.equal(2, zeros)
    prune.random_structured(c, "weight", 0.5, 1)
    zeros = 0
    for _, s in ipairs(c.weight_mask:reshape(6, -1):sum(2):tolist()) do if s == 0 then zeros = zeros + 1 end end
    assert.are.equal(4, zeros)
  end)

  it("gradients reach orig through the mask (finite differences)", function()
    local mask = pt.tensor({{1, 0, 1}, {0, 1, 1}}, {dtype = "float64"})
    local x = pt.tensor({{0.3, -1.1, 2.0}, {0.7, 0.2, -0.4}}, {dtype = "float64"})
    gradcheck(function(orig)
      local m = nn.Linear(3, 2, {dtype = "float64", bias = false})
      m.weight = orig
      prune.custom_from_mask(m, "weight", mask)
      return m(x)
    end, {pt.tensor({{0.5, -0.2, 0.1}, {1.5, 0.3, -0.7}}, {dtype = "float64"})})
  end)

  it("errors", function()
    local m = linear(W)
    assert_error("l1_unstructured: amount=1.5 should either be a float in the range [0, 1] or a non-negative integer",
      prune.l1_unstructured, m, "weight", 1.5)
    assert_error("l1_unstructured: amount=-1 should either be a float in the range [0, 1] or a non-negative integer",
      prune.l1_unstructured, m, "weight", -1)
    assert_error("l1_unstructured: Invalid type for amount: string. Must be int or float.",
      prune.l1_unstructured, m, "weight", "a")
    assert_error("l1_unstructured: amount=13 should be smaller than the number of parameters to prune=12",
      prune.l1_unstructured, m, "weight", 13)
    assert_error("l1_unstructured: Linear has no parameter 'nope'", prune.l1_unstructured, m, "nope", 0.5)
    assert_error("l1_unstructured: importance_scores should have the same shape as parameter weight of Linear ({3,4}, got {2})",
      prune.l1_unstructured, m, "weight", 0.5, pt.ones(2))
    assert_error("ln_structured: Structured pruning can only be applied to multidimensional tensors. Found tensor of shape {3} with 1 dims",
      prune.ln_structured, m, "bias", 1, 2, 1)
    assert_error("ln_structured: dim 3 out of range for a tensor with 2 dims", prune.ln_structured, m, "weight", 1, 2, 3)
    assert_error("ln_structured: n must be a number (math.huge, -math.huge for the max and min norms) or \"fro\", got string",
      prune.ln_structured, m, "weight", 1, "nuc", 1)
    assert_error("random_structured: missing argument 'dim'", prune.random_structured, m, "weight", 1)
    assert_error("custom_from_mask: mask has shape {2,2}, the tensor pruned {3,4}", prune.custom_from_mask, m, "weight", pt.ones(2, 2))
    assert_error("remove: Parameter 'weight' of module Linear has to be pruned before pruning can be removed",
      prune.remove, m, "weight")
    assert_error("is_pruned: module must be a Module, got number", prune.is_pruned, 3)
    assert_error("global_unstructured: parameters is not an Iterable (a list of {module, name}), got number",
      prune.global_unstructured, 3, prune.L1Unstructured, {amount = 1})
    assert_error("global_unstructured: Only \"unstructured\" PRUNING_TYPE supported for the `pruning_method`. Found method RandomStructured of type structured",
      prune.global_unstructured, {{m, "weight"}}, prune.RandomStructured, {amount = 1})
    -- nothing changed by the failed calls
    assert.is_false(prune.is_pruned(m))
    assert.are.same({"weight", "bias"}, keys(m))
  end)
end)
