"""setup.py — puts liboffcore.so inside the package at build time (pyproject.toml has the
metadata): $OFFCORE_LIB, else the checkout's build/liboffcore.so, else it runs CMake to
build that (target offcore_shared) first. The installed package then loads its own copy
(offcore/_lib.py explains the search order)."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def find_library():
    env = os.environ.get("OFFCORE_LIB")
    if env:
        if not os.path.exists(env):
            raise SystemExit("offcore: OFFCORE_LIB=%s does not exist" % env)
        return env
    built = os.path.join(REPO, "build", "liboffcore.so")
    if not os.path.exists(built) and os.path.exists(os.path.join(REPO, "CMakeLists.txt")):
        build = os.path.join(REPO, "build")
        subprocess.check_call(["cmake", "-S", REPO, "-B", build,
                               "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        subprocess.check_call(["cmake", "--build", build, "--target", "offcore_shared",
                               "-j", str(os.cpu_count() or 1)])
    if not os.path.exists(built):
        raise SystemExit("offcore: liboffcore.so not found: run `make` in the offcore "
                         "repository or set OFFCORE_LIB")
    return built


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "offcore", "liboffcore.so")
        shutil.copyfile(find_library(), dest)  # follows the .so -> .so.0 -> .so.0.1.0 links


setup(cmdclass={"build_py": BuildWithLibrary})
