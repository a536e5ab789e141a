"""A PEP 517 build backend in the standard library alone: it writes the wheel of this folder's
``tao_shout*.py`` modules, with their entry points, as ``pip install`` asks for it."""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _project() -> dict[str, object]:
    return tomllib.loads((HERE / "pyproject.toml").read_text())["project"]  # type: ignore[no-any-return]


def _files() -> dict[str, bytes]:
    project = _project()
    name, version = str(project["name"]).replace("-", "_"), str(project["version"])
    info = f"{name}-{version}.dist-info"
    points = project["entry-points"]
    assert isinstance(points, dict)
    entry_points = "".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in items.items()) + "\n"
        for group, items in points.items()
    )
    modules = {
        path.name: path.read_bytes()
        for path in sorted(HERE.glob("tao_shout*.py"))  # the plugin and its broken modules
    }
    return {
        **modules,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: build_backend\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{info}/entry_points.txt": entry_points.encode(),
    }


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(
    wheel_directory: str, config_settings: object = None, metadata_directory: object = None
) -> str:
    project = _project()
    name, version = str(project["name"]).replace("-", "_"), str(project["version"])
    wheel = f"{name}-{version}-py3-none-any.whl"
    files = _files()
    record = f"{name}-{version}.dist-info/RECORD"
    lines = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[record] = ("\n".join([*lines, f"{record},,"]) + "\n").encode()
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    return []
