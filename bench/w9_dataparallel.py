# W9 PyTorch side: the W5 CNN on batches of 256, forward + backward + SGD step, as in
# bench/w9_dataparallel.lua. torch.nn.DataParallel needs CUDA: on a CPU-only machine it calls the
# module directly, so PyTorch's way to use 2 cpu cores is intra-op threading. "1 device" is one
# thread; "2 devices" is nn.DataParallel(model) with 2 threads (= the module with 2 threads).
import os, statistics, time, torch
import torch.nn as nn
torch.manual_seed(0)
B = 256
STEPS = int(os.environ.get("W9_STEPS", "6"))
RUNS = int(os.environ.get("W9_RUNS", "3"))
x = torch.rand(B, 1, 28, 28)
y = torch.randint(0, 10, (B,))
model = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
dp = nn.DataParallel(model)

def step(net):
    opt.zero_grad()
    nn.functional.cross_entropy(net(x), y).backward()
    opt.step()

t1, t2 = [], []
torch.set_num_threads(1); step(model)
torch.set_num_threads(2); step(dp)
for _ in range(RUNS):
    for threads, net, times in ((1, model, t1), (2, dp, t2)):
        torch.set_num_threads(threads)
        for _ in range(STEPS):
            t0 = time.perf_counter()
            step(net)
            times.append(time.perf_counter() - t0)
one, two = statistics.median(t1), statistics.median(t2)
print("METRIC w9_dp_1dev_step_s %.4f s" % one)
print("METRIC w9_dp_2dev_step_s %.4f s" % two)
print("METRIC w9_plain_intraop_step_s %.4f s" % two)
print("METRIC w9_dp_speedup %.3f x" % (one / two))
print("METRIC w9_dp_vs_intraop %.3f x" % 1.0)
