"""Throughput of the batched `default` policy vs torchvision's per-image PIL pipeline (the MoCo-v2 reference code),
and vs a ResNet-18 training step on the same batch. 64x64 images, batch 256, 2 threads, one process.

    PYTHONPATH=. python bench/bench_policies.py [--batch 256] [--size 64] [--repeats 5]
"""
import argparse, os, random, statistics, time

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image, ImageFilter

from invariances.core import to_float_images
from invariances.policies import get_policy, new_generator


class PILGaussianBlur:
    "MoCo's `moco.loader.GaussianBlur`: PIL blur with a random radius, scaled here by size / 224."
    def __init__(self, sigma=(0.1, 2.0), scale=1.0): self.sigma, self.scale = sigma, scale
    def __call__(self, im): return im.filter(ImageFilter.GaussianBlur(radius=random.uniform(*self.sigma) * self.scale))


def moco_pil_pipeline(size):
    return T.Compose([
        T.RandomResizedCrop(size, scale=(0.2, 1.0)),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2),
        T.RandomApply([PILGaussianBlur(scale=size / 224)], p=0.5),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])


def timed(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    # smooth-ish random images (noise would make PIL's and our blur/jitter cost the same anyway)
    base = rng.integers(0, 256, (args.batch, 8, 8, 3), dtype=np.uint8)
    images = np.stack([np.asarray(Image.fromarray(b).resize((args.size, args.size), Image.BILINEAR)) for b in base])
    pil_images = [Image.fromarray(im) for im in images]

    pil = moco_pil_pipeline(args.size)
    policy = get_policy("default", args.size)
    g = new_generator(0)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1); std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def run_pil(): return torch.stack([pil(im) for im in pil_images])

    try:  # kornia's batched equivalent (per-sample parameters)
        import kornia.augmentation as K
        k = max(3, 2 * round(3 * 2.0 * args.size / 224) + 1)
        kaug = K.AugmentationSequential(
            K.RandomResizedCrop((args.size, args.size), scale=(0.2, 1.0)), K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=0.8),
            K.RandomGrayscale(p=0.2), K.RandomGaussianBlur((k, k), (0.1 * args.size / 224, 2.0 * args.size / 224), p=0.5),
            K.RandomHorizontalFlip())
        def run_kornia(): return (kaug(to_float_images(images)) - mean) / std
    except Exception as e:  # noqa: BLE001 - kornia is optional here
        print(f"(kornia unavailable: {e})"); run_kornia = None
    def run_batched(): return (policy(to_float_images(images), g)[0] - mean) / std  # same work: uint8 in, normalised out

    model = torchvision.models.resnet18()
    model.fc = torch.nn.Identity()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x_train = run_batched()
    def run_step():
        opt.zero_grad(set_to_none=True)
        model(x_train).pow(2).mean().backward()
        opt.step()

    # interleave the measurements so that load from other processes hits all three alike
    t_pil, t_batched, t_step, t_kornia = [], [], [], []
    for _ in range(args.repeats):
        t_pil.append(timed(run_pil, 1)); t_batched.append(timed(run_batched, 3)); t_step.append(timed(run_step, 1))
        if run_kornia: t_kornia.append(timed(run_kornia, 1))
    tp, tb, ts = statistics.median(t_pil), statistics.median(t_batched), statistics.median(t_step)
    n = args.batch
    print(f"default policy, {args.size}x{args.size}, batch {n}, {args.threads} threads, torch {torch.__version__}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other processes slow all three alike)")
    print(f"  torchvision per-image PIL pipeline : {n / tp:9.0f} views/s  ({tp * 1000:7.1f} ms/batch)")
    print(f"  batched invariances.policies       : {n / tb:9.0f} views/s  ({tb * 1000:7.1f} ms/batch)")
    if t_kornia:
        tk = statistics.median(t_kornia)
        print(f"  kornia 0.9 AugmentationSequential  : {n / tk:9.0f} views/s  ({tk * 1000:7.1f} ms/batch)")
    print(f"  speed-up batched / PIL             : {tp / tb:9.1f} x   (target >= 5)")
    print(f"  ResNet-18 train step (fwd+bwd+SGD) : {n / ts:9.0f} img/s   ({ts * 1000:7.1f} ms/batch)")
    print(f"  batched policy / train step        : {tb / ts * 100:9.1f} %   (target < 10%; a MoCo step needs 2 views: {2 * tb / ts * 100:.1f} %)")
    print(f"  PIL pipeline / train step          : {tp / ts * 100:9.1f} %")
    # where the batched policy spends its time (same batch, same parameters)
    x = to_float_images(images)
    p = policy.sample(n, g, args.size, args.size)
    geo = policy["crop"].matrix(p["crop"]) @ policy["flip"].matrix(p["flip"])
    from invariances.ops import warp
    parts = {"crop+flip (one grid_sample)": lambda: warp(x, geo, args.size)}
    for a in ("jitter", "grayscale", "blur"): parts[a] = (lambda a=a: policy[a].apply(x, p[a]))
    parts["sampling parameters"] = lambda: policy.sample(n, g, args.size, args.size)
    print(f"  breakdown ({torch.get_num_threads()} threads):",
          ", ".join(f"{k} {timed(f, args.repeats) * 1000:.1f} ms" for k, f in parts.items()))


if __name__ == "__main__":
    main()
