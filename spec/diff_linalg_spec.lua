-- Differential checks of the matrix products and pt.linalg against PyTorch 1.13: each case here
-- was a difference found by running the same inputs through partrain and torch (values, batched
-- and non-contiguous inputs, options, gradients, error paths). Expected values are torch's
-- (computed with /usr/bin/python3 and torch 1.13).
local pt = require "partrain"
local support = require "spec.support"

local function same(expected, actual)
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do same(expected[i], actual[i]) end
  else
    assert.is_true(math.abs(expected - actual) <= 1e-6 * (1 + math.abs(expected)),
                   string.format("expected %.17g, got %.17g", expected, actual))
  end
end

local has = support.assert_error_contains

describe("the products take torch's out= as a trailing {out = t}", function()
  -- before: pt.matmul(a, b, {out = o}) returned a new tensor and left o alone, and any extra
  -- argument (pt.mm(a, b, 5)) was silently ignored
  local a = pt.tensor({{1, 2, 3}, {4, 5, 6}})
  local b = pt.tensor({{1, 0.5}, {-1, 2}, {0.25, 3}})
  local v = pt.tensor({1, -2, 0.5})

  it("writes the result into out and returns out", function()
    -- torch.matmul(a, b, out=o): [[-0.25, 13.5], [0.5, 30.0]], and the result is o
    local o = pt.zeros(2, 2)
    local r = pt.matmul(a, b, {out = o})
    assert.are.equal(o, r)
    same({{-0.25, 13.5}, {0.5, 30.0}}, o:tolist())
    local o2 = pt.zeros(2, 2)
    assert.are.equal(o2, a:mm(b, {out = o2}))
    same({{-0.25, 13.5}, {0.5, 30.0}}, o2:tolist())
    -- torch.bmm(a[None], b[None], out=...), torch.mv(a, v, out=...), torch.dot(v, v, out=...),
    -- torch.outer(v[:2], v, out=...)
    same({{{-0.25, 13.5}, {0.5, 30.0}}}, pt.bmm(a:unsqueeze(1), b:unsqueeze(1), {out = pt.zeros(1, 2, 2)}):tolist())
    same({-1.5, -3.0}, pt.mv(a, v, {out = pt.zeros(2)}):tolist())
    same(5.25, pt.dot(v, v, {out = pt.zeros({})}):item())
    same({{1, -2, 0.5}, {-2, 4, -1}}, v:narrow(1, 1, 2):outer(v, {out = pt.zeros(2, 3)}):tolist())
    -- torch.addmm(torch.ones(2), a, b, beta=0.5, alpha=2, out=...): [[0.0, 27.5], [1.5, 60.5]]
    local o3 = pt.zeros(2, 2)
    assert.are.equal(o3, pt.addmm(pt.ones(2), a, b, {beta = 0.5, alpha = 2, out = o3}))
    same({{0.0, 27.5}, {1.5, 60.5}}, o3:tolist())
  end)

  it("may alias an input, and writes into a non-contiguous out", function()
    local sq = pt.tensor({{1, 2}, {3, 4}})
    pt.mm(sq, sq, {out = sq}) -- torch.mm(sq, sq, out=sq): [[7, 10], [15, 22]]
    same({{7, 10}, {15, 22}}, sq:tolist())
    local o = pt.zeros(2, 2)
    pt.matmul(a, b, {out = o:t()})
    same({{-0.25, 0.5}, {13.5, 30.0}}, o:tolist())
  end)

  it("refuses a wrong shape or dtype, autograd, unknown options and extra arguments", function()
    has("mm: expected out of dtype float32 (the result's), got float64", pt.mm, a, b, {out = pt.zeros(2, 2, {dtype = "float64"})})
    has("matmul: out has shape {2,3}, but the result has shape {2,2}", pt.matmul, a, b, {out = pt.zeros(2, 3)})
    has("mm: out= does not support autograd, but an argument requires grad", pt.mm, a, b, {out = pt.zeros(2, 2, {requires_grad = true})})
    has("addmm: out= does not support autograd", pt.addmm, pt.zeros(2, 2), a:clone():requires_grad_(), b, {out = pt.zeros(2, 2)})
    has("mv: out must be a Tensor, got number", pt.mv, a, v, {out = 3})
    has("matmul: unknown option 'alpha' (options: out)", pt.matmul, a, b, {alpha = 2})
    has("mm: unexpected argument #3 (number)", pt.mm, a, b, 5)
    has("dot: unexpected argument #3 (Tensor)", pt.dot, v, v, v)
    has("outer: unexpected argument #4 (number)", pt.outer, v, v, {}, 1)
    has("addmm: out must be a Tensor, got string", pt.addmm, pt.zeros(2, 2), a, b, {out = "x"})
    has("addmm: unknown option 'gamma'", pt.addmm, pt.zeros(2, 2), a, b, {out = pt.zeros(2, 2), gamma = 1})
    -- under no_grad the out= form is allowed for tensors that require grad
    local w = a:clone():requires_grad_()
    local o = pt.zeros(2, 2)
    pt.no_grad(function() pt.mm(w, b, {out = o}) end)
    same({{-0.25, 13.5}, {0.5, 30.0}}, o:tolist())
  end)
end)

describe("a linalg setting given by position and as an option", function()
  it("is an error naming it, as t:norm's", function()
    local x = pt.tensor({3, 4})
    support.assert_error("linalg.vector_norm: ord given twice (as an argument and as an option)", pt.linalg.vector_norm,
      x, 2, {ord = 3})
    support.assert_error("norm: p given twice (as an argument and as an option)", function() return x:norm(2, {p = 1}) end)
    assert.are.equal(5, pt.linalg.vector_norm(x, {ord = 2}):item())
  end)
end)
