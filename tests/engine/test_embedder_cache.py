"""Attacks on the torch-free default embedder's cache, with the real model file and
real ONNX Runtime sessions."""
from __future__ import annotations

import tempfile

import numpy as np

from hermes_cmms.vectors import embedders

TEXTS = ["My sister Ines moved to Porto in March.", "next week's trip?", ""]


def test_a_cache_that_cannot_be_written_still_gives_the_onnx_model(tmp_path, monkeypatch):
    """A read-only home (a container, a service user without one): the model is prepared for
    the process in a temporary directory, removed at once, instead of semantic recall being
    lost (a default install has no other embedder: keyword-only)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cached = {choice: np.array(embedders._build(choice).embed(TEXTS)) for choice in ("onnx", "onnx:int8")}
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for choice, name in (("onnx", "onnx:all-MiniLM-L6-v2 float32"), ("onnx:int8", "onnx:all-MiniLM-L6-v2 int8")):
        embedder = embedders._build(choice)
        assert embedder.name == name
        vectors = np.array(embedder.embed(TEXTS))
        assert (vectors * cached[choice]).sum(axis=1).min() > 0.99999, choice  # the same model
    assert embedders._build("auto", "float32").name == "onnx:all-MiniLM-L6-v2 float32"
    assert list(scratch.iterdir()) == []  # nothing left behind
