-- safetensors with 16-bit floats and the integer types partrain reads into wider ones (F16, BF16,
-- I8, I16, U16, U32, U64), and pt.save's dtype = "float16" / "bfloat16". Expected values come from
-- numpy 1.24 (float16) and torch 1.13 (bfloat16) on the same inputs, as noted at each table.
local pt = require "partrain"
local support = require "spec.support"
local assert_error = support.assert_error

local tmp = os.tmpname()

-- a safetensors file from {name, dtype, shape, bytes} entries
local function write_file(path, entries)
  local header, data, pos = {}, {}, 0
  for _, e in ipairs(entries) do
    header[#header + 1] = string.format('"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}', e[1], e[2],
      table.concat(e[3], ","), pos, pos + #e[4])
    data[#data + 1] = e[4]
    pos = pos + #e[4]
  end
  local json = "{" .. table.concat(header, ",") .. "}"
  local f = assert(io.open(path, "wb"))
  f:write(string.pack("<I8", #json), json, table.concat(data))
  f:close()
end

local function packed(fmt, list)
  local out = {}
  for i, v in ipairs(list) do out[i] = string.pack(fmt, v) end
  return table.concat(out)
end

-- the file's header: {name = {dtype=, shape=, data_offsets=}}
local function header_of(path)
  local f = assert(io.open(path, "rb"))
  local n = string.unpack("<I8", f:read(8))
  local json = f:read(n)
  f:close()
  return pt._json_decode(json)
end

local function same_values(t, expected)
  local got = t:reshape(-1):tolist()
  assert.are.equal(#expected, #got)
  for i = 1, #got do
    local a, b = got[i], expected[i]
    if b ~= b then
      assert(a ~= a, string.format("element %d: got %.17g, expected nan", i, a))
    else
      assert(a == b and (1 / a > 0) == (1 / b > 0) or (a == b and a ~= 0),
        string.format("element %d: got %.17g, expected %.17g", i, a, b))
    end
  end
end

local inf, nan = math.huge, 0 / 0

describe("safetensors 16-bit floats and narrow integers", function()
  after_each(function() os.remove(tmp) end)

  it("reads F16 and BF16 into float32, exactly", function()
    -- bit patterns and their values (numpy's float16, torch's bfloat16)
    local f16 = {0x0000, 0x8000, 0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x7c00, 0xfc00, 0x3555, 0x7e00}
    local f16_values = {0.0, -0.0, 1.0, -2.0, 65504.0, 5.960464477539063e-08, 6.097555160522461e-05,
                        6.103515625e-05, inf, -inf, 0.333251953125, nan}
    local bf16 = {0x0000, 0x8000, 0x3f80, 0xc020, 0x7f7f, 0x0001, 0x007f, 0x0080, 0x7f80, 0xff80, 0x3dcd, 0x4049}
    local bf16_values = {0.0, -0.0, 1.0, -2.5, 3.3895313892515355e+38, 9.183549615799121e-41,
                         1.1663108012064884e-38, 1.1754943508222875e-38, inf, -inf, 0.10009765625, 3.140625}
    write_file(tmp, {{"a", "F16", {3, 4}, packed("<I2", f16)}, {"b", "BF16", {12}, packed("<I2", bf16)}})
    local t = pt.load(tmp)
    assert.are.equal("float32", t.a:dtype())
    assert.are.same({3, 4}, t.a:size())
    same_values(t.a, f16_values)
    assert.are.equal("float32", t.b:dtype())
    same_values(t.b, bf16_values)
  end)

  it("reads I8, I16, U16 into int32 and U32, U64 into int64", function()
    write_file(tmp, {
      {"i8", "I8", {4}, packed("<i1", {-128, -1, 0, 127})},
      {"i16", "I16", {3}, packed("<i2", {-32768, 5, 32767})},
      {"u16", "U16", {2}, packed("<I2", {0, 65535})},
      {"u32", "U32", {2}, packed("<I4", {0, 4294967295})},
      {"u64", "U64", {2}, packed("<I8", {7, math.maxinteger})},
    })
    local t = pt.load(tmp)
    assert.are.equal("int32", t.i8:dtype())
    assert.are.same({-128, -1, 0, 127}, t.i8:tolist())
    assert.are.same({-32768, 5, 32767}, t.i16:tolist())
    assert.are.equal("int32", t.u16:dtype())
    assert.are.same({0, 65535}, t.u16:tolist())
    assert.are.equal("int64", t.u32:dtype())
    assert.are.same({0, 4294967295}, t.u32:tolist())
    assert.are.same({7, math.maxinteger}, t.u64:tolist())
  end)

  it("refuses a U64 value beyond int64 and the formats it does not read", function()
    write_file(tmp, {{"u", "U64", {2}, packed("<I8", {1, -1})}}) -- -1: 2^64 - 1
    assert_error("load: '" .. tmp .. "': tensor 'u': U64 element 2 does not fit in int64", function() pt.load(tmp) end)
    write_file(tmp, {{"f8", "F8_E4M3", {2}, "\0\0"}})
    assert_error("load: '" .. tmp .. "': tensor 'f8': unsupported dtype 'F8_E4M3' (partrain reads F32, F64, F16, "
      .. "BF16, I64, I32, I16, I8, U64, U32, U16, U8 and BOOL)", function() pt.load(tmp) end)
    -- the byte count follows the stored type
    write_file(tmp, {{"h", "F16", {3}, "\0\0\0\0"}})
    assert_error("load: '" .. tmp .. "': tensor 'h': shape {3} of F16 needs 6 bytes but data_offsets [0, 4] hold 4",
      function() pt.load(tmp) end)
  end)

  it("saves float32 as F16 and BF16 rounded to nearest even, as numpy and torch", function()
    local vals = {0.0, -0.0, 1.0, -2.5, 0.1, 3.14159265, 65504.0, 65519.0, 65520.0, 1e-5, 6e-8, 1e-8, 2.0 ^ -24,
                  3 * 2.0 ^ -25, inf, -inf, 1000.7, -123.456}
    local x = pt.tensor(vals, {dtype = "float32"})
    -- numpy: np.array(vals, np.float32).astype(np.float16)
    local f16_bits = {0, 32768, 15360, 49408, 11878, 16968, 31743, 31743, 31744, 168, 1, 0, 1, 2, 31744, 64512, 25553,
                      55223}
    local f16_values = {0.0, -0.0, 1.0, -2.5, 0.0999755859375, 3.140625, 65504.0, 65504.0, inf,
                        1.0013580322265625e-05, 5.960464477539063e-08, 0.0, 5.960464477539063e-08,
                        1.1920928955078125e-07, inf, -inf, 1000.5, -123.4375}
    -- torch: torch.tensor(np.array(vals, np.float32)).to(torch.bfloat16)
    local bf16_bits = {0, 32768, 16256, 49184, 15821, 16457, 18304, 18304, 18304, 14120, 13185, 12844, 13184, 13248,
                       32640, 65408, 17530, 49911}
    local bf16_values = {0.0, -0.0, 1.0, -2.5, 0.10009765625, 3.140625, 65536.0, 65536.0, 65536.0,
                         1.0013580322265625e-05, 6.007030606269836e-08, 1.0011717677116394e-08,
                         5.960464477539063e-08, 8.940696716308594e-08, inf, -inf, 1000.0, -123.5}
    for _, case in ipairs({{"float16", "F16", f16_bits, f16_values}, {"half", "F16", f16_bits, f16_values},
                           {"bfloat16", "BF16", bf16_bits, bf16_values}}) do
      pt.save(tmp, {x = x, n = pt.tensor({1, 2}, {dtype = "int64"})}, {dtype = case[1]})
      local h = header_of(tmp)
      assert.are.equal(case[2], h.x.dtype)
      assert.are.equal("I64", h.n.dtype) -- integers keep their type
      local f = assert(io.open(tmp, "rb"))
      local data = f:read("a")
      f:close()
      local start = 8 + string.unpack("<I8", data) + h.x.data_offsets[1] + 1 -- 1-based
      for i, bits in ipairs(case[3]) do
        assert.are.equal(bits, string.unpack("<I2", data, start + 2 * (i - 1)))
      end
      local t = pt.load(tmp)
      same_values(t.x, case[4])
      assert.are.same({1, 2}, t.n:tolist())
    end
  end)

  it("rounds float64 to 16 bits in one step (no double rounding through float32)", function()
    -- numpy's float64 -> float16 (direct): 1 + 2^-11 + 2^-40 is above the tie, so it rounds up
    local x = pt.tensor({1 + 2 ^ -11 + 2 ^ -40, 1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 0.1, 2 ^ -25 + 2 ^ -60, 2 ^ -25},
      {dtype = "float64"})
    pt.save(tmp, {x = x}, {dtype = "float16"})
    local f = assert(io.open(tmp, "rb"))
    local data = f:read("a")
    f:close()
    local start = 8 + string.unpack("<I8", data) + 1
    local expected = {15361, 15360, 15362, 11878, 1, 0}
    for i, bits in ipairs(expected) do assert.are.equal(bits, string.unpack("<I2", data, start + 2 * (i - 1))) end
    -- bfloat16: 1 + 2^-8 + 2^-40 rounds up to 1 + 2^-7 (through float32 it would tie to 1.0)
    pt.save(tmp, {y = pt.tensor({1 + 2 ^ -8 + 2 ^ -40, 1 + 2 ^ -8, nan}, {dtype = "float64"})}, {dtype = "bfloat16"})
    same_values(pt.load(tmp).y, {1 + 2 ^ -7, 1.0, nan})
  end)

  it("keeps the optimizer's state in its own dtype, so a resume stays exact", function()
    pt.manual_seed(4)
    local model = pt.nn.Linear(3, 2)
    local opt = pt.optim.Adam(model:parameters(), {lr = 0.01})
    model(pt.randn(5, 3)):sum():backward()
    opt:step()
    pt.save(tmp, model, {optimizer = opt, dtype = "bfloat16"})
    local h = header_of(tmp)
    assert.are.equal("BF16", h.weight.dtype)
    local optimizer_entries = 0
    for name, e in pairs(h) do
      if name ~= "__metadata__" and name ~= "weight" and name ~= "bias" then
        optimizer_entries = optimizer_entries + 1
        assert.are_not.equal("BF16", e.dtype)
      end
    end
    assert.is_true(optimizer_entries > 0)
  end)

  it("names a wrong dtype option", function()
    assert_error('save: dtype must be "float16" (or "half") or "bfloat16", got \'float8\'',
      function() pt.save(tmp, {x = pt.ones(1)}, {dtype = "float8"}) end)
  end)
  it("are read by scripts/read_checkpoint.py (json + numpy), bfloat16 included", function()
    -- numpy has no bfloat16: the script failed with KeyError: 'BF16'
    local p = tmp .. "_bf16_py.safetensors"
    pt.save(p, {x = pt.tensor({1.5, -2, 0.25})}, {dtype = "bfloat16"})
    local h = io.popen("/usr/bin/python3 scripts/read_checkpoint.py " .. p .. " --values 2>&1")
    local out = h:read("a")
    h:close()
    os.remove(p)
    assert.matches("x\tfloat32\t[3]\t1.5 -2.0 0.25\n", out, 1, true)
  end)
end)
