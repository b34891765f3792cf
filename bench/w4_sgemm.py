# W4 in PyTorch: 2048x2048 float32 torch.mm, median of >= 5 runs after a warm-up.
# Prints METRIC w4_sgemm_gflops.   /usr/bin/python3 bench/w4_sgemm.py [n=2048] [reps=7]
import sys, time
import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
reps = max(5, int(sys.argv[2]) if len(sys.argv) > 2 else 7)
torch.manual_seed(1)
a = torch.rand(n, n) - 0.5
b = torch.rand(n, n) - 0.5
torch.mm(a, b)  # warm-up
times = []
for _ in range(reps):
    t0 = time.perf_counter()
    c = torch.mm(a, b)
    times.append(time.perf_counter() - t0)
    del c
times.sort()
med = times[reps // 2]
print(f"# torch.mm {n}x{n}: median {med * 1e3:.2f} ms over {reps} runs, {torch.get_num_threads()} threads")
print(f"METRIC w4_sgemm_gflops {2 * n ** 3 / med * 1e-9:.2f} GFLOP/s")
