-- partrain.data_images: image datasets of partrain.data, loaded on the first use of their names
-- (data.ImageFolder, data.cifar, data.cifar100; data.lua's metatable loads this module).
--
-- data.ImageFolder(root) is torchvision's: one subfolder per class, class names sorted, images
-- decoded by pt.image.read when a sample is read. data.cifar / data.cifar100 read the binary
-- versions of CIFAR-10/100 into one uint8 tensor {N,3,32,32}, as data.idx keeps MNIST.
-- Labels are 1-BASED class indices, as everywhere in partrain.
local pt = require "partrain"
local data = require "partrain.data"

local M = {}

local function check_opts(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(("%s: options must be a table, got a %s"):format(fname, type(opts)), 3) end
  local names = {}
  for k in pairs(allowed) do names[#names + 1] = k end
  table.sort(names)
  for k in pairs(opts) do -- a misspelled option is an error, never ignored
    if not allowed[k] then
      error(("%s: unknown option '%s' (options: %s)"):format(fname, tostring(k), table.concat(names, ", ")), 3)
    end
  end
  return opts
end

local function check_index(what, i, n)
  if math.type(i) ~= "integer" then error(("%s: index %s is not an integer"):format(what, tostring(i)), 3) end
  if i < 1 or i > n then error(("%s: index %d out of range 1..%d"):format(what, i, n), 3) end
end

-- ImageFolder -----------------------------------------------------------------------------

-- the formats pt.image decodes (torchvision's IMG_EXTENSIONS also lists .bmp, .ppm, .tif, ...)
local DEFAULT_EXTENSIONS = {".jpg", ".jpeg", ".png"}
local MODES = {RGB = true, L = true, RGBA = true, unchanged = true}

local ImageFolder = {}
ImageFolder.__index = ImageFolder
ImageFolder.__name = "ImageFolder"

-- the files under dir (its subfolders too, links followed) whose lower-cased names end with
-- one of exts, in torchvision's make_dataset order: sorted(os.walk(dir, followlinks=True))
-- visits the folders in the order of their path strings, each folder's files sorted
local function find_images(dir, exts)
  local folders, depth, files_of = {dir}, {[dir] = 0}, {}
  local i = 1
  while i <= #folders do
    local d = folders[i]
    if depth[d] > 40 then error(("ImageFolder: folders nested too deep under '%s' (a link cycle?)"):format(dir), 3) end
    local names, is_dir = pt.image._list_dir(d)
    if not names then error("ImageFolder: " .. is_dir, 3) end
    local files = {}
    for k, name in ipairs(names) do
      local path = d .. "/" .. name
      if is_dir[k] then
        folders[#folders + 1] = path
        depth[path] = depth[d] + 1
      else
        local lower = name:lower()
        for _, e in ipairs(exts) do
          if #lower > #e and lower:sub(-#e) == e then
            files[#files + 1] = path
            break
          end
        end
      end
    end
    files_of[d] = files
    i = i + 1
  end
  table.sort(folders) -- byte order: no locale is set, so Lua's < is strcmp as Python's str order
  local out = {}
  for _, f in ipairs(folders) do
    for _, p in ipairs(files_of[f]) do out[#out + 1] = p end
  end
  return out
end

--- data.ImageFolder(root[, {transform=, target_transform=, extensions=, mode="RGB"}])
function M.ImageFolder(root, opts)
  if type(root) ~= "string" then error("ImageFolder: root must be a string (a folder path)", 2) end
  opts = check_opts("ImageFolder", opts, {transform = true, target_transform = true, extensions = true, mode = true})
  local mode = opts.mode or "RGB"
  if not MODES[mode] then
    error(("ImageFolder: mode must be \"RGB\", \"L\", \"RGBA\" or \"unchanged\", got %s"):format(
      type(mode) == "string" and "'" .. mode .. "'" or "a " .. type(mode)), 2)
  end
  for _, k in ipairs {"transform", "target_transform"} do
    if opts[k] ~= nil and type(opts[k]) ~= "function" then
      error(("ImageFolder: %s must be a function, got a %s"):format(k, type(opts[k])), 2)
    end
  end
  local exts = opts.extensions or DEFAULT_EXTENSIONS
  if type(exts) == "string" then exts = {exts} end
  if type(exts) ~= "table" or #exts == 0 then
    error("ImageFolder: extensions must be a list of file name endings such as {\".png\"}", 2)
  end
  local lower = {}
  for k, e in ipairs(exts) do
    if type(e) ~= "string" or e == "" then error(("ImageFolder: extension %d is not a non-empty string"):format(k), 2) end
    lower[k] = e:lower()
  end
  root = root:gsub("(.)/+$", "%1")
  local names, is_dir = pt.image._list_dir(root)
  if not names then error("ImageFolder: " .. is_dir, 2) end
  local classes, class_to_idx = {}, {}
  for k, name in ipairs(names) do
    if is_dir[k] then
      classes[#classes + 1] = name
      class_to_idx[name] = #classes
    end
  end
  if #classes == 0 then error(("ImageFolder: found no class folder in '%s'"):format(root), 2) end
  local samples, targets, empty = {}, {}, {}
  for c, name in ipairs(classes) do
    local files = find_images(root .. "/" .. name, lower)
    if #files == 0 then empty[#empty + 1] = name end
    for _, p in ipairs(files) do
      samples[#samples + 1] = {p, c}
      targets[#targets + 1] = c
    end
  end
  if #empty > 0 then -- torchvision's allow_empty=False
    error(("ImageFolder: found no valid file for the classes %s; supported extensions are: %s"):format(
      table.concat(empty, ", "), table.concat(lower, ", ")), 2)
  end
  return setmetatable({root = root, classes = classes, class_to_idx = class_to_idx, samples = samples,
                       targets = targets, n = #samples, mode = mode, extensions = lower,
                       transform = opts.transform, target_transform = opts.target_transform},
                      ImageFolder)
end

function ImageFolder:len() return self.n end
ImageFolder.__len = ImageFolder.len

function ImageFolder:get(i)
  check_index("ImageFolder", i, self.n)
  local s = self.samples[i]
  local ok, img = pcall(pt.image.read, s[1], {mode = self.mode})
  if not ok then error((tostring(img):gsub("^[^:\n]*:%d+: ", "")), 2) end
  local label = s[2]
  if self.transform then img = self.transform(img) end
  if self.target_transform then label = self.target_transform(label) end
  return {img, label}
end

function ImageFolder:__tostring()
  return ("ImageFolder(%d images, %d classes, root '%s')"):format(self.n, #self.classes, self.root)
end

-- CIFAR -----------------------------------------------------------------------------------

local CifarDataset = {}
CifarDataset.__index = CifarDataset
CifarDataset.__name = "CifarDataset"

local function file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- the lines of a label-names file (batches.meta.txt, fine_label_names.txt), blank ones dropped
local function read_names(p)
  local f = io.open(p, "r")
  if not f then return nil end
  local names = {}
  for line in f:lines() do
    line = line:gsub("%s+$", "")
    if line ~= "" then names[#names + 1] = line end
  end
  f:close()
  return names
end

local function cifar(fname, dir, opts, version)
  if type(dir) ~= "string" then error(fname .. ": path must be a string (the extracted folder)", 3) end
  opts = check_opts(fname, opts, {train = true})
  local train = opts.train
  if train == nil then train = true end
  if type(train) ~= "boolean" then error(fname .. ": train must be true or false", 3) end
  dir = dir:gsub("(.)/+$", "%1")
  local files
  if version == 10 then
    files = train and {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                       "data_batch_5.bin"} or {"test_batch.bin"}
  else
    files = {train and "train.bin" or "test.bin"}
  end
  local paths = {}
  for k, f in ipairs(files) do
    paths[k] = dir .. "/" .. f
    if not file_exists(paths[k]) then
      error(("%s: '%s' not found (the folder of the binary version, e.g. %s)"):format(fname, paths[k],
        version == 10 and "cifar-10-batches-bin" or "cifar-100-binary"), 3)
    end
  end
  local ok, images, labels, coarse = pcall(pt.image._cifar_read, paths, version == 10 and 1 or 2,
                                          version == 10 and {10} or {20, 100})
  if not ok then error((tostring(images):gsub("^[^:\n]*:%d+: ", ""):gsub("^cifar:", fname .. ":")), 3) end
  local classes, coarse_classes
  if version == 10 then
    classes = read_names(dir .. "/batches.meta.txt")
  else
    classes = read_names(dir .. "/fine_label_names.txt")
    coarse_classes = read_names(dir .. "/coarse_label_names.txt")
  end
  local n = images:size(1)
  local shape = {3, 32, 32}
  return setmetatable({images = images, labels = labels, coarse_labels = coarse, classes = classes,
                       coarse_classes = coarse_classes, n = n, train = train,
                       gather_opts = {dtype = "float32", scale = 1 / 255, shape = shape},
                       sample_opts = {dtype = "float32", scale = 1 / 255, shape = shape, sample = true}},
                      CifarDataset)
end

--- data.cifar(dir[, {train = true}]) -> CIFAR-10 dataset
function M.cifar(dir, opts) return cifar("cifar", dir, opts, 10) end
--- data.cifar100(dir[, {train = true}]) -> CIFAR-100 dataset (fine labels; coarse_labels too)
function M.cifar100(dir, opts) return cifar("cifar100", dir, opts, 100) end

function CifarDataset:len() return self.n end
CifarDataset.__len = CifarDataset.len

function CifarDataset:get(i)
  check_index("cifar", i, self.n)
  local x = pt._data_gather(self.images, pt.tensor({i}, {dtype = "int64"}), 1, 1, self.sample_opts)
  return {x, self.labels[i]}
end

function CifarDataset:_collate(indices, first, count)
  return {pt._data_gather(self.images, indices, first, count, self.gather_opts),
          pt._data_gather(self.labels, indices, first, count)}
end

function CifarDataset:__tostring()
  return ("CifarDataset(%d images, %s)"):format(self.n, self.train and "train" or "test")
end

-- help texts ------------------------------------------------------------------------------

local docs = rawget(pt, "_docs")
if docs then
  local D = {
    [M.ImageFolder] = "data.ImageFolder(root[, {transform=fn, target_transform=fn, extensions={\".jpg\",\".jpeg\",\".png\"},\n"
      .. "  mode=\"RGB\"}]) -> dataset, torchvision.datasets.ImageFolder: root/<class>/**/<image>.\n"
      .. "  ds.classes: the class folders' names sorted; ds.class_to_idx[name] -> 1-BASED label; ds.samples[i] =\n"
      .. "  {path, label}; ds.targets. Files are found under each class folder and its subfolders (links followed),\n"
      .. "  in torchvision's order; extensions match case-insensitively. ds:get(i) -> {image, label}: the image is\n"
      .. "  pt.image.read(path, {mode=mode}), uint8 {C,H,W}, then transform(image); label target_transform(label).\n"
      .. "  Images of different sizes need a transform that makes them one size before a DataHandler stacks them\n"
      .. "  (e.g. x:float():div(255) then nn.functional.interpolate). A class folder without images is an error.",
    [ImageFolder] = "data.ImageFolder datasets: ds:get(i) -> {image, label}, ds:len() / #ds; fields classes,\n"
      .. "  class_to_idx, samples, targets, root, mode.",
    [ImageFolder.get] = "ds:get(i) -> {image, label}: image i decoded (and transformed), its 1-based class index.",
    [ImageFolder.len] = "ds:len() -> number of images (also #ds).",
    [M.cifar] = "data.cifar(dir[, {train=true}]) -> CIFAR-10 dataset from the binary version's extracted folder\n"
      .. "  (cifar-10-batches-bin: data_batch_1..5.bin for train, test_batch.bin for test). Images stay uint8 {N,3,32,32}\n"
      .. "  in ds.images (as data.idx keeps MNIST); samples and batches are float32 in [0,1], {3,32,32} / {B,3,32,32}.\n"
      .. "  ds.labels: int64 1-BASED class indices (file label + 1); ds.classes from batches.meta.txt when present.\n"
      .. "  A truncated file (not a whole number of 3073-byte records) or a label beyond 9 is an error.",
    [M.cifar100] = "data.cifar100(dir[, {train=true}]) -> CIFAR-100 dataset from cifar-100-binary (train.bin / test.bin):\n"
      .. "  as data.cifar with the fine labels (1..100) as ds.labels, ds.coarse_labels (1..20), ds.classes and\n"
      .. "  ds.coarse_classes from fine_label_names.txt / coarse_label_names.txt when present.",
    [CifarDataset] = "data.cifar / data.cifar100 datasets: ds:get(i) -> {image float32 {3,32,32} in [0,1], label}; ds:len() / #ds;\n"
      .. "  fields images (uint8 {N,3,32,32}), labels, classes (coarse_labels, coarse_classes for CIFAR-100).",
    [CifarDataset.get] = "ds:get(i) -> {image, label}: image i as float32 {3,32,32} in [0,1], its 1-based class index.",
    [CifarDataset.len] = "ds:len() -> number of images (also #ds).",
  }
  for f, text in pairs(D) do docs[f] = text end
end

M.ImageFolder_class = ImageFolder
M.CifarDataset_class = CifarDataset
-- later lookups find the names in data itself
for _, k in ipairs {"ImageFolder", "cifar", "cifar100", "ImageFolder_class", "CifarDataset_class"} do
  rawset(data, k, M[k])
end

return M
