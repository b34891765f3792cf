-- DataHandler with workers = n: batches read, collated and transformed on the loader's worker
-- threads must be exactly those of workers = 0, in the same order.
local pt = require "partrain"
local data = pt.data
local T = data.transforms

local function err_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  return tostring(err)
end

-- a batch's values as plain tables: tensors become {dtype, shape, values}
local function plain(v)
  if pt.is_tensor(v) then return {v:dtype(), v:size(), v:tolist()} end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = plain(x) end
    return out
  end
  return v
end

local function loader(ds, opts, workers)
  local o = {progress = false, workers = workers}
  for k, v in pairs(opts) do o[k] = v end
  return data.DataHandler(ds, o)
end

-- every batch of `epochs` epochs (batches()), then `extra` next_batch() calls
local function run(ds, opts, workers, epochs, extra)
  local h = loader(ds, opts, workers)
  local out = {}
  for _ = 1, epochs or 2 do
    local epoch = {}
    for a, b, c in h:batches() do epoch[#epoch + 1] = plain({a, b, c}) end
    out[#out + 1] = epoch
  end
  for _ = 1, extra or 0 do out[#out + 1] = plain(table.pack(h:next_batch())) end
  h:close()
  return out
end

-- images {10, 1, 4, 4} (pixel values distinct) with int64 labels
local function image_dataset(n)
  local x = pt.arange(n * 16):float():reshape(n, 1, 4, 4)
  return data.TensorDataset(x, pt.arange(n) % 3 + 1)
end

-- a Lua dataset whose get goes through closures, upvalues and a helper table
local function dict_dataset(n)
  local scale = {by = 0.5}
  local function feature(i) return pt.tensor({i, -i, i * scale.by}) end
  return {
    get = function(_, i) return {x = feature(i), y = i % 2 + 1, meta = {w = i / 4, tags = {i, 10 * i}}} end,
    len = function() return n end,
  }
end

describe("DataHandler workers", function()
  it("give the batches of workers = 0 for TensorDatasets, with shuffle, drop_last and a short last batch", function()
    for _, n in ipairs({10, 9}) do -- 10: a last batch of 1; 9: none
      for _, shuffle in ipairs({false, true}) do
        for _, drop_last in ipairs({false, true}) do
          local opts = {batch = 3, shuffle = shuffle, drop_last = drop_last, seed = 7}
          local ds = image_dataset(n)
          local expect = run(ds, opts, 0, 2, 5)
          assert.are.equal((drop_last or n == 9) and 3 or 4, #expect[1])
          if n == 10 and not drop_last then assert.are.same({1}, expect[1][4][2][2]) end -- short last batch
          for _, w in ipairs({1, 2, 3}) do
            assert.are.same(expect, run(ds, opts, w, 2, 5), ("n=%d shuffle=%s drop_last=%s workers=%d"):format(
              n, tostring(shuffle), tostring(drop_last), w))
          end
        end
      end
    end
  end)

  it("give the batches of workers = 0 with random transforms (flip, crop), also over epochs", function()
    local ds = image_dataset(11)
    local tf = T.compose(T.random_flip(0.5), T.random_crop(3, 1), T.normalize(0.5, 0.25), T.one_hot(3))
    for _, shuffle in ipairs({false, true}) do
      local opts = {batch = 4, shuffle = shuffle, transform = tf}
      local expect = run(ds, opts, 0, 3, 4)
      for _, w in ipairs({1, 2, 3}) do assert.are.same(expect, run(ds, opts, w, 3, 4)) end
    end
    -- flattened images: the flip draws per image
    local flat = data.TensorDataset(pt.arange(6 * 16):float():reshape(6, 16), pt.arange(6))
    local opts = {batch = 2, transform = T.random_flip(0.5, {shape = {1, 4, 4}})}
    local expect = run(flat, opts, 0)
    for _, w in ipairs({1, 2, 3}) do assert.are.same(expect, run(flat, opts, w)) end
  end)

  it("give the batches of workers = 0 for dict samples of a Lua dataset, with a random transform", function()
    local ds = dict_dataset(7)
    local opts = {batch = 3, shuffle = true, seed = 3,
      transform = function(b) b.x = b.x + pt.rand(b.x:size()); return b end}
    local expect = run(ds, opts, 0, 2, 4)
    assert.are.same({"float32", {3, 3}}, {expect[1][1][1].x[1], expect[1][1][1].x[2]})
    assert.are.same({"int64", {3}}, {expect[1][1][1].meta.tags[2][1], expect[1][1][1].meta.tags[2][2]})
    for _, w in ipairs({1, 2, 3}) do assert.are.same(expect, run(ds, opts, w, 2, 4)) end
    -- list samples with several values per step, and tensor samples with one
    local list = {get = function(_, i) return {pt.tensor({i}), i, {pt.tensor({i, i}), {k = i}}} end,
                  len = function() return 5 end}
    local one = {get = function(_, i) return pt.full({2}, i) end, len = function() return 5 end}
    for _, ds2 in ipairs({list, one}) do
      local e2 = run(ds2, {batch = 2}, 0)
      for _, w in ipairs({1, 2, 3}) do assert.are.same(e2, run(ds2, {batch = 2}, w)) end
    end
  end)

  it("make every batch under a seed of its own: the same each run, by seed and epoch, the caller's generator untouched",
    function()
      local ds = image_dataset(8)
      local function flips(seed, w)
        local h = loader(ds, {batch = 4, seed = seed, transform = T.random_flip(0.5)}, w)
        local out = {}
        for _ = 1, 2 do
          local epoch = {}
          for x in h:batches() do epoch[#epoch + 1] = x:tolist() end
          out[#out + 1] = epoch
        end
        h:close()
        return out
      end
      for _, w in ipairs({0, 2}) do
        pt.manual_seed(11)
        local expect = pt.rand(4):tolist()
        pt.manual_seed(11)
        local a = flips(5, w)
        assert.are.same(expect, pt.rand(4):tolist()) -- the loader drew nothing from the caller's generator
        pt.manual_seed(12345)
        assert.are.same(a, flips(5, w)) -- nor does it depend on it
        assert.are_not.same(a[1], a[2]) -- epochs draw differently (no shuffle: only the flips differ)
        assert.are_not.same(a, flips(6, w))
        -- some images were flipped and some not
        local x = ds.tensors[1]:tolist()
        local same, flipped = 0, 0
        for b = 1, 2 do
          for i = 1, 4 do
            local img, orig = a[1][b][i][1], x[(b - 1) * 4 + i][1]
            if img[1][1] == orig[1][1] then same = same + 1 end
            if img[1][1] == orig[1][4] then flipped = flipped + 1 end
          end
        end
        assert.are.equal(8, same + flipped)
        assert.is_true(same > 0 and flipped > 0)
      end
    end)

  it("run get, collation and the transform on the worker threads", function()
    local ds = {
      get = function(_, i)
        h6_reads = (h6_reads or 0) + 1 -- a global of the state that runs get
        return {pt.tensor({i}), pt.worker_id()}
      end,
      len = function() return 12 end,
    }
    local function ids(w)
      local h = loader(ds, {batch = 3, transform = function(x, y) return x, {y, pt.worker_id()} end}, w)
      local out = {}
      for _, ys in h:batches() do
        local list, transform_id = ys[1]:tolist(), ys[2]
        for _, id in ipairs(list) do assert.are.equal(list[1], id) end -- one state made the whole batch
        assert.are.equal(list[1], transform_id)
        out[#out + 1] = list[1]
      end
      h:close()
      return out
    end
    assert.are.same({0, 0, 0, 0}, ids(0))
    assert.are.equal(12, h6_reads)
    h6_reads = nil
    for _, w in ipairs({1, 2, 3}) do
      for _, id in ipairs(ids(w)) do assert.is_true(id >= 1 and id <= w) end
      assert.is_nil(h6_reads) -- the workers counted in their own states
    end
  end)

  it("hand tensors back by reference", function()
    local shared = pt.zeros(2)
    local ds = data.TensorDataset(pt.ones(4, 2))
    local h = loader(ds, {batch = 2, transform = function(x) return x, shared end}, 2)
    local x, s = h:next_batch()
    assert.are.same({{1, 1}, {1, 1}}, x:tolist())
    s:fill_(7) -- the very tensor the transform returned on the worker
    assert.are.same({7, 7}, shared:tolist())
    h:close()
  end)

  it("keep prefetch batches in flight ahead of the consumer", function()
    local ds = data.TensorDataset(pt.arange(20) + 1)
    local h = loader(ds, {batch = 2, prefetch = 3}, 2)
    -- batches sent to the workers and not yet delivered: running, queued or arrived early
    local function ahead()
      local n = h._par.pool:pending()
      for _ in pairs(h._par.results) do n = n + 1 end
      return n
    end
    assert.are.same({1, 2}, h:next_batch():tolist())
    assert.are.equal(3, ahead()) -- batches 2..4
    assert.are.same({3, 4}, h:next_batch():tolist())
    assert.are.equal(3, ahead())
    for _ = 3, 9 do h:next_batch() end
    assert.are.equal(1, ahead()) -- only batch 10 is left in the epoch
    assert.are.same({19, 20}, h:next_batch():tolist())
    assert.are.equal(0, ahead())
    assert.are.same({1, 2}, h:next_batch():tolist()) -- wraps around to epoch 2
    assert.are.equal(2, h.epoch)
    assert.are.equal(2, loader(ds, {}, 1).opts.prefetch) -- default: 2 per worker
    assert.are.equal(6, loader(ds, {}, 3).opts.prefetch)
    h:close()
  end)

  it("share the workers between iterators: loops, break, next_batch", function()
    local ds = image_dataset(10)
    local opts = {batch = 3, shuffle = true, transform = T.random_flip(0.5)}
    local function session(w)
      local h = loader(ds, opts, w)
      local out = {}
      local function add(...) out[#out + 1] = plain(table.pack(...)) end
      add(h:next_batch())
      for x, y in h:batches() do -- epoch 2, left after 2 batches
        add(x, y)
        if #out == 3 then break end
      end
      add(h:next_batch()) -- next_batch's iterator goes on with its epoch 1
      for x, y in h:batches() do add(x, y) end -- epoch 3, whole
      add(h:next_batch())
      add(h:next_batch())
      add(h:next_batch()) -- the end of epoch 1: wraps around to epoch 4
      add(h:next_batch())
      add(h.epoch)
      h:close()
      return out
    end
    local expect = session(0)
    assert.are.equal(13, #expect)
    assert.are.same({n = 1, 4}, expect[13])
    for _, w in ipairs({1, 2, 3}) do assert.are.same(expect, session(w)) end
  end)

  it("report a failing get with the batch, the sample, the worker and its traceback, and go on", function()
    local ds = {
      get = function(_, i)
        if i == 5 then error("bad sample " .. i) end
        return {pt.tensor({i})}
      end,
      len = function() return 8 end,
    }
    local h = loader(ds, {batch = 2}, 2)
    local it = h:batches()
    assert.are.same({{1}, {2}}, it():tolist())
    assert.are.same({{3}, {4}}, it():tolist())
    local e = err_of(it)
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: batch 3 failed on worker [12] reading sample 5: "
      .. "spec/data_workers_spec%.lua:%d+: bad sample 5\nstack traceback:\n", e)
    assert.matches("spec/data_workers_spec%.lua:%d+: in method 'get'", e)
    assert.are.same({{7}, {8}}, it():tolist()) -- the next batch, as with workers = 0
    assert.is_nil(it())
    -- the loader stays usable; next_batch goes past the failing batch too
    local seen = {}
    assert.matches("batch 3 failed on worker [12] reading sample 5", err_of(function()
      for x in h:batches() do seen[#seen + 1] = x:tolist()[1][1] end
    end))
    assert.are.same({1, 3}, seen)
    for _ = 1, 2 do h:next_batch() end
    assert.matches("reading sample 5: spec/data_workers_spec%.lua:%d+: bad sample 5", err_of(h.next_batch, h))
    assert.are.same({{7}, {8}}, h:next_batch():tolist())
    assert.are.same({{1}, {2}}, h:next_batch():tolist())
    -- with shuffle the sample is the dataset's index
    local perm = pt._data_permutation(8, 4, 0, true):tolist()
    local pos
    for k, i in ipairs(perm) do if i == 5 then pos = k end end
    local hs = loader(ds, {batch = 2, shuffle = true, seed = 4}, 3)
    assert.matches(("DataHandler: batch %d failed on worker %%d reading sample 5: "):format((pos + 1) // 2),
      err_of(function() for _ in hs:batches() do end end))
    h:close()
    hs:close()
  end)

  it("report transform and collation errors, and a result that cannot come back", function()
    local ds = data.TensorDataset(pt.arange(6):float())
    local h = loader(ds, {batch = 2, transform = function(x)
      if x[1] == 2 then error("flip failed") end
      return x
    end}, 2)
    local e = err_of(function() for _ in h:batches() do end end)
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: batch 2 failed on worker [12] in the transform: "
      .. "spec/data_workers_spec%.lua:%d+: flip failed\nstack traceback:\n", e)
    assert.matches("in local 'transform'", e)
    -- the same message for a transform returning nil as with workers = 0
    local broken = loader(ds, {transform = function(x) x:mul_(2) end}, 1)
    assert.are.equal("DataHandler: the transform returned nil; it must return the batch (x, y, ...)",
                     err_of(broken:batches()):gsub("^[^:]*:%d+: ", ""))
    -- collation: the message of workers = 0, naming the dataset's samples
    local bad = {get = function(_, i) return {pt.zeros(i)} end, len = function() return 2 end}
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: batch 1 failed on worker 1: "
      .. "collate: sample 2 has shape {2} at key %[1%], sample 1 shape {1}\nstack traceback:", err_of(function()
        return loader(bad, {}, 1):batches()()
      end))
    local co_maker = loader(ds, {batch = 2, transform = function(x) return x, coroutine.create(print) end}, 1)
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: batch 1 failed on worker 1: cannot return the "
      .. "result: field '%[2%]' %(thread%) cannot be sent back to the caller", err_of(co_maker.next_batch, co_maker))
    assert.matches("batch 2 failed", err_of(co_maker.next_batch, co_maker))
    h:close()
    broken:close()
    co_maker:close()
  end)

  it("refuse a dataset or a transform that cannot be sent, with the transfer's message", function()
    local co = coroutine.create(function() end)
    local ok, e = pcall(function()
      return data.DataHandler({get = function() return co end, len = function() return 1 end}, {workers = 2})
    end)
    assert.is_false(ok)
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: upvalue 'co' %(thread%) of function 'dataset.get' "
      .. "cannot be sent to a worker$", e)
    local f = assert(io.open("spec/data_workers_spec.lua"))
    assert.matches("DataHandler: field 'dataset%.f' %(userdata FILE%*%) cannot be sent to a worker %(in dataset%)$",
      err_of(data.DataHandler, {f = f, get = function() end, len = function() return 1 end}, {workers = 1}))
    f:close()
    assert.matches("DataHandler: upvalue 'co' %(thread%) of function 'transform' cannot be sent to a worker$",
      err_of(data.DataHandler, data.TensorDataset(pt.ones(2)), {workers = 1, transform = function(x) return x, co end}))
    -- the same dataset is fine without workers
    assert.are.equal(1, #data.DataHandler({get = function() return co end, len = function() return 1 end}))
  end)

  it("check workers and prefetch", function()
    local ds = data.TensorDataset(pt.ones(4))
    assert.are.equal("DataHandler: workers must be an integer from 0 to 256, got -1",
                     err_of(data.DataHandler, ds, {workers = -1}))
    assert.are.equal("DataHandler: workers must be an integer from 0 to 256, got 1.5",
                     err_of(data.DataHandler, ds, {workers = 1.5}))
    assert.are.equal("DataHandler: workers must be an integer from 0 to 256, got 300",
                     err_of(data.DataHandler, ds, {workers = 300}))
    assert.are.equal('DataHandler: workers must be an integer from 0 to 256, got "2"',
                     err_of(data.DataHandler, ds, {workers = "2"}))
    assert.are.equal("DataHandler: prefetch must be a positive integer, got 0",
                     err_of(data.DataHandler, ds, {workers = 1, prefetch = 0}))
    assert.are.equal("DataHandler: prefetch = 2 needs workers > 0 (batches are read in the caller with workers = 0)",
                     err_of(data.DataHandler, ds, {prefetch = 2}))
    assert.are.equal("DataHandler: prefetch must be at most 4 * workers (8) with workers = 2, got 9",
                     err_of(data.DataHandler, ds, {workers = 2, prefetch = 9}))
    local ok, e = pcall(function()
      local bad = data.DataHandler(ds, {workers = 1, prefetch = 5})
      return bad
    end)
    assert.is_false(ok)
    assert.matches("^spec/data_workers_spec%.lua:%d+: DataHandler: prefetch must be at most 4", e)
    local h = data.DataHandler(ds, {workers = 2, prefetch = 8, batch = 2})
    assert.are.equal("DataHandler(batch=2, shuffle=false, workers=2, prefetch=8, 2 batches of TensorDataset(4))",
                     tostring(h))
    h:close()
    assert.are.equal("DataHandler(batch=2, shuffle=false, workers=2, prefetch=8, closed, 2 batches of TensorDataset(4))",
                     tostring(h))
    local d = data.DataHandler(ds, {workers = 3, batch = 4})
    assert.are.equal("DataHandler(batch=4, shuffle=false, workers=3, 1 batch of TensorDataset(4))", tostring(d))
    d:close()
  end)

  it("stop their threads on close(), <close> and collection", function()
    local ds = data.TensorDataset(pt.arange(10) + 1)
    local h = loader(ds, {batch = 2}, 2)
    local pool = h._par.pool
    h:next_batch() -- batches in flight
    h:close()
    assert.is_true(pool:closed())
    h:close() -- idempotent
    assert.matches("^spec/data_workers_spec%.lua:%d+: batches: the loader was closed %(close%(%) stopped its workers%)$",
                   err_of(function()
                     local it = h:batches()
                     return it
                   end))
    assert.matches("the loader was closed", err_of(h.next_batch, h)) -- next_batch's iterator too
    do
      local scoped <close> = loader(ds, {batch = 2}, 2)
      pool = scoped._par.pool
      for _ in scoped:batches() do break end
    end
    assert.is_true(pool:closed())
    -- collected: the pool goes with the loader
    local weak = setmetatable({}, {__mode = "v"})
    do
      local g = loader(ds, {batch = 2}, 2)
      g:next_batch()
      weak.pool = g._par.pool
    end
    collectgarbage()
    collectgarbage()
    assert.is_true(weak.pool == nil or weak.pool:closed())
    -- closing a loader without workers does nothing
    local s = loader(ds, {batch = 5}, 0)
    s:close()
    assert.are.equal(2, #s)
    assert.are.same({1, 2, 3, 4, 5}, s:next_batch():tolist())
  end)

  it("stop on Ctrl-C with 'interrupted' and stay usable", function()
    -- each worker's first get spins until the interrupt cancels it (a global of the worker's state)
    local ds = {
      get = function(_, i)
        if pt.worker_id() > 0 and not h6_spun then
          h6_spun = true
          -- bounded, so that a lost interrupt fails the spec instead of hanging the suite
          local t0 = os.clock()
          while os.clock() - t0 < 60 do end
        end
        return {pt.tensor({i})}
      end,
      len = function() return 6 end,
    }
    local h = loader(ds, {batch = 2}, 2)
    pt._par_test_sigint(0.3)
    local steps = 0
    local ok, err = pcall(function()
      for _ in h:batches() do steps = steps + 1 end
    end)
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.are.equal(0, steps)
    local got = {}
    for x in h:batches() do got[#got + 1] = x:tolist() end
    assert.are.same({{{1}, {2}}, {{3}, {4}}, {{5}, {6}}}, got)
    assert.is_nil(h6_spun)
    -- the soft interrupt between batches, as with workers = 0
    steps = 0
    ok, err = pcall(function()
      for _ in h:batches() do
        steps = steps + 1
        if steps == 2 then pt._data_request_interrupt() end
      end
    end)
    assert.is_false(ok)
    assert.matches("interrupted$", err)
    assert.are.equal(2, steps)
    local n = 0
    for _ in h:batches() do n = n + 1 end
    assert.are.equal(3, n)
    h:close()
  end)

  it("leave nothing hanging when the program ends with batches in flight", function()
    local exe = require("spec.support").exe
    local script = os.tmpname()
    for _, ending in ipairs({"", "os.exit(0, true)", "os.exit(0)", "error('boom')"}) do
      local f = assert(io.open(script, "w"))
      f:write(([[
        local pt = require "partrain"
        local ds = {get = function(_, i)
          local t0 = os.clock()
          while os.clock() - t0 < 0.01 do end
          return {pt.tensor({i})}
        end, len = function() return 400 end}
        local h = pt.data.DataHandler(ds, {batch = 2, workers = 2, prefetch = 8, progress = false})
        io.write(h:next_batch():tolist()[2][1], "\n")
        io.stdout:flush()
        %s
      ]]):format(ending))
      f:close()
      local p = io.popen("timeout 60 " .. exe .. " " .. script .. " 2>&1; echo \"<rc=$?>\"")
      local out = p:read("a")
      p:close()
      assert.matches("^2\n", out)
      assert.matches(ending:match("error") and "boom.*<rc=1>" or "<rc=0>", out)
    end
    os.remove(script)
  end)
end)
