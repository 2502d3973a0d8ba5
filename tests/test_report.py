"""The committed claims and paper values are consistent with each other, and each claim holds on the paper's own
numbers (a transcription or claim-writing error would show up here)."""
from pathlib import Path

import pandas as pd
import pytest
import yaml

from invariances.report import check_claim, load_claims, load_paper_values

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "repro" / "claims.yaml")
COMPARISONS = yaml.safe_load((ROOT / "repro" / "comparisons.yaml").read_text())


def paper_table(claim):
    comp = next((c for c in COMPARISONS if c["run"] == claim.run and c["table"] == claim.table), None)
    if comp is None: pytest.skip(f"no paper values for {claim.run}/{claim.table}")
    return load_paper_values(ROOT / "repro" / "paper_values" / comp["paper_values"], comp["measure"])


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_claim_holds_on_the_papers_numbers(claim):
    result = check_claim(claim, paper_table(claim))
    assert result.held is True, f"{claim.id} does not hold on the paper's own table: {result.passed}"


def test_paper_table2_transcription_shape():
    df = pd.read_csv(ROOT / "repro" / "paper_values" / "ericsson_table2.csv", comment="#")
    assert len(df) == 2 * 5 * 18 and df.groupby(["measure", "model"]).size().eq(18).all()
    assert df[df.significant].groupby("measure").size().to_dict() == {"similarity": 14}  # 7 bullets for Spatial, 7 for Appearance
