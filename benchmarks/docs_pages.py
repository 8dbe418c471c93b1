"""How long each page of the documentation site takes to open in a headless browser, and how big it is.

The site is built (``mkdocs build --strict``, the ``docs`` extra) into a temporary folder, or taken
from ``--site DIR``. Debian's ``chromium`` opens each page from disk (``file://``, as a reader of a
downloaded site would) in one browser, driven over the DevTools protocol on a pipe (no driver, no
network). The time of a page is from the start of its navigation to the first frame after its
``load`` event: the HTML parsed, the styles and scripts run, the page laid out and painted once.
Every page is opened ``--repeat`` times and the fastest opening is kept (on a shared machine the
others carry other processes' time), after one warm-up page, so the shared styles and scripts come
from the browser's cache, as they do for a reader going from page to page. The load average is
printed beside the figures.

Peer: a plain page of the same site, the home page (a few kilobytes of prose), opened in the same
browser in the same run: its time is what opening any page costs on this machine.

    python benchmarks/docs_pages.py                 # build the site, open every page three times
    python benchmarks/docs_pages.py --site site     # a site already built
    python benchmarks/docs_pages.py --quick         # the API reference's pages and the home page, once

Without ``chromium`` on the path it prints one line saying so and exits 0. The last line is the
slowest page's time, against the target of one second.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from training.cli import Parser, bounded, run_cli, threads

ROOT = Path(__file__).resolve().parent.parent
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
#: resolves once the first frame after the load event is drawn: milliseconds since the navigation started
FIRST_FRAME = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"
TIMEOUT_S = 60.0
MAX_PAGE_BYTES = 500_000


class Browser:
    """A headless Chromium driven over ``--remote-debugging-pipe`` (fd 3 in, fd 4 out; messages end in NUL)."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        command = [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
        self._proc = subprocess.Popen(
            ["sh", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}', *command],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe (did it start? try running it by hand)")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)  # type: ignore[no-any-return]

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self._events.append(reply)

    def wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[: i + 1]
                    return
            self._events.append(self._read())
        raise RuntimeError(f"no {method} within {TIMEOUT_S} s")

    def tab(self) -> str:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session: str = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session)
        return session

    def open(self, session: str, url: str) -> tuple[float, int]:
        """Seconds from navigation to the first frame after ``load``, and the page's DOM element count."""
        self._events.clear()
        self.call("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        ms = self.call("Runtime.evaluate", session, expression=FIRST_FRAME, awaitPromise=True)["result"]["value"]
        nodes = self.call("Runtime.evaluate", session, expression="document.getElementsByTagName('*').length")
        return float(ms) / 1000, int(nodes["result"]["value"])


def build(out: Path) -> None:
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)]
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, check=False)
    if done.returncode != 0:
        raise SystemExit(f"mkdocs build --strict failed (exit {done.returncode}); see above")


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one into a temporary folder)")
    parser.add_argument("--repeat", type=bounded(1, 100), default=3, help="openings per page (the fastest kept)")
    parser.add_argument("--quick", action="store_true", help="the API reference and the home page, once each")
    parser.add_argument("--threads", type=threads, default=1, help="torch CPU threads of the site build (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        print("skipped: no chromium on the path (Debian: apt-get install chromium)")
        return
    with tempfile.TemporaryDirectory() as scratch:
        site = args.site
        if site is None:
            site = Path(scratch) / "site"
            print("building the site (mkdocs build --strict) ...", flush=True)
            build(site)
        elif not (site / "index.html").is_file():
            raise SystemExit(f"--site {site}: no index.html there; build the site first (mkdocs build)")
        pages = sorted(p.relative_to(site) for p in site.rglob("*.html"))
        if args.quick:
            pages = [p for p in pages if p.parts[0] == "api" or str(p) == "index.html"]
        repeat = 1 if args.quick else args.repeat
        browser = Browser(executable, Path(scratch) / "profile")
        try:
            session = browser.tab()
            browser.open(session, (site / "index.html").resolve().as_uri())  # warm-up: the shared assets
            rows = []
            for page in pages:
                runs = [browser.open(session, (site / page).resolve().as_uri()) for _ in range(repeat)]
                rows.append((str(page), min(t for t, _ in runs), runs[0][1], (site / page).stat().st_size))
        finally:
            browser.close()
    print(f"{'page':<50} {'open (s)':>9} {'elements':>9} {'size (KB)':>10}")
    for name, seconds, nodes, size in sorted(rows, key=lambda r: -r[1]):
        print(f"{name:<50} {seconds:9.3f} {nodes:9d} {size / 1000:10.1f}")
    peer = next(seconds for name, seconds, _, _ in rows if name == "index.html")
    biggest = max(rows, key=lambda r: r[3])
    slowest = max(rows, key=lambda r: r[1])
    print(f"peer: the home page opens in {peer:.3f} s")
    print(f"biggest page: {biggest[0]}, {biggest[3] / 1000:.1f} KB (target < {MAX_PAGE_BYTES / 1000:.0f} KB)")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"slowest page: {slowest[0]}; {len(rows)} pages, {repeat} opening(s) each; load average {load}")
    print(f"result: docs_slowest_page_s {slowest[1]:.3f} (target < 1.0)")


if __name__ == "__main__":
    sys.exit(run_cli("docs_pages", main))
