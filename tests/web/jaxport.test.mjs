// Unit tests of jaxport.mjs under Node, with onnxruntime-web on WebAssembly (`node --test tests/web/`).
//
// The bad calls and their messages come from tests/web/bad_calls.json, written from jaxport's Python
// errors (python -m tests.helpers.web_bad_calls), so the two fronts cannot drift. The converted models
// are made by Python (python -m tests.helpers.web_models DIR) into the directory that
// JAXPORT_WEB_FIXTURES names; without it, the tests that need them are skipped and say so.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as ort from "onnxruntime-web";
import {
  loadModel, formatShape, formatDim, evaluateDim, parseWireName, parseSafetensorsHeader, pyRepr, toleranceFor,
  leafPaths, resultPaths,
} from "../../src/adapters/web/jaxport.mjs";

const BAD_CALLS = JSON.parse(readFileSync(fileURLToPath(new URL("./bad_calls.json", import.meta.url)), "utf-8"));
const FIXTURES = process.env.JAXPORT_WEB_FIXTURES || "";
const NO_FIXTURES = FIXTURES && existsSync(FIXTURES) ? false
  : "no converted models: set JAXPORT_WEB_FIXTURES to a directory made by python -m tests.helpers.web_models DIR";
const MODELS = ["mlp", "gpt", "kw", "bert", "stats", "dtypes", "gpt-int8"];  // gpt-int8: int8-weights, its own tolerance

ort.env.wasm.numThreads = 1;

const reader = (dir, change = (name, bytes) => bytes) => async (name) => change(name, new Uint8Array(await readFile(`${dir}/${name}`)));
const fixture = (name, options = {}) => loadModel(`${FIXTURES}/${name}/`, { ort, read: reader(`${FIXTURES}/${name}`), ...options });
const manifestOnly = (doc) => loadModel("unused/", {
  ort, read: async (name) => {
    if (name !== "manifest.json") throw new Error(`read ${name}`);
    return new TextEncoder().encode(JSON.stringify(doc));
  },
});

// Zeros of each dtype and shape, as the Python list's calls have them.
function zeros({ dtype, shape }) {
  const n = shape.reduce((a, b) => a * b, 1);
  const types = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, float64: Float64Array, uint8: Uint8Array };
  return { data: new types[dtype](n), dims: shape, dtype };
}

async function throwsAsPython(model, call) {
  const inputs = Object.fromEntries(Object.entries(call.inputs).map(([n, a]) => [n, zeros(a)]));
  await assert.rejects(model.call(call.function, inputs), (error) => {
    assert.equal(error.name, call.error, `${call.what}: the error's class`);
    assert.equal(error.message, call.message, `${call.what}: the message`);
    return true;
  });
}

test("Python's spelling: repr, shapes, polynomials", () => {
  assert.equal(pyRepr("w"), "'w'");
  assert.equal(pyRepr("it's"), `"it's"`);
  assert.equal(pyRepr("a\nb\\"), "'a\\nb\\\\'");
  assert.equal(formatShape([]), "()");
  assert.equal(formatShape([3]), "(3,)");
  assert.equal(formatShape(["b", 4]), "(b, 4)");
  const tree = { op: "+", args: [{ op: "*", args: [-1, "t"] }, 1024] };
  assert.equal(evaluateDim(tree, { t: 1000 }), 24);
  assert.equal(evaluateDim({ op: "+", args: [{ op: "floordiv", args: ["b", -2] }, { op: "mod", args: ["b", 3] }] }, { b: 7 }), -4 + 1);
  assert.equal(evaluateDim({ op: "*", args: [2, "h", "h"] }, { h: 3 }), 18);
});

test("wire names parse as jaxport writes them", () => {
  assert.deepEqual(parseWireName("arg1/dense/w"), [1, "dense", "w"]);
  assert.deepEqual(parseWireName(".61rg0"), ["arg0"]);
  assert.deepEqual(parseWireName("arg0/layer.2e0"), [0, "layer.0"]);
  assert.deepEqual(parseWireName("arg0/."), [0, ""]);
  assert.deepEqual(parseWireName(".5fprivate"), ["_private"]);
  assert.throws(() => parseWireName("arg0/a.zz"), /not a wire name's segment/);
});

test("paths of inputs and results as the Python front names them", () => {
  const leaf = { kind: "leaf" };
  const inTree = { kind: "tuple", children: [{ kind: "tuple", children: [leaf, { kind: "dict", keys: ["w"], children: [leaf] }] },
    { kind: "dict", keys: ["y"], children: [leaf] }] };
  assert.deepEqual(leafPaths(inTree), ["args[0]", "args[1]['w']", "kwargs['y']"]);
  assert.deepEqual(resultPaths(leaf), ["out"]);
  assert.deepEqual(resultPaths({ kind: "dict", keys: ["y", "z"], children: [leaf, { kind: "tuple", children: [leaf] }] }), ["out['y']", "out['z'][0]"]);
});

test("tolerances by dtype are jaxport's", () => {
  assert.deepEqual(toleranceFor("float32"), { rtol: 1e-5, atol: 1e-6 });
  assert.deepEqual(toleranceFor("float16"), { rtol: 1e-2, atol: 1e-3 });
  assert.deepEqual(toleranceFor("int32", 0.1, 0.1), { rtol: 0, atol: 0 });
  assert.deepEqual(toleranceFor("float32", undefined, 1e-4), { rtol: 1e-5, atol: 1e-4 });
});

test("a safetensors header is read, a truncated one refused", () => {
  const header = new TextEncoder().encode(JSON.stringify({ w: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, __metadata__: { a: "b" } }));
  const bytes = new Uint8Array(8 + header.length + 8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(header.length), true);
  bytes.set(header, 8);
  const parsed = parseSafetensorsHeader(bytes, "params.safetensors");
  assert.deepEqual(parsed.tensors.w.shape, [2]);
  assert.equal(parsed.start, 8 + header.length);
  assert.throws(() => parseSafetensorsHeader(bytes.subarray(0, 12), "params.safetensors"), /its header claims/);
});

test("a manifest of another format or a newer version is refused with the Python message", async () => {
  const doc = BAD_CALLS.shapes_manifest;
  await assert.rejects(manifestOnly({ ...doc, format_version: 2 }),
    { name: "ArtifactError", message: "manifest.json: format version 2 is newer than 1, the newest this jaxport reads: upgrade jaxport to load it." });
  await assert.rejects(manifestOnly({ ...doc, format: "jaxport-iree" }), /is not 'jaxport-converted'/);
  await assert.rejects(loadModel("x/", {}), TypeError);
});

test("shape checks of the Python front, from the manifest alone", async () => {
  const model = await manifestOnly(BAD_CALLS.shapes_manifest);
  const calls = BAD_CALLS.calls.filter((c) => c.model === "shapes");
  assert.ok(calls.length >= 5);
  for (const call of calls) await throwsAsPython(model, call);
  // The same signature, good calls: the variables solved.
  const good = model.check("solve", { arg0: zeros({ dtype: "float32", shape: [2, 7] }), "opt/layer.2e0": zeros({ dtype: "int32", shape: [3, 3] }) });
  assert.deepEqual(good.dims, { b: 2, h: 3 });
  assert.deepEqual(model.functions.solve.constraints, ["b >= 2", "b + h <= 20"]);
  assert.throws(() => model.check("nope", {}), { name: "KeyError", message: "The directory has no function 'nope'; it has ['solve']" });
  assert.throws(() => model.check("solve", { arg0: { data: new Float64Array(14), dims: [2, 7], dtype: "float32" }, "opt/layer.2e0": zeros({ dtype: "int32", shape: [3, 3] }) }),
    { name: "CallError", message: "args[0] holds a Float64Array where its dtype float32 needs a Float32Array" });
  assert.throws(() => model.check("solve", { arg0: [1, 2], "opt/layer.2e0": zeros({ dtype: "int32", shape: [3, 3] }) }),
    { name: "CallError", message: "args[0] is a Array, not an array: a runtime takes arrays (numpy.asarray(value, dtype) makes one)" });
});

test("dimensions print as Python prints them", async () => {
  const signatures = [BAD_CALLS.shapes_manifest.functions.solve.signature];
  if (!NO_FIXTURES) {
    for (const name of MODELS) {
      const doc = JSON.parse(await readFile(`${FIXTURES}/${name}/manifest.json`, "utf-8"));
      signatures.push(...Object.values(doc.functions).map((f) => f.signature));
    }
  }
  let symbolic = 0;
  for (const sig of signatures) for (const array of [...sig.inputs, ...sig.outputs]) {
    assert.deepEqual(array.dims.map(formatDim), array.shape);
    symbolic += array.dims.filter((d) => typeof d !== "number").length;
  }
  assert.ok(symbolic >= 3);
  assert.ok(BAD_CALLS.dims.length >= 5);
  for (const { text, tree } of BAD_CALLS.dims) assert.equal(formatDim(tree), text);
});

for (const name of MODELS) {
  test(`${name}: the golden examples pass on onnxruntime-web (WebAssembly)`, { skip: NO_FIXTURES }, async () => {
    const model = await fixture(name);
    const report = await model.checkNumerics();
    assert.ok(report.examples > 0);
    for (const check of report.checks) assert.ok(check.passed, JSON.stringify(check));
    assert.ok(report.ok);
  });
}

test("every bad call of the shared list throws the Python front's error", { skip: NO_FIXTURES }, async () => {
  const models = {};
  for (const call of BAD_CALLS.calls.filter((c) => c.model !== "shapes")) {
    models[call.model] ??= await fixture(call.model);
    await throwsAsPython(models[call.model], call);
  }
});

test("kw: a call's results are what the function computes (keyword, dict results, a derived dimension)", { skip: NO_FIXTURES }, async () => {
  const model = await fixture("kw");
  const x = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
  const a = Float32Array.from([10, 20, 30]);
  const out = await model.call("mix", { arg0: { data: x, dims: [2, 4] }, "scale/a": new ort.Tensor("float32", a, [3]) });
  assert.deepEqual(Object.keys(out), ["total", "y"]);
  assert.equal(out.total.data[0], 36);
  assert.deepEqual(Array.from(out.y.dims), [2, 3]);
  assert.deepEqual(Array.from(out.y.data), [105, 210, 315, 265, 530, 795]);
  assert.deepEqual(model.functions.mix.inputs.map((i) => [i.name, i.shape.join(",")]), [["arg0", "b,h + 1"], ["scale/a", "h"]]);
  assert.deepEqual(model.functions.mix.outputs.map((o) => o.name), ["total", "y"]);
});

test("a manifest naming a file outside the directory is refused before anything is read", async () => {
  const doc = structuredClone(BAD_CALLS.shapes_manifest);
  doc.files = { "../secret.onnx": { size: 1, sha256: "00" }, "/abs.onnx": { size: 1, sha256: "00" } };
  for (const file of Object.keys(doc.files)) {
    doc.functions.solve.variants = [{ file, dims: {} }];
    const model = await manifestOnly(doc);
    await assert.rejects(model.session("solve"), { name: "ArtifactError", message: `The directory's manifest names a file outside the directory: ${file}` });
  }
  doc.functions.solve.variants = [{ file: "solve.onnx", dims: {} }];
  await assert.rejects((await manifestOnly(doc)).session("solve"), { name: "ArtifactError", message: "The directory's manifest does not list a file solve.onnx" });
});

test("dtypes: int64 as BigInt64Array, bool results, float16 as Uint16Array; two functions, one session each", { skip: NO_FIXTURES }, async () => {
  const model = await fixture("dtypes");
  assert.deepEqual(Object.keys(model.functions), ["step", "half"]);
  const out = await model.call("step", { arg0: BigInt64Array.from([5n, 2n ** 40n]) });
  assert.equal(out.next.type, "int64");
  assert.deepEqual(Array.from(out.next.data), [16n, 3n * 2n ** 40n + 1n]);
  assert.equal(out.big.type, "bool");
  assert.deepEqual(Array.from(out.big.data), [0, 1]);
  const half = Uint16Array.from([0x3c00, 0x4000, 0xc000]);  // 1, 2, -2 in float16
  const sum = await model.call("half", { arg0: { data: half, dims: [1, 3], dtype: "float16" } });
  assert.equal(sum.output_0.type, "float16");
  assert.deepEqual(Array.from(sum.output_0.data), [0x4000]);  // 2 * (1 + 2 - 2) = 2
  assert.notEqual(await model.session("step"), await model.session("half"));
});

test("a file changed after conversion is refused before ONNX Runtime reads it", { skip: NO_FIXTURES }, async () => {
  const dir = `${FIXTURES}/mlp`;
  const flip = (target) => (name, bytes) => {
    if (name === target) bytes[bytes.length - 1] ^= 1;
    return bytes;
  };
  const changed = await loadModel(dir, { ort, read: reader(dir, flip("params.safetensors")) });
  await assert.rejects(changed.call("predict", { arg0: { data: new Float32Array(16), dims: [1, 16] } }),
    (e) => e.name === "ArtifactError" && /^The digest of the directory's file params.safetensors does not match its manifest/.test(e.message));
  const truncated = await loadModel(dir, { ort, read: reader(dir, (name, bytes) => (name === "predict.onnx" ? bytes.subarray(1) : bytes)) });
  await assert.rejects(truncated.session("predict"), /The directory's file predict.onnx is truncated: \d+ bytes where the manifest records \d+/);
});
