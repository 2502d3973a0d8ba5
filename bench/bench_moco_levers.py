"""Where a CPU MoCo-v2 step's time goes beyond the bare step, and what the candidate speed-ups measure, in one run.

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_moco_levers.py [--width 0.25] [--batch 256] [--threads 2]
                                                                           [--only parts forward prefetch chunks colour_map two_views]

`bench_moco.py` gives the ratio MoCo/bare; this script breaks the MoCo step down and times the levers tried against it
(`bench/RESULTS.md`, "An AVX2 host without bf16"), each against its baseline in the same run, fp32, ResNet-18 at
`--width`, 64 px, the Default policy, queue 0 and 4 BN splits as the `cpu` recipe:

* parts:      CPU time of each part of a MoCo step (as `MoCo.forward` and `fit` run it) and of the bare step's parts;
* forward:    the query and key forwards side by side (`core.run_concurrently`, what MoCo does) against in turn;
* prefetch:   the next batch's views made in a background thread while the step trains (a prototype, not library
              code) against in turn; bare steps alongside for the ratios;
* chunks:     the policy chain over chunks of C images within each thread's slice, against whole slices (same views);
* colour_map: five exact forms of the per-image 3x3 colour matrix (`ops.colour_map` uses `bmm`), one thread;
* two_views:  both views in one call of the policy (parameters concatenated) against two calls.
"""
import argparse, statistics, time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F

from invariances.core import to_float_images, run_concurrently
from invariances.data.imageset import ImageSet
from invariances.models import BackboneConfig, Encoder
from invariances.policies import Policy, get_policy, new_generator
from invariances.train.loop import _make_optimizer
from invariances.train.losses import batch_infonce_loss
from invariances.train.moco import MoCo, MocoConfig


def median_ms(ts, skip=1): return 1000 * statistics.median(ts[skip:])


class Setup:
    "A MoCo model as the `cpu` recipe builds it, a bare encoder of the same width, data and a generator."
    def __init__(self, width, batch, size=64):
        self.batch, self.size = batch, size
        self.data = ImageSet(np.random.default_rng(0).integers(0, 256, (batch * 2, size, size, 3), dtype=np.uint8))
        self.cfg = MocoConfig(arch="resnet18", width=width, small_stem=False, image_size=size, batch_size=batch, steps=100,
                              lr=0.06, queue_size=0, key_momentum=0.5, bn_splits=4)
        self.moco = MoCo(self.cfg, get_policy("default", size)).train()
        self.opt = _make_optimizer(self.moco, self.cfg)
        self.gen = torch.Generator().manual_seed(0)
        self.bare = Encoder(BackboneConfig("resnet18", width, False)).train()
        self.opt_b = torch.optim.SGD(self.bare.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        self.xb = torch.rand(batch, 3, size, size)

    def load(self, gen):
        idx = torch.randperm(len(self.data), generator=gen)[:self.batch]
        return to_float_images(self.data.images[idx.numpy()], "cpu")

    def encoders(self, vq, vk, concurrent=True):
        m, perm = self.moco, torch.randperm(len(vq), generator=self.gen)
        def queries(): return F.normalize(m.head_q(m.encoder_q(vq)).float(), dim=1)
        @torch.no_grad()
        def keys(): return F.normalize(m.head_k(m.encoder_k(vk[perm])).float(), dim=1)[torch.argsort(perm)]
        return run_concurrently(queries, keys) if concurrent else (queries(), keys())

    def train(self, vq, vk):
        q, k = self.encoders(vq, vk)
        loss = batch_infonce_loss(q, k, self.cfg.temperature)
        self.opt.zero_grad(set_to_none=True); loss.backward(); self.opt.step(); self.moco.after_step()

    def bare_step(self):
        loss = self.bare(self.xb).float().pow(2).mean()
        self.opt_b.zero_grad(set_to_none=True); loss.backward(); self.opt_b.step()


def parts(s: Setup, steps=7):
    T = {}
    def tick(name, t0):
        t = time.process_time(); T.setdefault(name, []).append(t - t0); return t
    for _ in range(steps):
        t = time.process_time()
        x = s.load(s.gen); t = tick("moco: uint8 to float", t)
        vq, vk = s.moco.views(x, s.gen), s.moco.views(x, s.gen); t = tick("moco: two views", t)
        q, k = s.encoders(vq, vk); t = tick("moco: query and key forward side by side", t)
        loss = batch_infonce_loss(q, k, s.cfg.temperature); t = tick("moco: loss", t)
        s.opt.zero_grad(set_to_none=True); loss.backward(); t = tick("moco: backward", t)
        s.opt.step(); t = tick("moco: SGD", t)
        s.moco.after_step(); t = tick("moco: momentum update", t)
        t = time.process_time()
        loss = s.bare(s.xb).float().pow(2).mean(); t = tick("bare: forward", t)
        s.opt_b.zero_grad(set_to_none=True); loss.backward(); t = tick("bare: backward", t)
        s.opt_b.step(); t = tick("bare: SGD", t)
    total = {w: sum(median_ms(v, 2) for k, v in T.items() if k.startswith(w)) for w in ("moco", "bare")}
    for k, v in T.items(): print(f"  {k:45s} {median_ms(v, 2):7.1f} ms CPU")
    print(f"  sum: moco {total['moco']:.0f} ms, bare {total['bare']:.0f} ms, ratio {total['moco'] / total['bare']:.2f}")


def forward(s: Setup, rounds=8):
    R = {True: [], False: []}
    for _ in range(rounds):
        for conc in (True, False):
            t, w = time.process_time(), time.perf_counter()
            q, k = s.encoders(s.xb, s.xb, conc); batch_infonce_loss(q, k, s.cfg.temperature).backward()
            s.opt.zero_grad(set_to_none=True)
            R[conc].append((time.process_time() - t, time.perf_counter() - w))
    for conc, name in ((True, "side by side"), (False, "in turn")):
        a = 1000 * np.median(np.array(R[conc][2:]), 0)
        print(f"  query + key forward and backward, {name:12s}: CPU {a[0]:.0f} ms, wall {a[1]:.0f} ms")


def prefetch(s: Setup, steps=4, rounds=5):
    vgen, pool = torch.Generator().manual_seed(1), ThreadPoolExecutor(1)
    def views(threads):
        torch.set_num_threads(threads)
        x = s.load(vgen); return s.moco.views(x, vgen), s.moco.views(x, vgen)
    def in_turn():
        for _ in range(steps): s.train(*views(torch.get_num_threads()))
    def ahead(threads):
        def run():
            fut = pool.submit(views, threads)
            for _ in range(steps):
                v = fut.result(); fut = pool.submit(views, threads); s.train(*v)
            fut.result()
        return run
    def bare():
        for _ in range(steps): s.bare_step()
    modes = {"bare step": bare, "MoCo, views in turn": in_turn, "MoCo, views ahead (1 thread)": ahead(1),
             "MoCo, views ahead (2 threads)": ahead(2)}
    R = {k: [] for k in modes}
    for f in modes.values(): f()  # warm-up
    for _ in range(rounds):
        for k, f in modes.items():
            t, w = time.process_time(), time.perf_counter(); f()
            R[k].append(((time.process_time() - t) / steps, (time.perf_counter() - w) / steps))
    base = np.median(np.array(R["bare step"]), 0)
    for k, v in R.items():
        a = np.median(np.array(v), 0)
        print(f"  {k:30s} CPU {1000 * a[0]:6.0f} ms, wall {1000 * a[1]:6.0f} ms; ratio to bare: CPU {a[0] / base[0]:.2f}, wall {a[1] / base[1]:.2f}")


def chunks(s: Setup, sizes=(8, 16, 32, 64), rounds=7):
    pol, x = s.moco.policy, torch.rand(s.batch, 3, s.size, s.size)
    p = pol.sample(s.batch, new_generator(0), s.size, s.size)
    whole = Policy._apply
    def chunked(c):
        def apply(self, x, params):
            pieces = [whole(self, x[a:a + c], {k: {kk: v[a:a + c] for kk, v in d.items()} for k, d in params.items()})
                      for a in range(0, x.shape[0], c)]
            return torch.cat(pieces)
        return apply
    variants = {"whole slices": whole, **{f"chunks of {c}": chunked(c) for c in sizes}}
    T, ref = {k: [] for k in variants}, pol.apply(x, p)
    try:
        for _ in range(rounds):
            for k, f in variants.items():
                Policy._apply = f
                t = time.process_time(); v = pol.apply(x, p); T[k].append(time.process_time() - t)
                assert torch.equal(v, ref), k
    finally: Policy._apply = whole
    for k, v in T.items(): print(f"  Default policy, {s.batch} images, {k:14s} {median_ms(v):7.1f} ms CPU (views identical)")


def colour_map(s: Setup, rounds=15):
    threads = torch.get_num_threads(); torch.set_num_threads(1)
    n, h, w = 128, s.size, s.size
    g = torch.Generator().manual_seed(0)
    x, m, c = torch.rand(n, 3, h, w, generator=g), torch.rand(n, 3, 3, generator=g), torch.rand(n, 3, generator=g)
    xf = x.reshape(n, 3, h * w)
    def bmm(): return torch.bmm(m, xf).add_(c.unsqueeze(2))
    def einsum(): return torch.einsum("nij,njp->nip", m, xf).add_(c.unsqueeze(2))
    def loop():
        out = torch.empty(n, 3, h * w)
        for i in range(3):
            o = out[:, i]; torch.mul(xf[:, 0], m[:, i, 0, None], out=o)
            o.addcmul_(xf[:, 1], m[:, i, 1, None]); o.addcmul_(xf[:, 2], m[:, i, 2, None]); o.add_(c[:, i, None])
        return out
    def addcmul():
        xs = xf.unsqueeze(2)
        out = torch.addcmul(c.view(n, 3, 1), m[:, :, 0, None], xs[:, 0])
        out.addcmul_(m[:, :, 1, None], xs[:, 1]); return out.addcmul_(m[:, :, 2, None], xs[:, 2])
    def product_sum(): return (m.unsqueeze(3) * xf.unsqueeze(1)).sum(2).add_(c.unsqueeze(2))
    forms = {"bmm (ops.colour_map)": bmm, "einsum": einsum, "loop over channels": loop, "broadcast addcmul": addcmul,
             "broadcast product, sum": product_sum}
    ref, T = bmm(), {k: [] for k in forms}
    try:
        for _ in range(rounds):
            for k, f in forms.items():
                t = time.perf_counter(); out = f(); T[k].append(time.perf_counter() - t)
                torch.testing.assert_close(out, ref)
    finally: torch.set_num_threads(threads)
    for k, v in T.items(): print(f"  colour map, {n} images, one thread, {k:24s} {median_ms(v):6.2f} ms")


def two_views(s: Setup, rounds=9):
    pol, x = s.moco.policy, torch.rand(s.batch, 3, s.size, s.size)
    p1, p2 = pol.sample(s.batch, new_generator(0), s.size, s.size), pol.sample(s.batch, new_generator(1), s.size, s.size)
    both = {k: {kk: torch.cat([v, p2[k][kk]]) for kk, v in d.items()} for k, d in p1.items()}
    xx, T = torch.cat([x, x]), {"two calls": [], "one call of twice the batch": []}
    for _ in range(rounds):
        t = time.process_time(); a, b = pol.apply(x, p1), pol.apply(x, p2); T["two calls"].append(time.process_time() - t)
        t = time.process_time(); ab = pol.apply(xx, both); T["one call of twice the batch"].append(time.process_time() - t)
    torch.testing.assert_close(torch.cat([a, b]), ab, rtol=0, atol=1e-6)
    for k, v in T.items(): print(f"  two views of {s.batch} images, {k:28s} {median_ms(v):6.1f} ms CPU")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=float, default=0.25); ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    benches = {"parts": parts, "forward": forward, "prefetch": prefetch, "chunks": chunks, "colour_map": colour_map,
               "two_views": two_views}
    ap.add_argument("--only", nargs="*", choices=list(benches))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"ResNet-18 width {a.width}, batch {a.batch}, 64 px, fp32, {a.threads} threads, torch {torch.__version__}, "
          f"{torch.backends.cpu.get_cpu_capability()}")
    s = Setup(a.width, a.batch)
    for name, f in benches.items():
        if a.only and name not in a.only: continue
        print(name, flush=True); f(s)


if __name__ == "__main__":
    main()
