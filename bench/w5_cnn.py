# W5 PyTorch side: the same CNN and loop as bench/w5_cnn.lua, in PyTorch's best thread setting
# on this machine (set W5_THREADS to override; DESIGN.md measured 1 and 2).
import os, time, torch
import torch.nn as nn
torch.set_num_threads(int(os.environ.get("W5_THREADS", "2")))
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
epoch(2 * B)
t0 = time.perf_counter()
epoch(N)
print("METRIC w5_cnn_s %.4f s" % (time.perf_counter() - t0))
