#!/usr/bin/env python3
"""PyTorch side of the one-chip training comparison (bench/train_step.c).

Builds the same models as models/resnet.c and models/bert.c (architecture,
shapes, batch, optimizer), trains them on CPU with one thread, and prints the
median wall and CPU time of a training step in train_step's format:

    torch_train.py resnet|bert [batch] [steps] [warmup]
    model=resnet batch=32 steps=10 wall_ms=.. cpu_ms=.. framework=torch-1.13.1

What matches ftmesh: ResNet-8 (CIFAR style, width 16, 32x32 inputs, 10
classes; conv without bias, batch norm in training mode with batch
statistics, eps 1e-5, no running statistics; 1x1 projection shortcuts when
the shape changes; global average pool; linear; mean cross-entropy), SGD
with momentum 0.9, lr 0.1, weight decay 5e-4 on the conv and fc weights
only. BERT: hidden 64, 2 post-LN layers, 2 heads, FFN 256, seq 32, vocab
1000, exact GELU, dropout 0.1 (hidden and attention), padding mask, MLM head
(dense + GELU + layer norm, logits tied to the token embeddings plus a
bias) on the masked positions only (15%), per-example mean loss; LAMB
(lr 1e-2, betas 0.9/0.999, eps 1e-6, weight decay 0.01 and trust ratio on
the weight matrices only). The learning-rate warmup is left out (it changes
one scalar). Data: a fixed synthetic batch (ftmesh generates its synthetic
batch inside the step, well under 1% of it).
"""
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def bn(c):
    return nn.BatchNorm2d(c, eps=1e-5, track_running_stats=False)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = bn(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = bn(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), bn(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class ResNet(nn.Module):
    def __init__(self, depth=8, w=16, classes=10):
        super().__init__()
        n = (depth - 2) // 6
        self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), bn(w), nn.ReLU())
        blocks, c = [], w
        for s in range(3):
            for j in range(n):
                oc = w << s
                blocks.append(Block(c, oc, 2 if s > 0 and j == 0 else 1))
                c = oc
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(4 * w, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))


class Layer(nn.Module):
    def __init__(self, C, NH, F_, p):
        super().__init__()
        self.NH, self.p = NH, p
        self.qkv = nn.Linear(C, 3 * C)
        self.o = nn.Linear(C, C)
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.f1 = nn.Linear(C, F_)
        self.f2 = nn.Linear(F_, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)

    def forward(self, x, keymask):
        N, T, C = x.shape
        hd = C // self.NH
        q, k, v = self.qkv(x).view(N, T, 3, self.NH, hd).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(keymask, float("-inf"))
        a = F.dropout(torch.softmax(s, dim=-1), self.p, True)
        att = (a @ v).transpose(1, 2).reshape(N, T, C)
        h = self.ln1(x + F.dropout(self.o(att), self.p, True))
        return self.ln2(h + F.dropout(self.f2(F.gelu(self.f1(h))), self.p, True))


class Bert(nn.Module):
    def __init__(self, V=1000, T=32, C=64, L=2, NH=2, p=0.1):
        super().__init__()
        self.p = p
        self.wte = nn.Parameter(torch.randn(V, C) * 0.02)
        self.wpe = nn.Parameter(torch.randn(T, C) * 0.02)
        self.ln = nn.LayerNorm(C, eps=1e-5)
        self.layers = nn.ModuleList([Layer(C, NH, 4 * C, p) for _ in range(L)])
        self.head = nn.Linear(C, C)
        self.hln = nn.LayerNorm(C, eps=1e-5)
        self.bias = nn.Parameter(torch.zeros(V))

    def forward(self, tok, valid, rows, labels, weights):
        N, T = tok.shape
        x = F.dropout(self.ln(self.wte[tok] + self.wpe[:T]), self.p, True)
        keymask = ~valid[:, None, None, :]
        for layer in self.layers:
            x = layer(x, keymask)
        xm = x.reshape(N * T, -1)[rows]
        logits = self.hln(F.gelu(self.head(xm))) @ self.wte.t() + self.bias
        return (F.cross_entropy(logits, labels, reduction="none") * weights).sum()


def lamb_step(params, state, step, lr=1e-2, b1=0.9, b2=0.999, eps=1e-6, wd=0.01):
    """LAMB as in src/nn/optim.c: AdamW update, scaled per decayed tensor by
    ||p|| / ||update||; tensors without decay get neither."""
    bc1, bc2 = 1 - b1 ** (step + 1), 1 - b2 ** (step + 1)
    with torch.no_grad():
        for p, decay in params:
            m, v = state[p]
            m.mul_(b1).add_(p.grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            u = (m / bc1) / ((v / bc2).sqrt_() + eps)
            ratio = 1.0
            if decay:
                u.add_(p, alpha=wd)
                pn, un = p.norm().item(), u.norm().item()
                if pn > 0 and un > 0:
                    ratio = pn / un
            p.add_(u, alpha=-lr * ratio)


def resnet_setup(batch):
    torch.manual_seed(1)
    model = ResNet()
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    rest = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": rest, "weight_decay": 0.0}], lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))

    def step(s):
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def bert_batch(batch, T=32, V=1000, mask_prob=0.15):
    g = torch.Generator().manual_seed(1)
    lens = torch.randint(T // 2, T + 1, (batch,), generator=g)
    valid = torch.arange(T)[None, :] < lens[:, None]
    tok = torch.randint(5, V, (batch, T), generator=g) * valid
    tok[:, 0] = 2
    masked = (torch.rand(batch, T, generator=g) < mask_prob) & valid
    masked[:, 0] = False
    masked[torch.arange(batch), 1] |= ~masked.any(dim=1)   # at least one per example
    rows = masked.reshape(-1).nonzero().squeeze(1)
    labels = tok.reshape(-1)[rows]
    inp = tok.masked_fill(masked, 1)
    weights = (1.0 / (masked.sum(1, keepdim=True).float() * batch)).expand(batch, T)
    return inp, valid, rows, labels, weights.reshape(-1)[rows]


def bert_setup(batch):
    torch.manual_seed(1)
    model = Bert()
    params = [(p, p.dim() > 1) for p in model.parameters()]
    state = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p, _ in params}
    data = bert_batch(batch)

    def step(s):
        for p, _ in params:
            p.grad = None
        loss = model(*data)
        loss.backward()
        lamb_step(params, state, s)
        return loss.item()
    return step


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet"
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    step = (bert_setup if name == "bert" else resnet_setup)(batch)
    wall, cpu = [], []
    for s in range(warmup + steps):
        w0, c0 = time.perf_counter(), time.process_time()
        step(s)
        if s >= warmup:
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
    print("model=%s batch=%d steps=%d wall_ms=%.2f cpu_ms=%.2f framework=torch-%s" % (
        name, batch, steps, 1e3 * statistics.median(wall), 1e3 * statistics.median(cpu),
        torch.__version__))


if __name__ == "__main__":
    main()
