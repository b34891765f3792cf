local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

local function f64(...) return pt.randn({...}, {dtype = "float64"}) end
local function err_of(f, ...) local ok, e = pcall(f, ...); assert.is_false(ok); return e end

describe("sort and topk", function()
  it("sorts along the last dimension by default, stable, with 1-based indices", function()
    local t = pt.tensor({{3, 1, 2, 1}, {0, -1, 5, 5}})
    local v, i = t:sort()
    assert.are.same({{1, 1, 2, 3}, {-1, 0, 5, 5}}, v:tolist())
    assert.are.same({{2, 4, 3, 1}, {2, 1, 3, 4}}, i:tolist())
    v, i = t:sort(1, true)
    assert.are.same({{3, 1, 5, 5}, {0, -1, 2, 1}}, v:tolist())
    assert.are.same({{1, 1, 2, 2}, {2, 2, 1, 1}}, i:tolist())
    v = t:sort(2, {descending = true})
    assert.are.same({{3, 2, 1, 1}, {5, 5, 0, -1}}, v:tolist())
  end)

  it("puts NaN last ascending and first descending", function()
    local t = pt.tensor({2, 0 / 0, 1})
    local _, i = t:sort()
    assert.are.same({3, 1, 2}, i:tolist())
    _, i = t:sort(1, true)
    assert.are.same({2, 1, 3}, i:tolist())
  end)

  it("topk returns the k largest or smallest in order", function()
    local t = pt.tensor({{1, 9, 3, 7}, {4, 4, 8, 0}})
    local v, i = t:topk(2)
    assert.are.same({{9, 7}, {8, 4}}, v:tolist())
    assert.are.same({{2, 4}, {3, 1}}, i:tolist())
    v, i = t:topk(1, 1, {largest = false})
    assert.are.same({{1, 4, 3, 0}}, v:tolist())
    assert.are.same({{1, 2, 1, 2}}, i:tolist())
    assert.are.same({2, 0}, pt.topk(t, 0):size())
  end)

  it("topk's selection is exactly the head of a full sort (ties, NaN, both directions)", function()
    pt.manual_seed(1)
    for _ = 1, 10 do
      local z = pt.randint(0, 5, {3, 200}):float() -- many ties
      z[{1, 7}] = 0 / 0
      z[{2, 100}] = 0 / 0
      for _, largest in ipairs({true, false}) do
        for _, k in ipairs({1, 7, 24, 26, 200}) do -- a heap below n/8, a full sort above
          local v, i = z:topk(k, 2, largest)
          local sv, si = z:sort(2, largest)
          assert.is_true(pt.equal(i, si:narrow(2, 1, k)), ("k=%d largest=%s"):format(k, tostring(largest)))
          assert.is_true(pt.allclose(v, sv:narrow(2, 1, k), {equal_nan = true}))
        end
      end
    end
  end)

  it("long lanes (a radix sort) keep the comparison sort's order: ties by index, NaN largest, -0 equal to 0", function()
    -- the expected order from table.sort on (value, index) with the same rules
    local function expected(vals, desc)
      local idx = {}
      for i = 1, #vals do idx[i] = i end
      local function key(v) if v ~= v then return math.huge, 1 end return v == 0 and 0 or v, 0 end
      table.sort(idx, function(a, b)
        local ka, na = key(vals[a])
        local kb, nb = key(vals[b])
        if ka ~= kb or na ~= nb then
          if desc then return ka > kb or (ka == kb and na > nb) end
          return ka < kb or (ka == kb and na < nb)
        end
        return a < b
      end)
      return idx
    end
    pt.manual_seed(3)
    math.randomseed(42)
    for _, n in ipairs({511, 512, 2049}) do
      for _, dtype in ipairs({"float32", "float64", "int64", "int32", "uint8"}) do
        local vals = {}
        local fl = dtype:sub(1, 5) == "float"
        for i = 1, n do
          local r = math.random(0, 12)
          if fl and r == 0 then vals[i] = 0 / 0
          elseif fl and r == 1 then vals[i] = -0.0
          elseif fl and r == 2 then vals[i] = (i % 2 == 0) and math.huge or -math.huge
          elseif fl then vals[i] = (r - 7) * 0.5 + (i % 3 == 0 and 1e-3 or 0)
          elseif dtype == "uint8" then vals[i] = r * 19 % 256
          elseif dtype == "int64" then vals[i] = (r - 6) * 1000000007 * 1000 -- beyond 2^32
          else vals[i] = (r - 6) * 100000 end
        end
        local t = pt.tensor(vals, {dtype = dtype})
        for _, desc in ipairs({false, true}) do
          local _, i = t:sort(1, desc)
          assert.are.same(expected(vals, desc), i:tolist(), ("%s n=%d desc=%s"):format(dtype, n, tostring(desc)))
        end
      end
    end
    -- along an inner dimension: lanes of 600 strided by 3
    local z = pt.randint(0, 4, {600, 3}):float()
    local v, i = z:sort(1)
    local sv, si = z:t():contiguous():sort(2)
    assert.is_true(pt.equal(i, si:t()))
    assert.is_true(pt.equal(v, sv:t()))
  end)

  it("unique of a long input (radix-sorted) finds every value, its inverse and counts", function()
    math.randomseed(7)
    local vals, cnt = {}, {}
    for i = 1, 3001 do vals[i] = math.random(0, 9) * 3 - 7 end
    vals[100], vals[2000] = 0 / 0, 0 / 0 -- each NaN is a value of its own, last
    for _, v in ipairs(vals) do if v == v then cnt[v] = (cnt[v] or 0) + 1 end end
    local t = pt.tensor(vals, {dtype = "float32"})
    local u, inv, c = pt.unique(t, {return_inverse = true, return_counts = true})
    local ul, cl = u:tolist(), c:tolist()
    assert.are.equal(12, #ul)
    for k = 1, 10 do
      local v = (k - 1) * 3 - 7
      assert.are.equal(v, ul[k])
      assert.are.equal(cnt[v], cl[k])
    end
    assert.is_true(ul[11] ~= ul[11] and ul[12] ~= ul[12])
    local invl = inv:tolist()
    for i = 1, #vals do
      if vals[i] == vals[i] then assert.are.equal(vals[i], ul[invl[i] ]) end
    end
    assert.are.same({11, 12}, {invl[100], invl[2000]})
    assert.are.same({1, 1}, {cl[11], cl[12]})
  end)

  it("sorts many lanes on several threads with the numbers of one", function()
    pt.manual_seed(9)
    local x = pt.randint(0, 50, {300, 600}):float() -- ties in every lane
    local before = pt.get_num_threads()
    pt.set_num_threads(1)
    local r1 = {x:sort(2), select(2, x:sort(2)), x:sort(1, true), select(2, x:sort(1, true)), select(2, x:topk(7, 2))}
    pt.set_num_threads(before)
    local r2 = {x:sort(2), select(2, x:sort(2)), x:sort(1, true), select(2, x:sort(1, true)), select(2, x:topk(7, 2))}
    for i = 1, #r1 do assert.is_true(pt.equal(r1[i], r2[i]), "result " .. i) end
    -- and each row is in order with ties by index
    local v, ix = x:narrow(1, 1, 1):sort(2)
    local vl, il = v:tolist()[1], ix:tolist()[1]
    for q = 2, #vl do
      assert.is_true(vl[q - 1] < vl[q] or (vl[q - 1] == vl[q] and il[q - 1] < il[q]))
    end
  end)

  it("sends gradients to the selected elements", function()
    gradcheck(function(x) return (x:sort()) end, {f64(3, 4)})
    gradcheck(function(x) return (x:sort(1, true)) end, {f64(3, 4)})
    gradcheck(function(x) return (x:topk(2, 2)) end, {f64(3, 5)})
  end)

  it("names a bad k or dimension", function()
    local t = pt.randn(2, 3)
    assert.truthy(err_of(t.topk, t, 4):find("topk: k=4 out of range for dimension 2 of size 3", 1, true))
    assert.truthy(err_of(t.sort, t, 3):find("sort: dimension 3 out of range (tensor has 2 dimensions)", 1, true))
  end)
end)

describe("cumsum and cumprod", function()
  it("computes running sums and products", function()
    local t = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.are.same({{1, 3, 6}, {4, 9, 15}}, t:cumsum(2):tolist())
    assert.are.same({{1, 2, 3}, {5, 7, 9}}, t:cumsum(1):tolist())
    assert.are.same({{1, 2, 6}, {4, 20, 120}}, t:cumprod(-1):tolist())
    assert.are.same({1, 3, 6}, pt.arange(1, 4):cumsum():tolist())
    assert.are.equal("int64", pt.arange(1, 4):cumsum():dtype())
  end)

  it("has correct gradients, zeros included", function()
    gradcheck(function(x) return x:cumsum(2) end, {f64(3, 4)})
    gradcheck(function(x) return x:cumprod(1) end, {f64(4, 2)})
    local z = f64(5); z:_set_flat(3, 0)
    gradcheck(function(x) return x:cumprod(1) end, {z})
  end)

  it("needs a dimension for n-D tensors", function()
    local t = pt.randn(2, 2)
    assert.truthy(err_of(t.cumsum, t):find("cumsum: a dimension is needed for a 2-D tensor", 1, true))
  end)
end)

describe("all, any, equal, allclose", function()
  it("reduce to bool tensors over everything or one dimension", function()
    local t = pt.tensor({{1, 0}, {1, 1}})
    assert.is_false(t:all():item())
    assert.is_true(t:any():item())
    assert.are.same({true, false}, t:all(1):tolist())
    assert.are.same({{false}, {true}}, t:all(2, true):tolist())
    assert.are.same({true, true}, t:any(2):tolist())
  end)

  it("compare whole tensors", function()
    local a = pt.tensor({1, 2, 3})
    assert.is_true(a:equal(pt.tensor({1, 2, 3}, {dtype = "int64"})))
    assert.is_false(a:equal(pt.tensor({1, 2, 4})))
    assert.is_false(a:equal(pt.tensor({{1, 2, 3}})))
    assert.is_true(a:allclose(a + 1e-6))
    assert.is_false(a:allclose(a + 1e-3))
    assert.is_true(a:allclose(a + 1e-3, {atol = 1e-2}))
    local n = pt.tensor({0 / 0})
    assert.is_false(n:allclose(n))
    assert.is_true(n:allclose(n, {equal_nan = true}))
    assert.truthy(err_of(a.allclose, a, pt.ones(2)):find("allclose: shapes {3} and {2} cannot be broadcast", 1, true))
    -- shapes broadcast against each other, as PyTorch's allclose
    local m = pt.tensor({{1, 2, 3}, {1, 2, 3.5}})
    assert.is_true(pt.tensor({{1, 2, 3}}):allclose(pt.tensor({1, 2, 3})))
    assert.is_false(m:allclose(pt.tensor({1, 2, 3})))
    assert.is_true(m:allclose(pt.tensor({1, 2, 3}), {atol = 0.5}))
    assert.is_true(pt.ones(2, 3):allclose(pt.tensor(1)))
  end)
end)
