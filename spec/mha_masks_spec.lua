-- nn.MultiheadAttention's mask merging as torch 1.13's F.multi_head_attention_forward: a
-- key_padding_mask joins a bool attn_mask by logical_or (a float key_padding_mask then masks where
-- it is nonzero instead of being added), a float attn_mask by masked_fill(-inf); a uint8 attn_mask
-- is read as bool, a uint8 key_padding_mask is refused. Values are torch 1.13's (float64).
local pt = require "partrain"
local support = require "spec.support"

local F64 = {dtype = "float64"}

local function module()
  local m = pt.nn.MultiheadAttention(4, 2, {batch_first = true, dtype = "float64"})
  pt.no_grad(function()
    m.in_proj_weight:copy_(pt.arange(0, 48, 1, F64):mul(0.1):add(0.2):sin():view(12, 4))
    m.in_proj_bias:copy_(pt.arange(0, 12, 1, F64):mul(0.3):cos())
    m.out_proj.weight:copy_(pt.arange(0, 16, 1, F64):mul(0.05):sin():view(4, 4))
    m.out_proj.bias:zero_()
  end)
  return m
end

local function near(t, list)
  local flat = t:reshape(-1)
  assert.are.equal(#list, flat:numel())
  for i = 1, #list do assert.is_true(math.abs(flat[i] - list[i]) < 1e-12, "entry " .. i) end
end

describe("nn.MultiheadAttention masks", function()
  local q = pt.arange(0, 12, 1, F64):mul(0.7):cos():view(1, 3, 4)
  local am_bool = pt.tensor({{false, true, false}, {false, false, false}, {false, false, false}}, {dtype = "bool"})

  it("merge a float key_padding_mask into a bool attn_mask by logical_or, as torch", function()
    local o, w = module()(q, q, q, {attn_mask = am_bool, key_padding_mask = pt.tensor({{0, 0, -1}}, F64)})
    near(w, {1.0, 0.0, 0.0, 0.356495621946038, 0.643504378053962, 0.0, 0.996720386708891, 0.0032796132911091327, 0.0})
    near(o, {-0.6720522782765946, -2.135912028533059, -3.5146197064720837, -4.75321058773791, 0.11587923560711698, 0.07148612715677743, 0.024243092404216324, -0.023966437938998705, -0.6664505984797183, -2.1216485803297993, -3.492263128531391, -4.723652166272019})
  end)

  it("merge a bool key_padding_mask into a float attn_mask as -inf", function()
    local am = pt.tensor({{0, -1, 0.5}, {0, 0, 0}, {1, 0, -2}}, F64)
    local _, w = module()(q, q, q, {attn_mask = am, key_padding_mask = pt.tensor({{false, true, false}}, {dtype = "bool"})})
    near(w, {0.20041011046059432, 0.0, 0.7995898895394058, 0.49469161549773405, 0.0, 0.505308384502266, 0.7268524024994056, 0.0, 0.2731475975005945})
  end)

  it("read a uint8 attn_mask as bool and refuse a uint8 key_padding_mask", function()
    local m = module()
    local _, w = m(q, q, q, {attn_mask = am_bool:to("uint8"), key_padding_mask = pt.tensor({{false, false, true}}, {dtype = "bool"})})
    near(w, {1.0, 0.0, 0.0, 0.356495621946038, 0.643504378053962, 0.0, 0.996720386708891, 0.0032796132911091327, 0.0})
    support.assert_error("MultiheadAttention:forward: key_padding_mask must be a bool or floating tensor, got dtype uint8",
      m, q, q, q, {key_padding_mask = pt.tensor({{0, 0, 1}}, {dtype = "uint8"})})
  end)
end)
