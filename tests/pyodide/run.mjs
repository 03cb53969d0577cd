// Run a Python driver in real Pyodide under node, as xlwings Lite runs main.py in the browser.
//   node run.mjs JOB.json
// JOB: {"pyodide": folder of the pyodide npm package, "load": [local wheel paths for
// pyodide.loadPackage], "files": {path in Pyodide's file system: host path}, "driver": host
// path of the Python code, "input": any JSON, handed to the driver as JOB_INPUT}.
// The driver's last expression (a JSON string) is printed after the line RESULT.
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { loadPyodide } = await import(pathToFileURL(`${job.pyodide}/pyodide.mjs`).href);
const py = await loadPyodide({ indexURL: `${job.pyodide}/`, stdout: (t) => console.error(t), stderr: (t) => console.error(t) });
if (job.load.length) {
  await py.loadPackage(job.load, { messageCallback: () => {}, errorCallback: (t) => console.error(t) });
}
for (const [target, source] of Object.entries(job.files)) {
  py.FS.mkdirTree(dirname(target));
  py.FS.writeFile(target, readFileSync(source));
}
py.globals.set("JOB_INPUT", JSON.stringify(job.input));
const out = await py.runPythonAsync(readFileSync(job.driver, "utf8"));
console.log("RESULT");
console.log(out);
