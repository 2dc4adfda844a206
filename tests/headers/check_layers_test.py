"""scripts/check-layers: the source tree passes, and each rule fails a
small tree that breaks it, naming the file, the line and the rule.

Usage: check_layers_test.py SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.getcwd()
SCRIPT = os.path.join(ROOT, "scripts", "check-layers")


def check(root):
    return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)


class CheckLayers(unittest.TestCase):
    def tree(self, files):
        """A scratch tree of {path: text}, with the stages' dependencies
        clean unless files says otherwise."""
        d = tempfile.mkdtemp(prefix="lcmon-layers-")
        base = {"src/meson.build": "stages_deps = [format_dep]\n",
                "src/stages/meson.build": "stages_sources = files('a.c')\n"}
        base.update(files)
        for rel, text in base.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        return d

    def refused(self, files, where, rule):
        r = check(self.tree(files))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(where, r.stderr)
        self.assertIn(rule, r.stderr)

    def test_the_tree_passes(self):
        r = check(ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_clean_tree_passes(self):
        r = check(self.tree({"src/monitor/local.c": '#include "pipeline/pipeline.h"\n',
                             "src/monitor/local.h": '#include "pipeline/config.h"\n',
                             "src/monitor/ctl.c": '#include "monitor/local.h"\n',
                             "src/pipeline/p.c": '#include "stage_control.pb-c.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_monitor_reaches_the_pipeline_only_through_its_door(self):
        self.refused({"src/monitor/server.c": '#include "monitor/wire.h"\n'
                                              '#include "pipeline/pipeline.h"\n'},
                     "src/monitor/server.c:2:", "only through its door")
        self.refused({"src/monitor/headless.h": '#include "pipeline/config.h"\n'},
                     "src/monitor/headless.h:1:", "only through its door")

    def test_the_panels_are_below_the_screens_loop(self):
        """The table, its details and the header read a view: none reaches
        tui/screen.h, nor through a tui/ header."""
        self.refused({"tui/table.c": '#include "tui/view.h"\n#include "tui/screen.h"\n'},
                     "tui/table.c:2:", "below the screen's loop")
        self.refused({"tui/details.c": '#include "tui/details.h"\n',
                      "tui/details.h": '#include "tui/screen.h"\n'},
                     "tui/details.h:1:", "reached from tui/details.c")
        r = check(self.tree({"tui/keys.c": '#include "tui/screen.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)  # the loop's own keys may

    def test_the_screen_includes_only_the_monitor_interface(self):
        self.refused({"tui/keys.c": '#include "monitor/local.h"\n'}, "tui/keys.c:1:",
                     "the screen includes only")
        self.refused({"tui/keys.c": '#include "pipeline/pipeline.h"\n'}, "tui/keys.c:1:",
                     "the screen includes only")

    def test_the_stages_use_no_protobuf(self):
        self.refused({"src/stages/a.c": '#include "core/error.h"\n#include "monitor.pb-c.h"\n'},
                     "src/stages/a.c:2:", "plain C")
        self.refused({"src/meson.build": "stages_deps = [format_dep,\n  proto_dep]\n"},
                     "src/meson.build:2: names proto_dep", "does not link protobuf-c")
        self.refused({"src/meson.build": "stages_deps = [format_dep]\n"
                                         "stages_deps += protobufc_dep\n"},
                     "src/meson.build:2: names protobufc_dep", "does not link protobuf-c")
        self.refused({"src/stages/meson.build": "x = files('a.c')\ndep = proto_dep\n"},
                     "src/stages/meson.build:2: names proto_dep", "does not link protobuf-c")
        # Elsewhere protobuf is fine, and a comment names it freely.
        r = check(self.tree({"src/meson.build": "# not proto_dep here\n"
                                                "stages_deps = [format_dep]\n"
                                                "pipeline_deps = [stages_dep, proto_dep]\n"}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_an_upward_include(self):
        self.refused({"src/stages/a.c": '#include "pipeline/pipeline.h"\n'}, "src/stages/a.c:1:",
                     "pipeline/ is above stages/")


if __name__ == "__main__":
    unittest.main()
