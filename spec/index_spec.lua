-- 1-based indexing and slicing, masks, and the gather/scatter/index_select family.
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

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

local function randn64(...)
  return pt.randn({...}, {dtype = "float64"})
end

local function long(values) return pt.tensor(values, {dtype = "int64"}) end

describe("indexing with t[key]", function()
  it("t[i] selects along dim 1 (a view), t[i][j] reaches numbers", function()
    local t = range(3, 4)
    assert.are.same({4, 5, 6, 7}, t[2]:tolist())
    assert.are.same({8, 9, 10, 11}, t[-1]:tolist())
    assert.is_true(t[2]:is_same_storage(t))
    assert.are.equal(7, t[2][4])
  end)

  it("a table key has one entry per leading dim", function()
    local t = range(3, 4)
    assert.are.same({4, 5, 6}, t[{2, {1, 3}}]:tolist())
    assert.are.same({3, 7, 11}, t[{{}, -1}]:tolist())
    assert.are.same({{4, 5, 6, 7}, {8, 9, 10, 11}}, t[{{2, -1}}]:tolist())
    assert.are.same({{1}, {5}, {9}}, t[{":", {2}}]:tolist()) -- {a} keeps the dim
    assert.are.same({{5, 6}, {9, 10}}, t[{{2, 3}, {2, 3}}]:tolist())
    assert.are.same({3, 4}, t[{}]:size())
    assert.are.same({0, 4}, t[{{3, 2}}]:size()) -- empty range
    assert.are.equal(6, t[{2, 3}]) -- every dim selected: a number
    assert.are.equal(11, t[{-1, -1}])
    local s = t[{{2, 3}, {2, 3}}]
    assert.is_true(s:is_same_storage(t))
    assert.are.same({4, 1}, s:stride())
  end)

  it("slices are views: writing through them changes the base", function()
    local t = range(3, 4)
    t[{{}, 2}]:fill_(-1)
    assert.are.same({-1, -1, -1}, t:select(2, 2):tolist())
  end)

  it("reports out-of-range and malformed keys", function()
    local t = range(3, 4)
    -- a float key with an integer value reads as that integer (as an assignment takes it)
    assert.are.same(t[2]:tolist(), t[2.0]:tolist())
    assert.are.same(t[-1]:tolist(), t[-1.0]:tolist())
    assert.are.equal("index: an index must be an integer, got 1.5", errmsg(function() return t[1.5] end))
    assert.are.equal("index: an index must be an integer, got 1.5", errmsg(function() t[1.5] = 0 end))
    assert.are.equal("index: index 4 out of range for dimension 1 of size 3",
                     errmsg(function() return t[{4}] end))
    assert.are.equal("index: index 5 out of range for dimension 2 of size 4",
                     errmsg(function() return t[{1, 5}] end))
    assert.are.equal("index: index 0 out of range for dimension 1 of size 3",
                     errmsg(function() return t[{0}] end))
    assert.are.equal("index: range {2,5} out of range for dimension 2 of size 4",
                     errmsg(function() return t[{{}, {2, 5}}] end))
    assert.are.equal("index: range {3,1} out of range for dimension 1 of size 3",
                     errmsg(function() return t[{{3, 1}}] end))
    assert.are.equal("index: too many indices for a tensor of 2 dimensions (got 3)",
                     errmsg(function() return t[{1, 1, 1}] end))
    assert.are.equal("index: invalid index entry of type boolean at position 2",
                     errmsg(function() return t[{1, true}] end))
    assert.are.equal("index: a range is {}, {first}, {first, last} or {first, last, step}, got 4 entries at position 1",
                     errmsg(function() return t[{{1, 2, 1, 3}}] end))
    assert.are.equal("index: index entries must be integers, got 1.5",
                     errmsg(function() return t[{1.5}] end))
    assert.are.equal("index: a tensor index must be a bool mask or int64 positions, got float32",
                     errmsg(function() return t[pt.zeros(2)] end))
    assert.are.equal("index: range bounds must be integers (position 1)",
                     errmsg(function() return t[{{1, "x"}}] end))
    assert.are.equal("index: cannot index a 0-d tensor (use item())",
                     errmsg(function() return pt.tensor(1)[long({1})] end))
    assert.are.equal("index: too many indices for a tensor of 0 dimensions (got 1)",
                     errmsg(function() return pt.tensor(1)[{1}] end))
  end)

  it("a bool mask selects elements into a 1-D copy", function()
    local t = range(2, 3)
    local m = pt.tensor({{true, false, true}, {false, false, true}})
    local s = t[m]
    assert.are.same({0, 2, 5}, s:tolist())
    assert.is_false(s:is_same_storage(t))
    assert.are.same({0, 2, 3, 5}, t:masked_select(pt.tensor({true, false, true})):tolist()) -- broadcast
    assert.are.same({0, 2, 5}, pt.masked_select(t, m):tolist())
    assert.are.equal("masked_select: shapes {2,3} and {2} cannot be broadcast",
                     errmsg(function() return t:masked_select(pt.tensor({true, false})) end))
    assert.are.equal("masked_select: mask must be a bool tensor, got float32",
                     errmsg(function() return t:masked_select(pt.zeros(2, 3)) end))
  end)

  it("an int64 tensor selects rows", function()
    local t = range(3, 2)
    local r = t[long({3, 1, 3})]
    assert.are.same({{4, 5}, {0, 1}, {4, 5}}, r:tolist())
    assert.are.equal("index_select: index 4 out of range for dimension 1 of size 3",
                     errmsg(function() return t[long({4})] end))
  end)
end)

describe("assignment with t[key] = value", function()
  it("fills a slice with a number", function()
    local t = pt.zeros(3, 4)
    t[{2, {2, 3}}] = 5
    t[{{}, -1}] = 7
    t[1] = 1
    assert.are.same({{1, 1, 1, 1}, {0, 5, 5, 7}, {0, 0, 0, 7}}, t:tolist())
    local v = pt.zeros(3)
    v[2] = 4
    v[-1] = pt.tensor(9)
    assert.are.same({0, 4, 9}, v:tolist())
  end)

  it("copies a broadcastable tensor", function()
    local t = pt.zeros(2, 3)
    t[{{}, {1, 2}}] = pt.tensor({{1, 2}, {3, 4}})
    t[{{}, 3}] = pt.tensor({8, 9})
    assert.are.same({{1, 2, 8}, {3, 4, 9}}, t:tolist())
    t[2] = pt.tensor({6})
    assert.are.same({{1, 2, 8}, {6, 6, 6}}, t:tolist())
    t[{{1, 2}}] = pt.tensor({0, 1, 2})
    assert.are.same({{0, 1, 2}, {0, 1, 2}}, t:tolist())
    assert.are.equal("index: value of shape {2} cannot be broadcast to the slice of shape {3}",
                     errmsg(function() t[1] = pt.tensor({1, 2}) end))
    assert.are.equal("index: value must be a number or a tensor, got string",
                     errmsg(function() t[1] = "x" end))
    assert.are.equal("index: invalid index of type boolean", errmsg(function() t[true] = 1 end))
    assert.are.equal("index: cannot index a 0-d tensor (use fill_)",
                     errmsg(function() pt.tensor(1)[long({1})] = 2 end))
    assert.are.equal("index: a tensor index must be a bool mask or int64 positions, got float32",
                     errmsg(function() t[pt.ones(1)] = 2 end))
  end)

  it("with a mask: fills, or copies one value per true entry", function()
    local t = range(2, 3)
    t[pt.tensor({{true, false, true}, {false, false, true}})] = -1
    assert.are.same({{-1, 1, -1}, {3, 4, -1}}, t:tolist())
    t[pt.tensor({false, true, false})] = pt.tensor({10, 20})
    assert.are.same({{-1, 10, -1}, {3, 20, -1}}, t:tolist())
    assert.are.equal("index: mask selects 4 elements but the value has 3", -- the mask broadcasts
                     errmsg(function() t[pt.tensor({false, true, true})] = pt.tensor({1, 2, 3}) end))
    assert.are.equal("index: mask of shape {4} does not match tensor of shape {2,3}",
                     errmsg(function() t[pt.tensor({true, true, true, true})] = 0 end))
  end)

  it("with an int64 tensor: sets rows", function()
    local t = pt.zeros(3, 2)
    t[long({1, 3})] = 5
    assert.are.same({{5, 5}, {0, 0}, {5, 5}}, t:tolist())
    t[long({2})] = pt.tensor({{1, 2}})
    assert.are.same({{5, 5}, {1, 2}, {5, 5}}, t:tolist())
  end)

  it("refuses to write into a tensor that requires grad", function()
    local x = randn64(2, 3)
    x.requires_grad = true
    assert.are.equal(
      "index: in-place operation on a tensor that requires grad (use pt.no_grad, detach() or the out-of-place form)",
      errmsg(function() x[1] = 0 end))
    assert.are.equal(
      "index: in-place operation on a tensor that requires grad (use pt.no_grad, detach() or the out-of-place form)",
      errmsg(function() x[{{}, 1}] = pt.zeros(2, {dtype = "float64"}) end))
    pt.no_grad(function() x[{{1, 2}, 2}] = 0 end)
    assert.are.same({0, 0}, x[{{}, 2}]:tolist())
  end)

  it("records slices written with autograd into the tensor's history (CopySlices)", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local buf = pt.zeros(2, 3)
    buf[{1, {1, 2}}] = x * 2   -- a tensor that requires grad into a buffer that does not
    buf[{2, 3}] = x:sum()      -- a 1-element tensor keeps its gradient too
    assert.are.equal("CopySlices", buf.grad_fn)
    buf:sum():backward()
    assert.are.same({3, 3}, x.grad:tolist())
    local x2 = pt.tensor({1, 2}, {requires_grad = true})
    local h = x2 * 1
    h[{2}] = 0                 -- a constant cuts that element's gradient
    h:sum():backward()
    assert.are.same({1, 0}, x2.grad:tolist())
  end)
end)

describe("mask, position and element assignment with autograd", function()
  local mask = pt.tensor({{true, false, true}, {false, false, true}})

  it("fills through a bool mask and cuts the filled elements' gradients", function()
    gradcheck(function(x) local y = x * 1; y[mask] = 3; return y end, {randn64(2, 3)})
    gradcheck(function(x) local y = x * 1; y[mask:to("uint8")] = pt.tensor(-1); return y end, {randn64(2, 3)})
    -- a mask that broadcasts, into a view of the tensor (its base's history follows)
    gradcheck(function(x)
      local y = x * 2
      local v = y:narrow(1, 2, 2)
      v[pt.tensor({true, false, true})] = 0
      return y
    end, {randn64(3, 3)})
    local x = pt.tensor({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true})
    local y = x * 2
    y[mask] = -math.huge -- the usual way to mask logits
    assert.are.same({{-math.huge, 4, -math.huge}, {8, 10, -math.huge}}, y:tolist())
    assert.are.equal("MaskedFillBackward", y.grad_fn)
    y:masked_fill(mask, 0):sum():backward()
    assert.are.same({{0, 2, 0}, {2, 2, 0}}, x.grad:tolist())
  end)

  it("fills rows through a tensor of positions, and index_fill_ along any dim", function()
    gradcheck(function(x) local y = x * 1; y[long({1, 3, 1})] = -2; return y end, {randn64(3, 2)})
    gradcheck(function(x) return (x * 1):index_fill_(2, long({2}), 0.5) end, {randn64(3, 4)})
    local x = pt.tensor({{1, 2}, {3, 4}, {5, 6}}, {requires_grad = true})
    local y = x * 1
    y[long({2})] = 9
    assert.are.same({{1, 2}, {9, 9}, {5, 6}}, y:tolist())
    y:sum():backward()
    assert.are.same({{1, 1}, {0, 0}, {1, 1}}, x.grad:tolist())
  end)

  it("sets one element of a 1-D tensor in the graph", function()
    gradcheck(function(x) local y = x * 1; y[2] = 5; y[-1] = 1; return y end, {randn64(4)})
  end)

  it("refuses tensor values and leaves with messages that say what to do", function()
    local x = randn64(2, 3)
    x.requires_grad = true
    local y = x * 1
    assert.are.equal("index: assigning a tensor through a bool mask is not differentiable; assign a "
      .. "number, or build the result out of place with pt.where(mask, value, t)",
      errmsg(function() y[mask] = pt.tensor({1, 2, 3}, {dtype = "float64"}) end))
    assert.are.equal("index: assigning a tensor through a tensor of positions is not differentiable; "
      .. "assign a number, or build the result out of place with pt.where(mask, value, t)",
      errmsg(function() y[long({1})] = x[1]:sum() end))
    assert.are.equal(
      "index: in-place operation on a tensor that requires grad (use pt.no_grad, detach() or the out-of-place form)",
      errmsg(function() x[mask] = 0 end))
    assert.are.equal("index_fill_: a leaf tensor that requires grad is used in an in-place operation",
      errmsg(function() x:index_fill_(1, long({1}), 0) end))
    assert.are.equal("index: index 4 out of range for dimension 1 of size 2",
      errmsg(function() y[long({4})] = 0 end))
  end)
end)

describe("gather and scatter", function()
  it("gather picks along a dim with 1-based positions", function()
    local t = pt.tensor({{1, 2}, {3, 4}})
    assert.are.same({{1, 1}, {4, 3}}, t:gather(2, long({{1, 1}, {2, 1}})):tolist())
    assert.are.same({{3, 2}}, pt.gather(t, 1, long({{2, 1}})):tolist())
    assert.are.equal("gather: index 3 out of range for dimension 2 of size 2",
                     errmsg(function() return t:gather(2, long({{1, 3}, {1, 1}})) end))
    assert.are.equal("gather: index 0 out of range for dimension 1 of size 2",
                     errmsg(function() return t:gather(1, long({{0, 1}})) end))
    assert.are.equal("gather: index must be an int64 tensor, got float32",
                     errmsg(function() return t:gather(2, pt.ones(2, 2)) end))
    assert.are.equal("gather: index must have as many dimensions as the tensor (2), got 1",
                     errmsg(function() return t:gather(2, long({1})) end))
    assert.are.equal("gather: index of shape {3,1} does not fit the tensor of shape {2,2} in dimension 1",
                     errmsg(function() return t:gather(2, long({{1}, {1}, {1}})) end))
  end)

  it("scatter writes src (or a value) at the positions, out of place", function()
    local t = pt.zeros(2, 3)
    local s = t:scatter(2, long({{3, 1}, {2, 2}}), pt.tensor({{1, 2}, {3, 4}}))
    assert.are.same({{2, 0, 1}, {0, 4, 0}}, s:tolist())
    assert.are.same({{0, 0, 0}, {0, 0, 0}}, t:tolist())
    assert.are.same({{0, 0, 7}, {7, 0, 0}}, pt.scatter(t, 2, long({{3}, {1}}), 7):tolist())
    assert.are.equal("scatter: index 4 out of range for dimension 2 of size 3",
                     errmsg(function() return t:scatter(2, long({{4}, {1}}), 1) end))
    assert.are.equal("scatter: src must have the tensor's dtype (float32), got float64",
                     errmsg(function() return t:scatter(2, long({{1}}), pt.ones(1, 1, {dtype = "float64"})) end))
    assert.are.equal("scatter: index of shape {1,2} does not fit src of shape {1,1} in dimension 2",
                     errmsg(function() return t:scatter(2, long({{1, 2}}), pt.ones(1, 1)) end))
    assert.are.equal("scatter: src must have as many dimensions as index (2), got 1",
                     errmsg(function() return t:scatter(2, long({{1}}), pt.ones(1)) end))
    assert.are.equal("scatter: value must be a number or a tensor, got string",
                     errmsg(function() return t:scatter(2, long({{1}}), "x") end))
  end)

  it("scatter_ and scatter_add_ work in place; scatter_add accumulates duplicates", function()
    local t = pt.zeros(3)
    assert.are.equal(t, t:scatter_(1, long({3}), 5))
    assert.are.same({0, 0, 5}, t:tolist())
    t:scatter_add_(1, long({1, 1, 2}), pt.tensor({1, 2, 3}))
    assert.are.same({3, 3, 5}, t:tolist())
    assert.are.same({3, 3, 15}, t:scatter_add(1, long({3, 3}), pt.tensor({4, 6})):tolist())
    assert.are.same({3, 3, 5}, t:tolist())
    assert.are.equal("scatter_add_: index -1 out of range for dimension 1 of size 3",
                     errmsg(function() t:scatter_add_(1, long({-1}), pt.tensor({1})) end))
    assert.are.same({3, 3, 5}, t:tolist()) -- nothing written on error
  end)

  it("in-place forms refuse tensors that require grad", function()
    local x = randn64(3)
    x.requires_grad = true
    assert.are.equal(
      "scatter_: in-place operation on a tensor that requires grad (use pt.no_grad, detach() or the out-of-place form)",
      errmsg(function() x:scatter_(1, long({1}), 0) end))
  end)
end)

describe("index_select, index_add_, index_copy_, index_fill_", function()
  it("index_select copies slices at 1-based positions", function()
    local t = range(3, 4)
    assert.are.same({{3, 1}, {7, 5}, {11, 9}}, t:index_select(2, long({4, 2})):tolist())
    assert.are.same({{8, 9, 10, 11}}, pt.index_select(t, 1, long({3})):tolist())
    assert.are.equal("index_select: index 0 out of range for dimension 2 of size 4",
                     errmsg(function() return t:index_select(2, long({0})) end))
    assert.are.equal("index_select: index must be 1-D, got 2 dimensions",
                     errmsg(function() return t:index_select(1, long({{1}})) end))
    assert.are.equal("index_select: index must be an int64 tensor, got float32",
                     errmsg(function() return t:index_select(1, pt.ones(1)) end))
  end)

  it("index_add_ accumulates rows, index_copy_ and index_fill_ overwrite", function()
    local t = pt.zeros(3, 2)
    t:index_add_(1, long({1, 3, 1}), pt.tensor({{1, 1}, {2, 2}, {3, 3}}))
    assert.are.same({{4, 4}, {0, 0}, {2, 2}}, t:tolist())
    t:index_copy_(1, long({2}), pt.tensor({{7, 8}}))
    assert.are.same({{4, 4}, {7, 8}, {2, 2}}, t:tolist())
    t:index_fill_(2, long({1}), -1)
    assert.are.same({{-1, 4}, {-1, 8}, {-1, 2}}, t:tolist())
    assert.are.equal("index_add_: src must have shape {1,2}, got {2,2}",
                     errmsg(function() t:index_add_(1, long({1}), pt.ones(2, 2)) end))
    assert.are.equal("index_add_: index 9 out of range for dimension 1 of size 3",
                     errmsg(function() t:index_add_(1, long({9}), pt.ones(1, 2)) end))
    assert.are.equal("index_copy_: src of shape {3} cannot be broadcast to {1,2}",
                     errmsg(function() t:index_copy_(1, long({1}), pt.ones(3)) end))
    assert.are.equal("index_copy_: src of shape {2,2} cannot be broadcast to {1,2}",
                     errmsg(function() t:index_copy_(1, long({1}), pt.ones(2, 2)) end))
  end)
end)

describe("gradients of indexing (float64 finite differences)", function()
  it("slicing and masks", function()
    gradcheck(function(x) return x[{2, {1, 3}}] end, {randn64(3, 4)})
    gradcheck(function(x) return x[{{}, -1}] end, {randn64(3, 4)})
    gradcheck(function(x) return x[{{2, -1}, {2}}] end, {randn64(3, 4)})
    gradcheck(function(x) return x[2] end, {randn64(3, 4)})
    local m = pt.tensor({{true, false, true, false}, {false, true, true, false}, {true, true, false, false}})
    gradcheck(function(x) return x[m] end, {randn64(3, 4)})
    gradcheck(function(x) return x:masked_select(pt.tensor({true, false, true, true})) end, {randn64(3, 4)})
    gradcheck(function(x) return x:masked_select(m) end, {randn64(4)}) -- input broadcast by the mask
    gradcheck(function(x) return x[long({3, 1, 3})] end, {randn64(3, 2)})
  end)

  it("gather, scatter, scatter_add, index_select", function()
    local idx = long({{1, 3, 3}, {2, 2, 1}})
    gradcheck(function(x) return x:gather(2, idx) end, {randn64(2, 3)})
    gradcheck(function(x) return x:gather(1, long({{2, 1, 2}})) end, {randn64(2, 3)})
    local uniq = long({{3, 1}, {2, 3}})
    gradcheck(function(x, s) return x:scatter(2, uniq, s) end, {randn64(2, 3), randn64(2, 2)})
    gradcheck(function(x, s) return x:scatter(2, uniq, s) end, {randn64(2, 3), randn64(3, 3)}) -- src larger
    gradcheck(function(x) return x:scatter(2, uniq, 0.5) end, {randn64(2, 3)})
    gradcheck(function(x, s) return x:scatter_add(2, idx, s) end, {randn64(2, 3), randn64(2, 3)})
    gradcheck(function(x) return x:index_select(2, long({3, 1, 3})) end, {randn64(2, 3)})
  end)
end)

-- {first, last, step}: expected values from PyTorch 1.13 (t[a-1:b:step]) on the same tensors
describe("step ranges t[{{first, last, step}}]", function()
  it("read every step-th element as a view (inclusive last, negative from the end)", function()
    local t = range(5, 6)
    assert.are.same({2, 14, 26}, t[{{1, 5, 2}, 3}]:tolist()) -- torch t[0:5:2, 2]
    assert.are.same({{7, 9, 11}, {25, 27, 29}}, t[{{2, -1, 3}, {2, -1, 2}}]:tolist()) -- t[1:6:3, 1:6:2]
    assert.are.same({{12, 13, 14, 15, 16, 17}, {24, 25, 26, 27, 28, 29}}, t[{{-3, -1, 2}}]:tolist())
    assert.are.same({5, 0}, t[{{}, {6, 5, 2}}]:size()) -- empty, as t[:, 5:5:2]
    assert.are.same({{0, 1, 2, 3, 4, 5}}, t[{{1, 2, 2}}]:tolist()) -- last not reached by the step
    assert.are.same({{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}, t[{{1, 2, 1}}]:tolist())
    local v = t[{{1, 5, 2}}]
    assert.is_true(v:is_same_storage(t))
    assert.are.same({12, 1}, v:stride()) -- torch: (12, 1)
    t[{{1, 5, 2}, 1}] = 100
    assert.are.same({100, 100, 100}, v[{{}, 1}]:tolist())
  end)

  it("assignment fills or copies through the strided view", function()
    local t = range(5, 6)
    t[{{1, 5, 2}}] = -1
    assert.are.same({-1, 6, -1, 18, -1}, t[{{}, 1}]:tolist()) -- torch u[0:5:2] = -1
    local u = range(5, 6)
    u[{{}, {1, 6, 4}}] = pt.tensor({{100, 200}})
    assert.are.same({100, 1, 2, 3, 200, 5}, u[1]:tolist())
    assert.are.same({100, 25, 26, 27, 200, 29}, u[5]:tolist())
    assert.are.equal("index: value of shape {3} cannot be broadcast to the slice of shape {5,2}",
                     errmsg(function() u[{{}, {1, 6, 4}}] = pt.ones(3) end))
  end)

  it("reports bad steps and out-of-range step ranges", function()
    local t = range(5, 6)
    assert.are.equal("index: a range step must be at least 1, got -1 (position 1; negative steps are not "
                     .. "supported, use flip)", errmsg(function() return t[{{5, 1, -1}}] end))
    assert.are.equal("index: a range step must be at least 1, got 0 (position 2; negative steps are not "
                     .. "supported, use flip)", errmsg(function() return t[{{}, {1, 6, 0}}] end))
    assert.are.equal("index: a range step must be an integer, got 1.5 (position 1)",
                     errmsg(function() return t[{{1, 5, 1.5}}] end))
    assert.are.equal("index: a range step must be an integer, got string (position 1)",
                     errmsg(function() return t[{{1, 5, "2"}}] end))
    assert.are.equal("index: range {1,7,2} out of range for dimension 2 of size 6",
                     errmsg(function() return t[{{}, {1, 7, 2}}] end))
    assert.are.equal("index: range {4,2,2} out of range for dimension 1 of size 5",
                     errmsg(function() return t[{{4, 2, 2}}] end))
    assert.are.equal("index: a range step must be at least 1, got -2 (position 1; negative steps are not "
                     .. "supported, use flip)", errmsg(function() t[{{1, 5, -2}}] = 0 end))
  end)

  it("gradients flow through step ranges, reading and assigning (float64 finite differences)", function()
    gradcheck(function(x) return x[{{1, 6, 2}, {2, -1, 2}}] end, {randn64(6, 5)})
    gradcheck(function(x) return x[{{-4, -1, 3}}] * 2 end, {randn64(6, 5)})
    gradcheck(function(x) return x:t()[{{1, 5, 4}, 2}] end, {randn64(6, 5)})
    gradcheck(function(x)
      local c = x * 1
      c[{{1, 6, 2}}] = x[{{2, 6, 2}}] * 3
      return c
    end, {randn64(6, 5)})
    gradcheck(function(x, v)
      local c = x * 1
      c[{{}, {1, 5, 2}}] = v
      return c
    end, {randn64(6, 5), randn64(6, 3)})
    gradcheck(function(x)
      local c = x * 1
      c[{{2, 6, 2}, 1}] = 0.5
      return c
    end, {randn64(6, 5)})
  end)
end)
