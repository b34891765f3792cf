-- Differential tests of nn_rnn.lua against PyTorch 1.13: forward values AND gradients (inputs,
-- initial states, weights) of the recurrent layers, attention and Transformer layers with PyTorch's
-- weights copied over (load_state_dict), nn.utils.rnn.unpad_sequence / unpack_sequence, and the
-- argument checks of scaled_dot_product_attention, MultiheadAttention and the layers' options.
--
-- Values from torch 1.13 (float64) by the script below; every parameter (state_dict order, k = 1, 2,
-- ...) and input holds s * sin(0.7 i + 1.3 k + 0.1) for its flat index i (vals() below); each output
-- y is reduced as sum(y * G) with G = vals(shape(y), 201, 202, ..., 1.0) before backward.
--[==[
# Reference values for spec/diff_rnn_spec.lua (PyTorch 1.13, float64).
import math, torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pack_sequence, unpad_sequence, unpack_sequence
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

def X(shape, k=101): return vals(shape, k, 1.0).requires_grad_(True)
def G(t, k): return vals(tuple(t.shape), k, 1.0)

out = []
def emit(name, **tensors):
    parts = []
    for key, t in tensors.items():
        t = t.detach().contiguous()
        parts.append("%s = {{%s}, {%s}}" % (key, ",".join(str(d) for d in t.shape),
            ", ".join("%.12g" % v for v in t.reshape(-1).tolist())))
    out.append("E.%s = {%s}" % (name, ",\n  ".join(parts)))

# LSTM, 2 layers, bidirectional, proj_size, over an unsorted packed batch with h0, c0
m = fill(nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2))
x, h0, c0 = X((5, 3, 3)), X((4, 3, 2), 102), X((4, 3, 4), 103)
p = pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False)
po, (h, c) = m(p, (h0, c0))
((po.data * G(po.data, 201)).sum() + (h * G(h, 202)).sum() + (c * G(c, 203)).sum()).backward()
emit("lstm_packed", out=po.data, h=h, c=c, gx=x.grad, gh0=h0.grad, gc0=c0.grad,
     gw_hr=m.weight_hr_l1_reverse.grad, gw_ih=m.weight_ih_l1.grad, gb_hh=m.bias_hh_l0_reverse.grad)
# GRU, batch_first, 2 layers, no bias, h0
m = fill(nn.GRU(3, 4, num_layers=2, batch_first=True, bias=False))
x, h0 = X((2, 5, 3)), X((2, 2, 4), 102)
o, h = m(x, h0)
((o * G(o, 201)).sum() + (h * G(h, 202)).sum()).backward()
emit("gru_bf", out=o, h=h, gx=x.grad, gh0=h0.grad, gw_hh=m.weight_hh_l1.grad, gw_ih=m.weight_ih_l0.grad)
# RNN relu, bidirectional, unbatched
m = fill(nn.RNN(3, 4, nonlinearity="relu", bidirectional=True))
x, h0 = X((5, 3)), X((2, 4), 102)
o, h = m(x, h0)
((o * G(o, 201)).sum() + (h * G(h, 202)).sum()).backward()
emit("rnn_relu_unbatched", out=o, h=h, gx=x.grad, gh0=h0.grad, gw_hh=m.weight_hh_l0_reverse.grad)
# MultiheadAttention, kdim/vdim, bias_k/v, zero attention, 3-D float attn_mask, bool key_padding_mask
m = fill(nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True))
q, k, v = X((2, 3, 4), 111), X((2, 5, 3), 112), X((2, 5, 5), 113)
am = vals((4, 3, 5), 114, 2.0)
kpm = torch.tensor([[False, True, False, False, True], [False, False, False, True, False]])
o, w = m(q, k, v, attn_mask=am, key_padding_mask=kpm, average_attn_weights=False)
((o * G(o, 201)).sum() + (w * G(w, 202)).sum()).backward()
emit("mha", out=o, w=w, gq=q.grad, gk=k.grad, gv=v.grad, gbias_k=m.bias_k.grad, gq_proj=m.q_proj_weight.grad,
     gout=m.out_proj.weight.grad)
# TransformerDecoderLayer, norm_first, gelu, causal tgt_mask, bool memory key padding mask
m = fill(nn.TransformerDecoderLayer(4, 2, dim_feedforward=6, activation="gelu", norm_first=True))
tgt, mem = X((3, 2, 4), 121), X((5, 2, 4), 122)
mkpm = torch.tensor([[False, False, False, True, True], [False, True, False, False, False]])
o = m(tgt, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(3), memory_key_padding_mask=mkpm)
(o * G(o, 201)).sum().backward()
emit("tdl", out=o, gtgt=tgt.grad, gmem=mem.grad, gin_proj=m.multihead_attn.in_proj_weight.grad,
     glin1=m.linear1.weight.grad, gnorm3=m.norm3.weight.grad)
# TransformerEncoder: torch's forward names its mask 'mask'
layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6)
m = fill(nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4), enable_nested_tensor=False))
src = X((3, 2, 4), 141)
skpm = torch.tensor([[False, False, True], [False, False, False]])
o = m(src, mask=vals((3, 3), 142, 2.0), src_key_padding_mask=skpm)
(o * G(o, 201)).sum().backward()
emit("enc_mask", out=o, gsrc=src.grad, gl2=m.layers[1].linear2.weight.grad, gin_proj=m.layers[0].self_attn.in_proj_weight.grad)
# unpad_sequence / unpack_sequence
x = X((5, 3, 2), 131)
seqs = unpad_sequence(x * 1, torch.tensor([2, 5, 0]))  # torch transposes its argument in place
sum((s * G(s, 201 + i)).sum() for i, s in enumerate(seqs)).backward()
emit("unpad", s1=seqs[0], s2=seqs[1], s3=seqs[2], gx=x.grad)
a, b, c = X((2, 3), 132), X((4, 3), 133), X((1, 3), 134)
seqs = unpack_sequence(pack_sequence([a, b, c], enforce_sorted=False))
sum((s * G(s, 201 + i)).sum() for i, s in enumerate(seqs)).backward()
emit("unpack", s1=seqs[0], s2=seqs[1], s3=seqs[2], ga=a.grad, gb=b.grad, gc=c.grad)
print("\n".join(out))
]==]
local pt = require "partrain"
local nn = pt.nn
local U = nn.utils.rnn

local E = {}

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

local function vals(shape, k, s)
  s = s or 0.5
  local t = {}
  for i = 0, numel(shape) - 1 do t[i + 1] = s * math.sin(0.7 * i + 1.3 * k + 0.1) end
  if #t == 0 then return pt.zeros(shape, {dtype = "float64"}) end
  return pt.tensor(t, {dtype = "float64"}):reshape(shape)
end
local function X(shape, k)
  local t = vals(shape, k or 101, 1.0)
  t.requires_grad = true
  return t
end
local function G(t, k) return vals(t:size(), k, 1.0) end

-- every parameter set from vals(), k in state_dict order, through load_state_dict; eval mode
local function fill(m)
  local sd, k = {}, 0
  for name, t in pairs(m:state_dict()) do
    k = k + 1
    sd[name] = vals(t:size(), k)
  end
  m:load_state_dict(sd)
  m:eval()
  return m
end

local function close(got, want, tol)
  tol = tol or 1e-9
  assert.are.same(want[1], got:size())
  local flat = got:detach():contiguous():reshape(-1):tolist()
  assert.are.equal(#want[2], #flat)
  for i, w in ipairs(want[2]) do
    if math.abs(flat[i] - w) > tol * (1 + math.abs(w)) then
      error(("element %d: got %.12g, want %.12g"):format(i, flat[i], w), 2)
    end
  end
end

local function errmsg(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  return tostring(e):gsub("^[^:]*:%d+: ", "")
end

local F64 = {dtype = "float64"}

describe("recurrent layers against torch 1.13, values and gradients", function()
  it("LSTM: 2 layers, bidirectional, proj_size, an unsorted PackedSequence with h0 and c0", function()
    local e = E.lstm_packed
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true, proj_size = 2, dtype = "float64"}))
    local x, h0, c0 = X({5, 3, 3}), X({4, 3, 2}, 102), X({4, 3, 4}, 103)
    local p = U.pack_padded_sequence(x, {2, 5, 3}, {enforce_sorted = false})
    local po, state = m(p, {h0, c0})
    local h, c = state[1], state[2]
    ;((po.data * G(po.data, 201)):sum() + (h * G(h, 202)):sum() + (c * G(c, 203)):sum()):backward()
    close(po.data, e.out); close(h, e.h); close(c, e.c)
    close(x.grad, e.gx); close(h0.grad, e.gh0); close(c0.grad, e.gc0)
    close(m.weight_hr_l1_reverse.grad, e.gw_hr); close(m.weight_ih_l1.grad, e.gw_ih)
    close(m.bias_hh_l0_reverse.grad, e.gb_hh)
  end)

  it("GRU: batch_first, 2 layers, bias=false, h0", function()
    local e = E.gru_bf
    local m = fill(nn.GRU(3, 4, {num_layers = 2, batch_first = true, bias = false, dtype = "float64"}))
    local x, h0 = X({2, 5, 3}), X({2, 2, 4}, 102)
    local o, h = m(x, h0)
    ;((o * G(o, 201)):sum() + (h * G(h, 202)):sum()):backward()
    close(o, e.out); close(h, e.h); close(x.grad, e.gx); close(h0.grad, e.gh0)
    close(m.weight_hh_l1.grad, e.gw_hh); close(m.weight_ih_l0.grad, e.gw_ih)
  end)

  it("RNN: relu, bidirectional, unbatched input and h0", function()
    local e = E.rnn_relu_unbatched
    local m = fill(nn.RNN(3, 4, {nonlinearity = "relu", bidirectional = true, dtype = "float64"}))
    local x, h0 = X({5, 3}), X({2, 4}, 102)
    local o, h = m(x, h0)
    ;((o * G(o, 201)):sum() + (h * G(h, 202)):sum()):backward()
    close(o, e.out); close(h, e.h); close(x.grad, e.gx); close(h0.grad, e.gh0)
    close(m.weight_hh_l0_reverse.grad, e.gw_hh)
  end)
end)

describe("attention against torch 1.13, values and gradients", function()
  it("MultiheadAttention: kdim/vdim, add_bias_kv, add_zero_attn, 3-D float attn_mask, bool key_padding_mask", function()
    local e = E.mha
    local m = fill(nn.MultiheadAttention(4, 2, {kdim = 3, vdim = 5, add_bias_kv = true, add_zero_attn = true,
      batch_first = true, dtype = "float64"}))
    local q, k, v = X({2, 3, 4}, 111), X({2, 5, 3}, 112), X({2, 5, 5}, 113)
    local kpm = pt.tensor({{false, true, false, false, true}, {false, false, false, true, false}})
    local o, w = m(q, k, v, {attn_mask = vals({4, 3, 5}, 114, 2.0), key_padding_mask = kpm, average_attn_weights = false})
    ;((o * G(o, 201)):sum() + (w * G(w, 202)):sum()):backward()
    close(o, e.out); close(w, e.w); close(q.grad, e.gq); close(k.grad, e.gk); close(v.grad, e.gv)
    close(m.bias_k.grad, e.gbias_k); close(m.q_proj_weight.grad, e.gq_proj); close(m.out_proj.weight.grad, e.gout)
  end)

  it("TransformerDecoderLayer: norm_first, gelu, causal tgt_mask, bool memory_key_padding_mask", function()
    local e = E.tdl
    local m = fill(nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 6, activation = "gelu", norm_first = true,
      dtype = "float64"}))
    local tgt, mem = X({3, 2, 4}, 121), X({5, 2, 4}, 122)
    local mkpm = pt.tensor({{false, false, false, true, true}, {false, true, false, false, false}})
    local o = m(tgt, mem, {tgt_mask = nn.Transformer.generate_square_subsequent_mask(3, F64),
      memory_key_padding_mask = mkpm})
    ;(o * G(o, 201)):sum():backward()
    close(o, e.out); close(tgt.grad, e.gtgt); close(mem.grad, e.gmem)
    close(m.multihead_attn.in_proj_weight.grad, e.gin_proj); close(m.linear1.weight.grad, e.glin1)
    close(m.norm3.weight.grad, e.gnorm3)
  end)
end)

describe("TransformerEncoder takes torch's name for its mask", function()
  it("enc(src, {mask = m}) as torch's enc(src, mask=m), values and gradients; mask and src_mask together are an error", function()
    local e = E.enc_mask
    local layer = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 6, dtype = "float64"})
    local m = fill(nn.TransformerEncoder(layer, 2, {norm = nn.LayerNorm(4, F64)}))
    local src = X({3, 2, 4}, 141)
    local skpm = pt.tensor({{false, false, true}, {false, false, false}})
    local o = m(src, {mask = vals({3, 3}, 142, 2.0), src_key_padding_mask = skpm})
    ;(o * G(o, 201)):sum():backward()
    close(o, e.out); close(src.grad, e.gsrc)
    -- layers are 1-based here: torch's layers[1] is layers[2]
    close(m.layers[2].linear2.weight.grad, e.gl2); close(m.layers[1].self_attn.in_proj_weight.grad, e.gin_proj)
    close(m(src, {src_mask = vals({3, 3}, 142, 2.0), src_key_padding_mask = skpm}), e.out)
    assert.are.equal("TransformerEncoder:forward: give mask or src_mask (the same option), not both",
      errmsg(m, src, {mask = pt.zeros(3, 3, F64), src_mask = pt.zeros(3, 3, F64)}))
  end)
end)

describe("nn.utils.rnn.unpad_sequence and unpack_sequence (torch 1.13's)", function()
  it("unpad_sequence gives each sequence's first lengths[i] steps, a zero length included", function()
    local e = E.unpad
    local x = X({5, 3, 2}, 131)
    local seqs = U.unpad_sequence(x, {2, 5, 0})
    assert.are.equal(3, #seqs)
    local loss = (seqs[1] * G(seqs[1], 201)):sum() + (seqs[2] * G(seqs[2], 202)):sum()
      + (seqs[3] * G(seqs[3], 203)):sum()
    loss:backward()
    close(seqs[1], e.s1); close(seqs[2], e.s2); close(seqs[3], e.s3); close(x.grad, e.gx)
    -- batch_first and lengths as an int64 tensor: the same sequences
    local bf = U.unpad_sequence(x:detach():transpose(1, 2), pt.tensor({2, 5, 0}, {dtype = "int64"}), {batch_first = true})
    close(bf[1], e.s1); close(bf[2], e.s2); close(bf[3], e.s3)
  end)

  it("unpack_sequence gives back pack_sequence's list in its original order", function()
    local e = E.unpack
    local a, b, c = X({2, 3}, 132), X({4, 3}, 133), X({1, 3}, 134)
    local seqs = U.unpack_sequence(U.pack_sequence({a, b, c}, {enforce_sorted = false}))
    local loss = (seqs[1] * G(seqs[1], 201)):sum() + (seqs[2] * G(seqs[2], 202)):sum()
      + (seqs[3] * G(seqs[3], 203)):sum()
    loss:backward()
    close(seqs[1], e.s1); close(seqs[2], e.s2); close(seqs[3], e.s3)
    close(a.grad, e.ga); close(b.grad, e.gb); close(c.grad, e.gc)
  end)

  it("errors name the function and the problem", function()
    assert.are.equal("unpad_sequence: length 4 of sequence 2 is not in 0..3 (the padded length; padded_sequences shape {3,2}, batch_first=false)",
      errmsg(U.unpad_sequence, pt.randn(3, 2), {1, 4}))
    assert.are.equal("unpad_sequence: got 1 lengths for a batch of 2 sequences (padded_sequences shape {3,2}, batch_first=false)",
      errmsg(U.unpad_sequence, pt.randn(3, 2), {1}))
    assert.are.equal("unpad_sequence: padded_sequences must have at least 2 dimensions ({T,N,*}), got shape {3}",
      errmsg(U.unpad_sequence, pt.randn(3), {1}))
    assert.are.equal("unpad_sequence: lengths[1] must be an integer, got 1.5", errmsg(U.unpad_sequence, pt.randn(3, 2), {1.5, 2}))
    assert.are.equal("unpack_sequence: sequence must be a PackedSequence (from nn.utils.rnn.pack_padded_sequence or pack_sequence), got a tensor",
      errmsg(U.unpack_sequence, pt.randn(3)))
  end)
end)

describe("argument checks", function()
  local q = pt.randn(2, 3, 4)
  local sdpa = nn.scaled_dot_product_attention

  it("scaled_dot_product_attention: scale, is_causal, dtypes, batch dims and the mask's shape", function()
    assert.are.equal("scaled_dot_product_attention: scale must be a number, got string", errmsg(sdpa, q, q, q, {scale = "a"}))
    assert.are.equal("scaled_dot_product_attention: is_causal must be a boolean, got 1", errmsg(sdpa, q, q, q, {is_causal = 1}))
    assert.are.equal("scaled_dot_product_attention: query, key and value must be floating tensors of one dtype, got float32, float64 and float32",
      errmsg(sdpa, q, q:double(), q))
    assert.are.equal("scaled_dot_product_attention: query, key and value must be floating tensors of one dtype, got int64, int64 and int64",
      errmsg(sdpa, pt.ones(2, 3, 4, {dtype = "int64"}), pt.ones(2, 3, 4, {dtype = "int64"}), pt.ones(2, 3, 4, {dtype = "int64"})))
    assert.are.equal("scaled_dot_product_attention: the batch dimensions of query, key and value do not broadcast, got shapes {2,3,4}, {3,3,4}, {3,3,4}",
      errmsg(sdpa, q, pt.randn(3, 3, 4), pt.randn(3, 3, 4)))
    assert.are.equal("scaled_dot_product_attention: attn_mask of shape {4,4} does not broadcast to the attention scores' shape {2,3,3}",
      errmsg(sdpa, q, q, q, {attn_mask = pt.zeros(4, 4)}))
    -- a mask with more batch dims than the scores would widen the result (torch adds it in place)
    assert.are.equal("scaled_dot_product_attention: attn_mask of shape {2,3,3} does not broadcast to the attention scores' shape {3,3}",
      errmsg(sdpa, pt.randn(3, 4), pt.randn(3, 4), pt.randn(3, 4), {attn_mask = pt.zeros(2, 3, 3)}))
    -- broadcasting masks and batch dims still work: a key-padding style {2,1,1,S} mask over {2,2,L,S}
    local q4 = pt.randn(2, 2, 3, 4)
    local allowed = pt.tensor({true, true, false}):reshape(1, 1, 1, 3):expand(2, 1, 1, 3)
    local o = sdpa(q4, q4, pt.randn(1, 2, 3, 5), {attn_mask = allowed})
    assert.are.same({2, 2, 3, 5}, o:size())
  end)

  it("MultiheadAttention and TransformerEncoderLayer: need_weights, average_attn_weights, is_causal are booleans", function()
    local m = nn.MultiheadAttention(4, 2)
    local x = pt.randn(3, 2, 4)
    -- 0 is true in Lua but false in Python: taking it silently would average when torch would not
    assert.are.equal("MultiheadAttention:forward: average_attn_weights must be a boolean, got 0",
      errmsg(m, x, x, x, {average_attn_weights = 0}))
    assert.are.equal("MultiheadAttention:forward: need_weights must be a boolean, got 0", errmsg(m, x, x, x, {need_weights = 0}))
    assert.are.equal("MultiheadAttention:forward: is_causal must be a boolean, got yes", errmsg(m, x, x, x, {is_causal = "yes"}))
    assert.are.equal("TransformerEncoderLayer:forward: is_causal must be a boolean, got 1",
      errmsg(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}), x, {is_causal = 1}))
    local _, w = m(x, x, x, {average_attn_weights = false})
    assert.are.same({2, 2, 3, 3}, w:size())
  end)

  it("a tensor where the options go (PyTorch's positional masks) is named, with the options' names", function()
    local x = pt.randn(3, 2, 4)
    assert.are.equal("TransformerEncoderLayer:forward: options must be a table {is_causal=, src_key_padding_mask=, src_mask=}, got a tensor (masks are passed by name in the options table)",
      errmsg(nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8}), x, pt.zeros(3, 3)))
    assert.are.equal("MultiheadAttention:forward: options must be a table {attn_mask=, average_attn_weights=, is_causal=, key_padding_mask=, need_weights=}, got a tensor (masks are passed by name in the options table)",
      errmsg(nn.MultiheadAttention(4, 2), x, x, x, pt.zeros(2, 3, {dtype = "bool"})))
    assert.are.equal("RNN: options must be a table {batch_first=, bias=, bidirectional=, dropout=, dtype=, nonlinearity=, num_layers=}, got number",
      errmsg(nn.RNN, 3, 4, 2))
  end)
end)

E.lstm_packed = {out = {{10,4}, {-0.306331018291, 0.323028083093, -0.361981854322, 0.288673309054, -0.0765656340579, -0.0372864639718, -0.148542183906, 0.119789898876, 0.144091632055, -0.194709654124, -0.137247405112, 0.158859675441, -0.323775716308, 0.293446701956, -0.369019983337, 0.294255560453, -0.235248862229, 0.147434513785, 0.0324806587083, -0.0379439875257, -0.0930575695923, 0.0463785939354, 0.0533354986399, 0.0227426945967, -0.342799187823, 0.293796309425, -0.378564373252, 0.302193608988, -0.302303269416, 0.224697126967, 0.299879987816, -0.291264490603, -0.358812076839, 0.298206777626, -0.388588493923, 0.309705551034, -0.374789528348, 0.305195851389, -0.428517470049, 0.342225613365}},
  h = {{4,3,2}, {-0.224324846069, 0.257674586591, -0.421896638869, 0.362052745849, -0.20162764676, 0.167909639921, -0.446484605217, 0.352780560564, -0.320404482158, 0.269301924173, -0.381618970028, 0.318343071697, -0.0930575695923, 0.0463785939354, -0.374789528348, 0.305195851389, -0.302303269416, 0.224697126967, -0.137247405112, 0.158859675441, -0.361981854322, 0.288673309054, -0.148542183906, 0.119789898876}},
  c = {{4,3,4}, {0.434945915198, -0.0760735528952, -0.781748879408, 0.00166045415544, -0.691959590133, -0.0958156193837, -1.16072409215, -0.317195909111, 0.248667674903, -0.872928823234, 0.28338917151, -0.375301729893, -0.469435954066, -1.12328866733, -0.663690206321, 0.394551579147, -0.567188114093, 0.0626807728312, -1.08959612452, 0.066149880704, -0.511602421762, -1.1149922589, 0.234304905678, -0.637719977629, -0.305950644904, -0.181732402035, 0.10334551533, 0.100493462177, -0.445322667121, -0.779969419701, -0.34554968526, 0.272594721609, -0.558539088137, -0.675818909445, -0.0181997359134, 0.13186399644, 0.176325914779, -0.371419668167, -0.345578969433, 0.130590662047, -0.570719061225, -0.872647414336, 0.010025913579, 0.296970200445, -0.19551619253, -0.277627620766, -0.0317690217381, 0.168133553602}},
  gx = {{5,3,3}, {0.0922741088999, 0.168067367128, 0.16481591647, -0.113079810487, -0.0124318884599, 0.0940629449634, 0.104058861364, 0.0593164197483, -0.0133234609191, -0.05991252153, 0.0589292705853, 0.150055705949, -0.0321337328861, -0.0135320465364, 0.0114339727434, -0.0247572938395, -0.00971475144886, 0.00989679034535, 0, 0, 0, 0.00913929864229, 0.00812412898659, 0.00328805452548, -0.0795920948437, -0.0160662794387, 0.0550157582289, 0, 0, 0, 0.067328479032, 0.0282049525458, -0.0241838038372, 0, 0, 0, 0, 0, 0, 0.202162035826, 0.0218677781305, -0.168711237314, 0, 0, 0}},
  gh0 = {{4,3,2}, {0.00837200289432, -0.0127265008749, -0.0226798653074, 0.00111978464594, -0.0928477223293, -0.0664540698426, 0.0352243840039, 0.0519610252791, -0.00801622895932, 0.00716773864826, 0.12692097071, 0.106393132384, -0.0214487199606, 0.0508279460138, -0.00445822204835, -0.007252458166, 0.0978890336972, 0.0570372070254, -0.102028779022, -0.0634423438528, 0.0106923301025, 0.00713939500328, -0.0544057283472, 0.00298317248686}},
  gc0 = {{4,3,4}, {0.0263877323841, 0.3164549629, 0.231528303999, 0.142673425072, 0.00230101745418, -0.0556989439147, -0.280740408983, -0.00772492618465, -0.282829717085, 0.0459659308239, 0.0685000180388, 0.325407910989, 0.260690196982, 0.186419896386, -0.068849506072, -0.0854290719719, -0.0488041982672, -0.0912625135075, -0.0276852347331, -0.0112682279931, 0.62500285277, 0.0964490344973, 0.00392389517767, -0.199144151547, -0.439584961087, -0.392884375008, -0.123274239694, 0.0333600206108, 0.106535035776, 0.143025876818, 0.128837474302, 0.022752535359, -0.125213168369, -0.279438590144, -0.173892788076, -0.046356381434, -0.120958202592, 0.0626650787446, 0.149186454365, 0.12592678381, 0.0169375275455, -0.0514133187855, -0.0183268836868, 0.00167427102411, -0.182631381726, -0.0330209926539, 0.00725609484836, 0.0246048366723}},
  gw_hr = {{2,4}, {-0.61861215715, -0.218697078372, 0.144158929076, 0.1089942227, -0.0912963532294, -0.144554715205, 0.146683992648, -0.00647072354468}},
  gw_ih = {{16,4}, {0.0790755765277, -0.0461479466738, -0.130481666156, 0.1068869709, 0.110852430972, -0.0680883549001, -0.245575026157, 0.204388937233, 0.0257721950598, -0.0188746466992, -0.0603718032645, 0.0504333839771, -0.00865458501441, 0.00732512570946, 0.0113279922275, -0.00972638859368, 0.031639682409, -0.0241334188968, -0.0866010960863, 0.0737138823555, 0.188968948213, -0.173398702782, -0.0178651311588, 0.0198085549281, 0.0875567586707, -0.0859966559165, 0.0954980027942, -0.0780811227979, -0.00594791959636, 0.00776349487355, 0.0190546143762, -0.0168933291461, -0.0880905321855, 0.0416721127732, 0.211335218873, -0.172490624558, -0.124481229982, 0.0598480554181, 0.342880904458, -0.28358027405, -0.283265698946, 0.198477495837, 0.515640761252, -0.432648249227, -0.0479352974026, 0.048961794969, 0.14916027224, -0.132577506586, 0.0119700639848, -0.0104389228219, -0.0043203088616, 0.00337960189521, 0.0282760371435, -0.0217825749726, -0.0100490886862, 0.00757109425039, 0.00608751624952, -0.00303063317753, -0.0106927753332, 0.00901442234356, -0.0054180112276, 0.00576153830769, 0.00751650358376, -0.00632883122048}},
  gb_hh = {{16}, {-0.0250936598285, -0.356170877715, 0.0146172496452, -0.0319617214792, -0.16064552624, -0.51630245766, 0.00275699057917, 0.130803336265, -0.153586197937, -0.15403506651, -0.107668031983, -0.173371738157, 0.018318934131, -0.0679109697006, -0.0352888861958, 0.0530684812216}}}
E.gru_bf = {out = {{2,5,4}, {0.0800195225915, 0.468112019693, 0.635491810642, 0.346194156319, 0.213588472183, 0.169341662588, 0.517854593121, -0.0326611367657, 0.123069526105, 0.0400347941204, 0.343984851014, -0.154417313378, 0.0962456648553, -0.0366856318975, 0.245690321685, -0.17341115071, 0.132326000475, -0.107661850129, 0.204518762543, -0.153646501585, 0.178270914099, -0.0953970741976, -0.659882769016, -0.146593608401, 0.0994305432329, 0.0303548317743, -0.459354576333, 0.0713553092808, 0.0488351778363, 0.0567850361198, -0.306539117179, 0.117988835431, -0.01319158788, 0.0489401813659, -0.150749536912, 0.0452986729704, -0.000908310284867, 0.015803493447, -0.0659820301809, 0.011613515133}},
  h = {{2,2,4}, {0.0383706022111, 0.299242191817, -0.033092401899, -0.0696200210428, 0.173572863548, -0.191305026172, 0.0788828642518, 0.126026987961, 0.132326000475, -0.107661850129, 0.204518762543, -0.153646501585, -0.000908310284867, 0.015803493447, -0.0659820301809, 0.011613515133}},
  gx = {{2,5,3}, {-0.0469128456418, -0.0862102373398, -0.0849616073447, 0.0115906881386, 0.00451384720776, -0.0046859265957, 0.00391063452628, -0.0211473534136, -0.0362594106066, -0.056428134936, -0.082380324568, -0.0695877603275, -0.0778076554513, -0.0490362555165, 0.00279766160027, 0.0173341560108, 0.0196034433655, 0.0126529249932, 0.0113923985207, 0.017759773055, 0.0157744488175, 0.0102397465837, 0.0099973918272, 0.0050531074808, -0.00564806203014, 0.0254497130699, 0.0445780904505, 0.108793967248, 0.159727237229, 0.135538291734}},
  gh0 = {{2,2,4}, {-0.161499338748, -0.0746545118539, -0.107796735348, 0.0142912182744, 0.0423577604065, 0.0622694246508, -0.00379303714111, -0.0695548277544, -0.229468863611, -0.551698808783, -0.13972327529, -0.0109446022007, -0.296437548451, -0.0856581495381, 0.151811566047, 0.163415125559}},
  gw_hh = {{12,4}, {-9.54950681419e-05, 0.059667274203, 0.0853597235168, 0.0887450390578, 0.00197153160841, -0.0156272533723, -0.0169638850708, -0.0298378229876, -1.77897053075e-05, 0.00120664264965, -0.00698521030605, 0.000440053126554, -0.000692025582798, 0.00357477864824, 0.0113376948445, 0.00840258082853, -0.00399472571927, 0.00305716665863, -0.0105728407031, 0.0210298714579, -0.0154762101246, -0.0508568828494, -0.0969735379453, -0.0674768266191, -0.0293604966132, -0.0159775444243, -0.0193846771706, 0.0111069267748, -0.0425935990882, 0.0650362345695, 0.119210714037, 0.148712853182, -0.0335594809882, -0.0812129202166, -0.290226920078, -0.0273595862453, -0.0468069625489, -0.0207445179993, -0.257573614772, 0.0595938719254, -0.0329678073728, -0.0511487378895, -0.226165757452, -0.0427552332846, -0.000449985511734, -0.0382113226406, -0.100452919199, -0.102886292616}},
  gw_ih = {{12,3}, {-0.0138635581128, -0.0107523717683, -0.00258417697073, -0.0140745959961, -0.00624965022519, 0.00451460370007, 0.000445072338958, -0.00061268918155, -0.00138229340644, -0.00268886913524, 0.00268390040031, 0.00679438964049, -0.0307845528934, -0.106941115881, -0.132801601069, 0.0990301614996, 0.0101775161653, -0.0834617740496, 0.0788095903264, 0.0506561825933, -0.00132161933808, 0.0515333516927, 0.0768262954751, 0.0659866320516, -0.73716631347, -0.400764472295, 0.124123162319, -0.117951447874, -0.148157146441, -0.108682224018, 0.0607388201007, 0.0346489620416, -0.00773684427075, 0.740301599855, 0.38896516301, -0.145307667747}}}
E.rnn_relu_unbatched = {out = {{5,8}, {0, 0, 0.510820120634, 0, 0.125285775132, 0, 0, 0, 0, 0, 0, 1.19686934194, 0.253051288996, 0, 0, 0.107360393248, 0, 0.896372203559, 0, 0, 0, 0, 0.0482231602544, 0, 0, 0, 0.412814909499, 0, 0, 0, 0, 0, 0, 0, 0, 1.19297963347, 0, 0.322714040611, 0, 1.23028033625}},
  h = {{2,4}, {0, 0, 0, 1.19297963347, 0.125285775132, 0, 0, 0}},
  gx = {{5,3}, {0.473882777375, 0.54591045166, 0.361187910444, -0.284015520089, 0.0189346291641, 0.31297952646, -0.0324617802892, -0.0327811302755, -0.0176830024739, 0.0075302782571, -0.000200570316311, -0.00783708753597, 0.00149404383757, 0.179894430653, 0.273687655804}},
  gh0 = {{2,4}, {-0.387658738525, -0.177085258189, 0.116774186107, 0.35571290603, 0.562027747717, 0.60828727288, 0.368459788857, -0.0446600912084}},
  gw_hh = {{4,4}, {0.329175855029, 0, 0.013580678584, 0.139657258352, 0.395158703754, 0.88552464259, 0.959414505311, 0.58207673492, 0, 0, 0, 0, 0.128300823628, 0.287513699957, 0.342106613845, 0.188989699063}}}
E.mha = {out = {{2,3,4}, {-0.649283169385, -0.170372569092, -0.70117871694, 0.436505135185, -0.387743077223, -0.441952833362, -0.450940824543, 0.236525934058, -0.627317978854, -0.178183398325, -0.708424831866, 0.457970867151, -0.551137709115, -0.239809231427, -0.668474628183, 0.444312751404, -0.589213525017, -0.266799302937, -0.579537515576, 0.303705754088, -0.478838309733, -0.23561322443, -0.748681170633, 0.591261536736}},
  w = {{2,2,3,7}, {0.127804063774, 0, 0.0413628523065, 0.196333854898, 0, 0.281964221785, 0.352535007236, 0.424084851679, 0, 0.323120352857, 0.0845828918772, 0, 0.0833263405205, 0.0848855630667, 0.0282662986707, 0, 0.112748322051, 0.373568064167, 0, 0.232652643066, 0.252764672045, 0.802427034007, 0, 0.0583753879429, 0.0313811271342, 0, 0.0599396144975, 0.0478768364184, 0.0146393936234, 0, 0.173253440269, 0.473993483054, 0, 0.18417037275, 0.153943310303, 0.633145208832, 0, 0.0376713718765, 0.0241619889078, 0, 0.161774607833, 0.143246822551, 0.024797900167, 0.185139059206, 0.337215815942, 0, 0.329968844059, 0.0563381338486, 0.0665402467768, 0.318409171686, 0.0397493343471, 0.0208628006002, 0, 0.076389189015, 0.279826154919, 0.264763349433, 0.0588569913683, 0.490409665801, 0.286167543461, 0, 0.0802315476866, 0.0363215694269, 0.0480126822562, 0.0381431343034, 0.0301052122011, 0.0269254124261, 0, 0.464416805632, 0.250367702806, 0.190041732631, 0.271936846443, 0.269924787373, 0.313367100004, 0, 0.00991791859454, 0.0688770106117, 0.0659763369736, 0.00863111994983, 0.0253061622981, 0.0165352855683, 0, 0.802852528468, 0.0852370609774, 0.0614378427388}},
  gq = {{2,3,4}, {0.0100524803588, 0.0392581763525, 0.0500001385818, 0.0372262543623, 0.0661784261089, 0.117396427931, 0.113401055327, 0.0560713944623, -0.168657765405, -0.254461398951, -0.220587860501, -0.0829684044768, 0.0298984567132, 0.0719631063714, 0.0801823826486, 0.0506906314819, -0.00937201136974, -0.00613752797111, -1.64692661378e-05, 0.00611233519203, -0.00660387682907, -0.029952843396, -0.0392145196876, -0.0300329946265}},
  gk = {{2,5,3}, {-0.0442265904508, -0.00257327082076, 0.0402902982848, 0, 0, 0, 0.0152653843022, -0.0115758977677, -0.0329728542391, 0.0831751583662, -0.0523056594686, -0.163186308357, 0, 0, 0, -0.102563834757, -0.00254500760316, 0.0986707763928, -0.0369971236254, 0.0012186090486, 0.0388612108458, 0.0515028859769, 0.0592571832552, 0.0391419013295, 0, 0, 0, 0.0442060631929, -0.00643443243368, -0.0540487139459}},
  gv = {{2,5,5}, {-0.0425736075524, -0.018168149544, 0.0147820730801, 0.0407800557584, 0.0475985410075, 0, 0, 0, 0, 0, 0.00211383661974, 0.00213703891975, 0.00115515842364, -0.000370011128953, -0.00172115866602, 0.00762041039255, -0.00813664240034, -0.0200669051338, -0.0225593888288, -0.0144418394574, 0, 0, 0, 0, 0, -0.0359783090687, -0.0306238362972, -0.0108664948044, 0.0140015289885, 0.0322844149182, 0.0429914962689, 0.0770157471612, 0.0748182887594, 0.0374326200861, -0.0175581947146, 0.0309941443682, 0.0667476836269, 0.0711087443145, 0.0420262514463, -0.00682184415544, 0, 0, 0, 0, 0, 0.102861601004, 0.0414816021522, -0.0394078423596, -0.101763162845, -0.116257677751}},
  gbias_k = {{1,1,4}, {0.0565544006765, -0.0998397815391, -0.0320911478274, 0.0209635557757}},
  gq_proj = {{4,4}, {0.0675597301205, 0.071940467301, 0.0424864786091, -0.00694956484221, -0.119067174658, 0.0453707251407, 0.188470063969, 0.242928986786, 0.13720008599, -0.0295530436673, -0.182406915109, -0.249471964188, -0.263804106871, -0.0715000703622, 0.154431566457, 0.307731624512}},
  gout = {{4,4}, {0.115203614542, 0.585263932855, 0.866106886374, -1.32654629417, 0.19954361171, -0.1982739271, 1.03995940177, -1.57598859093, 0.190035130335, -0.888560461024, 0.724702760693, -1.08421882788, 0.0911501577827, -1.16094312599, 0.0686070874736, -0.0825240086904}}}
E.tdl = {out = {{3,2,4}, {-1.12739944754, 0.670386666743, -0.137116163597, 0.561447544491, -1.14964016764, -1.24579475213, -1.55195340328, -1.59756849248, -1.7678938125, 0.132857959324, -0.284485292845, 0.939797083282, -0.474680776729, -0.542952131097, -1.32700115964, -1.66421014301, -2.26109603761, -0.545993817124, -0.81040898787, 0.850878462621, -0.170886766827, 0.098064087287, -0.669183802284, -1.38550590136}},
  gtgt = {{3,2,4}, {-0.584531701011, -0.920109509505, -0.899085488903, -0.447010603406, 0.474821051377, 0.731043621385, 0.906059290208, 0.69605404703, 0.0247560404816, -0.595281518651, -0.97421904923, -0.895997396031, -0.345477953635, 0.231099011099, 0.880831318948, 1.02501274971, 0.65221511869, 0.0280625452972, -0.628717704639, -0.986734964647, -0.879425851293, -0.413295296378, 0.376439671674, 0.887101914726}},
  gmem = {{5,2,4}, {-0.0183325300427, -0.066402075715, -0.0832416876175, -0.0609314331463, 0.0390904265715, 0.0715344887393, 0.0703347630958, 0.0360554993574, -0.0183560908119, -0.0660897463495, -0.0827403614982, -0.0604768917804, 0, 0, 0, 0, -0.0161809043139, -0.063789621155, -0.0813970824266, -0.0607222239685, 0.0132110137843, 0.0522291237024, 0.0666830606407, 0.0497749122081, 0, 0, 0, 0, 0.00323836707152, 0.0552185621019, 0.0812286045619, 0.0690355650645, 0, 0, 0, 0, 0.00497896571087, 0.0713592882467, 0.104178222501, 0.0880005108827}},
  gin_proj = {{12,4}, {-0.0598525142383, -0.0600759534158, 0.00264655417936, 0.0654424748324, 0.0794680834532, 0.0807939056656, -0.00377712019829, -0.0863603441407, 0.0243447998139, 0.0248216246353, -0.00460739643205, -0.020559080928, -0.0166399177335, -0.0192014375074, 0.00199322184404, 0.018193312428, 0.0929629654762, 0.0820564143733, 0.0325574494238, -0.0322537927139, 0.072109987075, 0.0626937668861, 0.0237916885137, -0.0262999927222, 0.0139087531024, 0.00627078825878, -0.00431642628667, -0.0128735581035, -0.0196185769949, -0.00510793866206, 0.0118050430373, 0.0231659285373, 0.228680181173, 0.554629556975, 0.619727985805, 0.393358659395, 0.105238576464, 0.210478275668, 0.216726753012, 0.121045251965, 0.00417934512939, -0.173952263869, -0.27027140509, -0.239477681391, -0.0698678353246, -0.449343308533, -0.617485602556, -0.495214769218}},
  glin1 = {{6,4}, {0.0518799489886, 0.0565812306473, 0.0764849820905, -0.118813016896, 0.0233936073889, 0.00925986023642, 0.078793824664, -0.225462073075, 0.209186654011, 0.17118456624, 0.36169007091, -0.621816163772, -0.00845816070763, -0.0205324241602, 0.013098598647, -0.0807438864527, 0.0134431525738, -0.00240657064586, 0.0314623586861, -0.0549774427469, 0.00962730512325, 0.00951375061215, 0.0146634421786, -0.0209439737481}},
  gnorm3 = {{4}, {0.129676012449, 0.0284151086577, 0.00260773843898, 0.291604065484}}}
E.enc_mask = {out = {{3,2,4}, {-0.460450703136, 0.0169662378916, -0.155191805885, -0.558557265616, -0.406793947816, -0.106879249144, -0.176730064911, -0.574596787257, -0.438865264705, -0.0350249262208, -0.172920025751, -0.567766189854, -0.361987552635, -0.196131891067, -0.171090334323, -0.579535559811, -0.427410606036, -0.0615587356057, -0.175612117515, -0.570693007062, -0.378386359907, -0.173516685936, -0.159742701817, -0.575628656897}},
  gsrc = {{3,2,4}, {0.153583379573, 0.0696675679, -0.133467701702, -0.0688719094347, -0.0417672764657, 0.0657483669109, -0.0140278900283, 0.0127782494613, 0.0179370559422, -0.0605724756468, 0.00484259608441, 0.0525644041321, -0.0742927814375, 0.000692766488522, -0.00188655593948, 0.0812998411909, 0.00690243450523, -0.0163017502922, 0.00185142180868, 0.00733478177263, -0.0412161347444, 0.028701442863, 0.0277425755831, -0.00880190381765}},
  gl2 = {{4,6}, {0, 0, 0, 0.0946209807633, -0.0541878831577, 0.171074257893, 0, 0, 0, -0.0170304324862, 0.0653728721206, -0.00941414313459, 0, 0, 0, -0.0471776190412, -0.0669147346154, -0.120235976828, 0, 0, 0, -0.0304129292359, 0.0557297456525, -0.0414241379306}},
  gin_proj = {{12,4}, {-0.00050481826441, -0.000845974036232, -0.000789255000106, -0.00036133700498, -0.000119298267127, -0.000812107283961, -0.00112296955562, -0.000905681698391, -0.00153185108495, -0.00340266622159, -0.00367315426609, -0.00221610046463, 0.00198595021647, 0.00461947860229, 0.0050803940201, 0.00315192074692, -0.00176430460043, -0.00171663323318, -0.000861602433234, 0.000398653453974, 0.00420394863268, 0.00344779012312, 0.00107008204546, -0.00181090233868, 0.0104612264739, 0.00712750258051, 0.000441602853205, -0.0064519895962, -0.00356376639293, -0.00254641429667, -0.000331443767865, 0.00203940994392, -0.0473616935456, -0.0995611458639, -0.104935435597, -0.0609569503068, -0.0442770417912, -0.125240540997, -0.147301456835, -0.100084195874, -0.00428377284496, -0.0816682750002, -0.120642911321, -0.10287730135, 0.0219161797052, -0.00974656359182, -0.0368253457374, -0.0465845923708}}}
E.unpad = {s1 = {{2,2}, {0.684557653515, 0.993186675296, -0.970954559031, -0.588488931388}},
  s2 = {{5,2}, {0.834704484715, 0.283647732355, 0.0707522360803, 0.696717521386, -0.904078583459, -0.966794340909, 0.815716381686, 0.251245253897, 0.104251016926, 0.720442931842}},
  s3 = {{0,2}, {}},
  gx = {{5,3,2}, {-0.603441334625, -0.9752413389, -0.929768273968, -0.473960291137, 0, 0, -0.888370102924, -0.383684526377, 0.20475862245, 0.787176356457, 0, 0, 0, 0, 0.999372750052, 0.741548523668, 0, 0, 0, 0, 0.134962439588, -0.535098588677, 0, 0, 0, 0, -0.953494389541, -0.923446880243, 0, 0}}}
E.unpack = {s1 = {{2,3}, {0.885512514275, 0.377963788628, -0.307347212658, -0.848108017398, -0.989990369502, -0.666264781803}},
  s2 = {{4,3}, {-0.210810532913, -0.790976933855, -0.999134523449, -0.737383534757, -0.128829547734, 0.540314988606, 0.95534094315, 0.921055124516, 0.453582688939, -0.227216772671, -0.801152635734, -0.998293895856}},
  s3 = {{1,3}, {-0.998295655507, -0.801134595178, -0.227187416664}},
  ga = {{2,3}, {-0.603441334625, -0.9752413389, -0.888370102924, -0.383684526377, 0.301453878161, 0.844813813453}},
  gb = {{4,3}, {-0.929768273968, -0.473960291137, 0.20475862245, 0.787176356457, 0.999372750052, 0.741548523668, 0.134962439588, -0.535098588677, -0.953494389541, -0.923446880243, -0.459087873911, 0.221187332967}},
  gc = {{1,3}, {0.106017486267, 0.721673693512, 0.997915486236}}}
