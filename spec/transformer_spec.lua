-- nn_rnn.lua's TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch 1.13.
--
-- The expected numbers (E.*) and state_dict keys (K.*) at the end of this file were computed
-- once with PyTorch 1.13 in float64 by the script below; every parameter (in state_dict order,
-- k = 1, 2, ...) and input holds s * sin(0.7 i + 1.3 k + 0.1) for its flat index i = 0, 1, ...
-- (vals() below), as in spec/nn_rnn_spec.lua. The layers here run in float32 and are compared
-- with a tolerance.
--[==[
# Reference values for spec/transformer_spec.lua (PyTorch 1.13, float64).
import math, torch
import torch.nn as nn
torch.set_default_dtype(torch.float64)

def vals(shape, k, s=0.5):
    n = 1
    for d in shape: n *= d
    return torch.tensor([s * math.sin(0.7 * i + 1.3 * k + 0.1) for i in range(n)]).reshape(shape)

def fill(m):
    with torch.no_grad():
        for k, (name, t) in enumerate(m.state_dict().items(), 1):
            t.copy_(vals(tuple(t.shape), k))
    m.eval()
    return m

def X(shape, k=101): return vals(shape, k, 1.0)

out = []
def emit(name, **tensors):
    parts = []
    for key, t in tensors.items():
        t = t.detach().contiguous()
        parts.append("%s = {{%s}, {%s}}" % (key, ",".join(str(d) for d in t.shape),
            ", ".join("%.10g" % v for v in t.reshape(-1).tolist())))
    out.append("E.%s = {%s}" % (name, ",\n  ".join(parts)))

def keys(name, m):
    out.append("K.%s = {%s}" % (name, ", ".join('{"%s", {%s}}' % (k, ",".join(str(d) for d in v.shape))
        for k, v in m.state_dict().items())))

causal = nn.Transformer.generate_square_subsequent_mask(3)          # float, -inf above the diagonal
causal_bool = torch.ones(3, 3, dtype=torch.bool).triu(1)            # true = masked out
kpm_mem = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
kpm_tgt = torch.tensor([[False, False, True], [False, False, False]])
tgt, mem = X((3, 2, 4), 141), X((5, 2, 4), 142)

m = fill(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8)); keys("tdl", m)
emit("tdl_relu", out=m(tgt, mem))
emit("tdl_masks", out=m(tgt, mem, tgt_mask=causal_bool, tgt_key_padding_mask=kpm_tgt, memory_key_padding_mask=kpm_mem))
emit("tdl_float_masks", out=m(tgt, mem, tgt_mask=causal, memory_mask=vals((3, 5), 150, 2.0)))
emit("tdl_unbatched", out=m(X((3, 4), 141), X((5, 4), 142), memory_key_padding_mask=kpm_mem[0]))
m = fill(nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, activation="gelu", norm_first=True, batch_first=True))
emit("tdl_gelu_normfirst_bf", out=m(X((2, 3, 4), 141), X((2, 5, 4), 142), tgt_mask=causal,
     memory_key_padding_mask=kpm_mem, tgt_key_padding_mask=kpm_tgt))
layer = nn.TransformerDecoderLayer(4, 2, dim_feedforward=8)
m = fill(nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(4))); keys("dec", m)
emit("dec", out=m(tgt, mem, tgt_mask=causal))
m = fill(nn.Transformer(d_model=4, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=8)); keys("tr", m)
src = X((5, 2, 4), 143)
emit("tr", out=m(src, tgt))
emit("tr_masks", out=m(src, tgt, tgt_mask=causal, src_key_padding_mask=kpm_mem, memory_key_padding_mask=kpm_mem,
     src_mask=vals((5, 5), 151, 2.0)))
m = fill(nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=6,
                        activation="gelu", batch_first=True, norm_first=True))
emit("tr_bf_normfirst", out=m(X((2, 5, 4), 143), X((2, 3, 4), 141), tgt_mask=causal))
emit("square_mask", mask=nn.Transformer.generate_square_subsequent_mask(4))
print("\n".join(out))
]==]
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"

local E, K = {}, {}
local inf = math.huge

local vals, X, fill, close = support.sin_values, support.sin_input, support.fill_params,
  support.assert_fixture

local function keys_of(m)
  local out = {}
  for name, t in pairs(m:state_dict()) do out[#out + 1] = {name, t:size()} end
  return out
end

-- PyTorch's keys with the layer indexes 1-based, as partrain's ModuleList numbers them
local function one_based(keys)
  local out = {}
  for i, e in ipairs(keys) do
    out[i] = {(e[1]:gsub("layers%.(%d+)", function(d) return "layers." .. (tonumber(d) + 1) end)), e[2]}
  end
  return out
end

-- the message of fn's error, which must point at this file (the user's line), without the position
local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  e = tostring(e)
  assert.matches("^spec/transformer_spec%.lua:%d+: ", e)
  return (e:gsub("^[^:]*:%d+: ", ""))
end

-- gradcheck through a module: its parameters (float64) are inputs after the given ones
local function module_gradcheck(m, f, inputs, opts)
  m:double()
  local slots = {}
  for _, mod in ipairs(m:modules()) do
    for _, n in ipairs(mod._param_names) do slots[#slots + 1] = {mod, n} end
  end
  local all = {}
  for i, x in ipairs(inputs) do all[i] = x end
  local n_in = #inputs
  for i, s in ipairs(slots) do all[n_in + i] = s[1]._parameters[s[2]]:detach() end
  return gradcheck(function(...)
    local args = {...}
    for i, s in ipairs(slots) do s[1]._parameters[s[2]] = args[n_in + i] end
    return f(table.unpack(args, 1, n_in))
  end, all, opts)
end

local F64 = "float64"
local causal_bool = pt.tensor({{false, true, true}, {false, false, true}, {false, false, false}})
local kpm_mem = pt.tensor({{false, false, false, true, true}, {false, false, false, false, false}})
local kpm_tgt = pt.tensor({{false, false, true}, {false, false, false}})
local function tgt() return X({3, 2, 4}, 141) end
local function mem() return X({5, 2, 4}, 142) end

describe("nn.TransformerDecoderLayer", function()
  it("matches PyTorch (post-norm relu; boolean, float and key padding masks; unbatched)", function()
    local m = fill(nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8}))
    assert.are.same(K.tdl, keys_of(m))
    close(m(tgt(), mem()), E.tdl_relu.out)
    close(m(tgt(), mem(), {tgt_mask = causal_bool, tgt_key_padding_mask = kpm_tgt, memory_key_padding_mask = kpm_mem}),
      E.tdl_masks.out)
    close(m(tgt(), mem(), {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3),
      memory_mask = vals({3, 5}, 150, 2.0)}), E.tdl_float_masks.out)
    close(m(X({3, 4}, 141), X({5, 4}, 142), {memory_key_padding_mask = kpm_mem[1]}), E.tdl_unbatched.out)
    -- tgt_is_causal (PyTorch 2.x's) without a tgt_mask is the causal mask
    close(m(tgt(), mem(), {tgt_is_causal = true, tgt_key_padding_mask = kpm_tgt, memory_key_padding_mask = kpm_mem}),
      E.tdl_masks.out)
  end)

  it("matches PyTorch (gelu, norm_first, batch_first)", function()
    local m = fill(nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8, activation = "gelu", norm_first = true,
      batch_first = true}))
    close(m(X({2, 3, 4}, 141), X({2, 5, 4}, 142), {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3),
      memory_key_padding_mask = kpm_mem, tgt_key_padding_mask = kpm_tgt}), E.tdl_gelu_normfirst_bf.out)
  end)

  it("drops out in training only, prints as the encoder layer, runs in float64", function()
    local m = nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8})
    pt.manual_seed(3)
    assert.is_false(m(tgt(), mem()):equal(m(tgt(), mem())))
    m:eval()
    assert.is_true(m(tgt(), mem()):equal(m(tgt(), mem())))
    assert.matches("^TransformerDecoderLayer%(\n  d_model=4, nhead=2, dim_feedforward=8, activation='relu', "
      .. "norm_first=false, batch_first=false\n  %(self_attn%): MultiheadAttention", tostring(m))
    local d = fill(nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8, dtype = F64}))
    close(d(X({3, 2, 4}, 141, F64), X({5, 2, 4}, 142, F64)), E.tdl_relu.out, 1e-9)
  end)

  it("names the shapes in its errors and refuses bad options", function()
    local m = nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8})
    local L = "TransformerDecoderLayer:forward: "
    assert.are.equal(L .. "tgt and memory must both be 3-D (batched) or both 2-D (unbatched), got shapes {3,2,4} "
      .. "and {5,4}", err(function() return m(tgt(), X({5, 4})) end))
    assert.are.equal(L .. "tgt and memory must have d_model = 4 features, got shapes {3,2,4} and {5,2,3}",
      err(function() return m(tgt(), X({5, 2, 3})) end))
    assert.are.equal(L .. "tgt and memory must have the same batch size, got shapes {3,2,4} and {5,3,4}",
      err(function() return m(tgt(), X({5, 3, 4})) end))
    assert.are.equal(L .. "memory must be a tensor, got nil", err(function() return m(tgt()) end))
    assert.are.equal(L .. "tgt_mask must have shape {3,3} or {4,3,3}, got {3,5}",
      err(function() return m(tgt(), mem(), {tgt_mask = pt.zeros(3, 5)}) end))
    assert.are.equal(L .. "memory_mask must have shape {3,5} or {4,3,5}, got {5,3}",
      err(function() return m(tgt(), mem(), {memory_mask = pt.zeros(5, 3)}) end))
    assert.are.equal(L .. "memory_key_padding_mask must have shape {2,5}, got {2,3}",
      err(function() return m(tgt(), mem(), {memory_key_padding_mask = kpm_tgt}) end))
    assert.are.equal(L .. "tgt_key_padding_mask must have shape {3}, got {2,3}",
      err(function() return m(X({3, 4}), X({5, 4}), {tgt_key_padding_mask = kpm_tgt}) end))
    assert.are.equal(L .. "tgt_is_causal must be a boolean, got 1",
      err(function() return m(tgt(), mem(), {tgt_is_causal = 1}) end))
    assert.are.equal(L .. "unknown option 'src_mask'", err(function() return m(tgt(), mem(), {src_mask = causal_bool}) end))
    assert.are.equal("TransformerDecoderLayer: d_model must be divisible by nhead, got d_model=6, nhead=4",
      err(function() return nn.TransformerDecoderLayer(6, 4) end))
    assert.are.equal("TransformerDecoderLayer: activation must be 'relu', 'gelu' or a function, got tanh",
      err(function() return nn.TransformerDecoderLayer(4, 2, {activation = "tanh"}) end))
    assert.are.equal("TransformerDecoderLayer: unknown option 'dim_ff'",
      err(function() return nn.TransformerDecoderLayer(4, 2, {dim_ff = 8}) end))
  end)

  it("passes a finite-difference gradient check (float64, eval)", function()
    local m = nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 4, activation = "gelu", norm_first = true}):eval()
    module_gradcheck(m, function(t, s)
      return m(t, s, {tgt_mask = causal_bool, memory_key_padding_mask = kpm_mem})
    end, {X({3, 2, 4}, 141, F64), X({5, 2, 4}, 142, F64)})
    local p = nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 4, batch_first = true}):eval()
    module_gradcheck(p, function(t, s) return p(t, s) end, {X({2, 3, 4}, 141, F64), X({2, 2, 4}, 142, F64)})
  end)
end)

describe("nn.TransformerDecoder", function()
  it("stacks copies and matches PyTorch", function()
    local layer = nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8})
    local dec = nn.TransformerDecoder(layer, 2, {norm = nn.LayerNorm(4)})
    assert.are.same(one_based(K.dec), keys_of(dec))
    assert.are_not.equal(dec.layers[1].linear1.weight, dec.layers[2].linear1.weight)
    assert.is_true(dec.layers[2].linear1.weight:equal(layer.linear1.weight))
    fill(dec)
    close(dec(tgt(), mem(), {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3)}), E.dec.out)
    assert.are.equal("TransformerDecoder: decoder_layer must be a Module (e.g. nn.TransformerDecoderLayer), got number",
      err(function() return nn.TransformerDecoder(3, 2) end))
    assert.are.equal("TransformerDecoder: num_layers must be a positive integer, got 0",
      err(function() return nn.TransformerDecoder(layer, 0) end))
    assert.are.equal("TransformerDecoder: norm must be a Module (e.g. nn.LayerNorm), got string",
      err(function() return nn.TransformerDecoder(layer, 1, {norm = "layer"}) end))
    assert.are.equal("TransformerDecoder:forward: unknown option 'mask'",
      err(function() return dec(tgt(), mem(), {mask = causal_bool}) end))
  end)
end)

describe("nn.Transformer", function()
  it("has PyTorch's keys (layers 1-based) and matches PyTorch, with every mask", function()
    local m = nn.Transformer({d_model = 4, nhead = 2, num_encoder_layers = 2, num_decoder_layers = 1,
      dim_feedforward = 8})
    assert.are.same(one_based(K.tr), keys_of(m))
    fill(m)
    local src = X({5, 2, 4}, 143)
    close(m(src, tgt()), E.tr.out)
    close(m(src, tgt(), {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3),
      src_key_padding_mask = kpm_mem, memory_key_padding_mask = kpm_mem, src_mask = vals({5, 5}, 151, 2.0)}),
      E.tr_masks.out)
    -- positional d_model and nhead, as the layers take them
    local p = fill(nn.Transformer(4, 2, {num_encoder_layers = 2, num_decoder_layers = 1, dim_feedforward = 8}))
    close(p(src, tgt()), E.tr.out)
  end)

  it("matches PyTorch (batch_first, norm_first, gelu)", function()
    local m = fill(nn.Transformer(4, 2, {num_encoder_layers = 1, num_decoder_layers = 2, dim_feedforward = 6,
      activation = "gelu", batch_first = true, norm_first = true}))
    close(m(X({2, 5, 4}, 143), X({2, 3, 4}, 141), {tgt_mask = m:generate_square_subsequent_mask(3)}),
      E.tr_bf_normfirst.out)
    close(m(X({2, 5, 4}, 143), X({2, 3, 4}, 141), {tgt_is_causal = true}), E.tr_bf_normfirst.out)
  end)

  it("starts its matrices from xavier_uniform_ and takes custom encoders and decoders", function()
    pt.manual_seed(1)
    local m = nn.Transformer(8, 2, {num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 16})
    local w = m.decoder.layers[1].linear1.weight -- xavier bound sqrt(6/(8+16)) = 0.5
    assert.is_true(w:abs():max():item() <= 0.5)
    assert.is_true(w:abs():max():item() > 0.4)
    local enc = nn.Linear(8, 8)
    local c = nn.Transformer(8, 2, {custom_encoder = enc, num_decoder_layers = 1, dim_feedforward = 16})
    assert.are.equal(enc, c.encoder)
    assert.are.equal(1, #c.decoder.layers)
  end)

  it("generate_square_subsequent_mask: -inf above the diagonal", function()
    close(nn.Transformer.generate_square_subsequent_mask(4), E.square_mask.mask, 0)
    assert.are.equal("float64", nn.Transformer.generate_square_subsequent_mask(2, {dtype = F64}):dtype())
    assert.are.same({0, 0}, nn.Transformer.generate_square_subsequent_mask(0):size())
    assert.are.equal("Transformer.generate_square_subsequent_mask: sz must be a non-negative integer, got 2.5",
      err(function() return nn.Transformer.generate_square_subsequent_mask(2.5) end))
    assert.are.equal("Transformer.generate_square_subsequent_mask: dtype must be 'float32' or 'float64', got int64",
      err(function() return nn.Transformer.generate_square_subsequent_mask(2, {dtype = "int64"}) end))
  end)

  it("names the shapes in its errors and refuses bad options", function()
    local m = nn.Transformer(4, 2, {num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 8})
    local src = X({5, 2, 4}, 143)
    local L = "Transformer:forward: "
    assert.are.equal(L .. "src and tgt must have the same batch size, got shapes {5,2,4} and {3,3,4}",
      err(function() return m(src, X({3, 3, 4})) end))
    assert.are.equal(L .. "src and tgt must have d_model = 4 features, got shapes {5,2,4} and {3,2,6}",
      err(function() return m(src, X({3, 2, 6})) end))
    assert.are.equal(L .. "src and tgt must both be 3-D (batched) or both 2-D (unbatched), got shapes {5,4} and {3,2,4}",
      err(function() return m(X({5, 4}), tgt()) end))
    assert.are.equal(L .. "src_mask must have shape {5,5} or {4,5,5}, got {3,3}",
      err(function() return m(src, tgt(), {src_mask = causal_bool}) end))
    assert.are.equal(L .. "src_key_padding_mask must have shape {2,5}, got {2,3}",
      err(function() return m(src, tgt(), {src_key_padding_mask = kpm_tgt}) end))
    assert.are.equal(L .. "tgt_mask must have shape {3,3} or {4,3,3}, got {5,5}",
      err(function() return m(src, tgt(), {tgt_mask = pt.zeros(5, 5)}) end))
    assert.are.equal(L .. "unknown option 'mask'", err(function() return m(src, tgt(), {mask = causal_bool}) end))
    assert.are.equal("Transformer: unknown option 'nheads'", err(function() return nn.Transformer({nheads = 2}) end))
    assert.are.equal("Transformer: unknown option 'd_model'",
      err(function() return nn.Transformer(4, 2, {d_model = 4}) end))
    assert.are.equal("Transformer: expected nn.Transformer([d_model, nhead,] [opts]), the options last",
      err(function() return nn.Transformer({d_model = 4}, 2) end))
    assert.are.equal("Transformer: d_model must be divisible by nhead, got d_model=4, nhead=3",
      err(function() return nn.Transformer(4, 3) end))
    assert.are.equal("Transformer: custom_encoder must be a Module, got table",
      err(function() return nn.Transformer(4, 2, {custom_encoder = {}}) end))
    assert.are.equal("Transformer: num_decoder_layers must be a positive integer, got 0",
      err(function() return nn.Transformer(4, 2, {num_encoder_layers = 1, num_decoder_layers = 0}) end))
  end)

  it("passes a finite-difference gradient check (float64, eval)", function()
    local m = nn.Transformer(4, 2, {num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 4,
      batch_first = true}):eval()
    module_gradcheck(m, function(s, t)
      return m(s, t, {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3, {dtype = F64})})
    end, {X({2, 2, 4}, 143, F64), X({2, 3, 4}, 141, F64)})
  end)

  it("documents its classes and functions", function()
    for _, v in ipairs {nn.TransformerDecoderLayer, nn.TransformerDecoder, nn.Transformer,
                        nn.Transformer.generate_square_subsequent_mask} do
      assert.is_string(pt._docs[v])
    end
    assert.matches("tgt_mask", pt._docs[nn.TransformerDecoderLayer])
  end)
end)

-- ------------------------------------------------------------------ reference values
K.tdl = {{"self_attn.in_proj_weight", {12,4}}, {"self_attn.in_proj_bias", {12}}, {"self_attn.out_proj.weight", {4,4}}, {"self_attn.out_proj.bias", {4}}, {"multihead_attn.in_proj_weight", {12,4}}, {"multihead_attn.in_proj_bias", {12}}, {"multihead_attn.out_proj.weight", {4,4}}, {"multihead_attn.out_proj.bias", {4}}, {"linear1.weight", {8,4}}, {"linear1.bias", {8}}, {"linear2.weight", {4,8}}, {"linear2.bias", {4}}, {"norm1.weight", {4}}, {"norm1.bias", {4}}, {"norm2.weight", {4}}, {"norm2.bias", {4}}, {"norm3.weight", {4}}, {"norm3.bias", {4}}}
E.tdl_relu = {out = {{3,2,4}, {-0.6410480683, -0.02262358352, -0.3863724282, 0.5771138109, -0.4877683859, -0.6075404079, -0.6851332251, 0.7999545175, -0.6766494804, -0.2535497895, 0.2782348785, 0.4286969011, -0.4461526573, -1.002735712, -0.1976496722, 0.6612139445, -0.6185294259, -0.7172779891, 0.4964521597, 0.4946843952, -0.4834081494, -0.5683358588, -0.7325735441, 0.7827497158}}}
E.tdl_masks = {out = {{3,2,4}, {-0.6129981382, 0.03681676085, -0.5590424317, 0.5491150417, -0.5442684957, -0.2528326167, -0.7769399418, 0.7368488183, -0.6588831945, 0.05452988157, -0.181124475, 0.416442902, -0.4463135611, -0.9745635215, -0.2640790043, 0.684545218, -0.6673163726, -0.07535427409, -0.1293832438, 0.5300403171, -0.4834081494, -0.5683358588, -0.7325735441, 0.7827497158}}}
E.tdl_float_masks = {out = {{3,2,4}, {-0.6370348854, -0.06609152294, -0.4115598218, 0.6222079594, -0.5580205396, -0.1314109008, -0.7763308882, 0.6715893785, -0.6226809567, -0.6733807995, 0.5582597868, 0.4225708062, -0.4484438258, -0.8984913787, -0.406501122, 0.72623854, -0.6675550756, -0.05162229034, -0.1234684731, 0.5042560564, -0.4719816465, -0.6750099337, -0.6547294773, 0.7843955699}}}
E.tdl_unbatched = {out = {{3,4}, {-0.6226658633, 0.06609737785, -0.4960262059, 0.5094967793, -0.4714282883, -1.052684355, 0.05555602335, 0.6107903961, -0.6483055696, 0.07686301036, -0.2901255679, 0.4384516792}}}
E.tdl_gelu_normfirst_bf = {out = {{2,3,4}, {-0.4651238102, 0.4378413505, 0.7933246225, -0.2401248639, -2.027128886, -1.44181375, -0.6665482329, -0.2657913168, -0.8831301247, 0.4267216139, 1.060884156, 0.4612471865, -1.539825055, -1.223903784, -0.8599475275, -0.9190311801, -1.536155534, 0.02759580045, 1.047729228, 0.855462671, -0.8203009713, -0.5082452921, -0.5134105579, -0.8789692233}}}
K.dec = {{"layers.0.self_attn.in_proj_weight", {12,4}}, {"layers.0.self_attn.in_proj_bias", {12}}, {"layers.0.self_attn.out_proj.weight", {4,4}}, {"layers.0.self_attn.out_proj.bias", {4}}, {"layers.0.multihead_attn.in_proj_weight", {12,4}}, {"layers.0.multihead_attn.in_proj_bias", {12}}, {"layers.0.multihead_attn.out_proj.weight", {4,4}}, {"layers.0.multihead_attn.out_proj.bias", {4}}, {"layers.0.linear1.weight", {8,4}}, {"layers.0.linear1.bias", {8}}, {"layers.0.linear2.weight", {4,8}}, {"layers.0.linear2.bias", {4}}, {"layers.0.norm1.weight", {4}}, {"layers.0.norm1.bias", {4}}, {"layers.0.norm2.weight", {4}}, {"layers.0.norm2.bias", {4}}, {"layers.0.norm3.weight", {4}}, {"layers.0.norm3.bias", {4}}, {"layers.1.self_attn.in_proj_weight", {12,4}}, {"layers.1.self_attn.in_proj_bias", {12}}, {"layers.1.self_attn.out_proj.weight", {4,4}}, {"layers.1.self_attn.out_proj.bias", {4}}, {"layers.1.multihead_attn.in_proj_weight", {12,4}}, {"layers.1.multihead_attn.in_proj_bias", {12}}, {"layers.1.multihead_attn.out_proj.weight", {4,4}}, {"layers.1.multihead_attn.out_proj.bias", {4}}, {"layers.1.linear1.weight", {8,4}}, {"layers.1.linear1.bias", {8}}, {"layers.1.linear2.weight", {4,8}}, {"layers.1.linear2.bias", {4}}, {"layers.1.norm1.weight", {4}}, {"layers.1.norm1.bias", {4}}, {"layers.1.norm2.weight", {4}}, {"layers.1.norm2.bias", {4}}, {"layers.1.norm3.weight", {4}}, {"layers.1.norm3.bias", {4}}, {"norm.weight", {4}}, {"norm.bias", {4}}}
E.dec = {out = {{3,2,4}, {-0.4122926333, -0.6179086908, 0.7837898624, 0.4901393497, -0.5305246487, -0.5181202659, 0.810657462, 0.4905226688, -0.1832900438, -0.7724080725, 0.6826986968, 0.4880222851, -0.4031423523, -0.6226460286, 0.7818545528, 0.4902229784, -0.1703253922, -0.7809720123, 0.6736727795, 0.4877242715, -0.502990169, -0.5416608119, 0.8060868101, 0.4905170373}}}
K.tr = {{"encoder.layers.0.self_attn.in_proj_weight", {12,4}}, {"encoder.layers.0.self_attn.in_proj_bias", {12}}, {"encoder.layers.0.self_attn.out_proj.weight", {4,4}}, {"encoder.layers.0.self_attn.out_proj.bias", {4}}, {"encoder.layers.0.linear1.weight", {8,4}}, {"encoder.layers.0.linear1.bias", {8}}, {"encoder.layers.0.linear2.weight", {4,8}}, {"encoder.layers.0.linear2.bias", {4}}, {"encoder.layers.0.norm1.weight", {4}}, {"encoder.layers.0.norm1.bias", {4}}, {"encoder.layers.0.norm2.weight", {4}}, {"encoder.layers.0.norm2.bias", {4}}, {"encoder.layers.1.self_attn.in_proj_weight", {12,4}}, {"encoder.layers.1.self_attn.in_proj_bias", {12}}, {"encoder.layers.1.self_attn.out_proj.weight", {4,4}}, {"encoder.layers.1.self_attn.out_proj.bias", {4}}, {"encoder.layers.1.linear1.weight", {8,4}}, {"encoder.layers.1.linear1.bias", {8}}, {"encoder.layers.1.linear2.weight", {4,8}}, {"encoder.layers.1.linear2.bias", {4}}, {"encoder.layers.1.norm1.weight", {4}}, {"encoder.layers.1.norm1.bias", {4}}, {"encoder.layers.1.norm2.weight", {4}}, {"encoder.layers.1.norm2.bias", {4}}, {"encoder.norm.weight", {4}}, {"encoder.norm.bias", {4}}, {"decoder.layers.0.self_attn.in_proj_weight", {12,4}}, {"decoder.layers.0.self_attn.in_proj_bias", {12}}, {"decoder.layers.0.self_attn.out_proj.weight", {4,4}}, {"decoder.layers.0.self_attn.out_proj.bias", {4}}, {"decoder.layers.0.multihead_attn.in_proj_weight", {12,4}}, {"decoder.layers.0.multihead_attn.in_proj_bias", {12}}, {"decoder.layers.0.multihead_attn.out_proj.weight", {4,4}}, {"decoder.layers.0.multihead_attn.out_proj.bias", {4}}, {"decoder.layers.0.linear1.weight", {8,4}}, {"decoder.layers.0.linear1.bias", {8}}, {"decoder.layers.0.linear2.weight", {4,8}}, {"decoder.layers.0.linear2.bias", {4}}, {"decoder.layers.0.norm1.weight", {4}}, {"decoder.layers.0.norm1.bias", {4}}, {"decoder.layers.0.norm2.weight", {4}}, {"decoder.layers.0.norm2.bias", {4}}, {"decoder.layers.0.norm3.weight", {4}}, {"decoder.layers.0.norm3.bias", {4}}, {"decoder.norm.weight", {4}}, {"decoder.norm.bias", {4}}}
E.tr = {out = {{3,2,4}, {-0.1674163781, -0.5524178418, -0.3927785799, -1.077910898, -0.09831228926, -0.4682522788, -0.3185864062, -1.030695812, -0.1821674474, -0.5399108267, -0.3863264909, -1.082082137, -0.1199490785, -0.509152601, -0.3485470947, -1.059160248, -0.1783439751, -0.5111397761, -0.3634986912, -1.077808108, -0.1285256886, -0.5167967615, -0.3557629686, -1.064318473}}}
E.tr_masks = {out = {{3,2,4}, {-0.1628983403, -0.5482211062, -0.3880948988, -1.077266755, -0.09945714019, -0.4668924013, -0.3180377315, -1.030286463, -0.1816377614, -0.5411898482, -0.3872231321, -1.081932338, -0.1172754776, -0.5034954104, -0.3441557072, -1.056214879, -0.1757515339, -0.5085552526, -0.3610296404, -1.076439035, -0.128360795, -0.5166802271, -0.3556433287, -1.064233998}}}
E.tr_bf_normfirst = {out = {{2,3,4}, {-0.6836220119, -0.8031096588, 0.3547873499, 0.6684786403, -0.64525339, -0.8714105679, 0.5896213005, 0.5185632158, -0.6002731771, -0.9473367789, 0.3556862869, 0.6438688601, -0.7202291823, -0.7324235032, 0.5224223111, 0.5743852038, -0.4873776954, -1.068757217, 0.3468369233, 0.5692937849, -0.739142136, -0.6854471732, 0.4324124957, 0.6244232242}}}
E.square_mask = {mask = {{4,4}, {0, -inf, -inf, -inf, 0, 0, -inf, -inf, 0, 0, 0, -inf, 0, 0, 0, 0}}}
