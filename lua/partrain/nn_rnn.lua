-- Recurrent layers and attention for partrain.nn, as PyTorch's: RNNCell, LSTMCell, GRUCell,
-- RNN, LSTM, GRU (over padded or packed input), nn.utils.rnn (pad_sequence, pack_padded_sequence,
-- pad_packed_sequence, pack_sequence, PackedSequence), MultiheadAttention,
-- functional.scaled_dot_product_attention, TransformerEncoderLayer and TransformerEncoder. Loaded
-- by nn.lua's lazy loader (nn._load_extras) on first use of a name nn does not have.
--
-- Everything is built over differentiable tensor ops (nn.linear, matmul, sigmoid, tanh,
-- softmax, cat, stack, narrow, dropout, layer_norm), so autograd needs nothing of its own. The
-- recurrent layers project the input of every time step in one matmul per layer and direction,
-- then run one step per loop iteration over the whole batch (as PyTorch's CPU kernels do).
-- Parameter names, shapes, gate order and initialisation are PyTorch's, so a state_dict saved
-- from PyTorch loads (load_state_dict) and gives the same outputs.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module, init = nn.Module, nn.init

local doc = pt._doc

local function shape_str(t)
  return "{" .. table.concat(t:size(), ",") .. "}"
end

local function dims_str(list)
  return "{" .. table.concat(list, ",") .. "}"
end

-- error(msg) at the nearest frame outside partrain's own Lua modules (the user's call)
local fail = require("partrain.tensor")._fail
local function raise(msg) fail("%s", msg) end

local function check_opts(name, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    local keys = {}
    for k in pairs(allowed) do keys[#keys + 1] = k .. "=" end
    table.sort(keys)
    -- a tensor here is most often one of PyTorch's positional masks (layer(src, mask)): say so
    raise(("%s: options must be a table {%s}, got %s%s"):format(name, table.concat(keys, ", "),
      pt.is_tensor(opts) and "a tensor" or type(opts),
      pt.is_tensor(opts) and " (masks are passed by name in the options table)" or ""))
  end
  for k in pairs(opts) do
    if not allowed[k] then raise(("%s: unknown option '%s'"):format(name, tostring(k))) end
  end
  return opts
end

local function set_of(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

local function positive(name, what, v)
  if math.type(v) ~= "integer" or v < 1 then
    raise(("%s: %s must be a positive integer, got %s"):format(name, what, tostring(v)))
  end
end

local function probability(name, what, v)
  if type(v) ~= "number" or v < 0 or v > 1 then
    raise(("%s: %s must be a number between 0 and 1, got %s"):format(name, what, tostring(v)))
  end
end

local function boolean(name, what, v)
  if type(v) ~= "boolean" then
    raise(("%s: %s must be a boolean, got %s"):format(name, what, tostring(v)))
  end
end

local function check_tensor(name, what, v)
  if not pt.is_tensor(v) then
    raise(("%s: %s must be a tensor, got %s"):format(name, what, type(v)))
  end
end

local function is_float(t)
  local dt = t:dtype()
  return dt == "float32" or dt == "float64"
end

-- input and state must have the parameters' dtype
local function check_dtype(name, what, t, param)
  if t:dtype() ~= param:dtype() then
    raise(("%s: %s dtype %s does not match the parameters' %s (convert with m:double() or m:float(), or t:to(dtype))")
      :format(name, what, t:dtype(), param:dtype()))
  end
end

-- a boolean mask (true = masked out) or a float mask as an additive float mask
local function additive_mask(name, what, m, dtype, masked_when)
  -- torch's deprecated byte attn_mask (its key_padding_mask must be bool or floating)
  if m:dtype() == "uint8" and what == "attn_mask" then m = m:ne(0) end
  local dt = m:dtype()
  if dt == "bool" then
    local blocked = masked_when and m or m:logical_not()
    return pt.zeros(m:size(), {dtype = dtype}):masked_fill(blocked, -math.huge)
  end
  if dt == "float32" or dt == "float64" then
    return dt == dtype and m or m:to(dtype)
  end
  raise(("%s: %s must be a bool or floating tensor, got dtype %s"):format(name, what, dt))
end

-- ------------------------------------------------------------------ cells

local function step_rnn(x_proj, h, w_hh, b_hh, relu)
  local pre = x_proj + nn.linear(h, w_hh, b_hh)
  return relu and nn.relu(pre) or pre:tanh()
end

-- gates i, f, g, o (PyTorch's order); returns h', c'. The element-wise part of the step is one
-- fused op (lib/nn_rnn.c) whose output holds h' then c' in each row.
local function step_lstm(x_proj, h, c, w_hh, b_hh, hidden, w_hr)
  local hc = pt._lstm_cell(x_proj, nn.linear(h, w_hh, b_hh), c)
  local d = hc:dim()
  local h2, c2 = hc:narrow(d, 1, hidden), hc:narrow(d, hidden + 1, hidden)
  if w_hr then h2 = nn.linear(h2, w_hr) end
  return h2, c2
end

-- gates r, z, n (PyTorch's order), the reset gate applied to (W_hn h + b_hn): one fused op
local function step_gru(x_proj, h, w_hh, b_hh, hidden)
  return pt._gru_cell(x_proj, nn.linear(h, w_hh, b_hh), h)
end

local GATES = {RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3}

local CELL_OPTS = set_of {"bias", "nonlinearity", "dtype"}

local RNNCellBase = Module:extend("_RNNCellBase")
nn._RNNCellBase = RNNCellBase
doc(RNNCellBase, "nn._RNNCellBase: what RNNCell, LSTMCell and GRUCell share (parameters, initialisation, printing);\n"
  .. "  internal: use nn.RNNCell, nn.LSTMCell or nn.GRUCell.")

function RNNCellBase:_setup(name, input_size, hidden_size, opts, gates)
  positive(name, "input_size", input_size)
  positive(name, "hidden_size", hidden_size)
  local bias = opts.bias
  if bias == nil then bias = true end
  boolean(name, "bias", bias)
  self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
  local dt = opts.dtype or pt.get_default_dtype()
  self.weight_ih = nn.Parameter(pt.empty(gates * hidden_size, input_size, {dtype = dt}))
  self.weight_hh = nn.Parameter(pt.empty(gates * hidden_size, hidden_size, {dtype = dt}))
  if bias then
    self.bias_ih = nn.Parameter(pt.empty(gates * hidden_size, {dtype = dt}))
    self.bias_hh = nn.Parameter(pt.empty(gates * hidden_size, {dtype = dt}))
  end
  self:reset_parameters()
end

function RNNCellBase:reset_parameters()
  local stdv = 1 / math.sqrt(self.hidden_size)
  for _, p in ipairs(self:parameters()) do init.uniform_(p, -stdv, stdv) end
end
doc(RNNCellBase.reset_parameters, "cell:reset_parameters(): draws every weight and bias again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)),\n"
  .. "  in place, as the constructor does (PyTorch's initialisation).")

function RNNCellBase:extra_repr()
  local s = ("%d, %d"):format(self.input_size, self.hidden_size)
  if not self.bias then s = s .. ", bias=false" end
  if self.nonlinearity and self.nonlinearity ~= "tanh" then
    s = s .. ", nonlinearity='" .. self.nonlinearity .. "'"
  end
  return s
end

-- input {N,in} or {in}; returns the input as {N,in}, whether it was batched, and N
local function cell_input(self, name, x)
  check_tensor(name, "input", x)
  if x:dim() ~= 1 and x:dim() ~= 2 then
    raise(("%s: expected input of 1 (unbatched) or 2 dimensions {N,input_size}, got shape %s")
      :format(name, shape_str(x)))
  end
  if x:size(x:dim()) ~= self.input_size then
    raise(("%s: input has %d features, expected input_size %d (input shape %s)")
      :format(name, x:size(x:dim()), self.input_size, shape_str(x)))
  end
  check_dtype(name, "input", x, self._parameters.weight_ih)
  local batched = x:dim() == 2
  if not batched then x = x:unsqueeze(1) end
  return x, batched, x:size(1)
end

local function cell_state(name, what, h, batched, n, hidden, x)
  if h == nil then return pt.zeros(n, hidden, {dtype = x:dtype()}) end
  check_tensor(name, what, h)
  local want = batched and {n, hidden} or {hidden}
  if shape_str(h) ~= dims_str(want) then
    raise(("%s: %s has shape %s, expected %s"):format(name, what, shape_str(h), dims_str(want)))
  end
  if h:dtype() ~= x:dtype() then
    raise(("%s: %s dtype %s does not match the input's %s"):format(name, what, h:dtype(), x:dtype()))
  end
  return batched and h or h:unsqueeze(1)
end

local RNNCell = RNNCellBase:extend("RNNCell")
nn.RNNCell = RNNCell
function RNNCell:__init(input_size, hidden_size, opts)
  opts = check_opts("RNNCell", opts, CELL_OPTS)
  local nl = opts.nonlinearity or "tanh"
  if nl ~= "tanh" and nl ~= "relu" then
    raise(("RNNCell: nonlinearity must be 'tanh' or 'relu', got '%s'"):format(tostring(nl)))
  end
  self.nonlinearity = nl
  self:_setup("RNNCell", input_size, hidden_size, opts, 1)
end
function RNNCell:forward(x, hx)
  local p = self._parameters
  local batched, n
  x, batched, n = cell_input(self, "RNNCell:forward", x)
  local h = cell_state("RNNCell:forward", "hx", hx, batched, n, self.hidden_size, x)
  h = step_rnn(nn.linear(x, p.weight_ih, p.bias_ih), h, p.weight_hh, p.bias_hh, self.nonlinearity == "relu")
  return batched and h or h:squeeze(1)
end
doc(RNNCell, [[nn.RNNCell(input_size, hidden_size[, {bias=true, nonlinearity="tanh", dtype="float32"}])
  One step of an Elman RNN: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu.
  cell(x[, h]) -> h'. x {N,input_size} (or {input_size} unbatched), h {N,hidden_size} (or
  {hidden_size}; zeros when omitted). Parameters as PyTorch's: weight_ih {hidden,input},
  weight_hh {hidden,hidden}, bias_ih, bias_hh {hidden}, all from U(-1/sqrt(hidden), 1/sqrt(hidden)).]])

local LSTMCell = RNNCellBase:extend("LSTMCell")
nn.LSTMCell = LSTMCell
function LSTMCell:__init(input_size, hidden_size, opts)
  opts = check_opts("LSTMCell", opts, set_of {"bias", "dtype"})
  self:_setup("LSTMCell", input_size, hidden_size, opts, 4)
end
function LSTMCell:forward(x, state)
  local p = self._parameters
  local name = "LSTMCell:forward"
  local batched, n
  x, batched, n = cell_input(self, name, x)
  local h, c
  if state ~= nil then
    if type(state) ~= "table" or pt.is_tensor(state) or state[1] == nil or state[2] == nil then
      raise(name .. ": the state must be a table {h, c} of two tensors (PyTorch's tuple (h, c)), got "
        .. (pt.is_tensor(state) and "a tensor" or type(state)))
    end
    h = cell_state(name, "h", state[1], batched, n, self.hidden_size, x)
    c = cell_state(name, "c", state[2], batched, n, self.hidden_size, x)
  else
    h = cell_state(name, "h", nil, batched, n, self.hidden_size, x)
    c = h
  end
  h, c = step_lstm(nn.linear(x, p.weight_ih, p.bias_ih), h, c, p.weight_hh, p.bias_hh, self.hidden_size)
  if not batched then return h:squeeze(1), c:squeeze(1) end
  return h, c
end
doc(LSTMCell, [[nn.LSTMCell(input_size, hidden_size[, {bias=true, dtype="float32"}])
  One LSTM step. cell(x[, {h, c}]) -> h', c' (two values; PyTorch's tuple (h, c) is the table
  {h, c} here): local h, c = cell(x, {h, c}). x {N,input_size} or {input_size} unbatched;
  h, c {N,hidden_size} (zeros when the state is omitted). Gates in PyTorch's order i, f, g, o:
  weight_ih {4*hidden,input}, weight_hh {4*hidden,hidden}, bias_ih, bias_hh {4*hidden}.
  c' = f*c + i*g, h' = o*tanh(c'). Init U(-1/sqrt(hidden), 1/sqrt(hidden)).]])

local GRUCell = RNNCellBase:extend("GRUCell")
nn.GRUCell = GRUCell
function GRUCell:__init(input_size, hidden_size, opts)
  opts = check_opts("GRUCell", opts, set_of {"bias", "dtype"})
  self:_setup("GRUCell", input_size, hidden_size, opts, 3)
end
function GRUCell:forward(x, hx)
  local p = self._parameters
  local batched, n
  x, batched, n = cell_input(self, "GRUCell:forward", x)
  local h = cell_state("GRUCell:forward", "hx", hx, batched, n, self.hidden_size, x)
  h = step_gru(nn.linear(x, p.weight_ih, p.bias_ih), h, p.weight_hh, p.bias_hh, self.hidden_size)
  return batched and h or h:squeeze(1)
end
doc(GRUCell, [[nn.GRUCell(input_size, hidden_size[, {bias=true, dtype="float32"}])
  One GRU step. cell(x[, h]) -> h'. Gates in PyTorch's order r, z, n:
  r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r*(W_hn h + b_hn)),
  h' = (1-z)*n + z*h. weight_ih {3*hidden,input}, weight_hh {3*hidden,hidden}, bias_ih, bias_hh
  {3*hidden}; init U(-1/sqrt(hidden), 1/sqrt(hidden)). x {N,input} or {input}; h zeros when omitted.]])

-- ------------------------------------------------------------------ PackedSequence

-- nn.utils.rnn: a batch of sequences of different lengths packed time step by time step
-- (PyTorch's layout): data {sum(lengths),*} holds time step 1 of every sequence that has one,
-- then step 2, ...; batch_sizes {T} (int64) how many sequences are at each step, non-increasing;
-- the sequences sorted by decreasing length, sorted_indices (1-based, int64) the original
-- position of each sorted sequence and unsorted_indices its inverse (both nil when the input
-- was sorted already, enforce_sorted=true).
local rnn_utils = {}

local PackedSequence = {__name = "PackedSequence"}
PackedSequence.__index = PackedSequence
rnn_utils.PackedSequence = PackedSequence

local function is_packed(v)
  local mt = type(v) == "table" and getmetatable(v)
  return mt == PackedSequence or (type(mt) == "table" and rawget(mt, "__name") == "PackedSequence")
end

local function what_of(v)
  if pt.is_tensor(v) then return "a tensor" end
  return type(v)
end

-- "a tensor of dtype float32, shape {3}" for an index tensor of the wrong kind
local function tensor_kind(v)
  if not pt.is_tensor(v) then return type(v) end
  return ("a tensor of dtype %s, shape %s"):format(v:dtype(), shape_str(v))
end

local function int64_tensor(list) return pt.tensor(list, {dtype = "int64"}) end

-- the Lua integers of a 1-D int64 tensor
local function int_list(t)
  local out = t:tolist()
  for i, v in ipairs(out) do out[i] = math.tointeger(v) end
  return out
end

-- inverse of a 1-based permutation (a Lua list)
local function invert(perm)
  local inv = {}
  for i, p in ipairs(perm) do inv[p] = i end
  return inv
end

-- an index tensor (sorted_indices, unsorted_indices) of a PackedSequence: nil, or a permutation
-- of 1..n as a 1-D int64 tensor; returns its Lua list
local function check_permutation(name, what, t, n)
  if t == nil then return nil end
  if not pt.is_tensor(t) or t:dtype() ~= "int64" or t:dim() ~= 1 then
    raise(("%s: %s must be a 1-D int64 tensor, got %s"):format(name, what, tensor_kind(t)))
  end
  local list, seen = int_list(t), {}
  local ok = #list == n
  for _, v in ipairs(list) do
    if v < 1 or v > n or seen[v] then ok = false break end
    seen[v] = true
  end
  if not ok then
    raise(("%s: %s must be a permutation of 1..%d (the batch size batch_sizes[1]), got %s")
      :format(name, what, n, dims_str(list)))
  end
  return list
end

local function new_packed(data, batch_sizes, sorted_indices, unsorted_indices)
  return setmetatable({data = data, batch_sizes = batch_sizes, sorted_indices = sorted_indices,
    unsorted_indices = unsorted_indices}, PackedSequence)
end

function PackedSequence.new(data, batch_sizes, sorted_indices, unsorted_indices)
  local name = "PackedSequence"
  check_tensor(name, "data", data)
  if data:dim() < 1 then raise(name .. ": data must have at least 1 dimension {sum(lengths),...}, got shape {}") end
  if not pt.is_tensor(batch_sizes) or batch_sizes:dtype() ~= "int64" or batch_sizes:dim() ~= 1
      or batch_sizes:numel() == 0 then
    raise(("%s: batch_sizes must be a non-empty 1-D int64 tensor, got %s"):format(name, tensor_kind(batch_sizes)))
  end
  local bs, total = int_list(batch_sizes), 0
  for t, b in ipairs(bs) do
    if b < 1 or (t > 1 and b > bs[t - 1]) then
      raise(("%s: batch_sizes must be positive and non-increasing, got %s"):format(name, dims_str(bs)))
    end
    total = total + b
  end
  if data:size(1) ~= total then
    raise(("%s: data has %d rows (shape %s), batch_sizes %s sum to %d"):format(name, data:size(1),
      shape_str(data), dims_str(bs), total))
  end
  local sorted = check_permutation(name, "sorted_indices", sorted_indices, bs[1])
  local unsorted = check_permutation(name, "unsorted_indices", unsorted_indices, bs[1])
  if unsorted and sorted == nil then
    raise(name .. ": unsorted_indices given without sorted_indices")
  end
  if sorted and unsorted == nil then unsorted_indices = int64_tensor(invert(sorted)) end
  if sorted and unsorted then
    for i, v in ipairs(sorted) do
      if unsorted[v] ~= i then
        raise(("%s: unsorted_indices %s is not the inverse of sorted_indices %s"):format(name, dims_str(unsorted),
          dims_str(sorted)))
      end
    end
  end
  return new_packed(data, batch_sizes, sorted_indices, unsorted_indices)
end
setmetatable(PackedSequence, {__call = function(_, ...) return PackedSequence.new(...) end,
  __tostring = function() return "class PackedSequence" end})

function PackedSequence:to(...)
  return new_packed(self.data:to(...), self.batch_sizes, self.sorted_indices, self.unsorted_indices)
end
function PackedSequence:double() return self:to("float64") end
function PackedSequence:float() return self:to("float32") end

function PackedSequence:__tostring()
  local function idx(t) return t and dims_str(int_list(t)) or "nil" end
  return ("PackedSequence(data=%s %s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)")
    :format(self.data:dtype(), shape_str(self.data), idx(self.batch_sizes), idx(self.sorted_indices),
      idx(self.unsorted_indices))
end

doc(PackedSequence, [=[nn.utils.rnn.PackedSequence(data, batch_sizes[, sorted_indices[, unsorted_indices]]): PyTorch's PackedSequence
  A batch of sequences of different lengths, packed time step by time step; what
  nn.utils.rnn.pack_padded_sequence and pack_sequence return and nn.RNN, nn.LSTM and nn.GRU take and
  return. Fields, as PyTorch's:
    data              {sum(lengths),*}: time step 1 of every sequence, then step 2 of the sequences
                      that have one, ... (the sequences sorted by decreasing length)
    batch_sizes       {T} int64 (T the longest length): how many sequences have step t
    sorted_indices    {N} int64, 1-BASED (PyTorch's are 0-based): the original batch position of each
                      sorted sequence; nil when the input was sorted already (enforce_sorted=true)
    unsorted_indices  its inverse permutation (computed when omitted); nil with sorted_indices
  Build one with pack_padded_sequence or pack_sequence; the constructor checks the fields
  (batch_sizes positive and non-increasing, summing to data's rows; the indices permutations).]=])
doc(PackedSequence.new, "nn.utils.rnn.PackedSequence.new(data, batch_sizes[, sorted_indices[, unsorted_indices]]): the constructor\n"
  .. "  (also nn.utils.rnn.PackedSequence(...)); see help(nn.utils.rnn.PackedSequence).")
doc(PackedSequence.to, "packed:to(...) -> a PackedSequence whose data is packed.data:to(...) (a dtype such as \"float64\");\n"
  .. "  batch_sizes and the indices are kept.")
doc(PackedSequence.double, "packed:double() -> packed:to(\"float64\").")
doc(PackedSequence.float, "packed:float() -> packed:to(\"float32\").")

-- ------------------------------------------------------------------ RNN, LSTM, GRU

local RNNBase = Module:extend("_RNNBase")
nn._RNNBase = RNNBase
doc(RNNBase, "nn._RNNBase: what RNN, LSTM and GRU share (parameters per layer and direction, the time loop);\n"
  .. "  internal: use nn.RNN, nn.LSTM or nn.GRU.")

local RNN_OPTS = {"num_layers", "bias", "batch_first", "dropout", "bidirectional", "dtype"}

function RNNBase:_setup(name, mode, input_size, hidden_size, opts)
  positive(name, "input_size", input_size)
  positive(name, "hidden_size", hidden_size)
  local num_layers = opts.num_layers or 1
  positive(name, "num_layers", num_layers)
  local bias, batch_first, bidirectional = opts.bias, opts.batch_first or false, opts.bidirectional or false
  if bias == nil then bias = true end
  boolean(name, "bias", bias)
  boolean(name, "batch_first", batch_first)
  boolean(name, "bidirectional", bidirectional)
  local dropout = opts.dropout or 0
  probability(name, "dropout", dropout)
  local proj_size = opts.proj_size or 0
  if math.type(proj_size) ~= "integer" or proj_size < 0 then
    raise(("%s: proj_size must be a non-negative integer, got %s"):format(name, tostring(proj_size)))
  end
  if proj_size >= hidden_size then
    raise(("%s: proj_size has to be smaller than hidden_size, got proj_size=%d, hidden_size=%d")
      :format(name, proj_size, hidden_size))
  end
  self.mode = mode
  self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
  self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
  self.proj_size = proj_size
  local gates = GATES[mode]
  local dirs = bidirectional and 2 or 1
  local real_hidden = proj_size > 0 and proj_size or hidden_size
  local dt = opts.dtype or pt.get_default_dtype()
  local names = {}
  for layer = 0, num_layers - 1 do
    for dir = 0, dirs - 1 do
      local sfx = "_l" .. layer .. (dir == 1 and "_reverse" or "")
      local layer_in = layer == 0 and input_size or real_hidden * dirs
      self["weight_ih" .. sfx] = nn.Parameter(pt.empty(gates * hidden_size, layer_in, {dtype = dt}))
      self["weight_hh" .. sfx] = nn.Parameter(pt.empty(gates * hidden_size, real_hidden, {dtype = dt}))
      local e = {w_ih = "weight_ih" .. sfx, w_hh = "weight_hh" .. sfx}
      if bias then
        self["bias_ih" .. sfx] = nn.Parameter(pt.empty(gates * hidden_size, {dtype = dt}))
        self["bias_hh" .. sfx] = nn.Parameter(pt.empty(gates * hidden_size, {dtype = dt}))
        e.b_ih, e.b_hh = "bias_ih" .. sfx, "bias_hh" .. sfx
      end
      if proj_size > 0 then
        self["weight_hr" .. sfx] = nn.Parameter(pt.empty(proj_size, hidden_size, {dtype = dt}))
        e.w_hr = "weight_hr" .. sfx
      end
      names[#names + 1] = e
    end
  end
  self._weight_names = names
  self:reset_parameters()
end

function RNNBase:reset_parameters()
  local stdv = 1 / math.sqrt(self.hidden_size)
  for _, p in ipairs(self:parameters()) do init.uniform_(p, -stdv, stdv) end
end
doc(RNNBase.reset_parameters, "rnn:reset_parameters(): draws every weight and bias again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)),\n"
  .. "  in place, as the constructor does (PyTorch's initialisation).")

function RNNBase:flatten_parameters() end
doc(RNNBase.flatten_parameters, "rnn:flatten_parameters(): does nothing (PyTorch's packs the weights for cuDNN); kept so PyTorch code runs unchanged.")

function RNNBase:extra_repr()
  local s = ("%d, %d"):format(self.input_size, self.hidden_size)
  if self.proj_size ~= 0 then s = s .. ", proj_size=" .. self.proj_size end
  if self.num_layers ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
  if self.mode == "RNN_RELU" then s = s .. ", nonlinearity='relu'" end
  if not self.bias then s = s .. ", bias=false" end
  if self.batch_first then s = s .. ", batch_first=true" end
  if self.dropout ~= 0 then s = s .. ", dropout=" .. self.dropout end
  if self.bidirectional then s = s .. ", bidirectional=true" end
  return s
end

local function check_state(name, what, h, want, x)
  check_tensor(name, what, h)
  if shape_str(h) ~= dims_str(want) then
    raise(("%s: expected %s of shape %s, got %s"):format(name, what, dims_str(want), shape_str(h)))
  end
  if h:dtype() ~= x:dtype() then
    raise(("%s: %s dtype %s does not match the input's %s"):format(name, what, h:dtype(), x:dtype()))
  end
end

-- one time step of the layer's cell: x_proj the input's projection (x W_ih^T + b_ih)
local function cell_step(mode, xt, h, c, w_hh, b_hh, hidden, w_hr)
  if mode == "LSTM" then return step_lstm(xt, h, c, w_hh, b_hh, hidden, w_hr) end
  if mode == "GRU" then return step_gru(xt, h, w_hh, b_hh, hidden) end
  return step_rnn(xt, h, w_hh, b_hh, mode == "RNN_RELU")
end

-- one layer in one direction over x {L,N,in}; returns the outputs {L,N,H_out} and the last state
function RNNBase:_run_direction(x, e, reverse, h, c)
  local p = self._parameters
  local mode, hidden = self.mode, self.hidden_size
  local w_hh, b_hh, w_hr = p[e.w_hh], e.b_hh and p[e.b_hh], e.w_hr and p[e.w_hr]
  local proj = nn.linear(x, p[e.w_ih], e.b_ih and p[e.b_ih]) -- every time step in one product
  local steps = x:size(1)
  local outs = {}
  for s = 1, steps do
    local t = reverse and steps + 1 - s or s
    h, c = cell_step(mode, proj:select(1, t), h, c, w_hh, b_hh, hidden, w_hr)
    outs[t] = h
  end
  return pt.stack(outs, 1), h, c
end

-- one layer in one direction over packed data x {sum(lengths),in} with batch sizes bs (a Lua
-- list; step t's rows start after off[t]), from the states h0, c0 {bs[1],*}; returns the output
-- data {sum(lengths),H_out} and each sequence's state after its own last step (PyTorch's
-- packed semantics: the forward direction stops a sequence at its length, the reverse one
-- starts it there from its initial state)
function RNNBase:_run_packed(x, e, reverse, h0, c0, bs, off)
  local p = self._parameters
  local mode, hidden = self.mode, self.hidden_size
  local w_hh, b_hh, w_hr = p[e.w_hh], e.b_hh and p[e.b_hh], e.w_hr and p[e.w_hr]
  local proj = nn.linear(x, p[e.w_ih], e.b_ih and p[e.b_ih])
  local steps = #bs
  local outs = {}
  local h, c
  if not reverse then
    -- rows past a step's batch size are done: their states are put aside, last ones first
    local done_h, done_c = {}, {}
    local cur = bs[1]
    h, c = h0, c0
    for t = 1, steps do
      local nb = bs[t]
      if nb < cur then
        table.insert(done_h, 1, h:narrow(1, nb + 1, cur - nb))
        h = h:narrow(1, 1, nb)
        if c then
          table.insert(done_c, 1, c:narrow(1, nb + 1, cur - nb))
          c = c:narrow(1, 1, nb)
        end
        cur = nb
      end
      h, c = cell_step(mode, proj:narrow(1, off[t] + 1, nb), h, c, w_hh, b_hh, hidden, w_hr)
      outs[t] = h
    end
    if #done_h > 0 then
      table.insert(done_h, 1, h)
      h = pt.cat(done_h, 1)
      if c then
        table.insert(done_c, 1, c)
        c = pt.cat(done_c, 1)
      end
    end
  else
    -- sequences join (from their initial state) at the step their length reaches
    local cur = 0
    for t = steps, 1, -1 do
      local nb = bs[t]
      if nb > cur then
        local hn = h0:narrow(1, cur + 1, nb - cur)
        h = h and pt.cat({h, hn}, 1) or hn
        if c0 then
          local cn = c0:narrow(1, cur + 1, nb - cur)
          c = c and pt.cat({c, cn}, 1) or cn
        end
        cur = nb
      end
      h, c = cell_step(mode, proj:narrow(1, off[t] + 1, nb), h, c, w_hh, b_hh, hidden, w_hr)
      outs[t] = h
    end
  end
  return steps > 1 and pt.cat(outs, 1) or outs[1], h, c
end

-- the initial states h0 (and c0 for an LSTM) from hx, checked: {D*num_layers,n,*} batched,
-- {D*num_layers,*} unbatched (returned as {D*num_layers,1,*}); nil when hx is nil
function RNNBase:_initial_state(name, hx, batched, n, x)
  if hx == nil then return nil, nil end
  local dirs = self.bidirectional and 2 or 1
  local real_hidden = self.proj_size > 0 and self.proj_size or self.hidden_size
  local nstates = self.num_layers * dirs
  local is_lstm = self.mode == "LSTM"
  local hx_h, hx_c = hx, nil
  if is_lstm then
    if type(hx) ~= "table" or pt.is_tensor(hx) or hx[1] == nil or hx[2] == nil then
      raise(name .. ": the initial state must be a table {h0, c0} of two tensors (PyTorch's tuple (h0, c0)), got "
        .. (pt.is_tensor(hx) and "a tensor" or type(hx)))
    end
    hx_h, hx_c = hx[1], hx[2]
  end
  local wh = batched and {nstates, n, real_hidden} or {nstates, real_hidden}
  check_state(name, is_lstm and "h0" or "hx", hx_h, wh, x)
  local h0, c0 = batched and hx_h or hx_h:unsqueeze(2), nil
  if is_lstm then
    local wc = batched and {nstates, n, self.hidden_size} or {nstates, self.hidden_size}
    check_state(name, "c0", hx_c, wc, x)
    c0 = batched and hx_c or hx_c:unsqueeze(2)
  end
  return h0, c0
end

-- input features, floating dtype, the parameters' dtype
function RNNBase:_check_input_type(name, x)
  if not is_float(x) then
    raise(("%s: input must be a floating tensor, got dtype %s"):format(name, x:dtype()))
  end
  if x:size(x:dim()) ~= self.input_size then
    raise(("%s: input has %d features, expected input_size %d (input shape %s)")
      :format(name, x:size(x:dim()), self.input_size, shape_str(x)))
  end
  check_dtype(name, "input", x, self._parameters[self._weight_names[1].w_ih])
end

-- the layers over a PackedSequence: returns a PackedSequence (same batch_sizes and indices) and
-- the final states, their batch in the original order (PyTorch's permute_hidden)
function RNNBase:_forward_packed(name, packed, hx)
  local x = packed.data
  if not pt.is_tensor(x) or x:dim() ~= 2 then
    raise(("%s: a PackedSequence's data must be 2-D {sum(lengths),input_size}, got %s"):format(name,
      pt.is_tensor(x) and "shape " .. shape_str(x) or type(x)))
  end
  self:_check_input_type(name, x)
  local bs = int_list(packed.batch_sizes)
  local off, total = {}, 0
  for t, b in ipairs(bs) do off[t], total = total, total + b end
  if total ~= x:size(1) then
    raise(("%s: the PackedSequence's data has %d rows (shape %s), its batch_sizes %s sum to %d")
      :format(name, x:size(1), shape_str(x), dims_str(bs), total))
  end
  local n = bs[1]
  local sorted, unsorted = packed.sorted_indices, packed.unsorted_indices
  local h0, c0 = self:_initial_state(name, hx, true, n, x)
  if sorted then
    if h0 then h0 = h0:index_select(2, sorted) end
    if c0 then c0 = c0:index_select(2, sorted) end
  end
  local dirs = self.bidirectional and 2 or 1
  local real_hidden = self.proj_size > 0 and self.proj_size or self.hidden_size
  local is_lstm = self.mode == "LSTM"
  local hs, cs = {}, {}
  local layer_in = x
  for layer = 1, self.num_layers do
    local outs = {}
    for dir = 1, dirs do
      local k = (layer - 1) * dirs + dir
      local h = h0 and h0:select(1, k) or pt.zeros(n, real_hidden, {dtype = x:dtype()})
      local c
      if is_lstm then c = c0 and c0:select(1, k) or pt.zeros(n, self.hidden_size, {dtype = x:dtype()}) end
      outs[dir], hs[k], cs[k] = self:_run_packed(layer_in, self._weight_names[k], dir == 2, h, c, bs, off)
    end
    layer_in = dirs == 2 and pt.cat(outs, 2) or outs[1]
    if self.dropout > 0 and self.training and layer < self.num_layers then
      layer_in = nn.dropout(layer_in, self.dropout, true)
    end
  end
  local h_n = pt.stack(hs, 1)
  local c_n = is_lstm and pt.stack(cs, 1) or nil
  if unsorted then
    h_n = h_n:index_select(2, unsorted)
    if c_n then c_n = c_n:index_select(2, unsorted) end
  end
  local output = new_packed(layer_in, packed.batch_sizes, sorted, unsorted)
  if is_lstm then return output, {h_n, c_n} end
  return output, h_n
end

function RNNBase:_forward(name, x, hx)
  if is_packed(x) then return self:_forward_packed(name, x, hx) end
  if not pt.is_tensor(x) then
    raise(("%s: input must be a tensor or a PackedSequence, got %s"):format(name, type(x)))
  end
  if x:dim() ~= 2 and x:dim() ~= 3 then
    raise(("%s: expected input of 3 dimensions (%s) or 2 (unbatched {L,input_size}), got shape %s")
      :format(name, self.batch_first and "{N,L,input_size}" or "{L,N,input_size}", shape_str(x)))
  end
  self:_check_input_type(name, x)
  if x:size(x:dim() == 3 and not self.batch_first and 1 or x:dim() - 1) == 0 then
    raise(("%s: the input has no time steps (input shape %s)"):format(name, shape_str(x)))
  end
  local batched = x:dim() == 3
  if not batched then
    x = x:unsqueeze(2)
  elseif self.batch_first then
    x = x:transpose(1, 2)
  end
  local n = x:size(2)
  local dirs = self.bidirectional and 2 or 1
  local real_hidden = self.proj_size > 0 and self.proj_size or self.hidden_size
  local is_lstm = self.mode == "LSTM"
  local h0, c0 = self:_initial_state(name, hx, batched, n, x)
  local hs, cs = {}, {}
  local layer_in = x
  for layer = 1, self.num_layers do
    local outs = {}
    for dir = 1, dirs do
      local k = (layer - 1) * dirs + dir
      local h = h0 and h0:select(1, k) or pt.zeros(n, real_hidden, {dtype = x:dtype()})
      local c
      if is_lstm then c = c0 and c0:select(1, k) or pt.zeros(n, self.hidden_size, {dtype = x:dtype()}) end
      local out
      out, h, c = self:_run_direction(layer_in, self._weight_names[k], dir == 2, h, c)
      outs[dir], hs[k], cs[k] = out, h, c
    end
    layer_in = dirs == 2 and pt.cat(outs, 3) or outs[1]
    if self.dropout > 0 and self.training and layer < self.num_layers then
      layer_in = nn.dropout(layer_in, self.dropout, true)
    end
  end
  local output, h_n = layer_in, pt.stack(hs, 1)
  local c_n = is_lstm and pt.stack(cs, 1) or nil
  if not batched then
    output, h_n = output:squeeze(2), h_n:squeeze(2)
    if c_n then c_n = c_n:squeeze(2) end
  elseif self.batch_first then
    output = output:transpose(1, 2)
  end
  if is_lstm then return output, {h_n, c_n} end
  return output, h_n
end

local RNN = RNNBase:extend("RNN")
nn.RNN = RNN
local RNN_ALLOWED = set_of(RNN_OPTS)
RNN_ALLOWED.nonlinearity = true
function RNN:__init(input_size, hidden_size, opts)
  opts = check_opts("RNN", opts, RNN_ALLOWED)
  local nl = opts.nonlinearity or "tanh"
  if nl ~= "tanh" and nl ~= "relu" then
    raise(("RNN: nonlinearity must be 'tanh' or 'relu', got '%s'"):format(tostring(nl)))
  end
  self.nonlinearity = nl
  self:_setup("RNN", nl == "tanh" and "RNN_TANH" or "RNN_RELU", input_size, hidden_size, opts)
end
function RNN:forward(x, hx) return self:_forward("RNN:forward", x, hx) end
doc(RNN, [[nn.RNN(input_size, hidden_size[, opts]): PyTorch's Elman RNN; rnn(x[, h0]) -> output, h_n
  opts: {num_layers=1, nonlinearity="tanh", bias=true, batch_first=false, dropout=0,
    bidirectional=false, dtype="float32"}
  Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu.
  rnn(x[, h0]) -> output, h_n
    x       {L,N,input_size}, or {N,L,input_size} with batch_first, or unbatched {L,input_size}
    h0      {D*num_layers,N,hidden_size} (D = 2 when bidirectional, else 1), or {D*num_layers,hidden_size}
            unbatched; zeros when omitted
    output  {L,N,D*hidden_size} (batch_first: {N,L,D*hidden_size}): the last layer's h_t, the two
            directions concatenated (forward first)
    h_n     {D*num_layers,N,hidden_size}: the final state of each layer and direction, in the order
            layer 1 forward, layer 1 reverse, layer 2 forward, ...
  dropout: applied to the output of every layer but the last, in training mode only.
  x may be a PackedSequence (nn.utils.rnn.pack_padded_sequence, pack_sequence): then output is
  one too (its data {sum(lengths),D*hidden_size}, the same batch_sizes and indices; batch_first
  plays no part), each sequence stops at its own length and h_n holds its state there (the
  reverse direction starts there); h0 and h_n {D*num_layers,N,hidden_size} in the batch's
  original order (PyTorch's: h0 is indexed by sorted_indices).
  Parameters as PyTorch's (so a PyTorch state_dict loads): weight_ih_l0 {hidden,input_size},
  weight_hh_l0 {hidden,hidden}, bias_ih_l0, bias_hh_l0 {hidden}; layers l0, l1, ... (0-based, as
  PyTorch names them); the reverse direction's end in _reverse. Init U(-1/sqrt(hidden), 1/sqrt(hidden)).]])

local LSTM = RNNBase:extend("LSTM")
nn.LSTM = LSTM
local LSTM_ALLOWED = set_of(RNN_OPTS)
LSTM_ALLOWED.proj_size = true
function LSTM:__init(input_size, hidden_size, opts)
  opts = check_opts("LSTM", opts, LSTM_ALLOWED)
  self:_setup("LSTM", "LSTM", input_size, hidden_size, opts)
end
function LSTM:forward(x, state) return self:_forward("LSTM:forward", x, state) end
doc(LSTM, [[nn.LSTM(input_size, hidden_size[, opts]): PyTorch's LSTM; lstm(x[, {h0, c0}]) -> output, {h_n, c_n}
  opts: {num_layers=1, bias=true, batch_first=false, dropout=0, bidirectional=false,
    proj_size=0, dtype="float32"}
  Long short-term memory, gates in PyTorch's order i, f, g, o:
    i,f,o = sigmoid(...), g = tanh(...), c_t = f*c_{t-1} + i*g, h_t = o*tanh(c_t)
  lstm(x[, {h0, c0}]) -> output, {h_n, c_n}
  PyTorch's tuple (h0, c0) is the table {h0, c0}: local out, state = lstm(x, {h0, c0}), then
  state[1] is h_n and state[2] is c_n (local h_n, c_n = table.unpack(state)).
    x       {L,N,input_size}, {N,L,input_size} with batch_first, or unbatched {L,input_size}
    h0, c0  {D*num_layers,N,H_out} and {D*num_layers,N,hidden_size} (D = 2 when bidirectional;
            H_out = proj_size if > 0, else hidden_size); without N when unbatched; zeros when omitted
    output  {L,N,D*H_out} (batch_first: {N,L,D*H_out}); h_n, c_n shaped as h0, c0
  dropout between layers in training mode only. proj_size > 0: h_t = (o*tanh(c_t)) W_hr^T.
  x may be a PackedSequence: output is one too, {h_n, c_n} each sequence's state at its own last
  step, as nn.RNN's (see help(nn.RNN)).
  Parameters as PyTorch's: weight_ih_l0 {4*hidden,input_size}, weight_hh_l0 {4*hidden,H_out},
  bias_ih_l0, bias_hh_l0 {4*hidden}, weight_hr_l0 {proj_size,hidden} (with proj_size), ..._reverse
  for the second direction; init U(-1/sqrt(hidden), 1/sqrt(hidden)).]])

local GRU = RNNBase:extend("GRU")
nn.GRU = GRU
function GRU:__init(input_size, hidden_size, opts)
  opts = check_opts("GRU", opts, set_of(RNN_OPTS))
  self:_setup("GRU", "GRU", input_size, hidden_size, opts)
end
function GRU:forward(x, hx) return self:_forward("GRU:forward", x, hx) end
doc(GRU, [[nn.GRU(input_size, hidden_size[, opts]): PyTorch's GRU; gru(x[, h0]) -> output, h_n
  opts: {num_layers=1, bias=true, batch_first=false, dropout=0, bidirectional=false, dtype="float32"}
  Gated recurrent unit, gates in PyTorch's order r, z, n:
    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r*(W_hn h + b_hn)), h' = (1-z)*n + z*h
  gru(x[, h0]) -> output, h_n, shapes as nn.RNN's (see help(nn.RNN)): x {L,N,input_size} (batch_first
  {N,L,input_size}, unbatched {L,input_size}), h0 and h_n {D*num_layers,N,hidden_size}; x may be a
  PackedSequence, output then one too (see help(nn.RNN)).
  Parameters as PyTorch's: weight_ih_l0 {3*hidden,input_size}, weight_hh_l0 {3*hidden,hidden},
  bias_ih_l0, bias_hh_l0 {3*hidden}, ..._reverse; init U(-1/sqrt(hidden), 1/sqrt(hidden)).]])

-- ------------------------------------------------------------------ nn.utils.rnn

-- lengths: a Lua list of integers or a 1-D integer tensor -> a Lua list
local function lengths_list(name, lengths)
  local list
  if pt.is_tensor(lengths) then
    local dt = lengths:dtype()
    if (dt ~= "int64" and dt ~= "int32" and dt ~= "int16" and dt ~= "int8" and dt ~= "uint8") or lengths:dim() ~= 1 then
      raise(("%s: lengths must be a list of integers or a 1-D int64 tensor, got %s"):format(name, tensor_kind(lengths)))
    end
    list = int_list(lengths)
  elseif type(lengths) == "table" and getmetatable(lengths) == nil then
    list = {}
    for i, v in ipairs(lengths) do
      if math.type(v) ~= "integer" then
        raise(("%s: lengths[%d] must be an integer, got %s"):format(name, i,
          type(v) == "number" and tostring(v) or type(v)))
      end
      list[i] = v
    end
  else
    raise(("%s: lengths must be a list of integers or a 1-D int64 tensor, got %s"):format(name, what_of(lengths)))
  end
  return list
end

-- the order of a stable sort by decreasing length (ties keep their order, as torch.sort's)
local function descending_order(lens)
  local order = {}
  for i = 1, #lens do order[i] = i end
  table.sort(order, function(a, b)
    if lens[a] ~= lens[b] then return lens[a] > lens[b] end
    return a < b
  end)
  return order
end

local function pack_padded(name, input, lengths, batch_first, enforce_sorted)
  check_tensor(name, "input", input)
  if input:dim() < 2 then
    raise(("%s: input must have at least 2 dimensions (%s), got shape %s"):format(name,
      batch_first and "{N,T,*} with batch_first" or "{T,N,*}", shape_str(input)))
  end
  local lens = lengths_list(name, lengths)
  local T, B = input:size(1), input:size(2)
  if batch_first then T, B = B, T end
  if B == 0 then raise(("%s: the batch has no sequences (input shape %s)"):format(name, shape_str(input))) end
  if #lens ~= B then
    raise(("%s: got %d lengths for a batch of %d sequences (input shape %s, batch_first=%s)")
      :format(name, #lens, B, shape_str(input), tostring(batch_first)))
  end
  for i, l in ipairs(lens) do
    if l < 1 then
      raise(("%s: every length must be at least 1, got %d for sequence %d (lengths %s)")
        :format(name, l, i, dims_str(lens)))
    end
    if l > T then
      raise(("%s: length %d of sequence %d exceeds the input's %d time steps (input shape %s, batch_first=%s)")
        :format(name, l, i, T, shape_str(input), tostring(batch_first)))
    end
  end
  local order
  if enforce_sorted then
    for i = 2, #lens do
      if lens[i] > lens[i - 1] then
        raise(("%s: lengths %s are not sorted in decreasing order; pass enforce_sorted=false to sort them")
          :format(name, dims_str(lens)))
      end
    end
    order = {}
    for i = 1, B do order[i] = i end
  else
    order = descending_order(lens)
  end
  local max_len = lens[order[1]]
  -- rows of input viewed as {T*N,*} ({N*T,*} with batch_first), step by step
  local idx, batch_sizes = {}, {}
  for t = 1, max_len do
    local nb = 0
    for j = 1, B do
      local b = order[j]
      if lens[b] < t then break end
      nb = j
      idx[#idx + 1] = batch_first and (b - 1) * T + t or (t - 1) * B + b
    end
    batch_sizes[t] = nb
  end
  local rest = input:size()
  table.remove(rest, 1)
  rest[1] = T * B
  local data = input:reshape(rest):index_select(1, int64_tensor(idx))
  local sorted, unsorted
  if not enforce_sorted then sorted, unsorted = int64_tensor(order), int64_tensor(invert(order)) end
  return new_packed(data, int64_tensor(batch_sizes), sorted, unsorted)
end

local function pad_seqs(name, sequences, batch_first, padding_value)
  if pt.is_tensor(sequences) then
    if sequences:dim() < 1 then raise(name .. ": sequences must be a list of tensors, got a 0-d tensor") end
    sequences = sequences:unbind(1)
  end
  if type(sequences) ~= "table" or getmetatable(sequences) ~= nil then
    raise(("%s: sequences must be a list of tensors, got %s"):format(name, what_of(sequences)))
  end
  if #sequences == 0 then raise(name .. ": sequences must be a non-empty list of tensors, got an empty list") end
  local first = sequences[1]
  local T = 0
  for i, s in ipairs(sequences) do
    if not pt.is_tensor(s) then
      raise(("%s: sequences[%d] must be a tensor, got %s"):format(name, i, type(s)))
    end
    if s:dim() < 1 then
      raise(("%s: sequences[%d] must have at least 1 dimension {L,*}, got shape {}"):format(name, i))
    end
    local a, b = s:size(), first:size()
    table.remove(a, 1)
    table.remove(b, 1)
    if s:dim() ~= first:dim() or dims_str(a) ~= dims_str(b) then
      raise(("%s: sequences[%d] has shape %s, sequences[1] %s: all must be {L_i,*} with the same trailing dimensions")
        :format(name, i, shape_str(s), shape_str(first)))
    end
    if s:dtype() ~= first:dtype() then
      raise(("%s: sequences[%d] has dtype %s, sequences[1] %s"):format(name, i, s:dtype(), first:dtype()))
    end
    T = math.max(T, s:size(1))
  end
  local padded = {}
  for i, s in ipairs(sequences) do
    local L = s:size(1)
    if L < T then
      local shape = s:size()
      shape[1] = T - L
      local fill = pt.full(shape, padding_value, {dtype = s:dtype()})
      s = L == 0 and fill or pt.cat({s, fill}, 1)
    end
    padded[i] = s
  end
  return pt.stack(padded, batch_first and 1 or 2)
end

local function check_packed(name, v)
  if not is_packed(v) then
    raise(("%s: sequence must be a PackedSequence (from nn.utils.rnn.pack_padded_sequence or pack_sequence), got %s")
      :format(name, what_of(v)))
  end
end

local function opt_boolean(name, opts, key, default)
  local v = opts[key]
  if v == nil then return default end
  boolean(name, key, v)
  return v
end

local function opt_padding(name, opts)
  local v = opts.padding_value
  if v == nil then return 0 end
  if type(v) ~= "number" then
    raise(("%s: padding_value must be a number, got %s"):format(name, what_of(v)))
  end
  return v
end

function rnn_utils.pad_sequence(sequences, opts)
  local name = "pad_sequence"
  opts = check_opts(name, opts, set_of {"batch_first", "padding_value"})
  return pad_seqs(name, sequences, opt_boolean(name, opts, "batch_first", false), opt_padding(name, opts))
end
doc(rnn_utils.pad_sequence, [[nn.utils.rnn.pad_sequence(sequences[, {batch_first=false, padding_value=0}]) -> {T,N,*} tensor
  PyTorch's: stacks a list of N tensors {L_i,*} (the same trailing dimensions and dtype), each
  padded with padding_value to the longest length T: {T,N,*}, or {N,T,*} with batch_first.
  A tensor is taken as the list of its slices along dim 1. Differentiable in every sequence.]])

function rnn_utils.pack_padded_sequence(input, lengths, opts)
  local name = "pack_padded_sequence"
  opts = check_opts(name, opts, set_of {"batch_first", "enforce_sorted"})
  return pack_padded(name, input, lengths, opt_boolean(name, opts, "batch_first", false),
    opt_boolean(name, opts, "enforce_sorted", true))
end
doc(rnn_utils.pack_padded_sequence, [[nn.utils.rnn.pack_padded_sequence(input, lengths[, {batch_first=false, enforce_sorted=true}]) -> PackedSequence
  PyTorch's: packs a padded batch input {T,N,*} ({N,T,*} with batch_first) whose sequence i has
  lengths[i] steps (1 <= lengths[i] <= T; a Lua list or a 1-D int64 tensor) into a PackedSequence
  for nn.RNN, nn.LSTM and nn.GRU (see help(nn.utils.rnn.PackedSequence)). enforce_sorted=true wants
  the lengths in decreasing order and leaves sorted_indices nil; enforce_sorted=false sorts them
  (stable, as torch.sort) and records the permutation. Differentiable in input; the padding gets
  no gradient.]])

function rnn_utils.pad_packed_sequence(sequence, opts)
  local name = "pad_packed_sequence"
  opts = check_opts(name, opts, set_of {"batch_first", "padding_value", "total_length"})
  check_packed(name, sequence)
  local batch_first = opt_boolean(name, opts, "batch_first", false)
  local padding_value = opt_padding(name, opts)
  local bs = int_list(sequence.batch_sizes)
  local T, B = #bs, bs[1]
  local total_length = opts.total_length
  if total_length ~= nil then
    if math.type(total_length) ~= "integer" then
      raise(("%s: total_length must be an integer, got %s"):format(name,
        type(total_length) == "number" and tostring(total_length) or what_of(total_length)))
    end
    if total_length < T then
      raise(("%s: total_length %d is less than the longest sequence's length %d"):format(name, total_length, T))
    end
  else
    total_length = T
  end
  local data = sequence.data
  local off, total = {}, 0
  for t, b in ipairs(bs) do off[t], total = total, total + b end
  local lens = {} -- of the sorted sequences
  for j = 1, B do lens[j] = 0 end
  for t, b in ipairs(bs) do
    for j = 1, b do lens[j] = t end
  end
  local pos = sequence.unsorted_indices and int_list(sequence.unsorted_indices) -- original -> sorted
  local rest = data:size()
  rest[1] = 1
  local src = pt.cat({data, pt.full(rest, padding_value, {dtype = data:dtype()})}, 1)
  local pad_row = total + 1
  local idx, lengths = {}, {}
  local function at(t, b)
    local j = pos and pos[b] or b
    idx[#idx + 1] = t <= lens[j] and off[t] + j or pad_row
  end
  if batch_first then
    for b = 1, B do for t = 1, total_length do at(t, b) end end
  else
    for t = 1, total_length do for b = 1, B do at(t, b) end end
  end
  for b = 1, B do lengths[b] = lens[pos and pos[b] or b] end
  local shape = data:size()
  table.remove(shape, 1)
  table.insert(shape, 1, batch_first and total_length or B)
  table.insert(shape, 1, batch_first and B or total_length)
  return src:index_select(1, int64_tensor(idx)):reshape(shape), int64_tensor(lengths)
end
doc(rnn_utils.pad_packed_sequence, [[nn.utils.rnn.pad_packed_sequence(sequence[, {batch_first=false, padding_value=0, total_length=}]) -> padded, lengths
  PyTorch's inverse of pack_padded_sequence: padded {T,N,*} ({N,T,*} with batch_first), the batch
  back in its original order (unsorted_indices), the steps past a sequence's length filled with
  padding_value; T = the longest length, or total_length (at least that). lengths: {N} int64, each
  sequence's length in the original order. Differentiable in sequence.data.]])

function rnn_utils.pack_sequence(sequences, opts)
  local name = "pack_sequence"
  opts = check_opts(name, opts, set_of {"enforce_sorted"})
  local enforce_sorted = opt_boolean(name, opts, "enforce_sorted", true)
  local padded = pad_seqs(name, sequences, false, 0)
  local lens = {}
  for i = 1, padded:size(2) do lens[i] = pt.is_tensor(sequences) and sequences:size(2) or sequences[i]:size(1) end
  return pack_padded(name, padded, lens, false, enforce_sorted)
end
doc(rnn_utils.pack_sequence, [[nn.utils.rnn.pack_sequence(sequences[, {enforce_sorted=true}]) -> PackedSequence
  PyTorch's: packs a list of tensors {L_i,*} (lengths L_i >= 1; the same trailing dimensions) as
  pack_padded_sequence(pad_sequence(sequences), lengths, {enforce_sorted=}) does. enforce_sorted=true
  wants them by decreasing length. Differentiable in every sequence.]])

function rnn_utils.unpad_sequence(padded, lengths, opts)
  local name = "unpad_sequence"
  opts = check_opts(name, opts, set_of {"batch_first"})
  local batch_first = opt_boolean(name, opts, "batch_first", false)
  check_tensor(name, "padded_sequences", padded)
  if padded:dim() < 2 then
    raise(("%s: padded_sequences must have at least 2 dimensions (%s), got shape %s"):format(name,
      batch_first and "{N,T,*} with batch_first" or "{T,N,*}", shape_str(padded)))
  end
  local lens = lengths_list(name, lengths)
  local bdim, tdim = batch_first and 1 or 2, batch_first and 2 or 1
  local B, T = padded:size(bdim), padded:size(tdim)
  if #lens ~= B then
    raise(("%s: got %d lengths for a batch of %d sequences (padded_sequences shape %s, batch_first=%s)")
      :format(name, #lens, B, shape_str(padded), tostring(batch_first)))
  end
  local out = {}
  for i, l in ipairs(lens) do
    if l < 0 or l > T then
      raise(("%s: length %d of sequence %d is not in 0..%d (the padded length; padded_sequences shape %s, batch_first=%s)")
        :format(name, l, i, T, shape_str(padded), tostring(batch_first)))
    end
    out[i] = padded:select(bdim, i):narrow(1, 1, l)
  end
  return out
end
doc(rnn_utils.unpad_sequence, [[nn.utils.rnn.unpad_sequence(padded_sequences, lengths[, {batch_first=false}]) -> list of tensors
  PyTorch's inverse of pad_sequence: sequence i is padded_sequences {T,N,*} ({N,T,*} with
  batch_first) at batch position i, its first lengths[i] steps: a tensor {lengths[i],*}.
  lengths: a Lua list of integers or a 1-D integer tensor (0 <= lengths[i] <= T). Differentiable.]])

function rnn_utils.unpack_sequence(sequence)
  local name = "unpack_sequence"
  check_packed(name, sequence)
  local padded, lengths = rnn_utils.pad_packed_sequence(sequence, {batch_first = true})
  return rnn_utils.unpad_sequence(padded, lengths, {batch_first = true})
end
doc(rnn_utils.unpack_sequence, [[nn.utils.rnn.unpack_sequence(packed) -> list of tensors
  PyTorch's inverse of pack_sequence: the sequences of a PackedSequence, in their original order,
  each {L_i,*}. Differentiable in packed.data.]])

local utils = rawget(nn, "utils")
if utils == nil then
  utils = {}
  nn.utils = utils
  doc(utils, "nn.utils: PyTorch's torch.nn.utils; rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence,\n"
    .. "  pack_sequence, unpad_sequence, unpack_sequence, PackedSequence) lives here.")
end
utils.rnn = rnn_utils
doc(rnn_utils, [[nn.utils.rnn: PyTorch's torch.nn.utils.rnn: batches of sequences of different lengths
  pad_sequence(list) pads them to one tensor; pack_padded_sequence(padded, lengths) or
  pack_sequence(list) packs them into a PackedSequence that nn.RNN, nn.LSTM and nn.GRU run over
  (each sequence stops at its own length; h_n holds each sequence's last step);
  pad_packed_sequence(packed) turns a PackedSequence back into a padded tensor and lengths;
  unpad_sequence(padded, lengths) and unpack_sequence(packed) give back the list of sequences.]])

-- ------------------------------------------------------------------ attention

local SDPA_OPTS = set_of {"attn_mask", "dropout_p", "is_causal", "scale"}

-- a tensor's dims but the last two (a Lua list)
local function lead_dims(t)
  local d = t:size()
  d[#d], d[#d - 1] = nil, nil
  return d
end

-- the broadcast of two shapes (Lua lists), or nil when they do not broadcast
local function broadcast_dims(a, b)
  local n, out = math.max(#a, #b), {}
  for i = 1, n do
    local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
    if x ~= y and x ~= 1 and y ~= 1 then return nil end
    out[i] = x == 1 and y or x
  end
  return out
end

local function causal_mask(L, S, dtype)
  local allowed = pt.ones(L, S, {dtype = "bool"}):tril()
  return pt.zeros(L, S, {dtype = dtype}):masked_fill(allowed:logical_not(), -math.huge)
end

function nn.scaled_dot_product_attention(q, k, v, opts)
  local name = "scaled_dot_product_attention"
  opts = check_opts(name, opts, SDPA_OPTS)
  check_tensor(name, "query", q)
  check_tensor(name, "key", k)
  check_tensor(name, "value", v)
  if not is_float(q) or k:dtype() ~= q:dtype() or v:dtype() ~= q:dtype() then
    raise(("%s: query, key and value must be floating tensors of one dtype, got %s, %s and %s")
      :format(name, q:dtype(), k:dtype(), v:dtype()))
  end
  if q:dim() < 2 or k:dim() < 2 or v:dim() < 2 then
    raise(("%s: query, key and value need at least 2 dimensions {...,L,E}, got shapes %s, %s, %s")
      :format(name, shape_str(q), shape_str(k), shape_str(v)))
  end
  local E, L, S = q:size(q:dim()), q:size(q:dim() - 1), k:size(k:dim() - 1)
  if k:size(k:dim()) ~= E then
    raise(("%s: query and key must have the same embedding size, got shapes %s and %s")
      :format(name, shape_str(q), shape_str(k)))
  end
  if v:size(v:dim() - 1) ~= S then
    raise(("%s: key and value must have the same sequence length, got shapes %s and %s")
      :format(name, shape_str(k), shape_str(v)))
  end
  -- the batch dims (all but the last two) of query, key and value broadcast together
  local qk = broadcast_dims(lead_dims(q), lead_dims(k))
  if qk == nil or broadcast_dims(qk, lead_dims(v)) == nil then
    raise(("%s: the batch dimensions of query, key and value do not broadcast, got shapes %s, %s, %s")
      :format(name, shape_str(q), shape_str(k), shape_str(v)))
  end
  local p = opts.dropout_p or 0
  probability(name, "dropout_p", p)
  local scale = opts.scale
  if scale == nil then
    scale = 1 / math.sqrt(E)
  elseif type(scale) ~= "number" then
    raise(("%s: scale must be a number, got %s"):format(name, what_of(scale)))
  end
  local causal = opts.is_causal
  if causal ~= nil then boolean(name, "is_causal", causal) end
  local mask = opts.attn_mask
  if mask ~= nil then
    check_tensor(name, "attn_mask", mask)
    -- the mask is added to the scores {...,L,S}: it must broadcast to that shape (not widen it)
    local want = qk
    want[#want + 1], want[#want + 2] = L, S
    local b = broadcast_dims(want, mask:size())
    if b == nil or dims_str(b) ~= dims_str(want) then
      raise(("%s: attn_mask of shape %s does not broadcast to the attention scores' shape %s")
        :format(name, shape_str(mask), dims_str(want)))
    end
  end
  local scores = q:matmul(k:transpose(-2, -1)) * scale
  if causal then
    if mask ~= nil then
      raise(name .. ": attn_mask and is_causal=true cannot be given together")
    end
    scores = scores + causal_mask(L, S, scores:dtype())
  elseif mask ~= nil then
    scores = scores + additive_mask(name, "attn_mask", mask, scores:dtype(), false)
  end
  local w = nn.softmax(scores, -1)
  if p > 0 then w = nn.dropout(w, p, true) end
  return w:matmul(v)
end
doc(nn.scaled_dot_product_attention, [[nn.scaled_dot_product_attention(query, key, value[, {attn_mask=, dropout_p=0, is_causal=false, scale=}])
  PyTorch 2.x's F.scaled_dot_product_attention: softmax(query key^T * scale + mask) value, with
  query {...,L,E}, key {...,S,E}, value {...,S,Ev} -> {...,L,Ev} (leading dims broadcast).
  scale defaults to 1/sqrt(E). attn_mask broadcasts to {...,L,S}: a BOOLEAN mask says which
  positions may be attended to (true = allowed, false = masked out), as torch's SDPA; a float
  mask is added to the scores. is_causal=true masks the upper triangle (query i attends to keys
  1..i); it cannot be combined with attn_mask. dropout_p drops attention weights ALWAYS (this is
  a function, not a module: pass 0 in evaluation). NB: nn.MultiheadAttention's boolean masks
  mean the opposite (true = masked out), as torch's nn.MultiheadAttention.
  Also nn.functional.scaled_dot_product_attention.]])
nn.functional.scaled_dot_product_attention = nn.scaled_dot_product_attention

local MHA_OPTS = set_of {"dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim",
  "batch_first", "dtype"}
local MHA_FORWARD_OPTS = set_of {"key_padding_mask", "need_weights", "attn_mask",
  "average_attn_weights", "is_causal"}

local MultiheadAttention = Module:extend("MultiheadAttention")
nn.MultiheadAttention = MultiheadAttention
function MultiheadAttention:__init(embed_dim, num_heads, opts)
  local name = "MultiheadAttention"
  opts = check_opts(name, opts, MHA_OPTS)
  positive(name, "embed_dim", embed_dim)
  positive(name, "num_heads", num_heads)
  if embed_dim % num_heads ~= 0 then
    raise(("%s: embed_dim must be divisible by num_heads, got embed_dim=%d, num_heads=%d")
      :format(name, embed_dim, num_heads))
  end
  local dropout = opts.dropout or 0
  probability(name, "dropout", dropout)
  local bias = opts.bias
  if bias == nil then bias = true end
  boolean(name, "bias", bias)
  local batch_first = opts.batch_first or false
  boolean(name, "batch_first", batch_first)
  local add_bias_kv, add_zero_attn = opts.add_bias_kv or false, opts.add_zero_attn or false
  boolean(name, "add_bias_kv", add_bias_kv)
  boolean(name, "add_zero_attn", add_zero_attn)
  local kdim, vdim = opts.kdim or embed_dim, opts.vdim or embed_dim
  positive(name, "kdim", kdim)
  positive(name, "vdim", vdim)
  self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
  self.kdim, self.vdim = kdim, vdim
  self.dropout, self.batch_first = dropout, batch_first
  self.add_zero_attn = add_zero_attn
  self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
  local dt = opts.dtype or pt.get_default_dtype()
  if self._qkv_same_embed_dim then
    self.in_proj_weight = nn.Parameter(pt.empty(3 * embed_dim, embed_dim, {dtype = dt}))
  else
    self.q_proj_weight = nn.Parameter(pt.empty(embed_dim, embed_dim, {dtype = dt}))
    self.k_proj_weight = nn.Parameter(pt.empty(embed_dim, kdim, {dtype = dt}))
    self.v_proj_weight = nn.Parameter(pt.empty(embed_dim, vdim, {dtype = dt}))
  end
  if bias then self.in_proj_bias = nn.Parameter(pt.empty(3 * embed_dim, {dtype = dt})) end
  if add_bias_kv then
    self.bias_k = nn.Parameter(pt.empty(1, 1, embed_dim, {dtype = dt}))
    self.bias_v = nn.Parameter(pt.empty(1, 1, embed_dim, {dtype = dt}))
  end
  self.out_proj = nn.Linear(embed_dim, embed_dim, {bias = bias, dtype = dt})
  self:reset_parameters()
end
function MultiheadAttention:reset_parameters()
  local p = self._parameters
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(p.in_proj_weight)
  else
    init.xavier_uniform_(p.q_proj_weight)
    init.xavier_uniform_(p.k_proj_weight)
    init.xavier_uniform_(p.v_proj_weight)
  end
  if p.in_proj_bias then
    -- nn.init.zeros_ (fill_) refuses a leaf that requires grad outside no_grad
    pt.no_grad(function()
      init.zeros_(p.in_proj_bias)
      init.zeros_(self.out_proj.bias)
    end)
  end
  if p.bias_k then
    init.xavier_normal_(p.bias_k)
    init.xavier_normal_(p.bias_v)
  end
end
doc(MultiheadAttention.reset_parameters, "mha:reset_parameters(): PyTorch's initialisation, in place: xavier_uniform_ for in_proj_weight\n"
  .. "  (or q/k/v_proj_weight), zeros for in_proj_bias and out_proj.bias, xavier_normal_ for bias_k/bias_v;\n"
  .. "  out_proj.weight keeps nn.Linear's initialisation.")
function MultiheadAttention:extra_repr()
  local s = ("embed_dim=%d, num_heads=%d"):format(self.embed_dim, self.num_heads)
  if self.dropout ~= 0 then s = s .. ", dropout=" .. self.dropout end
  if not self._qkv_same_embed_dim then s = s .. (", kdim=%d, vdim=%d"):format(self.kdim, self.vdim) end
  if self._parameters.bias_k then s = s .. ", add_bias_kv=true" end
  if self.add_zero_attn then s = s .. ", add_zero_attn=true" end
  if self.batch_first then s = s .. ", batch_first=true" end
  return s
end

local function pad_last(t, value)
  local shape = t:size()
  shape[#shape] = 1
  return pt.cat({t, pt.full(shape, value, {dtype = t:dtype()})}, t:dim())
end

-- the attention of nn.MultiheadAttention and F.multi_head_attention_forward, from st: E, H, kdim,
-- vdim, batch_first, the projections (in_proj_weight, or q/k/v_proj_weight; in_proj_bias or nil),
-- bias_k, bias_v, add_zero_attn, dropout, training, out_proj_weight, out_proj_bias, and the
-- functional's static_k, static_v ({N*H,S,head_dim} keys and values used as they are)
local function attention(name, st, query, key, value, opts)
  for _, k in ipairs {"need_weights", "average_attn_weights", "is_causal"} do
    if opts[k] ~= nil then boolean(name, k, opts[k]) end
  end
  check_tensor(name, "query", query)
  key, value = key or query, value or key or query
  check_tensor(name, "key", key)
  check_tensor(name, "value", value)
  local qd = query:dim()
  if (qd ~= 2 and qd ~= 3) or key:dim() ~= qd or value:dim() ~= qd then
    raise(("%s: query, key and value must all be 3-D (batched) or all 2-D (unbatched), got shapes %s, %s, %s")
      :format(name, shape_str(query), shape_str(key), shape_str(value)))
  end
  local E, H = st.E, st.H
  local hd = E // H
  if query:size(qd) ~= E or key:size(qd) ~= st.kdim or value:size(qd) ~= st.vdim then
    raise(("%s: expected query, key and value with %d, %d and %d features (embed_dim, kdim, vdim), got shapes %s, %s, %s")
      :format(name, E, st.kdim, st.vdim, shape_str(query), shape_str(key), shape_str(value)))
  end
  local w_in = st.in_proj_weight or st.q_proj_weight
  check_dtype(name, "query", query, w_in)
  check_dtype(name, "key", key, w_in)
  check_dtype(name, "value", value, w_in)
  local batched = qd == 3
  local kpm, attn_mask = opts.key_padding_mask, opts.attn_mask
  if batched then
    if st.batch_first then
      query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2)
    end
  else
    query, key, value = query:unsqueeze(2), key:unsqueeze(2), value:unsqueeze(2)
    if kpm ~= nil then check_tensor(name, "key_padding_mask", kpm); kpm = kpm:unsqueeze(1) end
  end
  -- now {L,N,E}, {S,N,kdim}, {S,N,vdim}
  local L, N, S = query:size(1), query:size(2), key:size(1)
  if key:size(2) ~= N or value:size(2) ~= N or value:size(1) ~= S then
    raise(("%s: key and value must have the query's batch size and one sequence length, got shapes %s, %s, %s")
      :format(name, shape_str(query), shape_str(key), shape_str(value)))
  end
  for _, w in ipairs({"static_k", "static_v"}) do
    local t = st[w]
    if t ~= nil then
      check_tensor(name, w, t)
      if t:dim() ~= 3 or t:size(1) ~= N * H or t:size(3) ~= hd then
        raise(("%s: %s must have shape {N*num_heads,S,head_dim} = {%d,S,%d}, got %s"):format(name, w, N * H, hd,
          shape_str(t)))
      end
      if st.bias_k then raise(("%s: bias_k and bias_v cannot be added to %s"):format(name, w)) end
    end
  end
  if st.static_k and st.static_v and st.static_k:size(2) ~= st.static_v:size(2) then
    raise(("%s: static_k and static_v must have one sequence length, got shapes %s and %s"):format(name,
      shape_str(st.static_k), shape_str(st.static_v)))
  end
  -- the keys' length the masks must have: static_k's when it replaces the projected keys
  if st.static_k then S = st.static_k:size(2) end
  local dtype = query:dtype()
  -- masks as additive float masks: {L,S} or {N*H,L,S}, and {N,S}
  if opts.is_causal and attn_mask == nil then attn_mask = causal_mask(L, S, dtype) end
  if attn_mask ~= nil then
    check_tensor(name, "attn_mask", attn_mask)
    local ok = (attn_mask:dim() == 2 and shape_str(attn_mask) == dims_str {L, S})
      or (attn_mask:dim() == 3 and shape_str(attn_mask) == dims_str {N * H, L, S})
    if not ok then
      raise(("%s: attn_mask must have shape {L,S} = %s or {N*num_heads,L,S} = %s, got %s")
        :format(name, dims_str {L, S}, dims_str {N * H, L, S}, shape_str(attn_mask)))
    end
    attn_mask = additive_mask(name, "attn_mask", attn_mask, dtype, true)
  end
  if kpm ~= nil then
    check_tensor(name, "key_padding_mask", kpm)
    -- torch 1.13 merges a key_padding_mask into a bool attn_mask with logical_or: a float one
    -- then masks where it is nonzero rather than being added
    local am = opts.attn_mask
    if pt.is_tensor(am) and (am:dtype() == "bool" or am:dtype() == "uint8") and kpm:is_floating_point() then
      kpm = kpm:ne(0)
    end
    if shape_str(kpm) ~= dims_str {N, S} then
      local got = batched and kpm or kpm:squeeze(1)
      raise(("%s: key_padding_mask must have shape %s, got %s")
        :format(name, batched and dims_str {N, S} or dims_str {S}, shape_str(got)))
    end
    kpm = additive_mask(name, "key_padding_mask", kpm, dtype, true)
  end
  local wq, wk, wv
  if st.in_proj_weight then
    wq = st.in_proj_weight:narrow(1, 1, E)
    wk = st.in_proj_weight:narrow(1, E + 1, E)
    wv = st.in_proj_weight:narrow(1, 2 * E + 1, E)
  else
    wq, wk, wv = st.q_proj_weight, st.k_proj_weight, st.v_proj_weight
  end
  local bq, bk, bv
  if st.in_proj_bias then
    bq = st.in_proj_bias:narrow(1, 1, E)
    bk = st.in_proj_bias:narrow(1, E + 1, E)
    bv = st.in_proj_bias:narrow(1, 2 * E + 1, E)
  end
  local q = nn.linear(query, wq, bq)
  local k = not st.static_k and nn.linear(key, wk, bk) or nil
  local v = not st.static_v and nn.linear(value, wv, bv) or nil
  if st.bias_k then
    k = pt.cat({k, st.bias_k:expand(1, N, E)}, 1)
    v = pt.cat({v, st.bias_v:expand(1, N, E)}, 1)
    if attn_mask then attn_mask = pad_last(attn_mask, 0) end
    if kpm then kpm = pad_last(kpm, 0) end
  end
  -- heads: {L,N,E} -> {N*H,L,hd}
  q = q:reshape(L, N * H, hd):transpose(1, 2)
  k = st.static_k or k:reshape(k:size(1), N * H, hd):transpose(1, 2)
  v = st.static_v or v:reshape(v:size(1), N * H, hd):transpose(1, 2)
  if st.add_zero_attn then
    k = pt.cat({k, pt.zeros(N * H, 1, hd, {dtype = dtype})}, 2)
    v = pt.cat({v, pt.zeros(N * H, 1, hd, {dtype = dtype})}, 2)
    if attn_mask then attn_mask = pad_last(attn_mask, 0) end
    if kpm then kpm = pad_last(kpm, 0) end
  end
  local S2 = k:size(2)
  local scores = (q * (1 / math.sqrt(hd))):matmul(k:transpose(2, 3)) -- {N*H,L,S2}
  if attn_mask then scores = scores + attn_mask end
  if kpm then scores = scores + kpm:reshape(N, 1, 1, S2):expand(N, H, 1, S2):reshape(N * H, 1, S2) end
  local w = nn.softmax(scores, -1)
  if st.dropout > 0 and st.training then w = nn.dropout(w, st.dropout, true) end
  local out = w:matmul(v):transpose(1, 2):reshape(L, N, E)
  out = nn.linear(out, st.out_proj_weight, st.out_proj_bias)
  local need_weights = opts.need_weights
  if need_weights == nil then need_weights = true end
  local weights
  if need_weights then
    weights = w:reshape(N, H, L, S2)
    if opts.average_attn_weights ~= false then weights = weights:mean(2) end
    if not batched then weights = weights:squeeze(1) end
  end
  if not batched then
    out = out:squeeze(2)
  elseif st.batch_first then
    out = out:transpose(1, 2)
  end
  return out, weights
end

function MultiheadAttention:forward(query, key, value, opts)
  local name = "MultiheadAttention:forward"
  opts = check_opts(name, opts, MHA_FORWARD_OPTS)
  local p = self._parameters
  return attention(name, {E = self.embed_dim, H = self.num_heads, kdim = self.kdim, vdim = self.vdim,
    batch_first = self.batch_first, in_proj_weight = p.in_proj_weight, q_proj_weight = p.q_proj_weight,
    k_proj_weight = p.k_proj_weight, v_proj_weight = p.v_proj_weight, in_proj_bias = p.in_proj_bias,
    bias_k = p.bias_k, bias_v = p.bias_v, add_zero_attn = self.add_zero_attn, dropout = self.dropout,
    training = self.training, out_proj_weight = self.out_proj.weight, out_proj_bias = self.out_proj.bias},
    query, key, value, opts)
end
doc(MultiheadAttention, [[nn.MultiheadAttention(embed_dim, num_heads[, opts]): PyTorch's multi-head attention
  opts: {dropout=0, bias=true, add_bias_kv=false, add_zero_attn=false, kdim=embed_dim,
    vdim=embed_dim, batch_first=false, dtype="float32"}
  mha(query, key, value[, {key_padding_mask=, attn_mask=, need_weights=true,
    average_attn_weights=true, is_causal=false}]) -> attn_output, attn_weights
    query {L,N,embed_dim}, key {S,N,kdim}, value {S,N,vdim} ({N,L,E} ... with batch_first, or
    unbatched {L,E}, {S,kdim}, {S,vdim}); attn_output has the query's shape.
    attn_weights {N,L,S} averaged over heads ({N,num_heads,L,S} with average_attn_weights=false;
    without N unbatched), taken after dropout as PyTorch's; nil with need_weights=false.
  Masks as torch.nn.MultiheadAttention's: a BOOLEAN mask marks what is masked OUT (true = not
  attended), a float mask is added to the scores. key_padding_mask {N,S} (unbatched {S}): true
  for padding keys. attn_mask {L,S} or {N*num_heads,L,S}. is_causal=true without attn_mask
  masks the upper triangle (torch takes is_causal only as a hint next to an attn_mask).
  NB: nn.scaled_dot_product_attention's boolean masks mean the opposite (true = allowed).
  Parameters as PyTorch's: in_proj_weight {3E,E} (q, k, v stacked; q_proj_weight, k_proj_weight,
  v_proj_weight instead when kdim or vdim differ), in_proj_bias {3E}, out_proj (an nn.Linear:
  out_proj.weight, out_proj.bias), bias_k, bias_v {1,1,E} with add_bias_kv. Init as PyTorch:
  xavier_uniform_ projections, zero biases.]])

-- F.multi_head_attention_forward: torch's functional form, its arguments positionally in torch's
-- order (nil for the ones left out) and/or from training on as a trailing options table
local MHAF_ARGS = {"query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight", "in_proj_bias",
  "bias_k", "bias_v", "add_zero_attn", "dropout_p", "out_proj_weight", "out_proj_bias", "training",
  "key_padding_mask", "need_weights", "attn_mask", "use_separate_proj_weight", "q_proj_weight", "k_proj_weight",
  "v_proj_weight", "static_k", "static_v", "average_attn_weights", "is_causal"}
local MHAF_NAMED = {}
for i = 14, #MHAF_ARGS do MHAF_NAMED[MHAF_ARGS[i]] = true end

function nn.functional.multi_head_attention_forward(...)
  local name = "multi_head_attention_forward"
  local n, args = select("#", ...), {...}
  local a = {}
  local last = args[n]
  if n > 0 and type(last) == "table" and not pt.is_tensor(last) then
    n = n - 1
    for k, v in pairs(check_opts(name, last, MHAF_NAMED)) do a[k] = v end
  end
  if n > #MHAF_ARGS then raise(("%s: too many arguments (%d at most, got %d)"):format(name, #MHAF_ARGS, n)) end
  for i = 1, n do
    local k = MHAF_ARGS[i]
    if args[i] ~= nil then
      if a[k] ~= nil then raise(("%s: %s given twice (as an argument and as an option)"):format(name, k)) end
      a[k] = args[i]
    end
  end
  for _, k in ipairs({"query", "key", "value", "out_proj_weight"}) do
    if a[k] == nil then raise(("%s: missing argument '%s'"):format(name, k)) end
    check_tensor(name, k, a[k])
  end
  positive(name, "embed_dim_to_check", a.embed_dim_to_check)
  positive(name, "num_heads", a.num_heads)
  local E, H = a.embed_dim_to_check, a.num_heads
  local q = a.query
  if q:size(q:dim()) ~= E then
    raise(("%s: was expecting embedding dimension of %d, but got %d (query shape %s)"):format(name, E,
      q:size(q:dim()), shape_str(q)))
  end
  if E % H ~= 0 then raise(("%s: embed_dim %d not divisible by num_heads %d"):format(name, E, H)) end
  for _, k in ipairs({"add_zero_attn", "training", "use_separate_proj_weight"}) do
    if a[k] ~= nil then boolean(name, k, a[k]) end
  end
  local dropout = a.dropout_p or 0
  probability(name, "dropout_p", dropout)
  local st = {E = E, H = H, batch_first = false, add_zero_attn = a.add_zero_attn or false, dropout = dropout,
    training = a.training ~= false, out_proj_weight = a.out_proj_weight, out_proj_bias = a.out_proj_bias,
    in_proj_bias = a.in_proj_bias, bias_k = a.bias_k, bias_v = a.bias_v, static_k = a.static_k,
    static_v = a.static_v}
  local kd, vd = a.key:size(a.key:dim()), a.value:size(a.value:dim())
  if a.use_separate_proj_weight then
    for _, k in ipairs({"q_proj_weight", "k_proj_weight", "v_proj_weight"}) do
      if a[k] == nil then raise(("%s: use_separate_proj_weight is true but %s is nil"):format(name, k)) end
      check_tensor(name, k, a[k])
    end
    st.q_proj_weight, st.k_proj_weight, st.v_proj_weight = a.q_proj_weight, a.k_proj_weight, a.v_proj_weight
    st.kdim, st.vdim = kd, vd
  else
    if a.in_proj_weight == nil then raise(("%s: use_separate_proj_weight is false but in_proj_weight is nil"):format(name)) end
    check_tensor(name, "in_proj_weight", a.in_proj_weight)
    st.in_proj_weight, st.kdim, st.vdim = a.in_proj_weight, E, E
  end
  if (a.bias_k == nil) ~= (a.bias_v == nil) then raise(("%s: give both bias_k and bias_v, or neither"):format(name)) end
  return attention(name, st, a.query, a.key, a.value, {key_padding_mask = a.key_padding_mask,
    need_weights = a.need_weights, attn_mask = a.attn_mask, average_attn_weights = a.average_attn_weights,
    is_causal = a.is_causal})
end
doc(nn.functional.multi_head_attention_forward, [[F.multi_head_attention_forward(query, key, value, embed_dim_to_check,
    num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
    out_proj_bias[, training=true, key_padding_mask, need_weights=true, attn_mask, use_separate_proj_weight=false,
    q_proj_weight, k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights=true])
  -> attn_output, attn_weights: torch's functional multi-head attention, what nn.MultiheadAttention runs;
  arguments in torch's order (nil for one left out), those from training on also as a trailing options
  table. query {L,N,E}, key {S,N,kdim}, value {S,N,vdim} (or unbatched {L,E}, ...; no batch_first here).
  static_k / static_v {N*num_heads,S,head_dim} replace the projected keys / values. Masks as
  nn.MultiheadAttention's (bool: true = masked out; float: added).]])

-- ------------------------------------------------------------------ Transformer

local TEL_OPTS = set_of {"dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first",
  "norm_first", "bias", "dtype"}

-- the options of an encoder or decoder layer (and nn.Transformer's), checked, defaults filled in
local function layer_settings(name, d_model, nhead, opts)
  positive(name, "d_model", d_model)
  positive(name, "nhead", nhead)
  if d_model % nhead ~= 0 then
    raise(("%s: d_model must be divisible by nhead, got d_model=%d, nhead=%d"):format(name, d_model, nhead))
  end
  local ff = opts.dim_feedforward or 2048
  positive(name, "dim_feedforward", ff)
  local dropout = opts.dropout or 0.1
  probability(name, "dropout", dropout)
  local act = opts.activation or "relu"
  if act ~= "relu" and act ~= "gelu" and type(act) ~= "function" then
    raise(("%s: activation must be 'relu', 'gelu' or a function, got %s"):format(name, tostring(act)))
  end
  local eps = opts.layer_norm_eps or 1e-5
  if type(eps) ~= "number" or eps <= 0 then
    raise(("%s: layer_norm_eps must be a positive number, got %s"):format(name, tostring(eps)))
  end
  local batch_first, norm_first = opts.batch_first or false, opts.norm_first or false
  boolean(name, "batch_first", batch_first)
  boolean(name, "norm_first", norm_first)
  local bias = opts.bias
  if bias == nil then bias = true end
  boolean(name, "bias", bias)
  return {dim_feedforward = ff, dropout = dropout, activation = act, layer_norm_eps = eps,
    batch_first = batch_first, norm_first = norm_first, bias = bias, dtype = opts.dtype or pt.get_default_dtype()}
end

-- the attention, feed-forward and norm children shared by the encoder and decoder layers,
-- registered in PyTorch's order (state_dict keys and their order are PyTorch's)
local function layer_children(self, d_model, nhead, s, decoder)
  local dt, bias, dropout = s.dtype, s.bias, s.dropout
  self.d_model, self.nhead, self.dim_feedforward = d_model, nhead, s.dim_feedforward
  self.activation = s.activation
  self.batch_first, self.norm_first, self.layer_norm_eps = s.batch_first, s.norm_first, s.layer_norm_eps
  local mha = {dropout = dropout, bias = bias, batch_first = s.batch_first, dtype = dt}
  self.self_attn = nn.MultiheadAttention(d_model, nhead, mha)
  if decoder then self.multihead_attn = nn.MultiheadAttention(d_model, nhead, mha) end
  self.linear1 = nn.Linear(d_model, s.dim_feedforward, {bias = bias, dtype = dt})
  self.dropout = nn.Dropout(dropout)
  self.linear2 = nn.Linear(s.dim_feedforward, d_model, {bias = bias, dtype = dt})
  local norm = {eps = s.layer_norm_eps, bias = bias, dtype = dt}
  self.norm1 = nn.LayerNorm(d_model, norm)
  self.norm2 = nn.LayerNorm(d_model, norm)
  if decoder then self.norm3 = nn.LayerNorm(d_model, norm) end
  self.dropout1 = nn.Dropout(dropout)
  self.dropout2 = nn.Dropout(dropout)
  if decoder then self.dropout3 = nn.Dropout(dropout) end
end

local function activate(act, h)
  if act == "relu" then return nn.relu(h) elseif act == "gelu" then return nn.gelu(h) end
  return act(h)
end

local TransformerEncoderLayer = Module:extend("TransformerEncoderLayer")
nn.TransformerEncoderLayer = TransformerEncoderLayer
function TransformerEncoderLayer:__init(d_model, nhead, opts)
  local name = "TransformerEncoderLayer"
  opts = check_opts(name, opts, TEL_OPTS)
  layer_children(self, d_model, nhead, layer_settings(name, d_model, nhead, opts), false)
end
function TransformerEncoderLayer:_sa_block(x, attn_mask, kpm, is_causal)
  local out = self.self_attn(x, x, x, {attn_mask = attn_mask, key_padding_mask = kpm,
    need_weights = false, is_causal = is_causal})
  return self.dropout1(out)
end
function TransformerEncoderLayer:_ff_block(x)
  return self.dropout2(self.linear2(self.dropout(activate(self.activation, self.linear1(x)))))
end
local TEL_FORWARD_OPTS = set_of {"src_mask", "src_key_padding_mask", "is_causal"}
function TransformerEncoderLayer:forward(src, opts)
  opts = check_opts("TransformerEncoderLayer:forward", opts, TEL_FORWARD_OPTS)
  check_tensor("TransformerEncoderLayer:forward", "src", src)
  if opts.is_causal ~= nil then boolean("TransformerEncoderLayer:forward", "is_causal", opts.is_causal) end
  local mask, kpm, causal = opts.src_mask, opts.src_key_padding_mask, opts.is_causal
  local x = src
  if self.norm_first then
    x = x + self:_sa_block(self.norm1(x), mask, kpm, causal)
    x = x + self:_ff_block(self.norm2(x))
  else
    x = self.norm1(x + self:_sa_block(x, mask, kpm, causal))
    x = self.norm2(x + self:_ff_block(x))
  end
  return x
end
function TransformerEncoderLayer:extra_repr()
  local act = type(self.activation) == "function" and "<function>" or "'" .. self.activation .. "'"
  return ("d_model=%d, nhead=%d, dim_feedforward=%d, activation=%s, norm_first=%s, batch_first=%s")
    :format(self.d_model, self.nhead, self.dim_feedforward, act, tostring(self.norm_first),
      tostring(self.batch_first))
end
doc(TransformerEncoderLayer, [[nn.TransformerEncoderLayer(d_model, nhead[, opts]): PyTorch's Transformer encoder layer
  opts: {dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
    batch_first=false, norm_first=false, bias=true, dtype="float32"}
  Self-attention then a feed-forward block, each with dropout, a
  residual connection and a LayerNorm (after the residual, or before the block with norm_first).
  layer(src[, {src_mask=, src_key_padding_mask=, is_causal=false}]) -> output of src's shape
  src {L,N,d_model} ({N,L,d_model} with batch_first, or unbatched {L,d_model}). src_mask and
  src_key_padding_mask are nn.MultiheadAttention's attn_mask and key_padding_mask (booleans:
  true = masked out). activation "relu", "gelu" or a function of a tensor.
  Children as PyTorch's, so its state_dict keys match: self_attn, linear1, dropout, linear2,
  norm1, norm2, dropout1, dropout2.]])

-- a module copied with fresh parameter and buffer tensors (PyTorch's copy.deepcopy of a layer or
-- model): shared tensors and modules stay shared in the copy, classes and functions are kept
local function deepcopy_module(m)
  local seen = {}
  local function copy(v)
    if pt.is_tensor(v) then
      if seen[v] then return seen[v] end
      local c = v:detach():clone()
      if v.requires_grad then c.requires_grad = true end
      seen[v] = c
      return c
    end
    if type(v) ~= "table" then return v end
    if seen[v] then return seen[v] end
    if not nn.is_module(v) and rawget(v, "__name") ~= nil then return v end -- a class
    local c = {}
    seen[v] = c
    for k, x in next, v do rawset(c, copy(k), copy(x)) end
    local mt = getmetatable(v)
    -- modules and plain tables keep their metatable (the class); ordered tables are copied
    return setmetatable(c, mt)
  end
  return copy(m)
end

nn._deepcopy_module = deepcopy_module -- also swa_utils.AveragedModel's copy of a model

local TransformerEncoder = Module:extend("TransformerEncoder")
nn.TransformerEncoder = TransformerEncoder
function TransformerEncoder:__init(encoder_layer, num_layers, opts)
  local name = "TransformerEncoder"
  if not nn.is_module(encoder_layer) then
    raise(("%s: encoder_layer must be a Module (e.g. nn.TransformerEncoderLayer), got %s")
      :format(name, type(encoder_layer)))
  end
  positive(name, "num_layers", num_layers)
  opts = check_opts(name, opts, set_of {"norm", "enable_nested_tensor", "mask_check"})
  if opts.norm ~= nil and not nn.is_module(opts.norm) then
    raise(("%s: norm must be a Module (e.g. nn.LayerNorm), got %s"):format(name, type(opts.norm)))
  end
  local layers = nn.ModuleList()
  for _ = 1, num_layers do layers:append(deepcopy_module(encoder_layer)) end
  self.layers = layers
  self.num_layers = num_layers
  if opts.norm then self.norm = opts.norm end
end
local TE_FORWARD_OPTS = set_of {"mask", "src_mask", "src_key_padding_mask", "is_causal"}
function TransformerEncoder:forward(src, opts)
  local name = "TransformerEncoder:forward"
  opts = check_opts(name, opts, TE_FORWARD_OPTS)
  if opts.mask ~= nil then -- PyTorch's name for this forward's src_mask
    if opts.src_mask ~= nil then raise(name .. ": give mask or src_mask (the same option), not both") end
    opts = {src_mask = opts.mask, src_key_padding_mask = opts.src_key_padding_mask, is_causal = opts.is_causal}
  end
  local x = src
  for _, layer in ipairs(self.layers:children()) do x = layer(x, opts) end
  if self._modules.norm then x = self._modules.norm(x) end
  return x
end
doc(TransformerEncoder, [[nn.TransformerEncoder(encoder_layer, num_layers[, {norm=}])
  A stack of num_layers copies of encoder_layer (each with its own parameters, copied from
  encoder_layer's, as PyTorch's deepcopy), then the optional norm module (e.g. nn.LayerNorm).
  enc(src[, {src_mask=, src_key_padding_mask=, is_causal=false}]) -> output of src's shape; the
  options go to every layer (see help(nn.TransformerEncoderLayer)). mask= (PyTorch's name for this
  forward's mask) is src_mask.
  Children: layers (an nn.ModuleList) and norm. state_dict keys are PyTorch's with the layer
  index 1-based: PyTorch's layers.0.linear1.weight is layers.1.linear1.weight here;
  load_state_dict takes either, state_dict{index_base = 0} gives PyTorch's. The options enable_nested_tensor and
  mask_check are accepted and ignored (there are no nested tensors).]])


-- ------------------------------------------------------------------ Transformer decoder

-- tgt and memory (or src and tgt): tensors of one rank (3-D batched, 2-D unbatched), d_model
-- features, one batch size; returns whether batched, the batch size and the two lengths
local function check_pair(name, a_name, a, b_name, b, d_model, batch_first)
  check_tensor(name, a_name, a)
  check_tensor(name, b_name, b)
  if (a:dim() ~= 2 and a:dim() ~= 3) or b:dim() ~= a:dim() then
    raise(("%s: %s and %s must both be 3-D (batched) or both 2-D (unbatched), got shapes %s and %s")
      :format(name, a_name, b_name, shape_str(a), shape_str(b)))
  end
  local d = a:dim()
  if a:size(d) ~= d_model or b:size(d) ~= d_model then
    raise(("%s: %s and %s must have d_model = %d features, got shapes %s and %s")
      :format(name, a_name, b_name, d_model, shape_str(a), shape_str(b)))
  end
  if d == 2 then return false, 1, a:size(1), b:size(1) end
  local bd, ld = batch_first and 1 or 2, batch_first and 2 or 1
  if a:size(bd) ~= b:size(bd) then
    raise(("%s: %s and %s must have the same batch size, got shapes %s and %s")
      :format(name, a_name, b_name, shape_str(a), shape_str(b)))
  end
  return true, a:size(bd), a:size(ld), b:size(ld)
end

-- an attention mask {L,S} or {N*nhead,L,S}, a key padding mask {N,S} ({S} unbatched)
local function check_attn_mask(name, what, m, L, S, NH)
  if m == nil then return end
  check_tensor(name, what, m)
  local ok = (m:dim() == 2 and shape_str(m) == dims_str {L, S}) or (m:dim() == 3 and shape_str(m) == dims_str {NH, L, S})
  if not ok then
    raise(("%s: %s must have shape %s or %s, got %s"):format(name, what, dims_str {L, S}, dims_str {NH, L, S},
      shape_str(m)))
  end
end
local function check_padding_mask(name, what, m, batched, N, S)
  if m == nil then return end
  check_tensor(name, what, m)
  local want = batched and dims_str {N, S} or dims_str {S}
  if shape_str(m) ~= want then raise(("%s: %s must have shape %s, got %s"):format(name, what, want, shape_str(m))) end
end

local TDL_FORWARD_OPTS = set_of {"tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask",
  "tgt_is_causal", "memory_is_causal"}

local function check_decoder_opts(name, o, batched, N, T, S, H)
  check_attn_mask(name, "tgt_mask", o.tgt_mask, T, T, N * H)
  check_attn_mask(name, "memory_mask", o.memory_mask, T, S, N * H)
  check_padding_mask(name, "tgt_key_padding_mask", o.tgt_key_padding_mask, batched, N, T)
  check_padding_mask(name, "memory_key_padding_mask", o.memory_key_padding_mask, batched, N, S)
  for _, k in ipairs {"tgt_is_causal", "memory_is_causal"} do
    if o[k] ~= nil then boolean(name, k, o[k]) end
  end
end

local TransformerDecoderLayer = Module:extend("TransformerDecoderLayer")
nn.TransformerDecoderLayer = TransformerDecoderLayer
function TransformerDecoderLayer:__init(d_model, nhead, opts)
  local name = "TransformerDecoderLayer"
  opts = check_opts(name, opts, TEL_OPTS)
  layer_children(self, d_model, nhead, layer_settings(name, d_model, nhead, opts), true)
end
TransformerDecoderLayer._sa_block = TransformerEncoderLayer._sa_block
function TransformerDecoderLayer:_mha_block(x, mem, attn_mask, kpm, is_causal)
  local out = self.multihead_attn(x, mem, mem, {attn_mask = attn_mask, key_padding_mask = kpm,
    need_weights = false, is_causal = is_causal})
  return self.dropout2(out)
end
function TransformerDecoderLayer:_ff_block(x)
  return self.dropout3(self.linear2(self.dropout(activate(self.activation, self.linear1(x)))))
end
function TransformerDecoderLayer:forward(tgt, memory, opts)
  local name = "TransformerDecoderLayer:forward"
  opts = check_opts(name, opts, TDL_FORWARD_OPTS)
  local batched, N, T, S = check_pair(name, "tgt", tgt, "memory", memory, self.d_model, self.batch_first)
  check_decoder_opts(name, opts, batched, N, T, S, self.nhead)
  local tm, tk, tc = opts.tgt_mask, opts.tgt_key_padding_mask, opts.tgt_is_causal
  local mm, mk, mc = opts.memory_mask, opts.memory_key_padding_mask, opts.memory_is_causal
  local x = tgt
  if self.norm_first then
    x = x + self:_sa_block(self.norm1(x), tm, tk, tc)
    x = x + self:_mha_block(self.norm2(x), memory, mm, mk, mc)
    x = x + self:_ff_block(self.norm3(x))
  else
    x = self.norm1(x + self:_sa_block(x, tm, tk, tc))
    x = self.norm2(x + self:_mha_block(x, memory, mm, mk, mc))
    x = self.norm3(x + self:_ff_block(x))
  end
  return x
end
TransformerDecoderLayer.extra_repr = TransformerEncoderLayer.extra_repr
doc(TransformerDecoderLayer, [[nn.TransformerDecoderLayer(d_model, nhead[, opts]): PyTorch's Transformer decoder layer
  opts: {dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
    batch_first=false, norm_first=false, bias=true, dtype="float32"}
  Self-attention over tgt, attention from tgt to memory (the encoder's output), then a
  feed-forward block, each with dropout, a residual connection and a LayerNorm (after the
  residual, or before the block with norm_first).
  layer(tgt, memory[, {tgt_mask=, memory_mask=, tgt_key_padding_mask=, memory_key_padding_mask=,
    tgt_is_causal=false, memory_is_causal=false}]) -> output of tgt's shape
  tgt {T,N,d_model}, memory {S,N,d_model} ({N,T,d_model} and {N,S,d_model} with batch_first, or
  unbatched {T,d_model} and {S,d_model}). tgt_mask {T,T} and memory_mask {T,S} (or {N*nhead,...})
  are nn.MultiheadAttention's attn_mask, the key padding masks {N,T} and {N,S} its
  key_padding_mask (booleans: true = masked out; nn.Transformer.generate_square_subsequent_mask(T)
  is the usual tgt_mask). tgt_is_causal / memory_is_causal (PyTorch 2.x's) without a mask mask
  the upper triangle. activation "relu", "gelu" or a function of a tensor.
  Children as PyTorch's, so its state_dict keys match: self_attn, multihead_attn, linear1,
  dropout, linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3.]])

-- a stack of copies of a layer, then an optional norm (TransformerEncoder, TransformerDecoder)
local function stack_layers(self, name, what, layer, num_layers, norm)
  if not nn.is_module(layer) then
    raise(("%s: %s must be a Module (e.g. nn.%s), got %s"):format(name, what,
      what == "decoder_layer" and "TransformerDecoderLayer" or "TransformerEncoderLayer", type(layer)))
  end
  positive(name, "num_layers", num_layers)
  if norm ~= nil and not nn.is_module(norm) then
    raise(("%s: norm must be a Module (e.g. nn.LayerNorm), got %s"):format(name, type(norm)))
  end
  local layers = nn.ModuleList()
  for _ = 1, num_layers do layers:append(deepcopy_module(layer)) end
  self.layers = layers
  self.num_layers = num_layers
  if norm then self.norm = norm end
end

local TransformerDecoder = Module:extend("TransformerDecoder")
nn.TransformerDecoder = TransformerDecoder
function TransformerDecoder:__init(decoder_layer, num_layers, opts)
  local name = "TransformerDecoder"
  opts = check_opts(name, opts, set_of {"norm"})
  stack_layers(self, name, "decoder_layer", decoder_layer, num_layers, opts.norm)
end
function TransformerDecoder:forward(tgt, memory, opts)
  opts = check_opts("TransformerDecoder:forward", opts, TDL_FORWARD_OPTS)
  local x = tgt
  for _, layer in ipairs(self.layers:children()) do x = layer(x, memory, opts) end
  if self._modules.norm then x = self._modules.norm(x) end
  return x
end
doc(TransformerDecoder, [[nn.TransformerDecoder(decoder_layer, num_layers[, {norm=}])
  A stack of num_layers copies of decoder_layer (each with its own parameters, copied from
  decoder_layer's, as PyTorch's deepcopy), then the optional norm module (e.g. nn.LayerNorm).
  dec(tgt, memory[, {tgt_mask=, memory_mask=, tgt_key_padding_mask=, memory_key_padding_mask=,
    tgt_is_causal=, memory_is_causal=}]) -> output of tgt's shape; the options go to every layer
  (see help(nn.TransformerDecoderLayer)). Children: layers (an nn.ModuleList) and norm;
  state_dict keys are PyTorch's with the layer index 1-based (PyTorch's layers.0.linear1.weight
  is layers.1.linear1.weight here).]])

-- ------------------------------------------------------------------ Transformer

local TR_OPTS = {"num_encoder_layers", "num_decoder_layers", "custom_encoder", "custom_decoder"}
for k in pairs(TEL_OPTS) do TR_OPTS[#TR_OPTS + 1] = k end
local TR_KEYWORD = set_of(TR_OPTS)
TR_KEYWORD.d_model, TR_KEYWORD.nhead = true, true
local TR_POSITIONAL = set_of(TR_OPTS)

local TR_FORWARD_OPTS = set_of {"src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask",
  "tgt_key_padding_mask", "memory_key_padding_mask", "src_is_causal", "tgt_is_causal", "memory_is_causal"}

local Transformer = Module:extend("Transformer")
nn.Transformer = Transformer
function Transformer:__init(d_model, nhead, opts)
  local name = "Transformer"
  if type(d_model) == "table" or d_model == nil then -- nn.Transformer({d_model = 512, nhead = 8, ...})
    if nhead ~= nil or opts ~= nil then
      raise(name .. ": expected nn.Transformer([d_model, nhead,] [opts]), the options last")
    end
    opts = check_opts(name, d_model, TR_KEYWORD)
    d_model, nhead = opts.d_model or 512, opts.nhead or 8
  else
    opts = check_opts(name, opts, TR_POSITIONAL)
  end
  local s = layer_settings(name, d_model, nhead, opts)
  local n_enc, n_dec = opts.num_encoder_layers or 6, opts.num_decoder_layers or 6
  local norm = {eps = s.layer_norm_eps, bias = s.bias, dtype = s.dtype}
  local layer_opts = {dim_feedforward = s.dim_feedforward, dropout = s.dropout, activation = s.activation,
    layer_norm_eps = s.layer_norm_eps, batch_first = s.batch_first, norm_first = s.norm_first, bias = s.bias,
    dtype = s.dtype}
  for _, k in ipairs {"custom_encoder", "custom_decoder"} do
    if opts[k] ~= nil and not nn.is_module(opts[k]) then
      raise(("%s: %s must be a Module, got %s"):format(name, k, type(opts[k])))
    end
  end
  if opts.custom_encoder then
    self.encoder = opts.custom_encoder
  else
    positive(name, "num_encoder_layers", n_enc)
    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, layer_opts), n_enc,
      {norm = nn.LayerNorm(d_model, norm)})
  end
  if opts.custom_decoder then
    self.decoder = opts.custom_decoder
  else
    positive(name, "num_decoder_layers", n_dec)
    self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, nhead, layer_opts), n_dec,
      {norm = nn.LayerNorm(d_model, norm)})
  end
  self:_reset_parameters()
  self.d_model, self.nhead, self.batch_first = d_model, nhead, s.batch_first
end
-- PyTorch's: xavier_uniform_ for every parameter of 2 or more dimensions
function Transformer:_reset_parameters()
  for _, p in ipairs(self:parameters()) do
    if p:dim() > 1 then init.xavier_uniform_(p) end
  end
end
function Transformer:forward(src, tgt, opts)
  local name = "Transformer:forward"
  opts = check_opts(name, opts, TR_FORWARD_OPTS)
  local batched, N, S, T = check_pair(name, "src", src, "tgt", tgt, self.d_model, self.batch_first)
  local H = self.nhead
  check_attn_mask(name, "src_mask", opts.src_mask, S, S, N * H)
  check_padding_mask(name, "src_key_padding_mask", opts.src_key_padding_mask, batched, N, S)
  if opts.src_is_causal ~= nil then boolean(name, "src_is_causal", opts.src_is_causal) end
  check_decoder_opts(name, opts, batched, N, T, S, H)
  local memory = self.encoder(src, {src_mask = opts.src_mask, src_key_padding_mask = opts.src_key_padding_mask,
    is_causal = opts.src_is_causal})
  return self.decoder(tgt, memory, {tgt_mask = opts.tgt_mask, memory_mask = opts.memory_mask,
    tgt_key_padding_mask = opts.tgt_key_padding_mask, memory_key_padding_mask = opts.memory_key_padding_mask,
    tgt_is_causal = opts.tgt_is_causal, memory_is_causal = opts.memory_is_causal})
end
function Transformer:extra_repr()
  return ("d_model=%d, nhead=%d, batch_first=%s"):format(self.d_model, self.nhead, tostring(self.batch_first))
end

function Transformer.generate_square_subsequent_mask(sz, opts, ...)
  -- also as model:generate_square_subsequent_mask(sz) (PyTorch's staticmethod through an instance)
  if nn.is_module(sz) then return Transformer.generate_square_subsequent_mask(opts, ...) end
  local name = "Transformer.generate_square_subsequent_mask"
  if math.type(sz) ~= "integer" or sz < 0 then
    raise(("%s: sz must be a non-negative integer, got %s"):format(name, tostring(sz)))
  end
  opts = check_opts(name, opts, set_of {"dtype"})
  local dt = opts.dtype or pt.get_default_dtype()
  if dt ~= "float32" and dt ~= "float64" then
    raise(("%s: dtype must be 'float32' or 'float64', got %s"):format(name, tostring(dt)))
  end
  return pt.full({sz, sz}, -math.huge, {dtype = dt}):triu(1)
end
doc(Transformer.generate_square_subsequent_mask, [[nn.Transformer.generate_square_subsequent_mask(sz[, {dtype="float32"}]) -> {sz,sz} float mask
  -inf above the diagonal, 0 on and below it: position i attends to 1..i (the causal tgt_mask).
  PyTorch's staticmethod; model:generate_square_subsequent_mask(sz) works too.]])
doc(Transformer, [[nn.Transformer([d_model=512, nhead=8,] [opts]): PyTorch's encoder-decoder Transformer
  opts: {num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048, dropout=0.1,
    activation="relu", custom_encoder=, custom_decoder=, layer_norm_eps=1e-5, batch_first=false,
    norm_first=false, bias=true, dtype="float32"}; d_model and nhead may be given as options too:
    nn.Transformer({d_model = 256, nhead = 4, num_encoder_layers = 3}).
  model(src, tgt[, {src_mask=, tgt_mask=, memory_mask=, src_key_padding_mask=,
    tgt_key_padding_mask=, memory_key_padding_mask=, src_is_causal=, tgt_is_causal=,
    memory_is_causal=}]) -> output of tgt's shape
  src {S,N,d_model}, tgt {T,N,d_model} ({N,S,d_model}, {N,T,d_model} with batch_first; unbatched
  {S,d_model}, {T,d_model}). The encoder (nn.TransformerEncoder, its norm an nn.LayerNorm) reads src
  with src_mask {S,S} and src_key_padding_mask {N,S}; the decoder (nn.TransformerDecoder) reads tgt
  and the encoder's output with tgt_mask {T,T}, memory_mask {T,S} and the key padding masks {N,T},
  {N,S} (booleans: true = masked out; see help(nn.TransformerDecoderLayer)).
  Children encoder and decoder; state_dict keys are PyTorch's (encoder.layers.1.self_attn...,
  the layer index 1-based, see help(nn.TransformerEncoder)). Every parameter of 2 or more
  dimensions starts from xavier_uniform_, as PyTorch's.]])

return nn
