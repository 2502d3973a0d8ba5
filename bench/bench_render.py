"""Renderer throughput at 64x64 (images/s), single-object and 2-5-object scenes; optional object-set build time.

Usage: PYTHONPATH=. python bench/bench_render.py [--n 1024] [--size 64] [--device cpu] [--build 0]
`--build N` also times building an N-image object-centric set into a fresh temporary cache.
"""
import argparse, os, tempfile, time
import torch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512); ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=512); ap.add_argument("--device", default="cpu")
    ap.add_argument("--build", type=int, default=0)
    a = ap.parse_args()
    from invariances.data.render import benchmark
    benchmark(64, a.size, device=a.device)   # warm-up
    print(f"torch threads: {torch.get_num_threads()}, device: {a.device}")
    for label, k in (("single object", 1), ("2-5 objects", (2, 5))):
        ips = benchmark(a.n, a.size, n_objects=k, batch=a.batch, device=a.device, repeats=2)
        print(f"{label:>14}: {ips:8.0f} images/s at {a.size}x{a.size}")
    if a.build:
        os.environ["INVARIANCES_CACHE"] = tempfile.mkdtemp(prefix="inv_bench_")
        from invariances.data.synthetic import object_set
        t = time.perf_counter(); object_set(a.build, a.size, device=a.device)
        print(f"object set of {a.build} images built and cached in {time.perf_counter() - t:.1f} s")

if __name__ == "__main__":
    main()
