"""The deployment recipe in docs/deploy.md runs the embedder its image installs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).parents[2] / "docs" / "deploy.md"
NEEDS_EXTRA = {"sentence-transformers": "local-model"}  # an embedder kind -> the extra it needs


def _block(text: str, language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", text, re.S).group(1)


@pytest.mark.quick
def test_the_compose_recipes_embedder_is_installed_in_its_image():
    """The image installs no torch (no local-model extra): pinning sentence-transformers there
    left every worker and the bridge keyword-only."""
    text = DEPLOY.read_text(encoding="utf-8")
    extras = set(re.search(r"pip install [^\n]*'\.\[([^\]]*)\]'", _block(text, "dockerfile")).group(1).split(","))
    compose = yaml.safe_load(_block(text, "yaml"))
    kind = compose["x-cmms-env"]["CMMS_EMBEDDER"].partition(":")[0]
    assert NEEDS_EXTRA.get(kind, "") in extras | {""}, (kind, extras)
