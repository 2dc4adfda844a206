"""The two tests of the tiny project (meson.build says what for)."""

import os
import sys
import time

if sys.argv[1] == "quick":
    sys.exit(1 if os.environ.get("LCMON_TINY_FAIL") == "1" else 0)
mark = os.environ.get("LCMON_TINY_MARK")
if mark:
    with open(mark + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(mark + ".tmp", mark)
time.sleep(float(os.environ.get("LCMON_TINY_SECONDS", "600")))
