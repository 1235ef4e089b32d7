// Runs ONNX models in onnxruntime-web (WebAssembly) under Node and compares their outputs with expected
// ones: `node tests/web/run_onnx.mjs DIR`, DIR holding one folder per case (tests/helpers/web_batch.py
// writes them: model.onnx, io.safetensors with in/NAME and out/NAME, case.json). Prints a JSON list
// [{name, problem}] (problem null when the case passed); exits 1 when one failed.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-web";
import { compare, readTensors, toleranceFor } from "../../src/adapters/web/jaxport.mjs";

ort.env.wasm.numThreads = 1;
const root = process.argv[2];
const results = [];
for (const folder of readdirSync(root).sort()) {
  const dir = join(root, folder);
  const { name, external } = JSON.parse(readFileSync(join(dir, "case.json"), "utf-8"));
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
