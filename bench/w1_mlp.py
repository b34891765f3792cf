# W1 reference: one epoch of the MLP 784-256-128-10 at batch 64, SGD momentum 0.9 lr 0.05,
# on 60000 synthetic float32 inputs with random labels; times the training loop only, 3
# repetitions, for 1 and 2 threads. Prints METRIC w1_epoch_s_t1 / _t2 and w1_epoch_s (best).
import os
import statistics
import time

import torch

N, B = 60000, 64
REPS = int(os.environ.get("W1_REPS", "3"))
torch.manual_seed(1)
xs = [torch.rand(min(B, N - i), 784) for i in range(0, N, B)]
ys = [torch.randint(0, 10, (x.shape[0],)) for x in xs]


def epoch():
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    t0 = time.perf_counter()
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


best = None
for threads in (1, 2):
    torch.set_num_threads(threads)
    times = [epoch() for _ in range(REPS)]
    med = statistics.median(times)
    print(f"METRIC w1_epoch_s_t{threads} {med:.4f} s", flush=True)
    best = med if best is None else min(best, med)
print(f"METRIC w1_epoch_s {best:.4f} s")
