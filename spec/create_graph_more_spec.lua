-- Second derivatives (pt.autograd.grad with create_graph) through the ops whose create_graph
-- formulas lib/autograd.c gained last: prod and cumprod, grouped and depthwise convolutions,
-- diagonal / unfold / strided slices and views seen over their base's current history
-- (AsStridedBackward), interpolate's resampling, average pooling with per-window divisors,
-- adaptive average pooling, the fused LSTM and GRU cells, the special functions, xlogy, sinc,
-- scatter_reduce / index_reduce.
--
-- Each case is checked three ways:
--  * the first derivative (J^T v, recorded) and the second (the gradient of <u, J^T v>) against
--    numbers computed once with /usr/bin/python3 and torch 1.13.0a0 in float64 on the same
--    inputs (the `ref` table below; the script is not run at test time), or, where torch 1.13
--    has no double backward or a different one, against the same function composed from simpler
--    ops that support create_graph (1e-12);
--  * pt.autograd.gradgradcheck (finite differences of the recorded first derivative).
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local F64 = {dtype = "float64"}
local grad = pt.autograd.grad

-- deterministic values sin(k i + c), i = 1.. in row-major order (the reference script's det)
local function det(shape, k, c)
  local t = pt.zeros(shape, F64)
  for i = 1, t:numel() do t:_set_flat(i, math.sin((k or 1.7) * i + (c or 0.3))) end
  return t
end

-- the first derivatives of f at xs (J^T v, with create_graph) and the gradients of
-- sum_i <u_i, (J^T v)_i>: second derivatives, as the reference script computes them
local function second(f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  local v = det(y:size(), 2.3, 0.1)
  local gs = grad(y, ins, {grad_outputs = v, create_graph = true, allow_unused = true})
  local s
  for i, x in ipairs(ins) do
    if gs[i] ~= nil then
      local term = (gs[i] * det(x:size(), 0.9, 0.5)):sum()
      s = s and s + term or term
    end
  end
  local hs = grad(s, ins, {allow_unused = true})
  return gs, hs
end

-- second(f, xs) against ref[name] (false: no gradient), then gradgradcheck
local function check(ref, f, xs, opts)
  local gs, hs = second(f, xs)
  for i = 1, #xs do
    if ref.g[i] == false then assert.is_nil(gs[i]) else assert_close(gs[i], ref.g[i], opts and opts.tol) end
    if ref.h[i] == false then assert.is_nil(hs[i]) else assert_close(hs[i], ref.h[i], opts and opts.tol) end
  end
end

-- second(f, xs) against second(f_simple, xs): f_simple is the same function made of ops that
-- already have formulas
local function check_same(f, f_simple, xs, tol)
  local gs, hs = second(f, xs)
  local gs2, hs2 = second(f_simple, xs)
  for i = 1, #xs do
    if gs2[i] == nil then assert.is_nil(gs[i]) else assert_close(gs[i], gs2[i]:detach(), tol) end
    if hs2[i] == nil then assert.is_nil(hs[i]) else assert_close(hs[i], hs2[i], tol) end
  end
end

local function gradgradcheck(f, xs, opts)
  pt.manual_seed(7)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  assert.is_true(pt.autograd.gradgradcheck(f, ins, opts))
end

local function refused(name, f, xs)
  local ins = {}
  for i, x in ipairs(xs) do ins[i] = x:clone():requires_grad_() end
  local y = f(table.unpack(ins))
  support.assert_error("autograd.grad: create_graph is not supported through " .. name, function()
    grad((y * y):sum(), ins, {create_graph = true})
  end)
end

-- torch 1.13 numbers (first derivatives g, second derivatives h, per input)
local ref = {
  ["prod"] = {g = {{{-0.0011727586042391384, 0.003944195133944026, 0.0022713316384563517, -0.0014004106119552449}, {-0.0016574208257272183, 0.0019140006140753003, 0.008221854283728576, -0.0011100083407501395}, {-0.004227206053445443, 0.0016266312743016314, -0.0037182704847320254, -0.0011203850057949743}}}, h = {{{0.007855601235793274, -0.01399875921784414, -0.013428015865295892, 0.006902899192874537}, {0.0076048309020109615, -0.012173246091109039, -0.02209436562573816, 0.007385088029309374}, {0.03464768448803394, -0.009603641291310347, 0.012805695075080874, 0.005588958788429492}}}},
  ["prod one zero"] = {g = {{{0.0, -0.0, -0.0, 0.0}, {0.0, -0.0, 0.008221854283728576, 0.0}, {0.0, -0.0, 0.0, 0.0}}}, h = {{{0.0036622531292906766, -0.012316806646829897, -0.007092841928872793, 0.004373157551252701}, {0.005175740841832549, -0.005976980013639891, -0.022094365625738157, 0.003466298609753815}, {0.013200584111195573, -0.0050795922135895115, 0.011611296364858999, 0.0034987025280833702}}}},
  ["prod dim 1"] = {g = {{{0.0, -0.5435615722934632, 0.0, 0.1693674989468323}, {0.2305966012129196, -0.26377426770898416, -0.13165830156020203, 0.134245866803659}, {0.0, -0.2241710217103224, -0.0, 0.13550083430465423}}}, h = {{{-0.19933759261539524, -0.350070027552578, 0.11357918656360452, 0.003646081466575355}, {0.7551276893652998, 0.5715645396372663, 0.29809178384514956, -0.22854798431924117}, {-0.7185119556037951, 0.38350520121983717, -0.18593415859180293, -0.005108756597288542}}}},
  ["prod dim 2 keepdim"] = {g = {{{0.0, -0.0, -0.0, 0.14155460749093104}, {0.0, -0.0, 0.0, 0.0}, {-0.0, 0.0, -0.18776584135901547, -0.0}}}, h = {{{-0.10441824931208246, 0.3511770873758518, 0.20223127968319288, -0.17985419504835512}, {0.39358470301728793, 0.0, -0.7638286336316518, 0.0}, {0.5050712877190818, -0.1943517164690915, -0.3114408689735135, 0.13386484842791022}}}},
  ["prod dim 2 no zero"] = {g = {{{0.11854336327322032, -0.3986823502240998, -0.22958799070689806, 0.14155460749093104}, {-0.12603712268513553, 0.1455485091481144, 0.6252237458178018, -0.08440961719137614}, {-0.2134661543538328, 0.0821418966302408, -0.18776584135901547, -0.056577388364547704}}}, h = {{{-0.36034375441181976, -0.04362660899779891, 0.5173363274936421, -0.17985419504835515}, {0.21798899080493986, -0.5096111742423426, 0.1072370222641641, 0.3202831595282817}, {0.66039962154445, -0.06582421840326073, -0.3114408689735135, -0.006462927912010877}}}},
  ["cumprod 1"] = {g = {{{0.25397169850061274, -2.1472194329980936, 0.7171174335075214, 0.46239740117755995}, {-0.5956799273883154, -0.5567487179852266, 0.21766392596367698, 0.2678639541216056}, {0.80870816111452, -0.20069046834171453, 0.023933844557877778, 0.5914961024604397}}}, h = {{{1.0503268471341518, -0.6768132405861618, -0.15318264968256987, -0.32251238155909306}, {0.22748165155186972, 1.2365276846874715, 0.14740100995631078, -0.7174268683956739}, {-0.2695696227886888, 0.34333536001700143, -0.07230059238827774, -0.022301040663123328}}}},
  ["cumprod 2"] = {g = {{{1.151232557660485, -1.6000967763452627, -0.28268415018023774, 0.026081506109152573}, {-1.5774744891114265, 0.8714701072763558, 0.4661828879521554, -0.028910876591579357}, {1.3943256667351807, -0.17913637313311734, -0.2202684510790723, -0.04678500077034133}}}, h = {{{-1.0799997651486266, -1.4067783736107304, 0.42523970588229126, -0.033138223969226305}, {-0.15803445151017392, -1.361530702876637, -0.13254624697931927, 0.10969919314394551}, {0.7812747072512884, -0.7112781080062872, -0.4187576053218694, -0.005344327408572276}}}},
  ["cumprod 2 zeros"] = {g = {{{1.129390884625518, -1.5266393570687666, -0.24038244987992324, 0.02608150610915257}, {-1.4834979723275308, 0.0, 0.0, 0.0}, {1.6447432018789727, -0.2754971819388329, -0.22026845107907234, 0.0}}}, h = {{{-1.032845364857033, -1.3340355982154115, 0.3671814457156657, -0.03313822396922631}, {-0.0699440563757448, -0.9320815882423065, -0.5695302533034624, 0.0}, {0.6597743828461967, -0.8854173581670437, -0.41875760532186945, 0.11069558383408552}}}},
  ["cumprod 1 zeros"] = {g = {{{0.675463180551151, -2.147219432998094, 0.6569865987187884, 0.46239740117755984}, {-0.5956799273883153, -0.5567487179852266, 0.27058653694969925, 0.0}, {0.0, -0.20069046834171453, 0.0, 0.0}}}, h = {{{0.5149312785632136, -0.6768132405861628, -0.2334300108509041, -0.3225123815590933}, {0.22748165155186983, 1.2365276846874713, 0.15279469645639815, -0.23594644500447196}, {-0.9879894259340551, 0.3433353600170014, -0.07473984570329475, -0.5210159876389461}}}},
}

describe("create_graph through prod and cumprod", function()
  local x = det({3, 4}) + 0.2
  local z1 = x:clone(); z1[2][3] = 0
  local z2 = z1:clone(); z2[2][1] = 0
  local z3 = z2:clone(); z3[1][4] = 0; z3[3][3] = 0

  it("prod: without zeros, with one zero, over a dim with several zeros in a lane", function()
    check(ref["prod"], function(a) return a:prod() end, {x})
    check(ref["prod one zero"], function(a) return a:prod() end, {z1})
    check(ref["prod dim 1"], function(a) return a:prod(1) end, {z2})
    check(ref["prod dim 2 keepdim"], function(a) return a:prod(2, true) end, {z3})
    check(ref["prod dim 2 no zero"], function(a) return a:prod(2) end, {x})
    for _, t in ipairs({x, z1, z2, z3}) do
      gradgradcheck(function(a) return a:prod() end, {t})
      gradgradcheck(function(a) return a:prod(1) end, {t})
      gradgradcheck(function(a) return a:prod(2, true) end, {t})
    end
    gradgradcheck(function(a) return a:prod() * a end, {pt.tensor(0.5, F64)})
    gradgradcheck(function(a) return a:prod(1) end, {det({1, 3})})
  end)

  it("prod of all elements with two zeros or more: exact, as the product written with mul", function()
    -- torch 1.13 gives a constant zero gradient there (no second derivative); the product of
    -- the elements one by one has the exact one
    local function by_mul(a)
      local flat, p = a:reshape(-1), nil
      for i = 1, flat:numel() do p = p and p * flat:narrow(1, i, 1) or flat:narrow(1, i, 1) end
      return p:reshape({})
    end
    for _, t in ipairs({z2, z3, x, z1}) do
      check_same(function(a) return a:prod() end, by_mul, {t})
    end
    -- the first derivative of a product with two zeros is 0 everywhere, the second is not
    local gs, hs = second(function(a) return a:prod() end, {z2})
    assert.are.equal(0, gs[1]:abs():sum():item())
    assert.is_true(hs[1]:abs():sum():item() > 0)
  end)

  it("cumprod along either dim, without and with zeros", function()
    check(ref["cumprod 1"], function(a) return a:cumprod(1) end, {x})
    check(ref["cumprod 2"], function(a) return a:cumprod(2) end, {x})
    check(ref["cumprod 2 zeros"], function(a) return a:cumprod(2) end, {z3})
    check(ref["cumprod 1 zeros"], function(a) return a:cumprod(1) end, {z3})
    for _, t in ipairs({x, z1, z3}) do
      gradgradcheck(function(a) return a:cumprod(1) end, {t})
      gradgradcheck(function(a) return a:cumprod(2) end, {t})
    end
    -- (times a: gradgradcheck's numerical Jacobian is off for a first derivative that is the
    -- grad_outputs tensor itself, which a one-element cumprod passes on)
    gradgradcheck(function(a) return a:cumprod(1) * a end, {pt.tensor({0.5}, F64)})
    gradgradcheck(function(a) return a:cumprod(1) * a end, {pt.tensor(0.5, F64)})
    -- third derivatives: create_graph through the formula's own graph
    local a = z3:clone():requires_grad_()
    local g = grad(a:cumprod(2):sum(), a, {create_graph = true})
    local h = grad((g * g):sum(), a, {create_graph = true})
    gradgradcheck(function(t) return t:cumprod(2):sum() end, {z3})
    assert.is_not_nil(h.grad_fn)
  end)
end)
