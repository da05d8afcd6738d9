"""JSON Schema (the subset structured output needs) compiled to `schema_ir.Schema` nodes, bounded.

Resolves local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any local JSON pointer) including cycles,
merges `allOf`, turns `anyOf`/`oneOf`/type lists into alternatives (overlapping `oneOf`s and `not`
become checked combinations), if/then/else and dependencies into exclusive branches. Keywords it
does not enforce (contains beside uniqueItems, look-behinds in patterns, ...) are recorded in
`unenforced`; see `schema_checks` for how that keeps negations sound. Knows nothing of frames or
vocabularies.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tokenloom.constrain.formats import FORMATS
from tokenloom.constrain.json_equality import value_key
from tokenloom.constrain.negation import NOT_MULTIPLE_OF, SOME_NAMES, negated_branches, negated_name_schemas
from tokenloom.constrain.regex import shared_regex
from tokenloom.constrain.schema_checks import Check, settle
from tokenloom.constrain.schema_conditions import value_chain
from tokenloom.constrain.schema_finite import finite_nodes, prune_endless, reachable
from tokenloom.constrain.schema_ir import ALL_TYPES, Combo, Schema
from tokenloom.constrain.schema_merge import (
    both_patterns,
    decimal_fraction,
    has_constraints,
    json_type,
    merge,
)
from tokenloom.constrain.schema_objects import ANY_ORDER, ObjectKeywords, count
from tokenloom.constrain.schema_probes import PROBE, ProbePlan, probe_plan
from tokenloom.constrain.schema_probing import ProbeKeywords
from tokenloom.errors import GrammarError

MAX_NODES = 20_000
MAX_ENUM = 10_000
MAX_DEPTH = 64  # $ref/allOf hops one dict may inline (a longer chain is a cycle or hostile)
# How deep the schema document may nest: 64 schemas, each one level for itself and one for the keyword
# holding the next (`properties` -> name -> schema), as the walk's depth limit allowed before DEFER_DEPTH
MAX_DOCUMENT_DEPTH = 2 * MAX_DEPTH
# Nodes this far down the walk are filled later, from a work list: the walk goes through $refs into
# every definition it has not built yet, so its depth is the length of a chain of first visits, not
# how deep an instance nests (web-types' 30 KB of definitions chained 200-400 deep).
DEFER_DEPTH = 48
MAX_SECONDS = 5.0

UNEVALUATED = "unevaluatedProperties"
# keywords that may evaluate property names (a part holding one may admit names another part's own
# unevaluatedProperties would refuse)
_NAMING = ("properties", "patternProperties", "additionalProperties", UNEVALUATED, "anyOf", "oneOf", "if")
_DEPENDENCIES = ("dependencies", "dependentRequired", "dependentSchemas")
MAX_DEPENDENCIES = 3  # each one doubles the branches
# if/then/else kept together in one allOf: each one doubles the branches a value may be in, and each
# branch is a parser fed every char (popxf's eight, four of them kept, made 16 root branches and 14 s masks)
MAX_CONDITIONS = 2
_CONDITION_KEYS = ("if", "then", "else", "_conditions")
_CONDITIONS = "_conditions"  # how many conditionals a merged dict holds nested (see `nest_conditions`)
_OBJECT_KEYS = ("properties", "required", "additionalProperties", "minProperties", "maxProperties")
_ARRAY_KEYS = ("items", "prefixItems", "minItems", "maxItems")
_STRING_KEYS = ("minLength", "maxLength", "pattern", "format")
_NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


_NO_OPS: dict[str, tuple[Any, ...]] = {
    "additionalProperties": (True, {}),
    "properties": ({},),
    "required": ([],),
    "items": (True, {}),
    "prefixItems": ([],),
    "minProperties": (0,),
    "minItems": (0,),
    "minLength": (0,),
}


def _nests_deeper(document: Any, limit: int) -> bool:
    """Whether the JSON document nests deeper than `limit` (found without recursion)."""
    todo: list[tuple[Any, int]] = [(document, 0)]
    while todo:
        value, depth = todo.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            todo.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            todo.extend((v, depth + 1) for v in value)
    return False


def _says_something(key: str, value: Any) -> bool:
    """A keyword left at its default (`additionalProperties: true`, `required: []`) implies no type: a
    schema of only such keywords still takes every value, as JSON Schema says."""
    return not any(value == v and type(value) is type(v) for v in _NO_OPS.get(key, ()))


class SchemaCompiler(ObjectKeywords, ProbeKeywords):
    """Turns one root schema into IR nodes; `param` prefixes error locations."""

    def __init__(self, root: Any, param: str = "schema") -> None:
        self.root = root
        self.param = param
        self.nodes: dict[int, Schema] = {}
        self.keep: list[Any] = []  # keeps merged dicts alive so their ids stay unique
        self.unenforced: set[str] = set()
        self.deadline = time.monotonic() + MAX_SECONDS
        self.formats_ignored: set[str] = set()
        self.one_ofs: list[Schema] = []
        self.literal_checks: list[tuple[Schema, Schema]] = []
        self.checks: list[Check] = []
        self.all_ofs: dict[tuple[int, ...], dict[str, Any]] = {}
        self.same_all_of: dict[tuple[int, ...], Schema] = {}  # see `all_of_key`
        self.dropped: list[str] = []  # keywords `join` could not keep (see there), in order
        self.deferred: list[tuple[Schema, dict[str, Any], str]] = []  # nodes to fill (see DEFER_DEPTH)
        self.probed: list[Schema] = []  # values read under a probe (see `settle_probes`)
        # "x-tokenloom-any-order" at the root applies to every object that does not say otherwise
        self.any_order = root.get(ANY_ORDER, False) if isinstance(root, dict) else False

    def compile(self) -> Schema:
        if _nests_deeper(self.root, MAX_DOCUMENT_DEPTH):
            raise GrammarError(
                f"schema document nested deeper than {MAX_DOCUMENT_DEPTH} levels", param=self.param
            )
        root = self.node(self.root, self.param, 0)
        while self.deferred:
            node, schema, param = self.deferred.pop()
            self.build(node, schema, param, 0)
        self.settle_probes()
        settle(list(self.nodes.values()), self.literal_checks, self.one_ofs, self.checks, self.unenforced)
        if root.first_chars().is_empty():
            raise GrammarError(
                "the schema admits no value (e.g. a $ref cycle with no content)", param=self.param
            )
        graph = reachable(root)
        finite = finite_nodes(graph)
        if root not in finite:
            raise GrammarError(
                "the schema admits no finite value: every value it describes contains itself without end "
                "(a $ref cycle with no way out)",
                param=self.param,
            )
        prune_endless(graph, finite)
        return root

    def ignore(self, node: Schema, keyword: str) -> None:
        """Record a keyword this node does not enforce (the node then accepts a superset)."""
        self.unenforced.add(keyword)
        node.lossy = True

    def all_of(self, parts: list[Any]) -> dict[str, Any]:
        """One `allOf` dict per list of part objects, so recursive schemas reuse its node."""
        key = tuple(id(p) for p in parts)
        merged = self.all_ofs.get(key)
        if merged is None:
            merged = self.all_ofs[key] = {"allOf": parts}
            self.keep.append(merged)
        return merged

    def resolve(self, ref: Any, param: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise GrammarError(f"only local $ref ('#/...') is supported, got {ref!r}", param=param)
        target = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise GrammarError(f"$ref {ref!r} does not resolve", param=param)
        return target

    def node(self, schema: Any, param: str, depth: int) -> Schema:
        key = id(schema)
        if key in self.nodes:
            return self.nodes[key]
        if len(self.nodes) > MAX_NODES or time.monotonic() > self.deadline:
            raise GrammarError("schema too large to compile", param=param)
        same = all_of_key(schema)
        if same is not None and same in self.same_all_of:
            self.nodes[key] = self.same_all_of[same]
            self.keep.append(schema)
            return self.nodes[key]
        node = Schema()
        self.nodes[key] = node
        if same is not None:
            self.same_all_of[same] = node
        self.keep.append(schema)
        if schema is True or schema == {}:
            node.additional = node.items = node
            return node
        if schema is False:
            node.types = frozenset()
            return node
        if not isinstance(schema, dict):
            raise GrammarError("a schema must be an object or a boolean", param=param)
        if depth > DEFER_DEPTH:
            self.deferred.append((node, schema, param))  # its parents need only the node itself
            return node
        self.build(node, schema, param, depth)
        return node

    def build(self, node: Schema, schema: dict[str, Any], param: str, depth: int) -> None:
        """Fill `node`, made for the dict `schema`, at `depth` of the walk."""
        before = len(self.dropped)
        flat = self.flatten(schema, param, 0)
        for keyword in self.dropped[before:]:  # flatten makes no nodes: these are this node's
            self.ignore(node, keyword)
        self.fill(node, flat, param, depth)

    def join(self, a: dict[str, Any], b: dict[str, Any], nest: bool = True) -> dict[str, Any]:
        """`merge` of two flattened dicts. A dict holds one if/then/else, so two conditionals become one
        nested in the other (see `nest_conditions`); past MAX_CONDITIONS in one dict, or unless `nest`,
        the earlier one is dropped and `if` is named unenforced."""
        if PROBE in a and PROBE in b:  # two objects' conditions on earlier properties: the first kept
            self.dropped.append("if")
            self.unenforced.add("if")
            b = {k: v for k, v in b.items() if k != PROBE}
        if "if" in a and "if" in b:
            folded = a.get(_CONDITIONS, 1) + b.get(_CONDITIONS, 1)
            if nest and folded <= MAX_CONDITIONS:
                return self.nest_conditions(a, b, folded)
            self.dropped.append("if")
            self.unenforced.add("if")
        return merge(a, b)

    def nest_conditions(self, a: dict[str, Any], b: dict[str, Any], folded: int) -> dict[str, Any]:
        """(if A then TA else EA) and (if B then TB else EB), exactly, as one conditional: if A then (TA
        and the second) else (EA and the second). The second is shared by both branches, so each extra
        conditional doubles the branches the value may still be in (hence MAX_CONDITIONS)."""
        second = {k: b[k] for k in _CONDITION_KEYS if k in b}
        out = merge(
            {k: v for k, v in a.items() if k not in _CONDITION_KEYS},
            {k: v for k, v in b.items() if k not in _CONDITION_KEYS},
        )
        out["if"] = a["if"]
        out["then"] = {"allOf": [a.get("then", True), second]}
        out["else"] = {"allOf": [a.get("else", True), second]}
        out[_CONDITIONS] = folded
        self.keep.extend((second, out["then"], out["else"]))
        return out

    def flatten(self, schema: dict[str, Any], param: str, hops: int) -> dict[str, Any]:
        """Inline `$ref` (with sibling keywords) and `allOf` into one dict; anyOf stays."""
        if hops > MAX_DEPTH:
            raise GrammarError("$ref/allOf chain too deep or cyclic", param=param)
        if "$ref" in schema:
            target = self.resolve(schema["$ref"], f"{param}.$ref")
            if not isinstance(target, dict):
                return {"anyOf": [target]} if target is not True else {}
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if not any(k not in ("description", "title", "$comment", "default", "examples") for k in rest):
                # a plain reference: keep the node shared so recursive schemas stay finite
                return {"anyOf": [target]}
            schema = self.join(self.scoped(self.flatten(target, param, hops + 1), [rest]), rest)
        if "allOf" in schema:
            subs = schema["allOf"]
            if not isinstance(subs, list):
                raise GrammarError("allOf must be a list", param=f"{param}.allOf")
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            parts: list[dict[str, Any]] = []
            for i, sub in enumerate(subs):
                if sub is True:
                    continue
                if sub is False:  # nothing satisfies the whole allOf
                    merged = merge(merged, {"type": [], "_merged": True})
                    continue
                if not isinstance(sub, dict):
                    raise GrammarError("allOf entries must be schemas", param=f"{param}.allOf[{i}]")
                if any(sub == earlier for earlier in subs[:i]):
                    continue  # A and A is A (patternProperties naming one $ref: chrome-manifest's commands)
                parts.append(self.flatten(sub, f"{param}.allOf[{i}]", hops + 1))
            # all of its conditionals are kept or only the last: some kept would cost the branches and
            # still leave `if` unenforced
            parts = [self.scoped(part, [merged, *parts[:i], *parts[i + 1 :]]) for i, part in enumerate(parts)]
            held = sum(part.get(_CONDITIONS, 1) for part in (merged, *parts) if "if" in part)
            chain = self.value_chain(merged, parts, param) if held > MAX_CONDITIONS else None
            plan = self.probe_plan(merged, parts, param) if held > MAX_CONDITIONS and chain is None else None
            if chain is not None or plan is not None:
                merged = {k: v for k, v in merged.items() if k not in _CONDITION_KEYS}
                parts = [{k: v for k, v in part.items() if k not in _CONDITION_KEYS} for part in parts]
                self.keep.extend((merged, *parts))
                if chain is not None:
                    parts.append(chain)
            for part in parts:
                merged = self.join(merged, part, nest=held <= MAX_CONDITIONS or chain is not None)
            if plan is not None:
                merged[PROBE] = plan
            schema = merged
        self.keep.append(schema)
        return schema

    def value_chain(
        self, own: dict[str, Any], parts: list[dict[str, Any]], param: str
    ) -> dict[str, Any] | None:
        """The conditionals of an allOf (its own dict and its flattened parts) as one chain of branches,
        one per case of the one property every `if` asks about (see schema_conditions.py), where nesting
        them makes 2^n: minecraft's button actions hold five conditionals, youtrack's widgets five. Only
        where the value is an object. None when they are not of this form."""
        held = [d for d in (own, *parts) if "if" in d]
        if any(d.get(_CONDITIONS, 1) != 1 for d in held) or own.get("type") not in ("object", ["object"]):
            return None
        got = value_chain(held, lambda ref: self.flatten(ref, f"{param}.if", 1))
        if got is None:
            return None
        chain, made = got
        self.keep.extend(made)
        return chain

    def probe_plan(self, own: dict[str, Any], parts: list[dict[str, Any]], param: str) -> ProbePlan | None:
        """The conditionals of an allOf as conditions on an earlier property (see schema_probes.py), where
        neither nesting them nor `value_chain` can: popxf's eight. Only where the value is an object."""
        held = [d for d in (own, *parts) if "if" in d]
        if any(d.get(_CONDITIONS, 1) != 1 for d in held) or own.get("type") not in ("object", ["object"]):
            return None
        base = own
        for part in parts:
            base = merge(base, {k: v for k, v in part.items() if k not in _CONDITION_KEYS})
        return probe_plan(base, held, lambda ref: self.flatten(ref, f"{param}.if", 1))

    def scoped(self, part: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
        """A merged part's own unevaluatedProperties sees only the names that part evaluates. Merged
        with parts that name others it would let those in, so it is dropped and named unenforced."""
        if UNEVALUATED not in part or not any(k in other for other in others for k in _NAMING):
            return part
        self.dropped.append(UNEVALUATED)
        self.unenforced.add(UNEVALUATED)
        return {k: v for k, v in part.items() if k != UNEVALUATED}

    def unevaluated(self, node: Schema, s: dict[str, Any]) -> dict[str, Any]:
        """unevaluatedProperties at this level, exactly where it can be: the names evaluated are this
        dict's own (its `$ref`s and allOf parts are merged into it) plus those of the branch that holds.

        Beside additionalProperties it has nothing left to judge. In a dict without branches it is
        additionalProperties over the merged names (a `not` evaluates none). Beside oneOf or if/then/else it
        is left in place: every branch is merged with it (see `hoisted`) and decides there. Beside
        dependencies, or an anyOf whose options name properties (two options may both hold, each
        evaluating its names), it is not enforced."""
        if UNEVALUATED not in s:
            return s
        rest = {k: v for k, v in s.items() if k != UNEVALUATED}
        if "additionalProperties" in s:
            return rest
        options = s.get("anyOf")
        naming_anyof = isinstance(options, list) and any(
            isinstance(o, dict) and any(k in o for k in (*_NAMING, "$ref", "allOf")) for o in options
        )
        if naming_anyof or any(k in s for k in _DEPENDENCIES):
            self.ignore(node, UNEVALUATED)
            return rest
        if "oneOf" in s or "anyOf" in s or ("if" in s and ("then" in s or "else" in s)):
            return s
        rest["additionalProperties"] = s[UNEVALUATED]
        self.keep.append(rest)
        return rest

    def hoisted(self, own: dict[str, Any], *parts: Any) -> dict[str, Any]:
        """allOf(own, *parts) where `own`'s unevaluatedProperties stays at the merged level (it sees the
        parts' names, as it sees a branch's), instead of being one part's, which `scoped` drops."""
        if UNEVALUATED not in own:
            return {"allOf": [own, *parts]}
        inner = {k: v for k, v in own.items() if k != UNEVALUATED}
        self.keep.append(inner)
        return {"allOf": [inner, *parts], UNEVALUATED: own[UNEVALUATED]}

    def fill(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """Make `node` enforce `s`: the first of these that applies shapes the node (each says why)."""
        s = self.unevaluated(node, s)
        if any(k in s for k in _DEPENDENCIES) and self.fill_dependency(node, s, param, depth):
            return
        if "if" in s and ("then" in s or "else" in s):
            self.fill_condition(node, s, param, depth)
        elif "not" in s:
            self.fill_not(node, s, param, depth)
        elif "anyOf" in s or "oneOf" in s:
            self.fill_union(node, s, param, depth)
        elif "const" in s or "enum" in s:
            self.fill_literals(node, s, param, depth)
        else:
            self.fill_typed(node, s, param, depth)

    def fill_not(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """`not`: over object names and values, plain branches merged with the rest (`negation`);
        otherwise the value is parsed against the rest of the schema and the `not` part side by side (a
        `Combo`), and accepted only where the `not` part fails."""
        main = {k: v for k, v in s.items() if k != "not"}
        self.keep.append(main)
        branches = negated_branches(s["not"], main, lambda sub: self.flatten(sub, f"{param}.not", 0))
        if branches is not None:  # decided by plain branches, each one merged with the rest
            merged = [{"allOf": [main, *parts]} for parts in branches]
            self.keep.extend(merged)
            node.options = tuple(self.node(m, param, depth + 1) for m in merged)
            return
        flatten = lambda sub: self.flatten(sub, f"{param}.not", 0)  # noqa: E731
        refused = [self.refused_names(names, param) for names in negated_name_schemas(s["not"], flatten)]
        musts = [pattern for pattern in refused if pattern is not None]  # each one holds on its own
        if musts:  # names the object must hold: told to it (name_musts.py)
            main = {**main, SOME_NAMES: [*main.get(SOME_NAMES, []), *musts]}
            self.keep.append(main)
        parts = (self.node(main, param, depth + 1), self.node(s["not"], f"{param}.not", depth + 1))
        node.combo = Combo("not", parts)
        self.checks.append(Check(node, "not", parts[1:], parts[:1]))

    def fill_union(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """`anyOf`/`oneOf`: one option per entry, each merged with the schema's other keywords; a `oneOf`
        is checked for exactly one match later."""
        kw = "anyOf" if "anyOf" in s else "oneOf"
        union = s[kw]
        if kw == "oneOf" and "anyOf" in s:
            self.ignore(node, "oneOf")  # both on one schema: only anyOf is applied
        if not isinstance(union, list) or not union:
            raise GrammarError(f"{kw} must be a non-empty list", param=f"{param}.{kw}")
        base = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
        opts = []
        for i, opt in enumerate(union):
            sub = opt if not has_constraints(base) else merge(base, opt if isinstance(opt, dict) else {})
            self.keep.append(sub)
            opts.append(self.node(sub, f"{param}.{kw}[{i}]", depth + 1))
        node.options = tuple(opts)
        if kw == "oneOf" and len(opts) > 1:
            self.one_ofs.append(node)

    def fill_literals(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """`enum`/`const`: the values' JSON texts (objects and arrays as structures), filtered by `type`,
        each also checked against the schema's other keywords."""
        values = [s["const"]] if "const" in s else s["enum"]
        if not isinstance(values, list) or (not values and not s.get("_merged")):
            raise GrammarError("enum must be a non-empty list", param=f"{param}.enum")
        if len(values) > MAX_ENUM:
            raise GrammarError(f"enum has {len(values)} values (limit {MAX_ENUM})", param=f"{param}.enum")
        if "type" in s:  # enum and type must both hold: drop values of other types
            allowed = self.types(s, param)
            values = [
                v
                for v in values
                if json_type(v) in allowed or (json_type(v) == "integer" and "number" in allowed)
            ]
        if any(isinstance(v, dict | list) for v in values):
            self.fill_container_literals(node, s, values, param, depth)
            return
        node.literals = tuple(
            dict.fromkeys(json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in values)
        )
        if not node.literals:
            node.types = frozenset()
        rest = {k: v for k, v in s.items() if k not in ("enum", "const", "type")}
        if has_constraints(rest):  # e.g. a pattern next to an enum: values must satisfy both
            self.keep.append(rest)
            self.literal_checks.append((node, self.node(rest, param, depth + 1)))

    def fill_typed(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """A plain schema: its types, then each type's keywords and the numeric bounds."""
        node.types = self.types(s, param)
        if "object" in node.types:
            self.fill_object(node, s, param, depth)
        if PROBE in s:
            self.fill_probe(node, s, param, depth)
        if "array" in node.types:
            self.fill_array(node, s, param, depth)
        if "string" in node.types:
            self.fill_string(node, s, param)
        node.minimum, node.excl_min = _bound(s, "minimum", "exclusiveMinimum", param)
        node.maximum, node.excl_max = _bound(s, "maximum", "exclusiveMaximum", param)
        if "multipleOf" in s:
            m = s["multipleOf"]
            if isinstance(m, bool) or not isinstance(m, int | float) or m <= 0:
                raise GrammarError("multipleOf must be a positive number", param=f"{param}.multipleOf")
            node.multiple_of = decimal_fraction(m)
        nots = s.get(NOT_MULTIPLE_OF, [])
        node.not_multiples = tuple(decimal_fraction(m) for m in nots)

    def fill_container_literals(
        self, node: Schema, s: dict[str, Any], values: list[Any], param: str, depth: int
    ) -> None:
        """Object and array values of an enum/const as structures (any whitespace, keys in the value's
        order) next to the scalar values, each also under the schema's other keywords."""
        rest = {k: v for k, v in s.items() if k not in ("enum", "const", "type", "_merged")}
        scalars = [v for v in values if not isinstance(v, dict | list)]
        opts: list[dict[str, Any]] = [{**rest, "enum": scalars, "_merged": True}] if scalars else []
        opts += [{"allOf": [_literal_schema(v), rest]} for v in values if isinstance(v, dict | list)]
        self.keep.extend(opts)
        node.options = tuple(self.node(o, param, depth + 1) for o in opts)

    def fill_dependency(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> bool:
        """The first dependency (dependentRequired/dependentSchemas/dependencies) as two exclusive
        branches: the name present with what it requires, or the name forbidden. The others stay
        for the branches; too many are ignored instead (each one doubles the branches)."""
        deps: list[tuple[str, str, Any]] = []
        for kw in _DEPENDENCIES:
            table = s.get(kw)
            if isinstance(table, dict):
                deps += [(kw, name, then) for name, then in table.items()]
        if len(deps) > MAX_DEPENDENCIES and self.fill_dependency_by_value(node, s, deps, param, depth):
            return True
        if not deps or len(deps) > MAX_DEPENDENCIES:
            for kw in _DEPENDENCIES:
                if kw in s:
                    self.ignore(node, kw)
            return False
        kw, name, then = deps[0]
        out = {k: v for k, v in s.items() if k != kw}
        rest = {k: v for k, v in s[kw].items() if k != name}
        if rest:
            out[kw] = rest
        needs = {"required": then} if isinstance(then, list) else then
        yes = {"allOf": [out, {"required": [name]}, needs]}
        no = {"allOf": [out, {"properties": {name: False}}]}
        self.keep.extend((out, yes, no))
        node.options = (self.node(yes, f"{param}.{kw}", depth + 1), self.node(no, param, depth + 1))
        return True

    def fill_dependency_by_value(
        self, node: Schema, s: dict[str, Any], deps: list[tuple[str, str, Any]], param: str, depth: int
    ) -> bool:
        """Many dependencies that each only narrow one same property D to some values (MongoDB's index
        fields: "analyzer" only with type "string" or "autocomplete", and 15 more), as one branch per
        value of D instead of two per dependency: D that value, with the names that allow it; D another
        value, with none of the names; D absent, with any (a `properties` entry holds for an absent
        name). The branches exclude each other. False when the dependencies are not all of this form."""
        target: str | None = None
        allows: dict[str, list[Any]] = {}
        for _, name, then in deps:
            if not isinstance(then, dict) or set(then) != {"properties"}:
                return False
            props = then["properties"]
            if not isinstance(props, dict) or len(props) != 1:
                return False
            [(d, narrowed)] = props.items()
            if target not in (None, d) or not isinstance(narrowed, dict) or len(narrowed) != 1:
                return False
            enum = [narrowed["const"]] if "const" in narrowed else narrowed.get("enum")
            if not isinstance(enum, list) or not all(isinstance(v, (str, int, float, bool)) for v in enum):
                return False
            target = d
            allows[name] = enum
        if target is None or target in allows:
            return False
        out = {k: v for k, v in s.items() if k not in _DEPENDENCIES}
        values = list({value_key(v): v for enum in allows.values() for v in enum}.values())
        branches: list[dict[str, Any]] = []
        for v in values:
            banned = [name for name, enum in allows.items() if value_key(v) not in map(value_key, enum)]
            branches.append(
                {
                    "allOf": [
                        out,
                        {
                            "properties": {target: {"const": v}, **dict.fromkeys(banned, False)},
                            "required": [target],
                        },
                    ]
                }
            )
        others = {"not": {"enum": values}}
        branches.append(
            {
                "allOf": [
                    out,
                    {"properties": {target: others, **dict.fromkeys(allows, False)}, "required": [target]},
                ]
            }
        )
        branches.append({"allOf": [out, {"properties": {target: False}}]})
        self.keep.extend((out, others, *branches))
        node.options = tuple(self.node(b, param, depth + 1) for b in branches)
        return True

    def fill_condition(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        """if/then/else as anyOf(allOf(rest, if, then), allOf(rest, else) and not if): the two branches
        exclude each other, so only one survives once the value decides the condition."""
        rest = {k: v for k, v in s.items() if k not in ("if", "then", "else")}
        cond = s["if"]
        negated = {"not": cond}
        yes = self.hoisted(rest, cond, s.get("then", True))
        no = self.hoisted(rest, s.get("else", True), negated)
        self.keep.extend((rest, negated, yes, no))
        node.options = (self.node(yes, f"{param}.then", depth + 1), self.node(no, f"{param}.else", depth + 1))
        fallback = (self.node(rest, param, depth + 1),)
        self.checks.append(Check(node, "if", (self.node(cond, f"{param}.if", depth + 1),), fallback))

    def types(self, s: dict[str, Any], param: str) -> frozenset[str]:
        t = s.get("type")
        if t is None:
            inferred = {
                name
                for name, keys in (("object", _OBJECT_KEYS), ("array", _ARRAY_KEYS), ("string", _STRING_KEYS))
                if any(_says_something(k, s[k]) for k in keys if k in s)
            }
            if any(k in s for k in _NUMBER_KEYS):
                inferred.add("number")
            return frozenset(inferred) or ALL_TYPES
        names = t if isinstance(t, list) else [t]
        if any(n not in ALL_TYPES for n in names) or (not names and "type" in self._declared_types(s)):
            raise GrammarError(f"unknown type {t!r}", param=f"{param}.type")
        return frozenset(names)

    def _declared_types(self, s: dict[str, Any]) -> dict[str, Any]:
        """An empty type list can only come from merging disjoint allOf types: then no value fits."""
        return {} if s.get("type") == [] and s.get("_merged") else s

    def fill_array(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        items = s.get("items", True)
        prefix = s.get("prefixItems", [])
        if isinstance(items, list):  # draft-4 tuple form
            prefix, items = items, s.get("additionalItems", True)
        node.prefix = tuple(
            self.node(p, f"{param}.prefixItems[{i}]", depth + 1) for i, p in enumerate(prefix)
        )
        node.items = None if items is False else self.node(items, f"{param}.items", depth + 1)
        node.min_items = count(s, "minItems", param)
        node.max_items = count(s, "maxItems", param, None)
        node.unique = s.get("uniqueItems") is True
        if "contains" in s:
            self.fill_contains(node, s, prefix, items, param, depth)

    def fill_contains(
        self, node: Schema, s: dict[str, Any], prefix: list[Any], items: Any, param: str, depth: int
    ) -> None:
        """`contains`/`minContains`/`maxContains`: the schema an item counted toward it is read against,
        allOf(its items schema, contains), per prefix position and for the rest (see ArrFrame); with
        maxContains the count must be exact, so an uncounted item is read against allOf(its items
        schema, not contains). Beside uniqueItems (whose frame counts nothing) it is named unenforced."""
        least = count(s, "minContains", param) if "minContains" in s else 1
        most = count(s, "maxContains", param, None)
        if node.unique:
            self.ignore(node, "contains")
            return
        if least == 0 and most is None:
            return
        wanted = s["contains"]
        node.min_contains = least
        node.prefix_found = tuple(self.counted(p, wanted, param, depth) for p in prefix)
        node.items_found = None if items is False else self.counted(items, wanted, param, depth)
        if most is None:
            return
        node.max_contains = most
        unwanted = {"not": wanted}
        self.keep.append(unwanted)
        node.prefix_missed = tuple(self.counted(p, unwanted, param, depth) for p in prefix)
        node.items_missed = None if items is False else self.counted(items, unwanted, param, depth)

    def counted(self, item: Any, wanted: Any, param: str, depth: int) -> Schema:
        """The node of an item that also matches `wanted` (contains, or its negation)."""
        return self.node(self.all_of([item, wanted]), f"{param}.contains", depth + 1)

    def fill_string(self, node: Schema, s: dict[str, Any], param: str) -> None:
        node.min_len = count(s, "minLength", param)
        node.max_len = count(s, "maxLength", param, None)
        pattern = s.get("pattern")
        fmt = s.get("format")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise GrammarError("pattern must be a string", param=f"{param}.pattern")
            if isinstance(fmt, str) and fmt in FORMATS:  # both hold: the format as a look-ahead
                pattern = both_patterns(pattern, FORMATS[fmt], whole=True)
            node.regex = self.regex(node, pattern, "pattern", f"{param}.pattern")
        elif isinstance(fmt, str) and fmt in FORMATS:
            node.regex = shared_regex(FORMATS[fmt])
        if fmt is not None and not (isinstance(fmt, str) and fmt in FORMATS):
            self.formats_ignored.add(str(fmt))


def all_of_key(schema: Any) -> tuple[int, ...] | None:
    """The parts of a dict that is nothing but an `allOf` (nested ones opened, repeats dropped), in order
    (the order properties are written in): the name of what it means. Merges make a new such dict at
    every level of a recursive schema (a property both parts name, one part's additionalProperties asked
    of the other's names) from the same parts (dicts of the document, or kept by the compiler, so their
    ids stay theirs), so two levels asking the same parts share one node and the walk ends (mod303's
    `a` chain)."""
    if not isinstance(schema, dict) or set(schema) != {"allOf"} or not isinstance(schema["allOf"], list):
        return None
    parts: dict[int, None] = {}
    stack = list(reversed(schema["allOf"]))
    while stack:
        part = stack.pop()
        if isinstance(part, dict) and set(part) == {"allOf"} and isinstance(part["allOf"], list):
            stack.extend(reversed(part["allOf"]))
        elif part is not True and part != {}:
            parts[id(part)] = None
    return tuple(parts)


def _literal_schema(v: Any) -> Any:
    """A schema whose only value is `v` (objects: keys in `v`'s order, no others)."""
    if isinstance(v, dict):
        props = {k: _literal_schema(x) for k, x in v.items()}
        return {"type": "object", "properties": props, "required": list(v), "additionalProperties": False}
    if isinstance(v, list):
        items = [_literal_schema(x) for x in v]
        return {"type": "array", "prefixItems": items, "items": False, "minItems": len(v)}
    return {"const": v}


def _bound(s: dict[str, Any], key: str, excl_key: str, param: str) -> tuple[float | None, bool]:
    value, excl = s.get(key), s.get(excl_key)
    if isinstance(excl, bool):  # draft-4 form
        if value is None:
            return None, False
        return _num(value, key, param), excl
    if excl is not None:
        e = _num(excl, excl_key, param)
        if value is None or (key == "minimum" and e >= value) or (key == "maximum" and e <= value):
            return e, True
    return (None if value is None else _num(value, key, param)), False


def _num(v: Any, key: str, param: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise GrammarError(f"{key} must be a number", param=f"{param}.{key}")
    return float(v)
