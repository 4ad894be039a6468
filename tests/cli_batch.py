"""Run many ``python -m plcore`` command lines in one process (``tests/conftest.py::run_plcore_batch``).

``python tests/cli_batch.py CASES.json RESULTS.json``: CASES is a list of ``{"args", "cwd", "env"}``;
each runs :func:`plcore.run.app.main` in its own working directory and environment, and RESULTS gets
``{"returncode", "stdout", "stderr"}`` for each. Imports (about 2 s) are paid once instead of once
per command line; each case's environment and working directory are restored after it.
"""

import contextlib
import io
import json
import os
import sys
import traceback
import warnings

#: the interpreter's own warning filters, before plcore's imports add any: each case starts from them
_FILTERS = list(warnings.filters)

from plcore.run.app import main  # noqa: E402 - after the filters are kept


def _exit_code(code) -> int:
    """What the interpreter exits with for ``sys.exit(code)`` (a string is printed, exit 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_case(case: dict) -> dict:
    """One command line as its own process would run it, as far as Python state goes: its
    environment, working directory, ``sys.argv``, warning filters and registries (a warning shown
    by an earlier case shows again), the root logger's handlers and the last sweep's failures are
    restored afterwards. Output written to the file descriptors by C code or worker processes is not
    captured (the tests that need it run ``python -m plcore`` itself)."""
    import logging

    environ, cwd, argv = dict(os.environ), os.getcwd(), list(sys.argv)
    handlers, level = list(logging.root.handlers), logging.root.level
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(case.get("env") or {})
        os.chdir(case["cwd"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.filters[:] = _FILTERS
            for module in list(sys.modules.values()):
                registry = getattr(module, "__warningregistry__", None)
                if isinstance(registry, dict):
                    registry.clear()
            try:
                code = _exit_code(main(list(case["args"])))
            except SystemExit as exc:
                code = _exit_code(exc.code)
            except BaseException:  # noqa: BLE001 - reported as a crash, like the interpreter would
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.argv = argv
        logging.root.handlers[:] = handlers
        logging.root.setLevel(level)
        callbacks = sys.modules.get("plcore.run.callbacks")
        if callbacks is not None and hasattr(callbacks, "_FAILED_JOBS"):
            callbacks._FAILED_JOBS.clear()
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    cases_path, results_path = sys.argv[1:3]
    with open(cases_path) as f:
        cases = json.load(f)
    results = [run_case(case) for case in cases]
    with open(results_path, "w") as f:
        json.dump(results, f)
