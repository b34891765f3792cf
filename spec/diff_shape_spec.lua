-- Shape and indexing ops checked against PyTorch 1.13 (differential testing). Expected values are
-- torch 1.13's on the same inputs (0-based dims and positions there, 1-based here).
local pt = require "partrain"

local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return (tostring(err):gsub("^[^\n]-:%d+: ", ""))
end

local function range(...)
  local n = 1
  for _, s in ipairs({...}) do n = n * s end
  return pt.arange(n, {dtype = "float32"}):view(...)
end

local function long(v) return pt.tensor(v, {dtype = "int64"}) end

describe("cat with 1-D empty tensors (torch's legacy rule)", function()
  it("leaves a tensor of shape {0} out of the shape checks, next to tensors of any shape", function()
    -- values from torch 1.13: torch.cat([torch.zeros(0), x]) and torch.cat([x, torch.zeros(0)], 1)
    local x = range(2, 3)
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, pt.cat({pt.zeros(0), x}):tolist())
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, pt.cat({x, pt.zeros(0)}, 2):tolist())
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, pt.cat({x, pt.zeros(0)}, -1):tolist())
    assert.are.same({{1, 2}, {3, 4}, {5, 6}},
                    pt.cat({pt.tensor({{1, 2}, {3, 4}}), pt.zeros(0), pt.tensor({{5, 6}})}):tolist())
    -- the usual accumulation loop
    local acc = pt.zeros(0)
    for i = 1, 3 do acc = pt.cat({acc, pt.full({1, 2}, i)}) end
    assert.are.same({{1, 1}, {2, 2}, {3, 3}}, acc:tolist())
    -- only empty ones: a {0} result
    assert.are.same({0}, pt.cat({pt.zeros(0), pt.zeros(0)}):size())
  end)

  it("still promotes with the left-out tensor's dtype", function()
    -- torch 1.13: float64 ([[1., 2.]]), int64 ([[1, 0]]), float32
    local c = pt.cat({pt.zeros(0, {dtype = "float64"}), long({{1, 2}})})
    assert.are.equal("float64", c:dtype())
    assert.are.same({{1, 2}}, c:tolist())
    local b = pt.cat({pt.zeros(0, {dtype = "int64"}), pt.tensor({{true, false}})})
    assert.are.equal("int64", b:dtype())
    assert.are.same({{1, 0}}, b:tolist())
    assert.are.equal("float32", pt.cat({pt.zeros(0), pt.zeros(0, {dtype = "int64"})}):dtype())
  end)

  it("passes gradients to the other tensors", function()
    local x = pt.tensor({{1, 2}, {3, 4}}, {requires_grad = true})
    local y = pt.cat({pt.zeros(0), x, x}, 2)
    y:backward(pt.arange(8, {dtype = "float32"}):view(2, 4))
    assert.are.same({{2, 4}, {10, 12}}, x.grad:tolist()) -- torch 1.13
  end)

  it("still refuses 0-d tensors and other mismatches", function()
    assert.are.equal("cat: zero-dimensional tensor (at position 2) cannot be concatenated",
                     errmsg(function() return pt.cat({pt.zeros(0), pt.tensor(1)}) end))
    assert.are.equal("cat: tensors must have the same number of dimensions, got {2,3} and {3}",
                     errmsg(function() return pt.cat({pt.zeros(0), pt.zeros(2, 3), pt.zeros(3)}) end))
    assert.are.equal("cat: dimension 3 out of range (tensor has 2 dimensions)",
                     errmsg(function() return pt.cat({pt.zeros(0), pt.zeros(2, 3)}, 3) end))
  end)
end)

describe("index_fill_ errors", function()
  it("name index_fill_, not the index_copy_ it runs on", function()
    -- torch 1.13 writes through the expanded view; partrain refuses every such write, naming the op
    assert.are.equal("index_fill_: more than one element of the written-to tensor refers to a single "
                     .. "memory location (an expanded tensor): clone() it first",
                     errmsg(function() return pt.zeros(3):expand(2, 3):index_fill_(1, long({1}), 1) end))
    assert.are.equal("index_fill_: index 4 out of range for dimension 1 of size 3",
                     errmsg(function() return pt.zeros(3):index_fill_(1, long({4}), 1) end))
    -- values from torch 1.13: torch.zeros(2, 3).index_fill_(1, [2, 0], 5)
    assert.are.same({{5, 0, 5}, {5, 0, 5}}, pt.zeros(2, 3):index_fill_(2, long({3, 1}), 5):tolist())
  end)
end)

describe("second derivatives through scatter (create_graph)", function()
  local function f64(v, grad) return pt.tensor(v, {dtype = "float64", requires_grad = grad}) end

  it("scatter with a src passes them to t and src (torch 1.13 values)", function()
    local x = f64({{1, 2, 3}, {4, 5, 6}}, true)
    local s = f64({{0.5, -1}, {2, 3}}, true)
    local y = x:scatter(2, long({{3, 1}, {2, 2}}), s)
    local g = pt.autograd.grad((y ^ 3):sum(), {x, s}, {create_graph = true})
    assert.are.same({{0, 12, 0}, {48, 0, 108}}, g[1]:tolist())
    assert.are.same({{0.75, 3}, {27, 27}}, g[2]:tolist())
    local h = pt.autograd.grad((g[1] * g[1]):sum() + (g[2] * g[2]):sum(), {x, s})
    assert.are.same({{0, 288, 0}, {2304, 0, 7776}}, h[1]:tolist())
    assert.are.same({{4.5, -36}, {1944, 1944}}, h[2]:tolist())
  end)

  it("scatter with a value, and index_copy (a scatter underneath) (torch 1.13 values)", function()
    local x = f64({{1, 2, 3}, {4, 5, 6}}, true)
    local g = pt.autograd.grad((x:scatter(2, long({{3}, {1}}), 0.5) ^ 3):sum(), x, {create_graph = true})
    assert.are.same({{3, 12, 0}, {0, 75, 108}}, g:tolist())
    assert.are.same({{36, 288, 0}, {0, 4500, 7776}}, pt.autograd.grad((g * g):sum(), x):tolist())
    local s = f64({{1, -2}, {3, 4}}, true)
    local y = pt.zeros(3, 2, {dtype = "float64"}):index_copy(1, long({3, 1}), s)
    local gs = pt.autograd.grad((y ^ 3):sum(), s, {create_graph = true})
    assert.are.same({{3, 12}, {27, 48}}, gs:tolist())
    assert.are.same({{36, -288}, {972, 2304}}, pt.autograd.grad((gs * gs):sum(), s):tolist())
  end)

  it("scatter_add with a src larger than the index (torch 1.13 refuses its own backward here)", function()
    -- y = 1 + s at the scattered places: g = 3 y^2 there, 0 elsewhere; h = 2 g * 6 y
    local s = f64({{1, -2, 3}, {3, 4, 5}}, true)
    local y = pt.ones(2, 3, {dtype = "float64"}):scatter_add(2, long({{1, 2}}), s)
    local g = pt.autograd.grad((y ^ 3):sum(), s, {create_graph = true})
    assert.are.same({{12, 3, 0}, {0, 0, 0}}, g:tolist())
    assert.are.same({{288, -36, 0}, {0, 0, 0}}, pt.autograd.grad((g * g):sum(), s):tolist())
  end)
end)

describe("geometries too large for an int64", function()
  -- torch 1.13 refuses both ("numel: integer multiplication overflow", "Storage size calculation
  -- overflowed"); the wrapped products used to pass: expand gave numel() 0, as_strided a view
  -- reading outside its storage
  it("are refused by expand and as_strided", function()
    assert.are.equal("expand: shape {4294967296,4294967296} has too many elements (more than 2^63 - 1)",
                     errmsg(function() return pt.zeros(1):expand(1 << 32, 1 << 32) end))
    assert.are.equal("as_strided: sizes {4611686018427387905} and strides {4} reach beyond 2^63 - 1 elements",
                     errmsg(function() return pt.zeros(4):as_strided({(1 << 62) + 1}, {4}) end))
    assert.are.equal("as_strided: sizes {4611686018427387904,4} and strides {0,0} reach beyond 2^63 - 1 elements",
                     errmsg(function() return pt.zeros(4):as_strided({1 << 62, 4}, {0, 0}) end))
    -- a size 0 makes no elements at all, as torch's
    assert.are.same({1 << 62, 2, 0}, pt.zeros(1):expand(1 << 62, 2, 0):size())
    assert.are.same({1 << 62, 0}, pt.zeros(4):as_strided({1 << 62, 0}, {1, 1}):size())
    assert.are.equal(1 << 62, pt.zeros(1):expand(1 << 31, 1 << 31):numel())
  end)
end)

describe("sizes near the int64 limit", function()
  it("reshape and view refuse a shape whose product wraps around to the input's size", function()
    -- 4 * (2^62 + 3) = 2^64 + 12: it used to pass as 12 elements (torch 1.13: "numel: integer
    -- multiplication overflow")
    local x = pt.arange(12, {dtype = "float32"})
    assert.are.equal("reshape: shape {4,4611686018427387907} is invalid for input of size 12",
                     errmsg(function() return x:reshape(4, 4611686018427387907) end))
    assert.are.equal("reshape: shape {4,4611686018427387907} is invalid for input of size 12",
                     errmsg(function() return x:t():reshape(4, 4611686018427387907) end))
    assert.are.equal("view: shape {-1,4,4611686018427387907} is invalid for input of size 12",
                     errmsg(function() return x:view(-1, 4, 4611686018427387907) end))
    assert.are.same({3, 4}, x:reshape(3, -1):size())
    assert.are.same({1 << 62, 4, 0}, pt.zeros(0):view(1 << 62, 4, 0):size())
  end)

  it("split and chunk count pieces without overflow", function()
    local x = pt.arange(12)
    -- torch 1.13: x.split(2**62) is [x]; x.chunk(2**62) is 12 pieces of 1 (its chunk(2**63 - 1)
    -- overflows itself)
    local s = x:split(math.maxinteger)
    assert.are.equal(1, #s)
    assert.are.same({12}, s[1]:size())
    local c = x:chunk(math.maxinteger)
    assert.are.equal(12, #c)
    assert.are.same({1}, c[12]:size())
    assert.are.equal(4, #x:chunk(5)) -- torch: pieces of 3
    assert.are.equal("split: split sizes add up to more than 2^63 - 1 but dimension 1 has size 12",
                     errmsg(function() return x:split({math.maxinteger, math.maxinteger, 14}) end))
  end)

  it("repeat_tensor names itself when the result would be too large", function()
    assert.are.equal("repeat_tensor: 9223372036854775807 repeats of dimension 1 of size 12 make more than "
                     .. "2^63 - 1 elements", errmsg(function() return pt.arange(12):repeat_tensor(math.maxinteger) end))
  end)
end)

describe("messages with indices and dims beyond 32 bits", function()
  it("report them as given", function()
    local x = pt.arange(12)
    assert.are.equal("select: index -9223372036854775808 out of range for dimension 1 of size 12",
                     errmsg(function() return x:select(1, math.mininteger) end))
    assert.are.equal("select: index -5000000000 out of range for dimension 1 of size 12",
                     errmsg(function() return x:select(1, -5000000000) end))
    assert.are.equal("index: range {1,5000000000} out of range for dimension 1 of size 12",
                     errmsg(function() return x[{{1, 5000000000}}] end))
    assert.are.equal("index: range {-9223372036854775808,2} out of range for dimension 1 of size 12",
                     errmsg(function() return x[{{math.mininteger, 2}}] end))
    assert.are.equal("unsqueeze: dimension 4294967297 out of range (the result has 2 dimensions)",
                     errmsg(function() return x:unsqueeze(4294967297) end))
  end)
end)

describe("t[key] = a view of t", function()
  -- torch 1.13 refuses the overlap; partrain reads the value before writing, as copy_ and
  -- index_put_ already did. Expected values: torch's u[key] = value.clone().
  it("reads the value first, whatever the key", function()
    local u = pt.arange(9):view(3, 3)
    u[{}] = u:t()
    assert.are.same({{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}, u:tolist())
    u = pt.arange(9):view(3, 3)
    u[{{1, 3}, {1, 2}}] = u[{{1, 3}, {2, 3}}]:flip(1)
    assert.are.same({{7, 8, 2}, {4, 5, 5}, {1, 2, 8}}, u:tolist())
    u = pt.arange(6):view(3, 2)
    u[long({2, 3})] = u:narrow(1, 1, 2)
    assert.are.same({{0, 1}, {0, 1}, {2, 3}}, u:tolist())
    u = pt.arange(6)
    u[u:gt(0)] = u:narrow(1, 1, 5)
    assert.are.same({0, 0, 1, 2, 3, 4}, u:tolist())
  end)

  it("with autograd too", function()
    local x = pt.tensor({{1, 2}, {3, 4}}, {dtype = "float64", requires_grad = true})
    local y = x * 1
    y[{}] = y:t()
    assert.are.same({{1, 3}, {2, 4}}, y:tolist())
    y:backward(pt.tensor({{1, 2}, {3, 4}}, {dtype = "float64"}))
    assert.are.same({{1, 3}, {2, 4}}, x.grad:tolist()) -- torch 1.13 (with clone())
  end)
end)

describe("size arguments", function()
  it("refuse what follows the sizes instead of ignoring it", function()
    local x = range(2, 3)
    assert.are.equal("view: unexpected argument #3 (number) after the sizes",
                     errmsg(function() return x:view({2, 3}, 1) end))
    assert.are.equal("view: sizes must be integers or a table of integers, got string",
                     errmsg(function() return x:view("a") end))
    assert.are.equal("expand: unexpected argument #3 (string) after the sizes",
                     errmsg(function() return x:expand(2, "a") end))
    assert.are.equal("view: unexpected argument #3 (nil) after the sizes",
                     errmsg(function() return x:view(2, nil, 3) end))
    assert.are.same({3, 2}, x:reshape(3, 2, nil):size()) -- f(a, b, nil) is f(a, b)
    assert.are.equal("permute: unexpected argument #4 (boolean) after the dims",
                     errmsg(function() return x:permute(2, 1, true) end))
    assert.are.equal("repeat_tensor: repeat counts must be integers or a table of integers, got string",
                     errmsg(function() return x:repeat_tensor("a") end))
    -- the usual forms
    assert.are.same({3, 2}, x:view(3, 2):size())
    assert.are.same({3, 2}, pt.reshape(x, {3, -1}):size())
    assert.are.same({2, 2, 3}, x:expand({2, 2, 3}):size())
    assert.are.same({3, 2}, x:permute({2, 1}):size())
    assert.are.same({4, 3}, x:repeat_tensor(2, 1):size())
  end)

  it("scatter_reduce's include_self must be a boolean (0 was taken as true)", function()
    local t = pt.ones(3)
    assert.are.equal("scatter_reduce: include_self must be a boolean, got number",
                     errmsg(function() return t:scatter_reduce(1, long({1}), pt.tensor({5}), "sum", {include_self = 0}) end))
    -- torch 1.13: [5, 1, 1] and [6, 1, 1]
    assert.are.same({5, 1, 1}, t:scatter_reduce(1, long({1}), pt.tensor({5}), "sum", {include_self = false}):tolist())
    assert.are.same({6, 1, 1}, t:scatter_reduce(1, long({1}), pt.tensor({5}), "sum", {include_self = true}):tolist())
  end)
end)

describe("transpose of a 0-d tensor", function()
  it("swaps its one dim (1 or -1) with itself, as torch's transpose(0, 0)", function()
    local x = pt.tensor(3, {dtype = "float64", requires_grad = true})
    local y = x:transpose(1, -1)
    assert.are.equal(0, #y:size())
    assert.is_true(y:is_same_storage(x))
    assert.are.equal(3, x:swapdims(-1, 1):item())
    -- torch 1.13: d(y^3)/dx = 27, and its derivative 18
    local g = pt.autograd.grad(y ^ 3, x, {create_graph = true})
    assert.are.equal(27, g:item())
    assert.are.equal(18, pt.autograd.grad(g, x):item())
    local z = x * 1
    z:transpose_(1, 1)
    assert.are.equal(0, #z:size())
    assert.are.equal("transpose: dimension 2 out of range (tensor has 0 dimensions)",
                     errmsg(function() return x:transpose(1, 2) end))
  end)
end)

describe("scatter_ and scatter_add_ with a src or index that shares the tensor's storage", function()
  -- torch 1.13 refuses the overlap; expected values are torch's with src.clone()
  it("read it before writing", function()
    local t = pt.arange(3, {dtype = "float32"})
    t:scatter_(1, long({2, 3, 1}), t)
    assert.are.same({2, 0, 1}, t:tolist())
    t = pt.arange(3, {dtype = "float32"})
    t:scatter_add_(1, long({2, 3, 1}), t)
    assert.are.same({2, 1, 3}, t:tolist())
    local i = long({2, 3, 1})
    i:scatter_add_(1, i, i)
    assert.are.same({3, 5, 4}, i:tolist())
  end)
end)

describe("integer arguments given as one-element tensors", function()
  it("are taken as their value, as torch's x.narrow(0, torch.tensor(1), 2)", function()
    local x = range(5)
    -- torch 1.13: x.narrow(0, torch.tensor(1), 2) = [1, 2]; x.select(0, torch.tensor(2)) = 2
    assert.are.same({1, 2}, x:narrow(1, long(2), long(2)):tolist())
    assert.are.equal(2, x:select(1, pt.tensor(3, {dtype = "int32"})):item())
    assert.are.equal(4, x:select(1, x:argmax()):item())
    assert.are.equal(3, #x:split(long(2)))
    assert.are.equal("narrow: start must be an integer, got a tensor of dtype float32 and shape {}",
                     errmsg(function() return x:narrow(1, pt.tensor(1.5), 1) end))
    assert.are.equal("narrow: start must be an integer, got a tensor of dtype int64 and shape {2}",
                     errmsg(function() return x:narrow(1, long({1, 2}), 1) end))
    assert.are.equal("select: index must be an integer, got table",
                     errmsg(function() return x:select(1, {}) end))
  end)
end)
