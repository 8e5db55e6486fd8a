"""Language recipes: where each toolchain lives, how to compile once, how to run.

A recipe names the source file, an optional compile command (run in the sandbox with /code
writable and ``COMPILE_LIMITS``), the run command (/code read-only, cwd /work), host directories
outside /usr the toolchain needs (bound read-only at the same path), PATH additions and env.
``available_languages()`` lists the languages whose toolchains are installed here (probed once
per process); ``get_language(name)`` returns a recipe or raises ``LanguageUnavailable``.

By-name mode (for container images, whose toolchains are not at this host's paths):
``by_name_argv`` turns a recipe's host toolchain path (``/root/.pyenv/.../python3.12``,
``/usr/lib/jvm/.../java``) into the plain program name an image has on its PATH (``python3``,
``java``); ``by_name(recipe)`` is the recipe with its commands rewritten that way and no host
toolchain dirs; ``IMAGE_TOOLS`` says which programs each language needs in the image.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import site
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from referee.sandbox.errors import LanguageUnavailable
from referee.sandbox.models import Limits
from referee.sandbox.python_packages import site_binds

__all__ = [
    "COMPILE_LIMITS",
    "IMAGE_TOOLS",
    "Language",
    "available_languages",
    "by_name",
    "by_name_argv",
    "get_language",
    "known_languages",
    "normalize_language",
]

COMPILE_LIMITS = Limits(
    wall_time_s=30.0,
    memory_mb=2048,
    max_processes=128,
    output_bytes=1024 * 1024,
    file_size_mb=256,
    work_dir_mb=512,
    open_files=512,
    cpus=1.0,
)

_ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
    "g++": "cpp",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "golang": "go",
    "rs": "rust",
    "sh": "bash",
}


@dataclass(frozen=True, slots=True)
class Language:
    """How to build and run one language in the sandbox."""

    name: str
    source_name: Callable[[str], str]
    run_argv: Callable[[str, Limits], tuple[str, ...]]
    compile_argv: Callable[[str], tuple[str, ...]] | None = None
    toolchain_dirs: tuple[str, ...] = ()
    """Host paths (directories or files) outside /usr bound read-only to compile and run."""
    run_dirs: tuple[str, ...] | None = None
    """What a run of the built program needs of them (None: all; a Go or Rust binary: none)."""
    hidden_dirs: tuple[str, ...] = ()
    """Directories shown empty: the interpreter's site-packages (the host's packages)."""
    binds: tuple[tuple[str, str], ...] = ()
    """``(host path, sandbox path)`` read-only binds into them: the chosen distributions of the
    server's environment (``python_packages.site_binds``) a Python program may import."""
    path_dirs: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    limit_address_space: bool = True
    compile_limits: Limits = COMPILE_LIMITS

    @property
    def compiled(self) -> bool:
        return self.compile_argv is not None

    @property
    def run_toolchain_dirs(self) -> tuple[str, ...]:
        return self.toolchain_dirs if self.run_dirs is None else self.run_dirs

    def full_env(self) -> dict[str, str]:
        env = dict(self.env)
        if self.path_dirs:
            env["PATH"] = ":".join((*self.path_dirs, "/usr/local/bin", "/usr/bin", "/bin"))
        return env


def _fixed(name: str) -> Callable[[str], str]:
    return lambda _source: name


def _real_tool(name: str) -> str | None:
    """The real file (symlinks resolved) of the program ``name`` on PATH, or None."""
    path = shutil.which(name)
    return None if path is None else os.path.realpath(path)


def _outside_usr(path: str) -> tuple[str, ...]:
    return () if path.startswith(("/usr/", "/bin/", "/lib")) else (path,)


def _python_pieces(prefix: str, version: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What of the interpreter at ``prefix`` a program needs (outside /usr: the executable, its
    shared library and the standard library, not the whole install), and its site-packages
    directories (hidden: the host's packages are not the program's)."""
    root = Path(prefix)
    stdlib = root / "lib" / f"python{version}"
    hidden = {os.path.realpath(p) for p in site.getsitepackages([prefix])}
    hidden = {p for p in hidden if os.path.isdir(p)}
    if not _outside_usr(prefix):
        return (), tuple(sorted(hidden))
    pieces = [str(root / "bin" / f"python{version}"), str(stdlib)]
    pieces += sorted(str(p) for p in (root / "lib").glob(f"libpython{version}*.so*"))
    return tuple(pieces), tuple(sorted(p for p in hidden if p.startswith(str(stdlib))))


def _python() -> Language | None:
    prefix = os.path.realpath(sys.base_prefix)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    exe = Path(prefix) / "bin" / f"python{version}"
    if not exe.exists():
        return None
    pieces, hidden = _python_pieces(prefix, version)
    binds = site_binds(hidden[0]) if hidden else ()
    return Language(
        name="python",
        source_name=_fixed("main.py"),
        run_argv=lambda src, _l: (str(exe), "-I", "-B", f"/code/{src}"),
        toolchain_dirs=pieces,
        hidden_dirs=hidden,
        binds=binds,
        env={"PYTHONIOENCODING": "utf-8", "PYTHONHASHSEED": "0"},
    )


def _c_family(name: str, compiler: str, source: str, std: str) -> Language | None:
    path = shutil.which(compiler)
    if path is None:
        return None
    return Language(
        name=name,
        source_name=_fixed(source),
        compile_argv=lambda src: (
            path,
            "-O2",
            f"-std={std}",
            "-pipe",
            "-o",
            "/code/main",
            f"/code/{src}",
            "-lm",
        ),
        run_argv=lambda _src, _l: ("/code/main",),
    )


_JAVA_CLASS = re.compile(
    r"^\s*public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]*)", re.MULTILINE
)


def _java_class(source: str) -> str:
    match = _JAVA_CLASS.search(source)
    return match.group(1) if match else "Main"


def _java() -> Language | None:
    javac_real, java_real = _real_tool("javac"), _real_tool("java")
    if javac_real is None or java_real is None:
        return None

    def run(src: str, limits: Limits) -> tuple[str, ...]:
        heap = max(32, int(limits.memory_mb * 0.75))
        return (
            java_real,
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xss64m",
            f"-Xmx{heap}m",
            "-XX:-UsePerfData",
            "-cp",
            "/code",
            src.removesuffix(".java"),
        )

    return Language(
        name="java",
        source_name=lambda source: f"{_java_class(source)}.java",
        compile_argv=lambda src: (
            javac_real,
            "-J-XX:+UseSerialGC",
            "-J-XX:-UsePerfData",
            "-J-XX:TieredStopAtLevel=1",
            "-encoding",
            "UTF-8",
            "-d",
            "/code",
            f"/code/{src}",
        ),
        run_argv=run,
        limit_address_space=False,
    )


def _javascript() -> Language | None:
    node_real = _real_tool("node")
    if node_real is None:
        return None
    return Language(
        name="javascript",
        source_name=_fixed("main.js"),
        run_argv=lambda src, limits: (
            node_real,
            f"--max-old-space-size={limits.memory_mb}",
            f"/code/{src}",
        ),
        toolchain_dirs=_outside_usr(os.path.dirname(os.path.dirname(node_real))),
        limit_address_space=False,
    )


def _go() -> Language | None:
    go_real = _real_tool("go")
    if go_real is None:
        return None
    goroot = os.path.dirname(os.path.dirname(go_real))
    return Language(
        name="go",
        source_name=_fixed("main.go"),
        compile_argv=lambda src: (go_real, "build", "-o", "/code/main", f"/code/{src}"),
        run_argv=lambda _src, _l: ("/code/main",),
        toolchain_dirs=_outside_usr(goroot),
        run_dirs=(),  # a Go binary needs nothing of the toolchain to run
        path_dirs=(os.path.dirname(go_real),),
        env={
            "GOCACHE": "/tmp/go-cache",
            "GOPATH": "/tmp/go",
            "GO111MODULE": "off",
            "GOFLAGS": "-buildvcs=false",
            "HOME": "/tmp",
        },
        limit_address_space=False,
    )


def _rust() -> Language | None:
    rustc = shutil.which("rustc") or (
        str(Path.home() / ".cargo/bin/rustc")
        if (Path.home() / ".cargo/bin/rustc").exists()
        else None
    )
    if rustc is None:
        return None
    try:
        sysroot = subprocess.run(
            [rustc, "--print", "sysroot"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    real = Path(sysroot) / "bin" / "rustc"
    if not real.exists():
        return None
    return Language(
        name="rust",
        source_name=_fixed("main.rs"),
        compile_argv=lambda src: (
            str(real),
            "-O",
            "--edition",
            "2021",
            "-o",
            "/code/main",
            f"/code/{src}",
        ),
        run_argv=lambda _src, _l: ("/code/main",),
        toolchain_dirs=_outside_usr(sysroot),
        run_dirs=(),  # std is linked in: the binary needs nothing of the sysroot to run
        path_dirs=(str(real.parent),),
    )


def _bash() -> Language | None:
    bash = shutil.which("bash")
    if bash is None:
        return None
    return Language(
        name="bash",
        source_name=_fixed("main.sh"),
        run_argv=lambda src, _l: ("/bin/bash", f"/code/{src}"),
    )


_FACTORIES: dict[str, Callable[[], Language | None]] = {
    "python": _python,
    "c": lambda: _c_family("c", "gcc", "main.c", "gnu17"),
    "cpp": lambda: _c_family("cpp", "g++", "main.cpp", "gnu++17"),
    "java": _java,
    "javascript": _javascript,
    "go": _go,
    "rust": _rust,
    "bash": _bash,
}


def known_languages() -> list[str]:
    """Every language referee has a recipe for, installed or not."""
    return list(_FACTORIES)


@functools.cache
def _probe_all() -> dict[str, Language]:
    found: dict[str, Language] = {}
    for name, factory in _FACTORIES.items():
        recipe = factory()
        if recipe is not None:
            found[name] = recipe
    return found


def available_languages() -> list[str]:
    """Languages whose toolchains are installed here (probed once per process)."""
    return list(_probe_all())


def normalize_language(name: str) -> str:
    key = name.strip().lower()
    return _ALIASES.get(key, key)


def get_language(name: str) -> Language:
    """The recipe for ``name`` (aliases such as ``py``, ``c++``, ``js`` accepted)."""
    recipe = _probe_all().get(normalize_language(name))
    if recipe is None:
        raise LanguageUnavailable(name, available_languages())
    return recipe


# -- by-name mode: the same recipes for a container image ----------------------------------------
IMAGE_TOOLS: dict[str, tuple[str, ...]] = {
    "python": ("python3",),
    "c": ("gcc",),
    "cpp": ("g++",),
    "java": ("javac", "java"),
    "javascript": ("node",),
    "go": ("go",),
    "rust": ("rustc",),
    "bash": ("bash",),
}
"""The programs (by name, on the image's PATH) each language's recipe runs."""

# A host toolchain's file name -> its plain name: python3.12 -> python3, gcc-12 -> gcc.
_TOOL_FILE = re.compile(r"^(python3?|gcc|g\+\+|javac|java|node|nodejs|go|rustc|bash)(?:-?[\d.]+)?$")
_TOOL_RENAMES = {"python": "python3", "nodejs": "node"}


def by_name_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` with a host toolchain path in ``argv[0]`` replaced by the tool's plain name.

    Paths inside the sandbox (``/code/main``) and unknown programs are left as they are.
    """
    if not argv or not argv[0].startswith("/") or argv[0].startswith("/code/"):
        return argv
    match = _TOOL_FILE.match(os.path.basename(argv[0]))
    if match is None:
        return argv
    name = _TOOL_RENAMES.get(match.group(1), match.group(1))
    return (name, *argv[1:])


def by_name(recipe: Language) -> Language:
    """``recipe`` for an image: commands by program name, no host toolchain dirs or PATH."""
    compile_argv = recipe.compile_argv
    run_argv = recipe.run_argv
    return replace(
        recipe,
        run_argv=lambda src, limits: by_name_argv(run_argv(src, limits)),
        compile_argv=(
            None if compile_argv is None else lambda src: by_name_argv(compile_argv(src))
        ),
        toolchain_dirs=(),
        path_dirs=(),
        binds=(),  # the image's own packages (docker/build-sandbox-image.sh)
    )
