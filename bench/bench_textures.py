"""Random-phase textures (`ops.random_phase_textures`, LooC's texture randomisation and fog's clouds): the library's
`torch.polar` against the `amp * exp(1j * phase)` it replaced, on the same draws, in one run, alternating; and the
textures of one `TextureRandomization(p=0.5)` draw, made only for the images blended (`rows`) against all of them; and
LooC's views leaving out colour, rotation and texture (n = 3: the query and four keys, five texture draws), where the
key that shares the query's texture only advances the generator (`Augmentation.skip`), against making that key's own
textures and discarding them (before 2026-11-29), on the same draws.

    PYTHONPATH=. python bench/bench_textures.py [--n 256] [--size 48] [--reps 10] [--threads 1]
"""
import argparse, math, statistics, time
import torch

from invariances.ops import random_phase_textures
from invariances.policies import TextureRandomization, get_policy
from invariances.train.looc import looc_views

def exp_route(n, size, beta, g):
    "The replaced spectrum: amp * exp(1j * phase); the rest as the library does it."
    fy = torch.fft.fftfreq(size)[:, None]; fx = torch.fft.rfftfreq(size)[None, :]
    amp = torch.sqrt(fx ** 2 + fy ** 2).clamp_min(1.0 / size)[None, None] ** (-beta.view(-1, 1, 1, 1))
    phase = 2 * math.pi * torch.rand(n, 3, size, size // 2 + 1, generator=g)
    t = torch.fft.irfft2(amp * torch.exp(1j * phase), s=(size, size))
    lo, hi = t.amin((2, 3), keepdim=True), t.amax((2, 3), keepdim=True)
    t = (t - lo) / (hi - lo + 1e-8)
    contrast = 0.5 + 0.5 * torch.rand(n, 3, 1, 1, generator=g)
    return t * contrast + (1 - contrast) * torch.rand(n, 3, 1, 1, generator=g)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--n", type=int, default=256); ap.add_argument("--size", type=int, default=48)
    ap.add_argument("--reps", type=int, default=10); ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(); torch.set_num_threads(a.threads)
    beta = torch.linspace(1.0, 2.5, a.n)
    same = (random_phase_textures(a.n, a.size, beta, torch.Generator().manual_seed(0))
            - exp_route(a.n, a.size, beta, torch.Generator().manual_seed(0))).abs().max().item()
    rows = torch.rand(a.n, generator=torch.Generator().manual_seed(1)) < 0.5        # p = 0.5: the images blended
    half = lambda n, size, b, g: random_phase_textures(n, size, b, g, rows=rows)
    bits = torch.equal(half(a.n, a.size, beta, torch.Generator().manual_seed(0))[rows],
                       random_phase_textures(a.n, a.size, beta, torch.Generator().manual_seed(0))[rows])
    policy, images = get_policy("looc_color_rotation_texture", a.size), torch.rand(a.n, 3, a.size, a.size)
    def views(n, size, b, g): return looc_views(images, policy, generator=g)
    def views_made(n, size, b, g):     # the given texture synthesised, then replaced by the query's
        skip = TextureRandomization.skip
        TextureRandomization.skip = lambda self, *args: self.sample(*args)
        try: return looc_views(images, policy, generator=g)
        finally: TextureRandomization.skip = skip
    views_same = all(torch.equal(u, v) for u, v in zip([views(0, 0, 0, torch.Generator().manual_seed(0))[0], *views(0, 0, 0, torch.Generator().manual_seed(0))[1]],
                                                      [views_made(0, 0, 0, torch.Generator().manual_seed(0))[0], *views_made(0, 0, 0, torch.Generator().manual_seed(0))[1]]))
    cases = (("polar (library)", random_phase_textures), ("exp (before)", exp_route), ("polar, rows blended (p = 0.5)", half),
             ("LooC n = 3 views (library)", views), ("LooC n = 3 views, texture made", views_made))
    times = {name: [] for name, _ in cases}
    for r in range(a.reps):
        for name, f in cases:
            t0 = time.perf_counter(); f(a.n, a.size, beta, torch.Generator().manual_seed(r)); times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{a.n} textures at {a.size} px, {a.threads} thread(s), median of {a.reps}; max |polar - exp| = {same:.1e}; "
          f"rows blended ({int(rows.sum())} of {a.n}) bit-identical to the full draw there: {bits}")
    for k, v in med.items(): print(f"  {k:32s} {v * 1000:7.1f} ms")
    print(f"  polar against exp: {med['exp (before)'] / med['polar (library)']:.2f}x")
    print(f"  rows blended against every row (one p = 0.5 draw): {med['polar (library)'] / med['polar, rows blended (p = 0.5)']:.2f}x")
    print(f"  LooC n = 3 views, the shared texture skipped against made: {med['LooC n = 3 views, texture made'] / med['LooC n = 3 views (library)']:.2f}x "
          f"(the same views, bit for bit: {views_same})")

if __name__ == "__main__":
    main()
