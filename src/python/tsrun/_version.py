"""tsrun.__version__: the meson project's version, never written down twice.

An install (meson install, pip install) carries _built.py, which meson
writes from project(version: ...). Imported from a source tree
(PYTHONPATH=src/python), the version is read from the tree's meson.build."""

import os
import re


def _from_source_tree():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))),
                         "meson.build")
    try:
        with open(build) as f:
            text = f.read(4096)
    except OSError:
        return None
    m = re.search(r"project\(\s*'tsrun'[^)]*?\bversion\s*:\s*'([^']+)'", text, re.S)
    return m.group(1) if m else None


def version():
    try:
        from ._built import VERSION
        return VERSION
    except ImportError:
        return _from_source_tree() or "unknown"
