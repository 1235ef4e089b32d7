// Runs ONNX models in onnxruntime-web (WebAssembly) under Node and compares their outputs with expected
// ones: `node tests/web/run_onnx.mjs DIR`, DIR holding one folder per case (tests/helpers/web_batch.py
// writes them: model.onnx, io.safetensors with in/NAME and out/NAME, case.json; with a tolerance [rtol, atol]
// there, floats are compared element by element as np.testing.assert_allclose does, else as jaxport's numerics
// check does). Prints a JSON list [{name, problem}] (problem null when the case passed); exits 1 when one failed.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-web";
import { compare, fromHalf, readTensors, toleranceFor } from "../../src/adapters/web/jaxport.mjs";

ort.env.wasm.numThreads = 1;

// np.testing.assert_allclose(got, want, rtol, atol): element by element, NaN equal to NaN; a problem or null.
function allclose(got, want, [rtol, atol], output) {
  const half = want.dtype === "float16";
  for (let i = 0; i < want.data.length; i++) {
    const g = half ? fromHalf(got.data[i]) : Number(got.data[i]);
    const w = half ? fromHalf(want.data[i]) : Number(want.data[i]);
    if (g === w || (Number.isNaN(g) && Number.isNaN(w))) continue;
    if (!(Math.abs(g - w) <= atol + rtol * Math.abs(w))) {
      return `${output}: element ${i} is ${g} where ${w} is expected (rtol ${rtol}, atol ${atol})`;
    }
  }
  return null;
}

const root = process.argv[2];
const results = [];
for (const folder of readdirSync(root).sort()) {
  const dir = join(root, folder);
  const { name, external, tolerance } = JSON.parse(readFileSync(join(dir, "case.json"), "utf-8"));
  let problem = null;
  try {
    const io = readTensors(new Uint8Array(readFileSync(join(dir, "io.safetensors"))), "io.safetensors");
    const options = { externalData: Object.entries(external).map(([path, file]) => ({ path, data: new Uint8Array(readFileSync(file)) })) };
    const session = await ort.InferenceSession.create(new Uint8Array(readFileSync(join(dir, "model.onnx"))), options);
    const feeds = {};
    for (const [key, t] of Object.entries(io)) if (key.startsWith("in/")) feeds[key.slice(3)] = new ort.Tensor(t.dtype, t.data, t.dims);
    const got = await session.run(feeds);
    for (const [key, want] of Object.entries(io)) {
      if (!key.startsWith("out/") || problem) continue;
      const output = key.slice(4);
      const c = compare(got[output], want);
      const tol = toleranceFor(want.dtype);
      if (c.problem) problem = `${output}: ${c.problem}`;
      else if (tolerance && want.dtype.startsWith("float")) problem = allclose(got[output], want, tolerance, output);
      else if (!(c.maxAbsError <= tol.atol + tol.rtol * c.maxReference)) {
        problem = `${output}: max abs error ${c.maxAbsError} against ${c.maxReference} (rtol ${tol.rtol}, atol ${tol.atol})`;
      }
    }
    await session.release();
  } catch (error) {
    problem = `${error.name}: ${error.message}`;
  }
  results.push({ name, problem });
}
process.stdout.write(JSON.stringify(results) + "\n");
process.exitCode = results.some((r) => r.problem !== null) ? 1 : 0;
