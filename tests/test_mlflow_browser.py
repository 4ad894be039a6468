"""The MLflow UI in a real browser: a ``python -m plcore`` run, ``mlflow ui`` over its database and
Debian's headless ``chromium`` driven by Playwright (``executable_path``; never ``playwright install``).

Skipped when chromium or playwright is missing, unless ``PLCORE_REQUIRE_BROWSER=1`` (CI), which
turns the skip into a failure. Saves its screenshots in a temporary folder; to regenerate the
ones shown in docs/mlflow_ui.md, run it with ``PLCORE_SCREENSHOT_DIR=docs/assets/screenshots``
(a test never writes into the checkout by default).
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path(os.environ.get("PLCORE_SCREENSHOT_DIR") or Path(tempfile.gettempdir()) / "plcore-screenshots")
PLOT = "plots/accuracy_per_fold.png"
WAIT_MS = 60_000  # generous: the UI is a large bundle and the machine may be busy


def _png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk of a PNG file."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.fixture
def tracked_run(tmp_path, plcore_cli):
    """A quick real run (digits, 3 folds) tracked in ``tmp_path/mlflow.db`` + ``tmp_path/mlruns``."""
    import mlflow

    plcore_cli(["protocol.n_splits=3", "progress=false"], tmp_path,
               {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("plcore")
    (run,) = client.search_runs([exp.experiment_id])
    return tmp_path, exp, run


def test_mlflow_ui_shows_run_metric_and_plot(tracked_run, mlflow_server, chromium_browser):
    from playwright.sync_api import expect

    cwd, exp, run = tracked_run
    run_id, run_name = run.info.run_id, run.info.run_name
    accuracy = run.data.metrics["accuracy_mean"]
    (plot_file,) = cwd.glob(f"mlruns/**/{run_id}/artifacts/{PLOT}")
    server = mlflow_server(f"sqlite:///{cwd / 'mlflow.db'}", cwd, command="ui")
    SHOTS.mkdir(parents=True, exist_ok=True)

    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(WAIT_MS)
    # the UI opens in "GenAI" mode: go straight to the experiment's run list
    page.goto(f"{server.url}/#/experiments/{exp.experiment_id}/runs")
    page.get_by_role("link", name=run_name, exact=True).click()
    page.wait_for_url(f"**/runs/{run_id}**")
    expect(page.get_by_test_id("runs-header")).to_have_text(run_name)
    close = page.get_by_role("button", name="Close")  # the "MLflow Assistant" side panel
    if close.count() == 1 and close.is_visible():
        close.click()

    # Overview: the metrics table has a row "accuracy_mean | <value>"
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="accuracy_mean", exact=True))
    expect(row).to_be_visible()
    cells = row.get_by_role("cell")
    expect(cells.nth(1)).to_be_visible()
    numbers = []  # the value cell (MLflow 3 adds a cell for the logged model beside it)
    for text in cells.all_inner_texts():
        try:
            numbers.append(float(text.strip()))
        except ValueError:
            continue
    assert len(numbers) == 1, cells.all_inner_texts()
    shown = numbers[0]
    assert shown == pytest.approx(accuracy, rel=1e-9, abs=1e-12)
    assert 0.85 < shown <= 1.0  # digits, r=3: far above chance 0.1
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "mlflow-ui-metrics.png"))

    # Artifacts: open plots/ and click the PNG; the preview is an <img alt="plots/...">
    page.get_by_role("tab", name="Artifacts").click()
    node = page.get_by_text("accuracy_per_fold.png", exact=True)
    folder = page.get_by_text("plots", exact=True).first
    folder.wait_for()
    if not node.is_visible():
        folder.click()
    node.click()
    img = page.locator(f'img[alt="{PLOT}"]')
    expect(img).to_be_visible()
    page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=img.element_handle())
    natural = img.evaluate("el => [el.naturalWidth, el.naturalHeight]")
    assert tuple(natural) == _png_size(plot_file)  # the logged figure, not a placeholder icon
    expect(page.get_by_text(PLOT, exact=True).first).to_be_visible()
    page.screenshot(path=str(SHOTS / "mlflow-ui-run.png"))
    assert _png_size(SHOTS / "mlflow-ui-run.png") == (1440, 900)


def test_mlflow_ui_shows_the_comparison_diagram_on_the_sweeps_parent_run(tmp_path, plcore_cli, mlflow_server,
                                                                          chromium_browser):
    """``report=comparison``: the sweep's parent run holds the critical-difference diagram, and
    the MLflow UI shows it as an image on that run's Artifacts tab."""
    import mlflow
    from playwright.sync_api import expect

    plcore_cli(["-m", "+learner=plknn", "learner.k=1,5,15", "dataset=iris,wine,digits", "bags.r=1",
                "protocol.n_splits=3", "progress=false", "report=comparison"], tmp_path,
               {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("plcore")
    (parent,) = client.search_runs([exp.experiment_id], filter_string="tags.`plcore.comparison.of` LIKE 'multirun%'")
    diagram = "comparison_cd_accuracy.png"
    (logged,) = tmp_path.glob(f"mlruns/**/{parent.info.run_id}/artifacts/{diagram}")
    server = mlflow_server(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path, command="ui")

    page = chromium_browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{server.url}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}")
    expect(page.get_by_test_id("runs-header")).to_have_text(parent.info.run_name)
    close = page.get_by_role("button", name="Close")  # the "MLflow Assistant" side panel
    if close.count() == 1 and close.is_visible():
        close.click()
    page.get_by_role("tab", name="Artifacts").click()
    page.get_by_text(diagram, exact=True).click()
    img = page.locator(f'img[alt="{diagram}"]')
    expect(img).to_be_visible()
    page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=img.element_handle())
    assert tuple(img.evaluate("el => [el.naturalWidth, el.naturalHeight]")) == _png_size(logged)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "mlflow-ui-comparison.png"))
