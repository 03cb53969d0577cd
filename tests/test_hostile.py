"""Issue 14, item by item (the server's items are in test_server_limits.py, the fuzz of
every function in test_fuzz.py): infinite numbers, uncaught errors, negative money, failed
writes, hostile scenario files and error messages that echo whole inputs."""

from __future__ import annotations

import json
import math
import os
import pty
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from udfs.api import registry
from udfs.cli import main as cli_main
from udfs.errors import FlopsheetError
from udfs.cli.safe_write import WriteError, safe_write

ROOT = Path(__file__).resolve().parents[1]
SERVE_8B = (ROOT / "examples" / "serve-8b.toml").read_text()
HUGE_INT = 10 ** 399 + 1


def flopsheet(*args, prefix=(), umask=None, **kw) -> subprocess.CompletedProcess:
    """The real command in a child process (exit status, stderr, file modes)."""
    def set_umask():
        if umask is not None:
            os.umask(umask)
    return subprocess.run([*prefix, sys.executable, "-m", "udfs", *map(str, args)], cwd=ROOT, text=True,
                          capture_output=True, timeout=240, preexec_fn=set_umask, **kw)


def assert_clear_failure(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def index_of(fn_name: str, word: str) -> int:
    """Position of the argument whose name contains `word` (names are the registry's)."""
    names = [a.name for a in registry.get(fn_name).args]
    return next(i for i, n in enumerate(names) if word in n)


def call_with(fn_name: str, **by_word):
    fn = registry.get(fn_name)
    args = list(fn.examples[0][0]) + [None] * len(fn.args)
    args = args[:len(fn.args)]
    for word, value in by_word.items():
        args[index_of(fn_name, word)] = value
    return registry.call(fn_name, *args)


# ---------------------------------------------------------------- 3. inf/NaN never escape
def test_table_with_a_huge_input_is_a_num_error_not_inf(capsys):
    assert cli_main(["calc", "GPU_MEMORY_TABLE", "1e308"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("#NUM!") and "finite" in err, err
    assert "inf" not in out


@pytest.mark.parametrize("args", [["GPU_MEMORY_TABLE", "1e308"], ["GPU_MEMORY", "1e308"],
                                  ["GPU_RANK", "serve", "Llama 2 7B", "fp16", "", "", "", "1e-320"],
                                  ["TOKENS_PER_SEC_NEEDED", "1e-320", "1e-320"]])
def test_json_output_is_always_valid_json(capsys, args):
    status = cli_main(["calc", "--json", *args])
    out, err = capsys.readouterr()
    if status == 0:
        json.loads(out, parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c} in {out[:200]}"))
    else:
        assert status == 2 and err.startswith("#NUM!"), err


def test_gpu_rank_with_tiny_traffic_has_no_inf_or_nan():
    try:
        table = call_with("GPU_RANK", traffic=1e-320)
    except FlopsheetError as e:
        assert e.code == "#NUM!" and "traffic" in e.message, e.message
        return
    for row in table.rows:
        for v in row:
            assert not (isinstance(v, float) and not math.isfinite(v)), row
            assert not (isinstance(v, str) and ("nanx" in v or "inf" in v.split())), row


def test_report_with_tiny_traffic_never_writes_inf(tmp_path):
    text = SERVE_8B.replace("daily_users = 50_000", "requests_per_minute = 1e-320")
    for k in ("requests_per_user_per_day", "peak_to_average"):
        text = "\n".join(line for line in text.splitlines() if not line.startswith(k))
    (tmp_path / "tiny.toml").write_text(text)
    proc = flopsheet("report", tmp_path / "tiny.toml", "-o", tmp_path / "tiny.xlsx", "--csv")
    if proc.returncode == 2:
        assert "Traceback" not in proc.stderr and "requests_per_minute" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert "inf" not in proc.stdout and "nan" not in proc.stdout.lower(), proc.stdout
    import openpyxl
    wb = openpyxl.load_workbook(tmp_path / "tiny.xlsx")
    for ws in wb:
        for row in ws.iter_rows(values_only=True):
            for v in row:
                assert not (isinstance(v, float) and not math.isfinite(v)), (ws.title, row)
                assert not (isinstance(v, str) and "$inf" in v), (ws.title, row)
    assert "inf" not in (tmp_path / "tiny.csv").read_text().lower().replace("info", "")


# ---------------------------------------------------------------- 4. no uncaught errors
@pytest.mark.parametrize("params", ["-1", "-1e308", "0", str(HUGE_INT)])
def test_gpu_rank_with_a_negative_model_size_is_a_clear_error(params):
    proc = flopsheet("calc", "GPU_RANK", "serve", params)
    assert_clear_failure(proc, "#NUM!")


@pytest.mark.parametrize("fn_name,word", [("JOB_COST", "hours"), ("GPU_MEMORY", "model_or_params"),
                                          ("TOKENS_PER_SEC_NEEDED", "requests"), ("GPU_RANK", "budget")])
def test_a_400_digit_integer_is_a_clear_num_error(fn_name, word):
    with pytest.raises(FlopsheetError) as info:
        call_with(fn_name, **{word: HUGE_INT})
    assert info.value.code == "#NUM!"
    assert len(str(info.value)) < 300 and str(HUGE_INT)[:60] not in str(info.value)


# ---------------------------------------------------------------- 5. money never negative
@pytest.mark.parametrize("fn_name", ["TCO", "OWNED_COST_PER_GPU_HOUR", "BREAKEVEN_UTILIZATION"])
def test_resale_value_above_the_purchase_price_is_refused(fn_name):
    with pytest.raises(FlopsheetError) as info:
        call_with(fn_name, hardware=12000, residual=20000)
    assert info.value.code == "#NUM!"
    assert "residual" in info.value.message and "hardware" in info.value.message, info.value.message


def test_resale_value_equal_to_the_purchase_price_is_allowed():
    assert call_with("TCO", hardware=12000, residual=12000) >= 0


# ---------------------------------------------------------------- 6. writes that fail
def unprivileged() -> tuple[str, ...]:
    """A prefix that runs a command without root's right to ignore file permissions."""
    if os.geteuid() != 0:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot test an unwritable folder")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*"))


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text(SERVE_8B)
    return path


def report_cmd(scenario_file, out):
    return ("report", scenario_file, "-o", out, "--csv")


def templates_cmd(_scenario_file, out_dir):
    return ("templates", "--out", out_dir, "--only", "training_budget")


def templates_target(out_dir: Path) -> Path:
    from workbook_templates import module
    return out_dir / module("training_budget").FILENAME


WRITERS = {"report": (report_cmd, lambda d: d / "r.xlsx"), "templates": (templates_cmd, lambda d: d)}


@pytest.mark.parametrize("writer", WRITERS)
def test_output_under_a_file_is_a_clear_error(tmp_path, scenario_file, writer):
    cmd, out = WRITERS[writer]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = flopsheet(*cmd(scenario_file, out(blocker)))
    assert_clear_failure(proc, str(blocker))
    assert blocker.read_text() == "not a folder"


@pytest.mark.parametrize("writer", WRITERS)
def test_unwritable_folder_is_a_clear_error(tmp_path, scenario_file, writer):
    cmd, out = WRITERS[writer]
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        proc = flopsheet(*cmd(scenario_file, out(locked)), prefix=unprivileged())
    finally:
        locked.chmod(0o755)
    assert_clear_failure(proc, "permission denied")
    assert not list(locked.iterdir())


@pytest.mark.parametrize("writer", WRITERS)
def test_read_only_file_system_is_a_clear_error(tmp_path, scenario_file, writer):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a read-only file system")
    cmd, out = WRITERS[writer]
    mnt = tmp_path / "ro"
    mnt.mkdir()
    args = " ".join(f"'{a}'" for a in cmd(scenario_file, out(mnt)))
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o ro,size=1m tmpfs '{mnt}'"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {probe.stderr!r}")
    proc = subprocess.run(["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o ro,size=1m tmpfs '{mnt}' && "
                           f"cd '{ROOT}' && '{sys.executable}' -m udfs {args}"],
                          capture_output=True, text=True, timeout=240)
    assert_clear_failure(proc, "read-only")


def test_a_folder_named_like_the_target_is_a_clear_error(tmp_path, scenario_file):
    (tmp_path / "r.xlsx").mkdir()
    assert_clear_failure(flopsheet(*report_cmd(scenario_file, tmp_path / "r.xlsx"), "--force"), "folder")
    templates_target(tmp_path).mkdir()
    assert_clear_failure(flopsheet(*templates_cmd(scenario_file, tmp_path), "--force"), "folder")


@pytest.mark.parametrize("writer", WRITERS)
def test_new_files_follow_the_umask(tmp_path, scenario_file, writer):
    cmd, out = WRITERS[writer]
    target = out(tmp_path)
    proc = flopsheet(*cmd(scenario_file, target), umask=0o022)
    assert proc.returncode == 0, proc.stderr
    written = [target, target.with_suffix(".csv")] if writer == "report" else [templates_target(tmp_path)]
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, (path, oct(path.stat().st_mode))


@pytest.mark.parametrize("writer", WRITERS)
def test_force_keeps_an_existing_files_mode(tmp_path, scenario_file, writer):
    cmd, out = WRITERS[writer]
    target = out(tmp_path)
    assert flopsheet(*cmd(scenario_file, target)).returncode == 0
    written = [target, target.with_suffix(".csv")] if writer == "report" else [templates_target(tmp_path)]
    for path in written:
        path.chmod(0o664)
    assert flopsheet(*cmd(scenario_file, target), "--force", umask=0o077).returncode == 0
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o664, (path, oct(path.stat().st_mode))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, OSError, RuntimeError])
def test_a_failed_write_leaves_no_temporary_file_and_the_old_file_intact(tmp_path, interrupt):
    target = tmp_path / "out.csv"
    target.write_text("old")

    def write(tmp):
        Path(tmp).write_text("half")
        raise interrupt("stopped")

    with pytest.raises((interrupt, WriteError)):
        safe_write(target, write, force=True)
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_no_temporary_files(tmp_path, sig):
    """Signal `templates` (every workbook) while it writes; nothing hidden stays behind."""
    for delay in (0.5, 1.5, 3.0):
        out = tmp_path / f"{sig.name}-{delay}"
        proc = subprocess.Popen([sys.executable, "-m", "udfs", "templates", "--out", str(out)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        if out.exists():
            assert leftovers(out) == [], (delay, leftovers(out))


KILLED_WRITER = """
import sys, time
from pathlib import Path
from udfs.cli.safe_write import safe_write
def write(tmp):
    Path(tmp).write_text("half")
    print("writing", flush=True)
    time.sleep(60)
safe_write(sys.argv[1], write)
"""


def test_a_killed_write_leaves_a_temporary_file_that_the_next_write_removes(tmp_path):
    """SIGKILL cannot be caught: the next write of the same file cleans up after it (issue 23 item 10)."""
    target = tmp_path / "out.csv"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "writing"
    proc.kill()
    proc.wait(30)
    assert len(leftovers(tmp_path)) == 1
    live = tmp_path / f".out.csv.{os.getpid()}.abcdefgh.tmp"      # a write still under way: kept
    live.write_text("busy")
    old = tmp_path / ".out.csv.zyxwvuts.tmp"                       # no process id, a day old: removed
    old.write_text("old")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    other = tmp_path / ".notes.txt.12345678.tmp"                    # another file's: not ours to judge
    other.write_text("x")
    safe_write(target, lambda tmp: Path(tmp).write_text("whole"))
    assert target.read_text() == "whole"
    assert leftovers(tmp_path) == sorted([live.name, other.name])


@pytest.mark.parametrize("writer", WRITERS)
def test_a_dangling_symlink_at_the_output_is_not_replaced_without_force(tmp_path, scenario_file, writer):
    command, out = WRITERS[writer]
    target = out(tmp_path) if writer == "report" else templates_target(tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(tmp_path / "nowhere.xlsx")
    assert_clear_failure(flopsheet(*command(scenario_file, out(tmp_path))), "--force")
    assert target.is_symlink() and not (tmp_path / "nowhere.xlsx").exists()
    assert flopsheet(*command(scenario_file, out(tmp_path)), "--force").returncode == 0
    assert target.is_file() and not target.is_symlink()


def test_refusing_to_overwrite_names_every_clash(tmp_path, scenario_file):
    target = tmp_path / "r.xlsx"
    assert flopsheet(*report_cmd(scenario_file, target)).returncode == 0
    assert_clear_failure(flopsheet(*report_cmd(scenario_file, target)), "already exists", "--force")


# ---------------------------------------------------------------- 7. scenario files
def test_deeply_nested_toml_is_a_clear_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(SERVE_8B + "\n[extra]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    proc = flopsheet("report", path, "-o", tmp_path / "r.xlsx")
    assert_clear_failure(proc, "nested")
    assert len(proc.stderr) < 600


def test_an_unbounded_sweep_is_refused_with_how_to_narrow_it(tmp_path):
    path = tmp_path / "sweep.toml"
    counts = ", ".join(str(n) for n in range(1, 100_001))
    path.write_text(SERVE_8B.replace('gpus = "all"', f'gpus = "all"\ncounts = [{counts}]'))
    t = time.monotonic()
    proc = flopsheet("report", path, "-o", tmp_path / "r.xlsx")
    assert time.monotonic() - t < 60
    assert_clear_failure(proc, "options", "candidates.counts")
    assert not (tmp_path / "r.xlsx").exists()


def run_with_terminal(args) -> tuple[int, str]:
    """Run the command with stderr on a pseudo-terminal; returns (status, what the terminal got)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "udfs", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=follower, text=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(240)
    os.close(leader)
    return proc.returncode, b"".join(chunks).decode(errors="replace")


def test_a_slow_report_shows_progress_on_a_terminal_only(tmp_path):
    pytest.importorskip("tqdm")
    path = tmp_path / "wide.toml"
    counts = ", ".join(str(n) for n in range(1, 101))
    path.write_text(SERVE_8B.replace('gpus = "all"', f'gpus = "all"\ncounts = [{counts}]'))
    status, terminal = run_with_terminal(["report", path, "-o", tmp_path / "a.xlsx"])
    assert status == 0, terminal
    assert "%|" in terminal, terminal[-500:]
    piped = flopsheet("report", path, "-o", tmp_path / "b.xlsx")
    assert piped.returncode == 0, piped.stderr
    assert "%|" not in piped.stderr and "\r" not in piped.stderr


# ---------------------------------------------------------------- 8. messages quote a prefix only
@pytest.mark.parametrize("fn_name", ["GPU_MEMORY", "JOB_COST", "GPU_RANK", "CLOUD_PRICE", "TCO"])
def test_a_100000_character_argument_gives_a_short_message_quickly(fn_name):
    fn = registry.get(fn_name)
    long = "Q" * 100_000
    for i in range(len(fn.args)):
        args = (list(fn.examples[0][0]) + [None] * len(fn.args))[:len(fn.args)]
        args[i] = long
        t = time.monotonic()
        try:
            registry.call(fn_name, *args)
        except FlopsheetError as e:
            assert len(str(e)) <= 500, (fn.args[i].name, len(str(e)))
            assert long[:100] not in str(e)
        assert time.monotonic() - t < 1.0, (fn.args[i].name, time.monotonic() - t)


def test_the_cli_quotes_a_prefix_of_a_long_argument():
    proc = flopsheet("calc", "GPU_MEMORY", "Z" * 100_000)
    assert_clear_failure(proc)
    assert len(proc.stderr) <= 501 and "ZZZZ" in proc.stderr


# ---------------------------------------------------------------- issue 23 item 5: catalog text is text
FORMULA_NAMES = ["=40+2", '=HYPERLINK("http://example.invalid","click")', "@SUM(1)", "+1+1", "-2+3"]


@pytest.fixture
def hostile_catalog(tmp_path):
    """A private catalog of GPUs named like formulas (copies of the packaged H100 SXM row)."""
    import csv
    rows = list(csv.DictReader((ROOT / "udfs" / "data" / "gpus.csv").open(encoding="utf-8")))
    h100 = next(r for r in rows if r["name"].startswith("H100 SXM"))
    folder = tmp_path / "catalog"
    folder.mkdir()
    with (folder / "gpus.csv").open("w", encoding="utf-8", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(h100))
        out.writeheader()
        for name in FORMULA_NAMES:
            out.writerow({**h100, "name": name, "aliases": ""})
    return folder


def test_catalog_names_that_look_like_formulas_are_written_as_text(tmp_path, hostile_catalog):
    import openpyxl
    env = dict(os.environ, FLOPSHEET_CATALOG=str(hostile_catalog))
    proc = flopsheet("templates", "--out", tmp_path / "wb", env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    seen = set()
    for path in sorted((tmp_path / "wb").glob("*.xlsx")):
        for ws in openpyxl.load_workbook(path).worksheets:
            for row in ws.iter_rows():
                for cell in row:
                    if cell.value in FORMULA_NAMES:
                        assert cell.data_type == "s", (path.name, ws.title, cell.coordinate, cell.value)
                        seen.add((path.name, cell.value))
                    elif cell.data_type == "f":
                        assert "40+2" not in cell.value and "HYPERLINK" not in cell.value, (path.name, cell.value)
    assert {n for wb, n in seen if wb == "gpu_comparison.xlsx"} == set(FORMULA_NAMES)


# ---------------------------------------------------------------- issue 23 item 8: report, clear errors only
SERVE_BY_USERS = "daily_users = 50_000\nrequests_per_user_per_day = 10\npeak_to_average = 3\n"


@pytest.mark.parametrize("change,words", [
    (lambda t: t.replace('name = "Serve', 'name = "\\u0007Serve'), ["name", "control character"]),
    (lambda t: t.replace('name = "Serve', 'name = "\\u001b[2JServe'), ["name", "control character"]),
    (lambda t: t.replace(SERVE_BY_USERS, "requests_per_minute = 1e308\n"), ["requests_per_minute"]),
    (lambda t: t.replace("daily_users = 50_000", "daily_users = 1e-300"), ["daily_users"]),
    (lambda t: t.replace("daily_users = 50_000", "daily_users = 1e300"), ["daily_users"]),
    (lambda t: t.replace("requests_per_user_per_day = 10", "requests_per_user_per_day = 1e300"),
     ["requests_per_user_per_day"]),
])
def test_report_refuses_impossible_scenarios_with_a_clear_error(tmp_path, change, words):
    assert SERVE_BY_USERS in SERVE_8B
    path = tmp_path / "s.toml"
    path.write_text(change(SERVE_8B))
    proc = flopsheet("report", path, "-o", tmp_path / "r.xlsx")
    assert_clear_failure(proc, *words)
    assert len(proc.stderr.strip()) <= 500 and not (tmp_path / "r.xlsx").exists()


def test_report_messages_stay_short_with_a_long_path(tmp_path):
    folder = tmp_path / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    path = folder / ("s" * 200 + ".toml")
    path.write_text(SERVE_8B.replace("daily_users = 50_000", "daily_users = 1e-300"))
    proc = flopsheet("report", path, "-o", folder / ("r" * 200 + ".xlsx"))
    assert_clear_failure(proc)
    assert max(len(line) for line in proc.stderr.splitlines()) <= 500, proc.stderr
