"""The compiled part of the mask engine (tokenloom/constrain/_native.c). Optional: without a C compiler
the install goes on and the numpy versions of the same passes run instead."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tokenloom.constrain._native",
            ["tokenloom/constrain/_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
