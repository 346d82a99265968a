"""CMMS_EMBEDDER choices: what loads, what falls back, and what fails clearly."""
import numpy as np
import pytest

from hermes_cmms import InvalidInput, MemoryService, Settings, embedders


def test_none_means_keyword_only(keyword_service):
    keyword_service.indexer.ready.wait(10)
    assert keyword_service.status()["embedder"] == "none (keyword-only)"
    keyword_service.retain_turn("s", "t", "The lighthouse keeper is called Ada.", "ok")
    assert keyword_service.search("s", "lighthouse keeper")[0].memory.content.startswith("The lighthouse")


def test_chroma_default_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders, "CHROMA_ONNX_DIR", tmp_path / "missing")
    with pytest.raises(InvalidInput, match="never downloads"):
        embedders._build("chroma-default")
    assert not (tmp_path / "missing").exists()


def test_auto_prefers_the_packaged_model_when_chroma_files_are_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders, "CHROMA_ONNX_DIR", tmp_path / "missing")
    embedder = embedders._build("auto", "float32")
    assert embedder.name == "sentence-transformers:all-MiniLM-L6-v2 (packaged) float32"
    assert len(embedder.embed(["hello"])[0]) == 384


def test_bfloat16_gives_the_same_unit_vectors_as_float32_to_within_rounding():
    texts = ["My sister Ines moved to Porto in March.", "hi", "Chess club is on Thursdays. " * 20]
    exact = np.array(embedders._build("sentence-transformers", "float32").embed(texts))
    half = embedders._build("sentence-transformers", "bfloat16")
    assert half.name.endswith(" bfloat16")
    fast = np.array(half.embed(texts))
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert (exact * fast).sum(axis=1).min() > 0.99


def test_auto_dtype_follows_the_cpu(monkeypatch):
    monkeypatch.setattr(embedders, "cpu_has_bf16", lambda: False)
    assert embedders._build("sentence-transformers").dtype == "float32"
    monkeypatch.setattr(embedders, "cpu_has_bf16", lambda: True)
    assert embedders._build("sentence-transformers").dtype == "bfloat16"


def test_unloadable_model_degrades_to_keyword_recall_with_a_reason(home):
    svc = MemoryService(Settings.load(home, embedder="sentence-transformers:/no/such/model"))
    try:
        svc.retain_turn("s", "t", "The lighthouse keeper is called Ada.", "ok")
        assert svc.indexer.ready.wait(60)
        status = svc.status()
        assert status["embedder"] == "none (keyword-only)"
        assert "/no/such/model" in status["index_error"]
        assert svc.search("s", "lighthouse")  # writes and keyword recall still work
        assert status["outbox"] == 2  # both messages wait for vectors; nothing is dropped
    finally:
        svc.close()


def test_unknown_embedder_setting_is_rejected(home):
    with pytest.raises(InvalidInput, match="Unknown embedder 'word2vec'"):
        Settings.load(home, embedder="word2vec")


def test_unknown_embedder_dtype_is_rejected(home):
    with pytest.raises(InvalidInput, match="Unknown embedder_dtype 'int4'"):
        Settings.load(home, embedder_dtype="int4")
