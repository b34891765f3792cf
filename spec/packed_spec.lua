-- nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
-- PackedSequence) and nn.RNN / nn.LSTM / nn.GRU over packed input, against PyTorch.
--
-- The expected numbers (E.*) at the end of this file were computed once with PyTorch 1.13 in
-- float64 by the script below; every parameter (in state_dict order, k = 1, 2, ...) and input
-- holds s * sin(0.7 i + 1.3 k + 0.1) for its flat index i = 0, 1, ... (vals() below), as in
-- nn_rnn_spec.lua. The layers here run in float32 and are compared with a tolerance; the
-- indices are shown 1-based (PyTorch's + 1).
--[==[
# Reference values for spec/packed_spec.lua (PyTorch 1.13, float64).
import math, torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence
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
        fmt = "%d" if t.dtype == torch.int64 else "%.10g"
        parts.append("%s = {{%s}, {%s}}" % (key, ",".join(str(d) for d in t.shape),
            ", ".join(fmt % v for v in t.reshape(-1).tolist())))
    out.append("E.%s = {%s}" % (name, ",\n  ".join(parts)))

def run(m, p, hx=None):
    o, h = m(p, hx)
    po, lens = pad_packed_sequence(o, batch_first=True)
    if isinstance(h, tuple):
        return dict(out=po, data=o.data, h=h[0], c=h[1])
    return dict(out=po, data=o.data, h=h)

# recurrent layers over packed input ({T=5, N=4, 3} time-major unless said otherwise)
m = fill(nn.RNN(3, 4))
p = pack_padded_sequence(X((5, 3, 3)), [5, 3, 2])
emit("rnn_sorted_h0", **run(m, p, vals((1, 3, 4), 102)))
m = fill(nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True))
p = pack_padded_sequence(X((4, 5, 3)), [2, 5, 1, 5], batch_first=True, enforce_sorted=False)
emit("rnn_relu_2l_bi_unsorted_h0", **run(m, p, vals((4, 4, 4), 102)))
m = fill(nn.LSTM(3, 4, num_layers=2, bidirectional=True))
p = pack_padded_sequence(X((5, 4, 3)), torch.tensor([3, 5, 1, 4]), enforce_sorted=False)
emit("lstm_2l_bi_unsorted", **run(m, p))
emit("lstm_2l_bi_unsorted_h0", **run(m, p, (vals((4, 4, 4), 102), vals((4, 4, 4), 103))))
m = fill(nn.LSTM(3, 4, proj_size=2, bidirectional=True))
p = pack_sequence([X((2, 3), 121), X((4, 3), 122), X((3, 3), 123)], enforce_sorted=False)
emit("lstm_proj_bi_pack_sequence", **run(m, p))
m = fill(nn.GRU(3, 4, num_layers=2, bidirectional=True))
p = pack_padded_sequence(X((5, 4, 3)), [3, 5, 1, 4], enforce_sorted=False)
emit("gru_2l_bi_unsorted", **run(m, p))
m = fill(nn.GRU(3, 4, batch_first=True))
p = pack_padded_sequence(X((3, 5, 3)), [5, 5, 2], batch_first=True)
emit("gru_sorted_h0", **run(m, p, vals((1, 3, 4), 102)))

# gradients through pack -> LSTM -> pad against torch
m = fill(nn.LSTM(3, 4, num_layers=2, bidirectional=True))
x = X((5, 4, 3)).requires_grad_()
h0 = vals((4, 4, 4), 102).requires_grad_()
c0 = vals((4, 4, 4), 103).requires_grad_()
o, (h, c) = m(pack_padded_sequence(x, [3, 5, 1, 4], enforce_sorted=False), (h0, c0))
po, _ = pad_packed_sequence(o)
loss = (po * vals(tuple(po.shape), 130)).sum() + (h * vals(tuple(h.shape), 131)).sum() + (c * vals(tuple(c.shape), 132)).sum()
loss.backward()
emit("lstm_grads", x=x.grad, h0=h0.grad, c0=c0.grad, w_ih_l0=m.weight_ih_l0.grad, w_hh_l1_reverse=m.weight_hh_l1_reverse.grad)

# pack / pad on small exact inputs (indices shown 1-based, as partrain's)
x = torch.arange(24.).reshape(4, 3, 2)
p = pack_padded_sequence(x, [4, 2, 1]); emit("pack_sorted", data=p.data, batch_sizes=p.batch_sizes)
p = pack_padded_sequence(x, torch.tensor([2, 4, 1]), enforce_sorted=False)
emit("pack_unsorted", data=p.data, batch_sizes=p.batch_sizes, sorted_indices=p.sorted_indices + 1,
     unsorted_indices=p.unsorted_indices + 1)
pad, lens = pad_packed_sequence(p); emit("pad_unsorted", out=pad, lengths=lens)
xb = torch.arange(24.).reshape(3, 4, 2)
p = pack_padded_sequence(xb, [2, 4, 4], batch_first=True, enforce_sorted=False)
emit("pack_bf_ties", data=p.data, batch_sizes=p.batch_sizes, sorted_indices=p.sorted_indices + 1,
     unsorted_indices=p.unsorted_indices + 1)
pad, lens = pad_packed_sequence(p, batch_first=True, padding_value=-1, total_length=6)
emit("pad_bf_total", out=pad, lengths=lens)
seqs = [torch.arange(6.).reshape(3, 2), torch.arange(2.).reshape(1, 2) + 10, torch.arange(4.).reshape(2, 2) + 20]
emit("pad_sequence", out=pad_sequence(seqs))
emit("pad_sequence_bf", out=pad_sequence(seqs, batch_first=True, padding_value=-1))
p = pack_sequence(seqs, enforce_sorted=False)
emit("pack_sequence", data=p.data, batch_sizes=p.batch_sizes, sorted_indices=p.sorted_indices + 1,
     unsorted_indices=p.unsorted_indices + 1)
print("\n".join(out))
]==]
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"

local E = {}
local R -- nn.utils.rnn, once nn's extras are loaded

local vals, X, fill, close = support.sin_values, support.sin_input, support.fill_params,
  support.assert_fixture

-- an int64 tensor holding exactly the expected values
local function exact(actual, expected)
  assert.are.equal("int64", actual:dtype())
  assert.are.same(expected[1], actual:size())
  assert.are.same(expected[2], actual:tolist())
end

-- the message of the error fn raises, without its position
local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  return (tostring(e):gsub("^[^:]*:%d+: ", ""))
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

local function flat_cat(list)
  local parts = {}
  for i, t in ipairs(list) do parts[i] = t:reshape(-1) end
  return pt.cat(parts, 1)
end

-- the layer's output over p, padded batch_first as the reference script's run()
local function run(m, p, hx)
  local o, st = m(p, hx)
  assert.are.equal("PackedSequence", getmetatable(o).__name)
  assert.is_true(o.batch_sizes:equal(p.batch_sizes))
  local padded = R.pad_packed_sequence(o, {batch_first = true})
  if pt.is_tensor(st) then return {out = padded, data = o.data, h = st} end
  return {out = padded, data = o.data, h = st[1], c = st[2]}
end
local function check_run(got, e, tol)
  for k, v in pairs(e) do close(got[k], v, tol) end
end

local F64 = "float64"
local seqs
local function arange(n, shift, shape) return (pt.arange(n):float() + shift):reshape(shape) end

describe("nn.utils.rnn", function()
  setup(function()
    R = nn.utils.rnn
    seqs = {arange(6, 0, {3, 2}), arange(2, 10, {1, 2}), arange(4, 20, {2, 2})}
  end)

  it("is reached through nn.utils.rnn (nn's lazily loaded extras)", function()
    assert.is_table(R)
    for _, k in ipairs {"pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence"} do
      assert.is_function(R[k], k)
    end
    assert.is_table(R.PackedSequence)
  end)

  it("pad_sequence pads and stacks as PyTorch's", function()
    close(R.pad_sequence(seqs), E.pad_sequence.out, 0)
    close(R.pad_sequence(seqs, {batch_first = true, padding_value = -1}), E.pad_sequence_bf.out, 0)
    -- a tensor is the list of its slices along dim 1; an empty sequence is all padding
    assert.are.same({2, 3, 4}, R.pad_sequence(pt.zeros(3, 2, 4)):size())
    local p = R.pad_sequence({pt.zeros(0, 2, {dtype = F64}), pt.ones(2, 2, {dtype = F64})}, {padding_value = 7})
    assert.are.equal(F64, p:dtype())
    assert.are.same({{{7, 7}, {1, 1}}, {{7, 7}, {1, 1}}}, p:tolist())
  end)

  it("pack_padded_sequence with sorted lengths (a Lua list)", function()
    local p = R.pack_padded_sequence(arange(24, 0, {4, 3, 2}), {4, 2, 1})
    close(p.data, E.pack_sorted.data, 0)
    exact(p.batch_sizes, E.pack_sorted.batch_sizes)
    assert.is_nil(p.sorted_indices)
    assert.is_nil(p.unsorted_indices)
  end)

  it("pack_padded_sequence with unsorted lengths (an int64 tensor), enforce_sorted=false", function()
    local x = arange(24, 0, {4, 3, 2})
    local p = R.pack_padded_sequence(x, pt.tensor({2, 4, 1}, {dtype = "int64"}), {enforce_sorted = false})
    local e = E.pack_unsorted
    close(p.data, e.data, 0)
    exact(p.batch_sizes, e.batch_sizes)
    exact(p.sorted_indices, e.sorted_indices)
    exact(p.unsorted_indices, e.unsorted_indices)
    local padded, lengths = R.pad_packed_sequence(p)
    close(padded, E.pad_unsorted.out, 0)
    exact(lengths, E.pad_unsorted.lengths)
  end)

  it("batch_first, ties kept in order (stable, as torch.sort), padding_value and total_length", function()
    local p = R.pack_padded_sequence(arange(24, 0, {3, 4, 2}), {2, 4, 4}, {batch_first = true, enforce_sorted = false})
    local e = E.pack_bf_ties
    close(p.data, e.data, 0)
    exact(p.batch_sizes, e.batch_sizes)
    exact(p.sorted_indices, e.sorted_indices)
    exact(p.unsorted_indices, e.unsorted_indices)
    local padded, lengths = R.pad_packed_sequence(p, {batch_first = true, padding_value = -1, total_length = 6})
    close(padded, E.pad_bf_total.out, 0)
    exact(lengths, E.pad_bf_total.lengths)
  end)

  it("pack_sequence packs a list of sequences", function()
    local p = R.pack_sequence(seqs, {enforce_sorted = false})
    local e = E.pack_sequence
    close(p.data, e.data, 0)
    exact(p.batch_sizes, e.batch_sizes)
    exact(p.sorted_indices, e.sorted_indices)
    exact(p.unsorted_indices, e.unsorted_indices)
    -- sorted already: no indices; pad_packed_sequence gives the padded batch back
    local q = R.pack_sequence({seqs[1], seqs[3], seqs[2]})
    assert.is_nil(q.sorted_indices)
    local padded, lengths = R.pad_packed_sequence(q)
    assert.is_true(padded:equal(R.pad_sequence({seqs[1], seqs[3], seqs[2]})))
    assert.are.same({3, 2, 1}, lengths:tolist())
  end)

  it("pack then pad is the identity on the valid steps, in any layout", function()
    local x = X({3, 5, 2}, 140)
    local lens = {3, 5, 1}
    for _, bf in ipairs {true, false} do
      local input = bf and x or x:transpose(1, 2):contiguous()
      local padded, lengths = R.pad_packed_sequence(
        R.pack_padded_sequence(input, lens, {batch_first = bf, enforce_sorted = false}), {batch_first = bf})
      assert.are.same(lens, lengths:tolist())
      for b, l in ipairs(lens) do
        local got = bf and padded:select(1, b) or padded:select(2, b)
        local want = bf and input:select(1, b) or input:select(2, b)
        assert.is_true(got:narrow(1, 1, l):equal(want:narrow(1, 1, l)))
        if l < 5 then assert.is_true(got:narrow(1, l + 1, 5 - l):eq(0):all():item()) end
      end
    end
  end)

  it("PackedSequence: the constructor computes unsorted_indices and checks its fields; to, double, float", function()
    local p = R.PackedSequence(pt.zeros(6, 2), pt.tensor({3, 2, 1}, {dtype = "int64"}), pt.tensor({2, 3, 1}, {dtype = "int64"}))
    assert.are.same({3, 1, 2}, p.unsorted_indices:tolist())
    assert.are.equal("PackedSequence(data=float32 {6,2}, batch_sizes={3,2,1}, sorted_indices={2,3,1}, unsorted_indices={3,1,2})",
      tostring(p))
    local d = p:double()
    assert.are.equal(F64, d.data:dtype())
    assert.are.equal(p.batch_sizes, d.batch_sizes)
    assert.are.equal("float32", d:float().data:dtype())
    assert.are.equal(F64, p:to(F64).data:dtype())
    local bs = pt.tensor({3, 2, 1}, {dtype = "int64"})
    assert.are.equal("PackedSequence: data has 5 rows (shape {5,2}), batch_sizes {3,2,1} sum to 6",
      err(function() return R.PackedSequence(pt.zeros(5, 2), bs) end))
    assert.are.equal("PackedSequence: batch_sizes must be positive and non-increasing, got {2,3,1}",
      err(function() return R.PackedSequence(pt.zeros(6, 2), pt.tensor({2, 3, 1}, {dtype = "int64"})) end))
    assert.are.equal("PackedSequence: batch_sizes must be a non-empty 1-D int64 tensor, got a tensor of dtype float32, shape {3}",
      err(function() return R.PackedSequence(pt.zeros(6, 2), pt.tensor {3, 2, 1}) end))
    assert.are.equal("PackedSequence: sorted_indices must be a permutation of 1..3 (the batch size batch_sizes[1]), got {1,1,2}",
      err(function() return R.PackedSequence(pt.zeros(6, 2), bs, pt.tensor({1, 1, 2}, {dtype = "int64"})) end))
    assert.are.equal("PackedSequence: unsorted_indices {1,2,3} is not the inverse of sorted_indices {2,3,1}",
      err(function()
        return R.PackedSequence(pt.zeros(6, 2), bs, pt.tensor({2, 3, 1}, {dtype = "int64"}), pt.tensor({1, 2, 3}, {dtype = "int64"}))
      end))
    assert.are.equal("PackedSequence: data must be a tensor, got table",
      err(function() return R.PackedSequence({}, bs) end))
    assert.are.equal("PackedSequence: data must have at least 1 dimension {sum(lengths),...}, got shape {}",
      err(function() return R.PackedSequence(pt.tensor(1), bs) end))
    assert.are.equal("PackedSequence: sorted_indices must be a 1-D int64 tensor, got table",
      err(function() return R.PackedSequence(pt.zeros(6), bs, {2, 3, 1}) end))
    assert.are.equal("PackedSequence: unsorted_indices must be a 1-D int64 tensor, got a tensor of dtype int64, shape {1,3}",
      err(function() return R.PackedSequence(pt.zeros(6), bs, nil, pt.tensor({{2, 3, 1}}, {dtype = "int64"})) end))
    assert.are.equal("PackedSequence: unsorted_indices given without sorted_indices",
      err(function() return R.PackedSequence(pt.zeros(6), bs, nil, pt.tensor({2, 3, 1}, {dtype = "int64"})) end))
  end)

  it("gradients flow through pack and pad (float64 finite differences)", function()
    local lens = {2, 4, 3}
    gradcheck(function(x)
      local p = R.pack_padded_sequence(x, lens, {batch_first = true, enforce_sorted = false})
      return flat_cat {p.data, (R.pad_packed_sequence(p, {total_length = 5, padding_value = 2}))}
    end, {X({3, 4, 2}, 150, F64)})
    gradcheck(function(a, b, c)
      local p = R.pack_sequence({a, b, c}, {enforce_sorted = false})
      return flat_cat {p.data, R.pad_sequence({a, b, c}, {batch_first = true, padding_value = -1})}
    end, {X({2, 3}, 151, F64), X({4, 3}, 152, F64), X({1, 3}, 153, F64)})
  end)

  it("name the offending values in their errors", function()
    local x = pt.zeros(4, 3, 2)
    assert.are.equal("pack_padded_sequence: lengths {2,3,1} are not sorted in decreasing order; pass enforce_sorted=false to sort them",
      err(function() return R.pack_padded_sequence(x, {2, 3, 1}) end))
    assert.are.equal("pack_padded_sequence: every length must be at least 1, got 0 for sequence 2 (lengths {4,0,2})",
      err(function() return R.pack_padded_sequence(x, {4, 0, 2}, {enforce_sorted = false}) end))
    assert.are.equal("pack_padded_sequence: length 5 of sequence 1 exceeds the input's 4 time steps (input shape {4,3,2}, batch_first=false)",
      err(function() return R.pack_padded_sequence(x, {5, 3, 2}) end))
    assert.are.equal("pack_padded_sequence: length 4 of sequence 2 exceeds the input's 3 time steps (input shape {4,3,2}, batch_first=true)",
      err(function() return R.pack_padded_sequence(x, pt.tensor({3, 4, 1, 1}, {dtype = "int64"}), {batch_first = true}) end))
    assert.are.equal("pack_padded_sequence: got 2 lengths for a batch of 3 sequences (input shape {4,3,2}, batch_first=false)",
      err(function() return R.pack_padded_sequence(x, {4, 3}) end))
    assert.are.equal("pack_padded_sequence: the batch has no sequences (input shape {4,0,2})",
      err(function() return R.pack_padded_sequence(pt.zeros(4, 0, 2), {}) end))
    assert.are.equal("pack_padded_sequence: lengths must be a list of integers or a 1-D int64 tensor, got a tensor of dtype float32, shape {3}",
      err(function() return R.pack_padded_sequence(x, pt.tensor {3, 2, 1}) end))
    assert.are.equal("pack_padded_sequence: lengths must be a list of integers or a 1-D int64 tensor, got number",
      err(function() return R.pack_padded_sequence(x, 3) end))
    assert.are.equal("pack_padded_sequence: lengths[2] must be an integer, got 2.5",
      err(function() return R.pack_padded_sequence(x, {3, 2.5, 1}) end))
    assert.are.equal("pack_padded_sequence: input must be a tensor, got table",
      err(function() return R.pack_padded_sequence({1, 2}, {1}) end))
    assert.are.equal("pack_padded_sequence: input must have at least 2 dimensions ({T,N,*}), got shape {4}",
      err(function() return R.pack_padded_sequence(pt.zeros(4), {4}) end))
    assert.are.equal("pack_padded_sequence: unknown option 'enforce_sort'",
      err(function() return R.pack_padded_sequence(x, {4, 3, 2}, {enforce_sort = false}) end))
    assert.are.equal("pack_padded_sequence: batch_first must be a boolean, got 1",
      err(function() return R.pack_padded_sequence(x, {4, 3, 2}, {batch_first = 1}) end))
    assert.are.equal("pack_sequence: lengths {1,3} are not sorted in decreasing order; pass enforce_sorted=false to sort them",
      err(function() return R.pack_sequence({pt.zeros(1, 2), pt.zeros(3, 2)}) end))
    assert.are.equal("pack_sequence: every length must be at least 1, got 0 for sequence 2 (lengths {3,0})",
      err(function() return R.pack_sequence({pt.zeros(3, 2), pt.zeros(0, 2)}) end))
    assert.are.equal("pad_sequence: sequences[2] has shape {3,4}, sequences[1] {2,3}: all must be {L_i,*} with the same trailing dimensions",
      err(function() return R.pad_sequence({pt.zeros(2, 3), pt.zeros(3, 4)}) end))
    assert.are.equal("pad_sequence: sequences[2] has dtype float64, sequences[1] float32",
      err(function() return R.pad_sequence({pt.zeros(2, 3), pt.zeros(3, 3, {dtype = F64})}) end))
    assert.are.equal("pad_sequence: sequences must be a non-empty list of tensors, got an empty list",
      err(function() return R.pad_sequence({}) end))
    assert.are.equal("pad_sequence: sequences[2] must be a tensor, got number",
      err(function() return R.pad_sequence({pt.zeros(2), 3}) end))
    assert.are.equal("pad_sequence: sequences must be a list of tensors, got string",
      err(function() return R.pad_sequence("abc") end))
    assert.are.equal("pad_sequence: padding_value must be a number, got string",
      err(function() return R.pad_sequence({pt.zeros(2)}, {padding_value = "0"}) end))
    assert.are.equal("pad_sequence: unknown option 'batchfirst'",
      err(function() return R.pad_sequence({pt.zeros(2)}, {batchfirst = true}) end))
    local p = R.pack_padded_sequence(x, {4, 3, 2})
    assert.are.equal("pad_packed_sequence: total_length 3 is less than the longest sequence's length 4",
      err(function() return R.pad_packed_sequence(p, {total_length = 3}) end))
    assert.are.equal("pad_packed_sequence: total_length must be an integer, got 4.5",
      err(function() return R.pad_packed_sequence(p, {total_length = 4.5}) end))
    assert.are.equal("pad_packed_sequence: total_length must be an integer, got string",
      err(function() return R.pad_packed_sequence(p, {total_length = "5"}) end))
    assert.are.equal("pad_packed_sequence: unknown option 'batch_frist'",
      err(function() return R.pad_packed_sequence(p, {batch_frist = true}) end))
    assert.are.equal("pack_sequence: unknown option 'batch_first'",
      err(function() return R.pack_sequence({pt.zeros(2)}, {batch_first = true}) end))
    assert.are.equal("pack_sequence: enforce_sorted must be a boolean, got 0",
      err(function() return R.pack_sequence({pt.zeros(2)}, {enforce_sorted = 0}) end))
    assert.are.equal("pack_sequence: sequences must be a list of tensors, got nil",
      err(function() return R.pack_sequence(nil) end))
    assert.are.equal("pad_sequence: sequences must be a list of tensors, got a 0-d tensor",
      err(function() return R.pad_sequence(pt.tensor(1)) end))
    assert.are.equal("pad_sequence: sequences[2] must have at least 1 dimension {L,*}, got shape {}",
      err(function() return R.pad_sequence({pt.zeros(1), pt.tensor(1)}) end))
    assert.are.equal("pack_padded_sequence: lengths must be a list of integers or a 1-D int64 tensor, got a tensor of dtype int64, shape {}",
      err(function() return R.pack_padded_sequence(x, pt.tensor(4, {dtype = "int64"})) end))
    assert.are.equal("pad_packed_sequence: sequence must be a PackedSequence (from nn.utils.rnn.pack_padded_sequence or pack_sequence), got a tensor",
      err(function() return R.pad_packed_sequence(x) end))
  end)

  it("have help texts", function()
    local help = require "partrain.help"
    for _, f in ipairs {R.pad_sequence, R.pack_padded_sequence, R.pad_packed_sequence, R.pack_sequence,
                        R.PackedSequence, R.PackedSequence.new, R.PackedSequence.to, R.PackedSequence.double,
                        R.PackedSequence.float, R, nn.utils} do
      assert.is_string(pt._docs[f])
    end
    assert.matches("^nn%.utils%.rnn%.pack_padded_sequence%(input, lengths", pt._docs[R.pack_padded_sequence])
    assert.matches("PackedSequence", help.text(nn.LSTM))
  end)
end)

describe("nn.RNN, nn.LSTM, nn.GRU over a PackedSequence", function()
  setup(function() R = nn.utils.rnn end)

  it("RNN with sorted lengths and h0 matches PyTorch", function()
    local p = R.pack_padded_sequence(X {5, 3, 3}, {5, 3, 2})
    check_run(run(fill(nn.RNN(3, 4)), p, vals({1, 3, 4}, 102)), E.rnn_sorted_h0)
  end)

  it("RNN relu, 2 layers, bidirectional, unsorted lengths, h0 indexed by sorted_indices", function()
    local m = fill(nn.RNN(3, 4, {num_layers = 2, nonlinearity = "relu", bidirectional = true}))
    local p = R.pack_padded_sequence(X {4, 5, 3}, {2, 5, 1, 5}, {batch_first = true, enforce_sorted = false})
    check_run(run(m, p, vals({4, 4, 4}, 102)), E.rnn_relu_2l_bi_unsorted_h0)
  end)

  it("LSTM 2 layers, bidirectional, unsorted lengths, with and without {h0, c0}", function()
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true}))
    local p = R.pack_padded_sequence(X {5, 4, 3}, pt.tensor({3, 5, 1, 4}, {dtype = "int64"}), {enforce_sorted = false})
    check_run(run(m, p), E.lstm_2l_bi_unsorted)
    check_run(run(m, p, {vals({4, 4, 4}, 102), vals({4, 4, 4}, 103)}), E.lstm_2l_bi_unsorted_h0)
    -- the output keeps the input's indices
    local o = m(p)
    assert.are.equal(p.sorted_indices, o.sorted_indices)
    assert.are.equal(p.unsorted_indices, o.unsorted_indices)
  end)

  it("LSTM with proj_size, bidirectional, over pack_sequence", function()
    local m = fill(nn.LSTM(3, 4, {proj_size = 2, bidirectional = true}))
    local p = R.pack_sequence({X({2, 3}, 121), X({4, 3}, 122), X({3, 3}, 123)}, {enforce_sorted = false})
    check_run(run(m, p), E.lstm_proj_bi_pack_sequence)
  end)

  it("GRU 2 layers bidirectional unsorted; GRU batch_first (ignored for packed input) with h0", function()
    local p = R.pack_padded_sequence(X {5, 4, 3}, {3, 5, 1, 4}, {enforce_sorted = false})
    check_run(run(fill(nn.GRU(3, 4, {num_layers = 2, bidirectional = true})), p), E.gru_2l_bi_unsorted)
    p = R.pack_padded_sequence(X {3, 5, 3}, {5, 5, 2}, {batch_first = true})
    check_run(run(fill(nn.GRU(3, 4, {batch_first = true})), p, vals({1, 3, 4}, 102)), E.gru_sorted_h0)
  end)

  it("equal lengths give the padded layer's results; float64 too", function()
    local m = fill(nn.GRU(3, 4, {num_layers = 2, bidirectional = true, dtype = F64}))
    local x = X({5, 2, 3}, 101, F64)
    local o, h = m(x)
    local po, ph = m(R.pack_padded_sequence(x, {5, 5}))
    assert.are.equal(F64, po.data:dtype())
    assert.is_true(((R.pad_packed_sequence(po)) - o):abs():max():item() < 1e-12)
    assert.is_true((ph - h):abs():max():item() < 1e-12)
  end)

  it("dropout acts between layers in training mode only", function()
    pt.manual_seed(5)
    local p = R.pack_padded_sequence(X {5, 3, 3}, {4, 5, 2}, {enforce_sorted = false})
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, dropout = 0.5, bidirectional = true}))
    local ref = fill(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true}))
    local e = m(p)
    assert.is_true(e.data:equal(ref(p).data))
    m:train()
    local a, b = m(p), m(p)
    assert.is_false(a.data:equal(b.data))
    assert.is_false(a.data:equal(e.data))
    -- one layer: nothing to drop
    assert.is_true(fill(nn.GRU(3, 4, {dropout = 0.9})):train()(p).data:equal(fill(nn.GRU(3, 4))(p).data))
  end)

  it("gradients match PyTorch's through pack -> LSTM -> pad", function()
    local m = fill(nn.LSTM(3, 4, {num_layers = 2, bidirectional = true}))
    local x = X {5, 4, 3}
    x.requires_grad = true
    local h0, c0 = vals({4, 4, 4}, 102), vals({4, 4, 4}, 103)
    h0.requires_grad, c0.requires_grad = true, true
    local o, st = m(R.pack_padded_sequence(x, {3, 5, 1, 4}, {enforce_sorted = false}), {h0, c0})
    local po = R.pad_packed_sequence(o)
    local loss = (po * vals(po:size(), 130)):sum() + (st[1] * vals(st[1]:size(), 131)):sum()
      + (st[2] * vals(st[2]:size(), 132)):sum()
    loss:backward()
    local e = E.lstm_grads
    close(x.grad, e.x); close(h0.grad, e.h0); close(c0.grad, e.c0)
    close(m.weight_ih_l0.grad, e.w_ih_l0); close(m.weight_hh_l1_reverse.grad, e.w_hh_l1_reverse)
  end)

  it("pass a finite-difference gradient check (float64, tiny packed LSTM, unsorted lengths)", function()
    local lstm = nn.LSTM(2, 3, {bidirectional = true})
    module_gradcheck(lstm, function(x, h, c)
      local o, st = lstm(R.pack_padded_sequence(x, {2, 3, 1}, {batch_first = true, enforce_sorted = false}), {h, c})
      return flat_cat {(R.pad_packed_sequence(o)), st[1], st[2]}
    end, {X({3, 3, 2}, 101, F64), vals({2, 3, 3}, 102, 0.5, F64), vals({2, 3, 3}, 103, 0.5, F64)})
    local gru = nn.GRU(2, 2, {num_layers = 2})
    module_gradcheck(gru, function(x, h)
      local o, hn = gru(R.pack_padded_sequence(x, {3, 1}), h)
      return flat_cat {o.data, hn}
    end, {X({3, 2, 2}, 104, F64), vals({2, 2, 2}, 105, 0.5, F64)})
  end)

  it("name the shapes and types in their errors", function()
    local lstm = nn.LSTM(3, 4, {num_layers = 2})
    local p = R.pack_padded_sequence(pt.zeros(5, 3, 3), {5, 4, 1})
    assert.are.equal("LSTM:forward: expected h0 of shape {2,3,4}, got {2,2,4}",
      err(function() return lstm(p, {pt.zeros(2, 2, 4), pt.zeros(2, 3, 4)}) end))
    assert.are.equal("LSTM:forward: expected c0 of shape {2,3,4}, got {2,4,4}",
      err(function() return lstm(p, {pt.zeros(2, 3, 4), pt.zeros(2, 4, 4)}) end))
    assert.are.equal("GRU:forward: input has 3 features, expected input_size 2 (input shape {10,3})",
      err(function() return nn.GRU(2, 4)(p) end))
    assert.are.equal("RNN:forward: input dtype float64 does not match the parameters' float32 (convert with m:double() or m:float(), or t:to(dtype))",
      err(function() return nn.RNN(3, 4)(p:double()) end))
    assert.are.equal("RNN:forward: input must be a tensor or a PackedSequence, got table",
      err(function() return nn.RNN(3, 4)({data = pt.zeros(10, 3)}) end))
    assert.are.equal("LSTM:forward: the initial state must be a table {h0, c0} of two tensors (PyTorch's tuple (h0, c0)), got a tensor",
      err(function() return lstm(p, pt.zeros(2, 3, 4)) end))
    -- fields changed after packing
    local bad = R.pack_padded_sequence(pt.zeros(5, 3, 3), {5, 4, 1})
    bad.data = pt.zeros(10, 1, 3)
    assert.are.equal("LSTM:forward: a PackedSequence's data must be 2-D {sum(lengths),input_size}, got shape {10,1,3}",
      err(function() return lstm(bad) end))
    bad.data = pt.zeros(9, 3)
    assert.are.equal("LSTM:forward: the PackedSequence's data has 9 rows (shape {9,3}), its batch_sizes {3,2,2,2,1} sum to 10",
      err(function() return lstm(bad) end))
  end)
end)

-- reference values (PyTorch 1.13, the script above)
E.rnn_sorted_h0 = {out = {{3,5,4}, {-0.7971861186, -0.7336639124, 0.3538817389, -0.0272653008, -0.7819902745, -0.5365246564, -0.3090263672, 0.7323077018, -0.8221448744, -0.423523766, -0.4599505643, 0.8077772748, -0.8164672864, -0.4338006415, -0.4651467601, 0.8159996688, -0.8108256193, -0.4450361411, -0.467823977, 0.8223644086, 0.400636144, -0.8935244457, -0.4020694632, 0.8848245507, -0.01927851976, -0.7718176324, -0.6363673894, 0.9205403895, -0.05399774396, -0.7255541526, -0.7186427427, 0.9436236685, 0, 0, 0, 0, 0, 0, 0, 0, -0.9669971668, 0.5608426148, -0.4605155674, -0.4351985769, -0.9013694825, 0.2852674944, -0.3955905278, -0.2635456829, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
  data = {{10,4}, {-0.7971861186, -0.7336639124, 0.3538817389, -0.0272653008, 0.400636144, -0.8935244457, -0.4020694632, 0.8848245507, -0.9669971668, 0.5608426148, -0.4605155674, -0.4351985769, -0.7819902745, -0.5365246564, -0.3090263672, 0.7323077018, -0.01927851976, -0.7718176324, -0.6363673894, 0.9205403895, -0.9013694825, 0.2852674944, -0.3955905278, -0.2635456829, -0.8221448744, -0.423523766, -0.4599505643, 0.8077772748, -0.05399774396, -0.7255541526, -0.7186427427, 0.9436236685, -0.8164672864, -0.4338006415, -0.4651467601, 0.8159996688, -0.8108256193, -0.4450361411, -0.467823977, 0.8223644086}},
  h = {{1,3,4}, {-0.8108256193, -0.4450361411, -0.467823977, 0.8223644086, -0.05399774396, -0.7255541526, -0.7186427427, 0.9436236685, -0.9013694825, 0.2852674944, -0.3955905278, -0.2635456829}}}
E.rnn_relu_2l_bi_unsorted_h0 = {out = {{4,5,8}, {0.1547359018, 0.3177544471, 0, 0, 0.65084063, 0.785724757, 0, 0.1378808794, 1.263955881, 0.1961661711, 0, 0, 0.4809768741, 0.788004123, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.005659035, 0, 0, 0, 0.8307523337, 0.8898427333, 0, 0.3618276203, 1.030378861, 0.03395670297, 0, 0, 0.5214547335, 1.081621687, 0, 0.2262163135, 1.490334338, 0.3570068165, 0, 0, 1.308182596, 0.3658869692, 0, 0, 0.9688004499, 0, 0, 0, 0.2144413826, 0.8133861667, 0, 0.5273723346, 1.055538714, 0.07768585835, 0, 0, 1.33576676, 0.1329937472, 0.2962516481, 0, 0.3779756444, 0.8184919793, 0, 0, 0.5195063299, 0.9725023061, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.365980804, 0, 0, 0, 0.5253327634, 0.9292171283, 0, 0.1291901429, 1.522658208, 0.3071796175, 0, 0, 1.148152673, 0.5050238885, 0, 0, 0.9505835583, 0, 0, 0, 0.4997554128, 0.5943378254, 0, 0.4302995932, 1.074867907, 0.09587213158, 0, 0, 0.5107512932, 1.132888551, 0, 0.1813102202, 1.660045423, 0.4922498685, 0, 0, 1.516073344, 0.118517427, 0.05033788102, 0}},
  data = {{13,8}, {1.005659035, 0, 0, 0, 0.8307523337, 0.8898427333, 0, 0.3618276203, 1.365980804, 0, 0, 0, 0.5253327634, 0.9292171283, 0, 0.1291901429, 0.1547359018, 0.3177544471, 0, 0, 0.65084063, 0.785724757, 0, 0.1378808794, 0.3779756444, 0.8184919793, 0, 0, 0.5195063299, 0.9725023061, 0, 0, 1.030378861, 0.03395670297, 0, 0, 0.5214547335, 1.081621687, 0, 0.2262163135, 1.522658208, 0.3071796175, 0, 0, 1.148152673, 0.5050238885, 0, 0, 1.263955881, 0.1961661711, 0, 0, 0.4809768741, 0.788004123, 0, 0, 1.490334338, 0.3570068165, 0, 0, 1.308182596, 0.3658869692, 0, 0, 0.9505835583, 0, 0, 0, 0.4997554128, 0.5943378254, 0, 0.4302995932, 0.9688004499, 0, 0, 0, 0.2144413826, 0.8133861667, 0, 0.5273723346, 1.074867907, 0.09587213158, 0, 0, 0.5107512932, 1.132888551, 0, 0.1813102202, 1.055538714, 0.07768585835, 0, 0, 1.33576676, 0.1329937472, 0.2962516481, 0, 1.660045423, 0.4922498685, 0, 0, 1.516073344, 0.118517427, 0.05033788102, 0}},
  h = {{4,4,4}, {0, 0, 0, 1.20154324, 0, 0, 0.4192260384, 0.009685069713, 0, 0, 0, 1.159355045, 0, 0, 0, 1.172428859, 0.03245680535, 0, 0, 0, 0, 0, 0.1280078081, 0, 0, 0, 0, 0.2581796214, 0.2011564172, 0, 0, 0, 1.263955881, 0.1961661711, 0, 0, 1.055538714, 0.07768585835, 0, 0, 0.3779756444, 0.8184919793, 0, 0, 1.660045423, 0.4922498685, 0, 0, 0.65084063, 0.785724757, 0, 0.1378808794, 0.8307523337, 0.8898427333, 0, 0.3618276203, 0.5195063299, 0.9725023061, 0, 0, 0.5253327634, 0.9292171283, 0, 0.1291901429}}}
E.lstm_2l_bi_unsorted = {out = {{4,5,8}, {0.1289307955, 0.08641588148, 0.009329994573, -0.08013705355, 0.1798336994, 0.1642264375, 0.1532721774, 0.04043357081, 0.1613260649, 0.1224538905, 0.005965997625, -0.1245706167, 0.1807384336, 0.1658971188, 0.1516035699, 0.05964522786, 0.1617474402, 0.1358883492, 0.006244832977, -0.1504049126, 0.1534480363, 0.1458509799, 0.1079028202, 0.05080053964, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1247480859, 0.08058108896, -7.320411869e-05, -0.08731243493, 0.1790133783, 0.1742699213, 0.1562751598, 0.03352885376, 0.1610121534, 0.1159752472, 0.005315083609, -0.1347259892, 0.1893886738, 0.1726850462, 0.1589241292, 0.04754821631, 0.1732942564, 0.1352691914, 0.02414985178, -0.1504500835, 0.1944276971, 0.1617761918, 0.1560632674, 0.05671647171, 0.1675623054, 0.1536734042, 0.02257137963, -0.1601996186, 0.1921190161, 0.1655713199, 0.1515782381, 0.06532174286, 0.1578867307, 0.1537154842, 0.02085395126, -0.1656181678, 0.1609553222, 0.1476837125, 0.1082621065, 0.05266067158, 0.1221104294, 0.07770448128, -0.0004217932253, -0.08336443438, 0.1433316418, 0.1374393888, 0.1012005843, 0.03897672517, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1288237902, 0.08658730085, 0.009515906031, -0.08065441374, 0.1815684484, 0.1663213866, 0.1533044201, 0.02998693681, 0.1634591167, 0.1233012337, 0.008844170776, -0.1259841143, 0.1887091645, 0.1709605145, 0.1601530865, 0.05289847735, 0.1666344696, 0.1369411119, 0.01167792745, -0.1533640454, 0.1942050496, 0.1637105297, 0.150913939, 0.05185671184, 0.1700962199, 0.1509873542, 0.03306569042, -0.1442312834, 0.1712636738, 0.1437747236, 0.1035940552, 0.04600284977, 0, 0, 0, 0, 0, 0, 0, 0}},
  data = {{13,8}, {0.1247480859, 0.08058108896, -7.320411869e-05, -0.08731243493, 0.1790133783, 0.1742699213, 0.1562751598, 0.03352885376, 0.1288237902, 0.08658730085, 0.009515906031, -0.08065441374, 0.1815684484, 0.1663213866, 0.1533044201, 0.02998693681, 0.1289307955, 0.08641588148, 0.009329994573, -0.08013705355, 0.1798336994, 0.1642264375, 0.1532721774, 0.04043357081, 0.1221104294, 0.07770448128, -0.0004217932253, -0.08336443438, 0.1433316418, 0.1374393888, 0.1012005843, 0.03897672517, 0.1610121534, 0.1159752472, 0.005315083609, -0.1347259892, 0.1893886738, 0.1726850462, 0.1589241292, 0.04754821631, 0.1634591167, 0.1233012337, 0.008844170776, -0.1259841143, 0.1887091645, 0.1709605145, 0.1601530865, 0.05289847735, 0.1613260649, 0.1224538905, 0.005965997625, -0.1245706167, 0.1807384336, 0.1658971188, 0.1516035699, 0.05964522786, 0.1732942564, 0.1352691914, 0.02414985178, -0.1504500835, 0.1944276971, 0.1617761918, 0.1560632674, 0.05671647171, 0.1666344696, 0.1369411119, 0.01167792745, -0.1533640454, 0.1942050496, 0.1637105297, 0.150913939, 0.05185671184, 0.1617474402, 0.1358883492, 0.006244832977, -0.1504049126, 0.1534480363, 0.1458509799, 0.1079028202, 0.05080053964, 0.1675623054, 0.1536734042, 0.02257137963, -0.1601996186, 0.1921190161, 0.1655713199, 0.1515782381, 0.06532174286, 0.1700962199, 0.1509873542, 0.03306569042, -0.1442312834, 0.1712636738, 0.1437747236, 0.1035940552, 0.04600284977, 0.1578867307, 0.1537154842, 0.02085395126, -0.1656181678, 0.1609553222, 0.1476837125, 0.1082621065, 0.05266067158}},
  h = {{4,4,4}, {-0.1956989475, -0.4165454206, -0.08129482294, -0.1112773325, -0.2417518658, -0.5137309669, -0.06372039896, -0.1320814314, -0.04429266835, -0.4115671545, 0.08535605589, -0.06007839208, -0.2267479412, -0.2811474086, -0.3600050091, -0.02745667386, 4.08083804e-05, -0.01002904463, -0.2843788523, -0.4151092465, -0.1658613917, -0.02261334784, -0.172949579, -0.5667375241, 0.03236560427, -0.1681489108, -0.1996414059, 0.001744053387, -0.01437671122, -0.001354987164, -0.3177785286, -0.467792499, 0.1617474402, 0.1358883492, 0.006244832977, -0.1504049126, 0.1578867307, 0.1537154842, 0.02085395126, -0.1656181678, 0.1221104294, 0.07770448128, -0.0004217932253, -0.08336443438, 0.1700962199, 0.1509873542, 0.03306569042, -0.1442312834, 0.1798336994, 0.1642264375, 0.1532721774, 0.04043357081, 0.1790133783, 0.1742699213, 0.1562751598, 0.03352885376, 0.1433316418, 0.1374393888, 0.1012005843, 0.03897672517, 0.1815684484, 0.1663213866, 0.1533044201, 0.02998693681}},
  c = {{4,4,4}, {-0.4952267728, -0.5601543807, -0.1177335057, -0.3391678919, -0.6231173708, -0.7519445202, -0.08892244208, -0.4505790514, -0.1100351977, -0.5301646989, 0.1366041117, -0.144231658, -0.3742854259, -0.6111079182, -0.4731941121, -0.05294732583, 7.902933167e-05, -0.02749373264, -0.4254537942, -0.6668473407, -0.2828107132, -0.04468741206, -0.3592069713, -0.9576629357, 0.1671669118, -0.3058650937, -0.2570926594, 0.003827022666, -0.02724053449, -0.003824644245, -0.4765115152, -0.8026260796, 0.4823559589, 0.4386820762, 0.01321354423, -0.3041982938, 0.4498746333, 0.5052536634, 0.04419510945, -0.3517862141, 0.4086004542, 0.234801525, -0.0009688300879, -0.1475463343, 0.4897417093, 0.5176141522, 0.07374908553, -0.3151971389, 0.4616650548, 0.7105816968, 0.4482272054, 0.1127941581, 0.4369930334, 0.7302912993, 0.4439425622, 0.09442777924, 0.3553087037, 0.4560410757, 0.3434731897, 0.1041179045, 0.4724902991, 0.7321854462, 0.4389755548, 0.08198069132}}}
E.lstm_2l_bi_unsorted_h0 = {out = {{4,5,8}, {0.1020893881, 0.01544297201, 0.1148129778, 0.05485300779, 0.1702845503, 0.1703880097, 0.1628732899, 0.05499741967, 0.1401709464, 0.09425207337, 0.06404613912, -0.0262135552, 0.1873295637, 0.1587420301, 0.1507753479, 0.06499098525, 0.1450783472, 0.1308269117, 0.03865479469, -0.0508859392, 0.1674185612, 0.09954601333, 0.07555653706, 0.05226258372, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.09982547648, 0.1225764188, -0.09306705236, -0.155341949, 0.1988461555, 0.1596980954, 0.1480143188, 0.03039071782, 0.1683373104, 0.1304405395, -0.02358492543, -0.1959385672, 0.1963990523, 0.1663295706, 0.1503501676, 0.04797154046, 0.1767469157, 0.1379123133, 0.01813467842, -0.1974550583, 0.1873810003, 0.1606849359, 0.1454841188, 0.06288964122, 0.1712604746, 0.1533187867, 0.01815266489, -0.2109592925, 0.1629233844, 0.1752587641, 0.1398230643, 0.08380627107, 0.1642762173, 0.1469919087, 0.0130617123, -0.2261370563, 0.08221858094, 0.190438487, 0.09721989935, 0.08763270688, 0.08038907834, -0.09305477956, 0.06228416356, -0.08183216101, 0.1731208684, 0.0444065575, 0.08105529997, -0.03956019076, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.1078421953, 0.1712231316, -0.03264345588, -0.05360367971, 0.1966412407, 0.1583357891, 0.1501542836, 0.06475516575, 0.1662802389, 0.1526032539, -0.008431337234, -0.09468486499, 0.1901958328, 0.1696183121, 0.1545918063, 0.08458792473, 0.1654744843, 0.1499313442, 0.006175381927, -0.1291162044, 0.1778364521, 0.1665916665, 0.1477043468, 0.0999155897, 0.169178631, 0.1521100935, 0.02227077461, -0.1446999821, 0.1106702239, 0.197486655, 0.09620111023, 0.1492842616, 0, 0, 0, 0, 0, 0, 0, 0}},
  data = {{13,8}, {0.09982547648, 0.1225764188, -0.09306705236, -0.155341949, 0.1988461555, 0.1596980954, 0.1480143188, 0.03039071782, 0.1078421953, 0.1712231316, -0.03264345588, -0.05360367971, 0.1966412407, 0.1583357891, 0.1501542836, 0.06475516575, 0.1020893881, 0.01544297201, 0.1148129778, 0.05485300779, 0.1702845503, 0.1703880097, 0.1628732899, 0.05499741967, 0.08038907834, -0.09305477956, 0.06228416356, -0.08183216101, 0.1731208684, 0.0444065575, 0.08105529997, -0.03956019076, 0.1683373104, 0.1304405395, -0.02358492543, -0.1959385672, 0.1963990523, 0.1663295706, 0.1503501676, 0.04797154046, 0.1662802389, 0.1526032539, -0.008431337234, -0.09468486499, 0.1901958328, 0.1696183121, 0.1545918063, 0.08458792473, 0.1401709464, 0.09425207337, 0.06404613912, -0.0262135552, 0.1873295637, 0.1587420301, 0.1507753479, 0.06499098525, 0.1767469157, 0.1379123133, 0.01813467842, -0.1974550583, 0.1873810003, 0.1606849359, 0.1454841188, 0.06288964122, 0.1654744843, 0.1499313442, 0.006175381927, -0.1291162044, 0.1778364521, 0.1665916665, 0.1477043468, 0.0999155897, 0.1450783472, 0.1308269117, 0.03865479469, -0.0508859392, 0.1674185612, 0.09954601333, 0.07555653706, 0.05226258372, 0.1712604746, 0.1533187867, 0.01815266489, -0.2109592925, 0.1629233844, 0.1752587641, 0.1398230643, 0.08380627107, 0.169178631, 0.1521100935, 0.02227077461, -0.1446999821, 0.1106702239, 0.197486655, 0.09620111023, 0.1492842616, 0.1642762173, 0.1469919087, 0.0130617123, -0.2261370563, 0.08221858094, 0.190438487, 0.09721989935, 0.08763270688}},
  h = {{4,4,4}, {-0.1322107118, -0.3825988836, -0.1220616811, -0.09213919888, -0.2581647112, -0.5510976386, -0.05068338776, -0.1403712953, 0.1534320037, -0.3215821006, 0.1704114487, -0.1520024355, -0.2799105217, -0.3139517441, -0.3670214169, -0.05177863338, 0.01872563971, 0.03687976921, -0.2051075448, -0.3532240942, -0.1736868276, -0.05250873576, -0.1790284617, -0.6026343104, 0.03122022136, -0.09366809125, 0.1489980867, 0.1001899163, -0.02416371915, -0.01031898443, -0.3492304714, -0.4948276353, 0.1450783472, 0.1308269117, 0.03865479469, -0.0508859392, 0.1642762173, 0.1469919087, 0.0130617123, -0.2261370563, 0.08038907834, -0.09305477956, 0.06228416356, -0.08183216101, 0.169178631, 0.1521100935, 0.02227077461, -0.1446999821, 0.1702845503, 0.1703880097, 0.1628732899, 0.05499741967, 0.1988461555, 0.1596980954, 0.1480143188, 0.03039071782, 0.1731208684, 0.0444065575, 0.08105529997, -0.03956019076, 0.1966412407, 0.1583357891, 0.1501542836, 0.06475516575}},
  c = {{4,4,4}, {-0.3348329378, -0.4981267804, -0.1817738575, -0.2671706316, -0.6671875249, -0.8410590542, -0.0700730039, -0.4943217162, 0.398536476, -0.3883552753, 0.322430429, -0.2926925059, -0.4635121078, -0.7401147945, -0.4766587934, -0.1035892329, 0.03858343104, 0.0939174271, -0.3087434081, -0.5292301076, -0.2927949939, -0.1059811192, -0.3660933935, -1.087194076, 0.1378846968, -0.1705609994, 0.1942707396, 0.1968516299, -0.04487736819, -0.0300282745, -0.524865235, -0.8903687592, 0.3934137585, 0.3637687682, 0.08432079742, -0.103330067, 0.5216703794, 0.5391670745, 0.02758807478, -0.478379352, 0.1900878624, -0.2808197389, 0.1332728732, -0.1307307453, 0.53490146, 0.5556965344, 0.05033889669, -0.3059867375, 0.402671408, 0.6750229808, 0.4665854099, 0.1577885766, 0.5380390504, 0.7755881831, 0.466143532, 0.08820138856, 0.3255959081, 0.1526171586, 0.2578211134, -0.1116453406, 0.5334353035, 0.7955776204, 0.4980771133, 0.1993102836}}}
E.lstm_proj_bi_pack_sequence = {out = {{3,4,4}, {-0.1621495618, 0.1352831302, -0.2422849114, 0.1957068356, -0.2869030219, 0.2483647663, -0.1916594368, 0.1736856528, 0, 0, 0, 0, 0, 0, 0, 0, -0.2094224075, 0.1894032956, -0.3160535673, 0.2449613561, -0.2386058896, 0.1809792114, -0.294552379, 0.2244863812, -0.293798095, 0.2278033003, -0.2661268092, 0.2257973153, -0.3689590515, 0.3054180958, -0.1853439906, 0.1592637558, -0.1897800791, 0.1555894747, -0.3018584624, 0.237320116, -0.2609274768, 0.2014362686, -0.2273453268, 0.1762719295, -0.2958703503, 0.2329666902, -0.1586112061, 0.1244283505, 0, 0, 0, 0}},
  data = {{9,4}, {-0.2094224075, 0.1894032956, -0.3160535673, 0.2449613561, -0.1897800791, 0.1555894747, -0.3018584624, 0.237320116, -0.1621495618, 0.1352831302, -0.2422849114, 0.1957068356, -0.2386058896, 0.1809792114, -0.294552379, 0.2244863812, -0.2609274768, 0.2014362686, -0.2273453268, 0.1762719295, -0.2869030219, 0.2483647663, -0.1916594368, 0.1736856528, -0.293798095, 0.2278033003, -0.2661268092, 0.2257973153, -0.2958703503, 0.2329666902, -0.1586112061, 0.1244283505, -0.3689590515, 0.3054180958, -0.1853439906, 0.1592637558}},
  h = {{2,3,2}, {-0.2869030219, 0.2483647663, -0.3689590515, 0.3054180958, -0.2958703503, 0.2329666902, -0.2422849114, 0.1957068356, -0.3160535673, 0.2449613561, -0.3018584624, 0.237320116}},
  c = {{2,3,4}, {-0.3728149668, -0.222361125, -0.4734496539, -0.2734942464, -0.4860813308, -0.3753459134, -0.6864152479, -0.2094581957, -0.3403190811, -0.4509386226, -0.5639808334, -0.01988219005, -0.2421354216, -0.1941138598, -0.666328388, 0.2977120663, -0.5004490185, -0.4721674129, -0.4584666472, 0.04868464147, -0.4120164416, -0.623543005, -0.09328742744, -0.09864931071}}}
E.gru_2l_bi_unsorted = {out = {{4,5,8}, {0.4522421497, 0.369041447, 0.1714867721, -0.01964713671, 0.1952846578, 0.7357961566, 0.5318080796, 0.2561124301, 0.2765792337, 0.4506673582, 0.1305595014, -0.003384985039, 0.1896903165, 0.6604943067, 0.6157078392, 0.2729095557, 0.3308441139, 0.5490458099, 0.1635721335, 0.009169094287, 0.3551411939, 0.5041767259, 0.4132987005, 0.1804678531, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.4171316633, 0.3117154016, 0.1206666216, -0.04283649907, 0.1273379563, 0.7769754427, 0.5157280039, 0.2430963714, 0.4919814417, 0.5595636959, 0.2570075391, -0.02266626805, 0.2581955416, 0.8050404657, 0.5387940624, 0.2563816161, 0.3320325946, 0.6495813511, 0.2302218528, 0.01424019842, 0.1955123171, 0.7788337848, 0.5981223242, 0.2920212812, 0.1520449244, 0.61072348, 0.1262309244, 0.05895249645, 0.2098592166, 0.6983258077, 0.659670743, 0.29216664, 0.2621387685, 0.6351448439, 0.1579851553, 0.07787389413, 0.3816700274, 0.5332732553, 0.4373167162, 0.1901722949, 0.4291976197, 0.3314307467, 0.1378594466, -0.03504043995, 0.3481047231, 0.4579332188, 0.3496596899, 0.1298967663, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.4813474659, 0.3887930526, 0.1759146321, -0.02554483546, 0.2053130248, 0.7686302116, 0.5133141779, 0.2111185906, 0.3226781637, 0.4937656592, 0.1545750106, -0.0110333062, 0.1625838901, 0.745458922, 0.6200246147, 0.2331413905, 0.4031167373, 0.6320878049, 0.2344570889, 0.01412665146, 0.3806900533, 0.6977512353, 0.5623317292, 0.1869343257, 0.2566779475, 0.6629657717, 0.1938278294, 0.05518690843, 0.4003563241, 0.5525657504, 0.4529512455, 0.1960700742, 0, 0, 0, 0, 0, 0, 0, 0}},
  data = {{13,8}, {0.4171316633, 0.3117154016, 0.1206666216, -0.04283649907, 0.1273379563, 0.7769754427, 0.5157280039, 0.2430963714, 0.4813474659, 0.3887930526, 0.1759146321, -0.02554483546, 0.2053130248, 0.7686302116, 0.5133141779, 0.2111185906, 0.4522421497, 0.369041447, 0.1714867721, -0.01964713671, 0.1952846578, 0.7357961566, 0.5318080796, 0.2561124301, 0.4291976197, 0.3314307467, 0.1378594466, -0.03504043995, 0.3481047231, 0.4579332188, 0.3496596899, 0.1298967663, 0.4919814417, 0.5595636959, 0.2570075391, -0.02266626805, 0.2581955416, 0.8050404657, 0.5387940624, 0.2563816161, 0.3226781637, 0.4937656592, 0.1545750106, -0.0110333062, 0.1625838901, 0.745458922, 0.6200246147, 0.2331413905, 0.2765792337, 0.4506673582, 0.1305595014, -0.003384985039, 0.1896903165, 0.6604943067, 0.6157078392, 0.2729095557, 0.3320325946, 0.6495813511, 0.2302218528, 0.01424019842, 0.1955123171, 0.7788337848, 0.5981223242, 0.2920212812, 0.4031167373, 0.6320878049, 0.2344570889, 0.01412665146, 0.3806900533, 0.6977512353, 0.5623317292, 0.1869343257, 0.3308441139, 0.5490458099, 0.1635721335, 0.009169094287, 0.3551411939, 0.5041767259, 0.4132987005, 0.1804678531, 0.1520449244, 0.61072348, 0.1262309244, 0.05895249645, 0.2098592166, 0.6983258077, 0.659670743, 0.29216664, 0.2566779475, 0.6629657717, 0.1938278294, 0.05518690843, 0.4003563241, 0.5525657504, 0.4529512455, 0.1960700742, 0.2621387685, 0.6351448439, 0.1579851553, 0.07787389413, 0.3816700274, 0.5332732553, 0.4373167162, 0.1901722949}},
  h = {{4,4,4}, {-0.2737570019, -0.2272438072, 0.07642009629, -0.2673747846, -0.3625362011, -0.2839863057, 0.1117876557, -0.3139696833, -0.05462811865, -0.3168396518, 0.2325832942, -0.1393377242, -0.09125253113, -0.2700016657, -0.2922311508, -0.03459426849, 0.1588508945, 0.2582063801, -0.2924408396, -0.2953619633, -0.04990852873, 0.3438599201, -0.2954774736, -0.3213247012, 0.3671934921, -0.1555081848, -0.1642591413, 0.07920395927, 0.1310190473, 0.3103086265, -0.3711039426, -0.3604650371, 0.3308441139, 0.5490458099, 0.1635721335, 0.009169094287, 0.2621387685, 0.6351448439, 0.1579851553, 0.07787389413, 0.4291976197, 0.3314307467, 0.1378594466, -0.03504043995, 0.2566779475, 0.6629657717, 0.1938278294, 0.05518690843, 0.1952846578, 0.7357961566, 0.5318080796, 0.2561124301, 0.1273379563, 0.7769754427, 0.5157280039, 0.2430963714, 0.3481047231, 0.4579332188, 0.3496596899, 0.1298967663, 0.2053130248, 0.7686302116, 0.5133141779, 0.2111185906}}}
E.gru_sorted_h0 = {out = {{3,5,4}, {0.3294642475, 0.1256536054, 0.09866514106, 0.1781350166, 0.006283609193, 0.2168045035, -0.06751160793, -0.2082053689, -0.04627576986, -0.1929011296, 0.1695713056, -0.2751338629, 0.03125889052, -0.2599079525, -0.2223269494, -0.008037039167, -0.2860148103, -0.04947449306, -0.3802369463, -0.2497186666, -0.2543582127, -0.5448731381, 0.08523995596, -0.3236143717, -0.09460225297, -0.5306544559, -0.3245931377, -0.08707631826, -0.4083444297, -0.2697440181, -0.4801645348, -0.2828787538, -0.4140849245, -0.4157226586, 0.1070549675, -0.3186798398, -0.1605208522, -0.4249394475, -0.3008201683, -0.09603086621, -0.1023424585, 0.2725331961, 0.308539037, -0.3130654796, -0.1308999357, -0.1922134085, 0.3534267614, -0.3542382015, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
  data = {{12,4}, {0.3294642475, 0.1256536054, 0.09866514106, 0.1781350166, -0.2543582127, -0.5448731381, 0.08523995596, -0.3236143717, -0.1023424585, 0.2725331961, 0.308539037, -0.3130654796, 0.006283609193, 0.2168045035, -0.06751160793, -0.2082053689, -0.09460225297, -0.5306544559, -0.3245931377, -0.08707631826, -0.1308999357, -0.1922134085, 0.3534267614, -0.3542382015, -0.04627576986, -0.1929011296, 0.1695713056, -0.2751338629, -0.4083444297, -0.2697440181, -0.4801645348, -0.2828787538, 0.03125889052, -0.2599079525, -0.2223269494, -0.008037039167, -0.4140849245, -0.4157226586, 0.1070549675, -0.3186798398, -0.2860148103, -0.04947449306, -0.3802369463, -0.2497186666, -0.1605208522, -0.4249394475, -0.3008201683, -0.09603086621}},
  h = {{1,3,4}, {-0.2860148103, -0.04947449306, -0.3802369463, -0.2497186666, -0.1605208522, -0.4249394475, -0.3008201683, -0.09603086621, -0.1308999357, -0.1922134085, 0.3534267614, -0.3542382015}}}
E.lstm_grads = {x = {{5,4,3}, {-0.02638930408, -0.02122164631, -0.006073116684, -0.04262654048, -0.01536975388, 0.01911566814, 0.004557684359, 0.0159462481, 0.0198350422, -0.04231681358, -0.0142398117, 0.02053439612, 0.0458344687, -0.0164513043, -0.07099977183, -0.003083314814, 0.007860916677, 0.01510803623, 0, 0, 0, -0.0073480255, 0.004461794131, 0.01417316227, 0.08613260475, 0.04793986561, -0.01279974141, -0.0124031708, -0.01380383969, -0.008712347091, 0, 0, 0, 0.02929421933, 0.03037499641, 0.01716993806, 0, 0, 0, -0.04904686207, -0.01445434931, 0.02693626978, 0, 0, 0, 0.001313331037, -0.02725595934, -0.04300634615, 0, 0, 0, -0.0187189415, -0.00553793439, 0.01024764979, 0, 0, 0, 0, 0, 0}},
  h0 = {{4,4,4}, {0.01344841365, 0.02086843844, 0.01847371054, 0.007390507923, 0.00870782758, -0.004958586331, -0.01629289961, -0.01996440762, -0.01742310061, -0.04063905435, -0.04474182582, -0.0278018175, -0.006781451706, -0.00655990003, -0.003253124869, 0.001583645749, -0.06866083694, -0.06243992101, -0.02685253458, 0.02136401845, 0.008774255194, 0.01181778961, 0.009303232909, 0.002413220407, -0.01976418558, 0.02059818881, 0.05127291315, 0.05783318528, -0.05904454257, -0.05834598113, -0.03020639308, 0.01213973361, -0.001519581447, 0.03892455414, 0.0610618637, 0.05448082465, 0.0383328478, 0.04214019191, 0.02612834531, -0.002172070355, -0.1320297761, -0.1424627954, -0.08589333597, 0.0110731015, 0.02343476327, 0.01994988602, 0.007082265649, -0.009116254922, 0.05066640058, 0.01068461696, -0.03432230897, -0.06318691669, -0.006924554179, 0.01882537256, 0.03572143243, 0.03581714447, 0.1871832561, 0.0526913518, -0.1065821186, -0.2157283532, -0.01254317749, 0.01592316616, 0.03690059596, 0.04052309889}},
  c0 = {{4,4,4}, {0.1820886998, 0.217849737, 0.1016255575, 0.002576779271, -0.05552261615, -0.1622473127, -0.06964377278, -0.003562817151, 0.5410522876, 0.4823015299, 0.2289802273, -0.03877773219, -0.06017766495, -0.262876257, -0.08151992445, -0.04162447902, 0.02348063535, 0.1770797521, 0.2419808294, 0.1137420536, -0.004662388417, -0.0701421465, -0.05989896736, -0.1324812688, -0.09915294736, 0.007440591439, 0.231767794, 0.4051799084, 0.04646425349, 0.01042723224, -0.06750230118, -0.1735556412, -0.03980356268, 0.002338145949, 0.1075802946, 0.2790610869, -0.02165382569, -0.02290326954, -0.01220445243, -0.04185740419, -0.2689641895, -0.2716576371, -0.1976957912, 0.1253932552, -0.002614723021, -0.02418898366, -0.04351811268, -0.1098880851, -0.009587805422, -0.02578678952, -0.04201716079, -0.05973446612, -0.009799152767, -0.01984209789, -0.03257030597, -0.02151693636, 0.05418523807, -0.08636433107, -0.1594799649, -0.1754742661, -0.04044477816, -0.02004614133, 0.005500917515, 0.1047005067}},
  w_ih_l0 = {{16,3}, {0.006578022903, 0.03164172979, 0.04182383674, -0.04868025049, 0.01385721949, 0.06987742263, -0.0176531519, 0.04831178499, 0.09155493452, 0.003317889571, -0.01423355137, -0.02509073069, 0.001143887473, 0.01684642808, 0.02462583033, -0.0536742851, -0.0701021012, -0.05355980373, -0.04716279706, -0.07489380489, -0.06740108602, -0.0143612418, -0.004837043653, 0.006962091705, 0.003987364369, -0.09798247327, -0.1538696227, -0.02869860571, -0.07897245668, -0.09210432729, 0.09382411724, 0.06867270592, 0.01122344797, -0.03737626029, -0.04286675512, -0.02819634521, -0.02538391253, -0.04455957278, -0.04277816969, -0.02830158817, 0.003240415794, 0.03325840158, -0.01282556755, -0.01931037734, -0.01671321493, 0.004638990329, 0.005849545967, 0.004308968736}},
  w_hh_l1_reverse = {{16,4}, {0.01464800978, 0.007038276772, -0.005102786363, -0.01504852072, 0.02590595036, 0.02804692928, 0.02210056706, 0.01018301602, -0.004264879277, 0.03012293146, 0.05895016614, 0.0678476848, -0.00472894998, 0.005481552889, 0.01300162704, 0.01920883262, -0.002983966687, -0.00153234006, -0.001089905722, -0.0002473980336, 0.04083572954, 0.02596758112, 0.006347217128, -0.01236994478, 0.04328446456, 0.02342934748, -0.001410940933, -0.02081803697, 0.02020676862, 0.01729781635, 0.00902083477, 0.004230158396, 0.04217344433, 0.01215362671, -0.03982252664, -0.07320675065, -0.04953408455, 0.030340288, 0.09734830945, 0.1252479841, 0.04399041666, 0.05206545148, 0.04793553469, 0.03779060464, -0.01003700027, 0.09470387335, 0.1768889671, 0.2121714745, 0.03754715076, 0.01307940751, -0.0242975159, -0.04690303472, 0.04787206519, 0.02816127705, -0.01402137435, -0.03693846269, 0.02461616944, 0.02267347344, 0.004656733159, -0.00297083386, 0.005632296297, 0.005100178489, 0.0004334760306, 0.0009282192268}}}
E.pack_sorted = {data = {{7,2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 18, 19}},
  batch_sizes = {{4}, {3, 2, 1, 1}}}
E.pack_unsorted = {data = {{7,2}, {2, 3, 0, 1, 4, 5, 8, 9, 6, 7, 14, 15, 20, 21}},
  batch_sizes = {{4}, {3, 2, 1, 1}},
  sorted_indices = {{3}, {2, 1, 3}},
  unsorted_indices = {{3}, {2, 1, 3}}}
E.pad_unsorted = {out = {{4,3,2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 14, 15, 0, 0, 0, 0, 20, 21, 0, 0}},
  lengths = {{3}, {2, 4, 1}}}
E.pack_bf_ties = {data = {{10,2}, {8, 9, 16, 17, 0, 1, 10, 11, 18, 19, 2, 3, 12, 13, 20, 21, 14, 15, 22, 23}},
  batch_sizes = {{4}, {3, 3, 2, 2}},
  sorted_indices = {{3}, {2, 3, 1}},
  unsorted_indices = {{3}, {3, 1, 2}}}
E.pad_bf_total = {out = {{3,6,2}, {0, 1, 2, 3, -1, -1, -1, -1, -1, -1, -1, -1, 8, 9, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, 16, 17, 18, 19, 20, 21, 22, 23, -1, -1, -1, -1}},
  lengths = {{3}, {2, 4, 4}}}
E.pad_sequence = {out = {{3,3,2}, {0, 1, 10, 11, 20, 21, 2, 3, 0, 0, 22, 23, 4, 5, 0, 0, 0, 0}}}
E.pad_sequence_bf = {out = {{3,3,2}, {0, 1, 2, 3, 4, 5, 10, 11, -1, -1, -1, -1, 20, 21, 22, 23, -1, -1}}}
E.pack_sequence = {data = {{6,2}, {0, 1, 20, 21, 10, 11, 2, 3, 22, 23, 4, 5}},
  batch_sizes = {{3}, {3, 2, 1}},
  sorted_indices = {{3}, {1, 3, 2}},
  unsorted_indices = {{3}, {1, 3, 2}}}
