"""The compiler's side of conditions on an earlier property (`schema_probes.ProbePlan`): the checks read
beside P's value, and one object node per selection of D's parts that some verdicts make.

A mixin of `json_schema.SchemaCompiler`, which provides the node-making methods stubbed here. Knows
nothing of frames or vocabularies.
"""

from __future__ import annotations

from typing import Any

from tokenloom.constrain.schema_checks import Check
from tokenloom.constrain.schema_finite import finite_nodes, reachable
from tokenloom.constrain.schema_ir import Probe, Schema
from tokenloom.constrain.schema_probes import PROBE, ProbePlan, Verdicts, object_features
from tokenloom.errors import GrammarError

MAX_CASES = 64  # verdict vectors some value of P may give; past it the conditions are left unenforced


class ProbeKeywords:
    """`fill_probe`; the stubs below are the compiler's."""

    root: Any
    param: str
    keep: list[Any]
    checks: list[Check]
    one_ofs: list[Schema]
    probed: list[Schema]
    deadline: float

    def __init__(self, root: Any, param: str = "schema") -> None:
        raise NotImplementedError

    def node(self, schema: Any, param: str, depth: int) -> Schema:
        raise NotImplementedError

    def ignore(self, node: Schema, keyword: str) -> None:
        raise NotImplementedError

    def flatten(self, schema: dict[str, Any], param: str, hops: int) -> dict[str, Any]:
        raise NotImplementedError

    def fill_probe(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """`node`, an object filled from `s` but for the plan in it, with P's value read beside the plan's
        checks. `node` itself keeps D's own schema: it is the fallback, and the node until P is read (P is
        required and comes first, so D is never read under it otherwise)."""
        plan: ProbePlan = s[PROBE]
        names = [name for name, _ in node.props]
        if (
            "object" not in node.types
            or node.any_order  # D may come before P: the verdicts would come too late
            or plan.probe not in names
            or plan.target not in names
            or names.index(plan.probe) > names.index(plan.target)
        ):
            self.ignore(node, "if")
            return
        at = names.index(plan.probe)
        value = node.props[at][1]
        probe = self.probe_of(node, value, plan, param, depth)
        vectors = self.feasible(plan.atoms, param) if probe is not None else None
        if probe is None or vectors is None:
            self.ignore(node, "if")
            return
        base = {k: v for k, v in s.items() if k != PROBE}
        self.keep.append(base)
        variants: dict[tuple[int, ...], Schema] = {(): node}
        for verdicts in vectors:
            chosen = plan.selected(verdicts)
            if chosen not in variants:
                narrowed = {"allOf": [plan.parts[i][1] for i in chosen]}
                variant = {"allOf": [base, {"properties": {plan.target: narrowed}}]}
                self.keep.extend((narrowed, variant))
                variants[chosen] = self.node(variant, param, depth + 1)
            probe.cases[verdicts] = variants[chosen]
        probed = Schema()
        probed.options = (value,)
        probed.probe = probe
        self.probed.append(probed)
        node.props = (*node.props[:at], (plan.probe, probed), *node.props[at + 1 :])
        # a check that ignores a keyword could pick the wrong case: then P is read alone, D as it is
        self.checks.append(Check(probed, "if", probe.check_nodes(), (value,)))

    def settle_probes(self) -> None:
        """Before `settle`: an object P must stay plain objects, but settle will make an overlapping `oneOf`
        among P's alternatives a checked combination, whose frames carry no features. Then P is read
        alone, D as its own schema says, and `if` is named (the node is lossy before settle, so a
        negation around it falls back too)."""
        pending = set(self.one_ofs)
        for probed in self.probed:
            probe = probed.probe
            if probe is None or probe.whole:
                continue
            todo, seen = [probe.value], set()
            while todo:
                n = todo.pop()
                if n in seen:
                    continue
                seen.add(n)
                todo.extend(n.options or ())
            if seen & pending:
                probed.probe = None
                self.ignore(probed, "if")

    def probe_of(self, node: Schema, value: Schema, plan: ProbePlan, param: str, depth: int) -> Probe | None:
        """How P's value is read: an object P as usual, with checks beside the values of the properties the
        atoms name (`object_features`); a scalar P beside one check per atom. None: neither (an object P
        whose atoms ask more, or a value that may be either)."""
        kinds = {t for alt in value.alternatives() for t in alt.types}
        where = f"{param}.if"
        if kinds == {"object"}:
            features = object_features(plan.atoms, lambda ref: self.flatten(ref, where, 1))
            if features is None:
                return None
            named = {*features.names, *(name for name, _ in features.checks)}
            if any(named - alt.prop_names() for alt in value.alternatives()):
                return None  # a name no alternative declares may be read as an additional one, unseen
            checks: dict[str, list[tuple[int, Schema]]] = {}
            for i, (name, schema) in enumerate(features.checks):
                slot = len(features.names) + i
                checks.setdefault(name, []).append((slot, self.node(schema, where, depth + 1)))
            return Probe(
                value,
                (),
                tuple(features.names),
                {name: tuple(c) for name, c in checks.items()},
                tuple(features.terms),
                node,
            )
        if kinds & {"object", "array"}:
            return None
        whole = tuple(self.node(atom, where, depth + 1) for atom in plan.atoms)
        return Probe(value, whole, (), {}, tuple((i,) for i in range(len(whole))), node)

    def feasible(self, atoms: list[Any], param: str) -> list[Verdicts] | None:
        """The verdict vectors some value may give, found atom by atom: a prefix goes once the conjunction
        it says (atoms, or their negations) compiles to a node no finite value satisfies (so the list
        may hold a few impossible ones, never miss a possible one). None past MAX_CASES. A compiler of
        its own compiles the conjunctions: what they would leave in this one's lists (checks, keywords
        named unenforced, nodes shared with the real schema) only answers this question."""
        scratch = type(self)(self.root, self.param)
        scratch.deadline = self.deadline  # the compile's own time limit holds for this work too
        negated = [{"not": atom} for atom in atoms]
        scratch.keep.extend(negated)
        try:
            return _vectors(scratch, atoms, negated, param)
        except GrammarError:  # too large or too slow to tell: the conditions are named unenforced instead
            return None


def _vectors(
    scratch: ProbeKeywords, atoms: list[Any], negated: list[Any], param: str
) -> list[Verdicts] | None:
    """`ProbeKeywords.feasible`'s search, with `scratch` compiling the conjunctions."""
    out: list[Verdicts] = []
    todo: list[Verdicts] = [()]
    while todo:
        prefix = todo.pop()
        if len(prefix) == len(atoms):
            out.append(prefix)
            if len(out) > MAX_CASES:
                return None
            continue
        for verdict in (False, True):
            vector = (*prefix, verdict)
            said = {"allOf": [a if v else n for a, n, v in zip(atoms, negated, vector, strict=False)]}
            scratch.keep.append(said)
            conjunction = scratch.node(said, param, 0)
            if conjunction in finite_nodes(reachable(conjunction)):
                todo.append(vector)
    return out
