-- The typed and threaded paths of gather/scatter, index_select/index_add_/index_copy_, max/min,
-- stack/cat and repeat_tensor, and the embedding backward, against plain Lua references
-- computed element by element in the serial order (float32 sums rounded step by step), on
-- contiguous and non-contiguous inputs, every dtype, int32 and int64 indices, sizes on both
-- sides of the threshold where work is split over the threads, and edge sizes.
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local function ident(x) return x end

-- values of t in row-major order, as a flat Lua table
local function vals(t)
  if t:dim() == 0 then return {t:item()} end
  return t:reshape(t:numel()):tolist()
end

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- 0-based flat position -> 1-based coordinates, and back
local function coords(i, shape)
  local c = {}
  for d = #shape, 1, -1 do
    c[d] = i % shape[d] + 1
    i = i // shape[d]
  end
  return c
end
local function flat(c, shape)
  local k = 0
  for d = 1, #shape do k = k * shape[d] + (c[d] - 1) end
  return k + 1
end

local function copy(t)
  local r = {}
  for i, v in ipairs(t) do r[i] = v end
  return r
end

-- a tensor of `dtype` with the given logical shape; `layout` "t" makes it a transposed view
-- (of the first two dims), "n" a narrowed view with a gap after each row
local function make(dtype, shape, layout, lo, hi)
  local function gen(s)
    if dtype == "float32" or dtype == "float64" then return pt.randn(s, {dtype = dtype}) end
    if dtype == "bool" then return pt.randint(0, 2, s):to("bool") end
    if dtype == "uint8" then return pt.randint(0, 200, s, {dtype = "uint8"}) end
    return pt.randint(lo or -50, hi or 50, s, {dtype = dtype})
  end
  if layout == "t" and #shape >= 2 then
    local s = copy(shape)
    s[1], s[2] = s[2], s[1]
    return gen(s):transpose(1, 2)
  elseif layout == "n" then
    local s = copy(shape)
    s[#s] = s[#s] + 3
    return gen(s):narrow(#s, 2, shape[#shape])
  end
  return gen(shape)
end

local function index_of(shape, size, itype, layout)
  return make(itype, shape, layout, 1, size + 1)
end

local function same_values(expected, got)
  assert.are.equal(#expected, #got)
  for i = 1, #expected do
    if expected[i] ~= got[i] then
      error(string.format("element %d: expected %s, got %s", i, tostring(expected[i]), tostring(got[i])), 2)
    end
  end
end

local function round_of(dtype) return dtype == "float32" and f32 or ident end

local function ref_gather(t, dim, index)
  local tv, ts, iv, is = vals(t), t:size(), vals(index), index:size()
  local out = {}
  for i = 0, #iv - 1 do
    local c = coords(i, is)
    c[dim] = iv[i + 1]
    out[i + 1] = tv[flat(c, ts)]
  end
  return out
end

-- scatter (add = false) or scatter_add (add = true) into a copy of t, positions in index order
local function ref_scatter(t, dim, index, src, add, value)
  local tv, ts, iv, is = vals(t), t:size(), vals(index), index:size()
  local sv, ss = src and vals(src), src and src:size()
  local round = round_of(t:dtype())
  for i = 0, #iv - 1 do
    local c = coords(i, is)
    local s = src and sv[flat(c, ss)] or value
    c[dim] = iv[i + 1]
    local k = flat(c, ts)
    if add then
      if t:dtype() == "bool" then tv[k] = tv[k] or s else tv[k] = round(tv[k] + s) end
    else
      tv[k] = s
    end
  end
  return tv
end

local function ref_index_select(t, dim, index)
  local tv, ts, iv = vals(t), t:size(), vals(index)
  local os = copy(ts)
  os[dim] = #iv
  local out = {}
  for i = 0, numel(os) - 1 do
    local c = coords(i, os)
    c[dim] = iv[c[dim]]
    out[i + 1] = tv[flat(c, ts)]
  end
  return out
end

-- index_add_ (add) or index_copy_ into a copy of t; src positions in row-major order, which
-- visits the index entries of one destination element in order
local function ref_index_put(t, dim, index, src, add)
  local tv, ts, iv, sv, ss = vals(t), t:size(), vals(index), vals(src), src:size()
  local round = round_of(t:dtype())
  for i = 0, #sv - 1 do
    local c = coords(i, ss)
    c[dim] = iv[c[dim]]
    local k = flat(c, ts)
    tv[k] = add and round(tv[k] + sv[i + 1]) or sv[i + 1]
  end
  return tv
end

local DTYPES = {"float32", "float64", "int64", "int32", "uint8", "bool"}
local ITYPES = {"int64", "int32"}

describe("gather and scatter, typed paths", function()
  -- {t shape, index shape}: small ones and ones above the threads' threshold (32768 positions)
  local cases = {
    {{5, 7}, {3, 4}},
    {{1, 1}, {1, 1}},
    {{4, 3, 6}, {2, 3, 5}},
    {{300, 200}, {200, 180}},
    {{64, 600}, {40, 1000}},
  }

  it("gather matches the reference along every dim, every dtype, both index dtypes", function()
    for _, case in ipairs(cases) do
      local tshape, ishape = case[1], case[2]
      for dim = 1, #tshape do
        for _, dtype in ipairs(DTYPES) do
          for _, itype in ipairs(ITYPES) do
            local big = numel(ishape) > 32768
            if not big or dtype == "float32" or dtype == "uint8" or itype == "int64" then
              local s = copy(ishape)
              for d = 1, #s do if d ~= dim and s[d] > tshape[d] then s[d] = tshape[d] end end
              local t = make(dtype, tshape)
              local index = index_of(s, tshape[dim], itype)
              same_values(ref_gather(t, dim, index), vals(t:gather(dim, index)))
            end
          end
        end
      end
    end
  end)

  it("gather reads non-contiguous tensors and indices", function()
    for _, layout in ipairs({"t", "n"}) do
      for _, ilayout in ipairs({"t", "n", false}) do
        for _, shapes in ipairs({{{6, 5}, {4, 5}}, {{220, 200}, {200, 190}}}) do
          for dim = 1, 2 do
            local tshape, ishape = shapes[1], copy(shapes[2])
            if ishape[3 - dim] > tshape[3 - dim] then ishape[3 - dim] = tshape[3 - dim] end
            local t = make("float32", tshape, layout)
            local index = index_of(ishape, tshape[dim], "int64", ilayout)
            same_values(ref_gather(t, dim, index), vals(t:gather(dim, index)))
          end
        end
      end
    end
  end)

  it("scatter_add adds repeated positions in order, scatter keeps the last write", function()
    -- few rows of t and many of index: every position of t is hit many times
    local shapes = {
      {{3, 5}, {4, 5}},
      {{20, 300}, {200, 300}},  -- split by columns (dim 1)
      {{300, 8}, {300, 200}},   -- split by rows (dim 2)
      {{2, 3, 70}, {2, 180, 70}},
    }
    for _, sh in ipairs(shapes) do
      local tshape, ishape = sh[1], sh[2]
      for dim = 1, #tshape do
        local s = copy(ishape)
        for d = 1, #s do if d ~= dim and s[d] > tshape[d] then s[d] = tshape[d] end end
        for _, dtype in ipairs({"float32", "float64", "int64", "int32"}) do
          for _, itype in ipairs(ITYPES) do
            local t = make(dtype, tshape)
            local index = index_of(s, tshape[dim], itype)
            local src = make(dtype, s)
            same_values(ref_scatter(t, dim, index, src, true), vals(t:scatter_add(dim, index, src)))
            same_values(ref_scatter(t, dim, index, src, false), vals(t:scatter(dim, index, src)))
            local u = t:clone()
            u:scatter_add_(dim, index, src)
            same_values(ref_scatter(t, dim, index, src, true), vals(u))
            if dtype == "float32" then
              same_values(ref_scatter(t, dim, index, nil, false, 2.5), vals(t:scatter(dim, index, 2.5)))
            end
          end
        end
      end
    end
  end)

  it("scatter_add with a src larger than the index and non-contiguous operands", function()
    for _, layout in ipairs({"t", "n"}) do
      local t = make("float32", {40, 400}, layout)
      local index = index_of({200, 300}, 40, "int64", layout)
      local src = make("float32", {210, 310}, layout)
      same_values(ref_scatter(t, 1, index, src, true), vals(t:scatter_add(1, index, src)))
      local index2 = index_of({40, 900}, 400, "int32", layout)
      local src2 = make("float32", {40, 905}, layout)
      same_values(ref_scatter(t, 2, index2, src2, true), vals(t:scatter_add(2, index2, src2)))
    end
  end)

  it("gather's backward is scatter_add of the gradient (in order), also when large", function()
    gradcheck(function(x) return x:gather(1, pt.tensor({{1, 3}, {3, 3}, {2, 1}}, {dtype = "int64"})) end,
      {pt.randn(3, 2, {dtype = "float64"})})
    gradcheck(function(x) return x:t():gather(2, pt.tensor({{1, 1, 2}, {2, 1, 2}}, {dtype = "int32"})) end,
      {pt.randn(2, 2, {dtype = "float64"})})
    for _, dim in ipairs({1, 2}) do
      local x = pt.randn(120, 300, {requires_grad = true})
      local ishape = dim == 1 and {400, 300} or {120, 600}
      local index = index_of(ishape, x:size(dim), "int64")
      local g = pt.randn(ishape)
      x:gather(dim, index):backward(g)
      same_values(ref_scatter(pt.zeros(120, 300), dim, index, g, true), vals(x.grad))
    end
  end)
end)

describe("index_select, index_add_ and index_copy_, typed paths", function()
  -- {shape, dim, number of index entries}: every split (outer positions, runs, index entries)
  local cases = {
    {{5, 4}, 1, 3}, {{5, 4}, 2, 6}, {{1, 1}, 1, 1}, {{3, 1, 4}, 2, 5},
    {{1000, 64}, 1, 600}, {{1000, 512}, 1, 100}, {{100, 400}, 2, 500},
    {{2, 50, 400}, 2, 60}, {{6, 70, 90}, 3, 80}, {{3, 4, 5}, 1, 7},
  }

  it("index_select matches the reference for every dtype and index dtype", function()
    for _, case in ipairs(cases) do
      local shape, dim, n = case[1], case[2], case[3]
      for _, dtype in ipairs(DTYPES) do
        for _, itype in ipairs(ITYPES) do
          local t = make(dtype, shape)
          local index = index_of({n}, shape[dim], itype)
          same_values(ref_index_select(t, dim, index), vals(t:index_select(dim, index)))
        end
      end
    end
  end)

  it("index_select reads non-contiguous tensors and indices", function()
    for _, layout in ipairs({"t", "n"}) do
      for _, shape in ipairs({{7, 6, 5}, {90, 60, 20}}) do
        for dim = 1, 3 do
          local t = make("float32", shape, layout)
          local index = make("int64", {2 * shape[dim] + 4}, "n", 1, shape[dim] + 1)
          same_values(ref_index_select(t, dim, index), vals(t:index_select(dim, index)))
          local i32 = pt.randint(1, shape[dim] + 1, {2, 5 * shape[dim]}, {dtype = "int32"})[2]
          same_values(ref_index_select(t, dim, i32), vals(t:index_select(dim, i32)))
        end
      end
    end
  end)

  it("index_add_ adds repeated rows in order, index_copy_ keeps the last", function()
    for _, case in ipairs(cases) do
      local shape, dim, n = case[1], case[2], case[3]
      for _, dtype in ipairs({"float32", "float64", "int64", "uint8"}) do
        for _, itype in ipairs(ITYPES) do
          local t = make(dtype, shape)
          local index = index_of({n}, shape[dim], itype)
          local sshape = copy(shape)
          sshape[dim] = n
          local src = make(dtype, sshape)
          if dtype ~= "uint8" then
            local u = t:clone()
            u:index_add_(dim, index, src)
            same_values(ref_index_put(t, dim, index, src, true), vals(u))
          end
          local v = t:clone()
          v:index_copy_(dim, index, src)
          same_values(ref_index_put(t, dim, index, src, false), vals(v))
        end
      end
    end
  end)

  it("index_add_ and index_copy_ into non-contiguous tensors, from non-contiguous src", function()
    for _, layout in ipairs({"t", "n"}) do
      for dim = 1, 3 do
        local shape = {40, 30, 50}
        local base = make("float32", shape, layout)
        local index = index_of({70}, shape[dim], "int64")
        local sshape = copy(shape)
        sshape[dim] = 70
        local src = make("float32", sshape, layout)
        local u = base:clone():transpose(1, 2):transpose(1, 2) -- contiguous copy
        if layout == "t" then u = base:transpose(1, 2):clone():transpose(1, 2) end
        u:index_add_(dim, index, src)
        same_values(ref_index_put(base, dim, index, src, true), vals(u))
        local v = base:transpose(1, 2):clone():transpose(1, 2)
        v:index_copy_(dim, index, src)
        same_values(ref_index_put(base, dim, index, src, false), vals(v))
      end
    end
  end)

  it("index_copy_ from a src that shares the tensor's storage reads src before writing", function()
    local t = pt.arange(24, {dtype = "float32"}):view(6, 4)
    t:index_copy_(1, pt.tensor({2, 3}, {dtype = "int64"}), t:narrow(1, 1, 2))
    -- rows 2 and 3 take the old rows 1 and 2 (as from a clone; row by row gave row 1 twice)
    assert.are.same({{0, 1, 2, 3}, {0, 1, 2, 3}, {4, 5, 6, 7}, {12, 13, 14, 15}, {16, 17, 18, 19},
                     {20, 21, 22, 23}}, t:tolist())
  end)

  it("index_select's backward, into a fresh .grad and into an existing one", function()
    gradcheck(function(x) return x:index_select(2, pt.tensor({3, 1, 3}, {dtype = "int64"})) end,
      {pt.randn(2, 3, {dtype = "float64"})})
    gradcheck(function(x) return x:t():index_select(1, pt.tensor({2, 2, 1}, {dtype = "int32"})) end,
      {pt.randn(3, 2, {dtype = "float64"})})
    for _, case in ipairs({{{2000, 64}, 1, 3000}, {{300, 200}, 2, 400}, {{4, 5}, 1, 7}}) do
      local shape, dim, n = case[1], case[2], case[3]
      local x = pt.randn(shape, {requires_grad = true})
      local index = index_of({n}, shape[dim], "int64")
      local gshape = copy(shape)
      gshape[dim] = n
      local g = pt.randn(gshape)
      x:index_select(dim, index):backward(g)
      local expect = ref_index_put(pt.zeros(shape), dim, index, g, true)
      same_values(expect, vals(x.grad))
      -- a second backward adds to the existing .grad: grad + (zeros + g's rows)
      local g2 = pt.randn(gshape)
      local before = x.grad:clone()
      x:index_select(dim, index):backward(g2)
      local add = ref_index_put(pt.zeros(shape), dim, index, g2, true)
      local bv = vals(before)
      for i = 1, #bv do bv[i] = f32(bv[i] + add[i]) end
      same_values(bv, vals(x.grad))
    end
  end)
end)

-- the serial rule: the first NaN wins; otherwise the first element strictly better than all
-- before it (so the first of equal extremes, and -0 before +0 counts as the first zero)
local function ref_best(v, is_min, from, to, step)
  from, to, step = from or 1, to or #v, step or 1
  local bi, b = from, v[from]
  if b == b then
    for i = from + step, to, step do
      local e = v[i]
      if e ~= e then bi, b = i, e; break end
      if (is_min and e < b) or (not is_min and e > b) then bi, b = i, e end
    end
  end
  return bi, b
end

local function same_number(expected, got, what)
  local ok
  if expected ~= expected then ok = got ~= got
  elseif expected == 0 and type(expected) == "number" and math.type(expected) == "float" then
    ok = got == 0 and 1 / got == 1 / expected -- the sign of a zero too
  else ok = expected == got end
  if not ok then error(string.format("%s: expected %s, got %s", what, tostring(expected), tostring(got)), 2) end
end

-- max/min/argmax/argmin over all elements of t (a tensor built from the Lua table v)
local function check_all(t, v)
  for _, is_min in ipairs({false, true}) do
    local bi, b = ref_best(v, is_min)
    local val = is_min and t:min() or t:max()
    local arg = is_min and t:argmin() or t:argmax()
    same_number(bi, arg:item(), (is_min and "argmin" or "argmax") .. " of " .. #v)
    same_number(b, val:item(), (is_min and "min" or "max") .. " of " .. #v)
  end
end

local function randn_values(n, dtype)
  return pt.randn(n, {dtype = dtype}):tolist()
end

describe("max/min over all elements and along the last dim, vectorised paths", function()
  local sizes = {1, 2, 7, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 3000, 70000, 300000}

  it("match the serial scan for every size (blocks, tails, chunks over the threads)", function()
    for _, n in ipairs(sizes) do
      for _, dtype in ipairs({"float32", "float64"}) do
        local v = randn_values(n, dtype)
        check_all(pt.tensor(v, {dtype = dtype}), v)
      end
      local iv = pt.randint(-1000000, 1000000, {n}):tolist()
      for _, dtype in ipairs({"int64", "int32"}) do check_all(pt.tensor(iv, {dtype = dtype}), iv) end
      local uv = pt.randint(0, 256, {n}):tolist()
      check_all(pt.tensor(uv, {dtype = "uint8"}), uv)
    end
  end)

  it("take the first NaN wherever it is", function()
    for _, n in ipairs({1, 5, 40, 100, 1500, 5000, 300000}) do
      for _, at in ipairs({{1}, {n}, {(n + 1) // 2}, {n, (n + 3) // 4}, {(n + 1) // 2, n // 3 + 1, n}}) do
        for _, dtype in ipairs({"float32", "float64"}) do
          local v = randn_values(n, dtype)
          for _, k in ipairs(at) do v[k] = 0 / 0 end
          check_all(pt.tensor(v, {dtype = dtype}), v)
        end
      end
    end
  end)

  it("give the first of equal extremes, across vectors, blocks and chunks", function()
    for _, n in ipairs({16, 100, 5000, 300000}) do
      for _, pair in ipairs({{1, n}, {2, 3}, {n // 2, n // 2 + 1}, {n // 3 + 1, n - 1}, {n - 1, n}}) do
        local v = randn_values(n, "float32")
        v[pair[1]], v[pair[2]] = 9.5, 9.5
        local w = randn_values(n, "float32")
        w[pair[1]], w[pair[2]] = -9.5, -9.5
        check_all(pt.tensor(v), v)
        check_all(pt.tensor(w), w)
      end
    end
  end)

  it("keep the first zero's sign and handle infinities", function()
    for _, n in ipairs({3, 40, 5000, 300000}) do
      for _, first in ipairs({-0.0, 0.0}) do
        for _, at in ipairs({1, 2, n // 2, n}) do
          local v = {}
          for i = 1, n do v[i] = -first end
          v[at] = first
          check_all(pt.tensor(v), v)
          check_all(pt.tensor(v, {dtype = "float64"}), v)
        end
      end
      local inf = {}
      for i = 1, n do inf[i] = -math.huge end
      check_all(pt.tensor(inf), inf)
      inf[n] = math.huge
      check_all(pt.tensor(inf), inf)
    end
  end)

  it("along the last dim: every row as the serial scan, values and 1-based indices", function()
    for _, shape in ipairs({{1, 5}, {3, 1500}, {50, 70}, {4, 100000}, {300, 300}, {7, 1}}) do
      for _, dtype in ipairs({"float32", "float64", "int64"}) do
        local t = dtype == "int64" and pt.randint(-100, 100, shape) or pt.randn(shape, {dtype = dtype})
        if dtype ~= "int64" then t[{{1}, {shape[2]}}] = 0 / 0 end -- a NaN at the end of row 1
        for _, is_min in ipairs({false, true}) do
          local vals_, idx = (is_min and t.min or t.max)(t, 2)
          local kv, ki = (is_min and t.min or t.max)(t, 2, {keepdim = true})
          local rows = t:tolist()
          for r = 1, shape[1] do
            local bi, b = ref_best(rows[r], is_min)
            same_number(bi, idx:tolist()[r], "index of row " .. r)
            same_number(b, vals_:tolist()[r], "value of row " .. r)
            same_number(bi, ki:tolist()[r][1], "keepdim index of row " .. r)
          end
          local ai = (is_min and t.argmin or t.argmax)(t, 2)
          assert.are.same(idx:tolist(), ai:tolist())
        end
      end
    end
  end)

  it("non-contiguous inputs, other dims, and the backward", function()
    local t = pt.randn(700, 90):t() -- {90, 700}, transposed
    local rows = t:tolist()
    local v, i = t:max(2)
    for r = 1, 90 do
      local bi, b = ref_best(rows[r], false)
      same_number(bi, i:tolist()[r], "index")
      same_number(b, v:tolist()[r], "value")
    end
    local flat_ = vals(t)
    check_all(t, flat_)
    local v1, i1 = t:min(1) -- along dim 1: the strided path
    for c = 1, 700 do
      local col = {}
      for r = 1, 90 do col[r] = rows[r][c] end
      local bi, b = ref_best(col, true)
      same_number(bi, i1:tolist()[c], "dim 1 index")
      same_number(b, v1:tolist()[c], "dim 1 value")
    end
    gradcheck(function(x) return x:max() end, {pt.randn(5, 7, {dtype = "float64"})})
    gradcheck(function(x) return x:min(2) end, {pt.randn(4, 9, {dtype = "float64"})})
    gradcheck(function(x) return x:t():max(2) end, {pt.randn(6, 3, {dtype = "float64"})})
    local x = pt.randn(3, 100000, {requires_grad = true})
    x:max(2):sum():backward()
    local _, xi = x:max(2)
    local g = x.grad:tolist()
    for r = 1, 3 do
      local ones = 0
      for c = 1, 100000 do if g[r][c] ~= 0 then ones = ones + 1 end end
      assert.are.equal(1, ones)
      assert.are.equal(1, g[r][xi:tolist()[r]])
    end
  end)
end)

-- cat of tensors (any dtypes, promoted) along dim: reference from their values
local function ref_cat(ts, dim, dtype)
  local ref = ts[1]:size()
  local shape = copy(ref)
  shape[dim] = 0
  local starts = {}
  for k, t in ipairs(ts) do
    starts[k] = shape[dim]
    shape[dim] = shape[dim] + t:size(dim)
  end
  local tv = {}
  for k, t in ipairs(ts) do tv[k] = vals(t) end
  local out = {}
  for i = 0, numel(shape) - 1 do
    local c = coords(i, shape)
    local k = #ts
    while starts[k] >= c[dim] do k = k - 1 end
    c[dim] = c[dim] - starts[k]
    local v = tv[k][flat(c, ts[k]:size())]
    if dtype == "bool" then v = v and true or false end
    out[i + 1] = v
  end
  return out
end

local function ref_repeat(t, reps)
  local v, s = vals(t), t:size()
  local lead = #reps - #s
  local S, shape = {}, {}
  for d = 1, #reps do
    S[d] = d <= lead and 1 or s[d - lead]
    shape[d] = S[d] * reps[d]
  end
  local out = {}
  for i = 0, numel(shape) - 1 do
    local c = coords(i, shape)
    local sc = {}
    for d = lead + 1, #reps do sc[d - lead] = (c[d] - 1) % S[d] + 1 end
    out[i + 1] = #s == 0 and v[1] or v[flat(sc, s)]
  end
  return out
end

describe("cat, stack and repeat_tensor, row paths", function()
  it("stack along every dim, every dtype, contiguous and not, small and large", function()
    -- 64 of {1000} or {30, 40}: rows of the result split over the threads (32768 elements a chunk)
    for _, shape in ipairs({{5}, {3, 4}, {1000}, {30, 40}, {2, 3, 4}}) do
      for _, dtype in ipairs(DTYPES) do
        local big = numel(shape) >= 1000
        if not big or dtype == "float32" or dtype == "uint8" or dtype == "int64" then
          for _, count in ipairs(big and {64} or {1, 3, 17}) do
            local ts = {}
            for k = 1, count do
              ts[k] = make(dtype, shape, (k % 3 == 0 and #shape >= 2) and "t" or (k % 5 == 0 and "n" or nil))
            end
            for dim = 1, #shape + 1 do
              local us = {}
              for k = 1, count do us[k] = ts[k]:unsqueeze(dim) end
              same_values(ref_cat(us, dim, dtype), vals(pt.stack(ts, dim)))
            end
          end
        end
      end
    end
  end)

  it("cat of parts of every length (empty, under and over 64 bytes), mixed dtypes promote", function()
    for _, dim in ipairs({1, 2, 3}) do
      for _, lens in ipairs({{1, 2, 3}, {0, 5, 0, 40}, {17, 1, 33}, {200, 3}}) do
        for _, dtype in ipairs({"float32", "float64", "int32", "uint8", "bool"}) do
          local ts = {}
          for k, l in ipairs(lens) do
            local shape = {4, 3, 5}
            shape[dim] = l
            ts[k] = make(dtype, shape, k == 2 and "t" or nil)
          end
          same_values(ref_cat(ts, dim, dtype), vals(pt.cat(ts, dim)))
        end
        local mixed = {}
        for k, l in ipairs(lens) do
          local shape = {4, 3, 5}
          shape[dim] = l
          mixed[k] = make(k % 2 == 0 and "float64" or "int32", shape)
        end
        local r = pt.cat(mixed, dim)
        assert.are.equal("float64", r:dtype())
        same_values(ref_cat(mixed, dim, "float64"), vals(r))
      end
    end
    local big = {}
    for k = 1, 5 do big[k] = pt.randn(3000, k * 7) end
    same_values(ref_cat(big, 2, "float32"), vals(pt.cat(big, 2)))
  end)

  it("stack and cat backwards", function()
    gradcheck(function(a, b) return pt.stack({a, b, a}, 2) end,
      {pt.randn(3, 4, {dtype = "float64"}), pt.randn(3, 4, {dtype = "float64"})})
    gradcheck(function(a, b) return pt.cat({a, b:t()}, 2) end,
      {pt.randn(3, 2, {dtype = "float64"}), pt.randn(5, 3, {dtype = "float64"})})
  end)

  it("repeat_tensor and tile: every dtype, layouts, leading and zero counts", function()
    local cases = {
      {{}, {3}}, {{}, {2, 2}}, {{1}, {5}}, {{5}, {3}}, {{3, 4}, {2, 3}}, {{3, 4}, {1, 1}},
      {{2, 3, 4}, {2, 1, 3}}, {{3, 4}, {2, 1, 1}}, {{3, 4}, {0, 2}}, {{64, 64}, {8, 8}},
      {{1, 7}, {300, 2}}, {{7, 1}, {2, 300}}, {{2, 2}, {3, 2, 2, 2}},
    }
    for _, case in ipairs(cases) do
      local shape, reps = case[1], case[2]
      for _, dtype in ipairs(DTYPES) do
        for _, layout in ipairs({false, "t", "n"}) do
          local t
          if #shape == 0 then
            t = make(dtype, {1}):reshape({})
          else
            t = make(dtype, shape, layout)
          end
          local r = t:repeat_tensor(table.unpack(reps))
          local expect_shape = {}
          for d = 1, #reps do
            local lead = #reps - #shape
            expect_shape[d] = reps[d] * (d <= lead and 1 or shape[d - lead])
          end
          assert.are.same(expect_shape, r:size())
          same_values(ref_repeat(t, reps), vals(r))
        end
      end
    end
    local t = pt.randn(3, 4)
    same_values(ref_repeat(t, {1, 2, 3}), vals(t:tile({1, 2, 3})))
    same_values(ref_repeat(t, {2, 3}), vals(t:tile({2, 3})))
  end)

  it("repeat_tensor's backward adds the tiles in order (float32 rounding), any gradient layout", function()
    gradcheck(function(x) return x:repeat_tensor(2, 3) end, {pt.randn(2, 3, {dtype = "float64"})})
    gradcheck(function(x) return x:repeat_tensor(2, 1, 2) end, {pt.randn(3, 2, {dtype = "float64"})})
    gradcheck(function(x) return x:t():repeat_tensor(3, 2):t() end, {pt.randn(2, 3, {dtype = "float64"})})
    for _, case in ipairs({{{64, 64}, {8, 8}}, {{5, 7}, {3, 4, 2}}, {{1}, {3000}}, {{40, 3}, {2, 9}}}) do
      local shape, reps = case[1], case[2]
      for _, transposed in ipairs({false, true}) do
        local x = pt.randn(shape, {requires_grad = true})
        local y = x:repeat_tensor(table.unpack(reps))
        local ys = y:size()
        local g
        if transposed and #ys >= 2 then
          local s = copy(ys)
          s[#s - 1], s[#s] = s[#s], s[#s - 1]
          g = pt.randn(s):transpose(#s - 1, #s)
        else
          g = pt.randn(ys)
        end
        y:backward(g)
        -- reference: z[src] accumulates g over g's elements in row-major order
        local gv, z = vals(g), {}
        for i = 1, x:numel() do z[i] = 0 end
        local lead = #reps - #shape
        for i = 0, #gv - 1 do
          local c = coords(i, ys)
          local sc = {}
          for d = lead + 1, #reps do sc[d - lead] = (c[d] - 1) % shape[d - lead] + 1 end
          local k = flat(sc, shape)
          z[k] = f32(z[k] + gv[i + 1])
        end
        same_values(z, vals(x.grad))
      end
    end
  end)
end)

describe("embedding backward straight into the weight's .grad", function()
  local nn = pt.nn

  -- zeros plus g's rows in index order (padding skipped), in dtype's rounding
  local function ref_rows(V, D, idx, g, pad, round)
    local gw = {}
    for i = 1, V * D do gw[i] = 0.0 end
    local iv, gv = vals(idx), vals(g)
    for i, r in ipairs(iv) do
      if r ~= pad then
        for c = 1, D do
          local k = (r - 1) * D + c
          gw[k] = round(gw[k] + gv[(i - 1) * D + c])
        end
      end
    end
    return gw
  end

  local function same_bits(expected, got, what)
    assert.are.equal(#expected, #got)
    for i = 1, #expected do same_number(expected[i], got[i], what .. " element " .. i) end
  end

  it("a new .grad, an existing one (signed zeros, NaN, untouched and padding rows), as before", function()
    -- the second case splits both the column pass (D / max(16, 65536 / n) chunks) and the fold
    -- of an existing .grad (V / (65536 / D) chunks) over the threads
    for _, case in ipairs({{50, 37, 300, 40}, {1500, 64, 2048, 1200}, {7, 1, 5, 7}}) do
      local V, D, n, hi = case[1], case[2], case[3], case[4]
      for _, dtype in ipairs({"float32", "float64"}) do
        local round = round_of(dtype)
        for _, pad in ipairs({0, 3}) do
          local w = pt.randn(V, D, {dtype = dtype, requires_grad = true})
          local idx = pt.randint(1, hi + 1, {n}, {dtype = n % 2 == 0 and "int64" or "int32"})
          local g = pt.randn(n, D, {dtype = dtype})
          local opts = pad > 0 and {padding_idx = pad} or nil
          nn.embedding(idx, w, opts):backward(g)
          local gw = ref_rows(V, D, idx, g, pad, round)
          same_bits(gw, vals(w.grad), "new .grad")
          -- the general path (a weight that is not a leaf) gives the same
          local w2 = w:detach():clone()
          w2.requires_grad = true
          nn.embedding(idx, w2 * 1, opts):backward(g)
          same_bits(gw, vals(w2.grad), "general path")
          -- an existing .grad with -0 and NaN in touched, untouched and padding rows
          local G = pt.randn(V, D, {dtype = dtype}):tolist()
          for r = 1, V do
            if r % 3 == 0 then G[r][1] = -0.0 end
            if r % 4 == 0 then G[r][D] = 0 / 0 end
          end
          G[V][1] = -0.0
          if pad > 0 then G[pad][1] = -0.0 end
          local Gt = pt.tensor(G, {dtype = dtype})
          w.grad = Gt:clone()
          local g2 = pt.randn(n, D, {dtype = dtype})
          nn.embedding(idx, w, opts):backward(g2)
          local add = ref_rows(V, D, idx, g2, pad, round)
          local expect = vals(Gt)
          for i = 1, #expect do expect[i] = round(expect[i] + add[i]) end
          same_bits(expect, vals(w.grad), "existing .grad")
          -- nn.Embedding over two steps, with zero_grad between
          local e = nn.Embedding(V, D, {dtype = dtype, padding_idx = pad > 0 and pad or nil})
          e:forward(idx):backward(g)
          e:forward(idx):backward(g2)
          local w0 = ref_rows(V, D, idx, g, pad, round)
          for i = 1, #w0 do w0[i] = round(w0[i] + add[i]) end
          same_bits(w0, vals(e.weight.grad), "two steps")
          e:zero_grad()
          e:forward(idx):backward(g)
          same_bits(w0 and ref_rows(V, D, idx, g, pad, round), vals(e.weight.grad), "after zero_grad")
        end
      end
    end
  end)
end)
