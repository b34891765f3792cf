-- pt.func (torch.func / functorch): functional_call, grad, grad_and_value, vjp, jacrev, jacfwd,
-- hessian, vmap, stack_module_state. The numbers marked "torch" were computed with torch 1.13 and
-- functorch 1.13 (functorch.grad/jacrev/jacfwd/hessian/vjp/vmap and
-- torch.nn.utils.stateless.functional_call) on the same float64 inputs; the rest is checked
-- against per-sample loops and pt.autograd calls written by hand, at 1e-12 in float64.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local assert_error, errmsg = support.assert_error, support.errmsg
local assert_close = support.assert_close_with(1e-12)

local F, nn = pt.func, pt.nn
local D = {dtype = "float64"}
local function f64(v) return pt.tensor(v, D) end
local function flat(t) return t:reshape(-1):tolist() end

local x = f64({0.5, -1.25, 2.0})
local y = f64({1.5, 0.25, -0.75})
local W = f64({{0.5, -1.0, 0.25}, {1.5, 0.75, -0.5}})
local function f(a, b) return (a:sin() * b):sum() + (a * b):pow(2):sum() end
local function g(a, w) return pt.tanh(pt.matmul(w, a)) end

-- the model of torch's per-sample-gradients recipe: parameter i (0-based, registration order) is
-- linspace(-1, 1, numel) * (0.5 + 0.25 i), as the torch script set it
local function recipe_model()
  local m = nn.Sequential(nn.Linear(3, 4, D), nn.Tanh(), nn.Linear(4, 1, D))
  local i = 0
  for _, p in m:named_parameters() do
    local v = pt.linspace(-1, 1, p:numel(), D):reshape(p:size()) * (0.5 + 0.25 * i)
    pt.no_grad(function() p:copy_(v) end)
    i = i + 1
  end
  return m
end
local X = f64({{0.1, 0.2, -0.3}, {1.0, -0.5, 0.25}, {-0.7, 0.3, 0.9}, {0.4, 0.4, 0.4}})
local Y = f64({{0.5}, {-1.0}, {0.25}, {2.0}})

local function detached_params(m)
  local p = {}
  for n, t in m:named_parameters() do p[n] = t:detach() end
  return p
end

describe("func.functional_call", function()
  it("runs the module with the given tensors and puts its own back", function()
    local m = nn.Linear(3, 2, D)
    local w0, b0 = m.weight, m.bias
    local w, b = W:clone():requires_grad_(), f64({0.5, -0.5}):requires_grad_()
    local out = F.functional_call(m, {weight = w, bias = b}, x)
    assert_close(out, pt.matmul(W, x) + f64({0.5, -0.5}))
    assert.are.equal(w0, m.weight)
    assert.are.equal(b0, m.bias)
    assert.are.equal(w0, m._parameters.weight)
    -- gradients reach the given tensors, not the module's own
    out:sum():backward()
    assert_close(w.grad, pt.stack({x, x}))
    assert_close(b.grad, {1, 1})
    assert.is_nil(m.weight.grad)
  end)

  it("takes dotted names, keeps the module's own tensors for names not given, merges a list of tables", function()
    local m = nn.Sequential(nn.Linear(3, 2, D), nn.Tanh(), nn.Linear(2, 1, D))
    local w1 = W:clone()
    local ref = m[3](pt.tanh(pt.matmul(w1, x) + m[1].bias))
    assert_close(F.functional_call(m, {["1.weight"] = w1}, {x}), ref)
    local w3 = f64({{2.0, -1.0}})
    local ref2 = pt.matmul(w3, pt.tanh(pt.matmul(w1, x) + m[1].bias)) + m[3].bias
    assert_close(F.functional_call(m, {{["1.weight"] = w1}, {["3.weight"] = w3}}, {x}), ref2)
    -- a fused Linear + ReLU pair reads the given tensors too
    local r = nn.Sequential(nn.Linear(3, 2, D), nn.ReLU())
    assert_close(F.functional_call(r, {["1.weight"] = w1, ["1.bias"] = f64({0.5, -0.5})}, x),
                 (pt.matmul(w1, x) + f64({0.5, -0.5})):relu())
    -- a state_dict works as the table
    local sd = m:state_dict()
    assert_close(F.functional_call(m, sd, x), m(x))
  end)

  it("passes several arguments and kwargs as the last one", function()
    local Two = nn.Module:extend("Two")
    function Two:__init() self.w = pt.ones(3, D):requires_grad_() end
    function Two:forward(a, b, opts) return (a * self.w + b) * opts.scale end
    local m = Two()
    assert_close(F.functional_call(m, {w = y}, {x, x}, {scale = 2}), (x * y + x) * 2)
  end)

  it("replaces buffers; a training BatchNorm updates the given running stats, not its own", function()
    local bn = nn.BatchNorm1d(3, D)
    local rm, rv = pt.zeros(3, D), pt.ones(3, D)
    local xb = f64({{1, 2, 3}, {3, 2, 0}})
    F.functional_call(bn, {running_mean = rm, running_var = rv}, xb)
    assert_close(rm, {0.2, 0.2, 0.15})
    assert_close(bn.running_mean, {0, 0, 0})
    bn:eval()
    local mean, var = f64({1, 2, 3}), f64({4, 1, 0.25})
    local out = F.functional_call(bn, {running_mean = mean, running_var = var}, xb)
    assert_close(out, (xb - mean) / (var + 1e-5):sqrt() * bn.weight + bn.bias)
  end)

  it("puts the module's tensors back when the call raises", function()
    local m = nn.Linear(3, 2, D)
    local w0 = m.weight
    local err = errmsg(F.functional_call, m, {weight = pt.zeros(5, 7, D)}, x)
    assert.matches("Linear", err)
    assert.are.equal(w0, m.weight)
    local Boom = nn.Module:extend("Boom")
    function Boom:__init() self.w = pt.ones(2):requires_grad_() end
    function Boom:forward() error("boom at forward") end
    local b = Boom()
    local own = b.w
    assert.matches("boom at forward", errmsg(F.functional_call, b, {w = pt.zeros(2)}))
    assert.are.equal(own, b.w)
  end)

  it("ties shared parameters unless tie_weights=false", function()
    local Tied = nn.Module:extend("Tied")
    function Tied:__init()
      self.enc = nn.Linear(3, 3, {dtype = "float64", bias = false})
      self.dec = nn.Linear(3, 3, {dtype = "float64", bias = false})
      self.dec.weight = self.enc.weight
    end
    function Tied:forward(a) return self.dec(self.enc(a)) end
    local m = Tied()
    local own = m.enc.weight
    local E = f64({{1, 0, 0}, {0, 2, 0}, {0, 0, 3}})
    -- one name given: both places use it
    assert_close(F.functional_call(m, {["enc.weight"] = E}, x), pt.matmul(E, pt.matmul(E, x)))
    assert_close(F.functional_call(m, {["dec.weight"] = E}, x), pt.matmul(E, pt.matmul(E, x)))
    -- the same tensor under both names is fine
    assert_close(F.functional_call(m, {["enc.weight"] = E, ["dec.weight"] = E}, x), pt.matmul(E, pt.matmul(E, x)))
    -- untied: only the name given
    assert_close(F.functional_call(m, {["enc.weight"] = E}, x, nil, {tie_weights = false}),
                 pt.matmul(own, pt.matmul(E, x)))
    assert_error("func.functional_call: got multiple values for keys 'dec.weight', 'enc.weight', which are tied. " ..
                 "Consider using tie_weights=false", F.functional_call, m, {["enc.weight"] = E, ["dec.weight"] = E * 2},
                 x)
    assert.are.equal(own, m.enc.weight)
    assert.are.equal(own, m.dec.weight)
  end)

  it("writes a tensor the module assigns to a given buffer back into the table", function()
    local Count = nn.Module:extend("Count")
    function Count:__init() self:register_buffer("n", pt.zeros(1)) end
    function Count:forward(a)
      self.n = self.n + 1
      return a
    end
    local m = Count()
    local own = m.n
    local t = {n = pt.zeros(1)}
    F.functional_call(m, t, x)
    assert.are.same({1}, t.n:tolist())
    assert.are.equal(own, m.n)
    assert.are.same({0}, m.n:tolist())
  end)

  it("is differentiable with respect to the given tensors (gradcheck)", function()
    local m = nn.Sequential(nn.Linear(3, 2, D), nn.Tanh())
    gradcheck(function(w, b, a) return F.functional_call(m, {["1.weight"] = w, ["1.bias"] = b}, a) end,
              {W:clone(), f64({0.1, -0.2}), x:clone()})
  end)

  it("names its errors", function()
    local m = nn.Sequential(nn.Linear(3, 2, D))
    assert_error("func.functional_call: error(s) in reparametrizing for Sequential:\n\tUnexpected key(s): " ..
                 "'1.wieght', 'foo'.", F.functional_call, m, {["1.wieght"] = W, foo = x}, x)
    assert_error("func.functional_call: error(s) in reparametrizing for Sequential:\n\tMissing key(s): '1.bias'.",
                 F.functional_call, m, {["1.weight"] = W}, x, nil, {strict = true})
    assert_error("func.functional_call: error(s) in reparametrizing for Sequential:\n\tUnexpected key(s): 'x'.\n\t" ..
                 "Missing key(s): '1.bias', '1.weight'.", F.functional_call, m, {x = x}, x, nil, {strict = true})
    assert_error("func.functional_call: '1.weight' appeared in multiple tables; the behavior of functional_call is " ..
                 "ambiguous", F.functional_call, m, {{["1.weight"] = W}, {["1.weight"] = W}}, x)
    assert_error("func.functional_call: expected an nn.Module as argument 1, got table", F.functional_call, {}, {}, x)
    assert_error("func.functional_call: expected parameters_and_buffers to be a table name -> tensor, or a list of " ..
                 "such tables, got Tensor", F.functional_call, m, W, x)
    assert_error("func.functional_call: expected all elements of parameters_and_buffers to be tables name -> " ..
                 "tensor, got number at index 2", F.functional_call, m, {{}, 3}, x)
    assert_error("func.functional_call: the value for '1.weight' is a number, not a tensor", F.functional_call, m,
                 {["1.weight"] = 1}, x)
    assert_error("func.functional_call: parameter and buffer names must be strings (dotted paths as in " ..
                 "state_dict()), got boolean", F.functional_call, m, {[true] = x}, x)
    assert_error("func.functional_call: unknown option 'tie' (options: tie_weights, strict)", F.functional_call, m,
                 {}, x, nil, {tie = true})
    assert_error("func.functional_call: strict must be a boolean, got number", F.functional_call, m, {}, x, nil,
                 {strict = 1})
    assert_error("func.functional_call: expected an options table as argument 5, got Tensor", F.functional_call, m,
                 {}, x, nil, x)
    assert_error("func.functional_call: unexpected argument #6 (number)", F.functional_call, m, {}, x, nil, {}, 1)
  end)
end)

describe("func.grad", function()
  it("matches torch 1.13's functorch.grad with argnums (0, 1)", function()
    local gx, gy = table.unpack(F.grad(f, {argnums = {1, 2}})(x, y))
    -- torch: grad(f, argnums=(0, 1))(x, y)
    assert_close(gx, {3.566373842835559, -0.07741940940118283, 2.5621101274103566})
    assert_close(gy, {1.229425538604203, -0.1677346193555862, -5.090702573174318})
    -- argnums as the second argument, an integer, negative from the end
    assert_close(F.grad(f, 2)(x, y), gy)
    assert_close(F.grad(f, -1)(x, y), gy)
    assert_close(F.grad(f)(x, y), gx)
  end)

  it("equals pt.autograd.grad and leaves the arguments untouched", function()
    local a, b = x:clone():requires_grad_(), y:clone():requires_grad_()
    local ref = pt.autograd.grad(f(a, b), {a, b})
    local got = F.grad(f, {1, 2})(x, y)
    assert_close(got[1], ref[1])
    assert_close(got[2], ref[2])
    assert.is_false(got[1].requires_grad)
    assert.is_false(x.requires_grad)
    assert.is_nil(x.grad)
  end)

  it("composes: grad(grad(f)) is the second derivative (torch's value)", function()
    local d2 = F.grad(F.grad(function(t) return t:sin() * t:exp() end))(f64(0.7))
    -- torch: grad(grad(lambda t: t.sin() * t.exp()))(tensor(0.7))
    assert_close(d2, {3.0804060508635605})
    assert_close(d2, {2 * math.cos(0.7) * math.exp(0.7)})
    -- third derivative: 2 e^t (cos t - sin t)
    local d3 = F.grad(F.grad(F.grad(function(t) return t:sin() * t:exp() end)))(f64(0.7))
    assert_close(d3, {2 * math.exp(0.7) * (math.cos(0.7) - math.sin(0.7))})
  end)

  it("differentiates nested tables of tensors; the gradient has their structure", function()
    local params = {w = W, b = {f64({0.1, -0.2}), f64(0.5)}}
    local function loss(p, a) return (pt.tanh(pt.matmul(p.w, a) + p.b[1]) * p.b[2]):sum() end
    local gp = F.grad(loss)(params, x)
    local w, b1, b2 = W:clone():requires_grad_(), f64({0.1, -0.2}):requires_grad_(), f64(0.5):requires_grad_()
    local ref = pt.autograd.grad(loss({w = w, b = {b1, b2}}, x), {w, b1, b2})
    assert_close(gp.w, ref[1])
    assert_close(gp.b[1], ref[2])
    assert_close(gp.b[2], ref[3])
    assert.are.same({2, 3}, gp.w:size())
  end)

  it("gives zeros for an input the output does not reach, and for a constant function", function()
    local gr = F.grad(function(a, b) return (a * 2):sum() end, {1, 2})(x, y)
    assert_close(gr[1], {2, 2, 2})
    assert_close(gr[2], {0, 0, 0})
    assert_close(F.grad(function() return f64(3) end)(x), {0, 0, 0})
  end)

  it("has_aux returns the aux value; grad_and_value the value too", function()
    local function fa(a) return (a * a):sum(), {sq = a * a, n = 3} end
    local gr, aux = F.grad(fa, {has_aux = true})(x)
    assert_close(gr, x * 2)
    assert_close(aux.sq, x * x)
    assert.is_false(aux.sq.requires_grad)
    assert.are.equal(3, aux.n)
    local g2, v = F.grad_and_value(f, {argnums = {1, 2}})(x, y)
    assert_close(v, {f(x, y):item()})
    assert_close(g2[2], {1.229425538604203, -0.1677346193555862, -5.090702573174318})
    assert.is_false(v.requires_grad)
    local g3, v3, aux3 = F.grad_and_value(fa, 1, {has_aux = true})(x)
    assert_close(g3, x * 2)
    assert_close(v3, {(x * x):sum():item()})
    assert_close(aux3.sq, x * x)
  end)

  it("stays differentiable with respect to an argument that requires grad (gradcheck)", function()
    local a = x:clone():requires_grad_()
    local gr = F.grad(function(t) return (t:sin() * t):sum() end)(a)
    assert.is_true(gr.requires_grad)
    gr:sum():backward()
    -- d/da of sum(cos a * a + sin a) = 2 cos a - a sin a
    assert_close(a.grad, x:cos() * 2 - x * x:sin())
    gradcheck(function(t) return F.grad(function(u) return (u:exp() * u):sum() end)(t) end, {x:clone()})
  end)

  it("keeps the graph through an argument it does not differentiate that requires grad (MAML-style)", function()
    local w = y:clone():requires_grad_()
    local function inner(wt, a) return (pt.tanh(wt * a)):sum() end
    local gx = F.grad(inner, 2)(w, x)
    assert.is_true(gx.requires_grad)
    gx:sum():backward()
    -- d/dw sum_i w_i (1 - tanh^2(w_i x_i)) = 1 - t^2 - 2 w x t (1 - t^2), t = tanh(w x)
    local t = pt.tanh(y * x)
    assert_close(w.grad, (1 - t * t) - y * x * t * (1 - t * t) * 2)
  end)

  it("ignores an outer no_grad for fn's own computation", function()
    local gr = pt.no_grad(function() return F.grad(function(t) return (t * t):sum() end)(x) end)
    assert_close(gr, x * 2)
  end)

  it("names its errors", function()
    assert_error("grad(f)(...): expected f(...) to return a scalar Tensor, got tensor with 1 dims. Maybe you wanted " ..
                 "to use the vjp or jacrev APIs instead?", F.grad(function(a) return a * 2 end), x)
    assert_error("grad(f)(...): expected f(...) to return a Tensor, got number", F.grad(function() return 1 end), x)
    assert_error("grad(f)(...): expected f(...) to return one value, got 2 (has_aux=true takes output, aux)",
                 F.grad(function(a) return a:sum(), 1 end), x)
    assert_error("grad(f)(...): with has_aux=true, f(...) must return two values: output, aux (got 1)",
                 F.grad(function(a) return a:sum() end, {has_aux = true}), x)
    assert_error("grad(f)(...): got argnums=3, but only 2 positional inputs (argnums are 1-based)", F.grad(f, 3), x, y)
    assert_error("grad(f)(...): got argnums=0, but only 2 positional inputs (argnums are 1-based)", F.grad(f, 0), x, y)
    assert_error("grad(f)(...): got argnums=-3, but only 2 positional inputs (argnums are 1-based)", F.grad(f, -3), x,
                 y)
    assert_error("grad(f)(...): argnums elements must be unique, got {1, -2}", F.grad(f, {1, -2}), x, y)
    assert_error("grad(f)(...): argument 1: only floating point tensors can be differentiated, got int64",
                 F.grad(f), pt.tensor({1, 2, 3}, {dtype = "int64"}), y)
    assert_error("grad(f)(...): argument 1 must be a tensor or a (nested) table of tensors to be differentiated, " ..
                 "got number", F.grad(f), 2, y)
    assert_error("grad(f)(...): argument 1 must be a tensor or a (nested) table of tensors to be differentiated, " ..
                 "found a number in it", F.grad(function(p) return p[1]:sum() end), {x, 2})
    assert_error("func.grad: argnums must be non-empty", F.grad, f, {argnums = {}})
    assert_error("func.grad: argnums must be an integer or a list of integers, got 1.5", F.grad, f, {argnums = 1.5})
    assert_error("func.grad: argnums must be an integer or a list of integers, got string at index 2", F.grad, f,
                 {1, "2"})
    assert_error("func.grad: unknown option 'hasaux' (options: argnums, has_aux)", F.grad, f, {hasaux = true})
    assert_error("func.grad: has_aux must be a boolean, got number", F.grad, f, {has_aux = 1})
    assert_error("func.grad: expected a function as argument 1, got nil", F.grad, nil)
    assert_error("func.grad: argnums given twice (as argument 2 and as an option)", F.grad, f, 1, {argnums = 2})
    assert_error("func.grad: expected argnums or an options table as argument 2, got string", F.grad, f, "1")
    assert_error("func.grad: unexpected argument #3 (number)", F.grad, f, {}, 1)
    assert_error("func.grad: expected an options table as argument 3, got number", F.grad, f, 1, 2)
    assert_error("grad_and_value(f)(...): expected f(...) to return a Tensor, got table",
                 F.grad_and_value(function() return {} end), x)
    assert_error("func.grad_and_value: expected a function as argument 1, got number", F.grad_and_value, 1)
  end)
end)

describe("func.vjp", function()
  it("matches torch 1.13's functorch.vjp and can be called again", function()
    local out, vjp_fn = F.vjp(g, x, W)
    -- torch: out, fn = vjp(g, x, W); fn(tensor([1., -2.]))
    assert_close(out, {0.9640275800758169, -0.8298019099859595})
    local ct = f64({1.0, -2.0})
    local vx, vW = vjp_fn(ct)
    assert_close(vx, {-0.8989609581243786, -0.5377940101286448, 0.3290914963969447})
    assert_close(flat(vW), {0.035325412426582214, -0.08831353106645554, 0.14130164970632886, -0.3114287901836536,
                            0.778571975459134, -1.2457151607346144})
    local vx2 = vjp_fn(ct * 2)
    assert_close(vx2, vx * 2)
    assert.is_false(out.requires_grad)
  end)

  it("takes and returns trees: cotangents shaped as the output, gradients as each primal", function()
    local function h(p, a) return {s = (p.w * a):sum(), v = p.w:exp()} end
    local out, vjp_fn = F.vjp(h, {w = y}, x)
    assert_close(out.v, y:exp())
    local gp, ga = vjp_fn({s = f64(2), v = f64({1, 1, 1})})
    assert_close(gp.w, x * 2 + y:exp())
    assert_close(ga, y * 2)
    local o2, fn2, aux = F.vjp(function(a) return a * 3, a:sum() end, x, {has_aux = true})
    assert_close(o2, x * 3)
    assert_close(aux, {x:sum():item()})
    assert_close(fn2(y), y * 3)
  end)

  it("names its errors", function()
    local _, vjp_fn = F.vjp(g, x, W)
    assert_error("vjp_fn: expected the structure of the cotangents to be the same as the structure of the outputs " ..
                 "of the function. cotangents: {T, T}, primal output: T", vjp_fn, {x, x})
    assert_error("vjp_fn: mismatch in shape: cotangent 1 has a shape of {3} and output 1 has a shape of {2}", vjp_fn,
                 x)
    assert_error("vjp_fn: expected one cotangent argument (a tensor or a table shaped as f's output), got 2 arguments",
                 vjp_fn, x, x)
    assert_error("vjp(f, ...): expected f(...) to return only tensors, got unsupported type number", F.vjp,
                 function(a) return {a, 1} end, x)
    assert_error("vjp(f, ...): expected f to be a function that has non-empty output (got {})", F.vjp,
                 function() return {} end, x)
    assert_error("vjp(f, ...): all outputs of f must be floating point tensors, got a tensor with dtype int64", F.vjp,
                 function(a) return a:long() end, x)
    assert_error("vjp(f, ...): expected at least one primal to differentiate f with respect to", F.vjp, g)
    assert_error("func.vjp: has_aux must be a boolean, got string", F.vjp, g, x, {has_aux = "yes"})
    assert_error("vjp(f, ...): with has_aux=true, f(...) must return two values: output, aux (got 1)", F.vjp,
                 function(a) return a end, x, {has_aux = true})
  end)
end)

describe("func.jacrev and func.jacfwd", function()
  it("match torch 1.13's functorch.jacrev / jacfwd", function()
    local J = F.jacrev(g, {1, 2})(x, W)
    assert.are.same({2, 3}, J[1]:size())
    assert.are.same({2, 2, 3}, J[2]:size())
    -- torch: jacrev(g, argnums=(0, 1))(x, W)
    local jx = {0.035325412426582214, -0.07065082485316443, 0.017662706213291107, 0.4671431852754804,
                0.2335715926377402, -0.1557143950918268}
    assert_close(flat(J[1]), jx)
    assert_close(flat(J[2]), {0.035325412426582214, -0.08831353106645554, 0.14130164970632886, 0, 0, 0, 0, 0, 0,
                              0.1557143950918268, -0.389285987729567, 0.6228575803673072})
    -- torch: jacfwd(g)(x, W)
    local Jf = F.jacfwd(g)(x, W)
    assert.are.same({2, 3}, Jf:size())
    assert_close(flat(Jf), jx)
    assert_close(F.jacfwd(g, {1, 2})(x, W)[2], J[2])
  end)

  it("equal pt.autograd.functional.jacobian for tree outputs and arguments", function()
    local function h(p, a) return {p.u * a:sum(), d = (p.u * p.v):exp()} end
    local p = {u = x, v = y}
    local J = F.jacrev(h)(p, x)
    local Jf = F.jacfwd(h)(p, x)
    local ref = pt.autograd.functional.jacobian(function(u, v) return {u * x:sum(), (u * v):exp()} end, {x, y})
    assert_close(J[1].u, ref[1][1])
    assert_close(J[1].v, ref[1][2])
    assert_close(J.d.u, ref[2][1])
    assert_close(J.d.v, ref[2][2])
    assert_close(Jf[1].u, ref[1][1])
    assert_close(Jf.d.v, ref[2][2])
    local Jl = F.jacrev(h, {1, 2})(p, x)
    assert_close(Jl.d[2], pt.zeros(3, 3, D))
    assert_close(Jl[1][2], pt.ones(3, 3, D) * x:view(3, 1))
  end)

  it("has_aux; jacrev composes (jacrev(jacrev(f)) is the Hessian)", function()
    local J, aux = F.jacrev(function(a) return a:sin(), a:cos() end, {has_aux = true})(x)
    assert_close(J, pt.diag(x:cos()))
    assert_close(aux, x:cos())
    local H = F.jacrev(F.jacrev(function(a) return (a:sin() * a):sum() end))(x)
    local Hf = F.jacfwd(F.jacrev(function(a) return (a:sin() * a):sum() end))(x)
    local ref = pt.autograd.functional.hessian(function(a) return (a:sin() * a):sum() end, x)
    assert_close(H, ref)
    assert_close(Hf, ref)
    -- jacfwd inside another transform (reverse mode there, same values)
    assert_close(F.jacrev(F.jacfwd(function(a) return (a:sin() * a):sum() end))(x), ref)
    -- per-sample Jacobians: vmap(jacrev(f)) equals a loop of jacobian calls
    local per = F.vmap(F.jacrev(g), {in_dims = {1, nil}})(X, W)
    assert.are.same({4, 2, 3}, per:size())
    for i = 1, 4 do
      assert_close(per[i], pt.autograd.functional.jacobian(function(a) return g(a, W) end, X[i]))
    end
  end)

  it("name their errors", function()
    assert_error("jacrev(f)(...): expected f(...) to return only tensors, got unsupported type string",
                 F.jacrev(function(a) return {a, "x"} end), x)
    assert_error("jacfwd(f)(...): got argnums=2, but only 1 positional inputs (argnums are 1-based)", F.jacfwd(g, 2),
                 x)
    assert_error("func.jacrev: unknown option 'chunk_size' (options: argnums, has_aux)", F.jacrev, g,
                 {chunk_size = 1})
    assert_error("func.jacfwd: expected a function as argument 1, got string", F.jacfwd, "g")
  end)
end)

describe("func.hessian", function()
  it("matches torch 1.13's functorch.hessian and pt.autograd.functional.hessian", function()
    local H = F.hessian(f)(x, y)
    -- torch: hessian(f)(x, y)
    assert_close(flat(H), {3.7808616920936955, 0, 0, 0, 0.36224615483889655, 0, 0, 0, 1.8069730701192612})
    local ref = pt.autograd.functional.hessian(f, {x, y})
    local Hl = F.hessian(f, {1, 2})(x, y)
    assert_close(Hl[1][2], ref[1][2])
    assert_close(Hl[2][1], ref[2][1])
    assert_close(Hl[2][2], ref[2][2])
    assert_close(F.hessian(f, 2)(x, y), ref[2][2])
  end)

  it("names its errors", function()
    assert_error("func.hessian: unknown option 'has_aux' (options: argnums)", F.hessian, f, {has_aux = true})
    assert_error("hessian(f)(...): got argnums=3, but only 2 positional inputs (argnums are 1-based)", F.hessian(f, 3),
                 x, y)
  end)
end)

describe("func.vmap", function()
  local A = f64({{1, 2, 3}, {4, 5, 6}})

  it("calls fn per slice and stacks the results at out_dims", function()
    assert_close(F.vmap(function(r) return r:sum() end)(A), {6, 15})
    assert_close(F.vmap(function(c) return c:sum() end, {in_dims = 2})(A), {5, 7, 9})
    assert_close(F.vmap(function(c) return c:sum() end, {in_dims = -1})(A), {5, 7, 9})
    local o = F.vmap(function(r) return r * 2 end, {out_dims = 2})(A)
    assert.are.same({3, 2}, o:size())
    assert_close(o, A:t() * 2)
    -- an unmapped argument, a list of in_dims (nil or false for it)
    local v = f64({1, 0, -1})
    assert_close(F.vmap(function(r, w) return (r * w):sum() end, {in_dims = {1, false}})(A, v), {-2, -2})
    assert_close(F.vmap(function(w, r) return (r * w):sum() end, {in_dims = {nil, 1}})(v, A), {-2, -2})
  end)

  it("maps nested structures, several return values and tables of outputs", function()
    local a, b = f64({{1, 2}, {3, 4}, {5, 6}}), f64({10, 20, 30})
    local s, t = F.vmap(function(p) return p.a:sum() + p.b, {p.a * 2, n = p.b} end)({a = a, b = b})
    assert_close(s, {13, 27, 41})
    assert_close(t[1], a * 2)
    assert_close(t.n, b)
    -- in_dims shaped as the argument: a unmapped along its rows but mapped along columns
    local r = F.vmap(function(p) return p.a * p.b end, {in_dims = {{a = 2, b = 1}}})({a = a:t(), b = b})
    assert_close(r, a * b:view(3, 1))
    -- per-output out_dims
    local o1, o2 = F.vmap(function(row) return row, row:sum() end, {out_dims = {2, 1}})(a)
    assert_close(o1, a:t())
    assert_close(o2, {3, 7, 11})
    -- an output with out_dim nil is returned once
    local c, d = F.vmap(function(row) return row:sum(), "tag" end, {out_dims = {1, false}})(a)
    assert_close(c, {3, 7, 11})
    assert.are.equal("tag", d)
  end)

  it("nests: vmap(vmap(f)) equals the double loop", function()
    local a, b = f64({1, 2, 3}), f64({-1, 0.5})
    local outer = F.vmap(F.vmap(function(p, q) return p * q + p:exp() end, {in_dims = {nil, 1}}), {in_dims = {1, nil}})
    local o = outer(a, b)
    assert.are.same({3, 2}, o:size())
    for i = 1, 3 do
      for j = 1, 2 do
        assert_close({o[i][j]}, {a[i] * b[j] + math.exp(a[i])})
      end
    end
  end)

  it("vmap(grad(f)) gives per-sample gradients, as a loop over pt.autograd.grad", function()
    local w = f64({0.3, -0.7, 1.1})
    local function loss(wt, xi, yi) return ((pt.tanh((wt * xi):sum()) - yi) ^ 2) end
    local ys = f64({0.5, -0.5, 0.25, 1})
    local per = F.vmap(F.grad(loss), {in_dims = {nil, 1, 1}})(w, X, ys)
    assert.are.same({4, 3}, per:size())
    for i = 1, 4 do
      local wl = w:clone():requires_grad_()
      local gi = pt.autograd.grad(loss(wl, X[i], ys[i]), {wl})[1]
      assert_close(per[i], gi)
    end
  end)

  it("the per-sample-gradients recipe: vmap(grad(loss)) with functional_call (torch 1.13's values)", function()
    local model = recipe_model()
    local params = detached_params(model)
    local function loss(p, xi, yi)
      local out = F.functional_call(model, p, {xi:unsqueeze(1)})
      return nn.functional.mse_loss(out, yi:unsqueeze(1))
    end
    local ps = F.vmap(F.grad(loss), {in_dims = {nil, 1, 1}})(params, X, Y)
    assert.are.same({4, 4, 3}, ps["1.weight"]:size())
    assert.are.same({4, 1}, ps["3.bias"]:size())
    -- torch: vmap(grad(loss), in_dims=(None, 0, 0))(params, X, Y) with stateless.functional_call
    assert_close(flat(ps["1.bias"]), {0.3615950690630186, 0.19529418214955033, -0.20237386985712552,
      -0.3965832597443285, -1.0632141276542915, -0.8650192881576839, 0.9485300138263517, 1.3166728995127648,
      -0.18883309101236512, -0.11062988104105041, 0.09259227970306488, 0.12280746008924731, 0.7389885741739449,
      0.7324004773477102, -0.7324004773477103, -0.7389885741739449})
    assert_close(flat(ps["3.weight"]), {0.41694592393045354, 0.17709925530385787, -0.13368591432291163,
      -0.3893808905752918, -2.493858209017577, -1.2243194205477723, 0.8526101575742302, 2.3320155473117525,
      -0.22875487943776202, -0.058473426739489104, 0.1480533234822648, 0.2736828826720823, 2.1946860398332126,
      1.0161137209412736, -1.0161137209412734, -2.1946860398332126})
    assert_close(flat(ps["3.bias"]), {-0.6352550704739688, 3.0814962451437133, 0.34189033994087836,
      -2.595066762120913})
    assert_close(flat(ps["1.weight"]:select(1, 2)), {-1.0632141276542915, 0.5316070638271457, -0.26580353191357287,
      -0.8650192881576839, 0.43250964407884196, -0.21625482203942098, 0.9485300138263517, -0.47426500691317586,
      0.23713250345658793, 1.3166728995127648, -0.6583364497563824, 0.3291682248781912})
    -- and the loop: each sample's backward through the model itself
    for i = 1, 4 do
      model:zero_grad()
      nn.functional.mse_loss(model(X[i]:unsqueeze(1)), Y[i]:unsqueeze(1)):backward()
      for n, p in model:named_parameters() do assert_close(ps[n][i], p.grad) end
    end
  end)

  it("passes gradients through to mapped and unmapped inputs (gradcheck)", function()
    gradcheck(function(a, w) return F.vmap(function(r, u) return (r * u):exp() end, {in_dims = {1, nil}})(a, w) end,
              {A:clone(), f64({0.1, -0.2, 0.3})})
    gradcheck(function(a) return F.vmap(function(c) return c:sin():sum() end, {in_dims = 2})(a) end, {A:clone()})
  end)

  it("randomness: error detects a draw, different lets samples differ, same repeats the draws", function()
    local rnd = function(r) return r + pt.rand(3, D) end
    assert_error("vmap: called a random operation while in randomness error mode. Please either use the \"same\" or " ..
                 "\"different\" randomness flags on vmap or perform the randomness operation out of vmap",
                 F.vmap(rnd), A)
    pt.manual_seed(7)
    local d = F.vmap(rnd, {randomness = "different"})(A) - A
    assert.is_false(pt.equal(d[1], d[2]))
    pt.manual_seed(7)
    local r1, r2 = pt.rand(3, D), pt.rand(3, D)
    assert_close(d[1], r1)
    assert_close(d[2], r2)
    pt.manual_seed(7)
    local s = F.vmap(rnd, {randomness = "same"})(A) - A
    assert_close(s[1], r1)
    assert_close(s[2], r1)
    -- dropout in training mode draws too
    local drop = nn.Dropout(0.5)
    assert.matches("randomness error mode", errmsg(F.vmap(function(r) return drop(r) end), A))
    drop:eval()
    assert_close(F.vmap(function(r) return drop(r) end)(A), A)
  end)

  it("names its errors", function()
    local id = function(...) return ... end
    assert_error("vmap: expected all tensors to have the same size in the mapped dimension, got sizes {2, 3} for the " ..
                 "mapped dimension", F.vmap(id), A, x)
    assert_error("vmap(f, in_dims=3, ...)(...): got in_dim=3 for some input, but that input is a Tensor of " ..
                 "dimensionality 2 so expected in_dim to satisfy -2 <= in_dim <= 2 and in_dim ~= 0 (dims are 1-based)",
                 F.vmap(id, {in_dims = 3}), A)
    assert_error("vmap(f, in_dims=0, ...)(...): got in_dim=0 for some input, but that input is a Tensor of " ..
                 "dimensionality 2 so expected in_dim to satisfy -2 <= in_dim <= 2 and in_dim ~= 0 (dims are 1-based)",
                 F.vmap(id, {in_dims = 0}), A)
    assert_error("vmap(f, in_dims=1, ...)(...): got in_dim=1 for an input but the input is of type number. We cannot " ..
                 "vmap over non-Tensor arguments, please use nil as the respective in_dim", F.vmap(id), A, 3)
    assert_error("vmap(f)(...): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over a " ..
                 "function with no inputs. The latter is unsupported", F.vmap(id))
    assert_error("vmap: expected at least one Tensor to vmap over", F.vmap(id, {in_dims = {false, nil}}), A, 2)
    assert_error("vmap(f, in_dims={1, 1, 1}, ...)(...): in_dims is not compatible with the structure of the inputs: " ..
                 "in_dims has 3 entries but there are 2 inputs", F.vmap(id, {in_dims = {1, 1, 1}}), A, A)
    assert_error("vmap(f, in_dims={{b=1}}, ...)(...): in_dims is not compatible with the structure of the inputs. " ..
                 "in_dims has structure {{b=1}} but the inputs have structure {{a=T}}",
                 F.vmap(id, {in_dims = {{b = 1}}}), {a = A})
    assert_error("vmap(f, in_dims={{1}}, ...)(...): in_dims is not compatible with the structure of the inputs. " ..
                 "in_dims has structure {{1}} but the inputs have structure {T}", F.vmap(id, {in_dims = {{1}}}), A)
    assert_error("vmap(f, in_dims={1.5}, ...)(...): got in_dim=1.5 for an input but in_dim must be either an integer " ..
                 "dimension or nil", F.vmap(id, {in_dims = {1.5}}), A)
    assert_error("vmap(f, in_dims=x, ...)(...): expected in_dims to be an integer or a (nested) table matching the " ..
                 "structure of the inputs, got string", F.vmap(id, {in_dims = "x"}), A)
    assert_error("vmap: f must only return Tensors, got type number as a return. Did you mean to set out_dims to nil " ..
                 "for that output?", F.vmap(function() return 1 end), A)
    assert_error("vmap: f returned different values for samples 1 and 2 at output 1, whose out_dim is nil (such an " ..
                 "output must not depend on the mapped inputs)", F.vmap(function(r) return r end, {out_dims = false}), A)
    assert_error("vmap(f, ..., out_dims=3): out_dim=3 is out of range for an output of 2 dims with the mapped dim " ..
                 "(expected -2 <= out_dim <= 2 and out_dim ~= 0)", F.vmap(id, {out_dims = 3}), A)
    assert_error("vmap(f, ..., out_dims={1, 1}): out_dims is not compatible with the structure of the outputs. " ..
                 "out_dims has structure {1, 1} but the outputs have structure T", F.vmap(id, {out_dims = {1, 1}}), A)
    assert_error("vmap(f, ..., out_dims=x): out_dims must be an integer or a (nested) table of integers representing " ..
                 "where in the outputs the vmapped dimension should appear, got string", F.vmap(id, {out_dims = "x"}),
                 A)
    assert_error("vmap: f returned a tensor of shape {1} for sample 1 but {2} for sample 2 at output 1 (the samples' " ..
                 "outputs are stacked)", F.vmap(function(r) return r:narrow(1, 1, math.tointeger(r[1])) end),
                 f64({{1, 0}, {2, 0}}))
    assert_error("vmap: f returned 1 values for sample 1 but 2 for sample 2",
                 F.vmap(function(r) if r:item() > 1 then return r, r end return r end), f64({1, 2}))
    assert_error("vmap: f returned outputs of structure {T} for sample 1 but {T, T} for sample 2",
                 F.vmap(function(r) if r:item() > 1 then return {r, r} end return {r} end), f64({1, 2}))
    assert_error("vmap: the mapped dimension has size 0; partrain's vmap calls f once per sample, so it cannot make " ..
                 "the outputs of an empty batch", F.vmap(id), pt.zeros(0, 2))
    assert_error("func.vmap: only allowed values for randomness are \"error\", \"different\", or \"same\", got " ..
                 "\"none\"", F.vmap, id, {randomness = "none"})
    assert_error("func.vmap: chunk_size should be nil or an integer greater than 0, got 0", F.vmap, id,
                 {chunk_size = 0})
    assert_error("func.vmap: unknown option 'in_dim' (options: in_dims, out_dims, randomness, chunk_size)", F.vmap, id,
                 {in_dim = 1})
    assert_error("func.vmap: expected an options table as argument 2, got number", F.vmap, id, 1)
    assert_error("func.vmap: expected a function as argument 1, got table", F.vmap, {})
    -- chunk_size is accepted and changes nothing
    assert_close(F.vmap(function(r) return r:sum() end, {chunk_size = 1})(A), {6, 15})
  end)
end)

describe("func.stack_module_state", function()
  it("stacks parameters and buffers; ensembling with vmap and functional_call equals each model's forward", function()
    local models = {}
    for i = 1, 3 do
      pt.manual_seed(i)
      models[i] = nn.Sequential(nn.Linear(3, 2, D), nn.BatchNorm1d(2, D), nn.Tanh())
      models[i]:eval()
      pt.no_grad(function() models[i][2].running_mean:fill_(0.1 * i) end)
    end
    local params, buffers = F.stack_module_state(models)
    assert.are.same({3, 2, 3}, params["1.weight"]:size())
    assert.is_true(params["1.weight"].requires_grad)
    assert.is_true(params["1.weight"].is_leaf)
    assert.are.same({3, 2}, buffers["2.running_mean"]:size())
    assert.is_false(buffers["2.running_mean"].requires_grad)
    for i = 1, 3 do
      assert_close(params["1.weight"][i], models[i][1].weight)
      assert_close(buffers["2.running_var"][i], models[i][2].running_var)
    end
    local base = models[1]
    local ens = F.vmap(function(p, b, a) return F.functional_call(base, {p, b}, {a}) end, {in_dims = {1, 1, nil}})
    local out = ens(params, buffers, X)
    assert.are.same({3, 4, 2}, out:size())
    for i = 1, 3 do assert_close(out[i], models[i](X)) end
    -- gradients reach the stacked parameters
    out:sum():backward()
    assert.are.same({3, 2, 3}, params["1.weight"].grad:size())
  end)

  it("names its errors", function()
    assert_error("func.stack_module_state: expected at least one model, got 0", F.stack_module_state, {})
    assert_error("func.stack_module_state: expected a list of modules, got number at index 1", F.stack_module_state,
                 {1})
    assert_error("func.stack_module_state: expected a list of modules, got Tensor", F.stack_module_state, x)
    assert_error("func.stack_module_state: expected all models to be of the same class", F.stack_module_state,
                 {nn.Linear(2, 2), nn.Tanh()})
    local a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b:eval()
    assert_error("func.stack_module_state: expected all models to have the same training/eval mode",
                 F.stack_module_state, {a, b})
    assert_error("func.stack_module_state: parameter 'weight' has shape {2,2} in model 1 but {3,2} in model 2",
                 F.stack_module_state, {nn.Linear(2, 2), nn.Linear(2, 3)})
    local c = nn.Linear(2, 2)
    c.bias.requires_grad = false
    assert_error("func.stack_module_state: expected bias from each model to have the same requires_grad",
                 F.stack_module_state, {nn.Linear(2, 2), c})
    assert_error("func.stack_module_state: unexpected argument #2 (number)", F.stack_module_state, {a}, 1)
  end)
end)

describe("help(pt.func)", function()
  it("documents every function; vmap says it loops", function()
    for _, k in ipairs {"functional_call", "grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "hessian", "vmap",
                        "stack_module_state"} do
      assert.is_string(pt._docs[F[k]], k)
      assert.matches("^func%." .. k .. "%(", pt._docs[F[k]])
    end
    assert.matches("It LOOPS", pt._docs[F.vmap])
    assert.matches("double backward trick", pt._docs[F.jacfwd])
    assert.matches("^pt%.func: ", pt.help.text(pt.func):match("[^\n]*pt%.func: [^\n]*") or "")
  end)
end)
