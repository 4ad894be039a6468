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

from plcore.run.app import main


def run_case(case: dict) -> dict:
    environ, cwd, argv = dict(os.environ), os.getcwd(), list(sys.argv)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(case.get("env") or {})
        os.chdir(case["cwd"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(case["args"]))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - reported as a crash, like the interpreter would
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.argv = argv
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    cases_path, results_path = sys.argv[1:3]
    with open(cases_path) as f:
        cases = json.load(f)
    results = [run_case(case) for case in cases]
    with open(results_path, "w") as f:
        json.dump(results, f)
