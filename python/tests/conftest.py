"""Shared fixtures: the demo corpus's texts and the `topos` binary built in the same CI run.

The tests compare the Python package against the CLI (same model bytes, same neighbours, same
error messages), so the binary is required, not optional: set TOPOS_BIN or build it with
`cargo build --release -p topos-cli` (.ci/run does).
"""

import gzip
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / "crates" / "topos-cli" / "data" / "arxiv-abstracts.txt.gz"


@pytest.fixture(scope="session")
def topos_bin() -> str:
    path = os.environ.get("TOPOS_BIN", str(ROOT / "target" / "release" / "topos"))
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} not found: build it with `cargo build --release -p topos-cli` or set TOPOS_BIN")
    return path


@pytest.fixture(scope="session")
def abstracts() -> list:
    with gzip.open(DEMO, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def cli(topos_bin, *args, check=True):
    """Runs `topos ARGS -q`; returns the completed process."""
    r = subprocess.run([topos_bin, *map(str, args), "-q"], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"topos {' '.join(map(str, args))} failed: {r.stderr}")
    return r


def cli_json(topos_bin, *args):
    return json.loads(cli(topos_bin, *args, "--json").stdout)


def cli_error(topos_bin, *args) -> str:
    """The one-line message `topos ARGS` fails with, without its `error: ` prefix."""
    r = cli(topos_bin, *args, check=False)
    assert r.returncode != 0, f"topos {' '.join(map(str, args))} did not fail"
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), line
    return line[len("error: "):]
