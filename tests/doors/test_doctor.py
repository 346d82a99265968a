"""`hermes-cmms doctor` on the Hermes versions people run."""
from hermes_cmms.ops import doctor


def test_doctor_needs_no_plugin_files_where_hermes_reads_entry_points(home):
    """Hermes 0.20+ loads cmms through the entry point: `pip install` alone is a full install
    there, while 0.19 (installed here) still needs the shim."""
    assert doctor._plugin_files(home, "0.19.0")[0] == "FAIL"
    for newer in ("0.20.0", "0.22.5", "1.0"):
        assert doctor._plugin_files(home, newer)[:2] == ("ok", "plugin files"), newer
