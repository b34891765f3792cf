-- nn.RMSNorm / F.rms_norm (PyTorch 2.4's, fused C kernels in lib/nn_rmsnorm.c) and nn.RReLU /
-- F.rrelu (nn_extra.lua).
--
-- RMSNorm reference values: torch 1.13 (installed) has no RMSNorm (added in 2.4), so they were
-- computed once with /usr/bin/python3 and torch 1.13's plain ops in float64, by torch 2.4's
-- formula (x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight; eps=None is
-- torch.finfo(dtype).eps):
--[==[
import torch
d = torch.float64
X = torch.tensor([[[0.5, -1.2, 2.0, 0.3], [1.5, 0.25, -0.75, -2.5], [0.0, 0.1, -0.2, 3.0]],
                  [[-4.0, 2.5, 1.0, 0.5], [0.01, -0.02, 0.03, 0.04], [2.2, -1.1, 0.7, -0.6]]], dtype=d)
W4 = torch.tensor([1.5, -0.5, 0.8, 2.0], dtype=d)
W34 = torch.tensor([[1.0, 0.5, -1.0, 2.0], [0.3, 0.6, 0.9, 1.2], [-0.7, 1.1, 1.3, 0.2]], dtype=d)
G = torch.tensor([[[0.3, -0.7, 1.1, 0.2], [-0.5, 0.9, 0.4, -1.3], [0.8, 0.1, -0.6, 0.5]],
                  [[1.2, -0.4, 0.05, 0.6], [-0.9, 0.35, 0.75, -0.15], [0.45, -1.05, 0.25, 0.65]]], dtype=d)
def rms(x, dims, w, eps):
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y * w if w is not None else y
def fl(t): return "{" + ", ".join(repr(v) for v in t.detach().flatten().tolist()) + "}"
x = X.clone().requires_grad_(); w = W4.clone().requires_grad_()
y = rms(x, (-1,), w, torch.finfo(d).eps); y.backward(G)
print("Y4 =", fl(y)); print("GX4 =", fl(x.grad)); print("GW4 =", fl(w.grad))
x = X.clone().requires_grad_(); w = W34.clone().requires_grad_()
y = rms(x, (-2, -1), w, 1e-3); y.backward(G)
print("Y34 =", fl(y)); print("GX34 =", fl(x.grad)); print("GW34 =", fl(w.grad))
print("YN =", fl(rms(X, (-1,), None, 1e-5)))
]==]
-- RReLU's eval values: torch 1.13's F.rrelu on the same float64 input (noted below).
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}

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

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then
      for _, e in ipairs(v) do walk(e) end
    else
      out[#out + 1] = v
    end
  end
  walk(pt.is_tensor(t) and t:tolist() or t)
  return out
end

-- every element within tol * max(1, |expected|)
local function near(got, expected, tol, what)
  local g = flat(got)
  assert.are.equal(#expected, #g, what)
  for i, e in ipairs(expected) do
    if not (math.abs(g[i] - e) <= tol * math.max(1, math.abs(e))) then
      error(string.format("%s: element %d: got %.17g, expected %.17g", what or "value", i, g[i], e), 2)
    end
  end
end

local X = {{{0.5, -1.2, 2.0, 0.3}, {1.5, 0.25, -0.75, -2.5}, {0.0, 0.1, -0.2, 3.0}},
  {{-4.0, 2.5, 1.0, 0.5}, {0.01, -0.02, 0.03, 0.04}, {2.2, -1.1, 0.7, -0.6}}}
local W4 = {1.5, -0.5, 0.8, 2.0}
local W34 = {{1.0, 0.5, -1.0, 2.0}, {0.3, 0.6, 0.9, 1.2}, {-0.7, 1.1, 1.3, 0.2}}
local G = {{{0.3, -0.7, 1.1, 0.2}, {-0.5, 0.9, 0.4, -1.3}, {0.8, 0.1, -0.6, 0.5}},
  {{1.2, -0.4, 0.05, 0.6}, {-0.9, 0.35, 0.75, -0.15}, {0.45, -1.05, 0.25, 0.65}}}

-- the script's output (float64)
local R = {
  Y4 = {0.6239177481057772, 0.4991341984846217, 1.3310245292923248, 0.4991341984846217, 1.4896905994842622,
    -0.0827605888602368, -0.3972508265291366, -3.310423554409472, 0.0, -0.03324112476572668, -0.10637159925032538,
    3.988934971887202, -2.475410991021104, -0.5157106231293966, 0.3300547988028139, 0.41256849850351734,
    0.5477225575050851, 0.36514837167005676, 0.8763560920081361, 2.921186973360454, 2.512577059168707,
    0.4187628431947845, 0.4263767130710533, -0.913664385152257},
  GX4 = {0.25309327798016357, 0.5821793059026225, 0.24703400757756783, 0.2600017097930996, -1.0431915540498014,
    -0.3890427900449159, 0.4851811179263965, -0.8103735468122912, 0.7977869943774405, -0.05594793507530926,
    -0.27370117713181097, -0.016381813972943693, 0.31706328012653284, 0.34848871043807744, 0.12289274423509028,
    0.5482772003516956, -48.808165679897726, -7.363825495345855, 23.369495786883203, -9.006993167861975,
    0.44899763081938815, 0.4321974614184907, 0.1316151202162264, 1.0075136073227877},
  GW4 = {-1.9269691931095874, 1.0656347748165322, 2.68676699796763, 2.806663074560957},
  Y34 = {0.3537967095007013, -0.42455605140084157, -1.4151868380028052, 0.42455605140084157, 0.31841703855063114,
    0.10613901285021039, -0.4776255578259468, -2.122780257004208, -0.0, 0.0778352760901543, -0.1839742889403647,
    0.42455605140084157, -2.5125036650928587, 0.7851573953415183, -0.6281259162732147, 0.6281259162732147,
    0.0018843777488196441, -0.0075375109952785764, 0.016959399739376796, 0.030150043981114306,
    -0.9673139110607507, -0.7600323586905899, 0.5715945838086253, -0.07537510995278576},
  GX34 = {0.1754177434947525, -0.15919301935688704, -0.9257938897242161, 0.2609211982771601, -0.21671985946721523,
    0.3636703051579233, 0.3100240541490074, -0.9195443226138467, -0.3962523146407854, 0.07046321964902064,
    -0.5371787539388267, -0.15040235133386937, 0.4219296184452257, 0.08176324242200197, 0.05154907445699723,
    0.7952287846631866, -0.16876444369106142, 0.13024733501196192, 0.42647365459253966, -0.10974445011835232,
    -0.0153578490306151, -0.8167363405932869, 0.26220968197825534, 0.03188314695312313},
  GW34 = {-2.90886538526122, -0.03374744431203647, 1.5881118176167466, 0.23089338002204857, -0.5363481974975108,
    0.1548116378614031, -0.19814519258427346, 2.2959098562569196, 0.6218446571104826, 0.7325613674855771,
    0.19483324562798088, 0.8164210211555502},
  YN = {0.41594372615469394, -0.9982649427712654, 1.6637749046187758, 0.24956623569281636, 0.99312488961314,
    0.16552081493552334, -0.49656244480657, -1.6552081493552335, 0.0, 0.06648210260984198, -0.13296420521968397,
    1.9944630782952597, -1.650272589527357, 1.0314203684545982, 0.4125681473818392, 0.2062840736909196,
    0.36273812505500586, -0.7254762501100117, 1.0882143751650175, 1.4509525002200234, 1.6750465175788771,
    -0.8375232587894386, 0.5329693465023699, -0.4568308684306028},
}

-- deterministic data: a smooth pattern (no RNG), as norm_speed_spec's
local function data(shape, a, b, off, opts)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 1, n do v[i] = math.sin(i * a + b) * (1 + (i % 7) * 0.25) + off end
  return pt.tensor(v, opts or F64):reshape(shape)
end

-- the composition of plain float64 ops (over the last dim)
local function rms_ref(x, w, eps)
  local y = x / ((x * x):mean(-1, true) + eps):sqrt()
  if w then y = y * w end
  return y
end

describe("nn.RMSNorm / F.rms_norm against PyTorch 2.4's formula (float64)", function()
  it("normalises the last dim with the dtype's machine epsilon by default, with gradients", function()
    local x = pt.tensor(X, F64):requires_grad_()
    local w = pt.tensor(W4, F64):requires_grad_()
    local y = F.rms_norm(x, {4}, w)
    y:backward(pt.tensor(G, F64))
    near(y, R.Y4, 1e-14, "y")
    near(x.grad, R.GX4, 1e-12, "x.grad")
    near(w.grad, R.GW4, 1e-13, "w.grad")
  end)

  it("normalises two trailing dims (a module with eps, its weight set)", function()
    local m = nn.RMSNorm({3, 4}, {eps = 1e-3, dtype = "float64"})
    pt.no_grad(function() m.weight:copy_(pt.tensor(W34, F64)) end)
    local x = pt.tensor(X, F64):requires_grad_()
    local y = m(x)
    y:backward(pt.tensor(G, F64))
    near(y, R.Y34, 1e-14, "y")
    near(x.grad, R.GX34, 1e-13, "x.grad")
    near(m.weight.grad, R.GW34, 1e-13, "weight.grad")
  end)

  it("has no weight with elementwise_affine = false", function()
    local m = nn.RMSNorm(4, 1e-5, false)
    assert.is_nil(m.weight)
    assert.are.equal(0, #m:parameters())
    near(m(pt.tensor(X, F64)), R.YN, 1e-14, "y")
    near(F.rms_norm(pt.tensor(X, F64), 4, nil, 1e-5), R.YN, 1e-14, "F.rms_norm")
    assert.are.equal(F.rms_norm, nn.rms_norm)
  end)

  it("takes eps = torch.finfo(dtype).eps when none is given, per input dtype", function()
    -- mean(x^2) = 2.5e-9: eps matters, and differs between float32 and float64
    local row = {1e-4, 0, 0, 0}
    local m = nn.RMSNorm(4)
    assert.is_nil(m.eps)
    local y32 = m(pt.tensor({row}, {dtype = "float32"}))
    near(y32, {1e-4 / math.sqrt(2.5e-9 + 1.1920928955078125e-07), 0, 0, 0}, 1e-6, "float32")
    local y64 = F.rms_norm(pt.tensor({row}, F64), {4})
    near(y64, {1e-4 / math.sqrt(2.5e-9 + 2.220446049250313e-16), 0, 0, 0}, 1e-14, "float64")
  end)
end)

describe("RMSNorm kernels", function()
  it("pass finite-difference gradient checks for input and weight", function()
    gradcheck(function(x, w) return F.rms_norm(x, {4}, w) end, {pt.tensor(X, F64), pt.tensor(W4, F64)})
    gradcheck(function(x, w) return F.rms_norm(x, {3, 4}, w, 1e-3) end, {pt.tensor(X, F64), pt.tensor(W34, F64)})
    gradcheck(function(x) return F.rms_norm(x, 4, nil, 1e-5) end, {pt.tensor(X, F64)})
    -- 19 wide: a vector part and a tail; 9 rows: two groups of 4 and one row
    gradcheck(function(x, w) return F.rms_norm(x, 19, w, 1e-4) end, {data({9, 19}, 0.3, 1, 0.1), data({19}, 0.7, 2, 1)})
  end)

  it("handle groups of 4 rows, row tails and backward blocks as the composition of plain ops", function()
    for _, case in ipairs({{37, 77, "float32"}, {21, 4100, "float32"}, {18, 19, "float64"}, {130, 8, "float64"},
                           {3, 5, "float64"}}) do
      local M, D, dt = case[1], case[2], case[3]
      local opts = {dtype = dt}
      local x = data({M, D}, 0.2, 1, 0.3, opts):requires_grad_()
      local w = data({D}, 1, 0.5, 1, opts):requires_grad_()
      local g = data({M, D}, 3, 1, 0, opts)
      local y = F.rms_norm(x, {D}, w, 1e-5)
      y:backward(g)
      local x64, w64 = x:detach():to("float64"):requires_grad_(), w:detach():to("float64"):requires_grad_()
      local ry = rms_ref(x64, w64, 1e-5)
      ry:backward(g:to("float64"))
      local tol = dt == "float64" and 1e-12 or 2e-6
      local what = string.format("%dx%d %s", M, D, dt)
      near(y, flat(ry), tol, what .. " y")
      near(x.grad, flat(x64.grad), tol, what .. " x.grad")
      near(w.grad, flat(w64.grad), tol * 10, what .. " w.grad")
    end
  end)

  it("give the same numbers at 1 and 2 threads (rows split over the intra-op threads)", function()
    local function run()
      local x = data({300, 200}, 0.11, 0.3, 0.2, {dtype = "float32"}):requires_grad_()
      local w = data({200}, 0.9, 0.1, 1, {dtype = "float32"}):requires_grad_()
      local y = F.rms_norm(x, {200}, w)
      y:backward(data({300, 200}, 0.7, 0.4, 0, {dtype = "float32"}))
      return y:detach(), x.grad, w.grad
    end
    local before = pt.get_num_threads()
    pt.set_num_threads(1)
    local y1, gx1, gw1 = run()
    pt.set_num_threads(2)
    local y2, gx2, gw2 = run()
    pt.set_num_threads(before)
    assert.is_true(pt.equal(y1, y2))
    assert.is_true(pt.equal(gx1, gx2))
    assert.is_true(pt.equal(gw1, gw2))
  end)

  it("read non-contiguous inputs, and add into an existing gradient", function()
    local base = pt.tensor(X, F64)
    local xt = base:transpose(2, 3) -- {2,4,3}, not contiguous
    near(F.rms_norm(xt, 3, nil, 1e-5), flat(rms_ref(xt:contiguous(), nil, 1e-5)), 1e-14, "transposed")
    local x = pt.tensor(X, F64):requires_grad_()
    local w = pt.tensor(W4, F64)
    F.rms_norm(x, 4, w):backward(pt.tensor(G, F64))
    F.rms_norm(x, 4, w):backward(pt.tensor(G, F64))
    local twice = {}
    for i, v in ipairs(R.GX4) do twice[i] = 2 * v end
    near(x.grad, twice, 1e-12, "accumulated x.grad")
  end)

  it("float32 agrees with float64", function()
    local x = data({6, 33}, 0.37, 0.2, -0.1)
    local w = data({33}, 0.5, 0.9, 0.5)
    local y32 = F.rms_norm(x:to("float32"), 33, w:to("float32"))
    near(y32, flat(F.rms_norm(x, 33, w)), 2e-6, "float32")
  end)

  it("handle empty inputs", function()
    local m = nn.RMSNorm(4, {dtype = "float64"})
    local x = pt.zeros({0, 4}, F64):requires_grad_()
    local y = m(x)
    assert.are.same({0, 4}, y:size())
    y:sum():backward()
    assert.are.same({0, 0, 0, 0}, m.weight.grad:tolist())
  end)
end)

describe("nn.RMSNorm module", function()
  it("prints, saves its weight and takes options", function()
    assert.are.equal("RMSNorm({4}, eps=nil, elementwise_affine=true)", tostring(nn.RMSNorm(4)))
    assert.are.equal("RMSNorm({2,3}, eps=1e-05, elementwise_affine=false)",
      tostring(nn.RMSNorm({2, 3}, {eps = 1e-5, elementwise_affine = false})))
    local m = nn.RMSNorm({2, 3}, {dtype = "float64"})
    assert.are.same({2, 3}, m.weight:size())
    assert.are.equal("float64", m.weight:dtype())
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, m.weight:tolist())
    local sd = m:state_dict()
    assert.is_true(pt.is_tensor(sd.weight))
    assert.is_nil(nn.RMSNorm(3, {elementwise_affine = false}):state_dict().weight)
  end)

  it("reports errors with the function's name", function()
    assert_err("RMSNorm:forward: input shape {2,5} does not end with normalized shape {4}", nn.RMSNorm(4), pt.zeros(2, 5))
    assert_err("RMSNorm:forward: input shape {4} does not end with normalized shape {2,4}", nn.RMSNorm({2, 4}), pt.zeros(4))
    assert_err("rms_norm: input shape {3,2} does not end with normalized shape {3}", F.rms_norm, pt.zeros(3, 2), 3)
    assert_err("rms_norm: weight shape {3}, expected {4}", F.rms_norm, pt.zeros(2, 4), 4, pt.ones(3))
    assert_err("rms_norm: weight dtype float32 does not match input dtype float64", F.rms_norm,
      pt.zeros({2, 4}, F64), 4, pt.ones(4))
    assert_err("RMSNorm:forward: input must be float32 or float64, got int64", nn.RMSNorm(4),
      pt.zeros({2, 4}, {dtype = "int64"}))
    assert_err("RMSNorm:forward: input must be a tensor, got table", nn.RMSNorm(4), {1, 2, 3, 4})
    assert_err("RMSNorm:forward: expected 1 input, got 2", nn.RMSNorm(4), pt.zeros(2, 4), pt.zeros(2, 4))
    assert_err("rms_norm: weight must be a tensor, got number", F.rms_norm, pt.zeros(2, 4), 4, 1)
    assert_err("rms_norm: eps must be a number, got string", F.rms_norm, pt.zeros(2, 4), 4, nil, "x")
    assert_err("rms_norm: too many arguments (4 at most)", F.rms_norm, pt.zeros(2, 4), 4, nil, 1e-5, true)
    assert_err("rms_norm: normalized_shape must be an integer or a non-empty list of integers, got table",
      F.rms_norm, pt.zeros(2, 4), {})
    assert_err("RMSNorm: normalized_shape must be an integer or a non-empty list of integers, got string",
      nn.RMSNorm, "4")
    assert_err("RMSNorm: normalized_shape[2] must be a non-negative integer, got 2.5", nn.RMSNorm, {3, 2.5})
    assert_err("RMSNorm: missing argument 'normalized_shape'", nn.RMSNorm)
    assert_err("RMSNorm: eps must be a number, got string", nn.RMSNorm, 4, "1e-5")
    assert_err("RMSNorm: elementwise_affine must be a boolean, got number", nn.RMSNorm, 4, {elementwise_affine = 1})
    assert_err("RMSNorm: unknown option 'bias'", nn.RMSNorm, 4, {bias = false})
    assert_err("RMSNorm: dtype must be \"float32\" or \"float64\", got 'int64'", nn.RMSNorm, 4, {dtype = "int64"})
  end)

  it("has second derivatives (create_graph), as LayerNorm: the same as the composed ops'", function()
    -- the formula (lib/autograd.c gf_norm_rows) against RMS norm and layer norm written with
    -- mean/sqrt, whose second derivatives are the elementwise and reduction ops' own
    pt.manual_seed(3)
    local c = pt.randn(3, 5, F64)
    local function composed(x, w, b, centred)
      local xm = centred and x - x:mean(2, {keepdim = true}) or x
      local y = xm / ((xm * xm):mean(2, {keepdim = true}) + 1e-5):sqrt() * w
      return b and y + b or y
    end
    local function second(norm, centred, use_composed)
      pt.manual_seed(5)
      local x = pt.randn(3, 5, {dtype = "float64", requires_grad = true})
      local w = pt.randn(5, {dtype = "float64", requires_grad = true})
      local b = centred and pt.randn(5, {dtype = "float64", requires_grad = true}) or nil
      local y = use_composed and composed(x, w, b, centred) or norm(x, w, b)
      local ins = centred and {x, w, b} or {x, w}
      local gs = pt.autograd.grad((y * y * c):sum(), ins, {create_graph = true})
      local s = (gs[1] * gs[1]):sum() + (gs[2] * 1.7):sin():sum() + (centred and (gs[3] * gs[3]):sum() or 0)
      return pt.autograd.grad(s, ins)
    end
    for _, case in ipairs({{function(x, w) return F.rms_norm(x, {5}, w, 1e-5) end, false},
                           {function(x, w, b) return nn.layer_norm(x, {5}, w, b, 1e-5) end, true}}) do
      local fused, ref = second(case[1], case[2], false), second(case[1], case[2], true)
      for k = 1, #ref do assert.is_true((fused[k] - ref[k]):abs():max():item() < 1e-12) end
    end
  end)
end)

describe("nn.RReLU / F.rrelu", function()
  local XR = {-2.5, -1.0, -0.3, 0.2, 0.9, 3.5}

  it("is leaky_relu with the mean slope in eval mode (torch 1.13's values)", function()
    -- torch 1.13: F.rrelu(x) and F.rrelu(x, 0.2, 0.7) (training=False) on XR, float64
    near(F.rrelu(pt.tensor(XR, F64)), {-0.5729166666666666, -0.22916666666666666, -0.06874999999999999, 0.2, 0.9, 3.5},
      1e-15, "default bounds")
    near(F.rrelu(pt.tensor(XR, F64), 0.2, 0.7), {-1.125, -0.44999999999999996, -0.13499999999999998, 0.2, 0.9, 3.5},
      1e-15, "0.2, 0.7")
    local m = nn.RReLU(0.2, 0.7)
    m:eval()
    near(m(pt.tensor(XR, F64)), {-1.125, -0.44999999999999996, -0.13499999999999998, 0.2, 0.9, 3.5}, 1e-15, "module")
  end)

  it("passes a finite-difference gradient check in eval mode", function()
    local m = nn.RReLU(0.1, 0.3)
    m:eval()
    gradcheck(function(x) return m(x) end, {pt.tensor(XR, F64)})
    gradcheck(function(x) return F.rrelu(x, {lower = 0.05, upper = 0.5}) end, {pt.tensor(XR, F64)})
  end)

  it("draws a slope in [lower, upper] per element in training, and its gradient is that slope", function()
    local lower, upper = 0.1, 0.4
    local m = nn.RReLU(lower, upper)
    assert.is_true(m.training)
    local n = 4000
    local v = {}
    for i = 1, n do v[i] = (i % 2 == 0) and -(i / n + 0.01) or i / n end
    v[1] = 0 -- x = 0 takes a random slope too (PyTorch's x <= 0), its output stays 0
    local x = pt.tensor(v, F64):requires_grad_()
    pt.manual_seed(7)
    local y = m(x)
    y:sum():backward()
    local yl, gl = y:tolist(), x.grad:tolist()
    local sum, cnt, distinct = 0, 0, {}
    for i = 1, n do
      if v[i] > 0 then
        assert.are.equal(v[i], yl[i])
        assert.are.equal(1, gl[i])
      else
        local slope = gl[i]
        assert.is_true(slope >= lower and slope <= upper, "slope " .. slope)
        if v[i] < 0 then
          -- the gradient is the slope the output used
          assert.is_true(math.abs(yl[i] / v[i] - slope) <= 1e-15 * slope)
          sum, cnt = sum + slope, cnt + 1
          distinct[slope] = true
        else
          assert.are.equal(0, yl[i])
        end
      end
    end
    local k = 0
    for _ in pairs(distinct) do k = k + 1 end
    assert.is_true(k > cnt / 2) -- one draw per element, not one per call
    -- U(0.1, 0.4) has mean 0.25; 2000 draws: standard error 0.002
    assert.is_true(math.abs(sum / cnt - 0.25) < 0.01, "mean slope " .. sum / cnt)
  end)

  it("draws from pt's generator: pt.manual_seed repeats the slopes, the next call draws new ones", function()
    local x = pt.tensor(XR, F64)
    pt.manual_seed(11)
    local a = F.rrelu(x, {training = true})
    local b = F.rrelu(x, {training = true})
    pt.manual_seed(11)
    local a2 = F.rrelu(x, 1 / 8, 1 / 3, true)
    assert.are.same(a:tolist(), a2:tolist())
    assert.are_not.same(a:tolist(), b:tolist())
    for i, e in ipairs(a:tolist()) do
      if XR[i] > 0 then assert.are.equal(XR[i], e) end
    end
  end)

  it("writes into its input with inplace = true", function()
    local x = pt.tensor(XR, F64)
    local m = nn.RReLU(0.2, 0.7, true)
    m:eval()
    local y = m(x)
    assert.are.equal(x, y)
    near(x, {-1.125, -0.44999999999999996, -0.13499999999999998, 0.2, 0.9, 3.5}, 1e-15, "in place")
    local leaf = pt.tensor(XR, F64):requires_grad_()
    assert_err("RReLU:forward: inplace=true on a leaf tensor that requires grad", m, leaf)
  end)

  it("prints as PyTorch and reports errors", function()
    assert.are.equal("RReLU(lower=0.125, upper=0.3333333333333333)", tostring(nn.RReLU()))
    assert.are.equal("RReLU(lower=0.125, upper=0.5, inplace=true)",
      tostring(nn.RReLU({lower = 0.125, upper = 0.5, inplace = true})))
    assert_err("RReLU: lower (0.5) must be less than or equal to upper (0.1)", nn.RReLU, 0.5, 0.1)
    assert_err("rrelu: lower (0.5) must be less than or equal to upper (0.1)", F.rrelu, pt.zeros(2), 0.5, 0.1)
    local m = nn.RReLU()
    m.upper = 0.01
    assert_err("RReLU:forward: lower (0.125) must be less than or equal to upper (0.01)", m, pt.zeros(2))
    assert_err("rrelu: input must be float32 or float64, got int64", F.rrelu, pt.zeros({2}, {dtype = "int64"}))
    assert_err("rrelu: training must be a boolean, got number", F.rrelu, pt.zeros(2), {training = 1})
    assert_err("RReLU: unknown option 'training'", nn.RReLU, {training = true})
  end)
end)
