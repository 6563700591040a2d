"""The PyTorch eager side of the training-loop benchmark.

Each workload is written the way its tutorial writes it (see the
notebooks, each of which names its tutorial): the same module shapes, loss, optimizer, batch size, DataLoader and per-step readouts
(`loss.item()` where the tutorial has one). The data is synthetic but of the real shapes, made
before the clock starts. `src/main.rs` is the Rust side and must stay step-for-step equal.

One process runs one workload once and prints one JSON line; `train.py` alternates this script
with the Rust binary (A B A B ...), so neither side profits from the other's warm caches.

    python bench/torch_loops.py --workload cifar --threads 1 [--device cuda]
"""

import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

# Shapes shared with src/main.rs (the `Shapes` there). Keep the two in step.
IRIS_ROWS = 120  # the tutorial's 80 % train split of 150 rows
IRIS_EPOCHS = 100
CIFAR_BATCH = 4
CIFAR_STEPS = 3000
FASHION_ROWS = 60000
FASHION_BATCH = 1000
MLP_BATCH = 64
MLP_STEPS = 5000
# notebooks/01's digits: 64 features, 64 hidden units, 10 classes, Adam at 1e-3.
MLP_IN, MLP_HIDDEN, MLP_OUT, MLP_LR = 64, 64, 10, 1e-3
LOADER_ROWS = 60000
LOADER_BATCH = 64
WARMUP_STEPS = 5
SCALE = 1  # --scale: K times the timed steps, for profiling only


class IrisModel(nn.Module):
    """PyTorch BootCamp's `Model` (4 -> 8 -> 9 -> 3)."""

    def __init__(self, in_features=4, h1=8, h2=9, out_features=3):
        super().__init__()
        self.fc1 = nn.Linear(in_features, h1)
        self.fc2 = nn.Linear(h1, h2)
        self.out = nn.Linear(h2, out_features)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


class Net(nn.Module):
    """The CIFAR-10 tutorial's `Net`."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class Network(nn.Module):
    """deeplizard's Fashion-MNIST `Network`."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=5)
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=12, kernel_size=5)
        self.fc1 = nn.Linear(in_features=12 * 4 * 4, out_features=120)
        self.fc2 = nn.Linear(in_features=120, out_features=60)
        self.out = nn.Linear(in_features=60, out_features=10)

    def forward(self, t):
        t = F.max_pool2d(F.relu(self.conv1(t)), kernel_size=2, stride=2)
        t = F.max_pool2d(F.relu(self.conv2(t)), kernel_size=2, stride=2)
        t = F.relu(self.fc1(t.reshape(-1, 12 * 4 * 4)))
        t = F.relu(self.fc2(t))
        return self.out(t)


class Classifier_MLP(nn.Module):  # noqa: N801 - the tutorial's name
    """"Using the GPU"'s classifier: two hidden layers, returns logits and probabilities."""

    def __init__(self, in_dim, hidden_dim, out_dim):
        super().__init__()
        self.h1 = nn.Linear(in_dim, hidden_dim)
        self.h2 = nn.Linear(hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, out_dim)
        self.out_dim = out_dim

    def forward(self, x):
        x = F.relu(self.h1(x))
        x = F.relu(self.h2(x))
        x = self.out(x)
        return x, F.softmax(x, dim=1)


def iris(device, timed):
    g = torch.Generator().manual_seed(32)
    x_train = torch.randn(IRIS_ROWS, 4, generator=g).to(device)
    y_train = torch.randint(0, 3, (IRIS_ROWS,), generator=g).to(device)
    model = IrisModel().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    epochs = SCALE * IRIS_EPOCHS if timed else WARMUP_STEPS
    losses = []
    start = time.perf_counter()
    for i in range(epochs):
        i += 1
        y_pred = model.forward(x_train)
        loss = criterion(y_pred, y_train)
        losses.append(loss)
        if i % 10 == 1:
            last = loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    last = loss.item()
    return time.perf_counter() - start, epochs, last


def cifar(device, timed):
    steps = SCALE * CIFAR_STEPS if timed else WARMUP_STEPS
    g = torch.Generator().manual_seed(0)
    images = torch.randn(steps * CIFAR_BATCH, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (steps * CIFAR_BATCH,), generator=g)
    trainloader = DataLoader(TensorDataset(images, labels), batch_size=CIFAR_BATCH, shuffle=True)
    net = Net().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    running_loss = 0.0
    start = time.perf_counter()
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data[0].to(device), data[1].to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 2000 == 1999:
            running_loss = 0.0
    return time.perf_counter() - start, steps, loss.item()


def fashion(device, timed):
    rows = SCALE * FASHION_ROWS if timed else WARMUP_STEPS * FASHION_BATCH
    g = torch.Generator().manual_seed(0)
    images = torch.rand(rows, 1, 28, 28, generator=g)
    labels = torch.randint(0, 10, (rows,), generator=g)
    # deeplizard's loader does not shuffle.
    loader = DataLoader(TensorDataset(images, labels), batch_size=FASHION_BATCH)
    network = Network().to(device)
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01)
    total_loss = 0.0
    total_correct = 0
    steps = 0
    start = time.perf_counter()
    for batch in loader:
        images = batch[0].to(device)
        labels = batch[1].to(device)
        preds = network(images)
        loss = F.cross_entropy(preds, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * images.shape[0]
        total_correct += preds.argmax(dim=1).eq(labels).sum().item()
        steps += 1
    return time.perf_counter() - start, steps, loss.item()


def mlp(device, timed):
    steps = SCALE * MLP_STEPS if timed else WARMUP_STEPS
    g = torch.Generator().manual_seed(0)
    x = torch.randn(steps * MLP_BATCH, MLP_IN, generator=g)
    y = torch.randint(0, MLP_OUT, (steps * MLP_BATCH,), generator=g)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=MLP_BATCH, shuffle=True)
    model = Classifier_MLP(in_dim=MLP_IN, hidden_dim=MLP_HIDDEN, out_dim=MLP_OUT).to(device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=MLP_LR)
    train_accs, train_loss = [], []
    start = time.perf_counter()
    for batch, (x_train, y_train) in enumerate(train_loader):
        x_train, y_train = x_train.to(device), y_train.to(device)
        model.zero_grad()
        pred, prob = model(x_train)
        acc = (prob.argmax(dim=-1) == y_train).to(torch.float32).mean()
        train_accs.append(acc.mean().item())
        loss = F.cross_entropy(pred, y_train)
        train_loss.append(loss.item())
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start, steps, train_loss[-1]


def loader(device, timed):
    rows = SCALE * LOADER_ROWS if timed else WARMUP_STEPS * LOADER_BATCH
    g = torch.Generator().manual_seed(0)
    x = torch.rand(rows, 784, generator=g)
    y = torch.randint(0, 10, (rows,), generator=g)
    dl = DataLoader(TensorDataset(x, y), batch_size=LOADER_BATCH, shuffle=True, num_workers=0)
    steps = 0
    seen = 0
    start = time.perf_counter()
    for images, labels in dl:
        # What a loop does first with a batch: move it (a no-op on the CPU) and count it.
        images, labels = images.to(device), labels.to(device)
        seen += images.shape[0]
        steps += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, steps, float(seen)


WORKLOADS = {"iris": iris, "cifar": cifar, "fashion": fashion, "mlp": mlp, "loader": loader}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--scale", type=int, default=1, help="K times the steps (profiling only)")
    args = p.parse_args()
    global SCALE
    SCALE = args.scale

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda asked for, but torch.cuda.is_available() is False")
    run = WORKLOADS[args.workload]
    # A short warm-up on throwaway state: the first call of each kernel pays one-off costs
    # (oneDNN primitive creation, thread-pool start, CUDA context) that both sides pay alike and
    # that are not what a training loop costs per step.
    run(device, timed=False)
    seconds, steps, last = run(device, timed=True)
    print(json.dumps({
        "side": "pytorch",
        "workload": args.workload,
        "threads": args.threads,
        "device": str(device),
        "seconds": seconds,
        "steps": steps,
        "last": last,
    }))


if __name__ == "__main__":
    main()
