"""The committed screenshots against the screens they show (issue 36): each
screenshots/NAME.png was rendered from the capture beside it, NAME.txt (the
PNG carries the SHA-256 of the capture's cells, "lcmon-cells"), and that
capture has the layout of the screen test's golden,
tests/tui/golden/shot-NAME-WxH.txt, which test_screen.py checks the live
screen against (scripts/screenshots --check). A change to the screen fails
test_screen until its golden is rewritten (GENERATE=1), then this test
until scripts/screenshots makes the pictures again. Text and cells are
compared, never pixels of a font. No lcmon, no tmux, no Pillow: seconds.

Environment: LCMON_SOURCE_ROOT (the source tree).
"""

import importlib.machinery
import importlib.util
import os
import unittest

ROOT = os.environ.get("LCMON_SOURCE_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_script():
    path = os.path.join(ROOT, "scripts", "screenshots")
    loader = importlib.machinery.SourceFileLoader("screenshots", path)
    spec = importlib.util.spec_from_loader("screenshots", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


shots = load_script()
AGAIN = "run scripts/screenshots to make the screenshots again"


class Screenshots(unittest.TestCase):
    maxDiff = None

    def test_every_picture_is_a_shot(self):
        names = {n for n, *_ in shots.SHOTS}
        for f in os.listdir(shots.SHOTS_DIR):
            self.assertIn(os.path.splitext(f)[0], names, "%s: no shot makes it" % f)
        for name in names:
            for ext in (".png", ".txt"):
                self.assertTrue(os.path.exists(os.path.join(shots.SHOTS_DIR, name + ext)),
                                "screenshots/%s%s is missing: %s" % (name, ext, AGAIN))

    def test_each_capture_has_its_golden_layout(self):
        for name, w, h, theme, keys in shots.SHOTS:
            with self.subTest(name):
                with open(os.path.join(shots.SHOTS_DIR, name + ".txt"), encoding="utf-8") as f:
                    capture = f.read()
                path = shots.golden_path(name, w, h)
                with open(path, encoding="utf-8") as f:
                    want = f.read()
                self.assertEqual(shots.layout(capture, h), want,
                                 "screenshots/%s.txt no longer shows the screen of %s: %s"
                                 % (name, os.path.relpath(path, ROOT), AGAIN))

    def test_each_picture_is_its_capture(self):
        for name, w, h, theme, keys in shots.SHOTS:
            with self.subTest(name):
                with open(os.path.join(shots.SHOTS_DIR, name + ".txt"), encoding="utf-8") as f:
                    capture = f.read()
                png = os.path.join(shots.SHOTS_DIR, name + ".png")
                self.assertEqual(shots.png_text(png).get("lcmon-cells"),
                                 shots.cells_hash(capture, w, h),
                                 "screenshots/%s.png was not rendered from screenshots/%s.txt: "
                                 "%s (or --from-captures)" % (name, name, AGAIN))

    def test_layout_sees_the_key_bar(self):
        # The drift of issue 36: a key bar without "w window" is another
        # layout, while other numbers and bars are not.
        name, w, h, theme, keys = shots.SHOTS[0]
        with open(os.path.join(shots.SHOTS_DIR, name + ".txt"), encoding="utf-8") as f:
            capture = f.read()
        lines = capture.split("\n")
        self.assertIn(" window ", lines[h - 1])
        lines[h - 1] = lines[h - 1].replace(" window ", " ")
        self.assertNotEqual(shots.layout("\n".join(lines), h), shots.layout(capture, h))
        # Other numbers are the same layout.
        self.assertEqual(shots.layout(capture.replace("1", "7"), h), shots.layout(capture, h))

if __name__ == "__main__":
    unittest.main(verbosity=2)
