"""Attacks on the files `hermes cmms …` / `hermes-cmms` and `hermes memory setup` write
a special file or a symlink named as the place to write is written into, never
replaced by a regular file."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading

import pytest
import yaml

from hermes_cmms import MemoryService, Settings
from hermes_cmms.cli import main
from hermes_cmms.provider import CmmsMemoryProvider


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _stored(home, text="The boiler was serviced in March."):
    with MemoryService(Settings.load(home, embedder="none"), scheduler=False) as service:
        service.remember("local:default", text)


@pytest.mark.quick
@pytest.mark.store
def test_export_into_a_fifo_writes_into_it_and_leaves_it_a_fifo(home, tmp_path):
    """`--output /dev/stdout` or a named pipe: the export was written beside it and renamed
    over it, so (as root) /dev/stdout or /dev/full became a regular file."""
    _stored(home)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    keep = os.open(fifo, os.O_RDWR)  # a writer, so the reader opens at once and never hangs
    end = os.open(fifo, os.O_RDONLY)
    got = []
    reader = threading.Thread(target=lambda: got.append(_read_all(end)), daemon=True)
    reader.start()
    try:
        code = main(["export", "--hermes-home", str(home), "--scope", "local:default", "--output", str(fifo)])
    finally:
        os.close(keep)  # the reader sees the end once the export has closed its side too
        reader.join(10)
        os.close(end)
    assert code == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    lines = [json.loads(line) for line in got[0].splitlines()]
    assert lines[0]["type"] == "header" and "The boiler was serviced in March." in got[0].decode()
    assert not (tmp_path / "pipe.partial").exists()


@pytest.mark.store
def test_export_through_a_symlink_keeps_the_link(home, tmp_path):
    _stored(home)
    real = tmp_path / "backups" / "2026-12-01.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    assert main(["export", "--hermes-home", str(home), "--scope", "local:default", "--output", str(link)]) == 0
    assert link.is_symlink() and "The boiler" in real.read_text()


def test_settings_saved_through_a_symlinked_config_yaml_keep_the_link(home, tmp_path):
    """A config.yaml linked from a dotfiles repository (Hermes keeps such links itself, its
    GitHub #16743): save_config / `hermes memory setup` replaced the link with a copy."""
    dotfiles = tmp_path / "dotfiles" / "config.yaml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("# managed in git\nmemory:\n  provider: cmms\n", encoding="utf-8")
    (home / "config.yaml").symlink_to(dotfiles)
    CmmsMemoryProvider().save_config({"recall_tokens": "900"}, str(home))
    assert (home / "config.yaml").is_symlink()
    assert yaml.safe_load(dotfiles.read_text())["memory"]["cmms"] == {"recall_tokens": 900}
    assert "# managed in git" in dotfiles.read_text()
    assert [p.name for p in dotfiles.parent.iterdir()] == ["config.yaml"]  # no temporary file left


def _can_bind_mount(tmp_path) -> bool:
    probe_src, probe = tmp_path / "probe-src", tmp_path / "probe"
    probe_src.write_text("a")
    probe.write_text("b")
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-m", "mount", "--bind", str(probe_src), str(probe)],
                          capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
def test_settings_saved_into_a_bind_mounted_config_yaml_are_written_in_place(home, tmp_path):
    """`docker run -v ./config.yaml:/root/.hermes/config.yaml`: a mount point cannot be renamed
    over (EBUSY), so save_config failed with an OSError; it writes the file in place."""
    if not _can_bind_mount(tmp_path):
        pytest.skip("needs root and unshare(1) to bind-mount a file")
    outside = tmp_path / "host-config.yaml"
    outside.write_text("memory:\n  provider: cmms\n", encoding="utf-8")
    (home / "config.yaml").write_text("")
    save = ("from hermes_cmms.provider import CmmsMemoryProvider; "
            f"CmmsMemoryProvider().save_config({{'recall_tokens': '900'}}, {str(home)!r})")
    result = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$1" && exec "$2" -c "$3"',
                             str(outside), str(home / "config.yaml"), sys.executable, save],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert yaml.safe_load(outside.read_text())["memory"]["cmms"] == {"recall_tokens": 900}
    assert sorted(p.name for p in home.iterdir()) == ["config.yaml"]  # no temporary file left


@pytest.mark.slow
@pytest.mark.store
def test_export_to_standard_output_by_its_path_is_the_export_alone(home):
    """`--output /dev/stdout` (here /proc/self/fd/1, which no rename can touch) is `--output -`:
    the JSON summary is not appended to the records, so the stream imports back."""
    _stored(home)
    result = subprocess.run([sys.executable, "-m", "hermes_cmms.cli", "export", "--hermes-home", str(home),
                             "--scope", "local:default", "--output", "/proc/self/fd/1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["type"] == "header" and all("type" in r for r in records)
