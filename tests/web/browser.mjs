// Opens jaxport's demo page in Debian's Chromium (driven by playwright-core, no browser download),
// waits for the page's golden examples, runs bad calls in the page, takes a screenshot, and prints
// what the page reported as JSON on stdout.
//
//   node tests/web/browser.mjs URL SCREENSHOT [BAD_CALLS_JSON MODEL]
//
// Chromium runs headless with a temporary profile, --no-sandbox (the tests run as root) and no
// background connections; only the page's server on 127.0.0.1 is reached. CHROMIUM names the
// executable (default /usr/bin/chromium).
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, screenshot, badCallsFile, modelName] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "jaxport-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1100, height: 820 },
  args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-default-apps", "--disable-features=Translate,MediaRouter,OptimizationHints"],
});
const console_ = [];
try {
  const page = context.pages()[0] || await context.newPage();
  page.on("console", (m) => console_.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => console_.push(`pageerror: ${e.message}`));
  const started = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.jaxportDemo && window.jaxportDemo.done, null, { timeout: 60000 });
  const result = await page.evaluate(() => ({
    error: window.jaxportDemo.error, firstAnswerMs: window.jaxportDemo.firstAnswerMs, report: window.jaxportDemo.report,
    functions: window.jaxportDemo.model ? window.jaxportDemo.model.functions : null,
    status: document.getElementById("status").textContent,
    rows: Array.from(document.querySelectorAll("#examples tbody tr"), (tr) => Array.from(tr.cells, (td) => td.textContent)),
  }));
  result.pageMs = Date.now() - started;
  if (badCallsFile) {
    const calls = JSON.parse(readFileSync(badCallsFile, "utf-8")).calls.filter((c) => c.model === modelName);
    result.badCalls = await page.evaluate(async (calls) => {
      const types = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, float64: Float64Array };
      const out = [];
      for (const call of calls) {
        const inputs = Object.fromEntries(Object.entries(call.inputs).map(([n, a]) =>
          [n, { data: new types[a.dtype](a.shape.reduce((x, y) => x * y, 1)), dims: a.shape, dtype: a.dtype }]));
        try {
          await window.jaxportDemo.model.call(call.function, inputs);
          out.push({ what: call.what, error: null, message: "no error" });
        } catch (error) {
          out.push({ what: call.what, error: error.name, message: error.message });
        }
      }
      return out;
    }, calls);
  }
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  result.console = console_;
  process.stdout.write(JSON.stringify(result) + "\n");
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
