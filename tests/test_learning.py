"""The guard issue 14 asked for: a model trained with the `cpu` recipe must read out better than the untrained network.

The first `cpu` MoCo models classified held-out objects worse by k-NN than their untrained initialisation while their
training logs looked busy (a contrastive accuracy that rose and fell): nothing but a held-out readout would have
caught it. This test trains MoCo-v2 (Default policy) with the `cpu` profile's own recipe, exactly as the zoo does,
and compares its held-out k-NN accuracy with the same networks before training (`evaluation.recipe.recipe_run`; the
records are cached, so a warm cache costs nothing). It takes a few minutes on 2 cores: marked slow, run by `make test`.
One seed (seed 0): the recipe the cpu-recipe batch chose (1700 steps) reads out about +0.25 above its untrained
network, and one seed's margin varies by about 0.04-0.09 (a run by 0.02-0.04, a seed's untrained network from 0.20 to
0.29), so a threshold of +0.10 fails only when learning is lost. (Two seeds were needed for the first recipe, whose
+0.06 margin was within a seed's noise of the +0.04 threshold; they cost 35 minutes of CI on an fp32 host.)
"""
import pytest


@pytest.mark.slow
def test_cpu_recipe_beats_the_untrained_network():
    from invariances.evaluation.recipe import recipe_run
    r = recipe_run("profile", "cpu", {}, evaluations=1, seed=0)
    curve = [c["knn_accuracy"] for c in r["curve"]]
    assert len(curve) == 2 and curve[-1] == r["knn_accuracy"]
    assert r["final_loss"] < r["chance_loss"], "the contrastive loss did not fall below chance"
    trained, untrained = r["knn_accuracy"], r["untrained_knn_accuracy"]
    # the first cpu recipe measured about +0.06 over its untrained networks (means over 3 seeds, on two hosts); the
    # cpu-recipe batch's choice of 2026-11-25 about +0.25
    assert trained > untrained + 0.10, (
        f"the cpu recipe's MoCo reads out barely better than its untrained network: {trained:.3f} vs {untrained:.3f} "
        f"(held-out k-NN accuracy, seed 0; at least +0.10 expected); training no longer learns")
