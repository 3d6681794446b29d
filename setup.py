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
        super().run()
        if self.editable_mode:
            return
        if not (DATA / "corpus").is_dir():  # a build without the data would install silently broken
            raise FileNotFoundError(
                f"sample data missing: {DATA / 'corpus'} (is MANIFEST.in intact?)"
            )
        target = Path(self.build_lib) / "raglab" / "sample_data"
        shutil.rmtree(target, ignore_errors=True)  # a stale build/ must not keep deleted files
        shutil.copytree(DATA, target, ignore=shutil.ignore_patterns(".*", "__pycache__"))


setup(cmdclass={"build_py": BuildWithSampleData})
