# W3: `c = a + b` on 1-element float32 tensors, ns per op, PyTorch side.
# Prints METRIC w3_add_ns <median of 5 repeats> ns.
import sys
import time

import torch

torch.set_num_threads(1)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
REPEATS = 5

a = torch.tensor([1.5], dtype=torch.float32)
b = torch.tensor([2.25], dtype=torch.float32)


def run(n):
    c = None
    for _ in range(n):
        c = a + b
    return c


assert run(10).item() == 3.75, "w3_add: wrong result"
run(N // 10)  # warm-up

times = []
for _ in range(REPEATS):
    t0 = time.perf_counter()
    run(N)
    times.append((time.perf_counter() - t0) * 1e9 / N)
times.sort()
print("METRIC w3_add_ns %.1f ns" % times[(REPEATS - 1) // 2])
