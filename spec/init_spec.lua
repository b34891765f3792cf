-- nn.init.trunc_normal_, orthogonal_, eye_, dirac_, sparse_: the properties PyTorch's draws have
-- (values differ: another generator), exact results for the deterministic ones, messages.
local pt = require "partrain"
local nn = pt.nn

local function assert_err(pattern, f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  if not tostring(e):find(pattern, 1, true) then
    error(string.format("expected error containing %q, got %q", pattern, tostring(e)), 2)
  end
end

describe("nn.init (more)", function()
  it("trunc_normal_ stays within [a, b] with the truncated normal's mean", function()
    pt.manual_seed(4)
    local w = pt.zeros(100000, {dtype = "float64"})
    assert.are.equal(w, nn.init.trunc_normal_(w, 0, 1, -1, 1.5))
    assert.is_true(w:min():item() >= -1 and w:max():item() <= 1.5)
    -- E = (phi(-1) - phi(1.5)) / (Phi(1.5) - Phi(-1)) = 0.14527
    assert.is_true(math.abs(w:mean():item() - 0.14527) < 0.01, tostring(w:mean():item()))
    local p = nn.Parameter(pt.zeros(50))
    nn.init.trunc_normal_(p, 5, 0.1, 4.9, 5.2) -- a parameter: filled without recording
    assert.is_true(p:min():item() >= 4.9 and p:max():item() <= 5.2 and p.requires_grad)
    assert_err("trunc_normal_: std must be positive, got 0", function() nn.init.trunc_normal_(w, 0, 0) end)
    assert_err("trunc_normal_: expected a < b, got a = 1, b = 1", function() nn.init.trunc_normal_(w, 0, 1, 1, 1) end)
  end)

  it("orthogonal_ gives orthonormal rows or columns times gain, for wide, tall and conv shapes", function()
    pt.manual_seed(5)
    for _, shape in ipairs({{4, 6}, {6, 4}, {5, 5}, {6, 2, 2}}) do
      local t = nn.init.orthogonal_(pt.zeros(table.unpack(shape)):double(), 2)
      local f = t:reshape(shape[1], -1)
      local g = f:size(1) <= f:size(2) and f:matmul(f:t()) or f:t():matmul(f)
      assert.is_true(pt.allclose(g, pt.eye(g:size(1), {dtype = "float64"}) * 4, {atol = 1e-12}),
        table.concat(shape, "x"))
    end
    assert_err("orthogonal_: only tensors with 2 or more dimensions are supported (shape {3})",
      function() nn.init.orthogonal_(pt.zeros(3)) end)
  end)

  it("eye_ and dirac_ as PyTorch's", function()
    assert.are.same({{1, 0, 0}, {0, 1, 0}}, nn.init.eye_(pt.ones(2, 3)):tolist())
    -- torch.nn.init.dirac_(torch.empty(4, 2, 3), groups=2)
    assert.are.same({{{0, 1, 0}, {0, 0, 0}}, {{0, 0, 0}, {0, 1, 0}}, {{0, 1, 0}, {0, 0, 0}}, {{0, 0, 0}, {0, 1, 0}}},
      nn.init.dirac_(pt.ones(4, 2, 3), 2):tolist())
    -- a 3x3 conv with a Dirac weight keeps the input
    local conv = nn.Conv2d(3, 3, 3, {padding = 1, bias = false})
    nn.init.dirac_(conv.weight)
    local x = pt.randn(1, 3, 5, 5)
    assert.is_true(pt.allclose(conv(x), x, {atol = 1e-6}))
    assert_err("eye_: only 2-D tensors are supported (shape {2,2,2})", function() nn.init.eye_(pt.zeros(2, 2, 2)) end)
    assert_err("dirac_: only 3, 4 and 5-D tensors are supported (shape {2,2})", function() nn.init.dirac_(pt.zeros(2, 2)) end)
    assert_err("dirac_: out channels (4) must be divisible by groups (3)", function() nn.init.dirac_(pt.zeros(4, 2, 3), 3) end)
  end)

  it("sparse_ zeroes ceil(sparsity * rows) entries of every column", function()
    pt.manual_seed(6)
    local t = nn.init.sparse_(pt.zeros(10, 4), 0.25, 1)
    assert.are.same({3, 3, 3, 3}, t:eq(0):sum(1):tolist())
    assert_err("sparse_: sparsity must be a number in [0, 1], got 2", function() nn.init.sparse_(t, 2) end)
    assert_err("sparse_: only 2-D tensors are supported (shape {4})", function() nn.init.sparse_(pt.zeros(4), 0.5) end)
  end)
end)
