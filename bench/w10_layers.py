# PyTorch's side of bench/w10_layers.lua: the same cases on one thread, medians of 9.
# torch.set_num_threads(1) does not reach Debian's OpenBLAS (its own pthreads): without
# OPENBLAS_NUM_THREADS=1 a matrix product still ran on both cores (F.linear {32,256}x{256,768}:
# 94 us against 161 us on one), so it is set before torch loads.
import os
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch, time, statistics
nn = torch.nn; F = nn.functional
torch.set_num_threads(1); torch.manual_seed(0)
def med(f):
    f(); ts = []
    for r in range(9):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3
x = torch.randn(256, 4096)
def fb(m):
    xg = x.clone().requires_grad_(); g = torch.ones(256, 4096)
    return med(lambda: m(xg).backward(g))
rows = []
def row(n, v): rows.append(f"METRIC {n} {v:.4f} ms")
row("gelu_fb_ms", fb(nn.GELU())); row("silu_fb_ms", fb(nn.SiLU())); row("sigmoid_fb_ms", fb(nn.Sigmoid()))
row("elu_fb_ms", fb(nn.ELU())); row("mish_fb_ms", fb(nn.Mish())); row("layernorm_fb_ms", fb(nn.LayerNorm(4096)))
row("batchnorm1d_fb_ms", fb(nn.BatchNorm1d(4096)))
y = torch.randn(64, 32, 28, 28, requires_grad=True); bn = nn.BatchNorm2d(32)
row("batchnorm2d_fb_ms", med(lambda: bn(y).sum().backward()))
s = torch.randn(32, 64, 256); lstm = nn.LSTM(256, 256, batch_first=True); gru = nn.GRU(256, 256, batch_first=True)
row("lstm_fb_ms", med(lambda: lstm(s)[0].sum().backward())); row("gru_fb_ms", med(lambda: gru(s)[0].sum().backward()))
v = torch.randn(1000000)
row("sort_1e6_ms", med(lambda: v.sort())); row("normal_1e6_ms", med(lambda: v.normal_()))
im = torch.randn(16, 64, 32, 32, requires_grad=True)
row("bilinear_x2_fb_ms", med(lambda: F.interpolate(im, scale_factor=2, mode="bilinear").sum().backward()))
A = torch.randn(512, 512); A = A @ A.t() + torch.eye(512) * 512; B = torch.randn(512, 64)
row("solve_512_ms", med(lambda: torch.linalg.solve(A, B))); row("cholesky_512_ms", med(lambda: torch.linalg.cholesky(A)))
print("\n".join(rows))
