"""CMMS_EMBEDDER choices: what loads, what falls back, and what fails clearly."""
import numpy as np
import pytest

from hermes_cmms import InvalidInput, MemoryService, Settings

from hermes_cmms.vectors import embedders


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


def test_auto_prefers_the_packaged_model_under_onnx_when_chroma_files_are_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders, "CHROMA_ONNX_DIR", tmp_path / "missing")
    embedder = embedders._build("auto", "float32")
    assert embedder.name == "onnx:all-MiniLM-L6-v2 (packaged) float32"
    assert len(embedder.embed(["hello"])[0]) == 384
    # asked for bfloat16 explicitly: torch's path, which has it
    assert embedders._build("auto", "bfloat16").name.startswith("sentence-transformers:")


TEXTS = ["My sister Ines moved to Porto in March.", "hi", "Chess club is on Thursdays. " * 200,
         "Melanie: I went camping with the kids last weekend! [shares a photo: a tent by a lake]"]


def test_onnx_gives_the_vectors_sentence_transformers_gives():
    """Same vectors, so a store indexed by either keeps working with the other (long texts are
    cut at the model's 256 tokens by both)."""
    exact = np.array(embedders._build("sentence-transformers", "float32").embed(TEXTS))
    onnx = np.array(embedders._build("onnx").embed(TEXTS))
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert (exact * onnx).sum(axis=1).min() > 0.9999
    one_by_one = np.array([embedders._build("onnx").embed([t])[0] for t in TEXTS])
    assert (one_by_one * onnx).sum(axis=1).min() > 0.9999  # padding in a batch changes nothing


def test_the_onnx_file_is_exported_once_into_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = embedders.packaged_minilm_path()
    first = embedders.exported_minilm(source)
    assert first.parent == tmp_path / "hermes-cmms" and first.stat().st_size > 80 * 2**20
    stamp = first.stat().st_mtime_ns
    assert embedders.exported_minilm(source) == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no partial file left
    vectors = embedders.OnnxMiniLMEmbedder(first, source / "tokenizer.json").embed(TEXTS[:1])
    assert len(vectors[0]) == 384


def test_onnx_without_the_packaged_model_is_one_sentence(monkeypatch):
    monkeypatch.setattr(embedders, "packaged_minilm_path", lambda: None)
    with pytest.raises(InvalidInput, match=r"^The ONNX embedder runs the packaged MiniLM, which is not installed"):
        embedders._build("onnx")


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


def test_an_unwritable_cache_is_one_sentence_and_auto_falls_back(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with pytest.raises(InvalidInput, match=r"^Cannot export the packaged MiniLM to ONNX in .*file/hermes-cmms: "):
        embedders._build("onnx")
    monkeypatch.setattr(embedders, "CHROMA_ONNX_DIR", tmp_path / "missing")
    assert embedders._build("auto", "float32").name.startswith("sentence-transformers:")


def test_a_cached_export_cut_short_is_made_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = embedders.packaged_minilm_path()
    target = embedders.exported_minilm(source)
    target.write_bytes(target.read_bytes()[:1000])  # a power cut before the data reached the disk
    embedder = embedders._build("onnx")
    assert len(embedder.embed(["hello"])[0]) == 384 and target.stat().st_size > 80 * 2**20
