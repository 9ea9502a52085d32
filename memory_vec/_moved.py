"""Import paths of 0.1 that moved in 0.2: they keep working, with a DeprecationWarning, until 0.3.

0.2 laid the package out in layers (``_model``, ``_rules``, ``_storage``,
``_pipelines``, ``_cli``); the public names are re-exported by :mod:`memory_vec`.
A finder on ``sys.meta_path`` serves each old module name as the module it
became (the same object, so a monkeypatch through either name is seen by both).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["MOVED", "install"]

#: Old module name (0.1) -> the module it is now.
MOVED = {
    f"memory_vec.{old}": f"memory_vec.{new}"
    for old, new in {
        "errors": "_model.errors",
        "config": "_model.config",
        "records": "_model.records",
        "scope": "_model.scope",
        "trace": "_model.trace",
        "render": "_model.render",
        "_validate": "_model.validate",
        "facts": "_rules.facts",
        "owners": "_rules.owners",
        "extraction": "_rules.extraction",
        "dates": "_rules.dates",
        "conflict": "_rules.conflict",
        "lifecycle": "_rules.lifecycle",
        "privacy": "_rules.privacy",
        "context": "_rules.context",
        "summary": "_rules.summary",
        "tokens": "_rules.tokens",
        "storable": "_rules.storable",
        "recall": "_rules.ranking",
        "recall.ranking": "_rules.ranking",
        "recall.order": "_rules.event_order",
        "recall.temporal": "_rules.temporal",
        "recall.bm25": "_rules.bm25",
        "store": "_storage.store",
        "writer": "_storage.writer",
        "keywords": "_storage.keywords",
        "vector_cache": "_storage.vector_cache",
        "engine": "_pipelines.engine",
        "embed_text": "_pipelines.embed_text",
        "write_path": "_pipelines.write",
        "read_path": "_pipelines.read",
        "resolution": "_pipelines.resolution",
        "management": "_pipelines.management",
        "transfer": "_pipelines.transfer",
        "maintenance": "_pipelines.maintenance",
        "upkeep": "_pipelines.upkeep",
        "background": "_pipelines.background",
        "core": "_core",
        "cli": "_cli.main",
        "_cli_ops": "_cli.ops",
        "demo": "_cli.demo",
    }.items()
}

#: The one old package: a re-export of the ranking names, with submodules of its own.
_OLD_PACKAGE = "memory_vec.recall"


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == _OLD_PACKAGE)

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} moved in memory-vec 0.2: import the name from memory_vec "
            f"(or {new}); the old path goes away in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        target = importlib.import_module(new)
        if module.__name__ == _OLD_PACKAGE:
            # Was a package: its submodules still import through it, so it stays a package.
            module.__path__ = []
            module.__dict__.update({name: getattr(target, name) for name in target.__all__})
            if hasattr(target, "__getattr__"):  # names it still serves under their 0.1 spelling
                module.__dict__["__getattr__"] = target.__getattr__
            return
        # The import system returns what sys.modules holds under the old name after this.
        sys.modules[module.__name__] = target


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
