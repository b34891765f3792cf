-- pt.image (PNG/JPEG decoding, PNG writing) and the image datasets data.ImageFolder, data.cifar,
-- data.cifar100. The fixtures in spec/fixtures/images/ come from
-- spec/fixtures/make_image_fixtures.py (PNG, written byte by byte: every value below is the one
-- that script put there) and make_image_fixtures_jpeg.c (libjpeg: solid 8x8 blocks of known
-- colors; decoded JPEG pixels are compared with those original colors within a tolerance, as
-- no second JPEG decoder is installed here).
local pt = require "partrain"
local support = require "spec.support"

local FIX = "spec/fixtures/images/"

local function errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return (tostring(e):gsub("^[^:\n]*:%d+: ", ""))
end

local read_bytes, write_bytes = support.read_file, support.write_file
local function tmpdir() return (support.tmpdir()) end

local function rmtree(p) os.execute("rm -rf '" .. p .. "'") end

local function shape(t) return t:size() end

describe("pt.image.read of PNG files", function()
  -- rgb8.png: pixel (x, y) (0-based) = (10x + 100y, 20 + x, 250 - 40y)
  local RGB = {{{0, 10, 20}, {100, 110, 120}}, {{20, 21, 22}, {20, 21, 22}}, {{250, 250, 250}, {210, 210, 210}}}

  it("decodes 8-bit RGB into uint8 {C,H,W} in every mode", function()
    local t = pt.image.read(FIX .. "rgb8.png")
    assert.are.equal("uint8", t:dtype())
    assert.are.same({3, 2, 3}, shape(t))
    assert.are.same(RGB, t:tolist())
    assert.are.same(RGB, pt.image.read(FIX .. "rgb8.png", {mode = "RGB"}):tolist())
    local rgba = pt.image.read(FIX .. "rgb8.png", {mode = "RGBA"})
    assert.are.same({4, 2, 3}, shape(rgba))
    assert.are.same(RGB, rgba[{{1, 3}}]:tolist())
    assert.are.same({{255, 255, 255}, {255, 255, 255}}, rgba[4]:tolist())
    -- gray: libpng's rgb_to_gray with torchvision's weights 0.2989, 0.587 (0.114 for blue);
    -- 0.2989*R + 0.587*G + 0.114*B = 40.2, 43.8, 47.3 / 65.6, 69.2, 72.8 (libpng truncates)
    local l = pt.image.read(FIX .. "rgb8.png", {mode = "L"})
    assert.are.same({{{40, 43, 47}, {65, 69, 72}}}, l:tolist())
  end)

  it("keeps the high byte of 16-bit samples (v >> 8)", function()
    -- rgb16.png holds 257*v + x: high byte v, the same image as rgb8.png
    assert.are.same(RGB, pt.image.read(FIX .. "rgb16.png"):tolist())
    assert.are.same({3, 2, 3}, shape(pt.image.read(FIX .. "rgb16.png", {mode = "RGB"})))
  end)

  it("expands palettes, tRNS transparency and 1-bit gray", function()
    -- indices {0,1,2,3 / 3,2,1,0}; palette red, green, blue, (9,8,7); alpha 0, 128, 255, (255)
    local t = pt.image.read(FIX .. "palette_trns.png")
    assert.are.same({4, 2, 4}, shape(t))
    assert.are.same({{{255, 0, 0, 9}, {9, 0, 0, 255}}, {{0, 255, 0, 8}, {8, 0, 255, 0}},
                     {{0, 0, 255, 7}, {7, 255, 0, 0}}, {{0, 128, 255, 255}, {255, 255, 128, 0}}}, t:tolist())
    assert.are.same({3, 2, 4}, shape(pt.image.read(FIX .. "palette_trns.png", {mode = "RGB"})))
    -- bits 10110001
    local g = pt.image.read(FIX .. "gray1.png")
    assert.are.same({{{255, 0, 255, 255, 0, 0, 0, 255}}}, g:tolist())
    local g3 = pt.image.read(FIX .. "gray1.png", {mode = "RGB"})
    assert.are.same({3, 1, 8}, shape(g3))
    assert.are.same(g[1]:tolist(), g3[3]:tolist())
  end)

  it("keeps gray+alpha unchanged, drops or keeps the alpha on request", function()
    -- (gray, alpha) = (40 + 100x, 200 - 100y)
    local t = pt.image.read(FIX .. "gray_alpha.png")
    assert.are.same({{{40, 140}, {40, 140}}, {{200, 200}, {100, 100}}}, t:tolist())
    assert.are.same({{{40, 140}, {40, 140}}}, pt.image.read(FIX .. "gray_alpha.png", {mode = "L"}):tolist())
    local rgba = pt.image.read(FIX .. "gray_alpha.png", {mode = "RGBA"})
    assert.are.same({{40, 140}, {40, 140}}, rgba[2]:tolist())
    assert.are.same({{200, 200}, {100, 100}}, rgba[4]:tolist())
  end)

  it("decodes bytes held in a string", function()
    local t = pt.image.decode(read_bytes(FIX .. "rgb8.png"), {mode = "RGBA"})
    assert.are.same(RGB, t[{{1, 3}}]:tolist())
  end)
end)

describe("pt.image.write_png", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("round-trips gray, gray+alpha, RGB and RGBA images", function()
    for c = 1, 4 do
      local t = pt.arange(0, c * 5 * 7):mul(37):add(11):remainder(256):to("uint8"):reshape(c, 5, 7)
      local p = dir .. "/img" .. c .. ".png"
      pt.image.write_png(t, p)
      local r = pt.image.read(p)
      assert.are.equal("uint8", r:dtype())
      assert.are.same(t:tolist(), r:tolist())
      assert.are.same(t:tolist(), pt.image.decode(read_bytes(p)):tolist())
    end
  end)

  it("writes non-contiguous tensors", function()
    local t = pt.arange(0, 3 * 6 * 4):to("uint8"):reshape(3, 4, 6):transpose(2, 3) -- {3,6,4} view
    pt.image.write_png(t, dir .. "/v.png")
    assert.are.same(t:tolist(), pt.image.read(dir .. "/v.png"):tolist())
  end)

  it("refuses what is not a uint8 {C,H,W} image, and unwritable paths", function()
    assert.are.equal("image.write_png: expected a uint8 tensor of shape {C,H,W} with C = 1, 2, 3 or 4, "
      .. "got float32 of shape {3,2,2}", errmsg(pt.image.write_png, pt.zeros(3, 2, 2), dir .. "/x.png"))
    assert.are.equal("image.write_png: expected a uint8 tensor of shape {C,H,W} with C = 1, 2, 3 or 4, "
      .. "got uint8 of shape {5,2,2}", errmsg(pt.image.write_png, pt.zeros({5, 2, 2}, {dtype = "uint8"}), dir .. "/x.png"))
    assert.are.equal("image.write_png: expected a uint8 tensor of shape {C,H,W} with C = 1, 2, 3 or 4, "
      .. "got uint8 of shape {2,2}", errmsg(pt.image.write_png, pt.zeros({2, 2}, {dtype = "uint8"}), dir .. "/x.png"))
    assert.are.equal("image.write_png: cannot open '" .. dir .. "/no/x.png': No such file or directory",
      errmsg(pt.image.write_png, pt.zeros({1, 2, 2}, {dtype = "uint8"}), dir .. "/no/x.png"))
    assert.are.equal("image.write_png: unexpected argument #3 (number)",
      errmsg(pt.image.write_png, pt.zeros({1, 2, 2}, {dtype = "uint8"}), dir .. "/x.png", 1))
  end)
end)

describe("pt.image.read of JPEG files", function()
  -- quadrants*.jpg: 16x16, 8x8 blocks top-left, top-right, bottom-left, bottom-right
  local Q = {{200, 30, 40}, {20, 180, 60}, {30, 40, 220}, {240, 240, 240}}

  local function worst_error(t, c_of, want)
    local worst = 0
    for q = 1, 4 do
      local y0, x0 = (q - 1) // 2 * 8, (q - 1) % 2 * 8
      for y = 1, 8 do
        for x = 1, 8 do
          for c = 1, c_of do
            worst = math.max(worst, math.abs(t[c][y0 + y][x0 + x] - want(q, c)))
          end
        end
      end
    end
    return worst
  end

  it("decodes RGB within 2 of the encoded colors (quality 100, 4:4:4)", function()
    local t = pt.image.read(FIX .. "quadrants.jpg")
    assert.are.equal("uint8", t:dtype())
    assert.are.same({3, 16, 16}, shape(t))
    assert.is_true(worst_error(t, 3, function(q, c) return Q[q][c] end) <= 2)
    local rgba = pt.image.read(FIX .. "quadrants.jpg", {mode = "RGBA"})
    assert.are.same({4, 16, 16}, shape(rgba))
    assert.are.same(t:tolist(), rgba[{{1, 3}}]:tolist())
    assert.are.equal(255 * 256, rgba[4]:sum():item())
  end)

  it("gives gray as libjpeg's Y (0.299 R + 0.587 G + 0.114 B) within 2, progressive files too", function()
    local Y = function(q) return 0.299 * Q[q][1] + 0.587 * Q[q][2] + 0.114 * Q[q][3] end
    for _, f in ipairs {"quadrants.jpg", "quadrants_progressive.jpg"} do
      local l = pt.image.read(FIX .. f, {mode = "L"})
      assert.are.same({1, 16, 16}, shape(l))
      assert.is_true(worst_error(l, 1, Y) <= 2)
    end
    -- 4:2:0 chroma is smeared across the blocks: the progressive file's colors only near centres
    local p = pt.image.read(FIX .. "quadrants_progressive.jpg")
    assert.are.same({3, 16, 16}, shape(p))
    for q = 1, 4 do
      local y, x = (q - 1) // 2 * 8 + 4, (q - 1) % 2 * 8 + 4
      for c = 1, 3 do assert.is_true(math.abs(p[c][y][x] - Q[q][c]) <= 16) end
    end
  end)

  it("keeps grayscale JPEGs to one channel unless asked", function()
    local g = pt.image.read(FIX .. "gray.jpg") -- 16x8: left block 50, right block 200
    assert.are.same({1, 8, 16}, shape(g))
    assert.are.equal(50, g[{1, {}, {1, 8}}]:min():item())
    assert.are.equal(50, g[{1, {}, {1, 8}}]:max():item())
    assert.are.equal(200, g[{1, {}, {9, 16}}]:min():item())
    local rgb = pt.image.read(FIX .. "gray.jpg", {mode = "RGB"})
    assert.are.same({3, 8, 16}, shape(rgb))
    assert.are.same(g[1]:tolist(), rgb[2]:tolist())
  end)
end)

describe("pt.image errors", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  it("name the file and the problem", function()
    assert.are.equal("image.read: cannot open '" .. dir .. "/none.png': No such file or directory",
      errmsg(pt.image.read, dir .. "/none.png"))
    assert.are.equal("image.read: '" .. dir .. "' is not a regular file", errmsg(pt.image.read, dir))
    write_bytes(dir .. "/t.png", "hello, not an image")
    assert.are.equal("image.read: '" .. dir .. "/t.png': not a PNG or JPEG image (unknown signature)",
      errmsg(pt.image.read, dir .. "/t.png"))
    write_bytes(dir .. "/e.png", "")
    assert.are.equal("image.read: '" .. dir .. "/e.png': empty data, not an image", errmsg(pt.image.read, dir .. "/e.png"))
    assert.are.equal("image.decode: empty data, not an image", errmsg(pt.image.decode, ""))
  end)

  it("for truncated PNG and JPEG files", function()
    for _, f in ipairs {"rgb8.png", "palette_trns.png", "quadrants.jpg", "quadrants_progressive.jpg", "gray.jpg"} do
      local s = read_bytes(FIX .. f)
      local kind = f:match("png$") and "PNG" or "JPEG"
      for _, n in ipairs {10, #s // 2, #s - 1} do
        write_bytes(dir .. "/cut", s:sub(1, n))
        assert.are.equal("image.read: '" .. dir .. "/cut': truncated " .. kind .. " data", errmsg(pt.image.read, dir .. "/cut"))
        assert.are.equal("image.decode: truncated " .. kind .. " data", errmsg(pt.image.decode, s:sub(1, n)))
      end
    end
  end)

  it("for corrupt data, with libpng's or libjpeg's diagnosis", function()
    local s = read_bytes(FIX .. "rgb8.png")
    local m = #s // 2 -- inside the IDAT chunk: its CRC no longer matches
    local bad = s:sub(1, m - 1) .. string.char(s:byte(m) ~ 0x55) .. s:sub(m + 1)
    assert.matches("^image%.decode: corrupt PNG data %(libpng: IDAT: .+%)$", errmsg(pt.image.decode, bad))
    local j = read_bytes(FIX .. "quadrants_progressive.jpg")
    local mj = #j // 2
    local badj = j:sub(1, mj - 1) .. string.char(j:byte(mj) ~ 0x55) .. j:sub(mj + 1)
    assert.matches("^image%.decode: corrupt JPEG data %(libjpeg: .+%)$", errmsg(pt.image.decode, badj))
  end)

  it("for images above 2^28 pixels, before decoding", function()
    -- signature, IHDR of 20000x20000 8-bit RGB (CRC 0x6c12d16e from Python's zlib.crc32), an
    -- IDAT header: the size is refused before any pixel buffer exists
    local png = "\137PNG\r\n\26\n\0\0\0\13IHDR\0\0\78\32\0\0\78\32\8\2\0\0\0\108\18\209\110\0\0\0\12IDAT"
    assert.are.equal("image.decode: PNG image of 20000x20000 pixels is larger than the limit of 268435456 pixels",
      errmsg(pt.image.decode, png))
    -- the JPEG fixture with its SOF0 frame saying 65000x65000
    local j = read_bytes(FIX .. "quadrants.jpg")
    local sof = assert(j:find("\255\192", 1, true))
    local big = j:sub(1, sof + 4) .. "\253\232\253\232" .. j:sub(sof + 9)
    assert.are.equal("image.decode: JPEG image of 65000x65000 pixels is larger than the limit of 268435456 pixels",
      errmsg(pt.image.decode, big))
  end)

  it("for bad options and arguments", function()
    assert.are.equal("image.read: mode must be \"RGB\", \"L\", \"RGBA\" or \"unchanged\", got 'rgb'",
      errmsg(pt.image.read, FIX .. "rgb8.png", {mode = "rgb"}))
    assert.are.equal("image.decode: mode must be \"RGB\", \"L\", \"RGBA\" or \"unchanged\", got a number",
      errmsg(pt.image.decode, "x", {mode = 3}))
    assert.are.equal("image.read: unknown option 'mdoe' (options: mode)",
      errmsg(pt.image.read, FIX .. "rgb8.png", {mdoe = "RGB"}))
    assert.are.equal("image.read: options must be a table, got a string", errmsg(pt.image.read, FIX .. "rgb8.png", "RGB"))
    assert.are.equal("image.read: unexpected argument #3 (number)", errmsg(pt.image.read, FIX .. "rgb8.png", nil, 1))
  end)
end)

describe("data.ImageFolder", function()
  local dir
  local function img(path, c, v)
    pt.image.write_png(pt.full({c, 4, 5}, v, {dtype = "uint8"}), dir .. "/" .. path)
  end

  before_each(function()
    dir = tmpdir()
    for _, d in ipairs {"dog", "cat/sub", "cat/sub2", "b c", "empty_is_not_a_class_file"} do
      os.execute("mkdir -p '" .. dir .. "/" .. d .. "'")
    end
    os.remove(dir .. "/empty_is_not_a_class_file") -- a plain file at the top is not a class
    write_bytes(dir .. "/empty_is_not_a_class_file", "x")
    img("dog/z.png", 3, 9)
    img("dog/a.PNG", 1, 8) -- extensions match case-insensitively
    img("cat/m.png", 4, 7)
    img("cat/sub/b.png", 3, 6)
    img("cat/sub2/a.png", 3, 5)
    img("b c/x.png", 3, 4)
    write_bytes(dir .. "/cat/notes.txt", "not an image")
  end)
  after_each(function() rmtree(dir) end)

  it("lists sorted class folders as 1-based labels and their images in torchvision's order", function()
    local ds = pt.data.ImageFolder(dir)
    assert.are.same({"b c", "cat", "dog"}, ds.classes)
    assert.are.same({["b c"] = 1, cat = 2, dog = 3}, ds.class_to_idx)
    assert.are.equal(6, ds:len())
    assert.are.equal(6, #ds)
    local paths = {}
    for i, s in ipairs(ds.samples) do paths[i] = s[1]:sub(#dir + 2) .. ":" .. s[2] end
    -- each class's folders in path order (cat, cat/sub, cat/sub2), files sorted in each
    assert.are.same({"b c/x.png:1", "cat/m.png:2", "cat/sub/b.png:2", "cat/sub2/a.png:2", "dog/a.PNG:3",
                     "dog/z.png:3"}, paths)
    assert.are.same({1, 2, 2, 2, 3, 3}, ds.targets)
  end)

  it("reads samples as {uint8 {C,H,W} image, label} in the asked mode, with transforms", function()
    local ds = pt.data.ImageFolder(dir .. "/")
    local s = ds:get(2) -- cat/m.png: RGBA 7 everywhere, read as RGB
    assert.are.same({3, 4, 5}, shape(s[1]))
    assert.are.equal("uint8", s[1]:dtype())
    assert.are.equal(7 * 60, s[1]:sum():item())
    assert.are.equal(2, s[2])
    local g = ds:get(5) -- dog/a.PNG, gray, as RGB: three equal planes
    assert.are.equal(8 * 60, g[1]:sum():item())
    local l = pt.data.ImageFolder(dir, {mode = "L", transform = function(x) return x:float():div(255) end,
                                        target_transform = function(y) return y * 10 end})
    local s1 = l:get(1)
    assert.are.same({1, 4, 5}, shape(s1[1]))
    assert.are.equal("float32", s1[1]:dtype())
    assert.is_true(math.abs(s1[1][1][1][1] - 4 / 255) < 1e-7)
    assert.are.equal(10, s1[2])
    local only = pt.data.ImageFolder(dir, {extensions = {".PNG"}, mode = "unchanged"})
    assert.are.equal(6, #only)
    assert.are.same({4, 4, 5}, shape(only:get(2)[1]))
  end)

  it("batches through a DataHandler, on workers too", function()
    local ds = pt.data.ImageFolder(dir, {transform = function(x) return x:float() end})
    for _, workers in ipairs {0, 2} do
      local loader = pt.data.DataHandler(ds, {batch = 4, workers = workers})
      local seen, labels = 0, {}
      for x, y in loader:batches() do
        assert.are.same({x:size(1), 3, 4, 5}, shape(x))
        for _, v in ipairs(y:tolist()) do labels[#labels + 1] = v end
        seen = seen + x:size(1)
      end
      loader:close()
      assert.are.equal(6, seen)
      assert.are.same({1, 2, 2, 2, 3, 3}, labels)
    end
  end)

  it("reports what is wrong", function()
    assert.are.equal("ImageFolder: root must be a string (a folder path)", errmsg(pt.data.ImageFolder, 3))
    assert.are.equal("ImageFolder: cannot open directory '" .. dir .. "/none': No such file or directory",
      errmsg(pt.data.ImageFolder, dir .. "/none"))
    assert.are.equal("ImageFolder: found no class folder in '" .. dir .. "/dog'", errmsg(pt.data.ImageFolder, dir .. "/dog"))
    assert.are.equal("ImageFolder: found no valid file for the classes b c, cat, dog; supported extensions are: .jpg",
      errmsg(pt.data.ImageFolder, dir, {extensions = {".jpg"}}))
    assert.are.equal("ImageFolder: unknown option 'transfrom' (options: extensions, mode, target_transform, transform)",
      errmsg(pt.data.ImageFolder, dir, {transfrom = print}))
    assert.are.equal("ImageFolder: mode must be \"RGB\", \"L\", \"RGBA\" or \"unchanged\", got 'LA'",
      errmsg(pt.data.ImageFolder, dir, {mode = "LA"}))
    assert.are.equal("ImageFolder: transform must be a function, got a table",
      errmsg(pt.data.ImageFolder, dir, {transform = {}}))
    local ds = pt.data.ImageFolder(dir)
    assert.are.equal("ImageFolder: index 7 out of range 1..6", errmsg(ds.get, ds, 7))
    assert.are.equal("ImageFolder: index 1.5 is not an integer", errmsg(ds.get, ds, 1.5))
    write_bytes(dir .. "/dog/z.png", read_bytes(FIX .. "rgb8.png"):sub(1, 40))
    assert.are.equal("image.read: '" .. dir .. "/dog/z.png': truncated PNG data", errmsg(ds.get, ds, 6))
  end)
end)

describe("data.cifar and data.cifar100", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmtree(dir) end)

  -- n records; record r of file f: label (f + r) % 10 (CIFAR-100: coarse (f + r) % 20, fine
  -- (3r + f) % 100), pixel bytes (k + r + f) % 256 for k = 0..3071
  local function write_batch(name, n, f, label_bytes)
    local parts = {}
    for r = 0, n - 1 do
      if label_bytes == 1 then
        parts[#parts + 1] = string.char((f + r) % 10)
      else
        parts[#parts + 1] = string.char((f + r) % 20, (3 * r + f) % 100)
      end
      local px = {}
      for k = 0, 3071 do px[k + 1] = string.char((k + r + f) % 256) end
      parts[#parts + 1] = table.concat(px)
    end
    write_bytes(dir .. "/" .. name, table.concat(parts))
  end

  local function cifar10_files()
    for f = 1, 5 do write_batch("data_batch_" .. f .. ".bin", 2, f, 1) end
    write_batch("test_batch.bin", 3, 0, 1)
    write_bytes(dir .. "/batches.meta.txt", "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n")
  end

  it("reads CIFAR-10 batches as uint8 {N,3,32,32} with 1-based labels", function()
    cifar10_files()
    local ds = pt.data.cifar(dir)
    assert.are.equal(10, #ds)
    assert.are.equal("uint8", ds.images:dtype())
    assert.are.same({10, 3, 32, 32}, shape(ds.images))
    assert.are.equal("int64", ds.labels:dtype())
    -- file f (1..5), record r (0..1): label (f + r) % 10 + 1
    assert.are.same({2, 3, 3, 4, 4, 5, 5, 6, 6, 7}, ds.labels:tolist())
    assert.are.equal("airplane", ds.classes[1])
    assert.are.equal(10, #ds.classes)
    -- record r = 1 of file 2 (sample 4): channel 2, row 3, column 5 is byte k = 1024 + 64 + 4
    assert.are.equal((1024 + 64 + 4 + 1 + 2) % 256, ds.images[4][2][3][5])
    local s = ds:get(4)
    assert.are.same({3, 32, 32}, shape(s[1]))
    assert.are.equal("float32", s[1]:dtype())
    assert.is_true(math.abs(s[1][2][3][5] - ((1024 + 64 + 4 + 1 + 2) % 256) / 255) < 1e-7)
    assert.are.equal(4, s[2])
    local test = pt.data.cifar(dir .. "/", {train = false})
    assert.are.equal(3, #test)
    assert.are.same({1, 2, 3}, test.labels:tolist())
    assert.are.equal(0, test.images[1][1][1][1])
  end)

  it("batches through a DataHandler as float32 in [0,1]", function()
    cifar10_files()
    local ds = pt.data.cifar(dir)
    local loader = pt.data.DataHandler(ds, {batch = 4})
    local x, y = loader:next_batch()
    assert.are.same({4, 3, 32, 32}, shape(x))
    assert.are.equal("float32", x:dtype())
    assert.are.same({2, 3, 3, 4}, y:tolist())
    assert.is_true((x:mul(255):sub(ds.images[{{1, 4}}]:float())):abs():max():item() < 1e-4)
  end)

  it("reads CIFAR-100 with fine and coarse labels", function()
    write_batch("train.bin", 4, 0, 2)
    write_batch("test.bin", 2, 1, 2)
    write_bytes(dir .. "/fine_label_names.txt", "apple\naquarium_fish\n")
    local ds = pt.data.cifar100(dir)
    assert.are.equal(4, #ds)
    assert.are.same({1, 4, 7, 10}, ds.labels:tolist())        -- fine (3r) % 100 + 1
    assert.are.same({1, 2, 3, 4}, ds.coarse_labels:tolist())  -- coarse r % 20 + 1
    assert.are.same({"apple", "aquarium_fish"}, ds.classes)
    assert.is_nil(ds.coarse_classes)
    assert.are.equal((5 + 2) % 256, ds.images[3][1][1][6])
    local test = pt.data.cifar100(dir, {train = false})
    assert.are.same({2, 5}, test.labels:tolist())
    assert.are.same({2, 3}, test.coarse_labels:tolist())
  end)

  it("refuses truncated files, wrong labels and missing files", function()
    cifar10_files()
    local s = read_bytes(dir .. "/data_batch_3.bin")
    write_bytes(dir .. "/data_batch_3.bin", s:sub(1, #s - 1))
    assert.are.equal("cifar: '" .. dir .. "/data_batch_3.bin': 6145 bytes is not a whole number of 3073-byte "
      .. "records (truncated or not a CIFAR-10 binary file)", errmsg(pt.data.cifar, dir))
    write_bytes(dir .. "/data_batch_3.bin", "")
    assert.are.equal("cifar: '" .. dir .. "/data_batch_3.bin': 0 bytes is not a whole number of 3073-byte "
      .. "records (truncated or not a CIFAR-10 binary file)", errmsg(pt.data.cifar, dir))
    write_bytes(dir .. "/data_batch_3.bin", s:sub(1, 3073) .. "\12" .. s:sub(3075))
    assert.are.equal("cifar: '" .. dir .. "/data_batch_3.bin': record 2 has label 12, expected 0..9 (not a CIFAR-10 file?)",
      errmsg(pt.data.cifar, dir))
    os.remove(dir .. "/data_batch_5.bin")
    assert.are.equal("cifar: '" .. dir .. "/data_batch_5.bin' not found (the folder of the binary version, e.g. "
      .. "cifar-10-batches-bin)", errmsg(pt.data.cifar, dir))
    write_batch("train.bin", 1, 0, 1) -- a CIFAR-10 record read as CIFAR-100: sizes do not fit
    assert.are.equal("cifar100: '" .. dir .. "/train.bin': 3073 bytes is not a whole number of 3074-byte "
      .. "records (truncated or not a CIFAR-100 binary file)", errmsg(pt.data.cifar100, dir))
    assert.are.equal("cifar: unknown option 'test' (options: train)", errmsg(pt.data.cifar, dir, {test = true}))
    assert.are.equal("cifar: train must be true or false", errmsg(pt.data.cifar, dir, {train = 1}))
    assert.are.equal("cifar: path must be a string (the extracted folder)", errmsg(pt.data.cifar))
  end)
end)

describe("image help texts", function()
  it("document every function, class and method", function()
    local data = pt.data
    for _, f in ipairs {pt.image.read, pt.image.decode, pt.image.write_png, data.ImageFolder, data.cifar,
                        data.cifar100, data.ImageFolder_class, data.ImageFolder_class.get,
                        data.ImageFolder_class.len, data.CifarDataset_class, data.CifarDataset_class.get,
                        data.CifarDataset_class.len} do
      assert.is_string(pt._docs[f])
    end
    assert.matches("^pt%.image%.read%(path", pt._docs[pt.image.read])
    assert.matches("^data%.ImageFolder%(root", pt._docs[data.ImageFolder])
  end)
end)
