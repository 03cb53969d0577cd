"""The classic add-in (Windows): xlwings' real classic decorators applied to addin.functions,
and the VBA that `Import Functions` would put into Excel, generated on Linux with stand-in
pywin32 modules (shared/notes/excel-runtimes.md)."""

import importlib
import io
import re
import sys
import types

import pytest

xlwings = pytest.importorskip("xlwings")

from addin.classic import update_config  # noqa: E402
from addin.spec import arg_doc, docstring, python_optional, registry_functions  # noqa: E402

# Words VBA reserves (a parameter named like one would not compile).
VBA_KEYWORDS = {w.lower() for w in """And As Boolean ByRef Byte ByVal Call Case Const Currency Date Declare Dim Do
Double Each Else ElseIf End Enum Erase Error Event Exit False For Friend Function Get Global GoSub GoTo If Implements In
Integer Is Let Like Long Loop LSet Me Mod New Next Not Nothing Object On Option Optional Or ParamArray Preserve Private
Property Public RaiseEvent ReDim Rem Resume Return RSet Select Set Single Static Step Stop String Sub Then To True Type
TypeOf Until Variant Wend While With Xor Name Open Close Print Input Output Binary Random Lock Unlock Width""".split()}


@pytest.fixture()
def classic(monkeypatch):
    """addin.functions imported with the classic decorators (xlwings.udfs.xlfunc/xlarg/xlret)."""
    com = types.ModuleType("win32com")
    client = types.ModuleType("win32com.client")
    client.Dispatch = lambda *a, **k: None
    com.client = client
    pythoncom = types.ModuleType("pythoncom")
    pythoncom.CoInitialize = lambda: None
    pywintypes = types.ModuleType("pywintypes")
    pywintypes.com_error = type("com_error", (Exception,), {})
    for name, module in {"win32com": com, "win32com.client": client, "pythoncom": pythoncom,
                         "pywintypes": pywintypes}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "xlwings.udfs", raising=False)
    udfs_mod = importlib.import_module("xlwings.udfs")
    monkeypatch.setattr(xlwings, "func", udfs_mod.xlfunc)
    monkeypatch.setattr(xlwings, "arg", udfs_mod.xlarg)
    monkeypatch.setattr(xlwings, "ret", udfs_mod.xlret)
    monkeypatch.delitem(sys.modules, "addin.functions", raising=False)
    module = importlib.import_module("addin.functions")
    yield udfs_mod, module
    sys.modules.pop("addin.functions", None)  # the next importer gets its own runtime's version
    sys.modules.pop("xlwings.udfs", None)


def test_every_function_registers_with_classic_metadata(classic):
    _, module = classic
    assert module.RUNTIME == "classic" and not module.ENUMS
    fns = registry_functions()
    assert sorted(module.__all__) == sorted(n.lower() for n in fns)
    for name, fn in fns.items():
        xlfunc = getattr(module, name.lower()).__xlfunc__
        assert xlfunc["name"] == name.lower()
        assert xlfunc["category"] == "Flopsheet"
        assert xlfunc["ret"]["doc"] == docstring(fn)
        assert [a["name"] for a in xlfunc["args"]] == [a.name for a in fn.args]
        for info, a in zip(xlfunc["args"], fn.args):
            assert info["doc"] == arg_doc(fn, a)
            assert ("optional" in info) == python_optional(fn, a)
            assert info["options"] == {"ndim": 2, "err_to_str": True}


def test_generated_vba_declares_every_function_and_argument(classic):
    udfs_mod, module = classic
    out = io.StringIO()
    book = types.SimpleNamespace(Name="Book1.xlsm")
    udfs_mod.generate_vba_wrapper("addin.functions", module, out, book)
    vba = out.getvalue()
    for name, fn in registry_functions().items():
        header = re.search(rf"^Function {name.lower()}\((.*)\)$", vba, re.M)
        assert header, f"{name} missing from the VBA"
        declared = [p.strip() for p in header.group(1).split(",")] if fn.args else []
        expected = [("Optional " if python_optional(fn, a) else "") + a.name for a in fn.args]
        assert declared == expected, name
        assert f'XLPy.CallUDF("addin.functions", "{name.lower()}"' in vba
        for a in fn.args:  # names VBA could not compile
            assert a.name.lower() not in VBA_KEYWORDS, f"{name}.{a.name} is a VBA keyword"
            assert a.name.lower() != name.lower(), f"{name} has a parameter named like itself"


def test_classic_shows_the_message_instead_of_raising(classic):
    _, module = classic
    assert module.gpu_tokens_per_sec([["H100"]], [[14]], None, None) == pytest.approx(167.5)  # a single cell is a scalar
    text = module.gpu_tokens_per_sec([["no such gpu"]], [[14]], None, None)
    assert isinstance(text, str) and text.startswith("#N/A") and "no such gpu" in text.lower()
    column = module.job_cost([[32.77], ["abc"]], [[10]])
    assert column[0][0] == pytest.approx(327.7) and column[1][0] == "#VALUE!"


def test_update_config_keeps_other_settings(tmp_path):
    conf = tmp_path / "xlwings.conf"
    conf.write_text('"INTERPRETER_WIN","C:\\old\\python.exe"\n"UDF MODULES","mymodule"\n"LICENSE_KEY","x"\n')
    update_config(conf, {"UDF Modules": "addin.functions", "Interpreter_Win": "C:\\py\\python.exe"})
    text = conf.read_text()
    assert '"UDF Modules","mymodule;addin.functions"' in text
    assert '"Interpreter_Win","C:\\py\\python.exe"' in text and '"LICENSE_KEY","x"' in text
    update_config(conf, {"UDF Modules": "addin.functions"})
    assert conf.read_text().count("addin.functions") == 1


def test_install_on_non_windows_explains(capsys, monkeypatch):
    from addin import classic
    monkeypatch.setattr(sys, "platform", "linux")
    assert classic.install() != 0
    out = capsys.readouterr().out
    assert "Windows" in out and "addin lite" in out and "serve" in out


def test_flopsheet_addin_install_writes_the_users_xlwings_conf(tmp_path, monkeypatch, capsys):
    """`flopsheet addin install` as on Windows, against a temporary home folder: the user's
    existing xlwings.conf keeps its keys and gains the interpreter and the UDF module. The
    last step, xlwings' own `xlwings addin install`, copies the .xlam into Excel's XLSTART
    folder and cannot run without Excel: the command it would run is recorded instead."""
    from addin import classic
    from udfs.cli import main
    home = tmp_path / "home"
    conf = home / ".xlwings" / "xlwings.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text('"LICENSE_KEY","noncommercial"\n"UDF Modules","team_udfs"\n"CONDA PATH","C:\\\\conda"\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setattr(sys, "platform", "win32")
    ran = []
    monkeypatch.setattr(classic.subprocess, "call", lambda command, **kw: ran.append(command) or 0)

    assert main(["addin", "install", "--dry-run"]) == 0
    assert "addin.functions" not in conf.read_text() and not ran  # a dry run changes nothing

    assert main(["addin", "install"]) == 0
    lines = conf.read_text().splitlines()
    assert '"LICENSE_KEY","noncommercial"' in lines and '"CONDA PATH","C:\\\\conda"' in lines
    assert '"UDF Modules","team_udfs;addin.functions"' in lines
    assert f'"Interpreter_Win","{sys.executable}"' in lines
    assert len(lines) == 4
    assert ran and ran[0][-2:] == ["addin", "install"] and ran[0][0] == sys.executable
    assert "Import Functions" in capsys.readouterr().out

    assert main(["addin", "install"]) == 0  # running it again changes nothing
    assert conf.read_text().splitlines() == lines


def test_flopsheet_addin_install_creates_xlwings_conf(tmp_path, monkeypatch):
    from addin import classic
    from udfs.cli import main
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(classic.subprocess, "call", lambda command, **kw: 0)
    assert main(["addin", "install"]) == 0
    assert (tmp_path / ".xlwings" / "xlwings.conf").read_text().splitlines() == [
        '"UDF Modules","addin.functions"', f'"Interpreter_Win","{sys.executable}"']
