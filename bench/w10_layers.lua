-- Layers and ops beside PyTorch (bench/w10_layers.py), one thread each: the activations, norms,
-- RNNs, sort, normal_, interpolate and pt.linalg cases session 8 made faster, {256,4096}
-- float32 unless said. Run by scripts/bench (no DESIGN.md goal: partrain's time should be
-- below PyTorch's). Prints METRIC <case>_ms <median of 9> ms.
local pt = require "partrain"
pt.set_num_threads(1)
local nn, F = pt.nn, pt.nn.functional
pt.manual_seed(0)
local function med(f) local ts = {} f() for r = 1, 9 do local t0 = pt.clock(); f(); ts[r] = pt.clock() - t0 end table.sort(ts) return ts[5] * 1e3 end
local x = pt.randn(256, 4096)
local function fb(m) local xg = x:clone():requires_grad_(); local g = pt.ones(256, 4096); return med(function() m(xg):backward(g) end) end
local rows = {}
local function row(name, v) rows[#rows + 1] = string.format("METRIC %s %.4f ms", name, v) end
row("gelu_fb_ms", fb(nn.GELU()))
row("silu_fb_ms", fb(nn.SiLU()))
row("sigmoid_fb_ms", fb(nn.Sigmoid()))
row("elu_fb_ms", fb(nn.ELU()))
row("mish_fb_ms", fb(nn.Mish()))
row("layernorm_fb_ms", fb(nn.LayerNorm(4096)))
row("batchnorm1d_fb_ms", fb(nn.BatchNorm1d(4096)))
local y = pt.randn(64, 32, 28, 28):requires_grad_()
local bn = nn.BatchNorm2d(32)
row("batchnorm2d_fb_ms", med(function() bn(y):sum():backward() end))
local s = pt.randn(32, 64, 256)
local lstm, gru = nn.LSTM(256, 256, {batch_first = true}), nn.GRU(256, 256, {batch_first = true})
row("lstm_fb_ms", med(function() lstm(s):sum():backward() end))
row("gru_fb_ms", med(function() gru(s):sum():backward() end))
local v = pt.randn(1000000)
row("sort_1e6_ms", med(function() return v:sort() end))
row("normal_1e6_ms", med(function() v:normal_() end))
local im = pt.randn(16, 64, 32, 32):requires_grad_()
row("bilinear_x2_fb_ms", med(function() F.interpolate(im, {scale_factor = 2, mode = "bilinear"}):sum():backward() end))
local A = pt.randn(512, 512); A = A:matmul(A:t()) + pt.eye(512) * 512; local B = pt.randn(512, 64)
row("solve_512_ms", med(function() return pt.linalg.solve(A, B) end))
row("cholesky_512_ms", med(function() return pt.linalg.cholesky(A) end))
for _, r in ipairs(rows) do print(r) end
