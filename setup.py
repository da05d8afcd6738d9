"""The compiled parts of the mask engine. Both are optional: without a C compiler (or without mypyc at
build time) the install goes on and the same code runs interpreted, with the same results.

- tokenloom/constrain/_native.c: the numpy-level passes of the mask, written in C.
- COMPILED: the modules of the mask engine (parser states and JSON and tool-call frames, the trie walk,
  the regex automaton, char sets, the trie), compiled as they are by mypyc. Their Python source stays the
  one reference (tests/unit/constrain/test_compiled.py holds the two to the same masks); what stays
  interpreted is in tokenloom/constrain/interpreted.py.
"""

from setuptools import Extension, setup

COMPILED = [
    f"tokenloom/constrain/{name}.py"
    for name in (
        "charset", "trie", "parser", "mask", "regex", "regex_horizon", "pattern_mask", "unique_mask",
        "schema_ir", "number", "json_frames", "json_containers", "json_objects", "json_probe", "json_unique",
        "json_partial", "json_checks", "json_values", "tool_section",
    )
]  # fmt: skip


def compiled_modules() -> list[Extension]:
    """mypyc's extensions for COMPILED, or none when mypyc is missing or cannot translate them."""
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    try:
        extensions = mypycify(COMPILED, opt_level="3", group_name="tokenloom_constrain")
    except Exception as error:  # any failure of the translation: run interpreted
        print(f"tokenloom: mask engine left interpreted ({error})")  # noqa: T201
        return []
    for extension in extensions:
        extension.optional = True
    return extensions


setup(
    ext_modules=[
        Extension(
            "tokenloom.constrain._native",
            ["tokenloom/constrain/_native.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        *compiled_modules(),
    ]
)
