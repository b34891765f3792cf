-- pt.autograd.grad (create_graph: higher-order gradients), tensor hooks (t:register_hook,
-- retain_grad) and nn.Module hooks (forward pre-hooks, forward hooks, full backward hooks).
-- Reference values were computed once with /usr/bin/python3 and torch 1.13.0a0 on the same
-- inputs (the script is not run at test time); second derivatives are also checked against
-- float64 finite differences of the recorded first derivatives.
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}
local grad = pt.autograd.grad

local function t64(v) return pt.tensor(v, F64) end
local function leaf(v) return pt.tensor(v, F64):requires_grad_() end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

local function assert_err(text, f, ...)
  local msg = err_of(f, ...)
  if not msg:find(text, 1, true) then
    error(string.format("expected error containing %q, got %q", text, msg), 2)
  end
end

-- deterministic values in [-1, 1) of a given shape (float64)
local function det(...)
  local t = pt.zeros({...}, F64)
  for i = 1, t:numel() do t:_set_flat(i, math.sin(1.7 * i + 0.3)) end
  return t
end

-- Checks the second derivatives of f: the vector-Jacobian product (inputs, v) -> J^T v of f,
-- computed by autograd.grad with create_graph, is differentiated (its backward through the
-- recorded graph, with respect to the inputs and to v) and compared with finite differences.
local function gradgradcheck(f, inputs, opts)
  local y0 = pt.no_grad(f, table.unpack(inputs))
  local v = det(table.unpack(y0:size()))
  if y0:dim() == 0 then v = pt.tensor(0.7, F64) end
  local all = {table.unpack(inputs)}
  all[#all + 1] = v
  return gradcheck(function(...)
    local args = table.pack(...)
    local vv = args[args.n]
    return pt.enable_grad(function()
      local y = f(table.unpack(args, 1, args.n - 1))
      local xs = {}
      for i = 1, args.n - 1 do
        if pt.is_tensor(args[i]) and args[i].requires_grad then xs[#xs + 1] = args[i] end
      end
      local gs = grad(y, xs, {grad_outputs = vv, create_graph = true, allow_unused = true})
      local parts = {}
      for i, x in ipairs(xs) do parts[i] = (gs[i] or pt.zeros_like(x)):reshape(-1) end
      return #parts == 1 and parts[1] or pt.cat(parts)
    end)
  end, all, opts)
end

describe("pt.autograd.grad", function()
  it("returns the gradients of outputs with respect to inputs and leaves every .grad alone", function()
    local x, w = leaf({1, 2, 3}), leaf({0.5, -1, 2})
    local y = (x * w):sum() + (x ^ 2):sum()
    local g = grad(y, {x, w}, {retain_graph = true})
    assert.are.equal(2, #g)
    assert_close(g[1], {2.5, 3, 8})
    assert_close(g[2], {1, 2, 3})
    assert.is_nil(x.grad)
    assert.is_nil(w.grad)
    -- a tensor in, a tensor out
    local gx = grad(y, x)
    assert.is_true(pt.is_tensor(gx))
    assert_close(gx, {2.5, 3, 8})
    assert.is_nil(gx.grad_fn)
    assert.is_nil(x.grad)
  end)

  it("sums over several outputs, with grad_outputs for the non-scalar ones", function()
    local x = leaf({1, 2})
    local a, b = x * 3, (x * x):sum()
    local g = grad({a, b}, x, {grad_outputs = {t64({1, 10}), nil}})
    assert_close(g, {3 + 2, 30 + 4})
    local c = x * x
    assert_close(grad(c, x, {grad_outputs = t64({1, 1})}), {2, 4})
    -- a grad_outputs of another dtype takes the output's
    local d = x * x
    assert.are.equal("float64", grad(d, x, {grad_outputs = pt.tensor({1, 1})}):dtype())
  end)

  it("gives the gradient of a non-leaf input, and of an output with respect to itself", function()
    local a = leaf({1, 2})
    local b = a * 3
    local y = (b * b):sum()
    local g = grad(y, {b, a}, {retain_graph = true})
    assert_close(g[1], {6, 12})
    assert_close(g[2], {18, 36})
    assert_close(grad(b, b, {grad_outputs = t64({1, 1})}), {1, 1})
    assert_close(grad(a, a, {grad_outputs = t64({4, 5})}), {4, 5})
  end)

  it("gives nil for inputs the outputs do not depend on with allow_unused", function()
    local x, z = leaf({1, 2, 3}), leaf({1, 2})
    local g = grad((x * 2):sum(), {x, z}, {allow_unused = true})
    assert_close(g[1], {2, 2, 2})
    assert.is_nil(g[2])
    assert.is_nil(grad((x * 2):sum(), z, {allow_unused = true}))
  end)

  it("runs only the part of the graph that leads to the inputs", function()
    local x, w = leaf({1, 2}), leaf({3, 4})
    local u = w * 2
    local ran = false
    u:register_hook(function() ran = true end)
    local y = (x * x):sum() + u:sum()
    assert_close(grad(y, x, {retain_graph = true}), {2, 4})
    assert.is_false(ran)
    y:backward()
    assert.is_true(ran)
  end)

  it("frees the graph without retain_graph (the default unless create_graph), as backward", function()
    local x = leaf({1, 2})
    local y = (x * x):sum()
    grad(y, x)
    assert_err("autograd.grad: trying to backward through the graph a second time", grad, y, x)
    local y2 = (x * x):sum()
    grad(y2, x, {retain_graph = true})
    assert_close(grad(y2, x), {2, 4})
    local y3 = (x * x):sum()
    grad(y3, x, {create_graph = true})
    assert_close(grad(y3, x), {2, 4}) -- create_graph retains by default
  end)

  it("names every wrong argument", function()
    local x = leaf({1, 2, 3})
    assert_err("autograd.grad: grad can be implicitly created only for scalar outputs (outputs[1] has shape {3}; pass grad_outputs)",
      grad, x * 2, x)
    assert_err("autograd.grad: one of the differentiated tensors (inputs[2]) appears to not have been used in the graph (set allow_unused = true if this is the desired behavior)",
      grad, (x * 2):sum(), {x, leaf({1})})
    assert_err("autograd.grad: one of the differentiated tensors (inputs[1]) does not require grad",
      grad, (x * 2):sum(), pt.ones(3))
    assert_err("autograd.grad: element 2 of tensors does not require grad and does not have a grad_fn",
      grad, {(x * 2):sum(), pt.ones(1)}, x)
    assert_err("autograd.grad: mismatch in shape: grad_outputs[1] has shape {2} and outputs[1] has shape {3}",
      grad, x * 2, x, {grad_outputs = t64({1, 1})})
    assert_err("autograd.grad: got 2 outputs and 3 grad_outputs",
      grad, {x:sum(), x:sum()}, x, {grad_outputs = {t64(1), t64(1), t64(1)}})
    assert_err("autograd.grad: got 2 outputs and 1 grad_outputs", grad, {x:sum(), x:sum()}, x, {grad_outputs = t64(1)})
    assert_err("autograd.grad: grad_outputs[1] must be a tensor or nil, got number", grad, x:sum(), x, {grad_outputs = {1}})
    assert_err("autograd.grad: grad_outputs must be a tensor or a list of tensors, got string",
      grad, x:sum(), x, {grad_outputs = "ones"})
    assert_err("autograd.grad: outputs must be a tensor or a list of tensors, got number", grad, 1, x)
    assert_err("autograd.grad: inputs must be a tensor or a list of tensors, got nil", grad, x:sum())
    assert_err("autograd.grad: inputs is an empty list", grad, x:sum(), {})
    assert_err("autograd.grad: outputs is an empty list", grad, {}, x)
    assert_err("autograd.grad: outputs[2] is not a tensor (got string)", grad, {x:sum(), "y"}, x)
    assert_err("autograd.grad: inputs[1] is not a tensor (got number)", grad, x:sum(), {1})
    assert_err("autograd.grad: unknown option 'retain_grpah' (options: grad_outputs, retain_graph, create_graph, allow_unused)",
      grad, x:sum(), x, {retain_grpah = true})
    assert_err("autograd.grad: expected an options table as argument 3, got boolean", grad, x:sum(), x, true)
    assert_err("autograd.grad: unexpected argument #4", grad, x:sum(), x, {}, 1)
    -- the position is the caller's
    assert.matches("^spec/autograd_more_spec%.lua:%d+: autograd%.grad:", err_of(grad, x * 2, x))
  end)
end)

describe("create_graph", function()
  it("records the backward pass: derivatives of every order of x^3 and x sin x", function()
    local x = leaf({1, 2, 3})
    local g = grad((x ^ 3):sum(), x, {create_graph = true})
    assert_close(g, {3, 12, 27})
    assert.is_not_nil(g.grad_fn)
    local g2 = grad(g:sum(), x, {create_graph = true})
    assert_close(g2, {6, 12, 18})
    assert_close(grad(g2:sum(), x), {6, 6, 6})
    -- torch 1.13
    local z = leaf({0.3, 1.2})
    local g1 = grad((z:sin() * z):sum(), z, {create_graph = true})
    local h = grad(g1:sum(), z, {create_graph = true})
    local h3 = grad(h:sum(), z)
    assert_close(g1, {0.5821211533990214, 1.3668683913392345})
    assert_close(h, {1.8220169162528101, -0.39373139420732417})
    assert_close(h3, {-1.1731615667217006, -3.230946563273687})
  end)

  it("gives a gradient without history where it does not depend on anything that requires grad", function()
    local x = leaf({1, 2})
    local g = grad((x * 2):sum(), x, {create_graph = true})
    assert_close(g, {2, 2})
    assert.is_false(g.requires_grad)
  end)

  it("loss:backward({create_graph = true}) accumulates .grad with history, out of place", function()
    local x = leaf({1, 2})
    ;(x ^ 3):sum():backward({create_graph = true})
    assert_close(x.grad, {3, 12})
    assert.is_not_nil(x.grad.grad_fn)
    local first = x.grad
    ;(x ^ 3):sum():backward({create_graph = true})
    assert_close(x.grad, {6, 24})
    assert_close(first, {3, 12}) -- not added into
    assert_close(grad(x.grad:sum(), x), {12, 24})
    x.grad = nil -- the gradient's history holds x: drop it (as PyTorch advises)
    -- backward(grad, opts) too; a non-leaf with retain_grad gets its gradient with history
    local y = x * x
    y:retain_grad()
    y:backward(t64({1, 1}), {create_graph = true})
    assert_close(y.grad, {1, 1})
    assert_close(x.grad, {2, 4})
    assert.is_not_nil(x.grad.grad_fn)
    x.grad = nil
    assert_err("backward: unknown option 'create_grahp' (options: retain_graph, create_graph, inputs)", function()
      (x * x):sum():backward({create_grahp = true})
    end)
  end)

  it("gets second derivatives right through the elementwise ops (float64 finite differences)", function()
    local pos = t64({0.3, 0.7, 1.4, 2.2})
    local any = t64({-1.3, -0.4, 0.6, 1.9})
    local unit = t64({-0.8, -0.3, 0.2, 0.7})
    local cases = {
      {"exp", any}, {"log", pos}, {"sqrt", pos}, {"sin", any}, {"cos", any}, {"tan", unit},
      {"tanh", any}, {"sigmoid", any}, {"erf", any}, {"erfc", any}, {"erfinv", unit},
      {"log1p", pos}, {"expm1", any}, {"log2", pos}, {"log10", pos}, {"exp2", any},
      {"asin", unit}, {"acos", unit}, {"atan", any}, {"sinh", any}, {"cosh", any},
      {"asinh", any}, {"acosh", t64({1.2, 1.7, 2.5, 4.0})}, {"atanh", unit}, {"gelu", any},
      {"abs", any}, {"relu", any}, {"frac", pos}, {"neg", any},
    }
    for _, c in ipairs(cases) do
      local name, x = c[1], c[2]
      local ok, e = pcall(gradgradcheck, function(t) return (pt[name](t) * t) end, {x})
      assert(ok, name .. ": " .. tostring(e))
    end
    local a, b = t64({0.5, 1.5, 2.5}), t64({-1.2, 0.8, 2.0})
    gradgradcheck(function(u, v) return u * v + u / v - v - u * 3 end, {a, b})
    gradgradcheck(function(u, v) return u:add(v, {alpha = 2.5}) * u + u:sub(v, {alpha = 0.5}) * v end, {a, b})
    gradgradcheck(function(u, v) return u ^ v + u ^ 3 + 2 ^ v + u ^ 0.5 + u ^ 1 end, {a, b})
    gradgradcheck(function(u, v) return 2 / u + v / 3 + 1 - u end, {a, b})
    gradgradcheck(function(u) return u ^ 0 + u * u end, {a})
    -- broadcasting, and float32 operands promoted by a float64 one
    gradgradcheck(function(u, m) return u * m + m / u end, {a, det(2, 3)})
  end)

  it("gets second derivatives right through reductions, softmax and the products", function()
    local x = det(3, 4)
    gradgradcheck(function(t) return (t * t):sum() end, {x})
    gradgradcheck(function(t) return (t * t):sum(2) end, {x})
    gradgradcheck(function(t) return (t * t):sum(1, true) end, {x})
    gradgradcheck(function(t) return (t:exp()):mean() end, {x})
    gradgradcheck(function(t) return (t * t):mean({1, 2}) end, {x})
    gradgradcheck(function(t) return t:var(2) * t:var() end, {x})
    gradgradcheck(function(t) return t:std(1, true, {correction = 0}) + t:std() end, {x})
    gradgradcheck(function(t) return t:norm(2, 2) + t:norm() end, {x})
    gradgradcheck(function(t) return t:logsumexp(2) + t:logsumexp(1, true):sum() end, {x})
    gradgradcheck(function(t) return t:softmax(2) * t end, {x})
    gradgradcheck(function(t) return t:softmax(1) end, {x})
    gradgradcheck(function(t) return t:log_softmax(2) * t end, {x})
    gradgradcheck(function(t) return t:log_softmax(1):exp() end, {x})
    local a, b, v = det(2, 3), det(3, 4) * 0.5, det(3) + 0.25
    gradgradcheck(function(p, q) return (p:matmul(q)):tanh():matmul(q:t()) end, {a, b})
    gradgradcheck(function(p, q) return pt.mm(p, q) * pt.mm(p, q) end, {a, b})
    gradgradcheck(function(p, u) return pt.mv(p, u):exp() end, {a, v})
    gradgradcheck(function(u, w) return pt.dot(u, w) * pt.dot(u, u) end, {v, v * 2})
    gradgradcheck(function(u, w) return pt.outer(u, w):sin() end, {v, det(2)})
    gradgradcheck(function(p, q) return pt.bmm(p, q) ^ 2 end, {det(2, 2, 3), det(2, 3, 2)})
    -- matmul's broadcasting and 1-D operands
    gradgradcheck(function(p, q) return p:matmul(q) ^ 2 end, {det(2, 1, 2, 3), det(3, 3, 2)})
    gradgradcheck(function(u, q) return u:matmul(q) ^ 2 end, {v, det(2, 3, 2)})
    gradgradcheck(function(p, u) return p:matmul(u) ^ 2 end, {det(2, 2, 3), v})
    gradgradcheck(function(u, w) return u:matmul(w) ^ 2 end, {v, v + 1})
    gradgradcheck(function(c, p, q) return c:addmm(p, q, {beta = 0.5, alpha = 2}) ^ 2 end,
      {det(4), a, b})
  end)

  it("gets second derivatives right through views, joins and selections", function()
    local x = det(2, 3)
    gradgradcheck(function(t) return (t:view(3, 2) ^ 2):reshape(6) end, {x})
    gradgradcheck(function(t) return t:t():exp() * t:transpose(1, 2) end, {x})
    gradgradcheck(function(t) return t:unsqueeze(2):permute(3, 2, 1) ^ 3 end, {x})
    gradgradcheck(function(t) return t:narrow(2, 2, 2) ^ 2 end, {x})
    gradgradcheck(function(t) return t:select(2, 2) ^ 2 + t:select(1, 1):sum() end, {x})
    gradgradcheck(function(t) return t:unsqueeze(1):expand(4, 2, 3) ^ 2 end, {x})
    gradgradcheck(function(t) return t:squeeze():flatten() ^ 2 end, {det(1, 2, 3)})
    gradgradcheck(function(t, u) return pt.cat({t ^ 2, u * t}, 2) end, {x, det(2, 3) + 1})
    gradgradcheck(function(t, u) return pt.stack({t ^ 2, u ^ 3}) end, {x, det(2, 3) + 1})
    gradgradcheck(function(t) return t:clone() * t:contiguous() end, {x})
    gradgradcheck(function(t) return pt.where(t:gt(0), t ^ 2, t ^ 3) end, {x})
    gradgradcheck(function(t) return t:masked_fill(t:lt(0), 0) ^ 2 end, {x})
    gradgradcheck(function(t) return t:to("float32"):to("float64") * t end, {x}, {eps = 1e-3, atol = 1e-3, rtol = 1e-3})
  end)

  it("gets second derivatives right through nn.Linear and the nn activations", function()
    local x, w, b = det(4, 3), det(2, 3), det(2)
    gradgradcheck(function(u, v, c) return nn.functional.linear(u, v, c):tanh() end, {x, w, b})
    gradgradcheck(function(u, v) return nn.functional.linear(u, v) ^ 2 end, {x, w})
    gradgradcheck(function(u, v) return nn.functional.linear(u, v) ^ 2 end, {det(3), w})
    -- Linear + ReLU, fused by Sequential
    local seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU()):to("float64")
    assert.are.equal("LinearReluBackward", seq(x:requires_grad_()).grad_fn)
    x.requires_grad = false
    gradgradcheck(function(u) return seq(u) ^ 2 end, {x})
    for _, f in ipairs {nn.relu, nn.tanh, nn.sigmoid, nn.silu, function(u) return nn.leaky_relu(u, 0.2) end,
                        nn.gelu, function(u) return nn.gelu(u, {approximate = "tanh"}) end} do
      gradgradcheck(function(u) return f(u) * u end, {x})
    end
  end)

  it("gets second derivatives right through nn_extra's fused activations", function()
    local F = nn.functional
    -- values away from the kinks (finite differences straddle none of them)
    local x = pt.tensor({{-3.7, -2.2, -0.6}, {0.35, 1.3, 2.45}, {-1.15, 0.8, 4.2}}, {dtype = "float64"})
    local fs = {
      elu = function(u) return F.elu(u, 0.7) end, selu = F.selu, celu = function(u) return F.celu(u, 1.3) end,
      softplus = function(u) return F.softplus(u, 2, 5) end, mish = F.mish,
      hardtanh = function(u) return F.hardtanh(u, -2, 2) end, relu6 = F.relu6, hardswish = F.hardswish,
      hardsigmoid = F.hardsigmoid, softsign = F.softsign, tanhshrink = F.tanhshrink,
      threshold = function(u) return F.threshold(u, 0.5, -1) end, logsigmoid = F.logsigmoid,
      softshrink = function(u) return F.softshrink(u, 0.5) end, hardshrink = function(u) return F.hardshrink(u, 0.5) end,
    }
    for name, f in pairs(fs) do
      local ok, err = pcall(gradgradcheck, function(u) return f(u) * u end, {x})
      assert.is_true(ok, name .. ": " .. tostring(err))
    end
  end)

  it("computes a gradient penalty, d/dw |grad_x f|^2, as torch 1.13", function()
    local x = leaf({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}})
    local W1 = leaf({{0.1, -0.2}, {0.3, 0.4}, {-0.5, 0.6}})
    local b1 = leaf({0.05, -0.1})
    local w2 = leaf({{0.7}, {-0.8}})
    local f = (x:matmul(W1):add(b1):tanh():matmul(w2)):sum()
    local gx = grad(f, x, {create_graph = true})
    local pen = ((gx:norm(2, 2) - 1) ^ 2):mean()
    local g = grad(pen, {W1, b1, w2})
    assert_close(gx, {{0.1352038417484743, -0.16365068482435544, -0.44831432471446014},
                      {0.14257727081634988, -0.04953683417601553, -0.5219788954317234}})
    assert_close(pen, {0.23125040992265458})
    assert_close(g[1], {{0.05695130496666209, -0.028624330129768144}, {0.1528015408218021, -0.3851355544246908},
                        {0.0791262448517879, 0.11862797982225332}})
    assert_close(g[2], {0.0496908705575458, 0.04037239934834333})
    assert_close(g[3], {{-0.2057535387487433}, {0.44259545207843626}})
    assert.is_nil(W1.grad)
    -- the same through nn.Linear and leaky_relu, the penalty's gradient into .grad by backward
    local l1, l2 = nn.Linear(3, 4):to("float64"), nn.Linear(4, 1):to("float64")
    pt.no_grad(function()
      l1.weight:copy_(t64({{0.1, -0.2, 0.3}, {0.4, -0.5, 0.6}, {-0.7, 0.8, 0.9}, {0.05, 0.15, -0.25}}))
      l1.bias:copy_(t64({0.1, -0.1, 0.2, 0.0}))
      l2.weight:copy_(t64({{0.3, -0.6, 0.9, -1.2}}))
      l2.bias:copy_(t64({0.5}))
    end)
    local out = l2(nn.leaky_relu(l1(x), 0.2)):sum()
    local gx2 = grad(out, x, {create_graph = true})
    local pen2 = ((gx2:norm(2, 2) - 1) ^ 2):mean()
    pen2:backward()
    assert_close(pen2, {0.2188738165937254})
    assert_close(l1.weight.grad, {{-0.0564951187973041, 0.07734560153748624, 0.022877517543532414},
      {0.1129902375946082, -0.15469120307497247, -0.04575503508706483},
      {-0.1694853563919123, 0.23203680461245868, 0.06863255263059723},
      {-0.25393297632233625, -0.046132845895242636, 0.516981587346548}})
    -- the penalty does not depend on l1's bias (leaky_relu's derivative is piecewise constant):
    -- zeros, as torch 1.13 (its double backward links the mask's input with a zero derivative)
    assert_close(l1.bias.grad, {0, 0, 0, 0})
    assert.is_nil(l2.bias.grad) -- nothing links it: none, as torch 1.13
    assert_close(x.grad, {{0, 0, 0}, {0, 0, 0}})
    -- relu and abs too, and the fused Linear + ReLU
    local a = leaf({1, -2})
    local ga = grad(a:abs():sum() + a:relu():sum() + nn.relu(a):sum(), a, {create_graph = true})
    assert_close(grad((ga * ga):sum(), a), {0, 0})
    local seq = nn.Sequential(nn.Linear(3, 2), nn.ReLU()):to("float64")
    local gs = grad(seq(x):sum(), x, {create_graph = true})
    ;(gs * gs):sum():backward()
    assert_close(seq[1].bias.grad, {0, 0})
    assert_close(l2.weight.grad, {{-0.04751792308055977, -0.1584811258718177, 0.4067094339242701, 0.12405164378086682}})
  end)

  it("goes through BatchNorm in training and eval mode (as the norm written with mean/sqrt)", function()
    local function composed(x, w, b, training, rm, rv)
      local N, C = x:size(1), x:size(2)
      local x3 = x:reshape(N, C, -1)
      local mean, rstd
      if training then
        mean = x3:mean({1, 3}, {keepdim = true})
        local xm = x3 - mean
        rstd = 1 / ((xm * xm):mean({1, 3}, {keepdim = true}) + 1e-5):sqrt()
      else
        mean = rm:view(1, C, 1)
        rstd = 1 / (rv:view(1, C, 1) + 1e-5):sqrt()
      end
      return ((x3 - mean) * rstd * w:view(1, C, 1) + b:view(1, C, 1)):reshape(x:size())
    end
    for _, shape in ipairs({{6, 3}, {2, 3, 4, 5}}) do
      for _, training in ipairs({true, false}) do
        local res = {}
        for _, use_composed in ipairs({false, true}) do
          pt.manual_seed(7)
          local x = pt.randn(shape, {dtype = "float64", requires_grad = true})
          local w = pt.randn(3, {dtype = "float64", requires_grad = true})
          local b = pt.randn(3, {dtype = "float64", requires_grad = true})
          local rm, rv = pt.randn(3, {dtype = "float64"}), pt.rand(3, {dtype = "float64"}) + 0.5
          local c = pt.randn(shape, {dtype = "float64"})
          local y = use_composed and composed(x, w, b, training, rm, rv)
            or nn.functional.batch_norm(x, rm:clone(), rv:clone(), w, b, training, 0.1, 1e-5)
          local gs = grad((y * y * c):sum(), {x, w, b}, {create_graph = true})
          local s = (gs[1] * gs[1]):sum() + (gs[2] * 1.7):sin():sum() + (gs[3] * gs[3]):sum()
          res[#res + 1] = grad(s, {x, w, b})
        end
        for k = 1, 3 do
          local scale = res[2][k]:abs():max():item()
          assert.is_true((res[1][k] - res[2][k]):abs():max():item() <= 1e-12 * math.max(scale, 1))
        end
      end
    end
  end)

  it("goes through Conv2d: a gradient penalty (WGAN-GP) as torch 1.13 computes it", function()
    -- x = sin(arange), w = 0.3 cos(arange) {3,2,3,3}, b = {0.1,-0.2,0.3}; D = sum(y^2 c) with
    -- y = leaky_relu(conv2d(x, w, b), 0.2), c = cos(0.7 arange); penalty = mean((|dD/dx|_2 - 1)^2)
    -- per sample, backward; the sums below are torch's (float64)
    local cases = {
      {1, 0, 1, {2, 2, 5, 6}, {0.7077733069, 5.8704723562, -13.3797035556, 1080.4035911812, 14.3050484689, -3.5897959742}},
      {2, 1, 1, {2, 2, 7, 6}, {0.0427706053, 0.0243054661, 0.1429881666, 0.4481802035, 0.4758786066, -0.0899078565}},
      {2, 2, 2, {1, 2, 9, 8}, {1.151090073, 5136.1322754706, 15.3935234337, 68630.5274051713, 180.4890690108, 71.6493561244}},
    }
    for _, cs in ipairs(cases) do
      local xs = cs[4]
      local x = pt.arange(0, xs[1] * xs[2] * xs[3] * xs[4], {dtype = "float64"}):reshape(xs):sin():requires_grad_()
      local w = (pt.arange(0, 54, {dtype = "float64"}):reshape(3, 2, 3, 3):cos() * 0.3):requires_grad_()
      local b = t64({0.1, -0.2, 0.3}):requires_grad_()
      local y = nn.functional.leaky_relu(nn.functional.conv2d(x, w, b, {stride = cs[1], padding = cs[2], dilation = cs[3]}), 0.2)
      local c = (pt.arange(0, y:numel(), {dtype = "float64"}):reshape(y:size()) * 0.7):cos()
      local gx = grad((y * y * c):sum(), x, {create_graph = true})
      ;(((gx:reshape(gx:size(1), -1):norm(2, 2) - 1) ^ 2):mean()):backward()
      local got = {x.grad:sum():item(), (x.grad ^ 2):sum():item(), w.grad:sum():item(), (w.grad ^ 2):sum():item(),
                   b.grad:sum():item(), b.grad[2]}
      for k = 1, 6 do assert.is_true(math.abs(got[k] - cs[5][k]) <= 1e-9 * math.max(1, math.abs(cs[5][k])), k) end
    end
  end)

  it("goes through ConvTranspose2d as torch 1.13 (strides, padding, output_padding, dilation)", function()
    -- x = sin(arange), w = 0.3 cos(arange) {2,3,3,3}, b = {0.1,-0.2,0.3}; y = tanh(convT(x, w, b));
    -- penalty sum((d sum(y c)/dx)^2), c = cos(0.7 arange); torch's sums of x.grad, x.grad^2,
    -- w.grad, w.grad^2, b.grad
    local cases = {
      {1, 0, 0, 1, {2, 2, 4, 5}, {0.111763191, 1.8044532251, 5.1016078785, 3867.1764334987, 0.9898105932}},
      {2, 1, 1, 1, {2, 2, 4, 3}, {-1.4787054945, 17.5942329452, -6.9902572628, 30930.5607668482, -10.8618610588}},
      {2, 1, 0, 2, {1, 2, 3, 4}, {0.0336489508, 0.0085508045, 0.6579622797, 2.3860411373, -0.545598306}},
    }
    for i, cs in ipairs(cases) do
      local xs = cs[5]
      local x = pt.arange(0, xs[1] * xs[2] * xs[3] * xs[4], {dtype = "float64"}):reshape(xs):sin():requires_grad_()
      local w = (pt.arange(0, 54, {dtype = "float64"}):reshape(2, 3, 3, 3):cos() * 0.3):requires_grad_()
      local b = t64({0.1, -0.2, 0.3}):requires_grad_()
      local y = pt.tanh(nn.functional.conv_transpose2d(x, w, b, {stride = cs[1], padding = cs[2], output_padding = cs[3], dilation = cs[4]}))
      local c = (pt.arange(0, y:numel(), {dtype = "float64"}):reshape(y:size()) * 0.7):cos()
      local gx = grad((y * c):sum(), x, {create_graph = true})
      ;(gx ^ 2):sum():backward()
      local got = {x.grad:sum():item(), (x.grad ^ 2):sum():item(), w.grad:sum():item(), (w.grad ^ 2):sum():item(), b.grad:sum():item()}
      for k = 1, 5 do assert.is_true(math.abs(got[k] - cs[6][k]) <= 1e-9 * math.max(1, math.abs(cs[6][k])), i .. ":" .. k) end
    end
  end)

  it("goes through the losses, Dropout and Flatten: a MAML-style meta-gradient as torch 1.13's", function()
    -- out = linear(x, W, b) with x = sin(arange(20)){5,4}, W = 0.5 cos(arange(12)){3,4},
    -- b = {0.1,-0.2,0.05}; g = dL/d(W, b) with create_graph; meta = sum(gW^2) + sum(sin(gb));
    -- torch's sum(W.grad), sum(W.grad^2), sum(b.grad) after meta:backward()
    local x = pt.arange(0, 20, {dtype = "float64"}):reshape(5, 4):sin()
    local W = (pt.arange(0, 12, {dtype = "float64"}):reshape(3, 4):cos() * 0.5):requires_grad_()
    local b = t64({0.1, -0.2, 0.05}):requires_grad_()
    local y = pt.tensor({1, 3, 2, 3, 1}, {dtype = "int64"})
    local w = t64({1.0, 2.0, 0.5})
    local tgt = pt.arange(0, 15, {dtype = "float64"}):reshape(5, 3):cos()
    local cases = {
      {function(o) return nn.cross_entropy(o, y) end, {0.0, 0.0669762986, 0.0}},
      {function(o) return nn.cross_entropy(o, y, {weight = w, label_smoothing = 0.1}) end, {0.0, 0.1148940228, 0.0}},
      {function(o) return nn.cross_entropy(o, pt.tensor({1, -100, 2, 3, -100}, {dtype = "int64"}),
         {weight = w, reduction = "sum", ignore_index = -100}) end, {0.0, 68.0448810861, 0.0}},
      {function(o) return nn.nll_loss(nn.functional.log_softmax(o, 2), y, {reduction = "none"}):sum() end,
       {0.0, 41.0416828963, 0.0}},
      {function(o) return nn.mse_loss(o, tgt) end, {0.2486439143, 1.1028796776, 2.1179758038}},
      {function(o) return nn.smooth_l1_loss(o, tgt, {beta = 0.5, reduction = "sum"}) end,
       {-30.4940796443, 1280.9847344626, 15.4590451354}},
      {function(o) return nn.bce_with_logits(o, tgt:gt(0):double()) end, {0.0218461588, 0.0022125109, 0.2297318044}},
      {function(o) return nn.l1_loss(o, tgt) end, {0.0, 0.0, 0.0}}, -- a zero second derivative, with a graph
    }
    for i, c in ipairs(cases) do
      W.grad, b.grad = nil, nil
      local gs = grad(c[1](nn.functional.linear(x, W, b)), {W, b}, {create_graph = true})
      ;((gs[1] ^ 2):sum() + gs[2]:sin():sum()):backward()
      local got = {W.grad:sum():item(), (W.grad ^ 2):sum():item(), b.grad:sum():item()}
      for k = 1, 3 do assert.is_true(math.abs(got[k] - c[2][k]) <= 1e-9 * math.max(1, math.abs(c[2][k])), i .. ":" .. k) end
    end
    -- Dropout and Flatten: the same second derivatives as multiplying by the same mask
    local function second(mask)
      pt.manual_seed(11)
      local xx = pt.randn(4, 2, 3, {dtype = "float64", requires_grad = true})
      local WW = pt.randn(5, 6, {dtype = "float64", requires_grad = true})
      local h = xx * xx
      if mask then h = h * mask else pt.manual_seed(3); h = nn.Dropout(0.4):double()(h) end
      local out = nn.Flatten()(h):matmul(WW:t())
      local gx = grad((out * out):sum(), xx, {create_graph = true})
      ;(gx * gx):sum():backward()
      return xx.grad, WW.grad
    end
    pt.manual_seed(3)
    local mask = nn.Dropout(0.4):double()(pt.ones(4, 2, 3, {dtype = "float64"}))
    local a1, b1 = second()
    local a2, b2 = second(mask)
    assert.is_true(a1:equal(a2) and b1:equal(b2))
  end)

  it("goes through max, average and adaptive average pooling as torch 1.13", function()
    -- x = sin(arange){2,2,6,7}, w = 0.3 cos(arange){3,2,3,3}, y = pool(conv2d(x, w, pad 1)^2),
    -- penalty sum((d sum(y c)/dx)^2), c = cos(0.7 arange); torch's sums of x.grad, x.grad^2,
    -- w.grad, w.grad^2
    local F = nn.functional
    local cases = {
      {function(t) return F.max_pool2d(t, 2) end, {-1.141056825, 284.93061685, -36.34700689, 2908.297060787}},
      {function(t) return F.max_pool2d(t, 3, {stride = 2, padding = 1}) end, {2.165151942, 65.411506149, -9.384441599, 1499.901502797}},
      {function(t) return F.avg_pool2d(t, 2) end, {-0.221337478, 23.611153734, 5.223777435, 99.384156891}},
      {function(t) return F.avg_pool2d(t, 3, {stride = 2, padding = 1}) end, {0.001820181, 0.040473074, -0.106983415, 0.789715588}},
      {function(t) return F.adaptive_avg_pool2d(t, 1) end, {-0.000650455, 0.005128517, -0.011077905, 0.010858937}},
      {function(t) return F.adaptive_avg_pool2d(t, {3, 7}) end, {-0.093948792, 31.007067266, 3.919816932, 223.115170118}},
    }
    for i, c in ipairs(cases) do
      local x = pt.arange(0, 168, {dtype = "float64"}):reshape(2, 2, 6, 7):sin():requires_grad_()
      local w = (pt.arange(0, 54, {dtype = "float64"}):reshape(3, 2, 3, 3):cos() * 0.3):requires_grad_()
      local h = F.conv2d(x, w, nil, {padding = 1})
      local y = c[1](h * h)
      local cw = (pt.arange(0, y:numel(), {dtype = "float64"}):reshape(y:size()) * 0.7):cos()
      local gx = grad((y * cw):sum(), x, {create_graph = true})
      ;(gx ^ 2):sum():backward()
      local got = {x.grad:sum():item(), (x.grad ^ 2):sum():item(), w.grad:sum():item(), (w.grad ^ 2):sum():item()}
      for k = 1, 4 do assert.is_true(math.abs(got[k] - c[2][k]) <= 2e-9 * math.max(1, math.abs(c[2][k])), i .. ":" .. k) end
    end
  end)

  it("goes through clamp, maximum/minimum, max/min over a dim, gather, index_select, flip, cumsum, embedding, sort, topk, kthvalue, cummax, repeat, atan2 and scatter_add", function()
    -- x = 2 sin(arange(12)){3,4}; L = sum(f(x)^2 c), c = cos(0.3 arange); S = sum((dL/dx)^2 c2),
    -- c2 = sin(0.5 arange){3,4}; torch 1.13's sum(x.grad) and sum(x.grad^2) after S:backward()
    local idx = pt.tensor({{1, 2, 1, 3}, {2, 2, 1, 1}, {3, 3, 2, 1}}, {dtype = "int64"})
    local F = nn.functional
    local cases = {
      {function(x) return x:clamp(-0.5, 1.2) end, {-4.3981233926, 28.5133689418}},
      {function(x) return x:clamp({min = 0.1}) end, {2.3782630373, 176.0775694808}},
      {function(x) return pt.maximum(x, x:flip(2)) end, {-14.1163674364, 3347.037733701}},
      {function(x) return pt.minimum(x, pt.full({3, 4}, 0.3, {dtype = "float64"})) end, {18.5342508403, 190.940469694}},
      {function(x) return (x:max(2)) end, {0.7165156512, 227.794725474}},
      {function(x) return x:max() end, {-11.9799806368, 143.5199360574}}, -- over all elements
      {function(x) return x:min() end, {11.2885346544, 127.4310146425}},
      {function(x) return (x:min(1, {keepdim = true})) end, {-9.3433216904, 242.8145652927}},
      {function(x) return x:gather(2, idx) end, {7.4891438986, 777.0257963447}},
      {function(x) return x:index_select(2, pt.tensor({1, 3, 3}, {dtype = "int64"})) end, {46.7072189647, 1691.2388381634}},
      {function(x) return x:flip(1) end, {9.1912736965, 409.0791535654}},
      {function(x) return x:cumsum(2) end, {-293.548055992, 164398.1902203112}},
      {function(x) return F.embedding(pt.tensor({{1, 3}, {2, 2}}, {dtype = "int64"}), x, {padding_idx = 2}):sum(1) end,
       {11.1883378637, 59.808637385}},
      {function(x) return (x:sort(2)) end, {3.9108613837, 308.8703588619}},
      {function(x) return (x:topk(2, 1)) end, {1.3347316293, 250.1289588223}},
      {function(x) return (x:kthvalue(2, 2)) end, {-2.1110342524, 138.3811230337}},
      {function(x) return (x:cummax(2)) end, {-128.4137062561, 25313.9126411809}},
      {function(x) return x:repeat_tensor(2, 1, 3) end, {18.1963049201, 2005.2692561965}},
      {function(x) return pt.atan2(x, x:flip(2) + 3) end, {0.7516274923, 0.4939450451}},
      {function(x) return pt.atan2(x, 0.7) end, {1.3204945432, 5.2737043145}},
      {function(x) return pt.zeros(3, 4, {dtype = "float64"}):scatter_add(2, idx, x * x) end,
       {-1046.9921584889, 15617018.913638296}},
    }
    for i, c in ipairs(cases) do
      local x = (pt.arange(0, 12, {dtype = "float64"}):reshape(3, 4):sin() * 2):requires_grad_()
      local y = c[1](x)
      local cw = (pt.arange(0, y:numel(), {dtype = "float64"}):reshape(y:size()) * 0.3):cos()
      local gx = grad((y * y * cw):sum(), x, {create_graph = true})
      local c2 = (pt.arange(0, 12, {dtype = "float64"}):reshape(3, 4) * 0.5):sin()
      ;(gx * gx * c2):sum():backward()
      local got = {x.grad:sum():item(), (x.grad ^ 2):sum():item()}
      for k = 1, 2 do assert.is_true(math.abs(got[k] - c[2][k]) <= 1e-9 * math.max(1, math.abs(c[2][k])), i .. ":" .. k) end
    end
  end)

  it("refuses a node with no double backward by name, before anything runs", function()
    local x = leaf({{1, 2}, {2, 4}}) -- singular: its gradient is the cofactor matrix
    assert_err("autograd.grad: create_graph is not supported through LinalgDetBackward",
      grad, pt.linalg.det(x), x, {create_graph = true})
    local lp = leaf({{{-1.2, -0.5, -2}}, {{-0.7, -1.1, -1.6}}}) -- {T, N, C} log-probabilities
    local ctc = nn.functional.ctc_loss(lp, pt.tensor({{2}}, {dtype = "int64"}), {2}, {1})
    assert_err("autograd.grad: create_graph is not supported through CtcLossBackward",
      grad, ctc, lp, {create_graph = true})
    local z = leaf({{1, 2}, {3, 4}})
    local m = pt.linalg.svd(z):abs():sum() + (z * z):sum() -- through U (svd's first result)
    assert_err("autograd.grad: create_graph is not supported through LinalgSvdBackward",
      grad, m, z, {create_graph = true})
    assert.is_nil(z.grad)
    -- the graph is still there (torch 1.13's gradient)
    assert_close(grad(m, z), {{2.094608095676857, 4.1430659007796375}, {5.946927165839812, 7.944619651311108}})
    local c = leaf({{1, 2}, {3, 4}})
    assert_err("backward: create_graph is not supported through LinalgSvdBackward", function()
      pt.linalg.svd(c):abs():sum():backward({create_graph = true})
    end)
    assert.is_nil(c.grad)
    -- a node off the path to the inputs does not matter
    local u, v = leaf({1, 2}), leaf({3, 4})
    local s = (u * u):sum() + pt.maximum(v, t64({0, 0})):sum()
    assert_close(grad(s, u, {create_graph = true}), {2, 4})
  end)
end)

describe("tensor hooks", function()
  it("run on the whole gradient of a non-leaf in registration order, retain_grad seeing the last", function()
    local a = pt.tensor({1, 2}):requires_grad_()
    local b = a * 3
    local seen = {}
    b:register_hook(function(g) seen[#seen + 1] = g:tolist(); return g * 2 end)
    b:retain_grad()
    b:register_hook(function(g) seen[#seen + 1] = g:tolist(); return g * 10 end)
    ;(b * b):sum():backward()
    -- torch 1.13
    assert.are.same({{6, 12}, {12, 24}}, seen)
    assert.are.same({120, 240}, b.grad:tolist())
    assert.are.same({360, 720}, a.grad:tolist())
  end)

  it("run once on a leaf's summed gradient, before .grad; handle:remove() unregisters", function()
    local a = leaf({1, 2})
    local calls = {}
    local h = a:register_hook(function(g) calls[#calls + 1] = g:tolist(); return g + 1 end)
    ;(a * a + a:sin()):sum():backward()
    assert.are.equal(1, #calls)
    assert_close(calls[1], {2 + math.cos(1), 4 + math.cos(2)})
    assert_close(a.grad, {3 + math.cos(1), 5 + math.cos(2)})
    h:remove()
    h:remove() -- again: nothing
    a.grad = nil
    ;(a * a):sum():backward()
    assert.are.equal(1, #calls)
    assert_close(a.grad, {2, 4})
    -- a leaf as the root itself
    local seen
    a:register_hook(function(g) seen = g:tolist() end)
    a:backward(t64({1, 1}))
    assert.are.same({1, 1}, seen)
  end)

  it("as torch 1.13 in autograd.grad: a leaf's do not run, a non-leaf's run when the pass goes through it", function()
    local a = leaf({1, 2})
    local leaf_ran = false
    a:register_hook(function(g) leaf_ran = true; return g * 100 end)
    assert_close(grad((a * a):sum(), a), {2, 4})
    assert.is_false(leaf_ran)
    local b = a * 3
    local n = 0
    b:register_hook(function(g) n = n + 1; return g * 2 end)
    assert_close(grad((b * b):sum(), a, {retain_graph = true}), {36, 72})
    assert.are.equal(1, n)
    -- b's own gradient is taken before its hooks, as torch 1.13 captures it
    assert_close(grad((b * b):sum(), b), {6, 12})
    assert.are.equal(1, n)
  end)

  it("see a hook on the root, and hooks that remove themselves", function()
    local a = leaf({1, 2})
    local y = (a * a):sum()
    local h
    local count = 0
    h = y:register_hook(function(g)
      count = count + 1
      h:remove()
      return g * 2
    end)
    y:backward(nil, {retain_graph = true})
    assert_close(a.grad, {4, 8})
    y:backward()
    assert.are.equal(1, count)
    assert_close(a.grad, {6, 12})
  end)

  it("apply under create_graph, to gradients with history", function()
    local x = leaf({1, 2})
    local y = x ^ 3
    y:register_hook(function(g) return g * x end) -- depends on x: recorded
    local g = grad(y:sum(), x, {create_graph = true})
    assert_close(g, {3, 24}) -- 3x^2 * x
    assert_close(grad(g:sum(), x), {9, 36}) -- 12 x^2 ... d/dx 3x^3 = 9x^2
  end)

  it("name what a hook did wrong, and pass its own errors on as they were", function()
    local a = pt.tensor({1, 2}):requires_grad_()
    local b = a * 3
    b:register_hook(function() return pt.ones(3) end)
    assert_err("backward: a tensor hook returned a gradient of shape {3} for a gradient of shape {2}",
      function() (b * b):sum():backward() end)
    local c = a * 3
    c:register_hook(function(g) return g:to("float64") end)
    assert_err("backward: a tensor hook returned a gradient of dtype float64 for a gradient of dtype float32",
      function() (c * c):sum():backward() end)
    local d = a * 3
    d:register_hook(function() return 5 end)
    assert_err("backward: a tensor hook must return a tensor or nil, got number", function() (d * d):sum():backward() end)
    local e = a * 3
    e:register_hook(function() error("boom from the hook") end)
    local msg = err_of(function() (e * e):sum():backward() end)
    assert.matches("^spec/autograd_more_spec%.lua:%d+: boom from the hook$", msg)
    local f = a * 3
    f:register_hook(function() error({code = 7}) end)
    local ok, obj = pcall(function() grad((f * f):sum(), a) end)
    assert.is_false(ok)
    assert.are.same({code = 7}, obj)
    -- an error class whose __tostring itself fails: the object still comes back as raised, and
    -- the engine's clean-up runs (it was skipped: no op recorded a graph afterwards)
    local Broken = {__tostring = function(o) return "E" .. o.missing end}
    local h = a * 3
    h:register_hook(function() error(setmetatable({}, Broken)) end)
    ok, obj = pcall(function() (h * h):sum():backward() end)
    assert.is_false(ok)
    assert.are.equal(Broken, getmetatable(obj))
    assert.is_true(pt.is_grad_enabled())
    assert.is_true((a * 2).requires_grad)
    assert_err("register_hook: cannot register a hook on a tensor that doesn't require gradient",
      function() pt.ones(2):register_hook(function() end) end)
    assert_err("register_hook: expected a function, got number", function() a:register_hook(3) end)
    assert.matches("^spec/autograd_more_spec%.lua:%d+: register_hook:", err_of(function() a:register_hook(3) end))
    assert.is_nil(a.grad) -- a failed pass accumulated nothing into hooked leaves' .grad
  end)

  it("let go of the tensors and nodes they were registered on once nothing else holds them", function()
    local a = leaf({1, 2})
    local n = 0
    for _ = 1, 50 do
      local b = a * 2
      b:register_hook(function() n = n + 1 end)
      local l = leaf({1, 2})
      l:register_hook(function() n = n + 1 end)
    end
    collectgarbage()
    collectgarbage()
    local b = a * 2
    b:register_hook(function() n = n + 1 end) -- sweeps the others
    b:sum():backward()
    assert.are.equal(1, n)
  end)
end)

describe("nn.Module hooks", function()
  local function linear()
    local lin = nn.Linear(3, 2):to("float64")
    pt.no_grad(function()
      lin.weight:copy_(t64({{0.1, -0.2, 0.3}, {0.4, -0.5, 0.6}}))
      lin.bias:copy_(t64({0.1, -0.1}))
    end)
    return lin
  end

  it("run forward pre-hooks, forward hooks and full backward hooks in order, as torch 1.13", function()
    local lin, log = linear(), {}
    lin:register_forward_pre_hook(function(m, inp)
      assert.are.equal(lin, m)
      log[#log + 1] = "pre1"
      return {inp[1] * 2}
    end)
    lin:register_forward_pre_hook(function(_, inp) log[#log + 1] = {"pre2", inp[1]:tolist(), inp.n} end)
    lin:register_forward_hook(function(_, inp, out)
      log[#log + 1] = {"fwd", inp[1]:tolist(), out:tolist()}
      return out * 3
    end)
    lin:register_forward_hook(function(_, _, out) log[#log + 1] = {"fwd2", out:tolist()} end)
    lin:register_full_backward_hook(function(m, gi, go)
      assert.are.equal(lin, m)
      log[#log + 1] = {"bwd", gi[1]:tolist(), gi.n, go[1]:tolist(), #go}
    end)
    local x = leaf({{1, 2, 3}, {-1, 0.5, 2}})
    local y = lin(x)
    assert.are.equal("BackwardHookFunctionBackward", y.grad_fn)
    ;(y * t64({{1, 2}, {3, 4}})):sum():backward()
    assert.are.equal("pre1", log[1])
    assert.are.same({"pre2", {{2, 4, 6}, {-2, 1, 4}}, 1}, log[2])
    assert.are.equal("fwd", log[3][1])
    assert_close(log[3][3], {{1.3, 2.3}, {0.9, 1.0}})
    assert_close(log[4][2], {{3.9, 6.9}, {2.7, 3.0}})
    assert.are.equal("bwd", log[5][1])
    assert_close(log[5][2], {{2.7, -3.6, 4.5}, {5.7, -7.8, 9.9}})
    assert.are.equal(1, log[5][3])
    assert.are.same({{1, 2}, {3, 4}}, log[5][4])
    assert.are.equal(1, log[5][5])
    assert.are.equal(5, #log)
    assert_close(x.grad, {{5.4, -7.2, 9.0}, {11.4, -15.6, 19.8}})
    assert_close(lin.weight.grad, {{-12, 21, 54}, {-12, 36, 84}})
  end)

  it("let a full backward hook replace grad_input", function()
    local lin = linear()
    lin:register_full_backward_hook(function(_, gi) return {gi[1] * 10} end)
    local x = leaf({{1, 2, 3}})
    lin(x):sum():backward()
    assert_close(x.grad, {{5, -7, 9}})
    assert_close(lin.weight.grad, {{1, 2, 3}, {1, 2, 3}})
  end)

  it("give nil for arguments that are not tensors requiring grad, and run without any", function()
    local Two = nn.Module:extend("Two")
    function Two:forward(a, s, b) return a * b * s end
    local t, got = Two(), nil
    t:register_full_backward_hook(function(_, gi, go) got = {gi[1] and gi[1]:tolist(), gi[2], gi[3]:tolist(), gi.n, go[1]:tolist()} end)
    local a, b = leaf({1, 2}), leaf({3, 4})
    t(a, 2.0, b):sum():backward()
    assert.are.same({{6, 8}, nil, {2, 4}, 3, {1, 1}}, got)
    local lin, seen = linear(), nil
    lin:register_full_backward_hook(function(_, gi, go) seen = {gi.n, gi[1], go[1]:tolist()} end)
    lin(pt.ones(1, 3, F64)):sum():backward()
    assert.are.same({1, nil, {{1, 1}}}, seen)
  end)

  it("refuse a replacement of a gradient that has already gone on, naming the module", function()
    local Two = nn.Module:extend("Two")
    function Two:forward(a, b) return a * b end
    local t = Two()
    t:register_full_backward_hook(function(_, gi) return {gi[1] * 0, gi[2] * 0} end)
    local a, b = leaf({1, 2}), leaf({3, 4})
    local msg = err_of(function() t(a, b):sum():backward() end)
    assert.matches("Two: a full backward hook replaced grad_input%[%d%], which had already gone on %(with 2 inputs that require grad, only the gradient computed last, grad_input%[%d%], can be replaced%)", msg)
    local lin = linear()
    lin:register_full_backward_hook(function(_, gi) return gi[1] end)
    assert_err("Linear: a full backward hook must return nil or a list of gradients (grad_input), got a tensor",
      function() lin(leaf({{1, 2, 3}})):sum():backward() end)
  end)

  it("are removed by their handles, after which the module runs as before (nothing allocated)", function()
    local lin = linear()
    local n = 0
    local h1 = lin:register_forward_pre_hook(function() n = n + 1 end)
    local h2 = lin:register_forward_hook(function() n = n + 10 end)
    local h3 = lin:register_full_backward_hook(function() n = n + 100 end)
    local x = leaf({{1, 2, 3}})
    lin(x):sum():backward()
    assert.are.equal(111, n)
    h2:remove()
    lin(x):sum():backward()
    assert.are.equal(212, n)
    h1:remove()
    h3:remove()
    h3:remove()
    assert.is_nil(rawget(lin, "_hooks"))
    local y = lin(x)
    assert.are.equal("LinearBackward", y.grad_fn)
    y:sum():backward()
    assert.are.equal(212, n)
  end)

  it("run for the layers Sequential would fuse (no fusion for a module with hooks)", function()
    local seq = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    local x = pt.ones(1, 3)
    assert.are.equal("LinearReluBackward", seq(x:requires_grad_()).grad_fn)
    local n = 0
    local h = seq[2]:register_forward_hook(function() n = n + 1 end)
    local y = seq(x)
    assert.are.equal(1, n)
    assert.are.equal("ReluBackward", y.grad_fn)
    h:remove()
    assert.are.equal("LinearReluBackward", seq(x).grad_fn)
    seq[1]:register_forward_pre_hook(function() n = n + 1 end)
    seq(x)
    assert.are.equal(2, n)
  end)

  it("name a hook that is not a function", function()
    local lin = linear()
    assert_err("register_forward_pre_hook: expected a function, got number", function() lin:register_forward_pre_hook(1) end)
    assert_err("register_forward_hook: expected a function, got nil", function() lin:register_forward_hook() end)
    assert_err("register_full_backward_hook: expected a function, got table",
      function() lin:register_full_backward_hook({}) end)
    assert.matches("^spec/autograd_more_spec%.lua:%d+: register_forward_hook",
      err_of(function() lin:register_forward_hook() end))
    -- a callable table is fine
    local calls = 0
    lin:register_forward_hook(setmetatable({}, {__call = function() calls = calls + 1 end}))
    lin(pt.ones(1, 3, F64))
    assert.are.equal(1, calls)
  end)
end)

describe("gradients of slices (narrow/select added straight into their input's gradient)", function()
  it("overlapping narrows, selects and the whole tensor sum up", function()
    local x = pt.tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}, {requires_grad = true})
    local y = x * 3
    local a = y:narrow(1, 1, 3)    -- rows 1-3
    local b = y:select(1, 2)       -- row 2
    local c = y:narrow(2, 2, 2)    -- columns 2-3 (a strided slice)
    local d = y:t():select(1, 3)   -- column 3 through a transpose
    local loss = a:sum() * 2 + (b * pt.tensor({1, 10, 100})):sum() + c:sum() + d:sum() * 5 + y:sum()
    loss:backward()
    -- d(loss)/dy, then times 3
    local want = {}
    for i = 1, 4 do
      want[i] = {}
      for j = 1, 3 do
        local g = 1
        if i <= 3 then g = g + 2 end
        if i == 2 then g = g + ({1, 10, 100})[j] end
        if j >= 2 then g = g + 1 end
        if j == 3 then g = g + 5 end
        want[i][j] = 3 * g
      end
    end
    assert.are.same(want, x.grad:tolist())
  end)

  it("leave the gradients the caller gave untouched, and work with autograd.grad, hooks and retain_grad", function()
    local x = pt.randn(5, 4, {dtype = "float64", requires_grad = true})
    local y = x * 2
    y:retain_grad()
    local g = pt.ones(5, 4, {dtype = "float64"})
    local s1, s2 = y:select(1, 1), y:narrow(1, 2, 3)
    local seen
    s2:register_hook(function(gr) seen = gr:clone() end)
    local out = y * 1 + 0 -- y also flows on whole
    local total = (s1 * 2):sum() + (s2 * 3):sum()
    local gx = grad(total + (out * g):sum(), x)
    local want = pt.full({5, 4}, 1, {dtype = "float64"})
    want:narrow(1, 1, 1):add_(2)
    want:narrow(1, 2, 3):add_(3)
    assert.is_true(pt.allclose(gx, want * 2))
    assert.is_true(pt.equal(g, pt.ones(5, 4, {dtype = "float64"})))
    assert.is_true(pt.equal(seen, pt.full({3, 4}, 3, {dtype = "float64"})))
    -- a slice chain over many steps, as an RNN's time loop: rows taken one by one
    local z = pt.randn(64, 8, {requires_grad = true})
    local p = z * 1
    local acc = p:select(1, 1)
    for t = 2, 64 do acc = acc + p:select(1, t) * t end
    acc:sum():backward()
    for t = 1, 64 do
      assert.are.same(pt.full({8}, t):tolist(), z.grad:select(1, t):tolist())
    end
  end)
end)

describe("layers that write parameter gradients directly (Linear, Embedding, conv, norms)", function()
  it("still answer autograd.grad and run the parameters' hooks", function()
    pt.manual_seed(8)
    local nn = pt.nn
    local lin, emb, conv = nn.Linear(3, 2), nn.Embedding(5, 2), nn.Conv2d(1, 2, 3)
    local bn, ln = nn.BatchNorm1d(2), nn.LayerNorm(2)
    local x, idx, img = pt.randn(4, 3), pt.tensor({1, 2, 2, 5}, {dtype = "int64"}), pt.randn(2, 1, 5, 5)
    local function loss()
      return ln(bn(lin(x) + emb(idx))):pow(2):sum() + conv(img):pow(2):sum()
    end
    local params = {lin.weight, lin.bias, emb.weight, conv.weight, conv.bias, bn.weight, bn.bias, ln.weight, ln.bias}
    local gs = grad(loss(), params)
    for _, p in ipairs(params) do assert.is_nil(p.grad) end
    loss():backward()
    for i, p in ipairs(params) do
      assert.is_true(pt.allclose(gs[i], p.grad, {atol = 1e-6}), "parameter " .. i)
    end
    -- a hook on a parameter sees its gradient and may replace it
    for _, p in ipairs(params) do p.grad = nil end
    local seen = {}
    for i, p in ipairs(params) do
      p:register_hook(function(g) seen[i] = true; return g * 2 end)
    end
    loss():backward()
    for i, p in ipairs(params) do
      assert.is_true(seen[i], "hook of parameter " .. i)
      assert.is_true(pt.allclose(p.grad, gs[i] * 2, {atol = 1e-6}), "hooked parameter " .. i)
    end
  end)
end)

describe("create_graph through std over a constant lane", function()
  it("gives a zero second derivative there, as torch 1.13 (it was nan)", function()
    local x = leaf({{1, 1, 1}, {1, 2, 4}})
    local g = grad(x:std(2):sum(), x, {create_graph = true})
    -- torch: [[0, 0, 0], [-0.4364, -0.1091, 0.5455]]
    assert_close(g, {{0, 0, 0}, {-0.43643578047198484, -0.10910894511799621, 0.5455447255899809}})
    local gg = grad((g * g):sum(), x)
    for _, v in ipairs(support.flat(gg:tolist())) do
      assert.is_true(v == v and math.abs(v) < 1e-15)
    end
  end)
end)

describe("no_grad, enable_grad and detect_anomaly in coroutines", function()
  it("switch the mode only while their body runs, not while it is suspended", function()
    -- a generator that yields from inside no_grad: the loop's own code keeps the caller's mode,
    -- and breaking out of it (abandoning the coroutine) left grad recording off for good
    local function doubled(xs)
      return coroutine.wrap(function()
        pt.no_grad(function()
          for _, x in ipairs(xs) do coroutine.yield(x * 2, pt.is_grad_enabled()) end
        end)
      end)
    end
    local w = pt.ones(2, {requires_grad = true})
    for y, inside in doubled({w, w}) do
      assert.is_false(inside)
      assert.is_false(y.requires_grad)
      assert.is_true(pt.is_grad_enabled())
      break
    end
    assert.is_true(pt.is_grad_enabled())
    assert.is_true((w * 2).requires_grad)
    -- resumed later with other values: the body still runs without grad and gets them
    local co = coroutine.create(function(a)
      return pt.no_grad(function(x)
        local k = coroutine.yield((x * 2).requires_grad)
        return (x * k).requires_grad, pt.is_grad_enabled(), k
      end, a)
    end)
    assert.are.same({true, false}, {coroutine.resume(co, w)})
    assert.are.same({true, false, false, 3}, {coroutine.resume(co, 3)})
    -- anomaly mode the same way
    local an = coroutine.wrap(function()
      pt.autograd.detect_anomaly(function() coroutine.yield(pt.autograd.is_anomaly_enabled()) end)
    end)
    assert.is_true(an())
    assert.is_false(pt.autograd.is_anomaly_enabled())
  end)

  it("pass errors on (closing the body's to-be-closed variables) and results back", function()
    local closed = false
    local ok, err = coroutine.resume(coroutine.create(function()
      return pt.no_grad(function()
        local c <close> = setmetatable({}, {__close = function() closed = true end})
        error("boom inside")
      end)
    end))
    assert.is_false(ok)
    assert.matches("boom inside$", err)
    assert.is_true(closed)
    assert.is_true(pt.is_grad_enabled())
    local obj = {}
    assert.are.same({false, obj}, {coroutine.resume(coroutine.create(function()
      return pt.enable_grad(function() error(obj) end)
    end))})
    assert.are.same({true, 3, "x", nil}, {coroutine.resume(coroutine.create(function()
      return pt.no_grad(function(a, b) return a + b, "x", nil end, 1, 2)
    end))})
    assert.are.equal(3, select("#", coroutine.resume(coroutine.create(function()
      return pt.no_grad(function() return 1, nil end)
    end))))
  end)
end)
