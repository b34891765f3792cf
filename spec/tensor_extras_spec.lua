-- pt.full_like, broadcast_shapes / broadcast_to, the window functions and pt.gradient against torch
-- 1.13's values (windows in float32 as torch computes them: bitwise where the same ops run).
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}
local function near(t, list, tol)
  local flat = t:reshape(-1)
  assert.are.equal(#list, flat:numel())
  for i = 1, #list do
    assert.is_true(math.abs(flat[i] - list[i]) <= (tol or 1e-7), string.format("entry %d: %.9g vs %.9g", i, flat[i], list[i]))
  end
end

describe("full_like, broadcast_shapes, broadcast_to", function()
  it("as torch", function()
    local a = pt.full_like(pt.ones({2}, {dtype = "int64"}), 2.7)
    assert.are.equal("int64", a:dtype())
    assert.are.same({2, 2}, a:tolist())
    local b = pt.full_like(pt.ones(2, 3), 0.5, {dtype = "float64", requires_grad = true})
    assert.are.same({2, 3}, b:size())
    assert.are.equal("float64", b:dtype())
    assert.is_true(b.requires_grad)
    assert.are.same({1, 2, 3}, pt.broadcast_shapes({2, 1}, {3}, {1, 1, 1}))
    assert.are.same({4}, pt.broadcast_shapes(4, {1}))
    assert.are.same({2, 3}, pt.ones(2, 1):broadcast_to({2, 3}):size())
    assert.are.same({3, 2, 2}, pt.broadcast_to(pt.ones(2, 1), {3, -1, 2}):size())
    support.assert_error("broadcast_shapes: shape mismatch: objects cannot be broadcast to a single shape (size 3 "
      .. "against 2 at dimension 1)", pt.broadcast_shapes, {2}, {3})
    support.assert_error("full_like: fill value must be a number or a boolean, got string", pt.full_like, pt.ones(2), "x")
    support.assert_error("broadcast_to: shape must be a list of sizes, got string", pt.broadcast_to, pt.ones(2), "x")
  end)
end)

describe("the window functions", function()
  it("give torch's windows, periodic and symmetric", function()
    near(pt.hann_window(5), {0, 0.345491529, 0.904508531, 0.904508471, 0.345491439})
    near(pt.hann_window(5, false), {0, 0.5, 1, 0.5, 0})
    near(pt.hann_window(8, {dtype = "float32"}), {0, 0.146446615, 0.5, 0.853553414, 1, 0.853553295, 0.5, 0.146446496})
    near(pt.hamming_window(7), {0.0800000131, 0.25319472, 0.642359674, 0.95444572, 0.95444572, 0.642359674, 0.2531946})
    near(pt.hamming_window(6, false, 0.6, 0.4), {0.200000018, 0.476393223, 0.923606873, 0.923606813, 0.476393163, 0.200000018})
    near(pt.hamming_window(6, {periodic = false, alpha = 0.6, beta = 0.4}), {0.200000018, 0.476393223, 0.923606873, 0.923606813, 0.476393163, 0.200000018})
    near(pt.blackman_window(7), {-2.98023224e-08, 0.0904534161, 0.459182948, 0.920363665, 0.920363545, 0.459182978, 0.0904533267})
    near(pt.blackman_window(6, false), {-2.98023224e-08, 0.20077014, 0.849229932, 0.849229813, 0.20077008, -2.98023224e-08})
    near(pt.bartlett_window(7), {0, 0.285714298, 0.571428597, 0.857142925, 0.857142806, 0.571428537, 0.285714149})
    near(pt.bartlett_window(6, false), {0, 0.400000006, 0.800000012, 0.799999952, 0.399999976, 0})
    near(pt.kaiser_window(7), {5.27734373e-05, 0.0327682905, 0.330898523, 0.888868392, 0.888868392, 0.330898523, 0.0327682905})
    near(pt.kaiser_window(6, false, 5.0), {0.0367108881, 0.414903581, 0.91381228, 0.91381228, 0.414903581, 0.0367108881})
    assert.are.same({1}, pt.hann_window(1):tolist())
    assert.are.same({0}, pt.kaiser_window(0):size())
    assert.are.equal("float64", pt.blackman_window(4, {dtype = "float64"}):dtype())
  end)
  it("check their arguments", function()
    support.assert_error("hann_window: requires non-negative window_length, got window_length=-1", pt.hann_window, -1)
    support.assert_error("hann_window: expects floating point dtypes, got: int64", pt.hann_window, 3, {dtype = "int64"})
    support.assert_error("hamming_window: alpha given twice (as an argument and as an option)", pt.hamming_window, 3,
      true, 0.5, {alpha = 1})
    support.assert_error("bartlett_window: unknown option 'beta' (options: dtype, periodic)", pt.bartlett_window, 3,
      {beta = 1})
    support.assert_error("kaiser_window: periodic must be a boolean, got number", pt.kaiser_window, 3, 1)
  end)
end)

describe("gradient", function()
  local f = pt.tensor({1, 4, 9, 16, 25})
  local coords = pt.tensor({0, 1, 1.5, 3, 4})
  it("gives torch's derivatives", function()
    near(pt.gradient(f)[1], {3, 4, 6, 8, 9})
    near(pt.gradient(f, {spacing = 2})[1], {1.5, 2, 3, 4, 4.5})
    near(pt.gradient(f, {edge_order = 2})[1], {2, 4, 6, 8, 10})
    near(pt.gradient(f, {spacing = {coords}})[1], {3.0, 7.666666507720947, 8.666666984558105, 7.266667366027832, 9.0}, 1e-6)
    near(pt.gradient(f, {spacing = {coords}, edge_order = 2})[1],
      {-1.6666669845581055, 7.666666507720947, 8.666666984558105, 7.266667366027832, 10.733333587646484}, 1e-5)
    local x = pt.tensor({{1, 2, 4, 8}, {10, 20, 40, 80}})
    local g = pt.gradient(x)
    assert.are.equal(2, #g)
    near(g[1], {9, 18, 36, 72, 9, 18, 36, 72})
    near(g[2], {1, 1.5, 3, 4, 10, 15, 30, 40})
    near(pt.gradient(x, {dim = 2})[1], {1, 1.5, 3, 4, 10, 15, 30, 40})
    near(pt.gradient(x, {spacing = {2, 3}})[2], {1 / 3, 0.5, 1, 4 / 3, 10 / 3, 5, 10, 40 / 3}, 1e-6)
    local i = pt.gradient(pt.tensor({1, 4, 9}, {dtype = "int64"}))[1]
    assert.are.equal("float32", i:dtype())
    near(i, {3, 4, 5})
  end)
  it("has gradients (float64 finite differences)", function()
    local t = pt.randn(3, 5, F64)
    assert.is_true(gradcheck(function(a) return pt.gradient(a, {dim = 2, edge_order = 2})[1] end, {t}))
    assert.is_true(gradcheck(function(a, c) return pt.gradient(a, {dim = 2, spacing = {c}})[1] end,
      {t, pt.tensor({0, 0.5, 1.7, 2, 3.1}, F64)}))
  end)
  it("explains bad arguments", function()
    support.assert_error("gradient: expected each dimension size to be at least edge_order+1 (dimension 1 has size 2)",
      pt.gradient, pt.tensor({1, 2}), {edge_order = 2})
    support.assert_error("gradient: only supports edge_order=1 and edge_order=2, got 3", pt.gradient, f, {edge_order = 3})
    support.assert_error("gradient: expected spacing to be a number or one entry per dimension: 1 dimensions, 2 "
      .. "spacings", pt.gradient, f, {spacing = {1, 2}})
    support.assert_error("gradient: the coordinates of dimension 1 must be a 1-D tensor of its size 5, got shape {3}",
      pt.gradient, f, {spacing = {pt.ones(3)}})
    support.assert_error("gradient: spacing must be a number or a list of numbers or of 1-D coordinate tensors, got a "
      .. "tensor (put it in a list)", pt.gradient, f, {spacing = coords})
  end)
end)

describe("torch.* names of nn.functional's ops", function()
  it("are the same functions where torch's signature is F's", function()
    local F = pt.nn.functional
    for _, name in ipairs({"conv1d", "conv3d", "conv_transpose1d", "conv_transpose3d", "pixel_shuffle",
                           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "pdist", "cosine_similarity",
                           "pairwise_distance", "prelu", "selu", "celu", "rrelu", "hardshrink", "threshold", "bilinear",
                           "avg_pool1d", "max_pool1d", "max_pool3d", "max_pool1d_with_indices", "adaptive_avg_pool1d"}) do
      -- the same function (busted's insulation reloads nn per spec file: compare by docs then)
      assert.is_function(pt[name], name)
      assert.is_true(pt[name] == F[name] or pt._docs[pt[name]] == pt._docs[F[name]], name)
    end
    assert.are.same({0, 2}, pt.threshold(pt.tensor({0.5, 2}), 1, 0):tolist())
    assert.are.same({1, 3, 4}, pt.conv1d(pt.ones(1, 2, 5), pt.ones(3, 2, 2)):size())
  end)
end)
