"""The MLP training step of issue 16's recipe, hand-written for the peers of bench/train_mlp/run.py.

One process per peer and configuration: `peers.py PEER SIZES BATCH IMAGES [DEVICE]` trains two
epochs on the same synthetic images (the first a warm-up) and prints one JSON line {"images_per_s", "losses"}:
images/s = steps x batch / time of the second epoch. Recipe: ReLU MLP, softmax cross-entropy,
SGD lr 0.02 momentum 0.9, f32, inputs in [-1, 1], weights uniform(-1, 1) x sqrt(2 / fan_in), zero
biases, batches in order. PEER: numpy, torch (eager), torch-jit (torch.jit.script of the model),
torch-compile (torch.compile of the model and its loss; autograd and the optimizer as usual),
jax (the whole step, forward, loss, gradients and update, one jax.jit function with the parameters
and momenta donated, so XLA updates them in place as rlx does).
DEVICE (torch peers): cpu (default) or cuda, where the images are put on the GPU once, before
timing, and each step's loss is read back as a number, as rlx train does.
"""
import json
import sys
import time

import numpy as np


def data(images, pixels, classes, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(images, pixels), dtype=np.uint8).astype(np.float32) * (2.0 / 255.0) - 1.0
    y = rng.integers(0, classes, size=images).astype(np.int64)
    return x, y


def init(sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = (rng.uniform(-1.0, 1.0, size=(fan_out, fan_in)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        params.append([w, np.zeros(fan_out, np.float32)])
    return params


def numpy_peer(sizes, batch, x, y):
    params = init(sizes)
    moms = [[np.zeros_like(w), np.zeros_like(b)] for w, b in params]
    lr, mu = np.float32(0.02), np.float32(0.9)
    layers = len(params)

    def step(xb, yb):
        acts = [xb]
        h = xb
        for i, (w, b) in enumerate(params):
            z = h @ w.T + b
            h = np.maximum(z, 0) if i + 1 < layers else z
            acts.append(h)
        m = h.max(axis=1, keepdims=True)
        e = np.exp(h - m)
        s = e.sum(axis=1, keepdims=True)
        n = xb.shape[0]
        loss = float(np.mean(np.log(s[:, 0]) + m[:, 0] - h[np.arange(n), yb]))
        g = e / s
        g[np.arange(n), yb] -= 1
        g *= np.float32(1.0 / n)
        for i in reversed(range(layers)):
            w, b = params[i]
            gw = g.T @ acts[i]
            gb = g.sum(axis=0)
            if i > 0:
                g = (g @ w) * (acts[i] > 0)
            for p, mom, grad in ((w, moms[i][0], gw), (b, moms[i][1], gb)):
                mom *= mu
                mom += grad
                p -= lr * mom
        return loss

    return run_epochs(step, batch, x, y)


def torch_peer(sizes, batch, x, y, mode, device):
    import torch

    params = init(sizes)
    layers = []
    for i, (w, b) in enumerate(params):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if i + 1 < len(params):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(device)
    if mode == "torch-jit":
        model = torch.jit.script(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    forward = lambda xb, yb: loss_fn(model(xb), yb)  # noqa: E731
    if mode == "torch-compile":
        forward = torch.compile(forward)
    tx, ty = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        loss = forward(xb, yb)
        loss.backward()
        opt.step()
        return loss.item()

    return run_epochs(step, batch, tx, ty)


def jax_peer(sizes, batch, x, y):
    import jax
    import jax.numpy as jnp

    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in init(sizes)]
    moms = [(jnp.zeros_like(w), jnp.zeros_like(b)) for w, b in params]
    lr, mu = 0.02, 0.9

    def loss_of(ps, xb, yb):
        h = xb
        for i, (w, b) in enumerate(ps):
            h = h @ w.T + b
            if i + 1 < len(ps):
                h = jnp.maximum(h, 0)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

    def update(ps, ms, xb, yb):
        loss, grads = jax.value_and_grad(loss_of)(ps, xb, yb)
        ms = jax.tree_util.tree_map(lambda m, g: mu * m + g, ms, grads)
        ps = jax.tree_util.tree_map(lambda p, m: p - lr * m, ps, ms)
        return ps, ms, loss

    update = jax.jit(update, donate_argnums=(0, 1))
    state = {"p": params, "m": moms}
    tx, ty = jnp.asarray(x), jnp.asarray(y.astype(np.int32))

    def step(xb, yb):
        state["p"], state["m"], loss = update(state["p"], state["m"], xb, yb)
        return float(loss)

    return run_epochs(step, batch, tx, ty)


def run_epochs(step, batch, x, y):
    steps = x.shape[0] // batch
    losses = []
    rate = 0.0
    for epoch in range(2):
        start = time.perf_counter()
        total = 0.0
        for s in range(steps):
            total += step(x[s * batch : (s + 1) * batch], y[s * batch : (s + 1) * batch])
        rate = steps * batch / (time.perf_counter() - start)
        losses.append(total / steps)
    return {"images_per_s": rate, "losses": losses}


def main():
    peer, sizes, batch, images = sys.argv[1], [int(v) for v in sys.argv[2].split(",")], int(sys.argv[3]), int(sys.argv[4])
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    x, y = data(images, sizes[0], sizes[-1])
    if peer == "numpy":
        out = numpy_peer(sizes, batch, x, y)
    elif peer == "jax":
        out = jax_peer(sizes, batch, x, y)
    elif peer in ("torch", "torch-jit", "torch-compile"):
        out = torch_peer(sizes, batch, x, y, peer, device)
    else:
        raise SystemExit(f"unknown peer {peer}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
