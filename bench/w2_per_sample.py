# W2 reference: PyTorch's per-sample training loop for the MLP 784-256-128-10 (batch 1 per
# sample: forward, backward, SGD step), torch.set_num_threads(1), synthetic data as in
# bench/w2_per_sample.lua. Prints METRIC w2_samples_per_s <median samples/s>.
# Env: W2_N samples (default 4000), W2_REPS repetitions (default 3).
import os
import statistics
import time

import torch

N = int(os.environ.get("W2_N", "4000"))
REPS = int(os.environ.get("W2_REPS", "3"))
torch.set_num_threads(1)
torch.manual_seed(1)
xs = [torch.rand(1, 784) for _ in range(N)]
ys = [torch.randint(0, 10, (1,)) for _ in range(N)]


def epoch():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.perf_counter()
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return N / (time.perf_counter() - t0)


rates = [epoch() for _ in range(REPS)]
print(f"METRIC w2_samples_per_s {statistics.median(rates):.0f} samples/s")
