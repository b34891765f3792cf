-- Advanced indexing (tensor entries in t[{...}]), index_put_, put_, masked_scatter_, as_strided and
-- the in-place geometry ops. Numbers marked "torch 1.13" were computed with /usr/bin/python3
-- (torch 1.13) on the same inputs (0-based positions there, 1-based here).
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_error = support.assert_error
local close = support.assert_close_with(1e-12)

local function long(v) return pt.tensor(v, {dtype = "int64"}) end
local function f64(v, opts)
  opts = opts or {}
  opts.dtype = "float64"
  return pt.tensor(v, opts)
end
local function randn64(...) return pt.randn({...}, {dtype = "float64"}) end
-- x[i][j][k] = 42 i + 7 j + k (0-based), as torch.arange(210).view(5, 6, 7)
local function cube() return pt.arange(5 * 6 * 7, {dtype = "int64"}):view(5, 6, 7) end

describe("reading with tensor entries", function()
  local x = cube()
  local i, j = long({2, 3}), long({1, 4})

  it("places the broadcast dims as PyTorch: in place when adjacent, first when separated", function()
    -- values and shapes: torch 1.13
    assert.are.same({{42, 49, 56, 63, 70, 77}, {87, 94, 101, 108, 115, 122}}, x[{i, ":", j}]:tolist())
    assert.are.same({{7, 17}, {49, 59}, {91, 101}, {133, 143}, {175, 185}}, x[{":", i, j}]:tolist())
    -- a number selects first (a view), so i stays where it is: torch's x[0, :, i] is {6, 2}
    assert.are.same({{1, 2}, {8, 9}, {15, 16}, {22, 23}, {29, 30}, {36, 37}}, x[{1, ":", i}]:tolist())
    assert.are.same({{49, 56}, {94, 101}}, x[{i, {2, 3}, j}]:tolist())
    assert.are.same({5, 2, 7}, x[{":", i}]:size())
    assert.are.same({2, 7}, x[{i, j}]:size())
    assert.are.same({2}, x[{i, 1, j}]:size())
    assert.are.same({5, 6, 2}, x[{"...", i}]:size())
    -- a range with a step between two index tensors: separated, so first (torch's x[i, 1:4:2, j])
    assert.are.same({{49, 63}, {94, 108}}, x[{i, {2, 4, 2}, j}]:tolist())
    assert.are.same({{{49, 50, 51}, {56, 57, 58}}, {{133, 134, 135}, {140, 141, 142}}},
                    x[{{2, 4, 2}, i, {1, 3}}]:tolist())
  end)

  it("broadcasts index tensors of any shape, negative positions counting from the end", function()
    local ii = long({{1, 5}, {3, 2}})
    -- torch 1.13: x[ii, :, j] with ii = [[0, 4], [2, 1]], j = [0, 3]
    assert.are.same({{{0, 7, 14, 21, 28, 35}, {171, 178, 185, 192, 199, 206}},
                     {{84, 91, 98, 105, 112, 119}, {45, 52, 59, 66, 73, 80}}}, x[{ii, ":", j}]:tolist())
    assert.are.same({2, 2, 6, 7}, x[{ii}]:size())
    assert.are.same({5, 2, 2, 7}, x[{":", ii}]:size())
    assert.are.same({{{0, 1}, {28, 29}}, {{14, 15}, {7, 8}}}, x[{1, ii, {1, 2}}]:tolist())
    assert.are.same({{203, 204, 205, 206, 207, 208, 209}, {35, 36, 37, 38, 39, 40, 41}},
                    x[{long({-1, 1}), -1}]:tolist()) -- torch 1.13
    assert.are.same({5, 6, 1}, x[{"...", long({-1})}]:size())
    assert.are.same({6, 13, 20}, x[{1, {1, 3}, pt.tensor({-1}, {dtype = "int32"})}]:view(3):tolist())
    -- a 0-d index tensor indexes too (a copy; its dim goes, as torch's)
    local s = x[{long(2)}]
    assert.are.same({6, 7}, s:size())
    assert.is_false(s:is_same_storage(x))
    assert.are.same({2}, x[{i, long(1), i}]:size())
    assert.are.same({5, 2}, x[{":", long(1), i}]:size())
    assert.are.equal(0, #x[{long(1), long(1), long(1)}]:size())
    -- an empty index gives an empty result
    assert.are.same({0, 6, 7}, x[{long({})}]:size())
  end)

  it("takes bool masks as their true positions, k dims for a k-D mask", function()
    local m = pt.tensor({true, false, true, false, true, true})
    assert.are.same({5, 4, 7}, x[{":", m}]:size())
    -- torch 1.13: x[:2, mm, 0] and x[1, mm, [0, 1, 2, 3]]
    assert.are.same({{0, 14, 28, 35}, {42, 56, 70, 77}}, x[{{1, 2}, m, 1}]:tolist())
    assert.are.same({42, 57, 72, 80}, x[{2, m, long({1, 2, 3, 4})}]:tolist())
    local m2 = pt.tensor({{true, false, true, false, false, true}, {false, false, false, false, false, false},
                          {true, true, true, true, true, true}, {false, false, false, false, false, true},
                          {false, false, false, false, false, false}})
    assert.are.same({10, 7}, x[{m2}]:size())
    -- torch 1.13: x[m2, j10], the mask's true positions broadcast with a 10-entry index
    assert.are.same({0, 17, 35, 87, 91, 101, 105, 115, 119, 164},
                    x[{m2, long({1, 4, 1, 4, 1, 4, 1, 4, 1, 4})}]:tolist())
    -- a 0-d mask adds a dim of size 1 (true) or 0 (false)
    assert.are.same({1, 5, 6, 7}, x[{pt.tensor(true)}]:size())
    assert.are.same({0, 5, 6, 7}, x[{pt.tensor(false)}]:size())
    assert.are.same({5, 2, 7}, x[{":", pt.tensor(true), i}]:size())
    assert.are.same({{0, 2, 4, 5}}, pt.arange(6):view(1, 6)[{":", m:to("uint8")}]:tolist())
  end)

  it("reads non-contiguous and expanded tensors", function()
    local t = pt.arange(12):view(3, 4):t() -- {4, 3}
    assert.are.same({{1, 5, 9}, {3, 7, 11}, {1, 5, 9}}, t[{long({2, 4, 2})}]:tolist())
    assert.are.same({6, 8}, t[{long({3, 1}), long({2, 3})}]:tolist())
    local e = pt.tensor({1, 2, 3}):expand(4, 3)
    assert.are.same({{3, 1}, {3, 1}}, e[{long({1, 4}), ":"}][{":", long({3, 1})}]:tolist())
  end)

  it("a bare int64 key: rows for a 1-D positive one, t[{key}] otherwise", function()
    local t = pt.arange(6):view(3, 2)
    assert.are.same({{4, 5}, {0, 1}}, t[long({3, 1})]:tolist())
    assert.are.same({{4, 5}, {0, 1}}, t[long({-1, 1})]:tolist())
    assert.are.same({{{0, 1}, {4, 5}}, {{2, 3}, {2, 3}}}, t[long({{1, 3}, {2, 2}})]:tolist())
    assert.are.same({2, 3}, t[long(2)]:tolist())
    assert.are.same({2, 6, 7}, x[long({1, -1})]:size())
  end)

  it("reports bad entries with the dim, the index and the size", function()
    assert_error("index: index 6 out of range for dimension 1 of size 5", function() return x[{long({6})}] end)
    assert_error("index: index -7 out of range for dimension 2 of size 6",
                 function() return x[{":", long({-7})}] end)
    -- the dim is the tensor's, after numbers have removed some
    assert_error("index: index 8 out of range for dimension 3 of size 7",
                 function() return x[{1, 1, long({8})}] end)
    assert_error("index: index 0 out of range for dimension 1 of size 3",
                 function() return pt.zeros(3, 2)[long({{0}})] end)
    assert_error("index: shape mismatch: indexing tensors could not be broadcast together with shapes {3}, {2}",
                 function() return x[{long({1, 2, 3}), long({1, 2})}] end)
    assert_error("index: mask of shape {2} does not match the shape {5} of the dimensions it indexes (from dimension 1)",
                 function() return x[{pt.tensor({true, false})}] end)
    assert_error("index: mask of shape {2,6} does not match the shape {6,7} of the dimensions it indexes (from dimension 2)",
                 function() return x[{1, pt.ones(2, 6, {dtype = "bool"})}] end)
    assert_error("index: too many indices for a tensor of 3 dimensions (got 4)",
                 function() return x[{pt.ones(5, 6, {dtype = "bool"}), 1, i}] end)
    assert_error("index: a tensor index must be a bool mask or int64 positions, got float32 (position 2)",
                 function() return x[{1, pt.zeros(2)}] end)
    assert_error("index: invalid index entry of type userdata at position 1",
                 function() return x[{io.stdout}] end)
    local many = {}
    for k = 1, 17 do many[k] = pt.tensor(true) end
    assert_error("index: too many tensor entries (at most 16)", function() return x[many] end)
    assert_error("index: the result would have 9 dimensions (at most 8)",
                 function() return x[{pt.ones(1, 1, 1, 1, 1, 1, 1, {dtype = "int64"}), ":", ":"}] end)
  end)

  it("passes gradients back, repeated positions accumulating", function()
    local x0 = f64({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}) / 10 - 0.3
    local a = x0:clone()
    a.requires_grad = true
    local out = a[{long({1, 3, 1}), long({2, 2, 4})}]
    assert.are.equal("ViewBackward", out.grad_fn)
    local loss = (out * f64({1, 2, 3})):sum()
    loss:backward()
    assert.are.same({{0, 1, 0, 3}, {0, 0, 0, 0}, {0, 2, 0, 0}}, a.grad:tolist()) -- torch 1.13
    gradcheck(function(t) return t[{long({3, 1, 3}), ":", long({2, 1, 2})}] end, {randn64(3, 2, 4)})
    gradcheck(function(t) return t[{":", pt.tensor({true, false, true})}] end, {randn64(2, 3, 2)})
    gradcheck(function(t) return t:t()[{long({{1, 2}, {2, 2}}), {1, 3, 2}}] end, {randn64(3, 2)})
    gradcheck(function(t) return t[long({-1, 1, -1})] end, {randn64(3, 2)})
  end)

  it("gives second derivatives under create_graph", function()
    local a = (f64({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}) / 10 - 0.3):requires_grad_()
    local loss = (a[{long({1, 3, 1})}] ^ 3):sum()
    local g = pt.autograd.grad(loss, a, {create_graph = true})
    local h = pt.autograd.grad((g * g):sum(), a)
    -- torch 1.13
    close(g, {{0.54, 0.24, 0.06, 0}, {0, 0, 0, 0}, {0.75, 1.08, 1.47, 1.92}})
    close(h, {{-3.888, -1.152, -0.144, 0}, {0, 0, 0, 0}, {4.5, 7.776, 12.348, 18.432}})
  end)
end)

describe("writing with tensor entries and index_put_", function()
  it("t[{...}] = value writes numbers and broadcast tensors, the last of repeated positions winning", function()
    local t = pt.zeros(3, 4)
    t[{long({1, 3}), long({2, 4})}] = 5
    t[{2, long({1, -1})}] = pt.tensor({7, 8})
    assert.are.same({{0, 5, 0, 0}, {7, 0, 0, 8}, {0, 0, 0, 5}}, t:tolist())
    t[{long({3, 1, 3})}] = pt.tensor({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}})
    assert.are.same({{5, 6, 7, 8}, {7, 0, 0, 8}, {9, 10, 11, 12}}, t:tolist())
    -- a value of another dtype is converted, as every assignment does
    t[{":", long({1})}] = pt.tensor({{-1}, {-2}, {-3}}, {dtype = "int64"})
    assert.are.same({-1, -2, -3}, t:select(2, 1):tolist())
    local u = pt.zeros(2, 3, {dtype = "int64"})
    u[{pt.tensor({{true, false, true}, {false, true, false}})}] = long({9007199254740993, 2, 3})
    assert.are.same({{9007199254740993, 0, 2}, {0, 3, 0}}, u:tolist())
    u[long({{2}})] = 4
    assert.are.same({{9007199254740993, 0, 2}, {4, 4, 4}}, u:tolist())
    assert_error("index: shape mismatch: value tensor of shape {3} cannot be broadcast to indexing result of shape {2,4}",
                 function() t[{long({1, 2})}] = pt.tensor({1, 2, 3}) end)
  end)

  it("writes land in non-contiguous views and bump the version", function()
    local base = pt.zeros(4, 5)
    local v = base:t() -- {5, 4}
    v[{long({1, 3}), 2}] = pt.tensor({7, 8})
    assert.are.equal(7, base[2][1])
    assert.are.equal(8, base[2][3])
    local w = base[{":", {1, 5, 2}}] -- a step
    w[{long({4}), long({3})}] = -1
    assert.are.equal(-1, base[4][5])
    -- a tensor saved for a backward and then written through tensor entries is noticed
    local x = randn64(3)
    x.requires_grad = true
    local y = x * 1
    local z = y * y
    y[{long({2})}] = 0
    local msg = support.errmsg(function() z:sum():backward() end)
    assert.truthy(msg:find("modified by an inplace operation", 1, true))
  end)

  it("index_put_ and index_put accumulate or overwrite as torch", function()
    local z = pt.zeros(3, 4)
    local i, j = long({1, 3, 1}), long({2, 2, 2})
    -- torch 1.13
    assert.are.same({{0, 4, 0, 0}, {0, 0, 0, 0}, {0, 2, 0, 0}}, z:index_put({i, j}, pt.tensor({1, 2, 3}), true):tolist())
    assert.are.same({{2, 4, 6, 8}, {0, 0, 0, 0}, {1, 2, 3, 4}},
                    z:index_put({i}, pt.tensor({1, 2, 3, 4}), {accumulate = true}):tolist())
    assert.are.same({{0, 3, 0, 0}, {0, 0, 0, 0}, {0, 2, 0, 0}}, z:index_put({i, j}, pt.tensor({1, 2, 3})):tolist())
    assert.are.same({{0, 3, 0, 3}, {0, 0, 0, 0}, {0, 3, 0, 3}},
                    pt.index_put(z, {long({{1}, {3}}), long({2, 2, 4})}, pt.tensor({1, 2, 3}), true):tolist())
    assert.are.same({{2, 2, 2, 2}, {0, 0, 0, 0}, {0, 0, 0, 0}}, z:index_put({long({1, 1})}, pt.tensor(1), true):tolist())
    assert.are.same({0, 0, 0, 0}, z[1]:tolist()) -- out of place
    -- a mask entry and ":" (a whole dim) in the list
    local x3 = pt.zeros(2, 3, 4, {dtype = "float64"})
    local mk = pt.tensor({{true, false, true}, {false, true, false}})
    x3:index_put_({mk, long({2, 2, 4})}, f64({1, 2, 3}), true)
    assert.are.same({{{0, 1, 0, 0}, {0, 0, 0, 0}, {0, 2, 0, 0}}, {{0, 0, 0, 0}, {0, 0, 0, 3}, {0, 0, 0, 0}}},
                    x3:tolist()) -- torch 1.13
    local r = pt.zeros(2, 3)
    assert.are.equal(r, r:index_put_({":", long({3, 1})}, 5))
    assert.are.same({{5, 0, 5}, {5, 0, 5}}, r:tolist())
    -- integers add exactly (beyond 2^53), bools stay true once written
    local iz = pt.zeros(3, {dtype = "int64"})
    iz:index_put_({long({1, 1, 2})}, long({9007199254740993, 1, 2}), true)
    assert.are.same({9007199254740994, 2, 0}, iz:tolist())
    local bz = pt.zeros(3, {dtype = "bool"})
    bz:index_put_({long({1, 1})}, pt.tensor({true, false}), true)
    assert.are.same({true, false, false}, bz:tolist())
    -- a 0-d mask: everything (true) or nothing (false)
    r[{pt.tensor(false)}] = 7
    assert.are.same({{5, 0, 5}, {5, 0, 5}}, r:tolist())
    r[{pt.tensor(true)}] = 1
    assert.are.same({{1, 1, 1}, {1, 1, 1}}, r:tolist())
  end)

  it("passes gradients to t and to the values", function()
    local i = long({1, 3, 1})
    gradcheck(function(t, v) return t:index_put({i}, v, true) end, {randn64(3, 4), randn64(4)})
    gradcheck(function(t, v) return t:index_put({i, long({2, 2, 4})}, v, true) end, {randn64(3, 4), randn64(3)})
    -- overwriting: only the value written last gets a gradient (a finite difference agrees)
    gradcheck(function(t, v) return t:index_put({i, long({2, 2, 2})}, v) end, {randn64(3, 4), randn64(3)})
    gradcheck(function(t, v) return t:index_put({":", pt.tensor({true, false, true, false})}, v) end,
              {randn64(3, 4), randn64(1, 2)})
    -- in place: y = t * 1 then written, directly and through a (non-contiguous) view
    gradcheck(function(t, v)
      local y = t * 1
      y[{long({2, 3}), long({1, 1})}] = v
      return y
    end, {randn64(3, 2), randn64(2)})
    gradcheck(function(t, v)
      local y = t * 2
      local view = y:t()
      view[{long({1, 2}), 3}] = v
      return y
    end, {randn64(3, 2), randn64(1)})
    gradcheck(function(t, v)
      local y = t * 1
      y:index_put_({long({2, 2})}, v, true)
      return y
    end, {randn64(3, 2), randn64(2)})
    -- values that are a view of the written tensor are read before the write (torch refuses the
    -- overlap: "some elements of the input tensor and the written-to tensor refer to a single
    -- memory location")
    local o = pt.arange(6):view(3, 2)
    o[{long({1, 2})}] = o:narrow(1, 2, 2)
    assert.are.same({{2, 3}, {4, 5}, {4, 5}}, o:tolist())
    gradcheck(function(t)
      local y = t * 1
      y[{long({1, 2})}] = y:narrow(1, 2, 2)
      return y
    end, {randn64(3, 2)})
    -- a value that requires grad into a tensor that does not
    local v = f64({1, 2}, {requires_grad = true})
    local buf = pt.zeros(3, {dtype = "float64"})
    buf[{long({3, 1})}] = v * 2
    assert.are.equal("IndexPutBackward", buf.grad_fn)
    buf:sum():backward()
    assert.are.same({2, 2}, v.grad:tolist())
    local x = f64({{1, 2}, {3, 4}}, {requires_grad = true})
    local y = x * 1
    y[{long({1, 2}), long({2, 1})}] = 0
    y:sum():backward()
    assert.are.same({{1, 0}, {0, 1}}, x.grad:tolist())
  end)

  it("gives second derivatives under create_graph", function()
    local x0 = f64({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}) / 10 - 0.3
    local w = f64({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}) / 7
    local x, v = x0:clone():requires_grad_(), f64({0.5, -1, 2}, {requires_grad = true})
    local out = x:index_put({long({1, 3, 1}), long({2, 2, 2})}, v, true)
    local g = pt.autograd.grad((out ^ 2 * w):sum(), {x, v}, {create_graph = true})
    local h = pt.autograd.grad((g[1] ^ 2):sum() + (g[2] ^ 2):sum(), {x, v})
    -- torch 1.13
    close(g[1], {{0, 0.657142857142857, -0.05714285714285713, 0},
                 {0.11428571428571432, 0.28571428571428575, 0.5142857142857142, 0.7999999999999999},
                 {1.1428571428571428, -1.0285714285714285, 2.0, 2.5142857142857142}})
    close(g[2], {0.657142857142857, -1.0285714285714285, 0.657142857142857})
    close(h[1], {{0, 1.1265306122448977, -0.06530612244897957, 0},
                 {0.26122448979591845, 0.816326530612245, 1.7632653061224488, 3.1999999999999997},
                 {5.224489795918367, -10.579591836734693, 11.428571428571429, 15.80408163265306}})
    close(h[2], {1.1265306122448977, -10.579591836734693, 1.1265306122448977})
    x, v = x0:clone():requires_grad_(), f64({0.5, -1, 2, 3}, {requires_grad = true})
    out = x:index_put({long({3, 1})}, v)
    g = pt.autograd.grad((out ^ 2 * w):sum(), {x, v}, {create_graph = true})
    h = pt.autograd.grad((g[1] ^ 2):sum() + (g[2] ^ 2):sum(), {x, v})
    close(g[2], {1.1428571428571428, -2.857142857142857, 6.857142857142858, 12.0})
    close(h[1], {{0, 0, 0, 0}, {0.26122448979591845, 0.816326530612245, 1.7632653061224488, 3.2}, {0, 0, 0, 0}})
    close(h[2], {5.224489795918367, -16.326530612244902, 47.02040816326531, 96.0})
  end)

  it("reports bad arguments", function()
    local z = pt.zeros(3, 4)
    local i = long({1, 3, 1})
    assert_error("index_put_: values must have the tensor's dtype (float32), got float64",
                 function() z:index_put_({i}, f64({1, 2, 3, 4})) end)
    assert_error("index_put_: shape mismatch: value tensor of shape {2} cannot be broadcast to indexing result of shape {3,4}",
                 function() z:index_put_({i}, pt.tensor({1, 2})) end)
    assert_error("index_put_: too many indices for a tensor of 2 dimensions (got 3)",
                 function() z:index_put_({i, i, i}, pt.tensor(1)) end)
    assert_error("index_put_: index 4 out of range for dimension 1 of size 3",
                 function() z:index_put_({long({4})}, pt.tensor(1)) end)
    assert_error("index_put_: a tensor index must be a bool mask or int64 positions, got float32",
                 function() z:index_put_({pt.zeros(1)}, pt.tensor(1)) end)
    assert_error("index_put: indices must be a list of tensors, got number", function() z:index_put(1, 2) end)
    assert_error('index_put_: indices[2] must be a tensor or ":" (a whole dimension), got number',
                 function() z:index_put_({i, 2}, 1) end)
    assert_error("index_put_: values must be a tensor or a number, got string", function() z:index_put_({i}, "x") end)
    assert_error("index_put_: value 300 cannot be converted to uint8 without overflow",
                 function() pt.zeros(2, {dtype = "uint8"}):index_put_({long({1})}, 300) end)
    assert_error("index_put_: accumulate must be a boolean, got number", function() z:index_put_({i}, 1, 1) end)
    assert_error("index_put_: accumulate must be a boolean, got string",
                 function() z:index_put_({i}, 1, {accumulate = "yes"}) end)
    assert_error("index_put_: unknown option 'acc' (options: accumulate)", function() z:index_put_({i}, 1, {acc = true}) end)
    assert_error("index_put_: more than one element of the written-to tensor refers to a single memory location (an expanded tensor): clone() it first",
                 function() pt.zeros(4):expand(3, 4):index_put_({i}, pt.tensor(1)) end)
    assert_error("index: more than one element of the written-to tensor refers to a single memory location (an expanded tensor): clone() it first",
                 function() pt.zeros(4):expand(3, 4)[{long({1})}] = 1 end)
    local x = randn64(3)
    x.requires_grad = true
    assert_error("index_put_: a leaf tensor that requires grad is used in an in-place operation",
                 function() x:index_put_({long({1})}, f64({1})) end)
    assert_error("index: in-place operation on a tensor that requires grad (use pt.no_grad, detach() or the out-of-place form)",
                 function() x[{long({1})}] = 0 end)
    assert_error("index_put_: a view of a leaf tensor that requires grad is used in an in-place operation",
                 function() x:view(3):index_put_({long({1})}, f64({1})) end)
    pt.no_grad(function() x[{long({2})}] = 7 end)
    assert.are.equal(7, x[2])
  end)
end)

describe("put_ and masked_scatter_", function()
  it("put_ writes at flat positions of t as if contiguous", function()
    local z = pt.arange(6, {dtype = "float64"}):view(2, 3)
    -- torch 1.13
    assert.are.same({{2, 1, 2}, {3, 4, 13}}, z:put(long({6, 1, 6, -1}), f64({1, 2, 3, 4}), true):tolist())
    assert.are.same({{2, 1, 2}, {3, 4, 4}}, pt.put(z, long({6, 1, 6, -1}), f64({1, 2, 3, 4})):tolist())
    local t = pt.arange(6):view(3, 2):t() -- non-contiguous: positions follow its row-major order
    t:put_(long({{2, 6}}), pt.tensor({10, 20}, {dtype = "int64"}))
    assert.are.same({{0, 10, 4}, {1, 3, 20}}, t:tolist())
    gradcheck(function(a, s) return a:put(long({6, 1, 6}), s, true) end, {randn64(2, 3), randn64(3)})
    gradcheck(function(a, s) return a:put(long({6, 1, 6}), s) end, {randn64(2, 3), randn64(3)})
    gradcheck(function(a, s)
      local y = a * 1
      y:put_(long({{2, -2}}), s)
      return y
    end, {randn64(2, 3), randn64(2)})
  end)

  it("put_ reports bad arguments", function()
    local z = pt.zeros(2, 3)
    assert_error("put_: index 7 out of range for a tensor of 6 elements", function() z:put_(long({7}), pt.tensor({1})) end)
    assert_error("put_: index -7 out of range for a tensor of 6 elements", function() z:put_(long({-7}), pt.tensor({1})) end)
    assert_error("put_: source and index must have the same number of elements, got 1 and 2",
                 function() z:put_(long({1, 2}), pt.tensor({1})) end)
    assert_error("put_: source must have the tensor's dtype (float32), got float64",
                 function() z:put_(long({1}), f64({1})) end)
    assert_error("put_: index must be an int64 tensor, got float32", function() z:put_(pt.tensor({1}), pt.tensor({1})) end)
    assert_error("put: accumulate must be a boolean, got number", function() z:put(long({1}), pt.tensor({1}), 0) end)
  end)

  it("masked_scatter_ writes source's first elements where the mask is true", function()
    local m = pt.tensor({{true, false, true}, {true, true, true}})
    -- torch 1.13: the out-of-place form broadcasts t with the mask
    assert.are.same({{0, 0, 1}, {2, 3, 4}}, pt.zeros(3):masked_scatter(m, pt.arange(10, {dtype = "float32"})):tolist())
    local t = pt.zeros(2, 3)
    assert.are.equal(t, t:masked_scatter_(pt.tensor({false, true, true}), pt.arange(1, 10, {dtype = "float32"})))
    assert.are.same({{0, 1, 2}, {0, 3, 4}}, t:tolist())
    local mm = pt.tensor({{true, false, true}, {false, true, true}})
    -- torch 1.13: gradients of (a:masked_scatter(mm, s) * w):sum(), w = arange(6)
    local a = randn64(2, 3):requires_grad_()
    local s = randn64(7):requires_grad_()
    local loss = (a:masked_scatter(mm, s) * pt.arange(6, {dtype = "float64"}):view(2, 3)):sum()
    loss:backward()
    assert.are.same({{0, 1, 0}, {3, 0, 0}}, a.grad:tolist())
    assert.are.same({0, 2, 4, 5, 0, 0, 0}, s.grad:tolist())
    gradcheck(function(b, src) return b:masked_scatter(mm, src) end, {randn64(2, 3), randn64(5)})
    gradcheck(function(b, src) return b:masked_scatter(pt.tensor({true, false, true}), src) end,
              {randn64(2, 1), randn64(2, 3)})
    gradcheck(function(b, src)
      local y = b * 1
      y:masked_scatter_(mm:to("uint8"), src)
      return y
    end, {randn64(2, 3), randn64(4)})
  end)

  it("masked_scatter_ reports bad arguments", function()
    local z = pt.zeros(3, 4)
    assert_error("masked_scatter_: mask of shape {2,3} cannot be broadcast to the tensor's shape {3,4}",
                 function() z:masked_scatter_(pt.ones(2, 3, {dtype = "bool"}), pt.zeros(12)) end)
    assert_error("masked_scatter_: the mask has 12 true elements but source only 3",
                 function() z:masked_scatter_(pt.ones(4, {dtype = "bool"}), pt.zeros(3)) end)
    assert_error("masked_scatter: mask must be a bool tensor, got float32",
                 function() return z:masked_scatter(pt.ones(4), pt.zeros(12)) end)
    assert_error("masked_scatter: source must have the tensor's dtype (float32), got float64",
                 function() return z:masked_scatter(pt.ones(4, {dtype = "bool"}), pt.zeros(12, {dtype = "float64"})) end)
    assert_error("masked_scatter: shapes {3,4} and {2} cannot be broadcast",
                 function() return z:masked_scatter(pt.ones(2, {dtype = "bool"}), pt.zeros(12)) end)
  end)
end)

describe("as_strided", function()
  local x = pt.arange(12, {dtype = "float32"})

  it("views the storage with the given sizes, strides and 1-based offset", function()
    -- torch 1.13 (storage offsets 0 and 5 there)
    assert.are.same({{0, 1, 2}, {1, 2, 3}, {2, 3, 4}}, x:as_strided({3, 3}, {1, 1}):tolist())
    assert.are.same({{5, 6, 7}, {6, 7, 8}, {7, 8, 9}}, pt.as_strided(x, {3, 3}, {1, 1}, 6):tolist())
    local tail = x:narrow(1, 3, 10)
    assert.are.same({{2, 3}, {3, 4}}, tail:as_strided({2, 2}, {1, 1}):tolist()) -- tail's own offset
    assert.are.same({{0, 1}, {1, 2}}, tail:as_strided({2, 2}, {1, 1}, 1):tolist())
    local v = x:as_strided({2, 2}, {4, 1}, 2)
    assert.is_true(v:is_same_storage(x))
    assert.are.equal(2, v:storage_offset())
    assert.are.same({4, 1}, v:stride())
    v:fill_(-1)
    assert.are.same({0, -1, -1, 3, 4, -1, -1, 7}, x:narrow(1, 1, 8):tolist())
    x:narrow(1, 1, 8):copy_(pt.arange(8, {dtype = "float32"}))
    assert.are.same({0, 3}, x:as_strided({0, 3}, {1, 1}, 13):size())
  end)

  it("reports bad geometries", function()
    assert_error("as_strided: negative strides are not supported, got {-1}", function() return x:as_strided({2}, {-1}) end)
    assert_error("as_strided: sizes must be non-negative, got {-1}", function() return x:as_strided({-1}, {1}) end)
    assert_error("as_strided: got 2 sizes but 1 strides", function() return x:as_strided({2, 2}, {1}) end)
    assert_error("as_strided: storage offset must be at least 1, got 0", function() return x:as_strided({2}, {1}, 0) end)
    assert_error("as_strided: sizes {5}, strides {3} and storage offset 1 reach element 13 of a storage of 12 elements",
                 function() return x:as_strided({5}, {3}) end)
    assert_error("as_strided: size must be a table of integers, got number", function() return x:as_strided(2, {1}) end)
    assert_error("as_strided: stride must be a table of integers, got number", function() return x:as_strided({2}, 1) end)
    assert_error("as_strided: storage_offset must be an integer, got 1.5", function() return x:as_strided({2}, {1}, 1.5) end)
  end)

  it("passes gradients back as torch, overlaps included, with second derivatives", function()
    local a0 = pt.arange(6, {dtype = "float64"}) / 5 - 0.4
    -- torch 1.13
    local a = a0:clone():requires_grad_()
    local wt = pt.arange(9, {dtype = "float64"}):view(3, 3) / 4
    local g = pt.autograd.grad((a:as_strided({3, 3}, {1, 1}) ^ 2 * wt):sum(), a, {create_graph = true})
    close(g, {0, -0.4, 0, 1.2, 1.6, 0})
    close(pt.autograd.grad((g * g):sum(), a), {0, -1.6, 0, 14.4, 12.8, 0})
    -- an expanded input shares each location's gradient between its copies
    a = a0:clone():requires_grad_()
    local loss = (a:expand(2, 6):as_strided({3}, {2}) * f64({1, 2, 3})):sum()
    loss:backward()
    assert.are.same({1, 0, 2, 0, 3, 0}, a.grad:tolist())
    a = a0:clone():requires_grad_()
    loss = (a:view(2, 3):t():as_strided({2, 2}, {1, 3}, 2) * f64({{1, 2}, {3, 4}})):sum()
    loss:backward()
    assert.are.same({0, 1, 3, 0, 2, 4}, a.grad:tolist())
    assert.are.equal("AsStridedBackward", (a * 1):as_strided({2}, {2}).grad_fn)
    -- a view whose base changed in place afterwards is seen through the base's new history
    local x = f64({1, 2, 3, 4}, {requires_grad = true})
    local base = x * 1
    local v = base:as_strided({2}, {2}, 1)
    base:mul_(3)
    assert.are.same({3, 9}, v:tolist())
    local y = v * 1
    y:sum():backward()
    assert.are.same({3, 0, 3, 0}, x.grad:tolist()) -- torch 1.13
    gradcheck(function(t) return t:as_strided({3, 2}, {1, 2}, 2) end, {randn64(7)})
    gradcheck(function(t) return t:t():as_strided({2, 2}, {3, 1}) end, {randn64(2, 3)})
    gradcheck(function(t) return (t * 1):narrow(1, 2, 3):as_strided({2, 2}, {0, 2}) end, {randn64(6)})
  end)
end)

describe("in-place geometry: squeeze_, unsqueeze_, t_, transpose_, swapdims_, swapaxes_", function()
  it("changes t itself and returns it", function()
    local t = pt.zeros(2, 1, 3)
    assert.are.equal(t, t:squeeze_())
    assert.are.same({2, 3}, t:size())
    assert.are.equal(t, t:unsqueeze_(1))
    assert.are.same({1, 2, 3}, t:size())
    t:squeeze_(1):t_()
    assert.are.same({3, 2}, t:size())
    assert.are.same({1, 3}, t:stride())
    assert.is_false(t:is_contiguous())
    local u = pt.arange(24):view(2, 3, 4)
    local alias = u:view(24) -- other views keep their shape
    u:transpose_(1, 3)
    assert.are.same({4, 3, 2}, u:size())
    assert.are.same({24}, alias:size())
    assert.are.equal(13, u[2][1][2])
    assert.are.equal(u, u:swapdims_(1, 2))
    assert.are.same({3, 4, 2}, u:size())
    u:swapaxes_(-1, 1)
    assert.are.same({2, 4, 3}, u:size())
    local z = pt.tensor(1)
    z:unsqueeze_(-1)
    assert.are.same({1}, z:size())
    z:squeeze_()
    assert.are.equal(0, #z:size())
    assert.are.equal(z, z:t_())
    local v1 = pt.zeros(3)
    v1:t_()
    assert.are.same({3}, v1:size())
  end)

  it("continues the history as the view would (torch 1.13's gradient)", function()
    local b = f64({{0, 1, 2}, {3, 4, 5}}, {requires_grad = true})
    local c = b * 2
    c:t_()
    assert.are.equal("TransposeBackward", c.grad_fn)
    local loss = (c * pt.arange(6, {dtype = "float64"}):view(3, 2)):sum()
    loss:backward()
    assert.are.same({{0, 4, 8}, {2, 6, 10}}, b.grad:tolist())
    gradcheck(function(t)
      local y = t * 1
      y:unsqueeze_(2):transpose_(1, 3):squeeze_(2)
      return y * y
    end, {randn64(2, 3)})
    -- second derivatives go through the same view nodes
    local a = f64({1, 2, 3}, {requires_grad = true})
    local y = a * 1
    y:unsqueeze_(1):t_()
    local g = pt.autograd.grad((y ^ 3):sum(), a, {create_graph = true})
    close(pt.autograd.grad(g:sum(), a), {6, 12, 18})
    -- a view of a non-leaf, changed in place, keeps its base
    local base = f64({{1, 2}, {3, 4}}, {requires_grad = true}) * 1
    local row = base[1]
    row:unsqueeze_(1)
    assert.are.same({1, 2}, row:size())
    assert.is_true(row:is_same_storage(base))
  end)

  -- as every in-place op here, retain_grad follows the tensor to its new history (torch 1.13 gives
  -- the old version's {2,3} gradient to a tensor now of shape {3,2})
  it("keeps retain_grad on the tensor", function()
    local a = f64({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true})
    local y = a * 1
    y:retain_grad()
    y:t_()
    local loss = (y * pt.arange(6, {dtype = "float64"}):view(3, 2)):sum()
    loss:backward()
    assert.are.same({{0, 1}, {2, 3}, {4, 5}}, y.grad:tolist())
    assert.are.same({{0, 2, 4}, {1, 3, 5}}, a.grad:tolist()) -- torch 1.13
  end)

  it("refuses a leaf that requires grad (and its views) in grad mode", function()
    local a = randn64(2, 3)
    a.requires_grad = true
    for _, name in ipairs({"t_", "squeeze_"}) do
      assert_error(name .. ": a leaf tensor that requires grad is used in an in-place operation", function() a[name](a) end)
    end
    assert_error("unsqueeze_: a leaf tensor that requires grad is used in an in-place operation", function() a:unsqueeze_(1) end)
    assert_error("transpose_: a leaf tensor that requires grad is used in an in-place operation",
                 function() a:swapaxes_(1, 2) end)
    assert_error("unsqueeze_: a view of a leaf tensor that requires grad is used in an in-place operation",
                 function() a[1]:unsqueeze_(1) end)
    assert.are.same({2, 3}, a:size())
    pt.no_grad(function() a:t_() end)
    assert.are.same({3, 2}, a:size())
    assert.is_true(a.requires_grad)
    assert.is_nil(a.grad_fn)
  end)

  it("reports bad dims", function()
    assert_error("t_: expects a tensor with at most 2 dimensions, got 3 (use transpose_)",
                 function() pt.zeros(2, 3, 4):t_() end)
    assert_error("transpose_: dimension 3 out of range (tensor has 2 dimensions)", function() pt.zeros(2, 3):transpose_(1, 3) end)
    assert_error("unsqueeze_: dimension 4 out of range (the result has 3 dimensions)", function() pt.zeros(2, 3):unsqueeze_(4) end)
    assert_error("squeeze_: dimension -3 out of range (tensor has 2 dimensions)", function() pt.zeros(2, 3):squeeze_(-3) end)
    assert_error("t_: unexpected argument #2 (number)", function() pt.zeros(2, 3):t_(1) end)
  end)
end)

describe("help texts", function()
  it("document every new method and function", function()
    for _, name in ipairs({"index_put_", "index_put", "put_", "put", "masked_scatter_", "masked_scatter",
                           "as_strided", "squeeze_", "unsqueeze_", "t_", "transpose_", "swapdims_", "swapaxes_"}) do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
    end
    for _, name in ipairs({"index_put", "put", "masked_scatter", "as_strided"}) do
      assert.is_string(pt._docs[pt[name]], name)
    end
    assert.truthy(pt._docs[pt.Tensor.__slice]:find("advanced indexing", 1, true))
  end)
end)

describe("index_fill's negative positions (as torch's: -1 is the last)", function()
  it("index_fill and index_fill_ read -k as size + 1 - k; other index ops keep refusing them, as torch", function()
    local t = pt.arange(5)
    assert.are.same({0, 9, 2, 3, 9}, t:index_fill(1, long({-1, 2}), 9):tolist())
    assert.are.same({7, 1, 2, 3, 4}, t:index_fill(1, pt.tensor({-5}, {dtype = "int32"}), 7):tolist())
    local u = pt.zeros(2, 3)
    u:index_fill_(2, long({-1}), 1)
    assert.are.same({{0, 0, 1}, {0, 0, 1}}, u:tolist())
    -- under autograd (the masked_fill_ path): the filled slice gets no gradient
    local v = pt.zeros(3, {requires_grad = true})
    local w = v * 1
    w:index_fill_(1, long({-3}), 5)
    w:sum():backward()
    assert.are.same({5, 0, 0}, w:detach():tolist())
    assert.are.same({0, 1, 1}, v.grad:tolist())
    gradcheck(function(x) return x:index_fill(2, long({-1}), 0) end, {f64({{1, 2, 3}, {4, 5, 6}})})
    assert_error("index_fill: index -6 out of range for dimension 1 of size 5", function() return t:index_fill(1, long({-6}), 9) end)
    assert_error("index_fill: index 0 out of range for dimension 1 of size 5", function() return t:index_fill(1, long({0}), 9) end)
    assert_error("index_fill_: index -4 out of range for dimension 2 of size 3", function() return u:index_fill_(2, long({-4}), 1) end)
    assert_error("index_select: index -1 out of range for dimension 1 of size 5", function() return t:index_select(1, long({-1})) end)
  end)
end)

describe("index_add_ and index_copy_ of a tensor into itself", function()
  -- PyTorch refuses the overlap ("some elements of the input tensor and the written-to tensor
  -- refer to a single memory location"); partrain reads src first, as its scatter_ does, so the
  -- result is the one of t:index_copy_(dim, idx, t:clone())
  local I64 = {dtype = "int64"}
  it("read src before writing", function()
    local t = pt.arange(0, 6, 1, {dtype = "float32"}):view(3, 2)
    t:index_copy_(1, pt.tensor({3, 2, 1}, I64), t)
    assert.are.same({{4, 5}, {2, 3}, {0, 1}}, t:tolist())
    t = pt.arange(0, 6, 1, {dtype = "float32"}):view(3, 2)
    t:index_copy_(1, pt.tensor({2, 3}, I64), t:narrow(1, 1, 2))
    assert.are.same({{0, 1}, {0, 1}, {2, 3}}, t:tolist())
    t = pt.arange(0, 6, 1, {dtype = "float32"}):view(3, 2)
    t:index_add_(1, pt.tensor({2, 3, 1}, I64), t)
    assert.are.same({{4, 6}, {2, 4}, {6, 8}}, t:tolist())
  end)
end)
