"""The lab's result view and Kaynak arama, measured in a real browser at 1280×800 and 1920×1080.

What the issue saw on main: charts wider than their column (a legend spilling under the next
chart, bars cut at half their length), and tables whose score columns sat off the right edge.
So, at both sizes:
- every chart's drawing (the Vega canvas or svg) lies inside its own column and overlaps no
  other element of the page;
- the search table and the lab's results table need no sideways scrolling and end inside the
  viewport, so their score columns are on screen.
Elements are found by their structure (Streamlit's data-testids, the sidebar link's url, the
tab's position), not by their labels, which another change may reword. The screenshots go to
artifacts/ and, with UPDATE_SCREENSHOTS=1, to docs/screenshots/ for the README.
"""

from __future__ import annotations

import pytest

from eval import chart_layout, goldstore
from eval.gold_run import GoldRunSpec, create_gold_run, run_gold
from ragcore.core import Settings
from ragcore.store import Database
from tests import browser_support
from tests.browser_support import ADMIN_PASSWORD, APP_DATA_DIR, ensure_user, idle, login, shot
from tests.fakes import HashEmbedder
from tests.lab_support import CHUNK_SIZE, GOLD_JSONL, add_company_documents
from tests.pdfs import text_pdf

pytestmark = pytest.mark.browser
app_url = browser_support.app_url  # the same fixtures: a streamlit server for this module, a chromium page per test
browser_page = browser_support.browser_page

VIEWPORTS = ((1280, 800), (1920, 1080))
SEARCH_TITLE = "6331 sayılı İş Sağlığı ve Güvenliği Kanunu — Çalışanların İş Sağlığı ve Güvenliği Eğitimleri Yönetmeliği"
SEARCH_PAGES = [
    "MADDE 5 - (1) Isveren, calisanlarin is sagligi ve guvenligi egitimlerini almasini saglar. Egitim programi "
    "risk degerlendirmesi sonuclarina gore hazirlanir.\nMADDE 6 - (1) Egitimler calisma saatleri icinde yapilir.",
    "MADDE 7 - (1) Egitim suresi ve konulari isyerinin tehlike sinifina gore belirlenir. Isveren egitimin "
    "belgesini saklar.\nMADDE 8 - (1) Egitimi veren kisi isyeri hekimi veya is guvenligi uzmanidir.",
]
SEARCH_QUERY = "isveren egitim risk degerlendirmesi"

# Every chart's drawing against its column and the page's other elements. A chart's drawing is
# the canvas (or svg) Vega made; `column` is the nearest block that lays it out (a column of
# st.columns or the main block). `overlaps` names the elements (not containing the chart) whose
# box meets the drawing by more than a pixel each way: a legend drawn under the next chart.
# Elements inside a closed expander keep a box but are not shown: they do not count.
CHARTS_JS = """() => {
  const shown = el => el.getBoundingClientRect().height > 0 && el.checkVisibility({visibilityProperty: true});
  const main = document.querySelector("[data-testid='stMain']");
  const others = [...main.querySelectorAll("[data-testid='stElementContainer']")]
    .filter(shown);
  return [...main.querySelectorAll(".vega-embed")].map((embed, index) => {
    const drawing = embed.querySelector("canvas, svg");
    const d = drawing.getBoundingClientRect();
    const own = embed.closest("[data-testid='stElementContainer']");
    const column = (own.closest("[data-testid='stColumn']") || own.parentElement).getBoundingClientRect();
    const overlaps = others.filter(el => !el.contains(embed) && !embed.contains(el)).filter(el => {
      const r = el.getBoundingClientRect();
      return Math.min(d.right, r.right) - Math.max(d.left, r.left) > 1
          && Math.min(d.bottom, r.bottom) - Math.max(d.top, r.top) > 1;
    }).map(el => (el.innerText || el.querySelector("[data-testid]")?.getAttribute("data-testid") || "").slice(0, 60));
    return {index, left: d.left, right: d.right, width: d.width, height: d.height,
            column_left: column.left, column_right: column.right, overlaps};
  });
}"""

# Every table's grid: how wide it is drawn, how wide its content is (wider = sideways scrolling)
# and where it ends against the viewport.
TABLES_JS = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']")]
  .filter(frame => frame.getBoundingClientRect().height > 0 && frame.checkVisibility({visibilityProperty: true}))
  .map((frame, index) => {
    const scroller = frame.querySelector(".dvn-scroller") || frame;
    const r = scroller.getBoundingClientRect();
    return {index, client: scroller.clientWidth, scroll: scroller.scrollWidth, right: r.right,
            viewport: window.innerWidth};
  })"""

# The screenshot's view: the chosen run's results table at the top, its first charts below.
SHOW_RESULTS_JS = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']")]
  .filter(frame => frame.checkVisibility({visibilityProperty: true}))[1]
  .closest("[data-testid='stElementContainer']").previousElementSibling.scrollIntoView({block: "start"})"""


def _chart_problems(page: object, where: str) -> list[str]:
    problems = []
    for c in page.evaluate(CHARTS_JS):  # type: ignore[attr-defined]
        if c["width"] < 100 or c["height"] < 100:
            problems.append(f"{where}: chart {c['index']} is drawn {c['width']:.0f}×{c['height']:.0f} px")
        if c["left"] < c["column_left"] - 1 or c["right"] > c["column_right"] + 1:
            problems.append(f"{where}: chart {c['index']} spans {c['left']:.0f}–{c['right']:.0f} px, its column "
                            f"{c['column_left']:.0f}–{c['column_right']:.0f} px")
        if c["overlaps"]:
            problems.append(f"{where}: chart {c['index']} is drawn over {c['overlaps']}")
    return problems


def _narrow_chart_problems(page: object, where: str) -> list[str]:
    """Every chart's column is at least chart_layout.COLUMN_WIDTH wide: tests/test_lab_layout.py
    draws the charts at that width and checks that no title, axis title or legend is cut there.
    (Their pixels are checked there, not here: in the page a chart's box also holds Streamlit's
    chart menu and theme, which a pixel check cannot tell from a cut title.)"""
    problems = []
    for c in page.evaluate(CHARTS_JS):  # type: ignore[attr-defined]
        if c["width"] < chart_layout.COLUMN_WIDTH - 1:
            problems.append(f"{where}: chart {c['index']} is {c['width']:.0f} px wide, narrower than "
                            f"chart_layout.COLUMN_WIDTH ({chart_layout.COLUMN_WIDTH})")
    return problems


def _table_problems(page: object, where: str, which: int) -> list[str]:
    tables = page.evaluate(TABLES_JS)  # type: ignore[attr-defined]
    if len(tables) <= which:
        return [f"{where}: no table {which} (found {len(tables)})"]
    t = tables[which]
    problems = []
    if t["scroll"] > t["client"] + 1:
        problems.append(f"{where}: table {which} scrolls sideways ({t['scroll']} px of content in {t['client']} px)")
    if t["right"] > t["viewport"] + 1:
        problems.append(f"{where}: table {which} ends at {t['right']:.0f} px, past the viewport ({t['viewport']} px)")
    return problems


def _settled(page: object, charts: int = 0) -> None:
    """The page redrawn for its size: script idle, the charts drawn, their size no longer changing."""
    from playwright.sync_api import expect

    idle(page)
    if charts:
        expect(page.locator("[data-testid='stMain'] .vega-embed canvas, "  # type: ignore[attr-defined]
                            "[data-testid='stMain'] .vega-embed svg").nth(charts - 1)).to_be_visible()
    page.wait_for_function("""() => new Promise(done => {  // two frames without a size change
        const sizes = () => [...document.querySelectorAll(".vega-embed canvas, .vega-embed svg, .dvn-scroller")]
          .map(e => e.getBoundingClientRect().width).join();
        const first = sizes();
        requestAnimationFrame(() => requestAnimationFrame(() => done(sizes() === first)));
      })""")  # type: ignore[attr-defined]


def _open(page: object, url: str, url_path: str) -> None:
    """Click the sidebar link to `url_path` (its href, not its label)."""
    page.locator(f"[data-testid='stSidebarNav'] a[href$='/{url_path}']").click()  # type: ignore[attr-defined]
    page.wait_for_url(f"{url}/{url_path}")  # type: ignore[attr-defined]
    idle(page)


def _gold_run(db: Database, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished gold run of the tiny company (four configurations, hash embedder: seconds),
    its gate the shipped e5 three-outcome model, so that the page draws the threshold curves."""
    from ragcore.answer import service
    from ragcore.retrieval import model_for

    shipped = model_for("e5-small-q4")
    monkeypatch.setattr(service, "model_for", lambda name, *args, **kwargs: shipped)
    add_company_documents(db, settings)
    version, _ = goldstore.import_file(db, "küçük şirket", "g.jsonl", GOLD_JSONL.encode(), created_by="admin")
    spec = GoldRunSpec(version.set_id, version.version, embedders=("hash",),
                       modes=("weighted", "lexical", "dense", "rrf"), chunk_sizes=(CHUNK_SIZE,), ks=(5,))
    run = create_gold_run(db, settings, spec, created_by="admin", folder=settings.data_dir / "eval_runs" / "layout")
    run_gold(db, settings, run.id, embedder_factory=lambda name: HashEmbedder())


def test_lab_results_fit_the_page(app_url: str, browser_page: object, db: Database, settings: Settings,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import expect

    page = browser_page
    _gold_run(db, settings.replace(data_dir=APP_DATA_DIR[-1]), monkeypatch)
    ensure_user(db, "admin", "admin", ADMIN_PASSWORD)
    login(page, app_url, "admin", ADMIN_PASSWORD)
    _open(page, app_url, "degerlendirme")
    page.get_by_test_id("stTabs").get_by_role("tab").nth(2).click()  # type: ignore[attr-defined]  # the runs and results
    expect(page.locator("[data-testid='stMain'] .vega-embed").nth(5)).to_be_visible()  # type: ignore[attr-defined]
    problems = []
    for width, height in VIEWPORTS:
        page.set_viewport_size({"width": width, "height": height})  # type: ignore[attr-defined]
        _settled(page, charts=6)
        where = f"lab {width}×{height}"
        page.evaluate(SHOW_RESULTS_JS)  # type: ignore[attr-defined]
        shot(page, f"lab_results_{width}", publish=True)
        problems += _chart_problems(page, where)
        problems += _narrow_chart_problems(page, where)
        problems += _table_problems(page, where, 1)  # table 0 lists the runs, table 1 is the chosen run's results
    assert not problems, "\n".join(problems)


def _search(page: object, query: str) -> None:
    """Submit the search form until its results show, then open the scores under "Teknik
    ayrıntılar" until the table shows: a submit that lands while a rerun redraws the page is
    dropped by Streamlit (a fresh-clone CI run saw the table never come)."""
    from playwright.sync_api import expect

    table = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']")  # type: ignore[attr-defined]
    for _ in range(browser_support.ATTEMPTS):
        idle(page)
        if _technical(page).count():
            break
        form = page.get_by_test_id("stForm")  # type: ignore[attr-defined]
        form.locator("input[type='text']").first.fill(query)
        form.get_by_role("button").last.click()
        try:
            expect(_technical(page)).to_be_visible(timeout=browser_support.WAIT_MS // 6)
        except AssertionError:
            continue
    if not table.first.is_visible():  # the scores sit under "Teknik ayrıntılar" (issue 41): the browser opens it
        _technical(page).click()
    expect(table.first).to_be_visible()


def _technical(page: object) -> object:
    return page.locator("[data-testid='stMain'] [data-testid='stExpander'] summary").filter(  # type: ignore[attr-defined]
        has_text=browser_support.TECHNICAL).last


def test_search_table_fits_the_page(app_url: str, browser_page: object, db: Database, settings: Settings) -> None:
    from ragcore.documents import ingest_pdf
    from ragcore.embed import make_embedder

    page = browser_page
    ingest_pdf(db, settings.replace(data_dir=APP_DATA_DIR[-1]), make_embedder(settings), text_pdf(SEARCH_PAGES),
               filename="isg-egitim-yonetmeligi.pdf", roles=["isg", "personel"], title=SEARCH_TITLE,
               uploaded_by="admin")
    ensure_user(db, "admin", "admin", ADMIN_PASSWORD)
    login(page, app_url, "admin", ADMIN_PASSWORD)
    _open(page, app_url, "kaynak-arama")
    _search(page, SEARCH_QUERY)
    page.get_by_role("heading", name="Kaynak arama").scroll_into_view_if_needed()  # type: ignore[attr-defined]
    shot(page, "search", publish=True)  # what the admin meets first: the decision and its source
    problems = []
    for width, height in VIEWPORTS:
        page.set_viewport_size({"width": width, "height": height})  # type: ignore[attr-defined]
        _settled(page)
        page.get_by_test_id("stDataFrame").first.scroll_into_view_if_needed()  # type: ignore[attr-defined]
        shot(page, f"search_{width}", publish=True)
        problems += _table_problems(page, f"search {width}×{height}", 0)
    assert not problems, "\n".join(problems)
