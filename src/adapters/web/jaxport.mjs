// jaxport.mjs: a directory that jaxport converted to ONNX, loaded and called in a web page (or Node)
// with ONNX Runtime Web. Shipped with the jaxport package, copied into a directory by
// `jaxport convert SOURCE --to onnx --web -o DIR`, and listed in its manifest like every other file.
// No dependency: the page passes its own `ort` (onnxruntime-web), so it chooses the version and backend.
//
//   import * as ort from "onnxruntime-web";
//   import { loadModel } from "./model/jaxport.mjs";
//   const model = await loadModel("./model/", { ort });
//   model.functions.logits.inputs;                 // [{name: "arg0", dtype: "int32", shape: ["b", "t"], ...}]
//   const out = await model.call("logits", { arg0: { data: Int32Array.from([1, 2, 3]), dims: [1, 3] } });
//   out.output_0.dims, out.output_0.data;          // an ort.Tensor per output, by wire name
//   const report = await model.checkNumerics();    // the golden examples, run here
//
// Every file is checked against the manifest (size and SHA-256, with crypto.subtle) before ONNX Runtime
// reads it. A call is checked before it runs, as jaxport's Python front checks it (names, dtypes, ranks,
// shapes, the dimension variables solved from the shapes and the constraints checked, from the manifest's
// expression trees): a bad call throws an Error whose message is the one jaxport's Python raises for the
// same call, and whose name is the Python error's class (DtypeMismatchError...).

const FORMAT_NAME = "jaxport-converted";
const FORMAT_VERSION = 1;
const MANIFEST_FILE = "manifest.json";
const SHAPE_POLY_DOC = "https://docs.jax.dev/en/latest/501/shape-polymorphism.html";
const MISMATCH = "Input shapes do not match the polymorphic shapes specification. ";

/** The default tolerances of jaxport's numerics check by dtype (every other dtype is exact). */
export const DEFAULT_TOLERANCES = Object.freeze({
  float64: { rtol: 1e-12, atol: 1e-13 }, complex128: { rtol: 1e-12, atol: 1e-13 },
  float32: { rtol: 1e-5, atol: 1e-6 }, complex64: { rtol: 1e-5, atol: 1e-6 },
  float16: { rtol: 1e-2, atol: 1e-3 }, bfloat16: { rtol: 5e-2, atol: 5e-3 },
  float8_e4m3fn: { rtol: 0.25, atol: 0.025 }, float8_e5m2: { rtol: 0.5, atol: 0.05 },
});

// dtype -> [safetensors code, typed array class, bytes per element]
const DTYPES = {
  bool: ["BOOL", Uint8Array, 1], int8: ["I8", Int8Array, 1], int16: ["I16", Int16Array, 2],
  int32: ["I32", Int32Array, 4], int64: ["I64", BigInt64Array, 8], uint8: ["U8", Uint8Array, 1],
  uint16: ["U16", Uint16Array, 2], uint32: ["U32", Uint32Array, 4], uint64: ["U64", BigUint64Array, 8],
  float16: ["F16", Uint16Array, 2], float32: ["F32", Float32Array, 4], float64: ["F64", Float64Array, 8],
};
// The dtype a typed array stands for when the caller names none.
const ARRAY_DTYPES = new Map([
  [Float32Array, "float32"], [Float64Array, "float64"], [Int8Array, "int8"], [Int16Array, "int16"],
  [Int32Array, "int32"], [BigInt64Array, "int64"], [Uint8Array, "uint8"], [Uint16Array, "uint16"],
  [Uint32Array, "uint32"], [BigUint64Array, "uint64"],
]);
if (typeof globalThis.Float16Array === "function") ARRAY_DTYPES.set(globalThis.Float16Array, "float16");

/** An error of jaxport's: `name` is the Python error's class, `message` its text. */
export class JaxportError extends Error {
  constructor(name, message) {
    super(message);
    this.name = name;
  }
}

// ---- Python's spelling, for messages identical to the Python front's ------------------------------

/** A string as Python's repr() writes it. */
export function pyRepr(value) {
  if (typeof value === "number") return String(value);
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of value) {
    const code = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + quote;
}

const pyList = (items) => "[" + items.map(pyRepr).join(", ") + "]";
const pySorted = (items) => [...items].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** A shape as JAX prints a tuple of dimensions: `(b, 4)`, `(3,)`, `()`. */
export function formatShape(dims) {
  const inner = dims.map(String).join(", ");
  return dims.length === 1 ? `(${inner},)` : `(${inner})`;
}

// ---- Trees: the caller's (args, kwargs) and the results ---------------------------------------------

/** The key path of each leaf of a manifest tree ({kind, children, keys}), in flattening order. */
function leafKeys(tree, path = [], out = []) {
  if (tree.kind === "leaf") out.push(path);
  else (tree.children || []).forEach((child, i) => leafKeys(child, [...path, tree.kind === "dict" ? tree.keys[i] : i], out));
  return out;
}

/** The name of each flat input as jaxport's messages write it: `args[0]`, `kwargs['y']`. */
export function leafPaths(inTree) {
  return leafKeys(inTree).map((keys) => argsKwargsPath(keys.map((k) => `[${pyRepr(k)}]`)));
}

/** The name of each flat result: `out`, `out[0]`, `out['y']`. */
export function resultPaths(outTree) {
  return leafKeys(outTree).map((keys) => "out" + keys.map((k) => `[${pyRepr(k)}]`).join(""));
}

function argsKwargsPath(path) {
  if (!path.length) return "args";
  return (path[0] === "[0]" ? "args" : "kwargs") + path.slice(1).join("");
}

const PYTHON_TYPES = { tuple: "<class 'tuple'>", list: "<class 'list'>", dict: "<class 'dict'>", none: "<class 'NoneType'>" };
const NODE = Symbol("node");
const kindOf = (value) => (value && value[NODE]) || null;

// A node of the call built from wire names: an Array (tuple, list or custom node) or an object (dict),
// marked with the kind it stands for.
function node(kind) {
  const made = kind === "dict" ? {} : [];
  Object.defineProperty(made, NODE, { value: kind });
  return made;
}

function pyTypeName(value) {
  const kind = kindOf(value);
  if (kind) return PYTHON_TYPES[kind] || PYTHON_TYPES.tuple;
  if (value === null || value === undefined) return PYTHON_TYPES.none;
  return `<class '${leafTypeName(value)}'>`;
}

function leafTypeName(value) {
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  return value && value.constructor ? value.constructor.name : typeof value;
}

/** The flat leaves of a call tree against the manifest's `(args, kwargs)` tree; throws TreeMismatchError. */
function flattenCall(functionName, inTree, call, weightsBound) {
  const leaves = [];
  const differences = [];
  flatten(inTree, call, [], leaves, differences);
  if (differences.length) {
    const bound = weightsBound ? " (less the bundle's weights, which it binds as its first argument)" : "";
    throw new JaxportError("TreeMismatchError",
      "The invocation args and kwargs must have the same pytree structure " +
      `as when the function '${functionName}' was exported${bound}, but they ` +
      "have the following structural differences:\n" + differences.join("\n"));
  }
  return leaves;
}

function flatten(spec, value, path, leaves, differences) {
  const differ = (inCall, exported, explanation) => differences.push(
    `   - ${argsKwargsPath(path)} is a ${inCall} in the invocation and a ${exported} when exported, so ${explanation}.\n`);
  const kind = spec.kind;
  const valueKind = kindOf(value);
  if (kind === "leaf") {
    if (valueKind || value === null) differ(pyTypeName(value), "pytree leaf", "their Python types differ");
    else leaves.push(value);
    return;
  }
  if (kind === "none") {
    if (value !== null) differ(pyTypeName(value), PYTHON_TYPES.none, "their Python types differ");
    return;
  }
  const children = spec.children || [];
  if (kind === "dict") {
    if (valueKind !== "dict") {
      differ(pyTypeName(value), PYTHON_TYPES.dict, "their Python types differ");
      return;
    }
    const given = Object.keys(value);
    const keys = spec.keys;
    const symmetric = [...given.filter((k) => !keys.includes(k)), ...keys.filter((k) => !given.includes(k))];
    if (symmetric.length) {
      differ(`${PYTHON_TYPES.dict} with keys ${pyList(pySorted(given))}`, `${PYTHON_TYPES.dict} with keys ${pyList(keys)}`,
        `the keys do not match, with the symmetric difference of key sets: {${pySorted(symmetric).map(pyRepr).join(" ")}}`);
      return;
    }
    keys.forEach((key, i) => flatten(children[i], value[key], [...path, `[${pyRepr(key)}]`], leaves, differences));
    return;
  }
  if (!valueKind || valueKind === "dict") {
    differ(pyTypeName(value), kind === "custom" ? `custom pytree node ${spec.name}` : PYTHON_TYPES[kind],
      kind === "custom" ? "give a custom node as a tuple or list of its children" : "their Python types differ");
    return;
  }
  if (value.length !== children.length) {
    const name = kind === "custom" ? spec.name : kind;
    differ(`${valueKind === "custom" ? "tuple" : valueKind} of length ${value.length}`, `${name} of length ${children.length}`,
      "the lengths do not match");
    return;
  }
  children.forEach((child, i) => flatten(child, value[i], [...path, `[${i}]`], leaves, differences));
}

/** The key-path entries of a wire name (the inverse of jaxport's wire-name rule). */
export function parseWireName(name) {
  const [head, ...rest] = name.split("/");
  const first = /^arg[0-9]+$/.test(head) ? Number(head.slice(3)) : unescapeSegment(head);
  return [first, ...rest.map(unescapeSegment)];
}

function unescapeSegment(segment) {
  if (segment === ".") return "";
  const bytes = [];
  for (let i = 0; i < segment.length;) {
    const c = segment[i];
    if (c === ".") {
      const pair = segment.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/.test(pair)) throw new JaxportError("KeyError", `${pyRepr(segment)} is not a wire name's segment`);
      bytes.push(parseInt(pair, 16));
      i += 3;
    } else if (/[A-Za-z0-9_-]/.test(c)) {
      bytes.push(c.charCodeAt(0));
      i += 1;
    } else {
      throw new JaxportError("KeyError", `${pyRepr(segment)}: the character ${pyRepr(c)} is not one a wire name holds`);
    }
  }
  return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
}

/** The `(args, kwargs)` call that named inputs stand for, shaped after the exported tree where it can be. */
function callFromNames(inTree, inputs) {
  const [argsSpec, kwargsSpec] = inTree.children;
  const call = node("tuple");
  call.push(node("tuple"), node("dict"));
  for (const [name, value] of Object.entries(inputs)) {
    const [head, ...rest] = parseWireName(name);
    let parent = call[typeof head === "number" ? 0 : 1];
    let spec = typeof head === "number" ? argsSpec : kwargsSpec;
    const entries = [head, ...rest];
    entries.forEach((entry, i) => {
      const childSpec = spec && spec.children ? spec.children[spec.kind === "dict" ? spec.keys.indexOf(entry) : Number(entry)] : undefined;
      const key = spec && spec.kind !== "dict" && /^[0-9]+$/.test(String(entry)) ? Number(entry) : entry;
      if (i === entries.length - 1) {
        parent[key] = value;
      } else {
        if (parent[key] === undefined) parent[key] = node(childSpec && childSpec.kind !== "leaf" ? childSpec.kind : "dict");
        parent = parent[key];
      }
      spec = childSpec;
    });
  }
  fillHoles(call);
  return call;
}

// A positional argument (or a list's item) that the names skip is given as None.
function fillHoles(value) {
  if (!kindOf(value)) return;
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) {
    if (value[i] === undefined) value[i] = null;
    else fillHoles(value[i]);
  } else Object.values(value).forEach(fillHoles);
}

// ---- Symbolic dimensions: the manifest's expression trees --------------------------------------------

// A polynomial: {terms: [{factors: [[factor, power]], coeff}], constant}; a factor: {var} or {op, args: [poly, poly]}.
function treeToPoly(tree) {
  if (typeof tree === "number") return { terms: [], constant: tree };
  if (typeof tree === "object" && tree.op === "+") {
    const poly = { terms: [], constant: 0 };
    for (const arg of tree.args) {
      if (typeof arg === "number") poly.constant += arg;
      else poly.terms.push(treeToTerm(arg));
    }
    return poly;
  }
  return { terms: [treeToTerm(tree)], constant: 0 };
}

function treeToTerm(tree) {
  let coeff = 1;
  const items = typeof tree === "object" && tree.op === "*" ? tree.args : [tree];
  const factors = [];
  for (const item of items) {
    if (typeof item === "number") { coeff *= item; continue; }
    const factor = typeof item === "string" ? { var: item } : { op: item.op, args: item.args.map(treeToPoly) };
    const last = factors[factors.length - 1];
    if (last && formatFactor(last[0]) === formatFactor(factor)) last[1] += 1;
    else factors.push([factor, 1]);
  }
  return { factors, coeff };
}

function formatFactor(f) {
  return f.var !== undefined ? f.var : `${f.op}(${formatPoly(f.args[0])}, ${formatPoly(f.args[1])})`;
}

/** A polynomial as jaxport (and JAX) prints it: `2*b + 1`, `- t + 1024`, `mod(t, 4)`. */
export function formatPoly(poly) {
  const parts = poly.terms.map((t) => [t.coeff, t.factors.map(([f, e]) => (e === 1 ? formatFactor(f) : `${formatFactor(f)}^${e}`)).join("*")]);
  if (poly.constant || !parts.length) parts.push([poly.constant, ""]);
  return parts.map(([c, text], i) => {
    const magnitude = Math.abs(c);
    const body = !text ? String(magnitude) : magnitude === 1 ? text : `${magnitude}*${text}`;
    if (i === 0) return c < 0 ? `- ${body}` : body;
    return c < 0 ? ` - ${body}` : ` + ${body}`;
  }).join("");
}

function polyVars(poly, out = new Set()) {
  for (const t of poly.terms) for (const [f] of t.factors) {
    if (f.var !== undefined) out.add(f.var);
    else f.args.forEach((a) => polyVars(a, out));
  }
  return out;
}

const floorDiv = (a, b) => Math.floor(a / b);
const floorMod = (a, b) => a - b * Math.floor(a / b);
const OPS = { floordiv: floorDiv, mod: floorMod, max: Math.max, min: Math.min };

function evaluatePoly(poly, env) {
  let value = poly.constant;
  for (const t of poly.terms) {
    let product = t.coeff;
    for (const [f, e] of t.factors) {
      const v = f.var !== undefined ? env[f.var] : OPS[f.op](evaluatePoly(f.args[0], env), evaluatePoly(f.args[1], env));
      for (let k = 0; k < e; k++) product *= v;
    }
    value += product;
  }
  return value;
}

/** One of the manifest's dimension trees as jaxport prints the dimension: `4`, `b`, `2*h + 1`. */
export function formatDim(tree) {
  return formatPoly(treeToPoly(tree));
}

/** The value of one of the manifest's dimension trees for the variables' values `env`. */
export function evaluateDim(tree, env) {
  return evaluatePoly(treeToPoly(tree), env);
}

// `poly == k*var + rest`, `var` not in `rest`: [k, rest], or null.
function linearIn(poly, variable) {
  let coeff = 0;
  const rest = { terms: [], constant: poly.constant };
  for (const t of poly.terms) {
    const vars = polyVars({ terms: [t], constant: 0 });
    if (!vars.has(variable)) { rest.terms.push(t); continue; }
    if (t.factors.length !== 1 || t.factors[0][1] !== 1 || t.factors[0][0].var !== variable) return null;
    coeff = t.coeff;
  }
  return [coeff, rest];
}

// The shape plan of one function (as jaxport's domain/symbolic/planner.py builds it): derivations of the
// dimension variables from argument dimensions and assertions, each with its message template.
function buildPlan(inputs, paths, constraints) {
  const symbolic = (d) => typeof d !== "number";
  const specs = inputs.map((input, i) => (input.dims.some(symbolic) ? `${paths[i]}.shape = ${formatShape(input.dims.map(formatDim))}` : null))
    .filter((s) => s !== null).join(",");
  const equations = [];
  inputs.forEach((input, i) => input.dims.forEach((d, j) => {
    if (symbolic(d)) equations.push({ source: { arg: i, dim: j }, poly: treeToPoly(d), text: formatDim(d), where: `${paths[i]}.shape[${j}]` });
  }));
  const steps = [];
  const derived = new Map();
  const argKey = (s) => `arg:${s.arg}:${s.dim}`;
  const varValue = (v) => {
    const d = derived.get(v);
    return d.direct ? { argDim: d.source } : { poly: { terms: [{ factors: [[{ var: v }, 1]], coeff: 1 }], constant: 0 } };
  };
  const valueOf = (poly) => {
    if (poly.terms.length === 1 && !poly.constant && poly.terms[0].coeff === 1 && poly.terms[0].factors.length === 1 &&
        poly.terms[0].factors[0][1] === 1 && poly.terms[0].factors[0][0].var !== undefined) return varValue(poly.terms[0].factors[0][0].var);
    return { poly };
  };
  const message = () => {
    const values = [];
    const index = new Map();
    return {
      values,
      ref(value) {
        const key = value.argDim ? argKey(value.argDim) : value.remainder !== undefined ? `rem:${value.remainder}`
          : value.poly ? `expr:${formatPoly(value.poly)}` : `int:${value.int}`;
        if (!index.has(key)) { index.set(key, values.length); values.push(value); }
        return `{${index.get(key)}}`;
      },
    };
  };
  const fullMessage = (head, m) => {
    const listing = [...derived.entries()].map(([v, d]) =>
      `'${v}' = ${m.ref(varValue(v))} from specification '${d.spec}' for dimension ${d.where} (= ${m.ref({ argDim: d.source })}), `).join("");
    return `${head} Using the following polymorphic shapes specifications: ${specs}. ` +
      `Obtained dimension variables: ${listing}. Please see ${SHAPE_POLY_DOC}#shape-assertion-errors for more details.`;
  };
  const assert = (lhs, relation, rhs, head, m) => steps.push({ lhs, relation, rhs, message: fullMessage(head, m), values: m.values });

  const process = (eq) => {
    const unknown = [...polyVars(eq.poly)].filter((v) => !derived.has(v));
    if (!unknown.length) {
      const m = message();
      const expected = valueOf(eq.poly);
      const head = `${MISMATCH}Found inconsistency between dimension size ${eq.where} (= ${m.ref({ argDim: eq.source })}) ` +
        `and the specification '${eq.text}' (= ${m.ref(expected)}).`;
      assert({ argDim: eq.source }, "==", expected, head, m);
      return true;
    }
    if (unknown.length !== 1) return false;
    const [variable] = unknown;
    const linear = linearIn(eq.poly, variable);
    if (!linear) return false;
    const [coeff, offset] = linear;
    const derivation = { variable, source: eq.source, coeff, offset, spec: eq.text, where: eq.where,
      direct: coeff === 1 && !offset.terms.length && offset.constant === 0 };
    steps.push({ derive: derivation });
    if (Math.abs(coeff) !== 1) {
      const m = message();
      const head = `${MISMATCH}Division had remainder ${m.ref({ remainder: variable })} when computing the value of '${variable}'.`;
      assert({ remainder: variable }, "==", { int: 0 }, head, m);
    }
    derived.set(variable, derivation);
    assert(varValue(variable), ">=", { int: 1 }, `${MISMATCH}Expected value >= 1 for dimension variable '${variable}'.`, message());
    return true;
  };

  let pending = equations;
  while (pending.length) {
    const remaining = pending.filter((eq) => !process(eq));
    if (remaining.length === pending.length) {
      const unknown = pySorted(new Set(remaining.flatMap((eq) => [...polyVars(eq.poly)]).filter((v) => !derived.has(v))));
      throw new JaxportError("UnsolvableDimensionError",
        `Cannot solve for values of dimension variables {${unknown.map(pyRepr).join(", ")}}. ` +
        "We can only solve linear uni-variate constraints. " +
        `Using the following polymorphic shapes specifications: ${specs}. ` +
        `Unprocessed specifications: ${remaining.map((eq) => `'${eq.text}' for dimension size ${eq.where}`).join(", ")}. ` +
        `Please see ${SHAPE_POLY_DOC}#dimension-variables-must-be-solvable-from-the-input-shapes for more details.`);
    }
    pending = remaining;
  }
  for (const c of constraints) {
    if (typeof c.difference === "number") continue;
    const difference = treeToPoly(c.difference);
    const missing = pySorted([...polyVars(difference)].filter((v) => !derived.has(v)));
    if (missing.length) {
      throw new JaxportError("DimensionEvaluationError",
        `Encountered dimension variable '${missing[0]}' that is not appearing in the shapes of the function arguments.\n` +
        `The following dimension variables are appearing in the shapes of the function arguments: ${pyList([...derived.keys()])}.\n` +
        `Please see ${SHAPE_POLY_DOC}#dimension-variables-must-be-solvable-from-the-input-shapes for more details.`);
    }
    const m = message();
    const value = valueOf(difference);
    const relation = c.relation === ">=" ? "greater or equal to" : "equal to";
    const head = `Input shapes do not match the symbolic shape constraint ${c.text}. ` +
      `Expected '${formatPoly(difference)}' to be ${relation} 0, but found ${m.ref(value)}. `;
    assert(value, c.relation, { int: 0 }, head, m);
  }
  return { steps, variables: [...derived.keys()] };
}

// Runs a plan on the actual shapes: the variables' values, or a ShapeAssertionError with JAX's message.
function runPlan(plan, shapes) {
  const env = {};
  const remainders = {};
  const value = (v) => {
    if (v.argDim) return shapes[v.argDim.arg][v.argDim.dim];
    if (v.remainder !== undefined) return remainders[v.remainder];
    if (v.poly) return evaluatePoly(v.poly, env);
    return v.int;
  };
  for (const step of plan.steps) {
    if (step.derive) {
      const d = step.derive;
      const numerator = shapes[d.source.arg][d.source.dim] - evaluatePoly(d.offset, env);
      env[d.variable] = d.coeff === 1 ? numerator : floorDiv(numerator, d.coeff);
      remainders[d.variable] = d.coeff === 1 ? 0 : floorMod(numerator, d.coeff);
      continue;
    }
    const lhs = value(step.lhs);
    const rhs = value(step.rhs);
    if (step.relation === ">=" ? !(lhs - rhs >= 0) : lhs !== rhs) {
      const values = step.values.map((v) => String(value(v)));
      throw new JaxportError("ShapeAssertionError", step.message.replace(/\{(\d+)\}/g, (_, i) => values[Number(i)]));
    }
  }
  return env;
}

// ---- Arrays -----------------------------------------------------------------------------------------

// {dtype, dims, data} of what a caller passes: an ort.Tensor, {data, dims[, dtype]}, or a typed array (1-D).
function describe(path, value) {
  if (value && typeof value === "object" && !ArrayBuffer.isView(value) && "data" in value && "dims" in value) {
    const dtype = value.type || value.dtype || ARRAY_DTYPES.get(value.data && value.data.constructor);
    if (typeof dtype === "string" && value.dims && typeof value.dims.length === "number") {
      const holds = value.data && value.data.constructor;
      const expected = DTYPES[dtype] && DTYPES[dtype][1];
      if (!value.type && expected && holds !== expected && !(dtype === "float16" && holds === globalThis.Float16Array)) {
        throw new JaxportError("CallError", `${path} holds a ${leafTypeName(value.data)} where its dtype ${dtype} needs a ${expected.name}`);
      }
      return { dtype, dims: Array.from(value.dims, Number), data: value.data, tensor: value.type ? value : null };
    }
  }
  if (ArrayBuffer.isView(value) && ARRAY_DTYPES.has(value.constructor)) {
    return { dtype: ARRAY_DTYPES.get(value.constructor), dims: [value.length], data: value, tensor: null };
  }
  throw new JaxportError("CallError", `${path} is a ${leafTypeName(value)}, not an array: a runtime takes arrays ` +
    "(numpy.asarray(value, dtype) makes one)");
}

function elementCount(dims) {
  return dims.reduce((a, b) => a * b, 1);
}

// ---- Files --------------------------------------------------------------------------------------------

async function sha256Hex(bytes) {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The tensors and the data offset of a safetensors file's header (its first bytes). */
export function parseSafetensorsHeader(bytes, file) {
  if (bytes.length < 8) throw new JaxportError("ArtifactError", `${file} is truncated: ${bytes.length} bytes, shorter than its header`);
  const length = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (8 + length > bytes.length) {
    throw new JaxportError("ArtifactError", `${file}: its header claims ${length} bytes, more than the file (${bytes.length} bytes) or the limit holds`);
  }
  let doc;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + length)));
  } catch (error) {
    throw new JaxportError("ArtifactError", `${file}: the header is not JSON: ${error.message}`);
  }
  const metadata = doc.__metadata__ || {};
  delete doc.__metadata__;
  return { tensors: doc, metadata, start: 8 + length, header: bytes.subarray(0, 8 + length) };
}

/** Every tensor of a safetensors file's bytes: name -> {dtype, dims, data} (a typed array, copied). */
export function readTensors(bytes, file) {
  const parsed = parseSafetensorsHeader(bytes, file);
  const codes = Object.fromEntries(Object.entries(DTYPES).map(([dtype, [code]]) => [code, dtype]));
  return Object.fromEntries(Object.entries(parsed.tensors).map(([name, entry]) => {
    const dtype = codes[entry.dtype];
    if (!dtype) throw new JaxportError("ArtifactError", `${file}: the tensor '${name}' is ${entry.dtype}, which ONNX Runtime Web has no type for`);
    return [name, tensorOf(file, bytes, parsed, name, dtype)];
  }));
}

// The tensor `name` of a safetensors file as a typed array of `dtype` (copied: offsets need not be aligned).
function tensorOf(file, bytes, parsed, name, dtype) {
  const entry = parsed.tensors[name];
  if (!entry) throw new JaxportError("ArtifactError", `${file}: it has no tensor '${name}'`);
  const [code, ArrayType, size] = DTYPES[dtype] || [];
  if (code !== entry.dtype) throw new JaxportError("ArtifactError", `${file}: the tensor '${name}' is ${entry.dtype}, not ${dtype}`);
  const [begin, end] = entry.data_offsets;
  if (end - begin !== elementCount(entry.shape) * size || parsed.start + end > bytes.length) {
    throw new JaxportError("ArtifactError", `${file}: the tensor '${name}' does not fit its shape or the file`);
  }
  const copy = bytes.slice(parsed.start + begin, parsed.start + end);
  return { data: new ArrayType(copy.buffer, 0, (end - begin) / size), dims: entry.shape, dtype };
}

async function defaultRead(base, name) {
  const response = await fetch(new URL(name, base));
  if (!response.ok) throw new JaxportError("ArtifactError", `The directory's file ${name} is missing (HTTP ${response.status})`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Reads a converted directory's manifest, checks its format, and returns its parsed JSON. */
export function parseManifest(bytes) {
  let doc;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new JaxportError("ArtifactError", `${MANIFEST_FILE} is not valid JSON: ${error.message}`);
  }
  if (!doc || doc.format !== FORMAT_NAME) {
    throw new JaxportError("ArtifactError", `${MANIFEST_FILE}: the format ${pyRepr(String(doc && doc.format))} is not '${FORMAT_NAME}'`);
  }
  if (!(doc.format_version >= 1 && doc.format_version <= FORMAT_VERSION)) {
    throw new JaxportError("ArtifactError", `${MANIFEST_FILE}: format version ${doc.format_version} is newer than ${FORMAT_VERSION}, ` +
      "the newest this jaxport reads: upgrade jaxport to load it.");
  }
  if (doc.target !== "onnx") {
    throw new JaxportError("ArtifactError", `${MANIFEST_FILE}: a ${doc.target} directory, not ONNX: only an ONNX directory runs in ONNX Runtime Web`);
  }
  return doc;
}

// ---- The model ----------------------------------------------------------------------------------------

/**
 * Loads the converted ONNX directory at `base` (a URL ending in `/`, relative to the page).
 *
 * Options: `ort` (required: the onnxruntime-web module the page imported), `sessionOptions` (passed to
 * ort.InferenceSession.create, e.g. {executionProviders: ["webgpu", "wasm"]}), `read` (async name ->
 * Uint8Array, instead of fetch: for Node or a bundler's assets).
 */
export async function loadModel(base, options = {}) {
  const { ort } = options;
  if (!ort || typeof ort.InferenceSession !== "object" && typeof ort.InferenceSession !== "function") {
    throw new TypeError("loadModel needs { ort }: the onnxruntime-web module the page imports");
  }
  const baseUrl = typeof base === "string" && options.read === undefined
    ? new URL(base.endsWith("/") ? base : base + "/", globalThis.location ? globalThis.location.href : undefined) : base;
  const read = options.read || ((name) => defaultRead(baseUrl, name));
  const manifest = parseManifest(await read(MANIFEST_FILE));
  return new Model(manifest, ort, read, options.sessionOptions || {});
}

class Model {
  constructor(manifest, ort, read, sessionOptions) {
    this.manifest = manifest;
    this.ort = ort;
    this.read = read;
    this.sessionOptions = sessionOptions;
    this.files = new Map();
    this.sessions = new Map();
    this.plans = new Map();
    /** Each function's signature: inputs and outputs (wire name, dtype, shape), constraints, weights bound. */
    this.functions = Object.freeze(Object.fromEntries(Object.entries(manifest.functions).map(([name, f]) => {
      const sig = f.signature;
      const arrays = (list) => Object.freeze(list.map((a) => Object.freeze({ name: a.name, dtype: a.dtype, shape: [...a.shape], dims: a.dims })));
      return [name, Object.freeze({
        name, inputs: arrays(sig.inputs), outputs: arrays(sig.outputs),
        constraints: Object.freeze(sig.constraints.map((c) => c.text)), nrWeights: sig.nr_weights,
        paths: Object.freeze(leafPaths(sig.in_tree)), results: Object.freeze(resultPaths(sig.out_tree)),
      })];
    })));
  }

  /** The bytes of a file the manifest lists, its size and SHA-256 checked (fetched once). */
  file(name) {
    if (!this.files.has(name)) {
      const promise = (async () => {
        const recorded = Object.hasOwn(this.manifest.files, name) ? this.manifest.files[name] : null;
        if (!recorded) throw new JaxportError("ArtifactError", `The directory's manifest does not list a file ${name}`);
        if (!/^[^/\\:?#]+(\/[^/\\:?#]+)*$/.test(name) || name.split("/").some((part) => part === "." || part === "..")) {
          throw new JaxportError("ArtifactError", `The directory's manifest names a file outside the directory: ${name}`);
        }
        const bytes = await this.read(name);
        if (bytes.length !== recorded.size) {
          const what = bytes.length < recorded.size ? "truncated" : "longer than recorded";
          throw new JaxportError("ArtifactError", `The directory's file ${name} is ${what}: ${bytes.length} bytes where the manifest records ${recorded.size}`);
        }
        const digest = await sha256Hex(bytes);
        if (digest !== recorded.sha256) {
          throw new JaxportError("ArtifactError", `The digest of the directory's file ${name} does not match its manifest (sha256 ` +
            `${digest} where ${recorded.sha256} was recorded): the file was damaged or changed after jaxport wrote it; convert the source again.`);
        }
        return bytes;
      })();
      this.files.set(name, promise);
      promise.catch(() => this.files.delete(name));
    }
    return this.files.get(name);
  }

  async weights() {
    const table = this.manifest.weights;
    const bytes = await this.file(table.file);
    const parsed = parseSafetensorsHeader(bytes, table.file);
    if (table.header_sha256 && await sha256Hex(parsed.header) !== table.header_sha256) {
      throw new JaxportError("ArtifactError", `${table.file}: its header's digest does not match the manifest's`);
    }
    for (const leaf of table.leaves) {
      const entry = parsed.tensors[leaf.key_path];
      const stored = leaf.stored_as || leaf;
      if (!entry || entry.dtype !== (DTYPES[stored.dtype] || [])[0] || entry.shape.join() !== stored.shape.join()) {
        throw new JaxportError("ArtifactError", `${table.file}: the weight '${leaf.key_path}' is not the manifest's`);
      }
    }
    return bytes;
  }

  /** The ONNX Runtime session of a function, made on first use with the weights as external data. */
  session(name) {
    const f = this.manifest.functions[name];
    if (!f) throw new JaxportError("KeyError", `The directory has no function ${pyRepr(name)}; it has ${pyList(Object.keys(this.manifest.functions))}`);
    if (!this.sessions.has(name)) {
      const promise = (async () => {
        const model = await this.file(f.variants[0].file);
        const options = { ...this.sessionOptions };
        const quantized = this.manifest.target_details.weights_file;  // a quantized directory's own weights file
        if (f.signature.nr_weights > 0 && quantized) {
          options.externalData = [{ path: quantized, data: await this.file(quantized) }];
        } else if (f.signature.nr_weights > 0 && this.manifest.weights && this.manifest.weights.file) {
          options.externalData = [{ path: this.manifest.weights.file, data: await this.weights() }];
        }
        return this.ort.InferenceSession.create(model, options);
      })();
      this.sessions.set(name, promise);
      promise.catch(() => this.sessions.delete(name));
    }
    return this.sessions.get(name);
  }

  /**
   * Checks a call of `name` with named inputs (wire name -> ort.Tensor, {data, dims[, dtype]} or a 1-D typed
   * array) as jaxport's Python front does; returns the flat inputs ({dtype, dims, data}) and the dimension
   * variables' values. Throws a JaxportError with the Python front's message.
   */
  check(name, inputs) {
    const f = this.manifest.functions[name];
    if (!f) throw new JaxportError("KeyError", `The directory has no function ${pyRepr(name)}; it has ${pyList(Object.keys(this.manifest.functions))}`);
    const sig = f.signature;
    const call = callFromNames(sig.in_tree, inputs);
    const leaves = flattenCall(name, sig.in_tree, call, sig.nr_weights > 0);
    const paths = this.functions[name].paths;
    const arrays = leaves.map((leaf, i) => describe(paths[i], leaf));
    sig.inputs.forEach((expected, i) => {
      const got = arrays[i];
      if (expected.dims.length !== got.dims.length) {
        throw new JaxportError("RankMismatchError", `Rank mismatch for ${paths[i]}: expected ${formatShape(expected.dims.map(formatDim))} and called with ${formatShape(got.dims)}`);
      }
      if (expected.dtype !== got.dtype) {
        throw new JaxportError("DtypeMismatchError", `Dtype mismatch for ${paths[i]}: expected ${expected.dtype} and called with ${got.dtype}`);
      }
      expected.dims.forEach((d, j) => {
        if (typeof d === "number" && d !== got.dims[j]) {
          throw new JaxportError("ShapeMismatchError", `Shape mismatch for ${paths[i]}.shape[${j}] (expected same constant): ` +
            `expected ${formatShape(expected.dims.map(formatDim))} and called with ${formatShape(got.dims)}`);
        }
      });
      if (got.data && typeof got.data.length === "number" && got.data.length !== elementCount(got.dims)) {
        throw new JaxportError("CallError", `${paths[i]} holds ${got.data.length} elements where its dims ${formatShape(got.dims)} need ${elementCount(got.dims)}`);
      }
    });
    if (!this.plans.has(name)) {
      try {
        this.plans.set(name, buildPlan(sig.inputs, paths, sig.constraints));
      } catch (error) {
        this.plans.set(name, error);
      }
    }
    const plan = this.plans.get(name);
    if (plan instanceof Error) throw plan;
    const dims = runPlan(plan, arrays.map((a) => a.dims));
    variantFor(name, f.variants, dims);
    return { arrays, dims };
  }

  /** Runs `name` on named inputs (see check); resolves to {outputName: ort.Tensor} in the outputs' order. */
  async call(name, inputs) {
    const { arrays } = this.check(name, inputs);
    const session = await this.session(name);
    const sig = this.manifest.functions[name].signature;
    const feeds = {};
    sig.inputs.forEach((input, i) => {
      const a = arrays[i];
      feeds[input.name] = a.tensor || new this.ort.Tensor(a.dtype, a.data, a.dims);
    });
    const results = await session.run(feeds);
    return Object.fromEntries(sig.outputs.map((output) => [output.name, results[output.name]]));
  }

  /** The golden examples' inputs and recorded outputs, read from the examples file. */
  async examples() {
    const table = this.manifest.examples;
    if (!table) return [];
    const bytes = await this.file(table.file);
    const parsed = parseSafetensorsHeader(bytes, table.file);
    const out = [];
    for (const [name, list] of Object.entries(table.functions)) {
      list.forEach((example, index) => {
        const sig = this.manifest.functions[name].signature;
        const inputs = Object.fromEntries(example.inputs.map((w, i) => [sig.inputs[i].name, tensorOf(table.file, bytes, parsed, w.key_path, w.dtype)]));
        const outputs = example.outputs.map((w) => tensorOf(table.file, bytes, parsed, w.key_path, w.dtype));
        out.push({ function: name, index, inputs, outputs });
      });
    }
    return out;
  }

  /**
   * Runs every golden example here and compares each output with the one JAX computed when the bundle was
   * saved, with jaxport's tolerances by dtype (`rtol`, `atol` replace the floating dtypes' defaults; a quantized
   * directory's recorded tolerance replaces them where they are not given).
   * Resolves to {ok, examples, checks: [{function, example, output, dtype, maxAbsError, relativeError,
   * rtol, atol, passed, problem}]}.
   */
  async checkNumerics({ rtol, atol } = {}) {
    const examples = await this.examples();
    const recorded = this.manifest.quantization ? this.manifest.quantization.tolerance : {};  // a quantized model's
    const checks = [];
    for (const example of examples) {
      const f = this.functions[example.function];
      let got = null;
      let problem = null;
      try {
        got = await this.call(example.function, example.inputs);
      } catch (error) {
        problem = `${error.name}: ${error.message}`;
      }
      example.outputs.forEach((want, i) => {
        const tolerance = toleranceFor(want.dtype, rtol ?? recorded.rtol, atol ?? recorded.atol);
        const check = { function: example.function, example: example.index, output: f.results[i], dtype: want.dtype,
          rtol: tolerance.rtol, atol: tolerance.atol, maxAbsError: 0, maxReference: 0, problem };
        if (!problem) Object.assign(check, compare(got[f.outputs[i].name], want));
        check.relativeError = check.maxAbsError === 0 ? 0 : check.maxReference > 0 ? check.maxAbsError / check.maxReference : Infinity;
        check.passed = check.problem === null && check.maxAbsError <= tolerance.atol + tolerance.rtol * check.maxReference;
        checks.push(check);
      });
    }
    return { ok: examples.length > 0 && checks.every((c) => c.passed), examples: examples.length, checks };
  }
}

function variantFor(name, variants, dims) {
  const wanted = Object.keys(dims);
  for (const v of variants) {
    const keys = Object.keys(v.dims);
    if (!keys.length || (keys.length === wanted.length && keys.every((k) => v.dims[k] === dims[k]))) return v;
  }
  let best = null;
  for (const v of variants) {
    const differ = pySorted(wanted.filter((k) => v.dims[k] !== dims[k]));
    if (best === null || differ.length < best.length) best = differ;
  }
  const variable = best && best.length ? best[0] : pySorted(wanted)[0] || "";
  const listing = variants.map((v) => "{" + pySorted(Object.keys(v.dims)).map((k) => `${k}=${v.dims[k]}`).join(", ") + "}").join(", ");
  const value = dims[variable] ?? 0;
  throw new JaxportError("UncompiledSizeError", `No module of '${name}' was compiled for ${variable} = ${value}; it was compiled ` +
    `for ${listing}. Convert it again with this size in dims= (--dims ${name}:${variable}=${value}).`);
}

/** The tolerance of an output of `dtype`: jaxport's default, or the caller's for the floating dtypes. */
export function toleranceFor(dtype, rtol, atol) {
  const d = DEFAULT_TOLERANCES[dtype];
  if (!d) return { rtol: 0, atol: 0 };
  return { rtol: rtol ?? d.rtol, atol: atol ?? d.atol };
}

/**
 * An output (an ort.Tensor) against the recorded one ({dtype, dims, data}), as jaxport's numerics check
 * compares them: {maxAbsError, maxReference} or {problem} (another shape or dtype).
 */
export function compare(got, want) {
  if (!got) return { problem: "the runtime returned no such output" };
  const dims = Array.from(got.dims, Number);
  if (dims.join() !== want.dims.join()) {
    return { problem: `the runtime returned shape ${formatShape(dims)} where the example has ${formatShape(want.dims)}` };
  }
  if (got.type !== want.dtype) return { problem: `the runtime returned dtype ${got.type} where the example has ${want.dtype}` };
  const integral = /^(bool|u?int)/.test(want.dtype);
  const half = want.dtype === "float16";
  let maxAbsError = 0;
  let maxReference = 0;
  for (let i = 0; i < want.data.length; i++) {
    const g = half ? fromHalf(got.data[i]) : Number(got.data[i]);
    const w = half ? fromHalf(want.data[i]) : Number(want.data[i]);
    if (Number.isFinite(w)) maxReference = Math.max(maxReference, Math.abs(w));
    const same = got.data[i] === want.data[i] || (Number.isNaN(g) && Number.isNaN(w)) || g === w;
    if (same) continue;
    let error = Math.abs(g - w);
    if (Number.isNaN(error)) error = Infinity;
    if (integral) error = Math.max(error, 1);
    maxAbsError = Math.max(maxAbsError, error);
  }
  return { maxAbsError, maxReference };
}

/** A float16 from its bits (a Uint16Array element), as a Number. */
export function fromHalf(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}
