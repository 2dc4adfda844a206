"""The package's build; pyproject.toml says the rest.

One addition: the installed package records the build directory of the
source tree it is installed from (../build, or $LCMON_BUILD as
scripts/setup takes it), where scripts/setup builds lcmon, so that
lcmon.Loader finds the executable without LCMON or PATH
(lcmon.loader.find_lcmon). The record is written into the build's copy of
the package only, never into the source tree.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithBuildDir(build_py):
    def run(self):
        super().run()
        if self.dry_run:
            return
        build = os.environ.get("LCMON_BUILD") or "build"
        where = os.path.normpath(os.path.join(os.path.dirname(HERE), build))
        out = os.path.join(self.build_lib, "lcmon", "BUILD_DIR")
        with open(out, "w") as f:
            f.write(where + "\n")


setup(cmdclass={"build_py": BuildPyWithBuildDir})
