"""benchmarks/plot.py draws both figures from the JSON the benchmarks write."""
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
PLOT = Path(__file__).resolve().parents[2] / "benchmarks" / "plot.py"


def plot_main():
    """benchmarks/plot.py's main(argv), as `python benchmarks/plot.py ARGS` runs it."""
    spec = importlib.util.spec_from_file_location("cmms_plot_benchmark", PLOT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_plots_are_written(tmp_path):
    runs = []
    for budget, recall in ((200, 0.5), (600, 0.7)):
        path = tmp_path / f"b{budget}.json"
        path.write_text(json.dumps({"budget": budget, "total": {"ev_key": recall, "ev_words": recall - 0.05, "ev_recall": recall + 0.05, "all_hit": recall - 0.1}}))
        runs.append(str(path))
    latency = tmp_path / "lat.json"
    latency.write_text(json.dumps({"sizes": [
        {"memories": n, "prefetch_ms": {"p50": 20, "p95": 30}, "sync_turn_ms": {"p99": 5}} for n in (1000, 10000)]}))
    main = plot_main()
    for kind, inputs in (("recall", runs), ("latency", [str(latency)])):
        out = tmp_path / f"{kind}.png"
        main([kind, str(out), *inputs])
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
