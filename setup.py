"""Builds the compiled core (`edgebayes._core`); everything else is in pyproject.toml.

The extensions are optional: without a working C compiler the build warns once per module
("building extension ... failed") and edgebayes installs and runs on the pure-Python
reference. ``-ffp-contract=off`` stops the compiler fusing multiply-adds (gcc does on aarch64),
which would change results against the reference.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

CORE = ["adwin", "inputs", "naive_bayes", "srp", "tree"]

extensions = cythonize(
    [
        Extension(f"edgebayes._core.{name}", [f"edgebayes/_core/{name}.pyx"],
                  extra_compile_args=["-O2", "-ffp-contract=off"])
        for name in CORE
    ],
    compiler_directives={"language_level": 3},
)
for ext in extensions:
    ext.optional = True  # cythonize() drops Extension(optional=True)

setup(ext_modules=extensions)
