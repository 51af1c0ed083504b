"""An HTML page as a real browser shows it: Debian's headless Chromium (the `chromium` package,
installed by scripts/setup.sh) loads a copy of the page with a script added at its end, and the
test reads back what that script recorded from the DOM Chromium dumps.

The script runs at the page's load event (every embedded image fetched and decoded by then) and
records, base64-encoded JSON in one element (no escaping to undo):
- each <img>: complete, naturalWidth/naturalHeight (0 when the browser could not decode it),
  whether any pixel of its last row is drawn (a cut PNG still shows its top rows and its full
  size, the rest transparent; the figures are saved on an opaque background), its width as laid
  out on the page, its alt text;
- each visible text node that reads as a raw Python value (RAW_VALUE below: nan, None, a dict's
  repr, a numpy array, a pandas Timestamp ...), with the tag it sits in;
- the viewport's width and the page's scroll width and height (a page wider than its window
  runs off the side).

A page that never reaches its load event, or a script error, leaves no record: render() then
fails with what Chromium printed, never with an empty record that would pass.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "chromium"

# Text a reader should never see: a value printed by Python, numpy or pandas instead of words.
# One pattern for both sides: the browser's script (JavaScript RegExp) and the tests (re) read
# it, so it uses only syntax the two share (fixed-width lookbehind, \w, classes).
RAW_VALUE = (r"(?<![\w.-])-?(?:nan|NaN|None|NaT|True|False|inf)(?![\w])"
             r"|<NA>|\{['\"]|\[['\"]|array\(|Timestamp\(|Timedelta\(|DatetimeIndex\("
             r"|<bound |object at 0x|dtype|np\.(?:float|int|bool|str)\w*\(|Traceback "
             r"|\[object ")

RECORD_ID = "browser-record"
WIDTH, HEIGHT = 1280, 900           # a laptop's browser window, in CSS pixels
TIMEOUT_S = 180                     # one Chromium start and page load on a loaded 2-core machine

_SCRIPT = """<script>
window.addEventListener("load", function () {
  var raw = new RegExp(%(pattern)s);
  function lastRowDrawn(img) {       /* any pixel of the picture's last row not transparent */
    if (!img.naturalWidth) return false;
    var canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth;
    canvas.height = 1;
    var g = canvas.getContext("2d");
    g.drawImage(img, 0, img.naturalHeight - 1, img.naturalWidth, 1, 0, 0, img.naturalWidth, 1);
    var px = g.getImageData(0, 0, img.naturalWidth, 1).data;
    for (var i = 3; i < px.length; i += 4) if (px[i] !== 0) return true;
    return false;
  }
  var images = Array.prototype.map.call(document.images, function (img) {
    return {alt: img.alt, complete: img.complete, naturalWidth: img.naturalWidth,
            naturalHeight: img.naturalHeight, width: img.getBoundingClientRect().width,
            lastRowDrawn: lastRowDrawn(img)};
  });
  var found = [];
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    var node = walk.currentNode, parent = node.parentElement;
    if (!parent || parent.closest("script,style,#%(id)s")) continue;
    if (parent.getClientRects().length === 0) continue;          /* not shown */
    if (raw.test(node.nodeValue))
      found.push({text: node.nodeValue.trim().slice(0, 200), tag: parent.tagName.toLowerCase()});
  }
  var record = {images: images, raw: found, viewportWidth: window.innerWidth,
                scrollWidth: document.documentElement.scrollWidth,
                scrollHeight: document.documentElement.scrollHeight};
  var out = document.createElement("pre");
  out.id = "%(id)s";
  out.style.display = "none";
  out.textContent = btoa(unescape(encodeURIComponent(JSON.stringify(record))));
  document.body.appendChild(out);
});
</script>"""


@dataclass
class Seen:
    """What the browser recorded of one page (see the module docstring)."""
    images: list[dict]
    raw: list[dict]
    viewport_width: int
    scroll_width: int
    scroll_height: int

    def broken_images(self) -> list[dict]:
        """Images the reader does not see whole: not loaded, not decoded, or cut short."""
        return [i for i in self.images
                if not i["complete"] or i["naturalWidth"] == 0 or not i["lastRowDrawn"]]


def chromium() -> str | None:
    return shutil.which(CHROMIUM)


def _run(args: list[str], what: str) -> subprocess.CompletedProcess:
    exe = chromium()
    if exe is None:
        raise AssertionError(f"{CHROMIUM} is not installed (`sudo make setup` installs it)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--disable-extensions", "--hide-scrollbars",
               f"--user-data-dir={profile}", *args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"{CHROMIUM} did not finish {what} within {TIMEOUT_S} s") from e


def instrumented(html_text: str) -> str:
    """The page with the recording script added just before </body> (or at the end)."""
    script = _SCRIPT % {"pattern": json.dumps(RAW_VALUE), "id": RECORD_ID}
    at = html_text.lower().rfind("</body>")
    return html_text + script if at < 0 else html_text[:at] + script + html_text[at:]


def render(html_path, work_dir, *, width: int = WIDTH, height: int = HEIGHT,
           budget_ms: int = 10_000) -> Seen:
    """Load a copy of `html_path` (written into `work_dir`, with the recording script) in
    headless Chromium at width x height and return what the script recorded."""
    copy = Path(work_dir) / f"browser-{Path(html_path).name}"
    copy.write_text(instrumented(Path(html_path).read_text()))
    done = _run([f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}",
                 "--dump-dom", copy.resolve().as_uri()], "loading the page")
    found = re.search(rf'id="{RECORD_ID}"[^>]*>([A-Za-z0-9+/=]*)<', done.stdout)
    if not found:
        raise AssertionError(f"{CHROMIUM} left no record of {html_path} (exit {done.returncode});"
                             f" it said: {done.stderr[-2000:]}")
    record = json.loads(base64.b64decode(found.group(1)).decode("utf-8"))
    return Seen(record["images"], record["raw"], record["viewportWidth"],
                record["scrollWidth"], record["scrollHeight"])


def screenshot(html_path, png_path, *, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """A PNG of the page's top `height` pixels at `width` (render().scroll_height for all of
    it), for a person to look at."""
    png_path = Path(png_path)
    done = _run([f"--window-size={width},{height}", "--virtual-time-budget=10000",
                 f"--screenshot={png_path.resolve()}", Path(html_path).resolve().as_uri()],
                "the screenshot")
    if not png_path.is_file():
        raise AssertionError(f"{CHROMIUM} wrote no screenshot (exit {done.returncode}); "
                             f"it said: {done.stderr[-2000:]}")
    return png_path
