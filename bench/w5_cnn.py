# W5 PyTorch side: the same CNN and loop as bench/w5_cnn.lua, timed with 1 and with 2 threads;
# w5_cnn_s is the better of the two (PyTorch's best thread setting, as DESIGN.md measures it).
import os, time, torch
import torch.nn as nn
torch.manual_seed(0)
N, B = int(os.environ.get("W5_SAMPLES", "10000")), 64
x = torch.rand(N, 1, 28, 28)
y = torch.randint(0, 10, (N,))
model = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
def epoch(n):
    for i in range(0, n, B):
        xb, yb = x[i:i + B], y[i:i + B]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
best = None
for threads in [int(t) for t in os.environ.get("W5_THREADS", "1,2").split(",")]:
    torch.set_num_threads(threads)
    epoch(2 * B)
    t0 = time.perf_counter()
    epoch(N)
    t = time.perf_counter() - t0
    print("METRIC w5_cnn_s_t%d %.4f s" % (threads, t))
    best = t if best is None else min(best, t)
print("METRIC w5_cnn_s %.4f s" % best)
