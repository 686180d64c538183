"""Save a screenshot of the web UI of a running `mirrorline demo` (the README's picture).

    make screenshot            # runs the demo for a while and saves docs/ui.png

Loads the UI in Debian's Chromium (Playwright), waits until every flow of the
demo shows `running` with records flowing, selects the first flow so that its
topics and charts show, and saves the page.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:6670/ui/index.html#window=1m")
    parser.add_argument("--out", type=Path, default=Path("docs/ui.png"))
    parser.add_argument("--flows", type=int, default=2, help="Flows that must show running.")
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument(
        "--settle", type=float, default=0.0, help="Seconds of steady traffic to wait for first."
    )
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        while True:
            try:
                page.goto(args.url, timeout=10_000)
                break
            except Exception:  # noqa: BLE001 - the service is still starting
                if time.monotonic() > deadline:
                    print(f"error: no UI at {args.url}", file=sys.stderr)
                    return 1
                page.wait_for_timeout(1000)
        rows = page.locator('[data-testid="flow-row"]')
        while not _ready(page, rows, args.flows):
            if time.monotonic() > deadline:
                print(f"error: the demo's {args.flows} flows never all ran", file=sys.stderr)
                return 1
            page.wait_for_timeout(1000)
        page.wait_for_timeout(args.settle * 1000)  # a window of steady traffic, not a sync
        rows.first.click()
        page.locator('[data-testid="chart-line"]').first.wait_for(timeout=20_000)
        page.wait_for_timeout(1500)  # the charts' first drawing
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=True)
        browser.close()
    print(f"saved {args.out}")
    return 0


def _ready(page, rows, flows: int) -> bool:
    if rows.count() < flows:
        return False
    rates = page.locator('[data-testid="flow-records-rate"]')
    states = page.locator('[data-testid="flow-state"]')
    return all(
        "running" in states.nth(i).inner_text()
        and float(rates.nth(i).get_attribute("data-value") or 0) > 0
        for i in range(flows)
    )


if __name__ == "__main__":
    sys.exit(main())
