local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}

local function near(expected, actual, tol)
  tol = tol or 1e-5
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do near(expected[i], actual[i], tol) end
  else
    assert.is_true(math.abs(expected - actual) <= tol * (1 + math.abs(expected)),
                   string.format("expected %.10g, got %.10g", expected, actual))
  end
end

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  return err
end

-- plain Lua matrix product of nested lists
local function naive(a, b)
  local r = {}
  for i = 1, #a do
    r[i] = {}
    for j = 1, #b[1] do
      local s = 0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      r[i][j] = s
    end
  end
  return r
end

describe("matrix products", function()
  local a = pt.tensor({{1, 2}, {3, 4}})
  local b = pt.tensor({{5, 6}, {7, 8}})

  it("mm and matmul of 2-D matrices", function()
    assert.are.same({{19, 22}, {43, 50}}, a:mm(b):tolist())
    assert.are.same({{19, 22}, {43, 50}}, pt.matmul(a, b):tolist())
    assert.are.same({{19, 22}, {43, 50}}, a:matmul(b):tolist())
    assert.are.equal("float32", a:mm(b):dtype())
    assert.are.equal("float64", pt.tensor({{1, 2}}, F64):mm(pt.tensor({{3}, {4}}, F64)):dtype())
    assert.are.same({{11}}, pt.tensor({{1, 2}}, F64):mm(pt.tensor({{3}, {4}}, F64)):tolist())
  end)

  it("matches a plain loop for odd sizes, transposed and strided operands", function()
    pt.manual_seed(3)
    local x, y = pt.randn(17, 33, F64), pt.randn(33, 9, F64)
    near(naive(x:tolist(), y:tolist()), x:mm(y):tolist(), 1e-12)
    local xt = pt.randn(33, 17, F64):t() -- column-major: CblasTrans, no copy
    local yt = pt.randn(9, 33, F64):t()
    assert.is_false(xt:is_contiguous())
    near(naive(xt:tolist(), yt:tolist()), xt:mm(yt):tolist(), 1e-12)
    local xn = pt.randn(17, 40, F64):narrow(2, 4, 33) -- row stride 40
    near(naive(xn:tolist(), y:tolist()), xn:matmul(y):tolist(), 1e-12)
    local xs = pt.randn(17, 33, 2, F64):select(3, 2) -- no unit stride: copied
    near(naive(xs:tolist(), y:tolist()), xs:mm(y):tolist(), 1e-12)
    local row = pt.tensor({{1, 2, 3}}):expand(2, 3) -- stride 0 rows
    assert.are.same({{6, 6}, {6, 6}}, row:mm(pt.ones(3, 2)):tolist())
  end)

  it("1-D operands: dot, vector-matrix, matrix-vector", function()
    local v = pt.tensor({1, 2, 3})
    local d = v:matmul(pt.tensor({4, 5, 6}))
    assert.are.equal(0, d:dim())
    assert.are.equal(32, d:item())
    local m = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.are.same({9, 12, 15}, pt.tensor({1, 2}):matmul(m):tolist())
    assert.are.same({6, 15}, m:matmul(pt.ones(3)):tolist())
    assert.are.same({6, 15}, m:mv(pt.ones(3)):tolist())
    assert.are.equal(32, pt.dot(v, pt.tensor({4, 5, 6})):item())
    assert.are.same({{4, 5}, {8, 10}, {12, 15}}, v:outer(pt.tensor({4, 5})):tolist())
  end)

  it("batched matmul with broadcasting of batch dims", function()
    pt.manual_seed(5)
    local x, y = pt.randn(2, 1, 2, 3, F64), pt.randn(3, 3, 2, F64)
    local r = x:matmul(y)
    assert.are.same({2, 3, 2, 2}, r:size())
    local xl, yl, rl = x:tolist(), y:tolist(), r:tolist()
    for i = 1, 2 do
      for j = 1, 3 do near(naive(xl[i][1], yl[j]), rl[i][j], 1e-12) end
    end
    -- a stack times one matrix (folded into one gemm) and with 1-D operands
    local s, w = pt.randn(2, 3, 4, F64), pt.randn(4, 5, F64)
    local sw = s:matmul(w):tolist()
    for i = 1, 2 do near(naive(s:tolist()[i], w:tolist()), sw[i], 1e-12) end
    assert.are.same({2, 4}, pt.ones(3):matmul(pt.ones(2, 3, 4)):size())
    assert.are.same({{3, 3, 3, 3}, {3, 3, 3, 3}}, pt.ones(3):matmul(pt.ones(2, 3, 4)):tolist())
    assert.are.same({2, 3}, pt.ones(2, 3, 4):matmul(pt.ones(4)):size())
    -- bmm
    local p, q = pt.randn(2, 3, 4, F64), pt.randn(2, 4, 2, F64)
    local pq = p:bmm(q):tolist()
    for i = 1, 2 do near(naive(p:tolist()[i], q:tolist()[i]), pq[i], 1e-12) end
  end)

  it("addmm computes beta * input + alpha * a @ b with a broadcast input", function()
    assert.are.same({{20, 23}, {44, 51}}, pt.ones(2, 2):addmm(a, b):tolist())
    assert.are.same({{38.5, 44.5}, {86.5, 100.5}}, pt.addmm(pt.ones(2, 2), a, b, {beta = 0.5, alpha = 2}):tolist())
    assert.are.same({{20, 24}, {44, 52}}, pt.addmm(pt.tensor({1, 2}), a, b):tolist())
    local nan = pt.full({2, 2}, 0 / 0)
    assert.are.same({{19, 22}, {43, 50}}, nan:addmm(a, b, {beta = 0}):tolist())
    -- a misspelled option or an extra argument is an error, never ignored
    assert.has_error(function() pt.addmm(pt.ones(2, 2), a, b, {gamma = 1}) end,
      "addmm: unknown option 'gamma' (options: beta, alpha, out)")
    assert.has_error(function() pt.addmm(pt.ones(2, 2), a, b, {}, 5) end, "addmm: unexpected argument #5 (number)")
  end)

  it("handles empty operands", function()
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, pt.zeros(2, 0):mm(pt.zeros(0, 3)):tolist())
    -- and their gradients: empty, as PyTorch (a tensor with no elements is contiguous)
    local a, b = pt.ones(4, 2, 0, {requires_grad = true}), pt.ones(0, 3, {requires_grad = true})
    pt.matmul(a, b):sum():backward()
    assert.are.same({4, 2, 0}, a.grad:size())
    assert.are.same({0, 3}, b.grad:size())
    assert.is_true(pt.zeros(0, 3):t():is_contiguous())
    assert.are.same({0, 2}, pt.zeros(0, 3):mm(pt.zeros(3, 2)):size())
    assert.are.same({{1, 1}, {1, 1}}, pt.ones(2, 2):addmm(pt.zeros(2, 0), pt.zeros(0, 2)):tolist())
  end)

  it("shape errors name the function and both shapes", function()
    assert.matches("matmul: shapes {3,4} and {5,6} cannot be multiplied",
                   err_of(function() return pt.zeros(3, 4):matmul(pt.zeros(5, 6)) end), 1, true)
    assert.matches("matmul: shapes {2,3,4} and {3,4,5} cannot be multiplied",
                   err_of(function() return pt.zeros(2, 3, 4):matmul(pt.zeros(3, 4, 5)) end), 1, true)
    assert.matches("matmul: shapes {3} and {4} cannot be multiplied",
                   err_of(function() return pt.zeros(3):matmul(pt.zeros(4)) end), 1, true)
    assert.matches("matmul: both arguments need at least 1 dimension, got shapes {} and {3}",
                   err_of(function() return pt.tensor(2.0):matmul(pt.zeros(3)) end), 1, true)
    assert.matches("mm: expected 2-D tensors, got shapes {3} and {3,4}",
                   err_of(function() return pt.zeros(3):mm(pt.zeros(3, 4)) end), 1, true)
    assert.matches("mm: shapes {2,3} and {2,3} cannot be multiplied",
                   err_of(function() return pt.mm(pt.zeros(2, 3), pt.zeros(2, 3)) end), 1, true)
    assert.matches("bmm: expected 3-D tensors, got shapes {2,3} and {2,3,4}",
                   err_of(function() return pt.zeros(2, 3):bmm(pt.zeros(2, 3, 4)) end), 1, true)
    assert.matches("bmm: shapes {2,3,4} and {3,4,5} cannot be multiplied",
                   err_of(function() return pt.zeros(2, 3, 4):bmm(pt.zeros(3, 4, 5)) end), 1, true)
    assert.matches("mv: expected a 2-D and a 1-D tensor, got shapes {2,3} and {3,1}",
                   err_of(function() return pt.zeros(2, 3):mv(pt.zeros(3, 1)) end), 1, true)
    assert.matches("dot: expected 1-D tensors, got shapes {2,3} and {3}",
                   err_of(function() return pt.zeros(2, 3):dot(pt.zeros(3)) end), 1, true)
    assert.matches("dot: shapes {3} and {4} cannot be multiplied",
                   err_of(function() return pt.zeros(3):dot(pt.zeros(4)) end), 1, true)
    assert.matches("outer: expected 1-D tensors, got shapes {2,2} and {2}",
                   err_of(function() return pt.zeros(2, 2):outer(pt.zeros(2)) end), 1, true)
    assert.matches("addmm: input of shape {3} cannot be broadcast to {2,2}",
                   err_of(function() return pt.zeros(3):addmm(a, b) end), 1, true)
    assert.matches("addmm: expected 2-D matrices, got shapes {2} and {2,2}",
                   err_of(function() return pt.zeros(2, 2):addmm(pt.zeros(2), b) end), 1, true)
    assert.matches("mm: matrix sizes above 2147483647 are not supported by BLAS",
                   err_of(function() return pt.zeros(1, 1):expand(2147483648, 1):mm(pt.zeros(1, 1)) end), 1, true)
    assert.matches("addmm: shapes {2,2} and {3,2} cannot be multiplied",
                   err_of(function() return pt.zeros(2, 2):addmm(a, pt.zeros(3, 2)) end), 1, true)
  end)

  it("dtype and argument errors", function()
    local i = pt.tensor({{1, 2}, {3, 4}})
    i = i:long()
    assert.matches("matmul: expected float32 or float64 tensors, got int64 and int64 (convert with float())",
                   err_of(function() return i:matmul(i) end), 1, true)
    assert.matches("matmul: expected tensors of the same dtype, got float32 and float64",
                   err_of(function() return a:matmul(pt.ones(2, 2, F64)) end), 1, true)
    assert.matches("addmm: expected input of dtype float32, got float64",
                   err_of(function() return pt.ones(2, 2, F64):addmm(a, b) end), 1, true)
    assert.matches("addmm: option 'beta' must be a number, got string",
                   err_of(function() return pt.ones(2, 2):addmm(a, b, {beta = "x"}) end), 1, true)
    assert.matches("bad argument #2 to 'matmul' (Tensor expected, got number)",
                   err_of(function() return pt.matmul(a, 3) end), 1, true)
  end)

  it("records the node names", function()
    local x = pt.randn(2, 2, F64)
    x.requires_grad = true
    assert.are.equal("MmBackward", x:mm(x).grad_fn)
    assert.are.equal("MatmulBackward", x:matmul(x).grad_fn)
    assert.are.equal("AddmmBackward", x:addmm(x, x).grad_fn)
  end)
end)

describe("matrix product gradients (finite differences, float64)", function()
  pt.manual_seed(17)
  local function r(...) return pt.randn({...}, F64) end

  it("mm, matmul 2-D and 1-D forms", function()
    assert.is_true(gradcheck(function(x, y) return x:mm(y) end, {r(3, 4), r(4, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(4), r(4)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(3), r(3, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(2, 3), r(3)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(4), r(2, 4, 3)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(2, 3, 4), r(4)}))
  end)

  it("batched matmul with broadcast batch dims", function()
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(2, 1, 2, 3), r(3, 3, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(2, 3, 4), r(4, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:matmul(y) end, {r(3, 4), r(2, 4, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:bmm(y) end, {r(2, 3, 4), r(2, 4, 2)}))
  end)

  it("transposed and expanded (non-contiguous) inputs", function()
    assert.is_true(gradcheck(function(x, y) return x:t():mm(y:t()) end, {r(4, 3), r(2, 4)}))
    assert.is_true(gradcheck(function(x, y) return x:transpose(2, 3):matmul(y) end, {r(2, 4, 3), r(4, 2)}))
    assert.is_true(gradcheck(function(x, y) return x:expand(2, 3, 4):matmul(y:t()) end, {r(3, 4), r(2, 4)}))
  end)

  it("mv, dot, outer, addmm", function()
    assert.is_true(gradcheck(function(x, y) return x:mv(y) end, {r(3, 4), r(4)}))
    assert.is_true(gradcheck(function(x, y) return x:dot(y) end, {r(5), r(5)}))
    assert.is_true(gradcheck(function(x, y) return x:outer(y) end, {r(3), r(2)}))
    assert.is_true(gradcheck(function(c, x, y) return c:addmm(x, y, {beta = 0.5, alpha = -2}) end,
                             {r(3, 2), r(3, 4), r(4, 2)}))
    assert.is_true(gradcheck(function(c, x, y) return pt.addmm(c, x, y) end, {r(2), r(3, 4), r(4, 2)}))
    assert.is_true(gradcheck(function(c, x, y) return pt.addmm(c, x:t(), y) end, {r(1, 2), r(4, 3), r(4, 2)}))
  end)
end)

describe("pt.linalg's aliases: matmul, diagonal, vecdot (torch 1.13's values)", function()
  it("match torch.linalg's and carry gradients", function()
    local A = pt.arange(8, {dtype = "float64"}):reshape({2, 2, 2})
    assert.are.same({{0, 3}, {4, 7}}, pt.linalg.diagonal(A):tolist())
    assert.are.same({{1}, {5}}, pt.linalg.diagonal(A, {offset = 1}):tolist())
    assert.are.same({{1, 13}, {41, 85}}, pt.linalg.vecdot(A, A):tolist())
    assert.are.same({{16, 26}, {40, 58}}, pt.linalg.vecdot(A, A, {dim = 1}):tolist())
    assert.is_true(pt.linalg.matmul(A, A):equal(pt.matmul(A, A)))
    gradcheck(function(x, y) return pt.linalg.vecdot(x, y) end,
      {pt.randn(2, 3, {dtype = "float64"}), pt.randn(3, {dtype = "float64"})})
    gradcheck(function(x) return pt.linalg.diagonal(x, {offset = -1}) end, {pt.randn(2, 3, 3, {dtype = "float64"})})
    local ok, err = pcall(pt.linalg.vecdot, A, A, {d = 1})
    assert.is_false(ok)
    assert.matches("linalg.vecdot: unknown option 'd' (options: dim)", err, 1, true)
  end)
end)
