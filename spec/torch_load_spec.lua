-- pt.load_torch: torch.save files (zip format) read without running code. The fixtures under
-- spec/fixtures/torch/ come from spec/fixtures/torch/make_fixtures.py with torch 1.13, and the
-- expected numbers below are torch 1.13's (sd[k].tolist()); the hostile archives are built here.
local pt = require "partrain"
local support = require "spec.support"
local assert_error, assert_error_contains = support.assert_error, support.assert_error_contains
local assert_close = support.assert_close_with(1e-6)

local DIR = "spec/fixtures/torch/"
local tmpdir, tmp = support.tmpdir()
local write, read = support.write_file, support.read_file

-- a zip archive of stored entries {name, bytes[, method]} (CRCs left 0: load_torch does not check them)
local function zip(entries)
  local out, central, pos = {}, {}, 0
  for _, e in ipairs(entries) do
    local name, data, method = e[1], e[2], e[3] or 0
    local h = "PK\3\4" .. string.pack("<I2I2I2I2I2I4I4I4I2I2", 20, 0, method, 0, 0, 0, #data, #data, #name, 0) .. name
    central[#central + 1] = "PK\1\2" .. string.pack("<I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 20, 20, 0, method, 0, 0, 0,
      #data, #data, #name, 0, 0, 0, 0, 0, e.offset or pos) .. name
    out[#out + 1] = h .. data
    pos = pos + #h + #data
  end
  local cd = table.concat(central)
  return table.concat(out) .. cd .. "PK\5\6" .. string.pack("<I2I2I2I2I4I4I2", 0, 0, #entries, #entries, #cd, pos, 0)
end

-- pickle pieces (protocol 2)
local function str(s) return "X" .. string.pack("<I4", #s) .. s end
local function global(m, n) return "c" .. m .. "\n" .. n .. "\n" end
-- {"w": _rebuild_tensor_v2(storage '0' of n floats, offset, (size,), (stride,), False, {})}
local function int(v) return v < 256 and "K" .. string.char(v) or "\138\8" .. string.pack("<i8", v) end
local function view_pickle(n, offset, size, stride)
  return "\128\2}(" .. str("w") .. global("torch._utils", "_rebuild_tensor_v2") .. "((" .. str("storage")
    .. global("torch", "FloatStorage") .. str("0") .. str("cpu") .. int(n) .. "tQ" .. int(offset) .. int(size)
    .. "\133" .. int(stride) .. "\133\137}tRu."
end
local function floats(list)
  return string.pack("<" .. ("f"):rep(#list), table.unpack(list))
end
local function archive(name, pkl, storages)
  local entries = {{"a/data.pkl", pkl}}
  for k, v in pairs(storages or {}) do entries[#entries + 1] = {"a/data/" .. k, v} end
  entries[#entries + 1] = {"a/version", "3\n"}
  return write(tmp(name), zip(entries))
end

local SEQ = {
  ["0.weight"] = {{-0.004322517663240433, 0.3097158372402191, -0.4751853346824646},
    {-0.4248946011066437, -0.2223689705133438, 0.15482072532176971},
    {-0.011439144611358643, 0.45777493715286255, -0.05123639851808548},
    {0.1527741253376007, -0.1744827926158905, -0.11348707973957062}},
  ["0.bias"] = {-0.55157071352005, -0.3823687434196472, -0.2379971146583557, 0.021387115120887756},
  ["1.weight"] = {1.4527380466461182, 0.5361648201942444, 0.6852310299873352, 0.8734173774719238},
  ["1.bias"] = {-0.19489997625350952, 0.43200039863586426, -0.32408982515335083, -0.23016643524169922},
  ["1.running_mean"] = {-0.008228715509176254, -0.04876052588224411, 0.00035680652945302427, -0.0013449371326714754},
  ["1.running_var"] = {0.9054655432701111, 0.9150204062461853, 0.9222587943077087, 0.9033945798873901},
  ["1.num_batches_tracked"] = 1,
  ["2.weight"] = {{0.19766759872436523, 0.30001139640808105, -0.3389705419540405, -0.21773141622543335},
    {0.18160855770111084, 0.41519397497177124, -0.10290008783340454, 0.3741558790206909}},
  ["2.bias"] = {-0.08059167861938477, 0.05290704965591431},
}

describe("pt.load_torch", function()
  it("reads a state_dict of Sequential(Linear, BatchNorm1d, Linear) exactly", function()
    local sd, orders = pt.load_torch(DIR .. "seq.pt")
    local n = 0
    for k, v in pairs(sd) do
      n = n + 1
      assert.is_true(pt.is_tensor(v), k)
      assert.are.same(SEQ[k], v:tolist(), k)
      assert.are.equal(k == "1.num_batches_tracked" and "int64" or "float32", v:dtype())
      assert.is_false(v.requires_grad)
    end
    assert.are.equal(9, n)
    assert.are.same({4, 3}, sd["0.weight"]:size())
    assert.are.same({}, sd["1.num_batches_tracked"]:size())
    -- the OrderedDict's keys in torch's order; its _metadata attribute is dropped
    assert.are.same({"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
      "1.num_batches_tracked", "2.weight", "2.bias"}, orders[sd])
    assert.is_nil(sd._metadata)
  end)

  it("loads into partrain's matching model, whose 1-based names take torch's 0-based ones", function()
    local nn = pt.nn
    local m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    m:load_state_dict(pt.load_torch(DIR .. "seq.pt"))
    local own = m:state_dict()
    assert.are.same(SEQ["0.weight"], own["1.weight"]:tolist())
    assert.are.same(SEQ["1.running_var"], own["2.running_var"]:tolist())
    m:eval()
    local y = m(pt.tensor({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}))
    -- torch: m.eval(); m(x).tolist()
    assert_close(y, {{-0.19157910346984863, -0.28469163179397583}, {-0.09057196229696274, -0.045566730201244354}})
  end)

  for _, fast in ipairs({true, false}) do
    it("reads every storage dtype" .. (fast and "" or " (string.unpack path, without pt.ffi)"), function()
      local L = require "partrain.torch_load"
      L._fast_copy = fast
      local ok, d = pcall(pt.load_torch, DIR .. "dtypes.pt")
      L._fast_copy = nil
      assert(ok, d)
      local expected = {
        f64 = {"float64", {3}, {1.5, -2.25, 1e300}},
        i64 = {"int64", {2, 2}, {{1, -2}, {4611686018427387904, math.mininteger}}},
        i32 = {"int32", {2}, {7, -8}},
        i16 = {"int32", {2}, {300, -301}},
        i8 = {"int32", {3}, {-128, 127, 5}},
        u8 = {"uint8", {3}, {0, 200, 255}},
        b = {"bool", {3}, {true, false, true}},
        f16 = {"float32", {5}, {1.0, -0.333251953125, 65504.0, 5.960464477539063e-08, math.huge}},
        bf16 = {"float32", {4}, {1.0, -3.140625, 9.969209968386869e+37, -math.huge}},
        scalar = {"float32", {}, 2.5},
      }
      for k, e in pairs(expected) do
        assert.are.equal(e[1], d[k]:dtype(), k)
        assert.are.same(e[2], d[k]:size(), k)
        assert.are.same(e[3], d[k]:tolist(), k)
      end
      for k in pairs(d) do assert.is_not_nil(expected[k], k) end
    end)
  end

  it("keeps views (offset, strides) and the storage two tensors share", function()
    local d = pt.load_torch(DIR .. "views.pt")
    local base = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}
    assert.are.same(base, d.base:tolist())
    assert.are.same({{0, 4, 8}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}}, d.t:tolist())
    assert.are.same({1, 4}, d.t:stride())
    assert.is_false(d.t:is_contiguous())
    assert.are.same({2, 6, 10}, d.col:tolist())
    assert.are.same({4}, d.col:stride())
    assert.are.same({5, 6}, d.row:tolist())
    assert.are.equal(6, d.row:storage_offset()) -- 1-based: torch's storage_offset() is 5
    assert.are.same({1, 3, 5, 7, 9, 11}, d.every_other:tolist())
    assert.are.same({2}, d.every_other:stride())
    for _, k in ipairs({"t", "col", "row", "every_other"}) do assert.is_true(d.base:is_same_storage(d[k]), k) end
    -- one storage: writing through one tensor shows in the others
    d.base:fill_(-1)
    assert.are.same({-1, -1}, d.row:tolist())
  end)

  for _, file in ipairs({"nested.pt", "nested4.pt"}) do
    it("reads numbers, strings, booleans, None, lists, tuples and dicts (" .. file .. ")", function()
      local obj, orders = pt.load_torch(DIR .. file)
      assert.are.same({
        a = 1, b = {1, 2.5, "x", nil, true, false}, c = {1, {2, "three"}, {}}, d = {e = "f", [3] = "int key"},
        big = 1 << 62, neg = -5, small = math.mininteger, n300 = 300, n70000 = 70000, u = "h\u{e9}llo",
        od = {z = 1, y = 2},
      }, obj)
      assert.are.equal("integer", math.type(obj.big))
      assert.are.equal("float", math.type(obj.b[2]))
      assert.are.same({"z", "y"}, orders[obj.od])
      assert.are.same({"e", 3}, orders[obj.d])
      -- none = a value keeps None's place in a list
      local kept = pt.load_torch(DIR .. file, {none = "None"})
      assert.are.same({1, 2.5, "x", "None", true, false}, kept.b)
    end)
  end

  it("reads nn.Parameter and requires_grad", function()
    local d = pt.load_torch(DIR .. "param.pt")
    assert.are.same({1, 2}, d.p:tolist())
    assert.is_true(d.p.requires_grad)
    assert.is_true(d.p.is_leaf)
    assert.are.same({3}, d.q:tolist())
    assert.is_true(d.q.requires_grad)
    assert.are.same({4}, d.frozen:tolist())
    assert.is_false(d.frozen.requires_grad)
  end)

  it("maps tensors with map (a device name or a function of the tensor and its location)", function()
    local seen = {}
    local d = pt.load_torch(DIR .. "views.pt", {map = function(t, loc)
      seen[#seen + 1] = loc
      return t * 2
    end})
    assert.are.same({10, 12}, d.row:tolist())
    assert.are.same({"cpu", "cpu", "cpu", "cpu", "cpu"}, seen)
    assert.are.same({5, 6}, pt.load_torch(DIR .. "views.pt", {map = "cpu"}).row:tolist())
  end)

  it("reads archives it did not see torch write (a view of a storage written here)", function()
    local p = archive("view.pt", view_pickle(4, 1, 2, 2), {["0"] = floats({1, 2, 3, 4})})
    assert.are.same({2, 4}, pt.load_torch(p).w:tolist())
  end)

  it("refuses any global outside tensors and plain containers", function()
    local p = DIR .. "evil.pt"
    assert_error("load_torch: " .. p .. ": refusing to load global posix.system (only tensors and plain containers "
      .. "are read; loading never runs code)", pt.load_torch, p)
    local q = archive("evil2.pt", "\128\2" .. global("os", "system") .. str("echo pwned") .. "\133R.")
    assert_error("load_torch: " .. q .. ": refusing to load global os.system (only tensors and plain containers "
      .. "are read; loading never runs code)", pt.load_torch, q)
    local r = archive("evil3.pt", "\128\4" .. "\140\8builtins\140\4eval\147" .. str("1") .. "\133R.")
    assert_error_contains("refusing to load global builtins.eval", pt.load_torch, r)
  end)

  it("raises on truncated and malformed archives", function()
    local whole = read(DIR .. "seq.pt")
    local p = write(tmp("cut.pt"), whole:sub(1, 1000))
    assert_error("load_torch: " .. p .. ": not a valid zip archive: no end of central directory record "
      .. "(a truncated file?)", pt.load_torch, p)
    -- a central directory offset past the end
    local bad = whole:sub(1, -7) .. string.pack("<I4", #whole + 100) .. "\0\0"
    p = write(tmp("badcd.pt"), bad)
    assert_error_contains("not a valid zip archive: central directory at " .. (#whole + 100), pt.load_torch, p)
    -- a local header offset that points nowhere
    p = write(tmp("badlocal.pt"), zip({{"a/data.pkl", "\128\2N.", offset = 5}}))
    assert_error("load_torch: " .. p .. ": not a valid zip archive: entry 'a/data.pkl' has a bad local header "
      .. "offset 5", pt.load_torch, p)
    p = write(tmp("deflate.pt"), zip({{"a/data.pkl", "\128\2N.", 8}}))
    assert_error("load_torch: " .. p .. ": entry 'a/data.pkl' is compressed (method 8); only stored entries are read",
      pt.load_torch, p)
    p = write(tmp("nopkl.pt"), zip({{"a/version", "3\n"}}))
    assert_error("load_torch: " .. p .. ": no <name>/data.pkl entry (not a torch.save file?)", pt.load_torch, p)
    p = write(tmp("legacy.pt"), "\128\2\138\10lZ\252\156F\249 j\168P\25.")
    assert_error_contains("the legacy torch.save format (torch < 1.6, or _use_new_zipfile_serialization=False) "
      .. "is not supported", pt.load_torch, p)
    p = write(tmp("notzip.pt"), "hello")
    assert_error("load_torch: " .. p .. ": not a valid zip archive: no end of central directory record",
      pt.load_torch, p)
    assert_error_contains("load_torch: " .. tmp("missing.pt") .. ": No such file", pt.load_torch, tmp("missing.pt"))
    assert_error("load_torch: " .. tmpdir .. ": cannot be read (a directory?)", pt.load_torch, tmpdir)
  end)

  it("raises when a storage is too short for its tensor or its view", function()
    local p = DIR .. "short_storage.pt"
    assert_error("load_torch: " .. p .. ": full/data.pkl byte 154: storage '0' holds 12 bytes, its 8 elements of "
      .. "FloatStorage need 32", pt.load_torch, p)
    p = archive("shortview.pt", view_pickle(4, 0, 5, 1), {["0"] = floats({1, 2, 3, 4})})
    assert_error_contains(": storage too short for the view: size {5}, stride {1} and offset 0 reach element 5 of "
      .. "a storage of 4 elements", pt.load_torch, p)
    -- sizes whose byte count or reach overflows 64 bits
    p = archive("hugestorage.pt", view_pickle(1 << 62, 0, 2, 1), {["0"] = floats({1, 2, 3, 4})})
    assert_error_contains(": storage '0' holds 16 bytes, its 4611686018427387904 elements of FloatStorage need more",
      pt.load_torch, p)
    p = archive("hugeview.pt", view_pickle(4, 0, 1 << 62, 1 << 62), {["0"] = floats({1, 2, 3, 4})})
    assert_error_contains(": storage too short for the view: size {4611686018427387904} and stride "
      .. "{4611686018427387904} reach past a storage of 4 elements", pt.load_torch, p)
    p = archive("nostorage.pt", view_pickle(4, 0, 2, 1))
    assert_error_contains(": storage '0' has no entry a/data/0", pt.load_torch, p)
    p = archive("badbool.pt", view_pickle(2, 0, 2, 1):gsub("FloatStorage", "BoolStorage"), {["0"] = "\0\7"})
    assert_error_contains(": storage '0' holds a bool that is neither 0 nor 1", pt.load_torch, p)
  end)

  it("raises on a malformed pickle, naming the byte", function()
    local cases = {
      {"\128\2\255.", "a/data.pkl byte 2: unknown or unsupported pickle opcode 0xff"},
      {"\128\2}", "a/data.pkl byte 3: truncated pickle (no STOP)"},
      {"\128\2X\255\0\0\0ab.", "a/data.pkl byte 2: truncated pickle (needs 252 more bytes)"},
      {"\128\2h\5.", "a/data.pkl byte 2: memo entry 5 is missing"},
      {"\128\2s.", "a/data.pkl byte 2: stack underflow"},
      {"\128\2]K\1K\2s.", "a/data.pkl byte 7: SETITEM on a list, not a dict"},
      {"\128\2}K\1a.", "a/data.pkl byte 5: APPEND to a dict, not a list"},
      {"\128\2K\1K\2.", "a/data.pkl byte 6: STOP with 2 values on the stack"},
      {"\128\2t.", "a/data.pkl byte 2: no MARK on the stack"},
      {"\128\2\138\9\0\0\0\0\0\0\0\0\1.", "a/data.pkl byte 2: an integer of 9 bytes does not fit in 64 bits"},
      {"\128\2}NK\1s.", "a/data.pkl byte 6: None as a dict key is not supported"},
      {"\128\2" .. global("torch", "FloatStorage") .. ").", "a/data.pkl byte 23: STOP with 2 values on the stack"},
      {"\128\2" .. global("torch", "FloatStorage") .. ")R.", "a/data.pkl byte 23: torch.FloatStorage cannot be called"},
      {"\128\2]" .. global("torch", "Size") .. "a.", "a/data.pkl byte 15: the global torch.Size can only be called, "
        .. "not stored"},
      {"\128\2K\1Q.", "a/data.pkl byte 4: a persistent id that is not ('storage', type, key, location, numel)"},
      {"\128\9N.", "a/data.pkl byte 0: pickle protocol 9 is not supported"},
    }
    for i, c in ipairs(cases) do
      local p = archive("bad" .. i .. ".pt", c[1])
      assert_error("load_torch: " .. p .. ": " .. c[2], pt.load_torch, p)
    end
  end)

  it("reads the rarer opcodes: DICT, LIST, POP, DUP, sets, bytes, torch.Size, OrderedDict(items)", function()
    local pkl = "\128\2(" .. str("l") .. "(K\1K\2l" .. str("s") .. global("builtins", "set") .. "(]K\3aK\4atR"
      .. str("t") .. global("torch", "Size") .. "(K\2K\3t\133R" .. str("b") .. "C\3a\0b" .. str("o")
      .. global("collections", "OrderedDict") .. "((K\2K\3t(K\1K\4tl\133R" .. str("f") .. "\143(K\7\144"
      .. str("e") .. global("_codecs", "encode") .. str("\u{ff}A") .. str("latin1") .. "\134R" .. "K\0" .. "0"
      .. "d2" .. "0."
    local p = archive("rare.pt", pkl)
    local obj, orders = pt.load_torch(p)
    assert.are.same({l = {1, 2}, s = {[3] = true, [4] = true}, t = {2, 3}, b = "a\0b", o = {[2] = 3, [1] = 4},
      f = {[7] = true}, e = "\255A"}, obj)
    assert.are.same({2, 1}, orders[obj.o])
  end)

  it("checks its arguments", function()
    assert_error("load_torch: path must be a string", pt.load_torch, 3)
    assert_error("load_torch: unknown option 'mapp' (options: map, none)", pt.load_torch, DIR .. "seq.pt", {mapp = 1})
    assert_error("load_torch: map must be a device name (\"cpu\") or a function(tensor, location) -> tensor",
      pt.load_torch, DIR .. "seq.pt", {map = 1})
  end)
end)
