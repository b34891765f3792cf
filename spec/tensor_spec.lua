local pt = require "partrain"
local support = require "spec.support"

describe("tensor construction", function()
  it("builds from nested tables with shape and dtype", function()
    local t = pt.tensor({{1, 2}, {3, 4.5}})
    assert.are.same({2, 2}, t:size())
    assert.are.equal("float32", t:dtype())
    assert.are.equal(2, #t)
    assert.are.equal(4.5, t[2][2] or t:tolist()[2][2])
  end)

  it("names dtypes as pt.int64, pt.float32, ... and torch's aliases (a nil there meant the default)", function()
    assert.are.equal("int64", pt.tensor({1, 2}, {dtype = pt.int64}):dtype())
    for name, dt in pairs({float32 = "float32", float64 = "float64", int64 = "int64", int32 = "int32",
                           uint8 = "uint8", bool = "bool", float = "float32", double = "float64",
                           long = "int64", int = "int32", byte = "uint8"}) do
      assert.are.equal(dt, pt[name])
      assert.are.equal(dt, pt.zeros(1, {dtype = pt[name]}):dtype())
    end
  end)

  it("zeros/ones accept varargs or a table", function()
    assert.are.same({2, 3}, pt.zeros(2, 3):size())
    assert.are.same({2, 3}, pt.ones({2, 3}):size())
    assert.are.same({{1, 1}}, pt.ones(1, 2):tolist())
  end)

  it("arange excludes stop and picks int64 for integers", function()
    local a = pt.arange(5)
    assert.are.equal("int64", a:dtype())
    assert.are.same({0, 1, 2, 3, 4}, a:tolist())
    assert.are.same({1, 1.5}, pt.arange(1, 2, 0.5):tolist())
  end)

  it("manual_seed makes rand reproducible", function()
    pt.manual_seed(7)
    local a = pt.rand(4):tolist()
    pt.manual_seed(7)
    assert.are.same(a, pt.rand(4):tolist())
  end)

  it("set_num_threads / get_num_threads: the ops' thread count, same numbers either way", function()
    local before = pt.get_num_threads()
    assert.is_true(before >= 1)
    local a, b = pt.randn(300, 400), pt.randn(400, 200)
    local x = pt.randn(300000)
    local many = {a:mm(b), x:exp(), x:sum()}
    pt.set_num_threads(1)
    assert.are.equal(1, pt.get_num_threads())
    local one = {a:mm(b), x:exp(), x:sum()}
    pt.set_num_threads(1000) -- capped at the pool's size
    assert.are.equal(before, pt.get_num_threads())
    pt.set_num_threads(before)
    -- element-wise ops give the same bits; a product split into row blocks may round differently
    -- from the whole one (OpenBLAS's kernels need not sum a block the same way: with the Haswell
    -- kernels, OPENBLAS_CORETYPE=Haswell, 3e-5 apart here), so only close
    assert.is_true(pt.equal(many[2], one[2]))
    assert.is_true(many[1]:allclose(one[1], {rtol = 1e-5, atol = 1e-4}))
    assert.is_true(math.abs(many[3]:item() - one[3]:item()) <= 1e-3)
    local ok, err = pcall(pt.set_num_threads, 0)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("set_num_threads: expected a positive number of threads, got 0", 1, true))
  end)

  it("sgemm_backend: float32 products on oneDNN where installed, PARTRAIN_SGEMM=openblas keeps OpenBLAS", function()
    local backend = pt.sgemm_backend()
    assert.is_truthy(backend == "onednn" or backend == "openblas")
    -- both libraries give the float64 product's value to float32 rounding, every transpose
    pt.manual_seed(3)
    local a, b = pt.randn(67, 131), pt.randn(131, 45)
    local want = a:double():mm(b:double())
    assert.is_true(a:mm(b):double():allclose(want, {rtol = 1e-5, atol = 1e-4}))
    assert.is_true(a:t():contiguous():t():mm(b:t():contiguous():t()):double():allclose(want, {rtol = 1e-5, atol = 1e-4}))
    local q = support.quote
    local chunk = "local x = pt.ones(64, 128):mm(pt.ones(128, 32)); io.write(pt.sgemm_backend(), ' ', x:max():item())"
    local p = io.popen("PARTRAIN_SGEMM=openblas " .. q(support.exe) .. " -e " .. q(chunk) .. " 2>&1")
    local out = p:read("a")
    p:close()
    assert.are.equal("openblas 128", out)
  end)

  it("randperm is a permutation of 1..n", function()
    local p = pt.randperm(10):tolist()
    table.sort(p)
    for i = 1, 10 do assert.are.equal(i, p[i]) end
  end)

  it("constructors reject unknown options and dtypes, naming the function", function()
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
    end
    local tail = ": unknown option 'requires_gard' (options: dtype, requires_grad)"
    assert.are.equal("randn" .. tail, err(pt.randn, 2, {requires_gard = true}))
    assert.are.equal("zeros" .. tail, err(pt.zeros, {2, 3}, {requires_gard = true}))
    assert.are.equal("tensor" .. tail, err(pt.tensor, {1, 2}, {requires_gard = true}))
    assert.are.equal("ones_like" .. tail, err(pt.ones_like, pt.ones(2), {requires_gard = true}))
    assert.are.equal("arange" .. tail, err(pt.arange, 3, {requires_gard = true}))
    assert.are.equal("full" .. tail, err(pt.full, {2}, 1, {requires_gard = true}))
    assert.are.equal("eye" .. tail, err(pt.eye, 2, {requires_gard = true}))
    assert.are.equal("randint" .. tail, err(pt.randint, 1, 5, {2}, {requires_gard = true}))
    assert.are.equal("ones: unknown dtype 'float16' (expected float32, float64, int64, int32, uint8 or bool)",
      err(pt.ones, 2, {dtype = "float16"}))
    assert.is_true(pt.randn(2, {requires_grad = true, dtype = "float64"}).requires_grad)
  end)

  it("methods refuse options and arguments they do not take, and take PyTorch's that they can", function()
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
    end
    local x = pt.tensor({{1, 5, 3}, {4, 2, 6}})
    -- PyTorch's spellings that partrain takes
    assert.are.same({2.25, 2.25, 2.25}, x:var(1, {correction = 0}):tolist())
    assert.are.same({4.5, 4.5, 4.5}, x:var(1, {correction = 1}):tolist())
    assert.are.same({1, 3}, x:std(1, {keepdim = true}):size())
    assert.are.same({{4, 5, 6}}, x:max(1, {keepdim = true}):tolist())
    assert.are.same({{9, 12}}, x:sum(2, {keepdim = true}):t():tolist())
    assert.are.same({{1, 3, 5}, {2, 4, 6}}, (x:sort({dim = 2})):tolist())
    local v = x:sort({dim = 1, descending = true})
    assert.are.same({{4, 5, 6}, {1, 2, 3}}, v:tolist())
    assert.are.same({{4, 5, 6}}, (x:topk(1, {dim = 1})):tolist())
    -- the rest is an error naming what was not understood
    assert.are.equal("var: unknown option 'unbaised' (options: unbiased, correction, keepdim)",
      err(x.var, x, 1, {unbaised = false}))
    assert.are.equal("var: correction must be a non-negative integer, got -2", err(x.var, x, 1, {correction = -2}))
    assert.are.equal("sort: unknown option 'descendng' (options: dim, descending, stable)",
      err(x.sort, x, {descendng = true}))
    assert.are.equal("topk: unknown option 'larges' (options: dim, largest, sorted)", err(x.topk, x, 1, {larges = false}))
    assert.are.equal("sum: unknown option 'dtyp' (options: keepdim, dtype)", err(x.sum, x, 1, {dtyp = "float64"}))
    assert.are.equal("sum: unexpected argument #4 (number)", err(x.sum, x, 1, false, 5))
    assert.are.equal("add: unknown option 'alph' (options: alpha, out)", err(pt.add, x, 1, {alph = 2}))
    assert.are.equal("add_: unknown option 'out' (options: alpha)", err(x.add_, x:clone(), 1, {out = x}))
    assert.are.equal("div: unknown option 'rounding_mod' (options: out, rounding_mode)",
      err(pt.div, x, 2, {rounding_mod = "floor"}))
    -- torch.div's rounding modes (as t:divide's)
    local q = pt.tensor({-7, 7}, {dtype = "int64"})
    assert.are.same({-3, 3}, pt.div(q, 2, {rounding_mode = "trunc"}):tolist())
    assert.are.same({-4, 3}, q:div(2, {rounding_mode = "floor"}):tolist())
    assert.are.equal("div: unexpected argument #3 (string)", err(pt.div, x, 2, "floor"))
    assert.are.equal("round: unexpected argument #2 (number)", err(x.round, x, 2))
    assert.are.equal("allclose: unknown option 'atl' (options: rtol, atol, equal_nan)", err(x.allclose, x, x, {atl = 1}))
    assert.are.equal("allclose: option 'rtol' must be a number, got string", err(x.allclose, x, x, {rtol = "x"}))
    assert.are.equal("index_add_: unknown option 'alpah' (options: alpha)",
      err(pt.zeros(2).index_add_, pt.zeros(2), 1, pt.tensor({1}, {dtype = "int64"}), pt.ones(1), {alpah = 3}))
    -- torch's alpha: source scaled first (torch: zeros(2).index_add_(0, [0], ones(1), alpha=3) -> [3, 0])
    assert.are.same({3, 0}, pt.zeros(2):index_add_(1, pt.tensor({1}, {dtype = "int64"}), pt.ones(1), {alpha = 3}):tolist())
    assert.are.equal("index_add_: alpha must be an integer for int64 tensors, got 0.5",
      err(pt.zeros(2, {dtype = "int64"}).index_add_, pt.zeros(2, {dtype = "int64"}), 1, pt.tensor({1}, {dtype = "int64"}),
        pt.ones(1, {dtype = "int64"}), {alpha = 0.5}))
    assert.are.equal("scatter: unexpected argument #5 (table)",
      err(pt.zeros(3).scatter, pt.zeros(3), 1, pt.tensor({1}, {dtype = "int64"}), pt.ones(1), {reduce = "add"}))
  end)

  it("reads int64 elements back exactly, beyond 2^53", function()
    local big = pt.tensor({9007199254740993, math.maxinteger, math.mininteger}, {dtype = "int64"})
    assert.are.same({9007199254740993, math.maxinteger, math.mininteger}, big:tolist())
    assert.are.equal(9007199254740993, big[1])
    assert.are.equal(math.maxinteger, big:narrow(1, 2, 1):item())
    assert.are.equal(math.mininteger, big[{3}])
    assert.are.equal("integer", math.type(big[1]))
  end)

  it("refuses values an integer dtype cannot hold, as PyTorch (it wrapped or gave 0)", function()
    local function msg(f, ...)
      local ok, err = pcall(f, ...)
      assert.is_false(ok)
      return (tostring(err):gsub("^[^\n]-:%d+: ", ""))
    end
    local I32, U8, I64 = {dtype = "int32"}, {dtype = "uint8"}, {dtype = "int64"}
    assert.are.equal("tensor: value 3000000000 cannot be converted to int32 without overflow", msg(pt.tensor, {1, 3e9}, I32))
    assert.are.equal("tensor: value 3000000000 cannot be converted to int32 without overflow", msg(pt.tensor, {3000000000}, I32))
    assert.are.equal("tensor: value 2147483647.5 cannot be converted to int32 without overflow", msg(pt.tensor, {2147483647.5}, I32))
    assert.are.equal("tensor: value 300 cannot be converted to uint8 without overflow", msg(pt.tensor, {{1}, {300}}, U8))
    assert.are.equal("tensor: value -256 cannot be converted to uint8 without overflow", msg(pt.tensor, {-256}, U8))
    assert.are.equal("tensor: value 1e+19 cannot be converted to int64 without overflow", msg(pt.tensor, {1e19}, I64))
    assert.are.equal("tensor: value nan cannot be converted to int32 without overflow", msg(pt.tensor, {0 / 0}, I32))
    assert.are.equal("tensor: value inf cannot be converted to int64 without overflow", msg(pt.tensor, {math.huge}, I64))
    assert.are.equal("full: value 3000000000 cannot be converted to int32 without overflow", msg(pt.full, {2}, 3e9, I32))
    assert.are.equal("fill_: value -1e+20 cannot be converted to int64 without overflow", msg(pt.zeros(2, I64).fill_, pt.zeros(2, I64), -1e20))
    -- what fits: the limits, uint8's wrap from -255..-1 (as torch), floats truncated, every int64
    assert.are.same({2147483647, -2147483648}, pt.tensor({2147483647, -2147483648}, I32):tolist())
    assert.are.same({255, 1, 0}, pt.tensor({-1, -255, 0}, U8):tolist())
    assert.are.same({1, -1}, pt.tensor({1.5, -1.5}, I32):tolist())
    assert.are.same({math.maxinteger, math.maxinteger}, pt.full({2}, math.maxinteger, I64):tolist())
    assert.are.same({math.mininteger}, pt.full({1}, math.mininteger, I64):tolist())
    assert.are.same({7, 7}, pt.zeros(2, I32):fill_(7):tolist())
    assert.are.same({9007199254740993, math.mininteger}, {pt.zeros(1, I64):fill_(9007199254740993)[1],
      pt.zeros(1, I64):fill_(math.mininteger)[1]}) -- beyond 2^53: exact
    -- every other way a number is written into a tensor (review)
    local u = pt.zeros(4, U8)
    local idx = pt.tensor({1}, I64)
    assert.are.equal("index: value 300 cannot be converted to uint8 without overflow", msg(function() u[{{1, 2}}] = 300 end))
    assert.are.equal("index: value 300 cannot be converted to uint8 without overflow", msg(function() u[1] = 300 end))
    assert.are.equal("masked_fill: value 300 cannot be converted to uint8 without overflow", msg(u.masked_fill, u, u:eq(0), 300))
    assert.are.equal("masked_fill_: value 300 cannot be converted to uint8 without overflow", msg(u.masked_fill_, u, u:eq(0), 300))
    assert.are.equal("scatter: value 300 cannot be converted to uint8 without overflow", msg(u.scatter, u, 1, idx, 300))
    assert.are.equal("scatter_: value 300 cannot be converted to uint8 without overflow", msg(u.scatter_, u, 1, idx, 300))
    assert.are.equal("index_fill_: value 300 cannot be converted to uint8 without overflow", msg(u.index_fill_, u, 1, idx, 300))
    assert.are.equal("full: value 1e+39 cannot be converted to float32 without overflow", msg(pt.full, {2}, 1e39))
    assert.are.same({0, 0, 0, 0}, u:tolist()) -- nothing was written
    assert.are.equal(math.huge, pt.tensor({1e39}):tolist()[1]) -- as torch.tensor
    local big = pt.zeros(2, I64)
    big[1] = math.maxinteger -- exact, not through a double
    assert.are.same({math.maxinteger, 0}, big:tolist())
  end)

  it("rejects ragged tables with a message", function()
    assert.has_error(function() pt.tensor({{1, 2}, {3}}) end)
    local ok, err = pcall(pt.tensor, {{1, 2}, {3}})
    assert.is_false(ok)
    assert.matches("tensor: nested tables have different lengths %(2 and 1 at depth 2%)", err)
  end)

  it("copies a tensor with pt.tensor(t, {dtype=, requires_grad=}), without its history", function()
    local t = pt.tensor({1.5, 2.5}, {requires_grad = true})
    local c = pt.tensor(t * 2, {dtype = "float64"})
    assert.are.equal("float64", c:dtype())
    assert.are.same({3, 5}, c:tolist())
    assert.is_nil(c.grad_fn)
    assert.are.same({1, 2}, pt.tensor(t, {dtype = "int64"}):tolist())
    assert.is_true(pt.tensor(t, {requires_grad = true}).requires_grad)
    assert.is_false(rawequal(pt.tensor(t), t))
    assert.has_error(function() pt.tensor(t, {dtyp = "float64"}) end,
      "tensor: unknown option 'dtyp' (options: dtype, requires_grad)")
    assert.has_error(function() pt.tensor(t, {dtype = "int64", requires_grad = true}) end,
      "tensor: only floating point tensors can require gradients (dtype int64)")
  end)

  it("has torch's T, mT, H and mH properties (views, with gradients)", function()
    local y = pt.arange(24):reshape(2, 3, 4)
    assert.are.same({4, 3, 2}, y.T:size())
    assert.are.equal(y[2][3][4], y.T[4][3][2])
    assert.are.same({2, 4, 3}, y.mT:size())
    assert.are.same({2, 4, 3}, y.mH:size())
    assert.are.equal(y[1][2][3], y.mT[1][3][2])
    local m = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.are.same({{1, 4}, {2, 5}, {3, 6}}, m.H:tolist())
    assert.are.same({3}, pt.ones(3).T:size())
    assert.has_error(function() return y.H end,
      "tensor.H is only supported on matrices (2-D tensors), got a 3-D tensor (for batches of matrices: tensor.mH)")
    assert.has_error(function() return pt.ones(3).mT end,
      "tensor.mT is only supported on matrices or batches of matrices, got a 1-D tensor")
    local w = pt.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "float64", requires_grad = true});
    (w.T * pt.tensor({{1, 2}, {3, 4}, {5, 6}}, {dtype = "float64"})):sum():backward()
    assert.are.same({{1, 3, 5}, {2, 4, 6}}, w.grad:tolist())
    assert.is_nil(y.TT)
  end)

  it("item needs exactly one element", function()
    assert.are.equal(3.5, pt.tensor(3.5):item())
    local ok, err = pcall(function() return pt.ones(2):item() end)
    assert.is_false(ok)
    assert.matches("item: tensor with 2 elements cannot be converted to a number %(shape {2}%)", err)
  end)

  it("asking for cuda without a GPU is a clear error", function()
    local ok, err = pcall(function() return pt.ones(2):to("cuda") end)
    assert.is_false(ok)
    assert.matches("to: CUDA is not available %(partrain was built without a GPU backend or no GPU was found%)", err)
    ok, err = pcall(function() return pt.ones(2):to("cuda:1") end)
    assert.is_false(ok)
    assert.matches("to: CUDA is not available", err)
    ok, err = pcall(function() return pt.ones(2):to("tpu") end)
    assert.is_false(ok)
    assert.matches("invalid device 'tpu' %(expected \"cpu\", \"cpu:N\" or \"cuda:N\"%)", err)
    assert.is_false(pt.cuda.is_available())
    assert.are.equal(0, pt.cuda.device_count())
  end)

  it("to(device) on the device a tensor is on returns the tensor itself", function()
    local t = pt.ones(2)
    assert.is_true(rawequal(t, t:to("cpu")))
    assert.are.equal("cpu", t:to("cpu"):device())
  end)
end)

describe("tensor memory", function()
  local function rss_mb()
    local f = io.open("/proc/self/statm")
    if not f then return nil end
    local _, res = f:read("n", "n")
    f:close()
    return res * 4096 / 2 ^ 20
  end

  it("keeps RSS bounded in a loop of large temporaries without manual frees", function()
    local before = rss_mb()
    if not before then return pending("no /proc/self/statm") end
    local keep = {}
    -- 1.6 GB of 4 MB tensors, each alive for a few iterations: without telling the collector
    -- about tensor memory, this grows to well over a gigabyte
    for i = 1, 400 do keep[i % 3 + 1] = pt.zeros(1024, 1024) end
    keep = nil
    collectgarbage()
    assert.is_true(rss_mb() - before < 800, string.format("RSS grew by %.0f MB", rss_mb() - before))
  end)

  it("never takes a freed handle's memory, reused by other Lua objects, for a handle", function()
    -- the allocator releases a handle's tensor when the collector frees its block (no __gc);
    -- the block is then reused by objects that overwrite only part of it (a table's array of
    -- three numbers has the same size), which must not look like a handle when freed again
    for _ = 1, 20 do
      local ts = {}
      for i = 1, 2000 do ts[i] = pt.ones(1) end
      ts = nil
      collectgarbage()
      local xs = {}
      for i = 1, 2000 do xs[i] = {2.0, 2.0, 2.0} end
      xs = nil
      collectgarbage()
    end
    assert.are.equal(2, (pt.ones(1) + pt.ones(1)):item())
  end)

  it("frees a <close> tensor at once and rejects later use", function()
    local t2
    do
      local t <close> = pt.ones(3)
      t2 = t
      assert.are.equal(3, t:sum():item())
    end
    local ok, err = pcall(function() return t2:sum() end)
    assert.is_false(ok)
    assert.matches("tensor was closed", err)
    assert.are.equal("tensor(closed)", tostring(t2))
  end)
end)
