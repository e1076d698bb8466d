"""A PEP 517 build backend of the standard library only, so that
`pip install ./sdk/python` works where no package index can be reached: the
usual backends (setuptools, hatchling, flit) would have to be downloaded
into pip's build environment first. It builds what this project needs and
no more: a pure-Python wheel of the packages under src/, an editable wheel
(`pip install -e`) that points at src/, and an sdist, with the metadata of
pyproject.toml's [project] table.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
# Archives get this time, not the files', so that a build is reproducible.
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _dist_name() -> str:
    """The project's name as wheel file names spell it (PEP 427)."""
    return re.sub(r"[-_.]+", "_", _project()["name"]).lower()


def _metadata() -> str:
    """Core metadata (PKG-INFO / METADATA) from [project]."""
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
    ]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    readme = p.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        body = (ROOT / readme).read_text()
    return "\n".join(lines) + "\n\n" + body


def _sources() -> list[Path]:
    """The packages' files under src/, without bytecode."""
    return sorted(f for f in SRC.rglob("*") if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc")


def _wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    """Writes a py3-none-any wheel of files (archive name → content), with
    its dist-info, and returns its file name."""
    version = _project()["version"]
    name = f"{_dist_name()}-{version}"
    info = f"{name}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tock_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    filename = f"{name}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / filename, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, EPOCH), data, zipfile.ZIP_DEFLATED)
    return filename


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    """PEP 517: a wheel of the packages under src/."""
    return _wheel(wheel_directory, {f.relative_to(SRC).as_posix(): f.read_bytes() for f in _sources()})


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """PEP 660: a wheel whose .pth file puts src/ on the path, so that edits
    take effect without reinstalling."""
    return _wheel(wheel_directory, {f"{_dist_name()}.pth": f"{SRC}\n".encode()})


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """PEP 517: a .tar.gz of what building a wheel needs, with PKG-INFO."""
    name = f"{_dist_name()}-{_project()['version']}"
    files = {"PKG-INFO": _metadata().encode()}
    for f in [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve(), *_sources()]:
        files[f.relative_to(ROOT).as_posix()] = f.read_bytes()
    filename = f"{name}.tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as tar:
        for path, data in files.items():
            ti = tarfile.TarInfo(f"{name}/{path}")
            ti.size, ti.mtime, ti.mode = len(data), 315532800, 0o644  # 1980-01-01, as EPOCH
            tar.addfile(ti, io.BytesIO(data))
    return filename
