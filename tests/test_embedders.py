"""CMMS_EMBEDDER choices: what loads, what falls back, and what fails clearly."""
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
    embedder = embedders._build("auto")
    assert embedder.name == "sentence-transformers:all-MiniLM-L6-v2 (packaged)"
    assert len(embedder.embed(["hello"])[0]) == 384


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
