"""Shared helpers of the Python module's tests: the repository and the CLI to compare with.

The CLI is the one the CMake build made (build/bin/trainsim, or $TRAINSIM_CLI); `make python-test`
builds it first."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("TRAINSIM_CLI", ROOT / "build" / "bin" / "trainsim"))


class CliRun:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr


def run_cli(*args, cwd=ROOT):
    if not CLI.exists():
        pytest.fail(f"the trainsim CLI is not built ({CLI}); run `make build` or set TRAINSIM_CLI")
    proc = subprocess.run([str(CLI), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)
    return CliRun(proc)


def normalised(text):
    """A JSON document parsed and written back with sorted keys: equal documents, equal text."""
    return json.dumps(json.loads(text), sort_keys=True)


def cli_error(run, command):
    """The message of a CLI error line ("trainsim perf: error: ..."), and its kind."""
    for kind in ("usage error", "error"):
        prefix = f"trainsim {command}: {kind}: "
        if run.err.startswith(prefix):
            return kind, run.err[len(prefix):].rstrip("\n")
    raise AssertionError(f"not an error of trainsim {command}: rc {run.rc}, stderr {run.err!r}")


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    # Relative paths (validation/, docs/examples) as the CLI sees them from the repository root.
    monkeypatch.chdir(ROOT)
