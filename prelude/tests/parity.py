"""The PyTorch side of prelude/tests/parity.rs: the tutorials' workloads in torch 2.11 on the CPU.

    python prelude/tests/parity.py DIR

DIR holds what the Rust side wrote: iris.csv (the shipped file), data.safetensors (the
test-made CIFAR-like, Fashion-MNIST-like and loader inputs) and, per workload, the Rust
results. For every workload this script writes DIR/<name>_python.safetensors with the initial
parameters ("init.<parameter name>"), the loss after every step ("losses", float64) and, for
the loader workload, the sample orders. The Rust side compares the two.

Every workload runs on one thread, as the Rust side does, so that both reduce in the same order.
"""

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch.utils.data import DataLoader, TensorDataset


# The tutorials' models, as the tutorials write them (layers created in this order): the same
# definitions the benchmark's PyTorch side trains (bench/torch_loops.py), one copy for both.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from torch_loops import Classifier_MLP, Net, Network  # noqa: E402
from torch_loops import IrisModel as Model  # noqa: E402  (PyTorch BootCamp's name)


def iris_split(d, random_state):
    """pandas' read_csv + sklearn's train_test_split(X, y, test_size=0.2, random_state=...),
    written out: ShuffleSplit takes numpy's RandomState(random_state).permutation(n), the first
    ceil(0.2 n) rows for testing and the next n - ceil(0.2 n) for training."""
    with open(f"{d}/iris.csv") as f:
        header = f.readline().strip().split(",")
        rows = [line.strip().split(",") for line in f if line.strip()]
    target = header.index("target")
    X = np.array([[float(v) for i, v in enumerate(r) if i != target] for r in rows])
    y = np.array([int(float(r[target])) for r in rows])
    n = len(rows)
    n_test = int(np.ceil(0.2 * n))
    perm = np.random.RandomState(random_state).permutation(n)
    test, train = perm[:n_test], perm[n_test:]
    return X[train], X[test], y[train], y[test]


def initial(model):
    return {f"init.{k}": v.detach().clone().contiguous() for k, v in model.state_dict().items()}


def iris(d, data):
    # The BootCamp lesson, as notebook 05 runs it: seed, model, data, 100 full-batch epochs.
    torch.manual_seed(32)
    model = Model()
    init = initial(model)
    X_train, X_test, y_train, y_test = iris_split(d, 33)
    X_train = torch.FloatTensor(X_train)
    y_train = torch.LongTensor(y_train)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for i in range(100):
        y_pred = model.forward(X_train)
        loss = criterion(y_pred, y_train)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return init, losses


def classifier_mlp(d, data):
    # "Using the GPU", as notebook 01 runs it: Iris split with random_state=42, shuffled
    # batches of 10, Adam lr 0.01.
    torch.manual_seed(7)
    X_train, X_test, y_train, y_test = iris_split(d, 42)
    train_loader = DataLoader(
        TensorDataset(torch.FloatTensor(X_train), torch.LongTensor(y_train)),
        batch_size=10,
        shuffle=True,
    )
    model = Classifier_MLP(in_dim=4, hidden_dim=16, out_dim=3)
    init = initial(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(5):
        for batch, (x_train, y_train) in enumerate(train_loader):
            model.zero_grad()
            pred, prob = model(x_train)
            loss = F.cross_entropy(pred, y_train)
            losses.append(loss.item())
            loss.backward()
            optimizer.step()
    return init, losses


def cifar_net(d, data):
    # The CIFAR-10 tutorial's loop: SGD lr 0.001 momentum 0.9, shuffled batches of 4.
    torch.manual_seed(3)
    net = Net()
    init = initial(net)
    trainloader = DataLoader(
        TensorDataset(data["cifar_x"], data["cifar_y"]), batch_size=4, shuffle=True
    )
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    losses = []
    for epoch in range(2):
        for i, (inputs, labels) in enumerate(trainloader, 0):
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return init, losses


def network(d, data):
    # deeplizard's run: Adam lr 0.01 over shuffled batches.
    torch.manual_seed(5)
    network = Network()
    init = initial(network)
    loader = DataLoader(
        TensorDataset(data["fashion_x"], data["fashion_y"]), batch_size=100, shuffle=True
    )
    optimizer = torch.optim.Adam(network.parameters(), lr=0.01)
    losses = []
    for epoch in range(2):
        for images, labels in loader:
            preds = network(images)
            loss = F.cross_entropy(preds, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return init, losses


def loader_orders(d, data):
    """Sample orders of shuffled loaders over 3 epochs, then 4 draws from the global generator
    (which show that every epoch took from it what PyTorch's loader takes)."""
    out = {}
    for case, (n, bs, drop_last, seed, stop) in enumerate(LOADER_CASES):
        torch.manual_seed(100 + case)
        kw = {"generator": torch.Generator().manual_seed(seed)} if seed is not None else {}
        ds = TensorDataset(torch.arange(n))
        shuffled = DataLoader(ds, batch_size=bs, shuffle=True, drop_last=drop_last, **kw)
        plain = DataLoader(ds, batch_size=bs)
        order = []
        for epoch in range(3):
            for b, (x,) in enumerate(shuffled):
                order.extend(x.tolist())
                if stop is not None and b == stop:
                    break
        for (x,) in plain:
            order.extend(x.tolist())
        out[f"order.{case}"] = torch.tensor(order, dtype=torch.int64)
        out[f"after.{case}"] = torch.rand(4, dtype=torch.float64)
    return out


# (n, batch_size, drop_last, loader seed or None for the global generator, break after batch)
# — the same list is in parity.rs.
LOADER_CASES = [
    (10, 3, False, None, None),
    (10, 5, False, None, None),
    (10, 3, True, 17, None),
    (10, 5, False, 17, None),
    (10, 3, False, 17, None),
    (1000, 64, False, 2**40 + 3, None),
    (12, 4, False, 9, 1),
]


def main():
    d = sys.argv[1]
    assert torch.__version__.startswith("2.11."), torch.__version__
    torch.set_num_threads(1)
    data = load_file(f"{d}/data.safetensors")
    for name, run in [
        ("iris", iris),
        ("classifier_mlp", classifier_mlp),
        ("cifar_net", cifar_net),
        ("network", network),
    ]:
        init, losses = run(d, data)
        save_file(
            {**init, "losses": torch.tensor(losses, dtype=torch.float64)},
            f"{d}/{name}_python.safetensors",
        )
        print(f"{name}: {len(losses)} steps, first loss {losses[0]:.8f}, last {losses[-1]:.8f}")
    save_file(loader_orders(d, data), f"{d}/loader_python.safetensors")
    print("python side ok")


if __name__ == "__main__":
    main()
