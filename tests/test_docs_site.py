"""The documentation site: it builds with ``mkdocs build --strict``, documents every hook and
every registered component (with its parameters), and its getting-started code runs.

The coverage checks are plain functions (:func:`undocumented_components`,
:func:`undocumented_parameters`, :func:`undocumented_hooks`) so that the tests can also feed
them a registry / hook module with something undocumented and see it reported.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import pytest
import yaml
from threadpoolctl import threadpool_limits

from plcore.registry import hookspecs
from plcore.base import BaseLearner

from plcore.registry import ESTIMATOR_KINDS, ComponentSpec, Registry, get_registry, hookimpl

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
METHODS = DOCS / "methods"
HOOKS_PAGE = DOCS / "plugin_hooks.md"
MKDOCS = Path(sys.executable).with_name("mkdocs")
BUILD_TIMEOUT = 300

#: distributions whose components are examples for plugin authors, not shipped methods
#: (docs/examples/plcore-example-plugin is documented in writing_plugins.md; the others
#: are built by tests/test_plugins.py)
EXAMPLE_DISTRIBUTIONS = {"plcore-example-plugin", "plcore-broken-plugin", "plcore-shadow-plugin"}


# ----------------------------------------------------------------------------- checks
def methods_pages(root: Path = METHODS) -> dict[str, str]:
    """``{page name: markdown text}`` of every page under docs/methods/."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))}


def _mentions(text: str, word: str) -> bool:
    """``word`` is written as a code span: `` `word` `` or an option `` `+learner=word` ``."""
    return re.search(rf"`(?:[+~]{{0,2}}[\w.]+=)?{re.escape(word)}`", text) is not None


def shipped_components(registry: Registry):
    """The registry's components minus the plugin-author examples, sorted by (kind, name)."""
    return [c for _, c in sorted(registry.components.items()) if c.distribution not in EXAMPLE_DISTRIBUTIONS]


def undocumented_components(registry: Registry, pages: dict[str, str]) -> list[str]:
    """``"kind name (distribution)"`` of every component no methods page names as `` `name` ``."""
    return [f"{c.kind} {c.name} ({c.distribution})" for c in shipped_components(registry)
            if not any(_mentions(text, c.name) for text in pages.values())]


def _param_names(cls) -> list[str]:
    """Constructor parameters, without instantiating (plugins may register abstract stubs)."""
    getter = getattr(cls, "_get_param_names", None)
    if getter is not None:
        return list(getter())
    return [p for p in inspect.signature(cls).parameters if p not in ("self", "args", "kwargs")]


def undocumented_parameters(registry: Registry, pages: dict[str, str]) -> list[str]:
    """``"kind name: param"`` for every constructor parameter of an estimator component that
    is not written as `` `param` `` on a methods page that names the component."""
    missing = []
    for comp in shipped_components(registry):
        if comp.kind not in ESTIMATOR_KINDS or not isinstance(comp.spec.cls, type):
            continue
        own = [text for text in pages.values() if _mentions(text, comp.name)]
        for param in _param_names(comp.spec.cls):
            if not any(_mentions(text, param) for text in own):
                missing.append(f"{comp.kind} {comp.name}: {param}")
    return missing


def hook_names(module) -> list[str]:
    return sorted(n for n, f in vars(module).items() if n.startswith("plcore_") and inspect.isfunction(f))


def undocumented_hooks(module, text: str) -> list[str]:
    """Hooks of ``module`` without a ``## `plcore_x()` `` section in the hook reference."""
    headings = set(re.findall(r"^#{2,4}\s+`(plcore_\w+)\(\)`", text, re.M))
    return [name for name in hook_names(module) if name not in headings]


# ----------------------------------------------------------------------------- the build
def _run_mkdocs(args, cwd: Path) -> subprocess.CompletedProcess:
    if not MKDOCS.exists():
        pytest.fail(f"mkdocs not found next to the interpreter ({MKDOCS}); it is in requirements.lock")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([str(MKDOCS), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """The site, built once with ``mkdocs build --strict``: ``(folder, seconds)``."""
    site = tmp_path_factory.mktemp("site") / "site"
    start = time.perf_counter()
    proc = _run_mkdocs(["build", "--strict", "-d", str(site)], REPO)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, f"mkdocs build --strict failed ({elapsed:.1f} s):\n{proc.stdout}\n{proc.stderr}"
    return site, elapsed


def test_mkdocs_build_strict(built_site):
    site, elapsed = built_site
    print(f"mkdocs build --strict: {elapsed:.1f} s")
    # the pages exist, and the API reference was really generated from the docstrings
    for page in ("index.html", "methods/cenda/index.html", "configuration/index.html",
                 "plugin_hooks/index.html", "writing_plugins/index.html", "mlflow_ui/index.html"):
        assert (site / page).is_file(), f"{page} missing from the built site"
    base = (site / "api" / "base" / "index.html").read_text(encoding="utf-8")
    assert 'id="plcore.base.BaseLearner"' in base and "_fit" in base
    cenda = (site / "api" / "plcore_cenda" / "index.html").read_text(encoding="utf-8")
    assert 'id="plcore_cenda.CendaReducer"' in cenda
    assert (site / "assets" / "screenshots" / "mlflow-ui-run.png").is_file()
    assert not (site / "examples").exists(), "docs/examples/ (a plugin package) must stay out of the site"
    assert not (site / "_hooks").exists(), "docs/_hooks/ (build code) must stay out of the site"


@pytest.mark.browser
@pytest.mark.slow
def test_method_pages_typeset_their_equations_offline(built_site, chromium_browser):
    """The CENDA page in a browser with the network cut: KaTeX (shipped in the site) typesets
    every formula, among them Eq. (12) displayed, with its own fonts and no error."""
    from playwright.sync_api import expect

    site, _ = built_site
    page = chromium_browser.new_page(viewport={"width": 1280, "height": 900})
    outside = []

    def local_only(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    page.route("**/*", local_only)
    page.goto((site / "methods" / "cenda" / "index.html").as_uri())
    page.wait_for_function("document.querySelectorAll('.arithmatex .katex').length > 0", timeout=30_000)
    formulas = page.locator(".arithmatex")
    assert formulas.count() >= 10
    expect(page.locator(".arithmatex .katex")).to_have_count(formulas.count())  # every one typeset
    expect(page.locator(".katex-error")).to_have_count(0)
    eq12 = page.locator(".katex-display").filter(has=page.locator("annotation", has_text=r"\lambda"))
    expect(eq12).to_have_count(1)
    tex = eq12.locator("annotation").text_content()  # MathML: no inner_text
    assert r"X^\top H Y Y^\top H X" in tex and r"\mu X^\top X" in tex
    box = eq12.locator(".katex-html").bounding_box()
    assert box["width"] > 200 and 15 < box["height"] < 120
    assert page.evaluate("Array.from(document.fonts).some(f => f.family.includes('KaTeX_Main') "
                         "&& f.status === 'loaded')"), "KaTeX's fonts did not load from the site"
    assert outside == [], f"the page asked the network for {outside}"


def test_broken_links_fail_the_strict_build(tmp_path):
    """The site's ``validation`` settings turn a dead link or anchor into a --strict error."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n## Here\n\n[ok](#here)\n")
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n[home](index.md#here)\n")
    site_config = {"site_name": "t", "nav": ["index.md", "page.md"], "validation": config["validation"]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(site_config))
    ok = _run_mkdocs(["build", "--strict"], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = ["missing.md", "index.md#nowhere", "../README.md"]
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n" + " ".join(f"[x]({link})" for link in bad) + "\n")
    proc = _run_mkdocs(["build", "--strict"], tmp_path)
    assert proc.returncode != 0, "broken links did not fail the strict build"
    for link in bad:
        assert f"'{link}'" in proc.stderr, f"no warning for the broken link {link}:\n{proc.stderr}"


# ----------------------------------------------------------------------------- coverage
def test_every_registered_component_is_documented():
    registry = get_registry()
    assert len(shipped_components(registry)) >= 20
    missing = undocumented_components(registry, methods_pages())
    assert not missing, ("registered components not named (as `name`) on any docs/methods/ page: "
                         + ", ".join(missing))


def test_every_component_parameter_is_documented():
    missing = undocumented_parameters(get_registry(), methods_pages())
    assert not missing, ("constructor parameters not written as `param` on the component's docs/methods/ "
                         "page: " + ", ".join(missing))


def test_every_hook_has_a_section_in_the_hook_reference():
    assert hook_names(hookspecs)
    missing = undocumented_hooks(hookspecs, HOOKS_PAGE.read_text(encoding="utf-8"))
    assert not missing, f"hooks without a '## `name()`' section in docs/plugin_hooks.md: {missing}"


def test_every_plugin_package_has_an_api_page():
    packages = {c.spec.cls.__module__.split(".")[0] for c in shipped_components(get_registry())
                if c.kind in ESTIMATOR_KINDS}  # preprocessors may be scikit-learn's own classes
    api = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md"))
    documented = set(re.findall(r"^:::\s+([\w]+)", api, re.M))
    assert packages - {"plcore"}, "no plugin package registered (are the plugins installed?)"
    assert not packages - documented, f"packages without a '::: package' API page: {sorted(packages - documented)}"


class _Undocumented(BaseLearner):
    """A learner nobody wrote a page for."""

    def __init__(self, zz_secret_param=1):
        self.zz_secret_param = zz_secret_param

    def _fit(self, X, S):  # pragma: no cover - never fitted
        return self

    def _scores(self, X):  # pragma: no cover
        raise NotImplementedError


def test_checks_report_a_new_undocumented_component_and_hook():
    """The coverage checks fail for a component, a parameter or a hook added without docs."""
    pages = methods_pages()

    class NewPlugin:
        @hookimpl
        def plcore_components(self):
            return [ComponentSpec("learner", "zz_undocumented", _Undocumented),
                    ComponentSpec("learner", "plknn_twin_for_docs_test", _Undocumented)]

    registry = Registry()
    registry.register(NewPlugin(), name="new", distribution="plcore-new", version="0.1")
    registry.load(entry_points=False)
    assert registry.get("learner", "plknn").distribution == "plcore"  # the built-ins came in too
    missing = undocumented_components(registry, pages)
    assert missing == ["learner plknn_twin_for_docs_test (plcore-new)", "learner zz_undocumented (plcore-new)"]
    # once a page names it, the component passes but its undocumented parameter is reported
    pages = dict(pages, **{"zz.md": "`zz_undocumented` and `plknn_twin_for_docs_test` (`zz_secret_param`)"})
    assert undocumented_components(registry, pages) == []
    assert undocumented_parameters(registry, pages) == []
    pages["zz.md"] = "`zz_undocumented` and `plknn_twin_for_docs_test`"
    assert undocumented_parameters(registry, pages) == ["learner plknn_twin_for_docs_test: zz_secret_param",
                                                        "learner zz_undocumented: zz_secret_param"]
    # the plugin-author example is exempt
    registry.components[("learner", "zz_undocumented")].distribution = "plcore-example-plugin"
    assert "learner zz_undocumented" not in " ".join(undocumented_components(registry, methods_pages()))

    fake_hooks = types.ModuleType("fake_hookspecs")
    fake_hooks.plcore_components = hookspecs.plcore_components
    fake_hooks.plcore_new_hook = lambda: None
    text = HOOKS_PAGE.read_text(encoding="utf-8")
    assert undocumented_hooks(fake_hooks, text) == ["plcore_new_hook"]
    assert undocumented_hooks(fake_hooks, text + "\n## `plcore_new_hook()`\n") == []


# ----------------------------------------------------------------------------- the example
def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def test_index_examples_run():
    """The getting-started code of docs/index.md runs and does what the page says."""
    blocks = _python_blocks(DOCS / "index.md")
    assert len(blocks) >= 2
    namespace: dict = {"__name__": "docs_index"}
    out = io.StringIO()
    # one BLAS/OpenMP thread: the neighbour searches oversubscribe busy cores (10x slower)
    with contextlib.redirect_stdout(out), warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # CENDA's ConvergenceWarning on digits
        exec(compile(blocks[0], "docs/index.md[0]", "exec"), namespace)
        assert namespace["acc"] > 0.93, f"the page says about 0.96, got {namespace['acc']:.3f}"
        disamb = (namespace["conf"].argmax(axis=1) == namespace["y_tr"]).mean()
        assert disamb > 0.95, f"the page says about 0.98, got {disamb:.3f}"
        for i, block in enumerate(blocks[1:], start=1):
            exec(compile(block, f"docs/index.md[{i}]", "exec"), namespace)
    assert "test accuracy 0.9" in out.getvalue()
    reducer = namespace["model"][1]
    assert reducer.n_components_ <= 9  # at most q - 1 for digits, as the page says


def test_own_data_example_runs(tmp_path, monkeypatch, plcore_cli):
    """The worked example of docs/own_data.md: its Python blocks, in order, print what the page
    says (class names from ``predict``), and the page's command runs on the file they wrote and
    prints the lines the page shows."""
    page = DOCS / "own_data.md"
    text = page.read_text(encoding="utf-8")
    blocks = _python_blocks(page)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs_own_data"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), threadpool_limits(1):
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/own_data.md[{i}]", "exec"), namespace)
    printed = out.getvalue().splitlines()
    assert "PLDataset(name='animals', n=300, d=3, q=4, avg_candidates=1.95)" in printed
    assert "['cat' 'dog' 'fox' 'owl']" in printed
    assert "['cat' 'dog' 'dog' 'dog' 'owl']" in printed  # class names, not column indices
    assert "0.94" in printed  # the score and the 5-fold accuracy the page quotes
    assert (tmp_path / "animals.csv").read_text().splitlines()[:2] == re.search(
        r"`animals.csv` starts\n\n```text\n(.*?)```", text, re.S).group(1).splitlines()
    command, shown = re.search(r"```bash\npython -m plcore (dataset=file [^\n]*)\n```\n\n```text\n(.*?)```",
                               text, re.S).groups()
    proc = plcore_cli([*command.split(), "tracking=none", "progress=false"], tmp_path)
    for line in shown.splitlines():
        assert line in proc.stdout.splitlines(), f"{line!r} not in the output:\n{proc.stdout}"


def _own_data_section(title: str, cwd, monkeypatch) -> list:
    """docs/own_data.md's Python blocks run in ``cwd`` (they write the page's files), and the
    ``(bash|text, body)`` blocks of its section ``title``."""
    page = (DOCS / "own_data.md").read_text(encoding="utf-8")
    section = page.split(title, 1)[1].split("\n## ", 1)[0]
    monkeypatch.chdir(cwd)
    namespace: dict = {"__name__": "docs_own_data"}
    with contextlib.redirect_stdout(io.StringIO()), threadpool_limits(1):
        for i, block in enumerate(_python_blocks(DOCS / "own_data.md")):
            exec(compile(block, f"docs/own_data.md[{i}]", "exec"), namespace)
    return re.findall(r"```(bash|text)\n(.*?)```", section, re.S)


def test_the_practitioners_loop_runs_as_the_page_says(tmp_path, monkeypatch, plcore_cli, model_server):
    """docs/own_data.md, "The practitioner's loop": its Python blocks write the files, then each
    command of the section runs as written (the model id the training run prints stands for
    ``<model id>``, another free port for the page's) and prints the lines the page shows; the
    ``curl`` call is made with the page's body."""
    import json
    import shlex
    import urllib.request

    blocks = _own_data_section("## The practitioner's loop", tmp_path, monkeypatch)
    train, shown = blocks[0][1].strip(), blocks[1][1]
    assert train.startswith("python -m plcore ")
    proc = plcore_cli(train.split()[3:], tmp_path)
    for line in shown.splitlines():
        assert line in proc.stdout.splitlines(), f"{line!r} not in the output:\n{proc.stdout}"
    model_id = re.search(r"its model: models:/(\S+)", proc.stdout).group(1)
    predict, rows = blocks[2][1].strip(), blocks[3][1]
    plcore_cli(shlex.split(predict)[3:], tmp_path)
    assert (tmp_path / "predictions.csv").read_text().splitlines()[:2] == rows.splitlines()
    serve, curl, answer = blocks[4][1].strip(), blocks[5][1].strip(), blocks[6][1].strip()
    assert serve.startswith("mlflow models serve -m models:/<model id> --env-manager local -h 127.0.0.1")
    url = model_server(model_id, tmp_path)
    body = re.search(r"-d '(.*)'$", curl).group(1)
    request = urllib.request.Request(f"{url}/invocations", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        assert json.loads(resp.read()) == json.loads(answer)


def test_clean_your_labels_runs_as_the_page_says(tmp_path, monkeypatch, plcore_cli):
    """docs/own_data.md, "Clean your labels": the page's Python blocks write ``crowd.csv``, then
    its command runs as written, prints the page's lines and writes the page's first rows."""
    blocks = _own_data_section("## Clean your labels", tmp_path, monkeypatch)
    command, shown, rows = blocks[0][1].strip(), blocks[1][1], blocks[2][1]
    assert command.startswith("python -m plcore clean ")
    proc = plcore_cli(command.split()[3:], tmp_path)
    for line in shown.splitlines():
        assert line in proc.stdout.splitlines(), f"{line!r} not in the output:\n{proc.stdout}"
    written = (tmp_path / "clean.csv").read_text().splitlines()
    assert written[:2] == rows.splitlines() and len(written) == 301
