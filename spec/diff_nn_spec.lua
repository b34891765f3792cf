-- Differential checks of nn's functional ops, layers and losses against PyTorch 1.13: each case
-- here was found wrong by comparing with torch (values from torch 1.13 unless said otherwise).
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}
local function d(t) return pt.tensor(t, F64) end

describe("batch_norm's per-channel tensors", function()
  -- a float32 weight with a float64 input was read as doubles: garbage (outputs ~1e-3 of torch's);
  -- torch refuses the mixed dtype
  it("must have the input's dtype", function()
    local x = pt.randn({4, 3, 5}, F64)
    local f32 = pt.ones({3})
    support.assert_error("batch_norm: weight has dtype float32, input has float64",
      F.batch_norm, x, nil, nil, f32, nil, true)
    support.assert_error("batch_norm: bias has dtype float32, input has float64",
      F.batch_norm, x, nil, nil, nil, f32, true)
    support.assert_error("batch_norm: running_mean has dtype float32, input has float64",
      F.batch_norm, x, f32, pt.ones({3}, F64), nil, nil, false)
    support.assert_error("batch_norm: running_var has dtype float32, input has float64",
      F.batch_norm, x, pt.zeros({3}, F64), f32, nil, nil, true)
    support.assert_error("batch_norm: weight has dtype float64, input has float32",
      pt.batch_norm, pt.randn({2, 3, 2, 2}), nil, nil, pt.ones({3}, F64))
    -- the matching dtypes still work: torch's value for x = {{1, 2}, {3, 6}}, weight {2, 0.5}
    local y = F.batch_norm(d({{1, 2}, {3, 6}}), nil, nil, d({2, 0.5}), d({0, 1}), true, 0.1, 0)
    assert_close(y, {{-2, 0.5}, {2, 1.5}})
  end)

  it("pt.batch_norm refuses an unknown option instead of ignoring it", function()
    -- pt.batch_norm(x, {weight = w}) silently normalised without the weight
    support.assert_error("batch_norm: unknown option 'weight' (options: training, momentum, eps)",
      pt.batch_norm, pt.randn({2, 3, 2, 2}), {weight = pt.ones({3})})
  end)
end)

describe("binary_cross_entropy_with_logits's pos_weight", function()
  -- pos_weight {C,1,1} for {N,C,H,W} scores (per-class weights of a segmentation) was refused
  -- ("does not match the last dimension"); torch broadcasts it
  local x = d({{{{0.5, -1.0}}, {{2.0, 0.25}}}, {{{-0.75, 1.5}}, {{0.0, -2.0}}}})
  local t = d({{{{1.0, 0.0}}, {{0.3, 1.0}}}, {{{0.0, 1.0}}, {{0.8, 0.2}}}})
  local pw = d({{{2.0}}, {{0.5}}})
  it("broadcasts to the input's shape (values from torch 1.13)", function()
    local l = F.binary_cross_entropy_with_logits(x, t, {pos_weight = pw, reduction = "none"})
    assert.are.same({2, 2, 1, 2}, l:size())
    assert_close(l, {0.9481539683602134, 0.3132616875182228, 1.5078888093865266, 0.28796970993942184,
      0.3868710061148999, 0.40282655596550493, 0.4158883083359672, 0.3142352099386754})
    local xr = x:clone():requires_grad_(true)
    local s = F.binary_cross_entropy_with_logits(xr, t, {pos_weight = pw})
    assert_close(s, {0.572136906944929})
    s:backward()
    assert_close(xr.grad, {-0.09438516719953635, 0.03361767767124939, 0.07483468953514998, -0.02736396869463762,
      0.04010266260307588, -0.04560638095158909, -0.012500000000000011, 0.0009103287274882261})
  end)
  it("names both shapes when it cannot broadcast", function()
    support.assert_error("binary_cross_entropy_with_logits: pos_weight shape {3} cannot be broadcast to input shape {3,4}",
      F.binary_cross_entropy_with_logits, pt.zeros({3, 4}), pt.zeros({3, 4}), {pos_weight = pt.ones({3})})
    support.assert_error("binary_cross_entropy_with_logits: pos_weight shape {2,3,4} cannot be broadcast to input shape {3,4}",
      F.binary_cross_entropy_with_logits, pt.zeros({3, 4}), pt.zeros({3, 4}), {pos_weight = pt.ones({2, 3, 4})})
  end)
end)

describe("embedding", function()
  local function w0()
    return d({{0.5, -1.0, 2.0}, {0.1, 0.2, -0.3}, {3.0, 4.0, 0.0}, {-1.0, 1.0, 1.0}})
  end
  local function long(t) return pt.tensor(t, {dtype = "int64"}) end

  it("takes a negative padding_idx from the end, as torch's (values from torch 1.13)", function()
    -- padding_idx = -1 (the last row) was passed on as a row number that matched nothing: the
    -- last row's gradient was not zeroed
    local w = w0():requires_grad_(true)
    F.embedding(long({1, 4, 2, 4}), w, {padding_idx = -1}):backward(pt.ones({4, 3}, F64))
    assert_close(w.grad, {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}})
    support.assert_error("embedding: padding_idx 5 out of range for 4 embeddings (1..4, or -4..-1)",
      F.embedding, long({1}), w0(), {padding_idx = 5})
    support.assert_error("embedding: padding_idx -5 out of range for 4 embeddings (1..4, or -4..-1)",
      F.embedding, long({1}), w0(), {padding_idx = -5})
  end)

  -- the C side of F.embedding's max_norm (nn.lua's nn.embedding still has to pass it on)
  it("renormalises the looked-up rows in place with max_norm (values from torch 1.13)", function()
    local w = w0()
    local y = pt._nn_embedding(w, long({{1, 3}, {3, 4}}), 0, 2.0)
    assert_close(y, {0.4364357614243666, -0.8728715228487332, 1.7457430456974663, 1.1999999760000004,
      1.5999999680000005, 0.0, 1.1999999760000004, 1.5999999680000005, 0.0, -1.0, 1.0, 1.0})
    assert_close(w, {0.4364357614243666, -0.8728715228487332, 1.7457430456974663, 0.1, 0.2, -0.3,
      1.1999999760000004, 1.5999999680000005, 0.0, -1.0, 1.0, 1.0})
    w = w0()
    pt._nn_embedding(w, long({{1, 3}, {3, 4}}), 0, 1.5, 1.0)
    assert_close(w, {0.2142857081632655, -0.428571416326531, 0.857142832653062, 0.1, 0.2, -0.3,
      0.6428571336734695, 0.8571428448979593, 0.0, -0.4999999833333339, 0.4999999833333339, 0.4999999833333339})
    -- an index out of range is refused before any row changes
    w = w0()
    support.assert_error("embedding: index 5 out of range for 4 embeddings", pt._nn_embedding, w, long({1, 5}), 0, 0.5)
    assert_close(w, w0())
  end)
end)

describe("torch's keyword arguments as an options table", function()
  -- F.leaky_relu(x, {negative_slope=}), F.softmax(x, {dim=}) and F.dropout(x, {p=, training=})
  -- failed with "bad argument #2 to '_nn_leaky_relu' (number expected, got table)"
  local x = d({{-2.0, 0.5, 3.0}, {1.0, -1.0, 0.0}})
  it("leaky_relu takes {negative_slope=} (values from torch 1.13)", function()
    assert_close(F.leaky_relu(x, {negative_slope = 0.2}), {{-0.4, 0.5, 3.0}, {1.0, -0.2, 0.0}})
    assert_close(F.leaky_relu(x, 0.2), {{-0.4, 0.5, 3.0}, {1.0, -0.2, 0.0}})
    support.assert_error("leaky_relu: unknown option 'negative_slop' (options: negative_slope, inplace)",
      F.leaky_relu, x, {negative_slop = 0.2})
    support.assert_error("leaky_relu: option 'negative_slope' must be a number, got string",
      F.leaky_relu, x, {negative_slope = "a"})
    support.assert_error("leaky_relu: negative_slope must be a number or an options table, got string",
      F.leaky_relu, x, "a")
  end)
  it("softmax and log_softmax take {dim=} (values from torch 1.13)", function()
    assert_close(F.softmax(x, {dim = 1}), {{0.04742587317756679, 0.8175744761936437, 0.9525741268224334},
      {0.9525741268224334, 0.18242552380635632, 0.04742587317756679}})
    assert_close(F.log_softmax(x, {dim = -1}), {{-5.0850972463643105, -2.58509724636431, -0.08509724636431015},
      {-0.4076059644443804, -2.4076059644443806, -1.4076059644443804}})
    support.assert_error("softmax: unknown option 'dims' (options: dim)", F.softmax, x, {dims = 1})
    support.assert_error("log_softmax: dimension 3 out of range (tensor has 2 dimensions)", F.log_softmax, x, {dim = 3})
  end)
  it("dropout takes {p=, training=}", function()
    assert.is_true(F.dropout(x, {p = 0.7, training = false}):equal(x))
    assert_close(F.dropout(x, {p = 1}), {{0, 0, 0}, {0, 0, 0}})
    support.assert_error("dropout: probability has to be between 0 and 1, but got 2", F.dropout, x, {p = 2})
    support.assert_error("dropout: unknown option 'prob' (options: p, training, inplace)", F.dropout, x, {prob = 0.1})
  end)
end)

describe("pt.conv_transpose3d", function()
  -- torch's F.conv_transpose3d had no counterpart (nn.functional.conv_transpose3d was nil)
  local function seq(shape, a, b, f)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return f((pt.arange(0, n, F64) * a + b)):reshape(shape)
  end
  it("matches torch with stride, padding, output_padding and groups (values from torch 1.13)", function()
    local x = seq({2, 4, 2, 2, 3}, 0.37, 0, pt.sin):requires_grad_(true)
    local w = seq({4, 1, 3, 2, 2}, 0.53, 0.2, pt.cos):requires_grad_(true)
    local b = d({0.5, -0.25}):requires_grad_(true)
    local y = pt.conv_transpose3d(x, w, b, {stride = {2, 1, 2}, padding = {1, 0, 1}, output_padding = {1, 0, 0},
      groups = 2})
    assert.are.same({2, 2, 4, 3, 4}, y:size())
    assert_close(y:sum(), {22.215292334712082}, 1e-12)
    assert_close(y[{2, 2, 3}], {-0.6520482922982129, -0.2527276236332544, -0.21512031495355463, 0.10084397601619222,
      0.4051252885655442, 0.6870210442191313, 0.915596133312804, 1.1781403628190472, 0.2699359285178049,
      0.76010426049151, 0.4011439819515007, 0.8476815327546856})
    ;(y * y):sum():backward()
    assert_close(x.grad:reshape(-1)[{{1, 6}}], {-3.9091229981417563, -4.943820144921037, -1.4434017529881096,
      -1.4221042189191144, 1.6901214508987044, 2.2544708331366143})
    assert_close(w.grad:reshape(-1)[{{1, 6}}], {8.961480576011564, 4.809032250983634, 2.324617789988511,
      -3.4239468265494923, 4.3460763095258725, -3.032704095594594})
    assert_close(b.grad, {105.53969903327825, -61.10911436385411})
  end)
  it("takes an unbatched input and checks its arguments", function()
    local x, w = pt.randn({2, 3, 2, 2}, F64), pt.randn({2, 3, 2, 2, 2}, F64)
    local y = pt.conv_transpose3d(x, w)
    assert.are.same({3, 4, 3, 3}, y:size())
    assert_close(y, pt.conv_transpose3d(x:unsqueeze(1), w)[1], 1e-15)
    support.assert_error("conv_transpose3d: input has 3 channels, expected 2 (input shape {1,3,2,2,2}, weight shape {2,3,2,2,2})",
      pt.conv_transpose3d, pt.randn({1, 3, 2, 2, 2}, F64), w)
    support.assert_error("conv_transpose3d: output_padding {0,0,2} must be smaller than either stride {2,2,2} or dilation {1,1,1}",
      pt.conv_transpose3d, x, w, {stride = 2, output_padding = {0, 0, 2}})
    support.assert_error("conv_transpose3d: output size 4x-3x3 is too small (input shape {2,3,2,2}, weight shape {2,3,2,2,2})",
      pt.conv_transpose3d, x, w, {padding = {0, 3, 0}})
    support.assert_error("conv_transpose3d: option 'stride' must be an integer or a triple {d, h, w}",
      pt.conv_transpose3d, x, w, {stride = {2, 2}})
    support.assert_error("conv_transpose3d: unknown option 'strides' (options: stride, padding, output_padding, groups, dilation)",
      pt.conv_transpose3d, x, w, {strides = 2})
    support.assert_error("conv_transpose3d: weight has dtype float32, input has float64",
      pt.conv_transpose3d, x, pt.randn({2, 3, 2, 2, 2}))
  end)
end)

describe("argument errors of the fused layers", function()
  -- torch-style keyword tables at a positional slot failed with the internal binding's name:
  -- "bad argument #4 to '_nn_batch_norm' (Tensor expected, got table)"
  local x = pt.randn({3, 4}, F64)
  it("name the function and the argument", function()
    support.assert_error("batch_norm: weight must be a Tensor or nil, got table (nn.batch_norm's arguments are positional: "
      .. "x, running_mean, running_var, weight, bias, training, momentum, eps; pt.batch_norm takes an options table)",
      F.batch_norm, x, nil, nil, {training = true})
    support.assert_error("layer_norm: weight must be a Tensor or nil, got table (layer_norm's arguments are positional: "
      .. "x, normalized_shape, weight, bias, eps)", F.layer_norm, x, {4}, {eps = 1})
    support.assert_error("layer_norm: normalized_shape must be an integer or a table of them, got string",
      F.layer_norm, x, "4")
    support.assert_error("linear: weight must be a Tensor, got table", F.linear, x, {1})
    support.assert_error("linear: bias must be a Tensor or nil, got number", F.linear, x, pt.randn({2, 4}, F64), 5)
  end)
end)

describe("linear's bias", function()
  -- a bias of another shape than {out} that broadcasts (torch's F.linear takes {1}, a scalar, {N,out})
  -- was refused: "linear: bias shape {1} does not match weight shape {2,2}"
  it("broadcasts to the output (values from torch 1.13)", function()
    local x = d({{1, 2}, {3, -1}, {0.5, 0.25}}):requires_grad_(true)
    local w = d({{0.5, -1}, {2, 1}}):requires_grad_(true)
    local b = d({0.3}):requires_grad_(true)
    local y = F.linear(x, w, b)
    assert_close(y, {{-1.2, 4.3}, {2.8, 5.3}, {0.3, 1.55}})
    ;(y * y):sum():backward()
    assert_close(x.grad, {{16.0, 11.0}, {24.0, 5.0}, {6.5, 2.5}})
    assert_close(w.grad, {{14.7, -10.249999999999998}, {41.949999999999996, 7.375}})
    assert_close(b.grad, {26.1})
    assert_close(F.linear(x, w, d(0.3)), {{-1.2, 4.3}, {2.8, 5.3}, {0.3, 1.55}})
    support.assert_error("linear: bias shape {3} cannot be broadcast to the output shape {3,2} (weight shape {2,2})",
      F.linear, x, w, d({1, 2, 3}))
  end)
end)

describe("conv_transpose with a 1x1 kernel and output_padding", function()
  -- the 1x1 shortcut of the im2col kernels took the planes to be the same size, which
  -- output_padding (allowed below the dilation) breaks: the rows came out shifted by one element
  -- per row and the last ones were missing ({1,2,3,4} output, bias-only column misplaced)
  it("matches torch (values from torch 1.13)", function()
    local x = d({{{{1, 2, 3}, {4, 5, 6}}, {{0.5, -1, 2}, {1, 0, -2}}}}):requires_grad_(true)
    local w = d({{{{2}}, {{-1}}}, {{{0.5}}, {{3}}}}):requires_grad_(true)
    local b = d({0.1, -0.2}):requires_grad_(true)
    local y = F.conv_transpose2d(x, w, b, {dilation = 2, output_padding = {1, 1}})
    assert.are.same({1, 2, 3, 4}, y:size())
    assert_close(y, {{{{2.35, 3.6, 7.1, 0.1}, {8.6, 10.1, 11.1, 0.1}, {0.1, 0.1, 0.1, 0.1}},
      {{0.3, -5.2, 2.8, -0.2}, {-1.2, -5.2, -12.2, -0.2}, {-0.2, -0.2, -0.2, -0.2}}}})
    y:backward(pt.arange(0, y:numel(), F64):reshape(y:size()) * 0.1)
    assert_close(x.grad, {{{{-1.2000000000000002, -1.1, -1.0}, {-0.8, -0.7000000000000002, -0.5999999999999999}},
      {{3.6000000000000005, 3.95, 4.300000000000001}, {5.0, 5.3500000000000005, 5.7}}}})
    assert_close(w.grad, {8.5, 33.7, -0.5000000000000001, 0.10000000000000053})
    assert_close(b.grad, {6.6, 21.0})
  end)
end)

describe("max pooling over a window without input elements", function()
  -- dilation and padding can leave a window only on padding: its maximum was 0, torch's is -inf
  it("is -inf, as torch's (values from torch 1.13)", function()
    local x = d({{{{1.5}, {-2}, {3}}}})
    local inf = math.huge -- (assert_close cannot tell infinities apart: compared exactly)
    assert.are.same({-inf, -inf, -inf}, support.flat(F.max_pool2d(x, 2, {stride = 1, padding = 1, dilation = 2}):tolist()))
    assert.are.same({-inf, -inf, -inf},
      support.flat(F.max_pool2d(x, 2, {stride = 1, padding = 1, dilation = 2, relu = true}):tolist()))
    assert.are.same({-inf}, support.flat(F.max_pool1d(d({{{-1, -3}}}), 2, {stride = 1, padding = 1, dilation = 3}):tolist()))
    -- a window with an element is unchanged: {{1, -2}, {3, 4}} as torch
    assert.are.same({4, 3, -2, 1}, support.flat(F.max_pool2d(d({{{{1, -2}, {3, 4}}}}), 2,
      {stride = 1, padding = 1, dilation = 2}):tolist()))
  end)
end)

describe("nn's Lua layer over the C fixes (torch 1.13's values)", function()
  local support = require "spec.support"
  local F64 = {dtype = "float64"}
  it("nn.ConvTranspose3d and nn.conv_transpose3d run pt.conv_transpose3d", function()
    local m = pt.nn.ConvTranspose3d(2, 3, 2, {stride = 2, padding = 1, output_padding = 1, dtype = "float64"})
    pt.no_grad(function()
      m.weight:copy_(pt.arange(1, 49, F64):view(2, 3, 2, 2, 2) / 50)
      m.bias:copy_(pt.tensor({0.1, -0.2, 0.3}, F64))
    end)
    local x = (pt.arange(1, 109, F64):view(2, 2, 3, 3, 3) / 30):sin():requires_grad_()
    local y = m(x)
    assert.are.same({2, 3, 5, 5, 5}, y:size())
    -- torch: F.conv_transpose3d(...).sum() = 408.3814256480
    assert.is_true(math.abs(y:sum():item() - 408.3814256480) < 1e-8)
    assert.are.equal(pt.conv_transpose3d, pt.nn.conv_transpose3d)
    local ys = m(x, {5, 5, 5}) -- output_size picks the same output_padding
    assert.are.same({2, 3, 5, 5, 5}, ys:size())
  end)
  it("Embedding's max_norm renormalises the looked-up rows in place (torch: 3.2230995312, 25.7230995312)", function()
    local e = pt.nn.Embedding(5, 3, {max_norm = 1.0, dtype = "float64"})
    pt.no_grad(function() e.weight:copy_(pt.arange(1, 16, F64):view(5, 3) / 4) end)
    local out = e(pt.tensor({1, 3}, {dtype = "int64"}))
    assert.is_true(math.abs(out:sum():item() - 3.2230995312) < 1e-9)
    assert.is_true(math.abs(e.weight:sum():item() - 25.7230995312) < 1e-9)
    local o2 = pt.nn.embedding(pt.tensor({2}, {dtype = "int64"}), pt.arange(1, 7, F64):view(2, 3), {max_norm = 1})
    assert.is_true(math.abs(o2:norm():item() - 1) < 1e-6)
    support.assert_error("embedding: unknown option 'maxnorm' (options: padding_idx, max_norm, norm_type)",
      function() pt.nn.embedding(pt.tensor({1}, {dtype = "int64"}), pt.ones(2, 2), {maxnorm = 1}) end)
  end)
  it("Embedding.from_pretrained wraps the tensor, frozen unless freeze=false; padding_idx -1 is the last row", function()
    local w = pt.tensor({{1, 2}, {3, 4}})
    local pre = pt.nn.Embedding.from_pretrained(w)
    assert.is_false(pre.weight.requires_grad)
    assert.are.same({{3, 4}}, pre(pt.tensor({2}, {dtype = "int64"})):tolist())
    assert.is_true(pt.nn.Embedding.from_pretrained(w, {freeze = false}).weight.requires_grad)
    assert.are.equal(5, pt.nn.Embedding(5, 2, {padding_idx = -1}).padding_idx)
  end)
  it("F.gelu takes the approximation as a string too; softmax takes {dtype=}; instance_norm of an empty batch", function()
    local g = pt.nn.gelu(pt.tensor({0.5, -1.5}, F64), "tanh")
    -- torch: F.gelu(approximate="tanh") = 0.345714009825, -0.100428423020
    assert.is_true(math.abs(g[1] - 0.345714009825) < 1e-11 and math.abs(g[2] + 0.100428423020) < 1e-11)
    support.assert_error("gelu: unknown option 'approx' (options: approximate)",
      function() pt.nn.gelu(pt.ones(1), {approx = "tanh"}) end)
    assert.are.equal("float64", pt.nn.softmax(pt.tensor({1, 2}), 1, {dtype = "float64"}):dtype())
    assert.are.same({0, 3, 4}, pt.nn.instance_norm(pt.zeros(0, 3, 4)):size())
  end)
end)
