"""A PIRL step (Misra & van der Maaten 2020) as a ratio to a MoCo-v2 step on the same batch, and the memory bank's share
of the step, in one run.

    PYTHONPATH=. python bench/bench_pirl.py [--steps 8] [--threads 2]

The `cpu` profile's network and batch (ResNet-18 at quarter width, 48 px, batch 256), rendered-size uint8 images, each
method as its `cpu` config builds it (MoCo: no queue, split BatchNorm; PIRL: 4,096 negatives from a bank of 20,000).
Timed, alternating step by step so that a shared machine's noise hits all alike:
  * moco, pirl: a whole step (views, forwards, loss, backward, SGD, `after_step`);
  * bank: PIRL's memory-bank work alone: reading the batch's entries, drawing and gathering the negatives, the update.
PIRL's nine patches at a third of the side cost about one more forward-backward where MoCo has a key forward: the
target is a PIRL step at most 2.2x MoCo's, and the bank under 5 % of the PIRL step. The ratio also sets the `cpu`
profile's PIRL steps (`PirlConfig.SCALES`): MoCo's compute per model. CPU time of the process (x threads) is the
primary clock; wall beside.
"""
import argparse
import numpy as np, pandas as pd
import torch

from _timing import alternating_medians, training_step
from invariances.data.imageset import ImageSet
from invariances.profiles import get_profile
from invariances.runtime import Runtime
from invariances.train.methods import method_config
from invariances.train.moco import MoCo
from invariances.train.pirl import PIRL

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--steps", type=int, default=8); ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(); torch.set_num_threads(a.threads)
    runtime = Runtime.detect()
    profile = get_profile("cpu"); size, batch, n_images = profile.image_size, 256, 20_000
    images = np.random.default_rng(0).integers(0, 256, (n_images, size, size, 3), dtype=np.uint8)
    gen = torch.Generator().manual_seed(0)
    methods = {"moco": MoCo(method_config("moco", profile, policy="default")),
               # built as the zoo builds it: the bank filled by the network at the first (warm-up) step
               "pirl": PIRL.build(method_config("pirl", profile), ImageSet(images, pd.DataFrame(index=range(n_images))))}
    for k, m in methods.items(): methods[k] = runtime.model(m).train()
    pirl = methods["pirl"]
    z = torch.nn.functional.normalize(torch.randn(batch, pirl.config.proj_dim), dim=1)
    def bank():
        idx = torch.randperm(n_images, generator=gen)[:batch]
        pirl.bank[idx], pirl.bank[pirl.bank.sample(pirl.config.negatives, gen)]
        pirl.bank.update(idx, z)
    cases = {"moco": training_step(methods["moco"], images, batch, gen, runtime),
             "pirl": training_step(pirl, images, batch, gen, runtime), "bank": bank}
    med, medw = alternating_medians(cases, a.steps)
    print(f"runtime {runtime.path}, {a.threads} threads, batch {batch}, {size} px, median of {a.steps} steps (CPU s; wall s)")
    for k in cases: print(f"  {k:5s} {med[k]:.3f} ({medw[k]:.3f})")
    for clock, m in (("CPU", med), ("wall", medw)):
        print(f"pirl / moco ({clock}): {m['pirl'] / m['moco']:.2f} (target <= 2.2); bank / pirl step: "
              f"{100 * m['bank'] / m['pirl']:.1f} % (target < 5 %); PIRL steps at MoCo's compute: "
              f"{round(method_config('moco', profile).steps * m['moco'] / m['pirl'])}")

if __name__ == "__main__": main()
