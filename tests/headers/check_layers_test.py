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
        r = check(self.tree({"src/monitor/local.c": '#include "pipeline/pipeline.h"\n'
                                                    'void f(void) { lc_config_free(0); }\n',
                             "src/monitor/server.c": '#include "monitor/local.h"\n'
                                                     '/* lc_config_free(c) */\n'
                                                     'const char *s = "lc_config_free(c)";\n',
                             "src/pipeline/config.h": 'void lc_config_free(void *c);\n',
                             "src/pipeline/p.c": '#include "stage_control.pb-c.h"\n',
                             "src/app/main.c": '#include "pipeline/config.h"\n'
                                               '#include "tui/tui.h"\n'
                                               '#include "app/chunks/chunks_tool.h"\n',
                             "src/app/chunks/chunks_tool.c": '#include "app/app.h"\n',
                             "src/app/convert/upstream_config.c":
                                 '#include "app/convert/upstream_conv.h"\n'
                                 '#include "format/textproto.h"\n#include "core/text.h"\n',
                             "src/stages/pool/chunk_pool.h": '#include "stages/stage.h"\n',
                             "src/format/lc0/rescore/position.h": '#include "format/lc0/frame.h"\n'}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_monitor_reaches_the_pipeline_only_through_its_door(self):
        self.refused({"src/monitor/server.c": '#include "monitor/wire.h"\n'
                                              '#include "pipeline/pipeline.h"\n'},
                     "src/monitor/server.c:2:", "only through its door")
        self.refused({"src/monitor/server.h": '#include "pipeline/config.h"\n'},
                     "src/monitor/server.h:1:", "only through its door")
        # local.h names the configuration as opaque handles: it includes no
        # pipeline/ header either.
        self.refused({"src/monitor/local.h": '#include "pipeline/config.h"\n'},
                     "src/monitor/local.h:1:", "only through its door")

    def test_the_monitor_calls_the_pipeline_only_through_its_door(self):
        # A function a pipeline/ header declares, called from another
        # monitor file, without any pipeline/ include (reached through the
        # door's header, say); a monitor header's own lc_pipeline_* names
        # and the door itself are fine.
        pipeline = {"src/pipeline/config.h": 'void lc_config_free(void *c);\n',
                    "src/pipeline/pipeline.h": 'void lc_pipeline_stop(void *p);\n'
                                               'const char *lc_pipeline_state_name(int s);\n',
                    "src/monitor/snapshot.h": 'const char *lc_pipeline_state_name(int s);\n',
                    "src/monitor/local.c": 'void g(void *p) { lc_pipeline_stop(p); }\n'}
        self.refused(dict(pipeline, **{"src/monitor/server.c": '#include "monitor/local.h"\n'
                                       'void f(void *c)\n{\n    lc_config_free (c);\n}\n'}),
                     "src/monitor/server.c:4: calls lc_config_free", "only through its door")
        r = check(self.tree(dict(pipeline, **{"src/monitor/server.c":
                                              'const char *f(int s)\n'
                                              '{ return lc_pipeline_state_name(s); }\n'})))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_program_is_in_app_at_the_top(self):
        self.refused({"src/main.c": '#include "core/error.h"\n'}, "src/main.c:",
                     "loose in src/")
        self.refused({"src/monitor/server.c": '#include "app/headless.h"\n'},
                     "src/monitor/server.c:1:", "app/ is above monitor/")
        self.refused({"tui/screen.c": '#include "app/options.h"\n'}, "tui/screen.c:1:",
                     "the screen includes only")
        self.refused({"src/stages/pool/chunk_pool.h": '#include "app/chunks/chunks_tool.h"\n'},
                     "src/stages/pool/chunk_pool.h:1:", "app/ is above stages/")

    def test_the_converter_needs_only_core_and_format(self):
        self.refused({"src/app/convert/upstream_config.c": '#include "core/text.h"\n'
                                                           '#include "pipeline/config.h"\n'},
                     "src/app/convert/upstream_config.c:2:", "the upstream converter")
        self.refused({"src/app/convert/upstream_map.c": '#include "app/app.h"\n'},
                     "src/app/convert/upstream_map.c:1:", "the upstream converter")

    def test_no_circle_between_rooms(self):
        for a, b in (("src/stages/pool/chunk_pool.h", "src/stages/items.h"),
                     ("src/format/lc0/rescore/game.h", "src/format/lc0/frame.h"),
                     ("src/app/chunks/chunks_common.h", "src/app/app.h")):
            inc = lambda rel: '#include "%s"\n' % rel[len("src/"):]
            r = check(self.tree({a: inc(b), b: inc(a)}))
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("a circle of rooms: ", r.stderr)
            self.assertIn("%s -> %s -> %s" % ((os.path.dirname(b), os.path.dirname(a)) * 1
                                              + (os.path.dirname(b),)), r.stderr)
            # one way is fine
            r = check(self.tree({a: inc(b)}))
            self.assertEqual(r.returncode, 0, r.stderr)

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
