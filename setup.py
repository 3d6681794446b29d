"""Build hook: the wheel carries a copy of the repository's data/ as raglab/sample_data/.

Everything else about the package is in pyproject.toml. The data stays in data/ (one copy
in the repository); raglab/samples.py looks for the installed copy first, then data/.
An editable install skips the copy and reads data/ directly.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = Path(__file__).resolve().parent / "data"


class BuildWithSampleData(build_py):
    def run(self) -> None:
        if self.editable_mode:
            return super().run()
        if not (DATA / "corpus").is_dir():  # a wheel without the data would install broken
            raise FileNotFoundError(f"sample data missing: {DATA / 'corpus'} (see MANIFEST.in)")
        # subtle: `pip install .` builds in build/ and never empties it, so a module moved
        # or deleted since the last build would ship again. Start the package from nothing.
        package = Path(self.build_lib) / "raglab"
        shutil.rmtree(package, ignore_errors=True)
        super().run()
        shutil.copytree(
            DATA, package / "sample_data", ignore=shutil.ignore_patterns(".*", "__pycache__")
        )


setup(cmdclass={"build_py": BuildWithSampleData})
