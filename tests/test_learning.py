"""The guard issue 14 asked for: a model trained with the `cpu` recipe must read out better than the untrained network.

The first `cpu` MoCo models classified held-out objects worse by k-NN than their untrained initialisation while their
training logs looked busy (a contrastive accuracy that rose and fell): nothing but a held-out readout would have
caught it. This test trains MoCo-v2 (Default policy) with the `cpu` profile's own recipe, exactly as the zoo does,
and compares its held-out k-NN accuracy with the same networks before training (`evaluation.recipe.recipe_run`; the
records are cached, so a warm cache costs nothing). It takes a few minutes on 2 cores: marked slow, run by `make test`.
Two seeds, compared by their means: one run varies by 0.02-0.04, and a seed's untrained network by as much (0.20 to
0.29), so a single seed's margin can fall below the threshold on another CPU's arithmetic (it did: 0.235 against
0.202 for seed 0 at 300 steps on an AVX-512 host) without anything being broken.
"""
import pytest


@pytest.mark.slow
def test_cpu_recipe_beats_the_untrained_network():
    from invariances.evaluation.recipe import recipe_run
    runs = [recipe_run("profile", "cpu", {}, evaluations=1, seed=s) for s in (0, 1)]
    for r in runs:
        curve = [c["knn_accuracy"] for c in r["curve"]]
        assert len(curve) == 2 and curve[-1] == r["knn_accuracy"]
        assert r["final_loss"] < r["chance_loss"], f"seed {r['config']['seed']}: the contrastive loss did not fall below chance"
    trained = sum(r["knn_accuracy"] for r in runs) / 2
    untrained = sum(r["untrained_knn_accuracy"] for r in runs) / 2
    # the first cpu recipe measured about +0.06 over its untrained networks (means over 3 seeds, on two hosts); the
    # cpu-recipe batch's choice of 2026-11-25 about +0.25
    assert trained > untrained + 0.04, (
        f"the cpu recipe's MoCo reads out barely better than its untrained networks: {trained:.3f} vs {untrained:.3f} "
        f"(held-out k-NN accuracy, mean of seeds 0 and 1; at least +0.04 expected); training no longer learns")
