local pt = require "partrain"
local data = pt.data

local support = require "spec.support"
local _, tmp = support.tmpdir()
local write = support.write_file

local function write_gz(path, bytes)
  local p = assert(io.popen("gzip -c > '" .. path .. "'", "w"))
  p:write(bytes)
  p:close()
  return path
end

local function be32(n) return string.pack(">I4", n) end

-- n images of h x w; pixel k of image i = (i * 10 + k) % 256
local function idx_images(n, h, w)
  local parts = {"\0\0\8\3", be32(n), be32(h), be32(w)}
  for i = 0, n - 1 do
    for k = 0, h * w - 1 do parts[#parts + 1] = string.char((i * 10 + k) % 256) end
  end
  return table.concat(parts)
end

local function idx_labels(list)
  local parts = {"\0\0\8\1", be32(#list)}
  for _, v in ipairs(list) do parts[#parts + 1] = string.char(v) end
  return table.concat(parts)
end

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

local function col(t, k) return t:tolist()[k] end

describe("data.idx", function()
  local imgs = idx_images(5, 2, 3)
  local labs = idx_labels({0, 9, 3, 1, 0})

  for _, gz in ipairs({false, true}) do
    local kind = gz and "gzipped" or "raw"
    it("reads " .. kind .. " IDX files with 1-based labels", function()
      local w = gz and write_gz or write
      local ds = data.idx(w(tmp("i" .. kind), imgs), w(tmp("l" .. kind), labs))
      assert.are.equal(5, ds:len())
      assert.are.equal("uint8", ds.images:dtype())
      assert.are.same({5, 2, 3}, ds.images:size())
      assert.are.same({1, 10, 4, 2, 1}, ds.labels:tolist()) -- file label + 1
      local s = ds:get(2)
      assert.are.same({6}, s[1]:size())
      assert.are.equal("float32", s[1]:dtype())
      assert.is_true(math.abs(s[1]:tolist()[3] - 12 / 255) < 1e-6)
      assert.are.equal(10, s[2])
    end)
  end

  it("gives {B,1,H,W} batches with flatten = false", function()
    local ds = data.idx(write(tmp("i4"), imgs), write(tmp("l4"), labs), {flatten = false})
    local h = data.DataHandler(ds, {batch = 2, progress = false})
    local x, y = h:batches()()
    assert.are.same({2, 1, 2, 3}, x:size())
    assert.are.same({1, 10}, y:tolist())
    assert.is_true(math.abs(x:tolist()[2][1][2][3] - 15 / 255) < 1e-6)
  end)

  it("reads images without labels", function()
    local ds = data.idx(write(tmp("i5"), imgs))
    local s = ds:get(1)
    assert.are.equal(1, #s)
  end)

  it("prints as IdxDataset(n), and help on it shows its methods", function()
    local ds = data.idx(write(tmp("i6"), imgs), write(tmp("l6"), labs))
    assert.are.equal("IdxDataset(5)", tostring(ds))
    assert.are.equal("DataHandler(batch=2, shuffle=false, 3 batches of IdxDataset(5))",
      tostring(data.DataHandler(ds, {batch = 2})))
    local text = require("partrain.help").text(ds)
    assert.matches("^an object of class IdxDataset; help%(IdxDataset%):\ndata%.idx datasets", text)
    assert.matches("\n  get +ds:get%(i%) %-> {image, label}", text)
  end)

  it("names the problem in hostile files", function()
    assert.matches("bad magic 0x01000803", err_of(data.idx, write(tmp("b1"), "\1\0\8\3" .. imgs:sub(5))))
    assert.matches("truncated: shape {5,2,3} needs 30 data bytes, the file has 29",
                   err_of(data.idx, write(tmp("b2"), imgs:sub(1, -2))), 1, true)
    assert.matches("1 trailing bytes", err_of(data.idx, write(tmp("b3"), imgs .. "x")))
    assert.matches("truncated", err_of(data.idx, write_gz(tmp("b4"), imgs:sub(1, -3))))
    assert.matches("unknown IDX type code 0x07", err_of(data.idx, write(tmp("b5"), "\0\0\7\1" .. be32(0))))
    assert.matches("too short", err_of(data.idx, write(tmp("b6"), "\0\0")))
    assert.matches("truncated header", err_of(data.idx, write(tmp("b7"), "\0\0\8\3" .. be32(1))))
    assert.matches("more than a %d+%-byte gzip file can hold",
                   err_of(data.idx, write_gz(tmp("b8"), "\0\0\8\2" .. be32(65536) .. be32(65536))))
    assert.matches("cannot open '/nonexistent/x'", err_of(data.idx, "/nonexistent/x"))
    assert.matches("i6' has 5 images but '.*l6' 4 labels",
                   err_of(data.idx, write(tmp("i6"), imgs), write(tmp("l6"), idx_labels({1, 2, 3, 4}))))
    assert.matches("labels must be 1%-D", err_of(data.idx, write(tmp("i7"), imgs), write(tmp("l7"), imgs)))
    assert.matches("not a list of samples", err_of(data.idx, write(tmp("i8"), labs)))
    assert.matches("images path must be a string", err_of(data.idx, 3))
    -- labels that cannot be classes, options that do not exist: named by data.idx itself (a
    -- negative label became class 0 or -1; a misspelled option was ignored)
    local two = write(tmp("i9"), idx_images(2, 2, 3))
    local neg = write(tmp("l9"), "\0\0\9\1" .. be32(2) .. string.char(0xFF, 2)) -- signed bytes -1, 2
    assert.matches("idx: '" .. neg:gsub("%p", "%%%0") .. "' holds a negative label %(%-1 at index 1%); labels are classes 0, 1, ...",
                   err_of(data.idx, two, neg))
    local flt = write(tmp("l10"), "\0\0\13\1" .. be32(2) .. string.pack(">f>f", 1, 2))
    assert.matches("holds float32 labels; labels must be integers", err_of(data.idx, two, flt))
    assert.matches("idx: unknown option 'flaten' %(options: flatten, scale%)", err_of(data.idx, two, nil, {flaten = false}))
    assert.matches("idx: scale must be a number, got string", err_of(data.idx, two, nil, {scale = "x"}))
  end)

  it("read_idx returns the raw tensor", function()
    local t = data.read_idx(write(tmp("r1"), labs))
    assert.are.equal("uint8", t:dtype())
    assert.are.same({0, 9, 3, 1, 0}, t:tolist())
  end)
end)

describe("data.TensorDataset and DataHandler", function()
  local function make(n)
    local x = pt.zeros(n, 2)
    for i = 1, n do
      x:_set_flat(2 * i - 1, i)
      x:_set_flat(2 * i, -i)
    end
    local y = pt.zeros(n, {dtype = "int64"})
    for i = 1, n do y[i] = i end
    return data.TensorDataset(x, y)
  end

  it("gets samples as {x, y} lists", function()
    local ds = make(4)
    local s = ds:get(3)
    assert.are.same({3, -3}, s[1]:tolist())
    assert.are.equal(3, s[2])
    assert.matches("index 5 out of range 1..4", err_of(ds.get, ds, 5))
  end)

  it("rejects mismatched tensors", function()
    assert.matches("differ in size along dimension 1 %(3 and 2%)",
                   err_of(data.TensorDataset, pt.zeros(3, 2), pt.zeros(2)))
    assert.matches("argument 2 is a number, not a tensor", err_of(data.TensorDataset, pt.zeros(3), 5))
    assert.matches("at least one tensor", err_of(data.TensorDataset))
  end)

  it("batches in order, with a short last batch, and counts batches", function()
    local h = data.DataHandler(make(5), {batch = 2, progress = false})
    assert.are.equal(3, #h)
    assert.are.equal(3, h:len())
    local seen = {}
    for x, y in h:batches() do
      seen[#seen + 1] = y:tolist()
      assert.are.equal(y:size(1), x:size(1))
    end
    assert.are.same({{1, 2}, {3, 4}, {5}}, seen)
  end)

  it("drop_last drops the short batch", function()
    local h = data.DataHandler(make(5), {batch = 2, drop_last = true, progress = false})
    assert.are.equal(2, #h)
    local n = 0
    for _, y in h:batches() do n = n + 1; assert.are.equal(2, y:size(1)) end
    assert.are.equal(2, n)
  end)

  it("uses rotta_rs defaults batch 128 and seed 42", function()
    local h = data.DataHandler(make(3))
    assert.are.equal(128, h.opts.batch)
    assert.are.equal(42, h.opts.seed)
    assert.is_false(h.opts.shuffle)
  end)

  it("shuffles reproducibly and differently per epoch", function()
    local function order(h)
      local o = {}
      for _, y in h:batches() do for _, v in ipairs(y:tolist()) do o[#o + 1] = v end end
      return o
    end
    local a = data.DataHandler(make(20), {batch = 3, shuffle = true, seed = 7, progress = false})
    local b = data.DataHandler(make(20), {batch = 3, shuffle = true, seed = 7, progress = false})
    local a1, a2 = order(a), order(a)
    assert.are.same(a1, order(b))
    assert.are.same(a2, order(b))
    assert.are_not.same(a1, a2)
    local sorted = {table.unpack(a1)}
    table.sort(sorted)
    for i = 1, 20 do assert.are.equal(i, sorted[i]) end
    local c = data.DataHandler(make(20), {batch = 3, shuffle = true, seed = 8, progress = false})
    assert.are_not.same(a1, order(c))
    -- set_epoch replays an epoch's order (for resuming)
    local d = data.DataHandler(make(20), {batch = 3, shuffle = true, seed = 7, progress = false})
    d:set_epoch(1)
    assert.are.same(a2, order(d))
  end)

  it("starts over after the last batch", function()
    local h = data.DataHandler(make(3), {batch = 2, progress = false})
    local it = h:batches()
    assert.are.same({1, 2}, select(2, it()):tolist())
    assert.are.same({3}, select(2, it()):tolist())
    assert.is_nil(it())
    assert.are.same({1, 2}, select(2, it()):tolist())
    -- next_batch never ends
    local seq = {}
    for _ = 1, 4 do seq[#seq + 1] = select(2, h:next_batch()):tolist()[1] end
    assert.are.same({1, 3, 1, 3}, seq)
  end)

  it("collates Lua datasets sample by sample", function()
    local ds = {
      get = function(_, i) return {pt.tensor({i, i * 2}), i % 2 + 1} end,
      len = function() return 3 end,
    }
    local h = data.DataHandler(ds, {batch = 3, progress = false})
    local x, y = h:batches()()
    assert.are.same({{1, 2}, {2, 4}, {3, 6}}, x:tolist())
    assert.are.equal("int64", y:dtype())
    assert.are.same({2, 1, 2}, y:tolist())
    local bad = {get = function(_, i) return {pt.zeros(i)} end, len = function() return 2 end}
    assert.are.equal("collate: sample 2 has shape {2} at key [1], sample 1 shape {1}",
                     err_of(data.DataHandler(bad, {progress = false}):batches()))
    local mixed = {get = function(_, i) return i == 1 and {1} or {"a"} end, len = function() return 2 end}
    assert.are.equal("collate: sample 2 has a string at key [1], sample 1 a number",
                     err_of(data.DataHandler(mixed, {progress = false}):batches()))
  end)

  it("rejects unknown options and options of the wrong type, naming them", function()
    local ds = make(4)
    assert.are.equal("DataHandler: unknown option 'batch_size' (options: batch, drop_last, log, prefetch, progress, "
      .. "sampler, seed, shuffle, transform, workers)", err_of(data.DataHandler, ds, {batch_size = 4}))
    assert.are.equal('DataHandler: shuffle must be a boolean, got "no"', err_of(data.DataHandler, ds, {shuffle = "no"}))
    assert.are.equal("DataHandler: shuffle must be a boolean, got 1", err_of(data.DataHandler, ds, {shuffle = 1}))
    assert.are.equal("DataHandler: drop_last must be a boolean, got 0", err_of(data.DataHandler, ds, {drop_last = 0}))
    assert.are.equal("DataHandler: batch must be a positive integer, got 2.5", err_of(data.DataHandler, ds, {batch = 2.5}))
    assert.are.equal("DataHandler: seed must be an integer, got \"7\"", err_of(data.DataHandler, ds, {seed = "7"}))
    assert.are.equal("DataHandler: progress must be true, false or a description string, got 3",
                     err_of(data.DataHandler, ds, {progress = 3}))
    assert.are.equal("DataHandler: log must be a path string, got true", err_of(data.DataHandler, ds, {log = true}))
    assert.are.equal("DataHandler: transform must be a function(x, y) -> x, y, got a table",
                     err_of(data.DataHandler, ds, {transform = {}}))
    assert.are.equal("DataHandler: unknown option 1 (options: batch, drop_last, log, prefetch, progress, sampler, seed, "
      .. "shuffle, transform, workers)", err_of(data.DataHandler, ds, {4}))
    local h = data.DataHandler(ds, {batch = 2, shuffle = false, drop_last = true, progress = "train", seed = 3})
    assert.are.equal(2, #h)
    assert.are.equal("batches: unknown option 'bar' (options: log, progress)", err_of(h.batches, h, {bar = false}))
    assert.are.equal("batches: log must be a path string, got 5", err_of(h.batches, h, {log = 5}))
    -- the option names the error is about, at the caller's line
    local ok, e = pcall(function()
      local bad = data.DataHandler(ds, {batch_size = 4})
      return bad
    end)
    assert.is_false(ok)
    assert.matches("^spec/data_spec%.lua:%d+: DataHandler: unknown option 'batch_size'", e)
  end)

  it("checks its arguments", function()
    assert.matches("dataset must have get%(i%) and len%(%)", err_of(data.DataHandler, {}))
    assert.matches("batch must be a positive integer", err_of(data.DataHandler, make(2), {batch = 0}))
    assert.matches("seed must be an integer", err_of(data.DataHandler, make(2), {seed = 1.5}))
    assert.matches("transform must be a function", err_of(data.DataHandler, make(2), {transform = 3}))
    assert.matches("epoch must be a non%-negative integer", err_of(data.DataHandler(make(2)).set_epoch, data.DataHandler(make(2)), -1))
  end)

  it("stops with a clean 'interrupted' error between batches", function()
    local h = data.DataHandler(make(6), {batch = 2, progress = false})
    local steps = 0
    local ok, err = pcall(function()
      for _ in h:batches() do
        steps = steps + 1
        if steps == 2 then pt._data_request_interrupt() end
      end
    end)
    assert.is_false(ok)
    assert.matches("interrupted$", err)
    assert.are.equal(2, steps)
    -- the flag was consumed: the next epoch runs
    local n = 0
    for _ in h:batches() do n = n + 1 end
    assert.are.equal(3, n)
  end)

  it("exposes dataset and opts for the dispatcher", function()
    local ds = make(3)
    local h = data.DataHandler(ds, {batch = 2})
    assert.are.equal(ds, h.dataset)
    assert.are.equal(2, h.opts.batch)
    assert.are.equal("function", type(h.par_by_sample))
  end)
end)

describe("DataHandler collation of structured samples (PyTorch's default_collate)", function()
  local function dataset(n, get) return {get = function(_, i) return get(i) end, len = function() return n end} end
  local function loader(ds, opts)
    opts = opts or {}
    opts.progress = false
    return data.DataHandler(ds, opts)
  end

  it("batches dict samples into one table per step, as many steps as #loader", function()
    local h = loader(dataset(5, function(i) return {x = pt.tensor({i, -i}), y = i} end), {batch = 2})
    assert.are.equal(3, #h)
    local xs, ys, seconds = {}, {}, 0
    for b, second in h:batches() do
      xs[#xs + 1] = b.x:tolist()
      ys[#ys + 1] = b.y:tolist()
      assert.are.equal("int64", b.y:dtype())
      if second ~= nil then seconds = seconds + 1 end
    end
    assert.are.same({{{1, -1}, {2, -2}}, {{3, -3}, {4, -4}}, {{5, -5}}}, xs)
    assert.are.same({{1, 2}, {3, 4}, {5}}, ys)
    assert.are.equal(0, seconds) -- one value per step
    local b = h:next_batch()
    assert.are.same({1, 2}, b.y:tolist())
  end)

  it("collates nested lists and dicts leaf by leaf", function()
    local h = loader(dataset(3, function(i)
      return {img = pt.full({2, 2}, i), meta = {id = i, w = i / 2, tags = {i, 10 * i}}, pair = {pt.tensor({i}), -i}}
    end), {batch = 3})
    local b = h:batches()()
    assert.are.same({3, 2, 2}, b.img:size())
    assert.are.same({{3, 3}, {3, 3}}, b.img:tolist()[3])
    assert.are.same({1, 2, 3}, b.meta.id:tolist())
    assert.are.equal("int64", b.meta.id:dtype())
    assert.are.same({0.5, 1, 1.5}, b.meta.w:tolist())
    assert.are.equal("float32", b.meta.w:dtype())
    assert.are.same({1, 2, 3}, b.meta.tags[1]:tolist())
    assert.are.same({10, 20, 30}, b.meta.tags[2]:tolist())
    assert.are.same({{1}, {2}, {3}}, b.pair[1]:tolist())
    assert.are.same({-1, -2, -3}, b.pair[2]:tolist())
    -- a list sample with a nested list still gives its fields as values
    local l = loader(dataset(2, function(i) return {pt.tensor({i}), i, {pt.tensor({i, i}), {k = i}}} end), {batch = 2})
    local x, y, z = l:batches()()
    assert.are.same({{1}, {2}}, x:tolist())
    assert.are.same({1, 2}, y:tolist())
    assert.are.same({{1, 1}, {2, 2}}, z[1]:tolist())
    assert.are.same({1, 2}, z[2].k:tolist())
  end)

  it("keeps one value per step for tensor and number samples, and counts empty-table samples", function()
    local t = loader(dataset(3, function(i) return pt.tensor({i, i}) end), {batch = 2})
    local x, y = t:batches()()
    assert.are.same({{1, 1}, {2, 2}}, x:tolist())
    assert.is_nil(y)
    local n = loader(dataset(3, function(i) return i + 0.5 end), {batch = 3})
    assert.are.same({1.5, 2.5, 3.5}, n:batches()():tolist())
    local e = loader(dataset(5, function() return {} end), {batch = 2})
    local steps = 0
    for b in e:batches() do
      steps = steps + 1
      assert.are.same({}, b)
    end
    assert.are.equal(#e, steps)
    assert.are.equal(3, steps)
  end)

  it("hands a dict batch to the transform as one table", function()
    local h = loader(dataset(4, function(i) return {x = pt.tensor({i}), y = i} end), {batch = 4,
      transform = function(b) b.x = b.x * 10; return b end})
    local b = h:batches()()
    assert.are.same({{10}, {20}, {30}, {40}}, b.x:tolist())
    local broken = loader(dataset(2, function(i) return {pt.tensor({i}), i} end),
      {transform = function(x) x:mul_(2) end})
    assert.are.equal("DataHandler: the transform returned nil; it must return the batch (x, y, ...)",
                     err_of(broken:batches()):gsub("^[^:]*:%d+: ", ""))
  end)

  it("names the sample and the key path of what cannot be collated", function()
    local function first_error(get, n, opts)
      return err_of(loader(dataset(n or 3, get), opts or {batch = 3}):batches())
    end
    assert.are.equal("collate: sample 1 is a string (a sample is a tensor, a number, a boolean, or a list or dict of "
      .. "them)",
      first_error(function() return "a" end))
    assert.are.equal("collate: sample 1 has a string at key name (a sample holds tensors, numbers, booleans, and "
      .. "lists or dicts of them)", first_error(function(i) return {x = pt.ones(1), name = "n" .. i} end))
    -- booleans collate to a bool {B}, as torch's default_collate (they were refused)
    local ok_batch = loader(dataset(3, function(i) return {meta = {ok = i ~= 2}} end), {batch = 3}):next_batch()
    assert.are.equal("bool", ok_batch.meta.ok:dtype())
    assert.are.same({true, false, true}, ok_batch.meta.ok:tolist())
    assert.are.equal("collate: sample 2 has a number at key ok, sample 1 a boolean",
      first_error(function(i) return {ok = i == 2 and 1 or true} end))
    assert.are.equal("collate: sample 1 is a table mixing list entries and named keys (a sample is a tensor, a "
      .. "number, a boolean, or a list or dict of them)", first_error(function() return {pt.ones(1), y = 1} end))
    assert.are.equal('collate: sample 1 has a table with holes (nil entries) at key ["a b"] (a sample holds '
      .. "tensors, numbers, booleans, and lists or dicts of them)", first_error(function() return {["a b"] = {1, nil, 3}} end))
    -- structures differing across samples: named by dataset index, against the batch's first sample
    assert.are.equal("collate: sample 2 is a list of 2, sample 1 a dict",
      first_error(function(i) return i == 2 and {pt.ones(1), 1} or {x = pt.ones(1), y = 1} end))
    assert.are.equal("collate: sample 3 has nothing at key y, sample 1 a number",
      first_error(function(i) return i == 3 and {x = pt.ones(1)} or {x = pt.ones(1), y = 1} end))
    assert.are.equal("collate: sample 2 has a table at key meta.id, sample 1 a number",
      first_error(function(i) return {meta = {id = i == 2 and {i} or i}} end))
    assert.are.equal("collate: sample 3 has a number at key pair, sample 1 a list of 2",
      first_error(function(i) return {pair = i == 3 and 5 or {i, i}} end))
    assert.are.equal("collate: sample 2 has a list of 1 at key pair, sample 1 a list of 2",
      first_error(function(i) return {pair = i == 2 and {i} or {i, i}} end))
    assert.are.equal("collate: sample 2 has dtype float64 at key x, sample 1 dtype float32",
      first_error(function(i) return {x = pt.ones(2, {dtype = i == 2 and "float64" or "float32"})} end))
    assert.are.equal("collate: sample 2 has shape {3}, sample 1 shape {2}",
      first_error(function(i) return pt.ones(i == 2 and 3 or 2) end))
    assert.are.equal("collate: sample 3 is a tensor, sample 1 a number", first_error(function(i)
      return i == 3 and pt.ones(1) or i end))
    -- with shuffle, the indices are the dataset's, the reference the batch's first sample
    local perm = pt._data_permutation(6, 12, 0, true):tolist()
    assert.are_not.equal(4, perm[1])
    assert.are.equal(("collate: sample 4 has shape {3} at key x, sample %d shape {2}"):format(perm[1]),
      first_error(function(i) return {x = pt.ones(i == 4 and 3 or 2)} end, 6, {batch = 6, shuffle = true, seed = 12}))
  end)

  it("collates {tensor, number} lists as before", function()
    local h = loader(dataset(5, function(i) return {pt.tensor({i, 2 * i}), i % 3 + 1} end), {batch = 2})
    local seen = {}
    for x, y, z in h:batches() do
      assert.is_nil(z)
      seen[#seen + 1] = {x:tolist(), y:tolist()}
    end
    assert.are.same({{{{1, 2}, {2, 4}}, {2, 3}}, {{{3, 6}, {4, 8}}, {1, 2}}, {{{5, 10}}, {3}}}, seen)
  end)
end)

describe("data.Subset and random_split", function()
  local x = pt.zeros(10, 1)
  for i = 1, 10 do x:_set_flat(i, i) end
  local ds = data.TensorDataset(x)

  it("Subset maps indices and stays C-collated", function()
    local s = data.Subset(ds, {4, 2, 9})
    assert.are.equal(3, s:len())
    assert.are.same({2}, s:get(2)[1]:tolist())
    local h = data.DataHandler(s, {batch = 3, progress = false})
    assert.are.same({{4}, {2}, {9}}, h:batches()():tolist())
    assert.matches("index 11 %(entry 1%) out of range 1..10", err_of(data.Subset, ds, {11}))
    assert.matches("Subset: index 3.0 %(entry 1%) is not an integer", err_of(data.Subset, ds, pt.tensor({3, 1})))
    assert.matches("TensorDataset: index 2.0 is not an integer", err_of(ds.get, ds, 2.0))
  end)

  it("random_split partitions reproducibly", function()
    local a, b = data.random_split(ds, {7, 3}, {seed = 1})
    assert.are.equal(7, a:len())
    assert.are.equal(3, b:len())
    local all = {}
    for _, s in ipairs({a, b}) do for i = 1, s:len() do all[#all + 1] = s:get(i)[1]:tolist()[1] end end
    table.sort(all)
    for i = 1, 10 do assert.are.equal(i, all[i]) end
    local a2 = data.random_split(ds, {7, 3}, {seed = 1})
    assert.are.same(a.list, a2.list)
    local f1, f2 = data.random_split(ds, {0.5, 0.5})
    assert.are.equal(5, f1:len())
    assert.are.equal(5, f2:len())
    assert.matches("sizes add up to 9 but the dataset has 10 samples", err_of(data.random_split, ds, {6, 3}))
    assert.matches("fractions must add up to 1", err_of(data.random_split, ds, {0.5, 0.2}))
    assert.matches("non%-empty list", err_of(data.random_split, ds, {}))
  end)

  it("random_split rejects fractions outside [0, 1] and negative sizes", function()
    assert.are.equal("random_split: fraction at index 1 is not between 0 and 1 (got 1.5)",
                     err_of(data.random_split, ds, {1.5, -0.5}))
    assert.are.equal("random_split: fraction at index 2 is not between 0 and 1 (got -0.5)",
                     err_of(data.random_split, ds, {0.75, -0.5, 0.75}))
    assert.are.equal("random_split: fraction at index 2 is not between 0 and 1 (got nan)",
                     err_of(data.random_split, ds, {0.5, 0 / 0, 0.5}))
    assert.are.equal("random_split: size 1 must be a non-negative integer, got -3",
                     err_of(data.random_split, ds, {-3, 13}))
    assert.are.equal("random_split: size 2 must be a number, got a string", err_of(data.random_split, ds, {5, "5"}))
    -- integral floats are sizes, unless they add up to 1 (PyTorch's rule)
    local a, b = data.random_split(ds, {7.0, 3.0})
    assert.are.equal(7, a:len())
    assert.are.equal(3, b:len())
    assert.are.equal(10, data.random_split(ds, {1.0}):len())
    local c, d, e = data.random_split(ds, {0.25, 0.25, 0.5})
    assert.are.same({3, 2, 5}, {c:len(), d:len(), e:len()}) -- floor: 2, 2, 5; the one left over goes to part 1
  end)
end)

describe("data.csv", function()
  it("reads features and integer labels by name", function()
    local p = write(tmp("a.csv"), "f1,f2,y\n1,2,0\n3.5,4,1\n\n5,6,2\n")
    local ds = data.csv(p, {label = "y", label_offset = 1})
    assert.are.equal(3, ds:len())
    assert.are.same({{1, 2}, {3.5, 4}, {5, 6}}, ds.features:tolist())
    assert.are.same({1, 2, 3}, ds.labels:tolist())
    assert.are.same({"f1", "f2", "y"}, ds.header)
  end)

  it("turns word labels into class indices", function()
    local p = write(tmp("b.csv"), "a,species,b\n1,setosa,2\n3,virginica,4\n5,setosa,6\n")
    local ds = data.csv(p, {label = 2})
    assert.are.same({1, 2, 1}, ds.labels:tolist())
    assert.are.same({"setosa", "virginica"}, ds.classes)
    assert.are.same({{1, 2}, {3, 4}, {5, 6}}, ds.features:tolist())
  end)

  it("keeps float labels for regression and allows no labels", function()
    local p = write(tmp("c.csv"), "1,0.5\n2,1.5\n")
    local ds = data.csv(p, {header = false})
    assert.are.equal("float32", ds.labels:dtype())
    local nl = data.csv(p, {header = false, label = false})
    assert.is_nil(nl.labels)
    assert.are.same({2, 2}, nl.features:size())
  end)

  it("names the problem in bad files", function()
    assert.matches(":3: expected 3 fields, got 2", err_of(data.csv, write(tmp("d.csv"), "a,b,c\n1,2,3\n4,5\n")))
    assert.matches(":2: field 1 %('x'%) is not a number", err_of(data.csv, write(tmp("e.csv"), "a,b\nx,1\n")))
    assert.matches("no column named 'z'", err_of(data.csv, write(tmp("f.csv"), "a,b\n1,2\n"), {label = "z"}))
    assert.are.equal("csv: unknown option 'lable' (options: header, label, label_offset)",
      err_of(data.csv, write(tmp("o.csv"), "a,y\n1,2\n"), {lable = "y"}):gsub("^[^\n]-:%d+: ", ""))
    -- a label name the header gives twice is ambiguous; by index it is not
    local dup = write(tmp("dup.csv"), "a,y,b,y\n1,2,3,4\n")
    assert.are.equal("csv: '" .. dup .. "': the header names columns 2 and 4 'y': give the label column by index",
      err_of(data.csv, dup, {label = "y"}):gsub("^[^\n]-:%d+: ", ""))
    assert.are.same({4}, data.csv(dup, {label = 4}).labels:tolist())
    assert.matches("is empty", err_of(data.csv, write(tmp("g.csv"), "\n\n")))
    assert.matches("has a header but no rows", err_of(data.csv, write(tmp("h.csv"), "a,b\n")))
    assert.matches("label column 7 out of range", err_of(data.csv, write(tmp("i.csv"), "1,2\n"), {header = false, label = 7}))
    assert.matches("needs header = true", err_of(data.csv, write(tmp("j.csv"), "1,2\n"), {header = false, label = "a"}))
    assert.matches("cannot open", err_of(data.csv, tmp("missing.csv")))
    assert.matches("NUL bytes", err_of(data.csv, write(tmp("k.csv"), "1,2\0\n")))
  end)

  it("reads RFC 4180 quoted fields: commas, doubled quotes, newlines", function()
    local p = write(tmp("q.csv"), 'a,b,city\n1,2,"New York, NY"\n3, "4" ,"Boston, MA"\r\n5,6,"New York, NY"\n')
    local ds = data.csv(p)
    assert.are.same({"New York, NY", "Boston, MA"}, ds.classes)
    assert.are.same({1, 2, 1}, ds.labels:tolist())
    assert.are.same({{1, 2}, {3, 4}, {5, 6}}, ds.features:tolist())
    local q = write(tmp("q2.csv"), '"x, the first","say ""hi""",label\n1,2,"two\nlines"\n3,4,"a ""q"""\n5,6,""""\n')
    local d2 = data.csv(q, {label = 3})
    assert.are.same({"x, the first", 'say "hi"', "label"}, d2.header)
    assert.are.same({"two\nlines", 'a "q"', '"'}, d2.classes)
    assert.are.same({1, 2, 3}, d2.labels:tolist())
    local e = write(tmp("q2e.csv"), 'a,b,label\n1,2,"two\nlines"\n3,4,x\n5,6,""\n')
    assert.are.equal("csv: '" .. e .. "': row 3 has an empty label", err_of(data.csv, e))
    -- messages after a quoted newline count the file's lines
    local r = write(tmp("q3.csv"), 'a,b\n1,"x\ny"\n2,z\n')
    assert.are.equal("csv: '" .. r .. "':2: field 2 ('x\ny') is not a number", err_of(data.csv, r, {label = false}))
    local s = write(tmp("q4.csv"), 'a,b\n1,"x\ny"\n4,5,6\n')
    assert.are.equal("csv: '" .. s .. "':4: expected 2 fields, got 3", err_of(data.csv, s))
  end)

  it("names unterminated quotes and text after a closing quote", function()
    local p = write(tmp("u.csv"), 'a,b\n1,2\n3,"4\n5,6\n')
    assert.are.equal("csv: '" .. p .. "':3: field 2: unterminated quoted field", err_of(data.csv, p))
    local q = write(tmp("u2.csv"), 'a,b\n1,"2"x\n')
    assert.are.equal("csv: '" .. q .. "':2: field 2: unexpected 'x' after the closing quote", err_of(data.csv, q))
  end)

  it("skips a UTF-8 byte order mark", function()
    local p = write(tmp("bom.csv"), "\239\187\191a,b,label\n1,2,0\n3,4,1\n")
    local ds = data.csv(p, {label = "a"})
    assert.are.same({"a", "b", "label"}, ds.header)
    assert.are.same({1, 3}, ds.labels:tolist())
    local q = write(tmp("bom2.csv"), "\239\187\1911,2\n3,4\n")
    assert.are.same({{1}, {3}}, data.csv(q, {header = false}).features:tolist())
  end)

  it("gives the file's column count for every label index out of range", function()
    local p = write(tmp("l.csv"), "a,b,label\n1,2,0\n")
    for _, k in ipairs({0, 4, -4, 7, 1 << 40, -(1 << 40)}) do
      assert.are.equal(("csv: '%s': label column %d out of range (the file has 3 columns)"):format(p, k),
                       err_of(data.csv, p, {label = k}))
    end
    assert.are.same({1, 3}, data.csv(write(tmp("l2.csv"), "a,b,c\n1,2,3\n3,4,5\n"), {label = -3}).labels:tolist())
  end)
end)

describe("data.transforms", function()
  local T = data.transforms

  it("normalize per channel and overall", function()
    local x = pt.ones(2, 2, 1, 2)
    x = T.normalize({1, 0}, {2, 0.5})(x)
    assert.are.same({{{{0, 0}}, {{2, 2}}}, {{{0, 0}}, {{2, 2}}}}, x:tolist())
    local f = pt.ones(1, 4)
    assert.are.same({{2, 2, 2, 2}}, T.normalize(0.5, 0.25)(f):tolist())
    assert.matches("std must not be zero", err_of(T.normalize(0, 0), pt.ones(1, 2)))
    assert.matches("expected a float32 or float64 batch, got int64",
                   err_of(T.normalize(0, 1), pt.ones(1, 2, {dtype = "int64"})))
    assert.matches("2 means but 1 stds", err_of(T.normalize({0, 1}, {1}), pt.ones(1, 2, 1, 1)))
  end)

  it("one_hot turns 1-based labels into rows", function()
    local _, y = T.one_hot(3)(nil, pt.tensor({3, 1}, {dtype = "int64"}))
    assert.are.same({{0, 0, 1}, {1, 0, 0}}, y:tolist())
    assert.matches("label 4 out of range 1..3", err_of(T.one_hot(3), nil, pt.tensor({4}, {dtype = "int64"})))
    assert.matches("num_classes must be a positive integer", err_of(T.one_hot, 0))
  end)

  it("random_flip mirrors images, flattened or not", function()
    local x = pt.tensor({{{{1, 2, 3}}}})
    assert.are.same({{{{3, 2, 1}}}}, T.random_flip(1)(x):tolist())
    assert.are.same({{{{3, 2, 1}}}}, T.random_flip(0)(x):tolist())
    local f = pt.tensor({{1, 2, 3, 4}})
    assert.are.same({{2, 1, 4, 3}}, T.random_flip(1, {shape = {2, 2}})(f):tolist())
    assert.matches("give the image shape", err_of(T.random_flip(1), pt.ones(2, 4)))
    assert.matches("p must be in %[0, 1%]", err_of(T.random_flip, 2))
  end)

  it("random_crop pads and crops", function()
    pt.manual_seed(3)
    local x = pt.ones(4, 1, 3, 3)
    local c = T.random_crop(3, 1)(x)
    assert.are.same({4, 1, 3, 3}, c:size())
    -- each window keeps at least a 2x2 block of ones, and padding brings zeros in somewhere
    local total, zeros = 0, 0
    for _, v in ipairs(c:tolist()) do
      for _, row in ipairs(v[1]) do for _, e in ipairs(row) do total = total + e; if e == 0 then zeros = zeros + 1 end end end
    end
    assert.is_true(total >= 16)
    local same = T.random_crop(3, 0)(x)
    assert.are.same(x:tolist(), same:tolist())
    local flat = T.random_crop(2, 0, {shape = {1, 3, 3}})(pt.ones(2, 9))
    assert.are.same({2, 4}, flat:size())
    assert.matches("crop size 9 does not fit images 3x3 with padding 1", err_of(T.random_crop(9, 1), x))
    assert.is_true(zeros >= 0)
  end)

  it("compose applies transforms in order, also through a DataHandler", function()
    local x = pt.ones(4, 1)
    local y = pt.tensor({1, 2, 1, 2}, {dtype = "int64"})
    local h = data.DataHandler(data.TensorDataset(x, y), {batch = 4, progress = false,
      transform = T.compose(T.normalize(0.5, 0.5), T.one_hot(2))})
    local bx, by = h:batches()()
    assert.are.same({{1}, {1}, {1}, {1}}, bx:tolist())
    assert.are.same({{1, 0}, {0, 1}, {1, 0}, {0, 1}}, by:tolist())
    assert.matches("transform 2 is not a function", err_of(T.compose, T.one_hot(2), 3))
  end)
end)

describe("progress", function()
  local progress = require "partrain.progress"

  local function capture()
    local buf = {}
    return {write = function(self, ...) for _, s in ipairs({...}) do buf[#buf + 1] = s end return self end,
            flush = function() end, text = function() return table.concat(buf) end}
  end

  it("draws a bar with \\r on a TTY with step/total, loss, rate and ETA", function()
    local s = capture()
    local bar = progress.new{total = 4, desc = "epoch 1", mode = "tty", stream = s}
    bar:report(pt.tensor(2.0))
    bar:step(10)
    bar:report(4)
    bar:step(10)
    bar:draw()
    local text = s.text()
    assert.matches("^\repoch 1  %[", text)
    assert.matches("2/4", text)
    assert.matches("loss 3.0000", text)
    assert.matches("samples/s", text)
    assert.matches("ETA", text)
    bar:close()
    assert.matches("\n$", s.text())
  end)

  it("prints plain lines every N steps when not a TTY", function()
    local s = capture()
    local bar = progress.new{total = 6, mode = "plain", stream = s, every = 2}
    for _ = 1, 6 do bar:step(1) end
    local _, lines = s.text():gsub("\n", "\n")
    assert.are.equal(3, lines)
    assert.matches("4/6", s.text())
    assert.is_nil(s.text():find("\r", 1, true))
  end)

  it("writes a JSON-lines log per epoch through the DataHandler", function()
    local log = tmp("metrics.jsonl")
    os.remove(log)
    local x = pt.zeros(4, 1)
    local h = data.DataHandler(data.TensorDataset(x), {batch = 2, progress = false, log = log})
    for _ in h:batches() do h:report(1.5) end
    local f = assert(io.open(log))
    local line = f:read("l")
    f:close()
    local rec = pt._json_decode(line)
    assert.are.equal("epoch", rec.event)
    assert.are.equal(2, rec.steps)
    assert.are.equal(4, rec.samples)
    assert.are.equal(1.5, rec.loss)
    assert.are.equal(1, rec.epoch)
  end)

  it("wraps any iterator", function()
    local s = capture()
    local got = {}
    for i, v in progress.wrap({total = 3, mode = "plain", stream = s}, ipairs({"a", "b", "c"})) do got[i] = v end
    assert.are.same({"a", "b", "c"}, got)
    assert.matches("3/3", s.text())
    assert.matches("iterator function expected", err_of(progress.wrap, {}, 3))
  end)

  it("rejects non-numeric reports and bad modes", function()
    local bar = progress.new{total = 1, mode = "none"}
    assert.matches("value of 'loss' is a string", err_of(bar.report, bar, "x"))
    assert.matches("mode must be", err_of(progress.new, {mode = "fancy"}))
  end)

  it("has a C isatty and a monotonic clock", function()
    assert.are.equal("boolean", type(pt._isatty(1)))
    local a = pt._data_now()
    assert.is_true(pt._data_now() >= a)
  end)
end)
