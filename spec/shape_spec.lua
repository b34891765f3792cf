-- Views sharing storage, reshaping, joining and splitting, with their autograd.
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

-- the message of the error f raises, without a "chunk:line: " prefix
local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return (tostring(err):gsub("^[^\n]-:%d+: ", ""))
end

local function range(...) -- float tensor 0..n-1 viewed with the given sizes
  local n = 1
  for _, s in ipairs({...}) do n = n * s end
  return pt.arange(n, {dtype = "float32"}):view(...)
end

local function randn64(...)
  return pt.randn({...}, {dtype = "float64"})
end

describe("view and reshape", function()
  it("view shares storage and infers -1", function()
    local t = range(3, 4)
    local v = t:view(2, -1)
    assert.are.same({2, 6}, v:size())
    assert.is_true(v:is_same_storage(t))
    v[{1, 1}] = 100
    assert.are.equal(100, t[1][1])
    assert.are.same({{100, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}, v:tolist())
    assert.are.same({12}, t:view({-1}):size())
  end)

  it("view accepts compatible non-contiguous layouts and refuses the others", function()
    local t = range(4, 6)
    local n = t:narrow(1, 2, 2) -- rows 2..3: strides {6, 1}, still one chunk
    local v = n:view(12)
    assert.is_true(v:is_same_storage(t))
    assert.are.same({6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, v:tolist())
    local tr = range(2, 3, 4):transpose(1, 2) -- {3,2,4}
    assert.are.same({3, 2, 2, 2}, tr:view(3, 2, 2, 2):size()) -- splitting the last dim is fine
    assert.are.equal(
      "view: cannot view a tensor of shape {4,3} and strides {1,4} as shape {12} without a copy (use reshape or contiguous())",
      errmsg(function() return range(3, 4):t():view(12) end))
  end)

  it("view reports impossible sizes", function()
    assert.are.equal("view: shape {5} is invalid for input of size 12",
                     errmsg(function() return range(3, 4):view(5) end))
    assert.are.equal("view: only one dimension can be -1",
                     errmsg(function() return range(3, 4):view(-1, -1) end))
    assert.are.equal("reshape: shape {5,-1} is invalid for input of size 12",
                     errmsg(function() return range(3, 4):reshape(5, -1) end))
  end)

  it("reshape copies only when it must", function()
    local t = range(3, 4)
    assert.is_true(t:reshape(4, 3):is_same_storage(t))
    local tt = t:t()
    local r = tt:reshape(12)
    assert.is_false(r:is_same_storage(t))
    assert.are.same({0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, r:tolist())
    assert.are.same({3, 4}, pt.reshape(r, {3, 4}):size())
  end)

  it("view_as, reshape_as, expand_as take the other tensor's shape", function()
    local t, o = range(6), pt.zeros(2, 3)
    assert.are.same({2, 3}, t:view_as(o):size())
    assert.are.same({2, 3}, t:reshape_as(o):size())
    assert.are.same({2, 3}, range(3):expand_as(o):size())
  end)
end)

describe("transpose, t, permute", function()
  it("transpose swaps strides and shares storage", function()
    local t = range(2, 3, 4)
    local tr = t:transpose(1, 3)
    assert.are.same({4, 3, 2}, tr:size())
    assert.are.same({1, 4, 12}, tr:stride())
    assert.is_false(tr:is_contiguous())
    assert.is_true(tr:is_same_storage(t))
    assert.are.equal(t[{2, 3, 4}], tr[{4, 3, 2}])
    assert.are.same({3, 2, 4}, t:transpose(-2, 1):size())
    tr[{1, 1, 2}] = -5
    assert.are.equal(-5, t[{2, 1, 1}])
  end)

  it("t transposes matrices and leaves vectors alone", function()
    local m = range(2, 3)
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, m:t():tolist())
    assert.are.same({3}, range(3):t():size())
    assert.are.equal("t: expects a tensor with at most 2 dimensions, got 3 (use transpose)",
                     errmsg(function() return range(1, 2, 3):t() end))
  end)

  it("permute reorders dims (varargs or a table, negative dims)", function()
    local t = range(2, 3, 4)
    local p = t:permute(3, 1, 2)
    assert.are.same({4, 2, 3}, p:size())
    assert.are.same({1, 12, 4}, p:stride())
    assert.are.same({4, 2, 3}, t:permute({-1, 1, 2}):size())
    assert.are.equal("permute: dims must be a permutation of 1..3",
                     errmsg(function() return t:permute(1, 1, 2) end))
    assert.are.equal("permute: expected 3 dims for a tensor of 3 dimensions, got 2",
                     errmsg(function() return t:permute(2, 1) end))
  end)

  it("dims out of range name the function", function()
    assert.are.equal("transpose: dimension 3 out of range (tensor has 2 dimensions)",
                     errmsg(function() return range(2, 3):transpose(1, 3) end))
  end)
end)

describe("narrow and select", function()
  it("narrow views a range along a dim", function()
    local t = range(4, 3)
    local n = t:narrow(1, 2, 2)
    assert.are.same({{3, 4, 5}, {6, 7, 8}}, n:tolist())
    assert.is_true(n:is_same_storage(t))
    assert.are.equal(4, n:storage_offset())
    n:fill_(1)
    assert.are.same({{0, 1, 2}, {1, 1, 1}, {1, 1, 1}, {9, 10, 11}}, t:tolist())
    assert.are.same({{2}, {5}, {8}, {11}}, range(4, 3):narrow(2, -1, 1):tolist())
    assert.are.equal("narrow: start 3 and length 3 out of range for dimension 1 of size 4",
                     errmsg(function() return t:narrow(1, 3, 3) end))
    assert.are.equal("narrow: start -5 and length 1 out of range for dimension 1 of size 4",
                     errmsg(function() return t:narrow(1, -5, 1) end))
    assert.are.equal("narrow: start must be an integer, got 1.5",
                     errmsg(function() return t:narrow(1, 1.5, 1) end))
    -- lengths near the integer limit must not wrap around the range check
    assert.are.equal("narrow: start 2 and length 9223372036854775807 out of range for dimension 1 of size 4",
                     errmsg(function() return t:narrow(1, 2, math.maxinteger) end))
    assert.are.equal("narrow: start 4 and length 9223372036854775807 out of range for dimension 1 of size 4",
                     errmsg(function() return t:narrow(1, -1, math.maxinteger) end))
    -- indices and dimensions beyond 32 bits are reported as given
    assert.are.equal("index: index 4294967298 out of range for dimension 1 of size 4",
                     errmsg(function() return t[4294967298] end))
    assert.are.equal("index: index 4294967298 out of range for dimension 1 of size 4",
                     errmsg(function() return t[{4294967298, 1}] end))
    assert.are.equal("sum: dimension 4294967297 out of range (tensor has 2 dimensions)",
                     errmsg(function() return t:sum(4294967297) end))
  end)

  it("strided copies (contiguous of views, conversions, overlapping copy_) keep every value", function()
    -- large enough to be split over the threads, row by row
    local a = pt.arange(1, 200 * 700 + 1):reshape(200, 700)
    local t = a:t():contiguous()
    assert.are.same({700, 200}, t:size())
    assert.are.equal(a[{37, 501}], t[{501, 37}])
    assert.is_true(pt.equal(t:t(), a))
    local e = pt.tensor({{1, 2, 3}}):expand(1000, 3):contiguous()
    assert.are.same({1, 2, 3}, e[1000]:tolist())
    local p = pt.arange(1, 2 * 3 * 4 * 5 + 1):reshape(2, 3, 4, 5):permute(4, 1, 3, 2):contiguous()
    assert.are.equal(pt.arange(1, 121):reshape(2, 3, 4, 5)[{2, 3, 4, 5}], p[{5, 2, 4, 3}])
    for _, dt in ipairs({"int64", "int32", "uint8", "float64", "bool"}) do
      local src = pt.tensor({{1, 0}, {3, 4}}, {dtype = dt}):t() -- a transposed view
      local f32 = src:float()
      assert.are.same(dt == "bool" and {{1, 1}, {0, 1}} or {{1, 3}, {0, 4}}, f32:tolist(), dt)
      assert.are.same(f32:tolist(), src:double():tolist(), dt)
    end
    assert.are.same({{true, true}, {false, true}}, pt.tensor({{2.5, 0}, {-1, 7}}):t():to("bool"):tolist())
    -- transposed last dims are copied in tiles: edges that are not whole tiles, a batch, 4- and
    -- 8-byte elements
    for _, dt in ipairs({"float32", "float64", "int32"}) do
      local b = pt.arange(1, 3 * 45 * 70 + 1):reshape(3, 45, 70):to(dt)
      local bt = b:transpose(2, 3):contiguous()
      assert.are.same({3, 70, 45}, bt:size())
      assert.is_true(pt.equal(bt:transpose(2, 3), b), dt)
      assert.are.equal(b[{3, 44, 69}], bt[{3, 69, 44}])
    end
    -- a copy between overlapping views of one storage goes in order, as before
    local o = pt.arange(1, 11):float()
    o:narrow(1, 2, 9):copy_(o:narrow(1, 1, 9))
    assert.are.same({1, 1, 2, 3, 4, 5, 6, 7, 8, 9}, o:tolist())
  end)

  it("select removes the dim; t[i] is select(1, i)", function()
    local t = range(3, 4)
    assert.are.same({4, 5, 6, 7}, t:select(1, 2):tolist())
    assert.are.same({3, 7, 11}, t:select(2, -1):tolist())
    assert.are.same({4, 5, 6, 7}, t[2]:tolist())
    assert.are.equal(6, t[2][3])
    assert.is_true(t[2]:is_same_storage(t))
    assert.are.equal("select: index 4 out of range for dimension 1 of size 3",
                     errmsg(function() return t:select(1, 4) end))
    assert.are.equal("select: index -4 out of range for dimension 1 of size 3",
                     errmsg(function() return t:select(1, -4) end))
    assert.are.equal("select: dimension 3 out of range (tensor has 2 dimensions)",
                     errmsg(function() return t:select(3, 1) end))
  end)
end)

describe("squeeze, unsqueeze, expand, flatten, contiguous", function()
  it("squeeze drops size-1 dims, unsqueeze inserts one", function()
    local t = pt.zeros(1, 3, 1, 2)
    assert.are.same({3, 2}, t:squeeze():size())
    assert.are.same({3, 1, 2}, t:squeeze(1):size())
    assert.are.same({1, 3, 1, 2}, t:squeeze(2):size()) -- size 3: unchanged
    assert.is_true(t:squeeze():is_same_storage(t))
    local v = range(3)
    assert.are.same({1, 3}, v:unsqueeze(1):size())
    assert.are.same({3, 1}, v:unsqueeze(2):size())
    assert.are.same({3, 1}, v:unsqueeze(-1):size())
    assert.are.equal("unsqueeze: dimension 3 out of range (the result has 2 dimensions)",
                     errmsg(function() return v:unsqueeze(3) end))
  end)

  it("expand broadcasts with stride 0 and shares storage", function()
    local c = range(3, 1)
    local e = c:expand(2, 3, 4)
    assert.are.same({2, 3, 4}, e:size())
    assert.are.same({0, 1, 0}, e:stride())
    assert.is_true(e:is_same_storage(c))
    assert.are.same({{0, 0}, {1, 1}, {2, 2}}, c:expand(-1, 2):tolist())
    assert.are.same({3, 5}, c:expand({3, 5}):size())
    assert.are.equal("expand: cannot expand shape {3,1} to {4,2}",
                     errmsg(function() return c:expand(4, 2) end))
    assert.are.equal("expand: -1 is not allowed for a new dimension",
                     errmsg(function() return c:expand(-1, 3, 2) end))
  end)

  it("flatten merges a range of dims (PyTorch semantics)", function()
    local t = range(2, 3, 4)
    assert.are.same({24}, t:flatten():size())
    assert.are.same({2, 12}, t:flatten(2):size())
    assert.are.same({6, 4}, t:flatten(1, 2):size())
    assert.are.same({2, 3, 4}, t:flatten(2, 2):size())
    assert.is_true(t:flatten():is_same_storage(t))
    assert.are.same({1}, pt.tensor(5):flatten():size())
    assert.are.equal("flatten: start_dim 3 must not come after end_dim 2",
                     errmsg(function() return t:flatten(3, 2) end))
  end)

  it("contiguous returns the tensor itself or a compact copy", function()
    local t = range(2, 3)
    assert.are.equal(t, t:contiguous())
    local c = t:t():contiguous()
    assert.is_true(c:is_contiguous())
    assert.is_false(c:is_same_storage(t))
    assert.are.same({2, 1}, c:stride())
    assert.are.same({{0, 3}, {1, 4}, {2, 5}}, c:tolist())
    local k = t:clone()
    assert.is_false(k:is_same_storage(t))
    assert.are.same(t:tolist(), k:tolist())
  end)

  it("repeat tiles", function()
    local t = pt.tensor({{1, 2}, {3, 4}})
    assert.are.same({{1, 2, 1, 2}, {3, 4, 3, 4}, {1, 2, 1, 2}, {3, 4, 3, 4}}, t:repeat_tensor(2, 2):tolist())
    assert.are.same({{{1, 2}, {3, 4}}, {{1, 2}, {3, 4}}}, t:repeat_tensor(2, 1, 1):tolist())
    assert.are.same({1, 2, 3, 1, 2, 3}, pt.tensor({1, 2, 3}):repeatTensor(2):tolist())
    assert.are.same({2, 6}, pt.repeat_tensor(t, 1, 3):size())
    assert.are.equal(
      "repeat_tensor: number of repeat counts (1) cannot be smaller than the number of dimensions of the tensor (2)",
      errmsg(function() return t:repeat_tensor(2) end))
    assert.are.equal("repeat_tensor: repeat counts must be non-negative, got -1",
                     errmsg(function() return t:repeat_tensor(1, -1) end))
  end)
end)

describe("cat and stack", function()
  it("cat joins along a dim, with list or varargs forms", function()
    local a, b = range(2, 3), pt.ones(2, 2)
    assert.are.same({{0, 1, 2, 1, 1}, {3, 4, 5, 1, 1}}, pt.cat({a, b}, 2):tolist())
    assert.are.same({4, 3}, pt.cat({a, a}):size())
    assert.are.same({2, 6}, pt.cat(a, a, 2):size())
    assert.are.same({2, 6}, pt.cat({a, a}, -1):size())
    local c = pt.cat({a, a})
    assert.is_false(c:is_same_storage(a))
  end)

  it("cat promotes dtypes", function()
    local c = pt.cat({pt.tensor({1, 2}, {dtype = "int64"}), pt.tensor({0.5}, {dtype = "float64"})})
    assert.are.equal("float64", c:dtype())
    assert.are.same({1, 2, 0.5}, c:tolist())
  end)

  it("cat reports bad input", function()
    assert.are.equal("cat: tensors must have the same shape except in dimension 1, got {2,3} and {2,4}",
                     errmsg(function() return pt.cat({pt.zeros(2, 3), pt.zeros(2, 4)}, 1) end))
    assert.are.equal("cat: tensors must have the same number of dimensions, got {2,3} and {3}",
                     errmsg(function() return pt.cat({pt.zeros(2, 3), pt.zeros(3)}) end))
    assert.are.equal("cat: expected a non-empty list of tensors", errmsg(function() return pt.cat({}) end))
    assert.are.equal("cat: element 2 of the list is not a tensor (got number)",
                     errmsg(function() return pt.cat({pt.zeros(2), 3}) end))
    assert.are.equal("cat: dimension 3 out of range (tensor has 2 dimensions)",
                     errmsg(function() return pt.cat({pt.zeros(2, 3)}, 3) end))
    assert.are.equal("cat: zero-dimensional tensor (at position 1) cannot be concatenated",
                     errmsg(function() return pt.cat({pt.tensor(1)}) end))
    assert.are.equal("cat: expected a list of tensors, got number", errmsg(function() return pt.cat(1) end))
  end)

  it("stack adds a dim", function()
    local a, b = pt.tensor({1, 2}), pt.tensor({3, 4})
    assert.are.same({{1, 2}, {3, 4}}, pt.stack({a, b}):tolist())
    assert.are.same({{1, 3}, {2, 4}}, pt.stack({a, b}, 2):tolist())
    assert.are.same({{1, 3}, {2, 4}}, pt.stack({a, b}, -1):tolist())
    assert.are.equal("stack: tensors must have the same shape, got {2} and {3}",
                     errmsg(function() return pt.stack({a, pt.zeros(3)}) end))
    assert.are.equal("stack: dimension 3 out of range (the result has 2 dimensions)",
                     errmsg(function() return pt.stack({a, b}, 3) end))
    assert.are.equal("stack: expected a non-empty list of tensors", errmsg(function() return pt.stack({}) end))
  end)
end)

describe("split, chunk, unbind", function()
  it("split by size gives views, the last one shorter", function()
    local t = range(5, 2)
    local parts = t:split(2)
    assert.are.equal(3, #parts)
    assert.are.same({{0, 1}, {2, 3}}, parts[1]:tolist())
    assert.are.same({{8, 9}}, parts[3]:tolist())
    for _, p in ipairs(parts) do assert.is_true(p:is_same_storage(t)) end
    local cols = pt.split(t, 1, 2)
    assert.are.equal(2, #cols)
    assert.are.same({5, 1}, cols[2]:size())
  end)

  it("split by sizes", function()
    local parts = range(6):split({1, 2, 3})
    assert.are.same({{0}, {1, 2}, {3, 4, 5}}, {parts[1]:tolist(), parts[2]:tolist(), parts[3]:tolist()})
    assert.are.equal("split: split sizes add up to 5 but dimension 1 has size 6",
                     errmsg(function() return range(6):split({2, 3}) end))
    assert.are.equal("split: split size must be positive, got 0",
                     errmsg(function() return range(6):split(0) end))
    assert.are.equal("split: split sizes must be non-negative, got -1",
                     errmsg(function() return range(6):split({7, -1}) end))
    assert.are.equal("split: expected at least one split size", errmsg(function() return range(6):split({}) end))
    assert.are.equal("split: split size must be an integer, got 1.5",
                     errmsg(function() return range(6):split(1.5) end))
    assert.are.equal("split: a split size must be an integer, got string",
                     errmsg(function() return range(6):split({"x"}) end))
  end)

  it("chunk gives at most n pieces", function()
    local parts = range(5):chunk(2)
    assert.are.equal(2, #parts)
    assert.are.same({0, 1, 2}, parts[1]:tolist())
    assert.are.same({3, 4}, parts[2]:tolist())
    assert.are.equal(3, #range(3):chunk(4))
    assert.are.equal(2, #pt.chunk(range(2, 6), 2, 2))
    assert.are.equal("chunk: number of chunks must be positive, got 0",
                     errmsg(function() return range(3):chunk(0) end))
    -- a dimension of size 0 gives n empty pieces, as torch.chunk
    local e = pt.zeros(0, 3):chunk(3)
    assert.are.equal(3, #e)
    for i = 1, 3 do assert.are.same({0, 3}, e[i]:size()) end
    assert.are.equal(2, #pt.zeros(4, 0):chunk(2, 2))
    assert.are.equal("chunk: 2000000 empty chunks of a dimension of size 0 is too many",
                     errmsg(function() return pt.zeros(0):chunk(2000000) end))
  end)

  it("unbind gives the slices", function()
    local s = range(2, 3):unbind(2)
    assert.are.equal(3, #s)
    assert.are.same({1, 4}, s[2]:tolist())
    assert.are.equal("unbind: cannot unbind a 0-d tensor", errmsg(function() return pt.tensor(1):unbind() end))
  end)
end)

describe("gradients of views and joins (float64 finite differences)", function()
  it("view, reshape, flatten, squeeze, unsqueeze", function()
    gradcheck(function(x) return x:view(4, 3) end, {randn64(3, 4)})
    gradcheck(function(x) return x:t():reshape(12) end, {randn64(3, 4)})
    gradcheck(function(x) return x:flatten(1, 2) end, {randn64(2, 3, 2)})
    gradcheck(function(x) return x:squeeze():unsqueeze(1) end, {randn64(3, 1, 2)})
  end)

  it("transpose, t, permute", function()
    gradcheck(function(x) return x:transpose(1, 3) end, {randn64(2, 3, 4)})
    gradcheck(function(x) return x:t() end, {randn64(3, 2)})
    gradcheck(function(x) return x:permute(2, 3, 1) end, {randn64(2, 3, 4)})
  end)

  it("narrow, select, expand, contiguous, clone, repeat", function()
    gradcheck(function(x) return x:narrow(2, 2, 2) end, {randn64(3, 4)})
    gradcheck(function(x) return x:select(1, 2) end, {randn64(3, 4)})
    gradcheck(function(x) return x:expand(2, 3, 4) end, {randn64(3, 1)})
    gradcheck(function(x) return x:t():contiguous() end, {randn64(3, 4)})
    gradcheck(function(x) return x:clone() end, {randn64(3, 4)})
    gradcheck(function(x) return x:repeat_tensor(2, 1, 3) end, {randn64(2, 3)})
  end)

  it("cat, stack, split, chunk, unbind", function()
    gradcheck(function(a, b) return pt.cat({a, b, a}, 2) end, {randn64(2, 3), randn64(2, 2)})
    gradcheck(function(a, b) return pt.stack({a, b}, 2) end, {randn64(2, 3), randn64(2, 3)})
    -- nine inputs: the graph becomes a tree of nodes
    gradcheck(function(x) return pt.cat(x:split(1), 1) end, {randn64(9, 2)})
    gradcheck(function(x)
      local p = x:split({1, 3}, 2)
      return pt.cat({p[2], p[1]}, 2)
    end, {randn64(2, 4)})
    gradcheck(function(x) return x:chunk(2)[2] end, {randn64(5, 2)})
    gradcheck(function(x) return pt.stack(x:unbind(2), 1) end, {randn64(3, 2)})
  end)

  it("records grad_fn names and sums gradients of repeated use", function()
    local x = randn64(2, 3)
    x.requires_grad = true
    assert.are.equal("TransposeBackward", x:t().grad_fn)
    assert.are.equal("ViewBackward", x:view(6).grad_fn)
    assert.are.equal("CatBackward", pt.cat({x, x}).grad_fn)
    assert.is_nil(pt.no_grad(function() return x:t() end).grad_fn)
    local y = pt.cat({x, x:narrow(2, 1, 1)}, 2)
    y:backward(pt.ones(2, 4, {dtype = "float64"}))
    assert.are.same({{2, 1, 1}, {2, 1, 1}}, x.grad:tolist())
  end)
end)
