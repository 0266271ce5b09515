"""Supply chain: hub weights must be pinned to a commit before they are downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workbench.models.registry import MissingWeightsError, ModelSpec, resolve_weights

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"


def test_an_unpinned_hub_download_is_refused_with_the_fix(monkeypatch):
    monkeypatch.delenv("AS2D_ALLOW_UNPINNED", raising=False)
    spec = ModelSpec(name="whisper-base", family="whisper", hub_id="openai/whisper-base")
    with pytest.raises(MissingWeightsError, match="no pinned revision") as err:
        resolve_weights(spec, allow_network=True)  # refused before any network access
    assert "revision: <commit sha>" in str(err.value) and "AS2D_ALLOW_UNPINNED=1" in str(err.value)


def test_every_hub_id_in_conf_model_has_a_revision_key():
    for path in sorted(CONF.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for role, block in doc.items():
            if isinstance(block, dict) and block.get("hub_id"):
                assert "revision" in block, f"{path.name}: {role} has a hub_id but no revision key"
                assert ModelSpec.from_dict(block).revision == block["revision"]
