-- nn.init.trunc_normal_, orthogonal_, eye_, dirac_, sparse_: the properties PyTorch's draws have
-- (values differ: another generator), exact results for the deterministic ones, messages.
local pt = require "partrain"
local nn = pt.nn
local support = require "spec.support"

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

describe("nn.init's settings", function()
  local init = pt.nn.init
  local function same_draw(f, g)
    pt.manual_seed(3)
    local a = f(pt.empty(6, 5))
    pt.manual_seed(3)
    local b = g(pt.empty(6, 5))
    assert.is_true(pt.equal(a, b))
  end
  it("are taken positionally in PyTorch's order or as an options table", function()
    same_draw(function(t) return init.uniform_(t, -2, 3) end, function(t) return init.uniform_(t, {a = -2, b = 3}) end)
    same_draw(function(t) return init.normal_(t, 1, 0.5) end, function(t) return init.normal_(t, 1, {std = 0.5}) end)
    same_draw(function(t) return init.trunc_normal_(t, 0, 0.02, -0.03, 0.03) end,
      function(t) return init.trunc_normal_(t, {std = 0.02, a = -0.03, b = 0.03}) end)
    same_draw(function(t) return init.xavier_uniform_(t, 2) end, function(t) return init.xavier_uniform_(t, {gain = 2}) end)
    same_draw(function(t) return init.xavier_normal_(t, 2) end, function(t) return init.xavier_normal_(t, {gain = 2}) end)
    same_draw(function(t) return init.kaiming_uniform_(t, 0.1, "fan_out", "relu") end,
      function(t) return init.kaiming_uniform_(t, {a = 0.1, mode = "fan_out", nonlinearity = "relu"}) end)
    same_draw(function(t) return init.kaiming_normal_(t, 0, "fan_out") end,
      function(t) return init.kaiming_normal_(t, {mode = "fan_out"}) end)
    same_draw(function(t) return init.orthogonal_(t, 3) end, function(t) return init.orthogonal_(t, {gain = 3}) end)
    same_draw(function(t) return init.sparse_(t, 0.5, 0.1) end, function(t) return init.sparse_(t, {sparsity = 0.5, std = 0.1}) end)
    assert.are.same({2, 2}, init.constant_(pt.empty(2), {val = 2}):tolist())
    local w = init.trunc_normal_(pt.empty(2000), {std = 0.02})
    assert.is_true(w:abs():max():item() <= 2)
    assert.is_true(math.abs(w:std():item() - 0.02) < 0.002)
    local d = init.dirac_(pt.empty(4, 2, 3), {groups = 2})
    assert.are.same(init.dirac_(pt.empty(4, 2, 3), 2):tolist(), d:tolist())
  end)
  it("are checked by name", function()
    support.assert_error("uniform_: unknown option 'low' (options: a, b)", init.uniform_, pt.empty(2), {low = 0})
    support.assert_error("normal_: std given twice (as an argument and as an option)", init.normal_, pt.empty(2), 0, 1,
      {std = 2})
    support.assert_error("trunc_normal_: std must be a number, got string", init.trunc_normal_, pt.empty(2), {std = "1"})
    support.assert_error("xavier_uniform_: too many arguments (1 settings at most, got 2)", init.xavier_uniform_,
      pt.empty(2, 2), 1, 2)
    support.assert_error("kaiming_normal_: mode must be a string, got number", init.kaiming_normal_, pt.empty(2, 2),
      0, 1)
    support.assert_error("dirac_: groups must be an integer, got number", init.dirac_, pt.empty(2, 2, 3), 1.5)
    support.assert_error("constant_: missing argument 'val'", init.constant_, pt.empty(2))
  end)
end)
