"""LooC's n + 1 key views through the momentum encoder: in one forward of (n + 1) x batch images (the library's
`LooC.forward`), or in n + 1 forwards of one batch each (a prototype here, not in the library), in whole training steps.

    PYTHONPATH=. python bench/bench_looc_keys.py [--rounds 3] [--steps 8] [--threads 1 2]

The `cpu` recipe's network and batch (`bench_looc.py`'s build: quarter-width ResNet-18, 48 px, batch 256, split
BatchNorm in 4), LooC leaving out colour, rotation and texture (four key views). The two differ in more than speed:
in one forward a split BatchNorm's sub-batch mixes the key views, in a forward per view each view is normalised on
its own (as the query is, and as MoCo's code normalises its one key batch), so the prototype trains other weights.
Each thread count runs in a child process of its own (a training process's threads are fixed at its start, and the
`make repro` pool trains two models at once with one thread each), the two steps alternating within it; median of
`--steps` after two warm-up steps each (`_timing.alternating_medians`), CPU time of the process (wall beside).
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import alternating_medians, child_rounds, training_step


def per_view_looc():
    "A LooC whose keys go through the key encoder one view at a time, each view shuffled as in the library."
    import torch, torch.nn.functional as F
    from invariances.train import looc as L

    class PerViewLooC(L.LooC):
        def forward(self, x, idx=None, generator=None):
            view_q, view_keys, _ = self.views(x, generator)
            perm, inverse = L.batch_shuffle(len(x), generator, x.device)
            def queries():
                v = self._per_head(self.encoder_q(view_q))
                return torch.stack([F.normalize(h(vi).float(), dim=1) for h, vi in zip(self.heads_q, v)])
            @torch.no_grad()
            def keys():   # (S, V, B, d), as the library's
                out = []
                for k in view_keys:
                    v = self._per_head(self.encoder_k(k[perm]))
                    out.append(torch.stack([F.normalize(h(vi).float(), dim=1) for h, vi in zip(self.heads_k, v)])[:, inverse])
                return torch.stack(out, 1)
            q, k = L.run_concurrently(queries, keys, device=x.device)
            return L.looc_loss(q, k, self.config.temperature, offset=0), {}
    return PerViewLooC


def child(threads, steps):
    import numpy as np, torch
    from bench_looc import build
    from invariances.runtime import Runtime
    torch.set_num_threads(threads)
    runtime = Runtime.detect()
    images = np.random.default_rng(0).integers(0, 256, (512, 48, 48, 3), dtype=np.uint8)
    cases = {}
    for name, cls in (("one forward", None), ("a forward per view", per_view_looc())):
        method = build("looc-3")
        if cls is not None: method.__class__ = cls
        cases[name] = training_step(runtime.model(method).train(), images, 256, torch.Generator().manual_seed(0), runtime)
    for f in cases.values(): f()   # a second warm-up each (alternating_medians drops one round)
    cpu, wall = alternating_medians(cases, steps)
    print(json.dumps({"runtime": runtime.path, "cpu": cpu, "wall": wall}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3); ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2]); ap.add_argument("--child", type=int)
    a = ap.parse_args()
    if a.child: return child(a.child, a.steps)
    from invariances.runtime import process_env
    variants = {f"{t} thread(s)": (["--child", str(t), "--steps", str(a.steps)], process_env()) for t in a.threads}
    got = child_rounds(__file__, variants, a.rounds, log=lambda s: print(s, flush=True))
    for name, rounds in got.items():
        ratio = lambda clock: [r[clock]["one forward"] / r[clock]["a forward per view"] for r in rounds]
        c = rounds[0]["cpu"]
        print(f"{name} ({rounds[0]['runtime']}): LooC (colour, rotation, texture) step, round 1: one forward {c['one forward']:.3f} s CPU, "
              f"a forward per view {c['a forward per view']:.3f}; one / per view, median of {len(rounds)} rounds: "
              f"CPU {statistics.median(ratio('cpu')):.2f}x ({', '.join(f'{x:.2f}' for x in ratio('cpu'))}), "
              f"wall {statistics.median(ratio('wall')):.2f}x")


if __name__ == "__main__": main()
