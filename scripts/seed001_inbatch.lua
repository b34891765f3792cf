-- Seed 001 (batchflow "Within batch parallelism") in Lua: a batch class whose actions run per
-- item in parallel, with init/post hooks and each target engine.
-- run: partrain scripts/seed001_inbatch.lua        (small data, a second or so)
local pt = require "partrain"

-- ---------------------------------------------------------------------------------------------
-- The seed's own example: some_action with init/post and an extra decorator option.
local MyBatch = {}
MyBatch.__index = MyBatch

function MyBatch.new(images)
  local self = setmetatable({ images = images, indices = {} }, MyBatch)
  for i = 1, #images do self.indices[i] = i end
  return self
end

-- init: one entry per item; the extra option clear_data arrives in the named table
function MyBatch:_init_default(...)
  return self.indices
end

-- post: the results in item order; failures are error values
function MyBatch:_post_default(list_of_res, ...)
  local named = select(select("#", ...), ...)
  if pt.any_action_failed(list_of_res) then
    for i = 1, list_of_res.n do
      if getmetatable(list_of_res[i]) == pt.ActionError then
        print(("  item %d failed: %s"):format(i, list_of_res[i].message))
      end
    end
  end
  self.last = list_of_res
  self.cleared = named.clear_data
  return self
end

local has_pool = rawget(pt, "_pool_map") ~= nil
local default_target = has_pool and "threads" or "async"

-- some_action(self, item, arg1, arg2): the per-item work of the seed
MyBatch.some_action = pt.inbatch_parallel({ init = "_init_default", post = "_post_default",
                                            target = default_target, clear_data = false },
  function(self, item, arg1, arg2)
    local sum = 0
    for _, v in ipairs(self.images[item]:tolist()) do sum = sum + v end
    return sum * arg1 + arg2
  end)

-- ---------------------------------------------------------------------------------------------
-- Preprocessing with each target.

-- async: load the images from files; pt.async.read_file runs on C helper threads while the
-- other items' coroutines proceed
MyBatch.load = pt.inbatch_parallel({ init = function(self, paths) return paths end,
                                     post = "_post_default", target = "async" },
  function(self, path)
    local bytes = pt.async.read_file(path)
    local vals = {}
    for i = 1, #bytes do vals[i] = bytes:byte(i) end
    return pt.tensor(vals, { dtype = "float32" })
  end)

-- native (batchflow's nogil): scale every image in place with BLAS's sscal, called per item on
-- C threads with no Lua; the method only picks the C function. The factor is an extra decorator
-- option: it reaches init (in the named table), never the C function; the call's own arguments
-- would follow each entry's, so this action takes none.
local function blas()
  for _, lib in ipairs { false, "libopenblas.so.0", "libblas.so.3" } do
    local ok, l = pcall(pt.ffi.load, lib or nil)
    if ok then
      local fok, f = pcall(l.fn, l, "cblas_sscal", "void(int, float, float*, int)")
      if fok then return f end
    end
  end
  error("cblas_sscal not found")
end

MyBatch.scale = pt.inbatch_parallel({ init = function(self, named)
    local e = {}
    for i, img in ipairs(self.images) do e[i] = { img:numel(), named.factor, img, 1 } end
    return e
  end, post = "_post_default", target = "native", factor = 1 / 255 },
  function(self) return blas() end)

-- process (batchflow's mpc): per-image statistics in forked workers; the tensors come back
-- through shared memory
MyBatch.stats = pt.inbatch_parallel({ init = "_init_default", post = "_post_default", target = "process" },
  function(self)
    local images = self.images
    return function(item)
      local v = images[item]:tolist()
      local lo, hi, sum = math.huge, -math.huge, 0
      for _, x in ipairs(v) do
        lo, hi, sum = math.min(lo, x), math.max(hi, x), sum + x
      end
      return { item = item, summary = pt.tensor({ lo, hi, sum / #v }) }
    end
  end)

-- ---------------------------------------------------------------------------------------------
local n, size = 6, 16
local paths = {}
for i = 1, n do
  paths[i] = os.tmpname()
  local f = assert(io.open(paths[i], "wb"))
  local bytes = {}
  for k = 1, size do bytes[k] = string.char((i * 7 + k * 13) % 256) end
  f:write(table.concat(bytes))
  f:close()
end

local t0 = os.clock()
local batch = MyBatch.new({})
batch:load(paths)
batch.images = {}
for i = 1, batch.last.n do batch.images[i] = batch.last[i] end
batch.indices = {}
for i = 1, #batch.images do batch.indices[i] = i end
print(("async:   loaded %d images of %d bytes"):format(#batch.images, batch.images[1]:numel()))

batch:scale()
print(("native:  scaled in place, image 1 now starts %.4f %.4f"):format(
  batch.images[1]:tolist()[1], batch.images[1]:tolist()[2]))

batch:stats(pt.named { n_workers = 2 })
for i = 1, batch.last.n do
  local s = batch.last[i].summary:tolist()
  print(("process: image %d min %.3f max %.3f mean %.3f"):format(i, s[1], s[2], s[3]))
end

batch:some_action(10, 1)
print(("%-8s some_action(10, 1) -> %s (clear_data=%s)"):format(default_target .. ":",
  table.concat((function() local t = {} for i = 1, batch.last.n do t[i] = ("%.2f"):format(batch.last[i]) end return t end)(), " "),
  tostring(batch.cleared)))
if not has_pool then print("threads: the worker pool (pt._pool_map) is not built in; some_action ran on async") end

for _, p in ipairs(paths) do os.remove(p) end
print(("done in %.2f s of CPU"):format(os.clock() - t0))
