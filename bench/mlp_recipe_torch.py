# PyTorch side of W6 (bench/w6_rss.sh): the MLP recipe (784-256-128-10, batch 64, SGD momentum 0.9) on all of
# Fashion-MNIST, loaded the usual way (numpy from the gzip IDX files), for one epoch plus a test
# evaluation. bench/w6_rss.sh measures its peak RSS.
import gzip, sys
import numpy as np, torch, torch.nn as nn
torch.set_num_threads(1)
d = "/usr/share/datasets/fashion-mnist/"
def images(f): return np.frombuffer(gzip.open(d + f).read(), np.uint8, offset=16).reshape(-1, 784)
def labels(f): return np.frombuffer(gzip.open(d + f).read(), np.uint8, offset=8).astype(np.int64)
X = torch.tensor(images("train-images-idx3-ubyte.gz"), dtype=torch.float32) / 255
Y = torch.tensor(labels("train-labels-idx1-ubyte.gz"))
Xt = torch.tensor(images("t10k-images-idx3-ubyte.gz"), dtype=torch.float32) / 255
Yt = torch.tensor(labels("t10k-labels-idx1-ubyte.gz"))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64, shuffle=True)
m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
for x, y in loader:
    opt.zero_grad()
    nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
with torch.no_grad():
    print("accuracy", (m(Xt).argmax(1) == Yt).float().mean().item())
